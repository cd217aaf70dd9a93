//! Sessions on the committed test models: running, describing inputs and outputs, metadata,
//! output selection, numerics, dynamic shapes, borrowed inputs and every builder option.

use ndarray::{array, s, Array, Array2, Array4, ArrayD, Axis, IxDyn};
use onnxrt::config_keys;
use onnxrt::{Dim, ElementType, Error, ExecutionMode, LogLevel, OptimizationLevel, Session, Value, ValueKind};
use onnxrt_tests::{builder, mlp_input, model, read_f32_le, session, TempDir};

/// A deterministic, non-trivial f32 array of the given shape.
fn ramp<Sh: ndarray::ShapeBuilder>(shape: Sh, scale: f32) -> Array<f32, Sh::Dim> {
    let mut i = 0u32;
    Array::from_shape_simple_fn(shape, || {
        i += 1;
        // Mixed signs and magnitudes, exactly representable sums.
        ((i * 37 % 101) as f32 - 50.0) * scale
    })
}

fn mlp_expected() -> Array2<f32> {
    let data = read_f32_le(&model("mlp_expected.bin"));
    Array2::from_shape_vec((2, 4), data).expect("mlp_expected.bin holds a [2, 4] f32 array")
}

fn assert_all_close(got: &ArrayD<f32>, expected: &ArrayD<f32>, tolerance: f32) {
    assert_eq!(got.shape(), expected.shape(), "shapes differ");
    for (index, (g, e)) in got.iter().zip(expected.iter()).enumerate() {
        assert!((g - e).abs() <= tolerance, "element {index}: got {g}, expected {e} (tolerance {tolerance})");
    }
}

fn run_mlp(session: &Session, x: Array2<f32>) -> ArrayD<f32> {
    let x = Value::from_array(x).expect("mlp input");
    let outputs = session.run(&[("x", &x)]).expect("mlp runs");
    assert_eq!(outputs.len(), 1);
    outputs.get("logits").expect("mlp has a `logits` output").to_array::<f32>().expect("logits are f32")
}

#[test]
fn add_f32_adds() {
    let session = session("add_f32.onnx");
    let a = ramp((2, 3), 0.25);
    let b = ramp((2, 3), -1.5).mapv(|v| v + 0.125);
    let expected = (&a + &b).into_dyn();
    let va = Value::from_array(a).expect("a");
    let vb = Value::from_array(b).expect("b");
    let outputs = session.run(&[("a", &va), ("b", &vb)]).expect("add runs");
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["sum"]);
    let sum = outputs[0].to_array::<f32>().expect("sum is f32");
    assert_eq!(sum, expected, "Add is exact for these values");
    // Input order does not matter: inputs are matched by name.
    let swapped = session.run(&[("b", &vb), ("a", &va)]).expect("add runs");
    assert_eq!(swapped[0].to_array::<f32>().expect("f32"), expected);
}

#[test]
fn describes_inputs_and_outputs() {
    let s = session("dynamic_batch.onnx");
    let inputs = s.inputs();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "images");
    assert_eq!(inputs[0].kind, ValueKind::Tensor);
    assert_eq!(inputs[0].element_type, Some(ElementType::F32));
    assert_eq!(inputs[0].shape, [Dim::Symbolic("batch".into()), Dim::Fixed(3), Dim::Fixed(4), Dim::Fixed(4)]);
    assert_eq!(inputs[0].shape_text(), "[batch, 3, 4, 4]");
    let outputs = s.outputs();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].name, "pooled");
    assert_eq!(outputs[0].element_type, Some(ElementType::F32));
    assert_eq!(outputs[0].shape, [Dim::Symbolic("batch".into()), Dim::Fixed(3)]);

    let s = session("identity_i64.onnx");
    assert_eq!(s.inputs()[0].name, "x");
    assert_eq!(s.inputs()[0].element_type, Some(ElementType::I64));
    assert_eq!(s.inputs()[0].shape, [Dim::Symbolic("N".into()), Dim::Symbolic("M".into())]);
    assert_eq!(s.outputs()[0].name, "y");
    assert_eq!(s.outputs()[0].element_type, Some(ElementType::I64));

    let s = session("multi_output.onnx");
    let names: Vec<&str> = s.outputs().iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["doubled", "squared", "negated"]);
    assert_eq!(s.output_index("negated").expect("index"), 2);
    assert_eq!(s.input_index("x").expect("index"), 0);

    let s = session("sequence.onnx");
    assert_eq!(s.outputs()[0].kind, ValueKind::Sequence);
    // A sequence of float tensors: the members' kind and element type.
    assert_eq!(s.outputs()[0].contains, Some(ValueKind::Tensor));
    assert_eq!(s.outputs()[0].element_type, Some(ElementType::F32));
    let s = session("add_f32.onnx");
    assert_eq!(s.inputs()[1].shape, [Dim::Fixed(2), Dim::Fixed(3)]);
    assert_eq!(s.providers(), ["CPUExecutionProvider"]);
    assert!(!s.serializes_runs());
}

