//! Models built in code for the tests that need one no committed file holds (hostile inputs,
//! custom-op graphs), from the ONNX messages generated from `onnx.proto` (`onnxrt-onnx-proto`).

use onnxrt_onnx_proto::attribute_proto::AttributeType;
use onnxrt_onnx_proto::tensor_proto::DataType;
use onnxrt_onnx_proto::tensor_shape_proto::{dimension, Dimension};
use onnxrt_onnx_proto::{
    type_proto, AttributeProto, GraphProto, Message, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

/// ONNX `TensorProto.DataType` codes used by the tests.
pub const FLOAT: i32 = DataType::Float as i32;
/// `int64`.
pub const INT64: i32 = DataType::Int64 as i32;
/// `string`.
pub const STRING: i32 = DataType::String as i32;
/// `bool`.
pub const BOOL: i32 = DataType::Bool as i32;
/// `int32`.
pub const INT32: i32 = DataType::Int32 as i32;
/// `uint8`.
pub const UINT8: i32 = DataType::Uint8 as i32;

/// `ValueInfoProto` of a tensor with fixed dims.
pub fn tensor_info(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = |&d: &i64| Dimension { value: Some(dimension::Value::DimValue(d)), denotation: None };
    let shape = TensorShapeProto { dim: dims.iter().map(dim).collect() };
    let tensor = type_proto::Tensor { elem_type: Some(elem_type), shape: Some(shape) };
    let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
    ValueInfoProto { name: Some(name.into()), r#type: Some(ty), doc_string: None }
}

/// `ValueInfoProto` of a tensor whose first axis is free (`n`, a batch) and the rest fixed.
pub fn batched_tensor_info(name: &str, elem_type: i32, sample: &[i64]) -> ValueInfoProto {
    let mut info = tensor_info(name, elem_type, &[&[0], sample].concat());
    if let Some(type_proto::Value::TensorType(tensor)) = info.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        if let Some(first) = tensor.shape.as_mut().and_then(|s| s.dim.first_mut()) {
            first.value = Some(dimension::Value::DimParam("n".into()));
        }
    }
    info
}

/// `ValueInfoProto` of a tensor whose axes are all free, named `axes` (e.g. `["n", "w"]`).
pub fn free_tensor_info(name: &str, elem_type: i32, axes: &[&str]) -> ValueInfoProto {
    let dim = |&axis: &&str| Dimension { value: Some(dimension::Value::DimParam(axis.into())), denotation: None };
    let shape = TensorShapeProto { dim: axes.iter().map(dim).collect() };
    let tensor = type_proto::Tensor { elem_type: Some(elem_type), shape: Some(shape) };
    let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
    ValueInfoProto { name: Some(name.into()), r#type: Some(ty), doc_string: None }
}

/// `ValueInfoProto` of a tensor fixed where `dims` gives a size and free where it gives -1 (that
/// axis named `d` and its index), e.g. `[-1, 3, -1]` for `[d0, 3, d2]`.
pub fn partly_free_tensor_info(name: &str, elem_type: i32, dims: &[i64]) -> ValueInfoProto {
    let mut info = tensor_info(name, elem_type, dims);
    if let Some(type_proto::Value::TensorType(tensor)) = info.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        for (axis, dim) in tensor.shape.iter_mut().flat_map(|s| s.dim.iter_mut()).enumerate() {
            if dims[axis] < 0 {
                dim.value = Some(dimension::Value::DimParam(format!("d{axis}")));
            }
        }
    }
    info
}

/// `NodeProto` of the default domain.
pub fn node(op: &str, inputs: &[&str], outputs: &[&str], attributes: &[AttributeProto]) -> NodeProto {
    domain_node("", op, inputs, outputs, attributes)
}

/// `NodeProto` of operator `op` in `domain`.
pub fn domain_node(
    domain: &str,
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attributes: &[AttributeProto],
) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|&i| i.into()).collect(),
        output: outputs.iter().map(|&o| o.into()).collect(),
        op_type: Some(op.into()),
        domain: (!domain.is_empty()).then(|| domain.into()),
        attribute: attributes.to_vec(),
        ..Default::default()
    }
}

