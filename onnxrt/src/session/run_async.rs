//! [`Session::run_async`]: ORT's `RunAsync` (new in 1.16) as a Rust future.
//!
//! ORT runs the model on its intra-op pool's worker threads and calls back when done; the future
//! resolves then. Everything ORT touches until the callback (the session's names, the inputs, the
//! output array, the run's options) is owned by a shared state the callback releases, so dropping
//! the future early is safe; dropping it also sets the run's terminate flag, so ORT stops at its
//! next check instead of finishing work nobody will read. At most
//! [`SessionBuilder::max_async_runs`](crate::SessionBuilder::max_async_runs) runs of a session are
//! with ORT at once (see `gate`); the rest wait for a slot inside their futures.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

use onnxrt_sys::{OrtStatus, OrtValue};
use smallvec::SmallVec;

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::run_options::RunOptions;
use crate::session::async_input::sealed::Sealed;
use crate::session::async_input::{AsyncInput, Held, HeldValue, InputName};
use crate::session::gate::{Gate, Ticket};
use crate::session::outputs::Outputs;
use crate::session::{validate, Session};
use crate::status::ort;
use crate::value::Value;

/// Counts asynchronous runs in flight, so the session outlives them (see `Drop for Inner`).
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    count: Mutex<usize>,
    idle: Condvar,
}

impl InFlight {
    fn start(&self) {
        *self.count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }

    fn finish(&self) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.idle.notify_all();
        }
    }

    pub(crate) fn count(&self) -> usize {
        *self.count.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn wait_idle(&self) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *count > 0 {
            count = self.idle.wait(count).unwrap_or_else(|e| e.into_inner());
        }
    }
}

thread_local! {
    // True while `on_done` wakes tasks on ORT's pool thread: a session dropped there (by a
    // waker) must not be released on that thread (see `Drop for Inner`).
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

/// Whether this thread is ORT's, inside a run's completion callback.
pub(crate) fn in_callback() -> bool {
    IN_CALLBACK.with(Cell::get)
}

struct State {
    // The session waits for this to reach zero before it is released (it owns the names below).
    in_flight: Arc<InFlight>,
    // The run's slot goes back here when ORT calls back.
    gate: Arc<Gate>,
    // This run's own options: ORT reads them until the callback; dropping the future terminates.
    options: RunOptions,
    // Keep-alive: ORT reads the inputs until the callback. `input_values` point into these
    // very values (taken from them before they moved here), never into what an input showed.
    inputs: Vec<Held>,
    input_names: Vec<*const c_char>,
    input_values: Vec<*const OrtValue>,
    output_names: Vec<*const c_char>,
    output_values: Mutex<Vec<*mut OrtValue>>,
    // Per requested output: its name, and whether the model returns an input there.
    labels: Vec<Arc<str>>,
    passthrough: Vec<bool>,
    // The session runs on the CPU alone: an out-of-memory error is the host's.
    cpu_only: bool,
    done: Mutex<Done>,
}

#[derive(Default)]
struct Done {
    result: Option<Result<Vec<Value<'static>>>>,
    waker: Option<Waker>,
}

// SAFETY: the raw pointers point into the session's names (alive until `in_flight` is zero) and
// into `inputs`, which the state owns; they are only read by ORT's thread and by the callback,
// and the mutable parts sit behind Mutexes. RunOptions is Send + Sync.
unsafe impl Send for State {}
// SAFETY: as above.
unsafe impl Sync for State {}

enum Phase {
    // Waiting for a slot; the session is kept for the start.
    Queued(Session, Arc<Ticket>),
    // With ORT; the result arrives through `State::done`.
    Started,
    // The result was handed out (or the start failed).
    Finished,
}

/// A run in progress: resolves to its [`Outputs`] (in model order, or the order requested).
///
/// Returned by [`Session::run_async`] and [`Session::run_async_with`]. It is `Send` and
/// `'static`: spawn it, race it, time it out. The run's inputs and options live in it until ORT
/// calls back, so every way of dropping it is safe:
///
/// - **Dropping it cancels the run.** Before the run reaches ORT it simply never starts; after,
///   the run's terminate flag is set and ORT stops at its next check (between nodes, and between
///   iterations of a loop), ending with [`Error::Terminated`] that nobody reads. Its slot is
///   then free for the next run.
/// - **Backpressure.** While [`SessionBuilder::max_async_runs`](crate::SessionBuilder::max_async_runs)
///   runs of the session are with ORT, a new future waits, in arrival order, for one to end;
///   `run_async` itself never blocks and never runs the model on the caller's thread.
///
/// ```
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use onnxrt::{Session, Value};
///
/// let session = Session::builder().async_threads().commit_from_file(model)?;
/// // A buffer shared by many requests: no copy per run.
/// let b = Arc::new(Value::from_vec(&[2, 3], vec![1.0f32; 6])?);
/// let a = Value::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
/// let run = session.run_async([("a", Arc::new(a)), ("b", Arc::clone(&b))], &[])?;
/// // A timeout drops the future, which terminates the run.
/// let outputs = tokio::time::timeout(Duration::from_secs(10), run).await.expect("in time")?;
/// assert_eq!(outputs.names().collect::<Vec<_>>(), ["sum"]);
/// assert_eq!(outputs.get("sum")?.view::<f32>()?.as_slice(), Some(&[2.0f32, 3.0, 4.0, 5.0, 6.0, 7.0][..]));
/// # Ok::<(), onnxrt::Error>(())
/// # }).unwrap();
/// ```
pub struct RunFuture {
    state: Arc<State>,
    phase: Phase,
}

impl std::fmt::Debug for RunFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match self.phase {
            Phase::Queued(..) => "waiting for a slot",
            Phase::Started => "running",
            Phase::Finished => "finished",
        };
        f.debug_struct("RunFuture").field("outputs", &self.state.labels).field("phase", &phase).finish()
    }
}

