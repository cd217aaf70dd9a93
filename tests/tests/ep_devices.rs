//! Execution providers by device (C API 22+) on the real runtime: on ORT >= 1.22
//! (`ONNXRT_DIST=cpu-1.32.0-registry`, tools/dev.sh's `newest` stage) the CPU device is listed and a
//! model runs on a device chosen through the device API (explicitly, by ORT's policy and by a Rust
//! closure) with the same results as the default path; a selector that panics or picks an index
//! out of range fails the session's creation with an error, never a crash. On 1.16.2 (the default
//! runtime) every call is refused with `Error::NeedsNewerRuntime` before it reaches ORT.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ndarray::ArrayD;
use onnxrt::ep_device::{DeviceKind, DevicePolicy, EpDevice};
use onnxrt::{Environment, Error, Session, Value};
use onnxrt_tests::{mlp_input, model};

/// Whether the loaded runtime serves C API 22 (the device API).
fn has_device_api() -> bool {
    onnxrt::runtime_info().expect("runtime loads").api_level >= 22
}

fn run_mlp(session: &Session) -> ArrayD<f32> {
    let x = Value::from_array(mlp_input()).expect("mlp input");
    let outputs = session.run(&[("x", &x)]).expect("mlp runs");
    outputs.get("logits").expect("logits").to_array::<f32>().expect("f32")
}

fn default_logits() -> ArrayD<f32> {
    run_mlp(&Session::builder().commit_from_file(model("mlp.onnx")).expect("default session"))
}

fn assert_needs_newer(error: Error, what: &str) {
    match &error {
        Error::NeedsNewerRuntime { needs, found, feature } => {
            assert_eq!(*needs, 22, "{error}");
            assert!(found.starts_with("1.16"), "{error}");
            assert!(feature.contains(what), "{error}");
            assert!(error.to_string().contains("ONNXRT_DIST=cpu-1.32.0-registry"), "{error}");
        }
        other => panic!("expected NeedsNewerRuntime for {what}, got {other:?}"),
    }
}

fn cpu_devices(env: &Environment) -> Vec<EpDevice> {
    let devices = env.ep_devices().expect("ep_devices");
    devices.into_iter().filter(|d| d.provider == "CPUExecutionProvider").collect()
}

#[test]
fn the_cpu_device_is_listed() {
    let env = Environment::global().expect("env");
    if !has_device_api() {
        return assert_needs_newer(env.ep_devices().expect_err("1.16 has no device API"), "GetEpDevices");
    }
    let devices = env.ep_devices().expect("ep_devices");
    let cpu = devices.iter().find(|d| d.provider == "CPUExecutionProvider").expect("the CPU provider offers a device");
    assert_eq!(cpu.kind, DeviceKind::Cpu, "{cpu}");
    assert_eq!(cpu.provider_vendor, "Microsoft", "{cpu}");
    assert!(!cpu.vendor.is_empty(), "the discovery names the CPU's vendor: {cpu:?}");
    // Every device reads back the same each time (a copy, not a view of ORT's memory).
    assert_eq!(env.ep_devices().expect("again"), devices);
}

#[test]
fn a_model_runs_on_the_device_chosen_through_the_device_api() {
    let env = Environment::global().expect("env");
    let builder = Session::builder();
    if !has_device_api() {
        // Nothing to list on 1.16: a device from nowhere cannot be made, so the policy is refused.
        let error = builder.device_policy(DevicePolicy::PreferCpu).commit_from_file(model("mlp.onnx"));
        return assert_needs_newer(error.expect_err("1.16 has no policy"), "device_policy");
    }
    let cpu = cpu_devices(&env);
    assert_eq!(cpu.len(), 1, "{cpu:?}");
    let session = builder.providers_for_devices(&cpu, &[]).commit_from_file(model("mlp.onnx")).expect("session");
    assert_eq!(run_mlp(&session), default_logits(), "the CPU device gives the default path's numbers");
}

#[test]
fn a_policy_chooses_the_cpu_here() {
    if !has_device_api() {
        let error = Session::builder().device_policy(DevicePolicy::PreferGpu).commit_from_file(model("mlp.onnx"));
        return assert_needs_newer(error.expect_err("refused"), "device_policy");
    }
    for policy in
        [DevicePolicy::PreferCpu, DevicePolicy::PreferGpu, DevicePolicy::MinOverallPower, DevicePolicy::Default]
    {
        let session = Session::builder().device_policy(policy).commit_from_file(model("mlp.onnx")).expect("session");
        assert_eq!(run_mlp(&session), default_logits(), "{policy:?}");
    }
}

