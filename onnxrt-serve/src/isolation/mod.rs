//! Runs of a model isolated from the server process: each model instance is a worker process
//! (the `serve` program re-executed with [`worker::WORKER_FLAG`]) that loads the model and runs
//! one request at a time; the tensors go through shared memory, the control messages through the
//! worker's stdin and stdout ([`wire`]). A worker that dies on a request (ONNX Runtime 1.16 dies
//! of SIGFPE on some shapes a model declares valid) costs that request a 500 naming the signal,
//! and a new worker is started; the server and every other request carry on.
//!
//! On by default where the loaded runtime is known to crash on valid shapes ([`crashes_on_valid_shapes`]);
//! `"isolation"` in a model's config.json, or `serve --isolation BOOL`, decides otherwise.

pub mod pool;
pub mod wire;
pub mod worker;

pub use pool::{IsolatedError, RunHandle, WorkerPool};
pub use worker::worker_main_if_asked;

/// Whether ONNX Runtime `version` is one known to kill its process on inputs a model declares
/// valid: 1.16.x dies of SIGFPE on PP-OCR cls inputs `[1,3,8,8]` and rec `[1,3,32,100]`; 1.32
/// runs them.
pub fn crashes_on_valid_shapes(version: &str) -> bool {
    version.starts_with("1.16.")
}

/// The newest runtime pinned by this workspace, named in the start-up warning on one that crashes.
pub const NEWEST_PINNED_RUNTIME: &str = "cpu-1.32.0-registry";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_1_16_runtimes_are_known_to_crash() {
        assert!(crashes_on_valid_shapes("1.16.2"));
        assert!(crashes_on_valid_shapes("1.16.3"));
        assert!(!crashes_on_valid_shapes("1.32.0"));
        assert!(!crashes_on_valid_shapes("1.1.6"));
    }
}
