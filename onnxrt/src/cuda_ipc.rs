//! Device memory shared between processes through CUDA IPC: one process allocates
//! ([`SharedDeviceMemory`]) and hands its [`CudaIpcHandle`] to another, which maps the same
//! memory ([`MappedDeviceMemory`]). This is what Triton's CUDA shared-memory extension sends:
//! a client keeps tensors on the GPU and a server reads and writes them there.
//!
//! Both types move bytes only by copies between host slices and the device memory, bounded by
//! the memory's length; no Rust reference into device memory ever exists. Another process may
//! write the memory while a copy runs: that changes the bytes copied, never this process's own
//! memory. A mapping is bounded by the length the driver reports for the allocation behind the
//! handle, so a region registered longer than its allocation is refused rather than read past.
//!
//! Streams and ordering: each copy runs on the memory's own non-blocking stream and is waited
//! for before the call returns (the rule of `cuda_runtime`), so nothing is left queued when a
//! value is dropped or the memory is unmapped.

use std::collections::HashMap;
use std::ffi::c_void;
use std::fmt;
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use crate::cuda_runtime::{with_device, DeviceMemory, IpcMapping, RawIpcHandle, RawStream};
use crate::error::{Error, Result};

/// A mapping's key: the device it is mapped on and the handle's bytes.
type MappingKey = (i32, [u8; CudaIpcHandle::LEN]);

/// A live mapping and how many [`MappedDeviceMemory`] values use it.
struct LiveMapping {
    mapping: IpcMapping,
    users: usize,
}

/// Every live mapping of this process, by mapped address, and the handles that led to each.
#[derive(Default)]
struct LiveMappings {
    by_address: HashMap<usize, LiveMapping>,
    by_handle: HashMap<MappingKey, usize>,
}

/// The live mappings. Every open of one allocation shares one mapping, unmapped when its last
/// user is dropped, under this lock: CUDA may hand the same address to a second open (of the
/// same handle, or of another handle of the same allocation), so closing one user's mapping
/// must never unmap another's, nor race with an open of the same memory.
fn live_mappings() -> MutexGuard<'static, LiveMappings> {
    static LIVE: OnceLock<Mutex<LiveMappings>> = OnceLock::new();
    LIVE.get_or_init(Mutex::default).lock().unwrap_or_else(PoisonError::into_inner)
}

impl LiveMappings {
    /// One more use of the mapping of `key`, mapped now if it is not yet: its address and the
    /// allocation's length from there.
    fn acquire(&mut self, key: MappingKey) -> Result<(usize, Result<usize>)> {
        let address = match self.by_handle.get(&key) {
            Some(&address) => address,
            None => {
                let mapping = IpcMapping::open(key.0, RawIpcHandle { reserved: key.1 })?;
                let address = mapping.as_ptr() as usize;
                match self.by_address.get(&address) {
                    // Already mapped through another handle: keep the one mapping. The second
                    // open stays open until the process ends (CUDA may count opens; closing it
                    // could unmap the first).
                    Some(_) => std::mem::forget(mapping),
                    None => drop(self.by_address.insert(address, LiveMapping { mapping, users: 0 })),
                }
                self.by_handle.insert(key, address);
                address
            }
        };
        let Some(live) = self.by_address.get_mut(&address) else {
            // Unreachable: `by_handle` names only live addresses (`release` removes both).
            return Err(Error::InvalidArgument { what: "a CUDA IPC mapping".into(), why: "lost its address".into() });
        };
        live.users += 1;
        Ok((address, live.mapping.allocation_bytes()))
    }

    /// One use fewer of the mapping at `address`; unmapped when none is left.
    fn release(&mut self, address: usize) {
        let Some(live) = self.by_address.get_mut(&address) else { return };
        live.users -= 1;
        if live.users == 0 {
            self.by_handle.retain(|_, &mut at| at != address);
            // Unmapped here, under the lock; every copy through it was waited for already.
            self.by_address.remove(&address);
        }
    }
}

/// The 64 bytes (`cudaIpcMemHandle_t`) that name a device allocation to another process on the
/// same machine. They are not secret from the CUDA driver's view, but whoever holds them can
/// read and write the allocation: send them only to a process you trust with it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CudaIpcHandle {
    bytes: [u8; CudaIpcHandle::LEN],
}

impl CudaIpcHandle {
    /// A handle's length in bytes.
    pub const LEN: usize = 64;

    /// The handle in `bytes`, as [`CudaIpcHandle::as_bytes`] gave them (Triton clients send
    /// them base64-encoded as `raw_handle`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `bytes` is exactly [`CudaIpcHandle::LEN`] long.
    pub fn from_bytes(bytes: &[u8]) -> Result<CudaIpcHandle> {
        let bytes = <[u8; CudaIpcHandle::LEN]>::try_from(bytes).map_err(|_| Error::InvalidArgument {
            what: format!("a CUDA IPC handle of {} bytes", bytes.len()),
            why: format!("cudaIpcMemHandle_t is {} bytes", CudaIpcHandle::LEN),
        })?;
        Ok(CudaIpcHandle { bytes })
    }

