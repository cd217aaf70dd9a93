//! The batchers' counters in Prometheus text format, each sample labelled with its model (one
//! HELP/TYPE header per family, whatever the number of batched models).

use std::fmt::Write;

use crate::batch::{BatcherStats, HistogramSnapshot};

use crate::server::metrics::family;

/// A counter read off a batcher's stats.
type Read = fn(&BatcherStats) -> u64;
/// A histogram read off a batcher's stats.
type ReadHistogram = fn(&BatcherStats) -> &HistogramSnapshot;

/// Appends the counters of every `(model, stats)`.
pub fn render(batchers: &[(&str, BatcherStats)], out: &mut String) {
    if batchers.is_empty() {
        return;
    }
    let simple: [(&str, &str, &str, Read); 5] = [
        ("batcher_requests_submitted_total", "Requests accepted into the queue.", "counter", |s| s.submitted),
        ("batcher_requests_completed_total", "Requests answered with outputs.", "counter", |s| s.completed),
        ("batcher_queue_depth", "Requests waiting for a batch.", "gauge", |s| s.queue_depth as u64),
        ("batcher_batches_total", "Batched runs.", "counter", |s| s.batches),
        ("batcher_graph_runs_total", "Batched runs that replayed a CUDA graph (cuda_graphs).", "counter", |s| {
            s.graph_runs
        }),
    ];
    for (name, help, kind, read) in simple {
        family(out, name, help, kind);
        for (model, stats) in batchers {
            let _ = writeln!(out, "{name}{{model=\"{model}\"}} {}", read(stats));
        }
    }
    family(out, "batcher_request_errors_total", "Requests that ended in an error, by kind.", "counter");
    for (model, stats) in batchers {
        let e = &stats.errors;
        for (kind, count) in [
            ("invalid", e.invalid),
            ("queue_full", e.queue_full),
            ("closed", e.closed),
            ("deadline", e.deadline),
            ("cancelled", e.cancelled),
            ("shut_down", e.shut_down),
            ("run_failed", e.run_failed),
        ] {
            let _ = writeln!(out, "batcher_request_errors_total{{model=\"{model}\",kind=\"{kind}\"}} {count}");
        }
    }
    family(out, "batcher_batch_size", "Requests per batched run.", "histogram");
    for (model, stats) in batchers {
        let (mut cumulative, mut sum) = (0, 0);
        for (size, &runs) in stats.batch_sizes.iter().enumerate() {
            cumulative += runs;
            sum += size as u64 * runs;
            if size > 0 {
                let _ = writeln!(out, "batcher_batch_size_bucket{{model=\"{model}\",le=\"{size}\"}} {cumulative}");
            }
        }
        let _ = writeln!(out, "batcher_batch_size_bucket{{model=\"{model}\",le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "batcher_batch_size_sum{{model=\"{model}\"}} {sum}");
        let _ = writeln!(out, "batcher_batch_size_count{{model=\"{model}\"}} {cumulative}");
    }
    let histograms: [(&str, &str, ReadHistogram); 5] = [
        ("batcher_queue_seconds", "From submission until the request's batch runs.", |s| &s.queue_time),
        ("batcher_run_seconds", "One batched run (gather, run, scatter).", |s| &s.run_time),
        (
            "batcher_gather_seconds",
            "Copying a batch's samples into its input buffer (and to the device, with device_inputs).",
            |s| &s.gather_time,
        ),
        ("batcher_model_seconds", "The model run of a batch (binding, run, outputs).", |s| &s.model_time),
        (
            "batcher_device_wait_seconds",
            "The part of the model run spent waiting for another worker's batch to leave the device (hold_while_busy) or its CUDA graph.",
            |s| &s.device_wait,
        ),
    ];
    for (name, help, read) in histograms {
        family(out, name, help, "histogram");
        for (model, stats) in batchers {
            histogram(out, model, name, read(stats));
        }
    }
}

/// One model's samples of a duration histogram (cumulative buckets, seconds).
fn histogram(out: &mut String, model: &str, name: &str, snapshot: &HistogramSnapshot) {
    let mut cumulative = 0;
    for (i, count) in snapshot.counts.iter().enumerate() {
        cumulative += count;
        let le = snapshot.bounds.get(i).map_or_else(|| "+Inf".to_owned(), |b| b.as_secs_f64().to_string());
        let _ = writeln!(out, "{name}_bucket{{model=\"{model}\",le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_sum{{model=\"{model}\"}} {}", snapshot.sum.as_secs_f64());
    let _ = writeln!(out, "{name}_count{{model=\"{model}\"}} {}", snapshot.count);
}
