//! Every command piped into a reader that is gone (`onnxrt doctor | head -1`, `| true`) ends
//! quietly with status 0, as cargo and ripgrep do: no "Broken pipe" panic (status 101), nothing
//! on stderr.

mod common;

use common::{model, onnxrt, run, run_into_closed_pipe, write_npy_f32};

#[test]
fn every_command_ends_quietly_with_status_0_when_its_reader_is_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.npy"), dir.path().join("b.npy"));
    write_npy_f32(&a, &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    write_npy_f32(&b, &[2, 3], &[1.0; 6]);
    let add = model("add_f32.onnx").display().to_string();
    let mlp = model("mlp.onnx").display().to_string();
    let (input_a, input_b) = (format!("a={}", a.display()), format!("b={}", b.display()));
    let commands: Vec<Vec<&str>> = vec![
        vec!["doctor"],
        vec!["doctor", "--json"],
        vec!["inspect", &mlp],
        vec!["inspect", &mlp, "--json", "--nodes"],
        vec!["version"],
        vec!["version", "--json"],
        vec!["completions", "bash"],
        vec!["completions", "zsh"],
        vec!["run", &add, "--input", &input_a, "--input", &input_b, "--repeat", "1"],
        vec!["run", &mlp, "--repeat", "2", "--placement"],
        vec!["--help"],
    ];
    for args in &commands {
        // Each command works when read...
        let read = run(onnxrt().args(args));
        assert_eq!(read.code, Some(0), "{args:?}: {}", read.both());
        assert!(!read.stdout.is_empty(), "{args:?} prints something to lose: {}", read.both());
        // ...and ends quietly when nobody reads.
        let closed = run_into_closed_pipe(onnxrt().args(args));
        assert_eq!(closed.code, Some(0), "{args:?} into a closed pipe: {}", closed.both());
        assert_eq!(closed.stderr, "", "{args:?} into a closed pipe: {}", closed.both());
    }
}

#[test]
fn a_failing_command_keeps_its_status_when_its_reader_is_gone() {
    // The rows are lost with stdout, the verdict is not: a FAIL row still means status 1, said
    // on stderr, which is still open.
    let closed = run_into_closed_pipe(onnxrt().args(["doctor", "--dist", "gpu-1.16.2"]));
    assert_eq!(closed.code, Some(1), "{}", closed.both());
    assert!(closed.stderr.contains("check(s) failed (manifest)"), "{}", closed.both());
    assert!(!closed.stderr.contains("Broken pipe") && !closed.stderr.contains("panicked"), "{}", closed.both());
}