    /// The handle's bytes.
    pub fn as_bytes(&self) -> &[u8; CudaIpcHandle::LEN] {
        &self.bytes
    }
}

impl fmt::Debug for CudaIpcHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The bytes give access to the memory: shown only by length, never in logs.
        write!(f, "CudaIpcHandle({} bytes)", CudaIpcHandle::LEN)
    }
}

/// Device memory of this process that other processes can map: `len` bytes on one CUDA device,
/// zeroed when made, freed when dropped.
///
/// Freeing it while another process still has it mapped is CUDA's business: the driver keeps
/// the memory until the last mapping closes, or fails the other process's copies; it never
/// touches this process's host memory.
pub struct SharedDeviceMemory {
    // Declared first, dropped first: no copy through `bytes` outlives `memory`.
    bytes: DeviceBytes,
    memory: DeviceMemory,
}

impl SharedDeviceMemory {
    /// Allocates `len` zeroed bytes on CUDA device `device`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for `len` 0; [`Error::ProviderLoad`] without libcudart;
    /// [`Error::Ort`] for CUDA's errors (no such device, out of memory).
    pub fn new(device: i32, len: usize) -> Result<SharedDeviceMemory> {
        if len == 0 {
            return Err(Error::InvalidArgument {
                what: "SharedDeviceMemory of 0 bytes".into(),
                why: "CUDA IPC shares whole allocations; ask for at least one byte".into(),
            });
        }
        let memory = DeviceMemory::zeroed(device, len)?;
        let stream = RawStream::new(device)?;
        // SAFETY: `memory` is `len` bytes of device `device`, freed only after `bytes` is dropped
        // (field order).
        let bytes = unsafe { DeviceBytes::new(memory.as_ptr(), len, device, stream) };
        Ok(SharedDeviceMemory { bytes, memory })
    }

    /// The handle another process maps this memory with ([`MappedDeviceMemory::open`]).
    ///
    /// # Errors
    /// [`Error::Ort`] where CUDA cannot export it (a device or driver without IPC).
    pub fn ipc_handle(&self) -> Result<CudaIpcHandle> {
        Ok(CudaIpcHandle { bytes: self.memory.ipc_handle()?.reserved })
    }

    /// The memory's length in bytes.
    pub fn len(&self) -> usize {
        self.memory.len()
    }

    /// Never true: the memory is at least one byte long.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The CUDA device it lies on.
    pub fn device(&self) -> i32 {
        self.bytes.device
    }

    /// Copies `bytes` into the memory at `offset`, and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] where `offset + bytes.len()` passes the end; [`Error::Ort`] for CUDA's errors.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<()> {
        self.bytes.write(offset, bytes)
    }

    /// Fills `into` from the memory at `offset`, and waits for the copy.
    ///
    /// # Errors
    /// As [`SharedDeviceMemory::write`].
    pub fn read(&self, offset: usize, into: &mut [u8]) -> Result<()> {
        self.bytes.read(offset, into)
    }
}

impl fmt::Debug for SharedDeviceMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedDeviceMemory").field("device", &self.device()).field("len", &self.len()).finish()
    }
}

/// Another process's device memory, mapped into this one from its [`CudaIpcHandle`]: the first
/// `len` bytes of that allocation, unmapped when dropped.
///
/// CUDA checks a handle only so far: seen on an H100 (2026-12-07), a handle with one byte
/// changed can name another allocation of the exporting process, and after mapping and reading
/// 130 such handles a process's CUDA context was left in a sticky error (719), failing every
/// later CUDA call of the process. A handle of memory the owner freed and allocated again maps
/// the new memory. Map handles only from processes you trust, and have owners keep memory
/// until it is unmapped.
pub struct MappedDeviceMemory {
    // Declared first, dropped first: no copy through `bytes` outlives this use of the mapping.
    bytes: DeviceBytes,
    _use: MappingUse,
}

/// One use of a live mapping (see [`live_mappings`]), released when dropped.
struct MappingUse {
    address: usize,
}

impl Drop for MappingUse {
    fn drop(&mut self) {
        live_mappings().release(self.address);
    }
}

