//! Tensor element types: the runtime's codes, and the Rust types that map to them.

use std::fmt;

use half::{bf16, f16};

use crate::float8::{F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, F8E5M2};

/// ONNX tensor element types (`ONNXTensorElementDataType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ElementType {
    /// `float`
    F32,
    /// `uint8`
    U8,
    /// `int8`
    I8,
    /// `uint16`
    U16,
    /// `int16`
    I16,
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `string`
    String,
    /// `bool`
    Bool,
    /// `float16`
    F16,
    /// `double`
    F64,
    /// `uint32`
    U32,
    /// `uint64`
    U64,
    /// `complex64` (not readable through this crate)
    Complex64,
    /// `complex128` (not readable through this crate)
    Complex128,
    /// `bfloat16`
    BF16,
    /// `float8e4m3fn` ([`F8E4M3Fn`](crate::F8E4M3Fn))
    F8E4M3Fn,
    /// `float8e4m3fnuz` ([`F8E4M3Fnuz`](crate::F8E4M3Fnuz))
    F8E4M3Fnuz,
    /// `float8e5m2` ([`F8E5M2`](crate::F8E5M2))
    F8E5M2,
    /// `float8e5m2fnuz` ([`F8E5M2Fnuz`](crate::F8E5M2Fnuz))
    F8E5M2Fnuz,
    /// A code this crate does not know (4-bit integers, newer types).
    Unknown(u32),
}

impl ElementType {
    /// From ORT's code.
    pub(crate) fn from_raw(raw: u32) -> ElementType {
        match raw {
            1 => ElementType::F32,
            2 => ElementType::U8,
            3 => ElementType::I8,
            4 => ElementType::U16,
            5 => ElementType::I16,
            6 => ElementType::I32,
            7 => ElementType::I64,
            8 => ElementType::String,
            9 => ElementType::Bool,
            10 => ElementType::F16,
            11 => ElementType::F64,
            12 => ElementType::U32,
            13 => ElementType::U64,
            14 => ElementType::Complex64,
            15 => ElementType::Complex128,
            16 => ElementType::BF16,
            17 => ElementType::F8E4M3Fn,
            18 => ElementType::F8E4M3Fnuz,
            19 => ElementType::F8E5M2,
            20 => ElementType::F8E5M2Fnuz,
            other => ElementType::Unknown(other),
        }
    }

    /// ORT's code.
    pub(crate) fn to_raw(self) -> u32 {
        match self {
            ElementType::F32 => 1,
            ElementType::U8 => 2,
            ElementType::I8 => 3,
            ElementType::U16 => 4,
            ElementType::I16 => 5,
            ElementType::I32 => 6,
            ElementType::I64 => 7,
            ElementType::String => 8,
            ElementType::Bool => 9,
            ElementType::F16 => 10,
            ElementType::F64 => 11,
            ElementType::U32 => 12,
            ElementType::U64 => 13,
            ElementType::Complex64 => 14,
            ElementType::Complex128 => 15,
            ElementType::BF16 => 16,
            ElementType::F8E4M3Fn => 17,
            ElementType::F8E4M3Fnuz => 18,
            ElementType::F8E5M2 => 19,
            ElementType::F8E5M2Fnuz => 20,
            ElementType::Unknown(raw) => raw,
        }
    }

    /// The size of one element in bytes: the one place where an element type becomes a byte
    /// count for memory the crate allocates, zeroes, copies or views (docs/soundness.md §6).
    /// Refuses what the crate cannot size: strings (ORT owns their storage) and codes it
    /// does not know ([`ElementType::Unknown`]: 4-bit integers and later types, whose packing the
    /// crate cannot vouch for).
    ///
    /// ```
    /// # use onnxrt::ElementType;
    /// assert_eq!(ElementType::F32.byte_size()?, 4);
    /// assert!(ElementType::Unknown(21).byte_size().is_err());
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for `String` and `Unknown` codes.
    pub fn byte_size(self) -> crate::Result<usize> {
        match self {
            ElementType::String => Err(crate::Error::InvalidArgument {
                what: "the byte size of a string element".into(),
                why: "strings have no fixed size; ONNX Runtime owns their storage (Value::from_strings)".into(),
            }),
            ElementType::Unknown(code) => Err(crate::Error::InvalidArgument {
                what: format!("memory for elements of type #{code}"),
                why: "this crate does not know that element type's layout (4-bit and newer types), so it neither \
                      allocates, zeroes, copies nor views such tensors"
                    .into(),
            }),
            known => Ok(known.size()),
        }
    }

