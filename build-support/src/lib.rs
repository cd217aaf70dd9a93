//! Provides the ONNX Runtime distribution that `onnxrt-sys` builds against, verified.
//!
//! Resolution order, first hit wins (each result names its [`Source`] in the build log):
//!
//! 1. `ONNXRT_LIB_DIR` (+ optional `ONNXRT_INCLUDE_DIR`): an existing install. Its bytes are not
//!    verified; its version is read by loading it and must be 1.16 or newer.
//! 2. `ONNXRT_ARCHIVE=/path/x.tgz`: a local copy of a manifest archive (air-gapped delivery),
//!    copied into the cache while hashed (one read, so the bytes verified are the bytes
//!    extracted) and verified against the pinned sha256 exactly like a download.
//! 3. The cache (`ONNXRT_CACHE_DIR`, default `$XDG_CACHE_HOME/onnxrt` or `~/.cache/onnxrt`), keyed
//!    by sha256. Each entry records every file's size and sha256; a build checks the sizes every
//!    time and the hashes when it first uses the entry (see [`record`]). Where the manifest pins
//!    the files, the record must agree with those pins ([`pins`]); where it pins only the
//!    archive, the record written at install is trusted. A damaged entry (a missing record
//!    included) is never used: it is moved aside and reinstalled, or the error names the file and
//!    what to delete. The cache must be the user's own and writable by nobody else, and nothing in it is
//!    followed through a symlink ([`ownership`]); otherwise it is refused with what to fix.
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
pub mod deb;
pub mod download;
pub mod emit;
pub mod error;
pub mod extract;
pub mod manifest;
pub mod pack;
pub mod plugin_setup;
pub mod probe;
pub mod progress;
pub mod verify;

use std::fmt;
use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

// The cache's parts, also at the crate's root where onnxrt-sys's build script, the CLI and the
// tests have always found them.
pub use cache::pins::Provenance;
pub use cache::{lock, ownership, pins, record, rederive};
pub use config::Config;
pub use error::{Error, Result};
pub use manifest::{Dist, DistKind, Manifest};
pub use progress::Reporter;

use cache::Cache;

/// The C API version this project requests (ORT 1.16): the one definition (onnxrt-sys reads it
/// through its build script).
pub const API_VERSION: u32 = 16;

/// Where the runtime came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `ONNXRT_LIB_DIR`: an install we did not verify.
    LibDir {
        /// The folder given.
        dir: PathBuf,
    },
    /// `ONNXRT_ARCHIVE`: a local archive, copied into the cache while hashed, then installed.
    Archive {
        /// The archive given.
        path: PathBuf,
    },
    /// A complete cache entry, checked against its record of its files.
    Cache {
        /// The entry folder.
        entry: PathBuf,
        /// What was checked this time.
        checked: Checked,
        /// What the record was checked against: the manifest's pins, or nothing (trusted since
        /// the install), or the archive it was re-derived from.
        trust: Provenance,
    },
    /// Downloaded, verified and installed into the cache just now.
    Download {
        /// The URL asked for.
        url: String,
        /// The URL the bytes came from, after redirects.
        final_url: String,
    },
    /// Assembled from package registries and installed into the cache just now.
    Registries,
}

