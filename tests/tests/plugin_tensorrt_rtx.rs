//! NVIDIA's TensorRT-RTX plugin provider (`onnxruntime-ep-nv-tensorrt-rtx-cu13`) on the GPU
//! machine: registered with ORT's verbose log captured, the devices it lists recorded, and then
//! one of two outcomes checked. Where it lists a GPU device, the MLP runs there with the CPU
//! fallback off and matches the CPU provider; where it lists none (what was seen on the lent H100,
//! a VM without `/sys/class/drm`), `DevicePolicy::RequireGpu` is refused with `NoGpuDevice`, which
//! names what discovery read, instead of running on the CPU.
//!
//! GPU only, by hand (tools/gpu/run.sh `devices`). Variables:
//! - `ONNXRT_TEST_TRT_RTX_PLUGIN`: the plugin library (`libonnxruntime_providers_nv_tensorrt_rtx.so`,
//!   its TensorRT-RTX libraries beside it on `LD_LIBRARY_PATH`); unset, the test returns at once.
#![cfg(feature = "gpu-tests")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use onnxrt::ep_device::DeviceKind;
use onnxrt::{Environment, LogLevel, Session, Value};
use onnxrt_tests::{assert_require_gpu_refused, mlp_input, model};

const PROVIDER: &str = "NvTensorRTRTXExecutionProvider";

/// At most this many of ORT's log lines are printed (its verbose registration log is long).
const LOG_LINES: usize = 120;

#[test]
fn tensorrt_rtx_lists_its_gpu_or_the_strict_device_path_says_why_not() {
    let Some(library) = std::env::var_os("ONNXRT_TEST_TRT_RTX_PLUGIN").map(PathBuf::from) else { return };
    assert!(onnxrt::runtime_info().expect("runtime").api_level >= 22, "plugins need C API 22 or newer");
    let env = Environment::global().expect("env");
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&log);
    env.set_log_hook(move |record| {
        let line = format!("[{:?} {}] {}", record.level, record.code_location, record.message);
        sink.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    });
    env.set_log_level(LogLevel::Verbose).expect("verbose");
    // SAFETY: the plugin library of NVIDIA's wheel, made for ORT's plugin API (runtimes >= 1.23);
    // run on 1.30 or newer.
    let registered = unsafe { env.register_provider_library("nv_tensorrt_rtx", &library) };
    let devices = env.ep_devices();
    env.set_log_level(LogLevel::Warning).expect("warning");
    env.remove_log_hook();

    let lines = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
    println!("ORT's log during registration and GetEpDevices: {} lines", lines.len());
    for line in lines.iter().take(LOG_LINES) {
        println!("  {line}");
    }
    println!("register_provider_library: {:?}", registered.as_ref().map(|_| ()));
    println!("/sys/class/drm exists: {}", std::path::Path::new("/sys/class/drm").exists());
    registered.expect("the plugin registers");
    let devices = devices.expect("ep_devices");
    for device in &devices {
        println!("device: {device} metadata {:?} {:?}", device.provider_metadata, device.device_metadata);
    }

    let x = Value::from_array(mlp_input()).expect("input");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("CPU session");
    let expected = cpu.run(&[("x", &x)]).expect("CPU run")[0].to_array::<f32>().expect("f32");
    let gpus: Vec<_> =
        devices.iter().filter(|d| d.provider == PROVIDER && d.kind == DeviceKind::Gpu).cloned().collect();
    if let Some(gpu) = gpus.first() {
        let session = Session::builder()
            .config_entry("session.disable_cpu_ep_fallback", "1")
            .providers_for_devices(std::slice::from_ref(gpu), &[])
            .commit_from_file(model("mlp.onnx"));
        println!("MLP on {gpu}: {:?}", session.as_ref().map(|_| ()));
        let got = session.expect("MLP on the TensorRT-RTX device").run(&[("x", &x)]).expect("run")[0]
            .to_array::<f32>()
            .expect("f32");
        let worst = got.iter().zip(&expected).map(|(g, e)| (g - e).abs()).fold(0.0f32, f32::max);
        println!("TensorRT-RTX against the CPU provider: largest difference {worst:e}");
        assert!(worst < 1e-2, "TensorRT-RTX {got:?} vs CPU {expected:?}");
        return;
    }
    assert_require_gpu_refused(&model("mlp.onnx"));
}
