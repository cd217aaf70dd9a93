//! Cache entries are bound to the manifest. An entry vouched for itself: its
//! record and completion marker sit beside its files, so whoever can write the cache could plant
//! a library together with a record that lists it. Now:
//!
//! - a distribution whose manifest entry pins its files (the registry-assembled ones) is used only
//!   if the entry's record agrees with those pins, and the files with the record;
//! - a missing or unreadable record is a damaged entry, never a new record written from the files;
//! - an entry pinned only by its archive's hash is trusted from its first install (its record is
//!   written from the verified archive), and `onnxrt-dist verify --archive FILE` re-derives the
//!   record from the archive and checks the entry against it.
//!
//! The registry tests use a copy of the real `cpu-1.16.2-registry` entry (the one the workspace
//! builds against), found the way a build finds it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use build_support::cache::COMPLETE_MARKER;
use build_support::record::{self, RECORD};
use build_support::{assemble, provision, Checked, Config, Error, Manifest, Source};
use common::*;

const REGISTRY_DIST: &str = "cpu-1.16.2-registry";
const REGISTRY_LIBRARY: &str = "lib/libonnxruntime.so.1.16.2";
/// The manifest's pin of the npm package's library (`member_sha256`).
const REGISTRY_LIBRARY_PIN: &str = "09aa6d7f20ccf98d75d0be724588fd36176f6f0a5e4b6aa44f8a9f7421d32cdf";

/// A configuration for the builtin manifest's `dist` on `cache`: offline (so a damaged entry is an
/// error, not a repair), re-hashing everything like `onnxrt-dist verify`.
fn verifying(dist: &str, cache: &Path) -> Config {
    let mut config = Config::new(Manifest::builtin().expect("builtin manifest"), dist, cache.to_owned())
        .expect("a configuration for a builtin dist");
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    config.verify = true;
    config
}

fn damaged_entry(err: &Error) -> (&PathBuf, &String, &String, &String) {
    match err {
        Error::DamagedEntry { entry, file, why, remedy } => (entry, file, why, remedy),
        other => panic!("expected DamagedEntry, got {other}"),
    }
}

/// The real registry entry of this machine's cache (the build's own cache and lookup).
fn real_registry_entry() -> PathBuf {
    let mut config = Config::from_env().expect("the environment's configuration");
    config.dist = REGISTRY_DIST.into();
    config.archive = None;
    config.lib_dir = None;
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    config.stamp_dir = None;
    let provisioned = provision(&config).unwrap_or_else(|e| {
        panic!(
            "these tests need the assembled {REGISTRY_DIST} in the cache (onnxrt-dist assemble {REGISTRY_DIST}): {e}"
        )
    });
    cache_hit(&provisioned.source).expect("the registry dist comes from the cache")
}

/// A copy of the real registry entry, under its key, in a cache of the test's own.
fn copied_registry_entry(cache: &Path) -> PathBuf {
    let key = assemble::registry_key(Manifest::builtin().expect("manifest").dist(REGISTRY_DIST).expect("dist"));
    std::fs::create_dir_all(cache).expect("creating the test cache");
    let entry = cache.join(&key);
    let status = Command::new("cp").arg("-a").arg(real_registry_entry()).arg(&entry).status().expect("running cp");
    assert!(status.success(), "copying the registry entry");
    entry
}

#[test]
fn the_real_registry_entry_verifies_against_the_manifest() {
    // The control for the two registry tests below: an untouched copy passes a full verification.
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    copied_registry_entry(&cache);
    let p = provision(&verifying(REGISTRY_DIST, &cache)).expect("the untouched copy verifies");
    assert!(matches!(p.source, Source::Cache { checked: Checked::Hashes { .. }, .. }), "{:?}", p.source);
}

