//! Arbitrary shapes, element types, strings and data through every `Value` constructor and
//! reader: each call returns `Ok` or `Err`, never crashes or panics, and what is read back agrees
//! with what was built.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use onnxrt::half::{self, bf16, f16};
use onnxrt::ndarray::Dimension;
use onnxrt::{ndarray, Element, ElementType, Error, Value, ValueKind};

/// At most this many elements are allocated for one tensor (the shape may claim more).
const MAX_ELEMENTS: usize = 4096;

#[derive(Arbitrary, Debug)]
enum Build {
    /// `Value::from_vec` of element type `ty` (mod 13), `len` elements (capped), any shape.
    Vec { ty: u8, shape: Vec<i64>, len: u16, fill: u64 },
    /// `Value::from_vec` with a shape made consistent with the data (product = len).
    Exact { ty: u8, dims: Vec<u8>, fill: u64 },
    /// `Value::from_strings`.
    Strings { shape: Vec<i64>, strings: Vec<String> },
    /// `Value::from_view` over a (possibly transposed or sliced) 2-D array.
    View { rows: u8, cols: u8, transpose: bool, step: u8 },
    /// `Value::from_array` of a dynamic-rank array.
    Array { dims: Vec<u8>, transpose: bool },
    /// `Value::scalar`.
    Scalar { ty: u8, fill: u64 },
    /// `Value::sequence` of several builds.
    Sequence(Vec<Build>),
}

fn data<T: Element>(len: usize, fill: u64, make: impl Fn(u64) -> T) -> Vec<T> {
    (0..len as u64).map(|i| make(fill.wrapping_mul(i + 1))).collect()
}

macro_rules! by_type {
    ($ty:expr, $len:expr, $fill:expr, |$data:ident| $body:expr) => {
        match $ty % 13 {
            0 => {
                let $data = data($len, $fill, |v| v as f32);
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
            _ => {
                let $data = data($len, $fill, |v| v & 1 == 1);
                $body
            }
        }
    };
}

/// Builds with `from_vec` and checks a success against the inputs.
fn from_vec<T: Element + PartialEq + std::fmt::Debug>(shape: &[i64], data: Vec<T>) -> Option<Value<'static>> {
    let built = Value::from_vec(shape, data.clone());
    let valid_shape = shape.iter().all(|&d| d >= 0)
        && shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d as usize)) == Some(data.len());
    match built {
        Ok(value) => {
            assert!(valid_shape, "{shape:?} with {} elements was accepted", data.len());
            let info = value.tensor_info().expect("tensor info of a new tensor");
            assert_eq!(info.element_type, T::TYPE);
            assert_eq!(info.shape, shape);
            // ndarray needs the product of the non-zero dims to fit in isize; ORT and
            // Value::from_vec accept such empty tensors (e.g. [0, i64::MAX, 2]), view refuses them.
            let viewable = shape
                .iter()
                .filter(|&&d| d != 0)
                .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize))
                .is_some_and(|n| n <= isize::MAX as usize);
            let view = match value.view::<T>() {
                Ok(view) => view,
                Err(Error::InvalidArgument { .. }) if !viewable => return Some(value),
                Err(e) => panic!("view of a new {shape:?} tensor: {e}"),
            };
            assert!(view.iter().zip(&data).all(|(a, b)| a == b || format!("{a:?}") == format!("{b:?}")));
            assert_eq!(view.len(), data.len());
            Some(value)
        }
        // A shape whose element count fits in usize but whose dims overflow i64 on the way (e.g.
        // [i64::MAX, 2, 0]) passes our check and is refused by ORT: still a typed error.
        Err(Error::Ort { .. }) if valid_shape && data.is_empty() => None,
        Err(e) => {
            assert!(!valid_shape, "{shape:?} with {} elements was refused: {e}", data.len());
            None
        }
    }
}

