//! Runs: `run` / `run_with` with right and wrong names, types and shapes (inputs from slots, made
//! to fit, or borrowed views), repeated output names, `IoBinding`, `run_async` polled or blocked on.
//! Outputs of a few models are checked against values computed here.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use arbitrary::Arbitrary;
use onnxrt::{MemoryInfo, Outputs, RunFuture, RunOptions, Session, Value};

use crate::api_sequence::kernel::{Compute, Mode};
use crate::api_sequence::models::MODELS;
use crate::api_sequence::{count, make, KNOWN_ITEM_1, KNOWN_ITEM_3};

/// A name: the session's own input or output names (by index), or any text.
#[derive(Arbitrary, Debug, Clone)]
pub enum Name {
    Input(u8),
    Output(u8),
    Text(String),
}

impl Name {
    fn pick(names: &[&str], i: u8) -> String {
        names.get(usize::from(i) % names.len().max(1)).map_or_else(String::new, |s| s.to_string())
    }

    fn resolve(&self, session: &Session) -> String {
        match self {
            Name::Input(i) => Name::pick(&session.inputs().iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), *i),
            Name::Output(i) => Name::pick(&session.outputs().iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), *i),
            Name::Text(t) => t.clone(),
        }
    }

    /// Resolved against a list of names (kept outputs).
    pub fn text(&self, names: &[&str]) -> String {
        match self {
            Name::Input(i) | Name::Output(i) => Name::pick(names, *i),
            Name::Text(t) => t.clone(),
        }
    }
}

/// Where a run's inputs come from.
#[derive(Arbitrary, Debug)]
pub enum Inputs {
    /// Named values from the value slots (an empty slot is skipped).
    Slots(Vec<(Name, u8)>),
    /// A fitting value for every input (but `skip`), plus maybe one more from a slot.
    Fitted { n: u8, fill: u64, skip: Option<u8>, extra: Option<(Name, u8)> },
    /// Fitted inputs plus a value borrowing a local array (`run` only).
    View { name: Name, rows: u8, cols: u8, step: u8, n: u8 },
}

/// What happens to a successful run's outputs.
#[derive(Arbitrary, Debug)]
pub enum After {
    Drop,
    Read,
    /// kept in an outputs slot.
    Keep(u8),
    /// `take` of one output into a value slot.
    Take {
        name: Name,
        slot: u8,
    },
    /// The first of `into_values` into a value slot.
    First(u8),
}

pub enum Kept {
    Outputs(Box<Outputs>),
    Value(Value<'static>),
}

/// The session a run goes to, and what is known about it.
pub struct Target<'a> {
    pub session: &'a Session,
    pub model: usize,
    pub exact: bool,
    pub mode: &'a Mode,
}

fn fitted(session: &Session, n: u8, fill: u64, skip: Option<u8>) -> Vec<(String, Value<'static>)> {
    let inputs = session.inputs();
    let skip = skip.map(|s| usize::from(s) % inputs.len().max(1));
    inputs
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != skip)
        .filter_map(|(i, info)| make::fitting(info, n, fill.wrapping_add(i as u64)).map(|v| (info.name.clone(), v)))
        .collect()
}