/// What a build checked of a cache entry before using it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// Every file's size and every link's target, against the entry's record.
    Sizes {
        /// Paths checked.
        files: usize,
    },
    /// Every file's sha256 and size and every link's target, against the entry's record.
    Hashes {
        /// Paths checked.
        files: usize,
    },
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Provenance::Manifest => write!(f, "against its record, which matches the manifest's pins"),
            Provenance::Install => write!(
                f,
                "against its record, written at install from the verified archive and trusted since its install \
                 (`onnxrt-dist verify --archive FILE` re-derives it)"
            ),
            Provenance::Archive(path) => write!(f, "against the files re-derived from {}", path.display()),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::LibDir { dir } => {
                write!(f, "ONNXRT_LIB_DIR={} (not verified by hash; version checked)", dir.display())
            }
            Source::Archive { path } => {
                write!(f, "ONNXRT_ARCHIVE={} (copied into the cache while hashing; sha256 verified)", path.display())
            }
            Source::Cache { entry, checked: Checked::Sizes { files }, trust } => write!(
                f,
                "the cache {} (checked now: sizes of its {files} files {trust}; sha256 checked when this build \
                 first used it)",
                entry.display()
            ),
            Source::Cache { entry, checked: Checked::Hashes { files }, trust } => {
                write!(f, "the cache {} (checked now: sha256 and size of its {files} files {trust})", entry.display())
            }
            Source::Download { url, final_url } if url == final_url => {
                write!(f, "a download of {} (sha256 verified)", crate::config::shown_url(url))
            }
            Source::Download { url, final_url } => {
                let (url, final_url) = (crate::config::shown_url(url), crate::config::shown_url(final_url));
                write!(f, "a download of {url}, redirected to {final_url} (sha256 verified)")
            }
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
    /// What happened on the way that the build log should show (a damaged entry replaced).
    pub notes: Vec<String>,
}

