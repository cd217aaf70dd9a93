//! `onnxrt run --compare DIR|FILE --atol --rtol` against reference `.npy` files written by the test.

mod common;

use common::{model, onnxrt_with, write_npy_f32, Ran};

const A: [f32; 6] = [1.5, -2.0, 3.25, 0.0, 100.0, -7.5];
const B: [f32; 6] = [10.0, 20.0, -30.0, 0.125, 1e-3, 7.5];

fn sum() -> Vec<f32> {
    A.iter().zip(&B).map(|(a, b)| a + b).collect()
}

fn run_add(dir: &std::path::Path, extra: &[&str]) -> Ran {
    write_npy_f32(&dir.join("a.npy"), &[2, 3], &A);
    write_npy_f32(&dir.join("b.npy"), &[2, 3], &B);
    let path = model("add_f32.onnx");
    let mut args = vec![
        "run".to_owned(),
        path.display().to_string(),
        "--input".into(),
        format!("a={}", dir.join("a.npy").display()),
        "--input".into(),
        format!("b={}", dir.join("b.npy").display()),
        "--repeat".into(),
        "0".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    onnxrt_with(&args)
}

#[test]
fn matching_references_pass_as_a_folder_or_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let refs = dir.path().join("refs");
    std::fs::create_dir(&refs).expect("mkdir");
    write_npy_f32(&refs.join("sum.npy"), &[2, 3], &sum());
    let ran = run_add(dir.path(), &["--compare", refs.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.contains("COMPARE (atol 0.00001, rtol 0.00001)"), "{}", ran.both());
    let row = ran.stdout.lines().skip_while(|l| !l.starts_with("COMPARE")).find(|l| l.starts_with("sum")).expect("row");
    assert!(row.contains(" ok ") && row.contains("sum.npy"), "{}", ran.both());
    let file = refs.join("sum.npy");
    let ran = run_add(dir.path(), &["--compare", file.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
}

#[test]
fn a_mismatch_exits_1_naming_the_worst_element_and_tolerances_decide() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ref.npy");
    let mut expected = sum();
    expected[4] += 0.5; // [1, 1]: 100.001 → 100.501, the worst
    expected[1] += 0.01; // [0, 1]
    write_npy_f32(&file, &[2, 3], &expected);
    let file = file.to_str().expect("utf-8");
    let ran = run_add(dir.path(), &["--compare", file]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stdout.contains("MISMATCH"), "{}", ran.both());
    assert!(
        ran.stderr.contains("`sum`: 2 of 6 elements differ; worst at [1, 1]: got 100.001, expected 100.501"),
        "{}",
        ran.both()
    );
    // Within an absolute tolerance of 0.6 everything matches; a relative one of 1% covers 0.5 of 100.5
    // but not 0.01 of 18 (0.18 % would).
    assert_eq!(run_add(dir.path(), &["--compare", file, "--atol", "0.6"]).code, Some(0));
    let ran = run_add(dir.path(), &["--compare", file, "--atol", "0", "--rtol", "0.01"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let ran = run_add(dir.path(), &["--compare", file, "--atol", "0", "--rtol", "0.001"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("1 of 6 elements differ; worst at [1, 1]"), "{}", ran.both());
}

#[test]
fn a_reference_of_another_shape_or_a_missing_one_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("ref.npy");
    write_npy_f32(&file, &[3, 2], &sum());
    let ran = run_add(dir.path(), &["--compare", file.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("shape [2, 3], but the reference is [3, 2]"), "{}", ran.both());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let ran = run_add(dir.path(), &["--compare", empty.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("sum.npy"), "{}", ran.both());
}

#[test]
fn generated_outputs_saved_once_are_a_reference_for_the_next_run() {
    // The workflow: save the outputs of one run, compare a later run (same seed) against them.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = model("mlp.onnx");
    let path = path.to_str().expect("utf-8");
    let saved = dir.path().join("saved");
    let ran =
        onnxrt_with(&["run", path, "--shape", "x=4x16", "--seed", "5", "--output-dir", saved.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let ran =
        onnxrt_with(&["run", path, "--shape", "x=4x16", "--seed", "5", "--compare", saved.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let ran =
        onnxrt_with(&["run", path, "--shape", "x=4x16", "--seed", "6", "--compare", saved.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(1), "another seed, other outputs: {}", ran.both());
    assert!(ran.stderr.contains("`logits`") && ran.stderr.contains("worst at ["), "{}", ran.both());
}
