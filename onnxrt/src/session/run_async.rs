//! [`Session::run_async`]: ORT's `RunAsync` (new in 1.16) as a Rust future.
//!
//! ORT runs the model on its intra-op thread pool and calls back when done; the future resolves
//! then. Everything ORT touches until the callback (the session, the inputs, the name and output
//! arrays) is owned by a shared state the callback releases, so dropping the future early is safe.
//! ORT needs an intra-op pool for this: do not set `intra_op_threads(1)` on such a session.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};

use onnxrt_sys::{OrtStatus, OrtValue};

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
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

    pub(crate) fn wait_idle(&self) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *count > 0 {
            count = self.idle.wait(count).unwrap_or_else(|e| e.into_inner());
        }
    }
}

thread_local! {
    // True while `on_done` wakes the task on ORT's pool thread: a session dropped there (by the
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
    // Keep-alive: ORT reads the inputs until the callback.
    _inputs: Vec<Value<'static>>,
    input_names: Vec<*const c_char>,
    input_values: Vec<*const OrtValue>,
    output_names: Vec<*const c_char>,
    output_values: Mutex<Vec<*mut OrtValue>>,
    // Per requested output: whether the model returns an input there (see `Inner::passthrough`).
    passthrough: Vec<bool>,
    done: Mutex<Done>,
}

#[derive(Default)]
struct Done {
    result: Option<Result<Vec<Value<'static>>>>,
    waker: Option<Waker>,
}

// SAFETY: the raw pointers point into the session's names (alive until `in_flight` is zero) and
// into `_inputs`, which the state owns; they are
// only read by ORT's thread and by the callback, and the mutable parts sit behind Mutexes.
unsafe impl Send for State {}
// SAFETY: as above.
unsafe impl Sync for State {}

/// The future returned by [`Session::run_async`]; resolves to the outputs in model order (or
/// the order requested).
pub struct RunFuture {
    state: Arc<State>,
    names: Vec<String>,
}

/// Outputs of an asynchronous run, with their names.
pub type NamedOutputs = Vec<(String, Value<'static>)>;

impl std::fmt::Debug for RunFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunFuture").field("outputs", &self.names).finish()
    }
}

impl Future for RunFuture {
    type Output = Result<NamedOutputs>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut done = self.state.done.lock().unwrap_or_else(|e| e.into_inner());
        match done.result.take() {
            Some(result) => Poll::Ready(result.map(|values| self.names.iter().cloned().zip(values).collect())),
            None => {
                done.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Session {
    /// Starts a run on ORT's thread pool and returns a future of its outputs. Inputs are moved
    /// in (ORT reads them until the run ends); they are checked like [`Session::run`]'s. As with
    /// [`Outputs`](crate::Outputs), an output that would be an input's buffer is a copy, so the
    /// outputs outlive the inputs the future drops.
    ///
    /// # Errors
    /// Input errors at once; ORT's errors through the future.
    ///
    /// Corresponds to `OrtApi::RunAsync`.
    #[doc(alias = "RunAsync")]
    pub fn run_async(&self, inputs: Vec<(String, Value<'static>)>, outputs: &[&str]) -> Result<RunFuture> {
        let api = api()?;
        let borrowed: Vec<(&str, &Value<'static>)> = inputs.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let mut order: Vec<usize> = Vec::with_capacity(borrowed.len());
        validate::inputs(self, &borrowed, |index, _| order.push(index))?;
        let output_indices: Vec<usize> = if outputs.is_empty() {
            (0..self.inner.outputs.len()).collect()
        } else {
            outputs.iter().map(|n| self.output_index(n)).collect::<Result<_>>()?
        };
        let names = output_indices.iter().map(|&i| self.inner.outputs[i].name.clone()).collect();
        let input_values = inputs.iter().map(|(_, v)| v.as_ptr().cast_const()).collect();
        let values: Vec<Value<'static>> = inputs.into_iter().map(|(_, v)| v).collect();
        let state = Arc::new(State {
            in_flight: Arc::clone(&self.inner.in_flight),
            input_names: order.iter().map(|&i| self.inner.input_names[i].as_ptr()).collect(),
            input_values,
            _inputs: values,
            output_names: output_indices.iter().map(|&i| self.inner.output_names[i].as_ptr()).collect(),
            output_values: Mutex::new(vec![std::ptr::null_mut(); output_indices.len()]),
            passthrough: output_indices.iter().map(|&i| self.inner.passthrough[i]).collect(),
            done: Mutex::new(Done::default()),
        });
        state.in_flight.start();
        let user_data = Arc::into_raw(Arc::clone(&state)).cast_mut().cast::<c_void>();
        let outputs_ptr = state.output_values.lock().unwrap_or_else(|e| e.into_inner()).as_mut_ptr();
        // SAFETY: every pointer passed lives in `state`, which the callback keeps alive through
        // `user_data` (one strong count) until it runs; ORT calls the callback exactly once.
        let started = unsafe {
            ort!(
                api,
                RunAsync(
                    self.inner.raw.as_ptr(),
                    std::ptr::null(),
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
        if let Err(error) = started {
            // ORT did not take the run, so the callback will not fire: drop its reference here.
            // SAFETY: `user_data` came from Arc::into_raw above and was not consumed.
            drop(unsafe { Arc::from_raw(user_data.cast::<State>().cast_const()) });
            state.in_flight.finish();
            return Err(error);
        }
        Ok(RunFuture { state, names })
    }
}

/// ORT's completion callback. Never unwinds into C.
unsafe extern "C" fn on_done(
    user_data: *mut c_void,
    outputs: *mut *mut OrtValue,
    count: usize,
    status: *mut OrtStatus,
) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `user_data` is the reference created by Arc::into_raw in run_async; consumed once.
        let state = unsafe { Arc::from_raw(user_data.cast::<State>().cast_const()) };
        // SAFETY: `status` is the run's status, ours to read and release.
        let checked = unsafe { crate::status::check("RunAsync", status) };
        let mut values = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: ORT passes `count` output slots; each non-null one is a value we now own.
            let raw = unsafe { *outputs.add(i) };
            if !raw.is_null() {
                // SAFETY: as above.
                if let Ok(owned) = unsafe { Owned::from_raw(raw) } {
                    values.push(Value::from_owned(owned));
                }
            }
        }
        // An output that is an input's buffer must not outlive the inputs, which `state` drops
        // once the future is gone: copy it.
        let unaliased = crate::value::alias::unalias(&mut values, state._inputs.iter(), |p| {
            state.passthrough.get(p).copied().unwrap_or(false)
        });
        let result = match checked.and(unaliased) {
            Ok(()) if values.len() == count => Ok(values),
            Ok(()) => Err(Error::Ort {
                function: "RunAsync",
                code: crate::error::ErrorCode::Fail,
                message: "missing outputs".into(),
            }),
            Err(e) => Err(e),
        };
        let mut done = state.done.lock().unwrap_or_else(|e| e.into_inner());
        done.result = Some(result);
        let waker = done.waker.take();
        drop(done);
        if let Some(waker) = waker {
            // The waker may drop the last `Session` here, on ORT's thread, before `finish` below:
            // `Drop for Inner` sees the flag and releases the session on another thread.
            IN_CALLBACK.with(|flag| flag.set(true));
            waker.wake();
            IN_CALLBACK.with(|flag| flag.set(false));
        }
        // Last: from here on the session may be released (on the thread that drops it, not here).
        state.in_flight.finish();
    }));
}
