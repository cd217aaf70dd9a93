//! [`Session`]: a loaded model, run with named inputs from any number of threads at once.
//!
//! `Session` is `Send + Sync` and [`Session::run`] takes `&self`: ORT's `Run` is thread-safe, so
//! share a session with `Arc` instead of a `Mutex`. The one exception ORT documents is the
//! TensorRT provider before ORT 1.17; a session using it on such a runtime serializes its own runs.
//!
//! Inputs are checked in Rust before ORT sees them: unknown or missing names, element types,
//! ranks and fixed dimensions each give a typed error that says what the model expects.

// First in the rendered docs: how a session is made (commit_from_*), then how it runs.
mod by_device;
mod cancel;
mod captured_graph;
mod create;
mod placement;

mod run;

pub(crate) mod async_input;
pub(crate) mod builder;
mod external_data;
mod gate;
pub(crate) mod info;
mod input;
pub(crate) mod metadata;
mod model_bytes;
pub(crate) mod model_check;
mod optional;
pub(crate) mod output_pool;
mod outputs;
mod run_async;
mod saved_model;
mod shared_weights;
pub(crate) mod validate;

use std::ffi::{c_char, CString};
use std::mem::ManuallyDrop;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use smallvec::SmallVec;

use onnxrt_sys::OrtSession;

use crate::api::api;
use crate::env::Environment;
use crate::error::{Error, Names, Result};
use crate::handle::Owned;
use crate::memory::{default_allocator, take_string};
use crate::status::ort;
use crate::value::Value;

/// Output positions of one run (on the stack for up to 8 outputs).
type Indices = SmallVec<[usize; 8]>;

/// Output values of one run (on the stack for up to 4 outputs, so a run allocates nothing).
type OutputValues = SmallVec<[Value<'static>; 4]>;

pub use async_input::{AsyncInput, HeldValue, InputName};
pub use builder::{config_keys, ExecutionMode, OptimizationLevel, SessionBuilder, DEFAULT_MAX_ASYNC_RUNS};
pub use cancel::LoadCanceller;
pub(crate) use cancel::{check as cancel_check, watch as cancel_watch};
pub use info::{Dim, ValueInfo};
pub use input::SessionInput;
pub use metadata::ModelMetadata;
pub use model_bytes::ModelBytes;
pub use optional::ValueType;
pub use outputs::Outputs;
pub use run_async::RunFuture;
pub use shared_weights::{PrepackedWeights, SharedInitializers};
pub use validate::check_inputs;

pub(crate) struct Inner {
    // Released in `Drop for Inner`, possibly on another thread.
    raw: ManuallyDrop<Owned<OrtSession>>,
    // Kept alive for as long as the session: ORT sessions must not outlive their environment.
    env: Arc<Environment>,
    inputs: Vec<ValueInfo>,
    outputs: Vec<ValueInfo>,
    pub(crate) input_names: Vec<CString>,
    pub(crate) output_names: Vec<CString>,
    // Pointers into `output_names` (heap data that never moves), ready for Run.
    output_name_ptrs: Vec<*const c_char>,
    // Output names shared with the values a run returns (naming them in errors costs no allocation).
    output_labels: Vec<Arc<str>>,
    // Some when ORT's Run is not thread-safe for this session's providers (TensorRT < 1.17).
    pub(crate) run_lock: Option<Mutex<()>>,
    providers: Vec<&'static str>,
    // Per output: whether the model returns one of its inputs there (same name), which ORT hands
    // back as the input's own value; such outputs are copied (see `value::alias`).
    pub(crate) passthrough: Vec<bool>,
    // Asynchronous runs not yet called back; the session is released only when this is zero.
    pub(crate) in_flight: Arc<run_async::InFlight>,
    // At most `max_async_runs` asynchronous runs with ORT at once.
    pub(crate) gate: Arc<gate::Gate>,
    // As set on the builder (None with global thread pools): 1 leaves RunAsync no worker.
    pub(crate) intra_op_threads: Option<usize>,
    // Rust custom operators ORT calls back into: released after the session (see `Drop`).
    custom_ops: crate::custom_op::Registered,
    // Shared weights ORT points into: released after the session (see `Drop`).
    held: shared_weights::SessionHeld,
    // Output tensors handed to ORT preallocated, recycled between runs (CPU-only sessions).
    output_pool: output_pool::OutputPool,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Never release the session while ORT may still call back into it, never from ORT's own
        // pool thread, and never make the dropping thread (an async worker, say) wait for runs.
        // With no run in flight the release happens here. Otherwise it moves to a thread of its
        // own that waits for the runs (their futures, if dropped, have set their terminate flags):
        // the last `Session` can even be dropped on ORT's thread, by a waker that `on_done` calls
        // before its run counts as finished, where waiting would deadlock.
        // SAFETY: taken exactly once, here; `raw` is not used after this line.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        if run_async::in_callback() || self.in_flight.count() > 0 {
            let in_flight = Arc::clone(&self.in_flight);
            // If no thread can be started, the closure is dropped unrun: ManuallyDrop then leaks
            // the session (and keeps its environment) rather than block or deadlock.
            // The runs read the session's name strings too: they travel with it.
            let names = (std::mem::take(&mut self.input_names), std::mem::take(&mut self.output_names));
            let custom_ops = std::mem::take(&mut self.custom_ops);
            let weights = std::mem::take(&mut self.held);
            let held = ManuallyDrop::new(Handoff(raw, Arc::clone(&self.env), names, custom_ops, weights));
            let release = move || {
                in_flight.wait_idle();
                drop(ManuallyDrop::into_inner(held));
            };
            let _ = std::thread::Builder::new().name("onnxrt-session-release".into()).spawn(release);
        } else {
            drop(raw);
        }
        // The fields drop after this: `held` (shared weights) only once the session is gone.
    }
}

