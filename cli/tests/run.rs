//! `onnxrt run` on `.npy` inputs written by the test.

mod common;

use common::{model, onnxrt_with, read_npy_f32, write_npy_f32};

fn inputs(dir: &std::path::Path) -> (Vec<f32>, Vec<f32>) {
    let a: Vec<f32> = vec![1.5, -2.0, 3.25, 0.0, 100.0, -7.5];
    let b: Vec<f32> = vec![10.0, 20.0, -30.0, 0.125, 1e-3, 7.5];
    write_npy_f32(&dir.join("a.npy"), &[2, 3], &a);
    write_npy_f32(&dir.join("b.npy"), &[2, 3], &b);
    (a, b)
}

#[test]
fn add_f32_outputs_a_plus_b_with_timing_and_providers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = inputs(dir.path());
    let out = dir.path().join("out");
    let ran = onnxrt_with(&[
        "run",
        model("add_f32.onnx").to_str().expect("utf-8"),
        "--input",
        &format!("a={}", dir.path().join("a.npy").display()),
        "--input",
        &format!("b={}", dir.path().join("b.npy").display()),
        "--output-dir",
        out.to_str().expect("utf-8"),
        "--repeat",
        "3",
    ]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let expected: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let (header, values) = read_npy_f32(&out.join("sum.npy"));
    assert!(header.contains("'shape': (2, 3)"), "{header}");
    assert_eq!(values, expected);
    // The printed preview has the same values, and the run says where it ran and how fast.
    let printed: Vec<String> = expected.iter().map(|v| v.to_string()).collect();
    assert!(ran.stdout.contains(&format!("[{}]", printed.join(", "))), "{}", ran.both());
    assert!(ran.stdout.contains("[\"CPUExecutionProvider\"]"), "{}", ran.both());
    assert!(ran.stdout.contains("first run") && ran.stdout.contains("of 3 runs"), "{}", ran.both());
}

#[test]
fn a_wrong_input_name_lists_the_valid_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    inputs(dir.path());
    let ran = onnxrt_with(&[
        "run",
        model("add_f32.onnx").to_str().expect("utf-8"),
        "--input",
        &format!("images={}", dir.path().join("a.npy").display()),
        "--input",
        &format!("b={}", dir.path().join("b.npy").display()),
    ]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("no input named `images`"), "{}", ran.both());
    assert!(ran.stderr.contains(r#"["a", "b"]"#), "{}", ran.both());
}

#[test]
fn cuda_strict_on_a_cpu_only_runtime_says_it_is_not_in_this_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    inputs(dir.path());
    let ran = onnxrt_with(&[
        "run",
        model("add_f32.onnx").to_str().expect("utf-8"),
        "--input",
        &format!("a={}", dir.path().join("a.npy").display()),
        "--input",
        &format!("b={}", dir.path().join("b.npy").display()),
        "--provider",
        "cuda",
        "--strict",
    ]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    // With the `cuda` feature through the typed options, without it by name: the same typed refusal.
    assert!(ran.stderr.contains("not in this ONNX Runtime build"), "{}", ran.both());
    assert!(ran.stderr.contains("CPUExecutionProvider"), "{}", ran.both());
}

#[test]
fn unsupported_or_broken_npy_files_are_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    inputs(dir.path());
    // float16 is not one of the types `run` reads.
    let mut half = std::fs::read(dir.path().join("a.npy")).expect("read");
    let at = half.windows(3).position(|w| w == b"<f4").expect("descr");
    half[at..at + 3].copy_from_slice(b"<f2");
    std::fs::write(dir.path().join("half.npy"), half).expect("write");
    let ran = onnxrt_with(&[
        "run",
        model("add_f32.onnx").to_str().expect("utf-8"),
        "--input",
        &format!("a={}", dir.path().join("half.npy").display()),
    ]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("half.npy: dtype <f2 is not supported"), "{}", ran.both());
    let ran = onnxrt_with(&["run", model("add_f32.onnx").to_str().expect("utf-8"), "--input", "a"]);
    assert_eq!(ran.code, Some(2), "{}", ran.both());
}
