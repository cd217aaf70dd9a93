//! An outside audit of the C API 22+ surface (issue 44): safe programs that try to break the load
//! canceller, the device-selection callback, the Compile API and the pinned plugin registration,
//! run under valgrind in CI (`tools/dev.sh` stage `newest`: tools/reliability/memcheck.sh
//! soundness_device_api). Each attack ends in a typed error or a correct result, checked; on
//! 1.16.2 each is refused with `Error::NeedsNewerRuntime`. Bounded by counts.
//!
//! The plugin attacks need the pinned WebGPU plugin bundle (`ONNXRT_TEST_WEBGPU_PLUGIN`, set by
//! the `newest` stage as for plugin_webgpu.rs); without it they return early.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use onnxrt::compile::ModelCompiler;
use onnxrt::ep_device::{DeviceKind, DeviceSelector, EpDevice};
use onnxrt::{Environment, Error, LoadCanceller, Session, Value};
use onnxrt_tests::{mlp_input, model};

fn level() -> u32 {
    onnxrt::runtime_info().expect("runtime").api_level
}

fn logits(session: &Session) -> Vec<f32> {
    let x = Value::from_array(mlp_input()).expect("input");
    let out = session.run(&[("x", &x)]).expect("run");
    out.get("logits").expect("logits").to_array::<f32>().expect("f32").iter().copied().collect()
}

fn reference() -> Vec<f32> {
    logits(&Session::builder().commit_from_file(model("mlp.onnx")).expect("session"))
}

fn is_cancellation(error: &Error) -> bool {
    error.to_string().to_ascii_lowercase().contains("cancel")
}

fn cpu_index(devices: &[EpDevice]) -> usize {
    devices.iter().position(|d| d.provider == "CPUExecutionProvider").expect("ORT always offers the CPU device")
}

// ---------------------------------------------------------------------------------------------
// The load canceller

/// A selector that cancels the very load it is choosing for (the canceller's lock must not be
/// held while ORT calls back): the load fails with the cancellation, or (where ORT checks the
/// flag no more after the selection) finishes and runs correctly.
#[test]
fn a_selector_that_cancels_its_own_load() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    for _ in 0..3 {
        let canceller = LoadCanceller::new();
        let inside = canceller.clone();
        let result = Session::builder()
            .load_canceller(&canceller)
            .device_selector(move |devices| {
                inside.cancel();
                vec![cpu_index(devices)]
            })
            .commit_from_file(model("mlp.onnx"));
        assert!(canceller.is_cancelled());
        match result {
            Ok(session) => assert_eq!(logits(&session), expected),
            Err(error) => assert!(is_cancellation(&error), "{error:?}"),
        }
        // Cancelled stays cancelled: the next load with it fails at once.
        let again = Session::builder().load_canceller(&canceller).commit_from_file(model("mlp.onnx"));
        assert!(matches!(&again, Err(e) if is_cancellation(e)), "{again:?}");
    }
}

/// Four compilations at once share one builder (and so one canceller) and are cancelled from
/// the main thread while they run: each one either produced a model that loads and computes the
/// same, or failed with the cancellation; the canceller ends with no load registered (a later
/// load with a fresh one works).
#[test]
fn compilations_racing_one_shared_canceller() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    for _ in 0..2 {
        let canceller = LoadCanceller::new();
        let builder = Session::builder().load_canceller(&canceller);
        let workers: Vec<_> = (0..4usize)
            .map(|i| {
                let builder = builder.clone();
                std::thread::spawn(move || {
                    let compiler = ModelCompiler::new(builder).input_file(model("mlp.onnx"));
                    if i.is_multiple_of(2) {
                        compiler.compile_to_bytes()
                    } else {
                        let dir = tempfile::tempdir().expect("dir");
                        let out = dir.path().join("c.onnx");
                        let result = compiler.compile_to_file(&out);
                        match &result {
                            Ok(()) => Ok(std::fs::read(&out).expect("the compiled file")),
                            Err(_) => {
                                assert!(!out.exists(), "a failed compile left {}", out.display());
                                result.map(|()| Vec::new())
                            }
                        }
                    }
                })
            })
            .collect();
        canceller.cancel();
        for worker in workers {
            match worker.join().expect("worker") {
                Ok(bytes) => {
                    let session = Session::builder().commit_from_memory(&bytes).expect("a compiled model loads");
                    assert_eq!(logits(&session), expected);
                }
                Err(error) => assert!(is_cancellation(&error), "{error:?}"),
            }
        }
    }
    let fresh = LoadCanceller::new();
    assert_eq!(
        logits(&Session::builder().load_canceller(&fresh).commit_from_file(model("mlp.onnx")).expect("loads")),
        expected
    );
}

