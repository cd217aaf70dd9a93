//! The public byte-level API of `Value` that onnxrt-serve's batcher is built on:
//! `Value::zeros`, `host_bytes`, `host_bytes_mut`, `first_rows_mut`, `AsyncInput::into_held`,
//! collecting `Outputs`. Mostly adversarial: writing through a value that only borrows its
//! memory, shares it with an `IoBinding` or with a run's input must be refused or must not reach
//! the other memory.

use std::sync::Arc;

use onnxrt::{AsyncInput, ElementType, Error, MemoryInfo, Outputs, Value, ValueKind};
use onnxrt_tests::session;

#[test]
fn zeros_of_a_runtime_element_type() {
    let floats = Value::zeros(&[2, 3], ElementType::F32).expect("zeros");
    assert_eq!(floats.tensor_info().expect("info").shape, [2, 3]);
    assert!(floats.view::<f32>().expect("view").iter().all(|&x| x.to_bits() == 0));
    assert_eq!(floats.host_bytes().expect("bytes").len(), 24);
    let bools = Value::zeros(&[3], ElementType::Bool).expect("bool zeros");
    assert_eq!(bools.view::<bool>().expect("bools").as_slice(), Some(&[false, false, false][..]));
    let strings = Value::zeros(&[2], ElementType::String).expect("string zeros");
    assert_eq!(strings.strings().expect("strings"), ["", ""]);
    let mut empty = Value::zeros(&[0, 4], ElementType::I64).expect("empty");
    assert!(empty.host_bytes().expect("no bytes").is_empty());
    assert!(empty.host_bytes_mut().expect("no bytes").is_empty());
    assert!(empty.first_rows_mut(0).expect("no rows").host_bytes_mut().expect("no bytes").is_empty());
    let err = Value::zeros(&[2, -1], ElementType::F32).expect_err("negative dim");
    assert!(matches!(err, Error::BadShape { .. }), "{err}");
}

#[test]
fn host_bytes_round_trip_and_refusals() {
    let mut value = Value::from_vec(&[2], vec![1u16, 0x0302]).expect("u16");
    assert_eq!(value.host_bytes().expect("bytes"), [1, 0, 2, 3]);
    value.host_bytes_mut().expect("owned: writable").copy_from_slice(&[7, 0, 8, 0]);
    assert_eq!(value.view::<u16>().expect("view").as_slice(), Some(&[7u16, 8][..]));

    let strings = Value::from_strings(&[1], &["a"]).expect("strings");
    let err = strings.host_bytes().expect_err("strings have no byte layout");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let sequence = Value::sequence(vec![Value::scalar(1f32).expect("scalar")]).expect("sequence");
    let err = sequence.host_bytes().expect_err("not a tensor");
    assert!(matches!(err, Error::ValueKind { .. }), "{err}");
}

#[test]
fn a_borrowed_view_cannot_be_written() {
    let data = onnxrt::ndarray::arr1(&[1f32, 2.0, 3.0]);
    let mut value = Value::from_view(data.view()).expect("view");
    let err = value.host_bytes_mut().expect_err("borrowed for reading");
    assert!(matches!(err, Error::ReadOnlyValue { .. }), "{err}");
    let err = value.first_rows_mut(1).expect_err("borrowed for reading");
    assert!(matches!(err, Error::ReadOnlyValue { .. }), "{err}");
    assert_eq!(data.as_slice(), Some(&[1f32, 2.0, 3.0][..]), "the borrowed array is untouched");
}

#[test]
fn writing_a_bool_tensor_with_bad_bytes_is_caught_on_read() {
    let mut flags = Value::zeros(&[2], ElementType::Bool).expect("bools");
    flags.host_bytes_mut().expect("owned").copy_from_slice(&[1, 2]);
    let err = flags.view::<bool>().expect_err("2 is no bool");
    assert!(err.to_string().contains("bool"), "{err}");
}

