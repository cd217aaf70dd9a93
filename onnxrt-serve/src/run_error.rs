//! Whose fault a failed run of a model that loaded is ([`classify_run_error`]): the request's
//! (a 400) or the server's (a 500). Decided in the process that ran it (the server, or a
//! worker process of [`isolation`](crate::isolation)).

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
