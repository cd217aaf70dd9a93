//! A CUDA shared-memory region: a client's device allocation, named by its CUDA IPC handle and
//! mapped into the server ([`onnxrt::providers::cuda::MappedDeviceMemory`]).
//!
//! Tensors move by copies between the mapping and host memory (one in, one out, as for system
//! regions); every copy is bounded by the region, and the region by the allocation's length as
//! the driver reports it, so a region registered longer than its memory is refused.

use onnxrt::providers::cuda::{CudaIpcHandle, MappedDeviceMemory};

/// Whether this process can use CUDA: libcudart loads and sees a device (asked once).
pub(super) fn usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| onnxrt::providers::cuda::device_count().is_ok_and(|n| n > 0))
}

/// A registered CUDA region: the mapping and the device it lies on.
pub(super) struct CudaRegion {
    pub(super) device_id: i64,
    memory: MappedDeviceMemory,
}

impl std::fmt::Debug for CudaRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaRegion").field("device_id", &self.device_id).field("len", &self.memory.len()).finish()
    }
}

impl CudaRegion {
    /// Maps the first `byte_size` bytes of the allocation `raw_handle` names, on device
    /// `device_id`; the error says why not, for the region's owner.
    pub(super) fn open(raw_handle: &[u8], device_id: i64, byte_size: u64) -> Result<CudaRegion, String> {
        let handle = CudaIpcHandle::from_bytes(raw_handle).map_err(|_| {
            format!(
                "raw_handle is {} bytes; a CUDA IPC handle (cudaIpcGetMemHandle's) is {}",
                raw_handle.len(),
                CudaIpcHandle::LEN
            )
        })?;
        let device = i32::try_from(device_id).map_err(|_| format!("device_id {device_id} is no CUDA device id"))?;
        let count = onnxrt::providers::cuda::device_count().map_err(|e| match e {
            onnxrt::Error::ProviderLoad { cause, fix, .. } => {
                format!("this server cannot load the CUDA runtime (libcudart): {cause}\nFix: {fix}")
            }
            other => format!("this server cannot use CUDA: {other}"),
        })?;
        if device < 0 || device >= count {
            return Err(format!("device_id {device_id}: this server sees {count} CUDA device(s)"));
        }
        let len = usize::try_from(byte_size).map_err(|_| format!("byte_size {byte_size} is too large"))?;
        let memory = MappedDeviceMemory::open(&handle, device, len).map_err(|e| {
            format!("cannot map the handle on device {device_id}: {e} (the handle must come from cudaIpcGetMemHandle in another process, for memory still allocated)")
        })?;
        Ok(CudaRegion { device_id, memory })
    }

    /// Fills `into` from `at` bytes into the region.
    pub(super) fn read(&self, at: u64, into: &mut [u8]) -> Result<(), String> {
        let at = usize::try_from(at).map_err(|_| "offset too large".to_owned())?;
        self.memory.read(at, into).map_err(|e| e.to_string())
    }

    /// Writes `bytes` at `at` bytes into the region.
    pub(super) fn write(&self, at: u64, bytes: &[u8]) -> Result<(), String> {
        let at = usize::try_from(at).map_err(|_| "offset too large".to_owned())?;
        self.memory.write(at, bytes).map_err(|e| e.to_string())
    }
}
