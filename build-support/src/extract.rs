//! Extraction of a verified `.tgz` into a folder, refusing anything that could write outside it.
//!
//! Refused: absolute paths, `..`, entries outside the expected root folder, symlinks or hard links
//! whose target leaves the root, device files and FIFOs, more than `max_entries` entries, and
//! more than `max_unpacked` bytes (a decompression bomb: each entry's declared size is counted
//! before a byte of it is written, and at most that many bytes are written). After the tar's end
//! the gzip stream is read to its end, so that its trailer (CRC32 and length) is checked: a
//! damaged archive is refused even when its own (wrong) hash was pinned. Each refusal is a typed
//! error; the caller extracts into a temporary folder and deletes it on error, so nothing
//! half-written stays.
#![forbid(unsafe_code)]

use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Bounds on what one archive may expand to.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Most entries accepted.
    pub max_entries: u64,
    /// Most bytes written in all.
    pub max_unpacked: u64,
}

impl Default for Bounds {
    /// For archives of no particular distribution (the official GPU archive has 23 entries).
    fn default() -> Self {
        Bounds { max_entries: 10_000, max_unpacked: 4 << 30 }
    }
}

impl Bounds {
    /// The bounds of a distribution: its manifest's unpacked-size bound.
    pub fn for_dist(dist: &crate::Dist) -> Bounds {
        Bounds { max_unpacked: dist.unpacked_bound(), ..Bounds::default() }
    }
}

/// Extracts the gzip'd tar `reader` into `dest`, which must exist and be empty. Every entry must
/// lie under `root/` (the archive's single top-level folder), or anywhere when `root` is empty.
pub fn extract_tgz(reader: impl Read, dest: &Path, root: &str, bounds: Bounds) -> Result<()> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(reader));
    let (entries_seen, unpacked) = extract_entries(&mut archive, dest, root, bounds)?;
    if entries_seen == 0 {
        return Err(Error::Corrupt { what: "the archive".into(), why: "it holds no entries".into() });
    }
    // The tar reader stops at the end-of-archive blocks; the gzip trailer comes after them and is
    // only checked by a decoder that reads to its end. What follows the tar is bounded like the rest.
    let mut rest = archive.into_inner().take(bounds.max_unpacked.saturating_sub(unpacked).saturating_add(1));
    let trailing = std::io::copy(&mut rest, &mut std::io::sink()).map_err(corrupt)?;
    if unpacked.saturating_add(trailing) > bounds.max_unpacked {
        return Err(Error::UnsafeEntry { entry: "(after the last entry)".into(), why: BOUND_PASSED });
    }
    Ok(())
}

const BOUND_PASSED: &str =
    "the archive expands past the distribution's unpacked-size bound (`unpacked_bytes` of the manifest, plus a margin)";

fn corrupt(why: std::io::Error) -> Error {
    Error::Corrupt { what: "the archive".into(), why: why.to_string() }
}

/// Extracts every entry; returns how many there were and the bytes they declared.
fn extract_entries<R: Read>(
    archive: &mut tar::Archive<R>,
    dest: &Path,
    root: &str,
    bounds: Bounds,
) -> Result<(u64, u64)> {
    let mut entries_seen = 0u64;
    let mut unpacked = 0u64;
    for entry in archive.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        entries_seen += 1;
        if entries_seen > bounds.max_entries {
            return Err(Error::UnsafeEntry {
                entry: format!("#{entries_seen}"),
                why: "more entries than any ONNX Runtime archive has",
            });
        }
        let raw = entry.path_bytes().into_owned();
        let name = String::from_utf8_lossy(&raw).into_owned();
        let relative = safe_relative(&name)?;
        if relative.as_os_str().is_empty() {
            continue; // the entry `./`
        }
        if !root.is_empty() && !relative.starts_with(root) {
            return Err(Error::UnsafeEntry { entry: name, why: "outside the archive's root folder" });
        }
        let target = dest.join(&relative);
        no_link_on_the_way(dest, &relative, &name)?;
        let kind = entry.header().entry_type();
        match kind {
            tar::EntryType::Directory => {
                fs::create_dir_all(&target).map_err(Error::io(format!("creating {}", target.display())))?;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                let size = entry.header().size().map_err(corrupt)?;
                unpacked = unpacked.saturating_add(size);
                if unpacked > bounds.max_unpacked {
                    return Err(Error::UnsafeEntry { entry: name, why: BOUND_PASSED });
                }
                create_parent(&target)?;
                remove_existing(&target)?;
                let mut out = fs::File::create(&target).map_err(Error::io(format!("creating {}", target.display())))?;
                // `take` guards against a header that lies about the size.
                let copied = std::io::copy(&mut (&mut entry).take(size), &mut out).map_err(corrupt)?;
                if copied != size {
                    return Err(Error::Corrupt {
                        what: format!("archive entry `{name}`"),
                        why: format!("it holds {copied} of {size} bytes"),
                    });
                }
                let mode = entry.header().mode().unwrap_or(0o644) & 0o755;
                set_mode(&target, mode | 0o400)?;
            }
            tar::EntryType::Symlink => {
                let link = entry
                    .link_name_bytes()
                    .ok_or_else(|| Error::UnsafeEntry { entry: name.clone(), why: "symlink without a target" })?;
                let link = PathBuf::from(String::from_utf8_lossy(&link).into_owned());
                let parent = relative.parent().unwrap_or(Path::new(""));
                if link.is_absolute() || !parents_only_leading(&link) || !stays_inside(parent, &link, root) {
                    return Err(Error::UnsafeEntry { entry: name, why: "symlink pointing outside the archive root" });
                }
                create_parent(&target)?;
                remove_existing(&target)?;
                std::os::unix::fs::symlink(&link, &target)
                    .map_err(Error::io(format!("linking {}", target.display())))?;
            }
            tar::EntryType::Link => {
                let link = entry
                    .link_name_bytes()
                    .ok_or_else(|| Error::UnsafeEntry { entry: name.clone(), why: "hard link without a target" })?;
                let link_name = String::from_utf8_lossy(&link).into_owned();
                let link_rel = safe_relative(&link_name).map_err(|_| Error::UnsafeEntry {
                    entry: name.clone(),
                    why: "hard link pointing outside the archive root",
                })?;
                if !root.is_empty() && !link_rel.starts_with(root) {
                    return Err(Error::UnsafeEntry { entry: name, why: "hard link pointing outside the archive root" });
                }
                no_link_on_the_way(dest, &link_rel, &name)?;
                let source = dest.join(&link_rel);
                // Only regular files already extracted from this archive may be linked to.
                let meta = fs::symlink_metadata(&source).map_err(|_| Error::UnsafeEntry {
                    entry: name.clone(),
                    why: "hard link to a file the archive did not contain before it",
                })?;
                if !meta.is_file() {
                    return Err(Error::UnsafeEntry {
                        entry: name,
                        why: "hard link to something other than a regular file",
                    });
                }
                create_parent(&target)?;
                remove_existing(&target)?;
                fs::hard_link(&source, &target).map_err(Error::io(format!("linking {}", target.display())))?;
            }
            tar::EntryType::XGlobalHeader
            | tar::EntryType::XHeader
            | tar::EntryType::GNULongName
            | tar::EntryType::GNULongLink => {}
            tar::EntryType::Char | tar::EntryType::Block => {
                return Err(Error::UnsafeEntry { entry: name, why: "device file" })
            }
            tar::EntryType::Fifo => return Err(Error::UnsafeEntry { entry: name, why: "FIFO" }),
            _ => return Err(Error::UnsafeEntry { entry: name, why: "entry type not found in ONNX Runtime archives" }),
        }
    }
    Ok((entries_seen, unpacked))
}

