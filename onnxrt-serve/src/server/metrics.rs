//! The server's own counters (HTTP side), rendered in Prometheus text format next to the
//! backend's. Atomics only: the hot path takes no lock.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds of the latency histogram's buckets, in seconds.
const LATENCY_BUCKETS: [f64; 16] =
    [0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.075, 0.1, 0.2, 0.5, 1.0, 5.0];

/// Status codes counted one by one in `serve_http_responses_total` (others by class).
const CODES: [u16; 12] = [200, 400, 404, 405, 408, 413, 415, 422, 500, 503, 504, 0];

/// Counters of the HTTP layer.
#[derive(Default)]
pub struct HttpMetrics {
    /// Every response (any route, router 404/405 included), by code in `CODES` (0: any other).
    responses: [AtomicU64; CODES.len()],
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

    /// Counts a response of any route.
    pub fn responded(&self, status: u16) {
        let at = CODES.iter().position(|&c| c == status).unwrap_or(CODES.len() - 1);
        self.responses[at].fetch_add(1, Relaxed);
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
        let _ = writeln!(out, "# HELP serve_http_responses_total Responses of every route, by status code.");
        let _ = writeln!(out, "# TYPE serve_http_responses_total counter");
        for (code, count) in CODES.iter().zip(&self.responses) {
            let code = if *code == 0 { "other".to_owned() } else { code.to_string() };
            let _ = writeln!(out, "serve_http_responses_total{{code=\"{code}\"}} {}", count.load(Relaxed));
        }
        let _ = writeln!(out, "# HELP serve_http_requests_total Inference requests (REST) answered, by status class.");
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

/// A metric family's HELP and TYPE lines.
pub fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Everything `/metrics` shows: HTTP, connections, each model and its batcher, the process.
pub fn render_all(app: &crate::server::app::App, out: &mut String) {
    app.metrics.render(out);
    let connections = &app.connections;
    let _ = writeln!(
        out,
        "# HELP serve_connections_open Open connections (REST and gRPC).\n# TYPE serve_connections_open gauge"
    );
    let _ = writeln!(out, "serve_connections_open {}", connections.open());
    let _ = writeln!(
        out,
        "# HELP serve_connections_max The bound on open connections.\n# TYPE serve_connections_max gauge"
    );
    let _ = writeln!(out, "serve_connections_max {}", connections.max);
    let _ =
        writeln!(out, "# HELP serve_connections_total Connections accepted.\n# TYPE serve_connections_total counter");
    let _ = writeln!(out, "serve_connections_total {}", connections.accepted.load(Relaxed));
    let _ = writeln!(
        out,
        "# HELP serve_connections_refused_total Connections closed at once because every slot was taken.\n# TYPE serve_connections_refused_total counter"
    );
    let _ = writeln!(out, "serve_connections_refused_total {}", connections.refused.load(Relaxed));
    models(app, out);
    let served = app.repository.models();
    let batchers: Vec<(&str, _)> =
        served.iter().filter_map(|m| m.batcher().map(|b| (m.name.as_str(), b.stats()))).collect();
    crate::server::batch_metrics::render(&batchers, out);
    process(app, out);
}

fn models(app: &crate::server::app::App, out: &mut String) {
    let served = app.repository.models();
    family(out, "serve_model_ready", "1 when the model has been warmed up and takes requests.", "gauge");
    for model in &served {
        let _ = writeln!(out, "serve_model_ready{{model=\"{}\"}} {}", model.name, u8::from(model.is_ready()));
    }
    // By version too: a new version's counters start at 0 in a series of their own, where a
    // reload of the same version keeps counting (Prometheus sees no reset).
    family(
        out,
        "serve_model_requests_total",
        "Inference requests (REST and gRPC), by model, version and outcome.",
        "counter",
    );
    for model in &served {
        let (name, version, stats) = (&model.name, &model.version, &model.stats);
        for (outcome, count) in [("success", &stats.success), ("failure", &stats.failure)] {
            let count = count.load(Relaxed);
            let _ = writeln!(
                out,
                "serve_model_requests_total{{model=\"{name}\",version=\"{version}\",outcome=\"{outcome}\"}} {count}"
            );
        }
    }
    family(
        out,
        "serve_model_success_seconds_total",
        "Time answered requests spent in the model (queue and run).",
        "counter",
    );
    for model in &served {
        let seconds = model.stats.success_micros.load(Relaxed) as f64 / 1e6;
        let (name, version) = (&model.name, &model.version);
        let _ = writeln!(out, "serve_model_success_seconds_total{{model=\"{name}\",version=\"{version}\"}} {seconds}");
    }
    family(out, "serve_model_in_flight", "Requests being handled by the model now.", "gauge");
    for model in &served {
        let _ =
            writeln!(out, "serve_model_in_flight{{model=\"{}\"}} {}", model.name, model.stats.in_flight.load(Relaxed));
    }
    family(
        out,
        "serve_worker_crashes_total",
        "Worker processes of isolated models that died running a request (each answered 500 and replaced).",
        "counter",
    );
    for model in &served {
        if let Some(pool) = model.workers() {
            let _ =
                writeln!(out, "serve_worker_crashes_total{{model=\"{}\"}} {}", model.name, pool.crashes.load(Relaxed));
        }
    }
    family(
        out,
        "serve_worker_starts_total",
        "Worker processes started for isolated models, restarts included.",
        "counter",
    );
    for model in &served {
        if let Some(pool) = model.workers() {
            let _ =
                writeln!(out, "serve_worker_starts_total{{model=\"{}\"}} {}", model.name, pool.started.load(Relaxed));
        }
    }
}

/// The standard process metrics, read from /proc (Linux).
fn process(app: &crate::server::app::App, out: &mut String) {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let field = |key: &str| {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
        };
        if let Some(kib) = field("VmRSS:") {
            family(out, "process_resident_memory_bytes", "Resident memory size in bytes.", "gauge");
            let _ = writeln!(out, "process_resident_memory_bytes {}", kib * 1024);
        }
        if let Some(kib) = field("VmSize:") {
            family(out, "process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge");
            let _ = writeln!(out, "process_virtual_memory_bytes {}", kib * 1024);
        }
        if let Some(threads) = field("Threads:") {
            family(out, "process_threads", "OS threads of the process.", "gauge");
            let _ = writeln!(out, "process_threads {threads}");
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the command name (which may hold spaces): utime and stime are 14 and 15.
        let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
        // /proc counts in USER_HZ, which Linux fixes at 100 per second for user space.
        family(out, "process_cpu_seconds_total", "User and system CPU time spent in seconds.", "counter");
        let _ = writeln!(out, "process_cpu_seconds_total {}", (ticks(11) + ticks(12)) as f64 / 100.0);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        family(out, "process_open_fds", "Open file descriptors.", "gauge");
        let _ = writeln!(out, "process_open_fds {}", fds.count());
    }
    let start =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default() - app.started.elapsed();
    family(out, "process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.", "gauge");
    let _ = writeln!(out, "process_start_time_seconds {}", start.as_secs_f64());
}