#[test]
fn metadata_of_dynamic_batch() {
    let meta = session("dynamic_batch.onnx").metadata().expect("metadata");
    assert_eq!(meta.producer, "onnxrt-tests");
    assert_eq!(meta.graph_name, "dynamic_batch");
    assert_eq!(meta.domain, "ai.onnxrt.test");
    assert_eq!(meta.description, "NCHW mean pool");
    assert_eq!(meta.graph_description, "");
    assert_eq!(meta.version, 7);
    let custom: Vec<(&str, &str)> = meta.custom.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(custom, [("author", "onnxrt"), ("purpose", "tests")]);

    // A model without any of it reads as empty, not as an error.
    let meta = session("add_f32.onnx").metadata().expect("metadata");
    assert_eq!(meta.producer, "");
    assert_eq!(meta.graph_name, "add_f32");
    // ORT reports an unset model_version as i64::MAX (its `kNoVersion`), not 0.
    assert_eq!(meta.version, i64::MAX);
    assert!(meta.custom.is_empty());
}

#[test]
fn commit_from_memory_runs() {
    let bytes = std::fs::read(model("add_f32.onnx")).expect("model bytes");
    let session = builder().commit_from_memory(&bytes).expect("session from bytes");
    drop(bytes); // ORT copied them.
    let a = array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = array![[0.5f32, -2.0, 10.0], [1e-3, 7.0, -6.0]];
    let expected = (&a + &b).into_dyn();
    let (va, vb) = (Value::from_array(a).expect("a"), Value::from_array(b).expect("b"));
    let outputs = session.run(&[("a", &va), ("b", &vb)]).expect("runs");
    assert_eq!(outputs[0].to_array::<f32>().expect("f32"), expected);
}

#[test]
fn run_with_selects_outputs_in_the_requested_order() {
    let s = session("multi_output.onnx");
    let x = array![1.5f32, -2.0, 0.0, 3.25];
    let value = Value::from_array(x.clone()).expect("x");

    let mut outputs = s.run_with(&[("x", &value)], &["negated", "doubled"], None).expect("runs");
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["negated", "doubled"]);
    assert_eq!(outputs[0].to_array::<f32>().expect("f32"), x.mapv(|v| -v).into_dyn());
    assert_eq!(outputs[1].to_array::<f32>().expect("f32"), x.mapv(|v| v + v).into_dyn());
    match outputs.get("squared") {
        Err(Error::UnknownOutput { name, valid }) => {
            assert_eq!(name, "squared");
            assert_eq!(valid.0, ["negated", "doubled"]);
        }
        other => panic!("expected UnknownOutput for an output not requested, got {other:?}"),
    }
    let doubled = outputs.take("doubled").expect("take");
    assert_eq!(doubled.to_array::<f32>().expect("f32"), x.mapv(|v| 2.0 * v).into_dyn());
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["negated"]);

    // No names: every output, in model order.
    let all = s.run_with(&[("x", &value)], &[], None).expect("runs");
    assert_eq!(all.names().collect::<Vec<_>>(), ["doubled", "squared", "negated"]);
    assert_eq!(all.get("squared").expect("squared").to_array::<f32>().expect("f32"), x.mapv(|v| v * v).into_dyn());
}

#[test]
fn mlp_matches_numpy() {
    let got = run_mlp(&session("mlp.onnx"), mlp_input());
    assert_all_close(&got, &mlp_expected().into_dyn(), 1e-5);
}

#[test]
fn dynamic_batch_sizes() {
    let s = session("dynamic_batch.onnx");
    for batch in [1usize, 2, 5] {
        let images: Array4<f32> = ramp((batch, 3, 4, 4), 0.01);
        let expected = images.mean_axis(Axis(3)).and_then(|m| m.mean_axis(Axis(2))).expect("non-empty axes").into_dyn();
        let value = Value::from_array(images).expect("images");
        let outputs = s.run(&[("images", &value)]).expect("runs");
        let pooled = outputs[0].to_array::<f32>().expect("f32");
        assert_eq!(pooled.shape(), [batch, 3]);
        assert_all_close(&pooled, &expected, 1e-6);
    }

    // The MLP's batch axis too: rows are independent, so a batch of 5 built from the two
    // reference rows gives the reference rows back.
    let s = session("mlp.onnx");
    let reference = mlp_input();
    let expected = mlp_expected();
    for batch in [1usize, 2, 5] {
        let x = Array2::from_shape_fn((batch, 16), |(r, c)| reference[[r % 2, c]]);
        let want = Array2::from_shape_fn((batch, 4), |(r, c)| expected[[r % 2, c]]);
        assert_all_close(&run_mlp(&s, x), &want.into_dyn(), 1e-5);
    }
}

