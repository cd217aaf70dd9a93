//! Values: every element type through an Identity model, strings, invalid shapes and data,
//! sequences and maps in and out, and typed reading.

use std::collections::BTreeMap;
use std::fmt::Debug;

use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use onnxrt::{Element, ElementType, Error, Value, ValueKind};
use onnxrt_tests::session;

const SHAPE: [i64; 2] = [2, 3];

/// Sends `data` (shape [2, 3]) through `identity_<suffix>.onnx` and checks the output is the
/// input, element for element, with `same` deciding equality (bitwise for floats).
fn round_trip<T: Element + Debug>(suffix: &str, data: Vec<T>, same: fn(&T, &T) -> bool) {
    let s = session(&format!("identity_{suffix}.onnx"));
    assert_eq!(s.inputs()[0].element_type, Some(T::TYPE), "{suffix}");
    let input = Value::from_vec(&SHAPE, data.clone()).expect("input tensor");
    let info = input.tensor_info().expect("input info");
    assert_eq!(info.element_type, T::TYPE);
    assert_eq!(info.shape, SHAPE);
    let outputs = s.run(&[("x", &input)]).expect("identity runs");
    let output = &outputs[0];
    assert_eq!(output.kind().expect("kind"), ValueKind::Tensor);
    let info = output.tensor_info().expect("output info");
    assert_eq!(info.element_type, T::TYPE, "{suffix}: element type");
    assert_eq!(info.shape, SHAPE, "{suffix}: shape");
    let got = output.view::<T>().expect("typed view");
    assert_eq!(got.shape(), [2, 3]);
    for (i, (g, d)) in got.iter().zip(&data).enumerate() {
        assert!(same(g, d), "{suffix}: element {i} came back as {g:?}, sent {d:?}");
    }
    let owned: ArrayD<T> = output.to_array().expect("to_array");
    assert_eq!(owned.len(), data.len());
}

fn eq<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

#[test]
fn identity_round_trip_floats() {
    round_trip("f32", vec![0.0f32, -0.0, f32::MIN_POSITIVE / 2.0, f32::INFINITY, f32::NAN, -123.456], |a, b| {
        a.to_bits() == b.to_bits()
    });
    round_trip("f64", vec![0.1f64, -0.0, f64::MAX, f64::NEG_INFINITY, f64::NAN, 5e-324], |a, b| {
        a.to_bits() == b.to_bits()
    });
    round_trip("f16", [0.5f32, -0.0, 65504.0, 6e-8, f32::NAN, -2.25].map(f16::from_f32).to_vec(), |a, b| {
        a.to_bits() == b.to_bits()
    });
    round_trip("bf16", [1.0f32, -0.0, 3.0e38, 1e-40, f32::INFINITY, -7.5].map(bf16::from_f32).to_vec(), |a, b| {
        a.to_bits() == b.to_bits()
    });
}

#[test]
fn identity_round_trip_integers_and_bool() {
    round_trip("i8", vec![i8::MIN, -1, 0, 1, 42, i8::MAX], eq);
    round_trip("i16", vec![i16::MIN, -300, 0, 1, 3000, i16::MAX], eq);
    round_trip("i32", vec![i32::MIN, -70_000, 0, 1, 1 << 30, i32::MAX], eq);
    round_trip("i64", vec![i64::MIN, -(1 << 53) - 1, 0, 1, 1 << 60, i64::MAX], eq);
    round_trip("u8", vec![0u8, 1, 127, 128, 200, u8::MAX], eq);
    round_trip("u16", vec![0u16, 1, 255, 256, 40_000, u16::MAX], eq);
    round_trip("u32", vec![0u32, 1, 65_536, 1 << 31, 4_000_000_000, u32::MAX], eq);
    round_trip("u64", vec![0u64, 1, 1 << 32, 1 << 63, (1 << 53) + 1, u64::MAX], eq);
    round_trip("bool", vec![true, false, false, true, true, false], eq);
}

#[test]
fn identity_round_trip_strings_with_utf8() {
    let s = session("identity_string.onnx");
    assert_eq!(s.inputs()[0].element_type, Some(ElementType::String));
    let strings = ["plain", "", "héllo wörld", "日本語のテキスト", "emoji 🦀🎉", "tab\tnew\nline \u{7f}"];
    let input = Value::from_strings(&SHAPE, &strings).expect("string tensor");
    assert_eq!(input.tensor_info().expect("info").element_type, ElementType::String);
    let outputs = s.run(&[("x", &input)]).expect("identity runs");
    let info = outputs[0].tensor_info().expect("info");
    assert_eq!(info.element_type, ElementType::String);
    assert_eq!(info.shape, SHAPE);
    assert_eq!(outputs[0].strings().expect("utf-8"), strings);
    let bytes: Vec<&[u8]> = strings.iter().map(|s| s.as_bytes()).collect();
    assert_eq!(outputs[0].string_bytes().expect("bytes"), bytes);
    // A string tensor is not readable as numbers, and numbers not as strings.
    let error = outputs[0].view::<u8>().expect_err("strings are not u8");
    assert!(matches!(error, Error::ReadTypeMismatch { holds: ElementType::String, requested: ElementType::U8, .. }));
    assert_eq!(error.to_string(), "output `y` holds string elements; read it with strings() or string_bytes(), not u8");
}

