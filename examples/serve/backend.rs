//! What runs the model for a request: the session directly (`--no-batching`, one `run_async` per
//! request) or the dynamic batcher. The HTTP layer sees one `infer` call either way.

use std::sync::Arc;

use onnxrt::{Dim, ElementType, Session, Value};

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
}

impl Backend {
    /// The logits of one sample of `ModelContract::sample_shape` (checked by the caller).
    pub async fn infer(&self, contract: &ModelContract, sample: Vec<f32>) -> Result<Vec<f32>, InferError> {
        match self {
            Backend::Unbatched(session) => {
                let mut shape = vec![1i64];
                shape.extend(contract.sample_shape.iter().map(|&d| d as i64));
                let value = Value::from_vec(&shape, sample).map_err(|e| InferError::Failed(e.to_string()))?;
                let run = session
                    .run_async([(contract.input.as_str(), value)], &[contract.output.as_str()])
                    .map_err(|e| InferError::Failed(e.to_string()))?;
                let outputs = run.await.map_err(|e| InferError::Failed(e.to_string()))?;
                let logits = outputs[0].view::<f32>().map_err(|e| InferError::Failed(e.to_string()))?;
                Ok(logits.iter().copied().collect())
            }
        }
    }

    /// Counters in Prometheus text format (the batcher's; none for the unbatched path).
    pub fn metrics(&self, _out: &mut String) {}

    /// Completes or fails every pending request (the batcher's shutdown).
    pub fn shutdown(&self) {}
}