#[test]
fn scalar_rank_zero() {
    let s = session("scalar.onnx");
    assert!(s.inputs()[0].shape.is_empty());
    let x = Value::scalar(-3.5f32).expect("scalar");
    assert_eq!(x.tensor_info().expect("info").shape, Vec::<i64>::new());
    let outputs = s.run(&[("x", &x)]).expect("runs");
    let y = outputs[0].to_array::<f32>().expect("f32");
    assert_eq!(y.ndim(), 0);
    assert_eq!(y.into_raw_vec_and_offset().0, [12.25]);
}

#[test]
fn empty_tensor() {
    let s = session("identity_f32.onnx");
    let x = Value::from_vec::<f32>(&[0, 3], Vec::new()).expect("empty tensor");
    assert!(x.tensor_info().expect("info").is_empty());
    let outputs = s.run(&[("x", &x)]).expect("runs");
    let info = outputs[0].tensor_info().expect("info");
    assert_eq!(info.shape, [0, 3]);
    assert_eq!(info.element_type, ElementType::F32);
    let y = outputs[0].view::<f32>().expect("view");
    assert_eq!(y.shape(), [0, 3]);
    assert_eq!(y.len(), 0);
    // Same through ndarray.
    let x = Value::from_array(Array2::<f32>::zeros((0, 3))).expect("empty array");
    let outputs = s.run(&[("x", &x)]).expect("runs");
    assert_eq!(outputs[0].tensor_info().expect("info").shape, [0, 3]);
}

#[test]
fn borrowed_views_are_zero_copy_and_must_be_contiguous() {
    let s = session("identity_f32.onnx");
    let data = ramp((3, 4), 0.5);

    // A standard-layout view is borrowed: the value reads the very same memory.
    let borrowed = Value::from_view(data.view()).expect("standard layout view");
    let seen = borrowed.view::<f32>().expect("view");
    assert_eq!(seen.as_ptr(), data.as_ptr(), "from_view must not copy the data");
    assert_eq!(seen, data.view().into_dyn());
    let outputs = s.run(&[("x", &borrowed)]).expect("runs on a borrowed input");
    assert_eq!(outputs[0].to_array::<f32>().expect("f32"), data.clone().into_dyn());

    // A row slice of a standard array is still contiguous.
    let rows = data.slice(s![1..3, ..]);
    let value = Value::from_view(rows).expect("contiguous slice");
    assert_eq!(value.view::<f32>().expect("view").as_ptr(), rows.as_ptr());

    // Transposed or strided views would need a copy, which from_view refuses.
    for (what, view) in [("transposed", data.t()), ("every other column", data.slice(s![.., ..;2]))] {
        match Value::from_view(view) {
            Err(Error::NotContiguous { .. }) => {}
            other => panic!("{what} view: expected NotContiguous, got {other:?}"),
        }
    }
    let message = Value::from_view(data.t()).expect_err("transposed view").to_string();
    assert!(message.contains("as_standard_layout"), "the message should say how to fix it: {message}");

    // from_array accepts any layout and copies it into standard order.
    let transposed = data.clone().reversed_axes();
    assert!(!transposed.is_standard_layout());
    let expected = Array2::from_shape_fn((4, 3), |(r, c)| data[[c, r]]).into_dyn();
    let value = Value::from_array(transposed).expect("from_array of a transposed array");
    assert_eq!(value.tensor_info().expect("info").shape, [4, 3]);
    assert_eq!(value.to_array::<f32>().expect("f32"), expected);
    let outputs = s.run(&[("x", &value)]).expect("runs");
    assert_eq!(outputs[0].to_array::<f32>().expect("f32"), expected);
}

#[test]
fn optimization_levels_agree() {
    let expected = mlp_expected().into_dyn();
    for level in
        [OptimizationLevel::Disabled, OptimizationLevel::Basic, OptimizationLevel::Extended, OptimizationLevel::All]
    {
        let s = builder()
            .optimization_level(level)
            .commit_from_file(model("mlp.onnx"))
            .unwrap_or_else(|e| panic!("{level:?}: {e}"));
        assert_all_close(&run_mlp(&s, mlp_input()), &expected, 1e-5);
    }
}

