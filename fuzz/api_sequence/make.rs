//! Values of every kind the public API makes: tensors of every element type (any shape, empty and
//! zero-sized ones too), strings, sequences, absent optionals, borrowed views.

use arbitrary::Arbitrary;
use onnxrt::half::{bf16, f16};
use onnxrt::{
    ndarray, Dim, Element, ElementType, F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, Value, ValueInfo, ValueKind, ValueType,
    F8E5M2,
};

use crate::api_sequence::count;

/// At most this many elements in one tensor the sequence makes.
const MAX_ELEMENTS: usize = 256;

#[derive(Arbitrary, Debug)]
pub enum Make {
    /// `Value::from_vec` with a consistent shape (each dim mod 5, rank up to 4).
    Tensor { ty: u8, dims: Vec<u8>, fill: u64 },
    /// `Value::from_vec` with any shape and `len` elements: usually refused.
    AnyShape { ty: u8, shape: Vec<i64>, len: u8, fill: u64 },
    /// `Value::scalar`.
    Scalar { ty: u8, fill: u64 },
    /// `Value::from_strings` of shape `[strings.len()]`, or `[n]` for a mismatched `n`.
    Strings { strings: Vec<String>, n: Option<u8> },
    /// `Value::from_array` of a 2-D f32 array, maybe transposed.
    Array { rows: u8, cols: u8, transpose: bool },
    /// `Value::none` of a tensor or sequence type.
    None { sequence: bool, ty: u8 },
    /// `Value::empty_sequence`.
    EmptySequence { ty: u8 },
}

/// Every element type, `Unknown` and the complex ones included (refused where unsupported).
pub fn element_type(b: u8) -> ElementType {
    const ALL: [ElementType; 21] = [
        ElementType::F32,
        ElementType::U8,
        ElementType::I8,
        ElementType::U16,
        ElementType::I16,
        ElementType::I32,
        ElementType::I64,
        ElementType::String,
        ElementType::Bool,
        ElementType::F16,
        ElementType::F64,
        ElementType::U32,
        ElementType::U64,
        ElementType::Complex64,
        ElementType::Complex128,
        ElementType::BF16,
        ElementType::F8E4M3Fn,
        ElementType::F8E4M3Fnuz,
        ElementType::F8E5M2,
        ElementType::F8E5M2Fnuz,
        ElementType::Unknown(99),
    ];
    ALL[usize::from(b) % ALL.len()]
}

fn data<T>(len: usize, fill: u64, make: impl Fn(u64) -> T) -> Vec<T> {
    (0..len as u64).map(|i| make(fill.wrapping_mul(i + 1).rotate_left(i as u32))).collect()
}

/// `$body` with `$data: Vec<T>` of `$len` elements for the element type `$ty` picks (17 kinds).
macro_rules! with_data {
    ($ty:expr, $len:expr, $fill:expr, |$data:ident| $body:expr) => {
        match $ty % 17 {
            0 => {
                let $data = data($len, $fill, |v| v as f32 / 7.0);
                $body
            }
            1 => {
                let $data = data($len, $fill, f64::from_bits);
                $body
            }
            2 => {
                let $data = data($len, $fill, |v| f16::from_bits(v as u16));
                $body
            }
            3 => {
                let $data = data($len, $fill, |v| bf16::from_bits(v as u16));
                $body
            }
            4 => {
                let $data = data($len, $fill, |v| v as i8);
                $body
            }
            5 => {
                let $data = data($len, $fill, |v| v as i16);
                $body
            }
            6 => {
                let $data = data($len, $fill, |v| v as i32);
                $body
            }
            7 => {
                let $data = data($len, $fill, |v| v as i64);
                $body
            }
            8 => {
                let $data = data($len, $fill, |v| v as u8);
                $body
            }
            9 => {
                let $data = data($len, $fill, |v| v as u16);
                $body
            }
            10 => {
                let $data = data($len, $fill, |v| v as u32);
                $body
            }
            11 => {
                let $data = data($len, $fill, |v| v);
                $body
            }
            12 => {
                let $data = data($len, $fill, |v| v & 1 == 1);
                $body
            }
            13 => {
                let $data = data($len, $fill, |v| F8E4M3Fn::from_bits(v as u8));
                $body
            }
            14 => {
                let $data = data($len, $fill, |v| F8E4M3Fnuz::from_bits(v as u8));
                $body
            }
            15 => {
                let $data = data($len, $fill, |v| F8E5M2::from_bits(v as u8));
                $body
            }
            _ => {
                let $data = data($len, $fill, |v| F8E5M2Fnuz::from_bits(v as u8));
                $body
            }
        }
    };
}

fn from_vec<T: Element>(shape: &[i64], data: Vec<T>) -> Option<Value<'static>> {
    count(1);
    Value::from_vec(shape, data).ok()
}

