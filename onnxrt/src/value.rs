//! Values: tensors (from ndarray or `Vec` + shape, every element type, strings), sequences and
//! maps, and typed reading of what a model returns.
//!
//! Making tensors from Rust memory:
//! - [`Value::from_array`] takes an owned array. Standard-layout (C-contiguous) arrays are handed to
//!   ORT without a copy; any other layout (transposed, sliced with steps) is copied once into
//!   standard layout.
//! - [`Value::from_view`] borrows an array view without copying; non-standard layouts are refused
//!   with [`Error::NotContiguous`] (call `.as_standard_layout()` first), since a silent copy would
//!   defeat the point of borrowing.
//! - [`Value::from_vec`] takes a `Vec` and a shape.

use std::any::Any;
use std::ffi::{c_void, CString};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, OnceLock};

use ndarray::{ArrayD, ArrayView, ArrayViewD, Dimension, IxDyn};
use smallvec::SmallVec;

use onnxrt_sys::OrtValue;

use crate::api::api;
use crate::element::{Element, ElementType};
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::memory::{cpu_info, default_allocator};
use crate::session::output_pool::Recycle;
use crate::status::ort;

pub(crate) mod alias;
mod bytes;
pub(crate) mod optional;

/// What kind of value an `OrtValue` holds (`ONNXType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueKind {
    /// A dense tensor.
    Tensor,
    /// A sequence of values.
    Sequence,
    /// A map.
    Map,
    /// An optional value.
    Optional,
    /// A sparse tensor.
    SparseTensor,
    /// Opaque or unknown.
    Other(u32),
}

impl ValueKind {
    pub(crate) fn from_raw(raw: u32) -> ValueKind {
        match raw {
            1 => ValueKind::Tensor,
            2 => ValueKind::Sequence,
            3 => ValueKind::Map,
            5 => ValueKind::SparseTensor,
            6 => ValueKind::Optional,
            other => ValueKind::Other(other),
        }
    }

    pub(crate) fn name(self) -> String {
        match self {
            ValueKind::Tensor => "tensor".into(),
            ValueKind::Sequence => "sequence".into(),
            ValueKind::Map => "map".into(),
            ValueKind::Optional => "optional".into(),
            ValueKind::SparseTensor => "sparse tensor".into(),
            ValueKind::Other(raw) => format!("value of ONNX type #{raw}"),
        }
    }
}

/// The kind as errors name it: `tensor`, `sequence`, `map`, `optional`, `sparse tensor`.
impl std::fmt::Display for ValueKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

/// Element type and shape of a tensor value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Element type.
    pub element_type: ElementType,
    /// Concrete shape.
    pub shape: Vec<i64>,
}

impl TensorInfo {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }

    /// Whether the tensor holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An ONNX value owned by ORT. `'data` is the lifetime of Rust memory it borrows (`'static` when
/// it borrows nothing).
pub struct Value<'data> {
    // Released (or given back to its session's output pool) in `Drop`, before `_backing`.
    raw: ManuallyDrop<Owned<OrtValue>>,
    // Rust memory ORT reads through `raw` (tensor data, sequence members); freed after `raw`.
    _backing: Option<Box<dyn Any + Send + Sync>>,
    // Kind, element type and shape never change after creation: read once (or known at
    // creation), so checking inputs on every run costs no FFI call and no allocation.
    meta: OnceLock<Meta>,
    // False for values over borrowed read-only memory (`from_view`): ORT must never write them.
    writable: bool,
    // The output this value is, when a session run returned it (shared with the session: no
    // allocation per run); errors about the value name it.
    name: Option<Arc<str>>,
    // Set for a run's output ORT wrote into a preallocated buffer (see `session::output_pool`):
    // the buffer, and where to give it back on drop.
    recycle: Option<Recycle>,
    _borrow: PhantomData<&'data [u8]>,
}

