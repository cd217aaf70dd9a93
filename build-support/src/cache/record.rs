//! What a cache entry holds, written at install and checked on use.
//!
//! Each entry carries [`RECORD`]: one line per file below it, `f <size> <sha256> <path>` for a
//! regular file and `l <target> <path>` for a symlink (paths relative to the entry, tab-free). A
//! build checks the sizes and link targets every time it runs (cheap) and every sha256 when the
//! entry is first used by that build, when any file's mtime changed since it last hashed them,
//! or when asked (`ONNXRT_VERIFY=1`, `onnxrt-dist verify`).
//!
//! Every check also walks the entry's folders ([`check_folder`]): a path the record does not list
//! (a header or library planted beside the installed ones, where bindgen's include path and the
//! runtime's RUNPATH would find it) is damage, and so is a folder or file that another user owns
//! or that group or others can write (an entry installed under a loose umask).

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// The record's file name inside an entry.
pub const RECORD: &str = ".onnxrt-files";

/// Files the record does not list (bookkeeping of the cache itself).
const UNLISTED: [&str; 2] = [RECORD, crate::cache::COMPLETE_MARKER];

/// Largest record read: a record lists a few dozen files, one short line each.
pub const RECORD_CAP: u64 = 4 << 20;

/// Most paths walked in an entry (the largest distribution has a few dozen).
const MAX_PATHS: usize = 100_000;

/// One recorded path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A regular file of this size and sha256.
    File {
        /// Bytes.
        size: u64,
        /// Lowercase hex sha256.
        sha256: String,
    },
    /// A symlink to this target.
    Link(PathBuf),
}

/// Why an entry cannot be used: the first file found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The file, under the entry.
    pub file: PathBuf,
    /// What is wrong with it.
    pub why: String,
}

/// How thoroughly an entry was checked this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Presence, sizes and link targets.
    Sizes,
    /// Also every file's sha256.
    Hashes,
}

/// Every file under `dir` with its size and sha256 and every symlink with its target, sorted by
/// path (what a record of `dir` would list), without writing anything.
pub fn list(dir: &Path) -> Result<Vec<(PathBuf, Item)>> {
    let mut items = Vec::new();
    walk(dir, Path::new(""), &mut items)?;
    items.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(items)
}

/// Lists every file under `entry` with its size and sha256 and writes the record (atomically).
pub fn write(entry: &Path) -> Result<Vec<(PathBuf, Item)>> {
    let items = list(entry)?;
    let mut text = String::new();
    for (path, item) in &items {
        match item {
            Item::File { size, sha256 } => text.push_str(&format!("f\t{size}\t{sha256}\t{}\n", path.display())),
            Item::Link(target) => text.push_str(&format!("l\t{}\t{}\n", target.display(), path.display())),
        }
    }
    let tmp = entry.join(format!("{RECORD}.{}", std::process::id()));
    crate::cache::ownership::write_new(&tmp, text.as_bytes(), 0o644)?;
    let record = entry.join(RECORD);
    fs::rename(&tmp, &record).map_err(Error::io(format!("renaming into {}", record.display())))?;
    Ok(items)
}

/// Reads the record of `entry`; `None` when the entry has none (made by an older version, or
/// deleted: the caller treats that as damage, never writes a new record from the files).
pub fn read(entry: &Path) -> std::result::Result<Option<Vec<(PathBuf, Item)>>, Damage> {
    // Bounded, never through a link, and never waiting on a FIFO planted in its place.
    let text = match crate::cache::ownership::read_bounded(&entry.join(RECORD), RECORD_CAP) {
        Ok(Some(bytes)) => {
            String::from_utf8(bytes).map_err(|_| Damage { file: RECORD.into(), why: "malformed".into() })?
        }
        Ok(None) => return Ok(None),
        Err(e) => return Err(Damage { file: RECORD.into(), why: format!("unreadable: {e}") }),
    };
    let bad = || Damage { file: RECORD.into(), why: "malformed".into() };
    let mut items = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["f", size, sha256, path] => {
                let size = size.parse().map_err(|_| bad())?;
                items.push((PathBuf::from(path), Item::File { size, sha256: (*sha256).to_owned() }));
            }
            ["l", target, path] => items.push((PathBuf::from(path), Item::Link(PathBuf::from(target)))),
            _ => return Err(bad()),
        }
    }
    if items.is_empty() {
        return Err(bad());
    }
    Ok(Some(items))
}

