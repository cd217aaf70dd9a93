//! Compiled models (the Compile API, C API 22+) on the real runtime: on ORT >= 1.22
//! (`ONNXRT_DIST=cpu-1.32.0-registry`) a model compiled for the CPU, to a file and to bytes, from a
//! file and from bytes, loads and gives the original's numbers; bad input is a typed error that
//! leaves no output file. On 1.16.2 every call is refused with `Error::NeedsNewerRuntime`.

use ndarray::ArrayD;
use onnxrt::compile::{Compatibility, ModelCompiler};
use onnxrt::{Environment, Error, Session, Value};
use onnxrt_tests::{mlp_input, model, TempDir};

fn api_level() -> u32 {
    onnxrt::runtime_info().expect("runtime loads").api_level
}

fn run_mlp(session: &Session) -> ArrayD<f32> {
    let x = Value::from_array(mlp_input()).expect("mlp input");
    let outputs = session.run(&[("x", &x)]).expect("mlp runs");
    outputs.get("logits").expect("logits").to_array::<f32>().expect("f32")
}

fn original() -> ArrayD<f32> {
    run_mlp(&Session::builder().commit_from_file(model("mlp.onnx")).expect("session"))
}

fn assert_needs_newer(error: Error, needs: u32) {
    assert!(matches!(&error, Error::NeedsNewerRuntime { needs: n, .. } if *n == needs), "{error:?}");
}

#[test]
fn a_model_compiled_to_a_file_loads_and_runs_the_same() {
    let dir = TempDir::new("compile-file");
    let out = dir.path().join("mlp_ctx.onnx");
    let result =
        ModelCompiler::new(Session::builder()).input_file(model("mlp.onnx")).embed_context(true).compile_to_file(&out);
    if api_level() < 22 {
        assert_needs_newer(result.expect_err("1.16 has no Compile API"), 22);
        assert!(!out.exists(), "nothing written");
        return;
    }
    result.expect("compiles");
    let bytes = std::fs::read(&out).expect("output written");
    assert!(!bytes.is_empty());
    let session = Session::builder().commit_from_file(&out).expect("the compiled model loads");
    assert_eq!(run_mlp(&session), original());
}

#[test]
fn a_model_compiled_from_bytes_to_bytes_loads_and_runs_the_same() {
    let input = std::fs::read(model("mlp.onnx")).expect("model");
    let result = ModelCompiler::new(Session::builder()).input_bytes(input).embed_context(true).compile_to_bytes();
    if api_level() < 22 {
        return assert_needs_newer(result.expect_err("refused"), 22);
    }
    let bytes = result.expect("compiles");
    let session = Session::builder().commit_from_memory(&bytes).expect("the compiled bytes load");
    assert_eq!(run_mlp(&session), original());
}

#[test]
fn bad_input_is_a_typed_error_and_leaves_no_file() {
    let dir = TempDir::new("compile-bad");
    let out = dir.path().join("never.onnx");
    let no_input = ModelCompiler::new(Session::builder()).compile_to_file(&out);
    if api_level() < 22 {
        return assert_needs_newer(no_input.expect_err("refused"), 22);
    }
    assert!(matches!(no_input, Err(Error::BadSetting { .. })), "{no_input:?}");
    let garbage = ModelCompiler::new(Session::builder()).input_bytes(b"not a model".to_vec()).compile_to_file(&out);
    assert!(matches!(garbage, Err(Error::Ort { .. })), "{garbage:?}");
    let truncated =
        ModelCompiler::new(Session::builder()).input_file(model("bad_truncated.onnx")).compile_to_file(&out);
    assert!(truncated.is_err(), "{truncated:?}");
    assert!(!out.exists(), "no half-written output");
}

#[test]
fn nothing_compiled_is_an_error_when_asked() {
    let dir = TempDir::new("compile-nothing");
    let out = dir.path().join("cpu_only.onnx");
    let result = ModelCompiler::new(Session::builder())
        .input_file(model("mlp.onnx"))
        .error_if_nothing_compiled(true)
        .compile_to_file(&out);
    match api_level() {
        0..=21 => assert_needs_newer(result.expect_err("refused"), 22),
        22 => assert_needs_newer(result.expect_err("refused"), 23),
        _ => {
            // The CPU provider compiles nothing.
            assert!(matches!(result, Err(Error::Ort { .. })), "{result:?}");
            assert!(!out.exists());
        }
    }
}

