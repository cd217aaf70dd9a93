//! The ONNX backend conformance suite (the test data shipped in the `onnx` Python package) run
//! through onnxrt on the real runtime. See `tests/CONFORMANCE.md` for the results and how to
//! reproduce them.
//!
//! Each case's model is loaded with `commit_from_file` (one intra-op thread, see [`THREADS`]),
//! its `input_*.pb` files are decoded and turned into `Value`s, and every output is compared with
//! its `output_*.pb`: 32/64/16-bit floats with `rtol = 1e-3, atol = 1e-5` (NaN equals NaN),
//! 8-bit floats bit for bit (their smallest step, 2^-17 for FLOAT8E5M2FNUZ, is below `atol`),
//! everything else exactly, same element type and shape. Every case ends up in one bucket:
//! - passed;
//! - failed: it ran, and an output differs;
//! - unsupported by the runtime: ORT returned an error creating the session;
//! - refused at run: onnxrt's input checks or ORT's `Run` refused the data set;
//! - not expressible through onnxrt: the data needs a value this crate cannot build or read
//!   (maps as inputs, non-UTF-8 strings; no case of onnx 1.14.1's data needs one);
//! - random: the expected output is one random draw ([`RANDOM_OUTPUT`]), so it ran with outputs
//!   of the right type and shape, but its values cannot be compared.
//!
//! The outcome of every case, with the reason for each non-pass, is checked in as
//! `tests/conformance-expected.txt` (ORT 1.16.2; other runtimes have their own
//! `tests/conformance-expected-<version>.txt`); any difference fails the test and is listed
//! (old → new).
//! `ONNXRT_CONFORMANCE_BLESS=1` rewrites the file from this run instead (see `expected`).
//! Set `ONNXRT_CONFORMANCE_REPORT=/some/file.tsv` to get one line per case with its time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use half::{bf16, f16};
use onnxrt::{
    ElementType, Error, F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, Session, Value, ValueInfo, ValueKind, ValueType, F8E5M2,
};
use onnxrt_testdata::elem_type as et;
use onnxrt_testdata::{
    case_dirs, light_input, load_model_summary, load_value, onnx_backend_data_dir, DataSet, DecodeError, MapKeys,
    MapValue, ModelSummary, Tensor, TensorData, TestCase, TestValue, CASE_GROUPS,
};
use onnxrt_tests::{builder, close};

#[path = "conformance/expected.rs"]
mod expected;

const RTOL: f64 = 1e-3;
const ATOL: f64 = 1e-5;

/// Intra-op threads of every session (the Python cross-check in CONFORMANCE.md uses the same).
const THREADS: usize = 1;

/// Cases whose expected output is one draw of a Bernoulli without a seed: ORT's own draw equals it
/// only by chance (per element p² + (1-p)², about 2/3 on average: a 10-element case matches about
/// one run in 60), so a pass or a value difference is "random". (The seeded Bernoulli cases and
/// the dropout cases are deterministic for ORT and stay "failed".)
const RANDOM_OUTPUT: [&str; 4] =
    ["test_bernoulli", "test_bernoulli_double", "test_bernoulli_double_expanded", "test_bernoulli_expanded"];

/// The onnx package whose data `tests/conformance-expected.txt` describes.
const DATA_VERSION: &str = "1.14.1";

#[derive(Debug, Clone)]
enum Outcome {
    Passed,
    /// Ran, and an output differs: the reason (stable, checked in) and an example (printed only:
    /// the values can differ between CPUs).
    Failed(String),
    FailedAt(String, String),
    Unsupported(String),
    Refused(String),
    NotExpressible(String),
    Random,
    Panicked(String),
}

