//! `onnxrt doctor --dist X` compares the loaded runtime with X: another runtime (another version,
//! or CPU-only where X is a GPU build) is a FAIL row naming both; an unknown X lists the known
//! names, worded for the command (no ONNXRT_DIST or .cargo/config.toml advice).

mod common;

use common::{onnxrt, row, rows, run};

#[test]
fn a_gpu_dist_with_the_cpu_runtime_loaded_fails_naming_both() {
    // The runtime these tests load is the CPU-only 1.16.2 (cpu-1.16.2-registry).
    let ran = run(onnxrt().args(["doctor", "--json", "--dist", "gpu-1.16.2"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let found = rows(&ran);
    let manifest = row(&found, "manifest");
    assert_eq!(manifest.1, "FAIL", "{manifest:?}");
    assert!(manifest.2.contains("`gpu-1.16.2` is ONNX Runtime 1.16.2, a GPU (CUDA) build"), "{manifest:?}");
    assert!(manifest.2.contains("the loaded runtime is ONNX Runtime 1.16.2, a CPU-only build"), "{manifest:?}");
    assert!(manifest.3.as_deref().unwrap_or("").contains("onnxrt fetch gpu-1.16.2"), "{manifest:?}");
    assert!(ran.stderr.contains("check(s) failed (manifest"), "{}", ran.both());

    // Another version is a FAIL too.
    let ran = run(onnxrt().args(["doctor", "--json", "--dist", "gpu-cuda13-1.30.0"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let found = rows(&ran);
    let manifest = row(&found, "manifest");
    assert_eq!(manifest.1, "FAIL", "{manifest:?}");
    assert!(manifest.2.contains("1.30.0") && manifest.2.contains("1.16.2"), "{manifest:?}");

    // The runtime that is loaded passes, by either of its names.
    for same in ["cpu-1.16.2", "cpu-1.16.2-registry"] {
        let ran = run(onnxrt().args(["doctor", "--json", "--dist", same]));
        assert_eq!(ran.code, Some(0), "{same}: {}", ran.both());
        assert_eq!(row(&rows(&ran), "manifest").1, "OK", "{same}");
    }
}

#[test]
fn an_unknown_dist_lists_the_known_names_for_the_command() {
    let ran = run(onnxrt().args(["doctor", "--dist", "nonsense"]));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("no distribution named `nonsense`"), "{}", ran.both());
    for name in ["gpu-1.16.2", "cpu-1.16.2", "cpu-1.16.2-registry", "gpu-cuda13-1.30.0"] {
        assert!(ran.stderr.contains(name), "{name}: {}", ran.both());
    }
    assert!(!ran.stderr.contains("config.toml") && !ran.stderr.contains("Set ONNXRT_DIST"), "{}", ran.both());
    assert_eq!(ran.stdout, "", "{}", ran.both());
}
