//! `onnxrt compile` as a user runs it: on ONNX Runtime >= 1.22 (`ONNXRT_DIST=cpu-1.32.0-registry`)
//! the compiled model is written and `onnxrt run` loads it; on 1.16.2 the command fails (exit 1)
//! naming the runtime to use and writes nothing. Bad arguments are usage errors (exit 2).

mod common;

use common::{model, onnxrt_with};

/// The runtime's C API level as `onnxrt version` reports it (the CLI's own view of the runtime).
fn newer_than_1_21() -> bool {
    let ran = onnxrt_with(&["version"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    !ran.stdout.contains("ONNX Runtime 1.1")
        && !ran.stdout.contains("ONNX Runtime 1.20")
        && !ran.stdout.contains("ONNX Runtime 1.21")
}

#[test]
fn compiles_a_model_that_then_runs() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("mlp_ctx.onnx");
    let input = model("mlp.onnx");
    let ran = onnxrt_with(&["compile", input.to_str().expect("utf-8"), "-o", out.to_str().expect("utf-8"), "--embed"]);
    if !newer_than_1_21() {
        assert_eq!(ran.code, Some(1), "{}", ran.both());
        assert!(ran.stderr.contains("ONNXRT_DIST=cpu-1.32.0-registry"), "{}", ran.both());
        assert!(!out.exists(), "nothing written");
        return;
    }
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.contains("compiled"), "{}", ran.both());
    let run = onnxrt_with(&["run", out.to_str().expect("utf-8"), "--repeat", "0"]);
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert!(run.stdout.contains("logits"), "{}", run.both());
}

#[test]
fn bad_arguments_are_usage_errors_and_bad_models_write_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.onnx");
    let input = model("mlp.onnx");
    let no_output = onnxrt_with(&["compile", input.to_str().expect("utf-8")]);
    assert_eq!(no_output.code, Some(2), "{}", no_output.both());
    let bad_option = onnxrt_with(&["compile", input.to_str().expect("utf-8"), "-o", "x", "--option", "novalue"]);
    assert_eq!(bad_option.code, Some(2), "{}", bad_option.both());
    let truncated = model("bad_truncated.onnx");
    let ran = onnxrt_with(&["compile", truncated.to_str().expect("utf-8"), "-o", out.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(!out.exists(), "no half-written output");
}
