//! Hostile archives. Each is delivered with `ONNXRT_ARCHIVE` and pinned to its own hash, so
//! verification passes and extraction is what must refuse it: a typed error, nothing written
//! outside the work folder, and a cache left without an entry or leftover work.

mod common;

use std::path::Path;

use build_support::extract::{extract_tgz, Bounds};
use build_support::{provision, Error};
use common::*;

/// Provisions `bytes` as a local archive pinned to its own hash; returns the folder it ran in
/// (holding `cache/` and `hostile.tgz`) and the error, after checking the cache is clean and that
/// no file named `escaped` appeared anywhere under the folder.
fn refuse(bytes: &[u8]) -> (tempfile::TempDir, Error) {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join("hostile.tgz");
    std::fs::write(&file, bytes).expect("writing the hostile archive");
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", "", MAX_BYTES), &cache);
    config.archive = Some(file);
    config.archive_sha256 = Some(sha256(bytes));
    let err = provision(&config).expect_err("a hostile archive must be refused");
    assert_cache_clean(&cache);
    assert_eq!(find_named(tmp.path(), "escaped"), Vec::<std::path::PathBuf>::new(), "a hostile entry was written");
    (tmp, err)
}

/// The good entries with `hostile` inserted after the root folder (before the library, so that
/// a refusal cannot be mistaken for a missing file).
fn with(hostile: Vec<(String, Kind)>) -> Vec<u8> {
    let mut entries = good_entries();
    let tail = entries.split_off(1);
    entries.extend(hostile);
    entries.extend(tail);
    tgz_owned(&entries)
}

fn assert_unsafe(err: &Error, entry_is: &str, why_has: &str) {
    let Error::UnsafeEntry { entry, why } = err else { panic!("expected UnsafeEntry, got {err:?}") };
    assert_eq!(entry, entry_is, "refused entry ({why})");
    assert!(why.contains(why_has), "reason `{why}` lacks `{why_has}`");
}

#[test]
fn the_good_archive_itself_is_accepted() {
    // Control for the helpers: the same path with the good archive succeeds.
    let bytes = with(Vec::new());
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join("good.tgz");
    std::fs::write(&file, &bytes).expect("writing the archive");
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", "", MAX_BYTES), &cache);
    config.archive = Some(file);
    config.archive_sha256 = Some(sha256(&bytes));
    let p = provision(&config).expect("the good archive provisions");
    assert_installed(&p, &cache, &sha256(&bytes));
}

#[test]
fn links_that_stay_inside_are_accepted() {
    // Control for the link rules: chains, leading `..` and `./` inside the root are fine.
    let mut entries = good_entries();
    entries.extend([
        (format!("{ROOT}/lib/libonnxruntime.so.1"), Kind::Symlink("libonnxruntime.so.1.16.2".into())),
        (format!("{ROOT}/lib/libonnxruntime.so.one"), Kind::Symlink("./libonnxruntime.so.1".into())),
        (format!("{ROOT}/lib/api.h"), Kind::Symlink("../include/onnxruntime_c_api.h".into())),
        (format!("{ROOT}/lib/copy.so"), Kind::HardLink(format!("{ROOT}/lib/libonnxruntime.so.1.16.2"))),
    ]);
    let bytes = tgz_owned(&entries);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let out = tmp.path().join("links.tgz");
    std::fs::write(&out, &bytes).expect("writing the archive");
    let mut config = config(manifest("http://127.0.0.1:9/unused.tgz", "", MAX_BYTES), &cache);
    config.archive = Some(out);
    config.archive_sha256 = Some(sha256(&bytes));
    let p = provision(&config).expect("links inside the root are accepted");
    for name in ["libonnxruntime.so.1", "libonnxruntime.so.one", "copy.so"] {
        assert_eq!(std::fs::read(p.lib_dir.join(name)).expect("reading through a link"), LIB_BYTES, "{name}");
    }
    assert_eq!(std::fs::read(p.lib_dir.join("api.h")).expect("reading through a link"), HEADER_BYTES);
}

