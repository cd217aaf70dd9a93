//! Plugin providers (ONNX Runtime ≥ 1.22's device API): the library a config names, registered
//! once per process however many models name it, through onnxrt's pinned registration (only the
//! unchanged library of a bundle pinned in vendor-manifest.toml loads), and the provider's device
//! chosen from those ORT lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use onnxrt::ep_device::EpDevice;
use onnxrt::{Environment, Error, SessionBuilder};

/// The libraries this process registered, by the path given to ORT, with the name they were
/// registered under (or why the registration failed: it is not tried again).
static REGISTERED: Mutex<BTreeMap<PathBuf, Result<String, String>>> = Mutex::new(BTreeMap::new());

/// `builder` with device `device` of `provider`, from the plugin `library` (registered now if
/// this process has not yet), and `options`.
pub(super) fn apply(
    builder: SessionBuilder,
    library: &str,
    provider: &str,
    device: usize,
    options: &[(String, String)],
) -> onnxrt::Result<SessionBuilder> {
    let env = Environment::global()?;
    // ORT before 1.22 has no plugins: NeedsNewerRuntime, before looking for the library.
    env.ep_devices()?;
    let path = library_path(library)?;
    register_once(&env, &path)?;
    let devices: Vec<EpDevice> = env.ep_devices()?.into_iter().filter(|d| names(&d.provider, provider)).collect();
    let Some(chosen) = devices.get(device) else {
        let seen: Vec<String> = env.ep_devices()?.iter().map(ToString::to_string).collect();
        return Err(Error::InvalidArgument {
            what: format!("device {device} of provider `{provider}` from the plugin {library}"),
            why: format!(
                "the plugin offers {} device(s) for it; the devices ORT lists: {seen:?}. {}",
                devices.len(),
                onnxrt::ep_device::discovery_note()
            ),
        });
    };
    let options: Vec<(&str, &str)> = options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Ok(builder.providers_for_devices(std::slice::from_ref(chosen), &options))
}

/// Whether ORT's provider name `listed` is the provider the config named (`webgpu`,
/// `WebGpuExecutionProvider`, any case).
fn names(listed: &str, named: &str) -> bool {
    listed.eq_ignore_ascii_case(named) || listed.eq_ignore_ascii_case(&format!("{named}ExecutionProvider"))
}

/// Registers `path` unless this process did, under any name of the same file (a failed
/// registration fails the same way again).
fn register_once(env: &Environment, path: &Path) -> onnxrt::Result<()> {
    // A bundle's name and its library's path are one registration.
    let canonical = std::fs::canonicalize(path);
    let path = canonical.as_deref().unwrap_or(path);
    let mut registered = REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(done) = registered.get(path) {
        return done.clone().map(drop).map_err(|why| Error::InvalidArgument {
            what: format!("the plugin library {}", path.display()),
            why: format!("its registration failed earlier in this process: {why}"),
        });
    }
    let name = format!("serve-plugin-{}", registered.len());
    let outcome = env.register_pinned_provider_library(&name, path);
    registered.insert(path.to_owned(), outcome.as_ref().map(|_| name).map_err(ToString::to_string));
    outcome.map(drop)
}

/// The library of `library`: a path as given, or a pinned bundle's library in onnxrt's cache
/// (where `onnxrt-dist assemble BUNDLE` put it; the size is checked here, the sha256 by
/// onnxrt's registration).
fn library_path(library: &str) -> onnxrt::Result<PathBuf> {
    let Some(pin) = onnxrt::pinned_plugins().iter().find(|p| p.dist == library) else {
        return Ok(PathBuf::from(library));
    };
    let cache = cache_root();
    // A bundle lies in `<cache>/<sha256>/<its folder>/`: the library's place two levels down.
    let folders = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir).map(|entries| entries.flatten().map(|e| e.path()).collect()).unwrap_or_default()
    };
    let found =
        cache.as_deref().map(folders).unwrap_or_default().iter().flat_map(|d| folders(d)).find(|bundle| {
            std::fs::metadata(bundle.join(pin.library)).is_ok_and(|m| m.is_file() && m.len() == pin.size)
        });
    let found = found.map(|bundle| bundle.join(pin.library));
    found.ok_or_else(|| Error::InvalidArgument {
        what: format!("the plugin bundle {library}"),
        why: format!(
            "its library ({}) is not in onnxrt's cache ({}); run `onnxrt-dist assemble {library}` first, or give the library's path",
            pin.library,
            cache.map_or_else(|| "none: HOME unset".to_owned(), |c| c.display().to_string())
        ),
    })
}

/// onnxrt's cache: `ONNXRT_CACHE_DIR`, else `$XDG_CACHE_HOME/onnxrt`, else `~/.cache/onnxrt`.
fn cache_root() -> Option<PathBuf> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    absolute("ONNXRT_CACHE_DIR")
        .or_else(|| absolute("XDG_CACHE_HOME").map(|d| d.join("onnxrt")))
        .or_else(|| absolute("HOME").map(|h| h.join(".cache/onnxrt")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_provider_is_named_as_ort_lists_it_or_shorter() {
        assert!(super::names("WebGpuExecutionProvider", "webgpu"));
        assert!(super::names("WebGpuExecutionProvider", "WebGpuExecutionProvider"));
        assert!(super::names("OpenVINOExecutionProvider", "openvino"));
        assert!(!super::names("CPUExecutionProvider", "webgpu"));
    }
}
