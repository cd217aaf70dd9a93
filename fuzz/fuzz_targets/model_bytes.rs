//! Arbitrary bytes as an ONNX model: `commit_from_memory` must return `Ok` or `Err`, never crash.
//! When a session is made, everything it describes (inputs, outputs, metadata) is read too.
//!
//! Seeds: the committed test models (`fuzz/corpus/model_bytes`).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use onnxrt::{Environment, Session, ValueInfo, ValueKind};

/// One environment for the whole run: ORT allows one per process, and re-creating it for every
/// input would measure `CreateEnv`, not model loading.
fn env() -> Arc<Environment> {
    static ENV: OnceLock<Arc<Environment>> = OnceLock::new();
    Arc::clone(ENV.get_or_init(|| Environment::global().expect("the ORT environment")))
}

fn check(info: &ValueInfo) {
    // Names, kinds and shapes must be readable and consistent.
    let _ = info.shape_text();
    match info.kind {
        ValueKind::Tensor => assert!(info.element_type.is_some(), "a tensor without an element type: {info:?}"),
        _ => assert!(info.shape.is_empty(), "a non-tensor with a shape: {info:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let built = Session::builder().environment(env()).intra_op_threads(1).commit_from_memory(data);
    let Ok(session) = built else { return };
    for info in session.inputs().iter().chain(session.outputs()) {
        check(info);
    }
    for (i, info) in session.inputs().iter().enumerate() {
        // Names as the session reports them must be found again (unless ORT gave a name that is
        // not UTF-8 and was read lossily, or one repeated).
        if let Ok(found) = session.input_index(&info.name) {
            assert!(found <= i, "input {i} {:?} found at {found}", info.name);
        }
    }
    let _ = session.metadata();
    let _ = format!("{session:?}");
});
