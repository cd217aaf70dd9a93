//! Outputs with a fixed declared shape are handed to ORT preallocated and recycled between runs
//! (`onnxrt/src/session/output_pool.rs`). These tests pin what a caller must never notice: held
//! outputs keep their values while later runs reuse other buffers, outputs outlive the session,
//! an output whose real shape differs from its declaration is still returned, and threads each
//! get their own buffers.

use std::sync::Arc;

use ndarray::{arr1, Array2};
use onnxrt::Value;
use onnxrt_onnx_proto::tensor_shape_proto::{dimension, Dimension};
use onnxrt_onnx_proto::{type_proto, TensorShapeProto, TypeProto, ValueInfoProto};
use onnxrt_tests::{builder, proto, session};

fn add(session: &onnxrt::Session, a: f32, b: f32) -> onnxrt::Outputs<'_> {
    let a = Value::from_array(Array2::from_elem((2, 3), a)).expect("a");
    let b = Value::from_array(Array2::from_elem((2, 3), b)).expect("b");
    session.run([("a", &a), ("b", &b)]).expect("run")
}

fn sum_of(outputs: &onnxrt::Outputs<'_>) -> Vec<f32> {
    outputs.get("sum").expect("sum").view::<f32>().expect("view").iter().copied().collect()
}

fn data_address(outputs: &onnxrt::Outputs<'_>) -> usize {
    outputs.get("sum").expect("sum").view::<f32>().expect("view").as_ptr() as usize
}

#[test]
fn held_outputs_keep_their_values_and_dropped_ones_are_reused() {
    let session = session("add_f32.onnx");
    let probe = add(&session, 1.0, 1.0);
    assert_eq!(sum_of(&probe), [2.0; 6]);
    drop(probe);
    let first = add(&session, 1.0, 2.0);
    let second = add(&session, 10.0, 20.0);
    // Both alive at once: two buffers, each with its own run's result.
    assert_ne!(data_address(&first), data_address(&second));
    assert_eq!(sum_of(&first), [3.0; 6]);
    assert_eq!(sum_of(&second), [30.0; 6]);
    let recycled = data_address(&second);
    drop(second);
    let third = add(&session, 100.0, 200.0);
    // The buffer of the dropped output is the next run's (the steady state allocates nothing).
    assert_eq!(data_address(&third), recycled);
    assert_eq!(sum_of(&third), [300.0; 6]);
    assert_eq!(sum_of(&first), [3.0; 6]);
}

#[test]
fn outputs_outlive_their_session() {
    let session = session("add_f32.onnx");
    let _probe = add(&session, 0.0, 0.0);
    let kept = add(&session, 4.0, 5.0).into_owned();
    drop(session);
    assert_eq!(
        kept.get("sum").expect("sum").view::<f32>().expect("view").iter().copied().collect::<Vec<_>>(),
        [9.0; 6]
    );
}

/// `y = Neg(x)` with `x: [n]` but `y` declared `[3]`: ORT only warns when `y` comes out longer.
fn declared_shorter_than_real() -> Vec<u8> {
    let dim = Dimension { value: Some(dimension::Value::DimParam("n".into())), denotation: None };
    let tensor = type_proto::Tensor { elem_type: Some(proto::FLOAT), shape: Some(TensorShapeProto { dim: vec![dim] }) };
    let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
    let x = ValueInfoProto { name: Some("x".into()), r#type: Some(ty), doc_string: None };
    let y = proto::tensor_info("y", proto::FLOAT, &[3]);
    proto::model(8, 17, &[proto::node("Neg", &["x"], &["y"], &[])], &[x], &[y])
}

#[test]
fn an_output_longer_than_declared_is_still_returned() {
    let session = builder().commit_from_memory(&declared_shorter_than_real()).expect("session");
    let neg = |values: Vec<f32>| -> Vec<f32> {
        let x = Value::from_array(arr1(&values)).expect("x");
        let outputs = session.run([("x", &x)]).expect("run");
        outputs.get("y").expect("y").view::<f32>().expect("view").iter().copied().collect()
    };
    // The probe and a run with the preallocated [3] output.
    assert_eq!(neg(vec![1.0, 2.0, 3.0]), [-1.0, -2.0, -3.0]);
    assert_eq!(neg(vec![4.0, 5.0, 6.0]), [-4.0, -5.0, -6.0]);
    // ORT refuses the [3] tensor for a [4] result; the run is repeated without preallocation.
    assert_eq!(neg(vec![1.0, 2.0, 3.0, 4.0]), [-1.0, -2.0, -3.0, -4.0]);
    assert_eq!(neg(vec![7.0, 8.0, 9.0]), [-7.0, -8.0, -9.0]);
    assert_eq!(neg(vec![1.0; 5]), [-1.0; 5]);
}

#[test]
fn threads_get_their_own_buffers() {
    let session = Arc::new(session("add_f32.onnx"));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let session = Arc::clone(&session);
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..500 {
                    let (a, b) = (t as f32, i as f32);
                    let outputs = add(&session, a, b).into_owned();
                    assert_eq!(outputs.get("sum").expect("sum").view::<f32>().expect("view")[[0, 0]], a + b);
                    // Keep a few alive so buffers are held, recycled and made new in turn.
                    held.push((a + b, outputs));
                    if held.len() > 3 {
                        let (expected, old) = held.remove(0);
                        assert!(old
                            .get("sum")
                            .expect("sum")
                            .view::<f32>()
                            .expect("view")
                            .iter()
                            .all(|&v| v == expected));
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
}
