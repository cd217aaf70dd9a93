//! Raw bytes of numeric host tensors, for code that moves rows between tensors without knowing
//! their element type (the batcher gathers requests into a batch and hands rows back), and
//! zeroing a freshly allocated host tensor.

use std::sync::Arc;

use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::value::{element_count, tensor_over, Shape, TensorMeta, Value};

impl Value<'_> {
    /// The data of a numeric tensor the CPU can read, as bytes.
    ///
    /// # Errors
    /// [`Error::ValueKind`] for non-tensors, [`Error::InvalidArgument`] for string tensors,
    /// [`Error::NotHostMemory`] for device memory.
    pub(crate) fn host_bytes(&self) -> Result<&[u8]> {
        let (data, bytes) = self.numeric_host_data()?;
        // SAFETY: ORT guarantees the buffer holds `bytes` bytes (element count × element size of a
        // fixed-size type) for as long as the value lives, which `&self` borrows.
        Ok(unsafe { std::slice::from_raw_parts(data.cast_const(), bytes) })
    }

    /// As [`host_bytes`](Value::host_bytes), writable; refused for values over borrowed memory.
    pub(crate) fn host_bytes_mut(&mut self) -> Result<&mut [u8]> {
        if !self.writable {
            return Err(Error::ReadOnlyValue { operation: "writing the tensor's bytes".into() });
        }
        let (data, bytes) = self.numeric_host_data()?;
        // SAFETY: as in `host_bytes`; `&mut self` makes this the only reference into the data
        // through this value, and the value owns (or shares, see `over_prefix`) writable memory.
        Ok(unsafe { std::slice::from_raw_parts_mut(data, bytes) })
    }

    pub(crate) fn numeric_host_data(&self) -> Result<(*mut u8, usize)> {
        let meta = self.tensor_meta()?;
        let size = meta.element_type.size();
        if size == 0 {
            return Err(Error::InvalidArgument {
                what: format!("the bytes of a {} tensor", meta.element_type),
                why: "only fixed-size (numeric) elements have a byte layout".into(),
            });
        }
        let bytes = meta.len() * size;
        let data = self.host_data()?;
        Ok((data.cast::<u8>(), bytes))
    }
}

impl Value<'static> {
    /// A new, uninitialised-to-the-caller host tensor (ORT's default allocator), its metadata
    /// known without an FFI call.
    pub(crate) fn allocated(shape: &[i64], element_type: ElementType) -> Result<Value<'static>> {
        let raw = crate::value::allocated_tensor(shape, element_type)?;
        Ok(Value::new(raw, None, Some(TensorMeta { element_type, shape: Shape::from_slice(shape) })))
    }

    /// A tensor of `shape` over the first bytes of `backing` (a host tensor of the same element
    /// type), which it keeps alive: tensors of every batch size can share one allocation.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `shape` needs more bytes than `backing` holds.
    pub(crate) fn over_prefix(backing: &Arc<Value<'static>>, shape: &[i64]) -> Result<Value<'static>> {
        let element_type = backing.tensor_meta()?.element_type;
        let (data, capacity) = backing.numeric_host_data()?;
        let bytes = element_count(shape)? * element_type.size();
        if bytes > capacity {
            return Err(Error::InvalidArgument {
                what: format!("a tensor of shape {shape:?} over a buffer of {capacity} bytes"),
                why: format!("it needs {bytes} bytes"),
            });
        }
        // SAFETY: `data` points to `capacity >= bytes` bytes owned by `backing`, which the new
        // value keeps alive (its backing field) and which never moves (ORT's allocation).
        let raw = unsafe { tensor_over(data.cast(), bytes, shape, element_type) }?;
        Ok(Value::new(
            raw,
            Some(Box::new(Arc::clone(backing))),
            Some(TensorMeta { element_type, shape: Shape::from_slice(shape) }),
        ))
    }
}

impl Value<'_> {
    /// Sets a freshly allocated host tensor to zero bytes (0, 0.0, false), so it can be read
    /// before it is written. Device tensors and string tensors (ORT constructs those) are left
    /// as they are.
    pub(crate) fn zero_if_host(&mut self) -> Result<()> {
        let info = self.tensor_meta()?.clone();
        let bytes = info.len().saturating_mul(info.element_type.size());
        if bytes == 0 {
            return Ok(());
        }
        let Some(data) = self.host_data_if_host()? else { return Ok(()) };
        // SAFETY: the tensor owns `bytes` bytes of host memory at `data` (element type and shape
        // read above), and `&mut self` means no view of them exists.
        unsafe { std::ptr::write_bytes(data.cast::<u8>(), 0, bytes) };
        Ok(())
    }
}