#[test]
fn parent_dir_traversal_is_refused() {
    // From the work folder cache/.tmp/W, four `..` after the root lead to the test folder itself.
    let name = format!("{ROOT}/../../../../escaped");
    let (tmp, err) = refuse(&with(vec![(name.clone(), Kind::File(b"pwned".to_vec()))]));
    assert_unsafe(&err, &name, "..");
    assert!(!tmp.path().join("escaped").exists());
}

#[test]
fn leading_parent_dir_is_refused() {
    let name = "../escaped".to_owned();
    let (_tmp, err) = refuse(&with(vec![(name.clone(), Kind::File(b"pwned".to_vec()))]));
    assert_unsafe(&err, &name, "..");
}

#[test]
fn absolute_path_is_refused() {
    let outside = tempdir();
    let target = outside.path().join("escaped");
    let name = target.to_str().expect("a UTF-8 temporary path").to_owned();
    assert!(name.starts_with('/'));
    let (_tmp, err) = refuse(&with(vec![(name.clone(), Kind::File(b"pwned".to_vec()))]));
    assert_unsafe(&err, &name, "absolute");
    assert!(!target.exists(), "{} was written", target.display());
}

#[test]
fn symlink_escaping_the_root_is_refused() {
    let entries = vec![
        (format!("{ROOT}/lib/"), Kind::Dir),
        (format!("{ROOT}/lib/evil"), Kind::Symlink("../../../../etc".into())),
        (format!("{ROOT}/lib/evil/escaped"), Kind::File(b"pwned".to_vec())),
    ];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/lib/evil"), "symlink");
}

#[test]
fn absolute_symlink_is_refused() {
    let entries = vec![(format!("{ROOT}/lib/passwd"), Kind::Symlink("/etc/passwd".into()))];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/lib/passwd"), "symlink");
}

#[test]
fn symlink_chain_is_refused_before_anything_is_written_through_it() {
    // `p/d -> ..` is `ROOT` itself, so `s -> p/d/../..` looks like `ROOT` lexically but really is
    // two levels above it: the cache's `.tmp` folder. `s/escaped` would land there.
    let entries = vec![
        (format!("{ROOT}/p/"), Kind::Dir),
        (format!("{ROOT}/p/d"), Kind::Symlink("..".into())),
        (format!("{ROOT}/s"), Kind::Symlink("p/d/../..".into())),
        (format!("{ROOT}/s/escaped"), Kind::File(b"pwned".to_vec())),
    ];
    let (_tmp, err) = refuse(&with(entries));
    let Error::UnsafeEntry { entry, .. } = &err else { panic!("expected UnsafeEntry, got {err:?}") };
    assert!(entry.starts_with(&format!("{ROOT}/s")), "refused {entry}");
}

#[test]
fn symlink_chain_alone_does_not_reach_the_cache() {
    // The same chain without a file below it: `ROOT/s` would be published pointing at the cache
    // folder, outside its entry. It must be refused like any link that leaves the root.
    let entries = vec![
        (format!("{ROOT}/p/"), Kind::Dir),
        (format!("{ROOT}/p/d"), Kind::Symlink("..".into())),
        (format!("{ROOT}/s"), Kind::Symlink("p/d/../..".into())),
    ];
    let (_tmp, err) = refuse(&with(entries));
    let Error::UnsafeEntry { entry, .. } = &err else { panic!("expected UnsafeEntry, got {err:?}") };
    assert!(entry.starts_with(&format!("{ROOT}/s")), "refused {entry}");
}

#[test]
fn hard_link_to_an_absolute_path_is_refused() {
    let entries = vec![(format!("{ROOT}/lib/passwd"), Kind::HardLink("/etc/passwd".into()))];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/lib/passwd"), "hard link");
}

#[test]
fn hard_link_to_a_parent_path_is_refused() {
    let entries = vec![(format!("{ROOT}/lib/outside"), Kind::HardLink("../outside".into()))];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/lib/outside"), "hard link");
}

#[test]
fn hard_link_to_a_file_outside_the_root_is_refused() {
    let entries = vec![(format!("{ROOT}/lib/other"), Kind::HardLink("other-root/file".into()))];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/lib/other"), "hard link");
}