/// A session (with the environment it needs, the name strings its runs read and the custom
/// operators it calls) on its way to be released on another thread. Fields drop in order: the
/// session first.
struct Handoff(
    #[allow(dead_code)] Owned<OrtSession>,
    #[allow(dead_code)] Arc<Environment>,
    #[allow(dead_code)] (Vec<CString>, Vec<CString>),
    #[allow(dead_code)] crate::custom_op::Registered,
    #[allow(dead_code)] shared_weights::SessionHeld,
);

// SAFETY: an OrtSession has no thread affinity (it is created, run and released on any thread;
// `Inner` is Send for the same reason); only the handoff thread touches it.
unsafe impl Send for Handoff {}

// SAFETY: ORT documents OrtSession::Run (and RunAsync, IoBinding runs) as safe to call
// concurrently from several threads on one session; the other calls we make on &Session only read
// metadata. Providers for which ORT does not guarantee this get `run_lock` (`providers/mod.rs`).
unsafe impl Send for Inner {}
// SAFETY: as above.
unsafe impl Sync for Inner {}

/// A model loaded into ORT; cheap to clone (an `Arc`), `Send + Sync`.
///
/// **Threads.** [`run`](Session::run) takes `&self` and may be called from any number of threads
/// at once (ORT's `Run` is thread-safe; TensorRT before ORT 1.17 excepted, see
/// [`serializes_runs`](Session::serializes_runs)). It blocks its caller for the whole run and
/// also uses the session's intra-op pool: in an async service call it inside
/// `spawn_blocking`, or use [`run_async`](Session::run_async).
///
/// **Async.** [`run_async`](Session::run_async) returns a [`RunFuture`] that needs no
/// particular executor. Runs execute on the intra-op pool's workers (never on the caller), so
/// build the session with [`SessionBuilder::async_threads`] to give them every core (ORT's
/// default leaves one core to the caller of `run`; `intra_op_threads(1)` leaves no worker at all:
/// [`Error::AsyncNeedsThreadPool`]). At most [`SessionBuilder::max_async_runs`] runs are with ORT
/// at once; the others wait in their futures. Dropping a future terminates its run.
///
/// **Dropping.** Dropping the last `Session` never waits: with asynchronous runs in flight the
/// release moves to a short-lived thread that waits for them (a dropped future's run stops at
/// ORT's next terminate check, well under a second on the test models); the futures still
/// alive resolve normally.
///
/// ```
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use onnxrt::{Session, Value};
///
/// let session = Session::builder().async_threads().max_async_runs(64).commit_from_file(model)?;
/// let inputs = || [("a", Value::from_vec(&[2, 3], vec![1.0f32; 6]).unwrap()), ("b", Value::from_vec(&[2, 3], vec![2.0f32; 6]).unwrap())];
/// let mut tasks = Vec::new();
/// for _ in 0..8 {
///     tasks.push(tokio::spawn(session.run_async(inputs(), &["sum"])?));
/// }
/// drop(session); // does not wait for the runs
/// for task in tasks {
///     let outputs = task.await.expect("task")?;
///     assert!(outputs.get("sum")?.view::<f32>()?.iter().all(|&v| v == 3.0));
/// }
/// # Ok::<(), onnxrt::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Session {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("inputs", &self.inner.inputs.iter().map(|i| &i.name).collect::<Vec<_>>())
            .field("outputs", &self.inner.outputs.iter().map(|o| &o.name).collect::<Vec<_>>())
            .field("providers", &self.inner.providers)
            .finish()
    }
}

