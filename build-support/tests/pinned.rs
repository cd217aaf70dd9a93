//! The official archives the manifest pins (sha256 and size): a file with the right name but the
//! wrong bytes, or the wrong size, served on 127.0.0.1 through `ONNXRT_MIRROR`, is refused for the
//! pinned entry, exactly as a build would refuse it (the `onnxrt-dist` tool reads the same
//! variables as `onnxrt-sys`'s build script), and nothing is left in the cache.

mod common;

use std::path::Path;
use std::process::Command;

use build_support::Manifest;
use common::*;

/// Runs `onnxrt-dist fetch DIST` against the mirror with a private cache; returns (exit code, stderr).
fn fetch_through_mirror(dist: &str, mirror: &str, cache: &Path) -> (Option<i32>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"));
    for var in ["ONNXRT_DIST", "ONNXRT_LIB_DIR", "ONNXRT_ARCHIVE", "ONNXRT_ARCHIVE_SHA256", "ONNXRT_OFFLINE"] {
        command.env_remove(var);
    }
    let output = command
        .env_remove("CARGO_NET_OFFLINE")
        .env("ONNXRT_MIRROR", mirror)
        .env("ONNXRT_ALLOW_HTTP", "1")
        .env("ONNXRT_CACHE_DIR", cache)
        .args(["fetch", dist])
        .output()
        .expect("running onnxrt-dist");
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Bytes that are not the release: a fixed pattern of exactly `len` bytes.
fn impostor(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[test]
fn both_official_archives_are_pinned_with_hash_and_size() {
    let manifest = Manifest::builtin().expect("builtin manifest");
    for (name, file) in
        [("gpu-1.16.2", "onnxruntime-linux-x64-gpu-1.16.2.tgz"), ("cpu-1.16.2", "onnxruntime-linux-x64-1.16.2.tgz")]
    {
        let dist = manifest.dist(name).expect("dist in the manifest");
        assert_eq!(dist.file_name(), file);
        assert!(dist.pinned_sha256().is_some(), "{name} must carry a sha256");
        assert!(dist.size.is_some(), "{name} must carry a size");
    }
}

#[test]
fn right_name_right_size_wrong_bytes_is_a_hash_mismatch() {
    let manifest = Manifest::builtin().expect("builtin manifest");
    let dist = manifest.dist("cpu-1.16.2").expect("cpu dist");
    let size = dist.size.expect("pinned size");
    let path = format!("/{}", dist.file_name());
    let bytes = impostor(size);
    let server = Server::start(vec![(path.as_str(), Behaviour::Serve(bytes.clone()))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");

    let (code, stderr) = fetch_through_mirror("cpu-1.16.2", &server.base(), &cache);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("sha256 mismatch"), "{stderr}");
    assert!(stderr.contains(dist.pinned_sha256().expect("pin")), "{stderr}");
    assert!(stderr.contains(&sha256(&bytes)), "{stderr}");
    assert_eq!(server.hits(&path), 1, "a hash mismatch is not retried");
    assert_cache_clean(&cache);
}

#[test]
fn right_name_wrong_size_is_refused_for_both_pinned_archives() {
    let manifest = Manifest::builtin().expect("builtin manifest");
    // CPU: one byte short of the pinned size (a truncated copy, complete as far as HTTP knows);
    // GPU: a 1 MiB file (an error page or a different build saved under the same name).
    for (name, served) in [("cpu-1.16.2", None), ("gpu-1.16.2", Some(1 << 20))] {
        let dist = manifest.dist(name).expect("dist");
        let size = dist.size.expect("pinned size");
        let served: u64 = served.unwrap_or(size - 1);
        let path = format!("/{}", dist.file_name());
        let server = Server::start(vec![(path.as_str(), Behaviour::Serve(impostor(served)))]);
        let tmp = tempdir();
        let cache = tmp.path().join("cache");

        let (code, stderr) = fetch_through_mirror(name, &server.base(), &cache);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        let expected = format!("the pin says {size} bytes, got {served}");
        assert!(stderr.contains("size mismatch") && stderr.contains(&expected), "{name}: {stderr}");
        assert_eq!(server.hits(&path), 1, "{name}: a wrong size is not retried");
        assert_cache_clean(&cache);
    }
}

#[test]
fn the_test_only_distribution_stays_unpinned_and_cannot_be_pinned() {
    let manifest = Manifest::builtin().expect("builtin manifest");
    let dist = manifest.dist("test-unpinned").expect("the test-only dist");
    assert!(dist.test_only && dist.pinned_sha256().is_none() && dist.files.is_empty());
    // The manifest refuses a pin on a test-only entry, so the tests that pin their own archive
    // keep a distribution they can run on whatever gets pinned elsewhere.
    let dist = |name: &str, sha: &str, extra: &str| {
        format!(
            r#"[[dist]]
name = "{name}"
description = "d"
ort_version = "1.32.0"
api_version = 16
target = "x86_64-unknown-linux-gnu"
kind = "archive"
url = "https://onnxrt-test.invalid/x.tgz"
sha256 = "{sha}"
root = "r"
library = "lib/l.so"
{extra}
"#
        )
    };
    let text = |test_sha: &str| {
        format!("schema = 1\ndefault = \"a\"\n{}{}", dist("a", "", ""), dist("t", test_sha, "test_only = true"))
    };
    Manifest::parse(&text("")).expect("an unpinned test-only entry is accepted");
    let pinned = text(&"a".repeat(64));
    let err = Manifest::parse(&pinned).expect_err("a pinned test-only entry");
    assert!(err.to_string().contains("test-only"), "{err}");
}
