//! Real cargo builds of a tiny downstream crate, as a user of the published crates runs them:
//! a provisioning that must fail prints its advice once, and touching the crate's own source
//! reruns neither onnxrt-sys's build script nor the compilation of onnxrt-sys and onnxrt.
//!
//! The crates build in `CARGO_TARGET_TMPDIR/downstream` (kept between runs, so only the first run
//! compiles bindgen and the rest), offline, with a copy of the workspace's Cargo.lock.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// One nested cargo at a time: both tests share the target folder and its lock.
static CARGO: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Writes a binary crate named `name` that depends on the workspace's `package`.
fn downstream(name: &str, package: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("onnxrt-downstream-").tempdir().expect("a scratch folder");
    let path = workspace().join(package);
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n\n\
         [dependencies]\n{package} = {{ path = {:?} }}\n",
        path.display().to_string()
    );
    std::fs::write(dir.path().join("Cargo.toml"), manifest).expect("Cargo.toml");
    std::fs::create_dir(dir.path().join("src")).expect("src");
    let crate_name = package.replace('-', "_");
    std::fs::write(dir.path().join("src/main.rs"), format!("use {crate_name} as _;\nfn main() {{}}\n"))
        .expect("main.rs");
    // The versions the workspace already uses: an offline build resolves without a registry.
    std::fs::copy(workspace().join("Cargo.lock"), dir.path().join("Cargo.lock")).expect("Cargo.lock");
    dir
}

/// `cargo build -v --offline` of the crate in `dir`, with `env` set on top of this process's.
fn cargo_build(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-v", "--offline", "--color", "never"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("downstream"))
        .env("CARGO_TERM_COLOR", "never");
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().expect("cargo runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn a_failed_provisioning_prints_its_advice_once() {
    let _one = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    let app = downstream("failing_app", "onnxrt-sys");
    let empty_cache = tempfile::tempdir().expect("an empty cache");
    let cache = empty_cache.path().to_str().expect("a UTF-8 path");
    // Offline with an empty cache: no distribution can be had, so the build script must fail.
    let output = cargo_build(
        app.path(),
        &[("ONNXRT_OFFLINE", "1"), ("ONNXRT_CACHE_DIR", cache), ("ONNXRT_DIST", "cpu-1.16.2-registry")],
    );
    let all = text(&output);
    assert!(!output.status.success(), "the build should fail:\n{all}");
    assert!(all.contains("failed to run custom build command for `onnxrt-sys"), "{all}");
    // Two lines of the advice (choosing a distribution; the config lines that make it stick).
    for line in ["Choose another one with ONNXRT_DIST", "put in its .cargo/config.toml:"] {
        assert_eq!(all.matches(line).count(), 1, "{line:?} should appear once in cargo's output:\n{all}");
    }
    assert_eq!(all.matches("could not provide ONNX Runtime").count(), 1, "{all}");
}

/// Builds, touches main.rs, builds again: the second build must find onnxrt-sys (build script
/// run included) and onnxrt fresh.
fn touch_rebuilds_only_the_app(env: &[(&str, &str)]) {
    let app = downstream("touching_app", "onnxrt");
    let first = cargo_build(app.path(), env);
    assert!(first.status.success(), "first build ({env:?}):\n{}", text(&first));
    let main = std::fs::File::options().write(true).open(app.path().join("src/main.rs")).expect("main.rs");
    main.set_modified(std::time::SystemTime::now()).expect("touch main.rs");
    drop(main);
    let second = cargo_build(app.path(), env);
    let all = text(&second);
    assert!(second.status.success(), "second build ({env:?}):\n{all}");
    for package in ["onnxrt-sys", "onnxrt"] {
        let fresh = format!("Fresh {package} v");
        assert!(all.lines().any(|l| l.trim_start().starts_with(&fresh)), "{package} not fresh ({env:?}):\n{all}");
        let dirty = format!("Dirty {package} v");
        assert!(!all.contains(&dirty), "{package} rebuilt ({env:?}):\n{all}");
    }
    assert!(!all.contains("build-script-build`"), "a build script ran ({env:?}):\n{all}");
    assert!(all.contains("Compiling touching_app v0.1.0"), "the app itself was not rebuilt ({env:?}):\n{all}");
}

#[test]
fn touching_the_app_reruns_no_build_script_of_ours() {
    let _one = CARGO.lock().unwrap_or_else(|e| e.into_inner());
    // As the test runs (libclang found wherever this machine has it: bindgen runs), then hidden.
    touch_rebuilds_only_the_app(&[]);
    touch_rebuilds_only_the_app(&[("LIBCLANG_PATH", "/nonexistent")]);
}
