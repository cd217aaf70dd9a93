//! A real plugin execution provider on this CPU machine: Microsoft's WebGPU plugin
//! (`webgpu-plugin-0.4.0-registry`, pinned in vendor-manifest.toml) registered with
//! `Environment::register_provider_library`, its device chosen through the device API (explicitly
//! and by a Rust closure), a model run on it (every node placed on WebGPU, the CPU fallback off)
//! and its results compared with the CPU provider's.
//!
//! tools/dev.sh's `newest` stage assembles the bundle and runs this on ORT 1.32 with
//! `ONNXRT_TEST_WEBGPU_PLUGIN` (the plugin library), `VK_ICD_FILENAMES` (Mesa's software Vulkan
//! driver from the same bundle) and `ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1` (without it the plugin
//! offers no device where ORT's discovery lists no GPU), and `ONNXRT_REQUIRE_WEBGPU_PLUGIN=1`, so
//! a missing setup fails instead of skipping. Without the variable (plain `cargo test`) the tests
//! return early; on 1.16.2 registration is refused with `NeedsNewerRuntime`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use ndarray::ArrayD;
use onnxrt::ep_device::{DeviceKind, DevicePolicy, EpDevice};
use onnxrt::{Environment, Error, Session, SessionBuilder, Value};
use onnxrt_tests::{close, mlp_input, model};

const PROVIDER: &str = "WebGpuExecutionProvider";

/// One WebGPU test at a time: two sessions of the WebGPU plugin 0.4.0 running at once on two
/// threads crash inside the plugin (SIGSEGV in `libonnxruntime_providers_webgpu.so` under
/// `OrtApi::Run`, 2 of 3 runs without this lock, 2026-12-07), a plugin limit the crate cannot see.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The plugin library, where the environment names one (and the runtime has the device API).
fn plugin() -> Option<PathBuf> {
    let path = std::env::var_os("ONNXRT_TEST_WEBGPU_PLUGIN").map(PathBuf::from);
    if path.is_none() && std::env::var_os("ONNXRT_REQUIRE_WEBGPU_PLUGIN").is_some_and(|v| v == "1") {
        panic!("ONNXRT_REQUIRE_WEBGPU_PLUGIN=1 but ONNXRT_TEST_WEBGPU_PLUGIN is unset (tools/dev.sh newest sets it)");
    }
    path
}

fn has_device_api() -> bool {
    onnxrt::runtime_info().expect("runtime loads").api_level >= 22
}

/// Registers the plugin once per process (ORT refuses a second registration under one name) and
/// returns its devices.
fn webgpu_devices(env: &Environment, path: &std::path::Path) -> Vec<EpDevice> {
    static REGISTERED: OnceLock<()> = OnceLock::new();
    REGISTERED.get_or_init(|| {
        // The safe path: the file is checked against the bundle's pin before ORT loads it.
        let bundle = env.register_pinned_provider_library("webgpu", path).expect("the pinned WebGPU plugin registers");
        assert!(bundle.starts_with("webgpu-plugin-"), "{bundle}");
    });
    env.ep_devices().expect("ep_devices").into_iter().filter(|d| d.provider == PROVIDER).collect()
}

fn run_mlp(session: &Session) -> ArrayD<f32> {
    let x = Value::from_array(mlp_input()).expect("mlp input");
    let outputs = session.run(&[("x", &x)]).expect("mlp runs");
    outputs.get("logits").expect("logits").to_array::<f32>().expect("f32")
}

fn cpu_logits() -> ArrayD<f32> {
    run_mlp(&Session::builder().commit_from_file(model("mlp.onnx")).expect("CPU session"))
}

/// Everything on the chosen provider: no CPU fallback, and the placement recorded.
fn strict(builder: SessionBuilder) -> SessionBuilder {
    builder.config_entry("session.disable_cpu_ep_fallback", "1").record_placement(true)
}

fn assert_same_numbers(got: &ArrayD<f32>, expected: &ArrayD<f32>) {
    assert_eq!(got.shape(), expected.shape());
    // WebGPU computes in its own shaders (another summation order): close, not bitwise.
    for (g, e) in got.iter().zip(expected) {
        assert!(close(f64::from(*g), f64::from(*e), 1e-4, 1e-5), "WebGPU {g} vs CPU {e}");
    }
}

