//! NumPy `.npy` files for `onnxrt run`, read and written here (a small format, not worth the
//! `ndarray-npy` crate's Python-literal parser and big-integer dependencies at install): `f32`,
//! `f64`, `i32`, `i64`, `u8` and `bool` arrays (either byte order, C or Fortran order; format
//! 1.0, 2.0 and 3.0). Anything else is refused with what to do in NumPy. Outputs are written
//! little-endian in C order, format 1.0 (2.0 for a very long header), as `numpy.save` does.

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

impl Kind {
    fn size(self) -> usize {
        match self {
            Kind::F32 | Kind::I32 => 4,
            Kind::F64 | Kind::I64 => 8,
            Kind::U8 | Kind::Bool => 1,
        }
    }
}

/// The element type and byte order (true: big-endian) of a `.npy` type descriptor (`'<f4'`,
/// `'>i8'`, `'|b1'`), if supported here.
fn element_type(descr: &str) -> Option<(Kind, bool)> {
    let (order, code) = match descr.chars().next()? {
        c @ ('<' | '>' | '|' | '=') => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let big = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    let kind = match code {
        "f4" => Kind::F32,
        "f8" => Kind::F64,
        "i4" => Kind::I32,
        "i8" => Kind::I64,
        "u1" => Kind::U8,
        "b1" => Kind::Bool,
        _ => return None,
    };
    Some((kind, big))
}

fn refuse(what: String) -> String {
    format!(
        "{what}; onnxrt run reads float32, float64, int32, int64, uint8 and bool arrays \
         (convert in NumPy: np.save(path, a.astype('<f4')))"
    )
}

/// The header's dictionary: `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// The text after `'key':` in the header dictionary (either quote style).
fn value_of<'h>(header: &'h str, key: &str) -> std::result::Result<&'h str, String> {
    let at = [format!("'{key}'"), format!("\"{key}\"")]
        .iter()
        .find_map(|quoted| header.find(quoted.as_str()).map(|at| at + quoted.len()))
        .ok_or_else(|| format!("the .npy header has no '{key}'"))?;
    let rest = header[at..].trim_start();
    rest.strip_prefix(':').map(str::trim_start).ok_or_else(|| format!("the .npy header's '{key}' has no value"))
}

fn parse_header(header: &str) -> std::result::Result<Header, String> {
    let bad = |what: &str| format!("the .npy header's {what} cannot be read: {header:?}");
    let descr = value_of(header, "descr")?;
    let quote = descr.chars().next().filter(|c| *c == '\'' || *c == '"').ok_or_else(|| bad("'descr'"))?;
    let descr = descr[1..].split(quote).next().ok_or_else(|| bad("'descr'"))?.to_owned();
    let fortran = value_of(header, "fortran_order")?;
    let fortran_order = if fortran.starts_with("True") {
        true
    } else if fortran.starts_with("False") {
        false
    } else {
        return Err(bad("'fortran_order'"));
    };
    let shape = value_of(header, "shape")?;
    let inside = shape.strip_prefix('(').and_then(|s| s.split(')').next()).ok_or_else(|| bad("'shape'"))?;
    let shape = inside
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.trim_end_matches('L').parse::<usize>().map_err(|_| bad("'shape'")))
        .collect::<std::result::Result<Vec<usize>, String>>()?;
    Ok(Header { descr, fortran_order, shape })
}

/// The C-order positions of the elements of a Fortran-order array of `shape`: entry `i` is where
/// the `i`th stored element goes.
fn fortran_to_c(shape: &[usize]) -> Vec<usize> {
    let total: usize = shape.iter().product();
    let mut c_strides = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        c_strides[i] = c_strides[i + 1] * shape[i + 1];
    }
    (0..total)
        .map(|mut f| {
            let mut c = 0;
            for (d, &len) in shape.iter().enumerate() {
                c += (f % len) * c_strides[d];
                f /= len;
            }
            c
        })
        .collect()
}

fn elements<T: Copy + Default, const N: usize>(
    body: &[u8],
    big: bool,
    order: Option<&[usize]>,
    from: fn([u8; N]) -> T,
) -> Vec<T> {
    let mut out = vec![T::default(); body.len() / N];
    for (i, chunk) in body.chunks_exact(N).enumerate() {
        let mut bytes: [u8; N] = chunk.try_into().unwrap_or([0; N]);
        if big {
            bytes.reverse();
        }
        out[order.map_or(i, |o| o[i])] = from(bytes);
    }
    out
}

