//! `SequenceProto`, `MapProto` and `OptionalProto` decoding.

use std::path::Path;

use half::{bf16, f16};

use crate::tensor::{decode_tensor, elem_type, Tensor, TensorData};
use crate::wire;
use crate::{DecodeError, TypeKind};

/// Deeper nesting than any real test data; guards the recursion against hostile input.
const MAX_DEPTH: usize = 64;

// `SequenceProto.DataType` / `OptionalProto.DataType` codes (the two enums agree).
const KIND_UNDEFINED: i32 = 0;
const KIND_TENSOR: i32 = 1;
const KIND_SPARSE_TENSOR: i32 = 2;
const KIND_SEQUENCE: i32 = 3;
const KIND_MAP: i32 = 4;
const KIND_OPTIONAL: i32 = 5;

/// A decoded backend-test value: whatever an `input_N.pb` / `output_N.pb` holds.
#[derive(Debug, Clone, PartialEq)]
pub enum TestValue {
    /// A dense tensor.
    Tensor(Tensor),
    /// A sequence of values (all of one kind).
    Sequence(Vec<TestValue>),
    /// A map.
    Map(MapValue),
    /// An optional value; `None` when it holds nothing.
    Optional(Option<Box<TestValue>>),
}

impl TestValue {
    /// The tensor, when this is one.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            TestValue::Tensor(t) => Some(t),
            _ => None,
        }
    }
}

/// A decoded `MapProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct MapValue {
    /// The ONNX element type code of the keys.
    pub key_type: i32,
    /// The keys, in order.
    pub keys: MapKeys,
    /// The values, parallel to the keys.
    pub values: Vec<TestValue>,
}

/// Map keys: ONNX keeps integer keys of every width in one `int64` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapKeys {
    /// Integer keys (any integer `key_type`).
    Int(Vec<i64>),
    /// String keys.
    String(Vec<Vec<u8>>),
}

impl MapKeys {
    fn len(&self) -> usize {
        match self {
            MapKeys::Int(k) => k.len(),
            MapKeys::String(k) => k.len(),
        }
    }
}

fn check_depth(depth: usize) -> Result<(), DecodeError> {
    if depth > MAX_DEPTH {
        return Err(DecodeError::Malformed("values nested too deeply".into()));
    }
    Ok(())
}

/// Decodes one element whose kind is given by the field it arrived in.
fn decode_element(kind: i32, bytes: &[u8], depth: usize) -> Result<TestValue, DecodeError> {
    match kind {
        KIND_TENSOR => Ok(TestValue::Tensor(decode_tensor(bytes)?)),
        KIND_SPARSE_TENSOR => Err(DecodeError::UnsupportedValue("sparse tensor")),
        KIND_SEQUENCE => Ok(TestValue::Sequence(sequence_values(bytes, depth + 1)?)),
        KIND_MAP => Ok(TestValue::Map(map_value(bytes, depth + 1)?)),
        KIND_OPTIONAL => Ok(TestValue::Optional(optional_value(bytes, depth + 1)?)),
        _ => Err(DecodeError::Malformed(format!("unknown value kind {kind}"))),
    }
}

/// Checks that a message's declared `elem_type` agrees with the field its values used.
fn check_kind(declared: i32, seen: Option<i32>) -> Result<(), DecodeError> {
    match seen {
        Some(seen) if declared != KIND_UNDEFINED && declared != seen => {
            Err(DecodeError::Malformed(format!("elem_type {declared} but values of kind {seen}")))
        }
        _ => Ok(()),
    }
}

fn sequence_values(buf: &[u8], depth: usize) -> Result<Vec<TestValue>, DecodeError> {
    check_depth(depth)?;
    let mut declared = KIND_UNDEFINED;
    let mut seen: Option<i32> = None;
    let mut values = Vec::new();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        // Fields 3..=7 hold tensor, sparse, sequence, map and optional values.
        let kind = match number {
            2 => {
                declared = wire::expect_i32("elem_type", value)?;
                continue;
            }
            3..=7 => number as i32 - 2,
            _ => continue,
        };
        if seen.is_some_and(|s| s != kind) {
            return Err(DecodeError::Malformed("sequence mixes values of different kinds".into()));
        }
        seen = Some(kind);
        let bytes = wire::expect_bytes("sequence value", value)?;
        values.push(decode_element(kind, bytes, depth)?);
    }
    check_kind(declared, seen)?;
    Ok(values)
}

