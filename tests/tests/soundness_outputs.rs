//! The outputs of a run stay true to it: an output named more than once holds the run's result
//! at every position, beside other outputs and a constant one, while the session's output pool
//! hands out recycled buffers; and `Outputs` outlives its session with its values intact. The
//! programs of the second outside audit, asserting the true results. They run in the
//! normal suite and under valgrind (tools/reliability/memcheck.sh).

use ndarray::Array2;
use onnxrt::{Session, Value};
use onnxrt_tests::{builder, proto, session};

fn filled(value: f32) -> Value<'static> {
    Value::from_array(Array2::from_elem((2, 3), value)).expect("a [2, 3] tensor")
}

fn elements(value: &Value<'_>) -> Vec<f32> {
    value.view::<f32>().expect("an f32 tensor").iter().copied().collect()
}

/// `add_f32.onnx` asked for `names`, with every element of `a` and `b` equal to the two numbers.
fn add(session: &Session, a: f32, b: f32, names: &[&str]) -> onnxrt::Outputs {
    let (a, b) = (filled(a), filled(b));
    session.run_with([("a", &a), ("b", &b)], names, None).expect("run")
}

#[test]
fn repeated_output_names_each_hold_the_runs_result() {
    // The audit's program: a CPU session (outputs preallocated from its pool), outputs of earlier
    // runs held and dropped so the pool holds recycled buffers, then one run that names `sum`
    // twice. Before the fix each position got its own pooled tensor, ORT wrote only the last,
    // and position 0 came back holding an earlier run's data (expected 20, got 2).
    let session = session("add_f32.onnx");
    let probe = add(&session, 0.0, 0.0, &[]);
    assert_eq!(elements(&probe[0]), [0.0; 6]);
    drop(probe);
    let held = add(&session, 3.0, 4.0, &[]);
    let earlier = add(&session, 1.0, 1.0, &[]);
    assert_eq!(elements(&earlier[0]), [2.0; 6]);
    // Its buffer (holding 2s) goes back to the pool for the next run.
    drop(earlier);
    let twice = add(&session, 10.0, 10.0, &["sum", "sum"]);
    assert_eq!(twice.len(), 2);
    assert_eq!(twice.names().collect::<Vec<_>>(), ["sum", "sum"]);
    assert_eq!(elements(&twice[0]), [20.0; 6], "position 0 of a run naming `sum` twice");
    assert_eq!(elements(&twice[1]), [20.0; 6], "position 1 of a run naming `sum` twice");
    // The two positions are two values of their own: later runs change neither.
    assert_ne!(twice[0].view::<f32>().expect("view").as_ptr(), twice[1].view::<f32>().expect("view").as_ptr());
    for i in 0..4 {
        let later = add(&session, i as f32, 100.0, &["sum", "sum"]);
        assert_eq!(elements(&later[0]), [i as f32 + 100.0; 6]);
        assert_eq!(elements(&later[1]), [i as f32 + 100.0; 6]);
        drop(later);
        let single = add(&session, i as f32, 1000.0, &[]);
        assert_eq!(elements(&single[0]), [i as f32 + 1000.0; 6]);
    }
    assert_eq!(elements(&twice[0]), [20.0; 6]);
    assert_eq!(elements(&twice[1]), [20.0; 6]);
    assert_eq!(elements(&held[0]), [7.0; 6]);
}

/// `sum = a + b`, `product = a * b` and `seven = Constant(7)`, every output fixed at [2, 3] (so
/// all three are preallocated; the constant is an initializer after ORT's optimizations, which
/// ORT copies into the preallocated output).
fn sum_product_constant() -> Vec<u8> {
    let mut seven = proto::tensor(proto::FLOAT, &[2, 3]);
    seven.float_data = vec![7.0; 6];
    let value = onnxrt_onnx_proto::AttributeProto {
        name: Some("value".into()),
        r#type: Some(onnxrt_onnx_proto::attribute_proto::AttributeType::Tensor as i32),
        t: Some(seven),
        ..Default::default()
    };
    let info = |name| proto::tensor_info(name, proto::FLOAT, &[2, 3]);
    proto::model(
        8,
        17,
        &[
            proto::node("Add", &["a", "b"], &["sum"], &[]),
            proto::node("Mul", &["a", "b"], &["product"], &[]),
            proto::node("Constant", &[], &["seven"], &[value]),
        ],
        &[info("a"), info("b")],
        &[info("sum"), info("product"), info("seven")],
    )
}

#[test]
fn repeated_names_among_other_outputs_and_a_constant_output() {
    let session = builder().commit_from_memory(&sum_product_constant()).expect("session");
    let names = ["product", "sum", "seven", "product", "seven", "sum", "product"];
    let mut held = Vec::new();
    for i in 0..6 {
        let (a, b) = (i as f32 + 1.0, 2.0);
        // Runs asking for each output once fill the pool; those naming outputs several times
        // must not take from it where another position shares the output.
        let once = add(&session, 100.0, 100.0, &[]);
        let expected = [a * b, a + b, 7.0, a * b, 7.0, a + b, a * b];
        let outputs = add(&session, a, b, &names);
        drop(once);
        for (p, (&name, &want)) in names.iter().zip(&expected).enumerate() {
            assert_eq!(elements(&outputs[p]), [want; 6], "run {i}, position {p} (`{name}`)");
        }
        held.push((expected, outputs));
    }
    // Held outputs keep their values while later runs recycle other buffers.
    for (expected, outputs) in &held {
        for (p, want) in expected.iter().enumerate() {
            assert_eq!(elements(outputs.iter().nth(p).expect("position").1), [*want; 6]);
        }
    }
}

#[test]
fn outputs_outlive_their_session_and_stay_valid() {
    // `Outputs` shares the session's output names (`Arc<str>`) and owns its values, so it may
    // outlive the session: the values of the first run (ORT's own tensors, the output pool
    // probing) and of later runs (buffers of the session's output pool) keep their data, and the
    // pooled buffers go back to a pool whose session is gone when they are dropped.
    let session = session("add_f32.onnx");
    let first = add(&session, 1.0, 2.0, &[]);
    let pooled: Vec<onnxrt::Outputs> = (0..3).map(|i| add(&session, i as f32, 10.0, &[])).collect();
    let chosen = add(&session, 5.0, 5.0, &["sum", "sum"]);
    drop(session);
    assert_eq!(first.names().collect::<Vec<_>>(), ["sum"]);
    assert_eq!(elements(first.get("sum").expect("sum")), [3.0; 6]);
    for (i, outputs) in pooled.iter().enumerate() {
        assert_eq!(elements(&outputs[0]), [i as f32 + 10.0; 6], "run {i}");
    }
    let mut chosen = chosen;
    let taken = chosen.take("sum").expect("the first `sum`");
    assert_eq!(elements(&taken), [10.0; 6]);
    assert_eq!(chosen.names().collect::<Vec<_>>(), ["sum"]);
    let err = first.get("product").expect_err("no such output");
    assert!(matches!(&err, onnxrt::Error::UnknownOutput { name, .. } if name == "product"), "{err}");
    drop(pooled);
    // Sent to another thread after its session is gone: `Outputs` is `Send` and `'static`.
    let sums = std::thread::spawn(move || elements(&first[0])).join().expect("thread");
    assert_eq!(sums, [3.0; 6]);
}
