//! CPU benchmarks of onnxrt, side by side with the raw ONNX Runtime C API in the same process.
//!
//! Every variant runs the same model on the same runtime library (the one onnxrt loaded) with the
//! same session options: 1 intra-op thread, sequential execution, all graph optimizations.
//!
//! - [`onnxrt_run`]: `Session::run` with inputs made once.
//! - [`onnxrt_binding`]: an `IoBinding` with inputs and a preallocated output bound once.
//! - [`onnxrt_round_trip`]: what a caller writes per call: `Value::from_view` over an existing
//!   buffer, `Session::run`, `outputs.get(name)?.view::<f32>()`, drop; against the same loop in C
//!   ([`raw_c::RawC::round_trip`]).
//! - [`raw_c::RawC`]: `c/raw_run.c`, the C API called from C (Run + ReleaseValue, or RunWithBinding).
//! - [`raw_ffi::RawFfi`]: the same loop written in Rust directly against `onnxrt_sys`.
//!
//! [`timing::measure`] times the variants of one case interleaved (A B C A B C ...), so a drift
//! of the machine's speed hits all of them alike. Timings are reported, never asserted
//! (docs/testing.md).

pub mod raw_c;
pub mod raw_ffi;
pub mod timing;

use std::path::PathBuf;

use onnxrt::{ExecutionMode, IoBinding, OptimizationLevel, Session, Value};

pub use timing::{measure, print_table, Stats, Variant};

/// One benchmark: a model, its float32 inputs (all of one shape) and its output.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name (`add1`, `add1mb`, `mlp`), also the raw C program's case argument.
    pub key: &'static str,
    /// Title for tables.
    pub title: &'static str,
    /// The model file.
    pub model: PathBuf,
    /// Input names; every input has shape `in_shape`.
    pub inputs: &'static [&'static str],
    /// Shape of each input.
    pub in_shape: &'static [i64],
    /// The one output's name.
    pub output: &'static str,
    /// Its shape.
    pub out_shape: &'static [i64],
}

impl Case {
    /// Elements in one input.
    pub fn in_len(&self) -> usize {
        self.in_shape.iter().product::<i64>() as usize
    }

    /// Elements in the output.
    pub fn out_len(&self) -> usize {
        self.out_shape.iter().product::<i64>() as usize
    }
}

/// The CPU cases: a 1-element Add, a 1 MiB Add, the small MLP at batch 1, and ORT's own tiny test
/// models `mul_1.onnx` (X[3,2] * W) and `sigmoid.onnx` ([3,4,5]).
pub fn cases() -> Vec<Case> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    vec![
        Case {
            key: "add1",
            title: "Add, 1 element",
            model: here.join("models/add_1.onnx"),
            inputs: &["a", "b"],
            in_shape: &[1],
            output: "sum",
            out_shape: &[1],
        },
        Case {
            key: "add1mb",
            title: "Add, 1 MiB (262144 f32)",
            model: here.join("models/add_1mb.onnx"),
            inputs: &["a", "b"],
            in_shape: &[262144],
            output: "sum",
            out_shape: &[262144],
        },
        Case {
            key: "mlp",
            title: "MLP 16-32-4, batch 1",
            model: here.join("../tests/data/models/mlp.onnx"),
            inputs: &["x"],
            in_shape: &[1, 16],
            output: "logits",
            out_shape: &[1, 4],
        },
        Case {
            key: "mul1",
            title: "mul_1.onnx, X[3,2] * W",
            model: here.join("models/mul_1.onnx"),
            inputs: &["X"],
            in_shape: &[3, 2],
            output: "Y",
            out_shape: &[3, 2],
        },
        Case {
            key: "sigmoid",
            title: "sigmoid.onnx, [3,4,5]",
            model: here.join("models/sigmoid.onnx"),
            inputs: &["x"],
            in_shape: &[3, 4, 5],
            output: "y",
            out_shape: &[3, 4, 5],
        },
    ]
}

/// The case called `key`.
pub fn case(key: &str) -> Case {
    cases().into_iter().find(|c| c.key == key).unwrap_or_else(|| panic!("no case `{key}`"))
}

/// The runtime library onnxrt loaded (loading it if needed): every baseline opens this file.
pub fn library() -> onnxrt::Result<PathBuf> {
    Ok(onnxrt::runtime_info()?.library)
}

/// A session with the options every variant uses.
pub fn session(case: &Case) -> onnxrt::Result<Session> {
    Session::builder()
        .intra_op_threads(1)
        .execution_mode(ExecutionMode::Sequential)
        .optimization_level(OptimizationLevel::All)
        .commit_from_file(&case.model)
}

/// The case's inputs, filled with 1.0.
pub fn inputs(case: &Case) -> onnxrt::Result<Vec<Value<'static>>> {
    case.inputs.iter().map(|_| Value::from_vec(case.in_shape, vec![1.0f32; case.in_len()])).collect()
}

fn leak<T>(value: T) -> &'static mut T {
    Box::leak(Box::new(value))
}

