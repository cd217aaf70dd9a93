//! Provides the ONNX Runtime distribution that `onnxrt-sys` builds against, verified.
//!
//! Resolution order, first hit wins (each result names its [`Source`] in the build log):
//!
//! 1. `ONNXRT_LIB_DIR` (+ optional `ONNXRT_INCLUDE_DIR`): an existing install. Its bytes are not
//!    verified; its version is read by loading it and must be 1.16 or newer.
//! 2. `ONNXRT_ARCHIVE=/path/x.tgz`: a local copy of a manifest archive (air-gapped delivery),
//!    verified against the pinned sha256 exactly like a download.
//! 3. The cache (`ONNXRT_CACHE_DIR`, default `$XDG_CACHE_HOME/onnxrt` or `~/.cache/onnxrt`), keyed
//!    by sha256: a warm build neither downloads nor re-hashes.
//! 4. A download of the manifest URL (or the same file name under `ONNXRT_MIRROR`), unless
//!    `ONNXRT_OFFLINE=1` or `CARGO_NET_OFFLINE=true`. A registry-assembled distribution is
//!    assembled instead ([`assemble`]: npm, pip, apt-get), under the same condition.
//!
//! Nothing is trusted that was not pinned: a distribution whose manifest entry has no sha256 is
//! accepted only with the user's own pin (`ONNXRT_ARCHIVE_SHA256`); otherwise the build fails
//! closed and prints the hash it computed. All configuration is in [`config`].

pub mod advice;
pub mod assemble;
pub mod cache;
pub mod config;
pub mod download;
pub mod emit;
pub mod error;
pub mod extract;
pub mod manifest;
pub mod pack;
pub mod probe;
pub mod verify;

use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

pub use config::Config;
pub use error::{Error, Result};
pub use manifest::{Dist, DistKind, Manifest};

use cache::Cache;

/// The C API version this project requests (ORT 1.16).
pub const API_VERSION: u32 = 16;

/// Where the runtime came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `ONNXRT_LIB_DIR`: an install we did not verify.
    LibDir {
        /// The folder given.
        dir: PathBuf,
    },
    /// `ONNXRT_ARCHIVE`: a local archive, verified and installed into the cache.
    Archive {
        /// The archive given.
        path: PathBuf,
    },
    /// A complete cache entry (verified when it was made).
    Cache {
        /// The entry folder.
        entry: PathBuf,
    },
    /// Downloaded, verified and installed into the cache just now.
    Download {
        /// The URL fetched.
        url: String,
    },
    /// Assembled from package registries and installed into the cache just now.
    Registries,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::LibDir { dir } => {
                write!(f, "ONNXRT_LIB_DIR={} (not verified by hash; version checked)", dir.display())
            }
            Source::Archive { path } => write!(f, "ONNXRT_ARCHIVE={} (sha256 verified)", path.display()),
            Source::Cache { entry } => write!(f, "the cache {} (sha256 verified when cached)", entry.display()),
            Source::Download { url } => write!(f, "a download of {url} (sha256 verified)"),
            Source::Registries => write!(f, "package registries (every file's sha256 verified)"),
        }
    }
}

/// A distribution ready to build and run against.
#[derive(Debug, Clone)]
pub struct Provisioned {
    /// Manifest name of the distribution.
    pub dist: String,
    /// ONNX Runtime version.
    pub ort_version: String,
    /// Folder holding the runtime and provider libraries.
    pub lib_dir: PathBuf,
    /// Folder holding `onnxruntime_c_api.h`.
    pub include_dir: PathBuf,
    /// The runtime library itself.
    pub library: PathBuf,
    /// Where it came from.
    pub source: Source,
}