/// Inputs, outputs, input names and output names (as C strings) of a model.
type DescribedIo = (Vec<ValueInfo>, Vec<ValueInfo>, Vec<CString>, Vec<CString>);

/// The model's inputs and outputs, with their names as C strings.
fn describe_io(raw: &Owned<OrtSession>) -> Result<DescribedIo> {
    let inputs = info::describe(raw.as_ptr(), info::Side::Input)?;
    let outputs = info::describe(raw.as_ptr(), info::Side::Output)?;
    let c_names = |infos: &[ValueInfo]| -> Result<Vec<CString>> {
        infos
            .iter()
            .map(|i| CString::new(i.name.as_str()).map_err(|_| Error::nul("model value name", &i.name)))
            .collect()
    };
    let input_names = c_names(&inputs)?;
    let output_names = c_names(&outputs)?;
    Ok((inputs, outputs, input_names, output_names))
}

impl Session {
    /// Settings for a new session.
    pub fn builder() -> SessionBuilder {
        SessionBuilder::new()
    }

    pub(crate) fn new(
        raw: Owned<OrtSession>,
        env: Arc<Environment>,
        prepared: crate::providers::Prepared,
        asyncs: builder::AsyncSettings,
        custom_ops: crate::custom_op::Registered,
        held: shared_weights::SessionHeld,
    ) -> Result<Session> {
        let (inputs, outputs, input_names, output_names) = match describe_io(&raw) {
            Ok(described) => described,
            Err(e) => {
                // The session first: releasing it destroys kernels that call into `custom_ops`.
                drop(raw);
                drop(custom_ops);
                return Err(e);
            }
        };
        let output_name_ptrs = output_names.iter().map(|n| n.as_ptr()).collect();
        let output_labels = outputs.iter().map(|o| Arc::from(o.name.as_str())).collect();
        let run_lock = prepared.serialize_runs.then(|| Mutex::new(()));
        let passthrough: Vec<bool> = outputs.iter().map(|o| inputs.iter().any(|i| i.name == o.name)).collect();
        let mut providers = prepared.registered;
        if let Some(selector) = &held.device_selector {
            let chosen = selector.chosen_providers();
            add_before_cpu(&mut providers, chosen.iter().map(String::as_str));
        }
        // ORT chose by policy: what it chose where the runtime records it, else every provider
        // it could choose from (never `CPU` alone unless that is all there was).
        let by_policy = prepared.by_policy;
        if by_policy {
            add_before_cpu(&mut providers, crate::ep_device::listed_providers(&env)?.iter().map(String::as_str));
        }
        let cpu_only = providers == ["CPUExecutionProvider"];
        // The preallocation rule (session/output_pool.rs): only where every node must write.
        let every_output_written = !custom_ops.may_skip_outputs();
        let output_pool = output_pool::OutputPool::new(&outputs, &passthrough, cpu_only && every_output_written);
        let mut session = Session {
            inner: Arc::new(Inner {
                raw: ManuallyDrop::new(raw),
                env,
                inputs,
                outputs,
                input_names,
                output_names,
                output_name_ptrs,
                output_labels,
                run_lock,
                in_flight: Arc::default(),
                gate: Arc::new(gate::Gate::new(asyncs.max_async_runs)),
                intra_op_threads: asyncs.intra_op_threads,
                providers,
                passthrough,
                custom_ops,
                held,
                output_pool,
            }),
        };
        if by_policy {
            session.providers_from_placement();
        }
        Ok(session)
    }

