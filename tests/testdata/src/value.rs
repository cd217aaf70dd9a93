//! `SequenceProto`, `MapProto` and `OptionalProto` decoding.

use std::path::Path;

use half::{bf16, f16};
use onnxrt_onnx_proto::{MapProto, Message, OptionalProto, SequenceProto};

use crate::tensor::{decode_tensor, elem_type, tensor_from_proto, Tensor, TensorData};
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

/// Checks that a message's declared `elem_type` agrees with the field its values used.
fn check_kind(declared: i32, seen: Option<i32>) -> Result<(), DecodeError> {
    match seen {
        Some(seen) if declared != KIND_UNDEFINED && declared != seen => {
            Err(DecodeError::Malformed(format!("elem_type {declared} but values of kind {seen}")))
        }
        _ => Ok(()),
    }
}

/// The one kind among `present` (kind, whether its field holds values), if any.
fn only_kind(present: [(i32, bool); 5], why: &str) -> Result<Option<i32>, DecodeError> {
    let mut kinds = present.iter().filter(|(_, here)| *here).map(|(kind, _)| *kind);
    let first = kinds.next();
    if kinds.next().is_some() {
        return Err(DecodeError::Malformed(why.into()));
    }
    Ok(first)
}

fn sequence_values(seq: &SequenceProto, depth: usize) -> Result<Vec<TestValue>, DecodeError> {
    check_depth(depth)?;
    let kind = only_kind(
        [
            (KIND_TENSOR, !seq.tensor_values.is_empty()),
            (KIND_SPARSE_TENSOR, !seq.sparse_tensor_values.is_empty()),
            (KIND_SEQUENCE, !seq.sequence_values.is_empty()),
            (KIND_MAP, !seq.map_values.is_empty()),
            (KIND_OPTIONAL, !seq.optional_values.is_empty()),
        ],
        "sequence mixes values of different kinds",
    )?;
    check_kind(seq.elem_type(), kind)?;
    if kind == Some(KIND_SPARSE_TENSOR) {
        return Err(DecodeError::UnsupportedValue("sparse tensor"));
    }
    let tensors = seq.tensor_values.iter().map(|t| Ok(TestValue::Tensor(tensor_from_proto(t)?)));
    let sequences = seq.sequence_values.iter().map(|s| Ok(TestValue::Sequence(sequence_values(s, depth + 1)?)));
    let maps = seq.map_values.iter().map(|m| Ok(TestValue::Map(map_value(m, depth + 1)?)));
    let optionals = seq.optional_values.iter().map(|o| Ok(TestValue::Optional(optional_value(o, depth + 1)?)));
    tensors.chain(sequences).chain(maps).chain(optionals).collect()
}

fn optional_value(opt: &OptionalProto, depth: usize) -> Result<Option<Box<TestValue>>, DecodeError> {
    check_depth(depth)?;
    let kind = only_kind(
        [
            (KIND_TENSOR, opt.tensor_value.is_some()),
            (KIND_SPARSE_TENSOR, opt.sparse_tensor_value.is_some()),
            (KIND_SEQUENCE, opt.sequence_value.is_some()),
            (KIND_MAP, opt.map_value.is_some()),
            (KIND_OPTIONAL, opt.optional_value.is_some()),
        ],
        "optional holds more than one value",
    )?;
    check_kind(opt.elem_type(), kind)?;
    let value = if let Some(t) = &opt.tensor_value {
        TestValue::Tensor(tensor_from_proto(t)?)
    } else if let Some(s) = &opt.sequence_value {
        TestValue::Sequence(sequence_values(s, depth + 1)?)
    } else if let Some(m) = &opt.map_value {
        TestValue::Map(map_value(m, depth + 1)?)
    } else if let Some(o) = &opt.optional_value {
        TestValue::Optional(optional_value(o, depth + 1)?)
    } else if opt.sparse_tensor_value.is_some() {
        return Err(DecodeError::UnsupportedValue("sparse tensor"));
    } else {
        return Ok(None);
    };
    Ok(Some(Box::new(value)))
}

fn map_value(map: &MapProto, depth: usize) -> Result<MapValue, DecodeError> {
    check_depth(depth)?;
    let key_type = map.key_type();
    let values = map.values.as_ref().map(|v| sequence_values(v, depth + 1)).transpose()?.unwrap_or_default();
    let keys = match key_type {
        elem_type::STRING => MapKeys::String(map.string_keys.iter().map(|k| k.to_vec()).collect()),
        elem_type::INT8
        | elem_type::INT16
        | elem_type::INT32
        | elem_type::INT64
        | elem_type::UINT8
        | elem_type::UINT16
        | elem_type::UINT32
        | elem_type::UINT64 => MapKeys::Int(map.keys.clone()),
        other => return Err(DecodeError::Malformed(format!("invalid map key_type {other}"))),
    };
    if keys.len() != values.len() {
        return Err(DecodeError::Malformed(format!("map has {} keys but {} values", keys.len(), values.len())));
    }
    Ok(MapValue { key_type, keys, values })
}

