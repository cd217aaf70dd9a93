//! The environment's shared allocator (C API 23) on the real runtime: on ORT 1.32 the CPU has one;
//! a tensor made there, written from Rust, feeds two sessions that use the environment's
//! allocators (`session.use_env_allocators=1`) and gives the same logits as a tensor Rust owns,
//! many times over; on 1.16.2 the call is refused with `NeedsNewerRuntime` before it reaches ORT.

use onnxrt::{Environment, Error, MemoryInfo, Session, Value};
use onnxrt_tests::{mlp_input, model};

fn logits(session: &Session, x: &Value<'_>) -> Vec<f32> {
    let out = session.run(&[("x", x)]).expect("run");
    out.get("logits").expect("logits").to_array::<f32>().expect("f32").iter().copied().collect()
}

#[test]
fn a_tensor_of_the_shared_allocator_feeds_sessions_sharing_it() {
    let env = Environment::global().expect("env");
    let cpu = MemoryInfo::cpu().expect("cpu memory");
    if onnxrt::runtime_info().expect("runtime").api_level < 23 {
        let error = env.shared_allocator(&cpu).expect_err("refused before 1.23");
        assert!(matches!(error, Error::NeedsNewerRuntime { needs: 23, .. }), "{error:?}");
        return;
    }
    let shared = env.shared_allocator(&cpu).expect("shared allocator").expect("the CPU has one");
    let expected = {
        let session = Session::builder().commit_from_file(model("mlp.onnx")).expect("session");
        logits(&session, &Value::from_array(mlp_input()).expect("input"))
    };
    let sessions: Vec<Session> = (0..2)
        .map(|_| {
            Session::builder()
                .config_entry("session.use_env_allocators", "1")
                .commit_from_file(model("mlp.onnx"))
                .expect("session on the environment's allocators")
        })
        .collect();
    for round in 0..20 {
        let mut x = shared.tensor::<f32>(&[2, 16]).expect("tensor");
        assert!(x.view::<f32>().expect("view").iter().all(|v| *v == 0.0), "zero-filled");
        x.view_mut::<f32>().expect("writable").assign(&mlp_input().into_dyn());
        for session in &sessions {
            assert_eq!(logits(session, &x), expected, "round {round}");
        }
    }
    // The same allocator each time it is asked for.
    let again = env.shared_allocator(&cpu).expect("again").expect("still there");
    let y = again.tensor::<i64>(&[3]).expect("tensor");
    assert_eq!(y.view::<i64>().expect("view").as_slice(), Some(&[0i64, 0, 0][..]));
}