impl Outcome {
    /// The bucket, as `tests/conformance-expected.txt` writes it.
    fn bucket(&self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed(_) | Outcome::FailedAt(..) => "failed",
            Outcome::Unsupported(_) => "unsupported",
            Outcome::Refused(_) => "refused",
            Outcome::NotExpressible(_) => "not-expressible",
            Outcome::Random => "random",
            Outcome::Panicked(_) => "panicked",
        }
    }

    /// The reason for a non-pass, one line, as checked in.
    fn detail(&self) -> &str {
        match self {
            Outcome::Passed => "",
            Outcome::Random => "one random draw is expected; values not compared",
            Outcome::Failed(d)
            | Outcome::FailedAt(d, _)
            | Outcome::Unsupported(d)
            | Outcome::Refused(d)
            | Outcome::NotExpressible(d)
            | Outcome::Panicked(d) => d,
        }
    }

    /// The reason with the example values, for the log.
    fn long_detail(&self) -> String {
        match self {
            Outcome::FailedAt(d, example) => format!("{d} ({example})"),
            other => other.detail().to_owned(),
        }
    }
}

type Step<T> = Result<T, Outcome>;

/// The variant name of an error (`Ort(NotImplemented)`, `ModelTooNew`...) and the first line of
/// its message, without the model's path.
fn describe(error: &Error, case: &TestCase) -> String {
    let variant = error.variant();
    let variant = match error {
        Error::Ort { code, .. } => format!("{variant}({code:?})"),
        _ => variant.to_owned(),
    };
    let message = error.to_string();
    let first = message.lines().next().unwrap_or("").replace(&case.model.display().to_string(), "model.onnx");
    format!("{variant}: {first}")
}

fn decode_failure(what: &str, error: DecodeError) -> Outcome {
    if error.is_unsupported() {
        Outcome::NotExpressible(format!("{what}: {error}"))
    } else {
        Outcome::Failed(format!("cannot decode {what}: {error}"))
    }
}

/// Whether onnxrt itself refused the inputs (before ORT saw them).
fn refused_by_onnxrt(error: &Error) -> bool {
    matches!(
        error,
        Error::UnknownInput { .. }
            | Error::MissingInput { .. }
            | Error::DuplicateInput { .. }
            | Error::ElementTypeMismatch { .. }
            | Error::ShapeMismatch { .. }
            | Error::ValueKind { .. }
            | Error::InvalidArgument { .. }
    )
}

fn tensor_value(tensor: &Tensor) -> Step<Value<'static>> {
    let dims = &tensor.dims;
    let made = match &tensor.data {
        TensorData::F32(v) => Value::from_vec(dims, v.clone()),
        TensorData::F64(v) => Value::from_vec(dims, v.clone()),
        TensorData::F16(v) => Value::from_vec(dims, v.clone()),
        TensorData::BF16(v) => Value::from_vec(dims, v.clone()),
        TensorData::I8(v) => Value::from_vec(dims, v.clone()),
        TensorData::I16(v) => Value::from_vec(dims, v.clone()),
        TensorData::I32(v) => Value::from_vec(dims, v.clone()),
        TensorData::I64(v) => Value::from_vec(dims, v.clone()),
        TensorData::U8(v) => Value::from_vec(dims, v.clone()),
        TensorData::U16(v) => Value::from_vec(dims, v.clone()),
        TensorData::U32(v) => Value::from_vec(dims, v.clone()),
        TensorData::U64(v) => Value::from_vec(dims, v.clone()),
        TensorData::Bool(v) => Value::from_vec(dims, v.clone()),
        TensorData::Float8 { elem_type, bits } => float8_value(dims, *elem_type, bits),
        TensorData::String(v) => {
            let strings: Vec<&str> = v
                .iter()
                .map(|s| std::str::from_utf8(s))
                .collect::<Result<_, _>>()
                .map_err(|_| Outcome::NotExpressible("non-UTF-8 string input".into()))?;
            match Value::from_strings(dims, &strings) {
                Err(Error::InvalidString { index, why }) => {
                    return Err(Outcome::NotExpressible(format!("string input #{index}: {why}")));
                }
                other => other,
            }
        }
    };
    made.map_err(|e| Outcome::Failed(format!("onnxrt cannot build a {:?} tensor {dims:?}: {e}", tensor.elem_type())))
}