    /// The model's inputs, in order, with element types and shapes (symbolic axes by name).
    ///
    /// ```
    /// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/dynamic_batch.onnx");
    /// let session = onnxrt::Session::builder().commit_from_file(model)?;
    /// let input = &session.inputs()[0];
    /// assert_eq!(input.name, "images");
    /// assert_eq!(input.shape_text(), "[batch, 3, 4, 4]");
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    pub fn inputs(&self) -> &[ValueInfo] {
        &self.inner.inputs
    }

    /// The model's outputs, in order.
    pub fn outputs(&self) -> &[ValueInfo] {
        &self.inner.outputs
    }

    /// Execution providers registered for this session, in priority order (`CPU` last): the
    /// classic ones ([`SessionBuilder::cuda`], [`provider`](SessionBuilder::provider), …), those
    /// appended by device ([`SessionBuilder::providers_for_devices`]) and those of the devices a
    /// [`device_selector`](SessionBuilder::device_selector) chose. For a
    /// [`device_policy`](SessionBuilder::device_policy), ORT chooses: on ONNX Runtime 1.24+ these
    /// are the providers ORT assigned nodes to; before, every provider whose devices it could choose.
    pub fn providers(&self) -> &[&'static str] {
        &self.inner.providers
    }

    /// Whether this session serializes its runs (TensorRT on ORT < 1.17).
    pub fn serializes_runs(&self) -> bool {
        self.inner.run_lock.is_some()
    }

    /// Asynchronous runs of this session holding one of its
    /// [`max_async_runs`](SessionBuilder::max_async_runs) slots: with ORT, or about to start
    /// (futures waiting for a slot do not count). A run gives its slot back in ORT's callback.
    pub fn async_runs_in_flight(&self) -> usize {
        self.inner.gate.taken()
    }

    /// The bound set by [`SessionBuilder::max_async_runs`].
    pub fn max_async_runs(&self) -> usize {
        self.inner.gate.limit()
    }

    /// The environment the session lives in.
    pub fn environment(&self) -> &Arc<Environment> {
        &self.inner.env
    }

    /// Producer, graph name, domain, description, version and custom metadata of the model.
    ///
    /// Corresponds to `OrtApi::SessionGetModelMetadata`.
    #[doc(alias = "SessionGetModelMetadata")]
    pub fn metadata(&self) -> Result<ModelMetadata> {
        metadata::read(self.inner.raw.as_ptr())
    }

    /// Position of the input called `name`.
    pub fn input_index(&self, name: &str) -> Result<usize> {
        self.inner.inputs.iter().position(|i| i.name == name).ok_or_else(|| Error::UnknownInput {
            name: name.to_owned(),
            valid: Names(self.inner.inputs.iter().map(|i| i.name.clone()).collect()),
        })
    }

    /// Position of the output called `name`.
    pub fn output_index(&self, name: &str) -> Result<usize> {
        self.inner.outputs.iter().position(|o| o.name == name).ok_or_else(|| Error::UnknownOutput {
            name: name.to_owned(),
            valid: Names(self.inner.outputs.iter().map(|o| o.name.clone()).collect()),
        })
    }

    /// Ends profiling and returns the path of the profile (Chrome trace JSON) ORT wrote.
    ///
    /// Corresponds to `OrtApi::SessionEndProfiling`.
    #[doc(alias = "SessionEndProfiling")]
    pub fn end_profiling(&self) -> Result<PathBuf> {
        let api = api()?;
        let allocator = default_allocator()?;
        let mut out = std::ptr::null_mut();
        // SAFETY: the session is live; ORT allocates the path with `allocator`.
        unsafe { ort!(api, SessionEndProfiling(self.inner.raw.as_ptr(), allocator, &mut out)) }?;
        // SAFETY: allocated by `allocator`, freed once inside.
        Ok(PathBuf::from(unsafe { take_string(allocator, out) }))
    }

    /// The session handle, for ORT calls (IoBinding, providers); it stays owned here.
    pub(crate) fn as_ptr(&self) -> *mut OrtSession {
        self.inner.raw.as_ptr()
    }
}

/// Adds `names` (each once) to `providers` before the CPU provider, which stays last.
fn add_before_cpu<'a>(providers: &mut Vec<&'static str>, names: impl Iterator<Item = &'a str>) {
    let cpu = "CPUExecutionProvider";
    providers.retain(|&p| p != cpu);
    for name in names {
        if name != cpu && !providers.contains(&name) {
            providers.push(crate::providers::named::interned(name));
        }
    }
    providers.push(cpu);
}
