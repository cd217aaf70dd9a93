//! Loads a runtime library just long enough to read its version: the check behind "version read
//! and checked" for runtimes that were not verified by hash (`ONNXRT_LIB_DIR`).

use std::ffi::{c_char, c_void, CStr};
use std::path::Path;

use crate::error::{Error, Result};

/// The first two members of ORT's `OrtApiBase`, the struct `OrtGetApiBase` returns. Its layout is
/// frozen by ORT's ABI promise, so it is declared here by hand instead of through bindgen.
#[repr(C)]
struct ApiBase {
    get_api: unsafe extern "C" fn(version: u32) -> *const c_void,
    get_version_string: unsafe extern "C" fn() -> *const c_char,
}

/// What the probe found.
#[derive(Debug, Clone)]
pub struct Probed {
    /// `GetVersionString()`, e.g. `1.16.2`.
    pub version: String,
    /// Whether `GetApi(api_version)` returned a table.
    pub api_supported: bool,
}

/// Loads `library` and asks it for its version and for C API `api_version`.
pub fn probe(library: &Path, api_version: u32) -> Result<Probed> {
    let fail = |why: String| Error::Probe { path: library.to_owned(), why };
    // SAFETY: loading runs the library's initialisers; ONNX Runtime's are safe to run in any
    // process (the runtime itself does nothing until an environment is created).
    let lib = unsafe { libloading::Library::new(library) }.map_err(|e| fail(e.to_string()))?;
    // SAFETY: `OrtGetApiBase` has this signature in every ORT release (onnxruntime_c_api.h).
    let get_base = unsafe { lib.get::<unsafe extern "C" fn() -> *const ApiBase>(b"OrtGetApiBase\0") }
        .map_err(|e| fail(format!("{e} (not an ONNX Runtime library?)")))?;
    // SAFETY: the symbol is the function declared above; it returns a pointer to a static struct.
    let base = unsafe { get_base() };
    // SAFETY: non-null pointers from OrtGetApiBase point to a static, immutable OrtApiBase.
    let base = unsafe { base.as_ref() }.ok_or_else(|| fail("OrtGetApiBase returned null".into()))?;
    // SAFETY: GetVersionString returns a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr((base.get_version_string)()) }.to_string_lossy().into_owned();
    // SAFETY: GetApi takes any version number and returns null for unsupported ones (it only
    // prints a message to stderr in that case).
    let api_supported = !unsafe { (base.get_api)(api_version) }.is_null();
    Ok(Probed { version, api_supported })
}

/// Whether `version` (`major.minor.patch`) is at least `major.minor`.
pub fn at_least(version: &str, major: u32, minor: u32) -> bool {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    found >= (major, minor)
}

#[cfg(test)]
mod tests {
    #[test]
    fn versions_compare_by_major_and_minor() {
        assert!(super::at_least("1.16.2", 1, 16));
        assert!(super::at_least("1.30.0", 1, 16));
        assert!(!super::at_least("1.15.1", 1, 16));
        assert!(!super::at_least("garbage", 1, 16));
    }
}
