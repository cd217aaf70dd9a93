//! Process-global state, in its own test binary: the one environment (custom name, verbose
//! logging, a log hook that panics), what the loaded runtime reports, and where the loader
//! searches for it.
//!
//! Every test here that touches ORT first calls [`custom_env`], so the environment is created
//! with these settings before anything could create a default one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use onnxrt::{Environment, LogLevel, LogRecord, Session, Value};
use onnxrt_onnx_proto::tensor_proto::DataType;
use onnxrt_onnx_proto::{GraphProto, Message, ModelProto, TensorProto};
use onnxrt_tests::model;

static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);
static HOOK_PANICKED: AtomicBool = AtomicBool::new(false);
/// A copy of every record the hook saw (the panicking call included).
static SEEN: Mutex<Vec<LogRecord>> = Mutex::new(Vec::new());

fn hook(record: &LogRecord) {
    if let Ok(mut seen) = SEEN.lock() {
        seen.push(record.clone());
    }
    if HOOK_CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
        HOOK_PANICKED.store(true, Ordering::SeqCst);
        panic!("the log hook panics on its first record; onnxrt must not let this unwind into ORT");
    }
}

fn seen() -> Vec<LogRecord> {
    SEEN.lock().map(|s| s.clone()).unwrap_or_default()
}

/// The environment of this process: named `custom`, verbose, with the panicking hook.
fn custom_env() -> Arc<Environment> {
    static ENV: OnceLock<Arc<Environment>> = OnceLock::new();
    Arc::clone(ENV.get_or_init(|| {
        Environment::builder()
            .name("custom")
            .log_level(LogLevel::Verbose)
            .log_hook(hook)
            .commit()
            .expect("the first environment of the process is created")
    }))
}

/// `add_f32.onnx` plus an initializer no node uses. Protobuf merges a repeated singular message
/// field, so appending a `ModelProto` whose `graph` holds one `initializer` adds it to the
/// model's graph. ORT warns when it removes such an initializer.
fn model_with_unused_initializer() -> Vec<u8> {
    let tensor = TensorProto {
        dims: vec![1],
        data_type: Some(DataType::Float as i32),
        name: Some("unused_weight".into()),
        raw_data: Some(1.0f32.to_le_bytes().to_vec().into()),
        ..Default::default()
    };
    let graph = GraphProto { initializer: vec![tensor], ..Default::default() };
    let mut bytes = std::fs::read(model("add_f32.onnx")).expect("add_f32.onnx");
    bytes.extend(ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec());
    bytes
}

#[test]
fn custom_environment_with_a_panicking_log_hook() {
    let env = custom_env();
    assert_eq!(env.name(), "custom");
    assert!(env.global_thread_pools().is_none());
    // The default environment is the live one.
    assert!(Arc::ptr_eq(&env, &Environment::global().expect("global")));

    let before = HOOK_CALLS.load(Ordering::SeqCst);
    let session = Session::builder()
        .log_id("env-test-session")
        .commit_from_file(model("add_f32.onnx"))
        .expect("session in the custom environment");
    assert!(Arc::ptr_eq(session.environment(), &env));
    let after = HOOK_CALLS.load(Ordering::SeqCst);
    assert!(after > before, "creating a session logs at verbose level; the hook saw nothing new");
    assert!(HOOK_PANICKED.load(Ordering::SeqCst), "the hook's first call panicked");

    // The panic stayed on the Rust side: we are still here, and ORT still works.
    let a = Value::from_vec(&[2, 3], vec![1.5f32; 6]).expect("a");
    let b = Value::from_vec(&[2, 3], vec![-0.25f32; 6]).expect("b");
    let outputs = session.run(&[("a", &a), ("b", &b)]).expect("runs after the hook panicked");
    assert!(outputs[0].view::<f32>().expect("f32").iter().all(|&v| v == 1.25));
    assert!(HOOK_CALLS.load(Ordering::SeqCst) > after, "the hook keeps being called after its panic");

    let records = seen();
    assert!(records.iter().any(|r| r.level == LogLevel::Verbose), "verbose records reach the hook");
    assert!(records.iter().any(|r| r.log_id == "custom"), "environment records carry the environment's name");
    assert!(
        records.iter().any(|r| r.log_id == "env-test-session" && r.message.contains("Initializing session")),
        "session records carry the session's log id"
    );
    assert!(records.iter().all(|r| !r.code_location.is_empty() && r.category == "onnxruntime"));
}

