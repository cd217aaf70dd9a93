//! Per-model counters: the `/metrics` families and Triton's statistics extension
//! (`/v2/models/NAME/stats`, gRPC `ModelStatistics`).
//!
//! Where a request's time goes: `compute_input` is the input and output checks, `queue` the
//! wait for a run slot (or, batched, for a batch: the batcher's queue time), `compute_infer` the
//! run, `compute_output` picking the outputs asked for. Decoding and encoding the protocol's
//! tensors happen in the adapters, outside. Phase times count for answered requests only.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::batch::BatcherStats;

/// Per-model counters.
#[derive(Debug, Default)]
pub struct ModelStats {
    /// Requests answered with outputs.
    pub success: AtomicU64,
    /// Requests refused or failed.
    pub failure: AtomicU64,
    /// Time spent in `infer` by answered requests, in microseconds.
    pub success_micros: AtomicU64,
    /// Requests in `infer` now.
    pub in_flight: AtomicU64,
    success_ns: AtomicU64,
    failure_ns: AtomicU64,
    input_ns: AtomicU64,
    queue_ns: AtomicU64,
    infer_ns: AtomicU64,
    output_ns: AtomicU64,
    /// Runs outside the batcher (the batcher counts its batches).
    executions: AtomicU64,
    /// When the last answered request ended, in milliseconds since the Unix epoch.
    last_ms: AtomicU64,
    /// What the batchers of earlier loads of this version counted: a reload of the same
    /// version keeps its statistics (Prometheus sees no counter reset).
    carried: Mutex<Carried>,
}

/// Batcher counts of earlier loads.
#[derive(Debug, Default)]
struct Carried {
    batches: u64,
    queue_ns: u64,
    /// By batch size: runs and their time.
    sizes: Vec<Timed>,
}

/// Where one request's time went.
#[derive(Debug, Default)]
pub struct Phases {
    pub(crate) input: Duration,
    pub(crate) queue: Duration,
    /// The run (batched: the whole wait for the batcher's answer, queue included).
    pub(crate) infer: Duration,
    pub(crate) output: Duration,
    /// Runs made outside the batcher.
    pub(crate) executions: u64,
}

/// A count and the time it took, in nanoseconds (Triton's `StatisticDuration`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timed {
    /// How many.
    pub count: u64,
    /// Their time together, in nanoseconds.
    pub ns: u64,
}

/// One model's statistics in Triton's terms (each request is one inference: `max_batch_size` 0).
#[derive(Debug, Clone, Default)]
pub struct Statistics {
    /// When the last answered request ended, in milliseconds since the Unix epoch (0: none yet).
    pub last_inference_ms: u64,
    /// Answered requests.
    pub inference_count: u64,
    /// Runs of the model: a batch counts once.
    pub execution_count: u64,
    /// Answered requests and their time in the model.
    pub success: Timed,
    /// Refused or failed requests and their time in the model.
    pub fail: Timed,
    /// Answered requests' wait for a run slot or a batch.
    pub queue: Timed,
    /// Answered requests' input and output checks.
    pub compute_input: Timed,
    /// Answered requests' runs.
    pub compute_infer: Timed,
    /// Answered requests' picking of the outputs asked for.
    pub compute_output: Timed,
    /// Runs by how many requests they served (Triton's `batch_stats`): the size, and how many
    /// runs of it there were and the time they took. Unbatched: every run serves one.
    pub batches: Vec<(u64, Timed)>,
}

/// One request's accounting, from the moment its model is found: a success only once
/// [`Tally::answered`] says its answer went out (outputs written into shared memory included);
/// dropped before that (a refusal of the request or of its outputs, a failed run, a client that
/// gave up) it counts as a failure, as Triton's `fail` counts every request that got no answer.
#[derive(Debug)]
pub struct Tally<'s> {
    stats: &'s ModelStats,
    started: Instant,
    /// Where its time went, filled by the run.
    pub phases: Phases,
    answered: bool,
}