fn assert_all_on_webgpu(session: &Session) {
    let placement = session.placement().expect("placement");
    let on_webgpu = placement.by_provider.get(PROVIDER).map_or(0, Vec::len);
    assert!(on_webgpu > 0, "nodes on WebGPU: {placement:?}");
    assert!(!placement.anything_on_cpu(), "nothing on the CPU: {placement:?}");
}

#[test]
fn the_plugin_offers_a_device_and_a_model_runs_on_it() {
    let Some(path) = plugin() else { return };
    let _one = one_at_a_time();
    let env = Environment::global().expect("env");
    if !has_device_api() {
        // SAFETY: refused before ORT loads anything.
        let error = unsafe { env.register_provider_library("webgpu", &path) }.expect_err("1.16 has no plugin API");
        return assert!(matches!(error, Error::NeedsNewerRuntime { needs: 22, .. }), "{error:?}");
    }
    let devices = webgpu_devices(&env, &path);
    assert_eq!(devices.len(), 1, "the WebGPU plugin offers one device: {:?}", env.ep_devices());
    let device = &devices[0];
    assert_eq!(device.provider_vendor, "Microsoft", "{device:?}");
    let session = strict(Session::builder())
        .providers_for_devices(&devices, &[])
        .commit_from_file(model("mlp.onnx"))
        .expect("session");
    assert_all_on_webgpu(&session);
    let expected = cpu_logits();
    // Several runs: the plugin's buffers are reused between them.
    for _ in 0..3 {
        assert_same_numbers(&run_mlp(&session), &expected);
    }
}

#[test]
fn a_rust_closure_chooses_the_plugin_device() {
    let Some(path) = plugin() else { return };
    let _one = one_at_a_time();
    if !has_device_api() {
        return;
    }
    let env = Environment::global().expect("env");
    assert_eq!(webgpu_devices(&env, &path).len(), 1);
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    // No `disable_cpu_ep_fallback` here: with a selection delegate ORT 1.32 refuses it even though
    // every node is placed on WebGPU (the placement below says so).
    let session = Session::builder()
        .record_placement(true)
        .device_selector(move |offered| {
            seen.fetch_add(1, Ordering::SeqCst);
            offered.iter().position(|d| d.provider == PROVIDER).into_iter().collect()
        })
        .commit_from_file(model("mlp.onnx"))
        .expect("session");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "ORT asked the closure once");
    assert_all_on_webgpu(&session);
    assert_same_numbers(&run_mlp(&session), &cpu_logits());
}

/// A session on the plugin's device lists the plugin's provider, however the device was chosen:
/// explicitly, by a closure, or by ORT's policy (what ORT placed nodes on).
#[test]
fn the_session_lists_the_providers_the_device_api_appended() {
    let Some(path) = plugin() else { return };
    let _one = one_at_a_time();
    if !has_device_api() {
        return;
    }
    let env = Environment::global().expect("env");
    let devices = webgpu_devices(&env, &path);
    let explicit =
        Session::builder().providers_for_devices(&devices, &[]).commit_from_file(model("mlp.onnx")).expect("session");
    assert_eq!(explicit.providers(), [PROVIDER, "CPUExecutionProvider"]);
    drop(explicit);
    let chosen = Session::builder()
        .device_selector(|offered| offered.iter().position(|d| d.provider == PROVIDER).into_iter().collect())
        .commit_from_file(model("mlp.onnx"))
        .expect("session");
    assert_eq!(chosen.providers(), [PROVIDER, "CPUExecutionProvider"]);
    drop(chosen);
    let by_policy = Session::builder()
        .record_placement(true)
        .device_policy(DevicePolicy::PreferGpu)
        .commit_from_file(model("mlp.onnx"))
        .expect("session");
    let placement = by_policy.placement().expect("placement");
    let mut placed: Vec<&str> =
        placement.by_provider.keys().map(String::as_str).filter(|p| *p != "CPUExecutionProvider").collect();
    placed.push("CPUExecutionProvider");
    assert_eq!(by_policy.providers(), placed, "{placement:?}");
}

