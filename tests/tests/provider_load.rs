//! Provider-load diagnosis reproduced for real on a machine without a GPU (the seeds' error
//! tables): a CPU-only runtime asked for CUDA; the real CUDA 13 build of ORT 1.30 (from the
//! onnxruntime-gpu wheel, assembled by `onnxrt-dist assemble gpu-cuda13-1.30.0-wheel`) whose CUDA
//! provider library is present but whose CUDA dependencies are not; and that runtime with its
//! provider libraries missing. Each case runs in its own process (`onnxrt-probe`).
//!
//! Needs `--features cuda`. Without the assembled wheel the GPU-build cases print why they are
//! skipped, unless ONNXRT_REQUIRE_GPU_WHEEL=1 (CI sets it), which makes them fail instead.
#![cfg(feature = "cuda")]

use std::path::{Path, PathBuf};
use std::process::Command;

fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models").join(name)
}

fn probe(runtime: Option<&Path>, provider: &str) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_onnxrt-probe"));
    command.env_remove("LD_LIBRARY_PATH").env_remove("ONNXRT_DYLIB_PATH");
    if let Some(runtime) = runtime {
        command.env("ONNXRT_DYLIB_PATH", runtime);
    }
    let output = command.arg(provider).arg(model("mlp.onnx")).output().expect("probe runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The lib folder of the assembled ORT 1.30 CUDA 13 build, if present.
fn gpu_build() -> Option<PathBuf> {
    let mut config = build_support::Config::from_env().expect("config");
    "gpu-cuda13-1.30.0-wheel".clone_into(&mut config.dist);
    config.lib_dir = None;
    config.archive = None;
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

#[test]
fn a_cpu_only_runtime_asked_for_cuda_says_so() {
    let out = probe(None, "cuda");
    assert!(out.starts_with("ERR ProviderNotAvailable"), "{out}");
    assert!(out.contains("not in this ONNX Runtime build"), "{out}");
    assert!(out.contains("CPUExecutionProvider"), "{out}");
}

#[test]
fn cuda_provider_present_but_its_cuda_libraries_missing_names_the_library() {
    let Some(lib_dir) = gpu_build() else { return };
    let out = probe(Some(&lib_dir), "cuda");
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    // The loader's own words, naming a CUDA 13 library, and the fix.
    assert!(out.contains(".so.13: cannot open shared object file") || out.contains("libcuda.so.1"), "{out}");
    assert!(out.contains("Fix: install"), "{out}");
}

#[test]
fn tensorrt_provider_without_its_libraries_names_one() {
    let Some(lib_dir) = gpu_build() else { return };
    let out = probe(Some(&lib_dir), "tensorrt");
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(out.contains("cannot open shared object file"), "{out}");
}

#[test]
fn provider_libraries_missing_beside_the_runtime_are_named() {
    let Some(lib_dir) = gpu_build() else { return };
    let dir = std::env::temp_dir().join(format!("onnxrt-bare-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let runtime = dir.join("libonnxruntime.so.1.30.0");
    std::fs::copy(lib_dir.join("libonnxruntime.so.1.30.0"), &runtime).expect("copy runtime alone");
    let out = probe(Some(&runtime), "cuda");
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(out.contains("is not beside"), "{out}");
    assert!(
        out.contains("libonnxruntime_providers_shared.so") || out.contains("libonnxruntime_providers_cuda.so"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_gpu_build_still_runs_on_the_cpu_when_no_provider_is_asked() {
    let Some(lib_dir) = gpu_build() else { return };
    let out = probe(Some(&lib_dir), "none");
    assert!(out.starts_with("OK 1.30.0"), "{out}");
}

/// Issue 20 (and 25): ORT reads some provider options as raw addresses (or libraries to load);
/// through the safe `raw()` only keys on the provider's allow-list pass, and these are refused,
/// naming the key, before the provider is even loaded (so this runs on the CPU runtime). The stream goes through the `unsafe` `user_compute_stream`.
#[test]
fn raw_refuses_keys_ort_reads_as_addresses() {
    use onnxrt::providers::cuda::{CudaOptions, ADDRESS_KEYS};
    let path = model("add_f32.onnx");
    for key in ADDRESS_KEYS {
        let options = CudaOptions::new().raw(key, 4096);
        let result = onnxrt::Session::builder().cuda(options).commit_from_file(&path);
        match result {
            Err(onnxrt::Error::KeyRefused { key: refused, .. }) => assert_eq!(&refused, key),
            other => panic!("CUDA raw key `{key}` was not refused: {other:?}"),
        }
    }
    #[cfg(feature = "tensorrt")]
    for key in onnxrt::providers::tensorrt::UNSAFE_KEYS {
        let options = onnxrt::providers::tensorrt::TensorRtOptions::new().raw(key, 4096);
        let result = onnxrt::Session::builder().tensorrt(options).commit_from_file(&path);
        match result {
            Err(onnxrt::Error::KeyRefused { key: refused, .. }) => assert_eq!(&refused, key),
            other => panic!("TensorRT raw key `{key}` was not refused: {other:?}"),
        }
    }
    // An ordinary raw key still reaches the provider (which this CPU runtime does not have).
    let ordinary =
        onnxrt::Session::builder().cuda(CudaOptions::new().raw("cudnn_conv1d_pad_to_nc1d", 1)).commit_from_file(&path);
    assert!(!matches!(ordinary, Err(onnxrt::Error::KeyRefused { .. })), "{ordinary:?}");
    // A key the CUDA list does not know is refused the same way (ORT 1.30 refused it later).
    let unknown = onnxrt::Session::builder().cuda(CudaOptions::new().raw("no_such_option", 1)).commit_from_file(&path);
    assert!(matches!(unknown, Err(onnxrt::Error::KeyRefused { .. })), "{unknown:?}");
}
