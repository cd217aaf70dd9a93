//! cuDNN's sub-libraries. `libcudnn.so.N` is only a front: it `dlopen`s the libraries that hold
//! the kernels when they are first needed (cuDNN 9: `libcudnn_engines_precompiled.so.9` at the
//! first convolution; cuDNN 8: `libcudnn_cnn_infer.so.8`), so no `NEEDED` entry lists them and a
//! missing one shows only at run time, as `CUDNN_STATUS_INTERNAL_ERROR` or "Could not load
//! library libcudnn_cnn_infer.so.8". They are resolved the way that `dlopen` from inside
//! `libcudnn.so.N` would (its RPATH/RUNPATH, `LD_LIBRARY_PATH`, the cache, the system folders)
//! and checked as complete libraries.

use std::path::Path;

use super::elf;
use super::search::{Found, Searcher};
use super::{Row, Status};

pub use onnxrt_preflight::cudnn::sub_libraries;

/// The row for the sub-libraries of `front`, found at `found` (already checked complete).
/// `None` when `front` is not a cuDNN front library.
pub fn row(searcher: &Searcher, short: &str, front: &str, found: &Found, missing_status: Status) -> Option<Row> {
    let subs = sub_libraries(front);
    if subs.is_empty() {
        return None;
    }
    let major = &front["libcudnn.so.".len()..];
    let check = format!("{short}: cuDNN {major} sub-libraries");
    let origin = found.path.parent().unwrap_or(Path::new("/"));
    let dynamic = match elf::read_dynamic(&found.path) {
        Ok(dynamic) => dynamic,
        // The front library's own row says what is wrong with it.
        Err(_) => return None,
    };
    let (mut missing, mut damaged, mut places) = (Vec::new(), Vec::new(), Vec::new());
    for sub in subs {
        match searcher.resolve(sub, &dynamic, origin) {
            None => missing.push(*sub),
            Some(at) => match elf::check_complete(&at.path) {
                Ok(_) => {
                    let folder = at.path.parent().map(|p| p.display().to_string()).unwrap_or_default();
                    if !places.contains(&folder) {
                        places.push(folder);
                    }
                }
                Err(why) => {
                    damaged.push(format!("{} ({why}; {})", at.path.display(), searcher.picked(&at, &dynamic, origin)))
                }
            },
        }
    }
    let front_dir = origin.display();
    if missing.is_empty() && damaged.is_empty() {
        return Some(Row::new(
            check,
            Status::Ok,
            format!(
                "{front} loads {} at run time (not NEEDED entries): all found complete in {}",
                subs.join(", "),
                places.join(", ")
            ),
        ));
    }
    let mut parts = Vec::new();
    if !damaged.is_empty() {
        parts.push(format!("damaged: {}", damaged.join("; ")));
    }
    if !missing.is_empty() {
        parts.push(format!(
            "missing: {} (searched as {front} at {} would: {})",
            missing.join(", "),
            found.path.display(),
            searcher.searched(&dynamic, origin)
        ));
    }
    let symptom = if major == "9" {
        "CUDNN_STATUS_INTERNAL_ERROR or CUDNN_STATUS_NOT_INITIALIZED at the first convolution"
    } else {
        "\"Could not load library libcudnn_cnn_infer.so.8\" at the first convolution"
    };
    let mut fix = format!(
        "install the complete cuDNN {major} release: every libcudnn_*.so.{major} beside {front} in {front_dir} (they ship together; mixing releases does not work)"
    );
    if !damaged.is_empty() {
        fix.push_str("; replace each damaged file with a complete copy of the same release, or take its folder off LD_LIBRARY_PATH");
    }
    Some(
        Row::new(
            check,
            missing_status,
            format!(
                "{front} loads its sub-libraries at run time, and {}: sessions build, then fail with {symptom}",
                parts.join("; ")
            ),
        )
        .fix(fix),
    )
}
