//! The cache: one folder per distribution, named by the sha256 that identifies its bytes, made
//! complete by an atomic rename and guarded by a file lock.
//!
//! Layout under the cache folder:
//!
//! ```text
//! <sha256>/                 a complete entry: the archive's root folder, RECORD, COMPLETE_MARKER
//! .tmp/<key>-<pid>-<n>/     work in progress (extraction, downloads); never read as an entry
//! .locks/<key>.lock         held (flock) while an entry for <key> is being made
//! ```
//!
//! A warm build checks the marker and, against the entry's record ([`crate::cache::record`]), every
//! file's size; it re-hashes only when the record says so. Files of a published entry carry one
//! fixed, old mtime ([`INSTALLED_MTIME`]): a header written during an install must not look to
//! cargo as if it changed after that build (which reran the build script once more), while any
//! later change to a file gives it a new mtime, which `cargo:rerun-if-changed` notices.

pub mod lock;
pub mod ownership;
pub mod pins;
pub mod record;
pub mod rederive;

use std::fs::{self, File};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub use crate::cache::lock::KeyLock;
use crate::error::{Error, Result};

/// File written last inside a complete entry (before the rename that publishes it).
pub const COMPLETE_MARKER: &str = ".onnxrt-complete";

/// The mtime given to every file of a published entry (2000-01-01T00:00:00Z).
pub const INSTALLED_MTIME: Duration = Duration::from_secs(946_684_800);

/// A cache folder.
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

/// A work folder inside the cache (random name, mode 0700), removed on drop unless published.
#[derive(Debug)]
pub struct TempDir {
    dir: tempfile::TempDir,
}

impl TempDir {
    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A work file inside the cache (random name, created with `O_EXCL`, mode 0600), open for
/// reading and writing, removed on drop. What is hashed through it is what is read back from
/// it: the path is never opened again.
pub type TempFile = tempfile::NamedTempFile;

impl Cache {
    /// A cache rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// The cache folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Folder of the entry for `sha256`, whether or not it exists.
    pub fn entry_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(sha256)
    }

    /// The complete entry for `sha256`, if there is one. The cache folder and the entry must be
    /// the user's own and not writable by others, and the entry a real folder, not a link.
    pub fn lookup(&self, sha256: &str) -> Result<Option<PathBuf>> {
        if !crate::cache::ownership::check_dir(&self.dir, crate::cache::ownership::Follow::Yes)? {
            return Ok(None);
        }
        let entry = self.entry_path(sha256);
        if !crate::cache::ownership::check_dir(&entry, crate::cache::ownership::Follow::No)? {
            return Ok(None);
        }
        // The work and lock folders are checked on a warm entry too, as when an install makes
        // them: a link there (to another user's folder) is refused, not used by a later sweep or lock.
        for private in [".locks", ".tmp"] {
            crate::cache::ownership::check_dir(&self.dir.join(private), crate::cache::ownership::Follow::No)?;
        }
        let marker = entry.join(COMPLETE_MARKER);
        Ok(fs::symlink_metadata(&marker).is_ok_and(|m| m.is_file()).then_some(entry))
    }

    /// `name` below the cache folder, created if missing and checked like the cache folder.
    pub fn private_dir(&self, name: &str) -> Result<PathBuf> {
        crate::cache::ownership::ensure_dir(&self.dir, crate::cache::ownership::Follow::Yes)?;
        let dir = self.dir.join(name);
        crate::cache::ownership::ensure_dir(&dir, crate::cache::ownership::Follow::No)?;
        Ok(dir)
    }

