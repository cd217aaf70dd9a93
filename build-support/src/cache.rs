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
//! A warm build checks the marker and, against the entry's record ([`crate::record`]), every
//! file's size; it re-hashes only when the record says so. Files of a published entry carry one
//! fixed, old mtime ([`INSTALLED_MTIME`]): a header written during an install must not look to
//! cargo as if it changed after that build (which reran the build script once more), while any
//! later change to a file gives it a new mtime, which `cargo:rerun-if-changed` notices.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

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

/// An exclusive lock on one cache key, released on drop.
#[derive(Debug)]
pub struct KeyLock {
    _file: File,
}

/// A work folder inside the cache, removed on drop unless published.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
        let _ = fs::remove_file(&self.path);
    }
}

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

    /// The complete entry for `sha256`, if there is one.
    pub fn lookup(&self, sha256: &str) -> Option<PathBuf> {
        let entry = self.entry_path(sha256);
        entry.join(COMPLETE_MARKER).is_file().then_some(entry)
    }

    /// Waits for and takes the lock of `key`. Concurrent builds wait here instead of racing.
    pub fn lock(&self, key: &str) -> Result<KeyLock> {
        let locks = self.dir.join(".locks");
        fs::create_dir_all(&locks).map_err(Error::io(format!("creating {}", locks.display())))?;
        let path = locks.join(format!("{key}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(Error::io(format!("opening {}", path.display())))?;
        file.lock().map_err(Error::io(format!("locking {}", path.display())))?;
        Ok(KeyLock { _file: file })
    }

    /// A fresh work folder (or file path, when `as_file`) for `key`. Call under the key's lock.
    pub fn temp(&self, key: &str, as_file: bool) -> Result<TempDir> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(".tmp");
        fs::create_dir_all(&tmp).map_err(Error::io(format!("creating {}", tmp.display())))?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = tmp.join(format!("{key}-{}-{n}", std::process::id()));
        if !as_file {
            fs::create_dir(&path).map_err(Error::io(format!("creating {}", path.display())))?;
        }
        Ok(TempDir { path })
    }

    /// Removes work left by processes that died holding this key (call under its lock).
    pub fn sweep(&self, key: &str) {
        let Ok(entries) = fs::read_dir(self.dir.join(".tmp")) else { return };
        let mine = format!("-{}-", std::process::id());
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&format!("{key}-")) && !name.contains(&mine) {
                let _ = fs::remove_dir_all(entry.path());
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    /// Moves a damaged entry out of the way (one rename, so no build sees it half-removed), then
    /// deletes it. Call under the key's lock.
    pub fn discard(&self, sha256: &str) -> Result<()> {
        let entry = self.entry_path(sha256);
        let aside = self.temp(&format!("{sha256}.damaged"), true)?;
        fs::rename(&entry, aside.path()).map_err(Error::io(format!("moving aside {}", entry.display())))?;
        drop(aside);
        Ok(())
    }

    /// Publishes a filled work folder as the entry for `sha256`: record of its files, fixed
    /// mtimes, marker, then one rename.
    pub fn publish(&self, work: TempDir, sha256: &str) -> Result<PathBuf> {
        let items = crate::record::write(work.path())?;
        for (path, item) in &items {
            if let crate::record::Item::File { .. } = item {
                set_installed_mtime(&work.path().join(path))?;
            }
        }
        let marker = work.path().join(COMPLETE_MARKER);
        fs::write(&marker, sha256).map_err(Error::io(format!("writing {}", marker.display())))?;
        let entry = self.entry_path(sha256);
        // An entry without its marker can only be debris of a manual edit: replace it.
        if entry.exists() && self.lookup(sha256).is_none() {
            fs::remove_dir_all(&entry).map_err(Error::io(format!("removing incomplete {}", entry.display())))?;
        }
        fs::rename(work.path(), &entry).map_err(Error::io(format!("renaming into {}", entry.display())))?;
        Ok(entry)
    }
}

fn set_installed_mtime(path: &Path) -> Result<()> {
    let file = File::open(path).map_err(Error::io(format!("opening {}", path.display())))?;
    let time = SystemTime::UNIX_EPOCH + INSTALLED_MTIME;
    file.set_times(fs::FileTimes::new().set_modified(time).set_accessed(time))
        .map_err(Error::io(format!("setting the mtime of {}", path.display())))
}
