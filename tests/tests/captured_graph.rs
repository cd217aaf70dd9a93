//! `Session::release_captured_graph` (C API 27) on the real runtime: on ORT 1.32 a CPU session
//! (no graph capture) accepts it and runs as before; it is refused while the session has another
//! handle; on 1.16.2 it is refused with `NeedsNewerRuntime` before it reaches ORT.

use onnxrt::{Error, Session, Value};
use onnxrt_tests::{mlp_input, model};

fn logits(session: &Session) -> Vec<f32> {
    let x = Value::from_array(mlp_input()).expect("input");
    let out = session.run(&[("x", &x)]).expect("run");
    out.get("logits").expect("logits").to_array::<f32>().expect("f32").iter().copied().collect()
}

#[test]
fn releasing_a_captured_graph_is_gated_and_exclusive() {
    let mut session = Session::builder().commit_from_file(model("mlp.onnx")).expect("session");
    let before = logits(&session);
    if onnxrt::runtime_info().expect("runtime").api_level < 27 {
        let error = session.release_captured_graph(0).expect_err("refused before 1.27");
        assert!(matches!(error, Error::NeedsNewerRuntime { needs: 27, .. }), "{error:?}");
        return;
    }
    for id in [0, 1, -1, i32::MAX] {
        session.release_captured_graph(id).expect("nothing captured on the CPU: a no-op");
    }
    let clone = session.clone();
    let error = session.release_captured_graph(0).expect_err("another handle could be running it");
    assert!(matches!(error, Error::BadSetting { .. }), "{error:?}");
    assert!(error.to_string().contains("1 other handle"), "{error}");
    drop(clone);
    session.release_captured_graph(0).expect("the last handle may");
    assert_eq!(logits(&session), before, "the session runs as before");
}
