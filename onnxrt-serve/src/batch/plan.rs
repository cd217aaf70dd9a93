//! What the batcher knows about its model: per input the shape of one sample (the declared shape
//! without its first, batch axis), per output its name. Built once; every request is checked
//! against it on the caller's thread, before it joins a batch.

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
                let fixed_sample = info.shape[1..]
                    .iter()
                    .map(|d| match d {
                        Dim::Fixed(n) if *n >= 0 => Some(*n),
                        _ => None,
                    })
                    .collect::<Option<Shape>>();
                Ok(OutputPlan { label: Arc::from(info.name.as_str()), element_type, fixed_sample })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Plan { inputs, outputs })
    }

    /// Checks one named value against input `index`; returns its sample shape.
    pub(crate) fn check_value(&self, index: usize, value: &Value<'static>) -> Result<Shape> {
        let input = &self.inputs[index];
        let kind = value.kind()?;
        if kind != ValueKind::Tensor {
            return Err(onnxrt::Error::ValueKind {
                name: input.name.clone(),
                expected: "tensor",
                got: kind.to_string(),
            }
            .into());
        }
        let tensor = value.tensor_info()?;
        if tensor.element_type != input.element_type {
            return Err(onnxrt::Error::ElementTypeMismatch {
                name: input.name.clone(),
                expected: input.element_type,
                got: tensor.element_type,
                hint: format!("; convert the data to {}", input.element_type),
            }
            .into());
        }
        let shape = &tensor.shape[..];
        // One sample: the sample shape itself, or with a leading axis of 1.
        let sample =
            if shape.len() == input.sample.len() + 1 && shape.first() == Some(&1) { &shape[1..] } else { shape };
        let fits = sample.len() == input.sample.len()
            && input.sample.iter().zip(sample).all(|(dim, &got)| !matches!(dim, Dim::Fixed(n) if *n != got));
        if !fits {
            let dims: Vec<String> = input.sample.iter().map(Dim::to_string).collect();
            return Err(onnxrt::Error::ShapeMismatch {
                name: input.name.clone(),
                expected: ShapeText(format!("[{}]", dims.join(", "))),
                got: shape.to_vec(),
                hint: "; the batcher takes one sample without the batch axis (a leading axis of 1 is accepted)".into(),
            }
            .into());
        }
        let Ok(bytes) = value.host_bytes() else {
            return Err(onnxrt::Error::InvalidArgument {
                what: format!("input `{}` in device memory", input.name),
                why: "the batcher gathers requests on the host; pass a host tensor (Value::from_vec)".into(),
            }
            .into());
        };
        // Refused here, alone, rather than failing the whole batch at the run's own check.
        if input.element_type == ElementType::Bool {
            if let Some(index) = bytes.iter().position(|&b| b > 1) {
                return Err(onnxrt::Error::InvalidArgument {
                    what: format!("input `{}`: bool element {index} = {}", input.name, bytes[index]),
                    why: "ONNX bools are bytes 0 or 1".into(),
                }
                .into());
            }
        }
        Ok(Shape::from_slice(sample))
    }

    /// The model input called `name`.
    pub(crate) fn input_index(&self, name: &str) -> Result<usize> {
        self.inputs.iter().position(|i| i.name == name).ok_or_else(|| {
            onnxrt::Error::UnknownInput {
                name: name.to_owned(),
                valid: Names(self.inputs.iter().map(|i| i.name.clone()).collect()),
            }
            .into()
        })
    }

    /// The error for a request that lacks input `index`.
    pub(crate) fn missing(&self, index: usize) -> Error {
        let input = &self.inputs[index];
        let dims: Vec<String> = input.sample.iter().map(Dim::to_string).collect();
        onnxrt::Error::MissingInput {
            name: input.name.clone(),
            element_type: input.element_type,
            shape: ShapeText(format!("[{}]", dims.join(", "))),
            required: Names(self.inputs.iter().map(|i| i.name.clone()).collect()),
        }
        .into()
    }
}