#[test]
fn writing_a_run_output_never_reaches_its_input() {
    // identity: the output is the input; ORT may hand back the input's buffer, which the run
    // replaces by a copy before the caller sees it.
    let s = session("identity_f32.onnx");
    let input = Value::from_vec(&[2, 3], vec![1f32; 6]).expect("input");
    let mut outputs = s.run(&[("x", &input)]).expect("run");
    let mut output = outputs.take("y").expect("y");
    output.host_bytes_mut().expect("a run's output is the caller's").fill(0);
    assert!(output.view::<f32>().expect("out").iter().all(|&x| x == 0.0));
    assert!(input.view::<f32>().expect("in").iter().all(|&x| x == 1.0), "the input changed through the output");
}

#[test]
fn binding_outputs_cannot_be_written() {
    let s = session("identity_f32.onnx");
    let input = Value::from_vec(&[2, 3], vec![1f32; 6]).expect("input");
    let mut binding = s.io_binding().expect("binding");
    binding.bind_input("x", &input).expect("bind x");
    binding.bind_output_to_device("y", &MemoryInfo::cpu().expect("cpu")).expect("bind y");
    binding.run(None).expect("run");
    let mut outputs = binding.outputs().expect("outputs");
    let err = outputs[0].host_bytes_mut().expect_err("shares the binding's tensor");
    assert!(matches!(err, Error::ReadOnlyValue { .. }), "{err}");
    let err = outputs[0].first_rows_mut(1).expect_err("shares the binding's tensor");
    assert!(matches!(err, Error::ReadOnlyValue { .. }), "{err}");
    assert!(outputs[0].view::<f32>().expect("read").iter().all(|&x| x == 1.0));
}

#[test]
fn sequence_items_are_copies() {
    let sequence = Value::sequence(vec![Value::from_vec(&[2], vec![5i64, 6]).expect("member")]).expect("sequence");
    let mut items = sequence.sequence_items().expect("items");
    items[0].host_bytes_mut().expect("a copy of the caller's").fill(0);
    let again = sequence.sequence_items().expect("items again");
    assert_eq!(again[0].view::<i64>().expect("member").as_slice(), Some(&[5i64, 6][..]));
}

#[test]
fn first_rows_share_the_parent_buffer() {
    let mut buffer = Value::zeros(&[4, 2], ElementType::I32).expect("buffer");
    {
        let mut rows = buffer.first_rows_mut(3).expect("3 of 4 rows");
        assert_eq!(rows.tensor_info().expect("info").shape, [3, 2]);
        assert_eq!(rows.host_bytes().expect("bytes").len(), 24);
        rows.host_bytes_mut().expect("writable")[..4].copy_from_slice(&9i32.to_le_bytes());
        let mut fewer = rows.first_rows_mut(1).expect("rows of rows");
        fewer.host_bytes_mut().expect("writable")[4..8].copy_from_slice(&8i32.to_le_bytes());
    }
    let all = buffer.view::<i32>().expect("parent");
    assert_eq!(all.as_slice(), Some(&[9, 8, 0, 0, 0, 0, 0, 0][..]));

    let err = buffer.first_rows_mut(5).expect_err("only 4 rows");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    assert_eq!(buffer.first_rows_mut(0).expect("zero rows").tensor_info().expect("info").shape, [0, 2]);
    let mut scalar = Value::scalar(1f32).expect("scalar");
    let err = scalar.first_rows_mut(1).expect_err("no first axis");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let mut strings = Value::from_strings(&[2], &["a", "b"]).expect("strings");
    let err = strings.first_rows_mut(1).expect_err("strings have no byte layout");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}

#[test]
fn a_bound_output_over_first_rows_is_written_in_place() {
    // The batcher's pattern: a buffer of 4 rows, a run of 2 written into its first 2.
    let s = session("mlp.onnx");
    let x = Value::from_vec(&[2, 16], (0..32).map(|i| i as f32 / 32.0).collect()).expect("x");
    let expected = s.run(&[("x", &x)]).expect("plain run")[0].to_array::<f32>().expect("logits");
    let mut buffer = Value::zeros(&[4, 4], ElementType::F32).expect("buffer");
    {
        let mut rows = buffer.first_rows_mut(2).expect("rows");
        let mut binding = s.io_binding().expect("binding");
        binding.bind_input("x", &x).expect("bind x");
        binding.bind_output("logits", &mut rows).expect("bind the rows");
        binding.run(None).expect("run");
    }
    let got = buffer.view::<f32>().expect("buffer");
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(got.as_slice().expect("contiguous")[i].to_bits(), want.to_bits(), "element {i}");
    }
    assert!(got.as_slice().expect("contiguous")[8..].iter().all(|&v| v == 0.0), "rows past the run are untouched");
}

