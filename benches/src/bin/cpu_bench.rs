//! `cargo run --release -p onnxrt-benches --bin cpu_bench -- [--samples N] [--target-ms MS] [CASE ...]`
//!
//! Times onnxrt (`Session::run`, `IoBinding::run`) against the raw C API (a C program's loop, and
//! the same loop in Rust over `onnxrt_sys`) in this one process, on one runtime library, and
//! prints a Markdown table per case: median ns per run and ratios to the raw C baselines. Also
//! prints one `RESULT` line per variant for scripts.

use std::time::Duration;

use onnxrt_benches::{all_variants, cases, measure, print_table};

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
    println!("runtime: ONNX Runtime {} from {}", info.version, info.library.display());
    println!("options: intra_op_threads=1, sequential, all optimizations; {samples} samples of ~{target_ms} ms each, interleaved\n");
    for case in cases().into_iter().filter(|c| wanted.is_empty() || wanted.iter().any(|w| w == c.key)) {
        let mut variants = all_variants(&case).unwrap_or_else(|e| panic!("{}: {e}", case.key));
        let stats = measure(&mut variants, samples, Duration::from_millis(target_ms));
        print_table(case.key, case.title, &stats);
    }
}