#[test]
fn string_normalizer_upper_cases() {
    let s = session("strings.onnx");
    let text = ["hello", "World", "MiXeD 123", "x"];
    let input = Value::from_strings(&[4], &text).expect("strings");
    let outputs = s.run(&[("text", &input)]).expect("runs");
    let expected: Vec<String> = text.iter().map(|t| t.to_ascii_uppercase()).collect();
    assert_eq!(outputs[0].strings().expect("utf-8"), expected);
}

#[test]
fn strings_with_nul_are_refused() {
    match Value::from_strings(&[3], &["fine", "bad\0byte", "also\0bad"]) {
        Err(Error::InvalidString { index, why }) => {
            assert_eq!(index, 1, "the first offending string");
            assert!(why.contains("NUL"), "{why}");
        }
        other => panic!("expected InvalidString, got {other:?}"),
    }
    let message = Value::from_strings(&[1], &["\0"]).expect_err("NUL").to_string();
    assert!(message.contains("#0") && message.contains("NUL"), "{message}");
    match Value::from_strings(&[2, 2], &["a", "b", "c"]) {
        Err(Error::DataLength { shape, expected, got }) => {
            assert_eq!((shape, expected, got), (vec![2, 2], 4, 3));
        }
        other => panic!("expected DataLength, got {other:?}"),
    }
}

#[test]
fn wrong_data_length() {
    match Value::from_vec(&[2, 3], vec![1.0f32; 5]) {
        Err(Error::DataLength { shape, expected, got }) => assert_eq!((shape, expected, got), (vec![2, 3], 6, 5)),
        other => panic!("expected DataLength, got {other:?}"),
    }
    let message = Value::from_vec(&[4], vec![0u8; 7]).expect_err("7 bytes for 4").to_string();
    assert!(message.contains("[4]") && message.contains("4 elements") && message.contains('7'), "{message}");
    // A scalar needs exactly one element.
    assert!(matches!(Value::from_vec::<i32>(&[], Vec::new()), Err(Error::DataLength { expected: 1, got: 0, .. })));
}

#[test]
fn bad_shapes() {
    match Value::from_vec(&[2, -1], vec![0.0f32; 2]) {
        Err(Error::BadShape { shape, why }) => {
            assert_eq!(shape, [2, -1]);
            assert!(why.contains("negative"), "{why}");
        }
        other => panic!("expected BadShape for a negative dimension, got {other:?}"),
    }
    match Value::from_vec(&[i64::MAX, 4], vec![0.0f32; 4]) {
        Err(Error::BadShape { shape, why }) => {
            assert_eq!(shape, [i64::MAX, 4]);
            assert!(why.contains("overflow"), "{why}");
        }
        other => panic!("expected BadShape for an overflowing shape, got {other:?}"),
    }
    assert!(matches!(Value::from_strings(&[-3], &["a"]), Err(Error::BadShape { .. })));
    assert!(matches!(Value::from_vec::<i64>(&[-1], Vec::new()), Err(Error::BadShape { .. })));
}

#[test]
fn sequence_output() {
    let s = session("sequence.onnx");
    let a = vec![1.0f32, 2.5, -3.0];
    let b = vec![4.0f32, 0.0, 6.75];
    let va = Value::from_vec(&[3], a.clone()).expect("a");
    let vb = Value::from_vec(&[3], b.clone()).expect("b");
    let outputs = s.run(&[("a", &va), ("b", &vb)]).expect("runs");
    let seq = &outputs[0];
    assert_eq!(seq.kind().expect("kind"), ValueKind::Sequence);
    assert!(matches!(seq.tensor_info(), Err(Error::ValueKind { .. })));
    let items = seq.sequence_items().expect("sequence items");
    assert_eq!(items.len(), 2);
    for (item, expected) in items.iter().zip([a, b]) {
        assert_eq!(
            item.to_array::<f32>().expect("f32 tensor"),
            ArrayD::from_shape_vec(IxDyn(&[3]), expected).expect("shape")
        );
    }
    // A tensor is not a sequence.
    assert!(matches!(va.sequence_items(), Err(Error::ValueKind { .. })));
}