#[test]
fn character_device_is_refused() {
    let entries = vec![(format!("{ROOT}/null"), Kind::CharDevice)];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/null"), "device");
}

#[test]
fn fifo_is_refused() {
    let entries = vec![(format!("{ROOT}/pipe"), Kind::Fifo)];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/pipe"), "FIFO");
}

#[test]
fn entry_outside_the_root_folder_is_refused() {
    let entries = vec![("other-root/escaped".to_owned(), Kind::File(b"pwned".to_vec()))];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, "other-root/escaped", "root folder");
}

#[test]
fn more_entries_than_the_default_bound_are_refused() {
    let bound = Bounds::default().max_entries;
    assert!(bound < 20_000);
    // Empty files all of one name: each replaces the last, so the test creates one file at a
    // time rather than thousands while still counting 20 000 entries.
    let mut entries = good_entries();
    entries.extend((0..20_000).map(|_| (format!("{ROOT}/empty"), Kind::File(Vec::new()))));
    let (_tmp, err) = refuse(&tgz_owned(&entries));
    assert_unsafe(&err, &format!("#{}", bound + 1), "entries");
}

#[test]
fn header_announcing_five_gib_is_refused_by_the_default_size_bound() {
    let five_gib = 5u64 << 30;
    assert!(five_gib > Bounds::default().max_unpacked);
    let entries = vec![(format!("{ROOT}/bomb"), Kind::LyingFile { size: five_gib })];
    let (_tmp, err) = refuse(&with(entries));
    assert_unsafe(&err, &format!("{ROOT}/bomb"), "size bound");
}

#[test]
fn many_entries_adding_up_past_the_size_bound_are_refused() {
    let dest = tempdir();
    let chunk = vec![0u8; 64 * 1024];
    let entries: Vec<(String, Kind)> =
        (0..40).map(|i| (format!("{ROOT}/z{i:02}"), Kind::File(chunk.clone()))).collect();
    let bytes = tgz_owned(&entries);
    assert!(bytes.len() < 64 * 1024, "zeros compress: {} bytes", bytes.len());
    let bounds = Bounds { max_entries: 1000, max_unpacked: 1 << 20 };
    let err = extract_tgz(bytes.as_slice(), dest.path(), ROOT, bounds).expect_err("expands past the bound");
    assert_unsafe(&err, &format!("{ROOT}/z16"), "size bound");
    assert!(written_bytes(dest.path()) <= bounds.max_unpacked, "wrote past the bound");
}

#[test]
fn entry_count_bound_is_enforced_exactly() {
    let dest = tempdir();
    let entries: Vec<(String, Kind)> = (0..200).map(|i| (format!("{ROOT}/e{i:03}"), Kind::File(Vec::new()))).collect();
    let bounds = Bounds { max_entries: 50, max_unpacked: 1 << 20 };
    let err = extract_tgz(tgz_owned(&entries).as_slice(), dest.path(), ROOT, bounds).expect_err("too many entries");
    assert_unsafe(&err, "#51", "entries");
    assert_eq!(std::fs::read_dir(dest.path().join(ROOT)).expect("extracted folder").count(), 50);
}

#[test]
fn garbage_instead_of_gzip_is_corrupt() {
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let (_tmp, err) = refuse(&garbage);
    let Error::Corrupt { .. } = &err else { panic!("expected Corrupt, got {err:?}") };
}

#[test]
fn gzip_of_garbage_is_corrupt() {
    use std::io::Write;
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&garbage).expect("gzip into memory");
    let bytes = gz.finish().expect("gzip into memory");
    let (_tmp, err) = refuse(&bytes);
    let Error::Corrupt { .. } = &err else { panic!("expected Corrupt, got {err:?}") };
}

#[test]
fn archive_cut_in_the_middle_is_corrupt() {
    let archive = good_archive();
    let (_tmp, err) = refuse(&archive[..archive.len() / 2]);
    let Error::Corrupt { .. } = &err else { panic!("expected Corrupt, got {err:?}") };
}

fn written_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).expect("listing extracted files").flatten() {
            let meta = entry.metadata().expect("metadata of an extracted file");
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}
