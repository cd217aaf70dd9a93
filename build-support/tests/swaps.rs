//! What is hashed is what is installed, even when someone renames another file over the path
//! between the hash and the extraction. The race is made deterministic
//! with the test-only `Config::hooks.verified`, which runs right after a file's sha256 matched
//! its pin: it renames a different, well-formed file over that path. Extraction must use the file
//! it hashed (the same open descriptor, or bytes in memory), never the path again.

mod common;
mod registry;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use build_support::provision;
use common::*;

const OTHER_LIB: &[u8] = b"\x7fELF another library altogether (never pinned)\n";
const OTHER_HEADER: &[u8] = b"/* a header nobody pinned */\n#define ORT_API_VERSION 99\n";

/// A hook that renames `replacement` over each verified path whose name passes `wanted`, and
/// counts how often it did.
fn swapper(
    replacement: Vec<u8>,
    folder: PathBuf,
    wanted: fn(&Path) -> bool,
) -> (build_support::config::PathHook, Arc<AtomicUsize>) {
    let swaps = Arc::new(AtomicUsize::new(0));
    let counter = swaps.clone();
    let hook = move |path: &Path| {
        if !wanted(path) {
            return;
        }
        let n = counter.fetch_add(1, Ordering::SeqCst);
        let staged = folder.join(format!("replacement-{n}"));
        std::fs::write(&staged, &replacement).expect("staging the replacement");
        std::fs::rename(&staged, path).expect("renaming the replacement over the verified file");
    };
    (Arc::new(hook), swaps)
}

fn other_archive() -> Vec<u8> {
    let mut entries = good_entries();
    entries[2].1 = Kind::File(OTHER_LIB.to_vec());
    tgz_owned(&entries)
}

#[test]
fn local_archive_renamed_over_after_its_hash_does_not_get_installed() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    let (hook, swaps) = swapper(other_archive(), tmp.path().to_owned(), |_| true);
    config.hooks.verified = Some(hook);
    let p = provision(&config).expect("the pinned archive installs");
    assert_eq!(swaps.load(Ordering::SeqCst), 1, "the hook ran once, after the hash");
    assert_installed(&p, &cache, &sha);
}

#[test]
fn download_renamed_over_after_its_hash_does_not_get_installed() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let path = format!("/{FILE_NAME}");
    let server = Server::start(vec![(path.as_str(), Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(&path), &sha, MAX_BYTES), &cache);
    let (hook, swaps) = swapper(other_archive(), tmp.path().to_owned(), |_| true);
    config.hooks.verified = Some(hook);
    let p = provision(&config).expect("the pinned download installs");
    assert_eq!(swaps.load(Ordering::SeqCst), 1, "the hook ran once, after the hash");
    assert_eq!(p.source, downloaded(&server.url(&path)));
    assert_installed(&p, &cache, &sha);
}

#[test]
fn debian_package_renamed_over_after_its_hash_does_not_supply_the_headers() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = registry::config(&cache);
    let is_deb = |p: &Path| p.extension().is_some_and(|e| e == "deb");
    let (hook, swaps) = swapper(registry::deb(OTHER_HEADER), tmp.path().to_owned(), is_deb);
    config.hooks.verified = Some(hook);
    let p = provision(&config).expect("the registry dist assembles");
    assert_eq!(swaps.load(Ordering::SeqCst), 1, "the hook swapped the .deb once, after its hash");
    let header = std::fs::read(p.include_dir.join("onnxruntime_c_api.h")).expect("reading the installed header");
    assert_eq!(String::from_utf8_lossy(&header), String::from_utf8_lossy(HEADER_BYTES), "the installed header");
    assert_eq!(std::fs::read(&p.library).expect("reading the installed library"), LIB_BYTES);
}

#[test]
fn npm_tarball_renamed_over_after_its_hash_does_not_supply_the_library() {
    // On main the swapped library was read by path and refused by its own pin (`member_sha256`),
    // which failed the build; now the tarball that was hashed is the one read.
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = registry::config(&cache);
    let other = registry::tar_gz(&[(registry::NPM_MEMBER, OTHER_LIB)]);
    let is_tgz = |p: &Path| p.extension().is_some_and(|e| e == "tgz");
    let (hook, swaps) = swapper(other, tmp.path().to_owned(), is_tgz);
    config.hooks.verified = Some(hook);
    let p = provision(&config).expect("the registry dist assembles");
    assert_eq!(swaps.load(Ordering::SeqCst), 1);
    assert_eq!(std::fs::read(&p.library).expect("reading the installed library"), LIB_BYTES);
}
