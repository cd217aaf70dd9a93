//! A table-driven sweep of wrong calls. Each case is one mistake a caller (or a hostile model) can
//! make; the sweep runs every case, records which `Error` variant came back, prints the table
//! (`--nocapture` shows it) and fails if any case got another variant, panicked, or succeeded
//! where it should not. A few cases are not errors and must succeed (NaN and ±Inf inputs, empty
//! tensors on dynamic axes, a session whose caller dropped its environment handle first).
//!
//! Mistakes the type system already refuses (a value dropped while bound, a borrowed view outliving
//! its array, a non-`Element` element type, a binding shared between threads) cannot be written as
//! runtime cases; they are listed in [`PREVENTED_BY_TYPES`] and checked to fail to compile by
//! `tests/tests/compile_fail.rs` (in `cargo test`).
//!
//! Some cases need models no file holds (non-UTF-8 strings, bool bytes other than 0/1, unknown
//! operators, opset 99); [`proto`] writes those as protobuf bytes in the test.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use half::{bf16, f16};
use ndarray::{Array2, ArrayView2};
use onnxrt::{ElementType, Environment, Error, GlobalThreadPools, MemoryInfo, Result, RunOptions, Session, Value};
use onnxrt_onnx_proto::prost::bytes::Bytes;
use onnxrt_onnx_proto::TensorProto;
use onnxrt_tests::{builder, mlp_input, model, ort_minor, proto, session, TempDir};

/// What a case must give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `Ok(())`: the call is legal and the case checked the result itself.
    Ok,
    /// An error whose [`variant`] is this text, e.g. `ShapeMismatch` or `Ort(InvalidProtobuf)`.
    Err(&'static str),
}

struct Case {
    name: String,
    expect: Expect,
    run: Box<dyn Fn() -> Result<()>>,
}

fn case(name: impl Into<String>, expect: Expect, run: impl Fn() -> Result<()> + 'static) -> Case {
    Case { name: name.into(), expect, run: Box::new(run) }
}

fn err(variant: &'static str) -> Expect {
    Expect::Err(variant)
}

/// The variant's name, with ORT's code for `Error::Ort`.
fn variant(error: &Error) -> String {
    match error {
        Error::Ort { code, .. } => format!("Ort({code:?})"),
        Error::RuntimeNotFound { .. } => "RuntimeNotFound".into(),
        Error::RuntimeTooOld { .. } => "RuntimeTooOld".into(),
        Error::AlreadyLoaded { .. } => "AlreadyLoaded".into(),
        Error::Unsupported { .. } => "Unsupported".into(),
        Error::UnknownInput { .. } => "UnknownInput".into(),
        Error::UnknownOutput { .. } => "UnknownOutput".into(),
        Error::DuplicateInput { .. } => "DuplicateInput".into(),
        Error::MissingInput { .. } => "MissingInput".into(),
        Error::ElementTypeMismatch { .. } => "ElementTypeMismatch".into(),
        Error::ReadTypeMismatch { .. } => "ReadTypeMismatch".into(),
        Error::ShapeMismatch { .. } => "ShapeMismatch".into(),
        Error::ValueKind { .. } => "ValueKind".into(),
        Error::DataLength { .. } => "DataLength".into(),
        Error::BadShape { .. } => "BadShape".into(),
        Error::NotContiguous { .. } => "NotContiguous".into(),
        Error::InvalidString { .. } => "InvalidString".into(),
        Error::InteriorNul { .. } => "InteriorNul".into(),
        Error::ModelFile { .. } => "ModelFile".into(),
        Error::NotOnnxModel { .. } => "NotOnnxModel".into(),
        Error::ModelTooNew { .. } => "ModelTooNew".into(),
        Error::ProviderNotAvailable { .. } => "ProviderNotAvailable".into(),
        Error::ProviderLoad { .. } => "ProviderLoad".into(),
        Error::OutOfMemory { .. } => "OutOfMemory".into(),
        Error::Terminated { .. } => "Terminated".into(),
        Error::InvalidArgument { .. } => "InvalidArgument".into(),
        Error::EnvironmentExists { .. } => "EnvironmentExists".into(),
        Error::BadSetting { .. } => "BadSetting".into(),
        Error::NoSuchDevice { .. } => "NoSuchDevice".into(),
        Error::StrictGpuWithoutProvider => "StrictGpuWithoutProvider".into(),
        Error::ReadOnlyValue { .. } => "ReadOnlyValue".into(),
        Error::NotHostMemory { .. } => "NotHostMemory".into(),
        other => format!("unlisted variant {other:?}"),
    }
}

/// Mistakes that do not compile. Each is a file under `tests/compile_fail/`, checked
/// by `tests/tests/compile_fail.rs` (in `cargo test`) to fail with the error code given here.
const PREVENTED_BY_TYPES: &[(&str, &str)] = &[
    ("drop (or move) a value while an IoBinding holds it", "E0505"),
    ("mutate a value bound as an IoBinding input", "E0502"),
    ("a Value::from_view outliving the array it borrows", "E0597"),
    ("a binding outliving its session", "E0597"),
    ("a String / usize / char tensor through from_vec (not an Element)", "E0277"),
    ("send an IoBinding to another thread", "E0277"),
    ("set a run tag while a terminator-sharing run reads the options", "E0502"),
    ("move owned inputs into Session::run (an output may be an input's memory)", "E0277"),
];