// ---------------------------------------------------------------------------------------------
// The device-selection callback

/// The selector re-enters the device API while ORT is inside session creation: it lists the
/// devices again (the same ones ORT offers), builds and runs a whole other session with its own
/// selector, and compiles a model. Everything works and the outer session is correct.
#[test]
fn a_selector_that_reenters_the_device_api() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    let nested_runs = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&nested_runs);
    let inner_expected = expected.clone();
    let session = Session::builder()
        .device_selector(move |offered| {
            let listed = Environment::global().expect("env").ep_devices().expect("devices inside the selector");
            let mut a: Vec<(String, DeviceKind)> = listed.iter().map(|d| (d.provider.clone(), d.kind)).collect();
            let mut b: Vec<(String, DeviceKind)> = offered.iter().map(|d| (d.provider.clone(), d.kind)).collect();
            a.sort_by(|x, y| x.0.cmp(&y.0));
            b.sort_by(|x, y| x.0.cmp(&y.0));
            assert_eq!(a, b, "ORT offers the devices it lists");
            let nested = Session::builder()
                .device_selector(|d| vec![cpu_index(d)])
                .commit_from_file(model("mlp.onnx"))
                .expect("a session built inside a selector");
            assert_eq!(logits(&nested), inner_expected);
            let bytes = ModelCompiler::new(Session::builder())
                .input_file(model("mlp.onnx"))
                .compile_to_bytes()
                .expect("a compile inside a selector");
            assert!(!bytes.is_empty());
            seen.fetch_add(1, Ordering::SeqCst);
            vec![cpu_index(offered)]
        })
        .commit_from_file(model("mlp.onnx"))
        .expect("the outer session");
    assert_eq!(nested_runs.load(Ordering::SeqCst), 1);
    assert_eq!(logits(&session), expected);
    assert_eq!(session.providers(), ["CPUExecutionProvider"]);
}

/// A selector keeps the devices it was offered (owned copies) past its call and its session; they
/// still resolve to ORT's devices and run.
#[test]
fn devices_kept_by_a_selector_outlive_its_session() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    let kept: Arc<Mutex<Vec<EpDevice>>> = Arc::default();
    let sink = Arc::clone(&kept);
    let session = Session::builder()
        .device_selector(move |d| {
            sink.lock().expect("lock").extend_from_slice(d);
            vec![cpu_index(d)]
        })
        .commit_from_file(model("mlp.onnx"))
        .expect("session");
    drop(session);
    let kept = kept.lock().expect("lock").clone();
    assert!(!kept.is_empty());
    let cpu: Vec<EpDevice> = kept.into_iter().filter(|d| d.provider == "CPUExecutionProvider").collect();
    let again = Session::builder().providers_for_devices(&cpu, &[]).commit_from_file(model("mlp.onnx")).expect("again");
    assert_eq!(logits(&again), expected);
}

