//! `--repeat N --concurrency C`: N timed runs shared by C threads calling the same session at
//! once (ORT's `Run` is thread-safe), and their latency percentiles and throughput.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use onnxrt::{Session, Value};

use crate::error::Result;

/// What the timed runs measured.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    /// Each run's time, sorted.
    pub sorted: Vec<Duration>,
    /// Wall time of all runs together.
    pub wall: Duration,
    /// Threads that ran them.
    pub threads: usize,
}

impl Latency {
    /// The `p`th percentile (nearest rank), `None` without runs.
    pub fn percentile(&self, p: f64) -> Option<Duration> {
        percentile(&self.sorted, p)
    }

    /// Runs per second over the wall time.
    pub fn throughput(&self) -> f64 {
        self.sorted.len() as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The `p`th percentile of sorted `times` by nearest rank: the smallest value with at least p% of
/// the values at or below it.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Runs `session` `runs` times on `threads` threads.
///
/// # Errors
/// The first run error of any thread.
pub fn measure(session: &Session, inputs: &[(&str, &Value<'_>)], runs: usize, threads: usize) -> Result<Latency> {
    let next = AtomicUsize::new(0);
    let times = Mutex::new(Vec::with_capacity(runs));
    let started = Instant::now();
    let threads = threads.clamp(1, runs.max(1));
    std::thread::scope(|scope| -> Result<()> {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| -> Result<()> {
                    while next.fetch_add(1, Ordering::Relaxed) < runs {
                        let run_started = Instant::now();
                        drop(session.run(inputs)?);
                        let took = run_started.elapsed();
                        times.lock().unwrap_or_else(|p| p.into_inner()).push(took);
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            match worker.join() {
                Ok(result) => result?,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(())
    })?;
    let wall = started.elapsed();
    let mut sorted = times.into_inner().unwrap_or_else(|p| p.into_inner());
    sorted.sort();
    Ok(Latency { sorted, wall, threads })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let ms = Duration::from_millis;
        let sorted: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(percentile(&sorted, 50.0), Some(ms(50)));
        assert_eq!(percentile(&sorted, 99.0), Some(ms(99)));
        assert_eq!(percentile(&[ms(3)], 90.0), Some(ms(3)));
        assert_eq!(percentile(&[ms(1), ms(2), ms(3)], 50.0), Some(ms(2)));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
