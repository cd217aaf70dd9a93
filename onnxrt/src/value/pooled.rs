//! Tensors over host buffers of ours, which a session's output pool lends to ORT as preallocated
//! outputs and takes back when the value that owns one is dropped. The policy (which outputs,
//! when, how many kept) is the session's (session/output_pool.rs); this is the buffer side.

use std::alloc::Layout;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

use onnxrt_sys::OrtValue;

use super::{TensorMeta, Value};
use crate::api::api;
use crate::error::Result;
use crate::handle::Owned;
use crate::status::ort;

/// Where a pooled tensor goes back when the value made from it is dropped.
pub(crate) trait Home: Send + Sync {
    /// Takes the tensor back for a later run (or frees it).
    fn give_back(&self, tensor: PooledTensor);
}

/// A tensor over a buffer of ours. Field order: the value is released before its buffer.
pub(crate) struct PooledTensor {
    raw: Owned<OrtValue>,
    buffer: HostBuffer,
}

/// What a value made from a pooled tensor needs to give it back when dropped.
pub(crate) struct Recycle {
    home: Arc<dyn Home>,
    buffer: HostBuffer,
}

impl Recycle {
    /// The start of the buffer ORT wrote the output into.
    pub(crate) fn data(&self) -> *mut c_void {
        self.buffer.ptr.as_ptr().cast()
    }

    /// Puts the tensor back for a later run (or frees it when enough are kept).
    pub(crate) fn give_back(self, raw: Owned<OrtValue>) {
        self.home.give_back(PooledTensor { raw, buffer: self.buffer });
    }
}

/// Zeroed host memory, 64-byte aligned (enough for every element type and for MLAS's vectors).
struct HostBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl HostBuffer {
    fn zeroed(bytes: usize) -> Option<HostBuffer> {
        let layout = Layout::from_size_align(bytes.max(1), 64).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
        Some(HostBuffer { ptr, layout })
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

// SAFETY: the buffer is plain memory owned by this struct; nothing ties it to a thread.
unsafe impl Send for HostBuffer {}
// SAFETY: `&HostBuffer` only exposes the address.
unsafe impl Sync for HostBuffer {}
// SAFETY: an OrtValue has no thread affinity (see `Value`); its buffer is Send.
unsafe impl Send for PooledTensor {}

impl PooledTensor {
    /// A new tensor of `meta`'s type and shape, `bytes` long (`None` if the memory cannot be had).
    pub(crate) fn zeroed(bytes: usize, meta: &TensorMeta) -> Result<Option<PooledTensor>> {
        let Some(buffer) = HostBuffer::zeroed(bytes) else { return Ok(None) };
        // SAFETY: the buffer holds `bytes` bytes = the shape's elements of the element type, and
        // lives in the same `PooledTensor` as the value, which releases the value first.
        let raw = unsafe { super::tensor_over(buffer.ptr.as_ptr().cast(), bytes, &meta.shape, meta.element_type) }?;
        Ok(Some(PooledTensor { raw, buffer }))
    }

    /// Sets every byte of the buffer to 0 (before it is lent to another run).
    pub(crate) fn zero(&mut self) {
        // SAFETY: the buffer holds `layout.size()` bytes owned by this tensor; `&mut self` means no
        // run holds it (a tensor is lent by value and comes back only when its value is dropped).
        unsafe { std::ptr::write_bytes(self.buffer.ptr.as_ptr(), 0, self.buffer.layout.size()) }
    }

    /// The value to hand ORT as a preallocated output.
    pub(crate) fn as_ptr(&self) -> *mut OrtValue {
        self.raw.as_ptr()
    }

    /// The output value after a run: of type and shape `meta`, given back to `home` when dropped,
    /// when ORT wrote into our buffer; otherwise whatever ORT put into the value (read from ORT
    /// like any output). The flag says which.
    pub(crate) fn into_value(self, home: Arc<dyn Home>, meta: TensorMeta) -> Result<(Value<'static>, bool)> {
        let api = api()?;
        let mut data: *mut c_void = std::ptr::null_mut();
        // SAFETY: `raw` is a live tensor value; the out-pointer is valid.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        let PooledTensor { raw, buffer } = self;
        if data == buffer.ptr.as_ptr().cast::<c_void>() {
            Ok((Value::pooled(raw, Recycle { home, buffer }, meta), true))
        } else {
            // ORT replaced our tensor by one of its own; keep the buffer alive with the value all
            // the same (freed after it), in case anything still points there.
            Ok((Value::with_backing(raw, Box::new(buffer)), false))
        }
    }
}

impl Value<'static> {
    /// A run's output that ORT wrote into a preallocated buffer of known type and shape.
    pub(crate) fn pooled(raw: Owned<OrtValue>, recycle: Recycle, tensor: TensorMeta) -> Value<'static> {
        let mut value = Value::new(raw, None, Some(tensor));
        value.recycle = Some(recycle);
        value
    }
}
