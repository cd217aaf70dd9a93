//! One output of `onnxrt run` for people: type, shape, statistics (min, max, mean over the finite
//! values, NaN and Inf counts) and the first values, plus its elements as numbers (for
//! `--compare`) and as a `.npy` array (for `--output-dir`) where the type allows.

use onnxrt::{ElementType, Value, ValueKind};

use crate::error::Result;
use crate::npy::{Npy, NpyData};

/// Values shown per output.
const PREVIEW: usize = 8;

/// One output, read.
pub struct Shown {
    /// `f32`, or what the value is when not a tensor.
    pub type_name: String,
    /// The concrete shape (empty for a scalar; `None` when not a tensor).
    pub shape: Option<Vec<i64>>,
    /// The first values, as text.
    pub values: String,
    /// Every element as a number (numeric and bool tensors).
    pub numbers: Option<Vec<f64>>,
    /// The array to save, for the types `.npy` files here hold.
    pub npy: Option<Npy>,
}

/// Min, max and mean of the finite values, and how many are NaN or infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Smallest finite value (`None` when there is none).
    pub min: Option<f64>,
    /// Largest finite value.
    pub max: Option<f64>,
    /// Mean of the finite values.
    pub mean: Option<f64>,
    /// NaN elements.
    pub nan: usize,
    /// Infinite elements.
    pub inf: usize,
}

/// The statistics of `numbers`.
pub fn stats(numbers: &[f64]) -> Stats {
    let (mut min, mut max, mut sum, mut finite, mut nan, mut inf) =
        (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0usize, 0, 0);
    for &x in numbers {
        if x.is_nan() {
            nan += 1;
        } else if x.is_infinite() {
            inf += 1;
        } else {
            min = min.min(x);
            max = max.max(x);
            sum += x;
            finite += 1;
        }
    }
    let some = |x: f64| (finite > 0).then_some(x);
    Stats { min: some(min), max: some(max), mean: some(sum / finite.max(1) as f64), nan, inf }
}

/// A number for a table: integers as such, others with up to 6 significant digits.
pub fn number(x: f64) -> String {
    if x.is_nan() || x.is_infinite() {
        return x.to_string();
    }
    if x == x.trunc() && x.abs() < 1e15 {
        return format!("{x:.0}");
    }
    let magnitude = x.abs().log10().floor() as i32;
    if (-4..6).contains(&magnitude) {
        let decimals = (5 - magnitude).max(0) as usize;
        let text = format!("{x:.decimals$}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        format!("{x:.4e}")
    }
}

fn list<T: std::fmt::Display>(values: impl Iterator<Item = T>, total: usize) -> String {
    let shown: Vec<String> = values.take(PREVIEW).map(|v| v.to_string()).collect();
    let more = if total > PREVIEW { format!(", … ({total} values)") } else { String::new() };
    format!("[{}{more}]", shown.join(", "))
}

/// Reads `value` for display.
pub fn show(value: &Value<'_>) -> Result<Shown> {
    let kind = value.kind()?;
    if kind != ValueKind::Tensor {
        let what = match kind {
            ValueKind::Sequence => format!("sequence of {} values", value.sequence_items()?.len()),
            other => format!("{other:?}").to_lowercase(),
        };
        return Ok(Shown { type_name: what, shape: None, values: "(not a tensor)".into(), numbers: None, npy: None });
    }
    let info = value.tensor_info()?;
    let total = info.len();
    macro_rules! tensor {
        ($t:ty, $as_f64:expr, $variant:path) => {{
            let array = value.view::<$t>()?;
            let numbers: Vec<f64> = array.iter().map($as_f64).collect();
            (list(array.iter(), total), Some(numbers), Some($variant(array.iter().copied().collect())))
        }};
        ($t:ty, $as_f64:expr) => {{
            let array = value.view::<$t>()?;
            (list(array.iter(), total), Some(array.iter().map($as_f64).collect()), None)
        }};
        ($t:ty) => {{
            let array = value.view::<$t>()?;
            (list(array.iter(), total), None, None)
        }};
    }
    let (values, numbers, npy): (String, Option<Vec<f64>>, Option<NpyData>) = match info.element_type {
        ElementType::F32 => tensor!(f32, |&x| f64::from(x), NpyData::F32),
        ElementType::F64 => tensor!(f64, |&x| x, NpyData::F64),
        ElementType::I32 => tensor!(i32, |&x| f64::from(x), NpyData::I32),
        ElementType::I64 => tensor!(i64, |&x| x as f64, NpyData::I64),
        ElementType::U8 => tensor!(u8, |&x| f64::from(x), NpyData::U8),
        ElementType::Bool => tensor!(bool, |&x| f64::from(u8::from(x)), NpyData::Bool),
        ElementType::I8 => tensor!(i8, |&x| f64::from(x)),
        ElementType::I16 => tensor!(i16, |&x| f64::from(x)),
        ElementType::U16 => tensor!(u16, |&x| f64::from(x)),
        ElementType::U32 => tensor!(u32, |&x| f64::from(x)),
        ElementType::U64 => tensor!(u64, |&x| x as f64),
        ElementType::F16 => tensor!(onnxrt::half::f16, |x| x.to_f64()),
        ElementType::BF16 => tensor!(onnxrt::half::bf16, |x| x.to_f64()),
        ElementType::F8E4M3Fn => tensor!(onnxrt::F8E4M3Fn),
        ElementType::F8E4M3Fnuz => tensor!(onnxrt::F8E4M3Fnuz),
        ElementType::F8E5M2 => tensor!(onnxrt::F8E5M2),
        ElementType::F8E5M2Fnuz => tensor!(onnxrt::F8E5M2Fnuz),
        ElementType::String => (list(value.strings()?.iter().map(|s| format!("{s:?}")), total), None, None),
        _ => ("(values of this type cannot be read)".into(), None, None),
    };
    let shape: Vec<usize> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
    Ok(Shown {
        type_name: info.element_type.to_string(),
        shape: Some(info.shape),
        values,
        numbers,
        npy: npy.map(|data| Npy { shape, data }),
    })
}

/// A file name for an output name (which may hold `/` or `:`).
pub fn file_name_for(output: &str) -> String {
    let safe: String =
        output.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    format!("{}.npy", safe.trim_start_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statistics_skip_nan_and_inf_and_count_them() {
        let s = stats(&[1.0, f64::NAN, -2.0, f64::INFINITY, 4.0]);
        assert_eq!((s.min, s.max, s.mean, s.nan, s.inf), (Some(-2.0), Some(4.0), Some(1.0), 1, 1));
        let s = stats(&[f64::NAN]);
        assert_eq!((s.min, s.mean, s.nan), (None, None, 1));
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.123456789), "0.123457");
        assert_eq!(number(1.5e-7), "1.5000e-7");
        assert_eq!(file_name_for("logits:0/a"), "logits_0_a.npy");
        assert_eq!(file_name_for("../x"), "_x.npy");
    }
}