#[test]
fn requiring_a_gpu_where_discovery_lists_none_is_an_error_that_says_why() {
    let builder = Session::builder().device_policy(DevicePolicy::RequireGpu);
    if !has_device_api() {
        return assert_needs_newer(builder.commit_from_file(model("mlp.onnx")).expect_err("refused"), "device_policy");
    }
    let env = Environment::global().expect("env");
    let devices = env.ep_devices().expect("ep_devices");
    if devices.iter().any(|d| d.kind == DeviceKind::Gpu) {
        // A machine whose discovery lists a GPU: the requirement is met.
        builder.commit_from_file(model("mlp.onnx")).expect("a GPU is listed");
        return;
    }
    let error = builder.commit_from_file(model("mlp.onnx")).expect_err("no GPU device: refused, not run on the CPU");
    let Error::NoGpuDevice { seen, why } = &error else { panic!("expected NoGpuDevice, got {error:?}") };
    assert_eq!(seen.len(), devices.len(), "{error}");
    assert!(seen.iter().any(|d| d.starts_with("CPUExecutionProvider on CPU")), "{error}");
    assert!(why.contains("/sys/class/drm"), "{error}");
    if !std::path::Path::new("/sys/class/drm").exists() {
        assert!(why.contains("/sys/class/drm does not exist"), "{error}");
    }
    let text = error.to_string();
    assert!(text.contains("SessionBuilder::cuda"), "names the classic path that still reaches the GPU: {text}");
    // PreferGpu stays a preference: it runs on what there is.
    let session =
        Session::builder().device_policy(DevicePolicy::PreferGpu).commit_from_file(model("mlp.onnx")).expect("session");
    assert_eq!(run_mlp(&session), default_logits());
    assert_eq!(session.providers(), ["CPUExecutionProvider"], "ORT could only choose the CPU here");
}

/// RequireGpu holds whichever way the devices are chosen: with a selector too, and with devices
/// given explicitly (none of them a GPU here).
#[test]
fn requiring_a_gpu_holds_for_a_selector_and_for_explicit_devices() {
    if !has_device_api() {
        return;
    }
    let env = Environment::global().expect("env");
    if env.ep_devices().expect("ep_devices").iter().any(|d| d.kind == DeviceKind::Gpu) {
        return; // plugin_webgpu.rs covers a machine with a GPU device
    }
    let with_selector = Session::builder()
        .device_policy(DevicePolicy::RequireGpu)
        .device_selector(|_| vec![0])
        .commit_from_file(model("mlp.onnx"));
    assert!(
        matches!(with_selector, Err(Error::NoGpuDevice { .. })),
        "{:?}",
        with_selector.map(|s| s.providers().to_vec())
    );
    let with_cpu = Session::builder()
        .device_policy(DevicePolicy::RequireGpu)
        .providers_for_devices(&cpu_devices(&env), &[])
        .commit_from_file(model("mlp.onnx"));
    assert!(matches!(with_cpu, Err(Error::NoGpuDevice { .. })), "{:?}", with_cpu.map(|s| s.providers().to_vec()));
}

#[test]
fn a_rust_closure_chooses_the_device() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let builder = Session::builder().device_selector(move |devices| {
        seen.fetch_add(1, Ordering::SeqCst);
        devices.iter().position(|d| d.kind == DeviceKind::Cpu).into_iter().collect()
    });
    if !has_device_api() {
        let error = builder.commit_from_file(model("mlp.onnx")).expect_err("refused");
        assert_eq!(calls.load(Ordering::SeqCst), 0, "never called on 1.16");
        return assert_needs_newer(error, "device_selector");
    }
    let session = builder.commit_from_file(model("mlp.onnx")).expect("session");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "ORT asked the closure once");
    assert_eq!(run_mlp(&session), default_logits());
}

#[test]
fn a_selector_that_panics_or_picks_nonsense_fails_the_session_cleanly() {
    if !has_device_api() {
        return;
    }
    let panics = Session::builder().device_selector(|_| panic!("selector bug")).commit_from_file(model("mlp.onnx"));
    let text = panics.expect_err("a panic fails the session").to_string();
    assert!(text.contains("selector bug"), "{text}");
    let out_of_range =
        Session::builder().device_selector(|devices| vec![devices.len() + 3]).commit_from_file(model("mlp.onnx"));
    let text = out_of_range.expect_err("an index out of range fails the session").to_string();
    assert!(text.contains("out of range") || text.contains("were offered"), "{text}");
    let too_many = Session::builder().device_selector(|_| vec![0; 9]).commit_from_file(model("mlp.onnx"));
    let text = too_many.expect_err("nine devices cannot be chosen").to_string();
    assert!(text.contains("at most"), "{text}");
    // The process is fine afterwards.
    assert_eq!(run_mlp(&Session::builder().commit_from_file(model("mlp.onnx")).expect("session")), default_logits());
}

#[test]
fn registering_a_library_that_is_no_plugin_is_an_error() {
    let env = Environment::global().expect("env");
    let missing = std::path::Path::new("/nonexistent/libno_such_plugin.so");
    // SAFETY: the path does not exist, so no code is loaded.
    let result = unsafe { env.register_provider_library("nothing", missing) };
    if !has_device_api() {
        return assert_needs_newer(result.expect_err("refused"), "register_provider_library");
    }
    let error = result.expect_err("a missing library cannot register");
    assert!(matches!(error, Error::Ort { .. }), "{error:?}");
    // A NUL in the name is refused in Rust.
    // SAFETY: refused before anything is loaded.
    let nul = unsafe { env.register_provider_library("a\0b", missing) };
    assert!(matches!(nul, Err(Error::InteriorNul { .. })), "{nul:?}");
}