#[test]
fn builder_options_apply() {
    let expected = mlp_expected().into_dyn();
    let s = builder()
        .intra_op_threads(2)
        .inter_op_threads(2)
        .execution_mode(ExecutionMode::Parallel)
        .memory_pattern(false)
        .cpu_arena(false)
        .log_id("session-test")
        .log_level(LogLevel::Error)
        .config_entry(config_keys::INTRA_OP_ALLOW_SPINNING, "0")
        .config_entry(config_keys::INTER_OP_ALLOW_SPINNING, "0")
        .commit_from_file(model("mlp.onnx"))
        .expect("every option is accepted");
    assert_all_close(&run_mlp(&s, mlp_input()), &expected, 1e-5);

    // The opposite settings too.
    let s = builder()
        .intra_op_threads(0)
        .execution_mode(ExecutionMode::Sequential)
        .memory_pattern(true)
        .cpu_arena(true)
        .log_level(LogLevel::Warning)
        .commit_from_file(model("mlp.onnx"))
        .expect("every option is accepted");
    assert_all_close(&run_mlp(&s, mlp_input()), &expected, 1e-5);

    // A key off the allow-list (here an empty one) is refused before ORT sees it.
    let bad = builder().config_entry("", "1").commit_from_file(model("mlp.onnx"));
    assert!(matches!(bad, Err(Error::KeyRefused { .. })), "an empty config key should be refused, got {bad:?}");
}

#[test]
fn free_dimension_override() {
    let s = builder()
        .free_dimension("N", 2)
        .commit_from_file(model("multi_output.onnx"))
        .expect("session with N fixed to 2");
    // The override shows in the description, and other sizes are refused before ORT runs.
    assert_eq!(s.inputs()[0].shape, [Dim::Fixed(2)]);
    let three = Value::from_vec(&[3], vec![1.0f32; 3]).expect("x");
    assert!(matches!(s.run(&[("x", &three)]), Err(Error::ShapeMismatch { .. })));
    let x = array![4.0f32, -0.5];
    let value = Value::from_array(x.clone()).expect("x");
    let outputs = s.run(&[("x", &value)]).expect("runs with N = 2");
    assert_eq!(outputs.get("squared").expect("squared").to_array::<f32>().expect("f32"), x.mapv(|v| v * v).into_dyn());

    match builder().free_dimension("N", -1).commit_from_file(model("multi_output.onnx")) {
        Err(Error::BadSetting { setting, value, .. }) => assert!(setting.contains('N') && value == "-1", "{setting}"),
        other => panic!("a negative free dimension should be refused, got {other:?}"),
    }
}

#[test]
fn profiling_writes_a_json_trace() {
    let dir = TempDir::new("profile");
    let prefix = dir.path().join("mlp_profile");
    let s = builder().profiling(&prefix).commit_from_file(model("mlp.onnx")).expect("session with profiling");
    run_mlp(&s, mlp_input());
    let path = s.end_profiling().expect("end_profiling");
    assert!(path.starts_with(dir.path()), "profile {} should be under {}", path.display(), dir.path().display());
    assert!(
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("mlp_profile") && n.ends_with(".json")),
        "unexpected profile name {}",
        path.display()
    );
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("profile {} should exist: {e}", path.display()));
    let trimmed = text.trim();
    assert!(trimmed.starts_with('[') && trimmed.ends_with(']'), "a Chrome trace is a JSON array: {trimmed:.200}");
    assert!(text.contains("\"name\"") && text.contains("model_run"), "the trace should record the run: {trimmed:.300}");
}

#[test]
fn session_is_usable_after_clone_and_many_runs() {
    let s = session("add_f32.onnx");
    let clone = s.clone();
    drop(s);
    let a = Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("a");
    for i in 0..50 {
        let b = Value::from_vec(&[2, 3], vec![i as f32; 6]).expect("b");
        let outputs = clone.run(&[("a", &a), ("b", &b)]).expect("runs");
        let sum = outputs[0].to_array::<f32>().expect("f32");
        assert_eq!(sum, ArrayD::from_elem(IxDyn(&[2, 3]), 1.0 + i as f32));
    }
}

