//! What runs the model for a request: the session directly (`--no-batching`, one `run_async` per
//! request) or the dynamic batcher. The HTTP layer sees one `infer` call either way.

use std::fmt::Write;
use std::sync::Arc;
use std::time::Duration;

use onnxrt::{Dim, ElementType, Session, Value};
use onnxrt_serve::batch::{Batcher, HistogramSnapshot, RequestOptions, Shutdown};
use onnxrt_serve::Error;

/// The model's contract as the server checks it before anything reaches ORT.
#[derive(Debug, Clone)]
pub struct ModelContract {
    /// The input's name.
    pub input: String,
    /// The output's name.
    pub output: String,
    /// One sample's shape (the input's shape without the batch axis), e.g. [3, 224, 224]; pictures
    /// are accepted when it is [3, 224, 224], raw tensors always.
    pub sample_shape: Vec<usize>,
    /// Classes in the output (its last axis).
    pub classes: usize,
}

impl ModelContract {
    /// Reads the contract from the session: one f32 input [batch, ...] and one f32 output
    /// [batch, classes], every axis but the batch fixed.
    pub fn of(session: &Session) -> Result<ModelContract, String> {
        let (input, output) = match (session.inputs(), session.outputs()) {
            ([input], [output, ..]) => (input, output),
            (inputs, _) => {
                return Err(format!("the server needs a model with one input, this one has {}", inputs.len()))
            }
        };
        for info in [input, output] {
            if info.element_type != Some(ElementType::F32) {
                return Err(format!("`{}` is {:?}; the server feeds and reads f32", info.name, info.element_type));
            }
        }
        let fixed = |dims: &[Dim]| -> Option<Vec<usize>> {
            dims.iter().map(|d| if let Dim::Fixed(n @ 1..) = d { Some(*n as usize) } else { None }).collect()
        };
        let sample_shape = input.shape.get(1..).and_then(fixed).filter(|s| !s.is_empty()).ok_or_else(|| {
            format!(
                "input `{}` is {}; the server needs [batch, ...] with the other axes fixed",
                input.name,
                input.shape_text()
            )
        })?;
        let classes =
            output.shape.get(1..).and_then(fixed).filter(|s| s.len() == 1).map(|s| s[0]).ok_or_else(|| {
                format!("output `{}` is {}; the server needs [batch, classes]", output.name, output.shape_text())
            })?;
        Ok(ModelContract { input: input.name.clone(), output: output.name.clone(), sample_shape, classes })
    }
}

/// Why a request got no logits; the HTTP layer maps each to a status code.
#[derive(Debug)]
pub enum InferError {
    /// The server is overloaded (queue full): 503.
    Overloaded(String),
    /// The request waited past its deadline: 504.
    Timeout(String),
    /// The server is shutting down: 503.
    ShuttingDown,
    /// The run failed: 500.
    Failed(String),
}

/// Runs one sample at a time, batched or not.
pub enum Backend {
    /// One `run_async` per request: the baseline.
    Unbatched(Arc<Session>),
    /// The dynamic batcher; each request waits at most `timeout` (queue and run).
    Batched { batcher: Batcher, timeout: Duration },
}

fn failed(error: impl Into<Error>) -> InferError {
    let error = error.into();
    match error {
        Error::QueueFull { .. } => InferError::Overloaded(format!("{error}; retry later")),
        Error::DeadlineExpired { .. } => InferError::Timeout(error.to_string()),
        Error::BatcherShutDown => InferError::ShuttingDown,
        other => InferError::Failed(other.to_string()),
    }
}