/// An 8-bit float tensor from its encodings, through onnxrt's float8 types.
fn float8_value(dims: &[i64], elem_type: i32, bits: &[u8]) -> onnxrt::Result<Value<'static>> {
    fn typed<T: onnxrt::Element>(dims: &[i64], bits: &[u8], from_bits: fn(u8) -> T) -> onnxrt::Result<Value<'static>> {
        Value::from_vec(dims, bits.iter().map(|&b| from_bits(b)).collect())
    }
    match elem_type {
        et::FLOAT8E4M3FN => typed(dims, bits, F8E4M3Fn::from_bits),
        et::FLOAT8E4M3FNUZ => typed(dims, bits, F8E4M3Fnuz::from_bits),
        et::FLOAT8E5M2 => typed(dims, bits, F8E5M2::from_bits),
        _ => typed(dims, bits, F8E5M2Fnuz::from_bits),
    }
}

/// The onnxrt value for an input, with the model's declaration for what the data cannot say
/// (the element type of an empty sequence or of an absent optional).
fn input_value(value: &TestValue, declared: Option<&ValueInfo>) -> Step<Value<'static>> {
    let declared_type = || {
        declared.and_then(|d| d.element_type).ok_or_else(|| {
            Outcome::Failed("the model declares no element type for an empty sequence or absent optional".into())
        })
    };
    match value {
        TestValue::Tensor(t) => tensor_value(t),
        TestValue::Sequence(items) if items.is_empty() => {
            Value::empty_sequence(declared_type()?).map_err(|e| Outcome::Failed(format!("Value::empty_sequence: {e}")))
        }
        TestValue::Sequence(items) => {
            let members = items
                .iter()
                .map(|item| match item {
                    TestValue::Tensor(t) => tensor_value(t),
                    _ => Err(Outcome::NotExpressible("sequence input of non-tensors".into())),
                })
                .collect::<Step<Vec<_>>>()?;
            Value::sequence(members).map_err(|e| Outcome::Failed(format!("Value::sequence: {e}")))
        }
        TestValue::Map(_) => Err(Outcome::NotExpressible("map input (onnxrt has no map constructor)".into())),
        // A present optional is its value.
        TestValue::Optional(Some(inner)) => input_value(inner, declared),
        TestValue::Optional(None) => {
            let of = match declared.and_then(|d| d.contains) {
                Some(ValueKind::Sequence) => ValueType::Sequence(declared_type()?),
                _ => ValueType::Tensor(declared_type()?),
            };
            Value::none(of).map_err(|e| Outcome::Failed(format!("Value::none: {e}")))
        }
    }
}

/// The inputs of one data set, by name, in the model's order.
fn inputs_of(set: &DataSet, summary: &ModelSummary, session: &Session) -> Step<Vec<(String, Value<'static>)>> {
    if set.generated_inputs {
        // light/ models: the runner feeds arange(n)/n in the declared shape.
        return summary
            .inputs
            .iter()
            .zip(&summary.input_shapes)
            .map(|((name, _), shape)| {
                let tensor =
                    light_input(shape.as_deref().unwrap_or(&[])).map_err(|e| decode_failure("light input", e))?;
                Ok((name.clone(), tensor_value(&tensor)?))
            })
            .collect();
    }
    set.inputs
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let (name, kind) =
                summary.inputs.get(i).ok_or_else(|| Outcome::Failed(format!("input_{i}.pb has no model input")))?;
            let value = load_value(path, *kind).map_err(|e| decode_failure(&format!("input_{i}.pb"), e))?;
            let declared = session.inputs().iter().find(|d| &d.name == name);
            Ok((name.clone(), input_value(&value, declared)?))
        })
        .collect()
}

