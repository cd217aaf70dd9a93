//! Backpressure for [`Session::run_async`](crate::Session::run_async): at most `limit` runs of a
//! session are handed to ORT at once; later ones wait in a first-come queue and start when a run
//! ends, instead of overflowing ORT's per-worker queue (past which ORT runs the model inline on
//! the caller's thread).
//!
//! A slot passes straight from the run that ends to the oldest waiter, so one ending run wakes
//! one future, not all of them.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::Waker;

/// The slots of one session.
#[derive(Debug)]
pub(crate) struct Gate {
    limit: usize,
    slots: Mutex<Slots>,
}

#[derive(Debug, Default)]
struct Slots {
    // Runs holding a slot (started, or granted and about to start).
    taken: usize,
    // Waiters in arrival order; cancelled ones are skipped when reached.
    queue: VecDeque<Arc<Ticket>>,
}

/// A place in the queue.
#[derive(Debug, Default)]
pub(crate) struct Ticket {
    state: Mutex<TicketState>,
}

#[derive(Debug, Default)]
enum TicketState {
    #[default]
    Waiting,
    // Woken with this waker when granted.
    Parked(Waker),
    Granted,
    Cancelled,
}

impl Gate {
    pub(crate) fn new(limit: usize) -> Gate {
        Gate { limit: limit.max(1), slots: Mutex::default() }
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Slots taken: runs with ORT, or granted and about to start.
    pub(crate) fn taken(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).taken
    }

    /// A slot now (`None`), or a ticket to wait on.
    pub(crate) fn enter(&self) -> Option<Arc<Ticket>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if slots.taken < self.limit && slots.queue.is_empty() {
            slots.taken += 1;
            None
        } else {
            let ticket = Arc::new(Ticket::default());
            slots.queue.push_back(Arc::clone(&ticket));
            Some(ticket)
        }
    }

    /// Gives a slot back: to the oldest live waiter, else to the pool.
    pub(crate) fn leave(&self) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let waker = loop {
            let Some(ticket) = slots.queue.pop_front() else {
                slots.taken = slots.taken.saturating_sub(1);
                break None;
            };
            let mut state = ticket.state.lock().unwrap_or_else(|e| e.into_inner());
            match std::mem::replace(&mut *state, TicketState::Granted) {
                TicketState::Waiting => break None,
                TicketState::Parked(waker) => break Some(waker),
                // Cancelled (or, impossibly, granted twice): not a live waiter.
                other => *state = other,
            }
        };
        drop(slots);
        // The waker is user code (an executor's, or one made with `std::task::Wake`): the slot is
        // already handed over above, and a panic in it is caught here, so it neither skips the
        // caller's bookkeeping after `leave` (the completion callback's `finish`, without which the
        // session is never released) nor unwinds into ORT's thread.
        if let Some(waker) = waker {
            let _ = crate::ffi_guard::catch(move || waker.wake());
        }
    }

    /// Gives up a ticket (its future was dropped); a slot it was granted goes to the next waiter.
    pub(crate) fn cancel(&self, ticket: &Ticket) {
        let mut state = ticket.state.lock().unwrap_or_else(|e| e.into_inner());
        let granted = matches!(*state, TicketState::Granted);
        *state = TicketState::Cancelled;
        drop(state);
        if granted {
            self.leave();
        }
    }
}

impl Ticket {
    /// Whether the slot is ours; if not, `waker` is woken when it is.
    pub(crate) fn granted(&self, waker: &Waker) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match &*state {
            TicketState::Granted => true,
            TicketState::Parked(old) if old.will_wake(waker) => false,
            _ => {
                *state = TicketState::Parked(waker.clone());
                false
            }
        }
    }

    /// Marks a granted slot as used by a started run (its future no longer owns it).
    pub(crate) fn consume(&self) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = TicketState::Cancelled;
    }
}
