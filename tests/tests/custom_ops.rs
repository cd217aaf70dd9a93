//! Loading a custom-operator library (`SessionBuilder::custom_op_library`): a real library built
//! from `custom_op/add_one.c` by build.rs, registering `ai.onnxrt.test::AddOne`.

use std::path::Path;

use onnxrt::{Session, Value};

const LIBRARY: &str = concat!(env!("OUT_DIR"), "/libonnxrt_test_add_one.so");

fn model(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models").join(name)
}

#[test]
fn a_custom_op_library_runs_its_operator() {
    // SAFETY: LIBRARY is built by build.rs from custom_op/add_one.c, which registers one kernel
    // that reads its float input and writes its whole output.
    let builder = unsafe { Session::builder().custom_op_library(LIBRARY) };
    let session = builder.commit_from_file(model("custom_add_one.onnx")).expect("session with the custom op");
    let x = Value::from_vec(&[4], vec![1.0f32, -2.0, 0.5, 10.0]).expect("input");
    let outputs = session.run(&[("x", &x)]).expect("run");
    let y: Vec<f32> = outputs[0].view::<f32>().expect("f32").iter().copied().collect();
    assert_eq!(y, [2.0, -1.0, 1.5, 11.0]);
}

#[test]
fn without_the_library_the_custom_domain_is_an_ort_error() {
    let err = Session::builder().commit_from_file(model("custom_add_one.onnx")).expect_err("unknown domain");
    let text = err.to_string();
    assert!(matches!(err, onnxrt::Error::Ort { .. }), "{err:?}");
    assert!(text.contains("AddOne") || text.contains("ai.onnxrt.test"), "{text}");
}