/// Every named configuration key is one ORT 1.16.2 accepts (a wrong name would be ignored by ORT
/// or refused; the session must load and run with each set to a valid value).
#[test]
fn every_named_config_key_is_accepted() {
    use onnxrt::config_keys::*;
    let entries = [
        (DISABLE_CPU_EP_FALLBACK, "0"),
        (STRICT_SHAPE_TYPE_INFERENCE, "1"),
        (ALLOW_RELEASED_OPSETS_ONLY, "1"),
        (DISABLE_PREPACKING, "1"),
        (INTRA_OP_ALLOW_SPINNING, "0"),
        (INTER_OP_ALLOW_SPINNING, "0"),
        (USE_DEVICE_ALLOCATOR_FOR_INITIALIZERS, "1"),
        (DISABLE_AOT_FUNCTION_INLINING, "1"),
        (SET_DENORMAL_AS_ZERO, "1"),
        (LOAD_MODEL_FORMAT, "ONNX"),
    ];
    let mut b = builder();
    for (key, value) in entries {
        b = b.config_entry(key, value);
    }
    let s = b.commit_from_file(model("mlp.onnx")).expect("session with every named key");
    let x = Value::from_vec(&[1, 16], vec![0.5f32; 16]).expect("input");
    assert_eq!(s.run(&[("x", &x)]).expect("run")[0].tensor_info().expect("info").shape, [1, 4]);
}

/// `run` takes the inputs in whatever shape the caller holds them, and each gives the same sum.
/// Values are always borrowed (moving them in does not compile:
/// `tests/compile_fail/owned_inputs_moved_into_run.rs`).
#[test]
fn run_takes_inputs_in_any_shape() {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Arc;

    let s = session("add_f32.onnx");
    let a = ramp((2, 3), 0.5);
    let b = ramp((2, 3), -0.25);
    let expected = (&a + &b).into_dyn();
    let value = |x: &Array2<f32>| Value::from_array(x.clone()).expect("value");
    let sum = |outputs: onnxrt::Outputs| outputs.get("sum").expect("sum").to_array::<f32>().expect("f32");
    let (va, vb) = (value(&a), value(&b));

    // Borrowed pairs: a slice, an array by value, a Vec of references by value and by reference.
    assert_eq!(sum(s.run(&[("a", &va), ("b", &vb)]).expect("slice")), expected);
    assert_eq!(sum(s.run([("a", &va), ("b", &vb)]).expect("array")), expected);
    let refs: Vec<(&str, &Value<'_>)> = vec![("a", &va), ("b", &vb)];
    assert_eq!(sum(s.run(&refs).expect("&Vec of references")), expected);
    assert_eq!(sum(s.run(refs).expect("Vec of references")), expected);
    // A borrowed view next to an owned value.
    let view = Value::from_view(b.view()).expect("view");
    assert_eq!(sum(s.run([("a", &va), ("b", &view)]).expect("view")), expected);

    // Owned names and values, passed by reference.
    let owned: Vec<(String, Value<'static>)> = vec![("a".to_owned(), value(&a)), ("b".to_owned(), value(&b))];
    assert_eq!(sum(s.run(&owned).expect("&Vec<(String, Value)>")), expected);
    assert_eq!(sum(s.run(&owned[..]).expect("&[(String, Value)]")), expected);

    // Maps, and values behind smart pointers.
    let map: HashMap<String, Value<'static>> = owned.into_iter().collect();
    assert_eq!(sum(s.run(&map).expect("&HashMap<String, Value>")), expected);
    let tree: BTreeMap<&str, Arc<Value<'static>>> = [("a", Arc::new(value(&a))), ("b", Arc::new(value(&b)))].into();
    assert_eq!(sum(s.run(&tree).expect("&BTreeMap of Arc")), expected);
    let boxed = [("a", Box::new(value(&a))), ("b", Box::new(value(&b)))];
    assert_eq!(sum(s.run(&boxed).expect("boxed values")), expected);

    // Any iterator of (name, &value), e.g. names computed on the fly.
    let names = ["a", "b"].map(str::to_owned);
    assert_eq!(sum(s.run(names.iter().zip([&va, &vb])).expect("iterator")), expected);
    let chosen = s.run_with(names.iter().zip([&va, &vb]), &["sum"], None).expect("run_with");
    assert_eq!(sum(chosen), expected);

    // Every form is checked like the slice: a wrong name is the same typed error.
    let wrong: HashMap<String, Value<'static>> = [("a".to_owned(), value(&a)), ("c".to_owned(), value(&b))].into();
    match s.run(&wrong) {
        Err(Error::UnknownInput { name, .. }) => assert_eq!(name, "c"),
        other => panic!("expected UnknownInput, got {other:?}"),
    }
    // A model without inputs takes NO_INPUTS.
    assert!(matches!(s.run(onnxrt::NO_INPUTS), Err(Error::MissingInput { .. })));
}
