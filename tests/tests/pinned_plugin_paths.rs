//! Paths that are no regular file, given to the pinned plugin registration (issue 45's outside
//! probe: a FIFO hung the call in `open` until a writer came, then was refused by its size, as
//! a folder was). Each is refused by what it is, before anything opens it, on every runtime: the
//! check comes before the version check, so this runs on 1.16.2 as on the newest. Bounded by
//! events, never by time.

use std::fs::OpenOptions;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;

use onnxrt::{Environment, Error};

fn refused_as(result: onnxrt::Result<&'static str>, kind: &str) {
    match result {
        Err(Error::PluginNotPinned { why, .. }) => {
            assert!(why.starts_with(&format!("it is {kind}")) && why.ends_with("not a regular file"), "{kind}: {why}");
        }
        other => panic!("{kind}: expected PluginNotPinned, got {other:?}"),
    }
}

fn fifo_in(dir: &Path) -> std::path::PathBuf {
    let fifo = dir.join("libonnxruntime_providers_webgpu.so");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());
    fifo
}

/// A FIFO with a writer waiting on its other end. A reader's open would meet the writer (before
/// the fix the call's blocking open did, then refused the FIFO by its size, 0 bytes; without a
/// writer it blocked forever). The call must refuse it as a FIFO without opening it: the writer
/// is still waiting when the call returns, and is let go by the test's own reader afterwards.
#[test]
fn a_fifo_is_refused_unopened_and_nothing_blocks() {
    let dir = tempfile::tempdir().expect("dir");
    let fifo = fifo_in(dir.path());
    let link = dir.path().join("link.so");
    std::os::unix::fs::symlink(&fifo, &link).expect("symlink");
    let env = Environment::global().expect("env");
    for path in [&fifo, &link] {
        let (opened, writer_opened) = mpsc::channel();
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let end = OpenOptions::new().write(true).open(&fifo);
                opened.send(()).expect("the test waits");
                end.map(drop)
            })
        };
        let result = env.register_pinned_provider_library("fifo", path);
        let writer_met_a_reader = writer_opened.try_recv().is_ok();
        // Let the writer go: on Linux a read-write open of a FIFO never blocks, and it is a reader
        // the writer's open meets (kept open until the writer is done).
        let reader = OpenOptions::new().read(true).write(true).open(&fifo).expect("open both ends");
        writer.join().expect("the writer thread").expect("the writer's open");
        drop(reader);
        refused_as(result, "a FIFO");
        assert!(!writer_met_a_reader, "{}: the call opened the FIFO", path.display());
    }
}

/// A folder and a character device (`/dev/zero`, which reads forever): refused by what they
/// are, not by their size.
#[test]
fn a_folder_and_a_device_are_refused_by_what_they_are() {
    let env = Environment::global().expect("env");
    let dir = tempfile::tempdir().expect("dir");
    refused_as(env.register_pinned_provider_library("folder", dir.path()), "a directory");
    refused_as(env.register_pinned_provider_library("zero", Path::new("/dev/zero")), "a character device");
    // A regular file that is no pinned library is still refused by its size or hash (on a
    // runtime with the plugin API) or by the runtime's version.
    let file = dir.path().join("lib.so");
    std::fs::write(&file, b"not a plugin").expect("write");
    match env.register_pinned_provider_library("file", &file) {
        Err(Error::PluginNotPinned { why, .. }) => assert!(why.contains("size"), "{why}"),
        Err(Error::NeedsNewerRuntime { needs: 22, .. }) => {}
        other => panic!("expected a refusal, got {other:?}"),
    }
}