/// A tensor's elements, read through onnxrt, in the decoder's representation.
fn read_tensor(value: &Value<'_>) -> Step<(Vec<i64>, TensorData)> {
    let info = value.tensor_info().map_err(|e| Outcome::Failed(format!("tensor_info: {e}")))?;
    let fail = |e: Error| Outcome::Failed(format!("reading a {} tensor: {e}", info.element_type));
    fn flat<T: onnxrt::Element>(value: &Value<'_>) -> onnxrt::Result<Vec<T>> {
        Ok(value.view::<T>()?.iter().copied().collect())
    }
    let data = match info.element_type {
        ElementType::F32 => TensorData::F32(flat(value).map_err(fail)?),
        ElementType::F64 => TensorData::F64(flat(value).map_err(fail)?),
        ElementType::F16 => TensorData::F16(flat::<f16>(value).map_err(fail)?),
        ElementType::BF16 => TensorData::BF16(flat::<bf16>(value).map_err(fail)?),
        ElementType::I8 => TensorData::I8(flat(value).map_err(fail)?),
        ElementType::I16 => TensorData::I16(flat(value).map_err(fail)?),
        ElementType::I32 => TensorData::I32(flat(value).map_err(fail)?),
        ElementType::I64 => TensorData::I64(flat(value).map_err(fail)?),
        ElementType::U8 => TensorData::U8(flat(value).map_err(fail)?),
        ElementType::U16 => TensorData::U16(flat(value).map_err(fail)?),
        ElementType::U32 => TensorData::U32(flat(value).map_err(fail)?),
        ElementType::U64 => TensorData::U64(flat(value).map_err(fail)?),
        ElementType::Bool => TensorData::Bool(flat(value).map_err(fail)?),
        ElementType::String => TensorData::String(value.string_bytes().map_err(fail)?),
        ElementType::F8E4M3Fn => {
            float8_data(et::FLOAT8E4M3FN, flat::<F8E4M3Fn>(value), F8E4M3Fn::to_bits).map_err(fail)?
        }
        ElementType::F8E4M3Fnuz => {
            float8_data(et::FLOAT8E4M3FNUZ, flat::<F8E4M3Fnuz>(value), F8E4M3Fnuz::to_bits).map_err(fail)?
        }
        ElementType::F8E5M2 => float8_data(et::FLOAT8E5M2, flat::<F8E5M2>(value), F8E5M2::to_bits).map_err(fail)?,
        ElementType::F8E5M2Fnuz => {
            float8_data(et::FLOAT8E5M2FNUZ, flat::<F8E5M2Fnuz>(value), F8E5M2Fnuz::to_bits).map_err(fail)?
        }
        other => return Err(Outcome::NotExpressible(format!("{other} output (no Rust element type)"))),
    };
    Ok((info.shape, data))
}

fn float8_data<T>(elem_type: i32, values: onnxrt::Result<Vec<T>>, to_bits: fn(T) -> u8) -> onnxrt::Result<TensorData> {
    Ok(TensorData::Float8 { elem_type, bits: values?.into_iter().map(to_bits).collect() })
}

fn compare_data(what: &str, expected: &TensorData, got: &TensorData) -> Step<()> {
    if expected.elem_type() != got.elem_type() {
        return Err(Outcome::Failed(format!(
            "{what}: element type {} expected, got {}",
            expected.elem_type(),
            got.elem_type()
        )));
    }
    if expected.len() != got.len() {
        return Err(Outcome::Failed(format!("{what}: {} elements expected, got {}", expected.len(), got.len())));
    }
    if let (TensorData::Float8 { bits: e, .. }, TensorData::Float8 { bits: g, .. }) = (expected, got) {
        // Bit for bit: the tolerance below would let neighbouring small values, and NaN
        // encodings or signs of zero, pass for one another.
        return match e.iter().zip(g).position(|(a, b)| a != b) {
            None => Ok(()),
            Some(i) => Err(Outcome::FailedAt(
                format!("{what}: 8-bit floats differ (bit for bit)"),
                format!("first #{i}: got {:#04x}, expected {:#04x}", g[i], e[i]),
            )),
        };
    }
    let is_float =
        matches!(expected, TensorData::F32(_) | TensorData::F64(_) | TensorData::F16(_) | TensorData::BF16(_));
    if !is_float {
        return if expected == got {
            Ok(())
        } else {
            let index = mismatch_index(expected, got);
            Err(Outcome::Failed(format!("{what}: element {index} differs (exact comparison)")))
        };
    }
    let (Some(e), Some(g)) = (expected.to_f64(), got.to_f64()) else {
        return Err(Outcome::Failed(format!("{what}: not numeric")));
    };
    let bad: Vec<usize> = (0..e.len()).filter(|&i| !close(g[i], e[i], RTOL, ATOL)).collect();
    match bad.first() {
        None => Ok(()),
        Some(&i) => Err(Outcome::FailedAt(
            format!("{what}: values differ beyond rtol {RTOL:e}, atol {ATOL:e}"),
            format!("{} of {} elements off; first #{i}: got {}, expected {}", bad.len(), e.len(), g[i], e[i]),
        )),
    }
}

