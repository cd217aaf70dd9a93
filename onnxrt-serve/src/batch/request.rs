//! One request on its way through the batcher, and the one-shot slot its answer arrives in.
//!
//! Each request owns its slot (a mutex and condvar of its own, never shared with other requests):
//! the worker puts the result there and wakes the blocking caller or the future's waker. A
//! caller that gives up (a dropped future, a blocking call past its deadline) marks the slot
//! abandoned; the worker then skips the request, or drops its row. A request dropped without an
//! answer (a shutdown, a worker that ended) answers [`Error::BatcherShutDown`] from its `Drop`,
//! so no caller ever waits forever.

use std::sync::{Arc, Condvar, Mutex};
use std::task::{Poll, Waker};
use std::time::Instant;

use onnxrt::{HeldValue, Outputs};

use crate::batch::stats::{Counters, Outcome};
use crate::batch::Shape;
use crate::error::{Error, Result};

/// A checked request: one sample per model input, in model order.
pub(crate) struct Request {
    pub(crate) values: Vec<HeldValue>,
    /// The samples' shapes, one after the other (rank, then dims, per input): requests batch
    /// together only when these are equal (always, for models with fixed sample shapes).
    pub(crate) key: Shape,
    pub(crate) enqueued: Instant,
    pub(crate) deadline: Option<Instant>,
    pub(crate) reply: Reply,
}

impl Request {
    /// The sample shape of input `index`, read back from the key.
    pub(crate) fn sample_shape(&self, index: usize) -> &[i64] {
        let mut at = 0;
        for _ in 0..index {
            at += 1 + self.key[at] as usize;
        }
        let rank = self.key[at] as usize;
        &self.key[at + 1..at + 1 + rank]
    }

    /// Whether it is past its deadline at `now`.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        self.deadline.is_some_and(|d| now >= d)
    }

    /// The error for a request past its deadline.
    pub(crate) fn deadline_error(&self, now: Instant) -> Error {
        Error::DeadlineExpired { waited: now.saturating_duration_since(self.enqueued) }
    }
}

/// Where one request's answer is delivered.
#[derive(Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

#[derive(Default)]
struct SlotState {
    result: Option<Result<Outputs>>,
    waker: Option<Waker>,
    // Set when the caller gave up; the answer is then counted as this and dropped.
    abandoned: Option<Outcome>,
}

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for the answer until `deadline` (`None`: no limit); `None` when the deadline passed.
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<Result<Outputs>> {
        let mut state = self.lock();
        loop {
            if let Some(result) = state.result.take() {
                return Some(result);
            }
            state = match deadline {
                None => self.ready.wait(state).unwrap_or_else(|e| e.into_inner()),
                Some(deadline) => {
                    let left = deadline.checked_duration_since(Instant::now())?;
                    self.ready.wait_timeout(state, left).unwrap_or_else(|e| e.into_inner()).0
                }
            };
        }
    }

    /// The answer if it is there; otherwise `waker` is woken when it arrives.
    pub(crate) fn poll(&self, waker: &Waker) -> Poll<Result<Outputs>> {
        let mut state = self.lock();
        match state.result.take() {
            Some(result) => Poll::Ready(result),
            None => {
                if !state.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
                    state.waker = Some(waker.clone());
                }
                Poll::Pending
            }
        }
    }

    /// The caller gives up (`why`: cancelled or deadline). Returns the answer if it already
    /// arrived (it was counted then), so the caller can still use it.
    pub(crate) fn abandon(&self, why: Outcome) -> Option<Result<Outputs>> {
        let mut state = self.lock();
        let arrived = state.result.take();
        if arrived.is_none() {
            state.abandoned = Some(why);
            state.waker = None;
        }
        arrived
    }

    fn is_abandoned(&self) -> bool {
        self.lock().abandoned.is_some()
    }
}

/// The worker's end of a slot: answers exactly once, counting the outcome.
pub(crate) struct Reply {
    slot: Arc<Slot>,
    counters: Arc<Counters>,
    answered: bool,
}

impl Reply {
    pub(crate) fn new(counters: Arc<Counters>) -> (Reply, Arc<Slot>) {
        let slot = Arc::new(Slot::default());
        (Reply { slot: Arc::clone(&slot), counters, answered: false }, slot)
    }

    /// Whether the caller gave up on it.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.slot.is_abandoned()
    }

    /// Answers (or, if the caller gave up, counts why and drops the result).
    pub(crate) fn send(mut self, result: Result<Outputs>) {
        self.answered = true;
        self.deliver(result);
    }

    /// For a request that was refused (never accepted): no answer, nothing counted.
    pub(crate) fn discard(mut self) {
        self.answered = true;
    }

    /// For a request whose caller dropped it before it was queued.
    pub(crate) fn cancel(mut self) {
        self.answered = true;
        self.counters.count(Outcome::Cancelled);
    }

    fn deliver(&self, result: Result<Outputs>) {
        let mut state = self.slot.lock();
        if let Some(why) = state.abandoned {
            self.counters.count(why);
            return;
        }
        self.counters.count(Outcome::of(&result));
        state.result = Some(result);
        let waker = state.waker.take();
        drop(state);
        self.slot.ready.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.answered {
            self.deliver(Err(Error::BatcherShutDown));
        }
    }
}