/// One selector (one closure, one `Arc`) used by several loads on several threads at once: ORT
/// calls it once per load, each on its loading thread, and every session is correct.
#[test]
fn one_selector_shared_by_parallel_loads() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let builder = Session::builder().device_selector(move |d| {
        counter.fetch_add(1, Ordering::SeqCst);
        vec![cpu_index(d)]
    });
    let loads: Vec<_> = (0..4)
        .map(|_| {
            let builder = builder.clone();
            std::thread::spawn(move || logits(&builder.commit_from_file(model("mlp.onnx")).expect("session")))
        })
        .collect();
    for load in loads {
        assert_eq!(load.join().expect("load"), expected);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

/// Choices ORT may act on oddly: the CPU device only with the CPU fallback disabled (ORT drops
/// its own CPU device from the choice), the same device many times, every device offered.
/// Each is a session that computes correctly or a typed error; none crashes.
#[test]
fn odd_choices_are_sessions_or_errors() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    let no_fallback = Session::builder()
        .config_entry("session.disable_cpu_ep_fallback", "1")
        .device_selector(|d| vec![cpu_index(d)])
        .commit_from_file(model("mlp.onnx"));
    match no_fallback {
        Ok(session) => assert_eq!(logits(&session), expected),
        Err(error) => assert!(matches!(error, Error::Ort { .. }), "{error:?}"),
    }
    let repeated = Session::builder().device_selector(|d| vec![cpu_index(d); 8]).commit_from_file(model("mlp.onnx"));
    match repeated {
        Ok(session) => assert_eq!(logits(&session), expected),
        Err(error) => assert!(matches!(error, Error::Ort { .. }), "{error:?}"),
    }
    let nine = Session::builder().device_selector(|d| vec![cpu_index(d); 9]).commit_from_file(model("mlp.onnx"));
    assert!(matches!(&nine, Err(e) if e.to_string().contains("at most 8")), "{nine:?}");
    // Every device offered (with a plugin registered several times, ORT's error for a provider
    // given several devices).
    let all = Session::builder().device_selector(|d| (0..d.len().min(8)).collect()).commit_from_file(model("mlp.onnx"));
    match all {
        Ok(session) => assert_eq!(logits(&session), expected),
        Err(error) => assert!(matches!(error, Error::Ort { .. }), "{error:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// The Compile API: outputs

/// Compiling a model onto its own file: whatever ORT answers, the file is still a model that
/// loads and computes the same (nothing half-written).
#[test]
fn compiling_a_model_onto_itself_loses_nothing() {
    if level() < 22 {
        return;
    }
    let expected = reference();
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("self.onnx");
    std::fs::copy(model("mlp.onnx"), &path).expect("copy");
    let result = ModelCompiler::new(Session::builder()).input_file(&path).compile_to_file(&path);
    let session = Session::builder().commit_from_file(&path);
    let session =
        session.unwrap_or_else(|e| panic!("the model compiled onto itself ({result:?}) no longer loads: {e}"));
    assert_eq!(logits(&session), expected);
}

/// Outputs that cannot be written: a file in a missing folder, an existing folder, a NUL in the
/// path, an existing file with garbage input. Each is a typed error; what existed is untouched
/// and nothing new is left behind.
#[test]
fn unwritable_outputs_are_errors_that_touch_nothing() {
    if level() < 22 {
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let compiler = || ModelCompiler::new(Session::builder()).input_file(model("mlp.onnx"));
    let missing = dir.path().join("no-such-folder").join("out.onnx");
    assert!(compiler().compile_to_file(&missing).is_err());
    assert!(!dir.path().join("no-such-folder").exists());
    let folder = dir.path().join("folder.onnx");
    std::fs::create_dir(&folder).expect("mkdir");
    assert!(compiler().compile_to_file(&folder).is_err());
    assert!(folder.is_dir(), "an output that was a folder is still one");
    let nul = compiler().compile_to_file(dir.path().join("a\0b.onnx"));
    assert!(matches!(nul, Err(Error::InteriorNul { .. })), "{nul:?}");
    let kept = dir.path().join("kept.onnx");
    std::fs::write(&kept, b"keep me").expect("write");
    for garbage in [Vec::new(), vec![0xffu8; 64], std::fs::read(model("bad_truncated.onnx")).expect("model")] {
        let result = ModelCompiler::new(Session::builder()).input_bytes(garbage).compile_to_file(&kept);
        assert!(result.is_err(), "{result:?}");
        assert_eq!(std::fs::read(&kept).expect("read"), b"keep me");
        let bytes = ModelCompiler::new(Session::builder()).input_bytes(vec![0u8; 3]).compile_to_bytes();
        assert!(bytes.is_err(), "{bytes:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The pinned plugin registration

/// The pinned plugin library, where the environment names one (`tools/dev.sh` newest), on a
/// runtime with the device API.
fn plugin() -> Option<PathBuf> {
    let path = std::env::var_os("ONNXRT_TEST_WEBGPU_PLUGIN").map(PathBuf::from)?;
    (level() >= 24).then_some(path)
}

/// One plugin test at a time: each counts the devices ORT lists, which another one's
/// registrations change.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn refused_as_not_pinned(result: onnxrt::Result<&'static str>, what: &str) {
    assert!(matches!(result, Err(Error::PluginNotPinned { .. })), "{what}: {result:?}");
}

/// Files that are not the pinned library, however they are dressed: a truncated copy, garbage of
/// the right size, a symlink to garbage, a folder, a missing file. Refused before ORT
/// loads anything (ORT's device list is unchanged); a NUL in the name or path is a typed error.
#[test]
fn only_the_pinned_bytes_register() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    let before = env.ep_devices().expect("devices").len();
    let dir = tempfile::tempdir().expect("dir");
    let bytes = std::fs::read(&library).expect("read the plugin");
    let truncated = dir.path().join("truncated.so");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    refused_as_not_pinned(env.register_pinned_provider_library("audit-truncated", &truncated), "truncated");
    let garbage = dir.path().join("garbage.so");
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    std::fs::write(&garbage, &flipped).expect("write");
    refused_as_not_pinned(env.register_pinned_provider_library("audit-garbage", &garbage), "one byte changed");
    let link = dir.path().join("link.so");
    std::os::unix::fs::symlink(&garbage, &link).expect("symlink");
    refused_as_not_pinned(env.register_pinned_provider_library("audit-link", &link), "symlink to garbage");
    refused_as_not_pinned(env.register_pinned_provider_library("audit-dir", dir.path()), "a folder");
    refused_as_not_pinned(
        env.register_pinned_provider_library("audit-missing", &dir.path().join("none.so")),
        "missing",
    );
    let nul_name = env.register_pinned_provider_library("a\0b", &library);
    assert!(matches!(nul_name, Err(Error::InteriorNul { .. })), "{nul_name:?}");
    let nul_path = env.register_pinned_provider_library("audit-nul", Path::new("/tmp/a\0b.so"));
    assert!(nul_path.is_err(), "{nul_path:?}");
    assert_eq!(env.ep_devices().expect("devices").len(), before, "nothing was registered");
}

/// Listing the devices on one thread while another registers the plugin under new names: ORT
/// hands back its own device array, which a registration reallocates. Every list read must hold
/// only real devices (each one known by provider name), before and after.
#[test]
fn listing_devices_while_another_thread_registers() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            let env = Environment::global().expect("env");
            let mut reads = 0usize;
            while !done.load(Ordering::SeqCst) || reads == 0 {
                // ORT reads its device list itself while it chooses by policy.
                if reads.is_multiple_of(8) {
                    let session = Session::builder()
                        .device_policy(onnxrt::ep_device::DevicePolicy::PreferCpu)
                        .commit_from_file(model("mlp.onnx"))
                        .expect("a session chosen by policy");
                    assert_eq!(logits(&session).len(), 8);
                }
                for device in env.ep_devices().expect("devices") {
                    assert!(
                        ["CPUExecutionProvider", "WebGpuExecutionProvider"].contains(&device.provider.as_str()),
                        "a device that is no provider's: {device:?}"
                    );
                }
                reads += 1;
            }
            reads
        })
    };
    let mut registered = 0;
    for i in 0..REGISTRATIONS {
        match env.register_pinned_provider_library(&format!("audit-race-{i}"), &library) {
            Ok(_) => registered += 1,
            Err(error) => panic!("registration {i}: {error:?}"),
        }
    }
    done.store(true, Ordering::SeqCst);
    assert!(reader.join().expect("reader") > 0);
    assert_eq!(registered, REGISTRATIONS);
}

/// How many times the race above registers the plugin (each a new name; each reallocates ORT's
/// device array).
const REGISTRATIONS: usize = 24;

/// The file is replaced while it is checked: a watcher thread sees the check open the file
/// (`/proc/self/fd`) and at once renames a copy of the same size with a broken ELF header over the
/// path. The registration must load the bytes that were checked (and succeed) or refuse: never an
/// ORT error from loading the broken copy, which would mean ORT loaded a file the check never
/// passed (a working library in its place would run unchecked).
#[test]
fn a_library_replaced_between_the_check_and_the_load_is_never_loaded() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    let dir = tempfile::tempdir().expect("dir");
    let bad = dir.path().join("bad.so");
    let mut broken = std::fs::read(&library).expect("read");
    broken[..4].copy_from_slice(b"\0BAD");
    std::fs::write(&bad, &broken).expect("write");
    let mut swapped_during_the_check = 0;
    for attempt in 0..SWAP_ATTEMPTS {
        let target = dir.path().join(format!("attempt-{attempt}.so"));
        std::fs::copy(&library, &target).expect("copy");
        let staged = dir.path().join("staged.so");
        std::fs::hard_link(&bad, &staged).expect("link");
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (stop, target, staged) = (Arc::clone(&stop), target.clone(), staged.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let open = std::fs::read_dir("/proc/self/fd")
                        .expect("/proc/self/fd")
                        .flatten()
                        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|p| p == target));
                    if open {
                        std::fs::rename(&staged, &target).expect("swap");
                        return true;
                    }
                }
                false
            })
        };
        let result = env.register_pinned_provider_library(&format!("audit-swap-{attempt}"), &target);
        stop.store(true, Ordering::SeqCst);
        let swapped = watcher.join().expect("watcher");
        let _ = std::fs::remove_file(&staged);
        match result {
            Ok(dist) => assert!(dist.starts_with("webgpu-plugin-"), "{dist}"),
            Err(Error::PluginNotPinned { why, .. }) => panic!("the check read the pinned bytes, yet refused: {why}"),
            Err(other) => panic!("ORT loaded a file the pin check never passed (swapped: {swapped}): {other}"),
        }
        swapped_during_the_check += usize::from(swapped);
    }
    assert!(swapped_during_the_check > 0, "the watcher never saw the check open the file");
}

