//! Round trips of the 8-bit float types and of optional values / empty sequences, checked
//! against the reference values in the ONNX backend test data (the `onnx` Python package's
//! `node/test_cast_*FLOAT8*` cases) and through real models on the real runtime.
//!
//! Without the data (no `onnx` package) the data-driven tests print `skipped` and pass, as
//! `conformance.rs` does.

use onnxrt::{ElementType, F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, Session, Value, ValueKind, ValueType, F8E5M2};
use onnxrt_testdata::{elem_type as et, load_value, onnx_backend_data_dir, TensorData, TestValue, TypeKind};

/// The tensor in `node/<case>/test_data_set_0/<file>`.
fn reference(case: &str, file: &str) -> Option<onnxrt_testdata::Tensor> {
    let root = onnx_backend_data_dir()?;
    let path = root.join("node").join(case).join("test_data_set_0").join(file);
    match load_value(&path, TypeKind::Unknown).expect("reference data decodes") {
        TestValue::Tensor(t) => Some(t),
        other => panic!("{case}/{file} is not a tensor: {other:.40?}"),
    }
}

fn f32s(t: &onnxrt_testdata::Tensor) -> Vec<f32> {
    match &t.data {
        TensorData::F32(v) => v.clone(),
        other => panic!("float32 data expected, got type {}", other.elem_type()),
    }
}

fn float8_bits(t: &onnxrt_testdata::Tensor, expected_type: i32) -> Vec<u8> {
    match &t.data {
        TensorData::Float8 { elem_type, bits } if *elem_type == expected_type => bits.clone(),
        other => panic!("float8 type {expected_type} expected, got type {}", other.elem_type()),
    }
}

