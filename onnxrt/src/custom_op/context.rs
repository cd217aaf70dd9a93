//! [`KernelContext`]: one compute call's inputs (read-only views) and outputs (shapes the kernel
//! chooses, written through mutable views).

use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn};
use onnxrt_sys::{OrtKernelContext, OrtValue};
use smallvec::SmallVec;

use crate::api::{api, Api};
use crate::element::{Element, ElementType};
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;
use crate::value::{TensorInfo, TensorMeta};

/// One call of [`Kernel::compute`](super::Kernel::compute): the node's input tensors and its
/// outputs. Inputs and outputs are host memory (the operator runs on the CPU provider).
///
/// Each output is made once, by [`output`](KernelContext::output), with the shape the kernel
/// chooses; its elements start at zero.
pub struct KernelContext<'a> {
    raw: *mut OrtKernelContext,
    label: &'a str,
    // Outputs already handed out: a second mutable view of one would alias the first.
    made: RefCell<SmallVec<[bool; 8]>>,
    // Not Send or Sync: ORT's context is valid on this thread, during this call only.
    _call: PhantomData<*const ()>,
}

impl<'a> KernelContext<'a> {
    /// # Safety
    /// `raw` is ORT's live kernel context for the current `KernelComputeV2` call; the value does
    /// not outlive the call (the callback drops it before returning).
    pub(crate) unsafe fn new(raw: *mut OrtKernelContext, label: &'a str) -> KernelContext<'a> {
        KernelContext { raw, label, made: RefCell::new(SmallVec::new()), _call: PhantomData }
    }

    /// The operator, as `domain::Name`.
    pub fn op(&self) -> &str {
        self.label
    }

    /// Number of inputs this node gives (variadic inputs count each value).
    ///
    /// Corresponds to `OrtApi::KernelContext_GetInputCount`.
    #[doc(alias = "KernelContext_GetInputCount")]
    pub fn input_count(&self) -> Result<usize> {
        let api = api()?;
        let mut count = 0;
        // SAFETY: `self.raw` is live (see `new`); the out-pointer is valid.
        unsafe { ort!(api, KernelContext_GetInputCount(self.raw, &mut count)) }?;
        Ok(count)
    }

    /// Number of outputs of this node.
    ///
    /// Corresponds to `OrtApi::KernelContext_GetOutputCount`.
    #[doc(alias = "KernelContext_GetOutputCount")]
    pub fn output_count(&self) -> Result<usize> {
        let api = api()?;
        let mut count = 0;
        // SAFETY: `self.raw` is live (see `new`); the out-pointer is valid.
        unsafe { ort!(api, KernelContext_GetOutputCount(self.raw, &mut count)) }?;
        Ok(count)
    }

    /// Element type and shape of input `index`, `None` if the node left this optional input out.
    pub fn input_info(&self, index: usize) -> Result<Option<TensorInfo>> {
        let api = api()?;
        Ok(match self.input_value(api, index)? {
            Some(value) => {
                let meta = tensor_meta(api, value)?;
                Some(TensorInfo { element_type: meta.element_type, shape: meta.shape.to_vec() })
            }
            None => None,
        })
    }

    /// Input `index` as a view of `T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the input holds another element type, if `index` is out of
    /// range, or if the node left the input out (read optional inputs with
    /// [`optional_input`](KernelContext::optional_input)).
    ///
    /// Corresponds to `OrtApi::KernelContext_GetInput`.
    #[doc(alias = "KernelContext_GetInput")]
    pub fn input<T: Element>(&self, index: usize) -> Result<ArrayViewD<'_, T>> {
        self.optional_input(index)?.ok_or_else(|| Error::InvalidArgument {
            what: format!("input {index} of `{}`", self.label),
            why: "the node left this optional input out; read it with optional_input".into(),
        })
    }

