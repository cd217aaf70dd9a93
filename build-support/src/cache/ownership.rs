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
    if follow == Follow::Yes {
        check_ancestors(path)?;
    }
    Ok(true)
}

/// Refuses a cache folder that someone else could replace: one of the folders above it (as
/// given, and as its links resolve) is another user's, or writable by group or others without
/// the sticky bit. Whoever can write such a folder can rename the cache away and put their own
/// in its place, after this build and before the binary loads the library recorded in it. This
/// is ssh's `StrictModes`; a sticky folder (`/tmp`) lets nobody rename what others own.
pub(crate) fn check_ancestors(path: &Path) -> Result<()> {
    let real = fs::canonicalize(path).map_err(Error::io(format!("resolving {}", path.display())))?;
    for ancestor in path.ancestors().skip(1).chain(real.ancestors().skip(1)) {
        if ancestor.as_os_str().is_empty() {
            continue;
        }
        let meta = fs::metadata(ancestor).map_err(Error::io(format!("reading {}", ancestor.display())))?;
        if let Some(why) = replaceable_by_others(&meta) {
            return Err(refuse(
                ancestor,
                format!(
                    "{why}, so the cache folder {} below it could be renamed away and another put in its place \
                     (the binaries built from it load the library recorded there)",
                    path.display()
                ),
                format!(
                    "keep the cache in a folder only you (or root) can write, such as the default ~/.cache/onnxrt \
                     (unset ONNXRT_CACHE_DIR), or make {} yours and `chmod go-w` it (or `chmod +t` it, as /tmp is)",
                    ancestor.display()
                ),
            ));
        }
    }
    Ok(())
}

/// Why another user could rename what a folder holds, if they could: it is theirs (neither
/// yours nor root's), or group or others may write it and it is not sticky.
pub(crate) fn replaceable_by_others(meta: &fs::Metadata) -> Option<String> {
    let me = my_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!("belongs to uid {}, not to you (uid {me}) or root", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        let who = if mode & 0o002 != 0 { "everyone" } else { "its group" };
        return Some(format!("can be written by {who} and is not sticky (mode {mode:o})"));
    }
    None
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
    let file = open_regular(path).map_err(|e| open_error(path, e))?;
    check_file(&file, path)?;
    Ok(file)
}

/// Opens `path` for reading, never through a final symlink (`ELOOP`), and without waiting: a
/// FIFO swapped in after a `stat` would block a plain `open` until a writer comes, so the open is
/// non-blocking and what was opened must be a regular file, checked on the descriptor. For a
/// regular file `O_NONBLOCK` changes nothing.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = File::options().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "is not a regular file"));
    }
    Ok(file)
}

/// Reads at most `cap` bytes of the regular file `path` (opened as [`open_regular`] does);
/// `None` when it does not exist, an error when it is larger.
pub(crate) fn read_bounded(path: &Path, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(std::io::Error::other(format!("larger than {cap} bytes, far more than it ever holds")));
    }
    Ok(Some(bytes))
}

/// Creates `path` (which must not exist; never through a link) with exactly `mode`, whatever the
/// umask, and writes `bytes` into it.
pub(crate) fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = || Error::io(format!("writing {}", path.display()));
    let mut file = File::options()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io())?;
    // The umask narrowed the mode given to open; set it exactly.
    file.set_permissions(fs::Permissions::from_mode(mode)).map_err(io())?;
    file.write_all(bytes).map_err(io())
}

/// Gives every folder of a filled work folder mode 0755 and takes group and others' write
/// permission from every file, whatever umask they were created under (the work folder itself is
/// 0700, so nobody else could reach them meanwhile). Links are left alone.
pub(crate) fn normalise_modes(dir: &Path) -> Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for child in fs::read_dir(&folder).map_err(Error::io(format!("listing {}", folder.display())))? {
            let path = child.map_err(Error::io(format!("listing {}", folder.display())))?.path();
            let meta = fs::symlink_metadata(&path).map_err(Error::io(format!("reading {}", path.display())))?;
            let mode = if meta.is_dir() {
                stack.push(path.clone());
                0o755
            } else if meta.is_file() {
                meta.mode() & 0o755
            } else {
                continue;
            };
            if meta.mode() & 0o7777 != mode {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                    .map_err(Error::io(format!("setting the mode of {}", path.display())))?;
            }
        }
    }
    Ok(())
}

/// Gives a published entry the usual folder mode (work folders are created 0700).
pub(crate) fn make_readable(dir: &Path) -> Result<()> {
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))
        .map_err(Error::io(format!("setting the mode of {}", dir.display())))
}