/// Resolves, and where needed downloads, verifies and installs, the configured distribution.
pub fn provision(config: &Config) -> Result<Provisioned> {
    let dist = config.manifest.dist(&config.dist)?;
    if let Some(dir) = &config.lib_dir {
        return from_lib_dir(config, dist, dir);
    }
    let cache = Cache::new(&config.cache_dir);
    if let Some(archive) = &config.archive {
        return from_archive(config, dist, &cache, archive);
    }
    match dist.kind {
        DistKind::Registry => match (cache.lookup(&assemble::registry_key(dist)), &config.offline) {
            (Some(entry), _) => finish(dist, &entry, Source::Cache { entry: entry.clone() }),
            (None, Some(reason)) => Err(Error::NotAssembled {
                dist: dist.name.clone(),
                cache: cache.dir().to_owned(),
                reason: reason.clone(),
            }),
            // Not cached yet: fetch the registry files with their own clients and assemble it here,
            // so a user with only the published crates gets it from `ONNXRT_DIST` alone.
            (None, None) => assemble::assemble(config, &config.cache_dir.join(assemble::DOWNLOADS)),
        },
        DistKind::Archive => {
            let pin = pin(config, dist)?;
            if let Some(entry) = pin.as_deref().and_then(|sha| cache.lookup(sha)) {
                return finish(dist, &entry, Source::Cache { entry: entry.clone() });
            }
            if let Some(reason) = &config.offline {
                return Err(Error::Offline {
                    dist: dist.name.clone(),
                    reason: reason.clone(),
                    cache: cache.dir().to_owned(),
                    file: dist.file_name(),
                });
            }
            download_and_install(config, dist, &cache, pin)
        }
    }
}

/// The sha256 the archive must have: the manifest's, else the user's, else none (fail closed later).
fn pin(config: &Config, dist: &Dist) -> Result<Option<String>> {
    match (dist.pinned_sha256(), &config.archive_sha256) {
        (Some(pinned), Some(given)) if pinned != given => {
            Err(Error::PinConflict { dist: dist.name.clone(), given: given.clone(), pinned: pinned.to_owned() })
        }
        (Some(pinned), _) => Ok(Some(pinned.to_owned())),
        (None, given) => Ok(given.clone()),
    }
}

/// The URL to fetch: the manifest's, or the same file name under the mirror.
pub fn url(config: &Config, dist: &Dist) -> String {
    match (&config.mirror, &dist.url) {
        (Some(mirror), _) => format!("{}/{}", mirror.trim_end_matches('/'), dist.file_name()),
        (None, Some(url)) => url.clone(),
        (None, None) => String::new(),
    }
}

fn download_and_install(config: &Config, dist: &Dist, cache: &Cache, pin: Option<String>) -> Result<Provisioned> {
    let url = url(config, dist);
    let _lock = cache.lock(&dist.name)?;
    // Another build may have finished while we waited for the lock.
    if let Some(entry) = pin.as_deref().and_then(|sha| cache.lookup(sha)) {
        return finish(dist, &entry, Source::Cache { entry: entry.clone() });
    }
    // The sweep key must be the temp key: `sweep` matches `<key>-`, so sweeping `dist.name` missed
    // `<name>.download-<pid>-<n>` files left by a build killed mid-download.
    let key = format!("{}.download", dist.name);
    cache.sweep(&key);
    let file = cache.temp(&key, true)?;
    let limits =
        download::Limits { max_bytes: dist.max_bytes, stall_timeout: config.stall_timeout, attempts: config.attempts };
    let got = download::download(&url, file.path(), limits)?;
    let Some(expected) = pin else {
        return Err(Error::Unpinned { dist: dist.name.clone(), computed: got.sha256 });
    };
    check_size(dist, &url, got.bytes)?;
    verify::check(&url, &expected, &got.sha256)?;
    let entry = install_archive(dist, cache, file.path(), &expected)?;
    finish(dist, &entry, Source::Download { url })
}

fn from_archive(config: &Config, dist: &Dist, cache: &Cache, archive: &Path) -> Result<Provisioned> {
    let size = std::fs::metadata(archive).map_err(Error::io(format!("ONNXRT_ARCHIVE={}", archive.display())))?.len();
    if size > dist.max_bytes {
        return Err(Error::TooLarge { what: archive.display().to_string(), cap: dist.max_bytes });
    }
    let pin = pin(config, dist)?;
    if let Some(entry) = pin.as_deref().and_then(|sha| cache.lookup(sha)) {
        return finish(dist, &entry, Source::Cache { entry: entry.clone() });
    }
    let actual = verify::sha256_file(archive)?;
    let Some(expected) = pin else {
        return Err(Error::Unpinned { dist: dist.name.clone(), computed: actual });
    };
    if dist.pinned_sha256() == Some(expected.as_str()) {
        check_size(dist, &archive.display().to_string(), size)?;
    }
    verify::check(&archive.display().to_string(), &expected, &actual)?;
    let _lock = cache.lock(&dist.name)?;
    let entry = match cache.lookup(&expected) {
        Some(entry) => entry,
        None => install_archive(dist, cache, archive, &expected)?,
    };
    finish(dist, &entry, Source::Archive { path: archive.to_owned() })
}

