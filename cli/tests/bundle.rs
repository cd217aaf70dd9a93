//! `onnxrt bundle`: a deployable folder that runs with an empty environment, and `--check`.

mod common;

use std::path::Path;
use std::process::Command;

use common::{onnxrt_with, run};

#[test]
fn a_bundle_is_complete_checkable_and_runs_with_an_empty_environment() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let out = scratch.path().join("deploy");
    let cli = env!("CARGO_BIN_EXE_onnxrt");
    let ran = onnxrt_with(&["bundle", cli, out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());

    // The layout the loader expects, and no work folder left behind.
    let lib = out.join("onnxruntime/lib");
    assert!(lib.join("libonnxruntime.so.1.16.2").is_file(), "{}", ran.both());
    assert_eq!(
        std::fs::read_link(lib.join("libonnxruntime.so.1")).expect("link"),
        Path::new("libonnxruntime.so.1.16.2")
    );
    assert!(lib.join("libonnxruntime.so").exists());
    let leftovers: Vec<_> = std::fs::read_dir(scratch.path())
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "deploy")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bundle-manifest.json")).expect("manifest"))
            .expect("json");
    assert_eq!(manifest["binary"], "onnxrt");
    assert_eq!(manifest["ort_version"], "1.16.2");
    let files = manifest["files"].as_array().expect("files");
    let paths: Vec<&str> = files.iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(paths.contains(&"onnxrt") && paths.contains(&"onnxruntime/lib/libonnxruntime.so.1.16.2"), "{paths:?}");
    for f in files {
        assert_eq!(f["sha256"].as_str().map(str::len), Some(64), "{f}");
        assert!(f["size"].as_u64().is_some_and(|s| s > 0), "{f}");
    }

    // The bundled copy loads the bundled runtime with no environment at all.
    let bundled = out.join("onnxrt");
    let ran = run(Command::new("env").arg("-i").arg(&bundled).arg("version"));
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let library = ran.stdout.lines().find_map(|l| l.strip_prefix("library")).map(str::trim).expect("library line");
    let canonical_out = std::fs::canonicalize(&out).expect("canonical");
    assert!(Path::new(library).starts_with(&out) || Path::new(library).starts_with(&canonical_out), "{}", ran.both());
    assert!(ran.stdout.contains("the bundle beside the executable"), "{}", ran.both());

    // --check passes, then fails naming a file changed by one byte.
    let ran = onnxrt_with(&["bundle", "--check", out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let victim = lib.join("libonnxruntime.so.1.16.2");
    let mut bytes = std::fs::read(&victim).expect("read");
    bytes[1000] ^= 0xff;
    std::fs::write(&victim, bytes).expect("write");
    let ran = onnxrt_with(&["bundle", "--check", out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(
        ran.stdout.contains("CHANGED") && ran.stderr.contains("onnxruntime/lib/libonnxruntime.so.1.16.2 (changed)"),
        "{}",
        ran.both()
    );
    std::fs::remove_file(lib.join("libonnxruntime.so.1")).expect("remove link");
    let ran = onnxrt_with(&["bundle", "--check", out.to_str().expect("utf-8")]);
    assert!(ran.stderr.contains("libonnxruntime.so.1 (missing)"), "{}", ran.both());

    // An existing bundle is not overwritten without --force; with it, it is replaced whole.
    let ran = onnxrt_with(&["bundle", cli, out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("--force"), "{}", ran.both());
    let ran = onnxrt_with(&["bundle", cli, out.to_str().expect("utf-8"), "--force"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let ran = onnxrt_with(&["bundle", "--check", out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
}

#[test]
fn bundle_usage_and_missing_inputs() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let out = scratch.path().join("x");
    let ran = onnxrt_with(&["bundle", "/nonexistent/app", out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("/nonexistent/app is not a file"), "{}", ran.both());
    let ran = onnxrt_with(&["bundle", "only-one-arg"]);
    assert_eq!(ran.code, Some(2), "{}", ran.both());
    let ran = onnxrt_with(&["bundle", "--check", scratch.path().to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("bundle-manifest.json"), "{}", ran.both());
}
