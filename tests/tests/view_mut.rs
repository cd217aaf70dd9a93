//! `Value::view_mut`: a typed mutable view of a host tensor the value may write.
//! Adversarial: it must be refused wherever the memory belongs to someone else (a borrowed array,
//! an IoBinding's tensor), for another element type, and for a `bool` tensor whose bytes are not
//! 0 or 1; where it is allowed, what it writes is what the next run reads. Also under valgrind
//! in the test command.

use onnxrt::ndarray::{arr1, Array2};
use onnxrt::{ElementType, Error, MemoryInfo, Value};
use onnxrt_tests::session;

#[test]
fn writes_through_the_view_are_what_the_next_run_reads() {
    let s = session("identity_f32.onnx");
    let mut x = Value::from_array(Array2::<f32>::zeros((2, 3))).expect("x");
    for round in 1..=3 {
        x.view_mut::<f32>().expect("owned").fill(round as f32);
        let outputs = s.run(&[("x", &x)]).expect("run");
        let y = outputs.get("y").expect("y").view::<f32>().expect("f32");
        assert!(y.iter().all(|&v| v == round as f32), "round {round}: {y:?}");
    }
}

#[test]
fn a_borrowed_array_is_never_written() {
    let data = arr1(&[1f32, 2.0, 3.0]);
    let mut value = Value::from_view(data.view()).expect("view");
    let err = value.view_mut::<f32>().expect_err("borrowed for reading");
    assert!(matches!(err, Error::ReadOnlyValue { .. }), "{err}");
    assert_eq!(data.as_slice(), Some(&[1f32, 2.0, 3.0][..]));
}

#[test]
fn an_iobinding_output_is_never_written() {
    let s = session("identity_f32.onnx");
    let input = Value::from_vec(&[2, 3], vec![1f32; 6]).expect("input");
    let mut binding = s.io_binding().expect("binding");
    binding.bind_input("x", &input).expect("bind x");
    binding.bind_output_to_device("y", &MemoryInfo::cpu().expect("cpu")).expect("bind y");
    binding.run(None).expect("run");
    {
        let mut outputs = binding.outputs().expect("outputs");
        let err = outputs[0].view_mut::<f32>().expect_err("the binding's tensor");
        assert!(matches!(err, Error::ReadOnlyValue { .. }), "{err}");
    }
    binding.run(None).expect("run again");
    assert!(binding.outputs().expect("outputs")[0].view::<f32>().expect("read").iter().all(|&v| v == 1.0));
}

#[test]
fn another_element_type_or_a_non_tensor_is_refused() {
    let mut floats = Value::zeros(&[4], ElementType::F32).expect("zeros");
    let err = floats.view_mut::<i32>().expect_err("f32 is not i32");
    assert!(matches!(err, Error::ElementTypeMismatch { .. }), "{err}");
    let mut sequence = Value::sequence(vec![Value::scalar(1f32).expect("scalar")]).expect("sequence");
    let err = sequence.view_mut::<f32>().expect_err("not a tensor");
    assert!(matches!(err, Error::ValueKind { .. }), "{err}");
}

#[test]
fn bool_bytes_other_than_0_and_1_never_become_a_bool_reference() {
    let mut flags = Value::zeros(&[3], ElementType::Bool).expect("bools");
    flags.view_mut::<bool>().expect("valid bools")[1] = true;
    assert_eq!(flags.view::<bool>().expect("read").as_slice(), Some(&[false, true, false][..]));
    flags.host_bytes_mut().expect("owned").copy_from_slice(&[0, 7, 1]);
    let err = flags.view_mut::<bool>().expect_err("7 is no bool");
    assert!(err.to_string().contains("bool"), "{err}");
}

#[test]
fn rows_cut_from_a_batch_write_into_the_batch_only() {
    let mut batch = Value::zeros(&[4, 2], ElementType::I64).expect("batch");
    {
        let mut rows = batch.first_rows_mut(2).expect("two rows");
        rows.view_mut::<i64>().expect("rows are writable").fill(9);
    }
    let all = batch.view::<i64>().expect("read");
    assert_eq!(all.iter().copied().collect::<Vec<_>>(), [9, 9, 9, 9, 0, 0, 0, 0]);
}

#[test]
fn an_empty_tensor_gives_an_empty_view() {
    let mut empty = Value::zeros(&[0, 3], ElementType::F32).expect("empty");
    assert_eq!(empty.view_mut::<f32>().expect("empty view").shape(), [0, 3]);
}