/// A relative path made only of normal components; anything else is refused.
fn safe_relative(name: &str) -> Result<PathBuf> {
    let path = Path::new(name);
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(Error::UnsafeEntry { entry: name.to_owned(), why: "path contains `..`" })
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(Error::UnsafeEntry { entry: name.to_owned(), why: "absolute path" })
            }
        }
    }
    Ok(out)
}

/// Whether `link`, resolved lexically from the folder `parent`, stays inside `root`.
fn stays_inside(parent: &Path, link: &Path, root: &str) -> bool {
    let mut depth: Vec<&std::ffi::OsStr> = Vec::new();
    for component in parent.components().chain(link.components()) {
        match component {
            Component::Normal(part) => depth.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    let resolved: PathBuf = depth.iter().collect();
    root.is_empty() || resolved.starts_with(root)
}

/// Whether every `..` of `link` comes before its first name. The kernel resolves a `..` that
/// follows a name physically, through that name if it is a symlink of the archive (with
/// `p/d -> ..`, `p/d/../..` is two levels above where it looks), so [`stays_inside`], which
/// reasons lexically, only holds for links whose `..` are all leading.
fn parents_only_leading(link: &Path) -> bool {
    let mut named = false;
    for component in link.components() {
        match component {
            Component::ParentDir if named => return false,
            Component::Normal(_) => named = true,
            _ => {}
        }
    }
    true
}

/// Refuses to write through a symlink: each link was checked on its own, but a chain of links
/// with `..` can still lead outside, so nothing is ever created below one.
fn no_link_on_the_way(dest: &Path, relative: &Path, entry: &str) -> Result<()> {
    let mut walked = dest.to_path_buf();
    let parents: Vec<_> = relative.parent().map(|p| p.components().collect()).unwrap_or_default();
    for component in parents {
        walked.push(component);
        if fs::symlink_metadata(&walked).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::UnsafeEntry {
                entry: entry.to_owned(),
                why: "written through a symlink of the archive",
            });
        }
    }
    Ok(())
}

fn create_parent(target: &Path) -> Result<()> {
    match target.parent() {
        Some(parent) => fs::create_dir_all(parent).map_err(Error::io(format!("creating {}", parent.display()))),
        None => Ok(()),
    }
}

/// A later entry replaces an earlier one; never write through a link left by the archive.
fn remove_existing(target: &Path) -> Result<()> {
    match fs::symlink_metadata(target) {
        Ok(meta) if meta.is_dir() => {
            Err(Error::UnsafeEntry { entry: target.display().to_string(), why: "a file entry replaces a folder" })
        }
        Ok(_) => fs::remove_file(target).map_err(Error::io(format!("replacing {}", target.display()))),
        Err(_) => Ok(()),
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(Error::io(format!("setting the mode of {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_are_normalised_and_escapes_refused() {
        assert_eq!(safe_relative("./a/b").expect("plain"), PathBuf::from("a/b"));
        assert!(safe_relative("a/../../etc").is_err());
        assert!(safe_relative("/etc/passwd").is_err());
    }

    #[test]
    fn symlink_targets_must_stay_under_the_root() {
        assert!(stays_inside(Path::new("r/lib"), Path::new("libx.so.1"), "r"));
        assert!(stays_inside(Path::new("r/lib"), Path::new("../include/x.h"), "r"));
        assert!(!stays_inside(Path::new("r/lib"), Path::new("../../outside"), "r"));
        assert!(!stays_inside(Path::new("r"), Path::new("../../../etc/passwd"), "r"));
        assert!(!stays_inside(Path::new("r/lib"), Path::new("/etc/passwd"), "r"));
        assert!(parents_only_leading(Path::new("../include/x.h")));
        assert!(!parents_only_leading(Path::new("p/d/../..")));
    }
}
