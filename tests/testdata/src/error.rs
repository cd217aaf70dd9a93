use std::fmt;
use std::path::PathBuf;

/// Why some test data could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// The bytes are not a valid encoding of the expected message.
    Malformed(String),
    /// A tensor element type this crate does not decode (complex, 8-bit floats, unknown codes).
    Unsupported(i32),
    /// A value kind this crate does not decode (sparse tensors, for instance).
    UnsupportedValue(&'static str),
    /// The tensor keeps its data in an external file.
    ExternalData,
    /// The number of elements does not match the product of the dims.
    CountMismatch {
        /// Product of the dims.
        expected: usize,
        /// Elements actually present.
        actual: usize,
    },
    /// Reading a file or directory failed.
    Io {
        /// The path being read.
        path: PathBuf,
        /// The I/O error, rendered (kept as text so the error stays `Clone + Eq`).
        message: String,
    },
}

impl DecodeError {
    /// True when the data is well-formed but uses something this crate deliberately skips.
    pub fn is_unsupported(&self) -> bool {
        matches!(self, DecodeError::Unsupported(_) | DecodeError::UnsupportedValue(_) | DecodeError::ExternalData)
    }

    pub(crate) fn io(path: impl Into<PathBuf>, err: &std::io::Error) -> Self {
        DecodeError::Io { path: path.into(), message: err.to_string() }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Malformed(msg) => write!(f, "malformed protobuf: {msg}"),
            DecodeError::Unsupported(code) => {
                write!(f, "unsupported tensor element type {code}")
            }
            DecodeError::UnsupportedValue(what) => write!(f, "unsupported value kind: {what}"),
            DecodeError::ExternalData => write!(f, "external data not supported"),
            DecodeError::CountMismatch { expected, actual } => {
                write!(f, "tensor has {actual} elements but its dims call for {expected}")
            }
            DecodeError::Io { path, message } => {
                write!(f, "cannot read {}: {message}", path.display())
            }
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<onnxrt_onnx_proto::DecodeError> for DecodeError {
    /// Bytes that are not the message: truncated, a wrong wire type, nested too deep.
    fn from(err: onnxrt_onnx_proto::DecodeError) -> Self {
        DecodeError::Malformed(err.to_string())
    }
}
