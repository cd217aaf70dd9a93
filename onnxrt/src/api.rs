//! The API table: loaded once per process, asked for C API 16, version-gated beyond it.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use onnxrt_sys::OrtApi;

use crate::error::{Error, Result};
use crate::loader;

/// The loaded runtime and its function table.
pub(crate) struct Api {
    /// ORT's function table, as served for `GetApi(16)`: the fields up to API 16 always exist;
    /// later ones only on newer runtimes, so they are read through [`Api::since`].
    pub(crate) ort: &'static OrtApi,
    /// `GetVersionString()`.
    pub(crate) version: String,
    /// The newest C API the runtime serves (its minor version for 1.x).
    pub(crate) api_level: u32,
    /// The file that was loaded.
    pub(crate) library: PathBuf,
}

// SAFETY: the table is immutable static data inside the runtime library, which is never
// unloaded; ORT documents the API functions as callable from any thread.
unsafe impl Sync for Api {}
// SAFETY: as above; nothing in Api is tied to the thread that created it.
unsafe impl Send for Api {}

static API: OnceLock<std::result::Result<Api, Error>> = OnceLock::new();
static EXPLICIT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The runtime, loaded on first use.
pub(crate) fn api() -> Result<&'static Api> {
    API.get_or_init(|| {
        let explicit = EXPLICIT.lock().ok().and_then(|g| g.clone());
        init(explicit.as_deref())
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Chooses the library before first use; fails if another one is already loaded.
pub(crate) fn init_from(path: &Path) -> Result<()> {
    if let Ok(mut explicit) = EXPLICIT.lock() {
        *explicit = Some(path.to_owned());
    }
    let api = api()?;
    let wanted = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    let loaded = std::fs::canonicalize(&api.library).unwrap_or_else(|_| api.library.clone());
    if wanted.is_dir() && loaded.starts_with(&wanted) || wanted == loaded {
        Ok(())
    } else {
        Err(Error::AlreadyLoaded { loaded: api.library.clone(), requested: path.to_owned() })
    }
}

fn init(explicit: Option<&Path>) -> std::result::Result<Api, Error> {
    let loaded = loader::load(explicit)?;
    // SAFETY: `base` is non-null (checked by the loader) and points to ORT's static OrtApiBase.
    let base = unsafe { &*loaded.base };
    let get_version = base.GetVersionString.ok_or_else(|| Error::missing("GetVersionString"))?;
    // SAFETY: GetVersionString returns a static NUL-terminated string.
    let version = unsafe { CStr::from_ptr(get_version()) }.to_string_lossy().into_owned();
    let get_api = base.GetApi.ok_or_else(|| Error::missing("GetApi"))?;
    // SAFETY: GetApi accepts any number and returns null for versions it does not serve.
    let table = unsafe { get_api(onnxrt_sys::API_VERSION) };
    // SAFETY: a non-null result points to a static table that lives as long as the library.
    let Some(ort) = (unsafe { table.as_ref() }) else {
        return Err(Error::RuntimeTooOld { found: version, required: "1.16".into(), library: loaded.path });
    };
    let api_level = api_level_of(&version);
    Ok(Api { ort, version, api_level, library: loaded.path })
}

/// ORT 1.x serves C API version x.
fn api_level_of(version: &str) -> u32 {
    let mut parts = version.split('.');
    match (parts.next(), parts.next().and_then(|m| m.parse().ok())) {
        (Some("1"), Some(minor)) => minor,
        _ => onnxrt_sys::API_VERSION,
    }
}

impl Api {
    /// The table, if the runtime serves C API `level` (for functions added after 16).
    pub(crate) fn since(&self, level: u32, function: &'static str) -> Result<&'static OrtApi> {
        if self.api_level >= level {
            Ok(self.ort)
        } else {
            Err(Error::Unsupported {
                feature: function.to_owned(),
                since: format!("1.{level}"),
                found: self.version.clone(),
            })
        }
    }
}

impl Api {
    /// The table, if the runtime serves C API `level`, else [`Error::NeedsNewerRuntime`]: the gate
    /// in front of every function added after C API 21 (execution-provider devices, the Compile
    /// API, placement as data, allocator statistics). Reading a field past the end of an older
    /// runtime's table would read memory that is not part of it.
    pub(crate) fn needs(&self, level: u32, feature: &'static str) -> Result<&'static OrtApi> {
        if self.api_level >= level {
            Ok(self.ort)
        } else {
            Err(Error::NeedsNewerRuntime { feature: feature.to_owned(), needs: level, found: self.version.clone() })
        }
    }
}

/// Facts about the runtime in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// ONNX Runtime version, e.g. `1.16.2`.
    pub version: String,
    /// Newest C API version it serves.
    pub api_level: u32,
    /// The library file loaded.
    pub library: PathBuf,
    /// Version this crate was built against.
    pub build_version: &'static str,
    /// Where the build got its runtime.
    pub build_source: &'static str,
}

/// Loads the runtime if needed and describes it.
///
/// # Errors
/// [`Error::RuntimeNotFound`] listing every place searched, or [`Error::RuntimeTooOld`].
pub fn runtime_info() -> Result<RuntimeInfo> {
    let api = api()?;
    Ok(RuntimeInfo {
        version: api.version.clone(),
        api_level: api.api_level,
        library: api.library.clone(),
        build_version: onnxrt_sys::BUILD_VERSION,
        build_source: onnxrt_sys::BUILD_SOURCE,
    })
}

/// Newest default-domain (`ai.onnx`) opset a runtime version supports, from ORT's release notes.
pub(crate) fn max_opset(version: &str) -> u32 {
    match api_level_of(version) {
        0..=16 => 19,
        17 => 20,
        18..=20 => 21,
        21..=22 => 22,
        _ => 23,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn api_level_follows_the_minor_version() {
        assert_eq!(super::api_level_of("1.16.2"), 16);
        assert_eq!(super::api_level_of("1.30.0"), 30);
        assert_eq!(super::api_level_of("2.0.0"), 16);
    }
}
