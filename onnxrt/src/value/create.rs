//! Making values from Rust memory: tensors from arrays, views, `Vec`s, scalars and strings,
//! sequences; and the tensors over our memory or ORT's allocator that other modules build on.

use std::ffi::{c_void, CString};

use ndarray::{ArrayView, Dimension};

use onnxrt_sys::OrtValue;

use super::{element_count, Shape, TensorMeta, Value};
use crate::api::api;
use crate::element::{Element, ElementType};
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::memory::{cpu_info, default_allocator};
use crate::status::ort;

impl Value<'static> {
    /// A tensor from an owned array. Standard layout is passed without a copy (a standard-layout
    /// slice of a larger array keeps only its own elements, moved to the buffer's start); other
    /// layouts are copied once into standard layout.
    ///
    /// # Errors
    /// [`Error::BadShape`] for shapes whose byte size overflows.
    ///
    /// Corresponds to `OrtApi::CreateTensorWithDataAsOrtValue`.
    #[doc(alias = "CreateTensorWithDataAsOrtValue")]
    pub fn from_array<T: Element, D: Dimension>(array: ndarray::Array<T, D>) -> Result<Value<'static>> {
        let shape: Vec<i64> = array.shape().iter().map(|&d| d as i64).collect();
        let array = if array.is_standard_layout() { array } else { array.as_standard_layout().into_owned() };
        let len = array.len();
        let (mut data, offset) = array.into_raw_vec_and_offset();
        // A standard-layout slice of a larger array keeps the whole buffer: its elements are the
        // `len` from `start` on (ndarray guarantees they are in the buffer). Keep only those, in place.
        let start = offset.unwrap_or(0);
        let end = start.checked_add(len).filter(|&end| end <= data.len());
        let Some(end) = end else {
            return Err(Error::DataLength { shape, expected: len, got: data.len().saturating_sub(start) });
        };
        data.truncate(end);
        data.drain(..start);
        Value::from_vec(&shape, data)
    }

    /// A tensor from a `Vec` in row-major order and a shape.
    ///
    /// ```
    /// let value = onnxrt::Value::from_vec(&[2, 2], vec![1i64, 2, 3, 4])?;
    /// assert_eq!(value.tensor_info()?.shape, [2, 2]);
    /// assert_eq!(value.view::<i64>()?[[1, 0]], 3);
    /// // The wrong length is refused before ORT sees it.
    /// assert!(onnxrt::Value::from_vec(&[2, 2], vec![1i64, 2, 3]).is_err());
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::DataLength`] when `data.len()` is not the product of `shape`; [`Error::BadShape`].
    pub fn from_vec<T: Element>(shape: &[i64], data: Vec<T>) -> Result<Value<'static>> {
        let expected = element_count(shape)?;
        if expected != data.len() {
            return Err(Error::DataLength { shape: shape.to_vec(), expected, got: data.len() });
        }
        let mut data = data.into_boxed_slice();
        let ptr = data.as_mut_ptr().cast::<c_void>();
        // SAFETY: `data` is moved into the value's backing below, so it outlives the OrtValue;
        // the heap buffer does not move when the Box does.
        let raw = unsafe { tensor_over(ptr, std::mem::size_of_val(&*data), shape, T::TYPE) }?;
        Ok(Value::new(
            raw,
            Some(Box::new(data)),
            Some(TensorMeta { element_type: T::TYPE, shape: Shape::from_slice(shape) }),
        ))
    }

    /// A rank-0 tensor.
    pub fn scalar<T: Element>(value: T) -> Result<Value<'static>> {
        Value::from_vec(&[], vec![value])
    }

    /// A string tensor. Strings must not contain NUL bytes (ORT stores C strings).
    ///
    /// # Errors
    /// [`Error::InvalidString`] naming the first string with a NUL byte; [`Error::DataLength`].
    ///
    /// Corresponds to `OrtApi::CreateTensorAsOrtValue` + `OrtApi::FillStringTensor`.
    #[doc(alias = "FillStringTensor")]
    pub fn from_strings<S: AsRef<str>>(shape: &[i64], strings: &[S]) -> Result<Value<'static>> {
        let expected = element_count(shape)?;
        if expected != strings.len() {
            return Err(Error::DataLength { shape: shape.to_vec(), expected, got: strings.len() });
        }
        string_tensor(shape, strings.iter().map(|s| s.as_ref().as_bytes().to_vec()))
    }

    /// A sequence of tensors (all of one element type, as ONNX requires).
    ///
    /// Corresponds to `OrtApi::CreateValue` with `ONNX_TYPE_SEQUENCE`.
    #[doc(alias = "CreateValue")]
    pub fn sequence(values: Vec<Value<'static>>) -> Result<Value<'static>> {
        if values.is_empty() {
            return Err(Error::InvalidArgument {
                what: "an empty sequence".into(),
                why: "ORT needs at least one element to know the type".into(),
            });
        }
        let first = values[0].tensor_info()?.element_type;
        for (index, value) in values.iter().enumerate() {
            let info = value.tensor_info()?;
            if info.element_type != first {
                return Err(Error::ElementTypeMismatch {
                    name: format!("sequence element {index}"),
                    expected: first,
                    got: info.element_type,
                    hint: String::new(),
                });
            }
            value.check_valid_bytes(|| format!("sequence element {index}"))?;
        }
        let api = api()?;
        let pointers: Vec<*const OrtValue> = values.iter().map(|v| v.raw.as_ptr().cast_const()).collect();
        let mut raw = std::ptr::null_mut();
        // SAFETY: `pointers` are live values for the call; the sequence keeps what it needs.
        unsafe { ort!(api, CreateValue(pointers.as_ptr(), pointers.len(), onnxrt_sys::ONNX_TYPE_SEQUENCE, &mut raw)) }?;
        // SAFETY: on success `raw` is a new value we own.
        let raw = unsafe { Owned::from_raw(raw) }?;
        // The members stay alive with the sequence in case ORT references rather than copies them.
        Ok(Value::new(raw, Some(Box::new(values)), None))
    }
}

impl<'data> Value<'data> {
    /// A tensor that borrows `view` without copying.
    ///
    /// # Errors
    /// [`Error::NotContiguous`] if the view is not in standard layout (call
    /// `.as_standard_layout()` or use [`Value::from_array`], which copies).
    pub fn from_view<T: Element, D: Dimension>(view: ArrayView<'data, T, D>) -> Result<Value<'data>> {
        if !view.is_standard_layout() {
            return Err(Error::NotContiguous { name: "view".into() });
        }
        // On the stack up to rank 6: wrapping a buffer makes no heap allocation.
        let shape: Shape = view.shape().iter().map(|&d| d as i64).collect();
        let len = view.len();
        // ORT's API takes `void*` but does not write to tensors used as inputs; values made from
        // views are never handed to ORT as outputs by this crate.
        let ptr = view.as_ptr().cast_mut().cast::<c_void>();
        // SAFETY: the memory is borrowed for 'data, which the returned Value carries.
        let raw = unsafe { tensor_over(ptr, len * std::mem::size_of::<T>(), &shape, T::TYPE) }?;
        let mut value = Value::new(raw, None, Some(TensorMeta { element_type: T::TYPE, shape }));
        value.writable = false;
        Ok(value)
    }
}

/// Creates a tensor over memory that ORT does not own.
///
/// # Safety
/// `data` points to `bytes` bytes laid out as `shape` elements of `element_type`, valid for as
/// long as the returned value.
pub(crate) unsafe fn tensor_over(
    data: *mut c_void,
    bytes: usize,
    shape: &[i64],
    element_type: ElementType,
) -> Result<Owned<OrtValue>> {
    // SAFETY: the caller's contract, for host memory.
    unsafe { tensor_over_in(cpu_info()?.as_ptr(), data, bytes, shape, element_type) }
}

/// As [`tensor_over`], for memory at the location `info` describes (a CUDA device's).
///
/// # Safety
/// As [`tensor_over`], `data` being memory of the location `info` names; `info` is a live memory
/// info (ORT copies it into the tensor).
pub(crate) unsafe fn tensor_over_in(
    info: *const onnxrt_sys::OrtMemoryInfo,
    data: *mut c_void,
    bytes: usize,
    shape: &[i64],
    element_type: ElementType,
) -> Result<Owned<OrtValue>> {
    let api = api()?;
    let count = element_count(shape)?;
    let Some(needed) = count.checked_mul(element_type.byte_size()?) else {
        return Err(Error::BadShape { shape: shape.to_vec(), why: "byte size overflows" });
    };
    // Every caller sizes `bytes` from the same shape and type; a shorter buffer would let ORT
    // read past it.
    if bytes < needed {
        return Err(Error::InvalidArgument {
            what: format!("a {element_type} tensor of shape {shape:?} over {bytes} bytes"),
            why: format!("it needs {needed} bytes"),
        });
    }
    // ORT rejects a null pointer even for empty tensors.
    let data = if data.is_null() { std::ptr::NonNull::<u64>::dangling().as_ptr().cast() } else { data };
    let mut raw = std::ptr::null_mut();
    // SAFETY: the caller's contract covers `data`; shape pointer/length describe a live slice.
    unsafe {
        ort!(
            api,
            CreateTensorWithDataAsOrtValue(
                info,
                data,
                bytes,
                shape.as_ptr(),
                shape.len(),
                element_type.to_raw(),
                &mut raw
            )
        )
    }?;
    // SAFETY: on success `raw` is a new value we own.
    unsafe { Owned::from_raw(raw) }
}

/// A new tensor of `shape` and `element_type` in ORT's default allocator (host memory, not yet
/// written: callers fill it before anyone can read it).
pub(crate) fn allocated_tensor(shape: &[i64], element_type: ElementType) -> Result<Owned<OrtValue>> {
    // No code the crate cannot size reaches an allocation: it could not zero or read it.
    element_type.check_known()?;
    // A byte size past isize::MAX is refused here: ORT's own size check throws through its
    // default logger, which aborts the process where no environment exists yet (outside review,
    // 2026-12-07: `Value::zeros(&[1 << 62], F32)` as a program's first call).
    if let Ok(size) = element_type.byte_size() {
        let bytes = element_count(shape)?.checked_mul(size);
        if bytes.is_none_or(|bytes| bytes > isize::MAX as usize) {
            return Err(Error::BadShape { shape: shape.to_vec(), why: "byte size overflows" });
        }
    }
    let api = api()?;
    let allocator = default_allocator()?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: shape pointer/length describe a live slice; the allocator is ORT's default
    // (process lifetime); the out-pointer is valid.
    let created = unsafe {
        ort!(api, CreateTensorAsOrtValue(allocator, shape.as_ptr(), shape.len(), element_type.to_raw(), &mut raw))
    };
    // ORT's default allocator is the host's: its out-of-memory advice is about host memory.
    created.map_err(|error| error.in_host_memory_if(true))?;
    // SAFETY: on success `raw` is a new value we own.
    unsafe { Owned::from_raw(raw) }
}

/// A new string tensor of `shape` holding `strings` (bytes as ORT stores them; the caller has
/// checked that there are as many as the shape holds). Used by [`Value::from_strings`] and by the
/// copy of a string output that aliased an input.
pub(crate) fn string_tensor(shape: &[i64], strings: impl IntoIterator<Item = Vec<u8>>) -> Result<Value<'static>> {
    let owned: Vec<CString> = strings
        .into_iter()
        .enumerate()
        .map(|(index, s)| CString::new(s).map_err(|_| Error::InvalidString { index, why: "contains a NUL byte" }))
        .collect::<Result<_>>()?;
    let pointers: Vec<*const std::ffi::c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    let api = api()?;
    let raw = allocated_tensor(shape, ElementType::String)?;
    // SAFETY: `pointers` holds `len` NUL-terminated strings alive for the call; ORT copies them.
    unsafe { ort!(api, FillStringTensor(raw.as_ptr(), pointers.as_ptr(), pointers.len())) }?;
    Ok(Value::new(raw, None, Some(TensorMeta { element_type: ElementType::String, shape: Shape::from_slice(shape) })))
}
