//! The bytes that are verified are the bytes that are installed: `ONNXRT_ARCHIVE` is read once
//! (a FIFO that gives a different archive on each open cannot swap what is installed), the gzip
//! trailer is checked, and each distribution's unpacked-size bound holds. Also the messages of
//! a local archive that is wrong or cut short.

mod common;

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use build_support::{provision, Error, Source};
use common::*;

/// O_NONBLOCK on Linux: opening a FIFO's write end fails at once (ENXIO) while nobody reads it.
const O_NONBLOCK: i32 = 0o4000;

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().expect("running mkfifo");
    assert!(status.success(), "mkfifo {} failed", path.display());
}

/// Feeds `first` to the first reader of the FIFO and `second` to every later one, until `stop`.
fn swapping_writer(
    fifo: &Path,
    first: Vec<u8>,
    second: Vec<u8>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    let fifo = fifo.to_owned();
    std::thread::spawn(move || {
        let mut served = 0;
        // Until the test says stop (no deadline: one would starve a slow reader).
        while !stop.load(Ordering::SeqCst) {
            let opened = std::fs::OpenOptions::new().write(true).custom_flags(O_NONBLOCK).open(&fifo);
            let Ok(mut pipe) = opened else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            let bytes = if served == 0 { &first } else { &second };
            let _ = std::io::Write::write_all(&mut pipe, bytes);
            served += 1;
            drop(pipe);
            std::thread::sleep(Duration::from_millis(50));
        }
        served
    })
}

#[test]
fn archive_from_a_fifo_is_refused_and_the_swap_cannot_happen() {
    let pinned = good_archive();
    let sha = sha256(&pinned);
    let mut other_entries = good_entries();
    other_entries[2].1 = Kind::File(b"\x7fELF another library altogether\n".to_vec());
    let other = tgz_owned(&other_entries);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let fifo = tmp.path().join(FILE_NAME);
    mkfifo(&fifo);
    let stop = Arc::new(AtomicBool::new(false));
    let writer = swapping_writer(&fifo, pinned, other, stop.clone());
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(fifo.clone());

    let result = provision(&config);
    stop.store(true, Ordering::SeqCst);
    let served = writer.join().expect("the FIFO writer");
    let err = result.expect_err("a FIFO is not an archive file");
    let Error::BadVariable { var: "ONNXRT_ARCHIVE", why, .. } = &err else {
        panic!("expected BadVariable, got {err:?}")
    };
    assert!(why.contains("not a regular file"), "{why}");
    assert_eq!(served, 0, "the FIFO was opened for reading");
    assert_cache_clean(&cache);
}

#[test]
fn local_archive_is_copied_into_the_cache_while_hashed_and_the_copy_installed() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the local archive");
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file.clone());
    let p = provision(&config).expect("a good local archive");
    assert_eq!(p.source, Source::Archive { path: file.clone() });
    assert!(p.source.to_string().contains("copied into the cache while hashing"), "{}", p.source);
    assert_installed(&p, &cache, &sha);
    assert_cache_holds_only(&cache, &sha);
    assert_eq!(std::fs::read(&file).expect("the user's file"), archive, "the user's file must stay as it was");
}

#[test]
fn local_archive_larger_than_the_cap_is_refused_by_bytes_read() {
    let archive = good_archive();
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the local archive");
    let cap = archive.len() as u64 - 1;
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", &sha256(&archive), cap), &cache);
    config.archive = Some(file);
    let err = provision(&config).expect_err("one byte over the cap");
    let Error::TooLarge { cap: got, .. } = &err else { panic!("expected TooLarge, got {err:?}") };
    assert_eq!(*got, cap);
    assert_cache_clean(&cache);
}

/// Provisions `bytes` as a local archive pinned to its own hash (the "pin what was printed"
/// workflow) and returns the error, after checking that nothing was installed.
fn refuse_pinned(bytes: &[u8], manifest_extra: &str) -> Error {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, bytes).expect("writing the local archive");
    let mut config = config(manifest_with("http://127.0.0.1:9/unused.tgz", "", MAX_BYTES, manifest_extra), &cache);
    config.archive = Some(file);
    config.archive_sha256 = Some(sha256(bytes));
    let err = provision(&config).expect_err("the archive must be refused");
    assert_cache_clean(&cache);
    err
}

