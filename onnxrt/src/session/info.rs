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

/// `name: f32 [batch, 3, 224, 224]`; other kinds as `name: sequence<f32>`, `name: optional<f32
/// [?, 4]>`, `name: map`. What a person reads first about a model's input or output.
impl fmt::Display for ValueInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let element = self.element_type.map_or_else(|| "?".to_owned(), |e| e.to_string());
        let tensor = format!("{element} {}", self.shape_text());
        match (self.kind, self.contains) {
            (ValueKind::Tensor, _) => write!(f, "{}: {tensor}", self.name),
            (ValueKind::Optional, Some(ValueKind::Tensor)) => write!(f, "{}: optional<{tensor}>", self.name),
            (ValueKind::Optional, Some(ValueKind::Sequence)) => {
                write!(f, "{}: optional<sequence<{element}>>", self.name)
            }
            (ValueKind::Sequence, _) => write!(f, "{}: sequence<{element}>", self.name),
            (ValueKind::Map, _) => write!(f, "{}: map", self.name),
            (ValueKind::SparseTensor, _) => write!(f, "{}: sparse {tensor}", self.name),
            (kind, _) => write!(f, "{}: {kind:?}", self.name),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn info(kind: ValueKind, contains: Option<ValueKind>, element: Option<ElementType>, shape: Vec<Dim>) -> ValueInfo {
        ValueInfo { name: "x".into(), kind, contains, element_type: element, shape }
    }

    #[test]
    fn value_info_reads_as_name_type_and_shape() {
        let nchw = vec![Dim::Symbolic("batch".into()), Dim::Fixed(3), Dim::Fixed(224), Dim::Unknown];
        let f32 = Some(ElementType::F32);
        assert_eq!(info(ValueKind::Tensor, None, f32, nchw.clone()).to_string(), "x: f32 [batch, 3, 224, ?]");
        assert_eq!(info(ValueKind::Tensor, None, Some(ElementType::I64), vec![]).to_string(), "x: i64 []");
        let optional = info(ValueKind::Optional, Some(ValueKind::Tensor), f32, vec![Dim::Fixed(2)]);
        assert_eq!(optional.to_string(), "x: optional<f32 [2]>");
        assert_eq!(info(ValueKind::Sequence, Some(ValueKind::Tensor), f32, vec![]).to_string(), "x: sequence<f32>");
        assert_eq!(info(ValueKind::Map, None, None, vec![]).to_string(), "x: map");
    }
}