/// Registrations whose file is swapped while it is checked.
const SWAP_ATTEMPTS: usize = 3;

/// Registering a provider library from inside a device selector (while ORT reads its device list
/// for that very session) is refused with a typed error instead of reallocating the list under
/// ORT or waiting for itself; the session is still made.
#[test]
fn registering_from_inside_a_selector_is_refused() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&attempts);
    let session = Session::builder()
        .device_selector(move |devices| {
            let env = Environment::global().expect("env");
            seen.lock().expect("lock").push(env.register_pinned_provider_library("audit-inside", &library));
            vec![cpu_index(devices)]
        })
        .commit_from_file(model("mlp.onnx"))
        .expect("the session");
    assert_eq!(logits(&session), reference());
    let attempts = attempts.lock().expect("lock");
    assert_eq!(attempts.len(), 1);
    assert!(matches!(&attempts[0], Err(Error::BadSetting { .. })), "{:?}", attempts[0]);
}

// ---------------------------------------------------------------------------------------------
// LoRA adapters

/// A LoRA adapter is bytes safe code can write (`LoraAdapter::from_bytes`), and ORT feeds its
/// parameters to the model as inputs, past the crate's input checks (invariant 7): a BOOL
/// parameter whose bytes are not 0 or 1 would reach ORT's kernels as C++ `bool`. The adapter here
/// is tests/data/adapters/add_w.onnx_adapter with its parameter retyped BOOL[16] (its 16 data
/// bytes, those of the floats 1, 2, 3, 4, kept). ORT 1.32 refuses it (adapter parameters are
/// floating-point types only, every bit pattern a value); should a runtime take it, a `Cast` to
/// float must read each byte as 0 or 1.
#[test]
fn a_lora_adapter_cannot_carry_invalid_bools() {
    use onnxrt_onnx_proto::{GraphProto, Message, ModelProto, OperatorSetIdProto, TensorProto};
    use onnxrt_tests::proto::{int_attribute, node, tensor_info, BOOL, FLOAT};
    if level() < 20 {
        return;
    }
    let mut bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("data/adapters/add_w.onnx_adapter")).expect("adapter");
    // The parameter's data_type (FLOAT, 1, at 0x40) becomes BOOL (9); its one dim (4, at 0x60)
    // becomes 16, one bool per data byte.
    assert_eq!((bytes[0x40], bytes[0x60]), (1, 4), "the committed adapter's layout");
    bytes[0x40] = 9;
    bytes[0x60] = 16;
    let adapter = match onnxrt::lora::LoraAdapter::from_bytes(&bytes) {
        Ok(adapter) => Arc::new(adapter),
        Err(error) => {
            assert!(matches!(&error, Error::Ort { .. }) && error.to_string().contains("data_type"), "{error:?}");
            return;
        }
    };
    let w = TensorProto {
        name: Some("w".into()),
        dims: vec![16],
        data_type: Some(BOOL),
        int32_data: vec![0; 16],
        ..Default::default()
    };
    let graph = GraphProto {
        node: vec![
            node("Cast", &["w"], &["wf"], &[int_attribute("to", i64::from(FLOAT))]),
            node("Add", &["x", "wf"], &["y"], &[]),
        ],
        name: Some("cast_w".into()),
        input: vec![tensor_info("x", FLOAT, &[16]), tensor_info("w", BOOL, &[16])],
        output: vec![tensor_info("y", FLOAT, &[16])],
        initializer: vec![w],
        ..Default::default()
    };
    let model = ModelProto {
        ir_version: Some(8),
        graph: Some(graph),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        ..Default::default()
    }
    .encode_to_vec();
    let session = Session::builder().commit_from_memory(&model).expect("session");
    let mut options = onnxrt::RunOptions::new().expect("options");
    options.add_lora_adapter(&adapter).expect("added");
    let x = Value::from_array(ndarray::Array1::<f32>::zeros(16)).expect("x");
    match session.run_with(&[("x", &x)], &["y"], Some(&options)) {
        Ok(out) => {
            let y: Vec<f32> = out.get("y").expect("y").to_array::<f32>().expect("f32").iter().copied().collect();
            assert!(y.iter().all(|&v| v == 0.0 || v == 1.0), "bools read as {y:?}");
        }
        Err(error) => assert!(matches!(error, Error::BadSetting { .. } | Error::InvalidArgument { .. }), "{error:?}"),
    }
}

