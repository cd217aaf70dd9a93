//! Every read of something the cache or a registry holds is bounded, and none waits on a FIFO:
//! a wheel member or an npm tarball that inflates past the
//! distribution's unpacked-size bound, an npm tarball of too many entries, a record far larger
//! than any record, and a record or archive that is a FIFO.

mod common;
mod registry;

use std::io::{Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use build_support::{assemble, provision, Config, Error, Manifest};
use common::*;
use registry::{deb, manifest_text, npm_tarball, tar_gz, DEB_FILE, NPM_FILE, NPM_MEMBER, REG_DIST};

/// Most time a call that must not block is waited for before the test fails (a guard against a
/// hang, not a measure of speed: the calls take milliseconds).
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Bytes a bomb member inflates to: past the bound of a manifest with `unpacked_bytes = 1000`
/// (the bound is that plus a quarter plus 16 MiB).
const BOMB: usize = 40 << 20;

/// A registry configuration of `text`, with `files` placed in the cache's registry-files folder.
fn registry_config(cache: &Path, text: &str, files: &[(&str, &[u8])]) -> Config {
    let downloads = cache.join(assemble::DOWNLOADS);
    std::fs::create_dir_all(&downloads).expect("creating registry-files");
    for (name, bytes) in files {
        std::fs::write(downloads.join(name), bytes).expect("writing a registry file");
    }
    let manifest = Manifest::parse(text).expect("the test manifest parses");
    Config::new(manifest, REG_DIST, cache.to_owned()).expect("a configuration")
}

/// The registry test manifest with a small unpacked-size bound.
fn bounded(text: String) -> String {
    text.replacen("headers = [", "unpacked_bytes = 1000\nheaders = [", 1)
}

fn assert_bound(err: Error) {
    match err {
        Error::UnsafeEntry { why, .. } => {
            assert!(why.contains("unpacked-size bound") || why.contains("entries"), "{why}")
        }
        other => panic!("expected the bound to stop it, got {other}"),
    }
}

#[test]
fn an_npm_tarball_that_inflates_past_the_bound_is_stopped() {
    let bomb = vec![0u8; BOMB];
    let npm = tar_gz(&[("package/package.json", b"{}\n"), ("package/big.bin", &bomb), (NPM_MEMBER, LIB_BYTES)]);
    let deb = deb(HEADER_BYTES);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = registry_config(&cache, &bounded(manifest_text(&npm, &deb)), &[(NPM_FILE, &npm), (DEB_FILE, &deb)]);
    assert_bound(assemble::assemble(&config, &cache.join(assemble::DOWNLOADS)).expect_err("a gzip bomb"));
    assert_eq!(tmp_leftovers(&cache), Vec::<String>::new());
}

#[test]
fn an_npm_tarball_of_too_many_entries_is_stopped() {
    let names: Vec<String> = (0..10_001).map(|i| format!("package/e{i}")).collect();
    let mut files: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b""[..])).collect();
    files.push((NPM_MEMBER, LIB_BYTES));
    let npm = tar_gz(&files);
    let deb = deb(HEADER_BYTES);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = registry_config(&cache, &manifest_text(&npm, &deb), &[(NPM_FILE, &npm), (DEB_FILE, &deb)]);
    let err = assemble::assemble(&config, &cache.join(assemble::DOWNLOADS)).expect_err("too many entries");
    assert!(err.to_string().contains("more entries than any registry file"), "{err}");
}

const WHEEL_FILE: &str = "onnxruntime-9.9.9-cp312-cp312-manylinux_2_28_x86_64.whl";
const WHEEL_MEMBER: &str = "onnxruntime/capi/libonnxruntime.so.1.16.2";

/// A wheel whose runtime library is `library`, deflated.
fn wheel(library: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file(WHEEL_MEMBER, options).expect("a zip member");
    zip.write_all(library).expect("writing a zip member");
    zip.finish().expect("finishing the zip").into_inner()
}

#[test]
fn a_wheel_member_that_inflates_past_the_bound_is_stopped_before_it_is_read_whole() {
    let wheel = wheel(&vec![0u8; BOMB]);
    let deb = deb(HEADER_BYTES);
    let npm_part = manifest_text(&npm_tarball(), &deb);
    // The npm part replaced by a wheel of the same library name.
    let start = npm_part.find("[[dist.parts]]").expect("parts");
    let end = npm_part[start + 1..].find("[[dist.parts]]").expect("second part") + start + 1;
    let pypi = format!(
        "[[dist.parts]]\nregistry = \"pypi\"\npackage = \"onnxruntime\"\nversion = \"9.9.9\"\nfile = \"{WHEEL_FILE}\"\n\
         sha256 = \"{}\"\nmember = \"{WHEEL_MEMBER}\"\nmember_sha256 = \"{}\"\ndest = \"lib/libonnxruntime.so.1.16.2\"\n",
        sha256(&wheel),
        sha256(LIB_BYTES)
    );
    let text = bounded(format!("{}{pypi}{}", &npm_part[..start], &npm_part[end..]));
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = registry_config(&cache, &text, &[(WHEEL_FILE, &wheel), (DEB_FILE, &deb)]);
    assert_bound(assemble::assemble(&config, &cache.join(assemble::DOWNLOADS)).expect_err("a zip bomb"));
}

