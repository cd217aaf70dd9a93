//! The doctor's `provider devices` row where `nvidia-smi` sees a GPU that no registered provider
//! lists (a fake `nvidia-smi` first on PATH, on this GPU-less machine): on ONNX Runtime >= 1.22 a
//! WARN that says what `/sys/class/drm` holds (ORT's Linux discovery reads it) and that the classic
//! append path still reaches the GPU; a SKIP on older runtimes. One test in its own binary: it
//! writes an executable, and no other test thread forks while that file is open for writing.

mod common;

use common::{onnxrt, row, rows, run, FakeNvidiaSmi};

#[test]
fn a_gpu_no_provider_lists_is_named_with_what_discovery_reads() {
    let smi = FakeNvidiaSmi::printing("NVIDIA H100 80GB HBM3, 580.159.04, 9.0");

    let ran = run(onnxrt().args(["doctor", "--json"]).env("PATH", smi.path()));
    let found = rows(&ran);
    let runtime = row(&found, "runtime");
    let devices = row(&found, "provider devices");
    if runtime.2.contains("ONNX Runtime 1.16") {
        assert_eq!(devices.1, "SKIP", "{devices:?}");
        return;
    }
    assert_eq!(devices.1, "WARN", "a GPU that no provider lists: {devices:?}");
    assert!(devices.2.contains("/sys/class/drm"), "names what discovery reads: {devices:?}");
    let drm = std::path::Path::new("/sys/class/drm");
    let expected = if drm.is_dir() { "exists, yet" } else { "is missing" };
    assert!(devices.2.contains(expected), "says what /sys/class/drm holds here: {devices:?}");
    assert!(devices.3.as_deref().unwrap_or("").contains("--provider cuda"), "the classic path: {devices:?}");
}
