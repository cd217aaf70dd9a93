//! The bounded queue between callers and the workers, and the callers waiting for room in it.
//!
//! Requests travel on a `std::sync::mpsc::sync_channel` (its capacity is the queue's), which
//! needs no lock shared by all senders. Callers that wait for room (`WhenFull::Wait`) park on a
//! condvar (blocking) or leave a waker (futures); a worker takes that lock only when someone
//! waits.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::task::Waker;
use std::time::Instant;

use crate::batch::request::Request;
use crate::batch::stats::Counters;
use crate::batch::Shutdown;
use crate::error::{Error, Result};

/// A message to the workers.
pub(crate) enum Msg {
    Request(Request),
    // A shutdown began (its mode is in `Queue::stop`).
    Stop,
    // A run ended: a worker holding its batch open until then (`hold_while_busy`) may close it.
    // Harmless when nobody holds one: a worker that takes it looks again and goes on.
    Wake,
}

const STOP_NONE: u8 = 0;
const STOP_DRAIN: u8 = 1;
const STOP_CANCEL: u8 = 2;

/// The bounded queue between callers and workers, and who waits for room in it.
pub(crate) struct Queue {
    sender: SyncSender<Msg>,
    pub(crate) capacity: usize,
    pub(crate) counters: Arc<Counters>,
    closed: AtomicBool,
    stop: AtomicU8,
    // Futures waiting for room (`WhenFull::Wait`); blocking callers wait on `room_freed`.
    pub(crate) room: Mutex<Vec<Waker>>,
    room_freed: Condvar,
    // Callers waiting for room, so that a worker takes the `room` lock only when someone waits.
    pub(crate) room_waiting: AtomicUsize,
    // Workers between closing a batch and the end of its model run.
    running: AtomicUsize,
    // The gathering worker holds its batch open until no other runs (`hold_while_busy`).
    holding: AtomicBool,
    // With `hold_while_busy`, held by a worker during its model run: one batch on the device at
    // a time, so a batch that filled up while another ran waits for it, gathered and copied.
    pub(crate) device: Mutex<()>,
}

/// What offering a request to the queue did.
pub(crate) enum Offer {
    Queued,
    Full(Request),
    Closed(Request),
}

impl Queue {
    pub(crate) fn new(sender: SyncSender<Msg>, capacity: usize, counters: Arc<Counters>) -> Queue {
        Queue {
            sender,
            capacity,
            counters,
            closed: AtomicBool::new(false),
            stop: AtomicU8::new(STOP_NONE),
            room: Mutex::new(Vec::new()),
            room_freed: Condvar::new(),
            room_waiting: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            holding: AtomicBool::new(false),
            device: Mutex::new(()),
        }
    }

    /// Stops taking requests and tells the workers how to end (the first call decides).
    pub(crate) fn close(&self, mode: Shutdown) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let code = if mode == Shutdown::Cancel { STOP_CANCEL } else { STOP_DRAIN };
            self.stop.store(code, Ordering::SeqCst);
            // Wakes the worker blocked on the queue, if any; the others read the mode before
            // they wait. Fails only when every worker is gone already.
            let _ = self.sender.send(Msg::Stop);
            self.wake_room();
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn stop_mode(&self) -> Option<Shutdown> {
        match self.stop.load(Ordering::SeqCst) {
            STOP_DRAIN => Some(Shutdown::Drain),
            STOP_CANCEL => Some(Shutdown::Cancel),
            _ => None,
        }
    }

    pub(crate) fn offer(&self, request: Request) -> Offer {
        if self.closed.load(Ordering::SeqCst) {
            return Offer::Closed(request);
        }
        // Counted before the send, so a worker never takes the depth below zero.
        self.counters.queue_depth.fetch_add(1, Ordering::Relaxed);
        match self.sender.try_send(Msg::Request(request)) {
            Ok(()) => Offer::Queued,
            Err(refused) => {
                self.counters.queue_depth.fetch_sub(1, Ordering::Relaxed);
                match refused {
                    TrySendError::Full(Msg::Request(request)) => Offer::Full(request),
                    TrySendError::Disconnected(Msg::Request(request)) => Offer::Closed(request),
                    // The message sent above is a request: a stop never comes back from here.
                    TrySendError::Full(Msg::Stop | Msg::Wake) | TrySendError::Disconnected(Msg::Stop | Msg::Wake) => {
                        unreachable!("only requests are offered")
                    }
                }
            }
        }
    }

