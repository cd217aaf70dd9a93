//! A damaged cache entry is never used. Entries record every file's size and sha256 at install;
//! a build checks the sizes each time and the hashes when it first uses the entry (or a file's
//! mtime changed, or `ONNXRT_VERIFY=1`). A damaged entry is replaced from the source the build
//! has, or the error names the file and what to delete. Installed files carry an old fixed
//! mtime, so the install does not make cargo rerun the build script.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use build_support::cache::INSTALLED_MTIME;
use build_support::record::RECORD;
use build_support::{provision, Checked, Config, Error, Provisioned, Source};
use common::*;

const PATH: &str = "/v1.16.2/onnxruntime-linux-x64-1.16.2.tgz";

/// A folder with a local archive and a cache; a configuration that installs from the archive and
/// keeps its stamp (like a build script's OUT_DIR) in `out/`.
struct Setup {
    tmp: tempfile::TempDir,
    sha: String,
    config: Config,
}

impl Setup {
    fn new() -> Setup {
        let mut entries = good_entries();
        entries.push((format!("{ROOT}/VERSION_NUMBER"), Kind::File(b"1.16.2\n".to_vec())));
        let archive = tgz_owned(&entries);
        let sha = sha256(&archive);
        let tmp = tempdir();
        let file = tmp.path().join(FILE_NAME);
        std::fs::write(&file, &archive).expect("writing the local archive");
        let out = tmp.path().join("out");
        std::fs::create_dir(&out).expect("creating the stamp folder");
        let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", &sha, MAX_BYTES), &tmp.path().join("cache"));
        config.archive = Some(file);
        config.stamp_dir = Some(out);
        Setup { tmp, sha, config }
    }

    fn cache(&self) -> PathBuf {
        self.tmp.path().join("cache")
    }

    fn entry_file(&self, relative: &str) -> PathBuf {
        self.cache().join(&self.sha).join(ROOT).join(relative)
    }

    fn provision(&self) -> Provisioned {
        provision(&self.config).expect("provisioning")
    }
}

fn checked(p: &Provisioned) -> Checked {
    match &p.source {
        Source::Cache { checked, .. } => *checked,
        other => panic!("expected a cache hit, got {other:?}"),
    }
}

/// Flips one byte of `path` in place (same size); the mtime becomes now.
fn flip_byte(path: &Path) {
    let mut bytes = std::fs::read(path).expect("reading a cached file");
    bytes[5] ^= 0x01;
    std::fs::write(path, bytes).expect("writing a cached file");
}

fn set_mtime(path: &Path, since_epoch: std::time::Duration) {
    let file = std::fs::File::open(path).expect("opening a cached file");
    file.set_modified(std::time::UNIX_EPOCH + since_epoch).expect("setting an mtime");
}

#[test]
fn sizes_every_run_hashes_on_first_use_by_a_build() {
    let s = Setup::new();
    let installed = s.provision();
    assert!(matches!(installed.source, Source::Archive { .. }), "{:?}", installed.source);
    assert!(s.cache().join(&s.sha).join(RECORD).is_file(), "the entry records its files");

    // The installing build hashed the files: its next run checks sizes only, and says so.
    let warm = s.provision();
    assert_eq!(checked(&warm), Checked::Sizes { files: 4 });
    assert!(warm.source.to_string().contains("checked now: sizes of its 4 files"), "{}", warm.source);

    // Another build (another OUT_DIR) hashes them on its first use.
    let mut other = s.config.clone();
    other.stamp_dir = Some(s.tmp.path().to_owned());
    let first_use = provision(&other).expect("another build");
    assert_eq!(checked(&first_use), Checked::Hashes { files: 4 });
    assert!(first_use.source.to_string().contains("checked now: sha256 and size"), "{}", first_use.source);
    assert_eq!(checked(&provision(&other).expect("again")), Checked::Sizes { files: 4 });

    // ONNXRT_VERIFY=1 hashes every time.
    other.verify = true;
    assert_eq!(checked(&provision(&other).expect("verify")), Checked::Hashes { files: 4 });
}

#[test]
fn flipped_byte_in_the_cached_library_is_found_and_the_entry_reinstalled() {
    let s = Setup::new();
    s.provision();
    let library = s.entry_file("lib/libonnxruntime.so.1.16.2");
    flip_byte(&library);
    assert_ne!(std::fs::read(&library).expect("library"), LIB_BYTES);

    // Its mtime changed, so the build hashes again, finds it, and reinstalls from ONNXRT_ARCHIVE.
    let p = s.provision();
    assert!(matches!(p.source, Source::Archive { .. }), "{:?}", p.source);
    assert_eq!(p.notes.len(), 1, "{:?}", p.notes);
    assert!(p.notes[0].contains("lib/libonnxruntime.so.1.16.2") && p.notes[0].contains("sha256"), "{:?}", p.notes);
    assert_installed(&p, &s.cache(), &s.sha);
    assert_cache_holds_only(&s.cache(), &s.sha);
}