/// Decodes a serialized `SequenceProto` into its elements.
pub fn decode_sequence(buf: &[u8]) -> Result<Vec<TestValue>, DecodeError> {
    sequence_values(&SequenceProto::decode(buf)?, 0)
}

/// Decodes a serialized `OptionalProto`; `Ok(None)` when it holds no value.
pub fn decode_optional(buf: &[u8]) -> Result<Option<Box<TestValue>>, DecodeError> {
    optional_value(&OptionalProto::decode(buf)?, 0)
}

/// Decodes a serialized `MapProto`.
pub fn decode_map(buf: &[u8]) -> Result<MapValue, DecodeError> {
    map_value(&MapProto::decode(buf)?, 0)
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
    use onnxrt_onnx_proto::{SparseTensorProto, TensorProto};

    use super::*;

    fn tensor(v: f32) -> TensorProto {
        TensorProto {
            data_type: Some(elem_type::FLOAT),
            raw_data: Some(v.to_le_bytes().to_vec().into()),
            ..Default::default()
        }
    }

    fn sequence(kind: i32, tensors: Vec<TensorProto>) -> SequenceProto {
        SequenceProto { elem_type: Some(kind), tensor_values: tensors, ..Default::default() }
    }

    #[test]
    fn sequence_of_tensors() {
        let seq = SequenceProto { name: Some("s".into()), ..sequence(KIND_TENSOR, vec![tensor(1.0), tensor(2.0)]) };
        let values = decode_sequence(&seq.encode_to_vec()).expect("decodes");
        assert_eq!(values.len(), 2);
        let t = values[1].as_tensor().expect("tensor");
        assert_eq!(t.data, TensorData::F32(vec![2.0]));
    }

    #[test]
    fn empty_sequence_and_empty_optional() {
        assert_eq!(decode_sequence(&sequence(KIND_TENSOR, vec![]).encode_to_vec()), Ok(vec![]));
        let opt = OptionalProto { elem_type: Some(KIND_TENSOR), ..Default::default() };
        assert_eq!(decode_optional(&opt.encode_to_vec()), Ok(None));
    }

    #[test]
    fn optional_of_sequence() {
        let opt = OptionalProto {
            elem_type: Some(KIND_SEQUENCE),
            sequence_value: Some(sequence(KIND_TENSOR, vec![tensor(3.0)])),
            ..Default::default()
        };
        let v = decode_optional(&opt.encode_to_vec()).expect("decodes").expect("present");
        assert!(matches!(*v, TestValue::Sequence(ref s) if s.len() == 1));
    }

    #[test]
    fn kind_mismatch_and_mixed_kinds_are_errors() {
        assert!(decode_sequence(&sequence(KIND_MAP, vec![tensor(1.0)]).encode_to_vec()).is_err());
        let mixed =
            SequenceProto { sequence_values: vec![sequence(KIND_TENSOR, vec![])], ..sequence(0, vec![tensor(1.0)]) };
        assert!(decode_sequence(&mixed.encode_to_vec()).is_err());
    }

    #[test]
    fn map_with_string_keys() {
        let mut map = MapProto {
            key_type: Some(elem_type::STRING),
            string_keys: vec![b"cat".to_vec().into(), b"dog".to_vec().into()],
            values: Some(sequence(KIND_TENSOR, vec![tensor(0.25), tensor(0.75)])),
            ..Default::default()
        };
        let m = decode_map(&map.encode_to_vec()).expect("decodes");
        assert_eq!(m.keys, MapKeys::String(vec![b"cat".to_vec(), b"dog".to_vec()]));
        assert_eq!(m.values.len(), 2);

        // One key too many.
        map.string_keys.push(b"fish".to_vec().into());
        assert!(decode_map(&map.encode_to_vec()).is_err());
    }

    #[test]
    fn sparse_is_unsupported() {
        let seq = SequenceProto { sparse_tensor_values: vec![SparseTensorProto::default()], ..Default::default() };
        let err = decode_sequence(&seq.encode_to_vec()).expect_err("sparse");
        assert!(err.is_unsupported());
    }

    #[test]
    fn deep_nesting_is_error_not_overflow() {
        let mut msg = sequence(0, vec![tensor(1.0)]);
        for _ in 0..200 {
            msg = SequenceProto { sequence_values: vec![msg], ..Default::default() };
        }
        assert!(matches!(decode_sequence(&msg.encode_to_vec()), Err(DecodeError::Malformed(_))));
    }

    #[test]
    fn truncated_sequence_is_error() {
        let seq = sequence(0, vec![tensor(1.0)]).encode_to_vec();
        for cut in 0..seq.len() {
            // Every proper prefix either fails or (when cut at a field boundary) decodes fewer
            // elements; none may panic.
            let _ = decode_sequence(&seq[..cut]);
        }
        assert!(decode_sequence(&seq[..seq.len() - 1]).is_err());
    }
}
