//! `TensorProto` decoding.

use half::{bf16, f16};
use onnxrt_onnx_proto::tensor_proto::DataLocation;
use onnxrt_onnx_proto::{Message, TensorProto};

use crate::DecodeError;

/// ONNX `TensorProto.DataType` codes (those of the generated `DataType` enum, as `i32`).
pub mod elem_type {
    use onnxrt_onnx_proto::tensor_proto::DataType;

    /// Not set.
    pub const UNDEFINED: i32 = DataType::Undefined as i32;
    /// `float`
    pub const FLOAT: i32 = DataType::Float as i32;
    /// `uint8`
    pub const UINT8: i32 = DataType::Uint8 as i32;
    /// `int8`
    pub const INT8: i32 = DataType::Int8 as i32;
    /// `uint16`
    pub const UINT16: i32 = DataType::Uint16 as i32;
    /// `int16`
    pub const INT16: i32 = DataType::Int16 as i32;
    /// `int32`
    pub const INT32: i32 = DataType::Int32 as i32;
    /// `int64`
    pub const INT64: i32 = DataType::Int64 as i32;
    /// `string`
    pub const STRING: i32 = DataType::String as i32;
    /// `bool`
    pub const BOOL: i32 = DataType::Bool as i32;
    /// IEEE half precision.
    pub const FLOAT16: i32 = DataType::Float16 as i32;
    /// `double`
    pub const DOUBLE: i32 = DataType::Double as i32;
    /// `uint32`
    pub const UINT32: i32 = DataType::Uint32 as i32;
    /// `uint64`
    pub const UINT64: i32 = DataType::Uint64 as i32;
    /// Two `float`s per element (not decoded).
    pub const COMPLEX64: i32 = DataType::Complex64 as i32;
    /// Two `double`s per element (not decoded).
    pub const COMPLEX128: i32 = DataType::Complex128 as i32;
    /// Brain float 16.
    pub const BFLOAT16: i32 = DataType::Bfloat16 as i32;
    /// 8-bit float, 4 exponent bits, finite only.
    pub const FLOAT8E4M3FN: i32 = DataType::Float8e4m3fn as i32;
    /// 8-bit float, 4 exponent bits, finite only, no negative zero.
    pub const FLOAT8E4M3FNUZ: i32 = DataType::Float8e4m3fnuz as i32;
    /// 8-bit float, 5 exponent bits, with infinities.
    pub const FLOAT8E5M2: i32 = DataType::Float8e5m2 as i32;
    /// 8-bit float, 5 exponent bits, finite only, no negative zero.
    pub const FLOAT8E5M2FNUZ: i32 = DataType::Float8e5m2fnuz as i32;
}

/// A decoded `TensorProto`.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The tensor's name (often empty in test data).
    pub name: String,
    /// The shape; empty for a scalar.
    pub dims: Vec<i64>,
    /// The elements in row-major order.
    pub data: TensorData,
}

impl Tensor {
    /// The ONNX element type code of the data.
    pub fn elem_type(&self) -> i32 {
        self.data.elem_type()
    }
}

/// Tensor elements, one variant per supported element type.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// `float`
    F32(Vec<f32>),
    /// `double`
    F64(Vec<f64>),
    /// IEEE half precision.
    F16(Vec<f16>),
    /// Brain float 16.
    BF16(Vec<bf16>),
    /// `int8`
    I8(Vec<i8>),
    /// `int16`
    I16(Vec<i16>),
    /// `int32`
    I32(Vec<i32>),
    /// `int64`
    I64(Vec<i64>),
    /// `uint8`
    U8(Vec<u8>),
    /// `uint16`
    U16(Vec<u16>),
    /// `uint32`
    U32(Vec<u32>),
    /// `uint64`
    U64(Vec<u64>),
    /// `bool`
    Bool(Vec<bool>),
    /// `string`: ONNX strings are byte strings, not necessarily UTF-8.
    String(Vec<Vec<u8>>),
    /// One of the 8-bit float types (`elem_type` 17..=20), as the encoded bytes.
    Float8 {
        /// Which of the four formats ([`elem_type::FLOAT8E4M3FN`]..).
        elem_type: i32,
        /// The encodings.
        bits: Vec<u8>,
    },
}

