//! The safe way to register a plugin execution provider: only a library the crate can vouch for,
//! the library of a plugin bundle pinned in vendor-manifest.toml (its size and sha256, compiled in
//! by the build as [`onnxrt_sys::PINNED_PLUGINS`]), the bundle `onnxrt-dist assemble` provides and
//! verifies as it does the runtime. Any other file is refused before ORT loads anything.
//!
//! ORT loads the very bytes that were checked: the file is read once, into a sealed in-memory
//! file (`memfd_create`, sealed against every change) while it is hashed, and ORT loads that copy
//! (`/proc/self/fd/N`). A file replaced or rewritten between the check and the load, or truncated
//! after it, cannot reach ORT. Each pinned library is copied once per process and kept, as the
//! library loaded from it is.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

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

/// The sealed copies made so far, by the sha256 of their pin; never released.
static SEALED: Mutex<Vec<(&'static str, File)>> = Mutex::new(Vec::new());

impl Environment {
    /// Registers the plugin provider library at `path` under `name`, as
    /// [`register_provider_library`](Environment::register_provider_library) does, but only if the
    /// file is the unchanged library of a pinned plugin bundle (vendor-manifest.toml, e.g.
    /// `webgpu-plugin-0.4.0-registry`: `onnxrt-dist assemble webgpu-plugin-0.4.0-registry` prints
    /// its folder; the library is `lib/libonnxruntime_providers_webgpu.so` there). Its size and
    /// sha256 are checked against the pins compiled into this crate before ORT loads it; returns
    /// the bundle's name.
    ///
    /// The file is read once: ORT loads a sealed in-memory copy of exactly the bytes checked (so
    /// [`EpDevice::provider_metadata`](crate::ep_device::EpDevice)'s `library_path` names that copy,
    /// `/proc/self/fd/N`, which needs `/proc`).
    ///
    /// # Errors
    /// [`Error::PluginNotPinned`] for a path that is no regular file (a FIFO, a folder, a
    /// device: refused on every runtime, before anything opens it, so nothing blocks),
    /// cannot be read, or is no pinned library (another file, or one changed);
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.22, or before the plugin's minimum
    /// runtime (1.24 for the WebGPU plugin 0.4.0);
    /// [`Error::ProviderLoad`] where a library the plugin needs is not found (the OpenVINO
    /// plugin's OpenVINO libraries: its bundle's `lib` folder must be on `LD_LIBRARY_PATH` from
    /// the program's start, since the copy ORT loads lies in no folder);
    /// ORT's errors as for [`register_provider_library`](Environment::register_provider_library).
    pub fn register_pinned_provider_library(&self, name: &str, path: &Path) -> Result<&'static str> {
        let api = api()?;
        let file = open_regular(path, onnxrt_sys::PINNED_PLUGINS)?;
        api.needs(22, "Environment::register_pinned_provider_library (RegisterExecutionProviderLibrary)")?;
        let (pin, copy) = pinned(file, path, onnxrt_sys::PINNED_PLUGINS)?;
        api.needs(
            api_level_of(pin.min_ort_version),
            "Environment::register_pinned_provider_library (the plugin's oldest runtime)",
        )?;
        // SAFETY: `copy` names a sealed in-memory file holding, byte for byte, the library of a
        // plugin bundle this crate pins (size and sha256 from vendor-manifest.toml; the bytes
        // hashed are the bytes written there, and the seals keep them), made for ORT's plugin API
        // from the runtime version checked above on.
        unsafe { self.register_provider_library(name, &copy) }.map_err(|e| needs_its_folder(e, pin, path))?;
        Ok(pin.dist)
    }
}

/// ORT's failure to load the plugin because a library it needs was not found, as
/// [`Error::ProviderLoad`] naming that library and the folder to put on `LD_LIBRARY_PATH`: the
/// sealed copy lies in no folder, so the plugin's `$ORIGIN` runpath cannot find the libraries
/// beside the file checked. Other errors unchanged.
fn needs_its_folder(error: Error, pin: &PinnedPlugin, path: &Path) -> Error {
    let Error::Ort { message, .. } = &error else { return error };
    let Some(missing) = crate::providers::diagnose::missing_library_in(message) else { return error };
    let parent = path.parent().unwrap_or(Path::new("."));
    let folder = parent.display().to_string();
    let why = "The plugin is loaded from a sealed in-memory copy of the file checked, where its $ORIGIN runpath finds nothing, and the loader reads LD_LIBRARY_PATH only at the program's start";
    // A copy of the plugin's file alone: its folder would not help.
    let fix = if parent.join(&missing).exists() {
        format!(
            "start the program with LD_LIBRARY_PATH={folder} (the bundle's folder holding {missing}; `onnxrt-dist assemble {}` prints it). {why}",
            pin.dist
        )
    } else {
        format!(
            "{folder} does not hold {missing}: copy the bundle's whole lib folder there, or give the bundle's own library, and start the program with LD_LIBRARY_PATH set to the folder holding both (`onnxrt-dist assemble {}` prints the bundle's). {why}",
            pin.dist
        )
    };
    Error::ProviderLoad {
        provider: format!("plugin `{}`", pin.dist),
        library: path.to_owned(),
        cause: message.clone(),
        fix,
        missing: Some(missing),
    }
}

