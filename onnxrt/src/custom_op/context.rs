//! [`KernelContext`]: one compute call's inputs (read-only views) and outputs (shapes the kernel
//! chooses, written through mutable views).

use std::cell::RefCell;
use std::ffi::c_void;
use std::marker::PhantomData;

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn};
use onnxrt_sys::{OrtKernelContext, OrtValue};
use smallvec::SmallVec;

use super::{Arity, IoSpec};
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
/// chooses; its elements start at zero. A kernel that returns `Ok` must have made every required
/// output: if it did not, the run fails with [`Error::CustomOp`] naming the output.
pub struct KernelContext<'a> {
    raw: *mut OrtKernelContext,
    label: &'a str,
    // The node's outputs as the kernel declared them (`CustomOp::outputs`).
    specs: &'a [IoSpec],
    // What happened to each output in this call: a second mutable view of one would alias the
    // first, and one ORT allocated must be handed out before compute returns `Ok`.
    outputs: RefCell<SmallVec<[Output; 8]>>,
    // Not Send or Sync: ORT's context is valid on this thread, during this call only.
    _call: PhantomData<*const ()>,
}

impl<'a> KernelContext<'a> {
    /// # Safety
    /// `raw` is ORT's live kernel context for the current `KernelComputeV2` call; the value does
    /// not outlive the call (the callback drops it before returning).
    pub(crate) unsafe fn new(raw: *mut OrtKernelContext, label: &'a str, specs: &'a [IoSpec]) -> KernelContext<'a> {
        KernelContext { raw, label, specs, outputs: RefCell::new(SmallVec::new()), _call: PhantomData }
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
    /// A call that fails changes nothing the kernel can see, so it may try again: with another
    /// `T` (an [`IoSpec::any`](super::IoSpec::any) output has the element type ORT gave it, read
    /// it from the input it follows), and, if ORT already allocated the output, the same shape.
    ///
    /// # Errors
    /// [`Error::ElementTypeMismatch`] if the output's element type is not `T`;
    /// [`Error::InvalidArgument`] if `index` is out of range, the output was already made, or an
    /// earlier call allocated it with another shape;
    /// [`Error::BadShape`] if the shape's element count overflows.
    ///
    /// Corresponds to `OrtApi::KernelContext_GetOutput`.
    #[doc(alias = "KernelContext_GetOutput")]
    pub fn output<T: Element>(&self, index: usize, shape: &[usize]) -> Result<ArrayViewMutD<'_, T>> {
        let api = api()?;
        let count = self.output_count()?;
        let bad = |why: String| Error::InvalidArgument { what: format!("output {index} of `{}`", self.label), why };
        if index >= count {
            return Err(bad(format!("the node has {count} outputs")));
        }
        let mismatch = |actual: ElementType| Error::ElementTypeMismatch {
            name: format!("output {index} of {}", self.label),
            expected: actual,
            got: T::TYPE,
            hint: String::new(),
        };
        // Everything that can be checked without ORT is checked before ORT allocates anything.
        if let Some(declared) = spec_at(self.specs, index).and_then(|s| s.element) {
            if declared != T::TYPE {
                return Err(mismatch(declared));
            }
        }
        let dims: SmallVec<[i64; 6]> = shape.iter().map(|&d| i64::try_from(d).unwrap_or(i64::MAX)).collect();
        let len = crate::value::element_count(&dims)?;
        let mut outputs = self.outputs.borrow_mut();
        if outputs.len() < count {
            outputs.resize(count, Output::NotMade);
        }
        let (value, element) = match &outputs[index] {
            Output::Viewed => return Err(bad("already made in this call; keep the first view".into())),
            Output::Allocated { value, dims: first, element: Some(element) } if *first == dims => (*value, *element),
            Output::Allocated { element: None, .. } => {
                return Err(bad("an earlier call failed after ONNX Runtime allocated it; it cannot be made now".into()))
            }
            Output::Allocated { dims: first, .. } => {
                return Err(bad(format!(
                    "ONNX Runtime already allocated it with shape {first:?} (in an earlier call that failed); \
                     ask again with that shape"
                )))
            }
            Output::NotMade => self.allocate(api, index, &dims, len, &mut outputs[index])?,
        };
        if element != T::TYPE {
            return Err(mismatch(element));
        }
        if len == 0 {
            outputs[index] = Output::Viewed;
            return ArrayViewMutD::from_shape(IxDyn(shape), &mut [])
                .map_err(|e| Error::InvalidArgument { what: "empty tensor".into(), why: e.to_string() });
        }
        // Viewed only once the view is certain: a failure here leaves it allocated, and unwritten.
        let data = data_of(api, value)?.cast::<T>();
        outputs[index] = Output::Viewed;
        // SAFETY: ORT allocated `len` elements of T (type checked above) for this output, aligned
        // by its allocator, and `allocate` zeroed them: zero bytes are a valid value of every
        // Element type (0, 0.0, false), so the view never exposes uninitialised memory. The buffer
        // is ours alone until compute returns (a view of this index is handed out once, see
        // `Output::Viewed`), and the view cannot outlive `&self`, i.e. the call.
        Ok(unsafe { ArrayViewMutD::from_shape_ptr(IxDyn(shape), data) })
    }

    /// Asks ORT for output `index` and zeroes it at once, whatever its element type, so no
    /// later failure leaves an allocated output unwritten. `slot` records the allocation as soon
    /// as it exists: if zeroing fails, the output still counts as allocated and unwritten, and
    /// [`check_written`](KernelContext::check_written) fails the run.
    fn allocate(
        &self,
        api: &Api,
        index: usize,
        dims: &[i64],
        len: usize,
        slot: &mut Output,
    ) -> Result<(*mut OrtValue, ElementType)> {
        let mut value: *mut OrtValue = std::ptr::null_mut();
        // SAFETY: `self.raw` is live; `dims` holds `dims.len()` values; the out-pointer is valid.
        // The value belongs to the context (we never release it).
        unsafe { ort!(api, KernelContext_GetOutput(self.raw, index, dims.as_ptr(), dims.len(), &mut value)) }?;
        if value.is_null() {
            return Err(Error::InvalidArgument {
                what: format!("output {index} of `{}`", self.label),
                why: "ONNX Runtime gave no value (an optional output the graph does not use?)".into(),
            });
        }
        *slot = Output::Allocated { value, dims: dims.into(), element: None };
        let element = tensor_meta(api, value)?.element_type;
        // Strings are objects ORT constructed, never raw bytes: left alone. Any other type must
        // be one the crate can size (an unknown code fails here, and the output stays unwritten).
        let size = if element == ElementType::String { 0 } else { element.byte_size()? };
        let bytes = len.checked_mul(size).ok_or_else(|| Error::InvalidArgument {
            what: format!("output {index} of `{}`", self.label),
            why: "its size in bytes overflows".into(),
        })?;
        if bytes > 0 {
            let data = data_of(api, value)?;
            // SAFETY: ORT allocated `len` elements of `element`, `bytes` bytes in all, for this
            // output; nothing else reads or writes it during this call.
            unsafe { std::ptr::write_bytes(data.cast::<u8>(), 0, bytes) };
        }
        *slot = Output::Allocated { value, dims: dims.into(), element: Some(element) };
        Ok((value, element))
    }

    /// After a compute that returned `Ok`: the first output the kernel left unwritten, as the
    /// error's message. Unwritten: allocated by ORT but never handed out as a view (an
    /// `output` call for it failed), or never made although it is required (variadic outputs
    /// count as required). An optional output may be left out.
    pub(crate) fn check_written(&self) -> std::result::Result<(), String> {
        let count = self.output_count().map_err(|e| format!("could not count the node's outputs: {e}"))?;
        let outputs = self.outputs.borrow();
        for index in 0..count {
            let optional = spec_at(self.specs, index).is_some_and(|s| s.arity == Arity::Optional);
            match outputs.get(index).unwrap_or(&Output::NotMade) {
                Output::Viewed => {}
                Output::Allocated { .. } => {
                    return Err(format!(
                        "the kernel returned Ok without writing output {index}: a call of output() for it \
                         failed and none succeeded after it"
                    ))
                }
                Output::NotMade if optional => {}
                Output::NotMade => {
                    return Err(format!(
                        "the kernel returned Ok without writing output {index}: every required output must \
                         be made with output()"
                    ))
                }
            }
        }
        Ok(())
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

/// One output during a compute call.
#[derive(Clone)]
enum Output {
    /// Not asked for yet.
    NotMade,
    /// ORT allocated it, but no view was handed out: an `output` call with the wrong element
    /// type, or one that failed after ORT allocated. `element` is set once the buffer is zeroed.
    Allocated { value: *mut OrtValue, dims: SmallVec<[i64; 6]>, element: Option<ElementType> },
    /// Handed out as a view, once.
    Viewed,
}

/// The spec of output `index`: its own, or the last one's if that one is variadic.
fn spec_at(specs: &[IoSpec], index: usize) -> Option<&IoSpec> {
    specs.get(index).or_else(|| specs.last().filter(|s| matches!(s.arity, Arity::Variadic { .. })))
}

/// Element type and shape of a tensor the context owns.
fn tensor_meta(api: &Api, value: *const OrtValue) -> Result<TensorMeta> {
    let mut info = std::ptr::null_mut();
    // SAFETY: `value` is a live tensor of the current call; the out-pointer is valid.
    unsafe { ort!(api, GetTensorTypeAndShape(value, &mut info)) }?;
    // SAFETY: on success we own `info`.
    let info = unsafe { Owned::from_raw(info) }?;
    crate::value::info::tensor_meta_of(api, info.as_ptr())
}

/// A tensor's data pointer.
fn data_of(api: &Api, value: *mut OrtValue) -> Result<*mut c_void> {
    let mut data = std::ptr::null_mut();
    // SAFETY: `value` is a live tensor of the current call; the out-pointer is valid.
    unsafe { ort!(api, GetTensorMutableData(value, &mut data)) }?;
    Ok(data)
}