fn mismatch_index(expected: &TensorData, got: &TensorData) -> String {
    match (expected.to_f64(), got.to_f64()) {
        (Some(e), Some(g)) => e.iter().zip(&g).position(|(a, b)| a != b).map_or("?".into(), |i| i.to_string()),
        _ => match (expected, got) {
            (TensorData::String(e), TensorData::String(g)) => {
                e.iter().zip(g).position(|(a, b)| a != b).map_or("?".into(), |i| i.to_string())
            }
            _ => "?".into(),
        },
    }
}

fn compare_map(what: &str, expected: &MapValue, got: &Value<'_>) -> Step<()> {
    let (keys, values) = got.map_entries().map_err(|e| Outcome::Failed(format!("{what}: map_entries: {e}")))?;
    let (_, keys) = read_tensor(&keys)?;
    let keys_match = match (&expected.keys, &keys) {
        (MapKeys::String(e), TensorData::String(g)) => e == g,
        (MapKeys::Int(e), got) => got.to_f64().is_some_and(|g| e.iter().map(|&k| k as f64).eq(g)),
        _ => false,
    };
    if !keys_match {
        return Err(Outcome::Failed(format!("{what}: map keys differ")));
    }
    let (_, values) = read_tensor(&values)?;
    let expected_values = expected
        .values
        .iter()
        .map(|v| v.as_tensor().and_then(|t| t.data.to_f64()).and_then(|d| d.first().copied()))
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| Outcome::NotExpressible(format!("{what}: map of non-scalar values")))?;
    let got_values = values.to_f64().ok_or_else(|| Outcome::Failed(format!("{what}: map values not numeric")))?;
    if expected_values.len() == got_values.len()
        && expected_values.iter().zip(&got_values).all(|(&e, &g)| close(g, e, RTOL, ATOL))
    {
        Ok(())
    } else {
        Err(Outcome::Failed(format!("{what}: map values differ")))
    }
}

fn compare(what: &str, expected: &TestValue, got: &Value<'_>) -> Step<()> {
    let kind = got.kind().map_err(|e| Outcome::Failed(format!("{what}: kind: {e}")))?;
    match (expected, kind) {
        (TestValue::Tensor(t), ValueKind::Tensor) => {
            let (shape, data) = read_tensor(got)?;
            if shape != t.dims {
                return Err(Outcome::Failed(format!("{what}: shape {:?} expected, got {shape:?}", t.dims)));
            }
            compare_data(what, &t.data, &data)
        }
        (TestValue::Sequence(items), ValueKind::Sequence) => {
            let members = got.sequence_items().map_err(|e| Outcome::Failed(format!("{what}: sequence_items: {e}")))?;
            if members.len() != items.len() {
                return Err(Outcome::Failed(format!("{what}: {} items expected, got {}", items.len(), members.len())));
            }
            items.iter().zip(&members).enumerate().try_for_each(|(i, (e, g))| compare(&format!("{what}[{i}]"), e, g))
        }
        (TestValue::Map(m), ValueKind::Map) => compare_map(what, m, got),
        (TestValue::Optional(expected), _) => {
            let none = got.is_none().map_err(|e| Outcome::Failed(format!("{what}: is_none: {e}")))?;
            match (expected, none) {
                (None, true) => Ok(()),
                (Some(inner), false) => compare(what, inner, got),
                (None, false) => Err(Outcome::Failed(format!("{what}: an absent optional expected, got a value"))),
                (Some(_), true) => Err(Outcome::Failed(format!("{what}: a value expected, got an absent optional"))),
            }
        }
        (_, ValueKind::Optional) => Err(Outcome::Failed(format!("{what}: a value expected, got an absent optional"))),
        (_, kind) => Err(Outcome::Failed(format!("{what}: expected {expected:.40?}, got a {kind:?}"))),
    }
}