#[test]
fn held_inputs_keep_or_share_the_value() {
    let shared = Arc::new(Value::from_vec(&[2], vec![1f32, 2.0]).expect("value"));
    let held = ("x", Arc::clone(&shared)).into_held();
    assert_eq!(held.value().host_bytes().expect("bytes").as_ptr(), shared.host_bytes().expect("bytes").as_ptr());
    let owned = Value::from_vec(&[1], vec![3f32]).expect("value");
    let address = owned.host_bytes().expect("bytes").as_ptr();
    let held = ("y", owned).into_held();
    assert_eq!(held.value().host_bytes().expect("bytes").as_ptr(), address, "moved, not copied");
}

#[test]
fn owned_outputs_collected_by_hand_are_named() {
    let outputs: Outputs =
        [("a", Value::scalar(1f32).expect("a")), ("b", Value::scalar(2i64).expect("b"))].into_iter().collect();
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(outputs.get("b").expect("b").name(), Some("b"));
    assert_eq!(outputs[0].name(), Some("a"));
    let err = outputs.get("c").expect_err("no c");
    assert!(matches!(err, Error::UnknownOutput { .. }), "{err}");
}

#[test]
fn value_kinds_display_as_errors_name_them() {
    assert_eq!(ValueKind::Tensor.to_string(), "tensor");
    assert_eq!(ValueKind::SparseTensor.to_string(), "sparse tensor");
    assert_eq!(ValueKind::Other(9).to_string(), "value of ONNX type #9");
}

/// Without libcudart (a CPU machine) both refuse with the typed load error; with it, the
/// page-locked tensor behaves as `Value::zeros`.
#[cfg(feature = "cuda")]
#[test]
fn page_locked_zeros_and_device_count() {
    match Value::zeros_pinned(&[3, 2], ElementType::F32) {
        Ok(mut value) => {
            assert_eq!(value.host_bytes().expect("host memory").len(), 24);
            assert!(value.view::<f32>().expect("view").iter().all(|&x| x == 0.0));
            value.first_rows_mut(1).expect("rows").host_bytes_mut().expect("writable")[0] = 1;
            assert_eq!(value.host_bytes().expect("bytes")[0], 1);
            println!("zeros_pinned: page-locked through libcudart");
        }
        Err(err) => {
            assert!(matches!(err, Error::ProviderLoad { .. }), "{err}");
            println!("zeros_pinned: no libcudart here ({err})");
        }
    }
    let err = Value::zeros_pinned(&[1], ElementType::String).expect_err("strings");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    match onnxrt::providers::cuda::device_count() {
        Ok(count) => {
            assert!(count >= 0);
            println!("device_count: {count}");
        }
        Err(err) => assert!(matches!(err, Error::ProviderLoad { .. }), "{err}"),
    }
}

