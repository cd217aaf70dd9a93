//! Plugin providers (ONNX Runtime ≥ 1.22's device API): the library a config names, registered
//! once per pinned library however many models or paths name it, through onnxrt's pinned
//! registration (only the unchanged library of a bundle pinned in vendor-manifest.toml loads), and
//! the provider's device chosen from those ORT lists.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use onnxrt::ep_device::EpDevice;
use onnxrt::{Environment, Error, SessionBuilder};
use sha2::{Digest, Sha256};

use crate::shown::shown;

/// A pinned library's registration in this process (whatever path named it: ORT lists a
/// library registered twice twice), and the turn every run on its devices takes.
#[derive(Default)]
struct Registration {
    /// Whether the library is registered. Only a success is kept: a failed registration
    /// registered nothing, and the next model naming the pin tries again from its own path, so
    /// that its error (the folder to put on `LD_LIBRARY_PATH`, say) is about the path it named.
    registered: Mutex<bool>,
    /// The providers whose devices the registration added to ORT's list (the plugin's own),
    /// for the refusal of a config naming another.
    providers: Mutex<Vec<String>>,
    /// Held around every run of every session on the plugin's devices: the WebGPU plugin 0.4.0
    /// breaks (then crashes) when two sessions run on its device at once.
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // read by the repository's runs
    turn: Arc<Mutex<()>>,
}

/// The registrations, by the pinned bundle's name. Held only to find or add an entry, never
/// while a library is read or registered.
static REGISTERED: Mutex<BTreeMap<&'static str, Arc<Registration>>> = Mutex::new(BTreeMap::new());

/// The pinned bundle each `plugin` a config wrote turned out to be.
static LIBRARIES: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());

/// The turn runs on the plugin `library`'s devices take, once a session was made on one.
#[cfg_attr(not(feature = "server"), allow(dead_code))]
pub(super) fn run_turn(library: &str) -> Option<Arc<Mutex<()>>> {
    let dist = *LIBRARIES.lock().unwrap_or_else(PoisonError::into_inner).get(library)?;
    let registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    registered.get(dist).map(|r| Arc::clone(&r.turn))
}

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
    let dist = register_once(&env, &path)?;
    LIBRARIES.lock().unwrap_or_else(PoisonError::into_inner).insert(library.to_owned(), dist);
    let devices: Vec<EpDevice> = env.ep_devices()?.into_iter().filter(|d| names(&d.provider, provider)).collect();
    let Some(chosen) = devices.get(device) else {
        let seen: Vec<String> = env.ep_devices()?.iter().map(ToString::to_string).collect();
        let own = registration(dist).providers.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let why = if devices.is_empty() && !own.is_empty() {
            // Another provider's name: the plugin's own are known.
            format!("the plugin's devices are of {own:?}, not `{provider}`: name one of those in \"provider\"")
        } else if names("OpenVINOExecutionProvider", provider) {
            // OpenVINO's factory lists Intel devices only (none on an AMD host, say).
            format!(
                "the plugin offers {} device(s) for it; the devices ORT lists: {seen:?}. It offers Intel devices only.",
                devices.len()
            )
        } else {
            format!(
                "the plugin offers {} device(s) for it (`device` counts from 0); the devices ORT lists: {seen:?}. {}",
                devices.len(),
                onnxrt::ep_device::discovery_note()
            )
        };
        return Err(Error::InvalidArgument {
            what: format!("device {device} of provider `{provider}` from the plugin {}", shown(library)),
            why,
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

/// Registers the pinned library at `path` unless this process registered that pin (by any
/// path), and names its bundle. Only regular files are read (a FIFO would block), and only the
/// pin's own lock is held while one is: a slow path delays the models naming that pin, no others.
fn register_once(env: &Environment, path: &Path) -> onnxrt::Result<&'static str> {
    let shown_path = path.display().to_string();
    let refuse =
        |why: String| Error::InvalidArgument { what: format!("the plugin library {}", shown(&shown_path)), why };
    let metadata = std::fs::metadata(path).map_err(|e| refuse(format!("it cannot be read ({e})")))?;
    if metadata.is_dir() {
        return Err(refuse("it is a directory: give the library file (.so) or a pinned bundle's name".into()));
    }
    if !metadata.is_file() {
        return Err(refuse("it is not a regular file".into()));
    }
    let Some(pin) = pin_of(path, metadata.len()) else {
        // No pin's size and sha256: onnxrt's refusal says so (it reads the file itself).
        let name = format!("serve-unpinned-{}", shown(&shown_path));
        let before = listed_providers(env)?;
        let dist = env.register_pinned_provider_library(&name, path)?;
        let entry = registration(dist);
        *entry.registered.lock().unwrap_or_else(PoisonError::into_inner) = true;
        record_own_providers(&entry, env, &before)?;
        return Ok(dist);
    };
    let entry = registration(pin.dist);
    // Held while this pin registers: a second model naming it waits, then finds it registered
    // (ORT would list a library registered twice twice).
    let mut registered = entry.registered.lock().unwrap_or_else(PoisonError::into_inner);
    if !*registered {
        let before = listed_providers(env)?;
        env.register_pinned_provider_library(&format!("serve-{}", pin.dist), path)?;
        *registered = true;
        record_own_providers(&entry, env, &before)?;
    }
    Ok(pin.dist)
}

/// The providers of the devices ORT lists now.
fn listed_providers(env: &Environment) -> onnxrt::Result<Vec<String>> {
    let mut providers: Vec<String> = env.ep_devices()?.into_iter().map(|d| d.provider).collect();
    providers.sort();
    providers.dedup();
    Ok(providers)
}

/// Keeps the providers a registration added (those listed now and not `before`) as the plugin's.
fn record_own_providers(entry: &Registration, env: &Environment, before: &[String]) -> onnxrt::Result<()> {
    let added = listed_providers(env)?.into_iter().filter(|p| !before.contains(p)).collect();
    *entry.providers.lock().unwrap_or_else(PoisonError::into_inner) = added;
    Ok(())
}

/// The entry of bundle `dist`, added if new.
fn registration(dist: &'static str) -> Arc<Registration> {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(registered.entry(dist).or_default())
}

/// The pin whose size and sha256 the file at `path` (of `size` bytes) has, if any (onnxrt checks
/// again when it registers the library).
fn pin_of(path: &Path, size: u64) -> Option<&'static onnxrt::PinnedPlugin> {
    let candidates: Vec<_> = onnxrt::pinned_plugins().iter().filter(|p| p.size == size).collect();
    if candidates.is_empty() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 20];
    loop {
        let n = file.read(&mut buffer).ok()?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    let digest: String = hasher.finalize().iter().map(|b| format!("{b:02x}")).collect();
    candidates.into_iter().find(|p| p.sha256 == digest)
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