// ----- helpers -----

fn add_inputs() -> (Value<'static>, Value<'static>) {
    (Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("a"), Value::from_vec(&[2, 3], vec![2.0f32; 6]).expect("b"))
}

fn f32s(shape: &[i64], data: Vec<f32>) -> Value<'static> {
    Value::from_vec(shape, data).expect("f32 tensor")
}

/// Runs `identity_<suffix>.onnx` on a [2, 3] tensor of `data`'s type, which is the wrong one.
fn wrong_element_type<T: onnxrt::Element>(suffix: &str, data: Vec<T>) -> Result<()> {
    let s = session(&format!("identity_{suffix}.onnx"));
    let declared = s.inputs()[0].element_type.expect("a tensor input");
    assert_ne!(declared, T::TYPE, "the case must give a different type");
    let value = Value::from_vec(&[2, 3], data)?;
    let error = s.run(&[("x", &value)]).expect_err("a wrong element type must be refused");
    if let Error::ElementTypeMismatch { name, expected, got, .. } = &error {
        assert_eq!((name.as_str(), *expected, *got), ("x", declared, T::TYPE));
    }
    Err(error)
}

/// Gives `value` as the only input `x` of `identity_f32.onnx` (["N", "M"]).
fn identity_f32_with(value: &Value<'_>) -> Result<()> {
    session("identity_f32.onnx").run(&[("x", value)]).map(drop)
}

/// The sequence `sequence.onnx` returns for a = b = [1, 2, 3].
fn a_sequence() -> Value<'static> {
    let s = session("sequence.onnx");
    let v = f32s(&[3], vec![1.0, 2.0, 3.0]);
    let mut outputs = s.run(&[("a", &v), ("b", &v)]).expect("sequence.onnx runs");
    outputs.take("seq").expect("seq")
}

/// The first map `map_out.onnx` returns.
fn a_map() -> Value<'static> {
    let s = session("map_out.onnx");
    let x = f32s(&[1, 3], vec![0.2, 0.3, 0.5]);
    let outputs = s.run(&[("x", &x)]).expect("map_out.onnx runs");
    outputs[0].sequence_items().expect("a sequence of maps").remove(0)
}

fn a_string_tensor() -> Value<'static> {
    Value::from_strings(&[2], &["a", "b"]).expect("strings")
}

