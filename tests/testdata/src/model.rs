//! Just enough of `ModelProto` to interpret a test case's data files.

use std::path::Path;

use crate::wire;
use crate::DecodeError;

/// The kind of value a graph input or output carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    /// A dense tensor with this ONNX element type code (0 when not given).
    Tensor {
        /// ONNX `TensorProto.DataType` code.
        elem_type: i32,
    },
    /// A sequence.
    Sequence,
    /// A map.
    Map,
    /// An optional.
    Optional,
    /// A sparse tensor.
    SparseTensor,
    /// No type given, or one this crate does not know (opaque).
    Unknown,
}

/// One dimension of a declared tensor shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Value(i64),
    /// A symbolic size such as `"batch"`.
    Param(String),
    /// Neither given.
    Unknown,
}

/// The interface of a model: what its test data files must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSummary {
    /// Graph inputs that are fed at run time, in order; inputs that are also initializers
    /// (weights, in old IR versions) are left out, matching how test data is numbered.
    pub inputs: Vec<(String, TypeKind)>,
    /// Graph outputs, in order.
    pub outputs: Vec<(String, TypeKind)>,
    /// Declared shape of each entry of `inputs` (same order); `None` when not a tensor or
    /// the shape is not given.
    pub input_shapes: Vec<Option<Vec<Dim>>>,
    /// Declared shape of each entry of `outputs` (same order).
    pub output_shapes: Vec<Option<Vec<Dim>>>,
    /// Operator set imports as `(domain, version)`; `""` is the default ONNX domain.
    pub opsets: Vec<(String, i64)>,
    /// The model's IR version (0 when absent).
    pub ir_version: i64,
}

fn decode_dim(buf: &[u8]) -> Result<Dim, DecodeError> {
    let mut dim = Dim::Unknown;
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            1 => dim = Dim::Value(wire::expect_varint("dim_value", value)? as i64),
            2 => dim = Dim::Param(wire::expect_string("dim_param", value)?),
            _ => {}
        }
    }
    Ok(dim)
}

fn decode_shape(buf: &[u8]) -> Result<Vec<Dim>, DecodeError> {
    let mut dims = Vec::new();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        if number == 1 {
            dims.push(decode_dim(wire::expect_bytes("dim", value)?)?);
        }
    }
    Ok(dims)
}

fn decode_tensor_type(buf: &[u8]) -> Result<(i32, Option<Vec<Dim>>), DecodeError> {
    let mut elem_type = 0;
    let mut shape = None;
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            1 => elem_type = wire::expect_i32("elem_type", value)?,
            2 => shape = Some(decode_shape(wire::expect_bytes("shape", value)?)?),
            _ => {}
        }
    }
    Ok((elem_type, shape))
}

fn decode_type(buf: &[u8]) -> Result<(TypeKind, Option<Vec<Dim>>), DecodeError> {
    let mut result = (TypeKind::Unknown, None);
    for field in wire::fields(buf) {
        let (number, value) = field?;
        // `value` is a oneof; each arm still checks the wire type so garbage is reported.
        result = match number {
            1 => {
                let (elem_type, shape) = decode_tensor_type(wire::expect_bytes("tensor_type", value)?)?;
                (TypeKind::Tensor { elem_type }, shape)
            }
            4 => {
                wire::expect_bytes("sequence_type", value)?;
                (TypeKind::Sequence, None)
            }
            5 => {
                wire::expect_bytes("map_type", value)?;
                (TypeKind::Map, None)
            }
            8 => {
                wire::expect_bytes("sparse_tensor_type", value)?;
                (TypeKind::SparseTensor, None)
            }
            9 => {
                wire::expect_bytes("optional_type", value)?;
                (TypeKind::Optional, None)
            }
            _ => continue,
        };
    }
    Ok(result)
}

struct ValueInfo {
    name: String,
    kind: TypeKind,
    shape: Option<Vec<Dim>>,
}

fn decode_value_info(buf: &[u8]) -> Result<ValueInfo, DecodeError> {
    let mut info = ValueInfo { name: String::new(), kind: TypeKind::Unknown, shape: None };
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            1 => info.name = wire::expect_string("name", value)?,
            2 => (info.kind, info.shape) = decode_type(wire::expect_bytes("type", value)?)?,
            _ => {}
        }
    }
    Ok(info)
}

/// The `name` (field 8) of a `TensorProto`, without decoding its data.
fn tensor_name(buf: &[u8]) -> Result<String, DecodeError> {
    let mut name = String::new();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        if number == 8 {
            name = wire::expect_string("name", value)?;
        }
    }
    Ok(name)
}

