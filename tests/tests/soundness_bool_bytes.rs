//! Every byte safe code can write into a tensor is a valid value of its element type
//! (docs/soundness.md §7). `host_bytes_mut` writes any byte, so a bool tensor can
//! hold 2 or 255; ORT reads bools as C++ `bool`, for which such bytes are undefined behaviour. The
//! outside audit's programs fed a bool tensor holding 2 to `Not` (3 and 254 came back) and to a
//! `Cast` (2.0). Such a tensor is now refused wherever it would reach ORT: as a run input
//! (`run`, `run_async`), a bound input, a sequence member. Runs under valgrind in CI.

use std::sync::Arc;

use onnxrt::{ElementType, Error, Session, Value};
use onnxrt_tests::{builder, proto};

/// `y = Not(x)` over `[4]` bools.
fn not_session() -> Session {
    let model = proto::model(
        8,
        17,
        &[proto::node("Not", &["x"], &["y"], &[])],
        &[proto::tensor_info("x", proto::BOOL, &[4])],
        &[proto::tensor_info("y", proto::BOOL, &[4])],
    );
    builder().commit_from_memory(&model).expect("Not session")
}

/// A `[4]` bool tensor written byte by byte.
fn bools(bytes: [u8; 4]) -> Value<'static> {
    let mut value = Value::zeros(&[4], ElementType::Bool).expect("bool zeros");
    value.host_bytes_mut().expect("writable").copy_from_slice(&bytes);
    value
}

fn assert_refused(error: Error, what: &str) {
    assert_eq!(error.variant(), "InvalidArgument", "{what}: {error}");
    let text = error.to_string();
    assert!(text.contains("= 2") && text.contains("0 or 1"), "{what}: {text}");
}

#[test]
fn a_bool_byte_of_2_is_refused_as_a_run_input() {
    // The audit's program: before, the run went ahead and `Not` answered 3 and 254.
    let session = not_session();
    let bad = bools([1, 2, 0, 1]);
    let error = session.run(&[("x", &bad)]).expect_err("a bool byte of 2");
    assert_refused(error, "run");
    assert!(error_names_input(&session, &bad));
}

fn error_names_input(session: &Session, bad: &Value<'_>) -> bool {
    session.run(&[("x", bad)]).expect_err("refused").to_string().contains("input `x`")
}

#[test]
fn a_bool_byte_of_2_is_refused_by_run_async_binding_and_sequence() {
    let session = builder().async_threads().commit_from_memory(&not_model_bytes()).expect("session");
    let error = session.run_async([("x", bools([0, 0, 2, 0]))], &[]).map(drop).expect_err("run_async");
    assert_refused(error, "run_async");
    let shared = Arc::new(bools([2, 0, 0, 0]));
    let error = session.run_async([("x", Arc::clone(&shared))], &[]).map(drop).expect_err("run_async, shared");
    assert_refused(error, "run_async, shared");

    let bad = bools([0, 2, 0, 0]);
    let mut binding = session.io_binding().expect("binding");
    assert_refused(binding.bind_input("x", &bad).expect_err("bind_input"), "bind_input");
    drop(binding);

    assert_refused(Value::sequence(vec![bools([0, 0, 0, 2])]).expect_err("sequence"), "sequence");
    // A sequence of valid bools is still made.
    Value::sequence(vec![bools([0, 1, 0, 1])]).expect("a sequence of valid bools");
}

fn not_model_bytes() -> Vec<u8> {
    proto::model(
        8,
        17,
        &[proto::node("Not", &["x"], &["y"], &[])],
        &[proto::tensor_info("x", proto::BOOL, &[4])],
        &[proto::tensor_info("y", proto::BOOL, &[4])],
    )
}

#[test]
fn bools_written_as_0_and_1_run_as_before() {
    let session = not_session();
    let good = bools([1, 0, 0, 1]);
    let outputs = session.run(&[("x", &good)]).expect("valid bools run");
    assert_eq!(outputs[0].view::<bool>().expect("bool").as_slice(), Some(&[false, true, true, false][..]));
    // Every other byte value, each in its own run, is refused (and never reaches ORT).
    for byte in 2..=255u8 {
        let bad = bools([0, byte, 1, 0]);
        let error = session.run(&[("x", &bad)]).expect_err("a byte other than 0 and 1");
        assert!(error.to_string().contains(&format!("= {byte}")), "{error}");
    }
    // Reading such a tensor was already refused; it still is.
    assert_eq!(bools([0, 7, 0, 0]).view::<bool>().expect_err("typed read").variant(), "InvalidArgument");
}
