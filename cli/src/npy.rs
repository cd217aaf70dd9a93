//! NumPy `.npy` files for `onnxrt run`, read and written with the `ndarray-npy` crate: `f32`,
//! `f64`, `i32`, `i64`, `u8` and `bool` arrays (either byte order, C or Fortran order; format
//! 1.0, 2.0 and 3.0). Anything else is refused with what to do in NumPy. Outputs are written
//! little-endian in C order, format 1.0 (2.0 for a very long header), as `numpy.save` does.

use std::path::Path;

use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyError, ReadNpyExt, ReadableElement, WritableElement, WriteNpyExt};
use onnxrt::ndarray::{ArrayD, IxDyn};

use crate::error::{CliError, Result};

const MAGIC: &[u8] = b"\x93NUMPY";

/// The elements of an array, by type.
#[derive(Debug, Clone, PartialEq)]
pub enum NpyData {
    /// `<f4`
    F32(Vec<f32>),
    /// `<f8`
    F64(Vec<f64>),
    /// `<i4`
    I32(Vec<i32>),
    /// `<i8`
    I64(Vec<i64>),
    /// `|u1`
    U8(Vec<u8>),
    /// `|b1`
    Bool(Vec<bool>),
}

/// An array read from or written to a `.npy` file.
#[derive(Debug, Clone, PartialEq)]
pub struct Npy {
    /// The shape (empty for a scalar).
    pub shape: Vec<usize>,
    /// The elements, in C order.
    pub data: NpyData,
}

/// The element types this command reads, by NumPy type code (`f4`, `i8`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    F32,
    F64,
    I32,
    I64,
    U8,
    Bool,
}

/// The element type of a `.npy` type descriptor (`'<f4'`, `'>i8'`, `'|b1'`), if supported here.
/// Every supported type is named here and in [`read_as`]'s dispatch.
fn element_type(descr: &str) -> Option<Kind> {
    let code = descr.strip_prefix(['<', '>', '|', '=']).unwrap_or(descr);
    Some(match code {
        "f4" => Kind::F32,
        "f8" => Kind::F64,
        "i4" => Kind::I32,
        "i8" => Kind::I64,
        "u1" => Kind::U8,
        "b1" => Kind::Bool,
        _ => return None,
    })
}

fn refuse(what: String) -> String {
    format!(
        "{what}; onnxrt run reads float32, float64, int32, int64, uint8 and bool arrays \
         (convert in NumPy: np.save(path, a.astype('<f4')))"
    )
}

/// What went wrong reading the data, for a person.
fn data_error(error: ReadNpyError, kind: Kind) -> String {
    match error {
        ReadNpyError::MissingData => {
            "the .npy data is shorter than its shape says; the file is truncated or damaged".into()
        }
        ReadNpyError::ExtraBytes(n) => {
            format!("the .npy data has {n} bytes more than its shape says; the file is truncated or damaged")
        }
        ReadNpyError::LengthOverflow => "the shape is too large".into(),
        ReadNpyError::ParseData(_) if kind == Kind::Bool => "a bool array holds a byte other than 0 or 1".into(),
        other => other.to_string(),
    }
}

fn read_as<T: ReadableElement>(bytes: &[u8], kind: Kind) -> std::result::Result<Vec<T>, String> {
    let array = ArrayD::<T>::read_npy(bytes).map_err(|e| data_error(e, kind))?;
    // `iter` walks the logical (C) order whatever the file's layout.
    Ok(array.into_iter().collect())
}

/// Decodes the bytes of a `.npy` file.
///
/// # Errors
/// A message saying what is wrong (not a `.npy`, unsupported type, wrong length).
pub fn decode(bytes: &[u8]) -> std::result::Result<Npy, String> {
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err("not a .npy file (no \\x93NUMPY magic); save arrays with numpy.save".into());
    }
    let header = Header::from_reader(&mut &bytes[..]).map_err(|e| format!("the .npy header cannot be read: {e}"))?;
    let descr = header.type_descriptor.as_string().cloned().unwrap_or_else(|| header.type_descriptor.to_string());
    let kind = element_type(&descr).ok_or_else(|| refuse(format!("dtype {descr} is not supported")))?;
    let data = match kind {
        Kind::F32 => NpyData::F32(read_as(bytes, kind)?),
        Kind::F64 => NpyData::F64(read_as(bytes, kind)?),
        Kind::I32 => NpyData::I32(read_as(bytes, kind)?),
        Kind::I64 => NpyData::I64(read_as(bytes, kind)?),
        Kind::U8 => NpyData::U8(read_as(bytes, kind)?),
        Kind::Bool => NpyData::Bool(read_as(bytes, kind)?),
    };
    Ok(Npy { shape: header.shape, data })
}

/// Reads a `.npy` file.
///
/// # Errors
/// [`CliError::Io`] if it cannot be read; [`CliError::Failed`] naming the file and the problem.
pub fn read(path: &Path) -> Result<Npy> {
    let bytes = std::fs::read(path).map_err(CliError::io("cannot read", path))?;
    decode(&bytes).map_err(|why| CliError::Failed(format!("{}: {why}", path.display())))
}

