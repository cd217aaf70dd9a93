//! String keys that make ORT keep pointing into caller memory, or that
//! the crate's allow-lists do not know, are refused from safe code; model bytes ORT may use in
//! place are owned by the session. Real ORT 1.16.2, a real `.ort` model written by ORT itself.
//! This binary runs under valgrind in `tools/dev.sh test` (memcheck list).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use onnxrt::{config_keys, OptimizationLevel, RunOptions, Session, Value};

fn model(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/models").join(name)
}

/// The MLP saved by ORT in its own format (`.ort`), as bytes, and the file they came from.
fn ort_model(tag: &str) -> (Vec<u8>, PathBuf) {
    let path = std::env::temp_dir().join(format!("onnxrt-config-keys-{}-{tag}.ort", std::process::id()));
    Session::builder()
        .optimization_level(OptimizationLevel::Extended)
        .save_optimized_model(&path)
        .commit_from_file(model("mlp.onnx"))
        .expect("ORT saves the optimized model");
    let bytes = std::fs::read(&path).expect("the .ort file");
    assert!(bytes.len() > 1000 && &bytes[4..8] == b"ORTM", "an ORT-format model: {} bytes", bytes.len());
    (bytes, path)
}

fn run(session: &Session) -> Vec<f32> {
    let x = Value::from_vec(&[1, 16], (0..16).map(|i| i as f32 / 8.0 - 1.0).collect()).expect("x");
    let outputs = session.run(&[("x", &x)]).expect("run");
    outputs[0].to_array::<f32>().expect("f32").iter().copied().collect()
}

/// The audit's program: `.ort` bytes committed from a borrowed Vec with the two in-place keys,
/// then the Vec overwritten and freed before a run. Unfixed, ORT's initializers pointed into the
/// freed Vec (valgrind: invalid read inside a freed block, during `run`); now the keys are refused.
#[test]
fn borrowed_bytes_cannot_be_used_in_place() {
    let (mut bytes, path) = ort_model("borrowed");
    let built = Session::builder()
        .config_entry(config_keys::USE_ORT_MODEL_BYTES_DIRECTLY, "1")
        .config_entry("session.use_ort_model_bytes_for_initializers", "1")
        .commit_from_memory(&bytes);
    std::fs::remove_file(&path).ok();
    match built {
        Err(e) => {
            let text = e.to_string();
            assert_eq!(e.variant(), "KeyRefused", "{text}");
            assert!(text.contains("session config entry `session.use_ort_model_bytes_directly`"), "{text}");
            assert!(text.contains("(ownership)") && text.contains("commit_from_owned_bytes"), "{text}");
            assert!(text.contains("session.disable_prepacking"), "the error lists the keys that pass: {text}");
        }
        Ok(session) => {
            let before = run(&session);
            bytes.iter_mut().for_each(|b| *b = 0x7f);
            let overwritten = run(&session);
            drop(bytes);
            let freed = run(&session);
            panic!("a session was made over borrowed bytes: output {before:?}, then {overwritten:?} once the bytes were overwritten, {freed:?} once freed");
        }
    }
}

/// Each in-place key is refused on its own too, and the unsafe door still takes them.
#[test]
fn each_ownership_key_is_refused_alone() {
    for key in [config_keys::USE_ORT_MODEL_BYTES_DIRECTLY, "session.use_ort_model_bytes_for_initializers"] {
        let err = Session::builder().config_entry(key, "1").commit_from_file(model("mlp.onnx")).expect_err(key);
        assert_eq!(err.variant(), "KeyRefused", "{err}");
        assert!(err.to_string().contains(key), "{err}");
    }
}

/// The safe way to the same memory saving: the session owns the bytes, so the caller's copy (a
/// shared `Arc`, or the Vec moved in) can go; outputs match a session made from the `.ort` file.
#[test]
fn owned_bytes_are_used_in_place_and_outlive_the_callers_handle() {
    let (bytes, path) = ort_model("owned");
    let reference = run(&Session::builder().commit_from_file(&path).expect("session from the .ort file"));
    std::fs::remove_file(&path).ok();
    let onnx = run(&Session::builder().commit_from_file(model("mlp.onnx")).expect("session from the .onnx"));
    for (a, b) in reference.iter().zip(&onnx) {
        assert!((a - b).abs() <= 1e-5, "{reference:?} vs {onnx:?}");
    }

    let shared: Arc<[u8]> = Arc::from(bytes.clone());
    let from_shared = Session::builder().commit_from_owned_bytes(Arc::clone(&shared)).expect("from shared bytes");
    drop(shared);
    let from_vec = Session::builder().commit_from_owned_bytes(bytes).expect("from a moved Vec");
    for _ in 0..3 {
        assert_eq!(run(&from_shared), reference);
        assert_eq!(run(&from_vec), reference);
    }
    // A clone of the session keeps the bytes alive too.
    let clone = from_vec.clone();
    drop(from_vec);
    assert_eq!(run(&clone), reference);
}

