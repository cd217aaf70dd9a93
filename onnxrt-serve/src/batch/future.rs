//! [`BatchFuture`]: one request in the batcher, as a future that needs no particular executor.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use crate::batch::queue::{Offer, Queue};
use crate::batch::request::{Request, Slot};
use crate::batch::stats::Outcome;
use crate::error::{Error, Result};
use onnxrt::Outputs;

pub(crate) enum Phase {
    // `WhenFull::Wait` and the queue was full: offered again when polled.
    WaitingForRoom(Option<Request>, Arc<Slot>),
    Queued(Arc<Slot>),
    Finished,
}

/// One request in the batcher: resolves to its [`Outputs`]. See [`Batcher::run_async`](crate::batch::Batcher::run_async).
///
/// Dropping it cancels the request: it is not run if its batch has not formed, and its row is
/// dropped if it has; other requests are not affected.
pub struct BatchFuture {
    queue: Arc<Queue>,
    phase: Phase,
}

impl BatchFuture {
    pub(crate) fn new(queue: Arc<Queue>, phase: Phase) -> BatchFuture {
        BatchFuture { queue, phase }
    }
}

impl std::fmt::Debug for BatchFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let phase = match self.phase {
            Phase::WaitingForRoom(..) => "waiting for room in the queue",
            Phase::Queued(_) => "queued",
            Phase::Finished => "finished",
        };
        f.debug_struct("BatchFuture").field("phase", &phase).finish()
    }
}

impl Future for BatchFuture {
    type Output = Result<Outputs>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Phase::WaitingForRoom(request, slot) = &mut this.phase {
            let Some(mut pending) = request.take() else {
                // Only if an earlier poll unwound between taking the request and putting it back.
                this.phase = Phase::Finished;
                return Poll::Ready(Err(Error::BatcherShutDown));
            };
            let now = Instant::now();
            if pending.expired(now) {
                let error = pending.deadline_error(now);
                pending.reply.send(Err(error.clone()));
                this.phase = Phase::Finished;
                return Poll::Ready(Err(error));
            }
            let queue = &this.queue;
            let mut room = queue.room.lock().unwrap_or_else(|e| e.into_inner());
            // Registered before the second offer, so a place freed in between wakes this task.
            room.push(cx.waker().clone());
            queue.room_waiting.fetch_add(1, Ordering::SeqCst);
            pending = match queue.offer(pending) {
                Offer::Queued => {
                    drop(room);
                    let slot = Arc::clone(slot);
                    this.phase = Phase::Queued(slot);
                    return self.poll(cx);
                }
                Offer::Closed(closed) => {
                    drop(room);
                    // Dropping the reply answers BatcherShutDown (counted).
                    drop(closed);
                    this.phase = Phase::Finished;
                    return Poll::Ready(Err(Error::BatcherShutDown));
                }
                Offer::Full(pending) => pending,
            };
            drop(room);
            *request = Some(pending);
            return Poll::Pending;
        }
        match &this.phase {
            Phase::Queued(slot) => match slot.poll(cx.waker()) {
                Poll::Ready(answer) => {
                    this.phase = Phase::Finished;
                    Poll::Ready(answer)
                }
                Poll::Pending => Poll::Pending,
            },
            _ => Poll::Ready(Err(onnxrt::Error::InvalidArgument {
                what: "BatchFuture".into(),
                why: "polled again after it completed".into(),
            }
            .into())),
        }
    }
}

impl Drop for BatchFuture {
    fn drop(&mut self) {
        match std::mem::replace(&mut self.phase, Phase::Finished) {
            Phase::WaitingForRoom(Some(request), _) => request.reply.cancel(),
            Phase::WaitingForRoom(None, _) | Phase::Finished => {}
            // An answer that already arrived was counted as what it was.
            Phase::Queued(slot) => drop(slot.abandon(Outcome::Cancelled)),
        }
    }
}
