//! A folder only this process's user can write: where a provider may load code from (TensorRT's
//! engine cache) without an `unsafe` promise from the caller.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::Path;

use crate::error::{Error, Result};

/// Makes `dir` if missing (mode 0700) and refuses it unless it, every entry in it and every
/// folder above it can be written by no user but this process's (or root); `what` names it in
/// the error.
pub(crate) fn check(dir: &Path, what: &str) -> Result<()> {
    let refuse = |why: String| Error::BadSetting {
        setting: what.to_owned(),
        value: dir.display().to_string(),
        allowed: format!("a folder only this user can write: {why}"),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| refuse(format!("it cannot be made ({e})")))?;
    if let Some(why) = crate::loader::replaceable(dir) {
        return Err(refuse(why));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let entries = std::fs::read_dir(dir).map_err(|e| refuse(format!("it cannot be read ({e})")))?;
    for entry in entries {
        let entry = entry.map_err(|e| refuse(format!("it cannot be read ({e})")))?;
        let meta = entry.metadata().map_err(|e| refuse(format!("{} cannot be read ({e})", entry.path().display())))?;
        let mode = meta.mode() & 0o7777;
        if (meta.uid() != me && meta.uid() != 0) || mode & 0o022 != 0 {
            return Err(refuse(format!(
                "{} belongs to uid {} with mode {mode:o}: another user could have written it",
                entry.path().display(),
                meta.uid()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::check;

    #[test]
    fn only_a_folder_no_other_user_can_write_passes() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("engines/model/1");
        check(&dir, "cache").expect("made private");
        assert_eq!(std::fs::metadata(&dir).expect("made").permissions().mode() & 0o777, 0o700);
        std::fs::write(dir.join("engine"), b"x").expect("write");
        std::fs::set_permissions(dir.join("engine"), std::fs::Permissions::from_mode(0o666)).expect("chmod");
        let error = check(&dir, "cache").expect_err("a file others can write").to_string();
        assert!(error.contains("engine") && error.contains("mode 666"), "{error}");
        std::fs::set_permissions(dir.join("engine"), std::fs::Permissions::from_mode(0o600)).expect("chmod");
        check(&dir, "cache").expect("private again");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let error = check(&dir, "cache").expect_err("a folder others can write").to_string();
        assert!(error.contains("mode 777"), "{error}");
        let file = root.path().join("file");
        std::fs::write(&file, b"x").expect("write");
        let error = check(&file.join("sub"), "cache").expect_err("under a file").to_string();
        assert!(error.contains("cannot be made"), "{error}");
    }
}