#[test]
fn flipped_byte_in_the_deflate_data_is_refused_by_the_gzip_crc_even_when_pinned() {
    let archive = stored_tgz(&good_entries());
    let at = find_bytes(&archive, b"stand-in for libonnxruntime").expect("stored data is visible");
    let mut flipped = archive.clone();
    flipped[at] ^= 0x20;
    // The damaged archive still inflates and untars cleanly: only the trailer tells.
    let err = refuse_pinned(&flipped, "");
    let Error::Corrupt { what, why } = &err else { panic!("expected Corrupt, got {err:?}") };
    assert_eq!(what, "the archive");
    assert!(why.contains("checksum"), "{why}");
}

#[test]
fn zeroed_gzip_trailer_is_refused() {
    let mut archive = good_archive();
    let len = archive.len();
    archive[len - 8..].fill(0);
    let err = refuse_pinned(&archive, "");
    let Error::Corrupt { .. } = &err else { panic!("expected Corrupt, got {err:?}") };
}

#[test]
fn the_untouched_stored_archive_installs() {
    // The control for the two tests above: the same construction without damage is accepted.
    let archive = stored_tgz(&good_entries());
    let sha = sha256(&archive);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the local archive");
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    let p = provision(&config).expect("the stored archive provisions");
    assert_installed(&p, &cache, &sha);
}

#[test]
fn unpacked_size_bound_comes_from_the_manifest() {
    // unpacked_bytes = 1 MB: the bound is 1.25 MB + 16 MiB, so a 24 MiB entry is refused before
    // a byte of it is written, while the download cap (10 MB) is far from reached.
    let mut entries = good_entries();
    entries.push((format!("{ROOT}/lib/padding"), Kind::LyingFile { size: 24 << 20 }));
    let err = refuse_pinned(&tgz_owned(&entries), "unpacked_bytes = 1000000");
    let Error::UnsafeEntry { entry, why } = &err else { panic!("expected UnsafeEntry, got {err:?}") };
    assert_eq!(entry, &format!("{ROOT}/lib/padding"));
    assert!(why.contains("unpacked-size bound"), "{why}");
}

#[test]
fn without_unpacked_bytes_the_bound_is_four_times_the_download_cap() {
    // MAX_BYTES = 10 MB, so the bound is 40 MB: a 48 MB entry is refused (the old fixed bound was 4 GiB).
    let mut entries = good_entries();
    entries.push((format!("{ROOT}/lib/padding"), Kind::LyingFile { size: 48_000_000 }));
    let err = refuse_pinned(&tgz_owned(&entries), "");
    let Error::UnsafeEntry { why, .. } = &err else { panic!("expected UnsafeEntry, got {err:?}") };
    assert!(why.contains("unpacked-size bound"), "{why}");
    let m = manifest("http://127.0.0.1:9/unused.tgz", "", MAX_BYTES);
    assert_eq!(m.dist(DIST).expect("test dist").unpacked_bound(), 4 * MAX_BYTES);
}

#[test]
fn zeros_after_the_tar_inside_the_gzip_stream_count_against_the_bound() {
    use std::io::{Read, Write};
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(good_archive().as_slice()).read_to_end(&mut tar).expect("inflating");
    let mut gz = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).expect("gzip into memory");
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..20 {
        gz.write_all(&zeros).expect("gzip into memory");
    }
    let bomb = gz.finish().expect("gzip into memory");
    // unpacked_bytes = 1: the bound is 16 MiB and change; 20 MiB of trailing zeros pass it.
    let err = refuse_pinned(&bomb, "unpacked_bytes = 1");
    let Error::UnsafeEntry { why, .. } = &err else { panic!("expected UnsafeEntry, got {err:?}") };
    assert!(why.contains("unpacked-size bound"), "{why}");
}

#[test]
fn local_archive_hash_mismatch_keeps_the_users_file_and_says_so() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let mut flipped = archive;
    flipped[40] ^= 0x80;
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &flipped).expect("writing the local archive");
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file.clone());
    let err = provision(&config).expect_err("wrong hash");
    let text = err.to_string();
    assert!(!text.contains("deleted"), "{text}");
    assert!(text.contains("left where it is"), "{text}");
    assert_eq!(std::fs::read(&file).expect("the user's file is kept"), flipped);
    assert_cache_clean(&cache);
}

#[test]
fn truncated_archive_message_names_the_archive_once() {
    let archive = good_archive();
    let err = refuse_pinned(&archive[..archive.len() / 2], "");
    let text = err.to_string();
    assert!(text.starts_with("cannot read the archive:"), "{text}");
    assert!(!text.contains("archive archive"), "{text}");
}
