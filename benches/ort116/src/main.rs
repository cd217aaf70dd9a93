//! onnxrt vs the raw C API vs `ort` 1.16.3, one process, one runtime library.
//!
//! `ORT_DYLIB_PATH` (ort's documented variable for its `load-dynamic` feature) is set to the
//! library onnxrt loaded before ort is first used, so all variants run on the same file.
//! Arguments as `cpu_bench`: `[--samples N] [--target-ms MS] [CASE ...]`.

use std::time::Duration;

use ndarray15::{ArrayD, CowArray, IxDyn};
use onnxrt_benches::{all_variants, cases, measure, print_table, Case, Variant};
use ort::{Environment, GraphOptimizationLevel, Session, SessionBuilder, Value};

fn leak<T>(value: T) -> &'static mut T {
    Box::leak(Box::new(value))
}

fn ort_session(env: &std::sync::Arc<Environment>, case: &Case) -> ort::OrtResult<Session> {
    SessionBuilder::new(env)?
        .with_optimization_level(GraphOptimizationLevel::Level3)?
        .with_intra_threads(1)?
        .with_parallel_execution(false)?
        .with_model_from_file(&case.model)
}

fn arrays(case: &Case) -> &'static [CowArray<'static, f32, IxDyn>] {
    let shape: Vec<usize> = case.in_shape.iter().map(|&d| d as usize).collect();
    leak(case.inputs.iter().map(|_| CowArray::from(ArrayD::from_elem(IxDyn(&shape), 1.0f32))).collect::<Vec<_>>())
}

/// `Session::run(vec![Value::from_array(..)])`: ort 1.16 takes the inputs by value, so they are
/// made on every run, as its documentation shows. Its `Value::from_array` copies the data each
/// time (`as_standard_layout()` yields a borrowed view and `as_mut_ptr()` on it clones).
///
/// ort's IoBinding is not timed: in 1.16.3 `IoBinding::bind_input` takes the `Value` by value and
/// drops it on return, freeing the (copied) input buffer that ORT's binding still points to, so a
/// run reads freed memory and its timings mean nothing.
fn ort_run(env: &std::sync::Arc<Environment>, case: &Case) -> ort::OrtResult<Variant> {
    let session: &'static Session = leak(ort_session(env, case)?);
    let arrays = arrays(case);
    Ok(Variant::new("ort 1.16.3 Session::run", move |n| {
        for _ in 0..n {
            let inputs: Vec<Value<'static>> = arrays
                .iter()
                .map(|a| Value::from_array(session.allocator(), a).expect("ort Value::from_array"))
                .collect();
            let outputs = session.run(inputs).expect("ort Session::run");
            std::hint::black_box(&outputs);
        }
    }))
}

fn main() {
    let mut samples = 31usize;
    let mut target_ms = 10u64;
    let mut wanted = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--samples" => samples = args.next().and_then(|v| v.parse().ok()).expect("--samples N"),
            "--target-ms" => target_ms = args.next().and_then(|v| v.parse().ok()).expect("--target-ms MS"),
            other => wanted.push(other.to_owned()),
        }
    }
    let info = onnxrt::runtime_info().expect("load the runtime");
    std::env::set_var("ORT_DYLIB_PATH", &info.library);
    let env = Environment::builder().with_name("ort116-bench").build().expect("ort Environment").into_arc();
    println!("runtime: ONNX Runtime {} from {} (ort: ORT_DYLIB_PATH, same file)", info.version, info.library.display());
    println!("options: intra_op_threads=1, sequential, all optimizations; {samples} samples of ~{target_ms} ms each, interleaved\n");
    for case in cases().into_iter().filter(|c| wanted.is_empty() || wanted.iter().any(|w| w == c.key)) {
        let mut variants = all_variants(&case).unwrap_or_else(|e| panic!("{}: {e}", case.key));
        variants.push(ort_run(&env, &case).expect("ort session"));
        let stats = measure(&mut variants, samples, Duration::from_millis(target_ms));
        print_table(case.key, case.title, &stats);
    }
}
