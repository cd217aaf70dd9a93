//! A session of a model on the provider a config names (`cpu`, or `cuda`: strict, every node
//! on the GPU): what the server and its worker processes load.

use std::path::Path;

use onnxrt::Session;

/// A session of the model at `path` (or `bytes`) on `provider` (`cpu` or `cuda`, strict) with
/// `threads` intra-op threads: what a worker process loads too.
pub(crate) fn session_for(
    path: &Path,
    bytes: Option<&[u8]>,
    provider: &str,
    device: i32,
    threads: Option<usize>,
) -> Result<Session, Box<dyn std::error::Error>> {
    let mut builder = Session::builder();
    if let Some(threads) = threads {
        builder = builder.intra_op_threads(threads);
    }
    if provider == "cuda" {
        builder = with_cuda(builder, device)?;
    }
    Ok(match bytes {
        Some(bytes) => builder.commit_from_memory(bytes)?,
        None => builder.commit_from_file(path)?,
    })
}

#[cfg(feature = "cuda")]
fn with_cuda(
    builder: onnxrt::SessionBuilder,
    device: i32,
) -> Result<onnxrt::SessionBuilder, Box<dyn std::error::Error>> {
    Ok(builder.cuda(onnxrt::providers::cuda::CudaOptions::new().device_id(device)).strict_gpu(true))
}

#[cfg(not(feature = "cuda"))]
fn with_cuda(_: onnxrt::SessionBuilder, _: i32) -> Result<onnxrt::SessionBuilder, Box<dyn std::error::Error>> {
    Err("provider `cuda` needs the `cuda` feature: cargo build --release -p onnxrt-serve --features cuda".into())
}
