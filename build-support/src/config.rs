//! Every `ONNXRT_*` variable, read in one place.
//!
//! | variable | effect |
//! |---|---|
//! | `ONNXRT_LIB_DIR` | use an installed runtime (its `lib` folder); bytes not verified, version checked |
//! | `ONNXRT_INCLUDE_DIR` | headers for `ONNXRT_LIB_DIR` (default: `../include` beside it) |
//! | `ONNXRT_ARCHIVE` | a local copy of the archive (air-gapped delivery), verified like a download |
//! | `ONNXRT_ARCHIVE_SHA256` | your pin for a distribution the manifest leaves unpinned |
//! | `ONNXRT_CACHE_DIR` | cache folder (default `$XDG_CACHE_HOME/onnxrt` or `~/.cache/onnxrt`) |
//! | `ONNXRT_MIRROR` | base URL that serves the same file names as the official release |
//! | `ONNXRT_OFFLINE=1` (or `CARGO_NET_OFFLINE=true`) | never download |
//! | `ONNXRT_DIST` | which manifest entry (default: the manifest's `default`) |
//! | `ONNXRT_DOWNLOAD_TIMEOUT` | seconds without progress before a download attempt fails (default 60) |
//!
//! ORT's own `ORT_*` variables (used by the `ort` crate) are deliberately not read: a shell set up
//! for another crate must not silently redirect this build.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::manifest::Manifest;

/// Everything that decides where the runtime comes from.
#[derive(Debug, Clone)]
pub struct Config {
    /// The pinned distributions.
    pub manifest: Manifest,
    /// Name of the distribution to provide.
    pub dist: String,
    /// An existing install's library folder.
    pub lib_dir: Option<PathBuf>,
    /// Headers for `lib_dir`.
    pub include_dir: Option<PathBuf>,
    /// A local archive to verify and install.
    pub archive: Option<PathBuf>,
    /// The user's pin for an unpinned distribution.
    pub archive_sha256: Option<String>,
    /// The cache folder.
    pub cache_dir: PathBuf,
    /// Base URL replacing the manifest URL's folder.
    pub mirror: Option<String>,
    /// Why downloads are forbidden, if they are.
    pub offline: Option<String>,
    /// How long a download may go without receiving a byte.
    pub stall_timeout: Duration,
    /// Attempts per download (network errors and 5xx are retried, nothing else).
    pub attempts: u32,
    /// Names of the variables read, for `cargo:rerun-if-env-changed`.
    pub vars_read: Vec<&'static str>,
}

struct EnvReader {
    read: Vec<&'static str>,
}

impl EnvReader {
    /// The single place that reads the environment; it remembers what it read.
    fn var(&mut self, name: &'static str) -> Option<String> {
        self.read.push(name);
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

impl Config {
    /// Reads the configuration from the environment and the built-in manifest.
    pub fn from_env() -> Result<Config> {
        Config::from_env_with(Manifest::builtin()?)
    }

    /// Reads the configuration from the environment, with a given manifest.
    pub fn from_env_with(manifest: Manifest) -> Result<Config> {
        let mut env = EnvReader { read: Vec::new() };
        let dist = env.var("ONNXRT_DIST").unwrap_or_else(|| manifest.default.clone());
        manifest.dist(&dist)?;
        let archive_sha256 = match env.var("ONNXRT_ARCHIVE_SHA256") {
            Some(v) if crate::manifest::is_sha256(&v.to_ascii_lowercase()) => Some(v.to_ascii_lowercase()),
            Some(v) => {
                return Err(Error::BadVariable {
                    var: "ONNXRT_ARCHIVE_SHA256",
                    value: v,
                    why: "expected 64 hex digits".into(),
                })
            }
            None => None,
        };
        let offline = match (env.var("ONNXRT_OFFLINE"), env.var("CARGO_NET_OFFLINE")) {
            (Some(v), _) if v != "0" => Some(format!("ONNXRT_OFFLINE={v}")),
            (_, Some(v)) if v == "true" || v == "1" => Some(format!("CARGO_NET_OFFLINE={v}")),
            _ => None,
        };
        let stall_timeout = match env.var("ONNXRT_DOWNLOAD_TIMEOUT") {
            Some(v) => Duration::from_secs(v.parse().map_err(|_| Error::BadVariable {
                var: "ONNXRT_DOWNLOAD_TIMEOUT",
                value: v.clone(),
                why: "expected a whole number of seconds".into(),
            })?),
            None => Duration::from_secs(60),
        };
        let cache_dir = match env.var("ONNXRT_CACHE_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => match (env.var("XDG_CACHE_HOME"), env.var("HOME")) {
                (Some(xdg), _) => PathBuf::from(xdg).join("onnxrt"),
                (None, Some(home)) => PathBuf::from(home).join(".cache").join("onnxrt"),
                (None, None) => {
                    return Err(Error::BadVariable {
                        var: "HOME",
                        value: String::new(),
                        why: "unset, so there is no default cache; set ONNXRT_CACHE_DIR".into(),
                    })
                }
            },
        };
        Ok(Config {
            lib_dir: env.var("ONNXRT_LIB_DIR").map(PathBuf::from),
            include_dir: env.var("ONNXRT_INCLUDE_DIR").map(PathBuf::from),
            archive: env.var("ONNXRT_ARCHIVE").map(PathBuf::from),
            mirror: env.var("ONNXRT_MIRROR"),
            manifest,
            dist,
            archive_sha256,
            cache_dir,
            offline,
            stall_timeout,
            attempts: 3,
            vars_read: env.read,
        })
    }

    /// A configuration that reads nothing from the environment (for tests and tools).
    pub fn new(manifest: Manifest, dist: &str, cache_dir: PathBuf) -> Result<Config> {
        manifest.dist(dist)?;
        Ok(Config {
            manifest,
            dist: dist.to_owned(),
            lib_dir: None,
            include_dir: None,
            archive: None,
            archive_sha256: None,
            cache_dir,
            mirror: None,
            offline: None,
            stall_timeout: Duration::from_secs(60),
            attempts: 3,
            vars_read: Vec::new(),
        })
    }
}
