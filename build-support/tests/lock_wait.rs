//! A build waiting for the lock of a cache key says, after a few seconds and then periodically,
//! which process holds it and which lock file it waits on. The test holds the
//! lock itself and runs `onnxrt-dist fetch` against the same cache; it releases the lock after
//! the second message (or, bounding the test, once a minute has passed without it) and checks
//! that the fetch then completes.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_onnxrt-dist");
/// Longest the test waits for each message before releasing the lock anyway.
const GUARD: Duration = Duration::from_secs(60);

#[test]
fn waiting_for_a_held_lock_names_the_holder_and_keeps_saying_it() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let locks = cache.join(".locks");
    std::fs::create_dir_all(&locks).expect("creating .locks");
    let file = tmp.path().join(UNPINNED_FILE);
    std::fs::write(&file, &archive).expect("writing the archive");
    let lock_path = locks.join(format!("{UNPINNED_DIST}.lock"));
    let held = std::fs::File::create(&lock_path).expect("creating the lock file");
    held.lock().expect("taking the lock");

    let mut child = Command::new(BIN)
        .args(["fetch", UNPINNED_DIST])
        .env_clear()
        .env("ONNXRT_CACHE_DIR", &cache)
        .env("ONNXRT_ARCHIVE", &file)
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running onnxrt-dist");
    let stderr = child.stderr.take().expect("piped stderr");
    let (send, lines) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    let mut waiting = Vec::new();
    let mut other = Vec::new();
    while waiting.len() < 2 {
        match lines.recv_timeout(GUARD) {
            Ok(line) if line.contains("waiting") => waiting.push(line),
            Ok(line) => other.push(line),
            Err(_) => break,
        }
    }
    drop(held);
    let status = child.wait().expect("waiting for onnxrt-dist");
    let _ = reader.join();
    other.extend(lines.try_iter());
    assert_eq!(
        waiting.len(),
        2,
        "expected two waiting messages while the lock was held; got {waiting:?}, then {other:?}"
    );
    let pid = format!("pid {}", std::process::id());
    let exe = std::env::current_exe().expect("the test's own path");
    let program = exe.file_name().expect("a file name").to_string_lossy().into_owned();
    for line in &waiting {
        let names_all =
            line.contains(&pid) && line.contains(&program) && line.contains(&lock_path.display().to_string());
        assert!(names_all, "{line}");
    }
    assert!(status.success(), "the fetch completes once the lock is released: {other:?}");
}
