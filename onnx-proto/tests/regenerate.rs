//! `src/generated/onnx.rs` is exactly what prost-build generates from the `.proto` files of the
//! onnx Python package (the official `onnx/onnx-ml.proto` and `onnx/onnx-data.proto`), parsed by
//! protox so that no `protoc` binary is needed. The files are found in `ONNX_PROTO_DIR` (the folder
//! that holds `onnx/`) or else in the onnx package that `python3` imports (`tools/dev.sh` installs
//! onnx==1.14.1). Without either the test is skipped, unless `ONNXRT_REQUIRE_ONNX_PROTO=1` (set by
//! `tools/dev.sh test`) makes it fail.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The onnx release whose `.proto` files `src/generated/onnx.rs` was generated from.
const ONNX_VERSION: &str = "1.14.1";

/// The folder holding `onnx/onnx-data.proto`, and the onnx version when it came from python.
fn proto_root() -> Option<(PathBuf, Option<String>)> {
    if let Some(dir) = std::env::var_os("ONNX_PROTO_DIR") {
        return Some((PathBuf::from(dir), None));
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import onnx, os; print(os.path.dirname(os.path.dirname(onnx.__file__))); print(onnx.__version__)",
        ])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let (dir, version) = (lines.next()?, lines.next()?);
    out.status.success().then(|| (PathBuf::from(dir), Some(version.to_string())))
}

/// Runs protox and prost-build with the settings the checked-in file was made with.
fn generate(root: &Path, out_dir: &Path) -> PathBuf {
    let files = protox::compile(["onnx/onnx-data.proto"], [root]).expect("protox parses the onnx .proto files");
    let mut config = prost_build::Config::new();
    // Tensor data as `Bytes`: decoding from a `Bytes` buffer then shares it instead of copying.
    // No comments: the generated file holds the messages' structure only, none of onnx's prose.
    config.bytes(["."]).disable_comments(["."]).out_dir(out_dir);
    config.compile_fds(files).expect("prost-build generates Rust");
    out_dir.join("onnx.rs")
}

#[test]
fn checked_in_messages_equal_a_fresh_prost_build_run() {
    let required = std::env::var_os("ONNXRT_REQUIRE_ONNX_PROTO").is_some_and(|v| v == "1");
    let Some((root, version)) = proto_root().filter(|(root, _)| root.join("onnx/onnx-data.proto").is_file()) else {
        assert!(!required, "ONNXRT_REQUIRE_ONNX_PROTO=1, but neither ONNX_PROTO_DIR nor `python3 -c 'import onnx'` gives the onnx .proto files");
        eprintln!("skipped: no onnx .proto files (set ONNX_PROTO_DIR or pip install onnx=={ONNX_VERSION})");
        return;
    };
    if let Some(version) = version {
        assert_eq!(version, ONNX_VERSION, "python3's onnx package is not the release the messages come from");
    }
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("onnx-proto");
    std::fs::create_dir_all(&out_dir).expect("creating the output folder");
    let fresh_path = generate(&root, &out_dir);
    let checked_in_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/generated/onnx.rs");
    let fresh = std::fs::read_to_string(&fresh_path).expect("reading the generated messages");
    let checked_in = std::fs::read_to_string(&checked_in_path).unwrap_or_default();
    if fresh != checked_in {
        let line = fresh
            .lines()
            .zip(checked_in.lines())
            .position(|(a, b)| a != b)
            .map_or(fresh.lines().count().min(checked_in.lines().count()) + 1, |i| i + 1);
        panic!(
            "src/generated/onnx.rs differs from prost-build's output (first at line {line}); if the change is \
             intended: cp {} {}",
            fresh_path.display(),
            checked_in_path.display()
        );
    }
}