/// A pinned library registered from a file that is then truncated in place (`File::create`, safe
/// code): the provider's code must still run. ORT must not execute a mapping of that file (every
/// page past the new end would be SIGBUS), only of the bytes that were checked.
#[test]
fn a_pinned_library_truncated_after_registering_still_runs() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    let dir = tempfile::tempdir().expect("dir");
    let copy = dir.path().join("libonnxruntime_providers_webgpu.so");
    std::fs::copy(&library, &copy).expect("copy");
    env.register_pinned_provider_library("audit-truncated-later", &copy).expect("the pinned bytes register");
    std::fs::File::create(&copy).expect("truncate the registered file");
    // The devices of the registration just made: ORT appends them to its list.
    let devices = env.ep_devices().expect("devices");
    let newest = devices.iter().rev().find(|d| d.provider == "WebGpuExecutionProvider").expect("a WebGPU device");
    let session = Session::builder()
        .providers_for_devices(std::slice::from_ref(newest), &[])
        .commit_from_file(model("mlp.onnx"))
        .expect("a session on the plugin");
    let (got, expected) = (logits(&session), reference());
    for (g, e) in got.iter().zip(&expected) {
        assert!((g - e).abs() <= 1e-4 + 1e-4 * e.abs(), "WebGPU {g} vs CPU {e}");
    }
}