impl Backend {
    /// The logits of one sample of `ModelContract::sample_shape` (checked by the caller).
    pub async fn infer(&self, contract: &ModelContract, sample: Vec<f32>) -> Result<Vec<f32>, InferError> {
        let mut shape = vec![1i64];
        shape.extend(contract.sample_shape.iter().map(|&d| d as i64));
        let value = Value::from_vec(&shape, sample).map_err(failed)?;
        let outputs = match self {
            Backend::Unbatched(session) => {
                let run = session
                    .run_async([(contract.input.as_str(), value)], &[contract.output.as_str()])
                    .map_err(|e| InferError::Failed(e.to_string()))?;
                run.await.map_err(failed)?
            }
            Backend::Batched { batcher, timeout } => {
                // A full queue is refused at once (503): shedding load keeps latency bounded.
                let options = RequestOptions::timeout(*timeout);
                batcher
                    .run_async_with([(contract.input.as_str(), value)], options)
                    .map_err(failed)?
                    .await
                    .map_err(failed)?
            }
        };
        let logits = outputs.get(&contract.output).and_then(|v| v.view::<f32>()).map_err(failed)?;
        Ok(logits.iter().copied().collect())
    }

    /// The batcher's counters in Prometheus text format (none for the unbatched path).
    pub fn metrics(&self, out: &mut String) {
        let Backend::Batched { batcher, .. } = self else { return };
        let stats = batcher.stats();
        let mut counter = |name: &str, help: &str, kind: &str, samples: &[(&str, u64)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in samples {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        counter(
            "batcher_requests_submitted_total",
            "Requests accepted into the queue.",
            "counter",
            &[("", stats.submitted)],
        );
        counter(
            "batcher_requests_completed_total",
            "Requests answered with outputs.",
            "counter",
            &[("", stats.completed)],
        );
        let e = &stats.errors;
        counter(
            "batcher_request_errors_total",
            "Requests that ended in an error, by kind.",
            "counter",
            &[
                ("{kind=\"invalid\"}", e.invalid),
                ("{kind=\"queue_full\"}", e.queue_full),
                ("{kind=\"closed\"}", e.closed),
                ("{kind=\"deadline\"}", e.deadline),
                ("{kind=\"cancelled\"}", e.cancelled),
                ("{kind=\"shut_down\"}", e.shut_down),
                ("{kind=\"run_failed\"}", e.run_failed),
            ],
        );
        counter("batcher_queue_depth", "Requests waiting for a batch.", "gauge", &[("", stats.queue_depth as u64)]);
        counter("batcher_batches_total", "Batched runs.", "counter", &[("", stats.batches)]);
        let _ =
            writeln!(out, "# HELP batcher_batch_size Requests per batched run.\n# TYPE batcher_batch_size histogram");
        let (mut cumulative, mut sum) = (0, 0);
        for (size, &runs) in stats.batch_sizes.iter().enumerate() {
            cumulative += runs;
            sum += size as u64 * runs;
            if size > 0 {
                let _ = writeln!(out, "batcher_batch_size_bucket{{le=\"{size}\"}} {cumulative}");
            }
        }
        let _ = writeln!(out, "batcher_batch_size_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "batcher_batch_size_sum {sum}\nbatcher_batch_size_count {cumulative}");
        histogram(out, "batcher_queue_seconds", "From submission until the request's batch runs.", &stats.queue_time);
        histogram(out, "batcher_run_seconds", "One batched run (gather, run, scatter).", &stats.run_time);
        histogram(
            out,
            "batcher_gather_seconds",
            "Copying a batch's samples into its input buffer.",
            &stats.gather_time,
        );
        histogram(out, "batcher_model_seconds", "The model run of a batch (binding, run, outputs).", &stats.model_time);
    }

    /// Runs what is queued, then stops the batcher (no request is left unanswered).
    pub fn shutdown(&self) {
        if let Backend::Batched { batcher, .. } = self {
            batcher.shutdown(Shutdown::Drain);
        }
    }
}

/// A duration histogram in Prometheus text format (cumulative buckets, seconds).
fn histogram(out: &mut String, name: &str, help: &str, snapshot: &HistogramSnapshot) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    let mut cumulative = 0;
    for (i, count) in snapshot.counts.iter().enumerate() {
        cumulative += count;
        let le = snapshot.bounds.get(i).map_or_else(|| "+Inf".to_owned(), |b| b.as_secs_f64().to_string());
        let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_sum {}\n{name}_count {}", snapshot.sum.as_secs_f64(), snapshot.count);
}