    /// `WhenFull::Reject`: queued, or refused (counted, not submitted).
    pub(crate) fn enqueue_or_refuse(&self, request: Request) -> Result<()> {
        match self.offer(request) {
            Offer::Queued => {
                self.counters.submitted.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Offer::Full(request) => {
                request.reply.discard();
                self.counters.queue_full.fetch_add(1, Ordering::Relaxed);
                Err(Error::QueueFull { capacity: self.capacity })
            }
            Offer::Closed(request) => {
                request.reply.discard();
                self.counters.closed.fetch_add(1, Ordering::Relaxed);
                Err(Error::BatcherShutDown)
            }
        }
    }

    /// `WhenFull::Wait` for a blocking caller (already counted as submitted): queued, or
    /// answered through its reply (deadline, shutdown) and that answer returned.
    pub(crate) fn enqueue_waiting(&self, mut request: Request, deadline: Option<Instant>) -> Result<()> {
        let mut room = self.room.lock().unwrap_or_else(|e| e.into_inner());
        self.room_waiting.fetch_add(1, Ordering::SeqCst);
        let result = loop {
            request = match self.offer(request) {
                Offer::Queued => break Ok(()),
                // Dropping the reply answers BatcherShutDown (counted as shut_down).
                Offer::Closed(_) => break Err(Error::BatcherShutDown),
                Offer::Full(request) => request,
            };
            let now = Instant::now();
            if request.expired(now) {
                let error = request.deadline_error(now);
                request.reply.send(Err(error.clone()));
                break Err(error);
            }
            room = match deadline {
                None => self.room_freed.wait(room).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    self.room_freed
                        .wait_timeout(room, d.saturating_duration_since(now))
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        };
        self.room_waiting.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// A worker took a request: one place more for whoever waits.
    pub(crate) fn taken(&self) {
        self.counters.queue_depth.fetch_sub(1, Ordering::Relaxed);
        if self.room_waiting.load(Ordering::SeqCst) > 0 {
            self.wake_room();
        }
    }

    /// With `hold` (`hold_while_busy`), the device to itself until the guard is dropped: one
    /// batch on the device at a time (the lock guards no data: a worker that panicked in a run
    /// leaves nothing half-done to it). The wait is recorded in `device_wait`.
    pub(crate) fn device_turn(&self, hold: bool) -> Option<std::sync::MutexGuard<'_, ()>> {
        self.device_turn_after(hold, std::time::Duration::ZERO)
    }

    /// [`device_turn`](Self::device_turn) for a batch that has already waited `before` for
    /// another worker (a CUDA graph's run waits for the other worker at the graph's lock first);
    /// one `device_wait` observation for both.
    pub(crate) fn device_turn_after(
        &self,
        hold: bool,
        before: std::time::Duration,
    ) -> Option<std::sync::MutexGuard<'_, ()>> {
        let waited = std::time::Instant::now();
        let turn = hold.then(|| self.device.lock().unwrap_or_else(|e| e.into_inner()));
        self.counters.device_wait.observe(before + waited.elapsed());
        turn
    }

    /// A worker closed its batch: it counts as running until the guard is dropped (after its
    /// model run), and then wakes a worker that holds its batch open for that.
    pub(crate) fn run_started(self: &Arc<Self>) -> Running {
        self.running.fetch_add(1, Ordering::SeqCst);
        Running { queue: Arc::clone(self) }
    }

    /// Whether another worker's batch is between closing and the end of its run; from here on
    /// until [`stop_holding`](Self::stop_holding), the run that ends last sends a [`Msg::Wake`].
    /// (Both sides write, then read, sequentially consistent: either this sees the count at
    /// zero, or that run sees `holding` set.)
    pub(crate) fn hold_for_running(&self) -> bool {
        self.holding.store(true, Ordering::SeqCst);
        self.running.load(Ordering::SeqCst) > 0
    }

    pub(crate) fn stop_holding(&self) {
        self.holding.store(false, Ordering::SeqCst);
    }

    fn wake_room(&self) {
        let mut room = self.room.lock().unwrap_or_else(|e| e.into_inner());
        let wakers = std::mem::take(&mut *room);
        self.room_waiting.fetch_sub(wakers.len(), Ordering::SeqCst);
        drop(room);
        self.room_freed.notify_all();
        for waker in wakers {
            waker.wake();
        }
    }
}

/// A batch between closing and the end of its model run ([`Queue::run_started`]).
pub(crate) struct Running {
    queue: Arc<Queue>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let queue = &self.queue;
        if queue.running.fetch_sub(1, Ordering::SeqCst) == 1 && queue.holding.load(Ordering::SeqCst) {
            // A full queue needs no wake: the holding worker takes requests and looks again.
            let _ = queue.sender.try_send(Msg::Wake);
        }
    }
}
