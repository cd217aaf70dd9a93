//! The few CUDA runtime calls the crate needs (device count, copies between host and device),
//! loaded from `libcudart` at first use. ORT's C API 16 has no tensor copy between devices.
//!
//! Streams and ordering (docs/soundness.md §11): every call below that queues GPU work
//! names its stream and says how it is ordered with ORT's compute stream, which is a non-blocking
//! stream (it does not wait for the legacy default stream, nor that stream for it). The rule that
//! makes this simple: nothing the crate queues is left running when the function returns. Each
//! function waits for its own work before it returns, and ORT's `Run` has waited for its compute
//! stream before it returns (the run key that would skip that wait is refused), so the crate's
//! work and ORT's never overlap on memory a value hands out.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The libcudart versions tried, newest first (one ships with every CUDA build of ORT's deps).
const CANDIDATES: &[&str] = &["libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so"];

/// `cudaMemcpyDefault`: the direction is inferred from the pointers (unified addressing).
const MEMCPY_DEFAULT: c_int = 4;

struct CudaRuntime {
    memcpy: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int,
    device_count: unsafe extern "C" fn(*mut c_int) -> c_int,
    mem_get_info: unsafe extern "C" fn(*mut usize, *mut usize) -> c_int,
    synchronize: unsafe extern "C" fn() -> c_int,
    host_register: unsafe extern "C" fn(*mut c_void, usize, u32) -> c_int,
    host_unregister: unsafe extern "C" fn(*mut c_void) -> c_int,
    get_device: unsafe extern "C" fn(*mut c_int) -> c_int,
    set_device: unsafe extern "C" fn(c_int) -> c_int,
    malloc: unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int,
    free: unsafe extern "C" fn(*mut c_void) -> c_int,
    memset_async: unsafe extern "C" fn(*mut c_void, c_int, usize, *mut c_void) -> c_int,
    memcpy_async: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, *mut c_void) -> c_int,
    stream_create: unsafe extern "C" fn(*mut *mut c_void, u32) -> c_int,
    stream_synchronize: unsafe extern "C" fn(*mut c_void) -> c_int,
    stream_destroy: unsafe extern "C" fn(*mut c_void) -> c_int,
    error_string: unsafe extern "C" fn(c_int) -> *const c_char,
    ipc_get_handle: unsafe extern "C" fn(*mut RawIpcHandle, *mut c_void) -> c_int,
    ipc_open_handle: unsafe extern "C" fn(*mut *mut c_void, RawIpcHandle, u32) -> c_int,
    ipc_close_handle: unsafe extern "C" fn(*mut c_void) -> c_int,
}

/// `cudaIpcMemHandle_t`: 64 opaque bytes naming a device allocation to another process, passed
/// by value.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct RawIpcHandle {
    pub(crate) reserved: [u8; 64],
}

/// `cudaIpcMemLazyEnablePeerAccess`: the mapping may sit on a peer device of the allocation's.
const IPC_LAZY_ENABLE_PEER_ACCESS: u32 = 1;

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
                                    mem_get_info: *library.get(b"cudaMemGetInfo\0")?,
                                    synchronize: *library.get(b"cudaDeviceSynchronize\0")?,
                                    host_register: *library.get(b"cudaHostRegister\0")?,
                                    host_unregister: *library.get(b"cudaHostUnregister\0")?,
                                    get_device: *library.get(b"cudaGetDevice\0")?,
                                    set_device: *library.get(b"cudaSetDevice\0")?,
                                    malloc: *library.get(b"cudaMalloc\0")?,
                                    free: *library.get(b"cudaFree\0")?,
                                    memset_async: *library.get(b"cudaMemsetAsync\0")?,
                                    memcpy_async: *library.get(b"cudaMemcpyAsync\0")?,
                                    stream_create: *library.get(b"cudaStreamCreateWithFlags\0")?,
                                    stream_synchronize: *library.get(b"cudaStreamSynchronize\0")?,
                                    stream_destroy: *library.get(b"cudaStreamDestroy\0")?,
                                    error_string: *library.get(b"cudaGetErrorString\0")?,
                                    ipc_get_handle: *library.get(b"cudaIpcGetMemHandle\0")?,
                                    ipc_open_handle: *library.get(b"cudaIpcOpenMemHandle\0")?,
                                    ipc_close_handle: *library.get(b"cudaIpcCloseMemHandle\0")?,
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
            message: format!("CUDA runtime error {code}{}", error_name(code)),
        })
    }
}

