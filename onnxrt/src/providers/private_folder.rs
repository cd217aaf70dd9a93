//! A folder only this process's user can write: where a provider may load code from (TensorRT's
//! engine cache) without an `unsafe` promise from the caller.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use crate::error::{Error, Result};

/// Makes `dir` if missing (mode 0700) and refuses it unless it, every entry in it and every
/// folder above it can be written by no user but this process's (or root; a folder above may be
/// shared if sticky, as `/tmp`). The error names the setting (`what`), the folder or file another
/// user could write, why that matters (`runs`: what the provider runs from the folder) and what
/// to do.
pub(crate) fn check(dir: &Path, what: &str, runs: &str) -> Result<()> {
    let refuse = |why: String| Error::BadSetting {
        setting: what.to_owned(),
        value: dir.display().to_string(),
        allowed: format!(
            "{why}; {runs}, so it must be a folder only this user can write: make {} yours with mode 0700 (and \
             every folder above it), or name a new folder under one only you can write",
            dir.display()
        ),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| refuse(format!("it cannot be made ({e})")))?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let theirs = |meta: &std::fs::Metadata| meta.uid() != me && meta.uid() != 0;
    let writable = |meta: &std::fs::Metadata| meta.mode() & 0o022 != 0;
    let said = |path: &Path, meta: &std::fs::Metadata| {
        format!("{} (uid {}, mode {:o})", path.display(), meta.uid(), meta.mode() & 0o7777)
    };
    let real = std::fs::canonicalize(dir).map_err(|e| refuse(format!("it cannot be resolved ({e})")))?;
    for folder in [dir, real.as_path()] {
        let meta = std::fs::metadata(folder).map_err(|e| refuse(format!("it cannot be read ({e})")))?;
        if theirs(&meta) || writable(&meta) {
            return Err(refuse(format!("the folder {} can be written by another user", said(folder, &meta))));
        }
    }
    let above = dir.ancestors().skip(1).chain(real.ancestors().skip(1)).filter(|f| !f.as_os_str().is_empty());
    for folder in above {
        let meta = std::fs::metadata(folder)
            .map_err(|e| refuse(format!("the folder {} above it cannot be read ({e})", folder.display())))?;
        let sticky = meta.mode() & 0o1000 != 0;
        if theirs(&meta) || (writable(&meta) && !sticky) {
            return Err(refuse(format!(
                "the folder above it {} can be written by another user, who could put a folder of theirs in its place",
                said(folder, &meta)
            )));
        }
    }
    let entries = std::fs::read_dir(dir).map_err(|e| refuse(format!("it cannot be read ({e})")))?;
    for entry in entries {
        let entry = entry.map_err(|e| refuse(format!("it cannot be read ({e})")))?;
        let meta = entry.metadata().map_err(|e| refuse(format!("{} cannot be read ({e})", entry.path().display())))?;
        if theirs(&meta) || writable(&meta) {
            return Err(refuse(format!("{} in it can be written by another user", said(&entry.path(), &meta))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::check;

    const RUNS: &str = "the provider runs what it finds there";

    #[test]
    fn only_a_folder_no_other_user_can_write_passes() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("engines/model/1");
        check(&dir, "cache", RUNS).expect("made private");
        assert_eq!(std::fs::metadata(&dir).expect("made").permissions().mode() & 0o777, 0o700);
        std::fs::write(dir.join("engine"), b"x").expect("write");
        std::fs::set_permissions(dir.join("engine"), std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let error = check(&dir, "cache", RUNS).expect_err("a file others can write").to_string();
        assert!(error.contains("engine (uid") && error.contains("mode 666"), "{error}");
        std::fs::set_permissions(dir.join("engine"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
        check(&dir, "cache", RUNS).expect("private again");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let error = check(&dir, "cache", RUNS).expect_err("a folder others can write").to_string();
        assert!(error.contains("mode 777"), "{error}");
        let file = root.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let error = check(&file.join("sub"), "cache", RUNS).expect_err("under a file").to_string();
        assert!(error.contains("cannot be made"), "{error}");
    }
}
