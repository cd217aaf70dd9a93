//! A served model's warm-up: one run on made-up inputs of the shapes it declares or config.json
//! gives, before it is marked ready ([`WarmedUp`]; skipped where there is no shape to use).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use onnxrt::Value;

use crate::isolation::RunHandle;
use crate::repository::errors::InferError;
use crate::repository::model::ServedModel;
use crate::repository::runner::{run_on, Runner};
use crate::repository::tensor::ModelTensor;

/// What a model's warm-up did.
#[derive(Debug, Clone)]
pub enum WarmedUp {
    /// It ran, taking this long.
    Ran(Duration),
    /// It did not run, for this reason (the model is ready all the same).
    Skipped(String),
}

impl ServedModel {
    /// Warms the model up (unless its settings say not to): one run on zeros (values from
    /// `warmup_fill`) of the shapes in `warmup`, or else of the declared shapes where they are
    /// fixed (a free first axis as 1), and each batch size the batcher will use when its samples
    /// have fixed shapes (with free axes: on CUDA padded, each size; else one row and two, which
    /// tell a model whose rows mix). Skipped, and the model ready at once, when an input has free axes and
    /// no warm-up shape. A failed warm-up leaves the model not ready, with the reason.
    pub fn warm_up(&self) -> Result<WarmedUp, String> {
        if !self.settings.warm_up {
            self.ready.store(true, Relaxed);
            return Ok(WarmedUp::Skipped("warm-up is off (`\"warmup\": false` or --warmup false)".into()));
        }
        let started = Instant::now();
        let result = self.warm_up_runs();
        match &result {
            Ok(_) => self.ready.store(true, Relaxed),
            Err(why) => {
                self.failed.store(true, Relaxed);
                format!("warm-up failed: {why}")
                    .clone_into(&mut self.reason.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            }
        }
        result.map(|skipped| skipped.map_or_else(|| WarmedUp::Ran(started.elapsed()), WarmedUp::Skipped))
    }

    /// The warm-up runs; `Some(why)` when there is no shape to warm up with.
    fn warm_up_runs(&self) -> Result<Option<String>, String> {
        let mut values = Vec::with_capacity(self.inputs.len());
        for input in &self.inputs {
            let shape = match self.settings.warmup.get(&input.name) {
                Some(shape) => shape.clone(),
                None => {
                    let free: Vec<usize> =
                        input.shape.iter().enumerate().skip(1).filter(|(_, &d)| d < 0).map(|(axis, _)| axis).collect();
                    if !free.is_empty() {
                        return Ok(Some(format!(
                            "input `{}` has free axes {free:?} (shape {:?}) and config.json gives no `warmup` shape for it",
                            input.name, input.shape
                        )));
                    }
                    input.shape.iter().map(|&d| d.max(1)).collect()
                }
            };
            let fill = self.settings.warmup_fill.get(&input.name).copied().unwrap_or(0.0);
            let value = crate::oip::tensor::filled(&input.name, input.element_type, &shape, fill)
                .map_err(|e| format!("warm-up: {e}"))?;
            values.push((input.name.clone(), value));
        }
        let shapes_run: Vec<(String, Vec<i64>)> = values
            .iter()
            .map(|(name, value)| (name.clone(), value.tensor_info().map(|i| i.shape.to_vec()).unwrap_or_default()))
            .collect();
        let shapes: Vec<String> = shapes_run.iter().map(|(name, shape)| format!("{name}: {shape:?}")).collect();
        if let Err(error) = self.run_blocking(values) {
            return Err(format!(
                "the warm-up run ({}; zeros unless `warmup_fill` says) failed: {error}\nFix: give the warm-up shapes this model \
                 needs in its config.json, e.g. \"warmup\": {{\"{}\": [1, …]}}, or turn its warm-up off (\"warmup\": false)",
                shapes.join(", "),
                self.inputs.first().map_or("input", |i| i.name.as_str())
            ));
        }
        if let Some(batcher) = self.batcher() {
            // Every batch size (the batcher's runs are of zeros). Where the samples' shapes are
            // free, only on CUDA with padding, at the warm-up run's sample shapes: a CUDA session
            // tunes each shape on its first run (about 0.6 s for PP-OCR cls on an H100,
            // 2026-12-07), while on the CPU every size up to `max_batch` cost a 4096-row model
            // 70 s and 6 GiB at start, and a large one its memory (outside review, 2026-12-07).
            // Not where the warm-up run needed other values than zeros (`warmup_fill`).
            let fixed = self.inputs.iter().all(|i| i.shape.iter().skip(1).all(|&d| d >= 0));
            let tuned = self.settings.provider == "cuda" && self.settings.padded();
            let samples: Vec<(&str, &[i64])> =
                shapes_run.iter().map(|(name, shape)| (name.as_str(), shape.get(1..).unwrap_or(&[]))).collect();
            if fixed || (tuned && self.settings.warmup_fill.is_empty()) {
                batcher.warm_up_with(&samples).map_err(batch_sizes_failed)?;
            } else if self.settings.warmup_fill.is_empty() {
                // Free sample axes on the CPU: one row and two only, so that a model whose
                // rows mix (`x·xᵀ`) is not served (outside probe, 2026-12-08).
                batcher.check_rows_with(&samples).map_err(|error| {
                    format!(
                        "{} (the check that outputs keep a row per sample: runs of 1 and 2 rows at the `warmup` \
                         shape; a smaller `warmup` shape makes it cheaper)",
                        batch_sizes_failed(error)
                    )
                })?;
            }
            #[cfg(feature = "cuda")]
            for (rows, outcome) in batcher.cuda_graphs() {
                match outcome {
                    Ok(()) => tracing::debug!(model = %self.name, rows, "CUDA graph captured"),
                    Err(why) => {
                        tracing::warn!(model = %self.name, rows, cause = %why, "no CUDA graph for this batch size: it runs without one (\"cuda_graphs\": false in its config.json stops trying)")
                    }
                }
            }
        }
        Ok(None)
    }

    /// One run of `inputs` where requests run (in this process or a worker), on this thread.
    fn run_blocking(&self, inputs: Vec<(String, Value<'static>)>) -> Result<(), InferError> {
        match &self.runner {
            Runner::Isolated { pool } | Runner::Batched { pool: Some(pool), .. } => {
                pool.run(&inputs, &[], &RunHandle::default()).map(drop).map_err(InferError::from)
            }
            Runner::Direct { session } => run_on(session, self.turn.as_deref(), &inputs, &[], None).map(drop),
            Runner::Batched { batcher, pool: None } => {
                run_on(batcher.session(), self.turn.as_deref(), &inputs, &[], None).map(drop)
            }
        }
    }
}

/// A batcher's warm-up error as the model's reason; a model that cannot be batched says how to
/// serve it.
fn batch_sizes_failed(error: crate::Error) -> String {
    match error {
        crate::Error::NotSplitAlongBatch { .. } | crate::Error::SampleShapeChanges { .. } => {
            format!("warming up the batch sizes: {error} (\"batching\": false in its config.json)")
        }
        error => format!("warming up the batch sizes: {error}"),
    }
}

/// Checks config.json's `warmup` shapes before anything runs: each must fit its input as the
/// model declares it (`model`: same rank, its fixed axes) and as config.json `shapes` narrows it
/// (`narrowed`). Unchecked, a wrong rank failed only in the run, and a shape outside `shapes`
/// warmed up a model that then refused every request of that shape (outside probe).
/// The names are known inputs (checked before).
pub(super) fn check_warmup_shapes(
    model: &[ModelTensor],
    narrowed: &[ModelTensor],
    warmup: &BTreeMap<String, Vec<i64>>,
    shapes: &BTreeMap<String, Vec<i64>>,
) -> Result<(), String> {
    let fits = |given: &[i64], declared: &[i64]| {
        given.len() == declared.len() && given.iter().zip(declared).all(|(&g, &d)| g >= 0 && (d < 0 || g == d))
    };
    for (name, shape) in warmup {
        let of = |inputs: &[ModelTensor]| inputs.iter().find(|i| &i.name == name).map(|i| i.shape.clone());
        let (Some(declared), Some(allowed)) = (of(model), of(narrowed)) else { continue };
        if shape.iter().any(|&size| size < 0) {
            return Err(format!(
                "config.json `warmup` gives `{name}` the shape {shape:?}, with a negative size: a warm-up runs one \
                 shape, so each axis needs a size (no -1; 1 for a free batch axis) that fits the model's \
                 {declared:?} (-1 there: any size)"
            ));
        }
        if !fits(shape, &declared) {
            return Err(format!(
                "config.json `warmup` gives `{name}` the shape {shape:?}, which does not fit the model's {declared:?} \
                 (same rank; fixed axes as they are; -1 there: any size)"
            ));
        }
        if !fits(shape, &allowed) {
            let given = shapes.get(name).map_or(allowed, Clone::clone);
            return Err(format!(
                "config.json `warmup` gives `{name}` the shape {shape:?}, outside its `shapes` {given:?} (-1: any \
                 size): requests of that shape are refused, so warm it up with a shape they allow"
            ));
        }
    }
    Ok(())
}
