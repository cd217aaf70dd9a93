//! What a tensor is: element type and shape (the public [`TensorInfo`] and the cached
//! [`TensorMeta`]), reading them from ORT, and the checks on shapes and elements.

use onnxrt_sys::OrtTensorTypeAndShapeInfo;
use smallvec::SmallVec;

use super::ValueKind;
use crate::api::Api;
use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::status::ort;

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

    pub(super) fn to_info(&self) -> TensorInfo {
        TensorInfo { element_type: self.element_type, shape: self.shape.to_vec() }
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
pub(super) enum Access {
    Read,
    // `view_mut` and `copy_from_host` (feature `cuda`) write.
    Write,
}

/// Refuses to read or write a tensor as another element type; `name` is the output's, if known.
pub(super) fn check_element(info: &TensorMeta, wanted: ElementType, access: Access, name: Option<&str>) -> Result<()> {
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

/// Reads element type and concrete dims from a tensor type-and-shape info (not released here).
pub(crate) fn tensor_meta_of(api: &Api, info: *const OrtTensorTypeAndShapeInfo) -> Result<TensorMeta> {
    let (element_type, shape) = read_type_and_dims(api, info)?;
    Ok(TensorMeta { element_type, shape })
}

/// Element type and concrete dims (no symbolic names: values have none worth reading); no heap
/// allocation up to rank 6.
pub(crate) fn read_type_and_dims(api: &Api, info: *const OrtTensorTypeAndShapeInfo) -> Result<(ElementType, Shape)> {
    let mut raw_type = 0;
    // SAFETY: `info` is a live type info for the duration of this function.
    unsafe { ort!(api, GetTensorElementType(info, &mut raw_type)) }?;
    let mut rank = 0usize;
    // SAFETY: as above.
    unsafe { ort!(api, GetDimensionsCount(info, &mut rank)) }?;
    let mut dims: Shape = smallvec::smallvec![0i64; rank];
    // SAFETY: `dims` has room for `rank` values.
    unsafe { ort!(api, GetDimensions(info, dims.as_mut_ptr(), rank)) }?;
    Ok((ElementType::from_raw(raw_type), dims))
}
