//! String keys classed by what ORT does with them (docs/soundness.md §10). The outside
//! audit found four kinds classed as plain values that are not: CUDA `do_copy_in_default_stream`
//! (0 brings back a copy/compute race), DirectML `enable_graph_capture` (the CUDA graph's replay
//! hazard), MIGraphX's compiled-model loading and TensorRT's engine cache (both load compiled GPU
//! code from files); issue 45's probe added OpenVINO's `cache_dir` and CoreML's
//! `ModelCacheDirectory` (compiled models loaded from a folder). Each is now refused from safe
//! code, before the provider is loaded (so this runs on the CPU runtime), with the class named;
//! the `unsafe` setters still set them.

use std::path::{Path, PathBuf};

use onnxrt::allowed_keys::{self, KeyClass, KeyTable};

fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models").join(name)
}

const RECLASSED: [(&str, &str, KeyClass, &str); 9] = [
    ("CUDA", "do_copy_in_default_stream", KeyClass::Ownership, "ownership"),
    ("DML", "enable_graph_capture", KeyClass::Ownership, "ownership"),
    ("MIGraphX", "migraphx_load_compiled_model", KeyClass::CodeLoading, "code loading"),
    ("MIGraphX", "migraphx_load_model_path", KeyClass::CodeLoading, "code loading"),
    ("TensorRT", "trt_engine_cache_enable", KeyClass::CodeLoading, "code loading"),
    ("TensorRT", "trt_engine_cache_path", KeyClass::CodeLoading, "code loading"),
    ("TensorRT", "trt_engine_cache_prefix", KeyClass::CodeLoading, "code loading"),
    ("OpenVINO", "cache_dir", KeyClass::CodeLoading, "code loading"),
    ("CoreML", "ModelCacheDirectory", KeyClass::CodeLoading, "code loading"),
];

fn table(provider: &str) -> &'static KeyTable {
    match provider {
        "CUDA" => &allowed_keys::CUDA,
        "DML" => &allowed_keys::DML,
        "MIGraphX" => &allowed_keys::MIGRAPHX,
        "TensorRT" => &allowed_keys::TENSORRT,
        "OpenVINO" => &allowed_keys::OPENVINO,
        "CoreML" => &allowed_keys::COREML,
        other => panic!("no table for {other}"),
    }
}

#[test]
fn the_tables_class_the_keys_by_what_ort_does_with_them() {
    for (provider, key, class, _) in RECLASSED {
        let entry = table(provider).keys.iter().find(|k| k.name == key).unwrap_or_else(|| panic!("{key} listed"));
        assert_eq!(entry.class, class, "{provider} `{key}`");
        assert!(!entry.why.is_empty(), "{provider} `{key}` says why it is refused");
    }
    // What stays plain, on purpose: a timing cache holds measurements, not code; saving a
    // compiled model writes a file and loads nothing.
    for (provider, key) in [
        ("TensorRT", "trt_timing_cache_path"),
        ("MIGraphX", "migraphx_save_compiled_model"),
        ("MIGraphX", "migraphx_save_model_path"),
    ] {
        let entry = table(provider).keys.iter().find(|k| k.name == key).expect("listed");
        assert_eq!(entry.class, KeyClass::Plain, "{provider} `{key}`");
    }
}

#[test]
fn each_reclassed_key_is_refused_from_safe_code_whatever_its_value() {
    for (provider, key, _, label) in RECLASSED {
        for value in ["0", "1", "/tmp"] {
            let result =
                onnxrt::Session::builder().provider(provider, [(key, value)]).commit_from_file(model("mlp.onnx"));
            let err = match result {
                Err(e) => e,
                Ok(_) => panic!("{provider} option `{key}` = {value} was not refused"),
            };
            let text = err.to_string();
            assert_eq!(err.variant(), "KeyRefused", "{provider} `{key}`: {text}");
            assert!(text.contains(&format!("provider option `{key}` is refused ({label})")), "{text}");
        }
    }
}

#[cfg(feature = "cuda")]
#[test]
fn the_typed_setters_are_unsafe_and_raw_is_refused() {
    use onnxrt::providers::cuda::CudaOptions;
    let path = model("add_f32.onnx");
    let raw = onnxrt::Session::builder()
        .cuda(CudaOptions::new().raw("do_copy_in_default_stream", 0))
        .commit_from_file(&path)
        .map(drop)
        .expect_err("refused through raw");
    assert_eq!(raw.variant(), "KeyRefused", "{raw}");
    // SAFETY: `true` is ORT's default (copies on the compute stream); no CUDA here anyway.
    let vouched = unsafe { CudaOptions::new().do_copy_in_default_stream(true) };
    let result = onnxrt::Session::builder().cuda(vouched).commit_from_file(&path).map(drop);
    assert!(!matches!(result, Err(onnxrt::Error::KeyRefused { .. })), "the unsafe setter passes: {result:?}");
}

#[cfg(feature = "tensorrt")]
#[test]
fn the_engine_cache_setter_is_unsafe_and_raw_is_refused() {
    use onnxrt::providers::tensorrt::TensorRtOptions;
    let path = model("add_f32.onnx");
    for key in ["trt_engine_cache_enable", "trt_engine_cache_path", "trt_engine_cache_prefix"] {
        let raw = onnxrt::Session::builder()
            .tensorrt(TensorRtOptions::new().raw(key, 1))
            .commit_from_file(&path)
            .map(drop)
            .expect_err("refused through raw");
        assert_eq!(raw.variant(), "KeyRefused", "{key}: {raw}");
    }
    // SAFETY: nothing is ever written to or loaded from this folder: no TensorRT here.
    let vouched = unsafe { TensorRtOptions::new().engine_cache(Path::new("/nonexistent/engines")) };
    let result = onnxrt::Session::builder().tensorrt(vouched).commit_from_file(&path).map(drop);
    assert!(!matches!(result, Err(onnxrt::Error::KeyRefused { .. })), "the unsafe setter passes: {result:?}");
}

/// `private_engine_cache` refuses a folder another user could write (the folder itself, or one
/// above it) with its own reason: which folder, that TensorRT runs the engines it finds there,
/// and what to do (issue 45's probe: it gave the runtime loader's advice, about libraries and
/// ONNXRT_DYLIB_PATH).
#[cfg(feature = "tensorrt")]
#[test]
fn a_shared_engine_cache_is_refused_for_what_tensorrt_does_with_it() {
    use std::os::unix::fs::PermissionsExt;

    use onnxrt::providers::tensorrt::TensorRtOptions;
    let root = tempfile::tempdir().expect("dir");
    let shared = root.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    for dir in [shared.clone(), shared.join("model/1")] {
        let error = TensorRtOptions::new().private_engine_cache(&dir).map(drop).expect_err("refused");
        let text = error.to_string();
        assert_eq!(error.variant(), "BadSetting", "{text}");
        assert!(text.contains(&format!("TensorRT engine cache = {} is refused", dir.display())), "{text}");
        assert!(text.contains(&format!("{} (uid", shared.display())) && text.contains("mode 777"), "{text}");
        assert!(text.contains("TensorRT runs the engines it finds there"), "{text}");
        assert!(text.contains("only this user can write"), "{text}");
        assert!(!text.contains("ONNXRT_DYLIB_PATH") && !text.contains("librar"), "{text}");
    }
}