fn run_case(case: &TestCase) -> Step<()> {
    let summary = load_model_summary(&case.model).map_err(|e| decode_failure("model.onnx", e))?;
    if case.data_sets.is_empty() {
        return Err(Outcome::NotExpressible("no test data set".into()));
    }
    let session: Session = builder()
        .intra_op_threads(THREADS)
        .commit_from_file(&case.model)
        .map_err(|e| Outcome::Unsupported(describe(&e, case)))?;
    for set in &case.data_sets {
        let inputs = inputs_of(set, &summary, &session)?;
        let named: Vec<(&str, &Value<'static>)> = inputs.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let outputs = session.run(&named).map_err(|e| {
            let by = if refused_by_onnxrt(&e) { "onnxrt refused the inputs" } else { "ORT's Run failed" };
            Outcome::Refused(format!("{by}: {}", describe(&e, case)))
        })?;
        for (j, path) in set.outputs.iter().enumerate() {
            let (name, kind) =
                summary.outputs.get(j).ok_or_else(|| Outcome::Failed(format!("output_{j}.pb has no model output")))?;
            let expected = load_value(path, *kind).map_err(|e| decode_failure(&format!("output_{j}.pb"), e))?;
            let got = outputs.get(name).map_err(|e| Outcome::Failed(format!("output `{name}`: {e}")))?;
            compare(&format!("output `{name}`"), &expected, got)?;
        }
    }
    Ok(())
}

fn guarded(case: &TestCase) -> Outcome {
    let random = case.group == "node" && RANDOM_OUTPUT.contains(&case.name.as_str());
    match catch_unwind(AssertUnwindSafe(|| run_case(case))) {
        Ok(Ok(())) if random => Outcome::Random,
        Ok(Ok(())) => Outcome::Passed,
        Ok(Err(Outcome::FailedAt(reason, _))) if random && reason.contains("values differ") => Outcome::Random,
        Ok(Err(outcome)) => outcome,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into());
            Outcome::Panicked(message)
        }
    }
}

