//! `Value::none` and `Value::empty_sequence` run a one-node session to make their value; that
//! session must not keep the process's environment alive (it was once cached for the
//! process, so after one call `Environment::builder().commit()` failed until the process ended).
//! Process-global behaviour, so a test binary of its own with a single test.

use onnxrt::{ElementType, Environment, Session, Value, ValueType};

fn commit(name: &str) -> std::sync::Arc<Environment> {
    Environment::builder().name(name).commit().unwrap_or_else(|e| panic!("commit `{name}`: {e}"))
}

#[test]
fn empty_values_leave_the_environment_to_the_caller() {
    let none = Value::none(ValueType::Tensor(ElementType::F32)).expect("an absent optional");
    let empty = Value::empty_sequence(ElementType::I64).expect("an empty sequence");
    // No environment is alive now: the caller can make one with its own settings.
    let configured = commit("configured-after-none");
    // Made while it lives, values use that environment and leave it the caller's.
    let none_again = Value::none(ValueType::Sequence(ElementType::F32)).expect("none in the configured env");
    let empty_again = Value::empty_sequence(ElementType::F32).expect("empty in the configured env");
    assert_eq!(Environment::global().expect("global").name(), "configured-after-none");
    drop(configured);
    // The process keeps its environment: a commit with other settings is refused, naming it.
    let refused = Environment::builder().name("second").commit().expect_err("the environment exists");
    assert!(matches!(&refused, onnxrt::Error::EnvironmentExists { name, .. } if name == "configured-after-none"));
    let second = Environment::global().expect("global");
    // The values own their contents: they outlive the environments they were made in.
    assert!(none.is_none().expect("is_none"));
    assert!(none_again.is_none().expect("is_none"));
    assert!(empty.sequence_items().expect("items").is_empty());
    assert!(empty_again.sequence_items().expect("items").is_empty());
    // And they still feed a model: `SequenceLength` of the empty sequence in that environment.
    let model = onnxrt_tests::model("sequence_len.onnx");
    let session = Session::builder().environment(second).commit_from_file(&model).expect("session");
    let input = session.inputs()[0].name.clone();
    let typed = Value::empty_sequence(session.inputs()[0].element_type.expect("element type")).expect("empty");
    let outputs = session.run([(input.as_str(), &typed)]).expect("run");
    assert_eq!(outputs[0].view::<i64>().expect("i64").iter().copied().collect::<Vec<_>>(), [0]);
}
