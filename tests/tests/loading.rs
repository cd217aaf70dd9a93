//! Finding and loading the runtime, as a user's process does: each case runs `onnxrt-probe` in a
//! process of its own (one ORT per process) and reads its one-line verdict.

use std::path::{Path, PathBuf};
use std::process::Command;

fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onnxrt-loading-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn probe(command: &mut Command) -> String {
    let output = run(command);
    assert!(output.status.success(), "probe failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Copies an executable; spawning it right after can meet ETXTBSY while another test thread forks
/// with the copy's write handle still open in the child, so `run` retries that case until it clears.
fn copy_exe(to: &Path) {
    std::fs::copy(env!("CARGO_BIN_EXE_onnxrt-probe"), to).expect("copy probe");
}

fn run(command: &mut Command) -> std::process::Output {
    // Until it is not busy (no count or time limit: the busy state ends when the other thread's
    // child execs, which on a loaded machine can take longer than any fixed number of tries).
    loop {
        match command.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other.expect("probe runs"),
        }
    }
}

fn probe_cmd() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_onnxrt-probe"));
    command.env_remove("ONNXRT_DYLIB_PATH").env_remove("LD_LIBRARY_PATH");
    command
}

#[test]
fn the_recorded_library_loads_with_an_empty_environment() {
    let out = probe(probe_cmd().env_clear().arg("none").arg(model("add_f32.onnx")));
    assert!(out.starts_with(&format!("OK {}", onnxrt_sys::BUILD_VERSION)), "{out}");
}

#[test]
fn a_path_given_in_code_that_does_not_exist_is_reported_not_replaced() {
    let out = probe(probe_cmd().args(["--init", "/nonexistent/libonnxruntime.so", "none"]).arg(model("add_f32.onnx")));
    assert!(out.starts_with("ERR RuntimeNotFound"), "{out}");
    assert!(out.contains("/nonexistent/libonnxruntime.so (given in code): no such file"), "{out}");
    assert!(out.contains("Fix: set ONNXRT_DYLIB_PATH"), "{out}");
}

#[test]
fn a_wrong_onnxrt_dylib_path_is_an_error_not_a_silent_fallback() {
    let out = probe(probe_cmd().env("ONNXRT_DYLIB_PATH", "/nonexistent/dir").arg("none").arg(model("add_f32.onnx")));
    assert!(out.starts_with("ERR RuntimeNotFound"), "{out}");
    assert!(out.contains("(ONNXRT_DYLIB_PATH)"), "{out}");
}

#[test]
fn a_library_that_is_not_onnx_runtime_is_named_as_such() {
    let dir = scratch("not-ort");
    let fake = dir.join("libonnxruntime.so");
    std::fs::write(&fake, b"this is not an ELF file\n".repeat(400)).expect("write");
    let out = probe(probe_cmd().env("ONNXRT_DYLIB_PATH", &fake).arg("none").arg(model("add_f32.onnx")));
    assert!(out.starts_with("ERR RuntimeNotFound"), "{out}");
    assert!(out.contains("invalid ELF header"), "{out}");
    // A real shared library without ORT's entry point.
    let libz = ["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1"]
        .into_iter()
        .find(|p| Path::new(p).exists());
    if let Some(libz) = libz {
        let out = probe(probe_cmd().env("ONNXRT_DYLIB_PATH", libz).arg("none").arg(model("add_f32.onnx")));
        assert!(out.contains("not an ONNX Runtime library"), "{out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreadable_library_says_permission_denied() {
    // Root reads anything, so the probe runs as `nobody` (setpriv from util-linux).
    if Command::new("setpriv").arg("--version").output().is_err() {
        println!("skipped: setpriv is not installed");
        return;
    }
    let dir = std::env::temp_dir().join(format!("onnxrt-unreadable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let lib = dir.join("libonnxruntime.so.1.16.2");
    std::fs::copy(onnxrt_sys::BUILD_LIBRARY, &lib).expect("copy the runtime");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o000)).expect("chmod 000");
    let model_copy = dir.join("add_f32.onnx");
    std::fs::copy(model("add_f32.onnx"), &model_copy).expect("copy model");
    std::fs::set_permissions(&model_copy, std::fs::Permissions::from_mode(0o644)).expect("chmod model");
    let probe_copy = dir.join("onnxrt-probe");
    copy_exe(&probe_copy);
    std::fs::set_permissions(&probe_copy, std::fs::Permissions::from_mode(0o755)).expect("chmod probe");
    let out = probe(
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&probe_copy)
            .env_clear()
            .env("ONNXRT_DYLIB_PATH", &lib)
            .arg("none")
            .arg(&model_copy),
    );
    assert!(out.starts_with("ERR RuntimeNotFound"), "{out}");
    assert!(out.contains("Permission denied"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bundle_beside_the_executable_is_preferred_over_the_build_record() {
    let dir = scratch("bundle");
    let lib_dir = dir.join("onnxruntime/lib");
    std::fs::create_dir_all(&lib_dir).expect("lib dir");
    // Named as the official archive names the library of the version this build provisioned.
    let name = format!("libonnxruntime.so.{}", onnxrt_sys::BUILD_VERSION);
    let ok = format!("OK {}", onnxrt_sys::BUILD_VERSION);
    std::fs::copy(onnxrt_sys::BUILD_LIBRARY, lib_dir.join(&name)).expect("copy runtime");
    let exe = dir.join("onnxrt-probe");
    copy_exe(&exe);
    let out = probe(Command::new(&exe).env_clear().arg("none").arg(model("add_f32.onnx")));
    assert!(out.starts_with(&ok), "{out}");
    let bundled = lib_dir.join(&name);
    assert!(out.trim_end().ends_with(&bundled.display().to_string()), "{out}");
    // Remove the bundle's library: the folder exists but is empty, so the build record is used.
    std::fs::remove_file(&bundled).expect("remove");
    let out = probe(Command::new(&exe).env_clear().arg("none").arg(model("add_f32.onnx")));
    assert!(out.starts_with(&ok), "{out}");
    assert!(out.trim_end().ends_with(onnxrt_sys::BUILD_LIBRARY), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
