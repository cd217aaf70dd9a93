//! LoRA adapters per run (C API 20) on the real runtime: a model `y = x + w` whose `w` is an input
//! with a default (an initializer of zeros) runs with `w` from an adapter file only in the runs
//! whose options carry the adapter; the adapter outlives the caller's handle while options use
//! it; a file that is no adapter is ORT's error. On 1.16.2 each call is refused with
//! `Error::NeedsNewerRuntime`. The adapter file (`w = [1, 2, 3, 4]`) was written with ORT's own
//! Python API by tests/data/adapters/make_adapter.py.

use std::sync::Arc;

use onnxrt::lora::LoraAdapter;
use onnxrt::{Error, RunOptions, Session, Value};
use onnxrt_onnx_proto::{GraphProto, Message, ModelProto, OperatorSetIdProto, TensorProto};
use onnxrt_tests::proto::{node, tensor_info, FLOAT};

fn adapter_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/adapters/add_w.onnx_adapter")
}

/// `y = x + w`, `w` an input whose default is the initializer `w` = zeros (IR 8, opset 17).
fn add_w_model() -> Vec<u8> {
    let w = TensorProto {
        name: Some("w".into()),
        dims: vec![4],
        data_type: Some(FLOAT),
        float_data: vec![0.0; 4],
        ..Default::default()
    };
    let graph = GraphProto {
        node: vec![node("Add", &["x", "w"], &["y"], &[])],
        name: Some("add_w".into()),
        input: vec![tensor_info("x", FLOAT, &[4]), tensor_info("w", FLOAT, &[4])],
        output: vec![tensor_info("y", FLOAT, &[4])],
        initializer: vec![w],
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        producer_name: Some("onnxrt-tests".into()),
        graph: Some(graph),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        ..Default::default()
    }
    .encode_to_vec()
}

fn run(session: &Session, options: Option<&RunOptions>) -> Vec<f32> {
    let x = Value::from_array(ndarray::arr1(&[10f32, 20.0, 30.0, 40.0])).expect("x");
    let out = session.run_with(&[("x", &x)], &["y"], options).expect("run");
    out.get("y").expect("y").to_array::<f32>().expect("f32").iter().copied().collect()
}

#[test]
fn an_adapter_changes_only_the_runs_that_carry_it() {
    let adapter = LoraAdapter::from_file(adapter_path());
    if onnxrt::runtime_info().expect("runtime").api_level < 20 {
        assert!(matches!(adapter, Err(Error::NeedsNewerRuntime { needs: 20, .. })), "{adapter:?}");
        let bytes = LoraAdapter::from_bytes(&std::fs::read(adapter_path()).expect("file"));
        assert!(matches!(bytes, Err(Error::NeedsNewerRuntime { .. })), "{bytes:?}");
        return;
    }
    let adapter = Arc::new(adapter.expect("adapter"));
    let session = Session::builder().commit_from_memory(&add_w_model()).expect("session");
    assert_eq!(run(&session, None), [10.0, 20.0, 30.0, 40.0], "w defaults to zeros");
    let mut with = RunOptions::new().expect("options");
    with.add_lora_adapter(&adapter).expect("adapter added");
    drop(adapter); // the options keep it
    assert_eq!(run(&session, Some(&with)), [11.0, 22.0, 33.0, 44.0], "w from the adapter");
    assert_eq!(run(&session, Some(&RunOptions::new().expect("plain"))), [10.0, 20.0, 30.0, 40.0]);
    // From bytes too.
    let from_bytes = Arc::new(LoraAdapter::from_bytes(&std::fs::read(adapter_path()).expect("file")).expect("bytes"));
    let mut again = RunOptions::new().expect("options");
    again.add_lora_adapter(&from_bytes).expect("added");
    assert_eq!(run(&session, Some(&again)), [11.0, 22.0, 33.0, 44.0]);
}

#[test]
fn a_file_that_is_no_adapter_is_an_error() {
    if onnxrt::runtime_info().expect("runtime").api_level < 20 {
        return;
    }
    let model = onnxrt_tests::model("mlp.onnx");
    let error = LoraAdapter::from_file(model).expect_err("a model is no adapter");
    assert!(matches!(error, Error::Ort { .. }), "{error:?}");
    let error = LoraAdapter::from_bytes(b"TORT but not really").expect_err("garbage");
    assert!(matches!(error, Error::Ort { .. }), "{error:?}");
}