fn encode_as<T: WritableElement + Clone>(shape: &[usize], data: &[T]) -> std::result::Result<Vec<u8>, String> {
    let array = ArrayD::from_shape_vec(IxDyn(shape), data.to_vec())
        .map_err(|e| format!("{} values do not fill shape {shape:?}: {e}", data.len()))?;
    let mut out = Vec::new();
    array.write_npy(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// Encodes an array as a `.npy` file (little-endian, C order).
///
/// # Errors
/// A message if the shape does not match the number of values.
pub fn encode(array: &Npy) -> std::result::Result<Vec<u8>, String> {
    let shape = &array.shape;
    match &array.data {
        NpyData::F32(v) => encode_as(shape, v),
        NpyData::F64(v) => encode_as(shape, v),
        NpyData::I32(v) => encode_as(shape, v),
        NpyData::I64(v) => encode_as(shape, v),
        NpyData::U8(v) => encode_as(shape, v),
        NpyData::Bool(v) => encode_as(shape, v),
    }
}

/// Writes a `.npy` file.
///
/// # Errors
/// [`CliError::Io`] or [`CliError::Failed`] naming the file.
pub fn write(path: &Path, array: &Npy) -> Result<()> {
    let bytes = encode(array).map_err(|why| CliError::Failed(format!("{}: {why}", path.display())))?;
    std::fs::write(path, bytes).map_err(CliError::io("cannot write", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_type_round_trips() {
        let arrays = [
            Npy { shape: vec![2, 3], data: NpyData::F32(vec![1.0, 2.5, -3.0, 0.0, 1e-3, 7.0]) },
            Npy { shape: vec![3], data: NpyData::F64(vec![1.0, 2.0, 3.0]) },
            Npy { shape: vec![], data: NpyData::I32(vec![-7]) },
            Npy { shape: vec![1, 2], data: NpyData::I64(vec![i64::MIN, i64::MAX]) },
            Npy { shape: vec![4], data: NpyData::U8(vec![0, 1, 2, 255]) },
            Npy { shape: vec![2], data: NpyData::Bool(vec![true, false]) },
            Npy { shape: vec![0, 3], data: NpyData::F32(vec![]) },
        ];
        for array in arrays {
            let bytes = encode(&array).expect("encodes");
            let header_end = 10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
            assert_eq!(header_end % 64, 0);
            assert_eq!(decode(&bytes).expect("decodes"), array);
        }
    }

    #[test]
    fn what_numpy_writes_is_read() {
        // numpy.save(f, np.array([[1, 2]], dtype=np.int64)) on a little-endian machine.
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }";
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        let padded = format!("{header:<117}\n");
        bytes.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        bytes.extend_from_slice(padded.as_bytes());
        bytes.extend_from_slice(&1i64.to_le_bytes());
        bytes.extend_from_slice(&2i64.to_le_bytes());
        assert_eq!(decode(&bytes).expect("decodes"), Npy { shape: vec![1, 2], data: NpyData::I64(vec![1, 2]) });
    }

    fn edited(array: &Npy, from: &str, to: &str) -> Vec<u8> {
        let bytes = encode(array).expect("encodes");
        let at = bytes.windows(from.len()).position(|w| w == from.as_bytes()).expect("present");
        let mut out = bytes[..at].to_vec();
        out.extend_from_slice(to.as_bytes());
        out.extend_from_slice(&bytes[at + from.len()..]);
        out
    }

    /// A version 1.0 file written by hand: header dictionary fields and the raw body.
    fn handmade(descr: &str, fortran: &str, shape: &str, body: &[u8]) -> Vec<u8> {
        let dict = format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
        let padded = format!("{dict:<width$}\n", width = (10 + dict.len() + 1).div_ceil(64) * 64 - 11);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[1, 0]);
        bytes.extend_from_slice(&(padded.len() as u16).to_le_bytes());
        bytes.extend_from_slice(padded.as_bytes());
        bytes.extend_from_slice(body);
        bytes
    }

    #[test]
    fn big_endian_and_fortran_order_arrays_are_read_in_c_order() {
        let be: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|x| x.to_be_bytes()).collect();
        let read = decode(&handmade(">f4", "False", "(2,)", &be)).expect("big-endian");
        assert_eq!(read, Npy { shape: vec![2], data: NpyData::F32(vec![1.5, -2.0]) });
        // [[1, 2, 3], [4, 5, 6]] stored column by column.
        let columns: Vec<u8> = [1i32, 4, 2, 5, 3, 6].iter().flat_map(|x| x.to_le_bytes()).collect();
        let read = decode(&handmade("<i4", "True", "(2, 3)", &columns)).expect("fortran order");
        assert_eq!(read, Npy { shape: vec![2, 3], data: NpyData::I32(vec![1, 2, 3, 4, 5, 6]) });
    }

    #[test]
    fn unsupported_arrays_are_refused_with_a_fix() {
        let one = Npy { shape: vec![1], data: NpyData::F32(vec![1.0]) };
        let err = decode(&edited(&one, "<f4", "<c8")).expect_err("complex");
        assert!(err.contains("dtype <c8 is not supported") && err.contains("np.save"), "{err}");
        assert!(decode(&edited(&one, "<f4", "<f2")).expect_err("f16").contains("<f2 is not supported"));
        assert!(decode(b"hello world").expect_err("magic").contains("not a .npy"));
        let four = encode(&Npy { shape: vec![4], data: NpyData::I32(vec![1, 2, 3, 4]) }).expect("encodes");
        assert!(decode(&four[..four.len() - 1]).expect_err("short").contains("truncated"));
        let bools = Npy { shape: vec![1], data: NpyData::U8(vec![2]) };
        assert!(decode(&edited(&bools, "|u1", "|b1")).expect_err("bool").contains("0 or 1"));
    }
}
