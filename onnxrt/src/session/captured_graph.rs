//! Releasing a captured graph (C API 27): the GPU commands a provider recorded for replay when
//! graph capture is on (CUDA graphs; `ep.cuda.enable_cuda_graph`-style options), freed without
//! dropping the session.

use std::sync::Arc;

use crate::api::api;
use crate::error::{Error, Result};
use crate::session::Session;
use crate::status::ort;

impl Session {
    /// Frees what the provider captured for the graph annotated `annotation_id` (the run option
    /// `gpu_graph_id`; 0 without one) and its resources. Without graph capture (the CPU
    /// provider) ORT 1.32 returns success and nothing changes.
    ///
    /// Only from the session's last handle with no asynchronous run in flight (`&mut self` and
    /// no clone): ORT replays a captured graph inside `Run`, and freeing it under a run on another
    /// thread would free memory that run uses.
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.27; [`Error::BadSetting`] while the
    /// session has clones or asynchronous runs in flight; ORT's errors.
    ///
    /// Corresponds to `OrtApi::SessionReleaseCapturedGraph`.
    #[doc(alias = "SessionReleaseCapturedGraph")]
    pub fn release_captured_graph(&mut self, annotation_id: i32) -> Result<()> {
        let api = api()?;
        api.needs(27, "Session::release_captured_graph (SessionReleaseCapturedGraph)")?;
        let clones = Arc::strong_count(&self.inner) - 1;
        let in_flight = self.inner.in_flight.count();
        if clones > 0 || in_flight > 0 {
            return Err(Error::BadSetting {
                setting: "release_captured_graph".into(),
                value: format!("a session with {clones} other handle(s) and {in_flight} asynchronous run(s) in flight"),
                allowed: "the session's last handle, with no run in flight: drop the clones (or wait for them) first"
                    .into(),
            });
        }
        // SAFETY: the session is live; this is its only handle (`&mut self`, no clone) and no
        // asynchronous run is in flight, so no run of it can replay the graph while ORT frees it.
        unsafe { ort!(api, SessionReleaseCapturedGraph(self.inner.raw.as_ptr(), annotation_id)) }
    }
}
