//! What a cache entry holds beyond its record, and who may write it:
//!
//! - A file planted beside the recorded ones (`include/stdint.h`, first on bindgen's include
//!   path; `lib/libm.so.6`, in the runtime's RUNPATH) makes the entry damaged, and `pack` refuses
//!   to pack it.
//! - An entry installed under umask 000 has no folder or file that group or others can write, and
//!   an entry with one is damaged; another user cannot swap the library.
//! - What a discard killed halfway left (`.tmp/<sha>.damaged-*`) is swept by the next install.
//! - A delivered `ONNXRT_ARCHIVE` re-derives an entry the manifest pins by its archive only.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use build_support::record::{self, RECORD};
use build_support::{provision, Config, Error};
use common::*;

/// A synthetic entry installed from a local archive pinned by a test manifest: `(config, entry)`.
fn installed(tmp: &Path) -> (Config, PathBuf) {
    let archive = good_archive();
    let sha = sha256(&archive);
    let cache = tmp.join("cache");
    let file = tmp.join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    let p = provision(&config).expect("the pinned archive installs");
    assert_installed(&p, &cache, &sha);
    (config, cache.join(sha))
}

/// The same cache, offline and without the archive: a damaged entry is an error, not a repair.
fn offline(config: &Config) -> Config {
    let mut config = config.clone();
    config.archive = None;
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    config
}

fn damage_of(err: Error) -> (String, String, String) {
    match err {
        Error::DamagedEntry { file, why, remedy, .. } => (file, why, remedy),
        other => panic!("expected a damaged entry, got {other}"),
    }
}

#[test]
fn a_header_or_library_planted_beside_the_recorded_files_damages_the_entry() {
    let tmp = tempdir();
    let (config, entry) = installed(tmp.path());
    // The control: the untouched entry is used, its sizes checked against the record.
    provision(&offline(&config)).expect("the untouched entry is used");

    for planted in ["include/stdint.h", "lib/libm.so.6"] {
        let path = entry.join(ROOT).join(planted);
        std::fs::write(&path, b"/* planted */\n").expect("planting a file");
        let (file, why, remedy) = damage_of(provision(&offline(&config)).expect_err("a planted file"));
        assert!(file.ends_with(planted), "{file}: {why}");
        assert!(why.contains("not in the entry's record"), "{why}");
        assert!(remedy.contains("Delete that folder"), "{remedy}");
        std::fs::remove_file(&path).expect("removing the planted file");
    }

    // Online (the archive delivered again), the damaged entry is replaced: the planted file goes.
    let planted = entry.join(ROOT).join("include/stdint.h");
    std::fs::write(&planted, b"/* planted */\n").expect("planting a file");
    let p = provision(&config).expect("reinstalled from the archive");
    assert!(p.notes.iter().any(|n| n.contains("stdint.h")), "{:?}", p.notes);
    assert!(!planted.exists(), "the planted header is gone");
}

#[test]
fn pack_refuses_an_entry_with_a_planted_file_and_packs_only_what_is_recorded() {
    let tmp = tempdir();
    let (config, entry) = installed(tmp.path());
    let p = provision(&offline(&config)).expect("the untouched entry is used");
    let good = tmp.path().join("good.tgz");
    build_support::pack::pack(&p, &good).expect("packing the untouched entry");

    std::fs::write(entry.join(ROOT).join("include/stdint.h"), b"/* planted */\n").expect("planting");
    let out = tmp.path().join("planted.tgz");
    let err = build_support::pack::pack(&p, &out).expect_err("a planted file is never packed");
    let (file, why, _) = damage_of(err);
    assert!(file.ends_with("include/stdint.h") && why.contains("not in the entry's record"), "{file}: {why}");
    assert!(!out.exists(), "nothing was written");
}

/// Every folder under `dir` with its mode, and every regular file with its mode.
fn modes(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for child in std::fs::read_dir(&folder).expect("listing").flatten() {
            let meta = std::fs::symlink_metadata(child.path()).expect("metadata");
            if meta.is_dir() {
                stack.push(child.path());
            }
            if meta.is_dir() || meta.is_file() {
                out.push((child.path(), meta.mode() & 0o7777, meta.is_dir()));
            }
        }
    }
    out
}

