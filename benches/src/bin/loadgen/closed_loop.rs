//! The closed loop: N clients, each on its own keep-alive connection, send a request, wait for
//! the answer, send the next; for a duration or until a shared count is spent. The offered load
//! follows the server's pace, so this finds the maximum throughput, not the latency under a rate.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onnxrt_serve::http_client::Connection;

use crate::error::LoadgenError;
use crate::request::Request;
use crate::tally::{Outcome, Tally};

/// How long and how hard to drive.
pub struct Plan {
    pub clients: u32,
    pub warmup: Duration,
    /// Measure for this long, unless `requests` is given.
    pub duration: Duration,
    /// Stop after this many measured requests in all.
    pub requests: Option<u64>,
}

/// Runs the plan; returns the tally and the measured seconds.
pub async fn run(address: SocketAddr, request: Arc<Request>, plan: &Plan) -> Result<(Tally, f64), LoadgenError> {
    let measure_from = Instant::now() + plan.warmup;
    let measure_until = plan.requests.is_none().then(|| measure_from + plan.duration);
    let remaining = Arc::new(AtomicI64::new(plan.requests.map_or(i64::MAX, |n| n.min(i64::MAX as u64) as i64)));
    let mut clients = Vec::new();
    for _ in 0..plan.clients {
        let request = Arc::clone(&request);
        let remaining = Arc::clone(&remaining);
        clients.push(tokio::spawn(
            async move { client(address, &request, measure_from, measure_until, &remaining).await },
        ));
    }
    let mut tally = Tally::default();
    for handle in clients {
        tally.merge(handle.await.map_err(|e| LoadgenError::Runtime(format!("a client task failed: {e}")))?);
    }
    let seconds = match measure_until {
        Some(until) => until.saturating_duration_since(measure_from).as_secs_f64(),
        None => measure_from.elapsed().as_secs_f64(),
    };
    Ok((tally, seconds))
}

async fn client(
    address: SocketAddr,
    request: &Request,
    measure_from: Instant,
    measure_until: Option<Instant>,
    remaining: &AtomicI64,
) -> Tally {
    let mut tally = Tally::default();
    let mut connection: Option<Connection> = None;
    loop {
        let now = Instant::now();
        if measure_until.is_some_and(|until| now >= until) {
            return tally;
        }
        let counted = now >= measure_from;
        if counted && remaining.fetch_sub(1, Ordering::Relaxed) <= 0 {
            return tally;
        }
        let outcome = request.send(address, &mut connection, Instant::now()).await;
        let failed = matches!(outcome, Outcome::Failed { .. });
        if counted {
            tally.record(outcome);
        }
        if failed {
            // Do not spin on a server that refuses connections.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