    /// Input `index` as a view of `T`, `None` if the node left this optional input out.
    ///
    /// # Errors
    /// As [`input`](KernelContext::input).
    pub fn optional_input<T: Element>(&self, index: usize) -> Result<Option<ArrayViewD<'_, T>>> {
        let api = api()?;
        let Some(value) = self.input_value(api, index)? else {
            return Ok(None);
        };
        let meta = tensor_meta(api, value)?;
        if meta.element_type != T::TYPE {
            return Err(Error::InvalidArgument {
                what: format!("input {index} of `{}` read as {}", self.label, T::TYPE),
                why: format!("it holds {} elements", meta.element_type),
            });
        }
        let shape: SmallVec<[usize; 6]> = meta.shape.iter().map(|&d| d.max(0) as usize).collect();
        let len = meta.len();
        if len == 0 {
            return ArrayViewD::from_shape(IxDyn(&shape), &[])
                .map(Some)
                .map_err(|e| Error::InvalidArgument { what: "empty tensor".into(), why: e.to_string() });
        }
        let data = data_of(api, value.cast_mut())?;
        if T::TYPE == ElementType::Bool {
            // SAFETY: a bool tensor of `len` elements holds `len` bytes; any byte is a valid u8.
            crate::value::check_bools(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })?;
        }
        // SAFETY: ORT's input holds `len` elements of type T (checked above), aligned by its
        // allocator, valid and unchanged for the whole compute call, which `&self` cannot outlive;
        // bools were checked to be 0 or 1. The shape has `len` elements in all.
        Ok(Some(unsafe { ArrayViewD::from_shape_ptr(IxDyn(&shape), data.cast::<T>().cast_const()) }))
    }

    /// Makes output `index` with `shape` and returns it as a mutable view of `T`, all zeros.
    ///
    /// # Errors
    /// [`Error::ElementTypeMismatch`] if the output's element type is not `T`;
    /// [`Error::InvalidArgument`] if `index` is out of range or the output was already made;
    /// [`Error::BadShape`] if the shape's element count overflows.
    ///
    /// Corresponds to `OrtApi::KernelContext_GetOutput`.
    #[doc(alias = "KernelContext_GetOutput")]
    pub fn output<T: Element>(&self, index: usize, shape: &[usize]) -> Result<ArrayViewMutD<'_, T>> {
        let api = api()?;
        let count = self.output_count()?;
        let bad = |why: &str| Error::InvalidArgument {
            what: format!("output {index} of `{}`", self.label),
            why: why.to_owned(),
        };
        if index >= count {
            return Err(bad(&format!("the node has {count} outputs")));
        }
        {
            let mut made = self.made.borrow_mut();
            if made.len() < count {
                made.resize(count, false);
            }
            if made[index] {
                return Err(bad("already made in this call; keep the first view"));
            }
            made[index] = true;
        }
        let dims: SmallVec<[i64; 6]> = shape.iter().map(|&d| i64::try_from(d).unwrap_or(i64::MAX)).collect();
        let len = crate::value::element_count(&dims)?;
        let mut value: *mut OrtValue = std::ptr::null_mut();
        // SAFETY: `self.raw` is live; `dims` holds `dims.len()` values; the out-pointer is valid.
        // The value belongs to the context (we never release it).
        unsafe { ort!(api, KernelContext_GetOutput(self.raw, index, dims.as_ptr(), dims.len(), &mut value)) }?;
        if value.is_null() {
            return Err(bad("ONNX Runtime gave no value (an optional output the graph does not use?)"));
        }
        let meta = tensor_meta(api, value)?;
        if meta.element_type != T::TYPE {
            return Err(Error::ElementTypeMismatch {
                name: format!("output {index} of {}", self.label),
                expected: meta.element_type,
                got: T::TYPE,
                hint: String::new(),
            });
        }
        if len == 0 {
            return ArrayViewMutD::from_shape(IxDyn(shape), &mut [])
                .map_err(|e| Error::InvalidArgument { what: "empty tensor".into(), why: e.to_string() });
        }
        let data = data_of(api, value)?.cast::<T>();
        // SAFETY: ORT allocated `len` elements of T (type checked above) for this output, aligned
        // by its allocator; zero bytes are a valid value of every Element type (0, 0.0, false),
        // so the view never exposes uninitialised memory.
        unsafe { std::ptr::write_bytes(data, 0, len) };
        // SAFETY: as above; the buffer is ours alone until compute returns (this index is handed
        // out once, see `made`), and the view cannot outlive `&self`, i.e. the call.
        Ok(unsafe { ArrayViewMutD::from_shape_ptr(IxDyn(shape), data) })
    }

    /// ORT's input value `index`, `None` when left out.
    fn input_value(&self, api: &Api, index: usize) -> Result<Option<*const OrtValue>> {
        let count = self.input_count()?;
        if index >= count {
            return Err(Error::InvalidArgument {
                what: format!("input {index} of `{}`", self.label),
                why: format!("the node has {count} inputs"),
            });
        }
        let mut value: *const OrtValue = std::ptr::null();
        // SAFETY: `self.raw` is live; `index` is in range; the out-pointer is valid. The value
        // belongs to the context.
        unsafe { ort!(api, KernelContext_GetInput(self.raw, index, &mut value)) }?;
        Ok((!value.is_null()).then_some(value))
    }
}

/// Element type and shape of a tensor the context owns.
fn tensor_meta(api: &Api, value: *const OrtValue) -> Result<TensorMeta> {
    let mut info = std::ptr::null_mut();
    // SAFETY: `value` is a live tensor of the current call; the out-pointer is valid.
    unsafe { ort!(api, GetTensorTypeAndShape(value, &mut info)) }?;
    // SAFETY: on success we own `info`.
    let info = unsafe { Owned::from_raw(info) }?;
    crate::session::info::tensor_meta_of(api, info.as_ptr())
}

/// A tensor's data pointer.
fn data_of(api: &Api, value: *mut OrtValue) -> Result<*mut c_void> {
    let mut data = std::ptr::null_mut();
    // SAFETY: `value` is a live tensor of the current call; the out-pointer is valid.
    unsafe { ort!(api, GetTensorMutableData(value, &mut data)) }?;
    Ok(data)
}
