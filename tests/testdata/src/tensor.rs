//! `TensorProto` decoding.

use half::{bf16, f16};

use crate::wire;
use crate::DecodeError;

/// ONNX `TensorProto.DataType` codes.
pub mod elem_type {
    /// Not set.
    pub const UNDEFINED: i32 = 0;
    /// `float`
    pub const FLOAT: i32 = 1;
    /// `uint8`
    pub const UINT8: i32 = 2;
    /// `int8`
    pub const INT8: i32 = 3;
    /// `uint16`
    pub const UINT16: i32 = 4;
    /// `int16`
    pub const INT16: i32 = 5;
    /// `int32`
    pub const INT32: i32 = 6;
    /// `int64`
    pub const INT64: i32 = 7;
    /// `string`
    pub const STRING: i32 = 8;
    /// `bool`
    pub const BOOL: i32 = 9;
    /// IEEE half precision.
    pub const FLOAT16: i32 = 10;
    /// `double`
    pub const DOUBLE: i32 = 11;
    /// `uint32`
    pub const UINT32: i32 = 12;
    /// `uint64`
    pub const UINT64: i32 = 13;
    /// Two `float`s per element (not decoded).
    pub const COMPLEX64: i32 = 14;
    /// Two `double`s per element (not decoded).
    pub const COMPLEX128: i32 = 15;
    /// Brain float 16.
    pub const BFLOAT16: i32 = 16;
    /// 8-bit float, 4 exponent bits, finite only.
    pub const FLOAT8E4M3FN: i32 = 17;
    /// 8-bit float, 4 exponent bits, finite only, no negative zero.
    pub const FLOAT8E4M3FNUZ: i32 = 18;
    /// 8-bit float, 5 exponent bits, with infinities.
    pub const FLOAT8E5M2: i32 = 19;
    /// 8-bit float, 5 exponent bits, finite only, no negative zero.
    pub const FLOAT8E5M2FNUZ: i32 = 20;
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

/// The fields of a `TensorProto` as they appear on the wire, before type interpretation.
#[derive(Default)]
struct RawFields<'a> {
    name: String,
    dims: Vec<u64>,
    data_type: i32,
    float_data: Vec<u32>,
    int32_data: Vec<u64>,
    string_data: Vec<Vec<u8>>,
    int64_data: Vec<u64>,
    raw_data: Option<&'a [u8]>,
    double_data: Vec<u64>,
    uint64_data: Vec<u64>,
    external: bool,
}

fn read_fields(buf: &[u8]) -> Result<RawFields<'_>, DecodeError> {
    let mut t = RawFields::default();
    for field in wire::fields(buf) {
        let (number, value) = field?;
        match number {
            1 => wire::push_varints("dims", value, &mut t.dims)?,
            2 => t.data_type = wire::expect_i32("data_type", value)?,
            4 => wire::push_fixed32("float_data", value, &mut t.float_data)?,
            5 => wire::push_varints("int32_data", value, &mut t.int32_data)?,
            6 => t.string_data.push(wire::expect_bytes("string_data", value)?.to_vec()),
            7 => wire::push_varints("int64_data", value, &mut t.int64_data)?,
            8 => t.name = wire::expect_string("name", value)?,
            // Protobuf semantics: the last occurrence of a singular field wins.
            9 => t.raw_data = Some(wire::expect_bytes("raw_data", value)?),
            10 => wire::push_fixed64("double_data", value, &mut t.double_data)?,
            11 => wire::push_varints("uint64_data", value, &mut t.uint64_data)?,
            13 => {
                wire::expect_bytes("external_data", value)?;
                t.external = true;
            }
            // DataLocation EXTERNAL = 1; DEFAULT (0) needs nothing.
            14 => t.external |= wire::expect_i32("data_location", value)? == 1,
            _ => {}
        }
    }
    Ok(t)
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

/// Reads `int32_data` entries as `i32` (they arrive sign-extended to 64 bits).
fn int32_values(values: &[u64]) -> Result<Vec<i32>, DecodeError> {
    values
        .iter()
        .map(|&v| {
            i32::try_from(v as i64)
                .map_err(|_| DecodeError::Malformed(format!("int32_data value {} exceeds int32", v as i64)))
        })
        .collect()
}

/// Narrows `int32_data` to a smaller integer type, rejecting out-of-range values.
fn narrow<T: TryFrom<i32>>(values: &[u64], type_name: &str) -> Result<Vec<T>, DecodeError> {
    int32_values(values)?
        .into_iter()
        .map(|v| {
            T::try_from(v)
                .map_err(|_| DecodeError::Malformed(format!("int32_data value {v} out of range for {type_name}")))
        })
        .collect()
}

