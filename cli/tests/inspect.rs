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

#[test]
fn nodes_are_listed_with_op_inputs_and_outputs() {
    let path = model("mlp.onnx");
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8"), "--nodes"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let list = ran.stdout.split("NODE LIST (3)\n").nth(1).unwrap_or_else(|| panic!("no node list: {}", ran.both()));
    let rows: Vec<Vec<&str>> = list.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["0", "(unnamed)", "Gemm", "x,", "w1,", "b1", "h"], "{list}");
    assert_eq!(rows[1], ["1", "(unnamed)", "Relu", "h", "h_relu"], "{list}");
    assert_eq!(rows[2], ["2", "(unnamed)", "Gemm", "h_relu,", "w2,", "b2", "logits"], "{list}");
    // Without --nodes, no list.
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8")]);
    assert!(!ran.stdout.contains("NODE LIST"), "{}", ran.both());
    let ran = onnxrt_with(&["inspect", path.to_str().expect("utf-8"), "--json", "--nodes"]);
    let v = json(&ran);
    assert_eq!(
        v["nodes"]["list"][1],
        serde_json::json!({"name": "", "op_type": "Relu", "inputs": ["h"], "outputs": ["h_relu"]})
    );
    assert_eq!(v["nodes"]["list"].as_array().map(Vec::len), Some(3));
}

/// `y = x + c` with `c` a `Constant` node's [2, 3] float tensor: weights outside the initializers.
fn constant_model() -> Vec<u8> {
    use onnxrt_onnx_proto::tensor_proto::DataType;
    use onnxrt_onnx_proto::type_proto::{Tensor, Value as TypeValue};
    use onnxrt_onnx_proto::{
        tensor_shape_proto::{dimension::Value as DimValue, Dimension},
        AttributeProto, GraphProto, Message, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto,
        TypeProto, ValueInfoProto,
    };
    let info = |name: &str| ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(TypeValue::TensorType(Tensor {
                elem_type: Some(DataType::Float as i32),
                shape: Some(TensorShapeProto {
                    dim: [2, 3]
                        .iter()
                        .map(|&d| Dimension { value: Some(DimValue::DimValue(d)), ..Default::default() })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    };
    let tensor = TensorProto {
        dims: vec![2, 3],
        data_type: Some(DataType::Float as i32),
        float_data: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        ..Default::default()
    };
    let constant = NodeProto {
        name: Some("weights".into()),
        op_type: Some("Constant".into()),
        output: vec!["c".into()],
        attribute: vec![AttributeProto {
            name: Some("value".into()),
            r#type: Some(onnxrt_onnx_proto::attribute_proto::AttributeType::Tensor as i32),
            t: Some(tensor),
            ..Default::default()
        }],
        ..Default::default()
    };
    let add = NodeProto {
        name: Some("add".into()),
        op_type: Some("Add".into()),
        input: vec!["x".into(), "c".into()],
        output: vec!["y".into()],
        ..Default::default()
    };
    let graph = GraphProto {
        name: Some("constant_weights".into()),
        node: vec![constant, add],
        input: vec![info("x")],
        output: vec![info("y")],
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: None, version: Some(17) }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn weights_in_constant_nodes_are_counted_and_none_is_said_plainly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("constant.onnx");
    std::fs::write(&path, constant_model()).expect("write");
    let path = path.to_str().expect("utf-8");
    let ran = onnxrt_with(&["inspect", path, "--nodes"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.contains("INITIALIZERS  none; 1 Constant node(s) hold 24 B more (24 bytes)"), "{}", ran.both());
    assert!(!ran.stdout.contains("0 (0 B, 0 bytes)"), "{}", ran.both());
    assert!(
        ran.stdout.contains("weights  Constant") && ran.stdout.contains("add      Add       x, c"),
        "{}",
        ran.both()
    );
    let v = json(&onnxrt_with(&["inspect", path, "--json"]));
    assert_eq!(
        (v["initializers"]["count"].as_u64(), v["initializers"]["constant_bytes"].as_u64()),
        (Some(0), Some(24))
    );
    // The model runs: a generated zero input plus the constant is the constant.
    let ran = onnxrt_with(&["run", path, "--fill", "zeros", "--repeat", "0"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.contains("[1, 2, 3, 4, 5, 6]"), "{}", ran.both());
}