/// The compatibility check given what it does not expect: devices of two providers at once (the
/// CPU's and the plugin's, in both orders), a path that is no model, a folder, a missing file.
/// Each is an answer or a typed error.
#[test]
fn the_compatibility_check_with_mixed_devices_and_bad_paths() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    env.register_pinned_provider_library("audit-compat", &library).expect("registers");
    let devices = env.ep_devices().expect("devices");
    let cpu = devices.iter().find(|d| d.provider == "CPUExecutionProvider").expect("cpu").clone();
    let gpu = devices.iter().find(|d| d.provider == "WebGpuExecutionProvider").expect("webgpu").clone();
    let dir = tempfile::tempdir().expect("dir");
    let compiled = dir.path().join("ctx.onnx");
    ModelCompiler::new(Session::builder()).input_file(model("mlp.onnx")).compile_to_file(&compiled).expect("compiles");
    for mixed in [vec![cpu.clone(), gpu.clone()], vec![gpu.clone(), cpu.clone()], vec![gpu.clone(), gpu.clone()]] {
        let answer = onnxrt::compile::compatibility(&env, &compiled, &mixed);
        assert!(matches!(answer, Ok(_) | Err(Error::Ort { .. } | Error::BadSetting { .. })), "{answer:?}");
    }
    let garbage = dir.path().join("garbage.onnx");
    std::fs::write(&garbage, [0xffu8; 100]).expect("write");
    for path in [garbage.as_path(), dir.path(), &dir.path().join("missing.onnx")] {
        let answer = onnxrt::compile::compatibility(&env, path, std::slice::from_ref(&gpu));
        assert!(answer.is_err(), "{}: {answer:?}", path.display());
    }
}

