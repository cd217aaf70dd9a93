//! The one CUDA driver call the crate needs: how long a device allocation is
//! (`cuMemGetAddressRange`), which the runtime API does not say. Used to bound a mapping of
//! another process's memory ([`crate::cuda_runtime::IpcMapping`]) by what really lies behind it.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use crate::error::{Error, ErrorCode, Result};

/// The driver library's name (every NVIDIA driver install has it; the CUDA runtime loads it too).
const LIBRARY: &str = "libcuda.so.1";

/// `cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr ptr)`.
type AddressRange = unsafe extern "C" fn(*mut u64, *mut usize, u64) -> c_int;

fn address_range() -> Result<AddressRange> {
    static LOADED: OnceLock<std::result::Result<AddressRange, String>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            // SAFETY: the driver library's initialisers are safe to run in any process (the CUDA
            // runtime has loaded it already wherever this is called); it is leaked below so the
            // function pointer stays valid.
            let library = unsafe { libloading::Library::new(LIBRARY) }.map_err(|e| e.to_string())?;
            // SAFETY: the documented C signature of `cuMemGetAddressRange_v2`.
            let function: AddressRange =
                *unsafe { library.get::<AddressRange>(b"cuMemGetAddressRange_v2\0") }.map_err(|e| e.to_string())?;
            std::mem::forget(library);
            Ok(function)
        })
        .clone()
        .map_err(|why| Error::ProviderLoad {
            provider: "CUDA".into(),
            library: LIBRARY.into(),
            missing: Some(LIBRARY.into()),
            cause: why,
            fix: "install the NVIDIA driver (it provides libcuda.so.1); see `onnxrt doctor`".into(),
        })
}

/// How many bytes of its allocation lie from device address `ptr` on (0 would mean none).
/// The allocation's CUDA context must be current on the calling thread.
pub(crate) fn bytes_from(ptr: *mut c_void) -> Result<usize> {
    let function = address_range()?;
    let (mut base, mut size) = (0u64, 0usize);
    // SAFETY: both out-pointers are valid; the driver checks `ptr` itself and answers
    // CUDA_ERROR_NOT_FOUND for an address no allocation holds.
    let code = unsafe { function(&mut base, &mut size, ptr as u64) };
    if code != 0 {
        return Err(Error::Ort {
            function: "cuMemGetAddressRange",
            code: ErrorCode::EpFail,
            message: format!("CUDA driver error {code}"),
        });
    }
    let end = base.saturating_add(size as u64);
    Ok(end.saturating_sub(ptr as u64) as usize)
}