#[test]
fn the_compatibility_of_a_model_compiled_for_the_cpu() {
    let env = Environment::global().expect("env");
    let dir = TempDir::new("compile-compat");
    let out = dir.path().join("mlp_ctx.onnx");
    if api_level() < 24 {
        let error = onnxrt::compile::compatibility(&env, &model("mlp.onnx"), &[]).expect_err("refused");
        return assert_needs_newer(error, 24);
    }
    ModelCompiler::new(Session::builder())
        .input_file(model("mlp.onnx"))
        .embed_context(true)
        .compile_to_file(&out)
        .expect("compiles");
    let cpu: Vec<_> =
        env.ep_devices().expect("devices").into_iter().filter(|d| d.provider == "CPUExecutionProvider").collect();
    // The CPU provider writes no compatibility information: nothing compiled to check.
    assert_eq!(onnxrt::compile::compatibility(&env, &out, &cpu).expect("checked"), Compatibility::NotApplicable);
    let none = onnxrt::compile::compatibility(&env, &out, &[]);
    assert!(matches!(none, Err(Error::BadSetting { .. })), "{none:?}");
}

/// The external initializers file lives in the output model's folder: an absolute path, a path
/// leaving the folder, or bytes as the output (no folder) are refused before ORT runs, and nothing
/// is written; a plain relative name is written beside the output and the model loads.
#[test]
fn external_initializers_stay_in_the_output_folder() {
    if api_level() < 22 {
        return;
    }
    let dir = TempDir::new("compile-external");
    let out = dir.path().join("mlp_ctx.onnx");
    let compiler = || ModelCompiler::new(Session::builder()).input_file(model("mlp.onnx")).embed_context(true);
    let absolute = dir.path().join("abs.bin");
    for (path, to_bytes) in [(absolute.as_path(), false), ("../up.bin".as_ref(), false), ("w.bin".as_ref(), true)] {
        let result = if to_bytes {
            compiler().external_initializers(path, 0).compile_to_bytes().map(drop)
        } else {
            compiler().external_initializers(path, 0).compile_to_file(&out)
        };
        let error = result.expect_err("refused");
        assert!(
            matches!(&error, Error::BadSetting { setting, .. } if setting == "ModelCompiler::external_initializers"),
            "{path:?}: {error:?}"
        );
        assert!(!out.exists() && !absolute.exists(), "nothing written for {path:?}");
        assert!(!dir.path().join("w.bin").exists() && !dir.path().parent().expect("parent").join("up.bin").exists());
    }
    let beside_input = std::path::Path::new(&model("mlp.onnx")).with_file_name("w.bin");
    assert!(!beside_input.exists(), "nothing beside the input model");
    compiler().external_initializers("weights.bin", 0).compile_to_file(&out).expect("compiles");
    assert!(dir.path().join("weights.bin").exists(), "written beside the output model");
    let session = Session::builder().commit_from_file(&out).expect("loads with its external initializers");
    assert_eq!(run_mlp(&session), original());
}

/// The builder's LoadCanceller stops a compilation as it stops a load.
#[test]
fn a_cancelled_canceller_stops_the_compilation() {
    if api_level() < 22 {
        return;
    }
    let canceller = onnxrt::LoadCanceller::new();
    let compiled = ModelCompiler::new(Session::builder().load_canceller(&canceller))
        .input_file(model("mlp.onnx"))
        .embed_context(true)
        .compile_to_bytes()
        .expect("not cancelled: compiles");
    assert!(!compiled.is_empty());
    canceller.cancel();
    let error = ModelCompiler::new(Session::builder().load_canceller(&canceller))
        .input_file(model("mlp.onnx"))
        .embed_context(true)
        .compile_to_bytes()
        .map(|bytes| bytes.len())
        .expect_err("cancelled");
    assert!(error.to_string().to_ascii_lowercase().contains("cancel"), "{error:?}");
}