/// The manifest's pinned size, where it has one, must be the size received.
fn check_size(dist: &Dist, what: &str, actual: u64) -> Result<()> {
    match dist.size {
        Some(expected) if expected != actual => Err(Error::SizeMismatch { what: what.to_owned(), expected, actual }),
        _ => Ok(()),
    }
}

/// Extracts a verified archive into a work folder, checks it, and publishes it. Call under the lock.
fn install_archive(dist: &Dist, cache: &Cache, archive: &Path, sha256: &str) -> Result<PathBuf> {
    cache.sweep(sha256);
    let work = cache.temp(sha256, false)?;
    let file = File::open(archive).map_err(Error::io(format!("opening {}", archive.display())))?;
    extract::extract_tgz(BufReader::new(file), work.path(), &dist.root, extract::Bounds::default())?;
    check_files(dist, work.path())?;
    cache.publish(work, sha256)
}

/// Checks that the library, provider libraries and headers of `dist` are under `entry/root`.
pub fn check_files(dist: &Dist, entry: &Path) -> Result<()> {
    let root = entry.join(&dist.root);
    for file in std::iter::once(&dist.library).chain(&dist.providers).chain(&dist.headers) {
        if !root.join(file).is_file() {
            return Err(Error::MissingFile { dist: dist.name.clone(), missing: file.clone(), root });
        }
    }
    Ok(())
}

fn finish(dist: &Dist, entry: &Path, source: Source) -> Result<Provisioned> {
    check_files(dist, entry)?;
    let root = entry.join(&dist.root);
    let library = root.join(&dist.library);
    Ok(Provisioned {
        dist: dist.name.clone(),
        ort_version: dist.ort_version.clone(),
        lib_dir: library.parent().map(Path::to_path_buf).unwrap_or_else(|| root.clone()),
        include_dir: root.join("include"),
        library,
        source,
    })
}

fn from_lib_dir(config: &Config, dist: &Dist, dir: &Path) -> Result<Provisioned> {
    let library = find_library(dir, dist)?;
    let probed = probe::probe(&library, API_VERSION)?;
    if !probe::at_least(&probed.version, 1, 16) || !probed.api_supported {
        return Err(Error::TooOld { path: library, found: probed.version, required: "1.16".into(), api: API_VERSION });
    }
    let mut tried = Vec::new();
    let candidates = match &config.include_dir {
        Some(include) => vec![include.clone()],
        None => vec![dir.join("../include"), dir.join("../include/onnxruntime")],
    };
    for candidate in candidates {
        if candidate.join("onnxruntime_c_api.h").is_file() {
            return Ok(Provisioned {
                dist: dist.name.clone(),
                ort_version: probed.version,
                lib_dir: dir.to_owned(),
                include_dir: candidate,
                library,
                source: Source::LibDir { dir: dir.to_owned() },
            });
        }
        tried.push(candidate);
    }
    Err(Error::NoHeaders { tried })
}

/// The manifest's file name if present, else the newest `libonnxruntime.so.X.Y.Z`, else `libonnxruntime.so`.
fn find_library(dir: &Path, dist: &Dist) -> Result<PathBuf> {
    let wanted = Path::new(&dist.library).file_name().map(|f| dir.join(f));
    if let Some(path) = wanted.filter(|p| p.is_file()) {
        return Ok(path);
    }
    let mut versioned: Vec<(Vec<u32>, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|_| Error::NoLibrary { dir: dir.to_owned() })?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let version = name.strip_prefix("libonnxruntime.so.")?;
            let numbers: Option<Vec<u32>> = version.split('.').map(|p| p.parse().ok()).collect();
            Some((numbers?, e.path()))
        })
        .collect();
    versioned.sort();
    if let Some((_, path)) = versioned.pop() {
        return Ok(path);
    }
    let plain = dir.join("libonnxruntime.so");
    if plain.exists() {
        return Ok(plain);
    }
    Err(Error::NoLibrary { dir: dir.to_owned() })
}
