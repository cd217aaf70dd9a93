//! The ORT release a provider library was built for, against the loaded runtime's: ORT loads a
//! `libonnxruntime_providers_cuda.so` of another release without a word, and it then crashes or
//! misbehaves. Only the CUDA provider library embeds its release (`onnxrt_preflight::release`);
//! one that embeds none is not judged.

use std::path::Path;

use onnxrt_preflight::release::{self, Verdict};

use super::{Row, Status};

/// The row for the provider library at `path` (`short`: `cuda`), against the runtime `version`
/// loaded from `runtime`; `None` for the libraries that embed no release.
pub fn row(short: &str, path: &Path, runtime: Option<(&str, &Path)>) -> Option<Row> {
    if short != "cuda" {
        return None;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let check = format!("{name}: ORT release");
    let Some((version, runtime)) = runtime else {
        return Some(Row::new(check, Status::Skip, "the runtime did not load: no version to compare with"));
    };
    let found = release::release_strings(path).unwrap_or_default();
    Some(match release::compare(&found, version) {
        Verdict::Same => Row::new(check, Status::Ok, format!("built for ONNX Runtime {version}, the runtime's release")),
        Verdict::Unknown => Row::new(
            check,
            Status::Skip,
            format!(
                "{} names no single ONNX Runtime release ({}): not compared with the runtime's {version}",
                path.display(),
                if found.is_empty() { "none embedded".to_owned() } else { format!("several: {}", found.join(", ")) }
            ),
        ),
        Verdict::Other(other) => Row::new(
            check,
            Status::Fail,
            format!(
                "{} was built for ONNX Runtime {other}, but the runtime loaded is {version} ({}): ONNX Runtime does not check this, and a provider library of another release can crash the process or misbehave",
                path.display(),
                runtime.display()
            ),
        )
        .fix(format!(
            "copy {name} and libonnxruntime_providers_shared.so from the ONNX Runtime {version} distribution, the one libonnxruntime.so comes from, into {} (`onnxrt bundle BINARY DIR` copies the runtime with its own provider libraries; `onnxrt fetch` prints the distribution's folder), or load the {other} runtime instead",
            path.parent().unwrap_or(Path::new(".")).display()
        )),
    })
}
