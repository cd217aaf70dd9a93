//! ORT's status codes, as the `code` of [`Error::Ort`](super::Error::Ort).

/// ORT's status codes (`OrtErrorCode`), with room for codes newer runtimes add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `ORT_FAIL`
    Fail,
    /// `ORT_INVALID_ARGUMENT`
    InvalidArgument,
    /// `ORT_NO_SUCHFILE`
    NoSuchFile,
    /// `ORT_NO_MODEL`
    NoModel,
    /// `ORT_ENGINE_ERROR`
    EngineError,
    /// `ORT_RUNTIME_EXCEPTION`
    RuntimeException,
    /// `ORT_INVALID_PROTOBUF`
    InvalidProtobuf,
    /// `ORT_MODEL_LOADED`
    ModelLoaded,
    /// `ORT_NOT_IMPLEMENTED`
    NotImplemented,
    /// `ORT_INVALID_GRAPH`
    InvalidGraph,
    /// `ORT_EP_FAIL`
    EpFail,
    /// `ORT_MODEL_LOAD_CANCELED`: a [`LoadCanceller`](crate::LoadCanceller) stopped the load.
    ModelLoadCanceled,
    /// `ORT_MODEL_REQUIRES_COMPILATION`: the model must be compiled for its provider first.
    ModelRequiresCompilation,
    /// `ORT_NOT_FOUND`
    NotFound,
    /// A code this crate does not know.
    Unknown(u32),
}

impl ErrorCode {
    pub(crate) fn from_raw(raw: u32) -> ErrorCode {
        match raw {
            1 => ErrorCode::Fail,
            2 => ErrorCode::InvalidArgument,
            3 => ErrorCode::NoSuchFile,
            4 => ErrorCode::NoModel,
            5 => ErrorCode::EngineError,
            6 => ErrorCode::RuntimeException,
            7 => ErrorCode::InvalidProtobuf,
            8 => ErrorCode::ModelLoaded,
            9 => ErrorCode::NotImplemented,
            10 => ErrorCode::InvalidGraph,
            11 => ErrorCode::EpFail,
            12 => ErrorCode::ModelLoadCanceled,
            13 => ErrorCode::ModelRequiresCompilation,
            14 => ErrorCode::NotFound,
            other => ErrorCode::Unknown(other),
        }
    }
}
