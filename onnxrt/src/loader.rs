//! Finding and loading the runtime library, without `LD_LIBRARY_PATH`.
//!
//! Search order (a failure lists every place tried and why):
//! 1. a path given in code ([`crate::init_from`]);
//! 2. `ONNXRT_DYLIB_PATH` (a file, or a folder holding `libonnxruntime.so*`);
//! 3. `<exe dir>/onnxruntime/lib` (a deployment bundle made by `onnxrt bundle`);
//! 4. the verified library recorded at build time ([`onnxrt_sys::BUILD_LIBRARY`]).
//!
//! No silent fallback: a place the user chose (1, 2) or a bundle that exists (3) but does not load
//! is an error, never quietly replaced by the next candidate; only places that do not exist are
//! skipped.
//!
//! With the `link` feature the runtime is linked instead and none of this runs.

use std::path::{Path, PathBuf};

use crate::error::{Error, LoadAttempt};

/// The library stays loaded for the life of the process: ORT does not support being unloaded
/// while any of its objects or threads exist, so it is never closed.
pub(crate) struct Loaded {
    pub(crate) base: *const onnxrt_sys::OrtApiBase,
    pub(crate) path: PathBuf,
}

/// Candidate paths in search order, each with where it came from.
pub(crate) fn candidates(explicit: Option<&Path>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(path) = explicit {
        out.push((GIVEN_IN_CODE.to_owned(), path.to_owned()));
    }
    if let Some(value) = std::env::var_os("ONNXRT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        out.push(("ONNXRT_DYLIB_PATH".to_owned(), PathBuf::from(value)));
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        out.push(("the bundle beside the executable".to_owned(), dir.join("onnxruntime").join("lib")));
    }
    out.push(("recorded at build time".to_owned(), PathBuf::from(onnxrt_sys::BUILD_LIBRARY)));
    out
}

/// Places the user named (in code or in the environment): if they fail, nothing else is tried.
fn chosen_by_user(origin: &str) -> bool {
    origin == GIVEN_IN_CODE || origin == "ONNXRT_DYLIB_PATH"
}

const GIVEN_IN_CODE: &str = "given in code";

/// Resolves a folder to the library inside it.
fn library_in(path: &Path) -> Option<PathBuf> {
    if !path.is_dir() {
        return Some(path.to_owned());
    }
    let versioned = Path::new(onnxrt_sys::BUILD_LIBRARY).file_name().map(|f| path.join(f));
    let usual = [versioned, Some(path.join("libonnxruntime.so")), Some(path.join("libonnxruntime.so.1"))];
    usual.into_iter().flatten().find(|p| p.exists()).or_else(|| {
        // Any versioned runtime in the folder (e.g. a bundle of a newer release).
        std::fs::read_dir(path)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so.")))
    })
}

/// Loads the first candidate that works.
#[cfg(not(feature = "link"))]
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, Error> {
    let mut tried = Vec::new();
    for (origin, path) in candidates(explicit) {
        let Some(file) = library_in(&path) else {
            tried.push(LoadAttempt { origin: origin.clone(), path, why: "folder holds no libonnxruntime.so*".into() });
            if chosen_by_user(&origin) {
                break;
            }
            continue;
        };
        if !file.exists() {
            tried.push(LoadAttempt { origin: origin.clone(), path: file, why: "no such file".into() });
            if chosen_by_user(&origin) {
                break;
            }
            continue;
        }
        // SAFETY: loading runs the library's initialisers; ONNX Runtime's only set up static
        // tables. The handle is leaked below, so symbols taken from it stay valid forever.
        let library = match unsafe { libloading::Library::new(&file) } {
            Ok(library) => library,
            Err(e) => {
                // It exists but does not load (unreadable, wrong architecture, missing deps): say so.
                tried.push(LoadAttempt { origin, path: file, why: e.to_string() });
                break;
            }
        };
        // SAFETY: every ORT release exports `OrtGetApiBase` with this signature.
        let symbol =
            unsafe { library.get::<unsafe extern "C" fn() -> *const onnxrt_sys::OrtApiBase>(b"OrtGetApiBase\0") };
        let get_base = match symbol {
            Ok(symbol) => *symbol,
            Err(e) => {
                tried.push(LoadAttempt { origin, path: file, why: format!("not an ONNX Runtime library: {e}") });
                break;
            }
        };
        std::mem::forget(library);
        // SAFETY: the library stays loaded (forgotten above); the function takes no arguments
        // and returns a pointer to a static struct.
        let base = unsafe { get_base() };
        if base.is_null() {
            tried.push(LoadAttempt { origin, path: file, why: "OrtGetApiBase returned null".into() });
            break;
        }
        return Ok(Loaded { base, path: file });
    }
    Err(Error::RuntimeNotFound { tried })
}

/// Link mode: the dynamic loader already mapped the runtime (NEEDED + rpath).
#[cfg(feature = "link")]
pub(crate) fn load(_explicit: Option<&Path>) -> Result<Loaded, Error> {
    // SAFETY: the linked ORT exports this function; it returns a pointer to a static struct.
    let base = unsafe { onnxrt_sys::OrtGetApiBase() };
    if base.is_null() {
        return Err(Error::RuntimeNotFound {
            tried: vec![LoadAttempt {
                origin: "linked".into(),
                path: PathBuf::from(onnxrt_sys::BUILD_LIBRARY),
                why: "OrtGetApiBase returned null".into(),
            }],
        });
    }
    Ok(Loaded { base, path: PathBuf::from(onnxrt_sys::BUILD_LIBRARY) })
}
