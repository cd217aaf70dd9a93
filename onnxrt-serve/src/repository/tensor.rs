//! [`ModelTensor`]: a model input or output as the protocol shows it, with the narrower shapes
//! config.json `shapes` gives ([`narrow`]).

use onnxrt::{Dim, ElementType, ValueInfo};

use crate::oip::datatype::datatype_of;
use crate::oip::messages::TensorMetadata;

/// A model input or output as the server checks requests against it.
#[derive(Debug, Clone)]
pub struct ModelTensor {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub element_type: ElementType,
    /// Its declared shape, -1 for a free axis.
    pub shape: Vec<i64>,
}

impl ModelTensor {
    pub(super) fn of(info: &ValueInfo, what: &str) -> Result<ModelTensor, String> {
        let element_type = info
            .element_type
            .filter(|&t| datatype_of(t).is_some() && info.kind == onnxrt::ValueKind::Tensor)
            .ok_or_else(|| {
                format!(
                    "{what} `{}` is {:?} {:?}, which the protocol cannot carry",
                    info.name, info.kind, info.element_type
                )
            })?;
        let shape = info.shape.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { -1 }).collect();
        Ok(ModelTensor { name: info.name.clone(), element_type, shape })
    }

    /// `info` with the axes this tensor fixes (config.json `shapes`) fixed.
    pub(super) fn fixing(&self, info: &ValueInfo) -> ValueInfo {
        let shape = info
            .shape
            .iter()
            .zip(&self.shape)
            .map(|(dim, &narrowed)| if narrowed >= 0 { Dim::Fixed(narrowed) } else { dim.clone() })
            .collect();
        ValueInfo { shape, ..info.clone() }
    }

    pub(super) fn metadata(&self) -> TensorMetadata {
        TensorMetadata {
            name: self.name.clone(),
            datatype: datatype_of(self.element_type).unwrap_or("BYTES"),
            shape: self.shape.clone(),
        }
    }
}

/// Applies `shapes` from config.json: each must name an input, have its rank, and keep its fixed
/// axes (a free axis may become fixed, or stay free with -1).
pub(super) fn narrow(
    inputs: &mut [ModelTensor],
    shapes: &std::collections::BTreeMap<String, Vec<i64>>,
) -> Result<(), String> {
    for (name, shape) in shapes {
        let Some(input) = inputs.iter_mut().find(|i| &i.name == name) else {
            let known: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
            let name = crate::shown::shown(name);
            return Err(format!("config.json `shapes` names `{name}`, which is not an input (inputs: {known:?})"));
        };
        let fits = shape.len() == input.shape.len()
            && shape
                .iter()
                .zip(&input.shape)
                .all(|(&narrow, &declared)| narrow >= -1 && (declared < 0 || narrow == declared || narrow == -1));
        if !fits {
            return Err(format!(
                "config.json `shapes`: {shape:?} for `{name}` does not fit the model's {:?} (same rank; fixed axes kept; -1 for any size)",
                input.shape
            ));
        }
        input.shape = shape
            .iter()
            .zip(&input.shape)
            .map(|(&narrow, &declared)| if narrow == -1 { declared } else { narrow })
            .collect();
    }
    Ok(())
}
