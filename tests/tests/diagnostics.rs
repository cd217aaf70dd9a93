//! Diagnostics on the real runtime: placement from profiling, the profile summary, and the
//! provider-load diagnosis with real provider libraries (issue: the seeds' error tables).

use std::path::{Path, PathBuf};

use onnxrt::profiling::{placement, Profile};
use onnxrt::{Session, Value};

fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models").join(name)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("onnxrt-diag-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn placement_reports_every_node_of_a_cpu_session_on_the_cpu() {
    let x = Value::from_vec(&[2, 16], vec![0.25f32; 32]).expect("input");
    let dir = scratch("placement");
    let (placement, profile) =
        placement(Session::builder().intra_op_threads(1), &model("mlp.onnx"), &[("x", &x)], &dir).expect("placement");
    // mlp.onnx: Gemm, Relu, Gemm (ORT may fuse Gemm+Relu; every kernel still names its provider).
    assert!(placement.anything_on_cpu());
    let on_cpu = placement.on_cpu();
    assert!(!on_cpu.is_empty());
    assert!(on_cpu.iter().any(|(_, op)| op == "Gemm" || op == "FusedGemm"), "{on_cpu:?}");
    assert_eq!(placement.by_provider.keys().collect::<Vec<_>>(), ["CPUExecutionProvider"]);
    assert_eq!(profile.runs_us.len(), 1);
    let table = profile.table();
    assert!(table.contains("CPUExecutionProvider"), "{table}");
    // The profile file was cleaned up.
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
}

#[test]
fn profile_summary_counts_each_run() {
    let dir = scratch("summary");
    let session = Session::builder()
        .intra_op_threads(1)
        .profiling(dir.join("prof"))
        .commit_from_file(model("multi_output.onnx"))
        .expect("session");
    let x = Value::from_vec(&[4], vec![1.0f32, 2.0, 3.0, 4.0]).expect("input");
    for _ in 0..3 {
        session.run(&[("x", &x)]).expect("run");
    }
    let file = session.end_profiling().expect("end profiling");
    let profile = Profile::from_file(&file).expect("profile parses");
    assert_eq!(profile.runs_us.len(), 3);
    // Add, Mul and Neg each ran three times.
    let ops = profile.by_op_type();
    for op in ["Add", "Mul", "Neg"] {
        assert_eq!(ops.get(op).map(|s| s.count), Some(3), "{op}: {ops:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
