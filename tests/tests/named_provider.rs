//! Any execution provider by name (`SessionBuilder::provider`), diagnosed like CUDA: the CPU
//! runtime's refusal (a provider left out of the build, a name it does not know), keys off each
//! provider's allow-list refused before ORT sees them, and — on the real CUDA 13 build of ORT 1.30
//! (assembled from the onnxruntime-gpu wheel; CUDA absent here) — a load failure naming the
//! missing CUDA library. Runtime-specific cases run in their own process (`onnxrt-probe`).

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
    let output = command.arg(format!("named:{provider}")).arg(model("mlp.onnx")).output().expect("probe runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_provider_left_out_of_the_cpu_build_is_not_available() {
    let built =
        onnxrt::Session::builder().provider("OpenVINO", [("device_type", "CPU")]).commit_from_file(model("mlp.onnx"));
    match built {
        Err(onnxrt::Error::ProviderNotAvailable { provider, available, fix, .. }) => {
            assert_eq!(provider, "OpenVINO");
            // What ORT's CPU builds list: 1.16.2 the CPU provider alone; the newer PyPI build
            // also has the Azure provider compiled in.
            let listed: &[&str] = if onnxrt_tests::ort_minor() <= 16 {
                &["CPUExecutionProvider"]
            } else {
                &["AzureExecutionProvider", "CPUExecutionProvider"]
            };
            assert_eq!(available.0, listed);
            assert!(fix.contains("build that includes the OpenVINO provider"), "{fix}");
        }
        other => panic!("expected ProviderNotAvailable, got {other:?}"),
    }
}

#[test]
fn a_name_ort_does_not_know_quotes_orts_list() {
    let err = onnxrt::Session::builder()
        .provider("OpenVino2", std::iter::empty::<(&str, &str)>())
        .commit_from_file(model("mlp.onnx"))
        .expect_err("unknown provider");
    let text = err.to_string();
    assert_eq!(err.variant(), "ProviderNotAvailable", "{text}");
    assert!(text.contains("does not know a provider called `OpenVino2`"), "{text}");
    // ORT's own list of the names it takes.
    assert!(text.contains("XNNPACK"), "{text}");
}

#[test]
fn cuda_by_name_on_the_cpu_build_is_not_available() {
    for name in ["CUDA", "CUDAExecutionProvider", "tensorrt"] {
        let out = probe(None, name);
        assert!(out.starts_with("ERR ProviderNotAvailable"), "{name}: {out}");
    }
}

#[test]
fn cuda_and_tensorrt_by_name_get_the_typed_options_checks() {
    // One append path: a device id that is not a number is refused as for the typed options,
    // before the runtime is asked for the provider.
    for name in ["CUDA", "TensorrtExecutionProvider"] {
        let err = onnxrt::Session::builder()
            .provider(name, [("device_id", "first")])
            .commit_from_file(model("mlp.onnx"))
            .expect_err("not a device id");
        match &err {
            onnxrt::Error::BadSetting { setting, value, .. } => {
                assert!(setting.ends_with("device_id") && value == "first", "{name}: {err}");
            }
            other => panic!("{name}: expected BadSetting, got {other:?}"),
        }
    }
}

