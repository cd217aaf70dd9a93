//! Helpers shared by the CLI tests: the binary as a user runs it, the test models, `.npy` files
//! written byte by byte (so the tests do not trust the CLI's own writer), and a fake `nvidia-smi`.
#![allow(dead_code)] // each test file uses its own subset

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `onnxrt` binary, with the variables that would redirect it removed.
pub fn onnxrt() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_onnxrt"));
    command.env_remove("ONNXRT_DYLIB_PATH").env_remove("LD_LIBRARY_PATH");
    command
}

/// A model of `tests/data/models`.
pub fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/models").join(name)
}

/// What a finished command printed.
pub struct Ran {
    /// Exit status code.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Ran {
    /// Both streams, for assertion messages.
    pub fn both(&self) -> String {
        format!("exit {:?}\n--- stdout\n{}\n--- stderr\n{}", self.code, self.stdout, self.stderr)
    }
}

/// A fake `nvidia-smi` in a scratch folder, which prints one line as the doctor's query gets it
/// from a real one (`name, driver_version, compute_cap`). Use it from a test binary with one
/// test: a child forked by another test thread while the script is written keeps it open for
/// writing, and running it then fails as busy.
pub struct FakeNvidiaSmi {
    // Holds the script; the folder is removed when this is dropped.
    _dir: tempfile::TempDir,
    path: String,
}

impl FakeNvidiaSmi {
    /// Writes a `nvidia-smi` that prints `line` (no single quote in it: the script quotes it so).
    pub fn printing(line: &str) -> FakeNvidiaSmi {
        assert!(!line.contains('\''), "the fake nvidia-smi's line has no single quote: {line}");
        let dir = tempfile::tempdir().expect("tempdir");
        let smi = dir.path().join("nvidia-smi");
        std::fs::write(&smi, format!("#!/bin/sh\necho '{line}'\n")).expect("write");
        std::fs::set_permissions(&smi, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
        FakeNvidiaSmi { _dir: dir, path }
    }

    /// A `PATH` that finds the fake first, then what the test's own `PATH` finds.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Runs a command to completion, retrying while a freshly written executable is still busy
/// (another test thread forked while its write handle was open).
pub fn run(command: &mut Command) -> Ran {
    // Until it is not busy (no count or time limit: the busy state ends when the other thread's
    // child execs, which on a loaded machine can take longer than any fixed number of tries).
    loop {
        match command.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => {
                let Output { status, stdout, stderr } = other.expect("the command starts");
                return Ran {
                    code: status.code(),
                    stdout: String::from_utf8_lossy(&stdout).into_owned(),
                    stderr: String::from_utf8_lossy(&stderr).into_owned(),
                };
            }
        }
    }
}

/// `onnxrt ARGS...`.
pub fn onnxrt_with(args: &[&str]) -> Ran {
    run(onnxrt().args(args))
}

/// Writes a little-endian f32 `.npy` file (format 1.0), as `numpy.save` does.
pub fn write_npy_f32(path: &Path, shape: &[usize], data: &[f32]) {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape_text = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_text}, }}");
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let header = format!("{dict:<width$}\n", width = total - 10 - 1);
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for x in data {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    std::fs::write(path, bytes).expect("write .npy");
}

/// Reads a little-endian f32 `.npy` file written by the CLI: (shape, values).
pub fn read_npy_f32(path: &Path) -> (String, Vec<f32>) {
    let bytes = std::fs::read(path).expect("read .npy");
    assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"), "not a .npy 1.0 file");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8_lossy(&bytes[10..10 + len]).into_owned();
    assert!(header.contains("'descr': '<f4'"), "{header}");
    assert_eq!((10 + len) % 64, 0, "header is padded to 64 bytes");
    let values = bytes[10 + len..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    (header, values)
}

/// Parses JSON printed on stdout.
pub fn json(ran: &Ran) -> serde_json::Value {
    serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", ran.both()))
}

/// The doctor's JSON rows as (check, status, detail, fix).
pub fn rows(ran: &Ran) -> Vec<(String, String, String, Option<String>)> {
    let value = json(ran);
    let array = value.as_array().unwrap_or_else(|| panic!("doctor --json prints an array:\n{}", ran.both()));
    array
        .iter()
        .map(|r| {
            let text = |key: &str| r.get(key).and_then(|v| v.as_str()).map(str::to_owned);
            (
                text("check").expect("check"),
                text("status").expect("status"),
                text("detail").expect("detail"),
                text("fix"),
            )
        })
        .collect()
}

/// The row whose check is `check`.
pub fn row<'r>(
    rows: &'r [(String, String, String, Option<String>)],
    check: &str,
) -> &'r (String, String, String, Option<String>) {
    rows.iter().find(|r| r.0 == check).unwrap_or_else(|| panic!("no `{check}` row in {rows:#?}"))
}

/// Runs `command` with stdout a pipe whose read end is already closed, as when the reader
/// (`head`, `true`) exited: every write to stdout fails with EPIPE. Stdout is empty in the result.
pub fn run_into_closed_pipe(command: &mut Command) -> Ran {
    loop {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let spawned = command.stdout(writer).stderr(std::process::Stdio::piped()).spawn();
        match spawned {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!("the command does not start: {e}"),
            Ok(child) => {
                let Output { status, stderr, .. } = child.wait_with_output().expect("the command ends");
                return Ran {
                    code: status.code(),
                    stdout: String::new(),
                    stderr: String::from_utf8_lossy(&stderr).into_owned(),
                };
            }
        }
    }
}
