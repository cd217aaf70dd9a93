//! The sessions a served model runs on: on the provider its config names, and CUDA graphs for
//! its batch sizes.

use std::path::Path;

use onnxrt::Session;

use crate::provider::session_for;
use crate::repository::config::Settings;

/// The session for `settings`, on its provider (`crate::provider`).
pub(crate) fn make_session(
    path: &Path,
    bytes: Option<&[u8]>,
    settings: &Settings,
) -> Result<Session, Box<dyn std::error::Error>> {
    session_for(path, bytes, &settings.provider_setup, settings.threads)
}

/// A session builder with the settings every session of the model shares (no provider yet).
#[cfg(feature = "cuda")]
fn session_builder(settings: &Settings) -> onnxrt::SessionBuilder {
    let builder = Session::builder();
    match settings.threads {
        Some(threads) => builder.intra_op_threads(threads),
        None => builder,
    }
}

/// The model at `path` (or `bytes`) as CUDA graphs for each of `sizes` rows in one session,
/// with the session settings of `settings` (`cuda_graphs`; the batcher asks for one size at a
/// time on runtimes older than 1.18).
#[cfg(feature = "cuda")]
pub(crate) fn make_graphs(
    path: &Path,
    bytes: Option<&[u8]>,
    settings: &Settings,
    sizes: &[usize],
) -> onnxrt::Result<onnxrt::CudaGraphs> {
    let builder = session_builder(settings);
    let cuda = onnxrt::providers::cuda::CudaOptions::new().device_id(settings.device);
    match bytes {
        Some(bytes) => onnxrt::CudaGraphs::from_memory(builder, cuda, bytes, sizes),
        None => onnxrt::CudaGraphs::from_file(builder, cuda, path, sizes),
    }
}