/// strict_gpu with the plugin's devices: the CPU fallback is off and the session builds, every node
/// on WebGPU; with only the CPU's devices there is nothing to be strict about.
#[test]
fn strict_gpu_applies_to_providers_appended_by_device() {
    let Some(path) = plugin() else { return };
    let _one = one_at_a_time();
    if !has_device_api() {
        return;
    }
    let env = Environment::global().expect("env");
    let devices = webgpu_devices(&env, &path);
    let session = Session::builder()
        .strict_gpu(true)
        .record_placement(true)
        .providers_for_devices(&devices, &[])
        .commit_from_file(model("mlp.onnx"))
        .expect("strict session on the plugin's device");
    assert_eq!(session.providers(), [PROVIDER, "CPUExecutionProvider"]);
    assert_all_on_webgpu(&session);
    assert_same_numbers(&run_mlp(&session), &cpu_logits());
    drop(session);
    let cpu: Vec<EpDevice> =
        env.ep_devices().expect("devices").into_iter().filter(|d| d.provider == "CPUExecutionProvider").collect();
    let error = Session::builder()
        .strict_gpu(true)
        .providers_for_devices(&cpu, &[])
        .commit_from_file(model("mlp.onnx"))
        .expect_err("only the CPU's devices");
    assert!(matches!(error, Error::StrictGpuWithoutProvider), "{error:?}");
}

/// RequireGpu with a selector: the selector must choose a GPU device.
#[test]
fn require_gpu_holds_for_what_a_selector_chooses() {
    let Some(path) = plugin() else { return };
    let _one = one_at_a_time();
    if !has_device_api() {
        return;
    }
    let env = Environment::global().expect("env");
    let devices = webgpu_devices(&env, &path);
    let pick = |provider: &'static str| {
        move |offered: &[EpDevice]| -> Vec<usize> {
            offered.iter().position(|d| d.provider == provider).into_iter().collect()
        }
    };
    let on_cpu = Session::builder()
        .device_policy(DevicePolicy::RequireGpu)
        .device_selector(pick("CPUExecutionProvider"))
        .commit_from_file(model("mlp.onnx"));
    assert!(matches!(on_cpu, Err(Error::NoGpuDevice { .. })), "{:?}", on_cpu.map(|s| s.providers().to_vec()));
    let on_webgpu = Session::builder()
        .device_policy(DevicePolicy::RequireGpu)
        .device_selector(pick(PROVIDER))
        .commit_from_file(model("mlp.onnx"));
    if devices[0].kind == DeviceKind::Gpu {
        assert_eq!(on_webgpu.expect("a GPU device chosen").providers(), [PROVIDER, "CPUExecutionProvider"]);
    } else {
        assert!(matches!(on_webgpu, Err(Error::NoGpuDevice { .. })), "{devices:?}");
    }
}

/// The safe registration refuses, before ORT loads anything, a file that is not the pinned
/// library: a copy of the plugin with one byte changed, and another library altogether.
#[test]
fn only_the_pinned_plugin_library_registers_safely() {
    let Some(path) = plugin() else { return };
    let env = Environment::global().expect("env");
    if !has_device_api() {
        let error = env.register_pinned_provider_library("webgpu-copy", &path).expect_err("1.16 has no plugin API");
        return assert!(matches!(error, Error::NeedsNewerRuntime { needs: 22, .. }), "{error:?}");
    }
    let dir = onnxrt_tests::TempDir::new("pinned-plugin");
    let changed = dir.path().join("libonnxruntime_providers_webgpu.so");
    let mut bytes = std::fs::read(&path).expect("read the plugin");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&changed, &bytes).expect("write the copy");
    let error = env.register_pinned_provider_library("webgpu-changed", &changed).expect_err("changed: refused");
    let Error::PluginNotPinned { why, pinned, .. } = &error else { panic!("expected PluginNotPinned, got {error:?}") };
    assert!(why.contains("sha256"), "{error}");
    assert!(pinned.iter().any(|p| p.contains("webgpu-plugin-")), "{error}");
    let other = onnxrt::runtime_info().expect("runtime").library;
    let error = env.register_pinned_provider_library("not-a-plugin", &other).expect_err("not pinned: refused");
    assert!(matches!(error, Error::PluginNotPinned { .. }), "{error:?}");
    // Refused before ORT saw them: the names stay free, and no new device appeared.
    assert!(env
        .ep_devices()
        .expect("devices")
        .iter()
        .all(|d| d.provider == PROVIDER || d.provider == "CPUExecutionProvider"));
}
