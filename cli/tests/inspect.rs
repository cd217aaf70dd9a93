//! `onnxrt inspect` on the test models, as a user runs it.

mod common;

use common::{json, model, onnxrt_with};

#[test]
fn dynamic_batch_shows_symbolic_dims_metadata_and_operators() {
    let path = model("dynamic_batch.onnx");
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    for expected in
        ["images", "batch", "[batch, 3, 4, 4]", "onnxrt-tests", "ReduceMean", "ai.onnxrt.test", "author=onnxrt"]
    {
        assert!(ran.stdout.contains(expected), "missing {expected:?}:\n{}", ran.both());
    }

    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path"), "--json"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let v = json(&ran);
    assert_eq!(v["inputs"][0]["name"], "images");
    assert_eq!(v["inputs"][0]["type"], "f32");
    assert_eq!(v["inputs"][0]["shape"], serde_json::json!(["batch", 3, 4, 4]));
    assert_eq!(v["outputs"][0]["shape"], serde_json::json!(["batch", 3]));
    let m = &v["metadata"];
    assert_eq!(m["producer"], "onnxrt-tests");
    assert_eq!(m["producer_version"], "1.0");
    assert_eq!(m["graph_name"], "dynamic_batch");
    assert_eq!(m["domain"], "ai.onnxrt.test");
    assert_eq!(m["description"], "NCHW mean pool");
    assert_eq!(m["version"], 7);
    assert_eq!(m["custom"]["author"], "onnxrt");
    assert_eq!(m["custom"]["purpose"], "tests");
    assert_eq!(v["opsets"][0]["domain"], "ai.onnx");
    assert_eq!(v["opsets"][0]["version"], 17);
    assert_eq!(v["nodes"]["by_op_type"]["ReduceMean"], 1);
}

#[test]
fn mlp_counts_nodes_and_initializer_bytes() {
    let path = model("mlp.onnx");
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path"), "--json"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let v = json(&ran);
    assert_eq!(v["nodes"]["by_op_type"]["Gemm"], 2);
    assert_eq!(v["nodes"]["by_op_type"]["Relu"], 1);
    assert_eq!(v["nodes"]["total"], 3);
    // Two Gemm layers: W1 [16, 32], b1 [32], W2 [32, 4], b2 [4], all f32.
    assert_eq!(v["initializers"]["count"], 4);
    assert_eq!(v["initializers"]["bytes"], (16 * 32 + 32 + 32 * 4 + 4) * 4);
    // A model without model_version says so instead of showing ORT's i64::MAX sentinel.
    assert!(v["metadata"]["version"].is_null(), "{}", v["metadata"]);

    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path")]);
    assert!(ran.stdout.contains("Gemm") && ran.stdout.contains("2704 bytes"), "{}", ran.both());
}

#[test]
fn a_missing_file_is_exit_1_with_the_path() {
    let ran = onnxrt_with(&["inspect", "/nonexistent/model.onnx"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("/nonexistent/model.onnx") && ran.stderr.contains("No such file"), "{}", ran.both());
    assert!(ran.stdout.is_empty(), "{}", ran.both());
}

#[test]
fn a_truncated_model_is_exit_1_saying_so() {
    let path = model("bad_truncated.onnx");
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("bad_truncated.onnx is not a readable ONNX model"), "{}", ran.both());
    assert!(ran.stderr.contains("truncated"), "{}", ran.both());
}

#[test]
fn usage_mistakes_are_exit_2_and_help_documents_exit_codes() {
    for args in [&["inspect"][..], &["inspect", "a", "b"], &["inspect", "m.onnx", "--bogus"], &["frobnicate"], &[]] {
        let ran = onnxrt_with(args);
        assert_eq!(ran.code, Some(2), "{args:?}: {}", ran.both());
        assert!(ran.stderr.contains("usage"), "{args:?}: {}", ran.both());
    }
    let ran = onnxrt_with(&["--help"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    for expected in ["EXIT STATUS", "0  success", "1  a command or check failed", "2  usage error"] {
        assert!(ran.stdout.contains(expected), "{}", ran.both());
    }
    let ran = onnxrt_with(&["run", "--help"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.contains("--provider"), "{}", ran.both());
}

#[test]
fn a_model_the_runtime_refuses_still_shows_its_ir_version_and_opsets() {
    let path = model("opset_too_new.onnx");
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stdout.contains("ir version  10") && ran.stdout.contains("ai.onnx 21"), "{}", ran.both());
    assert!(ran.stderr.contains("Fix:"), "{}", ran.both());
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8 path"), "--json"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let v = json(&ran);
    assert_eq!(v["ir_version"], 10);
    assert!(v["inputs"].is_null() && v["runtime_error"].as_str().is_some_and(|e| e.contains("IR version")), "{v}");
}
