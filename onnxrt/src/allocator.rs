//! [`Allocator`]: a session's allocator for one memory location, to make tensors there (e.g. input
//! tensors that live on the GPU, for IoBinding and CUDA graphs); [`SharedAllocator`]: the
//! environment's allocator for a memory location, shared by every session (C API 23).

use std::marker::PhantomData;
use std::ptr::NonNull;

use onnxrt_sys::OrtAllocator;

use crate::api::api;
use crate::element::Element;
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::memory::MemoryInfo;
use crate::session::Session;
use crate::status::ort;
use crate::value::{element_count, Value};

/// An allocator of a session for one memory location. Tensors it makes borrow it.
pub struct Allocator<'s> {
    pub(crate) raw: Owned<OrtAllocator>,
    _session: PhantomData<&'s Session>,
}

impl std::fmt::Debug for Allocator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Allocator")
    }
}

impl Session {
    /// The session's allocator for `memory` (the session must use a provider for that device).
    ///
    /// Corresponds to `OrtApi::CreateAllocator`.
    #[doc(alias = "CreateAllocator")]
    pub fn allocator(&self, memory: &MemoryInfo) -> Result<Allocator<'_>> {
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: session and memory info are live; we own the allocator returned.
        unsafe { ort!(api, CreateAllocator(self.as_ptr(), memory.as_ptr(), &mut raw)) }?;
        // SAFETY: on success we own the allocator.
        Ok(Allocator { raw: unsafe { Owned::from_raw(raw) }?, _session: PhantomData })
    }
}

impl Allocator<'_> {
    /// A tensor of `shape` in this allocator's memory. Host memory (CPU, CUDA pinned) is
    /// zero-filled, so reading it before writing is defined; device memory is left as the
    /// allocator returns it (the host cannot read it through this crate: `view` refuses it).
    ///
    /// Corresponds to `OrtApi::CreateTensorAsOrtValue`.
    #[doc(alias = "CreateTensorAsOrtValue")]
    pub fn tensor<T: Element>(&self, shape: &[i64]) -> Result<Value<'_>> {
        // SAFETY: the allocator is live and outlives the value (the value borrows `self`).
        unsafe { tensor_in::<T>(self.raw.as_ptr(), shape) }
    }
}

/// A tensor of `shape` made by `allocator`.
///
/// # Safety
/// `allocator` is live for as long as the returned value (the caller ties the lifetimes).
unsafe fn tensor_in<'a, T: Element>(allocator: *mut OrtAllocator, shape: &[i64]) -> Result<Value<'a>> {
    element_count(shape)?;
    let api = api()?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the allocator is live (caller's contract); the shape slice is live for the call.
    let created = unsafe {
        ort!(api, CreateTensorAsOrtValue(allocator, shape.as_ptr(), shape.len(), T::TYPE.to_raw(), &mut raw))
    };
    if let Err(Error::OutOfMemory { function, message, .. }) = created {
        // The memory is known here: say so, for advice about the right memory.
        // SAFETY: the allocator is live (caller's contract).
        let host = unsafe { is_host(api, allocator) };
        return Err(Error::OutOfMemory { function, message, host });
    }
    created?;
    // SAFETY: on success we own the value.
    let mut value = Value::from_owned(unsafe { Owned::from_raw(raw) }?);
    value.zero_if_host()?;
    Ok(value)
}

/// Whether `allocator` hands out host memory (the CPU's, or CUDA pinned); `false` where unknown.
///
/// # Safety
/// `allocator` is live.
unsafe fn is_host(api: &crate::api::Api, allocator: *mut OrtAllocator) -> bool {
    let mut info = std::ptr::null();
    // SAFETY: the allocator is live (caller's contract); the info it returns is its own.
    if unsafe { ort!(api, AllocatorGetInfo(allocator, &mut info)) }.is_err() || info.is_null() {
        return false;
    }
    let mut name = std::ptr::null();
    // SAFETY: `info` is valid while the allocator lives; the name is a static string in ORT.
    if unsafe { ort!(api, MemoryInfoGetName(info, &mut name)) }.is_err() || name.is_null() {
        return false;
    }
    // SAFETY: a NUL-terminated static string.
    matches!(unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes(), b"Cpu" | b"CudaPinned")
}

/// The environment's allocator for one memory location (C API 23): ORT creates one per device
/// that a registered provider offers, and sessions built with `session.use_env_allocators=1` use
/// it instead of their own, so tensors made here and the sessions' own buffers share one pool.
/// ORT owns it; it lives as long as the environment (which this crate never releases), and this
/// crate offers no call that replaces or releases it (`CreateSharedAllocator`,
/// `ReleaseSharedAllocator`). Tensors it makes borrow it.
pub struct SharedAllocator<'e> {
    raw: NonNull<OrtAllocator>,
    _env: PhantomData<&'e Environment>,
}

impl std::fmt::Debug for SharedAllocator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedAllocator")
    }
}

impl Environment {
    /// The environment's shared allocator for `memory`, if it has one (the CPU's always, on
    /// ONNX Runtime 1.23 or newer).
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`](crate::Error::NeedsNewerRuntime) before ONNX Runtime 1.23;
    /// ORT's errors.
    ///
    /// Corresponds to `OrtApi::GetSharedAllocator`.
    #[doc(alias = "GetSharedAllocator")]
    pub fn shared_allocator(&self, memory: &MemoryInfo) -> Result<Option<SharedAllocator<'_>>> {
        let api = api()?;
        api.needs(23, "Environment::shared_allocator (GetSharedAllocator)")?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the environment and the memory info are live for the call; ORT hands back an
        // allocator it owns, or null when it has none for that memory.
        unsafe { ort!(api, GetSharedAllocator(self.as_ptr(), memory.as_ptr(), &mut raw)) }?;
        Ok(NonNull::new(raw).map(|raw| SharedAllocator { raw, _env: PhantomData }))
    }
}

impl SharedAllocator<'_> {
    /// A tensor of `shape` in this allocator's memory, as [`Allocator::tensor`] (host memory is
    /// zero-filled).
    ///
    /// Corresponds to `OrtApi::CreateTensorAsOrtValue`.
    #[doc(alias = "CreateTensorAsOrtValue")]
    pub fn tensor<T: Element>(&self, shape: &[i64]) -> Result<Value<'_>> {
        // SAFETY: the environment owns the allocator and never releases it while it lives (this
        // crate has no call that releases or replaces it); the value borrows `self`.
        unsafe { tensor_in::<T>(self.raw.as_ptr(), shape) }
    }
}