/// Checks `entry` against its record to `depth`; `required` paths (relative to the entry) must be
/// in the record. Returns how many paths were checked.
pub fn check(
    entry: &Path,
    items: &[(PathBuf, Item)],
    required: &[PathBuf],
    depth: Depth,
) -> std::result::Result<usize, Damage> {
    for path in required {
        // A required file may be recorded as a link to a recorded file (checked below as well).
        if !items.iter().any(|(p, _)| p == path) {
            return Err(Damage { file: path.clone(), why: "not in the entry's record of its files".into() });
        }
    }
    check_folder(entry, items)?;
    for (path, item) in items {
        let full = entry.join(path);
        let damage = |why: String| Damage { file: path.clone(), why };
        let meta = fs::symlink_metadata(&full).map_err(|e| damage(format!("missing ({e})")))?;
        match item {
            Item::Link(target) => {
                let found = fs::read_link(&full).map_err(|_| damage("is no longer a symlink".into()))?;
                if &found != target {
                    return Err(damage(format!("links to {} instead of {}", found.display(), target.display())));
                }
            }
            Item::File { size, sha256 } => {
                if !meta.is_file() {
                    return Err(damage("is no longer a regular file".into()));
                }
                if meta.len() != *size {
                    return Err(damage(format!("holds {} bytes, {size} were installed", meta.len())));
                }
                if depth == Depth::Hashes {
                    let actual = hash_file(&full).map_err(|e| damage(format!("unreadable: {e}")))?;
                    if &actual != sha256 {
                        return Err(damage(format!("sha256 is {actual}, {sha256} was installed")));
                    }
                }
            }
        }
    }
    Ok(items.len())
}

impl std::fmt::Display for Item {
    /// `sha256 S (N bytes)` or `a link to T`, for messages that compare two of them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Item::File { size, sha256 } => write!(f, "sha256 {sha256} ({size} bytes)"),
            Item::Link(target) => write!(f, "a link to {}", target.display()),
        }
    }
}

/// A fingerprint of the entry's files as they are now (path, size, mtime, inode and ctime), to
/// tell whether anything changed since they were last hashed. The inode and ctime catch a swap
/// that keeps the size and resets the mtime (`touch -d`): a rename brings another inode, and any
/// write or `utimes` sets the ctime, which no user can set back.
pub fn fingerprint(entry: &Path, items: &[(PathBuf, Item)]) -> String {
    let mut out = format!("{}\n", entry.display());
    for (path, _) in items {
        let (size, mtime, inode, ctime) = fs::symlink_metadata(entry.join(path))
            .map(|m| {
                (
                    m.len(),
                    format!("{}.{}", m.mtime(), m.mtime_nsec()),
                    format!("{}:{}", m.dev(), m.ino()),
                    format!("{}.{}", m.ctime(), m.ctime_nsec()),
                )
            })
            .unwrap_or((0, "-".into(), "-".into(), "-".into()));
        out.push_str(&format!("{size} {mtime} {inode} {ctime} {}\n", path.display()));
    }
    out
}

