//! Tensors in CUDA memory the crate allocates itself ([`Value::zeros_cuda`]), and copies between
//! any two tensors on a caller's stream ([`Value::copy_from`], or some rows of them:
//! [`Value::copy_rows_from`]): what a batcher needs to copy a gathered batch to the device and
//! bind it, so ORT copies nothing inside the run.
//! ([`Value::first_rows_mut`] cuts rows of these tensors as of host ones.)

use std::ffi::c_void;

use onnxrt_sys::OrtMemoryInfo;

use super::bytes::numeric_byte_size;
use super::create::tensor_over_in;
use super::{TensorMeta, Value};
use crate::api::api;
use crate::cuda_runtime::DeviceMemory;
use crate::cuda_stream::CudaStream;
use crate::element::ElementType;
use crate::error::{Error, Result, ShapeText};
use crate::memory::MemoryInfo;
use crate::status::ort;

impl Value<'static> {
    /// A tensor of `shape` in memory of CUDA device `device_id` that the value owns
    /// (`cudaMalloc`, freed with the value), every byte zero. Bind it to an
    /// [`IoBinding`](crate::IoBinding); fill it with [`Value::copy_from`].
    ///
    /// # Errors
    /// [`Error::NoSuchDevice`] for a negative id; [`Error::BadShape`] for a negative dimension or
    /// a size that overflows; [`Error::InvalidArgument`] for a string tensor;
    /// [`Error::ProviderLoad`] when libcudart cannot be loaded; [`Error::Ort`] with CUDA's code
    /// when CUDA refuses (out of memory, no such device).
    pub fn zeros_cuda(shape: &[i64], element_type: ElementType, device_id: i32) -> Result<Value<'static>> {
        if device_id < 0 {
            return Err(Error::NoSuchDevice { device: "CUDA memory".into(), id: device_id, count: None });
        }
        let bytes = numeric_byte_size(shape, element_type, "a tensor in CUDA memory")?;
        let memory = DeviceMemory::zeroed(device_id, bytes)?;
        let info = MemoryInfo::cuda(device_id)?;
        // SAFETY: `memory` is `bytes` zeroed bytes of device `device_id`, laid out as `shape`
        // elements of `element_type`; it moves into the value's backing, freed after the tensor.
        let raw = unsafe { tensor_over_in(info.as_ptr(), memory.as_ptr(), memory.len(), shape, element_type) }?;
        Ok(Value::new(raw, Some(Box::new(memory)), Some(TensorMeta { element_type, shape: shape.into() })))
    }
}