fn optional_value(buf: &[u8], depth: usize) -> Result<Option<Box<TestValue>>, DecodeError> {
    check_depth(depth)?;
    let mut declared = KIND_UNDEFINED;
    let mut found: Option<(i32, &[u8])> = None;
    for field in wire::fields(buf) {
        let (number, value) = field?;
        // Same layout as SequenceProto: fields 3..=7 by kind.
        let kind = match number {
            2 => {
                declared = wire::expect_i32("elem_type", value)?;
                continue;
            }
            3..=7 => number as i32 - 2,
            _ => continue,
        };
        if found.is_some_and(|(k, _)| k != kind) {
            return Err(DecodeError::Malformed("optional holds more than one value".into()));
        }
        // A repeated singular message field merges on the wire; test data never does this,
        // so keeping the last occurrence is enough.
        found = Some((kind, wire::expect_bytes("optional value", value)?));
    }
    check_kind(declared, found.map(|(k, _)| k))?;
    match found {
        None => Ok(None),
        Some((kind, bytes)) => Ok(Some(Box::new(decode_element(kind, bytes, depth)?))),
    }
}

fn map_value(buf: &[u8], depth: usize) -> Result<MapValue, DecodeError> {
    check_depth(depth)?;
    let mut key_type = elem_type::UNDEFINED;
    let mut int_keys = Vec::new();
    let mut string_keys = Vec::new();
    let mut values = Vec::new();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            2 => key_type = wire::expect_i32("key_type", value)?,
            3 => wire::push_varints("keys", value, &mut int_keys)?,
            4 => string_keys.push(wire::expect_bytes("string_keys", value)?.to_vec()),
            5 => values = sequence_values(wire::expect_bytes("values", value)?, depth + 1)?,
            _ => {}
        }
    }
    let keys = match key_type {
        elem_type::STRING => MapKeys::String(string_keys),
        elem_type::INT8
        | elem_type::INT16
        | elem_type::INT32
        | elem_type::INT64
        | elem_type::UINT8
        | elem_type::UINT16
        | elem_type::UINT32
        | elem_type::UINT64 => MapKeys::Int(int_keys.into_iter().map(|k| k as i64).collect()),
        other => return Err(DecodeError::Malformed(format!("invalid map key_type {other}"))),
    };
    if keys.len() != values.len() {
        return Err(DecodeError::Malformed(format!("map has {} keys but {} values", keys.len(), values.len())));
    }
    Ok(MapValue { key_type, keys, values })
}

/// Decodes a serialized `SequenceProto` into its elements.
pub fn decode_sequence(buf: &[u8]) -> Result<Vec<TestValue>, DecodeError> {
    sequence_values(buf, 0)
}

/// Decodes a serialized `OptionalProto`; `Ok(None)` when it holds no value.
pub fn decode_optional(buf: &[u8]) -> Result<Option<Box<TestValue>>, DecodeError> {
    optional_value(buf, 0)
}

/// Decodes a serialized `MapProto`.
pub fn decode_map(buf: &[u8]) -> Result<MapValue, DecodeError> {
    map_value(buf, 0)
}

/// Reinterprets `uint16` data as the 16-bit float type the model declares.
///
/// The onnx package's backend data stores bfloat16 tensors with `data_type` UINT16 (the
/// bit patterns), while the model's input/output says BFLOAT16.
fn apply_declared_type(mut tensor: Tensor, declared: i32) -> Tensor {
    if let TensorData::U16(bits) = &tensor.data {
        match declared {
            elem_type::BFLOAT16 => {
                tensor.data = TensorData::BF16(bits.iter().map(|&b| bf16::from_bits(b)).collect());
            }
            elem_type::FLOAT16 => {
                tensor.data = TensorData::F16(bits.iter().map(|&b| f16::from_bits(b)).collect());
            }
            _ => {}
        }
    }
    tensor
}

/// Decodes bytes holding the message that a graph input/output of `kind` is stored as.
///
/// [`TypeKind::Unknown`] is read as a tensor, the common case. With a `Tensor` hint of
/// FLOAT16 or BFLOAT16, data stored as UINT16 bit patterns comes back as that float type.
pub fn decode_value(buf: &[u8], kind: TypeKind) -> Result<TestValue, DecodeError> {
    match kind {
        TypeKind::Tensor { elem_type } => Ok(TestValue::Tensor(apply_declared_type(decode_tensor(buf)?, elem_type))),
        TypeKind::Unknown => Ok(TestValue::Tensor(decode_tensor(buf)?)),
        TypeKind::Sequence => Ok(TestValue::Sequence(decode_sequence(buf)?)),
        TypeKind::Map => Ok(TestValue::Map(decode_map(buf)?)),
        TypeKind::Optional => Ok(TestValue::Optional(decode_optional(buf)?)),
        TypeKind::SparseTensor => Err(DecodeError::UnsupportedValue("sparse tensor")),
    }
}