/// One synchronous run; returns what `after` keeps.
pub fn run(
    t: Target<'_>,
    inputs: &Inputs,
    slots: &[Option<Value<'static>>],
    outputs: &[Name],
    options: Option<&RunOptions>,
    kernel: u8,
    after: &After,
) -> Option<Kept> {
    let names: Vec<String> = outputs.iter().take(4).map(|n| n.resolve(t.session)).collect();
    let slot = |i: u8| slots[usize::from(i) % slots.len()].as_ref();
    let owned: Vec<(String, Value<'static>)> = match inputs {
        Inputs::Slots(_) => Vec::new(),
        Inputs::Fitted { n, fill, skip, .. } => fitted(t.session, *n, *fill, *skip),
        Inputs::View { n, .. } => fitted(t.session, *n, 7, None),
    };
    let mut pairs: Vec<(String, &Value<'_>)> = owned.iter().map(|(n, v)| (n.clone(), v)).collect();
    match inputs {
        Inputs::Slots(list) => {
            pairs.extend(list.iter().take(6).filter_map(|(n, i)| slot(*i).map(|v| (n.resolve(t.session), v))));
        }
        Inputs::Fitted { extra: Some((n, i)), .. } => pairs.extend(slot(*i).map(|v| (n.resolve(t.session), v))),
        Inputs::Fitted { .. } => {}
        Inputs::View { name, rows, cols, step, .. } => {
            let mut kept = None;
            make::with_view(*rows, *cols, *step, |view| {
                let mut with_view: Vec<(String, &Value<'_>)> = pairs.clone();
                with_view.push((name.resolve(t.session), view));
                kept = run_pairs(&t, &with_view, &names, options, kernel, after);
            });
            return kept;
        }
    }
    run_pairs(&t, &pairs, &names, options, kernel, after)
}

fn run_pairs(
    t: &Target<'_>,
    pairs: &[(String, &Value<'_>)],
    names: &[String],
    options: Option<&RunOptions>,
    kernel: u8,
    after: &After,
) -> Option<Kept> {
    let mode = Compute::from_byte(kernel);
    t.mode.set(mode);
    let names_ref: Vec<&str> = names.iter().map(String::as_str).collect();
    count(1);
    let result = if names.is_empty() && options.is_none() && kernel.is_multiple_of(2) {
        t.session.run(pairs)
    } else {
        t.session.run_with(pairs, &names_ref, options)
    };
    let mut out = result.ok()?;
    check(t, mode, pairs, &names_ref, &out);
    count(2);
    let _ = (out.len(), out.is_empty(), out.names().count());
    match after {
        After::Drop => None,
        After::Read => {
            (0..out.len()).for_each(|i| make::read(&out[i], 0));
            None
        }
        After::Keep(_) => {
            count(1);
            Some(Kept::Outputs(Box::new(out)))
        }
        After::Take { name, .. } => {
            let name = name.resolve(t.session);
            count(1);
            out.take(&name).ok().map(Kept::Value)
        }
        After::First(_) => {
            count(1);
            out.into_values().into_iter().next().map(Kept::Value)
        }
    }
}

fn f32s(value: &Value<'_>) -> Option<Vec<f32>> {
    value.view::<f32>().ok().map(|v| v.iter().copied().collect())
}

/// The outputs this model must give for these inputs, where known.
fn expected(model: &str, mode: Compute, pairs: &[(String, &Value<'_>)]) -> Vec<(&'static str, Vec<f32>)> {
    let input = |name: &str| {
        let mut found = pairs.iter().filter(|(n, _)| n == name);
        match (found.next(), found.next()) {
            (Some((_, v)), None) => f32s(v),
            _ => None, // absent, or given twice
        }
    };
    let map = |x: &[f32], f: fn(f32) -> f32| x.iter().map(|&x| f(x)).collect::<Vec<f32>>();
    match model {
        "add_f32.onnx" => match (input("a"), input("b")) {
            (Some(a), Some(b)) => vec![("sum", a.iter().zip(&b).map(|(a, b)| a + b).collect())],
            _ => vec![],
        },
        "scalar.onnx" => input("x").map(|x| vec![("y", map(&x, |x| x * x))]).unwrap_or_default(),
        "identity_f32.onnx" => input("x").map(|x| vec![("y", x)]).unwrap_or_default(),
        "multi_output.onnx" => input("x")
            .map(|x| {
                vec![("doubled", map(&x, |x| x + x)), ("squared", map(&x, |x| x * x)), ("negated", map(&x, |x| -x))]
            })
            .unwrap_or_default(),
        "custom_scale.onnx" if mode.checked() => {
            input("x").map(|x| vec![("y", map(&x, |x| x * 2.5))]).unwrap_or_default()
        }
        _ => vec![],
    }
}

/// Checks a successful run's outputs where the right answer is known; a wrong one panics, but
/// for the known holes (`KNOWN_ITEM_*`), which are counted.
fn check(t: &Target<'_>, mode: Compute, pairs: &[(String, &Value<'_>)], asked: &[&str], out: &Outputs) {
    let model = MODELS[t.model].0;
    if model == "custom_scale.onnx" && matches!(mode, Compute::WrongTypeFirst | Compute::NoOutput) {
        KNOWN_ITEM_1.fetch_add(1, std::sync::atomic::Ordering::Relaxed); // succeeded with `y` unwritten
    }
    if !t.exact {
        return;
    }
    let names: Vec<&str> = out.names().collect();
    for (name, want) in expected(model, mode, pairs) {
        for (p, _) in names.iter().enumerate().filter(|(_, n)| **n == name) {
            let got = f32s(&out[p]);
            let same = got.as_ref().is_some_and(|got| {
                got.len() == want.len()
                    && got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()))
            });
            if same {
                continue;
            }
            if asked.iter().filter(|a| **a == name).count() > 1 {
                KNOWN_ITEM_3.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            } else {
                panic!("{model} output {name} (position {p} of {names:?}): got {got:?}, expected {want:?}");
            }
        }
    }
}

/// The session's description calls.
pub fn info(session: &Session, name: &Name) {
    let name = name.resolve(session);
    count(11);
    let _ = (session.inputs(), session.outputs(), session.providers(), session.serializes_runs());
    let _ = (session.async_runs_in_flight(), session.max_async_runs(), session.environment().name());
    let _ = (session.metadata().map(|m| format!("{m:?}")), session.input_index(&name), session.output_index(&name));
    let _ = format!("{session:?}");
}

/// One step on an `IoBinding`.
#[derive(Arbitrary, Debug)]
pub enum BindStep {
    /// Binds a value (from the slots, in the order taken) as an input.
    Input {
        name: Name,
        value: u8,
    },
    /// Binds a fitting value made for the binding as an input.
    FittedInput(u8),
    /// Binds a value as a preallocated output (a value bound as input is no longer available).
    Output {
        name: Name,
        value: u8,
    },
    OutputToCpu(Name),
    ClearInputs,
    SyncInputs,
    SyncOutputs,
    Run {
        options: Option<u8>,
        kernel: u8,
    },
    /// Reads the bound outputs of the last run.
    Outputs,
}

/// An `IoBinding` on `session` going through `steps`; `values` are bound by position, and
/// dropped (or returned to the slots) after the binding.
pub fn bind(
    session: &Session,
    steps: &[BindStep],
    values: &mut [Value<'static>],
    options: &[Option<RunOptions>],
    mode: &Mode,
) {
    let fitted = fitted(session, 2, 11, None);
    let mut free: Vec<Option<&mut Value<'static>>> = values.iter_mut().map(Some).collect();
    let mut shared: Vec<Option<&Value<'static>>> = vec![None; free.len()];
    count(1);
    let Ok(mut binding) = session.io_binding() else { return };
    for step in steps.iter().take(12) {
        count(1);
        match step {
            BindStep::Input { name, value } if !free.is_empty() => {
                let i = usize::from(*value) % free.len();
                if shared[i].is_none() {
                    shared[i] = free[i].take().map(|v| &*v);
                }
                if let Some(v) = shared[i] {
                    let _ = binding.bind_input(&name.resolve(session), v);
                }
            }
            BindStep::FittedInput(i) if !fitted.is_empty() => {
                let (name, value) = &fitted[usize::from(*i) % fitted.len()];
                let _ = binding.bind_input(name, value);
            }
            BindStep::Output { name, value } if !free.is_empty() => {
                let i = usize::from(*value) % free.len();
                if let Some(v) = free[i].take() {
                    let _ = binding.bind_output(&name.resolve(session), v);
                }
            }
            BindStep::OutputToCpu(name) => {
                if let Ok(cpu) = MemoryInfo::cpu() {
                    let _ = binding.bind_output_to_device(&name.resolve(session), &cpu);
                }
            }
            BindStep::ClearInputs => drop(binding.clear_inputs()),
            BindStep::SyncInputs => drop(binding.synchronize_inputs()),
            BindStep::SyncOutputs => drop(binding.synchronize_outputs()),
            BindStep::Run { options: o, kernel } => {
                mode.set(Compute::from_byte(*kernel));
                let o = o.and_then(|o| options[usize::from(o) % options.len()].as_ref());
                let _ = binding.run(o);
            }
            BindStep::Outputs => {
                if let Ok(outs) = binding.outputs() {
                    outs.iter().for_each(|v| make::read(v, 0));
                }
            }
            _ => {}
        }
    }
    let _ = format!("{binding:?}");
}

/// Starts `run_async` (inputs moved out of the slots, or fitted), maybe terminating it at once.
#[allow(clippy::too_many_arguments)]
pub fn start(
    session: &Session,
    inputs: &Inputs,
    slots: &mut [Option<Value<'static>>],
    outputs: &[Name],
    tag: Option<&str>,
    stop: bool,
    kernel: u8,
    mode: &Mode,
) -> Option<RunFuture> {
    let names: Vec<String> = outputs.iter().take(4).map(|n| n.resolve(session)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let n = slots.len();
    let mut given: Vec<(String, Value<'static>)> = match inputs {
        Inputs::Slots(list) => list
            .iter()
            .take(6)
            .filter_map(|(name, i)| slots[usize::from(*i) % n].take().map(|v| (name.resolve(session), v)))
            .collect(),
        Inputs::Fitted { n, fill, skip, .. } => fitted(session, *n, *fill, *skip),
        Inputs::View { n, .. } => fitted(session, *n, 3, None),
    };
    if let Inputs::Fitted { extra: Some((name, i)), .. } = inputs {
        given.extend(slots[usize::from(*i) % n].take().map(|v| (name.resolve(session), v)));
    }
    mode.set(Compute::from_byte(kernel));
    count(1);
    let future = match tag {
        None => session.run_async(given, &names),
        Some(tag) => {
            count(3);
            let mut options = RunOptions::new().ok()?;
            let _ = options.set_tag(tag);
            let stopper = options.terminator();
            let future = session.run_async_with(given, &names, options);
            if stop {
                let _ = stopper.terminate();
            }
            future
        }
    };
    future.ok()
}

/// Polls once with a waker that does nothing; `Some` when the run is done.
pub fn poll_once(future: &mut RunFuture) -> Option<onnxrt::Result<Outputs>> {
    count(1);
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(future).poll(&mut cx) {
        Poll::Ready(done) => Some(done),
        Poll::Pending => None,
    }
}

/// Wakes the thread that waits in `block_on`.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls until the run is done, parking the thread in between (an executor of one future).
pub fn block_on(mut future: RunFuture) -> onnxrt::Result<Outputs> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        count(1);
        match Pin::new(&mut future).poll(&mut cx) {
            Poll::Ready(done) => return done,
            Poll::Pending => std::thread::park(),
        }
    }
}