/// Makes a value, or `None` where the API refused (a typed error is the expected outcome).
pub fn make(m: &Make) -> Option<Value<'static>> {
    match m {
        Make::Tensor { ty, dims, fill } => {
            let shape: Vec<i64> = dims.iter().take(4).map(|&d| i64::from(d % 5)).collect();
            let len = shape.iter().product::<i64>() as usize;
            with_data!(*ty, len, *fill, |d| from_vec(&shape, d))
        }
        Make::AnyShape { ty, shape, len, fill } => {
            let len = usize::from(*len).min(MAX_ELEMENTS);
            let shape: Vec<i64> = shape.iter().take(6).copied().collect();
            with_data!(*ty, len, *fill, |d| from_vec(&shape, d))
        }
        Make::Scalar { ty, fill } => {
            count(1);
            with_data!(*ty, 1, *fill, |d| Value::scalar(d[0]).ok())
        }
        Make::Strings { strings, n } => {
            count(1);
            let strings = &strings[..strings.len().min(16)];
            let n = n.map_or(strings.len() as i64, i64::from);
            Value::from_strings(&[n], strings).ok()
        }
        Make::Array { rows, cols, transpose } => {
            count(1);
            let (rows, cols) = (usize::from(rows % 6), usize::from(cols % 6));
            let array = ndarray::Array2::from_shape_fn((rows, cols), |(r, c)| (r * 10 + c) as f32);
            let array = if *transpose { array.reversed_axes() } else { array };
            Value::from_array(array).ok()
        }
        Make::None { sequence, ty } => {
            count(1);
            let ty = element_type(*ty);
            Value::none(if *sequence { ValueType::Sequence(ty) } else { ValueType::Tensor(ty) }).ok()
        }
        Make::EmptySequence { ty } => {
            count(1);
            Value::empty_sequence(element_type(*ty)).ok()
        }
    }
}

/// Calls every reader of `value` (each returns `Ok` or `Err`), recursing into members.
pub fn read(value: &Value<'_>, depth: usize) {
    count(11);
    let _ = format!("{value:?}");
    let _ = (value.kind(), value.tensor_info(), value.name(), value.is_none());
    let _ = value.view::<f32>().map(|v| v.sum());
    let _ = value.view::<u8>().map(|v| v.len());
    let _ = value.to_array::<i64>();
    let _ = value.to_array::<f16>();
    let _ = value.strings();
    let _ = value.string_bytes();
    if let Ok((keys, values)) = value.map_entries() {
        if depth < 3 {
            read(&keys, depth + 1);
            read(&values, depth + 1);
        }
    }
    if let Ok(items) = value.sequence_items() {
        if depth < 3 {
            items.iter().for_each(|item| read(item, depth + 1));
        }
    }
}

/// A value borrowing a local array (`Value::from_view`), read and used by `with`, then dropped
/// before the array.
pub fn with_view(rows: u8, cols: u8, step: u8, with: impl FnOnce(&Value<'_>)) {
    let (rows, cols) = (usize::from(rows % 6), usize::from(cols % 6));
    let array = ndarray::Array2::from_shape_fn((rows, cols), |(r, c)| (r * 10 + c) as f32 + 0.5);
    let view = array.slice(ndarray::s![..;isize::from(step % 2) + 1, ..]);
    count(1);
    if let Ok(value) = Value::from_view(view) {
        with(&value);
    };
}

/// A value that fits a model input: its element type, symbolic dims as `n` (mod 4), so runs get
/// past the input checks and into ORT.
pub fn fitting(info: &ValueInfo, n: u8, fill: u64) -> Option<Value<'static>> {
    let shape: Vec<i64> =
        info.shape.iter().map(|d| if let Dim::Fixed(d) = d { *d } else { i64::from(n % 4) }).collect();
    let len = shape.iter().product::<i64>().max(0) as usize;
    let ty = info.element_type?;
    let tensor = |shape: &[i64], len: usize| -> Option<Value<'static>> {
        count(1);
        if ty == ElementType::String {
            let strings: Vec<String> = (0..len).map(|i| format!("s{}", fill.wrapping_add(i as u64) % 97)).collect();
            return Value::from_strings(shape, &strings).ok();
        }
        let index = ELEMENT_ORDER.iter().position(|&t| t == ty)? as u8;
        with_data!(index, len, fill, |d| Value::from_vec(shape, d).ok())
    };
    match info.kind {
        ValueKind::Tensor => tensor(&shape, len),
        ValueKind::Sequence => {
            count(1);
            let n = usize::from(n % 3) + 1;
            Value::sequence((0..n).filter_map(|i| tensor(&[i as i64], i)).collect()).ok()
        }
        ValueKind::Optional => {
            count(1);
            Value::none(ValueType::Tensor(ty)).ok()
        }
        _ => None,
    }
}

/// The element types in `with_data!`'s order.
const ELEMENT_ORDER: [ElementType; 17] = [
    ElementType::F32,
    ElementType::F64,
    ElementType::F16,
    ElementType::BF16,
    ElementType::I8,
    ElementType::I16,
    ElementType::I32,
    ElementType::I64,
    ElementType::U8,
    ElementType::U16,
    ElementType::U32,
    ElementType::U64,
    ElementType::Bool,
    ElementType::F8E4M3Fn,
    ElementType::F8E4M3Fnuz,
    ElementType::F8E5M2,
    ElementType::F8E5M2Fnuz,
];
