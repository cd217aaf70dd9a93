//! Why a request got no outputs ([`InferError`]), mapped once from each error the run can meet
//! (`From`), and whose fault a failed run is ([`classify_run_error`]).

use crate::error::Error;
use crate::isolation::IsolatedError;
use crate::oip::datatype::datatype_of;

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

/// Whose fault a failed run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorKind {
    /// The request's inputs (400): onnxrt's checks, ORT's `INVALID_ARGUMENT`, or a node of a
    /// model that loads refusing the data it was given (a det side not a multiple of 32, a
    /// sample rate silero does not take, a zero-size axis).
    Request,
    /// Anything else (500): memory, a device, the runtime.
    Server,
}

/// Whose fault `error`, from a run of a model that loaded, is.
pub fn classify_run_error(error: &onnxrt::Error) -> RunErrorKind {
    match error {
        onnxrt::Error::UnknownInput { .. }
        | onnxrt::Error::UnknownOutput { .. }
        | onnxrt::Error::DuplicateInput { .. }
        | onnxrt::Error::MissingInput { .. }
        | onnxrt::Error::ShapeMismatch { .. }
        | onnxrt::Error::ElementTypeMismatch { .. }
        | onnxrt::Error::DataLength { .. }
        | onnxrt::Error::BadShape { .. } => RunErrorKind::Request,
        onnxrt::Error::Ort { code: onnxrt::ErrorCode::InvalidArgument, .. } => RunErrorKind::Request,
        onnxrt::Error::Ort { code: onnxrt::ErrorCode::Fail | onnxrt::ErrorCode::RuntimeException, message, .. }
            if node_refused_its_data(message) =>
        {
            RunErrorKind::Request
        }
        _ => RunErrorKind::Server,
    }
}

/// ORT's "Non-zero status code returned while running <Op> node" for a shape or value a node
/// cannot take, as opposed to memory or a device failing under it.
fn node_refused_its_data(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    lower.contains("while running")
        && !["allocat", "out of memory", "cuda", "cudnn", "cublas", "tensorrt"].iter().any(|w| lower.contains(w))
}
