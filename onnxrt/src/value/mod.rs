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
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::sync::{Arc, OnceLock};

use onnxrt_sys::OrtValue;

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;

// In the rendered docs: making values, then reading them, then the rest.
mod create;

mod read;

pub(crate) mod alias;
mod bytes;
#[cfg(feature = "cuda")]
mod cuda_owned;
#[cfg(feature = "cuda")]
mod device;
pub(crate) mod info;
pub(crate) mod optional;
pub(crate) mod pooled;
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod row_span;

pub(crate) use create::{allocated_tensor, string_tensor, tensor_over};
pub use info::TensorInfo;
pub(crate) use info::{check_bools, element_count, Meta, Shape, TensorMeta};
use pooled::Recycle;

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

impl Value<'static> {
    pub(crate) fn from_owned(raw: Owned<OrtValue>) -> Value<'static> {
        Value::new(raw, None, None)
    }
}

impl<'data> Value<'data> {
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
            (ValueKind::Tensor, Some(info::tensor_meta_of(api, info.as_ptr())?))
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

    /// Records that this value is an absent optional (known from how it was made).
    pub(crate) fn known_absent(self) -> Self {
        let _ = self.meta.set(Meta { kind: ValueKind::Optional, tensor: None });
        self
    }

    /// The value without its output name (for a value that is nobody's output).
    pub(crate) fn without_name(mut self) -> Self {
        self.name = None;
        self
    }

    /// Whether ORT may write into this value's memory (not for borrowed views).
    pub(crate) fn is_writable(&self) -> bool {
        self.writable
    }

    pub(crate) fn as_ptr(&self) -> *mut OrtValue {
        self.raw.as_ptr()
    }
}
