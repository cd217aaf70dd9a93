//! Where tensor memory lives: [`MemoryInfo`] (CPU, CUDA, CUDA-pinned) and ORT's default allocator.

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use onnxrt_sys::{OrtAllocator, OrtMemoryInfo};

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;

/// Which device a [`MemoryInfo`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    /// Host memory.
    Cpu,
    /// Memory of one CUDA device.
    Cuda(i32),
    /// Page-locked host memory registered with CUDA (fast host↔device copies).
    CudaPinned,
}

/// A description of a memory location, used to create tensors and to bind IoBinding outputs.
#[derive(Debug)]
pub struct MemoryInfo {
    raw: Owned<OrtMemoryInfo>,
    device: Device,
}

// SAFETY: an OrtMemoryInfo is an immutable description (name, id, memory type) once created;
// ORT reads it from any thread and never mutates it.
unsafe impl Send for MemoryInfo {}
// SAFETY: as above; &MemoryInfo only hands the pointer to ORT functions that read it.
unsafe impl Sync for MemoryInfo {}

impl MemoryInfo {
    /// Host memory, ORT's arena allocator.
    ///
    /// Corresponds to `OrtApi::CreateCpuMemoryInfo`.
    #[doc(alias = "CreateCpuMemoryInfo")]
    pub fn cpu() -> Result<MemoryInfo> {
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: valid enum values and an out-pointer that lives across the call.
        unsafe {
            ort!(api, CreateCpuMemoryInfo(onnxrt_sys::OrtArenaAllocator, onnxrt_sys::OrtMemTypeDefault, &mut raw))
        }?;
        // SAFETY: on success `raw` is a new memory info that we now own.
        Ok(MemoryInfo { raw: unsafe { Owned::from_raw(raw) }?, device: Device::Cpu })
    }

    /// Memory of CUDA device `device_id`.
    ///
    /// Corresponds to `OrtApi::CreateMemoryInfo` with the name `Cuda`.
    #[doc(alias = "CreateMemoryInfo")]
    pub fn cuda(device_id: i32) -> Result<MemoryInfo> {
        MemoryInfo::named("Cuda", device_id, onnxrt_sys::OrtMemTypeDefault, Device::Cuda(device_id))
    }

    /// Page-locked host memory for CUDA transfers.
    ///
    /// Corresponds to `OrtApi::CreateMemoryInfo` with the name `CudaPinned`.
    #[doc(alias = "CreateMemoryInfo")]
    pub fn cuda_pinned() -> Result<MemoryInfo> {
        MemoryInfo::named("CudaPinned", 0, onnxrt_sys::OrtMemTypeCPUOutput, Device::CudaPinned)
    }

    fn named(name: &str, id: i32, mem_type: onnxrt_sys::OrtMemType, device: Device) -> Result<MemoryInfo> {
        if id < 0 {
            return Err(Error::NoSuchDevice { device: format!("{name} memory"), id, count: None });
        }
        let api = api()?;
        let name = CString::new(name).map_err(|_| Error::nul("memory name", name))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call; the out-pointer is valid.
        unsafe { ort!(api, CreateMemoryInfo(name.as_ptr(), onnxrt_sys::OrtArenaAllocator, id, mem_type, &mut raw)) }?;
        // SAFETY: on success `raw` is a new memory info that we now own.
        Ok(MemoryInfo { raw: unsafe { Owned::from_raw(raw) }?, device })
    }

    /// The device this describes.
    pub fn device(&self) -> Device {
        self.device
    }

    pub(crate) fn as_ptr(&self) -> *const OrtMemoryInfo {
        self.raw.as_ptr()
    }
}

/// A shared CPU memory info for tensors made from Rust memory (created once).
pub(crate) fn cpu_info() -> Result<&'static MemoryInfo> {
    static CPU: OnceLock<std::result::Result<MemoryInfo, Error>> = OnceLock::new();
    CPU.get_or_init(MemoryInfo::cpu).as_ref().map_err(Clone::clone)
}

/// ORT's default CPU allocator. It is owned by ORT and must never be released.
pub(crate) fn default_allocator() -> Result<*mut OrtAllocator> {
    let api = api()?;
    let mut allocator = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid; the allocator returned is a static owned by ORT.
    unsafe { ort!(api, GetAllocatorWithDefaultOptions(&mut allocator)) }?;
    Ok(allocator)
}

/// Frees memory that ORT allocated with the default allocator (names, profiling paths).
///
/// # Safety
/// `ptr` was allocated by `allocator` and is not used afterwards.
pub(crate) unsafe fn free(allocator: *mut OrtAllocator, ptr: *mut std::ffi::c_void) {
    if let Ok(api) = api() {
        // SAFETY: the caller's contract.
        let _ = unsafe { ort!(api, AllocatorFree(allocator, ptr)) };
    }
}

/// Copies a string ORT allocated with `allocator`, then frees it.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string allocated by `allocator`, not used afterwards.
pub(crate) unsafe fn take_string(allocator: *mut OrtAllocator, ptr: *mut std::ffi::c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract: a live NUL-terminated string.
    let text = unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned();
    // SAFETY: allocated by `allocator`, freed once.
    unsafe { free(allocator, ptr.cast()) };
    text
}
