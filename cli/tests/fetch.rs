//! `onnxrt fetch`: provisioning through build-support from a local HTTP server, with the progress
//! line, and `--offline` with an empty cache. Needs the `fetch` feature
//! (`cargo test -p onnxrt-cli --features fetch`); without it, `fetch_feature.rs` runs instead.
#![cfg(feature = "fetch")]

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use common::{onnxrt, run};

// The builtin manifest's archive that is not pinned yet, so the test can pin its own stand-in with
// ONNXRT_ARCHIVE_SHA256 (the 1.16.2 and CUDA 13 1.30.0 archives are pinned, and a contradicting
// pin is refused).
/// The manifest's test-only distribution: never pinned, so the test's own pin is always accepted.
const DIST: &str = "test-unpinned";
const ROOT: &str = "onnxruntime-linux-x64-1.32.0";
const FILE: &str = "onnxruntime-linux-x64-1.32.0.tgz";
const LIBRARY: &str = "libonnxruntime.so.1.32.0";

/// An archive with the official layout of DIST whose library is 3 MiB of noise (so it stays 3 MiB).
fn archive() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..3 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for (path, data) in [
        (format!("{ROOT}/lib/{LIBRARY}"), noise.as_slice()),
        (format!("{ROOT}/include/onnxruntime_c_api.h"), b"/* test header */\n".as_slice()),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, path, data).expect("append");
    }
    tar.into_inner().expect("tar").finish().expect("gzip")
}