#[test]
fn recent_log_keeps_warnings() {
    let env = custom_env();
    // Only warnings and worse are kept, however verbose the environment is.
    assert!(env.recent_log().iter().all(|r| r.level >= LogLevel::Warning));
    let session = Session::builder()
        .commit_from_memory(&model_with_unused_initializer())
        .expect("a model with an unused initializer loads");
    assert_eq!(session.inputs().len(), 2, "the extra initializer is not an input");
    let recent = env.recent_log();
    let warning = recent
        .iter()
        .find(|r| r.message.contains("Removing initializer 'unused_weight'"))
        .unwrap_or_else(|| panic!("ORT's warning about the unused initializer should be kept; recent: {recent:?}"));
    assert_eq!(warning.level, LogLevel::Warning);
    assert!(recent.iter().all(|r| r.level >= LogLevel::Warning));
    assert!(recent.len() <= 256);
    assert!(seen().iter().any(|r| r == warning), "the hook saw the same record");
}

/// The runtime loaded is the one the build provisioned (1.16.2 in CI's main pass, the newest
/// pinned one in its second pass), and it serves the C API of its minor version.
#[test]
fn runtime_info_reports_the_provisioned_runtime() {
    let _env = custom_env();
    let info = onnxrt::runtime_info().expect("the runtime loads");
    assert_eq!(info.version, onnxrt_sys::BUILD_VERSION);
    assert_eq!(info.build_version, onnxrt_sys::BUILD_VERSION);
    assert_eq!(info.api_level, onnxrt_tests::ort_minor());
    assert!(info.api_level >= 16, "{info:?}");
    assert!(info.library.is_file(), "the loaded library {} exists", info.library.display());
    assert!(
        info.library.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so")),
        "{}",
        info.library.display()
    );
    assert!(!info.build_source.is_empty());
    // The CPU build has the CPU provider (and no CUDA).
    let providers = onnxrt::providers::available().expect("providers");
    assert!(providers.iter().any(|p| p == "CPUExecutionProvider"), "{providers:?}");
}

/// Set in the child process that `search_paths_in_order` starts.
const SEARCH_CHILD: &str = "ONNXRT_TESTS_SEARCH_PATHS_CHILD";

#[test]
fn search_paths_in_order() {
    let paths = onnxrt::search_paths();
    let origins: Vec<&str> = paths.iter().map(|(origin, _)| origin.as_str()).collect();
    let exe_dir = std::env::current_exe()
        .expect("the test binary's path")
        .parent()
        .expect("the test binary's folder")
        .to_path_buf();
    let bundle = exe_dir.join("onnxruntime").join("lib");
    let recorded = std::path::PathBuf::from(onnxrt_sys::BUILD_LIBRARY);

    // No path given in code (init_from was not called), so that origin is absent.
    assert!(!origins.contains(&"given in code"), "{origins:?}");
    match std::env::var_os("ONNXRT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        Some(value) => {
            assert_eq!(origins, ["ONNXRT_DYLIB_PATH", "the bundle beside the executable", "recorded at build time"]);
            assert_eq!(paths[0].1, std::path::PathBuf::from(value));
        }
        None => assert_eq!(origins, ["the bundle beside the executable", "recorded at build time"]),
    }
    let n = paths.len();
    assert_eq!(paths[n - 2].1, bundle);
    assert_eq!(paths[n - 1].1, recorded);

    if std::env::var_os(SEARCH_CHILD).is_some() {
        return;
    }
    // Again in a child process with ONNXRT_DYLIB_PATH set (setting it here would race with the
    // other tests' threads): it comes second, after a path given in code.
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = std::process::Command::new(exe)
        .args(["--exact", "search_paths_in_order", "--test-threads=1"])
        .env(SEARCH_CHILD, "1")
        .env("ONNXRT_DYLIB_PATH", "/opt/somewhere/libonnxruntime.so")
        .output()
        .expect("the child test process starts");
    assert!(
        output.status.success(),
        "child with ONNXRT_DYLIB_PATH failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"), "the child ran the test");
}

#[test]
fn library_loaded_from_the_recorded_path_without_overrides() {
    let _env = custom_env();
    let info = onnxrt::runtime_info().expect("the runtime loads");
    let dylib_set = std::env::var_os("ONNXRT_DYLIB_PATH").is_some_and(|v| !v.is_empty());
    let bundle_exists = onnxrt::search_paths().iter().any(|(o, p)| o.starts_with("the bundle") && p.exists());
    if dylib_set || bundle_exists {
        println!("skipped: ONNXRT_DYLIB_PATH or a bundle overrides the recorded library");
        return;
    }
    // Nothing earlier in the search order exists, so the build-time record (a file) was used.
    let recorded = std::path::PathBuf::from(onnxrt_sys::BUILD_LIBRARY);
    assert!(recorded.is_file(), "the recorded library {} exists", recorded.display());
    assert_eq!(info.library, recorded);
}
