//! The safe way to register a plugin execution provider: only a library the crate can vouch for,
//! the library of a plugin bundle pinned in vendor-manifest.toml (its size and sha256, compiled in
//! by the build as [`onnxrt_sys::PINNED_PLUGINS`]), the bundle `onnxrt-dist assemble` provides and
//! verifies as it does the runtime. Any other file is refused before ORT loads anything.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::api::api;
use crate::env::Environment;
use crate::error::{Error, Result};

pub use onnxrt_sys::PinnedPlugin;

/// Every plugin bundle this crate pins (vendor-manifest.toml): its name, the library's path inside
/// it, size and sha256. What [`Environment::register_pinned_provider_library`] accepts, for a
/// program that finds a bundle's library by the bundle's name.
pub fn pinned_plugins() -> &'static [PinnedPlugin] {
    onnxrt_sys::PINNED_PLUGINS
}

impl Environment {
    /// Registers the plugin provider library at `path` under `name`, as
    /// [`register_provider_library`](Environment::register_provider_library) does, but only if the
    /// file is the unchanged library of a pinned plugin bundle (vendor-manifest.toml, e.g.
    /// `webgpu-plugin-0.4.0-registry`: `onnxrt-dist assemble webgpu-plugin-0.4.0-registry` prints
    /// its folder; the library is `lib/libonnxruntime_providers_webgpu.so` there). Its size and
    /// sha256 are checked against the pins compiled into this crate before ORT loads it; returns
    /// the bundle's name.
    ///
    /// Keep the file where only trusted users can write (as the runtime itself): it is read twice,
    /// once here and once by ORT.
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.22, or before the plugin's minimum
    /// runtime (1.24 for the WebGPU plugin 0.4.0); [`Error::PluginNotPinned`] for a file that is
    /// no pinned library (another file, or one changed) or cannot be read;
    /// ORT's errors as for [`register_provider_library`](Environment::register_provider_library).
    pub fn register_pinned_provider_library(&self, name: &str, path: &Path) -> Result<&'static str> {
        let api = api()?;
        api.needs(22, "Environment::register_pinned_provider_library (RegisterExecutionProviderLibrary)")?;
        let pin = pinned(path, onnxrt_sys::PINNED_PLUGINS)?;
        api.needs(
            api_level_of(pin.min_ort_version),
            "Environment::register_pinned_provider_library (the plugin's oldest runtime)",
        )?;
        // SAFETY: the file is, byte for byte, the library of a plugin bundle this crate pins (size
        // and sha256 from vendor-manifest.toml), made for ORT's plugin API from the runtime
        // version checked above on.
        unsafe { self.register_provider_library(name, path) }?;
        Ok(pin.dist)
    }
}

/// The C API level of ORT `1.x.y` (its minor version).
fn api_level_of(version: &str) -> u32 {
    version.split('.').nth(1).and_then(|minor| minor.parse().ok()).unwrap_or(u32::MAX)
}

/// The pin `path`'s file matches (size, then sha256), or [`Error::PluginNotPinned`].
fn pinned(path: &Path, pins: &'static [onnxrt_sys::PinnedPlugin]) -> Result<&'static onnxrt_sys::PinnedPlugin> {
    let refuse = |why: String| Error::PluginNotPinned {
        path: path.to_owned(),
        why,
        pinned: pins.iter().map(|p| format!("{} {} (sha256 {})", p.dist, p.library, p.sha256)).collect(),
    };
    let io = |e: std::io::Error| refuse(format!("it cannot be read ({e})"));
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    if !pins.iter().any(|p| p.size == size) {
        return Err(refuse(format!("its size, {size} bytes, is no pinned library's")));
    }
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer).map_err(io)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    pins.iter()
        .find(|p| p.size == size && p.sha256 == digest)
        .ok_or_else(|| refuse(format!("its sha256, {digest}, is no pinned library's")))
}

#[cfg(test)]
mod tests {
    use super::{api_level_of, pinned};
    use crate::Error;

    #[test]
    fn only_a_pinned_file_passes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("libplugin.so");
        std::fs::write(&file, b"abc").expect("write");
        // sha256("abc").
        let sha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let pins: &'static [onnxrt_sys::PinnedPlugin] = Box::leak(Box::new([onnxrt_sys::PinnedPlugin {
            dist: "test-plugin",
            min_ort_version: "1.24.4",
            library: "lib/libplugin.so",
            size: 3,
            sha256: sha,
        }]));
        assert_eq!(pinned(&file, pins).expect("pinned").dist, "test-plugin");
        std::fs::write(&file, b"abd").expect("write");
        let error = pinned(&file, pins).expect_err("changed");
        assert!(matches!(&error, Error::PluginNotPinned { why, .. } if why.contains("sha256")), "{error:?}");
        std::fs::write(&file, b"abcd").expect("write");
        assert!(matches!(pinned(&file, pins), Err(Error::PluginNotPinned { .. })));
        assert!(matches!(pinned(&dir.path().join("none.so"), pins), Err(Error::PluginNotPinned { .. })));
        assert_eq!(api_level_of("1.24.4"), 24);
    }

    #[test]
    fn the_build_compiled_in_the_webgpu_plugin_pin() {
        let webgpu = super::pinned_plugins().iter().find(|p| p.dist.starts_with("webgpu-plugin-")).expect("pinned");
        assert_eq!(webgpu.library, "lib/libonnxruntime_providers_webgpu.so");
        assert_eq!(webgpu.sha256.len(), 64);
    }
}
