//! The batcher's counters: plain atomics updated where things happen (no lock), read as a
//! [`BatcherStats`] snapshot, e.g. for a Prometheus `/metrics` page.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::error::Error;

/// Upper bounds of the time histograms' buckets, in microseconds (the last bucket is +Inf). Fine
/// between 10 and 100 ms, where a GPU batch's run and a request's wait for it lie, so that a p99
/// read off the buckets tells one run from two or three.
const TIME_BOUNDS_US: [u64; 22] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 15_000, 20_000, 25_000, 30_000, 40_000, 50_000, 60_000, 75_000,
    100_000, 250_000, 500_000, 1_000_000, 2_500_000, 10_000_000,
];

/// A snapshot of a [`Batcher`](crate::batch::Batcher)'s counters.
///
/// Every accepted request ends in exactly one of `completed` or the `deadline`, `cancelled`,
/// `shut_down`, `run_failed` errors, so once the batcher is idle (or shut down)
/// `submitted == completed + errors.deadline + errors.cancelled + errors.shut_down + errors.run_failed`.
/// Refused requests (`errors.invalid`, `errors.queue_full`, `errors.closed`) are not `submitted`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatcherStats {
    /// Requests accepted (validated and queued, or waiting for room with `WhenFull::Wait`).
    pub submitted: u64,
    /// Requests answered with their outputs.
    pub completed: u64,
    /// Errors by kind.
    pub errors: ErrorCounts,
    /// Requests in the queue now, not yet taken into a batch.
    pub queue_depth: usize,
    /// Batched runs started.
    pub batches: u64,
    /// Of those, the runs that replayed a CUDA graph (`BatcherBuilder::cuda_graphs`, with the `cuda` feature).
    pub graph_runs: u64,
    /// `batch_sizes[n]`: how many runs had `n` requests (length `max_batch + 1`).
    pub batch_sizes: Vec<u64>,
    /// `batch_run_time[n]`: the time runs of `n` requests took together (Triton's `batch_stats`).
    pub batch_run_time: Vec<Duration>,
    /// From a request's submission until its batch starts running.
    pub queue_time: HistogramSnapshot,
    /// One batched run: gathering the inputs, the run itself, handing the rows back.
    pub run_time: HistogramSnapshot,
    /// The gathering part of `run_time`: copying the requests' samples into the batch buffers
    /// (with `BatcherBuilder::device_inputs`, and on to the device).
    pub gather_time: HistogramSnapshot,
    /// The model part of `run_time`: binding, ORT's run (with any copies to and from a device)
    /// and reading the outputs back, per batch.
    pub model_time: HistogramSnapshot,
    /// The part of `model_time` a batch waited for another worker's run to leave the device
    /// (`BatcherBuilder::hold_while_busy`), or, on a CUDA graph, for the other worker to finish
    /// with that size's graph; zero without either. Long waits mean batches fill up before the
    /// device is free, so requests wait more than one run.
    pub device_wait: HistogramSnapshot,
}

/// Requests that ended in an error, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorCounts {
    /// Refused before queueing: wrong name, element type, shape ([`Error::UnknownInput`](onnxrt::Error::UnknownInput),
    /// [`Error::ShapeMismatch`](onnxrt::Error::ShapeMismatch)...). Not counted in `submitted`.
    pub invalid: u64,
    /// Refused because the queue was full ([`Error::QueueFull`]). Not counted in `submitted`.
    pub queue_full: u64,
    /// Refused because the batcher was shut down ([`Error::BatcherShutDown`] at submission). Not
    /// counted in `submitted`.
    pub closed: u64,
    /// Accepted, then past their deadline ([`Error::DeadlineExpired`]).
    pub deadline: u64,
    /// Accepted, then given up by the caller (a dropped future).
    pub cancelled: u64,
    /// Accepted, then answered [`Error::BatcherShutDown`] by a shutdown.
    pub shut_down: u64,
    /// Accepted, then their batch's run failed (the run's error).
    pub run_failed: u64,
}

/// A histogram of durations, Prometheus-style buckets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// Upper bounds of the buckets (Prometheus `le`), ascending; one more bucket follows (+Inf).
    pub bounds: Vec<Duration>,
    /// Observations per bucket, not cumulative; `bounds.len() + 1` entries.
    pub counts: Vec<u64>,
    /// Sum of all observations.
    pub sum: Duration,
    /// Number of observations.
    pub count: u64,
}

