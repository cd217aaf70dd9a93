//! What the batcher knows about its model: per input the shape of one sample (the declared shape
//! without its first, batch axis), per output its name. Built once; every request is checked
//! against it on the caller's thread (by onnxrt's own check), before it joins a batch.

use std::sync::Arc;

use onnxrt::{Dim, ElementType, Names, Session, ShapeText, Value, ValueInfo, ValueKind};

use crate::batch::Shape;
use crate::error::{Error, Result};

/// One model input, as a request gives it.
#[derive(Debug)]
pub(crate) struct InputPlan {
    pub(crate) name: String,
    pub(crate) element_type: ElementType,
    /// The declared shape after the batch axis.
    pub(crate) sample: Vec<Dim>,
    /// As the model declares it (requests are checked against it).
    pub(crate) declared: ValueInfo,
}

impl InputPlan {
    /// The sample shape, when every axis after the batch axis is fixed.
    pub(crate) fn fixed_sample(&self) -> Option<Shape> {
        fixed(&self.sample)
    }

    /// Whether `shape` can be a sample of this input: its rank, its fixed axes, no negative size.
    pub(crate) fn fits_sample(&self, shape: &[i64]) -> bool {
        shape.len() == self.sample.len()
            && shape.iter().zip(&self.sample).all(|(&n, dim)| n >= 0 && !matches!(dim, Dim::Fixed(d) if *d != n))
    }

    /// The sample shape as the model names it (`[3, w]`).
    pub(crate) fn sample_text(&self) -> String {
        let dims: Vec<String> = self.sample.iter().map(Dim::to_string).collect();
        format!("[{}]", dims.join(", "))
    }
}

/// `dims` when every one is fixed.
fn fixed(dims: &[Dim]) -> Option<Shape> {
    dims.iter()
        .map(|d| match d {
            Dim::Fixed(n) if *n >= 0 => Some(*n),
            _ => None,
        })
        .collect()
}

/// One model output.
#[derive(Debug)]
pub(crate) struct OutputPlan {
    pub(crate) label: Arc<str>,
    pub(crate) element_type: ElementType,
    /// Dimensions after the batch axis, when all are fixed (then its batch buffer is
    /// preallocated); `None` when ORT decides them at run time.
    pub(crate) fixed_sample: Option<Shape>,
}

impl OutputPlan {
    /// Whether this output of a run of `rows` samples holds one row per sample (its first axis
    /// is the batch's size, and its sample shape the declared one where that is fixed), so that
    /// each request can get its own.
    pub(crate) fn check_rows(&self, shape: &[i64], rows: usize) -> Result<()> {
        if shape.first() != Some(&(rows as i64)) {
            return Err(Error::NotSplitAlongBatch { name: self.label.to_string(), rows, shape: shape.to_vec() });
        }
        match &self.fixed_sample {
            Some(declared) if declared.as_slice() != &shape[1..] => {
                Err(self.sample_changes(declared, None, shape, rows))
            }
            _ => Ok(()),
        }
    }

    /// The error for a run of `rows` rows that gave `shape`, where a run of `expected_rows` (or
    /// the declaration: `None`) gave the sample shape `expected`.
    pub(crate) fn sample_changes(
        &self,
        expected: &[i64],
        expected_rows: Option<usize>,
        shape: &[i64],
        rows: usize,
    ) -> Error {
        Error::SampleShapeChanges {
            name: self.label.to_string(),
            expected: expected.to_vec(),
            expected_rows,
            sample: shape.get(1..).unwrap_or_default().to_vec(),
            rows,
        }
    }
}

#[derive(Debug)]
pub(crate) struct Plan {
    pub(crate) inputs: Vec<InputPlan>,
    pub(crate) outputs: Vec<OutputPlan>,
}

/// A batchable value: a numeric tensor whose first axis is free.
fn batchable(info: &ValueInfo) -> Result<ElementType> {
    let refuse = |why: String| Error::NotBatchable { name: info.name.clone(), why };
    if info.kind != ValueKind::Tensor {
        return Err(refuse(format!("is a {:?}, not a tensor", info.kind)));
    }
    let element_type = info.element_type.unwrap_or(ElementType::Unknown(0));
    if element_type.byte_size().is_err() {
        return Err(refuse(format!("holds {element_type} elements; only fixed-size (numeric) tensors are batched")));
    }
    match info.shape.first() {
        None => Err(refuse("is a scalar (no batch axis)".into())),
        Some(Dim::Fixed(n)) => Err(refuse(format!(
            "has a fixed first axis of {n} (shape {}); the batch axis must be dynamic",
            info.shape_text()
        ))),
        Some(_) => Ok(element_type),
    }
}

impl Plan {
    pub(crate) fn new(session: &Session) -> Result<Plan> {
        let inputs = session
            .inputs()
            .iter()
            .map(|info| {
                Ok(InputPlan {
                    name: info.name.clone(),
                    element_type: batchable(info)?,
                    sample: info.shape[1..].to_vec(),
                    declared: info.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        if inputs.is_empty() {
            return Err(Error::NotBatchable { name: "(inputs)".into(), why: "the model has no inputs".into() });
        }
        let outputs = session
            .outputs()
            .iter()
            .map(|info| {
                let element_type = batchable(info)?;
                let fixed_sample = fixed(&info.shape[1..]);
                Ok(OutputPlan { label: Arc::from(info.name.as_str()), element_type, fixed_sample })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Plan { inputs, outputs })
    }

    /// Checks one named value against input `index` (onnxrt's check of a sample,
    /// [`ValueInfo::check_sample`]); returns its sample shape.
    pub(crate) fn check_value(&self, index: usize, value: &Value<'static>) -> Result<Shape> {
        let input = &self.inputs[index];
        input.declared.check_sample(value)?;
        let shape = value.tensor_info()?.shape;
        // A sample with its batch axis of 1, or without it.
        let sample = if shape.len() == input.declared.shape.len() { &shape[1..] } else { &shape[..] };
        if value.host_bytes().is_err() {
            return Err(onnxrt::Error::InvalidArgument {
                what: format!("input `{}` in device memory", input.name),
                why: "the batcher gathers requests on the host; pass a host tensor (Value::from_vec)".into(),
            }
            .into());
        }
        Ok(Shape::from_slice(sample))
    }

    /// The error for a request that lacks input `index`.
    pub(crate) fn missing(&self, index: usize) -> Error {
        let input = &self.inputs[index].declared;
        onnxrt::Error::MissingInput {
            name: input.name.clone(),
            element_type: self.inputs[index].element_type,
            shape: ShapeText(input.shape_text()),
            required: Names(self.inputs.iter().map(|i| i.name.clone()).collect()),
        }
        .into()
    }
}