/// Option keys pass only from each provider's allow-list
/// (`onnxrt::allowed_keys`), refused before ORT sees them, naming provider, key and what passes.
/// The old substring deny-list let the second group through (none contains stream, alloc,
/// context, ptr, handle, lib_path or empty_cache), so they reached ORT.
#[test]
fn keys_off_the_allow_list_are_refused_before_ort_sees_them() {
    let cases = [
        // Caught by the old substrings too.
        ("CUDA", "user_compute_stream", "address"),
        ("TensorRT", "trt_extra_plugin_lib_paths", "code loading"),
        ("OpenVINO", "context", "address"),
        // Passed the old substrings.
        ("QNN", "backend_path", "code loading"),
        ("QNN", "qnn_saver_path", "code loading"),
        ("QNNExecutionProvider", "op_packages", "code loading"),
        ("CUDA", "gpu_external_free", "address"),
        ("TensorRT", "trt_engine_decryption_enable", "code loading"),
        // Plain values before 2026-12-05: a captured CUDA graph replays the first run's memory.
        ("CUDA", "enable_cuda_graph", "ownership"),
        ("TensorRT", "trt_cuda_graph_enable", "ownership"),
        ("XNNPACK", "no_such_option", "not on the list"),
        ("MyOwnProvider", "device_id", "not on the list"),
    ];
    for (name, key, class) in cases {
        let result = onnxrt::Session::builder().provider(name, [(key, "4096")]).commit_from_file(model("mlp.onnx"));
        let err = match result {
            Err(e) => e,
            Ok(_) => panic!("{name} option `{key}` was not refused"),
        };
        let text = err.to_string();
        assert_eq!(err.variant(), "KeyRefused", "{name} option `{key}`: {text}");
        assert!(text.contains(&format!("provider option `{key}` is refused ({class})")), "{text}");
        assert!(text.contains("Keys let through:"), "{text}");
        if class != "not on the list" {
            assert!(text.contains("provider_unchecked"), "{text}");
        }
    }
    // The error names the keys that pass.
    let err = onnxrt::Session::builder()
        .provider("QNN", [("backend_path", "libQnnHtp.so")])
        .commit_from_file(model("mlp.onnx"))
        .expect_err("refused");
    assert!(err.to_string().contains("QNN provider option"), "{err}");
    assert!(err.to_string().contains("htp_performance_mode"), "{err}");
}

/// Keys on the list reach ORT (which, on this CPU build, has no such provider); the unsafe door
/// passes any key on to ORT.
#[test]
fn keys_on_the_allow_list_reach_ort() {
    for (name, key, value) in [("QNN", "htp_performance_mode", "burst"), ("OpenVINO", "device_type", "CPU")] {
        let err = onnxrt::Session::builder()
            .provider(name, [(key, value)])
            .commit_from_file(model("mlp.onnx"))
            .expect_err("not in this build");
        assert_eq!(err.variant(), "ProviderNotAvailable", "{name}: {err}");
    }
    // SAFETY: the provider is not in this build, so ORT never reads the option.
    let unchecked = unsafe { onnxrt::Session::builder().provider_unchecked("QNN", [("backend_path", "libQnnHtp.so")]) };
    let err = unchecked.commit_from_file(model("mlp.onnx")).expect_err("not in this build");
    assert_eq!(err.variant(), "ProviderNotAvailable", "{err}");
}

#[test]
fn the_session_runs_on_the_cpu_when_only_cpu_is_named() {
    // ORT ≥ 1.18 takes "CPU" by name; 1.16 does not know it: either way a clear answer.
    let built = onnxrt::Session::builder()
        .provider("CPU", std::iter::empty::<(&str, &str)>())
        .commit_from_file(model("mlp.onnx"));
    match built {
        Ok(session) => assert_eq!(session.providers().last(), Some(&"CPUExecutionProvider")),
        Err(e) => assert_eq!(e.variant(), "ProviderNotAvailable", "{e}"),
    }
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
fn cuda_and_tensorrt_by_name_on_the_cuda13_build_name_the_missing_library() {
    let Some(lib_dir) = gpu_build() else { return };
    for name in ["CUDA", "CUDAExecutionProvider", "TensorRT"] {
        let out = probe(Some(&lib_dir), name);
        println!("{out}");
        assert!(out.starts_with("ERR ProviderLoad"), "{name}: {out}");
        assert!(out.contains(".so.13: cannot open shared object file"), "{name}: {out}");
        assert!(out.contains("Fix: install"), "{name}: {out}");
    }
    // A provider that build does not have, by name: not available, listing what it has.
    let out = probe(Some(&lib_dir), "OpenVINO");
    assert!(out.starts_with("ERR ProviderNotAvailable"), "{out}");
    assert!(out.contains("CUDAExecutionProvider"), "{out}");
}