fn build(b: &Build, depth: usize) -> Option<Value<'static>> {
    match b {
        Build::Vec { ty, shape, len, fill } => {
            let len = usize::from(*len).min(MAX_ELEMENTS);
            by_type!(*ty, len, *fill, |d| from_vec(shape, d))
        }
        Build::Exact { ty, dims, fill } => {
            let dims: Vec<i64> = dims.iter().take(6).map(|&d| i64::from(d % 8)).collect();
            let len = dims.iter().product::<i64>() as usize;
            by_type!(*ty, len, *fill, |d| from_vec(&dims, d))
        }
        Build::Strings { shape, strings } => match Value::from_strings(shape, strings) {
            Ok(value) => {
                let back = value.strings().expect("strings of a new string tensor");
                assert_eq!(&back, strings);
                let bytes = value.string_bytes().expect("bytes");
                assert_eq!(bytes.len(), strings.len());
                assert!(value.view::<u8>().is_err());
                Some(value)
            }
            Err(_) => None,
        },
        Build::View { rows, cols, transpose, step } => {
            let (rows, cols) = (usize::from(*rows % 32), usize::from(*cols % 32));
            let array = ndarray::Array2::from_shape_fn((rows, cols), |(r, c)| (r * 100 + c) as f32);
            let step = isize::from(*step % 3) + 1;
            let view = array.slice(ndarray::s![..;step, ..]);
            let view = if *transpose { view.reversed_axes() } else { view };
            let expected = view.to_owned();
            match Value::from_view(view) {
                Ok(value) => {
                    let back = value.to_array::<f32>().expect("read back");
                    assert_eq!(back.into_dimensionality::<ndarray::Ix2>().ok(), Some(expected));
                }
                Err(Error::NotContiguous { .. }) => assert!(!view.is_standard_layout()),
                Err(e) => panic!("from_view: unexpected {e}"),
            }
            None // the value borrows `array`; it cannot leave this function
        }
        Build::Array { dims, transpose } => {
            let dims: Vec<usize> = dims.iter().take(5).map(|&d| usize::from(d % 6)).collect();
            let array = ndarray::ArrayD::from_shape_fn(dims, |i| i.slice().iter().sum::<usize>() as i32);
            let array = if *transpose { array.reversed_axes() } else { array };
            let expected = array.clone();
            let value = Value::from_array(array).expect("any owned array is accepted");
            assert_eq!(value.to_array::<i32>().expect("read back"), expected);
            Some(value)
        }
        Build::Scalar { ty, fill } => by_type!(*ty, 1, *fill, |d| from_vec(&[], d)),
        Build::Sequence(members) => {
            if depth > 2 {
                return None;
            }
            let values: Vec<Value<'static>> = members.iter().take(8).filter_map(|m| build(m, depth + 1)).collect();
            let count = values.len();
            let types: Vec<Option<ElementType>> =
                values.iter().map(|v| v.tensor_info().ok().map(|i| i.element_type)).collect();
            match Value::sequence(values) {
                Ok(seq) => {
                    assert!(count > 0 && types.iter().all(|t| t.is_some() && *t == types[0]));
                    assert_eq!(seq.kind().expect("kind"), ValueKind::Sequence);
                    assert_eq!(seq.sequence_items().expect("items").len(), count);
                    Some(seq)
                }
                Err(_) => {
                    assert!(count == 0 || types.iter().any(|t| t.is_none() || *t != types[0]));
                    None
                }
            }
        }
    }
}

/// Every reader on a value: each returns `Ok` or `Err`.
fn read_all(value: &Value<'_>) {
    let kind = value.kind().expect("kind");
    let info = value.tensor_info();
    assert_eq!(info.is_ok(), kind == ValueKind::Tensor);
    let _ = format!("{value:?}");
    let _ = value.view::<f32>();
    let _ = value.view::<bool>();
    let _ = value.to_array::<i64>();
    let _ = value.to_array::<half::f16>();
    let _ = value.strings();
    let _ = value.string_bytes();
    let _ = value.map_entries();
    if let Ok(items) = value.sequence_items() {
        assert_eq!(kind, ValueKind::Sequence);
        for item in &items {
            read_all(item);
        }
    }
}

fuzz_target!(|builds: Vec<Build>| {
    for b in builds.iter().take(16) {
        if let Some(value) = build(b, 0) {
            read_all(&value);
        }
    }
});
