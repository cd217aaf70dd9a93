//! The open loop: requests leave on a fixed schedule (request i at start + i / rate) whether or
//! not earlier ones were answered, and each latency is measured from its scheduled time, so time
//! spent queued (in the server, or waiting here for a free connection) is counted. This is how
//! latency at a given offered rate is measured without coordinated omission.
//!
//! HTTP/1.1 carries one request at a time per connection: a request takes an idle connection (one
//! the server has not closed) or opens a new one, up to a cap; past the cap it waits for one, and
//! that wait is in its latency.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use onnxrt_serve::http_client::Connection;
use tokio::sync::{mpsc, Semaphore};

use crate::error::LoadgenError;
use crate::request::Request;
use crate::tally::{Outcome, Tally};

/// The schedule.
pub struct Plan {
    /// Requests per second.
    pub rate: f64,
    /// Requests sent first on the same schedule and not counted.
    pub warmup_requests: u64,
    /// Requests measured.
    pub requests: u64,
    /// The most connections open at once.
    pub max_connections: usize,
}

/// Runs the schedule; returns the tally and the seconds from the first measured request's
/// scheduled time to the last answer.
pub async fn run(address: SocketAddr, request: Arc<Request>, plan: &Plan) -> Result<(Tally, f64), LoadgenError> {
    let interval = Duration::from_secs_f64(1.0 / plan.rate);
    let idle: Arc<Mutex<Vec<Connection>>> = Arc::default();
    let permits = Arc::new(Semaphore::new(plan.max_connections));
    let (done, mut outcomes) = mpsc::unbounded_channel::<(bool, Outcome, Instant)>();
    let start = Instant::now() + Duration::from_millis(5);
    let total = plan.warmup_requests + plan.requests;
    let measure_from = start + interval.mul_f64(plan.warmup_requests as f64);
    for i in 0..total {
        let scheduled = start + interval.mul_f64(i as f64);
        tokio::time::sleep_until(scheduled.into()).await;
        let (request, idle, permits, done) =
            (Arc::clone(&request), Arc::clone(&idle), Arc::clone(&permits), done.clone());
        let counted = i >= plan.warmup_requests;
        tokio::spawn(async move {
            let outcome = match permits.acquire_owned().await {
                Ok(_permit) => {
                    let mut connection = idle_connection(&idle);
                    let outcome = request.send(address, &mut connection, scheduled).await;
                    if let Some(open) = connection {
                        lock(&idle).push(open);
                    }
                    outcome
                }
                Err(_) => Outcome::Failed { kind: "closed".into(), message: "the connection cap was closed".into() },
            };
            // The receiver lives until every sender is gone.
            let _ = done.send((counted, outcome, Instant::now()));
        });
    }
    drop(done);
    let mut tally = Tally::default();
    let mut last = measure_from;
    while let Some((counted, outcome, finished)) = outcomes.recv().await {
        if counted {
            last = last.max(finished);
            tally.record(outcome);
        }
    }
    if tally.latencies.len() as u64 + tally.error_count() != plan.requests {
        return Err(LoadgenError::Runtime("a request task ended without reporting".into()));
    }
    Ok((tally, last.saturating_duration_since(measure_from).as_secs_f64()))
}

/// The most recently used idle connection the server has not closed; closed ones (idle past the
/// server's keep-alive timeout while the rate was low) are dropped, as an HTTP client's pool does.
fn idle_connection(idle: &Mutex<Vec<Connection>>) -> Option<Connection> {
    let mut idle = lock(idle);
    while let Some(connection) = idle.pop() {
        if !connection.is_closed() {
            return Some(connection);
        }
    }
    None
}

/// The idle connections; a panic elsewhere cannot leave the list half-changed, so a poisoned
/// lock is used as it is.
fn lock(idle: &Mutex<Vec<Connection>>) -> std::sync::MutexGuard<'_, Vec<Connection>> {
    idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