/// The name of a `SparseTensorProto`: that of its `values` tensor (field 1).
fn sparse_tensor_name(buf: &[u8]) -> Result<String, DecodeError> {
    let mut name = String::new();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        if number == 1 {
            name = tensor_name(wire::expect_bytes("values", value)?)?;
        }
    }
    Ok(name)
}

fn decode_graph(buf: &[u8], summary: &mut ModelSummary) -> Result<(), DecodeError> {
    let mut inputs = Vec::new();
    let mut initializers = std::collections::HashSet::new();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            5 => {
                initializers.insert(tensor_name(wire::expect_bytes("initializer", value)?)?);
            }
            15 => {
                let bytes = wire::expect_bytes("sparse_initializer", value)?;
                initializers.insert(sparse_tensor_name(bytes)?);
            }
            11 => inputs.push(decode_value_info(wire::expect_bytes("input", value)?)?),
            12 => {
                let info = decode_value_info(wire::expect_bytes("output", value)?)?;
                summary.outputs.push((info.name, info.kind));
                summary.output_shapes.push(info.shape);
            }
            _ => {}
        }
    }
    // Initializers may come after the inputs on the wire, so filter once all are known.
    for info in inputs {
        if !initializers.contains(&info.name) {
            summary.inputs.push((info.name, info.kind));
            summary.input_shapes.push(info.shape);
        }
    }
    Ok(())
}

fn decode_opset(buf: &[u8]) -> Result<(String, i64), DecodeError> {
    let mut domain = String::new();
    let mut version = 0;
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            1 => domain = wire::expect_string("domain", value)?,
            2 => version = wire::expect_varint("version", value)? as i64,
            _ => {}
        }
    }
    Ok((domain, version))
}

/// Decodes the interface of a serialized `ModelProto`.
pub fn decode_model_summary(buf: &[u8]) -> Result<ModelSummary, DecodeError> {
    let mut summary = ModelSummary::default();
    let mut graph: Option<&[u8]> = None;
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            1 => summary.ir_version = wire::expect_varint("ir_version", value)? as i64,
            7 => graph = Some(wire::expect_bytes("graph", value)?),
            8 => summary.opsets.push(decode_opset(wire::expect_bytes("opset_import", value)?)?),
            _ => {}
        }
    }
    if let Some(graph) = graph {
        decode_graph(graph, &mut summary)?;
    }
    Ok(summary)
}

/// Reads a model file and decodes its interface.
pub fn load_model_summary(path: impl AsRef<Path>) -> Result<ModelSummary, DecodeError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| DecodeError::io(path, &e))?;
    decode_model_summary(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::tests::{len_field, varint_field};

    fn value_info(name: &str, ty: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        len_field(1, name.as_bytes(), &mut v);
        len_field(2, ty, &mut v);
        v
    }

    #[test]
    fn summary_skips_initializer_inputs() {
        let mut tensor_type = Vec::new();
        varint_field(1, 1, &mut tensor_type);
        let mut ty = Vec::new();
        len_field(1, &tensor_type, &mut ty);
        let mut init = Vec::new();
        len_field(8, b"w", &mut init);

        let mut graph = Vec::new();
        len_field(11, &value_info("x", &ty), &mut graph);
        len_field(11, &value_info("w", &ty), &mut graph);
        len_field(12, &value_info("y", &ty), &mut graph);
        len_field(5, &init, &mut graph);

        let mut opset = Vec::new();
        varint_field(2, 13, &mut opset);
        let mut model = Vec::new();
        varint_field(1, 7, &mut model);
        len_field(8, &opset, &mut model);
        len_field(7, &graph, &mut model);

        let s = decode_model_summary(&model).expect("decodes");
        assert_eq!(s.ir_version, 7);
        assert_eq!(s.opsets, vec![(String::new(), 13)]);
        assert_eq!(s.inputs, vec![("x".to_string(), TypeKind::Tensor { elem_type: 1 })]);
        assert_eq!(s.input_shapes, vec![None]);
        assert_eq!(s.outputs.len(), 1);
    }

    #[test]
    fn truncated_model_is_error() {
        let mut graph = Vec::new();
        len_field(2, b"g", &mut graph);
        let mut model = Vec::new();
        len_field(7, &graph, &mut model);
        assert!(decode_model_summary(&model[..model.len() - 1]).is_err());
    }
}