impl Future for RunFuture {
    type Output = Result<Outputs>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if let Phase::Queued(_, ticket) = &self.phase {
            if !ticket.granted(cx.waker()) {
                return Poll::Pending;
            }
            ticket.consume();
            let Phase::Queued(session, _) = std::mem::replace(&mut self.phase, Phase::Started) else {
                unreachable!("matched above")
            };
            if let Err(error) = start(&session, &self.state) {
                self.phase = Phase::Finished;
                return Poll::Ready(Err(error));
            }
        }
        if let Phase::Finished = self.phase {
            return Poll::Ready(Err(Error::InvalidArgument {
                what: "RunFuture".into(),
                why: "polled again after it completed".into(),
            }));
        }
        let mut done = self.state.done.lock().unwrap_or_else(|e| e.into_inner());
        match done.result.take() {
            Some(result) => {
                drop(done);
                self.phase = Phase::Finished;
                let labels = self.state.labels.clone();
                Poll::Ready(result.map(|values| Outputs::new(labels, values)))
            }
            None => {
                if !done.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    done.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for RunFuture {
    fn drop(&mut self) {
        match &self.phase {
            Phase::Queued(_, ticket) => self.state.gate.cancel(ticket),
            Phase::Started => {
                let unfinished = self.state.done.lock().unwrap_or_else(|e| e.into_inner()).result.is_none();
                if unfinished {
                    // Nobody will read this run's outputs: let ORT stop at its next check.
                    let _ = self.state.options.terminator().terminate();
                }
            }
            Phase::Finished => {}
        }
    }
}

impl Session {
    /// Starts a run and returns a future of its outputs (see [`RunFuture`] for cancellation and
    /// backpressure). Same as [`run_async_with`](Session::run_async_with) with default options.
    ///
    /// Inputs are `(name, Value<'static>)` moved in, or `(name, Arc<Value<'static>>)` shared
    /// with other runs (see [`AsyncInput`]); they are checked like [`Session::run`]'s. As with
    /// [`Outputs`](crate::Outputs), an output that would be an input's buffer is a copy, so the
    /// outputs outlive the inputs.
    ///
    /// # Errors
    /// Input errors at once, and [`Error::AsyncNeedsThreadPool`] for a session built with
    /// `intra_op_threads(1)`; ORT's errors through the future.
    ///
    /// Corresponds to `OrtApi::RunAsync`.
    #[doc(alias = "RunAsync")]
    pub fn run_async<I>(&self, inputs: I, outputs: &[&str]) -> Result<RunFuture>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        self.run_async_with(inputs, outputs, RunOptions::new()?)
    }

    /// [`run_async`](Session::run_async) with [`RunOptions`] (a log tag or level, a
    /// [`RunTerminator`](crate::RunTerminator) kept to cancel from elsewhere). The options belong
    /// to this run: dropping the future sets their terminate flag.
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/slow_loop.onnx");
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use onnxrt::{Error, RunOptions, Session, Value};
    ///
    /// let session = Session::builder().async_threads().commit_from_file(model)?;
    /// let mut options = RunOptions::new()?;
    /// options.set_tag("request-17")?;
    /// let stop = options.terminator();
    /// let run = session.run_async_with([("iters", Value::scalar(1_000_000i64)?)], &[], options)?;
    /// stop.terminate()?;
    /// assert!(matches!(run.await, Err(Error::Terminated { .. })));
    /// # Ok::<(), onnxrt::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`run_async`](Session::run_async).
    ///
    /// Corresponds to `OrtApi::RunAsync`.
    #[doc(alias = "RunAsync")]
    pub fn run_async_with<I>(&self, inputs: I, outputs: &[&str], options: RunOptions) -> Result<RunFuture>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        if let Some(threads @ 1) = self.inner.intra_op_threads {
            return Err(Error::AsyncNeedsThreadPool { threads });
        }
        // Ownership first: every pointer ORT gets is derived from a value this run holds (and
        // keeps in `State::inputs` until the callback), never from what an input lent for a look.
        let given: SmallVec<[(<I::Item as Sealed>::Name, HeldValue); 8]> =
            inputs.into_iter().map(Sealed::into_parts).collect();
        let borrowed: SmallVec<[(&str, &Value<'static>); 8]> =
            given.iter().map(|(name, held)| (name.as_name(), held.value())).collect();
        let mut order: Vec<usize> = Vec::with_capacity(borrowed.len());
        // Only the values validation accepts: an absent optional input is left out of the run.
        let mut input_values = Vec::with_capacity(borrowed.len());
        validate::inputs(self, &borrowed, |index, value| {
            order.push(index);
            input_values.push(value.as_ptr().cast_const());
        })?;
        drop(borrowed);
        let output_indices: Vec<usize> = if outputs.is_empty() {
            (0..self.inner.outputs.len()).collect()
        } else {
            outputs.iter().map(|n| self.output_index(n)).collect::<Result<_>>()?
        };
        let state = Arc::new(State {
            in_flight: Arc::clone(&self.inner.in_flight),
            gate: Arc::clone(&self.inner.gate),
            options,
            input_names: order.iter().map(|&i| self.inner.input_names[i].as_ptr()).collect(),
            input_values,
            // Moving a `Held` moves no tensor: the pointers taken above stay valid.
            inputs: given.into_iter().map(|(_, held)| held.0).collect(),
            output_names: output_indices.iter().map(|&i| self.inner.output_names[i].as_ptr()).collect(),
            output_values: Mutex::new(vec![std::ptr::null_mut(); output_indices.len()]),
            labels: output_indices.iter().map(|&i| Arc::clone(&self.inner.output_labels[i])).collect(),
            passthrough: output_indices.iter().map(|&i| self.inner.passthrough[i]).collect(),
            cpu_only: self.cpu_only(),
            done: Mutex::new(Done::default()),
        });
        let phase = match self.inner.gate.enter() {
            None => {
                start(self, &state)?;
                Phase::Started
            }
            Some(ticket) => Phase::Queued(self.clone(), ticket),
        };
        Ok(RunFuture { state, phase })
    }
}

/// Hands a run that holds a slot to ORT; on failure the slot goes back.
fn start(session: &Session, state: &Arc<State>) -> Result<()> {
    let started = api().and_then(|api| {
        state.in_flight.start();
        let user_data = Arc::into_raw(Arc::clone(state)).cast_mut().cast::<c_void>();
        let outputs_ptr = state.output_values.lock().unwrap_or_else(|e| e.into_inner()).as_mut_ptr();
        // SAFETY: every pointer passed lives in `state`, which the callback keeps alive through
        // `user_data` (one strong count) until it runs; ORT calls the callback exactly once.
        let started = unsafe {
            ort!(
                api,
                RunAsync(
                    session.inner.raw.as_ptr(),
                    state.options.as_ptr(),
                    state.input_names.as_ptr(),
                    state.input_values.as_ptr(),
                    state.input_values.len(),
                    state.output_names.as_ptr(),
                    state.output_names.len(),
                    outputs_ptr,
                    Some(on_done),
                    user_data,
                )
            )
        };
        if started.is_err() {
            // ORT did not take the run, so the callback will not fire: drop its reference here.
            // SAFETY: `user_data` came from Arc::into_raw above and was not consumed.
            drop(unsafe { Arc::from_raw(user_data.cast::<State>().cast_const()) });
            state.in_flight.finish();
        }
        started
    });
    if let Err(error) = started {
        state.gate.leave();
        // ORT refuses RunAsync when the intra-op pool has no worker (e.g. global pools of one).
        return Err(match error {
            Error::Ort { message, .. } if crate::ort_messages::RUN_ASYNC_NEEDS_THREADS.matches(&message) => {
                Error::AsyncNeedsThreadPool { threads: 1 }
            }
            other => other,
        });
    }
    Ok(())
}

/// ORT's completion callback. Its whole body runs inside `ffi_guard::guard`, so nothing unwinds
/// into C; the waker (user code: an executor's, or one made with `std::task::Wake`) runs under
/// `ffi_guard::catch`, so a panicking waker, or a panic payload whose `Drop` panics, neither
/// aborts nor skips the bookkeeping after it (without `finish`, dropping the session would wait
/// for this run for ever).
unsafe extern "C" fn on_done(
    user_data: *mut c_void,
    outputs: *mut *mut OrtValue,
    count: usize,
    status: *mut OrtStatus,
) {
    crate::ffi_guard::guard(
        || (),
        || {
            // SAFETY: `user_data` is the reference created by Arc::into_raw in run_async; consumed once.
            let state = unsafe { Arc::from_raw(user_data.cast::<State>().cast_const()) };
            // Last, on every path (a panic of ours included): from here on the session may be
            // released (on the thread that drops it, not here).
            let _finish = Finish(Arc::clone(&state.in_flight));
            // SAFETY: `status` is the run's status, ours to read and release.
            let checked = unsafe { crate::status::check("RunAsync", status) };
            let mut values = Vec::with_capacity(count);
            for i in 0..count {
                // SAFETY: ORT passes `count` output slots; each non-null one is a value we now own.
                let raw = unsafe { *outputs.add(i) };
                if !raw.is_null() {
                    // SAFETY: as above.
                    if let Ok(owned) = unsafe { Owned::from_raw(raw) } {
                        let value = Value::from_owned(owned);
                        values.push(match state.labels.get(i) {
                            Some(label) => value.with_name(Arc::clone(label)),
                            None => value,
                        });
                    }
                }
            }
            // An output that is an input's buffer must not outlive the inputs, which `state` drops
            // once the future is gone: copy it.
            let unaliased = crate::value::alias::unalias(&mut values, state.inputs.iter().map(Held::value), |p| {
                state.passthrough.get(p).copied().unwrap_or(false)
            });
            let checked = checked.map_err(|e| e.in_host_memory_if(state.cpu_only));
            let result = match checked.and(unaliased) {
                Ok(()) if values.len() == count => Ok(values),
                Ok(()) => Err(Error::null_out("RunAsync", "value for an output")),
                Err(e) => Err(e),
            };
            let mut done = state.done.lock().unwrap_or_else(|e| e.into_inner());
            done.result = Some(result);
            let waker = done.waker.take();
            drop(done);
            // A waker may drop the last `Session` here, on ORT's thread, before `_finish` drops:
            // `Drop for Inner` sees the flag and releases the session on another thread.
            IN_CALLBACK.with(|flag| flag.set(true));
            if let Some(waker) = waker {
                let _ = crate::ffi_guard::catch(move || waker.wake());
            }
            // The slot goes to the oldest waiting future (woken here, its waker's panic caught
            // inside `leave`), or back to the pool.
            state.gate.leave();
            IN_CALLBACK.with(|flag| flag.set(false));
        },
    );
}

/// Ends a run's count in flight when dropped, so the completion callback ends it however its body
/// ends (a local of its body: dropped after everything else the body did).
struct Finish(Arc<InFlight>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.finish();
    }
}
