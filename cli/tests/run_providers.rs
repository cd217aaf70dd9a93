//! `onnxrt run --provider NAME` for every provider the library can name (refused with its typed
//! error where the runtime lacks it), `--threads`, `--repeat`/`--concurrency` with latency
//! percentiles, and `--placement` (which provider ran each node, from ORT's profile).

mod common;

use common::{model, onnxrt_with};

fn mlp() -> String {
    model("mlp.onnx").display().to_string()
}

#[test]
fn providers_the_cpu_runtime_lacks_are_refused_with_the_librarys_error() {
    for (asked, named) in [("tensorrt", "TensorRT"), ("XNNPACK", "XNNPACK"), ("OpenVINO", "OpenVINO"), ("cuda", "CUDA")]
    {
        let ran = onnxrt_with(&["run", &mlp(), "--provider", asked]);
        assert_eq!(ran.code, Some(1), "{asked}: {}", ran.both());
        // ProviderNotAvailable: names the provider, the runtime's providers, and what to do.
        assert!(ran.stderr.contains(named), "{asked}: {}", ran.both());
        assert!(ran.stderr.contains("CPUExecutionProvider"), "{asked}: {}", ran.both());
        assert!(!ran.stderr.contains("panicked"), "{asked}: {}", ran.both());
    }
    // A name ORT does not know at all is the same typed refusal, not a crash.
    let ran = onnxrt_with(&["run", &mlp(), "--provider", "NoSuchProvider"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("NoSuchProvider"), "{}", ran.both());
    // The CPU by any spelling runs.
    let ran = onnxrt_with(&["run", &mlp(), "--provider", "CPU", "--repeat", "0"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
}

#[test]
fn concurrent_repeats_report_percentiles_and_threads() {
    let ran = onnxrt_with(&["run", &mlp(), "--threads", "1", "--repeat", "12", "--concurrency", "3"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let line = ran.stdout.lines().find(|l| l.starts_with("latency")).expect("a latency line");
    for part in ["p50 ", "p90 ", "p99 ", "of 12 runs on 3 thread(s)", "runs/s"] {
        assert!(line.contains(part), "{part:?} missing: {line}");
    }
    let ran = onnxrt_with(&["run", &mlp(), "--repeat", "0"]);
    assert!(ran.stdout.contains("(no timed runs; use --repeat N)"), "{}", ran.both());
    let ran = onnxrt_with(&["run", &mlp(), "--threads", "0"]);
    assert_eq!(ran.code, Some(2), "{}", ran.both());
}

#[test]
fn placement_names_each_node_and_the_provider_that_ran_it() {
    let ran = onnxrt_with(&["run", &mlp(), "--placement", "--repeat", "0"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let text = ran.stdout.split("\nPLACEMENT (").nth(1).unwrap_or_else(|| panic!("no placement: {}", ran.both()));
    assert!(text.starts_with(&format!("{} on CPUExecutionProvider)", rows(text))), "{text}");
    assert!(rows(text) >= 2, "{text}");
    // Every row is a CPU node running a Gemm (possibly fused with its Relu) or the Relu.
    for row in text.lines().skip(2).take_while(|l| !l.is_empty()) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], "CPUExecutionProvider", "{row}");
        assert!(["Gemm", "FusedGemm", "Relu"].contains(&cells[cells.len() - 1]), "{row}");
    }
}

fn rows(text: &str) -> usize {
    text.lines().skip(2).take_while(|l| !l.is_empty()).count()
}