fn typed_data(t: &RawFields<'_>) -> Result<TensorData, DecodeError> {
    use elem_type as et;
    if let Some(raw) = t.raw_data {
        // raw_data overrides the typed fields, as onnx.numpy_helper does.
        return Ok(match t.data_type {
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
            et::FLOAT8E4M3FN..=et::FLOAT8E5M2FNUZ => TensorData::Float8 { elem_type: t.data_type, bits: raw.to_vec() },
            et::STRING => return Err(DecodeError::Malformed("string tensors cannot use raw_data".into())),
            et::UNDEFINED => return Err(DecodeError::Malformed("tensor has no data_type".into())),
            other => return Err(DecodeError::Unsupported(other)),
        });
    }
    Ok(match t.data_type {
        et::FLOAT => TensorData::F32(t.float_data.iter().map(|&b| f32::from_bits(b)).collect()),
        et::DOUBLE => TensorData::F64(t.double_data.iter().map(|&b| f64::from_bits(b)).collect()),
        et::FLOAT16 => {
            TensorData::F16(narrow::<u16>(&t.int32_data, "float16 bits")?.into_iter().map(f16::from_bits).collect())
        }
        et::BFLOAT16 => {
            TensorData::BF16(narrow::<u16>(&t.int32_data, "bfloat16 bits")?.into_iter().map(bf16::from_bits).collect())
        }
        et::INT8 => TensorData::I8(narrow(&t.int32_data, "int8")?),
        et::INT16 => TensorData::I16(narrow(&t.int32_data, "int16")?),
        et::INT32 => TensorData::I32(int32_values(&t.int32_data)?),
        et::UINT8 => TensorData::U8(narrow(&t.int32_data, "uint8")?),
        et::UINT16 => TensorData::U16(narrow(&t.int32_data, "uint16")?),
        et::BOOL => TensorData::Bool(t.int32_data.iter().map(|&v| v != 0).collect()),
        et::INT64 => TensorData::I64(t.int64_data.iter().map(|&v| v as i64).collect()),
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
        et::STRING => TensorData::String(t.string_data.clone()),
        et::FLOAT8E4M3FN..=et::FLOAT8E5M2FNUZ => {
            TensorData::Float8 { elem_type: t.data_type, bits: narrow(&t.int32_data, "float8 bits")? }
        }
        et::UNDEFINED => return Err(DecodeError::Malformed("tensor has no data_type".into())),
        other => return Err(DecodeError::Unsupported(other)),
    })
}

