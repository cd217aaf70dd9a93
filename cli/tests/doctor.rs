//! `onnxrt doctor` on this machine, with a runtime that cannot be found, with mixed CUDA folders,
//! with an unreadable provider library, and against the real CUDA provider library of the
//! onnxruntime-gpu 1.30 wheel (skipped, saying why, when the wheel is not here).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{onnxrt, row, rows, run};

#[test]
fn on_this_cpu_machine_every_row_says_plainly_what_is_there() {
    let ran = run(onnxrt().args(["doctor", "--json"]));
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let found = rows(&ran);
    let arch = row(&found, "architecture");
    assert_eq!((arch.1.as_str(), arch.2.as_str()), ("OK", "x86_64"));
    let gpu = row(&found, "gpu");
    assert!(gpu.1 == "SKIP" || gpu.1 == "WARN", "{gpu:?}");
    assert!(gpu.2.contains("no NVIDIA GPU/driver found"), "{gpu:?}");
    let runtime = row(&found, "runtime");
    assert_eq!(runtime.1, "OK");
    assert!(runtime.2.contains("ONNX Runtime 1.16.2") && runtime.2.contains("libonnxruntime.so.1.16.2"), "{runtime:?}");
    assert!(row(&found, "search paths").2.contains("recorded at build time"));
    // Where the build got the runtime, which cargo's hidden build warnings cannot show.
    let built = row(&found, "built from");
    assert_eq!(built.1, "OK", "{built:?}");
    assert!(built.2.contains("ONNX Runtime 1.16.2 from") && built.2.contains("sha256"), "{built:?}");
    assert!(row(&found, "providers compiled in").2.contains("CPUExecutionProvider"));
    let providers = row(&found, "provider libraries");
    assert_eq!(providers.1, "OK");
    assert!(providers.2.contains("CPU-only build has no provider libraries"), "{providers:?}");
    assert_eq!(row(&found, "cpu session").1, "OK");
    let gpu_session = row(&found, "gpu session");
    assert!(gpu_session.2.contains("GPU: not available in this runtime"), "{gpu_session:?}");
    assert!(found.iter().all(|r| r.1 != "FAIL"), "{found:#?}");

    // The table says the same for people.
    let ran = run(onnxrt().arg("doctor"));
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(ran.stdout.starts_with("STATUS  CHECK"), "{}", ran.both());
    assert!(ran.stdout.contains("no NVIDIA GPU/driver found"), "{}", ran.both());
}

#[test]
fn a_runtime_that_cannot_be_found_is_a_fail_row_not_a_crash() {
    let ran = run(onnxrt().args(["doctor", "--json"]).env("ONNXRT_DYLIB_PATH", "/nonexistent/onnxruntime"));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let found = rows(&ran);
    let runtime = row(&found, "runtime");
    assert_eq!(runtime.1, "FAIL");
    assert!(runtime.2.contains("/nonexistent/onnxruntime"), "{runtime:?}");
    assert!(runtime.3.as_deref().unwrap_or("").contains("ONNXRT_DYLIB_PATH"), "{runtime:?}");
    assert_eq!(row(&found, "cpu session").1, "SKIP");
    assert!(ran.stderr.contains("check(s) failed"), "{}", ran.both());
}

#[test]
fn several_cuda_versions_on_ld_library_path_warn() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (old, new) = (dir.path().join("cuda-11.8/lib64"), dir.path().join("nvidia/cuda_runtime/lib"));
    std::fs::create_dir_all(&old).expect("mkdir");
    std::fs::create_dir_all(&new).expect("mkdir");
    std::fs::write(new.join("libcudart.so.12"), b"").expect("write");
    let path = format!("{}:{}", old.display(), new.display());
    let ran = run(onnxrt().args(["doctor", "--json"]).env("LD_LIBRARY_PATH", &path));
    let found = rows(&ran);
    let cuda = row(&found, "cuda on LD_LIBRARY_PATH");
    assert_eq!(cuda.1, "WARN", "{cuda:?}");
    assert!(cuda.2.contains("CUDA 11") && cuda.2.contains("CUDA 12"), "{cuda:?}");
    assert!(cuda.3.is_some(), "{cuda:?}");
}