/// Decodes the bytes of a `.npy` file (format 1.0, 2.0 or 3.0).
///
/// # Errors
/// A message saying what is wrong (not a `.npy`, unsupported type, wrong length).
pub fn decode(bytes: &[u8]) -> std::result::Result<Npy, String> {
    if bytes.len() < 10 || !bytes.starts_with(MAGIC) {
        return Err("not a .npy file (no \\x93NUMPY magic); save arrays with numpy.save".into());
    }
    let (len, start): (usize, usize) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => return Err(format!("the .npy format version {v}.{} is not supported (1.0 to 3.0 are)", bytes[7])),
    };
    let end = start.checked_add(len).filter(|&e| e <= bytes.len()).ok_or("the .npy header is cut short")?;
    let header = String::from_utf8_lossy(&bytes[start..end]);
    let header = parse_header(&header)?;
    let (kind, big) =
        element_type(&header.descr).ok_or_else(|| refuse(format!("dtype {} is not supported", header.descr)))?;
    let count = header.shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let size = count.and_then(|n| n.checked_mul(kind.size())).ok_or("the shape is too large")?;
    let body = &bytes[end..];
    if body.len() < size {
        return Err("the .npy data is shorter than its shape says; the file is truncated or damaged".into());
    }
    if body.len() > size {
        return Err(format!(
            "the .npy data has {} bytes more than its shape says; the file is truncated or damaged",
            body.len() - size
        ));
    }
    let order = (header.fortran_order && header.shape.len() > 1).then(|| fortran_to_c(&header.shape));
    let order = order.as_deref();
    let data = match kind {
        Kind::F32 => NpyData::F32(elements(body, big, order, f32::from_le_bytes)),
        Kind::F64 => NpyData::F64(elements(body, big, order, f64::from_le_bytes)),
        Kind::I32 => NpyData::I32(elements(body, big, order, i32::from_le_bytes)),
        Kind::I64 => NpyData::I64(elements(body, big, order, i64::from_le_bytes)),
        Kind::U8 => NpyData::U8(elements(body, big, order, |[b]: [u8; 1]| b)),
        Kind::Bool => {
            if body.iter().any(|&b| b > 1) {
                return Err("a bool array holds a byte other than 0 or 1".into());
            }
            NpyData::Bool(elements(body, big, order, |[b]: [u8; 1]| b == 1))
        }
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

/// Encodes an array as a `.npy` file (little-endian, C order; format 1.0, or 2.0 for a header
/// longer than 65535 bytes), its header padded so that the data starts at a multiple of 64.
///
/// # Errors
/// A message if the shape does not match the number of values.
pub fn encode(array: &Npy) -> std::result::Result<Vec<u8>, String> {
    fn le<T, const N: usize>(values: &[T], to: fn(T) -> [u8; N]) -> Vec<u8>
    where
        T: Copy,
    {
        values.iter().flat_map(|&v| to(v)).collect()
    }
    let (descr, count, body) = match &array.data {
        NpyData::F32(v) => ("<f4", v.len(), le(v, f32::to_le_bytes)),
        NpyData::F64(v) => ("<f8", v.len(), le(v, f64::to_le_bytes)),
        NpyData::I32(v) => ("<i4", v.len(), le(v, i32::to_le_bytes)),
        NpyData::I64(v) => ("<i8", v.len(), le(v, i64::to_le_bytes)),
        NpyData::U8(v) => ("|u1", v.len(), v.clone()),
        NpyData::Bool(v) => ("|b1", v.len(), v.iter().map(|&b| u8::from(b)).collect()),
    };
    let shape = &array.shape;
    if shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)) != Some(count) {
        return Err(format!("{count} values do not fill shape {shape:?}"));
    }
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    let preamble = if dict.len() + 11 <= usize::from(u16::MAX) { 10 } else { 12 };
    let total = (preamble + dict.len() + 1).div_ceil(64) * 64;
    let header = format!("{dict:<width$}\n", width = total - preamble - 1);
    let mut out = MAGIC.to_vec();
    if preamble == 10 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&body);
    Ok(out)
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
    fn three_dimensional_fortran_order_and_format_2_are_read() {
        // a[i][j][k] = 100i + 10j + k for shape (2, 3, 2), stored with i varying fastest.
        let mut stored = Vec::new();
        for k in 0..2 {
            for j in 0..3 {
                for i in 0..2 {
                    stored.extend_from_slice(&(100 * i + 10 * j + k as i64).to_le_bytes());
                }
            }
        }
        let read = decode(&handmade("<i8", "True", "(2, 3, 2)", &stored)).expect("fortran order");
        let c_order: Vec<i64> =
            (0..2).flat_map(|i| (0..3).flat_map(move |j| (0..2).map(move |k| 100 * i + 10 * j + k))).collect();
        assert_eq!(read, Npy { shape: vec![2, 3, 2], data: NpyData::I64(c_order) });
        // Format 2.0: a four-byte header length.
        let dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }";
        let padded = format!("{dict:<51}\n");
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&[2, 0]);
        bytes.extend_from_slice(&(padded.len() as u32).to_le_bytes());
        bytes.extend_from_slice(padded.as_bytes());
        bytes.extend_from_slice(&2.5f64.to_le_bytes());
        assert_eq!(decode(&bytes).expect("format 2.0"), Npy { shape: vec![], data: NpyData::F64(vec![2.5]) });
        // Cut anywhere, an error and never a panic.
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "{cut}");
        }
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
