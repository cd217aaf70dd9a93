//! Copies between host memory and tensors in device memory (the `cuda` feature).

use std::ffi::c_void;

use ndarray::{ArrayD, IxDyn};

use super::info::{check_element, Access};
use super::{check_bools, TensorMeta, Value};
use crate::api::api;
use crate::element::{Element, ElementType};
use crate::error::{Error, Result};
use crate::status::ort;

impl Value<'_> {
    fn raw_data(&self) -> Result<(*mut c_void, TensorMeta)> {
        let info = self.tensor_meta()?.clone();
        let api = api()?;
        let mut data = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live tensor; the out-pointer is valid.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        Ok((data, info))
    }

    /// Fills a tensor (host or CUDA memory) from host data of the same element type and length.
    ///
    /// # Errors
    /// [`Error::ReadOnlyValue`] for a value that is not writable: one over borrowed memory
    /// ([`Value::from_view`]) or one that shares its tensor (an `IoBinding` output).
    pub fn copy_from_host<T: Element>(&mut self, data: &[T]) -> Result<()> {
        if !self.is_writable() {
            return Err(Error::ReadOnlyValue { operation: "copy_from_host".into() });
        }
        let (ptr, info) = self.raw_data()?;
        check_element(&info, T::TYPE, Access::Write, self.name())?;
        if info.len() != data.len() {
            return Err(Error::DataLength { expected: info.len(), shape: info.shape.to_vec(), got: data.len() });
        }
        // SAFETY: the tensor holds exactly `len` elements of T (checked above) and `data` is a
        // separate host slice of the same size.
        unsafe { crate::cuda_runtime::copy(ptr, data.as_ptr().cast(), std::mem::size_of_val(data)) }
    }

    /// Copies a tensor (host or CUDA memory) into a host array.
    pub fn copy_to_host<T: Element>(&self) -> Result<ArrayD<T>> {
        let (ptr, info) = self.raw_data()?;
        check_element(&info, T::TYPE, Access::Read, self.name())?;
        let bytes = info.len() * std::mem::size_of::<T>();
        let mut raw_bytes = vec![0u8; bytes];
        // SAFETY: the tensor holds `bytes` bytes; `raw_bytes` has exactly that many.
        unsafe { crate::cuda_runtime::copy(raw_bytes.as_mut_ptr().cast(), ptr, bytes) }?;
        if T::TYPE == ElementType::Bool {
            check_bools(&raw_bytes)?;
        }
        let mut host: Vec<T> = Vec::with_capacity(info.len());
        // SAFETY: `raw_bytes` holds `len` valid elements of T (bools checked above); `host` has
        // capacity for them and is initialised by the copy before `set_len`.
        unsafe {
            std::ptr::copy_nonoverlapping(raw_bytes.as_ptr(), host.as_mut_ptr().cast::<u8>(), bytes);
            host.set_len(info.len());
        }
        let shape: Vec<usize> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
        ArrayD::from_shape_vec(IxDyn(&shape), host)
            .map_err(|e| Error::InvalidArgument { what: "tensor shape".into(), why: e.to_string() })
    }
}
