//! `onnxrt doctor` on machines broken on purpose, the cases that can be made without a
//! GPU: the real ORT 1.30 CUDA 13 build of the onnxruntime-gpu wheel (assembled by `onnxrt-dist
//! assemble gpu-cuda13-1.30.0-wheel`) loaded through `ONNXRT_DYLIB_PATH`, with stand-ins for the
//! CUDA libraries its provider needs: complete ELF libraries under the CUDA names (copies of the
//! wheel's small `libonnxruntime_providers_shared.so`), a truncated one, none at all. In each,
//! the doctor's first FAIL row must name the file at fault, and the GPU session row must point at
//! that row by name.
//!
//! Without the assembled wheel each test prints why it is skipped, unless
//! ONNXRT_REQUIRE_GPU_WHEEL=1 (CI sets it), which makes it fail instead.

mod common;

use std::path::{Path, PathBuf};

use common::{onnxrt, row, rows, run};

type Rows = Vec<(String, String, String, Option<String>)>;

/// The lib folder of the assembled ORT 1.30 CUDA 13 build, if present.
fn wheel_lib() -> Option<PathBuf> {
    let mut config = build_support::Config::from_env().expect("config");
    "gpu-cuda13-1.30.0-wheel".clone_into(&mut config.dist);
    (config.lib_dir, config.archive) = (None, None);
    match build_support::provision(&config) {
        Ok(p) => Some(p.lib_dir),
        Err(e) if std::env::var("ONNXRT_REQUIRE_GPU_WHEEL").is_ok_and(|v| v == "1") => {
            panic!("ONNXRT_REQUIRE_GPU_WHEEL=1 but the GPU build is not available: {e}")
        }
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

/// The CUDA libraries the wheel's CUDA provider needs (`NEEDED`), as complete stand-ins in `dir`.
fn stand_ins(lib: &Path, dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in names {
        std::fs::copy(lib.join("libonnxruntime_providers_shared.so"), dir.join(name)).expect("copy stand-in");
    }
}

const CUDA_13: [&str; 5] =
    ["libcublasLt.so.13", "libcublas.so.13", "libcurand.so.10", "libcudart.so.13", "libcuda.so.1"];

/// `onnxrt doctor --json` with the wheel's runtime and `LD_LIBRARY_PATH` (or none).
fn doctor(runtime: &Path, ld_library_path: Option<&Path>) -> Rows {
    let mut command = onnxrt();
    command.args(["doctor", "--json", "--dist", "gpu-cuda13-1.30.0-wheel"]).env("ONNXRT_DYLIB_PATH", runtime);
    if let Some(path) = ld_library_path {
        command.env("LD_LIBRARY_PATH", path);
    }
    let ran = run(&mut command);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    rows(&ran)
}

fn first_fail(found: &Rows) -> &(String, String, String, Option<String>) {
    found.iter().find(|r| r.1 == "FAIL").unwrap_or_else(|| panic!("no FAIL row in {found:#?}"))
}

/// The GPU session failed and its fix names the `check` row.
fn session_points_at(found: &Rows, check: &str) {
    let session = row(found, "gpu session");
    assert_eq!(session.1, "FAIL", "{session:?}");
    let fix = session.3.as_deref().unwrap_or_default();
    assert!(fix.contains(&format!("the `{check}` row above explains this")), "{session:?}");
    assert!(!fix.contains("rows above"), "{session:?}");
}

#[test]
fn a_truncated_cuda_library_first_on_ld_library_path_is_named_before_anything_loads_it() {
    let Some(lib) = wheel_lib() else { return };
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().join("cuda13");
    stand_ins(&lib, &dir, &CUDA_13[1..]);
    // A copy cut short (as by a full disk or an interrupted download): its ELF header and
    // program headers are intact, its last loadable segment is not.
    let mut bytes = std::fs::read(lib.join("libonnxruntime_providers_shared.so")).expect("read");
    bytes.truncate(0x2100);
    let truncated = dir.join("libcublasLt.so.13");
    std::fs::write(&truncated, bytes).expect("write truncated copy");

    let found = doctor(&lib.join("libonnxruntime.so.1.30.0"), Some(&dir));
    let fail = first_fail(&found);
    assert_eq!(fail.0, "libonnxruntime_providers_cuda.so", "{fail:?}");
    assert!(fail.2.contains(&format!("damaged: {}", truncated.display())), "{fail:?}");
    assert!(fail.2.contains("truncated") && fail.2.contains("LD_LIBRARY_PATH entry 1 of 1"), "{fail:?}");
    let lt = row(&found, "cuda: libcublasLt.so.13");
    assert_eq!(lt.1, "FAIL", "{lt:?}");
    assert!(lt.3.as_deref().unwrap_or_default().contains(&format!("replace {}", truncated.display())), "{lt:?}");
    session_points_at(&found, "libonnxruntime_providers_cuda.so");
}

#[test]
fn a_runtime_folder_without_the_cuda_provider_library_names_it_and_the_fix() {
    let Some(lib) = wheel_lib() else { return };
    let scratch = tempfile::tempdir().expect("tempdir");
    let runtime = scratch.path().join("libonnxruntime.so.1.30.0");
    std::fs::copy(lib.join("libonnxruntime.so.1.30.0"), &runtime).expect("copy runtime");
    std::fs::copy(
        lib.join("libonnxruntime_providers_shared.so"),
        scratch.path().join("libonnxruntime_providers_shared.so"),
    )
    .expect("copy shared");

    let found = doctor(&runtime, None);
    let fail = first_fail(&found);
    assert_eq!(fail.0, "libonnxruntime_providers_cuda.so", "{fail:?}");
    assert!(fail.2.contains(&format!("missing from {}", scratch.path().display())), "{fail:?}");
    assert!(fail.3.as_deref().unwrap_or_default().contains("onnxrt bundle"), "{fail:?}");
    session_points_at(&found, "libonnxruntime_providers_cuda.so");
}

#[test]
fn missing_cudnn_against_the_wheels_cuda_provider_names_libcudnn_and_then_its_sub_libraries() {
    let Some(lib) = wheel_lib() else { return };
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = scratch.path().join("cuda13");
    stand_ins(&lib, &dir, &CUDA_13);
    let runtime = lib.join("libonnxruntime.so.1.30.0");

    // No cuDNN at all.
    let found = doctor(&runtime, Some(&dir));
    let fail = first_fail(&found);
    assert_eq!(fail.0, "cuda: libcudnn.so.9", "{fail:?}");
    assert!(fail.2.contains("not found") && fail.3.as_deref().unwrap_or_default().contains("cuDNN"), "{fail:?}");
    session_points_at(&found, "cuda: libcudnn.so.9");

    // cuDNN 9 present under its full name only (the SONAME link was not made).
    stand_ins(&lib, &dir, &["libcudnn.so.9.14.0"]);
    let found = doctor(&runtime, Some(&dir));
    let fail = first_fail(&found);
    assert_eq!(fail.0, "cuda: libcudnn.so.9", "{fail:?}");
    let fix = fail.3.as_deref().unwrap_or_default();
    assert!(fix.contains(&format!("ln -s {}", dir.join("libcudnn.so.9.14.0").display())), "{fail:?}");
    assert!(!fix.contains("CUDA 13") && !fix.contains("different major"), "{fail:?}");

    // libcudnn.so.9 there, but one of the sub-libraries it loads at the first convolution not.
    std::os::unix::fs::symlink("libcudnn.so.9.14.0", dir.join("libcudnn.so.9")).expect("symlink");
    let subs = [
        "libcudnn_graph.so.9",
        "libcudnn_engines_runtime_compiled.so.9",
        "libcudnn_heuristic.so.9",
        "libcudnn_ops.so.9",
        "libcudnn_cnn.so.9",
        "libcudnn_adv.so.9",
    ];
    stand_ins(&lib, &dir, &subs);
    let found = doctor(&runtime, Some(&dir));
    assert_eq!(row(&found, "cuda: libcudnn.so.9").1, "OK");
    let fail = first_fail(&found);
    assert_eq!(fail.0, "cuda: cuDNN 9 sub-libraries", "{fail:?}");
    assert!(fail.2.contains("missing: libcudnn_engines_precompiled.so.9 ("), "{fail:?}");
    assert!(!subs.iter().any(|s| fail.2.contains(&format!("missing: {s}"))), "{fail:?}");
    session_points_at(&found, "cuda: cuDNN 9 sub-libraries");
}

/// A copy of the wheel's runtime folder (runtime and shared provider library copied, so ORT looks
/// beside the copy) whose CUDA provider library is the wheel's with its embedded release string
/// "1.30.0" patched to "1.29.0": a provider library of another ORT release, made on this machine.
fn runtime_with_a_cuda_provider_of_release_1_29(lib: &Path, dir: &Path) -> PathBuf {
    for name in ["libonnxruntime.so.1.30.0", "libonnxruntime_providers_shared.so"] {
        std::fs::copy(lib.join(name), dir.join(name)).expect("copy");
    }
    let mut bytes = std::fs::read(lib.join("libonnxruntime_providers_cuda.so")).expect("read the CUDA provider");
    let (from, to) = (b"\x001.30.0\x00", b"\x001.29.0\x00");
    let at: Vec<usize> = bytes.windows(from.len()).enumerate().filter(|(_, w)| w == from).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "the 1.30.0 CUDA provider embeds its release once");
    bytes[at[0]..at[0] + to.len()].copy_from_slice(to);
    std::fs::write(dir.join("libonnxruntime_providers_cuda.so"), bytes).expect("write the patched provider");
    dir.join("libonnxruntime.so.1.30.0")
}

#[test]
fn a_cuda_provider_library_of_another_ort_release_is_the_first_fail_row() {
    let Some(lib) = wheel_lib() else { return };
    let scratch = tempfile::tempdir().expect("tempdir");
    let folder = scratch.path().join("runtime");
    std::fs::create_dir_all(&folder).expect("mkdir");
    let runtime = runtime_with_a_cuda_provider_of_release_1_29(&lib, &folder);
    // Everything else the provider needs is there (complete stand-ins), so only the release is wrong.
    let dir = scratch.path().join("cuda13");
    let cudnn = onnxrt_preflight::cudnn::CUDNN_9;
    stand_ins(&lib, &dir, &CUDA_13.iter().chain(&["libcudnn.so.9"]).chain(cudnn).copied().collect::<Vec<_>>());

    let found = doctor(&runtime, Some(&dir));
    let fail = first_fail(&found);
    assert_eq!(fail.0, "libonnxruntime_providers_cuda.so: ORT release", "{fail:?}");
    let provider = folder.join("libonnxruntime_providers_cuda.so");
    assert!(fail.2.contains(&format!("{} was built for ONNX Runtime 1.29.0", provider.display())), "{fail:?}");
    assert!(fail.2.contains(&format!("the runtime loaded is 1.30.0 ({})", runtime.display())), "{fail:?}");
    let fix = fail.3.as_deref().unwrap_or_default();
    assert!(fix.contains("from the ONNX Runtime 1.30.0 distribution") && fix.contains("onnxrt bundle"), "{fail:?}");
    assert_eq!(row(&found, "libonnxruntime_providers_cuda.so").1, "OK");
    session_points_at(&found, "libonnxruntime_providers_cuda.so: ORT release");
    let session = row(&found, "gpu session");
    assert!(session.2.contains("built for ONNX Runtime 1.29.0"), "{session:?}");

    // The wheel's own folder: the same release.
    let found = doctor(&lib.join("libonnxruntime.so.1.30.0"), None);
    let release = row(&found, "libonnxruntime_providers_cuda.so: ORT release");
    assert_eq!(release.1, "OK", "{release:?}");
    assert!(release.2.contains("built for ONNX Runtime 1.30.0"), "{release:?}");
}

#[test]
fn cuda_visible_devices_empty_is_said_plainly_on_a_machine_without_a_gpu() {
    let ran = run(onnxrt().args(["doctor", "--json"]).env("CUDA_VISIBLE_DEVICES", ""));
    let found = rows(&ran);
    let devices = row(&found, "cuda devices");
    // Honest here: there is no GPU to hide, but the setting would hide one; a WARN, not a FAIL.
    assert_eq!(devices.1, "WARN", "{devices:?}");
    assert!(devices.2.starts_with("no GPU on this machine"), "{devices:?}");
    assert!(devices.2.contains("CUDA_VISIBLE_DEVICES is set but empty"), "{devices:?}");
    assert!(devices.3.as_deref().unwrap_or_default().contains("unset CUDA_VISIBLE_DEVICES"), "{devices:?}");

    let ran = run(onnxrt().args(["doctor", "--json"]).env_remove("CUDA_VISIBLE_DEVICES"));
    let devices = row(&rows(&ran), "cuda devices").clone();
    assert_eq!(devices.1, "SKIP", "{devices:?}");
    assert!(devices.2.contains("CUDA_VISIBLE_DEVICES is not set") && devices.2.contains("libcuda.so.1"), "{devices:?}");
}

#[test]
fn a_truncated_runtime_is_a_fail_row_not_a_sigbus() {
    // The pinned CPU runtime, cut short: loading it kills the process with SIGBUS (exit 135).
    let Ok(info) = serde_json::from_str::<serde_json::Value>(&run(onnxrt().args(["version", "--json"])).stdout) else {
        println!("skipped: `onnxrt version --json` printed no JSON");
        return;
    };
    let Some(library) = info.pointer("/runtime/library").and_then(|l| l.as_str()).map(PathBuf::from) else {
        println!("skipped: no runtime path in {info}");
        return;
    };
    let scratch = tempfile::tempdir().expect("tempdir");
    let bytes = std::fs::read(&library).expect("read runtime");
    let cut = scratch.path().join(library.file_name().expect("name"));
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write truncated runtime");
    let ran = run(onnxrt().args(["doctor", "--json"]).env("ONNXRT_DYLIB_PATH", &cut));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let found = rows(&ran);
    let fail = first_fail(&found);
    assert_eq!(fail.0, "runtime", "{fail:?}");
    assert!(fail.2.contains(&cut.display().to_string()) && fail.2.contains("truncated"), "{fail:?}");
    assert!(fail.2.contains("found via ONNXRT_DYLIB_PATH"), "{fail:?}");
}
