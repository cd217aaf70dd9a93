//! `onnxrt run` without `--input`: generated inputs (seeded random or zeros, free axes from
//! `--shape`), and the statistics of each output.

mod common;

use common::{model, onnxrt_with, read_npy_f32, write_npy_f32, Ran};

fn run_identity(dir: &std::path::Path, out: &str, extra: &[&str]) -> (Ran, Vec<f32>) {
    let out = dir.join(out);
    let path = model("identity_f32.onnx");
    let mut args =
        vec!["run", path.to_str().expect("utf-8"), "--repeat", "0", "--output-dir", out.to_str().expect("utf-8")];
    args.extend_from_slice(extra);
    let ran = onnxrt_with(&args);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let (_, values) = read_npy_f32(&out.join("y.npy"));
    (ran, values)
}

#[test]
fn generated_inputs_are_deterministic_for_a_seed_and_follow_shape_and_fill() {
    let dir = tempfile::tempdir().expect("tempdir");
    // identity_f32 is x[N, M] → y: its output is the generated input.
    let (ran, first) = run_identity(dir.path(), "a", &["--shape", "x=3x5", "--seed", "42"]);
    assert!(ran.stdout.contains("x: f32 [3, 5], random in [0, 1)"), "{}", ran.both());
    assert!(ran.stdout.contains("--seed 42"), "{}", ran.both());
    assert_eq!(first.len(), 15);
    assert!(first.iter().all(|v| (0.0..1.0).contains(v)), "{first:?}");
    let distinct: std::collections::BTreeSet<u32> = first.iter().map(|v| v.to_bits()).collect();
    assert!(distinct.len() > 10, "random values, not a constant: {first:?}");
    let (_, again) = run_identity(dir.path(), "b", &["--shape", "x=3x5", "--seed", "42"]);
    assert_eq!(first, again, "the same seed gives the same inputs");
    let (_, other) = run_identity(dir.path(), "c", &["--shape", "x=3x5", "--seed", "43"]);
    assert_ne!(first, other, "another seed gives other inputs");
    let (ran, zeros) = run_identity(dir.path(), "d", &["--shape", "x=2x2", "--fill", "zeros"]);
    assert_eq!(zeros, vec![0.0; 4]);
    assert!(ran.stdout.contains("x: f32 [2, 2], zeros"), "{}", ran.both());
    // Without --shape the free axes are 1, and the line says how to choose them.
    let (ran, one) = run_identity(dir.path(), "e", &[]);
    assert_eq!(one.len(), 1);
    assert!(ran.stdout.contains("free axes N, M set to 1; choose with --shape x=DIMS"), "{}", ran.both());
}

#[test]
fn a_shape_that_contradicts_the_model_is_refused() {
    let path = model("dynamic_batch.onnx");
    let path = path.to_str().expect("utf-8");
    // images is [batch, 3, 4, 4]: batch is free, the rest fixed.
    let ran = onnxrt_with(&["run", path, "--shape", "images=2x3x4x4", "--repeat", "0"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.contains("pooled  f32   [2, 3]"), "{}", ran.both());
    let ran = onnxrt_with(&["run", path, "--shape", "images=2x5x4x4"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("declares input `images` as [batch, 3, 4, 4]"), "{}", ran.both());
    let ran = onnxrt_with(&["run", path, "--shape", "pixels=1x3x4x4"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("no input named `pixels`") && ran.stderr.contains("images"), "{}", ran.both());
    let ran = onnxrt_with(&["run", path, "--shape", "images=1xthree"]);
    assert_eq!(ran.code, Some(2), "{}", ran.both());
}

#[test]
fn other_element_types_are_generated_too() {
    for (name, line) in
        [("identity_i64.onnx", "x: i64 [2, 4], random in 0..=9"), ("identity_bool.onnx", "x: bool [2, 4]")]
    {
        let path = model(name);
        let ran = onnxrt_with(&["run", path.to_str().expect("utf-8"), "--shape", "x=2x4", "--repeat", "0"]);
        assert_eq!(ran.code, Some(0), "{}", ran.both());
        assert!(ran.stdout.contains(line), "{name}: {}", ran.both());
    }
}

#[test]
fn outputs_show_min_max_mean_and_nan_inf_counts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = [f32::NAN, 1.0, f32::INFINITY, -4.0, 2.0, 0.5];
    let b = [0.0, 1.0, 0.0, 0.0, 2.0, 0.5];
    write_npy_f32(&dir.path().join("a.npy"), &[2, 3], &a);
    write_npy_f32(&dir.path().join("b.npy"), &[2, 3], &b);
    let path = model("add_f32.onnx");
    let ran = onnxrt_with(&[
        "run",
        path.to_str().expect("utf-8"),
        "--input",
        &format!("a={}", dir.path().join("a.npy").display()),
        "--input",
        &format!("b={}", dir.path().join("b.npy").display()),
    ]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    // sum = [NaN, 2, inf, -4, 4, 1]: finite min -4, max 4, mean (2 - 4 + 4 + 1) / 4 = 0.75.
    let header = ran.stdout.lines().find(|l| l.starts_with("OUTPUT")).expect("a table");
    assert!(header.contains("MIN") && header.contains("MEAN") && header.contains("NAN") && header.contains("INF"));
    let row: Vec<&str> = ran.stdout.lines().find(|l| l.starts_with("sum")).expect("a row").split_whitespace().collect();
    assert_eq!(&row[..8], ["sum", "f32", "[2,", "3]", "-4", "4", "0.75", "1"], "{}", ran.both());
    assert_eq!(row[8], "1", "{}", ran.both());
    assert!(ran.stdout.contains("[NaN, 2, inf, -4, 4, 1]"), "{}", ran.both());
}