#[test]
fn sequence_input() {
    let s = session("sequence_len.onnx");
    assert_eq!(s.inputs()[0].kind, ValueKind::Sequence);
    let members = vec![
        Value::from_vec(&[2], vec![1.0f32, 2.0]).expect("t0"),
        Value::from_vec(&[0], Vec::<f32>::new()).expect("t1"),
        Value::from_vec(&[2, 2], vec![0.5f32; 4]).expect("t2"),
    ];
    let seq = Value::sequence(members).expect("sequence of 3 tensors");
    assert_eq!(seq.kind().expect("kind"), ValueKind::Sequence);
    assert_eq!(seq.sequence_items().expect("items").len(), 3);
    let outputs = s.run(&[("seq", &seq)]).expect("runs");
    let len = outputs[0].to_array::<i64>().expect("i64");
    assert_eq!(len.ndim(), 0);
    assert_eq!(len.iter().copied().collect::<Vec<_>>(), [3]);

    // A tensor where a sequence is declared is refused before ORT sees it.
    let tensor = Value::from_vec(&[1], vec![1.0f32]).expect("tensor");
    match s.run(&[("seq", &tensor)]) {
        Err(Error::ValueKind { name, expected, got }) => {
            assert_eq!((name.as_str(), expected, got.as_str()), ("seq", "sequence", "tensor"));
        }
        other => panic!("expected ValueKind, got {other:?}"),
    }
    // Empty and mixed sequences cannot be built.
    assert!(matches!(Value::sequence(Vec::new()), Err(Error::InvalidArgument { .. })));
    let mixed =
        vec![Value::from_vec(&[1], vec![1.0f32]).expect("f32"), Value::from_vec(&[1], vec![1i64]).expect("i64")];
    assert!(matches!(
        Value::sequence(mixed),
        Err(Error::ElementTypeMismatch { expected: ElementType::F32, got: ElementType::I64, .. })
    ));
}

#[test]
fn map_output() {
    let s = session("map_out.onnx");
    let probabilities = [0.125f32, 0.75, 0.125];
    let x = Value::from_vec(&[1, 3], probabilities.to_vec()).expect("x");
    let outputs = s.run(&[("x", &x)]).expect("runs");
    let probs = &outputs[0];
    assert_eq!(probs.kind().expect("kind"), ValueKind::Sequence);
    let maps = probs.sequence_items().expect("a sequence of maps");
    assert_eq!(maps.len(), 1, "one map per input row");
    assert_eq!(maps[0].kind().expect("kind"), ValueKind::Map);
    let (keys, values) = maps[0].map_entries().expect("map entries");
    let keys = keys.strings().expect("string keys");
    let values = values.to_array::<f32>().expect("f32 values");
    assert_eq!(keys.len(), values.len());
    let got: BTreeMap<String, f32> = keys.into_iter().zip(values.iter().copied()).collect();
    let expected: BTreeMap<String, f32> =
        ["cat", "dog", "fish"].iter().map(|k| k.to_string()).zip(probabilities).collect();
    assert_eq!(got, expected);
    // A sequence is not a map, nor a tensor; the errors name the output.
    assert!(matches!(probs.map_entries(), Err(Error::ValueKind { .. })));
    let error = probs.view::<f32>().expect_err("a sequence is not a tensor");
    assert_eq!(error.to_string(), "`probs` is a sequence, not a tensor");
}

#[test]
fn reading_with_the_wrong_type_names_the_output() {
    let s = session("add_f32.onnx");
    let a = Value::from_vec(&SHAPE, vec![1.0f32; 6]).expect("a");
    let b = Value::from_vec(&SHAPE, vec![2.0f32; 6]).expect("b");
    let mut outputs = s.run(&[("a", &a), ("b", &b)]).expect("runs");
    assert_eq!(outputs[0].name(), Some("sum"));
    let error = outputs[0].view::<i64>().expect_err("f32 read as i64");
    match &error {
        Error::ReadTypeMismatch { name, holds, requested } => {
            assert_eq!(name.as_deref(), Some("sum"));
            assert_eq!((*holds, *requested), (ElementType::F32, ElementType::I64));
        }
        other => panic!("expected ReadTypeMismatch, got {other:?}"),
    }
    assert_eq!(error.to_string(), "output `sum` holds f32 elements; read it as f32 (view::<f32>), not i64");
    let error = outputs[0].to_array::<f64>().expect_err("f32 read as f64");
    assert_eq!(error.to_string(), "output `sum` holds f32 elements; read it as f32 (view::<f32>), not f64");
    let error = outputs[0].strings().expect_err("f32 read as strings");
    assert_eq!(error.to_string(), "output `sum` holds f32 elements; read it as f32 (view::<f32>), not string");
    // A value taken out of the outputs keeps its name.
    let sum = outputs.take("sum").expect("sum");
    assert_eq!(sum.name(), Some("sum"));
    assert!(sum.view::<u8>().expect_err("u8").to_string().starts_with("output `sum` holds f32"));
    // A value the caller made has no name.
    assert_eq!(a.name(), None);
    assert_eq!(
        a.view::<i64>().expect_err("f32 read as i64").to_string(),
        "this tensor holds f32 elements; read it as f32 (view::<f32>), not i64"
    );
    // Half-precision outputs point to the `half` types.
    let s = session("identity_f16.onnx");
    let x = Value::from_vec(&SHAPE, vec![f16::from_f32(1.0); 6]).expect("f16");
    let outputs = s.run(&[("x", &x)]).expect("runs");
    assert_eq!(
        outputs[0].view::<f32>().expect_err("f16 read as f32").to_string(),
        "output `y` holds f16 elements; read it as f16 (view::<half::f16>), not f32"
    );
}
