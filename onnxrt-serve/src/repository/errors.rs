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
                other => InferError::Invalid(other.to_string()),
            },
            RunErrorKind::Server => InferError::Failed(error.to_string()),
        }
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