/// `: ` and CUDA's own words for `code` (`cudaGetErrorString`), or nothing.
fn error_name(code: c_int) -> String {
    let Ok(runtime) = runtime() else { return String::new() };
    // SAFETY: plain integer argument; CUDA returns a static string ("unrecognized error code" for
    // codes it does not know), or null.
    let text = unsafe { (runtime.error_string)(code) };
    if text.is_null() {
        return String::new();
    }
    // SAFETY: non-null, NUL-terminated and static (CUDA's documented contract).
    format!(": {}", unsafe { CStr::from_ptr(text) }.to_string_lossy())
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

/// A CUDA device's memory, as the driver counts it for every process on the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceMemoryInfo {
    /// Bytes free.
    pub free: usize,
    /// Bytes the device has.
    pub total: usize,
}

impl DeviceMemoryInfo {
    /// Bytes in use (`total - free`): what a session, its weights and its graphs cost shows as
    /// the difference of two readings.
    pub fn used(&self) -> usize {
        self.total.saturating_sub(self.free)
    }
}

/// The free and total memory of CUDA device `device` (makes the device's CUDA context on this
/// thread if there is none yet).
///
/// Corresponds to `cudaMemGetInfo`.
///
/// # Errors
/// [`Error::ProviderLoad`] when libcudart cannot be loaded; [`Error::Ort`] for another CUDA
/// error (a device id it does not have).
#[doc(alias = "cudaMemGetInfo")]
pub fn device_memory(device: i32) -> Result<DeviceMemoryInfo> {
    on_device(device, |runtime| {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: both out-pointers are valid.
        check("cudaMemGetInfo", unsafe { (runtime.mem_get_info)(&mut free, &mut total) })?;
        Ok(DeviceMemoryInfo { free, total })
    })
}

/// Copies `bytes` between host and device memory (direction inferred), then waits for it.
///
/// Stream: the legacy default stream (`cudaMemcpy`), then `cudaDeviceSynchronize`, so the copy
/// and everything before it on the device are done when this returns. Ordering with ORT: a run
/// whose output is read here has finished its GPU work (above), and a run started after this
/// returns queues its work after a finished copy.
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
    /// Page-locks `bytes` bytes at `ptr`. No stream: registering queues no GPU work; unregistering
    /// (on drop) happens only after every copy from or to the memory was waited for (each copy
    /// function waits before it returns, and ORT's runs end with their GPU work done).
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

/// `cudaStreamNonBlocking`: work on the stream does not wait for the legacy default stream.
const STREAM_NON_BLOCKING: u32 = 1;

/// Runs `f` with `device` as the calling thread's current CUDA device, then restores the one
/// that was current (CUDA's allocations and streams belong to the current device).
fn on_device<T>(device: i32, f: impl FnOnce(&CudaRuntime) -> Result<T>) -> Result<T> {
    let runtime = runtime()?;
    let mut previous = 0;
    // SAFETY: the out-pointer is valid.
    check("cudaGetDevice", unsafe { (runtime.get_device)(&mut previous) })?;
    if previous != device {
        // SAFETY: plain integer argument; CUDA refuses ids it does not have.
        check("cudaSetDevice", unsafe { (runtime.set_device)(device) })?;
    }
    let result = f(runtime);
    if previous != device {
        // SAFETY: as above, with the id CUDA reported as current.
        let _ = unsafe { (runtime.set_device)(previous) };
    }
    result
}

