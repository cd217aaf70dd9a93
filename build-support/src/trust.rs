//! Whether a folder or file of the cache may be trusted: it must be the user's own (or root's),
//! not writable by group or others, and, inside the cache, not a symlink. This is the rule ssh
//! applies to its keys: a cache that someone else can write is one whose entries someone else
//! can plant, so it is refused with what to `chmod`/`chown`, never used silently.

use std::fs::{self, File};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use crate::error::{Error, Result};

/// Whether a path may be a symlink to the folder it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    /// The cache folder itself: a link the user made (`~/.cache/onnxrt -> /data/onnxrt`) is fine,
    /// the folder it leads to is checked.
    Yes,
    /// Anything inside the cache: a link is refused.
    No,
}

/// The effective uid of this process.
fn my_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn refuse(path: &Path, why: String, fix: String) -> Error {
    Error::UnsafeCache { path: path.to_owned(), why, fix }
}

fn link_refused(path: &Path) -> Error {
    refuse(
        path,
        "is a symbolic link, and nothing inside the cache is followed through a link".into(),
        format!(
            "remove it (`rm {}`; the next build installs again); to keep the cache elsewhere, set ONNXRT_CACHE_DIR to that folder",
            path.display()
        ),
    )
}

/// Refuses what another user owns or what group or others can write.
fn check_owner_and_mode(path: &Path, meta: &fs::Metadata) -> Result<()> {
    let me = my_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(refuse(
            path,
            format!("belongs to uid {}, not to you (uid {me}), so its entries could be anyone's", meta.uid()),
            format!(
                "if the folder is yours, `chown -R {me} {}`; otherwise set ONNXRT_CACHE_DIR to a folder of your own",
                path.display()
            ),
        ));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
        return Err(refuse(
            path,
            format!("can be written by {who} (mode {mode:o}), so its entries could be anyone's"),
            format!("`chmod go-w {}`, or set ONNXRT_CACHE_DIR to a folder only you can write", path.display()),
        ));
    }
    Ok(())
}

/// Checks a folder of the cache; `false` when it does not exist.
pub(crate) fn check_dir(path: &Path, follow: Follow) -> Result<bool> {
    let meta = match follow {
        Follow::Yes => fs::metadata(path),
        Follow::No => fs::symlink_metadata(path),
    };
    let meta = match meta {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()))(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(link_refused(path));
    }
    if !meta.is_dir() {
        return Err(refuse(
            path,
            "is not a folder".into(),
            format!("remove it, or set ONNXRT_CACHE_DIR to another folder ({})", path.display()),
        ));
    }
    check_owner_and_mode(path, &meta)?;
    Ok(true)
}

/// Creates a folder of the cache if missing (mode 0755), then checks it.
pub(crate) fn ensure_dir(path: &Path, follow: Follow) -> Result<()> {
    if check_dir(path, follow)? {
        return Ok(());
    }
    let created = fs::DirBuilder::new().recursive(follow == Follow::Yes).mode(0o755).create(path);
    match created {
        Ok(()) => {}
        // Another build made it first: it is checked like any other.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(format!("creating {}", path.display()))(e)),
    }
    if check_dir(path, follow)? {
        Ok(())
    } else {
        Err(refuse(path, "vanished right after it was created".into(), "check who else uses this folder".into()))
    }
}

/// Checks a file opened (with `O_NOFOLLOW`) inside the cache, on its open handle.
pub(crate) fn check_file(file: &File, path: &Path) -> Result<()> {
    let meta = file.metadata().map_err(Error::io(format!("reading {}", path.display())))?;
    if !meta.is_file() {
        return Err(refuse(path, "is not a regular file".into(), format!("remove it ({})", path.display())));
    }
    check_owner_and_mode(path, &meta)
}

/// The error of an `O_NOFOLLOW` open: a link is named as such.
pub(crate) fn open_error(path: &Path, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::ELOOP) {
        link_refused(path)
    } else {
        Error::io(format!("opening {}", path.display()))(e)
    }
}

/// Opens a file inside the cache for reading, never through a symlink, and checks it.
pub(crate) fn open_private(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = File::options().read(true).custom_flags(libc::O_NOFOLLOW).open(path).map_err(|e| open_error(path, e))?;
    check_file(&file, path)?;
    Ok(file)
}

/// Gives a published entry the usual folder mode (work folders are created 0700).
pub(crate) fn make_readable(dir: &Path) -> Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))
        .map_err(Error::io(format!("setting the mode of {}", dir.display())))
}