/// The CPU's shared allocator, taken before plugin libraries register (each registration may add
/// shared allocators for its devices), still makes and frees tensors afterwards, and tensors made
/// before read back what was written.
#[test]
fn the_shared_allocator_survives_registrations() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    let cpu = onnxrt::MemoryInfo::cpu().expect("cpu");
    let shared = env.shared_allocator(&cpu).expect("shared allocator").expect("the CPU has one");
    let mut before = shared.tensor::<f32>(&[2, 16]).expect("tensor");
    before.view_mut::<f32>().expect("writable").assign(&mlp_input().into_dyn());
    for i in 0..3 {
        env.register_pinned_provider_library(&format!("audit-allocator-{i}"), &library).expect("registers");
        let mut after = shared.tensor::<f32>(&[2, 16]).expect("tensor after a registration");
        after.view_mut::<f32>().expect("writable").assign(&mlp_input().into_dyn());
        let session = Session::builder()
            .config_entry("session.use_env_allocators", "1")
            .commit_from_file(model("mlp.onnx"))
            .expect("session");
        let out = session.run(&[("x", &after)]).expect("run");
        assert_eq!(
            out.get("logits").expect("logits").to_array::<f32>().expect("f32").iter().copied().collect::<Vec<_>>(),
            reference()
        );
    }
    assert_eq!(
        before.view::<f32>().expect("view").iter().copied().collect::<Vec<_>>(),
        mlp_input().iter().copied().collect::<Vec<_>>()
    );
}