/// ONNX-format bytes through the same call are parsed (and copied) by ORT as usual.
#[test]
fn owned_onnx_bytes_work_too() {
    let bytes = std::fs::read(model("mlp.onnx")).expect("mlp.onnx");
    let reference = run(&Session::builder().commit_from_file(model("mlp.onnx")).expect("from file"));
    assert_eq!(run(&Session::builder().commit_from_owned_bytes(bytes).expect("owned onnx")), reference);
}

/// A key the session list does not know is refused (it used to reach ORT, which takes any key),
/// naming it; keys on the list still pass.
#[test]
fn unknown_session_keys_are_refused_and_listed_ones_pass() {
    let err = Session::builder()
        .config_entry("session.no_such_key", "1")
        .commit_from_file(model("mlp.onnx"))
        .expect_err("unknown key");
    assert_eq!(err.variant(), "KeyRefused", "{err}");
    assert!(err.to_string().contains("`session.no_such_key` is refused (not on the list)"), "{err}");
    let session = Session::builder()
        .config_entry(config_keys::DISABLE_PREPACKING, "1")
        .config_entry("session.intra_op.allow_spinning", "0")
        .commit_from_file(model("mlp.onnx"))
        .expect("plain keys pass");
    assert_eq!(run(&session).len(), 4);
}

/// The unsafe door takes any key; an unknown one is ORT's business (it ignores it).
#[test]
fn the_unchecked_door_takes_any_key() {
    // SAFETY: ORT only stores this key; it reads no address and loads nothing from it.
    let session = unsafe { Session::builder().config_entry_unchecked("session.no_such_key", "1") }
        .commit_from_file(model("mlp.onnx"))
        .expect("unchecked key");
    assert_eq!(run(&session).len(), 4);
}

/// Run configuration entries go through the same kind of list.
#[test]
fn run_config_keys_are_checked() {
    let mut options = RunOptions::new().expect("run options");
    options.config_entry("memory.enable_memory_arena_shrinkage", "cpu:0").expect("a plain run key");
    let err = options.config_entry("run.no_such_key", "1").expect_err("unknown run key");
    assert_eq!(err.variant(), "KeyRefused", "{err}");
    assert!(err.to_string().contains("run config entry `run.no_such_key`"), "{err}");
    assert!(err.to_string().contains("gpu_graph_id"), "lists the keys that pass: {err}");
    let session = Session::builder().commit_from_file(model("mlp.onnx")).expect("session");
    let x = Value::from_vec(&[1, 16], vec![0.25f32; 16]).expect("x");
    let outputs = session.run_with(&[("x", &x)], &[], Some(&options)).expect("a run with the shrinkage key");
    assert_eq!(outputs[0].tensor_info().expect("info").shape, [1, 4]);
}

/// `disable_synchronize_execution_providers` lets a run return while the GPU still reads its
/// inputs and writes its outputs: buffers the caller reuses after the run (a batch buffer
/// refilled with `Value::copy_from`, a host output read at once) would race with it. Refused.
#[test]
fn the_run_key_that_skips_the_end_of_run_sync_is_refused() {
    let mut options = RunOptions::new().expect("run options");
    let err = options.config_entry("disable_synchronize_execution_providers", "1").expect_err("refused");
    assert_eq!(err.variant(), "KeyRefused", "{err}");
    let text = err.to_string();
    assert!(text.contains("disable_synchronize_execution_providers") && text.contains("(ownership)"), "{text}");
    // "0" is ORT's default (synchronise), but the key is refused whatever its value: the crate
    // does not parse values ORT parses.
    assert!(options.config_entry("disable_synchronize_execution_providers", "0").is_err());
}
