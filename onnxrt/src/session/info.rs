//! Descriptions of a model's inputs and outputs: name, kind, element type, shape with symbolic
//! dimension names.

use std::ffi::CStr;
use std::fmt;

use onnxrt_sys::{OrtSession, OrtTensorTypeAndShapeInfo, OrtTypeInfo};

use crate::api::{api, Api};
use crate::element::ElementType;
use crate::error::Result;
use crate::handle::Owned;
use crate::memory::{default_allocator, take_string};
use crate::status::ort;
use crate::value::info::read_type_and_dims;
use crate::value::{Shape, ValueKind};

/// One dimension of a declared shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A fixed size.
    Fixed(i64),
    /// A dynamic axis with a name (e.g. `batch`).
    Symbolic(String),
    /// A dynamic axis without a name.
    Unknown,
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Symbolic(name) => f.write_str(name),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// A model input or output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueInfo {
    /// Its name.
    pub name: String,
    /// Tensor, sequence, map, optional...
    pub kind: ValueKind,
    /// For an optional: the kind of a present value (tensor or sequence); for a sequence: the
    /// kind of its members.
    pub contains: Option<ValueKind>,
    /// Element type, for tensors, sequences of tensors and optionals of either.
    pub element_type: Option<ElementType>,
    /// Declared shape, for tensors and optional tensors.
    pub shape: Vec<Dim>,
}

impl ValueInfo {
    /// The shape as text, e.g. `[batch, 3, 224, 224]`.
    pub fn shape_text(&self) -> String {
        let dims: Vec<String> = self.shape.iter().map(Dim::to_string).collect();
        format!("[{}]", dims.join(", "))
    }
}

fn read_tensor_type(api: &Api, info: *const OrtTensorTypeAndShapeInfo) -> Result<(ElementType, Shape, Vec<String>)> {
    let (element_type, dims) = read_type_and_dims(api, info)?;
    let rank = dims.len();
    let mut symbolic = vec![std::ptr::null(); rank];
    // SAFETY: `symbolic` has room for `rank` pointers; they point into `info` and are copied below.
    unsafe { ort!(api, GetSymbolicDimensions(info, symbolic.as_mut_ptr(), rank)) }?;
    let names = symbolic
        .iter()
        // SAFETY: each non-null pointer is a NUL-terminated string owned by `info`.
        .map(|&p| if p.is_null() { String::new() } else { unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned() })
        .collect();
    Ok((element_type, dims, names))
}

/// The description of a type info (not released here), named `name`.
fn read_type(api: &Api, type_info: *const OrtTypeInfo, name: String) -> Result<ValueInfo> {
    let mut onnx_type = 0;
    // SAFETY: `type_info` is live.
    unsafe { ort!(api, GetOnnxTypeFromTypeInfo(type_info, &mut onnx_type)) }?;
    let kind = ValueKind::from_raw(onnx_type);
    match kind {
        ValueKind::Tensor => {
            let mut tensor = std::ptr::null();
            // SAFETY: the cast returns a pointer owned by `type_info` (not to be released).
            unsafe { ort!(api, CastTypeInfoToTensorInfo(type_info, &mut tensor)) }?;
            let (element_type, dims, names) = read_tensor_type(api, tensor)?;
            let shape = dims
                .iter()
                .zip(names)
                .map(|(&d, name)| match (d, name.is_empty()) {
                    (d, _) if d >= 0 => Dim::Fixed(d),
                    (_, false) => Dim::Symbolic(name),
                    (_, true) => Dim::Unknown,
                })
                .collect();
            Ok(ValueInfo { name, kind, contains: None, element_type: Some(element_type), shape })
        }
        ValueKind::Sequence => {
            let mut sequence = std::ptr::null();
            // SAFETY: the cast returns a pointer owned by `type_info` (not to be released).
            unsafe { ort!(api, CastTypeInfoToSequenceTypeInfo(type_info, &mut sequence)) }?;
            let mut member = std::ptr::null_mut();
            // SAFETY: `sequence` is live; ORT returns a new type info we own.
            unsafe { ort!(api, GetSequenceElementType(sequence, &mut member)) }?;
            // SAFETY: on success we own `member`.
            let member = unsafe { Owned::from_raw(member) }?;
            let member = read_type(api, member.as_ptr(), String::new())?;
            Ok(ValueInfo {
                name,
                kind,
                contains: Some(member.kind),
                element_type: member.element_type,
                shape: Vec::new(),
            })
        }
        ValueKind::Optional => {
            let mut optional = std::ptr::null();
            // SAFETY: the cast returns a pointer owned by `type_info` (not to be released).
            unsafe { ort!(api, CastTypeInfoToOptionalTypeInfo(type_info, &mut optional)) }?;
            let mut contained = std::ptr::null_mut();
            // SAFETY: `optional` is live; ORT returns a clone of the contained type info, which
            // the caller releases (ORT's implementation clones it despite the header's "owned by
            // OrtOptionalTypeInfo"; its C++ wrapper releases it too).
            unsafe { ort!(api, GetOptionalContainedTypeInfo(optional, &mut contained)) }?;
            // SAFETY: on success we own `contained`.
            let contained = unsafe { Owned::from_raw(contained) }?;
            let contained = read_type(api, contained.as_ptr(), String::new())?;
            Ok(ValueInfo { name, kind, contains: Some(contained.kind), ..contained })
        }
        _ => Ok(ValueInfo { name, kind, contains: None, element_type: None, shape: Vec::new() }),
    }
}

/// Which side of the model.
#[derive(Clone, Copy)]
pub(crate) enum Side {
    Input,
    Output,
}

/// Reads every input or output description of a session.
pub(crate) fn describe(session: *mut OrtSession, side: Side) -> Result<Vec<ValueInfo>> {
    let api = api()?;
    let allocator = default_allocator()?;
    let mut count = 0usize;
    match side {
        // SAFETY: `session` is live for the duration of this call (the caller owns it).
        Side::Input => unsafe { ort!(api, SessionGetInputCount(session, &mut count)) }?,
        // SAFETY: as above.
        Side::Output => unsafe { ort!(api, SessionGetOutputCount(session, &mut count)) }?,
    }
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let mut name = std::ptr::null_mut();
        let mut type_info = std::ptr::null_mut();
        match side {
            // SAFETY: index < count; ORT allocates the name with `allocator` and a type info we own.
            Side::Input => unsafe {
                ort!(api, SessionGetInputName(session, index, allocator, &mut name))?;
                ort!(api, SessionGetInputTypeInfo(session, index, &mut type_info))?;
            },
            // SAFETY: as above.
            Side::Output => unsafe {
                ort!(api, SessionGetOutputName(session, index, allocator, &mut name))?;
                ort!(api, SessionGetOutputTypeInfo(session, index, &mut type_info))?;
            },
        }
        // SAFETY: `name` came from `allocator` and is freed exactly once inside.
        let name = unsafe { take_string(allocator, name) };
        // SAFETY: on success we own the type info.
        let type_info = unsafe { Owned::from_raw(type_info) }?;
        out.push(read_type(api, type_info.as_ptr(), name)?);
    }
    Ok(out)
}