impl Drop for Value<'_> {
    fn drop(&mut self) {
        // SAFETY: taken exactly once, here; `raw` is not used after this line.
        let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
        match self.recycle.take() {
            Some(recycle) => recycle.give_back(raw),
            None => drop(raw),
        }
        // `_backing` drops after this, with the other fields: the memory outlives the value.
    }
}

/// What a value is, cached.
#[derive(Debug, Clone)]
pub(crate) struct Meta {
    pub(crate) kind: ValueKind,
    /// Element type and shape, for tensors.
    pub(crate) tensor: Option<TensorMeta>,
}

/// A tensor's dimensions, inline up to rank 6 (caching them costs no heap allocation).
pub(crate) type Shape = SmallVec<[i64; 6]>;

/// Element type and shape of a tensor, as cached in a value ([`TensorInfo`] is the public copy).
#[derive(Debug, Clone)]
pub(crate) struct TensorMeta {
    pub(crate) element_type: ElementType,
    pub(crate) shape: Shape,
}

impl TensorMeta {
    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.shape.iter().map(|&d| d.max(0) as usize).product()
    }

    fn to_info(&self) -> TensorInfo {
        TensorInfo { element_type: self.element_type, shape: self.shape.to_vec() }
    }
}

// SAFETY: an OrtValue has no thread affinity; ORT allows creating it on one thread and using or
// releasing it on another. The backing data is itself Send.
unsafe impl Send for Value<'_> {}
// SAFETY: through &Value this crate only reads (type info, data views); ORT's read accessors do
// not mutate the value, so concurrent shared reads are sound.
unsafe impl Sync for Value<'_> {}

impl std::fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.kind(), self.tensor_info()) {
            (Ok(ValueKind::Tensor), Ok(info)) => write!(f, "Value(tensor {} {:?})", info.element_type, info.shape),
            (Ok(kind), _) => write!(f, "Value({})", kind.name()),
            (Err(_), _) => f.write_str("Value(?)"),
        }
    }
}

/// Checks a shape and returns its element count.
pub(crate) fn element_count(shape: &[i64]) -> Result<usize> {
    let bad = |why| Error::BadShape { shape: shape.to_vec(), why };
    // The product of the non-zero dimensions must fit too: ORT computes strides from it even when
    // another dimension is 0.
    let mut nonzero: usize = 1;
    let mut empty = false;
    for &dim in shape {
        let dim = usize::try_from(dim).map_err(|_| bad("negative dimension"))?;
        if dim == 0 {
            empty = true;
        } else {
            // `ok_or_else`: the error (and its copy of the shape) is built only on failure.
            nonzero = nonzero.checked_mul(dim).ok_or_else(|| bad("element count overflows"))?;
        }
    }
    if nonzero > isize::MAX as usize {
        return Err(bad("element count overflows"));
    }
    Ok(if empty { 0 } else { nonzero })
}

/// Whether a caller reads a tensor (the error then suggests the right type) or writes it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    // Only `copy_from_host` (feature `cuda`) writes.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Write,
}

/// Refuses to read or write a tensor as another element type; `name` is the output's, if known.
fn check_element(info: &TensorMeta, wanted: ElementType, access: Access, name: Option<&str>) -> Result<()> {
    if info.element_type == wanted {
        return Ok(());
    }
    let name = name.map(str::to_owned);
    Err(match access {
        Access::Read => Error::ReadTypeMismatch { name, holds: info.element_type, requested: wanted },
        Access::Write => Error::ElementTypeMismatch {
            name: name.unwrap_or_else(|| "value".into()),
            expected: info.element_type,
            got: wanted,
            hint: String::new(),
        },
    })
}

