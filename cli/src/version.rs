//! `onnxrt version [--json]`: this command's version, and the runtime it loads: version, library
//! path and which step of the search order found it (`ONNXRT_DYLIB_PATH`, the bundle beside the
//! executable, the path recorded at build time).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::error::Result;
use crate::output;

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The search step (origin, place) that holds `library`, the file the runtime was loaded from.
pub fn found_via(library: &Path) -> Option<(String, PathBuf)> {
    let loaded = canonical(library);
    onnxrt::search_paths().into_iter().find(|(_, place)| {
        if place.is_dir() {
            library.parent() == Some(place.as_path()) || loaded.parent() == Some(canonical(place).as_path())
        } else {
            canonical(place) == loaded
        }
    })
}

fn features() -> &'static str {
    if cfg!(feature = "cuda") {
        "cuda"
    } else {
        "none"
    }
}

/// Runs `version`.
pub fn run(as_json: bool) -> Result<()> {
    let cli = env!("CARGO_PKG_VERSION");
    let info = onnxrt::runtime_info();
    if as_json {
        let runtime = match &info {
            Ok(i) => {
                let via = found_via(&i.library);
                json!({
                    "version": i.version,
                    "api_level": i.api_level,
                    "library": i.library.display().to_string(),
                    "found_via": via.as_ref().map(|(origin, _)| origin.clone()),
                    "found_in": via.as_ref().map(|(_, place)| place.display().to_string()),
                    "build_version": i.build_version,
                    "build_source": i.build_source,
                })
            }
            Err(e) => json!({ "error": e.to_string() }),
        };
        output::print_json(&json!({ "onnxrt_cli": cli, "features": features(), "runtime": runtime }))?;
    } else {
        output::outln(&format!("onnxrt {cli} (features: {})", features()))?;
    }
    let info = info?;
    if !as_json {
        let via = match found_via(&info.library) {
            Some((origin, place)) => format!("{origin} ({})", place.display()),
            None => "unknown (not one of the search paths)".into(),
        };
        output::out(&output::key_values(&[
            ("runtime", format!("ONNX Runtime {} (C API {})", info.version, info.api_level)),
            ("library", info.library.display().to_string()),
            ("found via", via),
            ("built with", format!("ONNX Runtime {} from {}", info.build_version, info.build_source)),
        ]))?;
    }
    Ok(())
}
