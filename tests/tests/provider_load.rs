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

/// ORT reads some provider options as raw addresses (or libraries to load);
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

/// Runs the probe with `provider` on the GPU build at `runtime`, with `ld_path` as LD_LIBRARY_PATH.
fn probe_with(runtime: &Path, provider: &str, ld_path: Option<&Path>) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_onnxrt-probe"));
    command.env_remove("LD_LIBRARY_PATH").env("ONNXRT_DYLIB_PATH", runtime);
    if let Some(dir) = ld_path {
        command.env("LD_LIBRARY_PATH", dir);
    }
    let output = command.arg(provider).arg(model("mlp.onnx")).output().expect("probe runs");
    assert!(
        output.status.success(),
        "the probe died ({:?}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A runtime folder without `libonnxruntime_providers_cuda.so`, with a CUDA option set.
/// ORT 1.30 loads the provider library at the options update, and that failure was reported as
/// the options being refused ("CUDA options [(\"device_id\", \"0\")]: … refused them").
#[test]
fn a_missing_cuda_provider_library_is_named_even_when_options_are_set() {
    let Some(lib_dir) = gpu_build() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(&lib_dir).expect("lib dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("libonnxruntime") && name != "libonnxruntime_providers_cuda.so" {
            std::fs::copy(entry.path(), dir.path().join(&name)).expect("copy");
        }
    }
    let out = probe_with(&dir.path().join("libonnxruntime.so.1.30.0"), "cuda-options", None);
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(out.contains("libonnxruntime_providers_cuda.so is not beside"), "{out}");
    assert!(!out.contains("refused them"), "{out}");
}

/// A folder standing in for the CUDA stack: every library the CUDA provider needs (directly or
/// through another) that this machine cannot resolve, as a complete ELF library (a copy of ORT's
/// small `libonnxruntime_providers_shared.so`), except `leave_out`; `cut` is cut to half its size.
/// The strict session's check reads files only, so stand-ins let it walk the real provider's
/// NEEDED list on a machine without CUDA.
fn stand_in_gpu_stack(lib_dir: &Path, leave_out: &str, cut: Option<&str>) -> tempfile::TempDir {
    use onnxrt_preflight::{cudnn, elf, search::Searcher};
    let dir = tempfile::tempdir().expect("tempdir");
    let donor = std::fs::read(lib_dir.join("libonnxruntime_providers_shared.so")).expect("donor library");
    let system = Searcher::from_env();
    let provider = elf::read_dynamic(&lib_dir.join("libonnxruntime_providers_cuda.so")).expect("provider ELF");
    let mut names: Vec<String> = provider.needed.clone();
    // cuDNN is opened with dlopen by the CUDA 13 build: the front library and its sub-libraries.
    names.push("libcudnn.so.9".into());
    names.extend(cudnn::CUDNN_9.iter().map(|s| s.to_string()));
    for name in names {
        if name == leave_out || system.resolve(&name, &provider, lib_dir).is_some() {
            continue;
        }
        let bytes = if cut == Some(name.as_str()) { &donor[..donor.len() / 2] } else { &donor[..] };
        std::fs::write(dir.path().join(&name), bytes).expect("stand-in");
    }
    dir
}

/// A truncated CUDA library first on LD_LIBRARY_PATH killed the template with SIGBUS
/// (the loader maps segments the file does not hold). A strict session finds it before loading.
#[test]
fn a_truncated_cuda_library_first_on_the_path_is_named_before_anything_loads_it() {
    let Some(lib_dir) = gpu_build() else { return };
    let stack = stand_in_gpu_stack(&lib_dir, "", Some("libcublasLt.so.13"));
    let out = probe_with(&lib_dir.join("libonnxruntime.so.1.30.0"), "cuda-strict", Some(stack.path()));
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(
        out.contains(&format!("{} will not load: truncated", stack.path().join("libcublasLt.so.13").display())),
        "{out}"
    );
    assert!(out.contains("picked by LD_LIBRARY_PATH entry 1 of 1"), "{out}");
    assert!(out.contains("SIGBUS"), "{out}");
}