/// The onnx package's version, when the data was found through Python (`None` when
/// `ONNXRT_ONNX_BACKEND_DATA` points at a folder).
fn data_version() -> Option<String> {
    if std::env::var_os("ONNXRT_ONNX_BACKEND_DATA").is_some() {
        return None;
    }
    let out =
        std::process::Command::new("python3").args(["-c", "import onnx; print(onnx.__version__)"]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

const BUCKETS: [&str; 7] = ["passed", "failed", "unsupported", "refused", "not-expressible", "random", "panicked"];

/// Counts per group and bucket, as CONFORMANCE.md shows them.
fn table(results: &[(&TestCase, Outcome, Duration)]) -> String {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for (case, outcome, _) in results {
        *counts.entry((case.group.as_str(), outcome.bucket())).or_default() += 1;
        *counts.entry(("all", outcome.bucket())).or_default() += 1;
    }
    let mut table = format!("{:<18} {:>6}", "group", "cases");
    for bucket in BUCKETS {
        let _ = write!(table, " {bucket:>15}");
    }
    for group in CASE_GROUPS.iter().copied().chain(["all"]) {
        let n: Vec<usize> = BUCKETS.iter().map(|b| counts.get(&(group, *b)).copied().unwrap_or(0)).collect();
        let _ = write!(table, "\n{group:<18} {:>6}", n.iter().sum::<usize>());
        for count in n {
            let _ = write!(table, " {count:>15}");
        }
    }
    table
}

#[test]
fn onnx_backend_conformance() {
    let required = std::env::var("ONNXRT_REQUIRE_CONFORMANCE").is_ok_and(|v| v == "1");
    let Some(root) = onnx_backend_data_dir() else {
        // CI sets this so that a missing onnx package fails the run instead of skipping it.
        assert!(!required, "ONNXRT_REQUIRE_CONFORMANCE=1 but the ONNX backend test data was not found");
        println!(
            "skipped: no ONNX backend test data. Install the onnx Python package (CI uses onnx=={DATA_VERSION}: \
             `pip install onnx=={DATA_VERSION}`) or set ONNXRT_ONNX_BACKEND_DATA to its backend/test/data folder"
        );
        return;
    };
    let version = data_version();
    let cases = case_dirs(&root).expect("the backend test cases can be listed");
    println!(
        "{} cases under {} (onnx {}); sessions with intra_op_threads({THREADS}) on the CPU",
        cases.len(),
        root.display(),
        version.as_deref().unwrap_or("version unknown")
    );

    let started = Instant::now();
    let mut results: Vec<(&TestCase, Outcome, Duration)> = Vec::with_capacity(cases.len());
    for case in &cases {
        let t = Instant::now();
        let outcome = guarded(case);
        results.push((case, outcome, t.elapsed()));
    }
    println!("{}\nin {:.1} s", table(&results), started.elapsed().as_secs_f64());

    for (case, outcome, _) in &results {
        if !matches!(outcome, Outcome::Passed) {
            println!("{} {}/{}: {}", outcome.bucket().to_uppercase(), case.group, case.name, outcome.long_detail());
        }
    }
    let mut slowest: Vec<_> = results.iter().map(|(c, _, d)| (*d, c.name.as_str())).collect();
    slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
    println!("slowest: {:?}", &slowest[..slowest.len().min(5)]);

    if let Some(path) = std::env::var_os("ONNXRT_CONFORMANCE_REPORT") {
        let mut report = String::from("group\tcase\toutcome\tdetail\tseconds\n");
        for (case, outcome, d) in &results {
            let detail = outcome.long_detail().replace(['\t', '\n'], " ");
            let _ = writeln!(
                report,
                "{}\t{}\t{}\t{detail}\t{:.3}",
                case.group,
                case.name,
                outcome.bucket(),
                d.as_secs_f64()
            );
        }
        std::fs::write(&path, report).expect("the report can be written");
        println!("report written to {}", std::path::Path::new(&path).display());
    }

    let panicked = results.iter().filter(|(_, o, _)| matches!(o, Outcome::Panicked(_))).count();
    assert_eq!(panicked, 0, "a case panicked inside onnxrt or this test (see PANICKED lines above)");

    if let Some(version) = version.filter(|v| v != DATA_VERSION) {
        // Other data versions have other cases and outcomes; CI pins the version.
        assert!(!required, "ONNXRT_REQUIRE_CONFORMANCE=1 needs onnx=={DATA_VERSION}'s data, found onnx {version}");
        println!("not compared: tests/conformance-expected.txt is for onnx {DATA_VERSION}'s data, this is {version}'s");
        return;
    }
    let actual: BTreeMap<String, (&str, &str)> = results
        .iter()
        .map(|(case, outcome, _)| (format!("{}/{}", case.group, case.name), (outcome.bucket(), outcome.detail())))
        .collect();
    if std::env::var("ONNXRT_CONFORMANCE_BLESS").is_ok_and(|v| v == "1") {
        let dropped = expected::bless(&actual).expect("tests/conformance-expected.txt can be rewritten");
        println!("blessed: {} rewritten with {} cases", expected::path().display(), actual.len());
        for case in dropped {
            println!("note dropped (its outcome changed; check it): {case}");
        }
        return;
    }
    let changes = expected::compare(&actual).unwrap_or_else(|e| panic!("{e}"));
    for change in &changes {
        println!("CHANGED {change}");
    }
    assert!(
        changes.is_empty(),
        "{} cases differ from {} (CHANGED lines above, old → new). If the change is \
         intended, rewrite the file with `ONNXRT_CONFORMANCE_BLESS=1 cargo test -p onnxrt-tests --test conformance` \
         and review its diff",
        changes.len(),
        expected::path().display()
    );
}