/// An installed synthetic entry and its offline configuration.
fn installed(tmp: &Path) -> (Config, PathBuf) {
    let archive = good_archive();
    let sha = sha256(&archive);
    let cache = tmp.join("cache");
    let file = tmp.join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    provision(&config).expect("the pinned archive installs");
    config.archive = None;
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    (config, cache.join(sha))
}

/// Runs `f` on a thread; if it has not returned within [`HANG_GUARD`], `release` unblocks it
/// and the test fails.
fn must_not_block<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static, release: impl Fn()) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    match receive.recv_timeout(HANG_GUARD) {
        Ok(value) => value,
        Err(_) => {
            release();
            panic!("the call blocked on a FIFO");
        }
    }
}

/// Opens the FIFO at `path` for writing without waiting and closes it: a reader blocked in
/// `open` goes on and sees the end of the data.
fn release_fifo(path: &Path) {
    let _ = std::fs::File::options().write(true).custom_flags(libc::O_NONBLOCK).open(path);
}

fn make_fifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
    let made = unsafe { libc::mkfifo(name.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}

#[test]
fn a_record_far_larger_than_any_record_is_damage_without_being_read_whole() {
    let tmp = tempdir();
    let (config, entry) = installed(tmp.path());
    let record = entry.join(build_support::record::RECORD);
    std::fs::remove_file(&record).expect("removing the record");
    let file = std::fs::File::create(&record).expect("a new record");
    file.set_len(build_support::record::RECORD_CAP + 1).expect("a sparse record past the cap");
    match provision(&config).expect_err("an oversized record") {
        Error::DamagedEntry { file, why, .. } => {
            assert!(file.ends_with(build_support::record::RECORD) && why.contains("larger than"), "{file}: {why}")
        }
        other => panic!("expected a damaged entry, got {other}"),
    }
}

#[test]
fn a_record_that_is_a_fifo_is_damage_not_a_hang() {
    let tmp = tempdir();
    let (config, entry) = installed(tmp.path());
    let record = entry.join(build_support::record::RECORD);
    std::fs::remove_file(&record).expect("removing the record");
    make_fifo(&record);
    let err = must_not_block(move || provision(&config).map(|_| ()), || release_fifo(&record));
    match err.expect_err("a FIFO record") {
        Error::DamagedEntry { why, .. } => assert!(why.contains("not a regular file"), "{why}"),
        other => panic!("expected a damaged entry, got {other}"),
    }
}

/// `renameat2(RENAME_EXCHANGE)`: swaps two paths atomically.
fn exchange(a: &Path, b: &Path) {
    let a = std::ffi::CString::new(a.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    let b = std::ffi::CString::new(b.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    unsafe { libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE) };
}

/// Copies made while the swap runs: enough that the code before the fix, which checked the path
/// with `stat` and then opened it, met the FIFO at its `open` in every run we made.
const COPIES: usize = 20_000;

#[test]
fn an_archive_swapped_for_a_fifo_between_stat_and_open_never_hangs() {
    let tmp = tempdir();
    let path = tmp.path().join(FILE_NAME);
    let other = tmp.path().join("other");
    std::fs::write(&path, good_archive()).expect("writing the archive");
    make_fifo(&other);
    // A thread swaps the archive and the FIFO as fast as it can while copies run.
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, a, b) = (stop.clone(), path.clone(), other.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                exchange(&a, &b);
            }
        })
    };
    let p = path.clone();
    let outcomes = must_not_block(
        move || {
            let mut outcomes = (0usize, 0usize);
            let mut dest = tempfile::tempfile().expect("a work file");
            for _ in 0..COPIES {
                dest.set_len(0).expect("emptying the work file");
                dest.seek(std::io::SeekFrom::Start(0)).expect("rewinding the work file");
                match build_support::verify::copy_regular_file(&p, &mut dest, MAX_BYTES) {
                    Ok(_) => outcomes.0 += 1,
                    Err(e) => {
                        assert!(e.to_string().contains("not a regular file"), "{e}");
                        outcomes.1 += 1;
                    }
                }
            }
            outcomes
        },
        || {
            // Whichever name holds the FIFO now: let the blocked reader go.
            release_fifo(&path);
            release_fifo(&other);
        },
    );
    stop.store(true, Ordering::SeqCst);
    swapper.join().expect("the swapping thread");
    assert_eq!(outcomes.0 + outcomes.1, COPIES, "{outcomes:?}");
}
