//! The mistakes the type system must refuse, compiled for real: each file in `tests/compile_fail/`
//! starts with `// expect: E0xxx` (or `// expect: ok` for the control that must compile) and is
//! checked (`cargo check`) as the `main.rs` of a scratch crate that depends on onnxrt as a user's
//! crate would. The error code must be the one expected, so a case that stops compiling for
//! another reason (a renamed function) fails instead of passing by accident.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repository root").to_path_buf()
}

/// The scratch crate, made once: onnxrt by path, the workspace's lock file for the same versions.
fn scratch_crate() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("compile-fail");
    std::fs::create_dir_all(dir.join("src")).expect("scratch crate folder");
    let manifest = format!(
        "[package]\nname = \"onnxrt-compile-fail\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\nonnxrt = {{ path = {:?} }}\n",
        repo().join("onnxrt")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).expect("scratch manifest");
    std::fs::copy(repo().join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock file");
    dir
}

/// The error codes of `output` (`E0502,E0597`), `ok` when it compiled, `other` for a failure
/// without a code (a build script, a full disk).
fn outcome(compiled: bool, output: &str) -> String {
    if compiled {
        return "ok".into();
    }
    let mut codes: Vec<&str> =
        output.match_indices("error[E").filter_map(|(i, _)| output[i + 6..].split(']').next()).collect();
    codes.sort_unstable();
    codes.dedup();
    if codes.is_empty() {
        "other".into()
    } else {
        codes.join(",")
    }
}

#[test]
fn every_mistake_is_refused_with_its_error_code() {
    let scratch = scratch_crate();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(repo().join("tests/compile_fail"))
        .expect("tests/compile_fail")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 10, "the cases went missing: {cases:?}");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut mismatches = Vec::new();
    for case in &cases {
        let source = std::fs::read_to_string(case).expect("case");
        let expect = source.lines().next().and_then(|l| l.strip_prefix("// expect: ")).expect("`// expect:` line");
        std::fs::write(scratch.join("src/main.rs"), &source).expect("main.rs");
        let out = Command::new(&cargo)
            .args(["check", "--quiet", "--manifest-path"])
            .arg(scratch.join("Cargo.toml"))
            .arg("--target-dir")
            .arg(scratch.join("target"))
            .env_remove("RUSTFLAGS")
            .output()
            .expect("cargo check runs");
        let got = outcome(out.status.success(), &String::from_utf8_lossy(&out.stderr));
        let name = case.file_name().expect("name").to_string_lossy().into_owned();
        println!("{name:<40} expected {expect:<6} got {got}");
        if !got.split(',').any(|code| code == expect) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            mismatches.push(format!("{name}: expected {expect}, got {got}\n{}", &stderr[..stderr.len().min(3000)]));
        }
    }
    assert!(mismatches.is_empty(), "{} of {} cases:\n{}", mismatches.len(), cases.len(), mismatches.join("\n"));
}

#[test]
fn error_codes_are_read_from_compiler_output() {
    let output = "error[E0597]: `x` does not live long enough\n...\nerror[E0502]: cannot borrow\nerror[E0597]: again";
    assert_eq!(outcome(false, output), "E0502,E0597");
    assert_eq!(outcome(false, "error: failed to run custom build command"), "other");
    assert_eq!(outcome(true, ""), "ok");
}