/// Rust's `bool` may only hold 0 or 1; a model can produce other bytes in a bool tensor.
pub(crate) fn check_bools(bytes: &[u8]) -> Result<()> {
    match bytes.iter().position(|&b| b > 1) {
        None => Ok(()),
        Some(index) => Err(Error::InvalidArgument {
            what: format!("bool tensor element {index} = {}", bytes[index]),
            why: "ONNX bools are 0 or 1; read the tensor as u8 bytes via a Cast in the model, or fix the model".into(),
        }),
    }
}

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

    pub(crate) fn from_owned(raw: Owned<OrtValue>) -> Value<'static> {
        Value::new(raw, None, None)
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

    fn new(
        raw: Owned<OrtValue>,
        backing: Option<Box<dyn Any + Send + Sync>>,
        tensor: Option<TensorMeta>,
    ) -> Value<'data> {
        let meta = OnceLock::new();
        if let Some(tensor) = tensor {
            let _ = meta.set(Meta { kind: ValueKind::Tensor, tensor: Some(tensor) });
        }
        Value {
            raw: ManuallyDrop::new(raw),
            _backing: backing,
            meta,
            writable: true,
            name: None,
            recycle: None,
            _borrow: PhantomData,
        }
    }

    /// A run's output that ORT wrote into a preallocated buffer of known type and shape.
    pub(crate) fn pooled(raw: Owned<OrtValue>, recycle: Recycle, tensor: TensorMeta) -> Value<'static> {
        let mut value = Value::new(raw, None, Some(tensor));
        value.recycle = Some(recycle);
        value
    }

    /// A value that keeps `backing` alive until after it is released.
    pub(crate) fn with_backing(raw: Owned<OrtValue>, backing: Box<dyn Any + Send + Sync>) -> Value<'static> {
        Value::new(raw, Some(backing), None)
    }

    /// The output this value is, for values a [`Session::run`](crate::Session::run) returned.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    pub(crate) fn with_name(mut self, name: Arc<str>) -> Self {
        self.name = Some(name);
        self
    }

    /// How errors refer to this value: its output name, or `value`.
    fn label(&self) -> String {
        self.name().unwrap_or("value").to_owned()
    }

    /// Kind, element type and shape, read from ORT on first use.
    ///
    /// Tensors are recognised with `IsTensor`, a flag read: `GetValueType` builds and frees a
    /// whole type description in ORT, so it is asked only for values that are not tensors. No
    /// Rust heap allocation up to rank 6.
    pub(crate) fn meta(&self) -> Result<&Meta> {
        if let Some(meta) = self.meta.get() {
            return Ok(meta);
        }
        let api = api()?;
        // An absent optional (a model's `None` output) holds nothing: ORT 1.16.2 crashed (SIGSEGV)
        // when `IsTensor` or GetValueType described one, so `HasValue` is asked first.
        let (kind, tensor) = if self.is_none()? {
            (ValueKind::Optional, None)
        } else if self.is_tensor(api)? {
            let mut info = std::ptr::null_mut();
            // SAFETY: `self.raw` is a live tensor; the out-pointer is valid.
            unsafe { ort!(api, GetTensorTypeAndShape(self.raw.as_ptr(), &mut info)) }?;
            // SAFETY: on success we own `info`.
            let info = unsafe { Owned::from_raw(info) }?;
            (ValueKind::Tensor, Some(crate::session::info::tensor_meta_of(api, info.as_ptr())?))
        } else {
            let mut raw = 0;
            // SAFETY: `self.raw` is a live value that holds something; the out-pointer is valid.
            unsafe { ort!(api, GetValueType(self.raw.as_ptr(), &mut raw)) }?;
            (ValueKind::from_raw(raw), None)
        };
        Ok(self.meta.get_or_init(|| Meta { kind, tensor }))
    }

    /// Whether this is a dense tensor: the cached kind, or ORT's `IsTensor` (no allocation).
    pub(crate) fn is_tensor(&self, api: &crate::api::Api) -> Result<bool> {
        if let Some(meta) = self.meta.get() {
            return Ok(meta.kind == ValueKind::Tensor);
        }
        let mut flag = 0;
        // SAFETY: `self.raw` is a live value; the out-pointer is valid.
        unsafe { ort!(api, IsTensor(self.raw.as_ptr(), &mut flag)) }?;
        Ok(flag != 0)
    }

    /// The kind of value (tensor, sequence, map...).
    ///
    /// Corresponds to `OrtApi::GetValueType`.
    #[doc(alias = "GetValueType")]
    pub fn kind(&self) -> Result<ValueKind> {
        self.meta().map(|m| m.kind)
    }

    /// Element type and shape, for tensors.
    ///
    /// Corresponds to `OrtApi::GetTensorTypeAndShape`.
    #[doc(alias = "GetTensorTypeAndShape")]
    pub fn tensor_info(&self) -> Result<TensorInfo> {
        self.tensor_meta().map(TensorMeta::to_info)
    }

    /// The cached tensor info, or [`Error::ValueKind`] for non-tensors.
    pub(crate) fn tensor_meta(&self) -> Result<&TensorMeta> {
        let meta = self.meta()?;
        meta.tensor.as_ref().ok_or_else(|| Error::ValueKind {
            name: self.label(),
            expected: "tensor",
            got: meta.kind.name(),
        })
    }

    fn expect_kind(&self, expected: ValueKind) -> Result<()> {
        let kind = self.kind()?;
        if kind == expected {
            Ok(())
        } else {
            Err(Error::ValueKind {
                name: self.label(),
                expected: if expected == ValueKind::Tensor { "tensor" } else { "sequence or map" },
                got: kind.name(),
            })
        }
    }

    /// The tensor's data, which the CPU can read (an error for device memory).
    fn host_data(&self) -> Result<*mut c_void> {
        self.host_data_if_host()?.ok_or_else(|| {
            let name = self.memory_name().unwrap_or_default();
            Error::InvalidArgument {
                what: format!("reading a tensor that lives in `{name}` memory"),
                why: "the CPU cannot read device memory; bind the output to MemoryInfo::cpu() or MemoryInfo::cuda_pinned(), or copy it with Value::copy_to_host (feature `cuda`)".into(),
            }
        })
    }

    /// The name of the memory the tensor lives in (`Cpu`, `Cuda`, `CudaPinned`).
    fn memory_name(&self) -> Result<String> {
        let api = api()?;
        let mut info = std::ptr::null();
        // SAFETY: `self.raw` is a live tensor; the memory info returned is owned by the value.
        unsafe { ort!(api, GetTensorMemoryInfo(self.raw.as_ptr(), &mut info)) }?;
        let mut name = std::ptr::null();
        // SAFETY: `info` is valid while the value lives; the name is a static string in ORT.
        unsafe { ort!(api, MemoryInfoGetName(info, &mut name)) }?;
        // SAFETY: a NUL-terminated static string.
        Ok(unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned())
    }

    /// The tensor's data if the CPU can read it (host or pinned memory), `None` on a device.
    pub(crate) fn host_data_if_host(&self) -> Result<Option<*mut c_void>> {
        // A preallocated output: ORT wrote into our host buffer (checked after the run).
        if let Some(recycle) = &self.recycle {
            return Ok(Some(recycle.data()));
        }
        let api = api()?;
        let mut info = std::ptr::null();
        // SAFETY: `self.raw` is a live tensor; the memory info returned is owned by the value.
        unsafe { ort!(api, GetTensorMemoryInfo(self.raw.as_ptr(), &mut info)) }?;
        let mut name = std::ptr::null();
        // SAFETY: `info` is valid while the value lives; the name is a static string in ORT.
        unsafe { ort!(api, MemoryInfoGetName(info, &mut name)) }?;
        // SAFETY: a NUL-terminated static string.
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        // Host memory by name (the common case, one call fewer), else by memory type.
        let on_host = name == b"Cpu" || name == b"CudaPinned" || {
            let mut mem_type = 0;
            // SAFETY: as above.
            unsafe { ort!(api, MemoryInfoGetMemType(info, &mut mem_type)) }?;
            mem_type == onnxrt_sys::OrtMemTypeCPUOutput || mem_type == onnxrt_sys::OrtMemTypeCPUInput
        };
        if !on_host {
            return Ok(None);
        }
        let mut data = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live tensor; the out-pointer is valid.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        Ok(Some(data))
    }

    /// Borrows a tensor's elements as an n-dimensional view.
    ///
    /// # Errors
    /// [`Error::ReadTypeMismatch`] if `T` is not the tensor's element type; [`Error::ValueKind`]
    /// if this is not a tensor; [`Error::InvalidArgument`] if the tensor is in device memory.
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        let info = self.tensor_meta()?;
        check_element(info, T::TYPE, Access::Read, self.name())?;
        // On the stack (ndarray keeps up to 4 dimensions inline, so views of rank <= 4 allocate nothing).
        let shape: SmallVec<[usize; 6]> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
        let len = info.len();
        if len == 0 {
            return ArrayViewD::from_shape(IxDyn(&shape), &[])
                .map_err(|e| Error::InvalidArgument { what: "empty tensor".into(), why: e.to_string() });
        }
        let data = self.host_data()?;
        if T::TYPE == ElementType::Bool {
            // SAFETY: a bool tensor holds `len` bytes; reading them as u8 is always valid.
            check_bools(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })?;
        }
        // SAFETY: ORT guarantees the buffer holds `len` elements of the tensor's type, which is T
        // (checked above), aligned for it, and for bool every byte was checked to be 0 or 1; it
        // lives as long as the value, which `&self` borrows. `shape` has `len` elements in all
        // (both come from the same cached dims), so its row-major strides stay inside the buffer.
        Ok(unsafe { ArrayViewD::from_shape_ptr(IxDyn(&shape), data.cast::<T>().cast_const()) })
    }

    /// Copies a tensor's elements into an owned array.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        self.view::<T>().map(|v| v.to_owned())
    }

    /// The strings of a string tensor, as bytes (ORT does not check UTF-8).
    ///
    /// Corresponds to `OrtApi::GetStringTensorContent`.
    #[doc(alias = "GetStringTensorContent")]
    pub fn string_bytes(&self) -> Result<Vec<Vec<u8>>> {
        let info = self.tensor_meta()?;
        check_element(info, ElementType::String, Access::Read, self.name())?;
        let count = info.len();
        let api = api()?;
        let mut total = 0usize;
        // SAFETY: `self.raw` is a live string tensor.
        unsafe { ort!(api, GetStringTensorDataLength(self.raw.as_ptr(), &mut total)) }?;
        let mut buffer = vec![0u8; total];
        let mut offsets = vec![0usize; count];
        // SAFETY: `buffer` has `total` bytes and `offsets` `count` entries, as ORT requires.
        unsafe {
            ort!(
                api,
                GetStringTensorContent(
                    self.raw.as_ptr(),
                    buffer.as_mut_ptr().cast(),
                    total,
                    offsets.as_mut_ptr(),
                    count
                )
            )
        }?;
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let start = offsets[i];
            let end = offsets.get(i + 1).copied().unwrap_or(total);
            out.push(buffer.get(start..end).unwrap_or_default().to_vec());
        }
        Ok(out)
    }

    /// The strings of a string tensor.
    ///
    /// # Errors
    /// [`Error::InvalidString`] naming the first element that is not UTF-8 (use
    /// [`Value::string_bytes`] to read such data).
    pub fn strings(&self) -> Result<Vec<String>> {
        self.string_bytes()?
            .into_iter()
            .enumerate()
            .map(|(index, bytes)| {
                String::from_utf8(bytes)
                    .map_err(|_| Error::InvalidString { index, why: "not valid UTF-8; read it with string_bytes()" })
            })
            .collect()
    }

    /// The members of a sequence (copies owned by the caller).
    ///
    /// Corresponds to `OrtApi::GetValueCount` + `OrtApi::GetValue`.
    #[doc(alias = "GetValue")]
    pub fn sequence_items(&self) -> Result<Vec<Value<'static>>> {
        self.expect_kind(ValueKind::Sequence)?;
        self.members()
    }

    /// The keys and values of a map, as two tensors.
    pub fn map_entries(&self) -> Result<(Value<'static>, Value<'static>)> {
        self.expect_kind(ValueKind::Map)?;
        let mut members = self.members()?.into_iter();
        match (members.next(), members.next()) {
            (Some(keys), Some(values)) => Ok((keys, values)),
            _ => Err(Error::InvalidArgument { what: "map value".into(), why: "ORT returned no keys/values".into() }),
        }
    }

    fn members(&self) -> Result<Vec<Value<'static>>> {
        let api = api()?;
        let allocator = default_allocator()?;
        let mut count = 0usize;
        // SAFETY: `self.raw` is a live sequence or map.
        unsafe { ort!(api, GetValueCount(self.raw.as_ptr(), &mut count)) }?;
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            let index = i32::try_from(index)
                .map_err(|_| Error::InvalidArgument { what: "sequence".into(), why: "too many members".into() })?;
            let mut member = std::ptr::null_mut();
            // SAFETY: index < count; ORT allocates a new value we own.
            unsafe { ort!(api, GetValue(self.raw.as_ptr(), index, allocator, &mut member)) }?;
            // SAFETY: on success `member` is a new value we own.
            out.push(Value::from_owned(unsafe { Owned::from_raw(member) }?));
        }
        Ok(out)
    }

    /// Whether ORT may write into this value's memory (not for borrowed views).
    pub(crate) fn is_writable(&self) -> bool {
        self.writable
    }

    pub(crate) fn as_ptr(&self) -> *mut OrtValue {
        self.raw.as_ptr()
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
    let api = api()?;
    let info = cpu_info()?;
    let count = element_count(shape)?;
    if count.checked_mul(element_type.size()).is_none() {
        return Err(Error::BadShape { shape: shape.to_vec(), why: "byte size overflows" });
    }
    // ORT rejects a null pointer even for empty tensors.
    let data = if data.is_null() { std::ptr::NonNull::<u64>::dangling().as_ptr().cast() } else { data };
    let mut raw = std::ptr::null_mut();
    // SAFETY: the caller's contract covers `data`; shape pointer/length describe a live slice.
    unsafe {
        ort!(
            api,
            CreateTensorWithDataAsOrtValue(
                info.as_ptr(),
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

/// Copies between host memory and tensors in device memory (the `cuda` feature).
#[cfg(feature = "cuda")]
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
    /// [`Error::InvalidArgument`] for a value that is not writable: one over borrowed memory
    /// ([`Value::from_view`]) or one that shares its tensor (an `IoBinding` output).
    pub fn copy_from_host<T: Element>(&mut self, data: &[T]) -> Result<()> {
        if !self.is_writable() {
            return Err(Error::InvalidArgument {
                what: "copy_from_host into a read-only value".into(),
                why: "the value borrows memory for reading (from_view) or shares its tensor with an IoBinding; \
                      write into a value made by Value::from_vec / from_array or an Allocator"
                    .into(),
            });
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

/// A new tensor of `shape` and `element_type` in ORT's default allocator (host memory, not yet
/// written: callers fill it before anyone can read it).
pub(crate) fn allocated_tensor(shape: &[i64], element_type: ElementType) -> Result<Owned<OrtValue>> {
    let api = api()?;
    let allocator = default_allocator()?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: shape pointer/length describe a live slice; the allocator is ORT's default
    // (process lifetime); the out-pointer is valid.
    unsafe {
        ort!(api, CreateTensorAsOrtValue(allocator, shape.as_ptr(), shape.len(), element_type.to_raw(), &mut raw))
    }?;
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
