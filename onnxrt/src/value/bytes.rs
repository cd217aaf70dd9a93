//! Raw bytes of numeric host tensors, for code that moves rows between tensors without knowing
//! their element type (a dynamic batcher gathers requests into a batch and hands rows back), and
//! zero-filled tensors of an element type known only at run time (and zeroing a freshly
//! allocated host tensor).

use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::value::{check_bools, element_count, tensor_over, Shape, TensorMeta, Value};

impl Value<'_> {
    /// The data of a numeric tensor the CPU can read (host or CUDA-pinned memory), as bytes in
    /// the tensor's row-major order: `len × element size` bytes, little-endian on x86-64. For
    /// code that copies rows without knowing the element type; [`Value::view`] reads typed
    /// elements.
    ///
    /// ```
    /// # use onnxrt::Value;
    /// let value = Value::from_vec(&[2], vec![1u16, 2])?;
    /// assert_eq!(value.host_bytes()?, &[1, 0, 2, 0]);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ValueKind`] for non-tensors, [`Error::InvalidArgument`] for string tensors,
    /// [`Error::NotHostMemory`] for device memory.
    pub fn host_bytes(&self) -> Result<&[u8]> {
        let (data, bytes) = self.numeric_host_data()?;
        // An empty tensor may have no buffer at all (a null pointer, which no slice may hold).
        if bytes == 0 || data.is_null() {
            return Ok(&[]);
        }
        // SAFETY: ORT guarantees the buffer holds `bytes` bytes (element count × element size of a
        // fixed-size type) for as long as the value lives, which `&self` borrows.
        Ok(unsafe { std::slice::from_raw_parts(data.cast_const(), bytes) })
    }

    /// As [`host_bytes`](Value::host_bytes), writable: fills a tensor this value owns from raw
    /// bytes (e.g. rows gathered from several requests). A `bool` tensor written with bytes other
    /// than 0 and 1 never reaches ONNX Runtime or a typed read: it is refused as a run or binding
    /// input, as a sequence member, as the source of a copy, and by reads ([`Value::view`]).
    ///
    /// Refused for values that do not own their memory for writing: a tensor over borrowed
    /// memory ([`Value::from_view`]) and the outputs of an [`IoBinding`](crate::IoBinding) (they
    /// share the binding's tensors). A run's output that would share memory with an input was
    /// already replaced by a copy, so writing it never changes the input.
    ///
    /// ```
    /// # use onnxrt::{ElementType, Value};
    /// let mut value = Value::zeros(&[2], ElementType::U16)?;
    /// value.host_bytes_mut()?.copy_from_slice(&[1, 0, 2, 0]);
    /// assert_eq!(value.view::<u16>()?.as_slice(), Some(&[1u16, 2][..]));
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ReadOnlyValue`] for a value that is not writable (above);
    /// [`Error::InvalidArgument`] for a string tensor; [`Error::NotHostMemory`] for device memory;
    /// [`Error::ValueKind`] for non-tensors.
    pub fn host_bytes_mut(&mut self) -> Result<&mut [u8]> {
        if !self.writable {
            return Err(Error::ReadOnlyValue { operation: "writing the tensor's bytes".into() });
        }
        let (data, bytes) = self.numeric_host_data()?;
        if bytes == 0 || data.is_null() {
            return Ok(&mut []);
        }
        // SAFETY: as in `host_bytes`; `&mut self` makes this the only reference into the data
        // through this value. A writable value owns its memory or borrows it mutably from the
        // one value it was cut from (`first_rows_mut`, which holds `&mut` of it); shared and
        // borrowed-for-reading values are not writable.
        Ok(unsafe { std::slice::from_raw_parts_mut(data, bytes) })
    }

    /// For a bool tensor in host memory: refuses bytes other than 0 and 1 (safe code can write
    /// any byte through [`host_bytes_mut`](Value::host_bytes_mut)), so none reaches ORT, which
    /// reads them as C++ `bool`. Called where host data leaves for ORT or the device: run and
    /// binding inputs, sequence members, copies (docs/soundness.md §7). Other types:
    /// every byte pattern is a valid value (the 8-bit floats included: NaN patterns are values).
    /// Device tensors are only written from checked or typed data, so they are not read back.
    pub(crate) fn check_valid_bytes(&self, what: impl FnOnce() -> String) -> Result<()> {
        let Ok(meta) = self.tensor_meta() else { return Ok(()) };
        if meta.element_type != ElementType::Bool || self.host_data_if_host()?.is_none() {
            return Ok(());
        }
        check_bools(self.host_bytes()?).map_err(|error| match error {
            Error::InvalidArgument { what: element, why } => Error::InvalidArgument {
                what: format!("{}: {element}", what()),
                why: format!("{why}; a bool tensor written byte by byte (host_bytes_mut) must hold only 0 and 1"),
            },
            other => other,
        })
    }

    pub(crate) fn numeric_host_data(&self) -> Result<(*mut u8, usize)> {
        let meta = self.tensor_meta()?;
        let size = meta.element_type.byte_size().map_err(|_| Error::InvalidArgument {
            what: format!("the bytes of a {} tensor", meta.element_type),
            why: "only fixed-size (numeric) elements of a type this crate knows have a byte layout".into(),
        })?;
        let bytes = meta.len() * size;
        let data = self.host_data()?;
        Ok((data.cast::<u8>(), bytes))
    }
}

impl Value<'static> {
    /// A host tensor of `shape` and `element_type` (a type known only at run time), every byte
    /// zero (0, 0.0, `false`; empty strings for a string tensor), in memory the value owns (ORT's
    /// default allocator). [`Value::from_vec`] is the typed way; this one suits code that gets
    /// the element type from a model ([`ValueInfo::element_type`](crate::ValueInfo)).
    ///
    /// ```
    /// # use onnxrt::{ElementType, Value};
    /// let value = Value::zeros(&[2, 3], ElementType::F32)?;
    /// assert_eq!(value.view::<f32>()?.sum(), 0.0);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::BadShape`] for a negative dimension or a size that overflows; ORT's error for
    /// an element type it cannot allocate.
    pub fn zeros(shape: &[i64], element_type: ElementType) -> Result<Value<'static>> {
        element_count(shape)?;
        let mut value = Value::allocated(shape, element_type)?;
        value.zero_if_host()?;
        Ok(value)
    }

    /// A host tensor of `shape` and `element_type` holding a copy of `bytes`: the elements in
    /// row-major order, each little-endian (x86-64's layout), as [`host_bytes`](Value::host_bytes)
    /// returns them. For data whose element type is known only at run time (a request body, a
    /// file); one pass over the data, no zero-fill first. [`Value::from_vec`] is the typed way.
    ///
    /// ```
    /// # use onnxrt::{ElementType, Value};
    /// let value = Value::from_bytes(&[2], ElementType::U16, &[1, 0, 2, 0])?;
    /// assert_eq!(value.view::<u16>()?.as_slice(), Some(&[1u16, 2][..]));
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::BadShape`] for a negative dimension or a size that overflows;
    /// [`Error::InvalidArgument`] for a string tensor, a byte count other than the shape's, or a
    /// bool byte other than 0 or 1.
    pub fn from_bytes(shape: &[i64], element_type: ElementType, bytes: &[u8]) -> Result<Value<'static>> {
        let expected = numeric_byte_size(shape, element_type, "a tensor from bytes")?;
        if bytes.len() != expected {
            return Err(Error::InvalidArgument {
                what: format!("{} bytes for a {element_type} tensor of shape {shape:?}", bytes.len()),
                why: format!(
                    "the shape holds {} elements of {} bytes: {expected} bytes",
                    expected / element_type.size().max(1),
                    element_type.size()
                ),
            });
        }
        if element_type == ElementType::Bool {
            check_bools(bytes)?;
        }
        // Allocated, not zeroed: every byte is written from `bytes` before the value is returned.
        let mut value = Value::allocated(shape, element_type)?;
        value.host_bytes_mut()?.copy_from_slice(bytes);
        Ok(value)
    }

    /// A new host tensor (ORT's default allocator) that nothing has written yet, its metadata
    /// known without an FFI call. Callers fill it before anyone can read it.
    pub(crate) fn allocated(shape: &[i64], element_type: ElementType) -> Result<Value<'static>> {
        let raw = crate::value::allocated_tensor(shape, element_type)?;
        Ok(Value::new(raw, None, Some(TensorMeta { element_type, shape: Shape::from_slice(shape) })))
    }

    /// As [`Value::zeros`], in page-locked host memory (`cudaHostRegister`): ORT's copies
    /// between it and a CUDA device then run at full speed, without a staging copy. For input
    /// buffers reused across many GPU runs; page-locking costs more than a plain allocation.
    ///
    /// # Errors
    /// [`Error::ProviderLoad`] when libcudart cannot be loaded; [`Error::Ort`] when CUDA refuses
    /// to page-lock the memory; [`Error::BadShape`] as [`Value::zeros`]; [`Error::InvalidArgument`]
    /// for a string tensor (ORT owns string storage).
    #[cfg(feature = "cuda")]
    pub fn zeros_pinned(shape: &[i64], element_type: ElementType) -> Result<Value<'static>> {
        let bytes = numeric_byte_size(shape, element_type, "a page-locked tensor")?;
        // u64 words: aligned for every element type (none needs more than 8 bytes).
        let mut words = vec![0u64; bytes.div_ceil(8).max(1)];
        let data = words.as_mut_ptr().cast::<std::ffi::c_void>();
        // SAFETY: `data` is host memory of at least `bytes` bytes, owned by `words`, which moves
        // into the same `PinnedBuffer` as the guard and is freed only after the guard unpins it.
        let pinned = unsafe { crate::cuda_runtime::PinnedHostMemory::register(data, bytes) }?;
        // SAFETY: `data` holds `bytes` zeroed bytes laid out as `shape` elements of
        // `element_type`; the heap block of `words` does not move when the Vec moves into the
        // backing, which the value frees only after releasing the tensor.
        let raw = unsafe { tensor_over(data, bytes, shape, element_type) }?;
        let backing = PinnedBuffer { _pinned: pinned, _words: words };
        Ok(Value::new(raw, Some(Box::new(backing)), Some(TensorMeta { element_type, shape: Shape::from_slice(shape) })))
    }
}

/// Page-locked memory of a [`Value::zeros_pinned`] tensor. Fields drop in order: unpinned, then
/// freed.
#[cfg(feature = "cuda")]
struct PinnedBuffer {
    _pinned: crate::cuda_runtime::PinnedHostMemory,
    _words: Vec<u64>,
}

impl<'a> Value<'a> {
    /// A writable tensor over the first `rows` entries of this host tensor's first axis (shape
    /// `[rows, rest...]`), sharing its memory and borrowing it mutably, so neither can be used
    /// through the other while it lives. For buffers allocated once at their largest size and
    /// run at smaller ones (a batch of `rows` samples in a buffer of `max_batch`): no copy and
    /// no new allocation of data.
    ///
    /// ```
    /// # use onnxrt::{ElementType, Value};
    /// let mut buffer = Value::zeros(&[4, 2], ElementType::F32)?;
    /// let mut first = buffer.first_rows_mut(3)?;
    /// first.host_bytes_mut()?[..4].copy_from_slice(&1.0f32.to_le_bytes());
    /// assert_eq!(first.tensor_info()?.shape, [3, 2]);
    /// drop(first);
    /// assert_eq!(buffer.view::<f32>()?[[0, 0]], 1.0);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ReadOnlyValue`] for a value that is not writable (see
    /// [`host_bytes_mut`](Value::host_bytes_mut)); [`Error::InvalidArgument`] for a scalar (no
    /// first axis), `rows` more than the tensor has or a string tensor; [`Error::NotHostMemory`]
    /// for device memory, except CUDA memory with the `cuda` feature (e.g. `Value::zeros_cuda`);
    /// [`Error::ValueKind`] for non-tensors.
    pub fn first_rows_mut(&mut self, rows: usize) -> Result<Value<'_>> {
        if !self.writable {
            return Err(Error::ReadOnlyValue { operation: "cutting writable rows from the tensor".into() });
        }
        let meta = self.tensor_meta()?.clone();
        let Some(&have) = meta.shape.first() else {
            return Err(Error::InvalidArgument {
                what: "rows of a scalar tensor".into(),
                why: "a scalar has no first axis".into(),
            });
        };
        if !i64::try_from(rows).is_ok_and(|rows| rows <= have) {
            return Err(Error::InvalidArgument {
                what: format!("the first {rows} rows of a tensor of shape {:?}", meta.shape.as_slice()),
                why: format!("it has {have} rows"),
            });
        }
        let mut shape = meta.shape.clone();
        shape[0] = rows as i64;
        let element_type = meta.element_type;
        let bytes = element_count(&shape)? * element_type.byte_size()?;
        let raw = match self.numeric_host_data() {
            Ok((data, capacity)) => {
                debug_assert!(bytes <= capacity);
                // SAFETY: `data` points to `capacity >= bytes` bytes (fewer rows of the same row
                // size) that `self` owns or borrows mutably; the new value borrows `self` mutably
                // for its whole life ('_), so the memory outlives it and no other access to it
                // exists meanwhile.
                unsafe { tensor_over(data.cast(), bytes, &shape, element_type) }?
            }
            #[cfg(feature = "cuda")]
            Err(Error::NotHostMemory { .. }) => {
                let (data, info) = self.data_anywhere()?;
                // SAFETY: as above, in CUDA memory: the first `bytes` bytes of this tensor's
                // device data, described by its own memory info (which ORT copies).
                unsafe { super::create::tensor_over_in(info, data, bytes, &shape, element_type) }?
            }
            Err(error) => return Err(error),
        };
        Ok(Value::new(raw, None, Some(TensorMeta { element_type, shape })))
    }
}