#[test]
fn planted_registry_entry_with_its_own_record_and_marker_is_refused() {
    // A planted entry: a fake library, a record listing it and the completion marker, under the
    // key of the pinned distribution.
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let key = assemble::registry_key(Manifest::builtin().expect("manifest").dist(REGISTRY_DIST).expect("dist"));
    let entry = cache.join(&key);
    let root = entry.join(ROOT);
    std::fs::create_dir_all(root.join("lib")).expect("creating lib/");
    std::fs::create_dir_all(root.join("include")).expect("creating include/");
    std::fs::write(root.join(REGISTRY_LIBRARY), b"\x7fELF planted, not the pinned library\n").expect("library");
    std::fs::write(root.join("include/onnxruntime_c_api.h"), HEADER_BYTES).expect("header");
    std::fs::write(root.join("VERSION_NUMBER"), b"1.16.2\n").expect("version");
    record::write(&entry).expect("writing the planted record");
    std::fs::write(entry.join(COMPLETE_MARKER), &key).expect("writing the marker");

    let err = provision(&verifying(REGISTRY_DIST, &cache)).expect_err("a planted entry is refused");
    let (found, file, why, remedy) = damaged_entry(&err);
    assert_eq!(found, &entry);
    assert_eq!(file, &format!("{ROOT}/{REGISTRY_LIBRARY}"), "{err}");
    assert!(why.contains(REGISTRY_LIBRARY_PIN) && why.contains("manifest"), "{why}");
    assert!(remedy.starts_with("Delete that folder"), "{remedy}");
    // Without ONNXRT_VERIFY the build refuses it just the same.
    let mut plain = verifying(REGISTRY_DIST, &cache);
    plain.verify = false;
    assert!(matches!(provision(&plain), Err(Error::DamagedEntry { .. })));
}

#[test]
fn registry_library_changed_at_same_size_with_its_record_rewritten_fails_verify() {
    // A swapped member: the manifest pins that file (`member_sha256`); the record is no authority.
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let entry = copied_registry_entry(&cache);
    let library = entry.join(ROOT).join(REGISTRY_LIBRARY);
    let mut bytes = std::fs::read(&library).expect("reading the library");
    let size = bytes.len();
    for b in &mut bytes[size / 2..size / 2 + 4] {
        *b ^= 0x5a;
    }
    std::fs::write(&library, &bytes).expect("writing the changed library");
    assert_eq!(std::fs::metadata(&library).expect("library").len() as usize, size, "same size");
    record::write(&entry).expect("rewriting the record to match");

    let err = provision(&verifying(REGISTRY_DIST, &cache)).expect_err("verify refuses the changed library");
    let (_, file, why, _) = damaged_entry(&err);
    assert_eq!(file, &format!("{ROOT}/{REGISTRY_LIBRARY}"), "{err}");
    assert!(why.contains(REGISTRY_LIBRARY_PIN), "{why}");
}

#[test]
fn registry_header_changed_with_its_record_rewritten_fails_verify() {
    // The headers' per-file pins: bindgen reads them, so they are pinned too.
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let entry = copied_registry_entry(&cache);
    let header = entry.join(ROOT).join("include/onnxruntime_c_api.h");
    let mut text = std::fs::read(&header).expect("reading the header");
    text.extend_from_slice(b"\n#define PLANTED 1\n");
    std::fs::write(&header, text).expect("writing the header");
    record::write(&entry).expect("rewriting the record to match");

    let err = provision(&verifying(REGISTRY_DIST, &cache)).expect_err("verify refuses the changed header");
    let (_, file, why, _) = damaged_entry(&err);
    assert_eq!(file, &format!("{ROOT}/include/onnxruntime_c_api.h"), "{err}");
    assert!(why.contains("manifest"), "{why}");
}

/// An archive delivered with `ONNXRT_ARCHIVE`, installed into a cache of the test's own, with a
/// build stamp folder.
struct Installed {
    tmp: tempfile::TempDir,
    sha: String,
    archive: PathBuf,
    config: Config,
}

impl Installed {
    fn new(extra_manifest: &str) -> Installed {
        let mut entries = good_entries();
        entries.push((format!("{ROOT}/VERSION_NUMBER"), Kind::File(b"1.16.2\n".to_vec())));
        let bytes = tgz_owned(&entries);
        let sha = sha256(&bytes);
        let tmp = tempdir();
        let archive = tmp.path().join(FILE_NAME);
        std::fs::write(&archive, &bytes).expect("writing the archive");
        let manifest = manifest_with("http://127.0.0.1:9/unused.tgz", &sha, MAX_BYTES, extra_manifest);
        let mut config = config(manifest, &tmp.path().join("cache"));
        config.archive = Some(archive.clone());
        provision(&config).expect("installing the archive");
        config.archive = None;
        config.offline = Some("ONNXRT_OFFLINE=1".into());
        Installed { tmp, sha, archive, config }
    }

