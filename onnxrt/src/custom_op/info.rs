//! [`KernelInfo`]: the node a kernel is being made for, and its attributes.

use std::ffi::{c_char, CString};
use std::marker::PhantomData;

use onnxrt_sys::{OrtKernelInfo, OrtStatusPtr};

use crate::api::{api, Api};
use crate::error::{Error, Result};

/// The node a kernel is made for, in [`CustomOp::create_kernel`](super::CustomOp::create_kernel):
/// its attributes (typed), name, and number of inputs and outputs. Valid only during that call.
pub struct KernelInfo<'a> {
    raw: *const OrtKernelInfo,
    label: &'a str,
    // Not Send or Sync: ORT's info is valid on this thread, during this call only.
    _call: PhantomData<*const ()>,
}

/// An attribute getter of ORT's `KernelInfoGetAttribute*` family for buffers
/// (`(info, name, out, size) -> status`, `out` null asks for the size).
type SizedGetter<T> = unsafe extern "C" fn(*const OrtKernelInfo, *const c_char, *mut T, *mut usize) -> OrtStatusPtr;

impl<'a> KernelInfo<'a> {
    /// # Safety
    /// `raw` is ORT's live kernel info for the current `CreateKernelV2` call; the value does not
    /// outlive the call (the callback drops it before returning).
    pub(crate) unsafe fn new(raw: *const OrtKernelInfo, label: &'a str) -> KernelInfo<'a> {
        KernelInfo { raw, label, _call: PhantomData }
    }

    /// The operator, as `domain::Name`.
    pub fn op(&self) -> &str {
        self.label
    }

    /// Attribute `name` as an integer (ONNX `INT`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the node has no such attribute or it has another type.
    ///
    /// Corresponds to `OrtApi::KernelInfoGetAttribute_int64`.
    #[doc(alias = "KernelInfoGetAttribute_int64")]
    pub fn attribute_i64(&self, name: &str) -> Result<i64> {
        let (api, name_c) = self.prepare(name)?;
        let mut value = 0i64;
        // SAFETY: `self.raw` is live (see `new`); `name_c` is NUL-terminated; out-pointer valid.
        let read =
            unsafe { crate::status::ort!(api, KernelInfoGetAttribute_int64(self.raw, name_c.as_ptr(), &mut value)) };
        read.map_err(|e| self.attribute_error(name, "int", e))?;
        Ok(value)
    }

    /// Attribute `name` as a float (ONNX `FLOAT`).
    ///
    /// # Errors
    /// As [`attribute_i64`](KernelInfo::attribute_i64).
    ///
    /// Corresponds to `OrtApi::KernelInfoGetAttribute_float`.
    #[doc(alias = "KernelInfoGetAttribute_float")]
    pub fn attribute_f32(&self, name: &str) -> Result<f32> {
        let (api, name_c) = self.prepare(name)?;
        let mut value = 0f32;
        // SAFETY: as in `attribute_i64`.
        let read =
            unsafe { crate::status::ort!(api, KernelInfoGetAttribute_float(self.raw, name_c.as_ptr(), &mut value)) };
        read.map_err(|e| self.attribute_error(name, "float", e))?;
        Ok(value)
    }

    /// Attribute `name` as a string (ONNX `STRING`; invalid UTF-8 is replaced).
    ///
    /// # Errors
    /// As [`attribute_i64`](KernelInfo::attribute_i64).
    ///
    /// Corresponds to `OrtApi::KernelInfoGetAttribute_string`.
    #[doc(alias = "KernelInfoGetAttribute_string")]
    pub fn attribute_string(&self, name: &str) -> Result<String> {
        let (api, _) = self.prepare(name)?;
        let getter =
            api.ort.KernelInfoGetAttribute_string.ok_or_else(|| Error::missing("KernelInfoGetAttribute_string"))?;
        let mut bytes: Vec<c_char> = self.sized(name, "string", "KernelInfoGetAttribute_string", getter)?;
        // The size ORT reports counts the terminating NUL.
        if bytes.last() == Some(&0) {
            bytes.pop();
        }
        let bytes: Vec<u8> = bytes.into_iter().map(|c| c as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Attribute `name` as a list of integers (ONNX `INTS`).
    ///
    /// # Errors
    /// As [`attribute_i64`](KernelInfo::attribute_i64).
    ///
    /// Corresponds to `OrtApi::KernelInfoGetAttributeArray_int64`.
    #[doc(alias = "KernelInfoGetAttributeArray_int64")]
    pub fn attribute_i64s(&self, name: &str) -> Result<Vec<i64>> {
        let (api, _) = self.prepare(name)?;
        let getter = api
            .ort
            .KernelInfoGetAttributeArray_int64
            .ok_or_else(|| Error::missing("KernelInfoGetAttributeArray_int64"))?;
        self.sized(name, "ints", "KernelInfoGetAttributeArray_int64", getter)
    }

    /// Attribute `name` as a list of floats (ONNX `FLOATS`).
    ///
    /// # Errors
    /// As [`attribute_i64`](KernelInfo::attribute_i64).
    ///
    /// Corresponds to `OrtApi::KernelInfoGetAttributeArray_float`.
    #[doc(alias = "KernelInfoGetAttributeArray_float")]
    pub fn attribute_f32s(&self, name: &str) -> Result<Vec<f32>> {
        let (api, _) = self.prepare(name)?;
        let getter = api
            .ort
            .KernelInfoGetAttributeArray_float
            .ok_or_else(|| Error::missing("KernelInfoGetAttributeArray_float"))?;
        self.sized(name, "floats", "KernelInfoGetAttributeArray_float", getter)
    }

    /// Number of inputs the node gives (optional ones left out count as given, empty).
    ///
    /// Corresponds to `OrtApi::KernelInfo_GetInputCount`.
    #[doc(alias = "KernelInfo_GetInputCount")]
    pub fn input_count(&self) -> Result<usize> {
        let api = api()?;
        let mut count = 0;
        // SAFETY: `self.raw` is live (see `new`); the out-pointer is valid.
        unsafe { crate::status::ort!(api, KernelInfo_GetInputCount(self.raw, &mut count)) }?;
        Ok(count)
    }

    /// Number of outputs of the node.
    ///
    /// Corresponds to `OrtApi::KernelInfo_GetOutputCount`.
    #[doc(alias = "KernelInfo_GetOutputCount")]
    pub fn output_count(&self) -> Result<usize> {
        let api = api()?;
        let mut count = 0;
        // SAFETY: `self.raw` is live (see `new`); the out-pointer is valid.
        unsafe { crate::status::ort!(api, KernelInfo_GetOutputCount(self.raw, &mut count)) }?;
        Ok(count)
    }

    fn prepare(&self, name: &str) -> Result<(&'static Api, CString)> {
        let name_c = CString::new(name).map_err(|_| Error::nul("attribute name", name))?;
        Ok((api()?, name_c))
    }

    /// Reads a string or array attribute: asks for the size, then the contents.
    fn sized<T: Copy + Default>(
        &self,
        name: &str,
        kind: &str,
        function: &'static str,
        getter: SizedGetter<T>,
    ) -> Result<Vec<T>> {
        let name_c = CString::new(name).map_err(|_| Error::nul("attribute name", name))?;
        let mut size = 0usize;
        // SAFETY: `self.raw` is live; a null `out` asks ORT only for the size.
        let asked = unsafe {
            crate::status::check(function, getter(self.raw, name_c.as_ptr(), std::ptr::null_mut(), &mut size))
        };
        asked.map_err(|e| self.attribute_error(name, kind, e))?;
        let mut values = vec![T::default(); size];
        // SAFETY: `values` has room for the `size` elements ORT reported for this attribute.
        let read = unsafe {
            crate::status::check(function, getter(self.raw, name_c.as_ptr(), values.as_mut_ptr(), &mut size))
        };
        read.map_err(|e| self.attribute_error(name, kind, e))?;
        values.truncate(size);
        Ok(values)
    }

    fn attribute_error(&self, name: &str, kind: &str, error: Error) -> Error {
        let why = match error {
            Error::Ort { message, .. } => message,
            other => other.to_string(),
        };
        Error::InvalidArgument { what: format!("attribute `{name}` ({kind}) of a `{}` node", self.label), why }
    }
}
