//! [`Allocator`]: a session's allocator for one memory location, to make tensors there (e.g. input
//! tensors that live on the GPU, for IoBinding and CUDA graphs).

use std::marker::PhantomData;

use onnxrt_sys::OrtAllocator;

use crate::api::api;
use crate::element::Element;
use crate::error::Result;
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
        element_count(shape)?;
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the allocator is live and outlives the value (the value borrows it); the shape
        // slice is live for the call.
        unsafe {
            ort!(
                api,
                CreateTensorAsOrtValue(self.raw.as_ptr(), shape.as_ptr(), shape.len(), T::TYPE.to_raw(), &mut raw)
            )
        }?;
        // SAFETY: on success we own the value.
        let mut value = Value::from_owned(unsafe { Owned::from_raw(raw) }?);
        value.zero_if_host()?;
        Ok(value)
    }
}
