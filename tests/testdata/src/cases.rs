//! Discovery of ONNX backend test cases on disk.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{DecodeError, Dim, Tensor, TensorData};

/// The folders under the backend data root that hold runnable cases.
///
/// `real/` is left out: it only has `data.json` files pointing at downloads.
pub const CASE_GROUPS: [&str; 5] = ["node", "simple", "pytorch-converted", "pytorch-operator", "light"];

/// One backend test case: a model and its data sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestCase {
    /// The group folder it came from, e.g. `"node"`.
    pub group: String,
    /// The case folder name (`test_abs`), or for `light/` the model file stem
    /// (`light_resnet50`).
    pub name: String,
    /// The model file.
    pub model: PathBuf,
    /// Its data sets, sorted by folder name.
    pub data_sets: Vec<DataSet>,
}

/// One `test_data_set_*` folder: the inputs to feed and the outputs to expect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataSet {
    /// The folder holding the files.
    pub dir: PathBuf,
    /// `input_N.pb` files, sorted by N.
    pub inputs: Vec<PathBuf>,
    /// `output_N.pb` files, sorted by N.
    pub outputs: Vec<PathBuf>,
    /// True for `light/` models, which ship no input files: the ONNX runner feeds each input
    /// the tensor that [`light_input`] builds from the declared shape.
    pub generated_inputs: bool,
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, DecodeError> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| DecodeError::io(dir, &e))? {
        paths.push(entry.map_err(|e| DecodeError::io(dir, &e))?.path());
    }
    paths.sort();
    Ok(paths)
}

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// Files named `<prefix><N>.pb`, sorted by N (so `input_10` follows `input_9`).
fn numbered_files(files: &[PathBuf], prefix: &str) -> Vec<PathBuf> {
    let mut numbered: Vec<(u64, PathBuf)> = files
        .iter()
        .filter_map(|p| {
            let n = file_name(p).strip_prefix(prefix)?.strip_suffix(".pb")?;
            Some((n.parse().ok()?, p.clone()))
        })
        .collect();
    numbered.sort();
    numbered.into_iter().map(|(_, p)| p).collect()
}

fn folder_case(group: &str, dir: &Path) -> Result<Option<TestCase>, DecodeError> {
    let model = dir.join("model.onnx");
    if !model.is_file() {
        return Ok(None);
    }
    let mut data_sets = Vec::new();
    for sub in read_dir_sorted(dir)? {
        if !sub.is_dir() || !file_name(&sub).starts_with("test_data_set_") {
            continue;
        }
        let files = read_dir_sorted(&sub)?;
        data_sets.push(DataSet {
            inputs: numbered_files(&files, "input_"),
            outputs: numbered_files(&files, "output_"),
            dir: sub,
            generated_inputs: false,
        });
    }
    Ok(Some(TestCase { group: group.to_string(), name: file_name(dir).to_string(), model, data_sets }))
}

/// `light/` keeps `light_<name>.onnx` next to `light_<name>_output_<N>.pb`, with no inputs.
fn light_cases(dir: &Path) -> Result<Vec<TestCase>, DecodeError> {
    let files = read_dir_sorted(dir)?;
    let mut cases = Vec::new();
    for model in &files {
        let Some(stem) = file_name(model).strip_suffix(".onnx") else {
            continue;
        };
        let outputs = numbered_files(&files, &format!("{stem}_output_"));
        let data_sets = if outputs.is_empty() {
            Vec::new()
        } else {
            vec![DataSet { dir: dir.to_path_buf(), inputs: Vec::new(), outputs, generated_inputs: true }]
        };
        cases.push(TestCase { group: "light".to_string(), name: stem.to_string(), model: model.clone(), data_sets });
    }
    Ok(cases)
}

/// Lists the backend test cases under `root` (an `onnx/backend/test/data` folder).
///
/// Covers the groups in [`CASE_GROUPS`]; missing groups are skipped, as are folders
/// without a `model.onnx`. Cases come out sorted by group order, then name.
pub fn case_dirs(root: impl AsRef<Path>) -> Result<Vec<TestCase>, DecodeError> {
    let root = root.as_ref();
    let mut cases = Vec::new();
    for group in CASE_GROUPS {
        let dir = root.join(group);
        if !dir.is_dir() {
            continue;
        }
        if group == "light" {
            cases.extend(light_cases(&dir)?);
            continue;
        }
        for sub in read_dir_sorted(&dir)? {
            if sub.is_dir() {
                cases.extend(folder_case(group, &sub)?);
            }
        }
    }
    Ok(cases)
}

/// The input the ONNX runner generates for a `light/` model: float32 `arange(n) / n` in the
/// declared shape, with every non-fixed dimension taken as 1.
pub fn light_input(shape: &[Dim]) -> Result<Tensor, DecodeError> {
    let dims: Vec<i64> = shape
        .iter()
        .map(|d| match d {
            Dim::Value(v) => *v,
            _ => 1,
        })
        .collect();
    let n = dims.iter().try_fold(1usize, |acc, &d| {
        let d = usize::try_from(d).map_err(|_| DecodeError::Malformed(format!("negative dimension {d}")))?;
        acc.checked_mul(d).ok_or_else(|| DecodeError::Malformed("element count overflows usize".into()))
    })?;
    // numpy divides in float64 and then casts, so do the same to match bit for bit.
    let values = (0..n).map(|i| (i as f64 / n as f64) as f32).collect();
    Ok(Tensor { name: String::new(), dims, data: TensorData::F32(values) })
}

/// Finds the backend test data of the installed `onnx` Python package.
///
/// Honors `ONNXRT_ONNX_BACKEND_DATA` first; otherwise asks `python3` where `onnx` lives.
/// Returns `None` when neither yields an existing folder.
pub fn onnx_backend_data_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("ONNXRT_ONNX_BACKEND_DATA") {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    let out =
        Command::new("python3").args(["-c", "import onnx, os; print(os.path.dirname(onnx.__file__))"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let package = String::from_utf8(out.stdout).ok()?;
    let dir = Path::new(package.trim()).join("backend/test/data");
    dir.is_dir().then_some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_sorting() {
        let files: Vec<PathBuf> =
            ["input_10.pb", "input_2.pb", "output_0.pb", "input_x.pb"].iter().map(PathBuf::from).collect();
        assert_eq!(numbered_files(&files, "input_"), vec![PathBuf::from("input_2.pb"), PathBuf::from("input_10.pb")]);
    }

    #[test]
    fn light_input_matches_numpy() {
        let t = light_input(&[Dim::Param("N".into()), Dim::Value(2), Dim::Unknown]).expect("builds");
        assert_eq!(t.dims, vec![1, 2, 1]);
        assert_eq!(t.data, TensorData::F32(vec![0.0, 0.5]));
        assert!(light_input(&[Dim::Value(-3)]).is_err());
        assert!(light_input(&[Dim::Value(i64::MAX), Dim::Value(i64::MAX)]).is_err());
    }
}