    /// Waits for and takes the lock of `key`. Concurrent builds wait here instead of racing;
    /// one that waits says, after a few seconds and then periodically, who holds the lock.
    pub fn lock(&self, key: &str) -> Result<KeyLock> {
        let locks = self.private_dir(".locks")?;
        let path = locks.join(format!("{key}.lock"));
        // Never through a link; the file is kept between builds (deleting it would race).
        let file = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| crate::cache::ownership::open_error(&path, e))?;
        crate::cache::ownership::check_file(&file, &path)?;
        crate::cache::lock::acquire(file, &path, &crate::cache::lock::eprint)
    }

    /// A fresh work folder for `key`, of random name. Call under the key's lock.
    pub fn temp_dir(&self, key: &str) -> Result<TempDir> {
        let tmp = self.private_dir(".tmp")?;
        let dir = tempfile::Builder::new()
            .prefix(&temp_prefix(key))
            .rand_bytes(RANDOM_CHARS)
            .tempdir_in(&tmp)
            .map_err(Error::io(format!("creating a work folder in {}", tmp.display())))?;
        Ok(TempDir { dir })
    }

    /// A fresh work file for `key`, of random name. Call under the key's lock.
    pub fn temp_file(&self, key: &str) -> Result<TempFile> {
        let tmp = self.private_dir(".tmp")?;
        tempfile::Builder::new()
            .prefix(&temp_prefix(key))
            .rand_bytes(RANDOM_CHARS)
            .tempfile_in(&tmp)
            .map_err(Error::io(format!("creating a work file in {}", tmp.display())))
    }

    /// Removes work left by processes that died holding this key (call under its lock).
    /// That includes what a discard of the entry `key` left when it was killed between its rename
    /// and its delete (`<key>.damaged-<pid>-<random>`).
    pub fn sweep(&self, key: &str) {
        let Ok(entries) = fs::read_dir(self.dir.join(".tmp")) else { return };
        let mine = format!("-{}-", std::process::id());
        let prefixes = [format!("{key}-"), format!("{key}.damaged-")];
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if prefixes.iter().any(|p| name.starts_with(p)) && !name.contains(&mine) {
                // Neither follows a link: a planted one is removed, not its target.
                let _ = fs::remove_dir_all(entry.path());
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Moves a damaged entry out of the way (one rename, so no build sees it half-removed), then
    /// deletes it. Call under the key's lock.
    pub fn discard(&self, sha256: &str) -> Result<()> {
        self.sweep(sha256);
        let entry = self.entry_path(sha256);
        let aside = self.temp_dir(&format!("{sha256}.damaged"))?;
        let target = aside.path().join("entry");
        fs::rename(&entry, &target).map_err(Error::io(format!("moving aside {}", entry.display())))?;
        drop(aside);
        Ok(())
    }

    /// Publishes a filled work folder as the entry for `sha256`: record of its files, fixed
    /// mtimes, marker, then one rename.
    pub fn publish(&self, work: TempDir, sha256: &str) -> Result<PathBuf> {
        // Whatever umask the build runs under, no folder or file of an entry is writable by others.
        crate::cache::ownership::normalise_modes(work.path())?;
        crate::cache::record::remove_empty_folders(work.path())?;
        let items = crate::cache::record::write(work.path())?;
        for (path, item) in &items {
            if let crate::cache::record::Item::File { .. } = item {
                set_installed_mtime(&work.path().join(path))?;
            }
        }
        let marker = work.path().join(COMPLETE_MARKER);
        crate::cache::ownership::write_new(&marker, sha256.as_bytes(), 0o644)?;
        let entry = self.entry_path(sha256);
        // An entry without its marker can only be debris of a manual edit: replace it. A link
        // or a folder of someone else is refused by `lookup`, never removed here.
        if crate::cache::ownership::check_dir(&entry, crate::cache::ownership::Follow::No)?
            && self.lookup(sha256)?.is_none()
        {
            fs::remove_dir_all(&entry).map_err(Error::io(format!("removing incomplete {}", entry.display())))?;
        }
        crate::cache::ownership::make_readable(work.path())?;
        fs::rename(work.path(), &entry).map_err(Error::io(format!("renaming into {}", entry.display())))?;
        // Renamed away: nothing is left for the drop to remove.
        let _ = work.dir.keep();
        Ok(entry)
    }
}

/// Temporary names are `<key>-<pid>-<random>`: the pid lets [`Cache::sweep`] tell whose work it
/// is, the random part makes it impossible to plant a link at the name in advance.
fn temp_prefix(key: &str) -> String {
    format!("{key}-{}-", std::process::id())
}

/// Random characters of a temporary name.
const RANDOM_CHARS: usize = 12;

fn set_installed_mtime(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(Error::io(format!("opening {}", path.display())))?;
    let time = SystemTime::UNIX_EPOCH + INSTALLED_MTIME;
    file.set_times(fs::FileTimes::new().set_modified(time).set_accessed(time))
        .map_err(Error::io(format!("setting the mtime of {}", path.display())))
}
