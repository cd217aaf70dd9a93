//! `onnxrt doctor` with a fake `nvidia-smi` first on PATH, as on a server whose GPU is newer than
//! the distribution's CUDA and whose driver is too old for it. One test in its own binary: it
//! writes an executable, and no other test thread forks while that file is open for writing.

mod common;

use common::{onnxrt, row, rows, run, FakeNvidiaSmi};

#[test]
fn a_gpu_too_new_for_the_cuda_build_and_an_old_driver_fail_with_fixes() {
    let smi = FakeNvidiaSmi::printing("NVIDIA B200, 550.54.15, 10.0");

    let ran = run(onnxrt().args(["doctor", "--json", "--dist", "gpu-1.16.2"]).env("PATH", smi.path()));
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    let found = rows(&ran);
    let gpu = row(&found, "gpu 0");
    assert_eq!(gpu.1, "FAIL", "{gpu:?}");
    assert!(gpu.2.contains("compute capability 10.0") && gpu.2.contains("no kernel image is available"), "{gpu:?}");
    assert!(gpu.3.as_deref().unwrap_or("").contains("gpu-cuda13-1.30.0"), "{gpu:?}");
    let driver = row(&found, "driver");
    assert_eq!(driver.1, "OK", "550 is newer than CUDA 11.8's 520.61.05: {driver:?}");

    let ran = run(onnxrt().args(["doctor", "--json", "--dist", "gpu-cuda13-1.30.0"]).env("PATH", smi.path()));
    let found = rows(&ran);
    assert_eq!(row(&found, "gpu 0").1, "OK");
    let driver = row(&found, "driver");
    assert_eq!(driver.1, "FAIL", "{driver:?}");
    assert!(driver.2.contains("550.54.15") && driver.2.contains("580.65.06"), "{driver:?}");
    assert!(driver.3.as_deref().unwrap_or("").contains("upgrade the NVIDIA driver"), "{driver:?}");
    // A GPU and a CPU-only runtime: the GPU session row warns that the GPU goes unused.
    assert_eq!(row(&found, "gpu session").1, "WARN");
}
