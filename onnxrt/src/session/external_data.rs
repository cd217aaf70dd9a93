//! External-data initializers given from memory (ORT's `AddExternalInitializers`): a model whose
//! weights live outside the protobuf, loaded from bytes with its weights as tensors by name.

use std::ffi::CString;

use crate::api::api;
use crate::error::{Error, Result};
use crate::ort_messages;
use crate::status::ort;
use crate::value::{Value, ValueKind};

/// Adds `initializers` to the session options; ORT copies them when the session is made.
pub(crate) fn add(options: *mut onnxrt_sys::OrtSessionOptions, initializers: &[(&str, &Value<'_>)]) -> Result<()> {
    if initializers.is_empty() {
        return Ok(());
    }
    let mut names = Vec::with_capacity(initializers.len());
    let mut values = Vec::with_capacity(initializers.len());
    for (name, value) in initializers {
        let refuse =
            |why: &str| Error::InvalidArgument { what: format!("external initializer `{name}`"), why: why.into() };
        if value.kind()? != ValueKind::Tensor {
            return Err(refuse("initializers are tensors"));
        }
        if value.host_data_if_host()?.is_none() {
            return Err(refuse("ORT copies external initializers from host memory; copy the tensor to the CPU first"));
        }
        let name_c = CString::new(*name).map_err(|_| Error::nul("initializer name", name))?;
        if names.contains(&name_c) {
            return Err(refuse("given twice"));
        }
        names.push(name_c);
        values.push(value.as_ptr().cast_const());
    }
    let name_ptrs: Vec<_> = names.iter().map(|n| n.as_ptr()).collect();
    let api = api()?;
    // SAFETY: `options` is live; both arrays hold `len` entries (NUL-terminated names, live
    // values) that outlive the session creation that follows in the same `commit` call: the
    // caller's borrow of the values spans it. ORT copies the data when the session is made and
    // drops its pointers from the options then.
    unsafe { ort!(api, AddExternalInitializers(options, name_ptrs.as_ptr(), values.as_ptr(), name_ptrs.len())) }
}

/// Adds to ORT's refusal which tensors were given (ORT names none of them) and, for external
/// data left without a tensor, what happened.
pub(crate) fn explain(error: Error, initializers: &[(&str, &Value<'_>)]) -> Error {
    if initializers.is_empty() {
        return error;
    }
    let Error::Ort { function, code, message } = error else { return error };
    let given: Vec<String> = initializers
        .iter()
        .map(|(name, value)| match value.tensor_info() {
            Ok(info) => format!("`{name}` {:?} {:?}", info.element_type, info.shape),
            Err(_) => format!("`{name}`"),
        })
        .collect();
    let hint = if ort_messages::EXTERNAL_DATA_WITHOUT_FILE.matches(&message) {
        "some external data of the model has no tensor here: a model loaded from memory has no folder to read data files from, so give a tensor for every initializer stored outside the model"
    } else if ort_messages::EXTERNAL_DATA_WRONG_TENSOR.matches(&message) {
        "a tensor's element type or shape differs from the model's initializer of that name"
    } else if ort_messages::EXTERNAL_DATA_UNKNOWN_NAME.matches(&message) {
        "a name given is not an initializer of the model with external data"
    } else {
        "check the tensors against the model's external initializers"
    };
    Error::Ort { function, code, message: format!("{message}\n{hint}; given: {}", given.join(", ")) }
}
