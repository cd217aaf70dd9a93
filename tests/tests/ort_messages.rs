//! ORT's message texts (`onnxrt::ort_messages`, the one table the explaining functions read)
//! against the real runtime: each entry a CPU runtime can produce is provoked here, the table's
//! pattern is checked against the text ORT wrote (where the error keeps it) and the error is
//! the one the entry means. CI runs this on 1.16.2 (the workspace stage) and 1.32.0 (the
//! `newest` stage); on those runtimes an entry's `provoked_on` must say exactly which of them
//! produce it. The entries only a GPU produces are checked against their recorded texts by the
//! table's own unit tests.

use ndarray::arr1;
use onnxrt::ort_messages::{self, OrtMessage, CHECKED_ON, TABLE};
use onnxrt::{Error, RunOptions, Value};
use onnxrt_onnx_proto::tensor_shape_proto::{dimension, Dimension};
use onnxrt_onnx_proto::{type_proto, TensorShapeProto, TypeProto, ValueInfoProto};
use onnxrt_tests::{builder, model, ort_minor, proto, read_f32_le, session};

/// The entries this file provokes (on the runtimes their `provoked_on` names).
const PROVOKED_HERE: [&str; 13] = [
    "OUT_OF_MEMORY",
    "TERMINATED",
    "MODEL_TOO_NEW",
    "PROTOBUF_PARSE_FAILED",
    "UNKNOWN_PROVIDER",
    "PROVIDER_NOT_IN_BUILD",
    "LIBRARY_NOT_LOADED",
    "RUN_ASYNC_NEEDS_THREADS",
    "OUTPUT_SHAPE_REFUSED",
    "EXTERNAL_DATA_WITHOUT_FILE",
    "EXTERNAL_DATA_WRONG_TENSOR",
    "EXTERNAL_DATA_UNKNOWN_NAME",
    "PLACEMENT_NOT_RECORDED",
];

/// Entries whose text no record holds yet: the GPU failures the crate gives advice for (an old
/// driver, a GPU the build has no kernels for) that no GPU run here has met.
const NOT_SEEN_YET: [&str; 2] = ["CUDA_DRIVER", "CUDA_NO_KERNEL"];

fn runtime() -> String {
    onnxrt::runtime_info().expect("the runtime loads").version
}

/// What provoking an entry gave on this runtime.
enum Seen<'a> {
    /// ORT's text, which the entry's pattern must match.
    Text(&'a str),
    /// The error only this entry's pattern leads to; the error does not keep ORT's text.
    Typed,
    /// Nothing: this runtime does not write the text.
    Not,
}

/// Checks what provoking `entry` gave. On the runtimes CI checks, the entry's `provoked_on` must
/// name this one exactly when it wrote the text.
fn check(entry: &OrtMessage, seen: Seen<'_>) {
    let version = runtime();
    if let Seen::Text(text) = seen {
        println!("{} on ORT {version}: {text}", entry.name);
        assert!(entry.matches(text), "{}'s pattern {:?} misses ORT {version}'s text: {text}", entry.name, entry.any_of);
    }
    let written = !matches!(seen, Seen::Not);
    if CHECKED_ON.contains(&version.as_str()) {
        assert_eq!(
            entry.provoked_on.contains(&version.as_str()),
            written,
            "{}: ORT {version} {} this text but provoked_on says {:?}",
            entry.name,
            if written { "writes" } else { "does not write" },
            entry.provoked_on
        );
    }
}

/// The message an error kept whole, for the variants that keep ORT's.
fn ort_text(error: &Error) -> &str {
    match error {
        Error::Ort { message, .. }
        | Error::OutOfMemory { message, .. }
        | Error::Terminated { message }
        | Error::ModelTooNew { message, .. }
        | Error::NotOnnxModel { message, .. } => message,
        other => panic!("expected an error that keeps ORT's message, got {other:?}"),
    }
}

#[test]
fn every_entry_a_cpu_runtime_writes_is_provoked_here() {
    let version = runtime();
    for entry in TABLE {
        let here = PROVOKED_HERE.contains(&entry.name);
        assert!(
            here || entry.provoked_on.is_empty(),
            "{} lists {:?} but no test here provokes it",
            entry.name,
            entry.provoked_on
        );
        assert!(
            here || !entry.recorded.is_empty() || NOT_SEEN_YET.contains(&entry.name),
            "{}: neither provoked nor recorded",
            entry.name
        );
    }
    for name in PROVOKED_HERE {
        assert!(TABLE.iter().any(|e| e.name == name), "{name} is no entry of the table");
    }
    println!("ORT {version}; the runtimes CI checks: {CHECKED_ON:?}");
}