impl MappedDeviceMemory {
    /// Maps the first `len` bytes of the allocation `handle` names, on CUDA device `device`.
    ///
    /// # Errors
    /// - [`Error::InvalidArgument`] for `len` 0, or a `len` longer than the allocation (the
    ///   driver says how long it is);
    /// - [`Error::Ort`] for CUDA's refusals: a handle this process exported itself (CUDA maps
    ///   only another process's memory), one whose memory was freed, bytes that name nothing,
    ///   a device id CUDA does not have;
    /// - [`Error::ProviderLoad`] without libcudart or the driver's libcuda.so.1.
    pub fn open(handle: &CudaIpcHandle, device: i32, len: usize) -> Result<MappedDeviceMemory> {
        if len == 0 {
            return Err(Error::InvalidArgument {
                what: "a CUDA IPC mapping of 0 bytes".into(),
                why: "give the length of the region to map (at least one byte)".into(),
            });
        }
        let stream = RawStream::new(device)?;
        let (address, available) = live_mappings().acquire((device, handle.bytes))?;
        // From here on, dropping `mapping_use` releases this use of the mapping.
        let mapping_use = MappingUse { address };
        let available = available?;
        if len > available {
            return Err(Error::InvalidArgument {
                what: format!("a CUDA IPC mapping of {len} bytes"),
                why: format!("the allocation behind the handle holds {available} bytes"),
            });
        }
        // SAFETY: `address` is mapped device memory of device `device` whose allocation holds at
        // least `len` bytes from there (the driver's length, checked above); the mapping stays
        // while `mapping_use` lives, and it outlives `bytes` (field order).
        let bytes = unsafe { DeviceBytes::new(address as *mut c_void, len, device, stream) };
        Ok(MappedDeviceMemory { bytes, _use: mapping_use })
    }

    /// The mapped length in bytes (as asked for in [`MappedDeviceMemory::open`]).
    pub fn len(&self) -> usize {
        self.bytes.len
    }

    /// Never true: a mapping is at least one byte long.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The CUDA device it was mapped on.
    pub fn device(&self) -> i32 {
        self.bytes.device
    }

    /// Copies `bytes` into the memory at `offset`, and waits for the copy.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] where `offset + bytes.len()` passes [`MappedDeviceMemory::len`];
    /// [`Error::Ort`] for CUDA's errors.
    pub fn write(&self, offset: usize, bytes: &[u8]) -> Result<()> {
        self.bytes.write(offset, bytes)
    }

    /// Fills `into` from the memory at `offset`, and waits for the copy.
    ///
    /// # Errors
    /// As [`MappedDeviceMemory::write`].
    pub fn read(&self, offset: usize, into: &mut [u8]) -> Result<()> {
        self.bytes.read(offset, into)
    }
}

// SAFETY: the value holds a device address and a stream; copies through it may run from any host
// thread (CUDA's calls are thread-safe), and the mapping stays until the value is dropped.
unsafe impl Send for DeviceBytes {}
// SAFETY: `&DeviceBytes` only copies to and from host slices the caller owns; the device bytes are
// never borrowed as Rust memory.
unsafe impl Sync for DeviceBytes {}

impl fmt::Debug for MappedDeviceMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedDeviceMemory").field("device", &self.device()).field("len", &self.len()).finish()
    }
}

/// `len` bytes of device memory and the stream that copies to and from them: the one place
/// both types copy through, every copy bounded by `len` and waited for.
struct DeviceBytes {
    base: *mut c_void,
    len: usize,
    device: i32,
    stream: RawStream,
}

impl DeviceBytes {
    /// # Safety
    /// `base` is device memory of device `device`, valid for `len` bytes for as long as the
    /// value lives.
    unsafe fn new(base: *mut c_void, len: usize, device: i32, stream: RawStream) -> DeviceBytes {
        DeviceBytes { base, len, device, stream }
    }

    fn write(&self, offset: usize, bytes: &[u8]) -> Result<()> {
        let at = checked_at(self.base, self.len, offset, bytes.len())?;
        with_device(self.device, || {
            // SAFETY: `at` is device memory valid for `bytes.len()` bytes (checked above against
            // `len`, valid by `new`'s contract); `bytes` is a live host slice; copy_and_wait
            // returns only once the copy is done.
            unsafe { self.stream.copy_and_wait(at, bytes.as_ptr().cast(), bytes.len()) }
        })
    }

    fn read(&self, offset: usize, into: &mut [u8]) -> Result<()> {
        let at = checked_at(self.base, self.len, offset, into.len())?;
        with_device(self.device, || {
            // SAFETY: as in `write`, with `into` borrowed exclusively for the copy.
            unsafe { self.stream.copy_and_wait(into.as_mut_ptr().cast(), at, into.len()) }
        })
    }
}

/// The device address `offset` bytes into memory at `base` of `len` bytes, once `count` bytes
/// from there are checked to lie within it.
fn checked_at(base: *mut c_void, len: usize, offset: usize, count: usize) -> Result<*mut c_void> {
    match offset.checked_add(count) {
        Some(end) if end <= len => Ok(base.wrapping_byte_add(offset)),
        _ => Err(Error::InvalidArgument {
            what: format!("a copy of {count} bytes at offset {offset}"),
            why: format!("the device memory is {len} bytes long"),
        }),
    }
}