/// Same value, NaN equal to NaN (whatever its sign or payload), -0 distinct from +0.
fn same(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Our f32 -> float8 conversion gives the reference's encodings for `Cast` (saturating and not),
/// and our float8 -> f32 gives the reference's floats.
fn check_format(suffix: &str, code: i32, encode: fn(f32, bool) -> u8, decode: fn(u8) -> f32) -> usize {
    let mut checked = 0;
    for (saturate, prefix) in [(true, "test_cast_"), (false, "test_cast_no_saturate_")] {
        let case = format!("{prefix}FLOAT_to_{suffix}");
        let (Some(input), Some(output)) = (reference(&case, "input_0.pb"), reference(&case, "output_0.pb")) else {
            return checked;
        };
        let expected = float8_bits(&output, code);
        for (x, &want) in f32s(&input).into_iter().zip(&expected) {
            let got = encode(x, saturate);
            assert!(
                same(decode(got), decode(want)),
                "{case}: {x} -> {got:#04x} ({}), reference {want:#04x} ({})",
                decode(got),
                decode(want)
            );
            checked += 1;
        }
    }
    let case = format!("test_cast_{suffix}_to_FLOAT");
    if let (Some(input), Some(output)) = (reference(&case, "input_0.pb"), reference(&case, "output_0.pb")) {
        for (&b, want) in float8_bits(&input, code).iter().zip(f32s(&output)) {
            assert!(same(decode(b), want), "{case}: {b:#04x} -> {}, reference {want}", decode(b));
            checked += 1;
        }
    }
    checked
}

#[test]
fn float8_conversions_match_the_onnx_reference_values() {
    if onnx_backend_data_dir().is_none() {
        println!("skipped: no ONNX backend test data (pip install onnx==1.14.1)");
        return;
    }
    fn pick<T>(saturate: bool, x: f32, sat: fn(f32) -> T, unsat: fn(f32) -> T) -> T {
        if saturate {
            sat(x)
        } else {
            unsat(x)
        }
    }
    let checked = check_format(
        "FLOAT8E4M3FN",
        et::FLOAT8E4M3FN,
        |x, s| pick(s, x, F8E4M3Fn::from_f32, F8E4M3Fn::from_f32_unsaturated).to_bits(),
        |b| F8E4M3Fn::from_bits(b).to_f32(),
    ) + check_format(
        "FLOAT8E4M3FNUZ",
        et::FLOAT8E4M3FNUZ,
        |x, s| pick(s, x, F8E4M3Fnuz::from_f32, F8E4M3Fnuz::from_f32_unsaturated).to_bits(),
        |b| F8E4M3Fnuz::from_bits(b).to_f32(),
    ) + check_format(
        "FLOAT8E5M2",
        et::FLOAT8E5M2,
        |x, s| pick(s, x, F8E5M2::from_f32, F8E5M2::from_f32_unsaturated).to_bits(),
        |b| F8E5M2::from_bits(b).to_f32(),
    ) + check_format(
        "FLOAT8E5M2FNUZ",
        et::FLOAT8E5M2FNUZ,
        |x, s| pick(s, x, F8E5M2Fnuz::from_f32, F8E5M2Fnuz::from_f32_unsaturated).to_bits(),
        |b| F8E5M2Fnuz::from_bits(b).to_f32(),
    );
    println!("{checked} reference conversions matched");
    assert_eq!(checked, 4 * 3 * 12, "every reference case has 12 values");
}

/// Float8 tensors go into ORT and come back unchanged, through the model of
/// `test_cast_FLOAT8E4M3FN_to_FLOAT` (ORT's own decoding must agree with ours) and a view.
#[test]
fn float8_tensors_round_trip_through_ort() {
    let Some(root) = onnx_backend_data_dir() else {
        println!("skipped: no ONNX backend test data");
        return;
    };
    let every: Vec<F8E4M3Fn> = (0..=255u8).map(F8E4M3Fn::from_bits).collect();
    let value = Value::from_vec(&[16, 16], every.clone()).expect("a float8 tensor");
    assert_eq!(value.tensor_info().expect("info").element_type, ElementType::F8E4M3Fn);
    assert_eq!(value.view::<F8E4M3Fn>().expect("view").iter().copied().collect::<Vec<_>>(), every);
    assert!(matches!(value.view::<u8>(), Err(onnxrt::Error::ReadTypeMismatch { .. })));

    let model = root.join("node/test_cast_FLOAT8E4M3FN_to_FLOAT/model.onnx");
    let session = Session::builder().intra_op_threads(1).commit_from_file(model).expect("session");
    assert_eq!(session.inputs()[0].element_type, Some(ElementType::F8E4M3Fn));
    let name = session.inputs()[0].name.clone();
    // The model takes [3, 4]: every encoding, twelve at a time (the last window wraps around).
    for start in (0..256).step_by(12) {
        let window: Vec<F8E4M3Fn> = (start..start + 12).map(|i| every[i % 256]).collect();
        let input = ndarray::Array2::from_shape_vec((3, 4), window.clone()).expect("array");
        let view = Value::from_view(input.view()).expect("a borrowed float8 tensor");
        let outputs = session.run([(name.as_str(), &view)]).expect("runs");
        let floats = outputs[0].view::<f32>().expect("f32 output");
        for (x, &y) in window.iter().zip(floats.iter()) {
            assert!(same(x.to_f32(), y), "{x:?}: ORT says {y}");
        }
    }
}

/// Absent optionals and empty sequences: made, recognised, read back through real models.
#[test]
fn optionals_and_empty_sequences() {
    let none = Value::none(ValueType::Sequence(ElementType::F32)).expect("an absent optional");
    assert!(none.is_none().expect("HasValue"));
    assert_eq!(none.kind().expect("kind"), ValueKind::Optional);
    assert!(none.into_optional().expect("optional").is_none());
    let present = Value::scalar(3i64).expect("scalar");
    assert!(!present.is_none().expect("HasValue"));
    assert!(present.into_optional().expect("optional").is_some());

    for t in [ElementType::F32, ElementType::I64, ElementType::String, ElementType::Bool] {
        let empty = Value::empty_sequence(t).expect("an empty sequence");
        assert_eq!(empty.kind().expect("kind"), ValueKind::Sequence);
        assert!(empty.sequence_items().expect("members").is_empty());
    }
    assert!(matches!(Value::empty_sequence(ElementType::Unknown(99)), Err(onnxrt::Error::InvalidArgument { .. })));

    let Some(root) = onnx_backend_data_dir() else {
        println!("skipped: no ONNX backend test data");
        return;
    };
    // optional(seq(tensor(int32))) input: metadata, a present sequence goes in, comes out.
    let model = root.join("node/test_optional_get_element_optional_sequence/model.onnx");
    let session = Session::builder().intra_op_threads(1).commit_from_file(model).expect("session");
    let input = &session.inputs()[0];
    assert_eq!(
        (input.kind, input.contains, input.element_type),
        (ValueKind::Optional, Some(ValueKind::Sequence), Some(ElementType::I32))
    );
    let member = Value::from_vec(&[4], vec![1i32, 2, 3, 4]).expect("member");
    let sequence = Value::sequence(vec![member]).expect("sequence");
    let outputs = session.run([(input.name.as_str(), &sequence)]).expect("a present optional runs");
    let items = outputs[0].sequence_items().expect("a sequence comes back");
    assert_eq!(items[0].view::<i32>().expect("i32").as_slice(), Some(&[1, 2, 3, 4][..]));

    // An absent optional input is left out of the run (ORT crashes on a None value as an input);
    // `OptionalGetElement` of nothing is then ORT's own error.
    let none = Value::none(ValueType::Sequence(ElementType::I32)).expect("none");
    let refused = session.run([(input.name.as_str(), &none)]);
    assert!(matches!(refused, Err(onnxrt::Error::Ort { .. })), "{refused:?}");

    // A model whose output is optional: test_if_opt returns None from its then-branch and a
    // one-tensor sequence from its else-branch.
    let model = root.join("node/test_if_opt/model.onnx");
    let session = Session::builder().intra_op_threads(1).commit_from_file(model).expect("session");
    assert_eq!(session.outputs()[0].kind, ValueKind::Optional);
    let cond_name = session.inputs()[0].name.clone();
    for (cond, absent) in [(true, true), (false, false)] {
        let cond = Value::scalar(cond).expect("cond");
        let mut outputs = session.run([(cond_name.as_str(), &cond)]).expect("runs").into_values();
        let output = outputs.pop().expect("one output");
        assert_eq!(output.is_none().expect("HasValue"), absent);
        match output.into_optional().expect("optional") {
            None => assert!(absent),
            Some(present) => assert_eq!(present.sequence_items().expect("a sequence").len(), 1),
        }
    }

    // An empty typed sequence as a model input: test_loop13_seq.
    let model = root.join("node/test_loop13_seq/model.onnx");
    let session = Session::builder().intra_op_threads(1).commit_from_file(model).expect("session");
    let seq_input = session.inputs().iter().find(|i| i.kind == ValueKind::Sequence).expect("a sequence input");
    assert_eq!(seq_input.element_type, Some(ElementType::F32));
}

/// IoBinding takes float8 inputs and outputs like any other element type: `Cast` to E5M2FNUZ
/// with the output bound to a preallocated float8 tensor.
#[test]
fn float8_through_io_binding() {
    let Some(root) = onnx_backend_data_dir() else {
        println!("skipped: no ONNX backend test data");
        return;
    };
    let case = root.join("node/test_cast_FLOAT_to_FLOAT8E5M2FNUZ");
    let session = Session::builder().intra_op_threads(1).commit_from_file(case.join("model.onnx")).expect("session");
    assert_eq!(session.outputs()[0].element_type, Some(ElementType::F8E5M2Fnuz));
    let input = reference("test_cast_FLOAT_to_FLOAT8E5M2FNUZ", "input_0.pb").expect("input");
    let expected = reference("test_cast_FLOAT_to_FLOAT8E5M2FNUZ", "output_0.pb").expect("output");
    let x = Value::from_vec(&input.dims, f32s(&input)).expect("input value");
    let mut y = Value::from_vec(&expected.dims, vec![F8E5M2Fnuz::from_bits(0); 12]).expect("output buffer");
    let (input_name, output_name) = (session.inputs()[0].name.clone(), session.outputs()[0].name.clone());
    {
        let mut binding = session.io_binding().expect("binding");
        binding.bind_input(&input_name, &x).expect("float8 input binds");
        binding.bind_output(&output_name, &mut y).expect("float8 output binds");
        binding.run(None).expect("runs");
    }
    let got: Vec<u8> = y.view::<F8E5M2Fnuz>().expect("view").iter().map(|v| v.to_bits()).collect();
    let want = float8_bits(&expected, et::FLOAT8E5M2FNUZ);
    for (g, w) in got.iter().zip(&want) {
        let (g, w) = (F8E5M2Fnuz::from_bits(*g).to_f32(), F8E5M2Fnuz::from_bits(*w).to_f32());
        assert!(same(g, w), "ORT wrote {g}, reference {w}");
    }
    // A float8 buffer of the wrong format is refused before ORT sees it.
    let mut wrong = Value::from_vec(&expected.dims, vec![F8E5M2::from_bits(0); 12]).expect("buffer");
    let mut binding = session.io_binding().expect("binding");
    assert!(matches!(binding.bind_output(&output_name, &mut wrong), Err(onnxrt::Error::ElementTypeMismatch { .. })));
}