impl Value<'_> {
    /// Sets a freshly allocated host tensor to zero bytes (0, 0.0, false), so it can be read
    /// before it is written. Device tensors and string tensors (ORT constructs those) are left
    /// as they are.
    pub(crate) fn zero_if_host(&mut self) -> Result<()> {
        let info = self.tensor_meta()?.clone();
        // Strings are objects ORT constructed; any other type must be one the crate can size.
        if info.element_type == ElementType::String {
            return Ok(());
        }
        let bytes = info.len().saturating_mul(info.element_type.byte_size()?);
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

/// The byte size of a tensor of `shape` whose elements have a fixed size, for tensors over memory
/// the crate fills or allocates itself (`what` names the tensor in the error).
///
/// # Errors
/// [`Error::BadShape`] for a negative dimension or a size that overflows;
/// [`Error::InvalidArgument`] for a string tensor (ORT owns string storage).
pub(crate) fn numeric_byte_size(shape: &[i64], element_type: ElementType, what: &str) -> Result<usize> {
    let count = element_count(shape)?;
    let size = element_type.byte_size().map_err(|e| Error::InvalidArgument {
        what: format!("{what} of {element_type} elements"),
        why: format!(
            "only fixed-size (numeric) elements have a byte layout the crate can fill ({}); strings: Value::from_strings",
            match e {
                Error::InvalidArgument { why, .. } => why,
                other => other.to_string(),
            }
        ),
    })?;
    count.checked_mul(size).ok_or_else(|| Error::BadShape { shape: shape.to_vec(), why: "byte size overflows" })
}
