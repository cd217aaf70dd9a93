//! An absent optional input: for an input the model declares of optional type,
//! `Value::none` or leaving the input out both run the model with the input absent (ORT takes an
//! absent optional graph input as one that is not fed); any other input still needs a value.

use onnxrt::{ElementType, Error, Session, Value, ValueKind, ValueType};
use onnxrt_onnx_proto::{type_proto, TypeProto, ValueInfoProto};
use onnxrt_tests::{builder, proto};

/// `optional(tensor(float, [3]))` called `name`.
fn optional_tensor(name: &str) -> ValueInfoProto {
    let tensor = proto::tensor_info("", proto::FLOAT, &[3]).r#type.expect("type");
    let optional = type_proto::Optional { elem_type: Some(Box::new(tensor)) };
    let ty = TypeProto { value: Some(type_proto::Value::OptionalType(Box::new(optional))), denotation: None };
    ValueInfoProto { name: Some(name.into()), r#type: Some(ty), doc_string: None }
}

/// Inputs `opt: optional(tensor(float, [3]))` and `x: tensor(float, [3])`; outputs
/// `has = OptionalHasElement(opt)`, `echo = Identity(opt)` (optional too) and `doubled = x + x`.
fn model() -> Session {
    let bytes = proto::model(
        8,
        18,
        &[
            proto::node("OptionalHasElement", &["opt"], &["has"], &[]),
            proto::node("Identity", &["opt"], &["echo"], &[]),
            proto::node("Add", &["x", "x"], &["doubled"], &[]),
        ],
        &[optional_tensor("opt"), proto::tensor_info("x", proto::FLOAT, &[3])],
        &[
            proto::tensor_info("has", proto::BOOL, &[]),
            optional_tensor("echo"),
            proto::tensor_info("doubled", proto::FLOAT, &[3]),
        ],
    );
    builder().commit_from_memory(&bytes).expect("session")
}

/// (has, echo, doubled) of one run.
fn results(outputs: &onnxrt::Outputs) -> (bool, Option<Vec<f32>>, Vec<f32>) {
    let has = outputs.get("has").expect("has").view::<bool>().expect("bool")[[]];
    let echo = outputs.get("echo").expect("echo");
    let echo = (!echo.is_none().expect("HasValue")).then(|| echo.view::<f32>().expect("f32").iter().copied().collect());
    let doubled = outputs.get("doubled").expect("doubled").view::<f32>().expect("f32").iter().copied().collect();
    (has, echo, doubled)
}

#[test]
fn an_optional_input_is_absent_when_none_or_left_out() {
    let session = model();
    assert_eq!(session.inputs()[0].kind, ValueKind::Optional);
    let x = Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).expect("x");
    let none = Value::none(ValueType::Tensor(ElementType::F32)).expect("none");
    // `Value::none`, in either order of the inputs, and the input left out: all absent.
    for inputs in [vec![("opt", &none), ("x", &x)], vec![("x", &x), ("opt", &none)], vec![("x", &x)]] {
        let outputs = session.run(inputs.iter().copied()).expect("a run with `opt` absent");
        assert_eq!(results(&outputs), (false, None, vec![2.0, 4.0, 6.0]));
    }
    // A present optional is the tensor itself.
    let present = Value::from_vec(&[3], vec![7.0f32, 8.0, 9.0]).expect("present");
    let outputs = session.run([("opt", &present), ("x", &x)]).expect("a run with `opt` present");
    assert_eq!(results(&outputs), (true, Some(vec![7.0, 8.0, 9.0]), vec![2.0, 4.0, 6.0]));
    // The `None` a run returned goes back in as absent (ORT itself would crash on it as an input).
    let mut outputs = session.run([("x", &x)]).expect("absent");
    let echoed = outputs.take("echo").expect("echo");
    assert!(echoed.is_none().expect("HasValue"));
    let outputs = session.run([("opt", &echoed), ("x", &x)]).expect("a run with ORT's None as `opt`");
    assert_eq!(results(&outputs), (false, None, vec![2.0, 4.0, 6.0]));
    // Several runs in turn (outputs preallocated from the second on): absent stays absent.
    for _ in 0..3 {
        let outputs = session.run([("x", &x)]).expect("absent again");
        assert_eq!(results(&outputs), (false, None, vec![2.0, 4.0, 6.0]));
        let outputs = session.run([("opt", &present), ("x", &x)]).expect("present again");
        assert_eq!(results(&outputs), (true, Some(vec![7.0, 8.0, 9.0]), vec![2.0, 4.0, 6.0]));
    }
}

#[test]
fn only_optional_inputs_may_be_absent() {
    let session = model();
    let none = Value::none(ValueType::Tensor(ElementType::F32)).expect("none");
    let present = Value::from_vec(&[3], vec![7.0f32, 8.0, 9.0]).expect("present");
    // `x` is a plain tensor: `None` is refused, naming it, and leaving it out is a missing input.
    let refused = session.run([("opt", &present), ("x", &none)]).expect_err("None for a tensor input");
    assert!(matches!(&refused, Error::InvalidArgument { what, .. } if what.contains("`x`")), "{refused:?}");
    let missing = session.run([("opt", &present)]).expect_err("no `x`");
    assert!(matches!(&missing, Error::MissingInput { name, .. } if name == "x"), "{missing:?}");
    // Naming the optional input twice is still a duplicate.
    let x = Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).expect("x");
    let twice = session.run([("opt", &none), ("x", &x), ("opt", &present)]).expect_err("`opt` twice");
    assert!(matches!(&twice, Error::DuplicateInput { name } if name == "opt"), "{twice:?}");
}

#[test]
fn run_async_takes_an_absent_optional_too() {
    let session = model();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let x = || Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).expect("x");
    let none = Value::none(ValueType::Tensor(ElementType::F32)).expect("none");
    let with_none = session.run_async([("opt", none), ("x", x())], &[]).expect("start with None");
    let outputs = runtime.block_on(with_none).expect("run with None");
    assert!(!outputs.get("has").expect("has").view::<bool>().expect("bool")[[]], "`has` of an absent input");
    let left_out = session.run_async([("x", x())], &["has", "doubled"]).expect("start without `opt`");
    let outputs = runtime.block_on(left_out).expect("run without `opt`");
    assert!(!outputs.get("has").expect("has").view::<bool>().expect("bool")[[]], "`has` of an absent input");
    assert_eq!(
        outputs.get("doubled").expect("doubled").view::<f32>().expect("f32").as_slice(),
        Some(&[2.0f32, 4.0, 6.0][..])
    );
}