/// Deterministic pseudo-random bytes (xorshift), so the "random model" case is reproducible.
fn noise(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

// ----- the cases -----

fn element_type_cases() -> Vec<Case> {
    let e = err("ElementTypeMismatch");
    vec![
        case("f64 data for an f32 input", e, || wrong_element_type("f32", vec![0.5f64; 6])),
        case("f32 data for an f64 input", e, || wrong_element_type("f64", vec![0.5f32; 6])),
        case("f32 data for an f16 input", e, || wrong_element_type("f16", vec![0.5f32; 6])),
        case("f16 data for a bf16 input", e, || wrong_element_type("bf16", vec![f16::ONE; 6])),
        case("bf16 data for an f16 input", e, || wrong_element_type("f16", vec![bf16::ONE; 6])),
        case("u8 data for an i8 input", e, || wrong_element_type("i8", vec![1u8; 6])),
        case("i32 data for an i16 input", e, || wrong_element_type("i16", vec![1i32; 6])),
        case("i64 data for an i32 input", e, || wrong_element_type("i32", vec![1i64; 6])),
        case("i32 data for an i64 input", e, || wrong_element_type("i64", vec![1i32; 6])),
        case("bool data for a u8 input", e, || wrong_element_type("u8", vec![true; 6])),
        case("i16 data for a u16 input", e, || wrong_element_type("u16", vec![1i16; 6])),
        case("u64 data for a u32 input", e, || wrong_element_type("u32", vec![1u64; 6])),
        case("i64 data for a u64 input", e, || wrong_element_type("u64", vec![1i64; 6])),
        case("u8 data for a bool input", e, || wrong_element_type("bool", vec![1u8; 6])),
        case("f32 data for a string input", e, || wrong_element_type("string", vec![1.0f32; 6])),
        case("string data for an f32 input", e, || {
            let strings = Value::from_strings(&[2, 3], &["1", "2", "3", "4", "5", "6"])?;
            let error = session("identity_f32.onnx").run(&[("x", &strings)]).expect_err("strings for f32");
            assert!(matches!(error, Error::ElementTypeMismatch { got: ElementType::String, .. }), "{error:?}");
            Err(error)
        }),
    ]
}

fn shape_cases() -> Vec<Case> {
    let e = err("ShapeMismatch");
    vec![
        case("rank 3 for a rank-2 input", e, || identity_f32_with(&f32s(&[1, 2, 3], vec![0.0; 6]))),
        case("rank 1 for a rank-2 input", e, || identity_f32_with(&f32s(&[6], vec![0.0; 6]))),
        case("rank 0 (scalar) for a rank-2 input", e, || identity_f32_with(&Value::scalar(1.0f32)?)),
        case("rank 1 for a rank-0 input (scalar.onnx)", e, || {
            session("scalar.onnx").run(&[("x", &f32s(&[1], vec![2.0]))]).map(drop)
        }),
        case("wrong static dim: [2, 4] for [2, 3]", e, || {
            let (a, _) = add_inputs();
            let b = f32s(&[2, 4], vec![0.0; 8]);
            session("add_f32.onnx").run(&[("a", &a), ("b", &b)]).map(drop)
        }),
        case("wrong static dim: [2, 15] for [batch, 16]", e, || {
            session("mlp.onnx").run(&[("x", &f32s(&[2, 15], vec![0.0; 30]))]).map(drop)
        }),
        case("empty tensor [0, 3] where [2, 3] is fixed", e, || {
            let (a, _) = add_inputs();
            let empty = f32s(&[0, 3], Vec::new());
            let error = session("add_f32.onnx").run(&[("a", &a), ("b", &empty)]).expect_err("[0, 3]");
            assert!(matches!(&error, Error::ShapeMismatch { got, .. } if *got == [0, 3]), "{error:?}");
            Err(error)
        }),
        case("empty tensor [0, 0] on dynamic axes runs", Expect::Ok, || {
            let empty = f32s(&[0, 0], Vec::new());
            let s = session("identity_f32.onnx");
            let outputs = s.run(&[("x", &empty)])?;
            assert_eq!(outputs[0].tensor_info()?.shape, [0, 0]);
            assert_eq!(outputs[0].view::<f32>()?.len(), 0);
            Ok(())
        }),
        case("free_dimension batch = i64::MAX, then batch 2", e, || {
            let s = builder().free_dimension("batch", i64::MAX).commit_from_file(model("mlp.onnx"))?;
            s.run(&[("x", &Value::from_array(mlp_input())?)]).map(drop)
        }),
    ]
}

fn value_cases() -> Vec<Case> {
    vec![
        case("shape product overflows: [i64::MAX, i64::MAX]", err("BadShape"), || {
            Value::from_vec(&[i64::MAX, i64::MAX], vec![0.0f32]).map(drop)
        }),
        case("shape product overflows after a zero-free prefix: [2^32, 2^32]", err("BadShape"), || {
            Value::from_vec(&[1 << 32, 1 << 32], vec![0u8]).map(drop)
        }),
        // Empty (a 0 dimension) but the other dimensions overflow: refused at construction.
        case("empty tensor whose other dims overflow isize: [0, i64::MAX, 2], then view", err("BadShape"), || {
            let value = Value::from_vec::<f32>(&[0, i64::MAX, 2], Vec::new())?;
            value.view::<f32>().map(drop)
        }),
        case("empty tensor whose dims overflow i64 before the zero: [i64::MAX, 2, 0]", err("BadShape"), || {
            Value::from_vec::<f32>(&[i64::MAX, 2, 0], Vec::new()).map(drop)
        }),
        case("negative dimension i64::MIN", err("BadShape"), || {
            Value::from_vec(&[3, i64::MIN], vec![0i32; 3]).map(drop)
        }),
        case("negative dimension in a string tensor", err("BadShape"), || Value::from_strings(&[-1], &["x"]).map(drop)),
        case("string tensor shape overflows", err("BadShape"), || {
            Value::from_strings(&[i64::MAX, 3], &["x"]).map(drop)
        }),
        case("7 elements for shape [2, 3]", err("DataLength"), || Value::from_vec(&[2, 3], vec![0.0f32; 7]).map(drop)),
        case("no element for a scalar", err("DataLength"), || Value::from_vec::<f64>(&[], Vec::new()).map(drop)),
        case("3 strings for shape [2, 2]", err("DataLength"), || {
            Value::from_strings(&[2, 2], &["a", "b", "c"]).map(drop)
        }),
        case("string with a NUL byte", err("InvalidString"), || {
            let error = Value::from_strings(&[2], &["ok", "n\0l"]).expect_err("NUL");
            assert!(matches!(error, Error::InvalidString { index: 1, .. }), "{error:?}");
            Err(error)
        }),
        case("transposed view through from_view", err("NotContiguous"), || {
            let a = Array2::<f32>::zeros((2, 3));
            Value::from_view(a.t()).map(drop)
        }),
        case("empty sequence", err("InvalidArgument"), || Value::sequence(Vec::new()).map(drop)),
        case("sequence of f32 and i64 tensors", err("ElementTypeMismatch"), || {
            Value::sequence(vec![f32s(&[1], vec![1.0]), Value::from_vec(&[1], vec![1i64])?]).map(drop)
        }),
        case("sequence of a sequence", err("ValueKind"), || Value::sequence(vec![a_sequence()]).map(drop)),
        case("sequence of a map", err("ValueKind"), || Value::sequence(vec![a_map()]).map(drop)),
    ]
}

fn run_cases() -> Vec<Case> {
    vec![
        case("duplicate input name", err("DuplicateInput"), || {
            let (a, b) = add_inputs();
            session("add_f32.onnx").run(&[("b", &b), ("a", &a), ("b", &a)]).map(drop)
        }),
        case("unknown input name", err("UnknownInput"), || {
            let (a, b) = add_inputs();
            session("add_f32.onnx").run(&[("a", &a), ("B", &b)]).map(drop)
        }),
        case("input name with a NUL byte", err("UnknownInput"), || {
            let (a, b) = add_inputs();
            session("add_f32.onnx").run(&[("a", &a), ("b\0", &b)]).map(drop)
        }),
        case("unknown output in run_with", err("UnknownOutput"), || {
            let (a, b) = add_inputs();
            session("add_f32.onnx").run_with(&[("a", &a), ("b", &b)], &["sum", "product"], None).map(drop)
        }),
        case("missing input", err("MissingInput"), || {
            let (_, b) = add_inputs();
            session("add_f32.onnx").run(&[("b", &b)]).map(drop)
        }),
        case("no inputs at all", err("MissingInput"), || session("mlp.onnx").run(onnxrt::NO_INPUTS).map(drop)),
        case("sequence where a tensor is declared", err("ValueKind"), || {
            let error = identity_f32_with(&a_sequence()).expect_err("a sequence for a tensor");
            assert!(matches!(&error, Error::ValueKind { expected: "tensor", got, .. } if got == "sequence"));
            Err(error)
        }),
        case("map where a tensor is declared", err("ValueKind"), || identity_f32_with(&a_map())),
        case("tensor where a sequence is declared", err("ValueKind"), || {
            session("sequence_len.onnx").run(&[("seq", &f32s(&[2], vec![1.0, 2.0]))]).map(drop)
        }),
        case("the same value for two inputs runs", Expect::Ok, || {
            let (a, _) = add_inputs();
            let s = session("add_f32.onnx");
            let outputs = s.run(&[("a", &a), ("b", &a)])?;
            assert!(outputs[0].view::<f32>()?.iter().all(|&v| v == 2.0));
            Ok(())
        }),
        case("the same output named twice in run_with", Expect::Ok, || {
            let (a, b) = add_inputs();
            let s = session("add_f32.onnx");
            let outputs = s.run_with(&[("a", &a), ("b", &b)], &["sum", "sum"], None)?;
            assert_eq!(outputs.len(), 2);
            for i in 0..2 {
                assert!(outputs[i].view::<f32>()?.iter().all(|&v| v == 3.0));
            }
            Ok(())
        }),
        case("NaN and ±Inf inputs run and propagate (add_f32)", Expect::Ok, || {
            let (inf, nan) = (f32::INFINITY, f32::NAN);
            let a = f32s(&[2, 3], vec![nan, inf, -inf, inf, 1.0, nan]);
            let b = f32s(&[2, 3], vec![1.0, 1.0, inf, -inf, nan, -nan]);
            let s = session("add_f32.onnx");
            let outputs = s.run(&[("a", &a), ("b", &b)])?;
            let sum = outputs[0].to_array::<f32>()?;
            let got: Vec<String> = sum.iter().map(|v| format!("{v}")).collect();
            assert_eq!(got, ["NaN", "inf", "NaN", "NaN", "NaN", "NaN"]);
            Ok(())
        }),
        case("a NaN row through mlp.onnx stays in its row", Expect::Ok, || {
            let s = session("mlp.onnx");
            let clean = s.run(&[("x", &Value::from_array(mlp_input())?)])?[0].to_array::<f32>()?;
            let mut x = mlp_input();
            x[[0, 3]] = f32::NAN;
            let outputs = s.run(&[("x", &Value::from_array(x)?)])?;
            let out: Vec<f32> = outputs[0].view::<f32>()?.iter().copied().collect();
            assert!(out[..4].iter().all(|v| v.is_nan()), "NaN reaches every logit of row 0: {out:?}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let clean: Vec<f32> = clean.iter().copied().collect();
            assert_eq!(bits(&out[4..]), bits(&clean[4..]), "row 1 is untouched");
            Ok(())
        }),
        case("an infinite input through mlp.onnx gives non-finite logits, no error", Expect::Ok, || {
            let mut x = mlp_input();
            x.fill(f32::INFINITY);
            let s = session("mlp.onnx");
            let outputs = s.run(&[("x", &Value::from_array(x)?)])?;
            assert!(outputs[0].view::<f32>()?.iter().all(|v| !v.is_finite()));
            Ok(())
        }),
    ]
}

fn reader_cases() -> Vec<Case> {
    vec![
        case("reading a sequence as a tensor (view)", err("ValueKind"), || a_sequence().view::<f32>().map(drop)),
        case("tensor_info of a map", err("ValueKind"), || a_map().tensor_info().map(drop)),
        case("string_bytes of a sequence", err("ValueKind"), || a_sequence().string_bytes().map(drop)),
        case("map_entries on a tensor", err("ValueKind"), || f32s(&[1], vec![1.0]).map_entries().map(drop)),
        case("map_entries on a sequence", err("ValueKind"), || a_sequence().map_entries().map(drop)),
        case("sequence_items on a tensor", err("ValueKind"), || f32s(&[1], vec![1.0]).sequence_items().map(drop)),
        case("sequence_items on a map", err("ValueKind"), || a_map().sequence_items().map(drop)),
        case("view::<i64> of an f32 tensor", err("ReadTypeMismatch"), || {
            f32s(&[2], vec![1.0, 2.0]).view::<i64>().map(drop)
        }),
        case("view::<i64> of an f64 tensor (same byte size)", err("ReadTypeMismatch"), || {
            Value::from_vec(&[1], vec![1.0f64])?.view::<i64>().map(drop)
        }),
        case("view::<u8> of a string tensor", err("ReadTypeMismatch"), || a_string_tensor().view::<u8>().map(drop)),
        case("strings() of an f32 tensor", err("ReadTypeMismatch"), || f32s(&[1], vec![1.0]).strings().map(drop)),
        case("string_bytes() of a bool tensor", err("ReadTypeMismatch"), || {
            Value::from_vec(&[1], vec![true])?.string_bytes().map(drop)
        }),
        case("non-UTF-8 string output read with strings()", err("InvalidString"), || {
            let strings: [&'static [u8]; 3] = [b"fine", b"\xff\xfe latin-1 \xe9", b"nul\0inside"];
            let string_data = strings.map(Bytes::from_static).to_vec();
            let bytes = proto::constant(TensorProto { string_data, ..proto::tensor(proto::STRING, &[3]) });
            let s = builder().commit_from_memory(&bytes)?;
            let outputs = s.run(onnxrt::NO_INPUTS)?;
            // The bytes are all there, NUL included...
            let raw = outputs[0].string_bytes()?;
            assert_eq!(raw, [&b"fine"[..], b"\xff\xfe latin-1 \xe9", b"nul\0inside"]);
            // ...and strings() names the first element that is not UTF-8.
            let error = outputs[0].strings().expect_err("not UTF-8");
            assert!(matches!(error, Error::InvalidString { index: 1, .. }), "{error:?}");
            Err(error)
        }),
        case("output name not in the run (Outputs::get)", err("UnknownOutput"), || {
            let (a, b) = add_inputs();
            let s = session("add_f32.onnx");
            let outputs = s.run(&[("a", &a), ("b", &b)])?;
            outputs.get("a").map(drop)
        }),
        case("an output taken twice (Outputs::take)", err("UnknownOutput"), || {
            let (a, b) = add_inputs();
            let s = session("add_f32.onnx");
            let mut outputs = s.run(&[("a", &a), ("b", &b)])?;
            outputs.take("sum")?;
            outputs.take("sum").map(drop)
        }),
    ]
}

fn builder_cases() -> Vec<Case> {
    vec![
        case("intra_op_threads(usize::MAX)", err("BadSetting"), || {
            builder().intra_op_threads(usize::MAX).commit_from_file(model("add_f32.onnx")).map(drop)
        }),
        case("inter_op_threads(i32::MAX as usize + 1)", err("BadSetting"), || {
            builder().inter_op_threads(1 << 31).commit_from_file(model("add_f32.onnx")).map(drop)
        }),
        case("free_dimension with a negative size", err("BadSetting"), || {
            builder().free_dimension("batch", -1).commit_from_file(model("mlp.onnx")).map(drop)
        }),
        case("free_dimension name with a NUL byte", err("InteriorNul"), || {
            builder().free_dimension("bat\0ch", 1).commit_from_file(model("mlp.onnx")).map(drop)
        }),
        case("config_entry value with a NUL byte", err("InteriorNul"), || {
            builder()
                .config_entry(onnxrt::config_keys::DISABLE_PREPACKING, "1\0")
                .commit_from_file(model("add_f32.onnx"))
                .map(drop)
        }),
        case("log_id with a NUL byte", err("InteriorNul"), || {
            builder().log_id("a\0b").commit_from_file(model("add_f32.onnx")).map(drop)
        }),
        case("profiling prefix with a NUL byte", err("InteriorNul"), || {
            builder().profiling("/tmp/pro\0file").commit_from_file(model("add_f32.onnx")).map(drop)
        }),
        case("custom_op_library path with a NUL byte", err("InteriorNul"), || {
            // SAFETY: the path has a NUL byte, so nothing is loaded (refused before ORT is called).
            unsafe { builder().custom_op_library("/tmp/lib\0x.so") }.commit_from_file(model("add_f32.onnx")).map(drop)
        }),
        case("custom_op_library that does not exist", err("Ort(Fail)"), || {
            // SAFETY: no such file exists, so nothing is loaded.
            unsafe { builder().custom_op_library("/nonexistent/libcustom.so") }
                .commit_from_file(model("add_f32.onnx"))
                .map(drop)
        }),
        case("use_global_thread_pools without global pools", err("BadSetting"), || {
            builder().use_global_thread_pools().commit_from_file(model("add_f32.onnx")).map(drop)
        }),
        case("a second environment with global thread pools", err("EnvironmentExists"), || {
            let _live = onnxrt_tests::env();
            let pools = GlobalThreadPools { intra_op_threads: 1, inter_op_threads: 1 };
            Environment::builder().global_thread_pools(pools).commit().map(drop)
        }),
        case("the caller drops its Arc<Environment> before the session", Expect::Ok, || {
            let env = Environment::global()?;
            let s = Session::builder().environment(Arc::clone(&env)).intra_op_threads(1);
            let s = s.commit_from_file(model("add_f32.onnx"))?;
            drop(env);
            assert!(Arc::strong_count(s.environment()) >= 1);
            let (a, b) = add_inputs();
            let outputs = s.run(&[("a", &a), ("b", &b)])?;
            assert!(outputs[0].view::<f32>()?.iter().all(|&v| v == 3.0));
            Ok(())
        }),
    ]
}

fn model_cases() -> Vec<Case> {
    vec![
        case("model path with a NUL byte", err("ModelFile"), || {
            builder().commit_from_file("/tmp/model\0.onnx").map(drop)
        }),
        // ORT would read the folder and report a protobuf error; the builder refuses it first.
        case("model path that is a directory", err("ModelFile"), || {
            let dir = TempDir::new("model-dir");
            builder().commit_from_file(dir.path()).map(drop)
        }),
        case("empty model file", err("NotOnnxModel"), || {
            let dir = TempDir::new("empty-model");
            let path = dir.path().join("empty.onnx");
            std::fs::write(&path, b"").expect("write");
            builder().commit_from_file(&path).map(drop)
        }),
        case("empty model bytes (commit_from_memory)", err("NotOnnxModel"), || {
            builder().commit_from_memory(&[]).map(drop)
        }),
        case("4 KiB of random bytes as a model", err("NotOnnxModel"), || {
            builder().commit_from_memory(&noise(4096, 0x9e37_79b9_7f4a_7c15)).map(drop)
        }),
        case("an .onnx file cut in half", err("NotOnnxModel"), || {
            let bytes = std::fs::read(model("mlp.onnx")).expect("mlp.onnx");
            builder().commit_from_memory(&bytes[..bytes.len() / 2]).map(drop)
        }),
        // Too new for ORT 1.16 only: 1.18 and newer read IR 10 and opset 21.
        case(
            "IR version 10 / opset 21 (from memory)",
            if ort_minor() >= 18 { Expect::Ok } else { err("ModelTooNew") },
            || {
                let bytes = std::fs::read(model("opset_too_new.onnx")).expect("model");
                builder().commit_from_memory(&bytes).map(drop)
            },
        ),
        case("default-domain opset 99 at IR version 8", err("ModelTooNew"), || {
            builder().commit_from_memory(&proto::unary("Relu", 8, 99)).map(drop)
        }),
        case("an operator that does not exist", err("Ort(InvalidGraph)"), || {
            builder().commit_from_memory(&proto::unary("NoSuchOperator", 8, 17)).map(drop)
        }),
        // ORT's code for it: INVALID_ARGUMENT in 1.16.2, FAIL in the newer runtime CI runs.
        case(
            "a graph output no node produces",
            err(if ort_minor() <= 16 { "Ort(InvalidArgument)" } else { "Ort(Fail)" }),
            || {
                let bytes = proto::model(
                    8,
                    17,
                    &[proto::node("Relu", &["x"], &["y"], &[])],
                    &[proto::tensor_info("x", proto::FLOAT, &[2])],
                    &[proto::tensor_info("z", proto::FLOAT, &[2])],
                );
                builder().commit_from_memory(&bytes).map(drop)
            },
        ),
        case("Relu on a string input (type inference fails)", err("Ort(InvalidGraph)"), || {
            let bytes = proto::model(
                8,
                17,
                &[proto::node("Relu", &["x"], &["y"], &[])],
                &[proto::tensor_info("x", proto::STRING, &[2])],
                &[proto::tensor_info("y", proto::STRING, &[2])],
            );
            builder().commit_from_memory(&bytes).map(drop)
        }),
    ]
}

fn binding_cases() -> Vec<Case> {
    vec![
        case("IoBinding: bind_input with an unknown name", err("UnknownInput"), || {
            let s = session("identity_f32.onnx");
            let x = f32s(&[1, 1], vec![1.0]);
            let mut binding = s.io_binding()?;
            binding.bind_input("input", &x)
        }),
        case("IoBinding: bind_input with the wrong element type", err("ElementTypeMismatch"), || {
            let s = session("identity_f32.onnx");
            let x = Value::from_vec(&[1, 1], vec![1.0f64])?;
            let mut binding = s.io_binding()?;
            binding.bind_input("x", &x)
        }),
        case("IoBinding: bind_input with the wrong shape", err("ShapeMismatch"), || {
            let s = session("add_f32.onnx");
            let a = f32s(&[3, 2], vec![1.0; 6]);
            let mut binding = s.io_binding()?;
            binding.bind_input("a", &a)
        }),
        case("IoBinding: bind_input with a sequence", err("ValueKind"), || {
            let s = session("identity_f32.onnx");
            let seq = a_sequence();
            let mut binding = s.io_binding()?;
            binding.bind_input("x", &seq)
        }),
        case("IoBinding: bind_output with an unknown name", err("UnknownOutput"), || {
            let s = session("identity_f32.onnx");
            let mut y = f32s(&[1, 1], vec![0.0]);
            let mut binding = s.io_binding()?;
            binding.bind_output("x", &mut y)
        }),
        case("IoBinding: bind_output_to_device with an unknown name", err("UnknownOutput"), || {
            let s = session("identity_f32.onnx");
            let cpu = MemoryInfo::cpu()?;
            let mut binding = s.io_binding()?;
            binding.bind_output_to_device("z", &cpu)
        }),
        case("IoBinding: run with nothing bound", err("MissingInput"), || {
            let s = session("identity_f32.onnx");
            let mut binding = s.io_binding()?;
            binding.run(None)
        }),
        case("IoBinding: run with inputs but no outputs bound", err("Ort(InvalidArgument)"), || {
            let s = session("identity_f32.onnx");
            let x = f32s(&[1, 1], vec![1.0]);
            let mut binding = s.io_binding()?;
            binding.bind_input("x", &x)?;
            binding.run(None)
        }),
        // ORT would find it only when the kernel runs; the binding tracks bound inputs.
        case("IoBinding: run with an output bound but a missing input", err("MissingInput"), || {
            let s = session("add_f32.onnx");
            let (a, _) = add_inputs();
            let cpu = MemoryInfo::cpu()?;
            let mut binding = s.io_binding()?;
            binding.bind_input("a", &a)?;
            binding.bind_output_to_device("sum", &cpu)?;
            binding.run(None)
        }),
        case("IoBinding: outputs() before any run is empty", Expect::Ok, || {
            let s = session("identity_f32.onnx");
            let binding = s.io_binding()?;
            assert!(binding.outputs()?.is_empty());
            Ok(())
        }),
        // RUNTIME_EXCEPTION from 1.16.2's execution frame; INVALID_ARGUMENT from newer kernels.
        case(
            "IoBinding: output bound to a tensor of the wrong shape",
            err(if ort_minor() <= 16 { "Ort(RuntimeException)" } else { "Ort(InvalidArgument)" }),
            || {
                let s = session("identity_f32.onnx");
                let x = f32s(&[2, 3], vec![1.0; 6]);
                let mut y = f32s(&[3, 2], vec![0.0; 6]);
                let mut binding = s.io_binding()?;
                binding.bind_input("x", &x)?;
                binding.bind_output("y", &mut y)?;
                binding.run(None)
            },
        ),
        case("IoBinding: output bound to a tensor of the wrong type", err("ElementTypeMismatch"), || {
            let s = session("identity_f32.onnx");
            let x = f32s(&[2, 3], vec![1.0; 6]);
            let mut y = Value::from_vec(&[2, 3], vec![0i32; 6])?;
            let mut binding = s.io_binding()?;
            binding.bind_input("x", &x)?;
            binding.bind_output("y", &mut y)?;
            binding.run(None)
        }),
    ]
}

fn run_options_cases() -> Vec<Case> {
    vec![
        case("run tag with a NUL byte", err("InteriorNul"), || RunOptions::new()?.set_tag("tag\0")),
        case("terminated options reused without reset_terminate", err("Terminated"), || {
            let options = RunOptions::new()?;
            options.terminator().terminate()?;
            let (a, b) = add_inputs();
            let s = session("add_f32.onnx");
            let first = s.run_with(&[("a", &a), ("b", &b)], &[], Some(&options));
            assert!(matches!(first, Err(Error::Terminated { .. })), "{first:?}");
            s.run_with(&[("a", &a), ("b", &b)], &[], Some(&options)).map(drop)
        }),
        case("terminated options on an IoBinding run", err("Terminated"), || {
            let options = RunOptions::new()?;
            options.terminator().terminate()?;
            let s = session("identity_f32.onnx");
            let x = f32s(&[1, 1], vec![1.0]);
            let cpu = MemoryInfo::cpu()?;
            let mut binding = s.io_binding()?;
            binding.bind_input("x", &x)?;
            binding.bind_output_to_device("y", &cpu)?;
            binding.run(Some(&options))
        }),
        case("reset_terminate makes the options usable again", Expect::Ok, || {
            let mut options = RunOptions::new()?;
            options.terminator().terminate()?;
            options.reset_terminate()?;
            let (a, b) = add_inputs();
            session("add_f32.onnx").run_with(&[("a", &a), ("b", &b)], &[], Some(&options)).map(drop)
        }),
    ]
}

#[test]
fn sweep_of_wrong_calls() {
    let groups = [
        ("element types", element_type_cases()),
        ("shapes", shape_cases()),
        ("values", value_cases()),
        ("runs", run_cases()),
        ("readers", reader_cases()),
        ("session builder", builder_cases()),
        ("model files and bytes", model_cases()),
        ("IoBinding", binding_cases()),
        ("RunOptions", run_options_cases()),
    ];
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (group, cases) in groups {
        for Case { name, expect, run } in cases {
            let outcome = catch_unwind(AssertUnwindSafe(run));
            let (got, detail) = match &outcome {
                Ok(Ok(())) => ("Ok".to_owned(), String::new()),
                Ok(Err(error)) => (variant(error), error.to_string()),
                Err(panic) => {
                    let text = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    ("panic".to_owned(), text)
                }
            };
            let wanted = match expect {
                Expect::Ok => "Ok",
                Expect::Err(v) => v,
            };
            if got != wanted {
                failures.push(format!("{group} / {name}: expected {wanted}, got {got}: {detail}"));
            }
            rows.push((group, name, wanted, got, detail));
        }
    }
    println!("\n| # | area | case | result |\n| --- | --- | --- | --- |");
    for (i, (group, name, _, got, _)) in rows.iter().enumerate() {
        println!("| {} | {group} | {name} | `{got}` |", i + 1);
    }
    for (i, (reason, code)) in PREVENTED_BY_TYPES.iter().enumerate() {
        println!("| {} | type system | {reason} | does not compile ({code}) |", rows.len() + i + 1);
    }
    println!("\nMessages:");
    for (i, (_, name, _, _, detail)) in rows.iter().enumerate() {
        if !detail.is_empty() {
            let first_line = detail.lines().next().unwrap_or_default().replace('\0', "\\0");
            println!("{:>3}. {name}: {first_line}", i + 1);
        }
    }
    let errors = rows.iter().filter(|r| r.3 != "Ok").count();
    println!(
        "\n{} cases: {} refused with a typed error, {} ran as they should, {} failures; {} more refused at compile time",
        rows.len(),
        errors,
        rows.len() - errors,
        failures.len(),
        PREVENTED_BY_TYPES.len()
    );
    assert!(rows.len() >= 30);
    assert!(failures.is_empty(), "{} cases gave the wrong result:\n{}", failures.len(), failures.join("\n"));
}

/// [`Value::from_view`] borrows read-only memory; binding it as an IoBinding output (where ORT
/// writes) is refused with `ReadOnlyValue`, so the lent array stays untouched. (Found by this
/// sweep; before the fix ORT wrote into it, and a view of a `static` array crashed.)
#[test]
fn bind_output_must_not_write_into_a_borrowed_view() {
    let s = session("identity_f32.onnx");
    let x = f32s(&[2, 3], vec![7.0; 6]);
    let lent = Array2::<f32>::zeros((2, 3));
    let view: ArrayView2<'_, f32> = lent.view();
    let mut y = Value::from_view(view).expect("view");
    let mut binding = s.io_binding().expect("binding");
    binding.bind_input("x", &x).expect("bind x");
    let bound = binding.bind_output("y", &mut y);
    assert!(matches!(bound, Err(onnxrt::Error::ReadOnlyValue { .. })), "{bound:?}");
    if bound.is_ok() {
        let _ = binding.run(None);
    }
    drop(binding);
    drop(y);
    assert!(lent.iter().all(|&v| v == 0.0), "ORT wrote {lent:?} into an array lent as `&`");
}

/// A model can hand back bool tensors whose bytes are not 0 or 1 (ORT 1.16.2 does);
/// `Value::view::<bool>` checks the bytes and refuses them (a Rust `bool` may only be 0 or 1).
/// Found by this sweep.
#[test]
fn bool_outputs_with_invalid_bytes_are_refused() {
    let raw_data = Some(Bytes::from_static(&[0, 1, 2]));
    let bytes = proto::constant(TensorProto { raw_data, ..proto::tensor(proto::BOOL, &[3]) });
    let s = builder().commit_from_memory(&bytes).expect("the model loads");
    let outputs = s.run(onnxrt::NO_INPUTS).expect("runs");
    assert_eq!(outputs[0].tensor_info().expect("info").element_type, ElementType::Bool);
    let read = outputs[0].view::<bool>();
    if ort_minor() <= 16 {
        assert!(read.is_err(), "a byte 2 came back as a Rust bool");
    } else {
        // Newer runtimes hand the constant back as 0/1 (the view checks every byte, so an Ok
        // here means they did): byte 2 reads as true.
        let values: Vec<bool> = read.expect("0/1 bytes are valid bools").iter().copied().collect();
        assert_eq!(values, [false, true, true]);
    }
}