/// An attribute of `kind`, filled in by `set`.
fn attribute(name: &str, kind: AttributeType, set: impl FnOnce(&mut AttributeProto)) -> AttributeProto {
    let mut a = AttributeProto { name: Some(name.into()), r#type: Some(kind as i32), ..Default::default() };
    set(&mut a);
    a
}

/// `AttributeProto` of type FLOAT.
pub fn float_attribute(name: &str, value: f32) -> AttributeProto {
    attribute(name, AttributeType::Float, |a| a.f = Some(value))
}

/// `AttributeProto` of type INT.
pub fn int_attribute(name: &str, value: i64) -> AttributeProto {
    attribute(name, AttributeType::Int, |a| a.i = Some(value))
}

/// `AttributeProto` of type STRING.
pub fn string_attribute(name: &str, value: &str) -> AttributeProto {
    attribute(name, AttributeType::String, |a| a.s = Some(value.as_bytes().to_vec().into()))
}

/// `AttributeProto` of type FLOATS.
pub fn floats_attribute(name: &str, values: &[f32]) -> AttributeProto {
    attribute(name, AttributeType::Floats, |a| a.floats = values.to_vec())
}

/// `AttributeProto` of type INTS.
pub fn ints_attribute(name: &str, values: &[i64]) -> AttributeProto {
    attribute(name, AttributeType::Ints, |a| a.ints = values.to_vec())
}

/// A `TensorProto` header; the caller sets the data fields.
pub fn tensor(elem_type: i32, dims: &[i64]) -> TensorProto {
    TensorProto { dims: dims.to_vec(), data_type: Some(elem_type), ..Default::default() }
}

/// `ModelProto` bytes with one graph, importing the default domain at `opset`.
pub fn model(
    ir_version: i64,
    opset: i64,
    nodes: &[NodeProto],
    inputs: &[ValueInfoProto],
    outputs: &[ValueInfoProto],
) -> Vec<u8> {
    model_with_opsets(ir_version, &[("", opset)], nodes, inputs, outputs)
}

/// `ModelProto` bytes with one graph, importing each `(domain, version)`.
pub fn model_with_opsets(
    ir_version: i64,
    opsets: &[(&str, i64)],
    nodes: &[NodeProto],
    inputs: &[ValueInfoProto],
    outputs: &[ValueInfoProto],
) -> Vec<u8> {
    let graph = GraphProto {
        node: nodes.to_vec(),
        name: Some("handmade".into()),
        input: inputs.to_vec(),
        output: outputs.to_vec(),
        ..Default::default()
    };
    let opset =
        |&(domain, version): &(&str, i64)| OperatorSetIdProto { domain: Some(domain.into()), version: Some(version) };
    ModelProto {
        ir_version: Some(ir_version),
        producer_name: Some("onnxrt-tests".into()),
        graph: Some(graph),
        opset_import: opsets.iter().map(opset).collect(),
        ..Default::default()
    }
    .encode_to_vec()
}

/// A model with no inputs whose output `y` is a Constant holding `value`.
pub fn constant(value: TensorProto) -> Vec<u8> {
    let output = tensor_info("y", value.data_type(), &value.dims);
    let attribute = AttributeProto {
        name: Some("value".into()),
        r#type: Some(AttributeType::Tensor as i32),
        t: Some(value),
        ..Default::default()
    };
    model(8, 17, &[node("Constant", &[], &["y"], &[attribute])], &[], &[output])
}

/// `y = op(x)` on f32 [2].
pub fn unary(op: &str, ir_version: i64, opset: i64) -> Vec<u8> {
    let (x, y) = (tensor_info("x", FLOAT, &[2]), tensor_info("y", FLOAT, &[2]));
    model(ir_version, opset, &[node(op, &["x"], &["y"], &[])], &[x], &[y])
}

/// `y = ReduceSum(x)` over the batch axis on f32 `x` [n, 4], `y` declared [n, 4] but holding one
/// row: the axes are computed (`Shape(x)[:1] - Shape(x)[:1]`, [0]), so ORT cannot tell, and the
/// model looks batchable by its declared shapes although no batch of it can be split.
pub fn batch_sum() -> Vec<u8> {
    let (x, y) = (batched_tensor_info("x", FLOAT, &[4]), batched_tensor_info("y", FLOAT, &[4]));
    let nodes = [
        node("Shape", &["x"], &["batch"], &[int_attribute("end", 1)]),
        node("Sub", &["batch", "batch"], &["axes"], &[]),
        node("ReduceSum", &["x", "axes"], &["y"], &[]),
    ];
    model(8, 15, &nodes, &[x], &[y])
}

/// `y = x·xᵀ` on f32 `x` [n, 4]: `y` is [n, n], declared [n, m] (`m` free). Its first axis is
/// the batch's size, so it looks split along the batch, but a row holds one entry per sample of
/// the batch: its sample shape changes with the batch size, and batching mixes the callers.
pub fn batch_outer() -> Vec<u8> {
    let (x, y) = (batched_tensor_info("x", FLOAT, &[4]), free_tensor_info("y", FLOAT, &["n", "m"]));
    let nodes = [
        node("Transpose", &["x"], &["xt"], &[ints_attribute("perm", &[1, 0])]),
        node("MatMul", &["x", "xt"], &["y"], &[]),
    ];
    model(8, 15, &nodes, &[x], &[y])
}

/// [`batch_outer`] with a free sample axis: `x` [n, k], `y` = x·xᵀ [n, n]. A server warms such a
/// model up only at the shape config.json gives, not at every batch size.
pub fn batch_outer_free() -> Vec<u8> {
    let (x, y) = (free_tensor_info("x", FLOAT, &["n", "k"]), free_tensor_info("y", FLOAT, &["n", "m"]));
    let nodes = [
        node("Transpose", &["x"], &["xt"], &[ints_attribute("perm", &[1, 0])]),
        node("MatMul", &["x", "xt"], &["y"], &[]),
    ];
    model(8, 15, &nodes, &[x], &[y])
}

/// `y = Reshape(x, [-1])` on f32 `x` [n, 4]: `y` is [4n], declared [m] (`m` free), so its sample
/// shape looks fixed (rank 0) while no batch of it can be split.
pub fn batch_flatten() -> Vec<u8> {
    let (x, y) = (batched_tensor_info("x", FLOAT, &[4]), free_tensor_info("y", FLOAT, &["m"]));
    let nodes = [
        node("Constant", &[], &["shape"], &[ints_attribute("value_ints", &[-1])]),
        node("Reshape", &["x", "shape"], &["y"], &[]),
    ];
    model(8, 15, &nodes, &[x], &[y])
}