/// Walks the entry's folders: every path in them must be in the record (folders excepted), and
/// every folder, file and the record itself must be the user's own (or root's) and writable by
/// nobody else. Links are not followed; their targets are checked with the record.
pub fn check_folder(entry: &Path, items: &[(PathBuf, Item)]) -> std::result::Result<(), Damage> {
    let mut stack = vec![PathBuf::new()];
    let mut seen = 0usize;
    while let Some(relative) = stack.pop() {
        let folder = entry.join(&relative);
        let listing = fs::read_dir(&folder)
            .map_err(|e| Damage { file: relative.clone(), why: format!("cannot be listed ({e})") })?;
        for child in listing {
            let child = child.map_err(|e| Damage { file: relative.clone(), why: format!("cannot be listed ({e})") })?;
            seen += 1;
            if seen > MAX_PATHS {
                let why = format!("holds more than {MAX_PATHS} paths, far more than any distribution");
                return Err(Damage { file: PathBuf::new(), why });
            }
            let path = relative.join(child.file_name());
            let damage = |why: String| Damage { file: path.clone(), why };
            let meta = fs::symlink_metadata(entry.join(&path)).map_err(|e| damage(format!("unreadable ({e})")))?;
            let bookkeeping = relative.as_os_str().is_empty() && UNLISTED.iter().any(|u| child.file_name() == *u);
            if meta.is_dir() {
                check_owner_and_mode(&meta).map_err(damage)?;
                // Only folders that hold recorded paths were installed (empty ones are removed
                // before recording): any other, even empty, was made beside the install.
                if !items.iter().any(|(p, _)| p.starts_with(&path)) {
                    return Err(damage(
                        "is a folder that holds nothing in the entry's record of its files: it was made beside the \
                         installed files (planted?)"
                            .into(),
                    ));
                }
                stack.push(path);
                continue;
            }
            if meta.is_file() {
                check_owner_and_mode(&meta).map_err(damage)?;
            } else if !meta.file_type().is_symlink() {
                return Err(damage("is neither a file, a folder nor a link (a FIFO, socket or device?)".into()));
            }
            if !bookkeeping && !items.iter().any(|(p, _)| *p == path) {
                return Err(damage(
                    "is not in the entry's record of its files: it was put beside the installed files (planted?), \
                     where the include path or the library folder would find it"
                        .into(),
                ));
            }
        }
    }
    Ok(())
}

/// Another user's file, or one that group or others can write, could be anyone's.
fn check_owner_and_mode(meta: &fs::Metadata) -> std::result::Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!("belongs to uid {}, not to you (uid {me}), so it could be anyone's", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
        return Err(format!("can be written by {who} (mode {mode:o}), so it could be anyone's"));
    }
    Ok(())
}

/// Removes the folders below `dir` that hold no file or link (at any depth): the record lists
/// files and links only, so the folders an entry may hold are the ones its recorded paths imply.
pub(crate) fn remove_empty_folders(dir: &Path) -> Result<bool> {
    let mut empty = true;
    for child in fs::read_dir(dir).map_err(Error::io(format!("listing {}", dir.display())))? {
        let path = child.map_err(Error::io(format!("listing {}", dir.display())))?.path();
        let meta = fs::symlink_metadata(&path).map_err(Error::io(format!("reading {}", path.display())))?;
        if meta.is_dir() && remove_empty_folders(&path)? {
            fs::remove_dir(&path).map_err(Error::io(format!("removing the empty folder {}", path.display())))?;
        } else {
            empty = false;
        }
    }
    Ok(empty)
}

fn walk(entry: &Path, relative: &Path, items: &mut Vec<(PathBuf, Item)>) -> Result<()> {
    let folder = entry.join(relative);
    for child in fs::read_dir(&folder).map_err(Error::io(format!("listing {}", folder.display())))? {
        let child = child.map_err(Error::io(format!("listing {}", folder.display())))?;
        let name = child.file_name();
        if relative.as_os_str().is_empty() && UNLISTED.iter().any(|u| name == *u) {
            continue;
        }
        let path = relative.join(&name);
        let full = entry.join(&path);
        let meta = fs::symlink_metadata(&full).map_err(Error::io(format!("reading {}", full.display())))?;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&full).map_err(Error::io(format!("reading {}", full.display())))?;
            items.push((path, Item::Link(target)));
        } else if meta.is_dir() {
            walk(entry, &path, items)?;
        } else if meta.is_file() {
            let sha256 = hash_file(&full).map_err(Error::io(format!("hashing {}", full.display())))?;
            items.push((path, Item::File { size: meta.len(), sha256 }));
        }
    }
    Ok(())
}

fn hash_file(path: &Path) -> std::io::Result<String> {
    // Never through a link and never waiting on a FIFO swapped in after the stat.
    let mut file = crate::cache::ownership::open_regular(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
