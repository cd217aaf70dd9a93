//! Intel's OpenVINO plugin provider (`onnxruntime-ep-openvino`, a separate plugin library for
//! ORT 1.23 and newer) registered with `Environment::register_provider_library`, its CPU device chosen
//! through the device API, a real model (PP-OCRv4 det) and the MLP run on it and compared with
//! ORT's CPU provider.
//!
//! The plugin offers a device only on Intel hardware: on this project's AMD CI hosts it lists
//! none, so it runs on the GPU machine, whose host CPU is an Intel Xeon (tools/gpu/run.sh
//! `openvino`, with the wheel's libraries unpacked there). Variables:
//! - `ONNXRT_TEST_OPENVINO_PLUGIN`: the plugin library (`libonnxruntime_providers_openvino_plugin.so`);
//!   unset, the tests return at once;
//! - `ONNXRT_TEST_OCR_DET`: PP-OCRv4 det (`ch_PP-OCRv4_det_infer.onnx`), unchanged;
//! - `ONNXRT_REQUIRE_OPENVINO_DEVICE=1`: a missing OpenVINO CPU device fails instead of returning.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ndarray::{ArrayD, IxDyn};
use onnxrt::ep_device::{DeviceKind, EpDevice};
use onnxrt::{Environment, Session, SessionBuilder, Value};
use onnxrt_tests::{close, mlp_input, model};

const PROVIDER: &str = "OpenVINOExecutionProvider";

fn plugin() -> Option<PathBuf> {
    std::env::var_os("ONNXRT_TEST_OPENVINO_PLUGIN").map(PathBuf::from)
}

fn required() -> bool {
    std::env::var_os("ONNXRT_REQUIRE_OPENVINO_DEVICE").is_some_and(|v| v == "1")
}

/// The plugin's CPU device, registering the library once per process; `None` where the plugin
/// offers no CPU device (a host that is not Intel), unless one is required.
fn openvino_cpu(env: &Environment, path: &Path) -> Option<EpDevice> {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    REGISTERED.get_or_init(|| {
        // SAFETY: the library is the plugin of the `onnxruntime-ep-openvino` wheel, made for ORT's
        // plugin API of runtimes >= 1.23; the tests run it on 1.30 or newer.
        unsafe { env.register_provider_library("openvino", path) }.expect("the OpenVINO plugin registers");
    });
    let devices = env.ep_devices().expect("ep_devices");
    for device in &devices {
        println!(
            "device: {} ({}) on {:?}, vendor {:?} {:#x}",
            device.provider, device.provider_vendor, device.kind, device.vendor, device.vendor_id
        );
    }
    let cpu = devices.into_iter().find(|d| d.provider == PROVIDER && d.kind == DeviceKind::Cpu);
    assert!(cpu.is_some() || !required(), "ONNXRT_REQUIRE_OPENVINO_DEVICE=1 but the plugin offers no CPU device");
    cpu
}

fn has_device_api() -> bool {
    onnxrt::runtime_info().expect("runtime loads").api_level >= 22
}

/// Every node on OpenVINO: no CPU fallback, placement recorded.
fn strict(builder: SessionBuilder) -> SessionBuilder {
    builder.config_entry("session.disable_cpu_ep_fallback", "1").record_placement(true)
}

fn assert_close(what: &str, got: &ArrayD<f32>, expected: &ArrayD<f32>, rtol: f64, atol: f64) {
    assert_eq!(got.shape(), expected.shape(), "{what}");
    let mut worst = 0.0f64;
    for (g, e) in got.iter().zip(expected) {
        worst = worst.max((f64::from(*g) - f64::from(*e)).abs());
        assert!(close(f64::from(*g), f64::from(*e), rtol, atol), "{what}: OpenVINO {g} vs CPU {e}");
    }
    println!("{what}: {} elements, largest difference from the CPU provider {worst:e}", got.len());
}

fn run_single(session: &Session, input: &str, value: &Value<'_>) -> ArrayD<f32> {
    let outputs = session.run(&[(input, value)]).expect("runs");
    let (_, first) = outputs.iter().next().expect("an output");
    first.to_array::<f32>().expect("f32")
}

#[test]
fn a_real_model_runs_on_the_openvino_cpu_device_as_on_the_cpu_provider() {
    let Some(path) = plugin() else { return };
    let env = Environment::global().expect("env");
    assert!(has_device_api(), "the OpenVINO plugin needs C API 22 or newer");
    let Some(device) = openvino_cpu(&env, &path) else { return };
    assert_eq!(device.provider_vendor, "Intel", "{device:?}");

    // The MLP: every node on OpenVINO. Its CPU plugin computes at reduced precision on a Xeon
    // with AMX (the GPU machine's host: 1e-3 off the CPU provider, with or without the
    // `precision` option through the device API, 2026-12-07): close at bf16's resolution.
    let mlp = strict(Session::builder())
        .providers_for_devices(std::slice::from_ref(&device), &[])
        .commit_from_file(model("mlp.onnx"))
        .expect("MLP session on OpenVINO");
    let placement = mlp.placement().expect("placement");
    assert!(placement.by_provider.get(PROVIDER).is_some_and(|nodes| !nodes.is_empty()), "{placement:?}");
    assert!(!placement.anything_on_cpu(), "nothing on ORT's CPU provider: {placement:?}");
    let x = Value::from_array(mlp_input()).expect("input");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("CPU session");
    assert_close("mlp", &run_single(&mlp, "x", &x), &run_single(&cpu, "x", &x), 2e-2, 1e-2);

    // PP-OCRv4 det as it comes, on a 1x3x320x320 image of a fixed pattern.
    let Some(det) = std::env::var_os("ONNXRT_TEST_OCR_DET").map(PathBuf::from) else {
        assert!(!required(), "ONNXRT_REQUIRE_OPENVINO_DEVICE=1 but ONNXRT_TEST_OCR_DET is unset");
        return;
    };
    let image =
        ArrayD::from_shape_fn(IxDyn(&[1, 3, 320, 320]), |i| ((i[1] * 7 + i[2] * 3 + i[3]) % 255) as f32 / 255.0 - 0.5);
    let image = Value::from_array(image).expect("image");
    let on_openvino = Session::builder()
        .record_placement(true)
        .providers_for_devices(std::slice::from_ref(&device), &[])
        .commit_from_file(&det)
        .expect("det session on OpenVINO");
    let placement = on_openvino.placement().expect("placement");
    let nodes = placement.by_provider.get(PROVIDER).map_or(0, Vec::len);
    println!("det: {nodes} nodes on OpenVINO, placement {:?}", placement.by_provider.keys().collect::<Vec<_>>());
    assert!(nodes > 0, "det nodes on OpenVINO: {placement:?}");
    let on_cpu = Session::builder().commit_from_file(&det).expect("det session on the CPU");
    // OpenVINO fuses and reorders the convolutions, at reduced precision (above): close to the
    // CPU provider (det's outputs are probabilities in [0, 1]).
    assert_close("det", &run_single(&on_openvino, "x", &image), &run_single(&on_cpu, "x", &image), 5e-2, 2e-2);
}