#[test]
fn an_unreadable_provider_library_fails_with_a_chmod_fix() {
    // Root reads anything, so the doctor runs as `nobody` (setpriv from util-linux) where possible.
    let as_root = run(Command::new("id").arg("-u")).stdout.trim() == "0";
    if as_root && Command::new("setpriv").arg("--version").output().is_err() {
        println!("skipped: running as root without setpriv, so no file is unreadable");
        return;
    }
    let dir = std::env::temp_dir().join(format!("onnxrt-cli-unreadable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod dir");
    let lib = dir.join("libonnxruntime_providers_cuda.so");
    // The content never matters: opening the file is what fails.
    std::fs::write(&lib, b"\x7fELF\x02\x01\x01").expect("write");
    std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o000)).expect("chmod 000");
    let mut command = if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(env!("CARGO_BIN_EXE_onnxrt"));
        c
    } else {
        onnxrt()
    };
    let ran = run(command.args(["doctor", "--json", "--provider-dir"]).arg(&dir).env_remove("LD_LIBRARY_PATH"));
    let _ = std::fs::remove_dir_all(&dir);
    if ran.stdout.trim().is_empty() {
        // `nobody` cannot reach this build's binary or runtime (a private home folder, say).
        println!("skipped: the doctor could not run as nobody here: {}", ran.both());
        return;
    }
    let found = rows(&ran);
    let cuda = row(&found, "libonnxruntime_providers_cuda.so");
    assert_eq!(cuda.1, "FAIL", "{cuda:?}");
    assert!(cuda.2.contains("permission denied"), "{cuda:?}");
    assert!(cuda.3.as_deref().unwrap_or("").contains("chmod a+r"), "{cuda:?}");
    assert_eq!(ran.code, Some(1), "{}", ran.both());
}

/// The folder holding the CUDA provider library of the onnxruntime-gpu 1.30.0 wheel, if this
/// machine has it: `ONNXRT_TEST_GPU_WHEEL` (a `.whl` or a folder), the assembled
/// `gpu-cuda13-1.30.0-wheel` distribution, an extracted copy, or a downloaded wheel.
fn gpu_wheel_providers(scratch: &Path) -> Result<PathBuf, String> {
    let has_cuda = |dir: &Path| dir.join("libonnxruntime_providers_cuda.so").is_file();
    let mut wheels: Vec<PathBuf> = Vec::new();
    if let Some(given) = std::env::var_os("ONNXRT_TEST_GPU_WHEEL").map(PathBuf::from) {
        if given.is_dir() && has_cuda(&given) {
            return Ok(given);
        }
        wheels.push(given);
    }
    let mut config = build_support::Config::from_env().map_err(|e| e.to_string())?;
    "gpu-cuda13-1.30.0-wheel".clone_into(&mut config.dist);
    (config.lib_dir, config.archive) = (None, None);
    if let Ok(p) = build_support::provision(&config) {
        if has_cuda(&p.lib_dir) {
            return Ok(p.lib_dir);
        }
    }
    let extracted = Path::new("/tmp/probe/gpuwheel/onnxruntime/capi");
    if has_cuda(extracted) {
        return Ok(extracted.to_owned());
    }
    let name = "onnxruntime_gpu-1.30.0-cp312-cp312-manylinux_2_28_x86_64.whl";
    wheels.extend(["/tmp/probe/whl", "/tmp/whl"].iter().map(|d| Path::new(d).join(name)));
    let Some(wheel) = wheels.into_iter().find(|w| w.is_file()) else {
        return Err("the onnxruntime-gpu 1.30.0 wheel is not on this machine (set ONNXRT_TEST_GPU_WHEEL)".into());
    };
    // Take the two provider libraries out of the wheel (a zip) with Python's zipfile.
    let script = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nfor n in ('libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so'):\n    open(sys.argv[2] + '/' + n, 'wb').write(z.read('onnxruntime/capi/' + n))\n";
    let ran = run(Command::new("python3").arg("-c").arg(script).arg(&wheel).arg(scratch));
    if ran.code != Some(0) || !has_cuda(scratch) {
        return Err(format!("could not extract {}: {}", wheel.display(), ran.both()));
    }
    Ok(scratch.to_owned())
}

#[test]
fn the_real_cuda_provider_library_names_its_missing_cuda_13_libraries() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let dir = match gpu_wheel_providers(scratch.path()) {
        Ok(dir) => dir,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let ran = run(onnxrt()
        .args(["doctor", "--json", "--dist", "gpu-cuda13-1.30.0", "--provider-dir"])
        .arg(&dir)
        .env_remove("LD_LIBRARY_PATH"));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let found = rows(&ran);
    let cuda = row(&found, "libonnxruntime_providers_cuda.so");
    assert!(cuda.2.contains("NEEDED") && cuda.2.contains("libcublasLt.so.13"), "{cuda:?}");
    // On a machine with CUDA 13 installed the library is found; everywhere else it is named.
    let lt = row(&found, "cuda: libcublasLt.so.13");
    if lt.1 == "OK" {
        println!("libcublasLt.so.13 is installed here: {lt:?}");
        return;
    }
    assert_eq!(cuda.1, "FAIL", "{cuda:?}");
    assert!(cuda.2.contains("missing: libcublasLt.so.13"), "{cuda:?}");
    assert_eq!(lt.1, "FAIL", "{lt:?}");
    assert!(lt.2.contains("not found; searched") && lt.2.contains("ld.so.cache"), "{lt:?}");
    let fix = lt.3.as_deref().unwrap_or_default();
    assert!(fix.contains("install the CUDA toolkit libraries") && fix.contains("libcublasLt.so.13"), "{lt:?}");
    assert!(ran.stderr.contains("cuda: libcublasLt.so.13"), "{}", ran.both());
}