    fn entry(&self) -> PathBuf {
        self.tmp.path().join("cache").join(&self.sha)
    }
}

#[test]
fn deleted_record_is_a_damaged_entry_and_no_record_is_written() {
    // A replaced library: another library (another size), the record deleted, then `verify`.
    let s = Installed::new("");
    let library = s.entry().join(ROOT).join("lib/libonnxruntime.so.1.16.2");
    std::fs::write(&library, b"\x7fELF another library of another size\n").expect("replacing the library");
    let record = s.entry().join(RECORD);
    std::fs::remove_file(&record).expect("deleting the record");

    let mut verify = s.config.clone();
    verify.verify = true;
    let err = provision(&verify).expect_err("an entry without its record is refused");
    let (entry, file, why, remedy) = damaged_entry(&err);
    assert_eq!(entry, &s.entry());
    assert_eq!(file, RECORD, "{err}");
    assert!(why.contains("missing"), "{why}");
    assert!(remedy.starts_with("Delete that folder"), "{remedy}");
    assert!(!record.exists(), "no record was written from the files found");
    assert!(provision(&s.config).is_err(), "a plain build refuses it too");
    assert!(!record.exists(), "still no record");

    // With the archive at hand the build repairs: the entry is reinstalled from it.
    let mut repair = s.config.clone();
    repair.archive = Some(s.archive.clone());
    let p = provision(&repair).expect("reinstalled from the archive");
    assert!(p.notes.iter().any(|n| n.contains(RECORD)), "{:?}", p.notes);
    assert_eq!(std::fs::read(&library).expect("library"), LIB_BYTES);
}

#[test]
fn unreadable_record_is_a_damaged_entry() {
    let s = Installed::new("");
    let record = s.entry().join(RECORD);
    std::fs::remove_file(&record).expect("deleting the record");
    std::fs::create_dir(&record).expect("a folder where the record was");
    let err = provision(&s.config).expect_err("an unreadable record is refused");
    let (_, file, why, _) = damaged_entry(&err);
    assert_eq!(file, RECORD, "{err}");
    assert!(why.contains("unreadable"), "{why}");
}

/// The manifest lines that pin every file of the synthetic archive.
fn pins_of_the_synthetic_archive(library_sha: &str) -> String {
    format!(
        "files = [\n  {{ path = \"VERSION_NUMBER\", size = 7, sha256 = \"{}\" }},\n  \
         {{ path = \"include/onnxruntime_c_api.h\", size = {}, sha256 = \"{}\" }},\n  \
         {{ path = \"lib/libonnxruntime.so\", link = \"libonnxruntime.so.1.16.2\" }},\n  \
         {{ path = \"lib/libonnxruntime.so.1.16.2\", size = {}, sha256 = \"{library_sha}\" }},\n]\n",
        sha256(b"1.16.2\n"),
        HEADER_BYTES.len(),
        sha256(HEADER_BYTES),
        LIB_BYTES.len(),
    )
}

#[test]
fn archive_entry_whose_files_the_manifest_pins_refuses_a_planted_library() {
    let s = Installed::new(&pins_of_the_synthetic_archive(&sha256(LIB_BYTES)));
    assert!(provision(&s.config).is_ok(), "the installed entry matches its pins");
    let library = s.entry().join(ROOT).join("lib/libonnxruntime.so.1.16.2");
    let mut planted = LIB_BYTES.to_vec();
    planted[1] ^= 0x20;
    std::fs::write(&library, &planted).expect("planting a library");
    record::write(&s.entry()).expect("a record that lists it");
    let err = provision(&s.config).expect_err("refused against the manifest's pins");
    let (_, file, why, _) = damaged_entry(&err);
    assert_eq!(file, &format!("{ROOT}/lib/libonnxruntime.so.1.16.2"), "{err}");
    assert!(why.contains(&sha256(LIB_BYTES)), "{why}");
}