/// The C API level of ORT `1.x.y` (its minor version).
fn api_level_of(version: &str) -> u32 {
    version.split('.').nth(1).and_then(|minor| minor.parse().ok()).unwrap_or(u32::MAX)
}

/// [`Error::PluginNotPinned`] for `path`, saying why.
fn refusal(path: &Path, pins: &[onnxrt_sys::PinnedPlugin], why: String) -> Error {
    Error::PluginNotPinned {
        path: path.to_owned(),
        why,
        pinned: pins.iter().map(|p| format!("{} {} (sha256 {})", p.dist, p.library, p.sha256)).collect(),
    }
}

/// `path` opened for reading if it is a regular file (symlinks followed). Anything else is
/// refused unopened: opening a FIFO blocks until a writer comes (and wakes one that waits), a
/// device may do anything on open. The file opened is looked at again (opened non-blocking,
/// then `fstat`), so one swapped in after the first look cannot block either.
fn open_regular(path: &Path, pins: &[onnxrt_sys::PinnedPlugin]) -> Result<File> {
    let refuse = |why: String| refusal(path, pins, why);
    let io = |e: std::io::Error| refuse(format!("it cannot be read ({e})"));
    let not_a_file = |kind: &str| refuse(format!("it is {kind}, not a regular file"));
    if let Some(kind) = not_regular(std::fs::metadata(path).map_err(io)?.file_type()) {
        return Err(not_a_file(kind));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(io)?;
    match not_regular(file.metadata().map_err(io)?.file_type()) {
        Some(kind) => Err(not_a_file(kind)),
        None => Ok(file),
    }
}

/// What a file that is not a regular one is, in words; `None` for a regular file.
fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let what = if kind.is_file() {
        return None;
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "no regular file"
    };
    Some(what)
}

/// The pin the opened `file` (at `path`) matches (size, then sha256) and the path of a sealed
/// in-memory copy of exactly the bytes hashed, or [`Error::PluginNotPinned`].
fn pinned(
    mut file: File,
    path: &Path,
    pins: &'static [onnxrt_sys::PinnedPlugin],
) -> Result<(&'static onnxrt_sys::PinnedPlugin, PathBuf)> {
    let refuse = |why: String| refusal(path, pins, why);
    let io = |e: std::io::Error| refuse(format!("it cannot be read ({e})"));
    let size = file.metadata().map_err(io)?.len();
    if !pins.iter().any(|p| p.size == size) {
        return Err(refuse(format!("its size, {size} bytes, is no pinned library's")));
    }
    let copy_failed = |e: std::io::Error| refuse(format!("no sealed in-memory copy of it can be made ({e})"));
    let mut copy = memory_file().map_err(copy_failed)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut read = 0u64;
    loop {
        let n = file.read(&mut buffer).map_err(io)?;
        if n == 0 {
            break;
        }
        read += n as u64;
        hasher.update(&buffer[..n]);
        copy.write_all(&buffer[..n]).map_err(copy_failed)?;
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let pin = pins
        .iter()
        .find(|p| p.size == read && p.sha256 == digest)
        .ok_or_else(|| refuse(format!("its sha256, {digest} ({read} bytes), is no pinned library's")))?;
    let mut sealed = SEALED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, kept)) = sealed.iter().find(|(sha, _)| *sha == pin.sha256) {
        return Ok((pin, fd_path(kept)));
    }
    seal(&copy).map_err(copy_failed)?;
    let copy_path = fd_path(&copy);
    sealed.push((pin.sha256, copy));
    Ok((pin, copy_path))
}