#[test]
fn an_entry_installed_under_umask_000_is_writable_by_nobody_else() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let tmp = tempdir();
    // Others must reach the cache to try to write it (a temporary folder is 0700).
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(UNPINNED_FILE);
    std::fs::write(&file, &archive).expect("writing the archive");
    let fetched = Command::new("sh")
        .args(["-c", "umask 000; exec \"$0\" fetch \"$1\""])
        .arg(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .arg(UNPINNED_DIST)
        .env_clear()
        .env("ONNXRT_CACHE_DIR", &cache)
        .env("ONNXRT_ARCHIVE", &file)
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .output()
        .expect("running onnxrt-dist under umask 000");
    assert!(fetched.status.success(), "{}", String::from_utf8_lossy(&fetched.stderr));

    let entry = cache.join(&sha);
    let found = modes(&entry);
    assert!(found.iter().any(|(p, _, _)| p.ends_with(RECORD)), "{found:?}");
    for (path, mode, is_dir) in &found {
        assert_eq!(mode & 0o022, 0, "{} is writable by others (mode {mode:o})", path.display());
        if *is_dir {
            assert_eq!(*mode, 0o755, "{}", path.display());
        }
    }

    // Another user cannot replace the library (as root, the test can ask for that user).
    let library = entry.join(UNPINNED_ROOT).join(UNPINNED_LIBRARY);
    if unsafe_is_root() && Path::new("/usr/bin/setpriv").exists() {
        let swap = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c"])
            .arg("rm -f \"$0\" 2>/dev/null; printf planted > \"$0\"")
            .arg(&library)
            .output()
            .expect("running setpriv");
        assert!(!swap.status.success(), "another user replaced the library");
        assert_eq!(std::fs::read(&library).expect("library"), LIB_BYTES);
    }

    // A folder of the entry that its group can write makes the entry damaged.
    let lib = entry.join(UNPINNED_ROOT).join("lib");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o775)).expect("chmod g+w");
    let verify = Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(["verify", UNPINNED_DIST])
        .env_clear()
        .env("ONNXRT_CACHE_DIR", &cache)
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .env("ONNXRT_OFFLINE", "1")
        .output()
        .expect("running onnxrt-dist verify");
    let text = String::from_utf8_lossy(&verify.stderr);
    assert_eq!(verify.status.code(), Some(1), "{text}");
    assert!(text.contains("can be written by its group"), "{text}");
}

/// Whether this process runs as root (setpriv can then switch to another user).
fn unsafe_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn what_a_killed_discard_left_is_swept_by_the_next_install() {
    let tmp = tempdir();
    let (config, entry) = installed(tmp.path());
    let sha = entry.file_name().expect("name").to_string_lossy().into_owned();
    let cache = config.cache_dir.clone();
    // A discard renamed the entry into `.tmp/<sha>.damaged-<pid>-<random>/entry` and was killed.
    let debris = cache.join(".tmp").join(format!("{sha}.damaged-999999-abcdefabcdef"));
    std::fs::create_dir_all(debris.join("entry/lib")).expect("planting debris");
    std::fs::write(debris.join("entry/lib/libonnxruntime.so.1.16.2"), LIB_BYTES).expect("planting debris");
    // The entry is damaged now, so the next build discards and reinstalls it.
    std::fs::write(entry.join(ROOT).join("include/stdint.h"), b"/* planted */\n").expect("planting");
    provision(&config).expect("reinstalled from the archive");
    assert!(!debris.exists(), "the debris of the killed discard is swept");
    assert_cache_holds_only(&cache, &sha);
}

#[test]
fn a_delivered_archive_rederives_an_entry_pinned_by_its_archive_only() {
    let tmp = tempdir();
    let (config, entry) = installed(tmp.path());
    // Another library of the same size, and a record rewritten to list it: the record written at
    // install is all a plain cache hit checks for this distribution.
    let library = entry.join(ROOT).join("lib/libonnxruntime.so.1.16.2");
    let mut planted = LIB_BYTES.to_vec();
    planted[2] ^= 0x20;
    std::fs::write(&library, &planted).expect("planting a library");
    record::write(&entry).expect("rewriting the record");
    provision(&offline(&config)).expect("without the archive, the rewritten record is trusted (the limit)");

    let p = provision(&config).expect("the archive re-derives the entry");
    assert!(p.notes.iter().any(|n| n.contains("did not hold what")), "{:?}", p.notes);
    assert_eq!(std::fs::read(&library).expect("library"), LIB_BYTES, "reinstalled from the archive");

    // An entry that matches its archive is used as it is, checked against the archive's files.
    let again = provision(&config).expect("the entry matches the archive");
    assert!(again.notes.is_empty(), "{:?}", again.notes);
    assert!(again.source.to_string().contains("re-derived from"), "{}", again.source);
}