/// Placement read from many threads while others run the same session: every read is the same.
#[test]
fn placement_read_while_the_session_runs() {
    let session = Session::builder().record_placement(true).commit_from_file(model("mlp.onnx")).expect("session");
    let Ok(first) = session.placement() else {
        assert!(level() < 24);
        return;
    };
    let expected = reference();
    let threads: Vec<_> = (0..4usize)
        .map(|i| {
            let session = session.clone();
            std::thread::spawn(move || {
                for _ in 0..4 {
                    if i.is_multiple_of(2) {
                        assert!(session.placement().expect("placement").anything_on_cpu());
                    } else {
                        assert_eq!(logits(&session).len(), 8);
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
    assert!(first.anything_on_cpu());
    assert_eq!(logits(&session), expected);
}

/// A compilation whose builder chooses devices by a selector that misbehaves (panics, an index out
/// of range, nine devices) fails with an error naming it, and the closure is freed.
#[test]
fn a_compilation_with_a_misbehaving_selector_fails_cleanly() {
    if level() < 22 {
        return;
    }
    let held = Arc::new(());
    let cases: Vec<(&str, Box<DeviceSelector>)> = vec![
        ("panicked", Box::new(|_| panic!("a selector panics inside CompileModel"))),
        ("index", Box::new(|_| vec![usize::MAX])),
        ("at most", Box::new(|d| vec![cpu_index(d); 9])),
    ];
    for (words, case) in cases {
        let keep = Arc::clone(&held);
        let result = ModelCompiler::new(Session::builder().device_selector(move |d| {
            let _ = &keep;
            case(d)
        }))
        .input_file(model("mlp.onnx"))
        .compile_to_bytes();
        let error = result.expect_err("a misbehaving selector fails the compilation");
        assert!(error.to_string().contains(words), "{words}: {error}");
    }
    assert_eq!(Arc::strong_count(&held), 1, "every closure was freed");
}

/// ORT may log while it registers a library, on the registering thread, into the process's log
/// hook: a hook that lists the devices there must not wait for the registration (its own
/// thread), and one that registers again is refused (ORT would take its own lock twice). Log
/// records of other threads meanwhile just wait their turn.
#[test]
fn a_log_hook_that_reenters_the_device_api_during_a_registration() {
    let Some(library) = plugin() else { return };
    let _turn = one_at_a_time();
    let env = Environment::global().expect("env");
    let registering: Arc<Mutex<Option<std::thread::ThreadId>>> = Arc::default();
    let seen: Arc<Mutex<Vec<(usize, bool)>>> = Arc::default();
    {
        let (registering, seen, library) = (Arc::clone(&registering), Arc::clone(&seen), library.clone());
        env.set_log_hook(move |_record| {
            if *registering.lock().expect("lock") != Some(std::thread::current().id()) {
                return;
            }
            let env = Environment::global().expect("env");
            let listed = env.ep_devices().expect("devices inside a log hook").len();
            let again = env.register_pinned_provider_library("audit-from-a-log-hook", &library);
            seen.lock().expect("lock").push((listed, matches!(again, Err(Error::BadSetting { .. }))));
        });
    }
    let level = env.log_level();
    env.set_log_level(onnxrt::LogLevel::Verbose).expect("verbose");
    *registering.lock().expect("lock") = Some(std::thread::current().id());
    let registered = env.register_pinned_provider_library("audit-log-hook", &library);
    *registering.lock().expect("lock") = None;
    env.set_log_level(level).expect("level back");
    env.remove_log_hook();
    registered.expect("registers");
    let seen = seen.lock().expect("lock");
    assert!(seen.iter().all(|&(listed, refused)| listed > 0 && refused), "{seen:?}");
    eprintln!("log records on the registering thread: {}", seen.len());
}
