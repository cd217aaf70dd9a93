//! ORT's CUDA provider through the device API (C API 22+), on the GPU machine: its library
//! (`libonnxruntime_providers_cuda.so`, beside the runtime) registered with
//! `Environment::register_provider_library`, then the MLP run on a CUDA device the discovery
//! offers. Where the discovery offers none (a VM or container without `/sys/class/drm`, which
//! ORT's Linux discovery reads), requiring a GPU is refused with the reason, and the classic
//! append path (`SessionBuilder::cuda`, strict) still runs on the GPU with the same numbers.
//!
//! ```text
//! cargo test -p onnxrt-tests --features gpu-tests --test gpu_device_api -- --test-threads 1 --nocapture
//! ```
//! with `ONNXRT_DYLIB_PATH` at the GPU runtime (tools/gpu/run.sh `devices`).
#![cfg(feature = "gpu-tests")]

use std::path::PathBuf;

use ndarray::ArrayD;
use onnxrt::ep_device::DeviceKind;
use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{Environment, Session, Value};
use onnxrt_tests::{assert_require_gpu_refused, close, mlp_input, model};

const CUDA: &str = "CUDAExecutionProvider";

fn cuda_provider_library() -> PathBuf {
    let runtime =
        std::env::var_os("ONNXRT_DYLIB_PATH").map(PathBuf::from).expect("ONNXRT_DYLIB_PATH names the GPU runtime");
    runtime.parent().expect("a directory").join("libonnxruntime_providers_cuda.so")
}

fn run_mlp(session: &Session) -> ArrayD<f32> {
    let x = Value::from_array(mlp_input()).expect("input");
    session.run(&[("x", &x)]).expect("runs").get("logits").expect("logits").to_array::<f32>().expect("f32")
}

fn assert_close(what: &str, got: &ArrayD<f32>, expected: &ArrayD<f32>) {
    assert_eq!(got.shape(), expected.shape(), "{what}");
    for (g, e) in got.iter().zip(expected) {
        assert!(close(f64::from(*g), f64::from(*e), 1e-3, 1e-4), "{what}: {g} vs CPU {e}");
    }
}

#[test]
fn cuda_runs_through_the_device_api_where_discovery_offers_it_and_the_strict_path_says_why_not() {
    assert!(onnxrt::runtime_info().expect("runtime").api_level >= 22, "the GPU machine's runtime has the device API");
    let env = Environment::global().expect("env");
    let library = cuda_provider_library();
    // SAFETY: ORT's own CUDA provider library, shipped beside the runtime it was built with.
    let registered = unsafe { env.register_provider_library("cuda", &library) };
    println!("register_provider_library(cuda, {}): {:?}", library.display(), registered.as_ref().map(|_| ()));
    let devices = env.ep_devices().expect("ep_devices");
    for device in &devices {
        println!(
            "device: {} on {:?}, vendor {:?} {:#x}, metadata {:?}",
            device.provider, device.kind, device.vendor, device.vendor_id, device.device_metadata
        );
    }
    println!("/sys/class/drm exists: {}", std::path::Path::new("/sys/class/drm").exists());
    let expected = run_mlp(&Session::builder().commit_from_file(model("mlp.onnx")).expect("CPU session"));
    let cuda: Vec<_> = devices.into_iter().filter(|d| d.provider == CUDA && d.kind == DeviceKind::Gpu).collect();
    if !cuda.is_empty() {
        registered.expect("devices of a registered library");
        let session = Session::builder()
            .config_entry("session.disable_cpu_ep_fallback", "1")
            .record_placement(true)
            .providers_for_devices(&cuda[..1], &[])
            .commit_from_file(model("mlp.onnx"))
            .expect("MLP on the CUDA device");
        let placement = session.placement().expect("placement");
        assert!(placement.by_provider.get(CUDA).is_some_and(|n| !n.is_empty()), "{placement:?}");
        assert_close("CUDA through the device API", &run_mlp(&session), &expected);
        println!("CUDA through the device API: ran, placement {:?}", placement.by_provider.keys().collect::<Vec<_>>());
        return;
    }
    // No CUDA device offered: the strict device path refuses with what discovery saw and why.
    assert_require_gpu_refused(&model("mlp.onnx"));
    // The classic path does not depend on discovery: the same GPU, strictly.
    let classic = Session::builder()
        .cuda(CudaOptions::new().device_id(0))
        .strict_gpu(true)
        .commit_from_file(model("mlp.onnx"))
        .expect("the classic CUDA path reaches the GPU");
    assert_close("CUDA through the classic path", &run_mlp(&classic), &expected);
}
