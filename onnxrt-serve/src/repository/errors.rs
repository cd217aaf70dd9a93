//! Why a request got no outputs ([`InferError`]), mapped once from each error the run can meet
//! (`From`), by whose fault a failed run is ([`classify_run_error`]).

use crate::error::Error;
use crate::isolation::IsolatedError;
use crate::oip::datatype::datatype_of;
pub use crate::run_error::{classify_run_error, RunErrorKind};

/// Why a request got no outputs; each transport maps it to its own status.
#[derive(Debug)]
pub enum InferError {
    /// The request does not fit the model (400 / INVALID_ARGUMENT).
    Invalid(String),
    /// Every queue place is taken (503 / UNAVAILABLE).
    Overloaded(String),
    /// The deadline passed before the answer (504 / DEADLINE_EXCEEDED).
    Timeout(String),
    /// The model is shutting down (503 / UNAVAILABLE).
    ShuttingDown,
    /// The run failed (500 / INTERNAL).
    Failed(String),
}

impl std::fmt::Display for InferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InferError::Invalid(why) | InferError::Overloaded(why) | InferError::Timeout(why) => f.write_str(why),
            InferError::ShuttingDown => f.write_str("the server is shutting down; the request was not run"),
            InferError::Failed(why) => write!(f, "the model run failed: {why}"),
        }
    }
}

impl From<Error> for InferError {
    fn from(error: Error) -> InferError {
        match error {
            Error::QueueFull { .. } => InferError::Overloaded(format!("{error}")),
            Error::DeadlineExpired { .. } => InferError::Timeout(error.to_string()),
            Error::BatcherShutDown => InferError::ShuttingDown,
            Error::BatchRun { why, refused: true } => InferError::Invalid(why),
            Error::BatchRun { why, refused: false } => InferError::Failed(why),
            Error::Onnxrt(inner) => inner.into(),
            other => InferError::Failed(other.to_string()),
        }
    }
}

impl From<onnxrt::Error> for InferError {
    fn from(error: onnxrt::Error) -> InferError {
        match classify_run_error(&error) {
            // In the protocol's words: its datatypes, not Rust's element types.
            RunErrorKind::Request => match error {
                onnxrt::Error::ElementTypeMismatch { name, expected, got, .. } => InferError::Invalid(format!(
                    "input `{name}` is {} in the model; the request sent {}",
                    datatype_of(expected).unwrap_or("?"),
                    datatype_of(got).unwrap_or("?")
                )),
                onnxrt::Error::ShapeMismatch { name, expected, got, hint } => InferError::Invalid(format!(
                    "input `{name}` has shape {} in the model (-1: any size); the request sent {got:?}{}",
                    protocol_shape(&expected.0),
                    protocol_hint(&hint)
                )),
                onnxrt::Error::MissingInput { name, element_type, shape, required } => InferError::Invalid(format!(
                    "input `{name}` ({} {}) is missing; the model needs all of {required}",
                    datatype_of(element_type).unwrap_or("?"),
                    protocol_shape(&shape.0)
                )),
                other => InferError::Invalid(other.to_string()),
            },
            RunErrorKind::Server => InferError::Failed(error.to_string()),
        }
    }
}

/// A shape as the core writes it (`[batch, 3, p2o.DynamicDimension.0]`) as the protocol does:
/// free axes -1, whatever their name in the model.
pub fn protocol_shape(core: &str) -> String {
    let dims: Vec<&str> = core
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split(", ")
        .filter(|d| !d.is_empty())
        .map(|d| if d.parse::<i64>().is_ok() { d } else { "-1" })
        .collect();
    format!("[{}]", dims.join(", "))
}

/// The core's hint on a shape (advice in terms of its Rust API) in the protocol's terms.
fn protocol_hint(hint: &str) -> &'static str {
    if hint.contains("NHWC (channels-last) data for an NCHW") {
        "; this looks like channels-last (NHWC) data for a channels-first (NCHW) model: send it as [N, C, H, W]"
    } else if hint.contains("NCHW (channels-first) data for an NHWC") {
        "; this looks like channels-first (NCHW) data for a channels-last (NHWC) model: send it as [N, H, W, C]"
    } else if hint.contains("batch axis seems missing") {
        "; the batch axis seems missing: add a leading axis of 1 to the shape"
    } else if hint.contains("one axis too many") {
        "; there is one axis too many"
    } else if hint.contains("a sample is given without the batch axis") {
        "; a batched model's sample is sent with a leading axis of 1"
    } else {
        ""
    }
}

impl From<IsolatedError> for InferError {
    fn from(error: IsolatedError) -> InferError {
        match error {
            IsolatedError::Refused(why) => InferError::Invalid(why),
            IsolatedError::Failed(why) | IsolatedError::Crashed(why) => InferError::Failed(why),
            IsolatedError::Abandoned => InferError::Timeout("the run was stopped at the request's deadline".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_refusals_are_in_the_protocols_words() {
        let refused = onnxrt::Error::ShapeMismatch {
            name: "x".into(),
            expected: onnxrt::ShapeText("[p2o.DynamicDimension.0, 3, 48, ?]".into()),
            got: vec![3, 48, 320],
            hint: "; the batch axis seems missing: add one with `.insert_axis(Axis(0))`".into(),
        };
        let text = InferError::from(refused).to_string();
        assert!(text.contains("[-1, 3, 48, -1]") && text.contains("leading axis of 1"), "{text}");
        assert!(!text.contains("insert_axis") && !text.contains("DynamicDimension"), "{text}");
    }
}
