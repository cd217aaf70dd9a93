//! How a served model's requests reach a session ([`Runner`]): run directly on a blocking
//! thread, through the dynamic batcher, or in a worker process; the run slots, the queue of
//! waiting requests, and a run stopped at its deadline.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use onnxrt::{Session, Value};

use crate::batch::Batcher;
use crate::isolation::{IsolatedError, RunHandle, WorkerPool};
use crate::repository::errors::InferError;
use crate::repository::model::ServedModel;
use crate::repository::stats::Phases;

/// How requests reach the session.
pub(super) enum Runner {
    /// Each request its own run on a blocking thread; `slots` runs at once.
    Direct { session: Arc<Session> },
    /// Requests of one sample go through the dynamic batcher; others run directly on its session.
    /// With `pool` (isolation), every batch and every other request runs in a worker process.
    Batched { batcher: Arc<Batcher>, pool: Option<Arc<WorkerPool>> },
    /// Each request runs in one of the model's worker processes (`slots` at once).
    Isolated { pool: Arc<WorkerPool> },
}

impl ServedModel {
    /// Runs on a blocking thread once one of the model's run slots is free; at most `queue`
    /// requests wait for one.
    pub(super) async fn run_direct(
        &self,
        session: SessionRef,
        inputs: Vec<(String, Value<'static>)>,
        wanted: &[&str],
        deadline: Option<Instant>,
        phases: &mut Phases,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        let queued = Instant::now();
        let waiting = self.waiting.fetch_add(1, Relaxed);
        let _waiting = Decrement(&self.waiting);
        if waiting >= self.settings.queue {
            return Err(InferError::Overloaded(format!(
                "model `{}` has {waiting} requests waiting (its queue holds {}); retry later",
                self.name, self.settings.queue
            )));
        }
        let acquire = Arc::clone(&self.slots).acquire_owned();
        let permit = match deadline {
            Some(at) => tokio::time::timeout_at(at.into(), acquire).await.map_err(|_| self.late())?,
            None => acquire.await,
        }
        .map_err(|_| InferError::ShuttingDown)?;
        drop(_waiting);
        phases.queue = queued.elapsed();
        let running = Instant::now();
        // A run past the request's deadline is stopped (ORT's terminate flag, or its worker
        // process killed), so an abandoned request does not keep its slot and a core busy.
        let options = onnxrt::RunOptions::new().map_err(|e| InferError::Failed(e.to_string()))?;
        let terminator = options.terminator();
        let handle = Arc::new(RunHandle::default());
        let run_handle = Arc::clone(&handle);
        let wanted: Vec<String> = wanted.iter().map(|&w| w.to_owned()).collect();
        let turn = self.turn.clone();
        let run = tokio::task::spawn_blocking(move || {
            // The slot is held until the run ends, even when the caller stopped waiting.
            let _permit = permit;
            match &session {
                SessionRef::Isolated(pool) => pool.run(&inputs, &wanted, &run_handle).map_err(InferError::from),
                SessionRef::Direct(session) => run_on(session, turn.as_deref(), &inputs, &wanted, Some(options)),
                SessionRef::Batched(batcher) => {
                    run_on(batcher.session(), turn.as_deref(), &inputs, &wanted, Some(options))
                }
            }
        });
        let joined = match deadline {
            Some(at) => match tokio::time::timeout_at(at.into(), run).await {
                Ok(joined) => joined,
                Err(_) => {
                    if let Err(error) = terminator.terminate() {
                        tracing::warn!(model = %self.name, %error, "could not stop a run past its deadline");
                    }
                    handle.abandon();
                    return Err(self.late());
                }
            },
            None => run.await,
        };
        phases.infer = running.elapsed();
        phases.executions = 1;
        joined.map_err(|e| InferError::Failed(format!("the run's thread ended: {e}")))?
    }
}

/// Where a direct run runs, kept alive by the blocking thread.
pub(super) enum SessionRef {
    Direct(Arc<Session>),
    Batched(Arc<Batcher>),
    Isolated(Arc<WorkerPool>),
}

/// One run of `inputs` on `session` in this process, answering the outputs `wanted` (all when
/// empty), with `options` (the request's terminate flag). After inputs over
/// [`SHRINK_AFTER_BYTES`](crate::isolation::pool::SHRINK_AFTER_BYTES) the CPU arena gives its
/// unused memory back (ORT's `memory.enable_memory_arena_shrinkage`). With `turn` (a plugin's
/// device) held over the run.
pub(super) fn run_on(
    session: &Session,
    turn: Option<&Mutex<()>>,
    inputs: &[(String, Value<'static>)],
    wanted: &[String],
    options: Option<onnxrt::RunOptions>,
) -> Result<Vec<(String, Value<'static>)>, InferError> {
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let bytes: u64 =
        inputs.iter().filter_map(|(_, v)| v.tensor_info().ok()).map(|i| (i.len() * i.element_type.size()) as u64).sum();
    let mut options = match options {
        Some(options) => options,
        None => onnxrt::RunOptions::new()?,
    };
    if bytes > crate::isolation::pool::SHRINK_AFTER_BYTES {
        options.config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")?;
    }
    let pairs = inputs.iter().map(|(name, value)| (name.as_str(), value));
    let _turn = turn.map(|turn| turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    Ok(session.run_with(pairs, &wanted, Some(&options))?.into_named())
}

/// A batch run on the batcher's own session with `turn` held (a plugin's device), for
/// [`run_batches_with`](crate::batch::BatcherBuilder::run_batches_with).
pub(super) fn run_batch_taking(
    batcher: &std::sync::OnceLock<std::sync::Weak<Batcher>>,
    turn: &Mutex<()>,
    inputs: &[(&str, &Value<'_>)],
) -> crate::Result<Vec<Value<'static>>> {
    let Some(batcher) = batcher.get().and_then(std::sync::Weak::upgrade) else {
        return Err(crate::Error::BatchRun { why: "the model is not loaded".into(), refused: false });
    };
    let _turn = turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let outputs = batcher.session().run(inputs.iter().copied());
    outputs.map(onnxrt::Outputs::into_values).map_err(|e| crate::Error::BatchRun { why: e.to_string(), refused: false })
}

/// Whether the loaded runtime is one known to crash on valid shapes (isolation's default).
pub(super) fn runtime_crashes() -> bool {
    onnxrt::runtime_info().is_ok_and(|info| crate::isolation::crashes_on_valid_shapes(&info.version))
}

pub(super) struct Decrement<'c>(&'c AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// One batch gathered by the batcher, run in one of `pool`'s worker processes
/// (`BatcherBuilder::run_batches_with`): every output, in model order.
pub(super) fn run_batch_in(
    pool: &Arc<WorkerPool>,
    inputs: &[(&str, &Value<'_>)],
) -> crate::Result<Vec<Value<'static>>> {
    match pool.run_borrowed(inputs, &[], &RunHandle::default()) {
        Ok(outputs) => Ok(outputs.into_iter().map(|(_, value)| value).collect()),
        Err(IsolatedError::Refused(why)) => Err(crate::Error::BatchRun { why, refused: true }),
        Err(IsolatedError::Failed(why) | IsolatedError::Crashed(why)) => {
            Err(crate::Error::BatchRun { why, refused: false })
        }
        Err(IsolatedError::Abandoned) => {
            Err(crate::Error::BatchRun { why: "the batch's run was stopped".into(), refused: false })
        }
    }
}
