//! Every mistake a caller can make gives its own `Error` variant, and the message says what to
//! do. Each test checks the variant, its fields, and the actionable part of `Display`.

use ndarray::{Array3, Array4};
use onnxrt::{ElementType, Environment, Error, ModelFileProblem, Value};
use onnxrt_tests::{builder, env, model, ort_minor, proto, session};

fn add_inputs() -> (Value<'static>, Value<'static>) {
    (Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("a"), Value::from_vec(&[2, 3], vec![2.0f32; 6]).expect("b"))
}

fn assert_mentions(error: &Error, parts: &[&str]) {
    let message = error.to_string();
    for part in parts {
        assert!(message.contains(part), "the message should mention {part:?}: {message}");
    }
}

#[test]
fn unknown_input_lists_valid_names() {
    let s = session("add_f32.onnx");
    let (a, b) = add_inputs();
    let error = s.run(&[("a", &a), ("c", &b)]).expect_err("no input named c");
    match &error {
        Error::UnknownInput { name, valid } => {
            assert_eq!(name, "c");
            assert_eq!(valid.0, ["a", "b"]);
        }
        other => panic!("expected UnknownInput, got {other:?}"),
    }
    assert_mentions(&error, &["`c`", r#"["a", "b"]"#]);
}

#[test]
fn unknown_output_lists_valid_names() {
    let s = session("add_f32.onnx");
    let (a, b) = add_inputs();
    let error = s.run_with(&[("a", &a), ("b", &b)], &["total"], None).expect_err("no output named total");
    match &error {
        Error::UnknownOutput { name, valid } => {
            assert_eq!(name, "total");
            assert_eq!(valid.0, ["sum"]);
        }
        other => panic!("expected UnknownOutput, got {other:?}"),
    }
    assert_mentions(&error, &["`total`", r#"["sum"]"#]);
}

#[test]
fn missing_input() {
    let s = session("add_f32.onnx");
    let (a, _) = add_inputs();
    let error = s.run(&[("a", &a)]).expect_err("b is missing");
    match &error {
        Error::MissingInput { name, element_type, shape, required } => {
            assert_eq!(name, "b");
            assert_eq!(*element_type, ElementType::F32);
            assert_eq!(shape.0, "[2, 3]");
            assert_eq!(required.0, ["a", "b"]);
        }
        other => panic!("expected MissingInput, got {other:?}"),
    }
    assert_mentions(&error, &["`b`", "f32", "[2, 3]", "missing"]);
    // No inputs at all names the first one.
    assert!(matches!(
        s.run(onnxrt::NO_INPUTS),
        Err(Error::MissingInput { ref name, .. }) if name == "a"
    ));
}

#[test]
fn duplicate_input() {
    let s = session("add_f32.onnx");
    let (a, b) = add_inputs();
    let error = s.run(&[("a", &a), ("b", &b), ("a", &b)]).expect_err("a twice");
    assert!(matches!(&error, Error::DuplicateInput { name } if name == "a"), "expected DuplicateInput, got {error:?}");
    assert_mentions(&error, &["`a`", "more than once"]);
}

#[test]
fn element_type_mismatch_suggests_conversion() {
    let s = session("add_f32.onnx");
    let (a, _) = add_inputs();
    let b = Value::from_vec(&[2, 3], vec![2.0f64; 6]).expect("f64");
    let error = s.run(&[("a", &a), ("b", &b)]).expect_err("f64 for f32");
    match &error {
        Error::ElementTypeMismatch { name, expected, got, .. } => {
            assert_eq!(name, "b");
            assert_eq!((*expected, *got), (ElementType::F32, ElementType::F64));
        }
        other => panic!("expected ElementTypeMismatch, got {other:?}"),
    }
    assert_mentions(&error, &["`b`", "f32", "f64", "as f32"]);

    // Other pairs get a generic conversion hint, which names each type once.
    let b = Value::from_vec(&[2, 3], vec![2i64; 6]).expect("i64");
    let error = s.run(&[("a", &a), ("b", &b)]).expect_err("i64 for f32");
    assert!(matches!(error, Error::ElementTypeMismatch { got: ElementType::I64, .. }));
    assert_eq!(error.to_string(), "`b` expects f32 elements but got i64; convert the data to f32");
}

#[test]
fn debug_prints_the_message() {
    let s = session("add_f32.onnx");
    let (a, _) = add_inputs();
    let error = s.run(&[("a", &a), ("c", &a)]).expect_err("no input named c");
    assert_eq!(format!("{error:?}"), error.to_string());
    assert_eq!(error.variant(), "UnknownInput");

    // What a program whose `main` returns `Result<(), onnxrt::Error>` prints: the message and
    // its fix, exactly as Display shows it.
    let dir = std::env::temp_dir().join(format!("onnxrt-tests-main-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("model.onnx");
    std::fs::write(&path, b"version https://git-lfs.github.com/spec/v1\nsize 10\n").expect("write");
    let expected = builder().commit_from_file(&path).expect_err("an LFS pointer").to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_main-returns-error")).arg(&path).output().expect("run");
    std::fs::remove_dir_all(&dir).expect("clean up");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr, format!("Error: {expected}\n"));
    assert!(stderr.contains("\nFix: fetch the real file"), "{stderr}");
}

#[test]
fn nhwc_input_for_an_nchw_model() {
    let s = session("dynamic_batch.onnx");
    let nhwc = Value::from_array(Array4::<f32>::zeros((1, 4, 4, 3))).expect("nhwc");
    let error = s.run(&[("images", &nhwc)]).expect_err("NHWC for NCHW");
    match &error {
        Error::ShapeMismatch { name, expected, got, hint } => {
            assert_eq!(name, "images");
            assert_eq!(expected.0, "[batch, 3, 4, 4]");
            assert_eq!(*got, [1, 4, 4, 3]);
            assert!(hint.contains("permuted_axes"), "{hint}");
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert_mentions(&error, &["NHWC", "[batch, 3, 4, 4]", "[1, 4, 4, 3]", "transpose"]);

    // The suggested fix works: permute, make contiguous, run.
    let fixed = Array4::<f32>::zeros((1, 4, 4, 3)).permuted_axes([0, 3, 1, 2]).as_standard_layout().into_owned();
    let fixed = Value::from_array(fixed).expect("nchw");
    s.run(&[("images", &fixed)]).expect("NCHW runs");
}

#[test]
fn rank_and_dimension_mismatch() {
    let s = session("dynamic_batch.onnx");
    let no_batch = Value::from_array(Array3::<f32>::zeros((3, 4, 4))).expect("rank 3");
    let error = s.run(&[("images", &no_batch)]).expect_err("rank 3 for rank 4");
    match &error {
        Error::ShapeMismatch { got, .. } => assert_eq!(*got, [3, 4, 4]),
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert_mentions(&error, &["batch axis", "insert_axis"]);

    let s = session("add_f32.onnx");
    let (a, _) = add_inputs();
    let b = Value::from_vec(&[3, 2], vec![0.0f32; 6]).expect("3x2");
    let error = s.run(&[("a", &a), ("b", &b)]).expect_err("[3, 2] for [2, 3]");
    match &error {
        Error::ShapeMismatch { name, expected, got, .. } => {
            assert_eq!(name, "b");
            assert_eq!(expected.0, "[2, 3]");
            assert_eq!(*got, [3, 2]);
        }
        other => panic!("expected ShapeMismatch, got {other:?}"),
    }
    assert_mentions(&error, &["[2, 3]", "[3, 2]"]);
}

#[test]
fn model_file_missing() {
    let path = std::env::temp_dir().join("onnxrt-tests-no-such-model.onnx");
    let error = builder().commit_from_file(&path).expect_err("the file does not exist");
    match &error {
        Error::ModelFile { path: p, message } => {
            assert_eq!(p, &path);
            assert!(message.contains("No such file"), "{message}");
        }
        other => panic!("expected ModelFile, got {other:?}"),
    }
    assert_mentions(&error, &["onnxrt-tests-no-such-model.onnx", "No such file"]);
}

/// Writes `bytes` as `name` in a fresh temporary folder and loads it as a model.
fn load_file(name: &str, bytes: &[u8]) -> (std::path::PathBuf, Error) {
    let dir = std::env::temp_dir().join(format!("onnxrt-tests-not-onnx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    let error = builder().commit_from_file(&path).expect_err("not an ONNX model");
    std::fs::remove_file(&path).expect("remove");
    (path, error)
}

#[test]
fn truncated_model_says_so() {
    let path = model("bad_truncated.onnx");
    let size = std::fs::metadata(&path).expect("size").len();
    let error = builder().commit_from_file(&path).expect_err("truncated protobuf");
    match &error {
        Error::NotOnnxModel { path: p, size: s, problem, message } => {
            assert_eq!(p.as_deref(), Some(path.as_path()));
            assert_eq!(*s, size);
            assert!(matches!(problem, ModelFileProblem::Truncated { .. }), "{problem:?}");
            assert!(message.contains("Protobuf parsing failed"), "ORT's words are kept: {message}");
        }
        other => panic!("expected NotOnnxModel, got {other:?}"),
    }
    assert_mentions(
        &error,
        &["bad_truncated.onnx", "is not a valid ONNX model (51 bytes)", "looks truncated", "again"],
    );

    // A real model cut short, from memory: the graph field runs past the end.
    let bytes = std::fs::read(model("mlp.onnx")).expect("bytes");
    let cut = &bytes[..bytes.len() * 2 / 3];
    let error = builder().commit_from_memory(cut).expect_err("truncated protobuf");
    match &error {
        Error::NotOnnxModel {
            path: None, size, problem: ModelFileProblem::Truncated { offset, needs, has }, ..
        } => {
            assert_eq!(*size, cut.len() as u64);
            assert!(needs > has && offset < size, "{error}");
        }
        other => panic!("expected NotOnnxModel(Truncated), got {other:?}"),
    }
    assert_mentions(&error, &["the in-memory model is not a valid ONNX model", "looks truncated"]);

    // The whole model still loads: the check only runs after ORT refused the bytes.
    builder().commit_from_memory(&bytes).expect("the full model loads");
}

#[test]
fn text_html_and_git_lfs_pointers_are_named() {
    let pointer = b"version https://git-lfs.github.com/spec/v1\n\
        oid sha256:5f2c1d8e0f4b6a3c9d7e1f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c\nsize 2908\n";
    let (_, error) = load_file("model.onnx", pointer);
    match &error {
        Error::NotOnnxModel { size, problem, .. } => {
            assert_eq!(*size, pointer.len() as u64);
            assert_eq!(*problem, ModelFileProblem::GitLfsPointer { model_size: Some(2908) });
        }
        other => panic!("expected NotOnnxModel, got {other:?}"),
    }
    assert_mentions(&error, &["Git LFS pointer to a 2908-byte file", "git lfs pull", "model.onnx"]);

    let page = b"<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body>...</body></html>\n";
    let (_, error) = load_file("resnet.onnx", page);
    assert!(matches!(&error, Error::NotOnnxModel { problem: ModelFileProblem::Html, .. }), "{error}");
    assert_mentions(&error, &["resnet.onnx", "is an HTML page", "download the model again"]);

    let (_, error) = load_file("notes.onnx", b"ir_version: 8\ngraph { node { op_type: \"Add\" } }\n");
    match &error {
        Error::NotOnnxModel { problem: ModelFileProblem::Text { first_line }, .. } => {
            assert_eq!(first_line, "ir_version: 8");
        }
        other => panic!("expected NotOnnxModel(Text), got {other:?}"),
    }
    assert_mentions(&error, &["notes.onnx", "text file starting \"ir_version: 8\"", "binary .onnx"]);

    let (_, error) = load_file("empty.onnx", b"");
    assert!(matches!(&error, Error::NotOnnxModel { size: 0, problem: ModelFileProblem::Empty, .. }), "{error}");
    assert_mentions(&error, &["empty.onnx", "(0 bytes): it is empty"]);
}

#[test]
fn too_new_model() {
    if ort_minor() >= 18 {
        // IR version 10 with opset 21 is too new for 1.16 only: a newer runtime loads it, and
        // refuses an IR version no runtime reads yet with the same typed error.
        builder().commit_from_file(model("opset_too_new.onnx")).expect("IR 10 / opset 21 loads on ORT 1.18+");
        let error = builder().commit_from_memory(&proto::unary("Relu", 99, 17)).expect_err("IR version 99");
        match &error {
            Error::ModelTooNew { message, runtime, max_opset } => {
                assert!(message.contains("Unsupported model IR version: 99"), "{message}");
                assert_eq!(*runtime, onnxrt::runtime_info().expect("runtime").version);
                assert!(*max_opset >= 21, "{max_opset}");
            }
            other => panic!("expected ModelTooNew, got {other:?}"),
        }
        assert_mentions(&error, &["IR version: 99", "newer ONNX Runtime"]);
        return;
    }
    let error = builder().commit_from_file(model("opset_too_new.onnx")).expect_err("IR version 10 on ORT 1.16");
    match &error {
        Error::ModelTooNew { message, runtime, max_opset } => {
            assert!(message.contains("Unsupported model IR version: 10"), "{message}");
            assert_eq!(runtime, "1.16.2");
            assert_eq!(*max_opset, 19);
        }
        other => panic!("expected ModelTooNew, got {other:?}"),
    }
    assert_mentions(&error, &["IR version: 10", "up to 19", "newer ONNX Runtime"]);
}

#[test]
fn second_environment_is_refused() {
    let live = env();
    let error = Environment::builder().name("second").commit().expect_err("the process has its environment");
    match &error {
        Error::EnvironmentExists { name, in_force, asked } => {
            assert_eq!(name, live.name());
            assert!(in_force.contains("log level Warning"), "{in_force}");
            assert!(asked.contains("second"), "{asked}");
        }
        other => panic!("expected EnvironmentExists, got {other:?}"),
    }
    assert_mentions(&error, &["exists already", "Environment::global()", "set_log_hook"]);
    // The same settings (the defaults the live one was made with) give the live one back.
    let same = Environment::builder().commit().expect("the same settings");
    assert!(std::sync::Arc::ptr_eq(&live, &same));
    // The live one is unaffected.
    assert!(std::sync::Arc::ptr_eq(&live, &Environment::global().expect("global")));
}

#[test]
fn strict_gpu_without_a_gpu_provider() {
    let error = builder()
        .strict_gpu(true)
        .commit_from_file(model("add_f32.onnx"))
        .expect_err("strict_gpu needs a GPU provider");
    match &error {
        Error::StrictGpuWithoutProvider => {}
        other => panic!("expected StrictGpuWithoutProvider, got {other:?}"),
    }
    assert_mentions(&error, &["no execution provider", "SessionBuilder::cuda"]);
}

#[test]
fn nul_in_names_and_paths() {
    let s = session("add_f32.onnx");
    let (a, b) = add_inputs();
    // A name with a NUL cannot match any model input: it is an unknown input, not a crash.
    assert!(matches!(s.run(&[("a\0", &a), ("b", &b)]), Err(Error::UnknownInput { .. })));
    let error = builder()
        .config_entry("session.bad\0key", "1")
        .commit_from_file(model("add_f32.onnx"))
        .expect_err("NUL in a config key");
    assert!(matches!(&error, Error::InteriorNul { what, .. } if what.contains("config key")), "{error:?}");
}

/// A function newer than C API 16 is only called after checking the loaded runtime's version:
/// on ORT 1.16.2 `deterministic_compute` (SetDeterministicCompute, C API 17) is refused by name;
/// on 1.17 and newer the same call reaches the runtime and the session is made.
#[test]
fn a_feature_newer_than_the_runtime_is_unsupported_not_undefined() {
    if ort_minor() >= 17 {
        let session = onnxrt::Session::builder()
            .deterministic_compute(true)
            .commit_from_file(onnxrt_tests::model("add_f32.onnx"))
            .expect("SetDeterministicCompute exists from ORT 1.17");
        assert_eq!(session.inputs().len(), 2);
        return;
    }
    let err = onnxrt::Session::builder()
        .deterministic_compute(true)
        .commit_from_file(onnxrt_tests::model("add_f32.onnx"))
        .expect_err("ORT 1.16 has no SetDeterministicCompute");
    match &err {
        onnxrt::Error::Unsupported { since, found, .. } => {
            assert_eq!(since, "1.17");
            assert!(found.starts_with("1.16"), "{found}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
    assert!(err.to_string().contains("needs ONNX Runtime 1.17 or newer"), "{err}");
}

#[test]
fn the_public_input_check_refuses_what_a_run_refuses_with_the_same_error() {
    let s = session("add_f32.onnx");
    let (a, b) = add_inputs();
    let wide = Value::from_vec(&[3, 2], vec![1.0f32; 6]).expect("wide");
    let ints = Value::from_vec(&[2, 3], vec![1i64; 6]).expect("ints");
    let cases: [&[(&str, &Value<'_>)]; 5] = [
        &[("a", &a), ("c", &b)],
        &[("a", &a)],
        &[("a", &a), ("b", &b), ("a", &b)],
        &[("a", &a), ("b", &wide)],
        &[("a", &ints), ("b", &b)],
    ];
    for given in cases {
        let checked = s.check_inputs(given).expect_err("refused before a run");
        let ran = s.run(given).expect_err("refused by the run");
        assert_eq!((checked.variant(), checked.to_string()), (ran.variant(), ran.to_string()));
        let free = onnxrt::check_inputs(s.inputs(), given).expect_err("the same check on the declarations");
        assert_eq!(free.to_string(), ran.to_string());
    }
    s.check_inputs(&[("a", &a), ("b", &b)]).expect("good inputs pass");
    // Narrowed declarations (a server's config) are checked as given.
    let mut narrowed = s.inputs().to_vec();
    narrowed[1].shape = vec![onnxrt::Dim::Fixed(3), onnxrt::Dim::Fixed(2)];
    let error = onnxrt::check_inputs(&narrowed, &[("a", &a), ("b", &b)]).expect_err("b is [3, 2] here");
    assert!(matches!(&error, Error::ShapeMismatch { name, .. } if name == "b"), "{error:?}");
}

#[test]
fn a_sample_is_checked_without_its_batch_axis_or_with_a_leading_one() {
    // mlp takes [N, 16].
    let s = session("mlp.onnx");
    let declared = &s.inputs()[0];
    declared.check_sample(&Value::from_vec(&[16], vec![0f32; 16]).expect("v")).expect("a bare sample");
    declared.check_sample(&Value::from_vec(&[1, 16], vec![0f32; 16]).expect("v")).expect("a sample of one row");
    for shape in [&[15][..], &[2, 16], &[1, 1, 16]] {
        let value = Value::from_vec(shape, vec![0f32; shape.iter().product::<i64>() as usize]).expect("v");
        let error = declared.check_sample(&value).expect_err("not one sample");
        assert!(matches!(error, Error::ShapeMismatch { .. }), "{shape:?}: {error:?}");
        assert_mentions(&error, &["expects shape [16]", "batch axis"]);
    }
    let error = declared.check_sample(&Value::from_vec(&[16], vec![0f64; 16]).expect("v")).expect_err("f64");
    assert!(matches!(error, Error::ElementTypeMismatch { .. }), "{error:?}");
    declared.check(&Value::from_vec(&[4, 16], vec![0f32; 64]).expect("v")).expect("a batch of 4");
}

/// A run on the CPU alone that runs out of memory gives host advice, not the GPU's (outside
/// review, 2026-12-07: a CPU model's run advised raising `gpu_mem_limit`).
#[test]
fn a_cpu_session_running_out_of_memory_gives_host_advice() {
    // y = ConstantOfShape(shape): a float tensor of whatever shape the caller asks for.
    let (shape, y) = (proto::tensor_info("shape", proto::INT64, &[2]), proto::tensor_info("y", proto::FLOAT, &[]));
    let y = onnxrt_onnx_proto::ValueInfoProto { r#type: shape_free(y.r#type), ..y };
    let bytes = proto::model(8, 17, &[proto::node("ConstantOfShape", &["shape"], &["y"], &[])], &[shape], &[y]);
    let session = builder().commit_from_memory(&bytes).expect("session");
    // 4 TiB of floats: more than this machine can give.
    let huge = Value::from_vec(&[2], vec![1i64 << 20, 1 << 20]).expect("shape");
    let error = session.run(&[("shape", &huge)]).expect_err("too large");
    assert!(matches!(error, Error::OutOfMemory { host: true, .. }), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("host memory") && !text.contains("gpu_mem_limit"), "{text}");
    // The same through a binding and an async run (outside review, 2026-12-07: both gave the
    // GPU's advice).
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("shape", &huge).expect("bound");
    binding.bind_output_to_device("y", &onnxrt::MemoryInfo::cpu().expect("cpu")).expect("bound");
    let error = binding.run(None).expect_err("too large");
    assert!(matches!(error, Error::OutOfMemory { host: true, .. }), "IoBinding: {error:?}");
    drop(binding);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("tokio");
    let error = runtime
        .block_on(
            session
                .run_async([("shape", Value::from_vec(&[2], vec![1i64 << 20, 1 << 20]).expect("shape"))], &[])
                .expect("starts"),
        )
        .expect_err("too large");
    assert!(matches!(error, Error::OutOfMemory { host: true, .. }), "run_async: {error:?}");
    // A byte size past isize::MAX: refused before ORT, whose own check aborted a process that
    // had no environment yet.
    for elements in [1i64 << 62, i64::MAX] {
        let error = Value::zeros(&[elements], ElementType::F32).expect_err("too large");
        assert!(matches!(error, Error::BadShape { .. }), "{elements}: {error:?}");
    }
    // A tensor of ORT's default allocator (the host's): said so too.
    let error = Value::zeros(&[1 << 40], ElementType::F32).expect_err("too large");
    assert!(matches!(error, Error::OutOfMemory { host: true, .. }), "Value::zeros: {error:?}");
    // The session still runs sizes it can hold.
    let small = Value::from_vec(&[2], vec![2i64, 3]).expect("shape");
    let out = session.run(&[("shape", &small)]).expect("a small run");
    let y = out.get("y").expect("y").to_array::<f32>().expect("f32");
    assert_eq!(y.shape(), [2, 3]);
}

/// A tensor type without a shape (any rank).
fn shape_free(ty: Option<onnxrt_onnx_proto::TypeProto>) -> Option<onnxrt_onnx_proto::TypeProto> {
    use onnxrt_onnx_proto::type_proto::Value as Kind;
    let mut ty = ty?;
    if let Some(Kind::TensorType(tensor)) = ty.value.as_mut() {
        tensor.shape = None;
    }
    Some(ty)
}

/// A CPU allocator running out of memory says so, with advice for host memory, not the GPU's.
/// (Not under valgrind: its allocator aborts where ORT's would throw `bad_alloc`.)
#[test]
fn a_cpu_allocator_out_of_memory_gives_host_advice() {
    let session = onnxrt::Session::builder().commit_from_file(onnxrt_tests::model("mlp.onnx")).expect("session");
    let allocator = session.allocator(&onnxrt::MemoryInfo::cpu().expect("cpu")).expect("allocator");
    // 4 TiB: more than this machine can give.
    let error = allocator.tensor::<f32>(&[1 << 40]).expect_err("too large");
    assert!(matches!(error, onnxrt::Error::OutOfMemory { .. }), "{error:?}");
    let text = error.to_string();
    assert!(!text.contains("gpu_mem_limit") && !text.contains("GPU work"), "{text}");
    assert!(text.contains("host memory"), "{text}");
    // The environment's shared CPU allocator (ORT 1.23+) says the same.
    if onnxrt::runtime_info().expect("runtime").api_level >= 23 {
        let env = Environment::global().expect("env");
        let cpu = onnxrt::MemoryInfo::cpu().expect("cpu");
        let shared = env.shared_allocator(&cpu).expect("shared").expect("the CPU has one");
        let error = shared.tensor::<f32>(&[1 << 40]).expect_err("too large");
        assert!(matches!(error, onnxrt::Error::OutOfMemory { host: true, .. }), "{error:?}");
        assert!(!error.to_string().contains("gpu_mem_limit"), "{error}");
    }
}