/// Serves `body` at `/FILE` (GET slowly, in 64 KiB pieces; HEAD with its length) until dropped.
fn serve(body: Vec<u8>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let body = std::sync::Arc::new(body);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16).flatten() {
            let body = std::sync::Arc::clone(&body);
            std::thread::spawn(move || {
                let mut stream = stream;
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).map(|n| n == 1).unwrap_or(false) {
                    request.push(byte[0]);
                }
                let text = String::from_utf8_lossy(&request);
                let wanted = text.lines().next().unwrap_or_default().contains(&format!("/{FILE} "));
                if !wanted {
                    let _ =
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                    return;
                }
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                let _ = stream.write_all(head.as_bytes());
                if text.starts_with("GET") {
                    for piece in body.chunks(64 << 10) {
                        if stream.write_all(piece).is_err() {
                            return;
                        }
                        std::thread::sleep(Duration::from_millis(40));
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn fetch_command(cache: &std::path::Path) -> std::process::Command {
    let mut command = onnxrt();
    for var in [
        "ONNXRT_LIB_DIR",
        "ONNXRT_INCLUDE_DIR",
        "ONNXRT_ARCHIVE",
        "ONNXRT_ARCHIVE_SHA256",
        "ONNXRT_OFFLINE",
        "CARGO_NET_OFFLINE",
        "ONNXRT_MIRROR",
    ] {
        command.env_remove(var);
    }
    // The test mirror speaks plain http, which provisioning fetches only when allowed.
    command.env("ONNXRT_CACHE_DIR", cache).env("ONNXRT_DIST", DIST).env("ONNXRT_ALLOW_HTTP", "1");
    command
}

#[test]
fn a_download_shows_progress_and_is_verified_and_installed() {
    let cache = tempfile::tempdir().expect("tempdir");
    let tgz = archive();
    let sha = build_support::verify::sha256_bytes(&tgz);
    let mirror = serve(tgz);
    let ran =
        run(fetch_command(cache.path()).arg("fetch").env("ONNXRT_MIRROR", &mirror).env("ONNXRT_ARCHIVE_SHA256", &sha));
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let lib_dir = std::path::PathBuf::from(ran.stdout.trim());
    assert!(lib_dir.starts_with(cache.path()) && lib_dir.join(LIBRARY).is_file(), "{}", ran.both());
    assert!(ran.stderr.contains(&format!("downloading {FILE} from {mirror}/{FILE}")), "{}", ran.both());
    // At least one progress line with rate and ETA (the body takes about two seconds), then the total.
    assert!(ran.stderr.contains("MiB/s, ETA") || ran.stderr.contains("KiB/s, ETA"), "{}", ran.both());
    assert!(ran.stderr.contains("(") && ran.stderr.contains("%)"), "{}", ran.both());
    assert!(ran.stderr.contains("3.0 MiB downloaded in"), "{}", ran.both());
    assert!(ran.stderr.contains("sha256 verified"), "{}", ran.both());

    // A wrong pin: build-support refuses the bytes, and fetch passes its typed error on.
    let other = tempfile::tempdir().expect("tempdir");
    let ran = run(fetch_command(other.path())
        .arg("fetch")
        .env("ONNXRT_MIRROR", &mirror)
        .env("ONNXRT_ARCHIVE_SHA256", "0".repeat(64)));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("sha256 mismatch"), "{}", ran.both());
}

#[test]
fn offline_with_an_empty_cache_says_what_to_do() {
    let cache = tempfile::tempdir().expect("tempdir");
    let ran = run(fetch_command(cache.path()).args(["fetch", "cpu-1.16.2", "--offline"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("offline") && ran.stderr.contains("ONNXRT_ARCHIVE"), "{}", ran.both());
    // How to choose another distribution, worded for this command: the name was given, so it is
    // not "the default"; the registry fallback is an `onnxrt fetch` line.
    assert!(ran.stderr.contains("`cpu-1.16.2` could not be provisioned"), "{}", ran.both());
    assert!(ran.stderr.contains("already holds: none of them"), "{}", ran.both());
    assert!(ran.stderr.contains("`onnxrt fetch cpu-1.16.2-registry` assembles"), "{}", ran.both());
    assert!(!ran.stderr.contains("the default"), "{}", ran.both());
    let ran = run(fetch_command(cache.path()).args(["fetch", "gpu-1.16.2", "--offline"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(!ran.stderr.contains("the default, used while ONNXRT_DIST is unset"), "{}", ran.both());
    let ran = run(fetch_command(cache.path()).args(["fetch", "--dist", "cpu-1.16.2-registry", "--offline"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("downloads are off (--offline)"), "{}", ran.both());
    assert!(ran.stderr.contains("onnxrt fetch cpu-1.16.2-registry"), "{}", ran.both());
    assert!(!ran.stderr.contains("cargo run -p"), "advice that works only inside the repository: {}", ran.both());
    let ran = run(fetch_command(cache.path()).args(["fetch", "no-such-dist"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("cpu-1.16.2-registry"), "{}", ran.both());
    assert!(ran.stderr.contains("no distribution named `no-such-dist`"), "{}", ran.both());
    assert!(!ran.stderr.contains("config.toml"), "{}", ran.both());
}

/// The cache the user's builds use, where `cpu-1.16.2-registry`'s registry files may already be.
fn user_cache() -> std::path::PathBuf {
    match std::env::var_os("ONNXRT_CACHE_DIR") {
        Some(dir) => dir.into(),
        None => std::path::Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/onnxrt"),
    }
}

#[test]
fn assembling_a_registry_distribution_shows_a_line_per_file() {
    // The registry files, copied from the user's cache into a fresh one: assembly then runs
    // without a network (each file matches its pin), and the cache has no entry yet.
    let files = ["onnxruntime-node-1.16.2.tgz", "libonnxruntime-dev_1.21.0+dfsg-1_amd64.deb"];
    let source = user_cache().join("registry-files");
    if let Some(missing) = files.iter().find(|f| !source.join(f).is_file()) {
        println!("skipped: {} is not in {} (run `onnxrt fetch cpu-1.16.2-registry` once)", missing, source.display());
        return;
    }
    let cache = tempfile::tempdir().expect("tempdir");
    let downloads = cache.path().join("registry-files");
    std::fs::create_dir(&downloads).expect("mkdir");
    for file in files {
        std::fs::copy(source.join(file), downloads.join(file)).expect("copy");
    }
    let ran = run(fetch_command(cache.path()).args(["fetch", "cpu-1.16.2-registry"]));
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stderr.contains("onnxrt: assembling `cpu-1.16.2-registry` from 2 registry file(s)"), "{}", ran.both());
    let size = |file: &str| std::fs::metadata(downloads.join(file)).expect("file").len() as f64 / 1024.0;
    let lines = [
        format!(
            "onnxrt: [1/2] {} (npm package onnxruntime-node 1.16.2): {:.1} MiB, already downloaded, checked",
            files[0],
            size(files[0]) / 1024.0
        ),
        format!(
            "onnxrt: [2/2] {} (debian package libonnxruntime-dev 1.21.0+dfsg-1): {:.1} KiB, already downloaded, checked",
            files[1],
            size(files[1])
        ),
    ];
    for line in &lines {
        assert!(ran.stderr.contains(line.as_str()), "missing {line:?}: {}", ran.both());
    }
    let lib_dir = std::path::PathBuf::from(ran.stdout.trim());
    assert!(lib_dir.starts_with(cache.path()) && lib_dir.join("libonnxruntime.so.1.16.2").is_file(), "{}", ran.both());
    // Once in the cache, nothing is assembled and no step is shown.
    let ran = run(fetch_command(cache.path()).args(["fetch", "cpu-1.16.2-registry"]));
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(!ran.stderr.contains("assembling"), "{}", ran.both());
}