/// The crate's own CUDA memory and streams (`Value::zeros_cuda`, `CudaStream`, `Value::copy_from`)
/// on a machine without a GPU: every call is a typed error, and the checks that need no CUDA
/// come first. (On the GPU machine, `tests/tests/gpu.rs` runs them for real.)
#[cfg(feature = "cuda")]
#[test]
fn cuda_memory_and_streams_without_a_gpu_are_typed_errors() {
    use onnxrt::CudaStream;
    let err = Value::zeros_cuda(&[2], ElementType::F32, -1).expect_err("negative device");
    assert_eq!(err.variant(), "NoSuchDevice", "{err}");
    let err = Value::zeros_cuda(&[2], ElementType::String, 0).expect_err("strings");
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    let err = Value::zeros_cuda(&[-2], ElementType::F32, 0).expect_err("negative axis");
    assert_eq!(err.variant(), "BadShape", "{err}");
    let err = Value::zeros_cuda(&[i64::MAX, 4], ElementType::F64, 0).expect_err("too large");
    assert_eq!(err.variant(), "BadShape", "{err}");
    let err = CudaStream::new(-3).expect_err("negative device");
    assert_eq!(err.variant(), "NoSuchDevice", "{err}");
    match (Value::zeros_cuda(&[2, 3], ElementType::F32, 0), CudaStream::new(0)) {
        (Err(memory), Err(stream)) => {
            // No libcudart: the load error; libcudart without a GPU or driver: CUDA's own code.
            for err in [memory, stream] {
                assert!(matches!(err, Error::ProviderLoad { .. } | Error::Ort { .. }), "{err}");
            }
        }
        (Ok(mut device), Ok(stream)) => {
            // A machine with a GPU: the round trip that tests/tests/gpu.rs checks in depth.
            let host = Value::from_vec(&[2, 3], vec![1.5f32, 2.5, 3.5, 4.5, 5.5, 6.5]).expect("host");
            device.copy_from(&host, &stream).expect("to the device");
            let mut back = Value::zeros(&[2, 3], ElementType::F32).expect("zeros");
            back.copy_from(&device, &stream).expect("back to the host");
            assert_eq!(back.host_bytes().expect("bytes"), host.host_bytes().expect("bytes"));
        }
        (memory, stream) => panic!("CUDA half there: memory {:?}, stream {:?}", memory.err(), stream.err()),
    }
}

/// `Value::from_bytes`: a copy of the caller's bytes (not a view of them), every byte written
/// (the value is allocated without a zero-fill), and every way the bytes can disagree with the
/// shape or type refused before anything is allocated.
#[test]
fn from_bytes_copies_and_refuses_what_does_not_fit() {
    let mut source: Vec<u8> = (0..24u8).collect();
    let value = Value::from_bytes(&[2, 3], ElementType::F32, &source).expect("from bytes");
    source.iter_mut().for_each(|b| *b = 0xff);
    assert_eq!(value.host_bytes().expect("bytes"), &(0..24u8).collect::<Vec<_>>()[..], "a copy, not a view");
    let floats = value.view::<f32>().expect("view");
    assert_eq!(floats[[0, 1]], f32::from_le_bytes([4, 5, 6, 7]));
    for (element, size) in [(ElementType::U8, 1), (ElementType::I64, 8), (ElementType::F16, 2), (ElementType::F64, 8)] {
        let bytes: Vec<u8> = (0..(4 * size) as u8).collect();
        let value = Value::from_bytes(&[4], element, &bytes).expect("from bytes");
        assert_eq!(value.host_bytes().expect("bytes"), &bytes[..], "{element}");
    }
    let empty = Value::from_bytes(&[0, 3], ElementType::F32, &[]).expect("empty");
    assert_eq!(empty.tensor_info().expect("info").shape, [0, 3]);
    let bools = Value::from_bytes(&[3], ElementType::Bool, &[1, 0, 1]).expect("bools");
    assert_eq!(bools.view::<bool>().expect("view").iter().copied().collect::<Vec<_>>(), [true, false, true]);

    let short = Value::from_bytes(&[2, 3], ElementType::F32, &[0; 23]).expect_err("23 bytes");
    assert!(matches!(short, Error::InvalidArgument { .. }) && short.to_string().contains("24 bytes"), "{short}");
    let bad_bool = Value::from_bytes(&[2], ElementType::Bool, &[1, 2]).expect_err("bool 2");
    assert!(bad_bool.to_string().contains("element 1 = 2"), "{bad_bool}");
    let strings = Value::from_bytes(&[1], ElementType::String, &[0; 8]).expect_err("strings");
    assert!(strings.to_string().contains("from_strings"), "{strings}");
    assert_eq!(Value::from_bytes(&[-1], ElementType::U8, &[]).expect_err("negative").variant(), "BadShape");
    let huge = Value::from_bytes(&[i64::MAX, 2], ElementType::F32, &[]).expect_err("overflow");
    assert_eq!(huge.variant(), "BadShape");
}
