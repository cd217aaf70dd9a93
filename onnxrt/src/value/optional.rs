//! Optional values (ONNX `optional(T)`): an absent one (`None`) is its own kind of value,
//! recognised with [`Value::is_none`]; a present one is simply its value. Absent optionals and
//! empty sequences are made by running a one-node model, so their constructors live with the
//! session (session/optional.rs).

use crate::api::api;
use crate::error::Result;
use crate::status::ort;
use crate::value::Value;

impl Value<'_> {
    /// Whether this is an absent optional value (`None`). Every tensor, sequence and map is
    /// "present".
    ///
    /// Corresponds to `OrtApi::HasValue`.
    #[doc(alias = "HasValue")]
    pub fn is_none(&self) -> Result<bool> {
        let api = api()?;
        let mut has = 0;
        // SAFETY: `self.raw` is a live value; the out-pointer is valid.
        unsafe { ort!(api, HasValue(self.raw.as_ptr(), &mut has)) }?;
        Ok(has == 0)
    }

    /// The value of an optional: `None` if absent, else the value itself (a present optional
    /// is the tensor or sequence it holds).
    pub fn into_optional(self) -> Result<Option<Self>> {
        Ok(if self.is_none()? { None } else { Some(self) })
    }
}