/// Decodes a serialized `TensorProto`.
///
/// Fails with [`DecodeError::Unsupported`] for complex and 4-bit types, with
/// [`DecodeError::ExternalData`] for tensors stored outside the message, and with
/// [`DecodeError::CountMismatch`] when the element count disagrees with the dims.
pub fn decode_tensor(buf: &[u8]) -> Result<Tensor, DecodeError> {
    let fields = read_fields(buf)?;
    if fields.external {
        return Err(DecodeError::ExternalData);
    }
    let dims: Vec<i64> = fields.dims.iter().map(|&d| d as i64).collect();
    let expected = element_count(&dims)?;
    let data = typed_data(&fields)?;
    if data.len() != expected {
        return Err(DecodeError::CountMismatch { expected, actual: data.len() });
    }
    Ok(Tensor { name: fields.name, dims, data })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Encodes a varint, for building test messages by hand.
    pub(crate) fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    pub(crate) fn key(field: u32, wire_type: u8, out: &mut Vec<u8>) {
        varint((u64::from(field) << 3) | u64::from(wire_type), out);
    }

    pub(crate) fn len_field(field: u32, bytes: &[u8], out: &mut Vec<u8>) {
        key(field, 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    pub(crate) fn varint_field(field: u32, v: u64, out: &mut Vec<u8>) {
        key(field, 0, out);
        varint(v, out);
    }

    fn header(dims: &[i64], data_type: i32) -> Vec<u8> {
        let mut out = Vec::new();
        for &d in dims {
            varint_field(1, d as u64, &mut out);
        }
        varint_field(2, data_type as u64, &mut out);
        out
    }

    #[test]
    fn float_data_packed() {
        let mut msg = header(&[2], elem_type::FLOAT);
        let mut packed = Vec::new();
        packed.extend_from_slice(&1.5f32.to_le_bytes());
        packed.extend_from_slice(&(-2.0f32).to_le_bytes());
        len_field(4, &packed, &mut msg);
        len_field(8, b"t", &mut msg);
        let t = decode_tensor(&msg).expect("decodes");
        assert_eq!(t.name, "t");
        assert_eq!(t.dims, vec![2]);
        assert_eq!(t.data, TensorData::F32(vec![1.5, -2.0]));
    }

    #[test]
    fn raw_data_and_scalar() {
        let mut msg = header(&[], elem_type::INT16);
        len_field(9, &(-3i16).to_le_bytes(), &mut msg);
        let t = decode_tensor(&msg).expect("decodes");
        assert!(t.dims.is_empty());
        assert_eq!(t.data, TensorData::I16(vec![-3]));
    }

    #[test]
    fn int32_data_for_small_types() {
        let mut msg = header(&[3], elem_type::INT8);
        // Unpacked, with a negative value sign-extended to 64 bits.
        varint_field(5, (-5i64) as u64, &mut msg);
        varint_field(5, 7, &mut msg);
        varint_field(5, 127, &mut msg);
        let t = decode_tensor(&msg).expect("decodes");
        assert_eq!(t.data, TensorData::I8(vec![-5, 7, 127]));

        let mut bad = header(&[1], elem_type::INT8);
        varint_field(5, 300, &mut bad);
        assert!(matches!(decode_tensor(&bad), Err(DecodeError::Malformed(_))));

        let mut half = header(&[1], elem_type::FLOAT16);
        varint_field(5, u64::from(f16::from_f32(0.5).to_bits()), &mut half);
        let t = decode_tensor(&half).expect("decodes");
        assert_eq!(t.data, TensorData::F16(vec![f16::from_f32(0.5)]));
    }

    #[test]
    fn uint64_data_for_u32() {
        let mut msg = header(&[1], elem_type::UINT32);
        varint_field(11, u64::from(u32::MAX), &mut msg);
        assert_eq!(decode_tensor(&msg).expect("decodes").data, TensorData::U32(vec![u32::MAX]));
        let mut bad = header(&[1], elem_type::UINT32);
        varint_field(11, u64::from(u32::MAX) + 1, &mut bad);
        assert!(decode_tensor(&bad).is_err());
    }

    #[test]
    fn count_mismatch_and_overflow() {
        let mut msg = header(&[2, 2], elem_type::FLOAT);
        len_field(9, &[0u8; 12], &mut msg);
        assert_eq!(decode_tensor(&msg), Err(DecodeError::CountMismatch { expected: 4, actual: 3 }));
        let huge = header(&[i64::MAX, i64::MAX], elem_type::FLOAT);
        assert!(matches!(decode_tensor(&huge), Err(DecodeError::Malformed(_))));
        let negative = header(&[-1], elem_type::FLOAT);
        assert!(matches!(decode_tensor(&negative), Err(DecodeError::Malformed(_))));
        let mut ragged = header(&[1], elem_type::FLOAT);
        len_field(9, &[0u8; 5], &mut ragged);
        assert!(decode_tensor(&ragged).is_err());
    }

    #[test]
    fn unsupported_and_external() {
        let complex = header(&[0], elem_type::COMPLEX64);
        assert_eq!(decode_tensor(&complex), Err(DecodeError::Unsupported(14)));
        let int4 = header(&[0], 22);
        assert_eq!(decode_tensor(&int4), Err(DecodeError::Unsupported(22)));

        let mut ext = header(&[1], elem_type::FLOAT);
        varint_field(14, 1, &mut ext);
        let err = decode_tensor(&ext).expect_err("external");
        assert_eq!(err, DecodeError::ExternalData);
        assert_eq!(err.to_string(), "external data not supported");
        assert!(err.is_unsupported());

        let mut ext2 = header(&[1], elem_type::FLOAT);
        len_field(13, b"", &mut ext2);
        assert_eq!(decode_tensor(&ext2), Err(DecodeError::ExternalData));
    }

    #[test]
    fn strings() {
        let mut msg = header(&[2], elem_type::STRING);
        len_field(6, b"ab", &mut msg);
        len_field(6, &[0xff, 0x00], &mut msg);
        assert_eq!(
            decode_tensor(&msg).expect("decodes").data,
            TensorData::String(vec![b"ab".to_vec(), vec![0xff, 0x00]])
        );
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
        let mut msg = header(&[1], elem_type::INT64);
        len_field(12, b"doc string", &mut msg);
        key(99, 5, &mut msg);
        msg.extend_from_slice(&[1, 2, 3, 4]);
        key(100, 1, &mut msg);
        msg.extend_from_slice(&[0; 8]);
        varint_field(7, (-9i64) as u64, &mut msg);
        assert_eq!(decode_tensor(&msg).expect("decodes").data, TensorData::I64(vec![-9]));
    }
}
