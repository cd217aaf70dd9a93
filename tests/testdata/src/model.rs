//! Just enough of `ModelProto` to interpret a test case's data files.

use std::collections::HashSet;
use std::path::Path;

use onnxrt_onnx_proto::prost::bytes::Bytes;
use onnxrt_onnx_proto::tensor_shape_proto::dimension;
use onnxrt_onnx_proto::{type_proto, Message, ModelProto, TensorShapeProto, TypeProto, ValueInfoProto};

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

fn dims(shape: &TensorShapeProto) -> Vec<Dim> {
    let dim = |d: &dimension::Value| match d {
        dimension::Value::DimValue(v) => Dim::Value(*v),
        dimension::Value::DimParam(p) => Dim::Param(p.clone()),
    };
    shape.dim.iter().map(|d| d.value.as_ref().map_or(Dim::Unknown, dim)).collect()
}

fn kind_and_shape(ty: Option<&TypeProto>) -> (TypeKind, Option<Vec<Dim>>) {
    use type_proto::Value as V;
    match ty.and_then(|t| t.value.as_ref()) {
        Some(V::TensorType(t)) => (TypeKind::Tensor { elem_type: t.elem_type() }, t.shape.as_ref().map(dims)),
        Some(V::SequenceType(_)) => (TypeKind::Sequence, None),
        Some(V::MapType(_)) => (TypeKind::Map, None),
        Some(V::SparseTensorType(_)) => (TypeKind::SparseTensor, None),
        Some(V::OptionalType(_)) => (TypeKind::Optional, None),
        Some(V::OpaqueType(_)) | None => (TypeKind::Unknown, None),
    }
}

fn summarize(model: &ModelProto) -> ModelSummary {
    let mut summary = ModelSummary {
        ir_version: model.ir_version(),
        opsets: model.opset_import.iter().map(|o| (o.domain().to_owned(), o.version())).collect(),
        ..ModelSummary::default()
    };
    let Some(graph) = &model.graph else { return summary };
    // Inputs that are also initializers (weights, in old IR versions) are not fed at run time.
    let dense = graph.initializer.iter().map(|t| t.name());
    let sparse = graph.sparse_initializer.iter().map(|s| s.values.as_ref().map_or("", |v| v.name()));
    let initializers: HashSet<&str> = dense.chain(sparse).collect();
    let push = |info: &ValueInfoProto, names: &mut Vec<(String, TypeKind)>, shapes: &mut Vec<Option<Vec<Dim>>>| {
        let (kind, shape) = kind_and_shape(info.r#type.as_ref());
        names.push((info.name().to_owned(), kind));
        shapes.push(shape);
    };
    for info in graph.input.iter().filter(|i| !initializers.contains(i.name())) {
        push(info, &mut summary.inputs, &mut summary.input_shapes);
    }
    for info in &graph.output {
        push(info, &mut summary.outputs, &mut summary.output_shapes);
    }
    summary
}

/// Decodes the interface of a serialized `ModelProto`.
pub fn decode_model_summary(buf: &[u8]) -> Result<ModelSummary, DecodeError> {
    Ok(summarize(&ModelProto::decode(buf)?))
}

/// Reads a model file and decodes its interface.
pub fn load_model_summary(path: impl AsRef<Path>) -> Result<ModelSummary, DecodeError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| DecodeError::io(path, &e))?;
    // From `Bytes`, so that the weights are shared with the file's buffer, not copied.
    Ok(summarize(&ModelProto::decode(Bytes::from(bytes))?))
}

#[cfg(test)]
mod tests {
    use onnxrt_onnx_proto::{GraphProto, OperatorSetIdProto, TensorProto};

    use super::*;

    fn value_info(name: &str) -> ValueInfoProto {
        let tensor = type_proto::Tensor { elem_type: Some(1), shape: None };
        let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
        ValueInfoProto { name: Some(name.into()), r#type: Some(ty), doc_string: None }
    }

    #[test]
    fn summary_skips_initializer_inputs() {
        let graph = GraphProto {
            input: vec![value_info("x"), value_info("w")],
            output: vec![value_info("y")],
            initializer: vec![TensorProto { name: Some("w".into()), ..Default::default() }],
            ..Default::default()
        };
        let model = ModelProto {
            ir_version: Some(7),
            opset_import: vec![OperatorSetIdProto { domain: None, version: Some(13) }],
            graph: Some(graph),
            ..Default::default()
        };
        let s = decode_model_summary(&model.encode_to_vec()).expect("decodes");
        assert_eq!(s.ir_version, 7);
        assert_eq!(s.opsets, vec![(String::new(), 13)]);
        assert_eq!(s.inputs, vec![("x".to_string(), TypeKind::Tensor { elem_type: 1 })]);
        assert_eq!(s.input_shapes, vec![None]);
        assert_eq!(s.outputs.len(), 1);
    }

    #[test]
    fn truncated_model_is_error() {
        let graph = GraphProto { name: Some("g".into()), ..Default::default() };
        let model = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
        assert!(decode_model_summary(&model[..model.len() - 1]).is_err());
    }
}
