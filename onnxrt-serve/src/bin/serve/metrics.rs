//! The server's own counters (HTTP side), rendered in Prometheus text format next to the
//! backend's. Atomics only: the hot path takes no lock.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in seconds.
const LATENCY_BUCKETS: [f64; 12] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0];

/// Counters of the HTTP layer.
#[derive(Default)]
pub struct HttpMetrics {
    /// Inference requests answered, by class: 2xx, 4xx, 5xx.
    answered: [AtomicU64; 3],
    /// Inference requests being handled now.
    in_flight: AtomicU64,
    /// Latency histogram of inference requests (cumulative counts per bucket, then +Inf).
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    latency_sum_micros: AtomicU64,
}

/// Decrements the in-flight gauge when the request ends, however it ends.
pub struct InFlight<'m>(&'m HttpMetrics);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

impl HttpMetrics {
    /// Counts a request as started.
    pub fn start(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Relaxed);
        InFlight(self)
    }

    /// Counts an answered inference request.
    pub fn answered(&self, status: u16, took: Duration) {
        let class = match status {
            200..=299 => 0,
            400..=499 => 1,
            _ => 2,
        };
        self.answered[class].fetch_add(1, Relaxed);
        let seconds = took.as_secs_f64();
        let bucket = LATENCY_BUCKETS.iter().position(|&b| seconds <= b).unwrap_or(LATENCY_BUCKETS.len());
        self.latency_buckets[bucket].fetch_add(1, Relaxed);
        self.latency_sum_micros.fetch_add(took.as_micros() as u64, Relaxed);
    }

    /// Appends the counters in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP serve_http_requests_total Inference requests answered, by status class.");
        let _ = writeln!(out, "# TYPE serve_http_requests_total counter");
        for (class, count) in ["2xx", "4xx", "5xx"].iter().zip(&self.answered) {
            let _ = writeln!(out, "serve_http_requests_total{{code=\"{class}\"}} {}", count.load(Relaxed));
        }
        let _ = writeln!(out, "# HELP serve_http_requests_in_flight Inference requests being handled.");
        let _ = writeln!(out, "# TYPE serve_http_requests_in_flight gauge");
        let _ = writeln!(out, "serve_http_requests_in_flight {}", self.in_flight.load(Relaxed));
        let _ = writeln!(out, "# HELP serve_http_request_seconds Inference request latency, body read to answer.");
        let _ = writeln!(out, "# TYPE serve_http_request_seconds histogram");
        let mut cumulative = 0;
        for (i, count) in self.latency_buckets.iter().enumerate() {
            cumulative += count.load(Relaxed);
            let le = LATENCY_BUCKETS.get(i).map_or_else(|| "+Inf".to_owned(), f64::to_string);
            let _ = writeln!(out, "serve_http_request_seconds_bucket{{le=\"{le}\"}} {cumulative}");
        }
        let sum = self.latency_sum_micros.load(Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "serve_http_request_seconds_sum {sum}");
        let _ = writeln!(out, "serve_http_request_seconds_count {cumulative}");
    }
}