/// `bytes` bytes of memory on CUDA device `device`, every byte zero, freed when dropped.
pub(crate) struct DeviceMemory {
    ptr: *mut c_void,
    bytes: usize,
}

impl DeviceMemory {
    /// Allocates and zeroes the memory, and returns once the zeroes are in place.
    ///
    /// Stream: the zeroing runs on a non-blocking stream made for it (`cudaMemsetAsync`), and
    /// that stream is waited for before the memory is handed out. Ordering: `cudaMemset` would
    /// queue the zeroing on the legacy default stream and return at once, and neither ORT's
    /// compute stream nor a [`CudaStream`](crate::CudaStream) waits for that stream, so a copy
    /// or a run queued right after could run first and be wiped by the late zeroing (or read the
    /// memory's previous owner's data). Waiting here leaves nothing to order.
    pub(crate) fn zeroed(device: i32, bytes: usize) -> Result<DeviceMemory> {
        on_device(device, |runtime| {
            let mut ptr = std::ptr::null_mut();
            // SAFETY: the out-pointer is valid; CUDA allocates at least one byte.
            check("cudaMalloc", unsafe { (runtime.malloc)(&mut ptr, bytes.max(1)) })?;
            let memory = DeviceMemory { ptr, bytes };
            let stream = RawStream::new(device)?;
            // SAFETY: `ptr` is a fresh device allocation of at least `bytes` bytes; the stream is live.
            let queued = check("cudaMemsetAsync", unsafe { (runtime.memset_async)(ptr, 0, bytes, stream.raw) });
            // Waited for even when queuing failed, so nothing of it outlives `memory` on error.
            // SAFETY: the stream is live.
            let waited = check("cudaStreamSynchronize", unsafe { (runtime.stream_synchronize)(stream.raw) });
            queued.and(waited)?;
            Ok(memory)
        })
    }

    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if let Ok(runtime) = runtime() {
            // SAFETY: allocated by cudaMalloc in `zeroed`, freed once. No stream: cudaFree
            // synchronizes the device first, so no queued work still uses it.
            let _ = unsafe { (runtime.free)(self.ptr) };
        }
    }
}

// SAFETY: the guard holds only a device address, valid from any host thread.
unsafe impl Send for DeviceMemory {}
// SAFETY: `&DeviceMemory` gives only the address; writes go through the owning value's `&mut`.
unsafe impl Sync for DeviceMemory {}

/// A non-blocking CUDA stream of device `device`, destroyed when dropped.
pub(crate) struct RawStream {
    raw: *mut c_void,
}

impl RawStream {
    pub(crate) fn new(device: i32) -> Result<RawStream> {
        on_device(device, |runtime| {
            let mut raw = std::ptr::null_mut();
            // SAFETY: the out-pointer is valid.
            check("cudaStreamCreateWithFlags", unsafe { (runtime.stream_create)(&mut raw, STREAM_NON_BLOCKING) })?;
            Ok(RawStream { raw })
        })
    }

    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.raw
    }

    /// Copies `bytes` bytes on this stream (direction inferred from the pointers), then waits for
    /// this stream only: other streams' work (another thread's ORT run) goes on meanwhile.
    ///
    /// Stream: this one (`cudaMemcpyAsync`, then `cudaStreamSynchronize`). Ordering with ORT: the
    /// copy is done when this returns, before any run the caller starts after it; a run whose
    /// buffers it reads or writes has finished its GPU work before returning (module docs).
    ///
    /// # Safety
    /// `dst` and `src` are valid for `bytes` bytes in their memory spaces, do not overlap, and
    /// nothing else writes `dst` or `src` until this returns.
    pub(crate) unsafe fn copy_and_wait(&self, dst: *mut c_void, src: *const c_void, bytes: usize) -> Result<()> {
        let runtime = runtime()?;
        // SAFETY: the caller's contract; the stream is live.
        let queued =
            check("cudaMemcpyAsync", unsafe { (runtime.memcpy_async)(dst, src, bytes, MEMCPY_DEFAULT, self.raw) });
        // Waited for even when queuing failed, so no copy outlives the borrow of its buffers.
        // SAFETY: the stream is live.
        let waited = check("cudaStreamSynchronize", unsafe { (runtime.stream_synchronize)(self.raw) });
        queued.and(waited)
    }
}

