//! Sequences of public onnxrt API calls, decoded from fuzz input and run against a small state
//! machine: slots of sessions, values, kept outputs, async runs and run options, an environment.
//! Sessions get built with options (threads, levels, config entries, providers by name, a Rust
//! custom op that fails in the way the sequence says), values of every kind get made, read,
//! run (right and wrong names, types, shapes), bound, and dropped in any order.
//!
//! Shared by the `api_sequence` fuzz target (under AddressSanitizer) and by
//! `tests/tests/api_sequence_replay.rs`, which replays the committed corpus in `cargo test`.
//! Only safe, public API; every call may fail with a typed error, and a few results are checked
//! against values computed here (a wrong one panics: a finding).

mod build;
mod kernel;
mod make;
mod models;
mod run;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use onnxrt::{Environment, RunFuture, RunOptions, Session, Value};

use build::Options;
use kernel::Mode;
use make::Make;
use run::{After, BindStep, Inputs, Name};

/// At most this many operations per input.
const MAX_OPS: usize = 48;

static CALLS: AtomicU64 = AtomicU64::new(0);
static PROGRAMS: AtomicU64 = AtomicU64::new(0);

/// Times each known soundness hole showed (item 1: an unwritten custom-op output returned as
/// data; item 3: a repeated output name returning other data), counted instead of failing the input.
pub static KNOWN_ITEM_1: AtomicU64 = AtomicU64::new(0);
pub static KNOWN_ITEM_3: AtomicU64 = AtomicU64::new(0);

/// Counts `n` public API calls.
pub fn count(n: u64) {
    CALLS.fetch_add(n, Ordering::Relaxed);
}

/// Public API calls made so far (each constructor, builder setter, run, read... counts one).
pub fn calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

/// Inputs run so far.
pub fn programs() -> u64 {
    PROGRAMS.load(Ordering::Relaxed)
}

/// Whether to exercise holes that abort the process (item 4: a kernel error whose `Display`
/// panics). Off unless `ONNXRT_FUZZ_KNOWN_HOLES=1`.
pub fn known_holes() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var("ONNXRT_FUZZ_KNOWN_HOLES").is_ok_and(|v| v == "1"))
}

/// The payload of every panic the sequence makes on purpose (in kernels): the panic hook lets it
/// pass silently; any other panic still reaches the previous hook (libFuzzer's aborts).
pub struct Intentional;

/// Installs the hook that keeps intentional panics quiet (once; call before running inputs).
pub fn install_panic_filter() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Intentional>() {
                previous(info);
            }
        }));
    });
}

#[derive(Arbitrary, Debug)]
pub enum Op {
    Build {
        slot: u8,
        model: u8,
        options: Box<Options>,
    },
    DropSession(u8),
    /// Inputs, outputs, providers, metadata, name lookups of a session.
    Info {
        session: u8,
        name: Name,
    },
    Make {
        slot: u8,
        make: Make,
    },
    /// A value that fits input `input` of session `session`.
    Fit {
        slot: u8,
        session: u8,
        input: u8,
        n: u8,
        fill: u64,
    },
    DropValue(u8),
    Read(u8),
    /// `Value::sequence` of the values in these slots (moved in).
    Sequence {
        slot: u8,
        from: Vec<u8>,
    },
    IntoOptional(u8),
    Run {
        session: u8,
        inputs: Inputs,
        outputs: Vec<Name>,
        options: Option<u8>,
        kernel: u8,
        after: After,
    },
    /// Takes an output out of kept outputs into a value slot.
    TakeOutput {
        outputs: u8,
        name: Name,
        slot: u8,
    },
    ReadOutputs(u8),
    DropOutputs(u8),
    Bind {
        session: u8,
        steps: Vec<BindStep>,
        keep_values: bool,
    },
    RunAsync {
        session: u8,
        inputs: Inputs,
        outputs: Vec<Name>,
        slot: u8,
        tag: Option<String>,
        stop: bool,
        kernel: u8,
    },
    Poll(u8),
    Wait {
        slot: u8,
        keep: Option<u8>,
    },
    DropFuture(u8),
    Options {
        slot: u8,
        tag: String,
        level: u8,
    },
    Terminate {
        slot: u8,
        reset: bool,
    },
    DropOptions(u8),
    Env {
        name: String,
        level: u8,
        hook: bool,
        pools: Option<(u8, u8)>,
    },
    GlobalEnv,
    DropEnv,
    RuntimeInfo,
}

