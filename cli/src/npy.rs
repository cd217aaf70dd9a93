//! NumPy `.npy` files (format 1.0, 2.0, 3.0) for `onnxrt run`: little-endian `f32`, `f64`, `i32`,
//! `i64`, `u8` and `bool`, C order. Anything else is refused with what to do in NumPy.

use std::path::Path;

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

impl NpyData {
    fn descr(&self) -> &'static str {
        match self {
            NpyData::F32(_) => "<f4",
            NpyData::F64(_) => "<f8",
            NpyData::I32(_) => "<i4",
            NpyData::I64(_) => "<i8",
            NpyData::U8(_) => "|u1",
            NpyData::Bool(_) => "|b1",
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            NpyData::F32(v) => v.len(),
            NpyData::F64(v) => v.len(),
            NpyData::I32(v) => v.len(),
            NpyData::I64(v) => v.len(),
            NpyData::U8(v) => v.len(),
            NpyData::Bool(v) => v.len(),
        }
    }
}

fn refuse(what: String) -> String {
    format!(
        "{what}; onnxrt run reads little-endian float32, float64, int32, int64, uint8 and bool arrays in C order \
         (convert in NumPy: np.save(path, np.ascontiguousarray(a, dtype='<f4')))"
    )
}

/// The value of `key` in the header dictionary, as written (`'<f4'`, `False`, `(2, 3)`).
fn header_value<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let start = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[start..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else if let Some(quoted) = rest.strip_prefix('\'') {
        quoted.find('\'')? + 2
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(rest[..end].trim())
}

fn parse_shape(text: &str) -> Option<Vec<usize>> {
    let inner = text.strip_prefix('(')?.strip_suffix(')')?;
    inner.split(',').map(str::trim).filter(|s| !s.is_empty()).map(|s| s.trim_end_matches('L').parse().ok()).collect()
}

fn chunks<const N: usize>(body: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    body.chunks_exact(N).map(|c| {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        a
    })
}

/// Decodes the bytes of a `.npy` file.
///
/// # Errors
/// A message saying what is wrong (not a `.npy`, unsupported type or order, wrong length).
pub fn decode(bytes: &[u8]) -> std::result::Result<Npy, String> {
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err("not a .npy file (no \\x93NUMPY magic); save arrays with numpy.save".into());
    }
    let major = bytes[6];
    let (header_len, offset) = match major {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 => {
            let b = bytes.get(8..12).ok_or("truncated .npy header")?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        other => return Err(format!(".npy format version {other} is not supported (1, 2 and 3 are)")),
    };
    let header = bytes.get(offset..offset + header_len).ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let descr = header_value(header, "descr").ok_or("the .npy header has no 'descr'")?.trim_matches('\'');
    let fortran = header_value(header, "fortran_order").ok_or("the .npy header has no 'fortran_order'")?;
    let shape = header_value(header, "shape").and_then(parse_shape).ok_or("the .npy header has no valid 'shape'")?;
    if fortran != "False" {
        return Err(refuse("the array is in Fortran order".into()));
    }
    let count = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or("the shape is too large")?;
    let body = &bytes[offset + header_len..];
    let size = match descr {
        "<f4" | "<i4" => 4,
        "<f8" | "<i8" => 8,
        "|u1" | "<u1" | "|b1" | "<b1" => 1,
        other if other.starts_with('>') => return Err(refuse(format!("dtype {other} is big-endian"))),
        other => return Err(refuse(format!("dtype {other} is not supported"))),
    };
    let expected = count.checked_mul(size).ok_or("the shape is too large")?;
    if body.len() != expected {
        return Err(format!(
            "the .npy data holds {} bytes but shape {shape:?} of {descr} needs {expected}; the file is truncated or damaged",
            body.len()
        ));
    }
    let data = match descr {
        "<f4" => NpyData::F32(chunks::<4>(body).map(f32::from_le_bytes).collect()),
        "<i4" => NpyData::I32(chunks::<4>(body).map(i32::from_le_bytes).collect()),
        "<f8" => NpyData::F64(chunks::<8>(body).map(f64::from_le_bytes).collect()),
        "<i8" => NpyData::I64(chunks::<8>(body).map(i64::from_le_bytes).collect()),
        "|u1" | "<u1" => NpyData::U8(body.to_vec()),
        _ => {
            if let Some(bad) = body.iter().find(|&&b| b > 1) {
                return Err(format!("a bool array holds the byte {bad}; bools must be 0 or 1"));
            }
            NpyData::Bool(body.iter().map(|&b| b == 1).collect())
        }
    };
    Ok(Npy { shape, data })
}

/// Reads a `.npy` file.
///
/// # Errors
/// [`CliError::Io`] if it cannot be read; [`CliError::Failed`] naming the file and the problem.
pub fn read(path: &Path) -> Result<Npy> {
    let bytes = std::fs::read(path).map_err(CliError::io("cannot read", path))?;
    decode(&bytes).map_err(|why| CliError::Failed(format!("{}: {why}", path.display())))
}

/// Encodes an array as a version 1.0 `.npy` file.
pub fn encode(array: &Npy) -> Vec<u8> {
    let dims: Vec<String> = array.shape.iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}", array.data.descr());
    // Magic (6) + version (2) + length (2) + header + '\n' is padded to a multiple of 64.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + array.data.len() * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    match &array.data {
        NpyData::F32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::F64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::I32(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::I64(v) => v.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        NpyData::U8(v) => out.extend_from_slice(v),
        NpyData::Bool(v) => out.extend(v.iter().map(|&b| u8::from(b))),
    }
    out
}

/// Writes a `.npy` file.
///
/// # Errors
/// [`CliError::Io`] naming the file.
pub fn write(path: &Path, array: &Npy) -> Result<()> {
    std::fs::write(path, encode(array)).map_err(CliError::io("cannot write", path))
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
            let bytes = encode(&array);
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
        let bytes = encode(array);
        let at = bytes.windows(from.len()).position(|w| w == from.as_bytes()).expect("present");
        let mut out = bytes[..at].to_vec();
        out.extend_from_slice(to.as_bytes());
        out.extend_from_slice(&bytes[at + from.len()..]);
        out
    }

    #[test]
    fn unsupported_arrays_are_refused_with_a_fix() {
        let one = Npy { shape: vec![1], data: NpyData::F32(vec![1.0]) };
        let err = decode(&edited(&one, "<f4", ">f4")).expect_err("big-endian");
        assert!(err.contains("big-endian") && err.contains("np.save"), "{err}");
        assert!(decode(&edited(&one, "False", "True ")).expect_err("fortran").contains("Fortran"));
        assert!(decode(&edited(&one, "<f4", "<f2")).expect_err("f16").contains("<f2 is not supported"));
        assert!(decode(b"hello world").expect_err("magic").contains("not a .npy"));
        let four = encode(&Npy { shape: vec![4], data: NpyData::I32(vec![1, 2, 3, 4]) });
        assert!(decode(&four[..four.len() - 1]).expect_err("short").contains("truncated"));
        let bools = Npy { shape: vec![1], data: NpyData::U8(vec![2]) };
        assert!(decode(&edited(&bools, "|u1", "|b1")).expect_err("bool").contains("0 or 1"));
    }
}