/// A float vector of any length.
fn vector(name: &str) -> ValueInfoProto {
    let dim = Dimension { value: Some(dimension::Value::DimParam("n".into())), denotation: None };
    let tensor = type_proto::Tensor { elem_type: Some(proto::FLOAT), shape: Some(TensorShapeProto { dim: vec![dim] }) };
    let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
    ValueInfoProto { name: Some(name.into()), r#type: Some(ty), doc_string: None }
}

#[test]
fn out_of_memory() {
    // ConstantOfShape asked for 2^40 floats (4 TiB): the allocation fails at once.
    let shape = proto::tensor_info("shape", proto::INT64, &[1]);
    let y = vector("y");
    let bytes = proto::model(8, 17, &[proto::node("ConstantOfShape", &["shape"], &["y"], &[])], &[shape], &[y]);
    let session = builder().commit_from_memory(&bytes).expect("session");
    let shape = Value::from_vec(&[1], vec![1i64 << 40]).expect("shape");
    let error = session.run([("shape", &shape)]).expect_err("4 TiB");
    assert!(matches!(error, Error::OutOfMemory { .. }), "{error:?}");
    check(&ort_messages::OUT_OF_MEMORY, Seen::Text(ort_text(&error)));
}

#[test]
fn terminated() {
    let session = session("add_f32.onnx");
    let options = RunOptions::new().expect("run options");
    options.terminator().terminate().expect("terminate");
    let v = Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("input");
    let error = session.run_with([("a", &v), ("b", &v)], &[], Some(&options)).expect_err("terminated");
    assert!(matches!(error, Error::Terminated { .. }), "{error:?}");
    check(&ort_messages::TERMINATED, Seen::Text(ort_text(&error)));
}

#[test]
fn model_too_new() {
    // IR version 10 is too new for 1.16; every runtime refuses IR version 99.
    let error = if ort_minor() >= 18 {
        builder().commit_from_memory(&proto::unary("Relu", 99, 17)).expect_err("IR version 99")
    } else {
        builder().commit_from_file(model("opset_too_new.onnx")).expect_err("IR version 10 on 1.16")
    };
    assert!(matches!(error, Error::ModelTooNew { .. }), "{error:?}");
    check(&ort_messages::MODEL_TOO_NEW, Seen::Text(ort_text(&error)));
}

#[test]
fn protobuf_parse_failed() {
    let error = builder().commit_from_memory(b"these bytes are no ONNX model").expect_err("not protobuf");
    assert!(matches!(error, Error::NotOnnxModel { .. }), "{error:?}");
    check(&ort_messages::PROTOBUF_PARSE_FAILED, Seen::Text(ort_text(&error)));
}

#[test]
fn unknown_provider() {
    let error = builder()
        .provider("OpenVino2", std::iter::empty::<(&str, &str)>())
        .commit_from_file(model("mlp.onnx"))
        .expect_err("unknown provider");
    // The error quotes the first line of ORT's text in its fix.
    let Error::ProviderNotAvailable { fix, .. } = &error else {
        panic!("expected ProviderNotAvailable, got {error:?}")
    };
    assert!(fix.contains("does not know a provider called `OpenVino2`"), "{fix}");
    check(&ort_messages::UNKNOWN_PROVIDER, Seen::Text(fix));
}

#[test]
fn provider_not_in_build() {
    let error = builder()
        .provider("OpenVINO", [("device_type", "CPU")])
        .commit_from_file(model("mlp.onnx"))
        .expect_err("not in the CPU build");
    // Only the table's pattern leads to this error and this fix; ORT's text is not kept.
    let Error::ProviderNotAvailable { fix, .. } = &error else {
        panic!("expected ProviderNotAvailable, got {error:?}")
    };
    assert!(fix.contains("build that includes the OpenVINO provider"), "{fix}");
    check(&ort_messages::PROVIDER_NOT_IN_BUILD, Seen::Typed);
}

#[test]
fn library_not_loaded() {
    let missing = std::env::temp_dir().join("onnxrt-ort-messages-no-such-library.so");
    // SAFETY: the file does not exist, so nothing is loaded and no foreign code runs.
    let built = unsafe { builder().custom_op_library(&missing) }.commit_from_file(model("mlp.onnx"));
    let error = built.expect_err("no such library");
    check(&ort_messages::LIBRARY_NOT_LOADED, Seen::Text(ort_text(&error)));
}

#[test]
fn run_async_needs_threads() {
    let session = builder().intra_op_threads(1).commit_from_file(model("add_f32.onnx")).expect("loads");
    let v = || Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("input");
    // Only the table's pattern leads to this error; ORT's text is not kept.
    match session.run_async([("a", v()), ("b", v())], &[]) {
        Err(Error::AsyncNeedsThreadPool { threads: 1 }) => {}
        other => panic!("expected AsyncNeedsThreadPool, got {:?}", other.err()),
    }
    check(&ort_messages::RUN_ASYNC_NEEDS_THREADS, Seen::Typed);
}

#[test]
fn output_shape_refused() {
    // `y = Neg(x)` declared [3], computed [4]; a [3] tensor bound for it is refused by ORT (the
    // session's own preallocated outputs meet the same refusal and repeat the run).
    let x = vector("x");
    let y = proto::tensor_info("y", proto::FLOAT, &[3]);
    let bytes = proto::model(8, 17, &[proto::node("Neg", &["x"], &["y"], &[])], &[x], &[y]);
    let session = builder().commit_from_memory(&bytes).expect("session");
    let x = Value::from_array(arr1(&[1.0f32, 2.0, 3.0, 4.0])).expect("x");
    let mut y = Value::from_vec(&[3], vec![0f32; 3]).expect("y");
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("x", &x).expect("bind x");
    binding.bind_output("y", &mut y).expect("bind y");
    let error = binding.run(None).expect_err("a [3] tensor for a [4] result");
    check(&ort_messages::OUTPUT_SHAPE_REFUSED, Seen::Text(ort_text(&error)));
}

/// The MLP's weights as `mlp_external.data` holds them: w1 [16,32], b1 [32], w2 [32,4], b2 [4].
fn mlp_weights() -> Vec<(&'static str, Value<'static>)> {
    let all = read_f32_le(&model("mlp_external.data"));
    let mut rest = all.as_slice();
    let mut take = |name: &'static str, shape: &[i64]| {
        let (head, tail) = rest.split_at(shape.iter().product::<i64>() as usize);
        rest = tail;
        (name, Value::from_vec(shape, head.to_vec()).expect("weight"))
    };
    vec![take("w1", &[16, 32]), take("b1", &[32]), take("w2", &[32, 4]), take("b2", &[4])]
}