impl HistogramSnapshot {
    /// The smallest bucket bound at or below which at least `q` (0..=1) of the observations fall
    /// (`None` if there are none, or they lie in the +Inf bucket). An upper estimate.
    pub fn quantile_bound(&self, q: f64) -> Option<Duration> {
        let wanted = (q.clamp(0.0, 1.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bound, count) in self.bounds.iter().zip(&self.counts) {
            seen += count;
            if seen >= wanted {
                return Some(*bound);
            }
        }
        None
    }
}

#[derive(Debug)]
pub(crate) struct TimeHistogram {
    counts: [AtomicU64; TIME_BOUNDS_US.len() + 1],
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl TimeHistogram {
    fn new() -> TimeHistogram {
        TimeHistogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub(crate) fn observe(&self, time: Duration) {
        let us = u64::try_from(time.as_micros()).unwrap_or(u64::MAX);
        let bucket = TIME_BOUNDS_US.iter().position(|&bound| us <= bound).unwrap_or(TIME_BOUNDS_US.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            bounds: TIME_BOUNDS_US.iter().map(|&us| Duration::from_micros(us)).collect(),
            counts: self.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
            sum: Duration::from_nanos(self.sum_ns.load(Ordering::Relaxed)),
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

/// How an accepted request ended, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Completed,
    Deadline,
    Cancelled,
    ShutDown,
    RunFailed,
}

impl Outcome {
    pub(crate) fn of(result: &Result<onnxrt::Outputs, Error>) -> Outcome {
        match result {
            Ok(_) => Outcome::Completed,
            Err(Error::DeadlineExpired { .. }) => Outcome::Deadline,
            Err(Error::BatcherShutDown) => Outcome::ShutDown,
            Err(_) => Outcome::RunFailed,
        }
    }
}

/// The live counters.
#[derive(Debug)]
pub(crate) struct Counters {
    pub(crate) submitted: AtomicU64,
    completed: AtomicU64,
    pub(crate) invalid: AtomicU64,
    pub(crate) queue_full: AtomicU64,
    pub(crate) closed: AtomicU64,
    deadline: AtomicU64,
    cancelled: AtomicU64,
    shut_down: AtomicU64,
    run_failed: AtomicU64,
    pub(crate) queue_depth: AtomicUsize,
    batches: AtomicU64,
    pub(crate) graph_runs: AtomicU64,
    batch_sizes: Vec<AtomicU64>,
    batch_run_ns: Vec<AtomicU64>,
    pub(crate) queue_time: TimeHistogram,
    pub(crate) run_time: TimeHistogram,
    pub(crate) gather_time: TimeHistogram,
    pub(crate) model_time: TimeHistogram,
    pub(crate) device_wait: TimeHistogram,
}

impl Counters {
    pub(crate) fn new(max_batch: usize) -> Counters {
        Counters {
            submitted: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            invalid: AtomicU64::new(0),
            queue_full: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            deadline: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            shut_down: AtomicU64::new(0),
            run_failed: AtomicU64::new(0),
            queue_depth: AtomicUsize::new(0),
            batches: AtomicU64::new(0),
            graph_runs: AtomicU64::new(0),
            batch_sizes: (0..=max_batch).map(|_| AtomicU64::new(0)).collect(),
            batch_run_ns: (0..=max_batch).map(|_| AtomicU64::new(0)).collect(),
            queue_time: TimeHistogram::new(),
            run_time: TimeHistogram::new(),
            gather_time: TimeHistogram::new(),
            model_time: TimeHistogram::new(),
            device_wait: TimeHistogram::new(),
        }
    }

    pub(crate) fn count(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Completed => &self.completed,
            Outcome::Deadline => &self.deadline,
            Outcome::Cancelled => &self.cancelled,
            Outcome::ShutDown => &self.shut_down,
            Outcome::RunFailed => &self.run_failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn batch(&self, size: usize) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        if let Some(counter) = self.batch_sizes.get(size) {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A run of `size` requests took `took` (also in `run_time`).
    pub(crate) fn batch_ran(&self, size: usize, took: Duration) {
        self.run_time.observe(took);
        if let Some(counter) = self.batch_run_ns.get(size) {
            counter.fetch_add(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> BatcherStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BatcherStats {
            submitted: load(&self.submitted),
            completed: load(&self.completed),
            errors: ErrorCounts {
                invalid: load(&self.invalid),
                queue_full: load(&self.queue_full),
                closed: load(&self.closed),
                deadline: load(&self.deadline),
                cancelled: load(&self.cancelled),
                shut_down: load(&self.shut_down),
                run_failed: load(&self.run_failed),
            },
            queue_depth: self.queue_depth.load(Ordering::Relaxed),
            batches: load(&self.batches),
            graph_runs: load(&self.graph_runs),
            batch_sizes: self.batch_sizes.iter().map(load).collect(),
            batch_run_time: self.batch_run_ns.iter().map(|c| Duration::from_nanos(load(c))).collect(),
            queue_time: self.queue_time.snapshot(),
            run_time: self.run_time.snapshot(),
            gather_time: self.gather_time.snapshot(),
            model_time: self.model_time.snapshot(),
            device_wait: self.device_wait.snapshot(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_and_quantile_bound() {
        let h = TimeHistogram::new();
        h.observe(Duration::from_micros(40));
        h.observe(Duration::from_micros(100));
        h.observe(Duration::from_micros(101));
        h.observe(Duration::from_secs(60));
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.counts.len(), s.bounds.len() + 1);
        assert_eq!((s.counts[0], s.counts[1], s.counts[2], *s.counts.last().unwrap_or(&0)), (1, 1, 1, 1));
        assert_eq!(s.quantile_bound(0.5), Some(Duration::from_micros(100)));
        assert_eq!(s.quantile_bound(0.75), Some(Duration::from_micros(250)));
        assert_eq!(s.quantile_bound(1.0), None);
        assert_eq!(s.sum, Duration::from_micros(40 + 100 + 101) + Duration::from_secs(60));
    }
}