impl Drop for RawStream {
    fn drop(&mut self) {
        if let Ok(runtime) = runtime() {
            // SAFETY: created in `new`, destroyed once; queued work completes first (CUDA's rule).
            let _ = unsafe { (runtime.stream_destroy)(self.raw) };
        }
    }
}

// SAFETY: a CUDA stream may be used from any host thread.
unsafe impl Send for RawStream {}
// SAFETY: CUDA's stream calls are thread-safe.
unsafe impl Sync for RawStream {}

impl DeviceMemory {
    /// The handle another process maps this allocation with (`cudaIpcGetMemHandle`). No stream:
    /// it queues no GPU work.
    pub(crate) fn ipc_handle(&self) -> Result<RawIpcHandle> {
        let runtime = runtime()?;
        let mut handle = RawIpcHandle { reserved: [0; 64] };
        // SAFETY: the out-pointer is valid; `ptr` is a live cudaMalloc allocation of this process.
        check("cudaIpcGetMemHandle", unsafe { (runtime.ipc_get_handle)(&mut handle, self.ptr) })?;
        Ok(handle)
    }
}

/// Another process's device allocation, mapped into this one (`cudaIpcOpenMemHandle`), unmapped
/// when dropped (`cudaIpcCloseMemHandle`).
///
/// CUDA cannot tell from the handle how long the allocation is; [`IpcMapping::allocation_bytes`]
/// asks the driver once the mapping exists, so no copy through it can reach past the
/// allocation into memory of this process's own (a session's weights).
pub(crate) struct IpcMapping {
    ptr: *mut c_void,
    device: i32,
}

impl IpcMapping {
    /// Maps the allocation `handle` names on CUDA device `device`. CUDA refuses a handle this
    /// process exported itself, one whose allocation is freed, and bytes that name nothing.
    pub(crate) fn open(device: i32, handle: RawIpcHandle) -> Result<IpcMapping> {
        on_device(device, |runtime| {
            let mut ptr = std::ptr::null_mut();
            // SAFETY: the out-pointer is valid; the handle is plain bytes CUDA validates itself.
            let code = unsafe { (runtime.ipc_open_handle)(&mut ptr, handle, IPC_LAZY_ENABLE_PEER_ACCESS) };
            check("cudaIpcOpenMemHandle", code)?;
            Ok(IpcMapping { ptr, device })
        })
    }

    pub(crate) fn as_ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// How many bytes of the mapped allocation lie from the mapped address on.
    pub(crate) fn allocation_bytes(&self) -> Result<usize> {
        on_device(self.device, |_| crate::cuda_driver::bytes_from(self.ptr))
    }
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        let _ = on_device(self.device, |runtime| {
            // SAFETY: mapped in `open`, unmapped once. No stream: every copy through the mapping
            // was waited for before its function returned (module docs).
            let code = unsafe { (runtime.ipc_close_handle)(self.ptr) };
            check("cudaIpcCloseMemHandle", code)
        });
    }
}

// SAFETY: the guard holds only a device address, valid from any host thread of the process.
unsafe impl Send for IpcMapping {}
// SAFETY: `&IpcMapping` gives only the address and the device id.
unsafe impl Sync for IpcMapping {}

/// Runs `f` with `device` current (see [`on_device`]), for the crate's other CUDA modules.
pub(crate) fn with_device<T>(device: i32, f: impl FnOnce() -> Result<T>) -> Result<T> {
    on_device(device, |_| f())
}