/// Resolves, and where needed downloads, verifies and installs, the configured distribution.
pub fn provision(config: &Config) -> Result<Provisioned> {
    let dist = config.manifest.dist(&config.dist)?;
    if dist.plugin {
        return Err(Error::Manifest(format!(
            "`{}` is a plugin provider bundle, not a runtime: assemble it with `onnxrt-dist assemble {}` and register its library with Environment::register_pinned_provider_library",
            dist.name, dist.name
        )));
    }
    if let Some(dir) = &config.lib_dir {
        return from_lib_dir(config, dist, dir);
    }
    let cache = Cache::new(&config.cache_dir);
    if let Some(archive) = &config.archive {
        return from_archive(config, dist, &cache, archive);
    }
    match dist.kind {
        DistKind::Registry => {
            let key = assemble::registry_key(dist);
            match (cached(config, dist, &cache, &key)?, &config.offline) {
                (Cached::Hit(p), _) => Ok(*p),
                (Cached::Damaged(damage), Some(reason)) => {
                    let remedy = format!(
                        "Delete that folder, then allow downloads (unset {reason}) so the build assembles it again"
                    );
                    Err(damaged(&cache, &key, damage, remedy))
                }
                (Cached::Miss, Some(reason)) => Err(Error::NotAssembled {
                    dist: dist.name.clone(),
                    cache: cache.dir().to_owned(),
                    reason: reason.clone(),
                }),
                // Not cached yet, or damaged: fetch the registry files with their own clients and
                // assemble it here (which replaces a damaged entry), so a user with only the
                // published crates gets it from `ONNXRT_DIST` alone.
                (Cached::Miss | Cached::Damaged(_), None) => {
                    assemble::assemble(config, &config.cache_dir.join(assemble::DOWNLOADS))
                }
            }
        }
        DistKind::Archive => {
            let pin = pin(config, dist)?;
            let mut damage = None;
            if let Some(sha) = pin.as_deref() {
                match cached(config, dist, &cache, sha)? {
                    Cached::Hit(p) => return Ok(*p),
                    Cached::Damaged(d) => damage = Some((sha.to_owned(), d)),
                    Cached::Miss => {}
                }
            }
            if let Some(reason) = &config.offline {
                if let Some((sha, d)) = damage {
                    let remedy = format!(
                        "Delete that folder, then allow the download (unset {reason}) or deliver the archive with \
                         ONNXRT_ARCHIVE=/path/to/{}",
                        dist.file_name()
                    );
                    return Err(damaged(&cache, &sha, d, remedy));
                }
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

/// What the cache holds for a key.
pub(crate) enum Cached {
    /// A complete, undamaged entry.
    Hit(Box<Provisioned>),
    /// A complete entry that no longer holds what was installed.
    Damaged(record::Damage),
    /// No complete entry.
    Miss,
}

fn damaged(cache: &Cache, key: &str, damage: record::Damage, remedy: String) -> Error {
    Error::DamagedEntry {
        entry: cache.entry_path(key),
        file: damage.file.display().to_string(),
        why: damage.why,
        remedy,
    }
}

/// Looks `key` up and checks the entry: its record against the manifest's pins ([`pins`]),
/// then its files against the record: sizes always; hashes on request, when no stamp of this
/// build says it hashed these very files, or when there is no build at all.
pub(crate) fn cached(config: &Config, dist: &Dist, cache: &Cache, key: &str) -> Result<Cached> {
    let Some(entry) = cache.lookup(key)? else { return Ok(Cached::Miss) };
    let items = match record::read(&entry) {
        Ok(Some(items)) => items,
        // Damage, never a new record: one written from the files would vouch for whatever they are.
        Ok(None) => {
            let why = "is missing, so the entry's files cannot be checked".to_owned();
            return Ok(Cached::Damaged(record::Damage { file: record::RECORD.into(), why }));
        }
        Err(damage) => return Ok(Cached::Damaged(damage)),
    };
    let trust = match pins::check(dist, &items) {
        Ok(trust) => trust,
        Err(damage) => return Ok(Cached::Damaged(damage)),
    };
    let required = required_files(dist);
    let stamp = config.stamp_dir.as_ref().map(|dir| dir.join(STAMP));
    let fingerprint = record::fingerprint(&entry, &items);
    let stamped = stamp.as_ref().is_some_and(|s| read_stamp(s).is_some_and(|t| t == fingerprint));
    let depth = if config.verify || !stamped { record::Depth::Hashes } else { record::Depth::Sizes };
    let files = match record::check(&entry, &items, &required, depth) {
        Ok(files) => files,
        Err(damage) => return Ok(Cached::Damaged(damage)),
    };
    let checked = match depth {
        record::Depth::Hashes => {
            if let Some(dir) = &config.stamp_dir {
                write_stamp(dir, &fingerprint);
            }
            Checked::Hashes { files }
        }
        record::Depth::Sizes => Checked::Sizes { files },
    };
    Ok(Cached::Hit(Box::new(finish(dist, &entry, Source::Cache { entry: entry.clone(), checked, trust })?)))
}

/// File in the build's OUT_DIR that remembers the entry files it last hashed (path, size, mtime,
/// inode, ctime).
const STAMP: &str = "onnxrt-entry-hashed";

/// Largest stamp read (one short line per file of an entry).
const STAMP_CAP: u64 = 4 << 20;

/// The stamp's text, if it is a regular file (never read through a link or from a FIFO).
fn read_stamp(path: &Path) -> Option<String> {
    crate::cache::ownership::read_bounded(path, STAMP_CAP).ok().flatten().and_then(|b| String::from_utf8(b).ok())
}

/// Replaces the stamp in `dir` with `text`: a new file of random name, renamed over the old one,
/// so a link planted at the stamp's name is replaced, never written through. Best effort: a
/// stamp that cannot be written only means the next build hashes again.
fn write_stamp(dir: &Path, text: &str) {
    let _ = replace_file(dir, STAMP, text.as_bytes());
}

/// Writes `bytes` as `dir/name` the one way a build script writes into its `OUT_DIR`: a new file
/// of random name in `dir`, renamed over `name`. A link (or anything else) planted at `name` is
/// replaced, never written through, and a reader never sees half a file. Used for the stamp and
/// by onnxrt-sys for `bindings.rs`.
pub fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = tempfile::Builder::new().prefix(&format!(".{name}-")).tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.persist(dir.join(name)).map(drop).map_err(|e| e.error)
}

/// The library, providers and headers of `dist`, relative to an entry.
fn required_files(dist: &Dist) -> Vec<PathBuf> {
    std::iter::once(&dist.library)
        .chain(&dist.providers)
        .chain(&dist.headers)
        .map(|f| Path::new(&dist.root).join(f))
        .collect()
}

/// Under the lock: a good entry is returned, a damaged one moved aside (noted) so it can be
/// reinstalled, and a missing one reported as `None`.
fn recheck_under_lock(
    config: &Config,
    dist: &Dist,
    cache: &Cache,
    pin: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<Option<Provisioned>> {
    let Some(sha) = pin else { return Ok(None) };
    match cached(config, dist, cache, sha)? {
        Cached::Hit(p) => Ok(Some(*p)),
        Cached::Damaged(damage) => {
            cache.discard(sha)?;
            notes.push(format!(
                "the cache entry {} was damaged ({} {}); it was moved aside and deleted, and is reinstalled now",
                cache.entry_path(sha).display(),
                damage.file.display(),
                damage.why
            ));
            Ok(None)
        }
        Cached::Miss => Ok(None),
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
    // Another build may have finished (or repaired the entry) while we waited for the lock.
    let mut notes = Vec::new();
    if let Some(p) = recheck_under_lock(config, dist, cache, pin.as_deref(), &mut notes)? {
        return Ok(p);
    }
    // The sweep key must be the temp key: `sweep` matches `<key>-`, so sweeping `dist.name` missed
    // `<name>.download-<pid>-<n>` files left by a build killed mid-download.
    let key = format!("{}.download", dist.name);
    cache.sweep(&key);
    let mut file = cache.temp_file(&key)?;
    let limits = download::Limits {
        max_bytes: dist.max_bytes,
        stall_timeout: config.stall_timeout,
        deadline: config.deadline,
        attempts: config.attempts,
        allow_http: config.allow_http,
        proxies: config.proxies.clone(),
    };
    let got = match &config.progress {
        Some(reporter) => download::download_reporting(&url, file.as_file_mut(), limits, &|e| reporter.report(e))?,
        None => download::download(&url, file.as_file_mut(), limits)?,
    };
    if let Some(proxy) = &got.proxy {
        notes.push(format!("downloaded through the proxy {proxy}"));
    }
    let Some(expected) = pin else {
        return Err(Error::Unpinned { dist: dist.name.clone(), computed: got.sha256 });
    };
    check_size(dist, &got.final_url, got.bytes)?;
    verify::check(&got.final_url, &expected, &got.sha256)?;
    config.hooks.verified(file.path());
    // Extracted from the file just written and hashed, through the same descriptor.
    let entry = install_archive(config, dist, cache, file.as_file_mut(), &expected)?;
    let source = Source::Download { url, final_url: got.final_url };
    finish(dist, &entry, source).map(|p| Provisioned { notes, ..p })
}

fn from_archive(config: &Config, dist: &Dist, cache: &Cache, archive: &Path) -> Result<Provisioned> {
    let pin = pin(config, dist)?;
    // An entry whose record the manifest vouches for is used as it is; one trusted only since its
    // install is re-derived from the delivered archive below (the archive is the better witness)
    // whenever this build has not already checked these very files.
    let mut rederive = false;
    if let Some(sha) = pin.as_deref() {
        if let Cached::Hit(p) = cached(config, dist, cache, sha)? {
            if !trusted_since_install(&p) {
                return Ok(*p);
            }
            // The check just made stamped the files: the re-check under the lock sees only sizes.
            rederive = true;
        }
    }
    let _lock = cache.lock(&dist.name)?;
    let mut notes = Vec::new();
    let held = recheck_under_lock(config, dist, cache, pin.as_deref(), &mut notes)?;
    let held = match held {
        Some(p) if rederive && matches!(p.source, Source::Cache { trust: Provenance::Install, .. }) => Some(p),
        Some(p) if trusted_since_install(&p) => Some(p),
        Some(p) => return Ok(p),
        None => None,
    };
    // One stream of bytes: the archive is read once, into a work file that is hashed on the way
    // and then extracted through the same descriptor, never opened by path again.
    let key = format!("{}.archive", dist.name);
    cache.sweep(&key);
    let mut copy = cache.temp_file(&key)?;
    let actual = verify::copy_regular_file(archive, copy.as_file_mut(), dist.max_bytes)?;
    let Some(expected) = pin else {
        return Err(Error::Unpinned { dist: dist.name.clone(), computed: actual });
    };
    if dist.pinned_sha256() == Some(expected.as_str()) {
        let size = copy.as_file().metadata().map_err(Error::io(format!("reading {}", copy.path().display())))?.len();
        check_size(dist, &archive.display().to_string(), size)?;
    }
    let note = "Your file was left where it is, and nothing was installed from it; it is corrupt, truncated or \
                not the pinned release: replace it with the release archive";
    verify::check_with(&archive.display().to_string(), &expected, &actual, note)?;
    config.hooks.verified(copy.path());
    if let Some(p) = held {
        // The entry's files and record against the files the verified archive gives.
        let difference = rederive::difference(dist, cache, &key, copy.as_file_mut(), &p_entry(&p));
        if difference.is_err() {
            // The stamp written by the check above must not spare the next build this comparison.
            if let Some(dir) = &config.stamp_dir {
                let _ = std::fs::remove_file(dir.join(STAMP));
            }
        }
        match difference? {
            None => {
                let files = record::read(&p_entry(&p)).ok().flatten().map_or(0, |items| items.len());
                let source = Source::Cache {
                    entry: p_entry(&p),
                    checked: Checked::Hashes { files },
                    trust: Provenance::Archive(archive.to_owned()),
                };
                return Ok(Provisioned { source, ..p });
            }
            Some((file, why)) => {
                cache.discard(&expected)?;
                notes.push(format!(
                    "the cache entry {} did not hold what {} gives ({} {why}); it was moved aside and deleted, and is \
                     reinstalled from that archive now",
                    cache.entry_path(&expected).display(),
                    archive.display(),
                    file.display()
                ));
            }
        }
    }
    let entry = install_archive(config, dist, cache, copy.as_file_mut(), &expected)?;
    finish(dist, &entry, Source::Archive { path: archive.to_owned() }).map(|p| Provisioned { notes, ..p })
}

/// Whether a cache hit rests only on the record written at its install and was hashed now
/// against that record, so anything may have changed since this build last used it. A hit
/// whose sizes alone were checked was stamped by this build after a full check, and its files
/// have not changed since (same inode, ctime and mtime): re-deriving it again would only
/// re-read the archive on every run of the build script.
fn trusted_since_install(p: &Provisioned) -> bool {
    matches!(p.source, Source::Cache { trust: Provenance::Install, checked: Checked::Hashes { .. }, .. })
}

/// The entry folder of a cache hit.
fn p_entry(p: &Provisioned) -> PathBuf {
    match &p.source {
        Source::Cache { entry, .. } => entry.clone(),
        _ => PathBuf::new(),
    }
}

/// The manifest's pinned size, where it has one, must be the size received.
fn check_size(dist: &Dist, what: &str, actual: u64) -> Result<()> {
    match dist.size {
        Some(expected) if expected != actual => Err(Error::SizeMismatch { what: what.to_owned(), expected, actual }),
        _ => Ok(()),
    }
}

/// Extracts a verified archive, from the start of the very file that was hashed, into a work
/// folder, checks it, and publishes it (with the record of its files). Call under the lock. The
/// build's stamp then says these files were hashed.
fn install_archive(config: &Config, dist: &Dist, cache: &Cache, archive: &mut File, sha256: &str) -> Result<PathBuf> {
    cache.sweep(sha256);
    let work = cache.temp_dir(sha256)?;
    archive.seek(SeekFrom::Start(0)).map_err(Error::io("rewinding the verified archive"))?;
    extract::extract_tgz(BufReader::new(archive), work.path(), &dist.root, extract::Bounds::for_dist(dist))?;
    check_files(dist, work.path())?;
    pins::check_tree(dist, work.path())?;
    let entry = cache.publish(work, sha256)?;
    if let (Some(dir), Ok(Some(items))) = (&config.stamp_dir, record::read(&entry)) {
        write_stamp(dir, &record::fingerprint(&entry, &items));
    }
    Ok(entry)
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
        notes: Vec::new(),
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
                notes: Vec::new(),
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
