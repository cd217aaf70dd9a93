//! `onnxrt run --compare DIR|FILE --atol A --rtol R`: each output against a reference `.npy`
//! (`DIR/<output>.npy`, the names `--output-dir` writes; a FILE for a model with one output).
//! An element matches when `|got - expected| <= atol + rtol * |expected|` (NumPy's `allclose`),
//! NaN matching NaN. A different shape, or any element off, is a mismatch naming the worst one.

use std::path::{Path, PathBuf};

use crate::error::{CliError, Result};
use crate::npy::{self, NpyData};
use crate::run::show::{file_name_for, number};

/// The tolerances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// Absolute.
    pub atol: f64,
    /// Relative to the expected value.
    pub rtol: f64,
}

/// How one output compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Compared {
    /// The output.
    pub output: String,
    /// The reference file.
    pub reference: PathBuf,
    /// Elements beyond the tolerance (all of them for a shape mismatch).
    pub mismatched: usize,
    /// Elements compared.
    pub total: usize,
    /// Largest `|got - expected|`.
    pub max_abs: f64,
    /// What is wrong, or "ok".
    pub verdict: String,
}

impl Compared {
    /// Whether the output matched.
    pub fn ok(&self) -> bool {
        self.mismatched == 0
    }
}

/// The reference file for `output`: `reference/<output>.npy` for a folder, else the file itself
/// (which needs a model with one output).
pub fn reference_for(reference: &Path, output: &str, outputs: usize) -> Result<PathBuf> {
    if reference.is_dir() {
        return Ok(reference.join(file_name_for(output)));
    }
    if outputs != 1 {
        return Err(CliError::Usage(format!(
            "--compare {} is a file, but the model has {outputs} outputs; pass a folder holding <output>.npy for each",
            reference.display()
        )));
    }
    Ok(reference.to_owned())
}

fn numbers(data: NpyData) -> Vec<f64> {
    match data {
        NpyData::F32(v) => v.into_iter().map(f64::from).collect(),
        NpyData::F64(v) => v,
        NpyData::I32(v) => v.into_iter().map(f64::from).collect(),
        NpyData::I64(v) => v.into_iter().map(|x| x as f64).collect(),
        NpyData::U8(v) => v.into_iter().map(f64::from).collect(),
        NpyData::Bool(v) => v.into_iter().map(|x| f64::from(u8::from(x))).collect(),
    }
}

/// The multi-dimensional index of flat position `at` in `shape` (C order).
fn index_of(mut at: usize, shape: &[i64]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        let d = d.max(1) as usize;
        index[i] = at % d;
        at /= d;
    }
    index
}

/// Compares `got` (an output of shape `shape`) with the `.npy` file `reference`.
///
/// # Errors
/// A reference that cannot be read.
pub fn compare(output: &str, shape: &[i64], got: &[f64], reference: &Path, tol: Tolerance) -> Result<Compared> {
    let expected = npy::read(reference)?;
    let mut compared = Compared {
        output: output.to_owned(),
        reference: reference.to_owned(),
        mismatched: 0,
        total: got.len(),
        max_abs: 0.0,
        verdict: "ok".into(),
    };
    let expected_shape: Vec<i64> = expected.shape.iter().map(|&d| d as i64).collect();
    if expected_shape != shape {
        compared.mismatched = got.len().max(1);
        compared.max_abs = f64::NAN;
        compared.verdict = format!("shape {shape:?}, but the reference is {expected_shape:?}");
        return Ok(compared);
    }
    let expected = numbers(expected.data);
    // (excess over the tolerance, position): the worst is the one furthest beyond it.
    let mut worst: Option<(f64, usize)> = None;
    for (at, (&g, &e)) in got.iter().zip(&expected).enumerate() {
        let diff = (g - e).abs();
        let within = if g.is_nan() || e.is_nan() {
            g.is_nan() && e.is_nan()
        } else if g.is_infinite() || e.is_infinite() {
            g == e
        } else {
            diff <= tol.atol + tol.rtol * e.abs()
        };
        if diff.is_finite() {
            compared.max_abs = compared.max_abs.max(diff);
        }
        if !within {
            compared.mismatched += 1;
            let excess = if diff.is_finite() { diff - (tol.atol + tol.rtol * e.abs()) } else { f64::INFINITY };
            if worst.is_none_or(|(w, _)| excess > w) {
                worst = Some((excess, at));
            }
        }
    }
    if let Some((_, at)) = worst {
        let (g, e) = (got[at], expected[at]);
        compared.verdict = format!(
            "{} of {} elements differ; worst at {:?}: got {}, expected {} (|diff| {})",
            compared.mismatched,
            compared.total,
            index_of(at, shape),
            number(g),
            number(e),
            number((g - e).abs())
        );
    }
    Ok(compared)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_c_order() {
        assert_eq!(index_of(5, &[2, 3]), vec![1, 2]);
        assert_eq!(index_of(0, &[]), Vec::<usize>::new());
        assert_eq!(index_of(7, &[2, 2, 2]), vec![1, 1, 1]);
    }
}
