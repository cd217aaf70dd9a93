//! Placement as data (C API 24): `Session::placement` on ORT >= 1.24
//! (`ONNXRT_DIST=cpu-1.32.0-registry`) says which provider runs which node, the same as the
//! profile parser reads from a profiled run; without `record_placement` it is a typed error; on
//! 1.16.2 it is refused with `Error::NeedsNewerRuntime`.

use onnxrt::{Error, OptimizationLevel, Session, Value};
use onnxrt_tests::{mlp_input, model, TempDir};

fn api_level() -> u32 {
    onnxrt::runtime_info().expect("runtime loads").api_level
}

fn builder() -> onnxrt::SessionBuilder {
    Session::builder().optimization_level(OptimizationLevel::Basic)
}

#[test]
fn placement_from_the_assignment_matches_the_profiled_run() {
    let session = builder().record_placement(true).commit_from_file(model("mlp.onnx")).expect("session");
    if api_level() < 24 {
        let error = session.placement().expect_err("refused");
        assert!(matches!(error, Error::NeedsNewerRuntime { needs: 24, .. }), "{error:?}");
        return;
    }
    let placement = session.placement().expect("placement");
    let on_cpu = placement.on_cpu();
    assert!(!on_cpu.is_empty(), "{placement:?}");
    assert_eq!(placement.by_provider.keys().collect::<Vec<_>>(), ["CPUExecutionProvider"], "{placement:?}");
    let scratch = TempDir::new("placement-info");
    let x = Value::from_array(mlp_input()).expect("input");
    let (profiled, _) = onnxrt::profiling::placement(builder(), &model("mlp.onnx"), &[("x", &x)], scratch.path())
        .expect("profiled placement");
    // mlp.onnx's nodes have no names (the profile makes up `<op>_<index>`): compare op types.
    let op_types = |nodes: Vec<(String, String)>| nodes.into_iter().map(|(_, op)| op).collect::<Vec<_>>();
    let mut from_profile = op_types(profiled.on_cpu());
    let mut from_assignment = op_types(on_cpu);
    from_profile.sort();
    from_assignment.sort();
    assert_eq!(from_assignment, from_profile, "the two sources agree on what runs where");
}

#[test]
fn placement_without_recording_is_a_typed_error() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("session");
    let error = session.placement().expect_err("not recorded");
    if api_level() < 24 {
        assert!(matches!(error, Error::NeedsNewerRuntime { .. }), "{error:?}");
    } else {
        assert!(matches!(error, Error::BadSetting { .. }), "{error:?}");
    }
}