/// cuDNN 9 loads `libcudnn_engines_precompiled.so.9` only at the first convolution, so
/// a missing one showed as CUDNN_STATUS_INTERNAL_ERROR mid-run. A strict session names it first.
#[test]
fn a_missing_cudnn_sub_library_is_named_by_a_strict_session() {
    let Some(lib_dir) = gpu_build() else { return };
    let stack = stand_in_gpu_stack(&lib_dir, "libcudnn_engines_precompiled.so.9", None);
    let out = probe_with(&lib_dir.join("libonnxruntime.so.1.30.0"), "cuda-strict", Some(stack.path()));
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(out.contains("libcudnn_engines_precompiled.so.9 (needed by"), "{out}");
    assert!(out.contains("Fix: install cuDNN"), "{out}");
}

/// And with libcudnn.so.9 itself missing (the cuDNN row of the seeds' tables).
#[test]
fn a_missing_cudnn_is_named_by_a_strict_session() {
    let Some(lib_dir) = gpu_build() else { return };
    let stack = stand_in_gpu_stack(&lib_dir, "libcudnn.so.9", None);
    let out = probe_with(&lib_dir.join("libonnxruntime.so.1.30.0"), "cuda-strict", Some(stack.path()));
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(out.contains("libcudnn.so.9 (needed by"), "{out}");
    assert!(out.contains("Fix: install cuDNN"), "{out}");
}

/// A `libonnxruntime_providers_cuda.so` of another ORT release beside the runtime. ORT
/// checks nothing and loads it (a crash or wrong results); a strict session names both releases
/// before loading it. Made here from the wheel's provider library with its embedded release string
/// "1.30.0" patched to "1.29.0" (the same length), everything it needs present as stand-ins.
#[test]
fn a_cuda_provider_library_of_another_release_is_named_by_a_strict_session() {
    let Some(lib_dir) = gpu_build() else { return };
    let real = lib_dir.join("libonnxruntime_providers_cuda.so");
    assert_eq!(onnxrt_preflight::release::release_strings(&real).expect("scan"), vec!["1.30.0".to_string()]);
    let folder = tempfile::tempdir().expect("tempdir");
    for name in ["libonnxruntime.so.1.30.0", "libonnxruntime_providers_shared.so"] {
        std::fs::copy(lib_dir.join(name), folder.path().join(name)).expect("copy");
    }
    let mut bytes = std::fs::read(&real).expect("read the CUDA provider");
    let (from, to) = (b"\x001.30.0\x00", b"\x001.29.0\x00");
    let at: Vec<usize> = bytes.windows(from.len()).enumerate().filter(|(_, w)| w == from).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "the 1.30.0 CUDA provider embeds its release once");
    bytes[at[0]..at[0] + to.len()].copy_from_slice(to);
    let provider = folder.path().join("libonnxruntime_providers_cuda.so");
    std::fs::write(&provider, bytes).expect("write the patched provider");
    let stack = stand_in_gpu_stack(&lib_dir, "", None);
    let runtime = folder.path().join("libonnxruntime.so.1.30.0");
    let out = probe_with(&runtime, "cuda-strict", Some(stack.path()));
    println!("{out}");
    assert!(out.starts_with("ERR ProviderLoad"), "{out}");
    assert!(out.contains(&format!("{} was built for ONNX Runtime 1.29.0", provider.display())), "{out}");
    assert!(out.contains(&format!("the runtime is 1.30.0 ({})", runtime.display())), "{out}");
    assert!(out.contains("Fix: copy libonnxruntime_providers_cuda.so"), "{out}");
    assert!(out.contains("ONNX Runtime 1.30.0 distribution") && out.contains("onnxrt bundle"), "{out}");
}