impl<'s> Tally<'s> {
    /// A request for the model of `stats`, starting now.
    pub fn start(stats: &'s ModelStats) -> Tally<'s> {
        Tally { stats, started: Instant::now(), phases: Phases::default(), answered: false }
    }

    /// The request was answered with its outputs.
    pub fn answered(mut self) {
        self.answered = true;
        self.stats.count(true, self.started, &self.phases);
    }
}

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.stats.count(false, self.started, &self.phases);
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl ModelStats {
    /// Counts a request that ended (`ok`: answered) after `started`, its time split in `phases`.
    fn count(&self, ok: bool, started: Instant, phases: &Phases) {
        let took = started.elapsed();
        // A run whose answer was refused after it (an output that does not fit its place) ran.
        self.executions.fetch_add(phases.executions, Relaxed);
        if !ok {
            self.failure.fetch_add(1, Relaxed);
            self.failure_ns.fetch_add(nanos(took), Relaxed);
            return;
        }
        self.success.fetch_add(1, Relaxed);
        self.success_micros.fetch_add(took.as_micros() as u64, Relaxed);
        self.success_ns.fetch_add(nanos(took), Relaxed);
        self.input_ns.fetch_add(nanos(phases.input), Relaxed);
        self.queue_ns.fetch_add(nanos(phases.queue), Relaxed);
        self.infer_ns.fetch_add(nanos(phases.infer), Relaxed);
        self.output_ns.fetch_add(nanos(phases.output), Relaxed);
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        self.last_ms.fetch_max(now.as_millis() as u64, Relaxed);
    }

    /// Keeps what the batcher of the load being replaced counted (a reload of the same version).
    pub fn carry(&self, old: &BatcherStats) {
        let mut carried = self.carried.lock().unwrap_or_else(PoisonError::into_inner);
        carried.batches += old.batches;
        carried.queue_ns += nanos(old.queue_time.sum);
        for (size, (&count, &time)) in old.batch_sizes.iter().zip(&old.batch_run_time).enumerate() {
            if carried.sizes.len() <= size {
                carried.sizes.resize(size + 1, Timed::default());
            }
            carried.sizes[size].count += count;
            carried.sizes[size].ns += nanos(time);
        }
    }

    /// The statistics now; a batched model's batcher gives its batches and their queue time.
    pub fn snapshot(&self, batcher: Option<&BatcherStats>) -> Statistics {
        let success = self.success.load(Relaxed);
        let carried = self.carried.lock().unwrap_or_else(PoisonError::into_inner);
        let (batched_runs, batch_queue_ns) = batcher.map_or((0, 0), |b| (b.batches, nanos(b.queue_time.sum)));
        let (batched_runs, batch_queue_ns) = (batched_runs + carried.batches, batch_queue_ns + carried.queue_ns);
        let infer_ns = self.infer_ns.load(Relaxed);
        // A batched request's wait holds its time in the batcher's queue: moved to `queue`.
        let moved = batch_queue_ns.min(infer_ns);
        let timed = |ns: u64| Timed { count: success, ns };
        let executions = self.executions.load(Relaxed);
        let mut sizes = carried.sizes.clone();
        for (size, (&count, &time)) in
            batcher.iter().flat_map(|b| b.batch_sizes.iter().zip(&b.batch_run_time).enumerate())
        {
            if sizes.len() <= size {
                sizes.resize(size + 1, Timed::default());
            }
            sizes[size].count += count;
            sizes[size].ns += nanos(time);
        }
        let mut batches: Vec<(u64, Timed)> =
            sizes.into_iter().enumerate().filter(|(_, t)| t.count > 0).map(|(n, t)| (n as u64, t)).collect();
        if batches.is_empty() && executions > 0 {
            // Unbatched: each run serves one request.
            batches.push((1, Timed { count: executions, ns: infer_ns }));
        }
        Statistics {
            batches,
            last_inference_ms: self.last_ms.load(Relaxed),
            inference_count: success,
            execution_count: executions + batched_runs,
            success: Timed { count: success, ns: self.success_ns.load(Relaxed) },
            fail: Timed { count: self.failure.load(Relaxed), ns: self.failure_ns.load(Relaxed) },
            queue: timed(self.queue_ns.load(Relaxed) + moved),
            compute_input: timed(self.input_ns.load(Relaxed)),
            compute_infer: timed(infer_ns - moved),
            compute_output: timed(self.output_ns.load(Relaxed)),
        }
    }
}
