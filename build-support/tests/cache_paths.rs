//! Where the cache and the build's stamp live, and what is followed to get there:
//!
//! - a relative `ONNXRT_CACHE_DIR` is refused, a relative `XDG_CACHE_HOME` ignored (XDG says so);
//! - a link at `$OUT_DIR/onnxrt-entry-hashed` is replaced, never written through;
//! - a library swapped at the same size with its old mtime put back is noticed (inode, ctime);
//! - `registry-files` and apt's state folder inside it are never followed through a link.

mod common;
mod registry;

use std::path::Path;
use std::process::{Command, Output};
use std::time::SystemTime;

use build_support::cache::INSTALLED_MTIME;
use build_support::{assemble, provision, Checked, Config, Error, Source};
use common::*;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `onnxrt-dist fetch` of the test-only distribution from a local archive, in the folder `cwd`,
/// with `env` and nothing else of the outer environment.
fn fetch_in(cwd: &Path, env: &[(&str, &str)]) -> (Output, String) {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let file = cwd.join(UNPINNED_FILE);
    std::fs::write(&file, &archive).expect("writing the archive");
    let output = Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(["fetch", UNPINNED_DIST])
        .current_dir(cwd)
        .env_clear()
        .env("ONNXRT_ARCHIVE", &file)
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .envs(env.iter().copied())
        .output()
        .expect("running onnxrt-dist");
    (output, sha)
}

#[test]
fn a_relative_cache_folder_is_refused_and_a_relative_xdg_cache_home_ignored() {
    let tmp = tempdir();
    let (refused, _) = fetch_in(tmp.path(), &[("ONNXRT_CACHE_DIR", "relcache")]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("ONNXRT_CACHE_DIR") && stderr(&refused).contains("absolute"),
        "{}",
        stderr(&refused)
    );
    assert!(!tmp.path().join("relcache").exists(), "nothing is created relative to the current folder");

    let home = tmp.path().join("home");
    std::fs::create_dir(&home).expect("a home");
    let home_text = home.to_str().expect("utf-8");
    let (fetched, sha) = fetch_in(tmp.path(), &[("XDG_CACHE_HOME", "relxdg"), ("HOME", home_text)]);
    assert!(fetched.status.success(), "{}", stderr(&fetched));
    assert!(!tmp.path().join("relxdg").exists(), "the relative XDG_CACHE_HOME is ignored");
    assert!(home.join(".cache/onnxrt").join(&sha).is_dir(), "the default under HOME is used");
}

/// An installed synthetic entry whose build stamp lives in `out_dir`.
fn installed_with_stamp(tmp: &Path, out_dir: &Path) -> Config {
    let archive = good_archive();
    let sha = sha256(&archive);
    let file = tmp.join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), &tmp.join("cache"));
    config.archive = Some(file);
    config.stamp_dir = Some(out_dir.to_owned());
    provision(&config).expect("the pinned archive installs");
    config.archive = None;
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    config
}

#[test]
fn a_link_at_the_stamp_is_replaced_not_written_through() {
    let tmp = tempdir();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).expect("OUT_DIR");
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"someone else's file\n").expect("writing the victim");
    let stamp = out_dir.join("onnxrt-entry-hashed");
    std::os::unix::fs::symlink(&victim, &stamp).expect("planting a link at the stamp");

    let config = installed_with_stamp(tmp.path(), &out_dir);
    assert_eq!(std::fs::read(&victim).expect("victim"), b"someone else's file\n", "the link was written through");
    let meta = std::fs::symlink_metadata(&stamp).expect("the stamp");
    assert!(meta.is_file(), "the stamp is a file of its own now");
    // The stamp works: the next build checks sizes only.
    let p = provision(&config).expect("a warm build");
    assert!(matches!(p.source, Source::Cache { checked: Checked::Sizes { .. }, .. }), "{}", p.source);
}

#[test]
fn a_library_swapped_at_the_same_size_and_mtime_is_hashed_again() {
    let tmp = tempdir();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).expect("OUT_DIR");
    let config = installed_with_stamp(tmp.path(), &out_dir);
    let warm = provision(&config).expect("a warm build");
    assert!(matches!(warm.source, Source::Cache { checked: Checked::Sizes { .. }, .. }), "{}", warm.source);

    // Same size, other bytes, renamed into place, the installed mtime put back.
    let mut planted = LIB_BYTES.to_vec();
    planted[3] ^= 0x01;
    let staged = warm.lib_dir.join(".staged");
    std::fs::write(&staged, &planted).expect("staging");
    let time = SystemTime::UNIX_EPOCH + INSTALLED_MTIME;
    let file = std::fs::File::options().write(true).open(&staged).expect("opening the staged file");
    file.set_times(std::fs::FileTimes::new().set_modified(time).set_accessed(time)).expect("setting the mtime");
    drop(file);
    std::fs::rename(&staged, &warm.library).expect("renaming over the library");

    match provision(&config).expect_err("the swapped library is noticed") {
        Error::DamagedEntry { file, why, .. } => {
            assert!(file.ends_with("libonnxruntime.so.1.16.2") && why.contains("sha256"), "{file}: {why}")
        }
        other => panic!("expected a damaged entry, got {other}"),
    }
}

#[test]
fn registry_files_and_apt_state_are_never_followed_through_a_link() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    // The registry files, good ones, in a folder elsewhere that `registry-files` links to.
    let config = registry::config(&cache);
    let downloads = cache.join(assemble::DOWNLOADS);
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::rename(&downloads, &elsewhere).expect("moving the registry files");
    std::os::unix::fs::symlink(&elsewhere, &downloads).expect("linking registry-files");
    let err = assemble::assemble(&config, &downloads).expect_err("a linked registry-files");
    match &err {
        Error::UnsafeCache { path, why, .. } => {
            assert!(path.ends_with(assemble::DOWNLOADS) && why.contains("symbolic link"), "{err}")
        }
        other => panic!("expected the link to be refused, got {other}"),
    }
    assert!(elsewhere.join(registry::NPM_FILE).is_file() && elsewhere.join(registry::DEB_FILE).is_file());
    assert!(!cache.join(assemble::registry_key(config.manifest.dist(registry::REG_DIST).expect("dist"))).exists());

    // apt's state folder: the Debian package is missing, so it would be fetched through apt-get,
    // whose private state folder is a link here. Refused before apt-get runs.
    std::fs::remove_file(&downloads).expect("removing the link");
    std::fs::rename(&elsewhere, &downloads).expect("moving the registry files back");
    std::fs::remove_file(downloads.join(registry::DEB_FILE)).expect("removing the Debian package");
    let apt_elsewhere = tmp.path().join("apt-elsewhere");
    std::fs::create_dir(&apt_elsewhere).expect("a folder elsewhere");
    std::os::unix::fs::symlink(&apt_elsewhere, downloads.join("apt-trixie")).expect("linking apt's state");
    let err = assemble::assemble(&config, &downloads).expect_err("a linked apt state folder");
    match &err {
        Error::UnsafeCache { path, why, .. } => {
            assert!(path.ends_with("apt-trixie") && why.contains("symbolic link"), "{err}")
        }
        other => panic!("expected the link to be refused, got {other}"),
    }
    assert_eq!(std::fs::read_dir(&apt_elsewhere).expect("listing").count(), 0, "nothing was written there");
}