#[test]
fn archive_whose_files_differ_from_the_manifests_pins_installs_nothing() {
    let tmp = tempdir();
    let mut entries = good_entries();
    entries.push((format!("{ROOT}/VERSION_NUMBER"), Kind::File(b"1.16.2\n".to_vec())));
    let bytes = tgz_owned(&entries);
    let archive = tmp.path().join(FILE_NAME);
    std::fs::write(&archive, &bytes).expect("writing the archive");
    let wrong = pins_of_the_synthetic_archive(&"0".repeat(64));
    let manifest = manifest_with("http://127.0.0.1:9/unused.tgz", &sha256(&bytes), MAX_BYTES, &wrong);
    let cache = tmp.path().join("cache");
    let mut config = config(manifest, &cache);
    config.archive = Some(archive);
    let err = provision(&config).expect_err("the archive's library is not the pinned one");
    assert!(matches!(err, Error::NotAsPinned { .. }), "{err}");
    assert!(err.to_string().contains("lib/libonnxruntime.so.1.16.2"), "{err}");
    assert_cache_clean(&cache);
}

// ------------------------------------------------------------------------------------------------
// `onnxrt-dist verify --archive FILE`

fn onnxrt_dist(cache: &Path, sha: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(args)
        .env_clear()
        .env("ONNXRT_CACHE_DIR", cache)
        .env("ONNXRT_ARCHIVE_SHA256", sha)
        .env("ONNXRT_OFFLINE", "1")
        .output()
        .expect("running onnxrt-dist")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn verify_archive_rederives_the_record_and_finds_what_the_entry_trusted() {
    let bytes = tgz_owned(&unpinned_entries());
    let sha = sha256(&bytes);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let archive = tmp.path().join(UNPINNED_FILE);
    std::fs::write(&archive, &bytes).expect("writing the archive");
    let file = archive.to_str().expect("utf-8 path");
    let fetched = Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(["fetch", UNPINNED_DIST])
        .env_clear()
        .env("ONNXRT_CACHE_DIR", &cache)
        .env("ONNXRT_ARCHIVE", &archive)
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .output()
        .expect("running onnxrt-dist fetch");
    assert!(fetched.status.success(), "{}", stderr(&fetched));

    let ok = onnxrt_dist(&cache, &sha, &["verify", UNPINNED_DIST, "--archive", file]);
    assert!(ok.status.success(), "an untouched entry matches its archive: {}", stderr(&ok));
    assert!(stderr(&ok).contains("re-derived from"), "{}", stderr(&ok));

    // Another library of the same size, and a record rewritten to list it.
    let entry = cache.join(&sha);
    let library = entry.join(UNPINNED_ROOT).join(UNPINNED_LIBRARY);
    let mut planted = LIB_BYTES.to_vec();
    planted[2] ^= 0x20;
    std::fs::write(&library, &planted).expect("planting a library");
    record::write(&entry).expect("rewriting the record");

    // What is trusted: this distribution is pinned by its archive only, so the entry's record,
    // written at install, is the authority; a plain verify cannot tell.
    let plain = onnxrt_dist(&cache, &sha, &["verify", UNPINNED_DIST]);
    assert!(plain.status.success(), "{}", stderr(&plain));
    assert!(stderr(&plain).contains("trusted since its install"), "{}", stderr(&plain));

    let found = onnxrt_dist(&cache, &sha, &["verify", UNPINNED_DIST, "--archive", file]);
    assert_eq!(found.status.code(), Some(1), "{}", stderr(&found));
    let text = stderr(&found);
    assert!(text.contains(UNPINNED_LIBRARY) && text.contains(&sha256(LIB_BYTES)), "{text}");
    assert!(text.contains("Delete that folder"), "{text}");
    assert_eq!(std::fs::read(&library).expect("library"), planted, "verify changes nothing");

    // An archive that is not the pinned one is refused before anything is compared.
    let other = tmp.path().join("other.tgz");
    std::fs::write(&other, tgz_owned(&good_entries())).expect("writing another archive");
    let refused = onnxrt_dist(&cache, &sha, &["verify", UNPINNED_DIST, "--archive", other.to_str().expect("utf-8")]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("sha256 mismatch"), "{}", stderr(&refused));
}