/// A binding of `case` with inputs and a preallocated output bound once (session and values are
/// leaked: a benchmark process keeps them to its end).
pub fn bound(case: &Case) -> onnxrt::Result<IoBinding<'static, 'static>> {
    let session: &'static Session = leak(session(case)?);
    let values: &'static [Value<'static>] = leak(inputs(case)?);
    let output: &'static mut Value<'static> = leak(Value::from_vec(case.out_shape, vec![0.0f32; case.out_len()])?);
    let mut binding = session.io_binding()?;
    for (name, value) in case.inputs.iter().zip(values) {
        binding.bind_input(name, value)?;
    }
    binding.bind_output(case.output, output)?;
    Ok(binding)
}

/// `Session::run(&[(name, &value), ...])` with the input values made once.
pub fn onnxrt_run(case: &Case) -> onnxrt::Result<Variant> {
    let session: &'static Session = leak(session(case)?);
    let values: &'static [Value<'static>] = leak(inputs(case)?);
    let feeds: Vec<(&'static str, &'static Value<'static>)> = case.inputs.iter().copied().zip(values.iter()).collect();
    Ok(Variant::new("onnxrt Session::run", move |n| {
        for _ in 0..n {
            let outputs = session.run(&feeds).expect("onnxrt Session::run");
            std::hint::black_box(&outputs);
        }
    }))
}

/// The whole round trip per call, over input buffers made once: `Value::from_view` for each
/// input, `Session::run`, `outputs.get(output)?.view::<f32>()` and one element read, then the
/// outputs and the input values dropped.
pub fn onnxrt_round_trip(case: &Case) -> onnxrt::Result<Variant> {
    let session: &'static Session = leak(session(case)?);
    let buffers: &'static Vec<Vec<f32>> = leak(case.inputs.iter().map(|_| vec![1.0f32; case.in_len()]).collect());
    let dims: Vec<usize> = case.in_shape.iter().map(|&d| d as usize).collect();
    let views: Vec<ndarray::ArrayViewD<'static, f32>> = buffers
        .iter()
        .map(|b| ndarray::ArrayViewD::from_shape(ndarray::IxDyn(&dims), b.as_slice()))
        .collect::<Result<_, _>>()
        .map_err(|e| onnxrt::Error::InvalidArgument { what: "benchmark view".into(), why: e.to_string() })?;
    let (names, output) = (case.inputs, case.output);
    Ok(Variant::new("onnxrt round trip", move |n| {
        for _ in 0..n {
            round_trip_once(session, names, &views, output).expect("onnxrt round trip");
        }
    }))
}

/// One round trip (see [`onnxrt_round_trip`]); returns the output's first element.
pub fn round_trip_once(
    session: &Session,
    names: &[&str],
    views: &[ndarray::ArrayViewD<'_, f32>],
    output: &str,
) -> onnxrt::Result<f32> {
    // On the stack (up to 4 inputs): the caller's code, not onnxrt's, should not allocate here.
    let mut values: [Option<Value<'_>>; 4] = Default::default();
    for (slot, view) in values.iter_mut().zip(views) {
        *slot = Some(Value::from_view(view.view())?);
    }
    let outputs = match (names, &values) {
        ([a], [Some(x), ..]) => session.run([(*a, x)])?,
        ([a, b], [Some(x), Some(y), ..]) => session.run([(*a, x), (*b, y)])?,
        _ => return Err(onnxrt::Error::InvalidArgument { what: "benchmark inputs".into(), why: "1 or 2".into() }),
    };
    let view = outputs.get(output)?.view::<f32>()?;
    Ok(std::hint::black_box(view.iter().next().copied().unwrap_or_default()))
}

/// `IoBinding::run` on a binding made once (inputs and a preallocated output).
pub fn onnxrt_binding(case: &Case) -> onnxrt::Result<Variant> {
    let mut binding = bound(case)?;
    Ok(Variant::new("onnxrt IoBinding::run", move |n| {
        for _ in 0..n {
            binding.run(None).expect("onnxrt IoBinding::run");
        }
    }))
}

/// Every variant this crate can build for `case`, baselines first (raw C Run is the reference).
pub fn all_variants(case: &Case) -> Result<Vec<Variant>, String> {
    let library = library().map_err(|e| e.to_string())?;
    let mut c_run = raw_c::RawC::open(&library, case)?;
    let mut c_bind = raw_c::RawC::open(&library, case)?;
    let mut ffi_run = raw_ffi::RawFfi::open(&library, case)?;
    let mut ffi_bind = raw_ffi::RawFfi::open(&library, case)?;
    let mut c_trip = raw_c::RawC::open(&library, case)?;
    Ok(vec![
        Variant::new("raw C Run", move |n| c_run.run(n, false)),
        Variant::new("raw C RunWithBinding", move |n| c_bind.run(n, true)),
        Variant::new("raw FFI (Rust) Run", move |n| ffi_run.run(n, false)),
        Variant::new("raw FFI (Rust) RunWithBinding", move |n| ffi_bind.run(n, true)),
        onnxrt_run(case).map_err(|e| e.to_string())?,
        onnxrt_binding(case).map_err(|e| e.to_string())?,
        Variant::new("raw C round trip", move |n| c_trip.round_trip(n)),
        onnxrt_round_trip(case).map_err(|e| e.to_string())?,
    ])
}
