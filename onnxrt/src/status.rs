//! Turning an `OrtStatus*` into a `Result`. The status is released here, where it is read, so an
//! [`Error`] owns no ORT memory.

use std::ffi::CStr;

use onnxrt_sys::OrtStatus;

use crate::api::api;
use crate::error::{Error, ErrorCode, Result};
use crate::ort_messages;

/// Converts a status returned by `function`, releasing it.
///
/// # Safety
/// `status` is null or a status just returned by an ORT function and not yet released.
pub(crate) unsafe fn check(function: &'static str, status: *mut OrtStatus) -> Result<()> {
    if status.is_null() {
        return Ok(());
    }
    let api = api()?;
    let ort = api.ort;
    // SAFETY: `status` is a live status (caller's contract); these accessors only read it.
    let (code, message) = unsafe {
        let code = ort.GetErrorCode.map_or(1, |f| f(status));
        let message = ort.GetErrorMessage.map(|f| f(status)).filter(|m| !m.is_null());
        let message = message.map(|m| CStr::from_ptr(m).to_string_lossy().into_owned()).unwrap_or_default();
        (code, message)
    };
    if let Some(release) = ort.ReleaseStatus {
        // SAFETY: released exactly once, after the last read above.
        unsafe { release(status) };
    }
    Err(classify(function, ErrorCode::from_raw(code), message))
}

/// Gives the failures people act on their own variant.
fn classify(function: &'static str, code: ErrorCode, message: String) -> Error {
    if let Some(error) = recognise_custom_op(function, &message) {
        return error;
    }
    if ort_messages::OUT_OF_MEMORY.matches(&message) {
        return Error::OutOfMemory { function, message, host: false };
    }
    if ort_messages::TERMINATED.matches(&message) {
        return Error::Terminated { message };
    }
    if ort_messages::MODEL_TOO_NEW.matches(&message) {
        let runtime = api().map(|a| a.version.clone()).unwrap_or_default();
        let max_opset = crate::api::max_opset(&runtime);
        return Error::ModelTooNew { message, runtime, max_opset };
    }
    if let Some(error) = crate::gpu_failure::recognise(function, &message) {
        return error;
    }
    Error::Ort { function, code, message }
}

/// The start of the message of every status a custom operator's callback makes; [`classify`]
/// looks for it.
pub(crate) const CUSTOM_OP_MARKER: &str = "onnxrt custom op `";

/// The error a status made by a custom operator's callback (custom_op/callbacks.rs) became, once
/// ORT passed it on (ORT puts its own words, such as the node's name, before ours).
fn recognise_custom_op(function: &'static str, message: &str) -> Option<Error> {
    let start = message.find(CUSTOM_OP_MARKER)? + CUSTOM_OP_MARKER.len();
    let rest = &message[start..];
    let (op, rest) = rest.split_once('`')?;
    let (panicked, message) = if let Some(text) = rest.strip_prefix(" panicked: ") {
        (true, text)
    } else {
        (false, rest.strip_prefix(" failed: ")?)
    };
    Some(Error::CustomOp { op: op.to_owned(), panicked, message: message.to_owned(), function })
}

/// Calls an ORT function that returns a status and converts it. Use inside `unsafe { … }` with a
/// `// SAFETY:` line for the call's arguments; a function missing from the table is an error.
macro_rules! ort {
    ($api:expr, $function:ident($($arg:expr),* $(,)?)) => {
        match $api.ort.$function {
            Some(f) => $crate::status::check(stringify!($function), f($($arg),*)),
            None => Err($crate::error::Error::missing(stringify!($function))),
        }
    };
}
pub(crate) use ort;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_message_is_recognised_inside_ort_words() {
        let ort = format!("Non-zero status code returned while running Scale node. Name:'n' Status Message: {CUSTOM_OP_MARKER}d::Scale` panicked: boom: 3");
        let error = recognise_custom_op("Run", &ort).expect("recognised");
        assert!(
            matches!(&error, Error::CustomOp { op, panicked: true, message, function: "Run" } if op == "d::Scale" && message == "boom: 3"),
            "{error:?}"
        );
        assert!(recognise_custom_op("Run", "some other ORT failure").is_none());
    }
}