    /// Refuses codes the crate does not know before one reaches an allocation (strings pass:
    /// ORT constructs them).
    pub(crate) fn check_known(self) -> crate::Result<()> {
        match self {
            ElementType::String => Ok(()),
            other => other.byte_size().map(drop),
        }
    }

    /// Size of one element in bytes (strings and unknown codes: not known, 0). For display and
    /// estimates; memory is sized with [`ElementType::byte_size`], which refuses both.
    pub fn size(self) -> usize {
        match self {
            ElementType::U8
            | ElementType::I8
            | ElementType::Bool
            | ElementType::F8E4M3Fn
            | ElementType::F8E4M3Fnuz
            | ElementType::F8E5M2
            | ElementType::F8E5M2Fnuz => 1,
            ElementType::U16 | ElementType::I16 | ElementType::F16 | ElementType::BF16 => 2,
            ElementType::F32 | ElementType::I32 | ElementType::U32 => 4,
            ElementType::F64 | ElementType::I64 | ElementType::U64 | ElementType::Complex64 => 8,
            ElementType::Complex128 => 16,
            ElementType::String | ElementType::Unknown(_) => 0,
        }
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ElementType::F32 => "f32",
            ElementType::U8 => "u8",
            ElementType::I8 => "i8",
            ElementType::U16 => "u16",
            ElementType::I16 => "i16",
            ElementType::I32 => "i32",
            ElementType::I64 => "i64",
            ElementType::String => "string",
            ElementType::Bool => "bool",
            ElementType::F16 => "f16",
            ElementType::F64 => "f64",
            ElementType::U32 => "u32",
            ElementType::U64 => "u64",
            ElementType::Complex64 => "complex64",
            ElementType::Complex128 => "complex128",
            ElementType::BF16 => "bf16",
            ElementType::F8E4M3Fn => "f8e4m3fn",
            ElementType::F8E4M3Fnuz => "f8e4m3fnuz",
            ElementType::F8E5M2 => "f8e5m2",
            ElementType::F8E5M2Fnuz => "f8e5m2fnuz",
            ElementType::Unknown(raw) => return write!(f, "element type #{raw}"),
        };
        f.write_str(name)
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type whose memory layout is exactly an ONNX tensor element's.
///
/// Implemented for `f32`, `f64`, [`f16`](struct@f16), [`bf16`], the 8-bit floats ([`F8E4M3Fn`],
/// [`F8E4M3Fnuz`], [`F8E5M2`], [`F8E5M2Fnuz`]), `i8`..`i64`, `u8`..`u64` and `bool` (one byte,
/// 0 or 1, as ONNX stores it). Strings are handled by [`crate::Value::from_strings`].
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// The ONNX element type.
    const TYPE: ElementType;
}

macro_rules! element {
    ($($rust:ty => $onnx:ident),* $(,)?) => {$(
        impl sealed::Sealed for $rust {}
        impl Element for $rust {
            const TYPE: ElementType = ElementType::$onnx;
        }
    )*};
}

element! {
    f32 => F32, f64 => F64, f16 => F16, bf16 => BF16,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64,
    u8 => U8, u16 => U16, u32 => U32, u64 => U64,
    bool => Bool,
    F8E4M3Fn => F8E4M3Fn, F8E4M3Fnuz => F8E4M3Fnuz, F8E5M2 => F8E5M2, F8E5M2Fnuz => F8E5M2Fnuz,
}