/// A new anonymous in-memory file that can be sealed.
fn memory_file() -> std::io::Result<File> {
    // SAFETY: the name is NUL-terminated; the flags are memfd_create's. Returns a new descriptor or -1.
    let fd =
        unsafe { libc::memfd_create(c"onnxrt-pinned-plugin".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and nothing else owns it.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Seals `file` against every change: no write, no growing, no shrinking, no unsealing.
fn seal(file: &File) -> std::io::Result<()> {
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL;
    // SAFETY: a live descriptor of a memfd made with MFD_ALLOW_SEALING; F_ADD_SEALS takes an int.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, seals) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The path through which this process (and ORT in it) opens `file`.
fn fd_path(file: &File) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use std::path::{Path, PathBuf};

    use super::{api_level_of, needs_its_folder, open_regular, pinned};
    use crate::{Error, Result};

    fn check(
        path: &Path,
        pins: &'static [onnxrt_sys::PinnedPlugin],
    ) -> Result<(&'static onnxrt_sys::PinnedPlugin, PathBuf)> {
        pinned(open_regular(path, pins)?, path, pins)
    }

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
        let (pin, copy) = check(&file, pins).expect("pinned");
        assert_eq!(pin.dist, "test-plugin");
        // The copy holds the bytes checked and refuses every change.
        assert_eq!(std::fs::read(&copy).expect("read the copy"), b"abc");
        assert!(std::fs::OpenOptions::new().write(true).open(&copy).and_then(|mut f| f.write_all(b"x")).is_err());
        // The same pin again: the same copy.
        assert_eq!(check(&file, pins).expect("pinned").1, copy);
        std::fs::write(&file, b"abd").expect("write");
        let error = check(&file, pins).expect_err("changed");
        assert!(matches!(&error, Error::PluginNotPinned { why, .. } if why.contains("sha256")), "{error:?}");
        std::fs::write(&file, b"abcd").expect("write");
        assert!(matches!(check(&file, pins), Err(Error::PluginNotPinned { .. })));
        assert!(matches!(check(&dir.path().join("none.so"), pins), Err(Error::PluginNotPinned { .. })));
        // No regular file: refused by what it is, before it is opened.
        for (path, kind) in [(dir.path(), "a directory"), (Path::new("/dev/zero"), "a character device")] {
            let error = check(path, pins).expect_err("no regular file");
            assert!(matches!(&error, Error::PluginNotPinned { why, .. } if why.contains(kind)), "{error:?}");
        }
        assert_eq!(api_level_of("1.24.4"), 24);
    }

    #[test]
    fn a_missing_library_of_the_plugin_names_the_folder_to_set() {
        let openvino = super::pinned_plugins().iter().find(|p| p.dist.starts_with("openvino-plugin-")).expect("pinned");
        assert_eq!(openvino.library, "lib/libonnxruntime_providers_openvino_plugin.so");
        let path =
            Path::new("/cache/entry/onnxruntime-ep-openvino-1.8.1/lib/libonnxruntime_providers_openvino_plugin.so");
        let message = "Failed to load library /proc/self/fd/9 with error: libopenvino_onnx_frontend.so.2641: cannot open shared object file: No such file or directory";
        let ort = Error::Ort {
            function: "RegisterExecutionProviderLibrary",
            code: crate::ErrorCode::Fail,
            message: message.into(),
        };
        let error = needs_its_folder(ort, openvino, path);
        let Error::ProviderLoad { missing, fix, .. } = &error else { panic!("{error:?}") };
        assert_eq!(missing.as_deref(), Some("libopenvino_onnx_frontend.so.2641"));
        // (No such folder here: the advice says the folder lacks the library.)
        assert!(
            fix.contains(
                "/cache/entry/onnxruntime-ep-openvino-1.8.1/lib does not hold libopenvino_onnx_frontend.so.2641"
            ),
            "{fix}"
        );
        // A folder holding it: that folder, on LD_LIBRARY_PATH.
        let bundle = std::env::temp_dir().join(format!("onnxrt-advice-{}", std::process::id()));
        std::fs::create_dir_all(&bundle).expect("folder");
        std::fs::write(bundle.join("libopenvino_onnx_frontend.so.2641"), b"").expect("file");
        let ort = Error::Ort {
            function: "RegisterExecutionProviderLibrary",
            code: crate::ErrorCode::Fail,
            message: message.into(),
        };
        let error = needs_its_folder(ort, openvino, &bundle.join("libonnxruntime_providers_openvino_plugin.so"));
        let _ = std::fs::remove_dir_all(&bundle);
        let Error::ProviderLoad { fix, .. } = &error else { panic!("{error:?}") };
        assert!(fix.contains(&format!("LD_LIBRARY_PATH={} ", bundle.display())), "{fix}");
        // Another failure is ORT's, unchanged.
        let other = Error::Ort {
            function: "RegisterExecutionProviderLibrary",
            code: crate::ErrorCode::Fail,
            message: "x".into(),
        };
        assert!(matches!(needs_its_folder(other, openvino, path), Error::Ort { .. }));
    }

    #[test]
    fn the_build_compiled_in_the_webgpu_plugin_pin() {
        let webgpu = super::pinned_plugins().iter().find(|p| p.dist.starts_with("webgpu-plugin-")).expect("pinned");
        assert_eq!(webgpu.library, "lib/libonnxruntime_providers_webgpu.so");
        assert_eq!(webgpu.sha256.len(), 64);
    }
}
