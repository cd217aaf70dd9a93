//! The few CUDA runtime calls the crate needs (device count, copies between host and device),
//! loaded from `libcudart` at first use. ORT's C API 16 has no tensor copy between devices.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The libcudart versions tried, newest first (one ships with every CUDA build of ORT's deps).
const CANDIDATES: &[&str] = &["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"];

/// `cudaMemcpyDefault`: the direction is inferred from the pointers (unified addressing).
const MEMCPY_DEFAULT: c_int = 4;

struct CudaRuntime {
    memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int,
    device_count: unsafe extern "C" fn(*mut c_int) -> c_int,
    synchronize: unsafe extern "C" fn() -> c_int,
    host_register: unsafe extern "C" fn(*mut c_void, usize, u32) -> c_int,
    host_unregister: unsafe extern "C" fn(*mut c_void) -> c_int,
}

fn runtime() -> Result<&'static CudaRuntime> {
    static RUNTIME: OnceLock<std::result::Result<CudaRuntime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let mut errors = Vec::new();
            for name in CANDIDATES {
                // SAFETY: libcudart's initialisers are safe to run in any process; the library is
                // leaked below so the function pointers stay valid.
                match unsafe { libloading::Library::new(name) } {
                    Ok(library) => {
                        // SAFETY: these are the documented C signatures of the CUDA runtime API.
                        let loaded = unsafe {
                            (|| -> std::result::Result<CudaRuntime, libloading::Error> {
                                Ok(CudaRuntime {
                                    memcpy: *library.get(b"cudaMemcpy\0")?,
                                    device_count: *library.get(b"cudaGetDeviceCount\0")?,
                                    synchronize: *library.get(b"cudaDeviceSynchronize\0")?,
                                    host_register: *library.get(b"cudaHostRegister\0")?,
                                    host_unregister: *library.get(b"cudaHostUnregister\0")?,
                                })
                            })()
                        };
                        match loaded {
                            Ok(runtime) => {
                                std::mem::forget(library);
                                return Ok(runtime);
                            }
                            Err(e) => errors.push(format!("{name}: {e}")),
                        }
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            Err(errors.join("; "))
        })
        .as_ref()
        .map_err(|why| Error::ProviderLoad {
            provider: "CUDA".into(),
            library: "libcudart.so".into(),
            missing: Some("libcudart.so".into()),
            cause: why.clone(),
            fix: "install the CUDA runtime matching the ONNX Runtime build (see `onnxrt doctor`) or add its folder to LD_LIBRARY_PATH".into(),
        })
}

fn check(function: &'static str, code: c_int) -> Result<()> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Ort {
            function,
            code: crate::error::ErrorCode::EpFail,
            message: format!("CUDA runtime error {code}"),
        })
    }
}

/// Number of CUDA devices visible to this process (0 on a machine without one), as the CUDA
/// runtime counts them (`CUDA_VISIBLE_DEVICES` applies): the ids `0..count` are valid
/// [`CudaOptions::device_id`](crate::providers::cuda::CudaOptions::device_id)s.
///
/// Corresponds to `cudaGetDeviceCount`.
///
/// # Errors
/// [`Error::ProviderLoad`] when libcudart cannot be loaded; [`Error::Ort`] for another CUDA error.
#[doc(alias = "cudaGetDeviceCount")]
pub fn device_count() -> Result<i32> {
    let runtime = runtime()?;
    let mut count = 0;
    // SAFETY: the out-pointer is valid.
    let code = unsafe { (runtime.device_count)(&mut count) };
    // "no CUDA-capable device" (100) means zero devices, not a failure.
    if code == 100 {
        return Ok(0);
    }
    check("cudaGetDeviceCount", code)?;
    Ok(count)
}

/// Copies `bytes` between host and device memory (direction inferred), then waits for it.
///
/// # Safety
/// `dst` and `src` are valid for `bytes` bytes in their memory spaces and do not overlap.
pub(crate) unsafe fn copy(dst: *mut c_void, src: *const c_void, bytes: usize) -> Result<()> {
    let runtime = runtime()?;
    // SAFETY: the caller's contract.
    check("cudaMemcpy", unsafe { (runtime.memcpy)(dst, src, bytes, MEMCPY_DEFAULT) })?;
    // SAFETY: no arguments.
    check("cudaDeviceSynchronize", unsafe { (runtime.synchronize)() })
}

/// Host memory page-locked with `cudaHostRegister` (copies to and from the device run at full
/// speed, without a staging copy), unlocked when dropped.
pub(crate) struct PinnedHostMemory {
    ptr: *mut c_void,
}

impl PinnedHostMemory {
    /// Page-locks `bytes` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` is host memory valid for `bytes` bytes that outlives the returned guard.
    pub(crate) unsafe fn register(ptr: *mut c_void, bytes: usize) -> Result<PinnedHostMemory> {
        let runtime = runtime()?;
        // SAFETY: the caller's contract; flags 0 is cudaHostRegisterDefault.
        check("cudaHostRegister", unsafe { (runtime.host_register)(ptr, bytes, 0) })?;
        Ok(PinnedHostMemory { ptr })
    }
}

impl Drop for PinnedHostMemory {
    fn drop(&mut self) {
        if let Ok(runtime) = runtime() {
            // SAFETY: registered in `register`, unregistered once, while still allocated.
            let _ = unsafe { (runtime.host_unregister)(self.ptr) };
        }
    }
}

// SAFETY: the guard holds only an address; CUDA's registration is process-wide.
unsafe impl Send for PinnedHostMemory {}
// SAFETY: as for Send; `&PinnedHostMemory` gives access to nothing (the address is private).
unsafe impl Sync for PinnedHostMemory {}