/// What a sequence holds between operations.
#[derive(Default)]
pub struct State {
    env: Option<Arc<Environment>>,
    /// Each session with the index of its model in `models::MODELS` and whether its results are
    /// bit-exact.
    sessions: [Option<(Session, usize, bool)>; 3],
    values: [Option<Value<'static>>; 6],
    outputs: [Option<onnxrt::Outputs>; 3],
    futures: [Option<RunFuture>; 3],
    options: [Option<RunOptions>; 2],
    mode: Mode,
}

fn slot<T>(slots: &mut [Option<T>], i: u8) -> &mut Option<T> {
    let n = slots.len();
    &mut slots[usize::from(i) % n]
}

fn get<T>(slots: &[Option<T>], i: u8) -> Option<&T> {
    slots[usize::from(i) % slots.len()].as_ref()
}

/// Decodes and runs one input: a drop-order byte, then operations until the bytes run out.
pub fn run_input(data: &[u8]) {
    PROGRAMS.fetch_add(1, Ordering::Relaxed);
    let mut u = Unstructured::new(data);
    let order = u8::arbitrary(&mut u).unwrap_or(0);
    let mut state = State::default();
    if let Ok(ops) = u.arbitrary_iter::<Op>() {
        for op in ops.take(MAX_OPS) {
            match op {
                Ok(op) => state.apply(op),
                Err(_) => break,
            }
        }
    }
    state.finish(order);
}

impl State {
    fn apply(&mut self, op: Op) {
        match op {
            Op::Build { slot: s, model, options } => {
                let made = build::session(model, &options, self.env.as_ref(), &self.mode);
                *slot(&mut self.sessions, s) = made.map(|(session, m)| (session, m, build::exact(&options)));
            }
            Op::DropSession(s) => drop(slot(&mut self.sessions, s).take()),
            Op::Info { session, name } => {
                if let Some((session, ..)) = get(&self.sessions, session) {
                    run::info(session, &name);
                }
            }
            Op::Make { slot: s, make } => *slot(&mut self.values, s) = make::make(&make),
            Op::Fit { slot: s, session, input, n, fill } => {
                if let Some((session, ..)) = get(&self.sessions, session) {
                    let inputs = session.inputs();
                    if !inputs.is_empty() {
                        let info = &inputs[usize::from(input) % inputs.len()];
                        *slot(&mut self.values, s) = make::fitting(info, n, fill);
                    }
                }
            }
            Op::DropValue(s) => drop(slot(&mut self.values, s).take()),
            Op::Read(s) => {
                if let Some(value) = get(&self.values, s) {
                    make::read(value, 0);
                }
            }
            Op::Sequence { slot: s, from } => {
                let members: Vec<Value<'static>> =
                    from.iter().take(4).filter_map(|&i| slot(&mut self.values, i).take()).collect();
                count(1);
                *slot(&mut self.values, s) = Value::sequence(members).ok();
            }
            Op::IntoOptional(s) => {
                let value = slot(&mut self.values, s);
                if let Some(v) = value.take() {
                    count(1);
                    *value = v.into_optional().ok().flatten();
                }
            }
            Op::Run { session, inputs, outputs, options, kernel, after } => {
                let Some((session, model, exact)) = get(&self.sessions, session) else { return };
                let options = options.and_then(|o| get(&self.options, o));
                let kept = run::run(
                    run::Target { session, model: *model, exact: *exact, mode: &self.mode },
                    &inputs,
                    &self.values,
                    &outputs,
                    options,
                    kernel,
                    &after,
                );
                if let Some(kept) = kept {
                    self.keep(kept, &after);
                }
            }
            Op::TakeOutput { outputs, name, slot: s } => {
                if let Some(kept) = slot(&mut self.outputs, outputs) {
                    let name = name.text(kept.names().collect::<Vec<_>>().as_slice());
                    count(1);
                    *slot(&mut self.values, s) = kept.take(&name).ok();
                }
            }
            Op::ReadOutputs(o) => {
                if let Some(kept) = get(&self.outputs, o) {
                    count(2);
                    let _ = (kept.len(), kept.is_empty());
                    for (name, value) in kept.iter() {
                        count(1);
                        let _ = kept.get(name);
                        make::read(value, 0);
                    }
                }
            }
            Op::DropOutputs(o) => drop(slot(&mut self.outputs, o).take()),
            Op::Bind { session, steps, keep_values } => {
                let Some((session, ..)) = get(&self.sessions, session) else { return };
                let mut taken: Vec<Value<'static>> = self.values.iter_mut().filter_map(Option::take).collect();
                run::bind(session, &steps, &mut taken, &self.options, &self.mode);
                if keep_values {
                    for (slot, value) in self.values.iter_mut().zip(taken) {
                        *slot = Some(value);
                    }
                }
            }
            Op::RunAsync { session, inputs, outputs, slot: s, tag, stop, kernel } => {
                let Some((session, ..)) = get(&self.sessions, session) else { return };
                let future =
                    run::start(session, &inputs, &mut self.values, &outputs, tag.as_deref(), stop, kernel, &self.mode);
                *slot(&mut self.futures, s) = future;
            }
            Op::Poll(s) => {
                if let Some(future) = slot(&mut self.futures, s) {
                    if let Some(done) = run::poll_once(future) {
                        *slot(&mut self.futures, s) = None;
                        if let Ok(kept) = done {
                            *slot(&mut self.outputs, s) = Some(kept);
                        }
                    }
                }
            }
            Op::Wait { slot: s, keep } => {
                if let Some(future) = slot(&mut self.futures, s).take() {
                    if let (Ok(kept), Some(k)) = (run::block_on(future), keep) {
                        *slot(&mut self.outputs, k) = Some(kept);
                    }
                }
            }
            Op::DropFuture(s) => drop(slot(&mut self.futures, s).take()),
            Op::Options { slot: s, tag, level } => {
                count(3);
                *slot(&mut self.options, s) = RunOptions::new().ok().map(|mut o| {
                    let _ = o.set_tag(&tag);
                    let _ = o.set_log_level(build::log_level(level));
                    o
                });
            }
            Op::Terminate { slot: s, reset } => {
                if let Some(options) = slot(&mut self.options, s) {
                    count(2);
                    let _ = options.terminator().terminate();
                    if reset {
                        count(1);
                        let _ = options.reset_terminate();
                    }
                }
            }
            Op::DropOptions(s) => drop(slot(&mut self.options, s).take()),
            Op::Env { name, level, hook, pools } => {
                if let Some(env) = build::environment(&name, level, hook, pools) {
                    count(3);
                    let _ = (env.name(), env.global_thread_pools(), env.recent_log());
                    self.env = Some(env);
                }
            }
            Op::GlobalEnv => {
                count(1);
                self.env = Environment::global().ok();
            }
            Op::DropEnv => self.env = None,
            Op::RuntimeInfo => {
                count(3);
                let _ = (onnxrt::runtime_info(), onnxrt::providers::available(), onnxrt::search_paths());
            }
        }
    }

    fn keep(&mut self, kept: run::Kept, after: &After) {
        match (kept, after) {
            (run::Kept::Outputs(o), After::Keep(s)) => *slot(&mut self.outputs, *s) = Some(*o),
            (run::Kept::Value(v), After::Take { slot: s, .. } | After::First(s)) => {
                *slot(&mut self.values, *s) = Some(v)
            }
            _ => {}
        }
    }

    /// Drops what is left in one of 24 orders of the four kinds of slot (environment last).
    fn finish(mut self, order: u8) {
        let mut kinds = vec![0u8, 1, 2, 3];
        let mut k = usize::from(order);
        let mut sequence = Vec::with_capacity(4);
        while !kinds.is_empty() {
            sequence.push(kinds.remove(k % kinds.len()));
            k /= 4;
        }
        for kind in sequence {
            match kind {
                0 => self.sessions.iter_mut().for_each(|s| drop(s.take())),
                1 => self.values.iter_mut().for_each(|v| drop(v.take())),
                2 => self.outputs.iter_mut().for_each(|o| drop(o.take())),
                _ => self.futures.iter_mut().for_each(|f| drop(f.take())),
            }
        }
    }
}
