//! A small ONNX protobuf writer, for the models no committed file holds (hostile ones, and models
//! using operators only a test defines). Field numbers are those of `onnx.proto`.

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint field.
pub fn int(number: u64, value: u64, out: &mut Vec<u8>) {
    varint(number << 3, out);
    varint(value, out);
}

/// A length-delimited field (bytes, string or message).
pub fn bytes(number: u64, payload: &[u8], out: &mut Vec<u8>) {
    varint((number << 3) | 2, out);
    varint(payload.len() as u64, out);
    out.extend_from_slice(payload);
}

/// A 32-bit field (a float).
pub fn fixed32(number: u64, bits: u32, out: &mut Vec<u8>) {
    varint((number << 3) | 5, out);
    out.extend_from_slice(&bits.to_le_bytes());
}

/// `ValueInfoProto` of a tensor with fixed dims.
pub fn tensor_info(name: &str, elem_type: u64, dims: &[u64]) -> Vec<u8> {
    let mut shape = Vec::new();
    for &d in dims {
        let mut dim = Vec::new();
        int(1, d, &mut dim);
        bytes(1, &dim, &mut shape);
    }
    let mut tensor = Vec::new();
    int(1, elem_type, &mut tensor);
    bytes(2, &shape, &mut tensor);
    let mut type_proto = Vec::new();
    bytes(1, &tensor, &mut type_proto);
    let mut info = Vec::new();
    bytes(1, name.as_bytes(), &mut info);
    bytes(2, &type_proto, &mut info);
    info
}

/// `NodeProto` of the default domain.
pub fn node(op: &str, inputs: &[&str], outputs: &[&str], attributes: &[Vec<u8>]) -> Vec<u8> {
    domain_node("", op, inputs, outputs, attributes)
}

/// `NodeProto` of operator `op` in `domain` (an empty input name leaves an optional input out).
pub fn domain_node(domain: &str, op: &str, inputs: &[&str], outputs: &[&str], attributes: &[Vec<u8>]) -> Vec<u8> {
    let mut node = Vec::new();
    for i in inputs {
        bytes(1, i.as_bytes(), &mut node);
    }
    for o in outputs {
        bytes(2, o.as_bytes(), &mut node);
    }
    bytes(4, op.as_bytes(), &mut node);
    for a in attributes {
        bytes(5, a, &mut node);
    }
    if !domain.is_empty() {
        bytes(7, domain.as_bytes(), &mut node);
    }
    node
}

fn attribute(name: &str, kind: u64, fields: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut attribute = Vec::new();
    bytes(1, name.as_bytes(), &mut attribute);
    fields(&mut attribute);
    int(20, kind, &mut attribute);
    attribute
}

/// `AttributeProto` of type FLOAT.
pub fn float_attribute(name: &str, value: f32) -> Vec<u8> {
    attribute(name, 1, |a| fixed32(2, value.to_bits(), a))
}

/// `AttributeProto` of type INT.
pub fn int_attribute(name: &str, value: i64) -> Vec<u8> {
    attribute(name, 2, |a| int(3, value as u64, a))
}

/// `AttributeProto` of type STRING.
pub fn string_attribute(name: &str, value: &str) -> Vec<u8> {
    attribute(name, 3, |a| bytes(4, value.as_bytes(), a))
}

/// `AttributeProto` of type FLOATS.
pub fn floats_attribute(name: &str, values: &[f32]) -> Vec<u8> {
    attribute(name, 6, |a| values.iter().for_each(|v| fixed32(7, v.to_bits(), a)))
}

/// `AttributeProto` of type INTS.
pub fn ints_attribute(name: &str, values: &[i64]) -> Vec<u8> {
    attribute(name, 7, |a| values.iter().for_each(|&v| int(8, v as u64, a)))
}

/// `AttributeProto` `value` holding a tensor: `fields` are the TensorProto's data fields.
pub fn tensor_attribute(elem_type: u64, dims: &[u64], fields: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut tensor = Vec::new();
    for &d in dims {
        int(1, d, &mut tensor);
    }
    int(2, elem_type, &mut tensor);
    fields(&mut tensor);
    attribute("value", 4, |a| bytes(5, &tensor, a))
}

/// `ModelProto` with one graph, importing the default domain at `opset`.
pub fn model(ir_version: u64, opset: u64, nodes: &[Vec<u8>], inputs: &[Vec<u8>], outputs: &[Vec<u8>]) -> Vec<u8> {
    model_with_opsets(ir_version, &[("", opset)], nodes, inputs, outputs)
}

/// `ModelProto` with one graph, importing each `(domain, version)`.
pub fn model_with_opsets(
    ir_version: u64,
    opsets: &[(&str, u64)],
    nodes: &[Vec<u8>],
    inputs: &[Vec<u8>],
    outputs: &[Vec<u8>],
) -> Vec<u8> {
    let mut graph = Vec::new();
    for n in nodes {
        bytes(1, n, &mut graph);
    }
    bytes(2, b"handmade", &mut graph);
    for i in inputs {
        bytes(11, i, &mut graph);
    }
    for o in outputs {
        bytes(12, o, &mut graph);
    }
    let mut m = Vec::new();
    int(1, ir_version, &mut m);
    bytes(2, b"onnxrt-tests", &mut m);
    bytes(7, &graph, &mut m);
    for (domain, version) in opsets {
        let mut opset_id = Vec::new();
        bytes(1, domain.as_bytes(), &mut opset_id);
        int(2, *version, &mut opset_id);
        bytes(8, &opset_id, &mut m);
    }
    m
}

/// ONNX `TensorProto.DataType` codes used here.
pub const FLOAT: u64 = 1;
/// `int64`.
pub const INT64: u64 = 7;
/// `string`.
pub const STRING: u64 = 8;
/// `bool`.
pub const BOOL: u64 = 9;

/// A model with no inputs whose output `y` is a Constant holding `fields`.
pub fn constant(elem_type: u64, dims: &[u64], fields: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let value = tensor_attribute(elem_type, dims, fields);
    model(8, 17, &[node("Constant", &[], &["y"], &[value])], &[], &[tensor_info("y", elem_type, dims)])
}

/// `y = op(x)` on f32 [2].
pub fn unary(op: &str, ir_version: u64, opset: u64) -> Vec<u8> {
    model(
        ir_version,
        opset,
        &[node(op, &["x"], &["y"], &[])],
        &[tensor_info("x", FLOAT, &[2])],
        &[tensor_info("y", FLOAT, &[2])],
    )
}