impl TensorData {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::F16(v) => v.len(),
            TensorData::BF16(v) => v.len(),
            TensorData::I8(v) => v.len(),
            TensorData::I16(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I64(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::U16(v) => v.len(),
            TensorData::U32(v) => v.len(),
            TensorData::U64(v) => v.len(),
            TensorData::Bool(v) => v.len(),
            TensorData::String(v) => v.len(),
            TensorData::Float8 { bits, .. } => bits.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ONNX element type code.
    pub fn elem_type(&self) -> i32 {
        match self {
            TensorData::F32(_) => elem_type::FLOAT,
            TensorData::F64(_) => elem_type::DOUBLE,
            TensorData::F16(_) => elem_type::FLOAT16,
            TensorData::BF16(_) => elem_type::BFLOAT16,
            TensorData::I8(_) => elem_type::INT8,
            TensorData::I16(_) => elem_type::INT16,
            TensorData::I32(_) => elem_type::INT32,
            TensorData::I64(_) => elem_type::INT64,
            TensorData::U8(_) => elem_type::UINT8,
            TensorData::U16(_) => elem_type::UINT16,
            TensorData::U32(_) => elem_type::UINT32,
            TensorData::U64(_) => elem_type::UINT64,
            TensorData::Bool(_) => elem_type::BOOL,
            TensorData::String(_) => elem_type::STRING,
            TensorData::Float8 { elem_type, .. } => *elem_type,
        }
    }

    /// The elements widened to `f64`, for tolerance comparisons; `None` for strings.
    ///
    /// 64-bit integers beyond 2^53 lose precision; compare those exactly instead.
    pub fn to_f64(&self) -> Option<Vec<f64>> {
        fn widen<T: Copy>(v: &[T], f: impl Fn(T) -> f64) -> Option<Vec<f64>> {
            Some(v.iter().copied().map(f).collect())
        }
        match self {
            TensorData::F32(v) => widen(v, f64::from),
            TensorData::F64(v) => widen(v, |x| x),
            TensorData::F16(v) => widen(v, f64::from),
            TensorData::BF16(v) => widen(v, f64::from),
            TensorData::I8(v) => widen(v, f64::from),
            TensorData::I16(v) => widen(v, f64::from),
            TensorData::I32(v) => widen(v, f64::from),
            TensorData::I64(v) => widen(v, |x| x as f64),
            TensorData::U8(v) => widen(v, f64::from),
            TensorData::U16(v) => widen(v, f64::from),
            TensorData::U32(v) => widen(v, f64::from),
            TensorData::U64(v) => widen(v, |x| x as f64),
            TensorData::Bool(v) => widen(v, |x| if x { 1.0 } else { 0.0 }),
            TensorData::String(_) => None,
            TensorData::Float8 { elem_type, bits } => {
                bits.iter().map(|&b| crate::float8::float8_value(*elem_type, b)).collect()
            }
        }
    }
}

/// Product of the dims, refusing negative dims and overflow.
fn element_count(dims: &[i64]) -> Result<usize, DecodeError> {
    dims.iter().try_fold(1usize, |acc, &d| {
        let d = usize::try_from(d).map_err(|_| DecodeError::Malformed(format!("negative dimension {d}")))?;
        acc.checked_mul(d).ok_or_else(|| DecodeError::Malformed("element count overflows usize".into()))
    })
}

/// Splits little-endian raw data into `N`-byte elements.
fn from_le<const N: usize, T>(raw: &[u8], convert: impl Fn([u8; N]) -> T) -> Result<Vec<T>, DecodeError> {
    if !raw.len().is_multiple_of(N) {
        return Err(DecodeError::Malformed(format!(
            "raw_data length {} is not a multiple of the element size {N}",
            raw.len()
        )));
    }
    Ok(raw
        .chunks_exact(N)
        .map(|chunk| {
            let mut bytes = [0u8; N];
            bytes.copy_from_slice(chunk);
            convert(bytes)
        })
        .collect())
}

/// Narrows `int32_data` to a smaller type, rejecting out-of-range values.
fn narrow<T: TryFrom<i32>>(values: &[i32], type_name: &str) -> Result<Vec<T>, DecodeError> {
    values
        .iter()
        .map(|&v| {
            T::try_from(v)
                .map_err(|_| DecodeError::Malformed(format!("int32_data value {v} out of range for {type_name}")))
        })
        .collect()
}

fn typed_data(t: &TensorProto) -> Result<TensorData, DecodeError> {
    use elem_type as et;
    let data_type = t.data_type();
    if let Some(raw) = t.raw_data.as_deref() {
        // raw_data overrides the typed fields, as onnx.numpy_helper does.
        return Ok(match data_type {
            et::FLOAT => TensorData::F32(from_le(raw, f32::from_le_bytes)?),
            et::DOUBLE => TensorData::F64(from_le(raw, f64::from_le_bytes)?),
            et::FLOAT16 => TensorData::F16(from_le(raw, f16::from_le_bytes)?),
            et::BFLOAT16 => TensorData::BF16(from_le(raw, bf16::from_le_bytes)?),
            et::INT8 => TensorData::I8(from_le(raw, i8::from_le_bytes)?),
            et::INT16 => TensorData::I16(from_le(raw, i16::from_le_bytes)?),
            et::INT32 => TensorData::I32(from_le(raw, i32::from_le_bytes)?),
            et::INT64 => TensorData::I64(from_le(raw, i64::from_le_bytes)?),
            et::UINT8 => TensorData::U8(raw.to_vec()),
            et::UINT16 => TensorData::U16(from_le(raw, u16::from_le_bytes)?),
            et::UINT32 => TensorData::U32(from_le(raw, u32::from_le_bytes)?),
            et::UINT64 => TensorData::U64(from_le(raw, u64::from_le_bytes)?),
            et::BOOL => TensorData::Bool(raw.iter().map(|&b| b != 0).collect()),
            et::FLOAT8E4M3FN..=et::FLOAT8E5M2FNUZ => TensorData::Float8 { elem_type: data_type, bits: raw.to_vec() },
            et::STRING => return Err(DecodeError::Malformed("string tensors cannot use raw_data".into())),
            et::UNDEFINED => return Err(DecodeError::Malformed("tensor has no data_type".into())),
            other => return Err(DecodeError::Unsupported(other)),
        });
    }
    Ok(match data_type {
        et::FLOAT => TensorData::F32(t.float_data.clone()),
        et::DOUBLE => TensorData::F64(t.double_data.clone()),
        et::FLOAT16 => {
            TensorData::F16(narrow::<u16>(&t.int32_data, "float16 bits")?.into_iter().map(f16::from_bits).collect())
        }
        et::BFLOAT16 => {
            TensorData::BF16(narrow::<u16>(&t.int32_data, "bfloat16 bits")?.into_iter().map(bf16::from_bits).collect())
        }
        et::INT8 => TensorData::I8(narrow(&t.int32_data, "int8")?),
        et::INT16 => TensorData::I16(narrow(&t.int32_data, "int16")?),
        et::INT32 => TensorData::I32(t.int32_data.clone()),
        et::UINT8 => TensorData::U8(narrow(&t.int32_data, "uint8")?),
        et::UINT16 => TensorData::U16(narrow(&t.int32_data, "uint16")?),
        et::BOOL => TensorData::Bool(t.int32_data.iter().map(|&v| v != 0).collect()),
        et::INT64 => TensorData::I64(t.int64_data.clone()),
        et::UINT32 => TensorData::U32(
            t.uint64_data
                .iter()
                .map(|&v| {
                    u32::try_from(v)
                        .map_err(|_| DecodeError::Malformed(format!("uint64_data value {v} exceeds uint32")))
                })
                .collect::<Result<_, _>>()?,
        ),
        et::UINT64 => TensorData::U64(t.uint64_data.clone()),
        et::STRING => TensorData::String(t.string_data.iter().map(|s| s.to_vec()).collect()),
        et::FLOAT8E4M3FN..=et::FLOAT8E5M2FNUZ => {
            TensorData::Float8 { elem_type: data_type, bits: narrow(&t.int32_data, "float8 bits")? }
        }
        et::UNDEFINED => return Err(DecodeError::Malformed("tensor has no data_type".into())),
        other => return Err(DecodeError::Unsupported(other)),
    })
}

/// Interprets a decoded `TensorProto`; see [`decode_tensor`] for the errors.
pub(crate) fn tensor_from_proto(t: &TensorProto) -> Result<Tensor, DecodeError> {
    if t.data_location() == DataLocation::External || !t.external_data.is_empty() {
        return Err(DecodeError::ExternalData);
    }
    let expected = element_count(&t.dims)?;
    let data = typed_data(t)?;
    if data.len() != expected {
        return Err(DecodeError::CountMismatch { expected, actual: data.len() });
    }
    Ok(Tensor { name: t.name().to_owned(), dims: t.dims.clone(), data })
}

/// Decodes a serialized `TensorProto`.
///
/// Fails with [`DecodeError::Unsupported`] for complex and 4-bit types, with
/// [`DecodeError::ExternalData`] for tensors stored outside the message, and with
/// [`DecodeError::CountMismatch`] when the element count disagrees with the dims.
pub fn decode_tensor(buf: &[u8]) -> Result<Tensor, DecodeError> {
    tensor_from_proto(&TensorProto::decode(buf)?)
}

#[cfg(test)]
mod tests {
    use onnxrt_onnx_proto::StringStringEntryProto;

    use super::*;

    fn proto(dims: &[i64], data_type: i32) -> TensorProto {
        TensorProto { dims: dims.to_vec(), data_type: Some(data_type), ..Default::default() }
    }

    fn decode(t: &TensorProto) -> Result<Tensor, DecodeError> {
        decode_tensor(&t.encode_to_vec())
    }

    #[test]
    fn float_data() {
        let msg = TensorProto { float_data: vec![1.5, -2.0], name: Some("t".into()), ..proto(&[2], elem_type::FLOAT) };
        let t = decode(&msg).expect("decodes");
        assert_eq!(t.name, "t");
        assert_eq!(t.dims, vec![2]);
        assert_eq!(t.data, TensorData::F32(vec![1.5, -2.0]));
    }

    #[test]
    fn raw_data_and_scalar() {
        let msg = TensorProto { raw_data: Some((-3i16).to_le_bytes().to_vec().into()), ..proto(&[], elem_type::INT16) };
        let t = decode(&msg).expect("decodes");
        assert!(t.dims.is_empty());
        assert_eq!(t.data, TensorData::I16(vec![-3]));
    }

    #[test]
    fn int32_data_for_small_types() {
        let msg = TensorProto { int32_data: vec![-5, 7, 127], ..proto(&[3], elem_type::INT8) };
        assert_eq!(decode(&msg).expect("decodes").data, TensorData::I8(vec![-5, 7, 127]));

        let bad = TensorProto { int32_data: vec![300], ..proto(&[1], elem_type::INT8) };
        assert!(matches!(decode(&bad), Err(DecodeError::Malformed(_))));

        let half = TensorProto {
            int32_data: vec![i32::from(f16::from_f32(0.5).to_bits())],
            ..proto(&[1], elem_type::FLOAT16)
        };
        assert_eq!(decode(&half).expect("decodes").data, TensorData::F16(vec![f16::from_f32(0.5)]));
    }

    #[test]
    fn uint64_data_for_u32() {
        let msg = TensorProto { uint64_data: vec![u64::from(u32::MAX)], ..proto(&[1], elem_type::UINT32) };
        assert_eq!(decode(&msg).expect("decodes").data, TensorData::U32(vec![u32::MAX]));
        let bad = TensorProto { uint64_data: vec![u64::from(u32::MAX) + 1], ..proto(&[1], elem_type::UINT32) };
        assert!(decode(&bad).is_err());
    }

    #[test]
    fn count_mismatch_and_overflow() {
        let msg = TensorProto { raw_data: Some(vec![0u8; 12].into()), ..proto(&[2, 2], elem_type::FLOAT) };
        assert_eq!(decode(&msg), Err(DecodeError::CountMismatch { expected: 4, actual: 3 }));
        assert!(matches!(decode(&proto(&[i64::MAX, i64::MAX], elem_type::FLOAT)), Err(DecodeError::Malformed(_))));
        assert!(matches!(decode(&proto(&[-1], elem_type::FLOAT)), Err(DecodeError::Malformed(_))));
        let ragged = TensorProto { raw_data: Some(vec![0u8; 5].into()), ..proto(&[1], elem_type::FLOAT) };
        assert!(decode(&ragged).is_err());
    }

    #[test]
    fn unsupported_and_external() {
        assert_eq!(decode(&proto(&[0], elem_type::COMPLEX64)), Err(DecodeError::Unsupported(14)));
        assert_eq!(decode(&proto(&[0], 22)), Err(DecodeError::Unsupported(22)));

        let ext = TensorProto { data_location: Some(DataLocation::External as i32), ..proto(&[1], elem_type::FLOAT) };
        let err = decode(&ext).expect_err("external");
        assert_eq!(err, DecodeError::ExternalData);
        assert_eq!(err.to_string(), "external data not supported");
        assert!(err.is_unsupported());

        let ext2 =
            TensorProto { external_data: vec![StringStringEntryProto::default()], ..proto(&[1], elem_type::FLOAT) };
        assert_eq!(decode(&ext2), Err(DecodeError::ExternalData));
    }

    #[test]
    fn strings() {
        let msg = TensorProto {
            string_data: vec![b"ab".to_vec().into(), vec![0xff, 0x00].into()],
            ..proto(&[2], elem_type::STRING)
        };
        assert_eq!(decode(&msg).expect("decodes").data, TensorData::String(vec![b"ab".to_vec(), vec![0xff, 0x00]]));
    }

    #[test]
    fn malformed_messages() {
        // Truncated in the middle of the dims varint.
        assert!(decode_tensor(&[0x08, 0x80]).is_err());
        // name claims more bytes than exist.
        assert!(decode_tensor(&[0x42, 0x10, b'a']).is_err());
        // data_type with the wrong wire type.
        assert!(decode_tensor(&[0x15, 0, 0, 0, 0]).is_err());
        // Empty message: no data_type.
        assert!(matches!(decode_tensor(&[]), Err(DecodeError::Malformed(_))));
    }

    #[test]
    fn unknown_fields_are_skipped() {
        let mut msg = proto(&[1], elem_type::INT64).encode_to_vec();
        // Field 99 as fixed32 and field 100 as fixed64 (keys as varints), then int64_data -9.
        msg.extend_from_slice(&[0x9d, 0x06, 1, 2, 3, 4]);
        msg.extend_from_slice(&[0xa1, 0x06, 0, 0, 0, 0, 0, 0, 0, 0]);
        msg.extend_from_slice(&TensorProto { int64_data: vec![-9], ..Default::default() }.encode_to_vec());
        assert_eq!(decode_tensor(&msg).expect("decodes").data, TensorData::I64(vec![-9]));
    }
}
