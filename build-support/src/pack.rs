//! Packs a provisioned distribution as a `.tgz` with the official archive's layout, so the
//! archive path (`ONNXRT_ARCHIVE`) can be exercised end to end and a folder can be carried to
//! an air-gapped machine. The output is deterministic: sorted entries, fixed owner and time.
//!
//! A cache entry is packed only as its record lists it: a file put beside the recorded ones is
//! refused (the entry is damaged), never packed into an archive whose sha256 users would pin.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::{verify, Provisioned};

/// Writes `out` (atomically: a temporary file then a rename) and returns its sha256.
pub fn pack(p: &Provisioned, out: &Path) -> Result<String> {
    let root = p.lib_dir.parent().ok_or_else(|| Error::Manifest("library folder has no parent".into()))?;
    let root_name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    refuse_inside(out, root, "the distribution being packed")?;
    let recorded = recorded_paths(root)?;
    // A work file of random name beside `out` (a link planted at a fixed name is never written
    // through); dropped, so removed, on error.
    let folder = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".onnxrt-pack-")
        .suffix(".partial")
        .tempfile_in(folder)
        .map_err(Error::io(format!("creating a work file in {}", folder.display())))?;
    write_archive(root, &root_name, tmp.path(), recorded.as_deref())?;
    tmp.persist(out).map_err(|e| Error::io(format!("renaming into {}", out.display()))(e.error))?;
    verify::sha256_file(out)
}

/// Refuses an output path inside `folder` (both resolved through links, the output's folder
/// being what exists of it): writing there would change what was verified.
pub fn refuse_inside(out: &Path, folder: &Path, what: &'static str) -> Result<()> {
    let Ok(folder) = fs::canonicalize(folder) else { return Ok(()) };
    let absolute = std::path::absolute(out).map_err(Error::io(format!("resolving {}", out.display())))?;
    // The nearest existing ancestor of the output, resolved (the file itself may not exist yet).
    let mut existing = absolute.as_path();
    let resolved = loop {
        match existing.parent() {
            Some(parent) => {
                if let Ok(real) = fs::canonicalize(parent) {
                    break real;
                }
                existing = parent;
            }
            None => return Ok(()),
        }
    };
    if resolved.starts_with(&folder) {
        return Err(Error::OutputInside { out: out.to_owned(), inside: folder, what });
    }
    Ok(())
}

/// For a folder inside a cache entry: the recorded paths below it, after checking that the entry
/// holds nothing else. `None` for a folder that is no cache entry (an install of the user's own).
fn recorded_paths(root: &Path) -> Result<Option<Vec<PathBuf>>> {
    for entry in [Some(root), root.parent()].into_iter().flatten() {
        let items = match crate::cache::record::read(entry) {
            Ok(Some(items)) => items,
            Ok(None) => continue,
            Err(damage) => return Err(damaged(entry, damage)),
        };
        crate::cache::record::check_folder(entry, &items).map_err(|damage| damaged(entry, damage))?;
        let below = root.strip_prefix(entry).unwrap_or(Path::new(""));
        let paths = items.into_iter().filter_map(|(p, _)| p.strip_prefix(below).ok().map(Path::to_path_buf)).collect();
        return Ok(Some(paths));
    }
    Ok(None)
}

fn damaged(entry: &Path, damage: crate::cache::record::Damage) -> Error {
    Error::DamagedEntry {
        entry: entry.to_owned(),
        file: damage.file.display().to_string(),
        why: damage.why,
        remedy: "Nothing was packed. Delete that folder and fetch the distribution again, then pack".into(),
    }
}

fn write_archive(root: &Path, root_name: &str, tmp: &Path, recorded: Option<&[PathBuf]>) -> Result<()> {
    let file = fs::File::create(tmp).map_err(Error::io(format!("creating {}", tmp.display())))?;
    let gz = flate2::GzBuilder::new().mtime(0).write(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    for path in files {
        let relative = path.strip_prefix(root).map_err(|_| Error::Manifest("walk left the root".into()))?;
        if relative.as_os_str() == crate::cache::COMPLETE_MARKER || relative.as_os_str() == crate::cache::record::RECORD
        {
            continue;
        }
        let name = Path::new(root_name).join(relative);
        let meta = fs::symlink_metadata(&path).map_err(Error::io(format!("reading {}", path.display())))?;
        // Only what the record lists (and the folders that hold it) is packed from an entry.
        if let Some(recorded) = recorded {
            let listed = if meta.is_dir() {
                recorded.iter().any(|p| p.starts_with(relative))
            } else {
                recorded.iter().any(|p| p == relative)
            };
            if !listed {
                continue;
            }
        }
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        let io = Error::io(format!("packing {}", path.display()));
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).map_err(Error::io("reading a link"))?;
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            header.set_mode(0o777);
            tar.append_link(&mut header, &name, &target).map_err(io)?;
        } else if meta.is_dir() {
            header.set_entry_type(tar::EntryType::Directory);
            header.set_size(0);
            header.set_mode(0o755);
            tar.append_data(&mut header, &name, std::io::empty()).map_err(io)?;
        } else {
            use std::os::unix::fs::PermissionsExt;
            header.set_entry_type(tar::EntryType::Regular);
            header.set_size(meta.len());
            header.set_mode(meta.permissions().mode() & 0o755);
            let data = fs::File::open(&path).map_err(Error::io(format!("opening {}", path.display())))?;
            tar.append_data(&mut header, &name, data).map_err(io)?;
        }
    }
    let gz = tar.into_inner().map_err(Error::io("finishing the tar stream"))?;
    let mut file = gz.finish().map_err(Error::io("finishing the gzip stream"))?;
    file.flush().map_err(Error::io("flushing the archive"))?;
    file.sync_all().map_err(Error::io("syncing the archive"))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).map_err(Error::io(format!("listing {}", dir.display())))? {
        let entry = entry.map_err(Error::io("listing"))?;
        let path = entry.path();
        out.push(path.clone());
        if entry.file_type().map_err(Error::io("listing"))?.is_dir() {
            walk(&path, out)?;
        }
    }
    Ok(())
}
