//! Packs a provisioned distribution as a `.tgz` with the official archive's layout, so the
//! archive path (`ONNXRT_ARCHIVE`) can be exercised end to end and a folder can be carried to
//! an air-gapped machine. The output is deterministic: sorted entries, fixed owner and time.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::{verify, Provisioned};

/// Writes `out` (atomically: a temporary file then a rename) and returns its sha256.
pub fn pack(p: &Provisioned, out: &Path) -> Result<String> {
    let root = p.lib_dir.parent().ok_or_else(|| Error::Manifest("library folder has no parent".into()))?;
    let root_name = root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = out.with_extension("tgz.partial");
    let result = write_archive(root, &root_name, &tmp);
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, out).map_err(Error::io(format!("renaming into {}", out.display())))?;
    verify::sha256_file(out)
}

fn write_archive(root: &Path, root_name: &str, tmp: &Path) -> Result<()> {
    let file = fs::File::create(tmp).map_err(Error::io(format!("creating {}", tmp.display())))?;
    let gz = flate2::GzBuilder::new().mtime(0).write(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    for path in files {
        let relative = path.strip_prefix(root).map_err(|_| Error::Manifest("walk left the root".into()))?;
        if relative.as_os_str() == crate::cache::COMPLETE_MARKER {
            continue;
        }
        let name = Path::new(root_name).join(relative);
        let meta = fs::symlink_metadata(&path).map_err(Error::io(format!("reading {}", path.display())))?;
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