/// ORT's text in an error `external_data::explain` added its hint to (the hint follows it).
fn before_hint(error: &Error) -> &str {
    ort_text(error).split_once('\n').map_or(ort_text(error), |(ort, _)| ort)
}

#[test]
fn external_data_without_file() {
    let bytes = std::fs::read(model("mlp_external.onnx")).expect("model");
    let weights = mlp_weights();
    let named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();
    // b2 not given: ORT looks for the data file relative to no folder.
    let error = builder().commit_from_memory_with_external_data(&bytes, &named[..3]).expect_err("b2 missing");
    assert!(error.to_string().contains("give a tensor for every initializer stored outside the model"), "{error}");
    check(&ort_messages::EXTERNAL_DATA_WITHOUT_FILE, Seen::Text(before_hint(&error)));
}

#[test]
fn external_data_wrong_tensor() {
    let bytes = std::fs::read(model("mlp_external.onnx")).expect("model");
    let weights = mlp_weights();
    let wrong = Value::from_vec(&[32, 16], vec![0f32; 512]).expect("w1 transposed");
    let mut named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();
    named[0] = ("w1", &wrong);
    // A runtime that took the tensor when the session is made would refuse it at run time,
    // outside this explanation.
    match builder().commit_from_memory_with_external_data(&bytes, &named) {
        Ok(_) => check(&ort_messages::EXTERNAL_DATA_WRONG_TENSOR, Seen::Not),
        Err(error) => check(&ort_messages::EXTERNAL_DATA_WRONG_TENSOR, Seen::Text(before_hint(&error))),
    }
}

#[test]
fn external_data_unknown_name() {
    let bytes = std::fs::read(model("mlp_external.onnx")).expect("model");
    let weights = mlp_weights();
    let extra = Value::from_vec(&[1], vec![0f32]).expect("extra");
    let mut named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();
    named.push(("not_in_model", &extra));
    let error = builder().commit_from_memory_with_external_data(&bytes, &named).expect_err("unknown name");
    assert!(error.to_string().contains("not an initializer of the model"), "{error}");
    check(&ort_messages::EXTERNAL_DATA_UNKNOWN_NAME, Seen::Text(before_hint(&error)));
}

#[test]
fn placement_not_recorded() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("session");
    match session.placement().expect_err("not recorded") {
        // Before 1.24 the crate refuses before asking ORT: no text.
        Error::NeedsNewerRuntime { .. } => check(&ort_messages::PLACEMENT_NOT_RECORDED, Seen::Not),
        Error::BadSetting { allowed, .. } => {
            let text = allowed.split_once("built (").map_or("", |(_, ort)| ort.trim_end_matches(')'));
            check(&ort_messages::PLACEMENT_NOT_RECORDED, Seen::Text(text));
        }
        other => panic!("expected BadSetting, got {other:?}"),
    }
}
