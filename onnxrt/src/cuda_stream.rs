//! [`CudaStream`]: a CUDA stream of the caller's own, for copies between host and device tensors
//! that wait for that stream alone (the `cuda` feature).
//!
//! [`Value::copy_from_host`](crate::Value::copy_from_host) waits for the whole device, so a copy
//! made while another thread's ORT run computes waits for that run too. A copy on a stream of its
//! own ([`Value::copy_from`](crate::Value::copy_from)) runs beside the other run's kernels (the
//! copy engines are separate from the compute units) and waits only for itself.

use std::ffi::c_void;

use crate::cuda_runtime::RawStream;
use crate::error::{Error, Result};

/// A non-blocking CUDA stream on one device, destroyed (after its queued work) when dropped.
///
/// Corresponds to `cudaStreamCreateWithFlags(…, cudaStreamNonBlocking)`.
#[doc(alias = "cudaStreamCreateWithFlags")]
pub struct CudaStream {
    raw: RawStream,
    device_id: i32,
}

impl std::fmt::Debug for CudaStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaStream").field("device_id", &self.device_id).finish_non_exhaustive()
    }
}

impl CudaStream {
    /// A new stream on CUDA device `device_id` (the calling thread's current device is left as
    /// it was).
    ///
    /// # Errors
    /// [`Error::NoSuchDevice`] for a negative id; [`Error::ProviderLoad`] when libcudart cannot be
    /// loaded; [`Error::Ort`] with CUDA's error code when CUDA refuses (no such device, no driver).
    pub fn new(device_id: i32) -> Result<CudaStream> {
        if device_id < 0 {
            return Err(Error::NoSuchDevice { device: "CUDA stream".into(), id: device_id, count: None });
        }
        Ok(CudaStream { raw: RawStream::new(device_id)?, device_id })
    }

    /// The device the stream belongs to.
    pub fn device_id(&self) -> i32 {
        self.device_id
    }

    /// The `cudaStream_t`, e.g. for the `unsafe`
    /// [`CudaOptions::user_compute_stream`](crate::providers::cuda::CudaOptions::user_compute_stream).
    /// It stays valid while this value lives.
    pub fn as_raw(&self) -> *mut c_void {
        self.raw.as_ptr()
    }

    pub(crate) fn raw(&self) -> &RawStream {
        &self.raw
    }
}