#[test]
fn same_size_damage_with_the_old_mtime_is_found_by_the_next_build() {
    let s = Setup::new();
    s.provision();
    let library = s.entry_file("lib/libonnxruntime.so.1.16.2");
    flip_byte(&library);
    set_mtime(&library, INSTALLED_MTIME);
    // Same size, the old mtime put back: the ctime in the build's fingerprint changed,
    // so the next build hashes again, finds it and repairs (it used to take `ONNXRT_VERIFY=1`).
    let p = s.provision();
    assert!(matches!(p.source, Source::Archive { .. }), "{:?}", p.source);
    assert!(p.notes.iter().any(|n| n.contains("libonnxruntime.so.1.16.2")), "{:?}", p.notes);
    assert_installed(&p, &s.cache(), &s.sha);
    // A verification on request finds nothing more to repair.
    let mut config = s.config.clone();
    config.verify = true;
    let again = provision(&config).expect("verify");
    assert!(again.notes.is_empty(), "{:?}", again.notes);
}

#[test]
fn deleted_lib_folder_is_reinstalled_by_download() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    provision(&config).expect("first download");
    std::fs::remove_dir_all(cache.join(&sha).join(ROOT).join("lib")).expect("deleting lib/");

    let p = provision(&config).expect("the damaged entry is replaced");
    assert_eq!(p.source, downloaded(&server.url(PATH)));
    assert!(p.notes.iter().any(|n| n.contains("missing")), "{:?}", p.notes);
    assert_installed(&p, &cache, &sha);
    assert_cache_holds_only(&cache, &sha);
    assert_eq!(server.hits(PATH), 2);
}

#[test]
fn deleted_headers_and_version_file_are_damage_too() {
    let s = Setup::new();
    s.provision();
    std::fs::remove_file(s.entry_file("VERSION_NUMBER")).expect("deleting VERSION_NUMBER");
    let p = s.provision();
    assert!(p.notes.iter().any(|n| n.contains("VERSION_NUMBER")), "{:?}", p.notes);
    assert!(s.entry_file("VERSION_NUMBER").is_file(), "reinstalled");
    std::fs::remove_dir_all(s.entry_file("include")).expect("deleting include/");
    let p = s.provision();
    assert!(p.notes.iter().any(|n| n.contains("onnxruntime_c_api.h")), "{:?}", p.notes);
    assert_installed(&p, &s.cache(), &s.sha);
}

#[test]
fn damaged_entry_without_a_source_is_an_error_naming_the_file_and_what_to_delete() {
    let s = Setup::new();
    s.provision();
    let header = s.entry_file("include/onnxruntime_c_api.h");
    std::fs::write(&header, b"short").expect("truncating the header");
    let mut offline = s.config.clone();
    offline.archive = None;
    offline.offline = Some("ONNXRT_OFFLINE=1".into());
    let err = provision(&offline).expect_err("damaged, offline, no archive");
    let Error::DamagedEntry { entry, file, why, remedy } = &err else { panic!("expected DamagedEntry, got {err:?}") };
    assert_eq!(entry, &s.cache().join(&s.sha));
    assert_eq!(file, &format!("{ROOT}/include/onnxruntime_c_api.h"));
    assert!(why.contains("5 bytes"), "{why}");
    assert!(remedy.starts_with("Delete that folder"), "{remedy}");
    assert!(header.is_file(), "left in place for the user");
}

#[test]
fn entry_without_its_record_is_reinstalled_never_recorded_from_its_files() {
    // A record written from the files found would vouch for whatever they are
    // (entries made before records existed are reinstalled once, like any damaged entry).
    let s = Setup::new();
    s.provision();
    let record = s.cache().join(&s.sha).join(RECORD);
    std::fs::remove_file(&record).expect("removing the record");
    let p = s.provision();
    assert!(matches!(p.source, Source::Archive { .. }), "{:?}", p.source);
    assert!(p.notes.iter().any(|n| n.contains(RECORD) && n.contains("missing")), "{:?}", p.notes);
    assert!(record.is_file(), "the reinstalled entry has its record, from the archive");
    assert_eq!(checked(&s.provision()), Checked::Sizes { files: 4 });
}

#[test]
fn installed_files_carry_the_fixed_old_mtime_so_cargo_does_not_rerun() {
    let s = Setup::new();
    let p = s.provision();
    for file in [&p.library, &p.include_dir.join("onnxruntime_c_api.h")] {
        let meta = std::fs::metadata(file).expect("an installed file");
        assert_eq!(meta.mtime() as u64, INSTALLED_MTIME.as_secs(), "{}", file.display());
    }
}
