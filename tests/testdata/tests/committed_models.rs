//! Checks the interfaces of the models committed under `tests/data/models/`.

use std::path::PathBuf;

use onnxrt_testdata::{decode_model_summary, elem_type, load_model_summary, Dim, TypeKind};

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../data/models")
}

fn tensor(t: i32) -> TypeKind {
    TypeKind::Tensor { elem_type: t }
}

#[test]
fn identity_models_cover_every_type() {
    let types = [
        ("f32", elem_type::FLOAT),
        ("f64", elem_type::DOUBLE),
        ("f16", elem_type::FLOAT16),
        ("bf16", elem_type::BFLOAT16),
        ("i8", elem_type::INT8),
        ("i16", elem_type::INT16),
        ("i32", elem_type::INT32),
        ("i64", elem_type::INT64),
        ("u8", elem_type::UINT8),
        ("u16", elem_type::UINT16),
        ("u32", elem_type::UINT32),
        ("u64", elem_type::UINT64),
        ("bool", elem_type::BOOL),
        ("string", elem_type::STRING),
    ];
    for (suffix, code) in types {
        let s = load_model_summary(models_dir().join(format!("identity_{suffix}.onnx"))).expect("decodes");
        assert_eq!(s.inputs, vec![("x".to_string(), tensor(code))], "{suffix}");
        assert_eq!(s.outputs, vec![("y".to_string(), tensor(code))], "{suffix}");
        assert_eq!(s.input_shapes[0], Some(vec![Dim::Param("N".into()), Dim::Param("M".into())]));
        assert_eq!(s.ir_version, 8);
        assert_eq!(s.opsets, vec![(String::new(), 17)]);
    }
}

#[test]
fn interfaces() {
    let s = load_model_summary(models_dir().join("dynamic_batch.onnx")).expect("decodes");
    assert_eq!(s.input_shapes[0], Some(vec![Dim::Param("batch".into()), Dim::Value(3), Dim::Value(4), Dim::Value(4)]));
    let s = load_model_summary(models_dir().join("multi_output.onnx")).expect("decodes");
    let names: Vec<&str> = s.outputs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["doubled", "squared", "negated"]);
    // The MLP's weights are initializers, not inputs.
    let s = load_model_summary(models_dir().join("mlp.onnx")).expect("decodes");
    assert_eq!(s.inputs.len(), 1);
    let s = load_model_summary(models_dir().join("sequence.onnx")).expect("decodes");
    assert_eq!(s.outputs[0].1, TypeKind::Sequence);
    let s = load_model_summary(models_dir().join("sequence_len.onnx")).expect("decodes");
    assert_eq!(s.inputs[0].1, TypeKind::Sequence);
    assert_eq!(s.output_shapes[0], Some(vec![]));
    let s = load_model_summary(models_dir().join("map_out.onnx")).expect("decodes");
    assert_eq!(s.outputs[0].1, TypeKind::Sequence);
    assert!(s.opsets.contains(&("ai.onnx.ml".to_string(), 1)));
    let s = load_model_summary(models_dir().join("scalar.onnx")).expect("decodes");
    assert_eq!(s.input_shapes[0], Some(vec![]));
    let s = load_model_summary(models_dir().join("slow_loop.onnx")).expect("decodes");
    assert_eq!(s.inputs, vec![("iters".to_string(), tensor(elem_type::INT64))]);
    let s = load_model_summary(models_dir().join("opset_too_new.onnx")).expect("decodes");
    assert_eq!((s.ir_version, s.opsets[0].1), (10, 21));
}

#[test]
fn truncated_model_is_rejected() {
    let bytes = std::fs::read(models_dir().join("bad_truncated.onnx")).expect("read");
    assert!(decode_model_summary(&bytes).is_err());
    let full = std::fs::read(models_dir().join("add_f32.onnx")).expect("read");
    assert_eq!(&full[..full.len() / 2], &bytes[..]);
    // No prefix of a valid model may panic the decoder.
    for cut in 0..full.len() {
        let _ = decode_model_summary(&full[..cut]);
    }
}

#[test]
fn mlp_expected_is_two_by_four_floats() {
    let bytes = std::fs::read(models_dir().join("mlp_expected.bin")).expect("read");
    assert_eq!(bytes.len(), 2 * 4 * 4);
    let values: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    assert!(values.iter().all(|v| v.is_finite() && v.abs() < 10.0));
}