impl Value<'_> {
    /// Copies `source` into this tensor on `stream`, and returns once that copy is done (it waits
    /// for `stream` alone, not for other work on the device). Either tensor may be in host,
    /// page-locked or CUDA memory; from page-locked memory the copy runs at full speed.
    ///
    /// The copy is ordered after nothing else: ORT's runs on other streams are not waited for.
    /// A run of this crate returns only after its GPU work is done (unless its run options
    /// carried `disable_synchronize_execution_providers`, which this crate refuses), so a
    /// tensor bound to a finished run can be written again.
    ///
    /// # Errors
    /// [`Error::ReadOnlyValue`] when this value is not writable (see
    /// [`host_bytes_mut`](Value::host_bytes_mut)); [`Error::ElementTypeMismatch`] or
    /// [`Error::ShapeMismatch`] when the two differ; [`Error::InvalidArgument`] for string
    /// tensors or memory neither host nor CUDA; [`Error::ValueKind`] for non-tensors;
    /// [`Error::Ort`] with CUDA's code when the copy fails.
    pub fn copy_from(&mut self, source: &Value<'_>, stream: &CudaStream) -> Result<()> {
        if !self.writable {
            return Err(Error::ReadOnlyValue { operation: "copy_from".into() });
        }
        let to = self.tensor_meta()?.clone();
        let from = source.tensor_meta()?;
        let name = || self.name().unwrap_or("destination").to_owned();
        if to.element_type != from.element_type {
            return Err(Error::ElementTypeMismatch {
                name: name(),
                expected: to.element_type,
                got: from.element_type,
                hint: "; copy_from copies bytes and does not convert".into(),
            });
        }
        if to.shape != from.shape {
            return Err(Error::ShapeMismatch {
                name: name(),
                expected: ShapeText(format!("{:?}", to.shape.as_slice())),
                got: from.shape.to_vec(),
                hint: "; copy_from copies whole tensors of one shape (cut rows with first_rows_mut)".into(),
            });
        }
        let size = to.element_type.byte_size().map_err(|_| Error::InvalidArgument {
            what: format!("copy_from of a {} tensor", to.element_type),
            why: "only fixed-size (numeric) elements of a type this crate knows are copied as bytes".into(),
        })?;
        let bytes = to.len() * size;
        source.check_valid_bytes(|| "the source of copy_from".into())?;
        if bytes == 0 {
            return Ok(());
        }
        let (destination, _) = self.data_anywhere()?;
        let (origin, _) = source.data_anywhere()?;
        // SAFETY: both tensors hold `bytes` bytes (same element type and shape, checked above) in
        // host or CUDA memory. `&mut self` on a writable value means nothing else reaches the
        // destination meanwhile, and `&source` keeps the source alive and unwritten; a writable
        // value never shares memory with another value, so the two do not overlap. The call
        // returns only after the copy is done.
        unsafe { stream.raw().copy_and_wait(destination, origin.cast_const(), bytes) }
    }

    /// Copies rows `rows` of `source`'s first axis into the same rows of this tensor on
    /// `stream`, and returns once that copy is done; the other rows are not touched. The two
    /// tensors may have different row counts but must have the rows, one element type and one
    /// row shape. As [`copy_from`](Value::copy_from) otherwise: for a batch buffer filled a few
    /// samples at a time (each sample copied on to the device as it arrives, so that little is
    /// left to copy when the batch closes).
    ///
    /// # Errors
    /// As [`copy_from`](Value::copy_from), except that the row counts may differ; and
    /// [`Error::InvalidArgument`] for a scalar, a range that is not ascending or passes either
    /// tensor's rows. Every check runs before any CUDA call.
    pub fn copy_rows_from(
        &mut self,
        rows: std::ops::Range<usize>,
        source: &Value<'_>,
        stream: &CudaStream,
    ) -> Result<()> {
        if !self.writable {
            return Err(Error::ReadOnlyValue { operation: "copy_rows_from".into() });
        }
        let to = self.tensor_meta()?.clone();
        let name = self.name().unwrap_or("destination").to_owned();
        let (offset, bytes) = super::row_span::row_span(&to, source.tensor_meta()?, &rows, &name)?;
        if bytes == 0 {
            return Ok(());
        }
        source.check_valid_bytes(|| "the source of copy_rows_from".into())?;
        let (destination, _) = self.data_anywhere()?;
        let (origin, _) = source.data_anywhere()?;
        // SAFETY: `row_span` checked that rows `rows` lie inside both tensors, which have one
        // element type and row shape, so `offset..offset + bytes` is inside each one's data (host
        // or CUDA memory) and the pointers stay in bounds. `&mut self` on a writable value means
        // nothing else reaches the destination meanwhile and that it shares no memory with
        // `source`, which `&source` keeps alive and unwritten. The call returns only after the
        // copy is done.
        unsafe {
            let destination = destination.cast::<u8>().add(offset).cast::<c_void>();
            let origin = origin.cast::<u8>().add(offset).cast::<c_void>().cast_const();
            stream.raw().copy_and_wait(destination, origin, bytes)
        }
    }

    /// The tensor's data and memory info, in host or CUDA memory (refused elsewhere).
    pub(crate) fn data_anywhere(&self) -> Result<(*mut c_void, *const OrtMemoryInfo)> {
        let api = api()?;
        let mut info = std::ptr::null();
        // SAFETY: `self.raw` is a live tensor; the memory info returned is owned by the value.
        unsafe { ort!(api, GetTensorMemoryInfo(self.raw.as_ptr(), &mut info)) }?;
        if let Some(data) = self.host_data_if_host()? {
            return Ok((data, info));
        }
        let name = self.memory_name()?;
        if name != "Cuda" {
            return Err(Error::InvalidArgument {
                what: format!("a tensor in `{name}` memory"),
                why: "only host and CUDA memory are copied or cut into rows by this crate".into(),
            });
        }
        let mut data = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live tensor; the out-pointer is valid.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        Ok((data, info))
    }
}