/// Reads and decodes one `input_N.pb` / `output_N.pb` file.
///
/// `kind_hint` is the kind of the matching graph input/output (see [`crate::ModelSummary`]):
/// the file is a `TensorProto`, `SequenceProto`, `MapProto` or `OptionalProto` accordingly.
pub fn load_value(path: impl AsRef<Path>, kind_hint: TypeKind) -> Result<TestValue, DecodeError> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| DecodeError::io(path, &e))?;
    decode_value(&bytes, kind_hint)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::tests::{len_field, varint_field};

    fn tensor_msg(v: f32) -> Vec<u8> {
        let mut t = Vec::new();
        varint_field(2, elem_type::FLOAT as u64, &mut t);
        len_field(9, &v.to_le_bytes(), &mut t);
        t
    }

    #[test]
    fn sequence_of_tensors() {
        let mut seq = Vec::new();
        len_field(1, b"s", &mut seq);
        varint_field(2, KIND_TENSOR as u64, &mut seq);
        len_field(3, &tensor_msg(1.0), &mut seq);
        len_field(3, &tensor_msg(2.0), &mut seq);
        let values = decode_sequence(&seq).expect("decodes");
        assert_eq!(values.len(), 2);
        let t = values[1].as_tensor().expect("tensor");
        assert_eq!(t.data, TensorData::F32(vec![2.0]));
    }

    #[test]
    fn empty_sequence_and_empty_optional() {
        let mut seq = Vec::new();
        varint_field(2, KIND_TENSOR as u64, &mut seq);
        assert_eq!(decode_sequence(&seq), Ok(vec![]));
        let mut opt = Vec::new();
        varint_field(2, KIND_TENSOR as u64, &mut opt);
        assert_eq!(decode_optional(&opt), Ok(None));
    }

    #[test]
    fn optional_of_sequence() {
        let mut seq = Vec::new();
        varint_field(2, KIND_TENSOR as u64, &mut seq);
        len_field(3, &tensor_msg(3.0), &mut seq);
        let mut opt = Vec::new();
        varint_field(2, KIND_SEQUENCE as u64, &mut opt);
        len_field(5, &seq, &mut opt);
        let v = decode_optional(&opt).expect("decodes").expect("present");
        assert!(matches!(*v, TestValue::Sequence(ref s) if s.len() == 1));
    }

    #[test]
    fn kind_mismatch_is_error() {
        let mut seq = Vec::new();
        varint_field(2, KIND_MAP as u64, &mut seq);
        len_field(3, &tensor_msg(1.0), &mut seq);
        assert!(decode_sequence(&seq).is_err());
    }

    #[test]
    fn map_with_string_keys() {
        let mut values = Vec::new();
        varint_field(2, KIND_TENSOR as u64, &mut values);
        len_field(3, &tensor_msg(0.25), &mut values);
        len_field(3, &tensor_msg(0.75), &mut values);
        let mut map = Vec::new();
        varint_field(2, elem_type::STRING as u64, &mut map);
        len_field(4, b"cat", &mut map);
        len_field(4, b"dog", &mut map);
        len_field(5, &values, &mut map);
        let m = decode_map(&map).expect("decodes");
        assert_eq!(m.keys, MapKeys::String(vec![b"cat".to_vec(), b"dog".to_vec()]));
        assert_eq!(m.values.len(), 2);

        // One key too many.
        len_field(4, b"fish", &mut map);
        assert!(decode_map(&map).is_err());
    }

    #[test]
    fn sparse_is_unsupported() {
        let mut seq = Vec::new();
        len_field(4, b"", &mut seq);
        let err = decode_sequence(&seq).expect_err("sparse");
        assert!(err.is_unsupported());
    }

    #[test]
    fn deep_nesting_is_error_not_overflow() {
        let mut msg = tensor_msg(1.0);
        let mut wrapped = Vec::new();
        len_field(3, &msg, &mut wrapped);
        msg = wrapped;
        for _ in 0..200 {
            let mut outer = Vec::new();
            len_field(5, &msg, &mut outer);
            msg = outer;
        }
        assert!(matches!(decode_sequence(&msg), Err(DecodeError::Malformed(_))));
    }

    #[test]
    fn truncated_sequence_is_error() {
        let mut seq = Vec::new();
        len_field(3, &tensor_msg(1.0), &mut seq);
        for cut in 0..seq.len() {
            // Every proper prefix either fails or (when cut at a field boundary) decodes fewer
            // elements; none may panic.
            let _ = decode_sequence(&seq[..cut]);
        }
        assert!(decode_sequence(&seq[..seq.len() - 1]).is_err());
    }
}
