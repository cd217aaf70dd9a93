//! What a file that is not an ONNX model looks like, and what to do about it (the payload of
//! [`Error::NotOnnxModel`](super::Error::NotOnnxModel); the sniffing is in the session's model check).

use std::fmt;

/// What the bytes of a file that is not an ONNX model look like (see [`Error::NotOnnxModel`](super::Error::NotOnnxModel)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModelFileProblem {
    /// The file is empty.
    Empty,
    /// A Git LFS pointer: the repository was cloned without fetching the LFS objects.
    GitLfsPointer {
        /// Size of the real model, as the pointer records it.
        model_size: Option<u64>,
    },
    /// An HTML page, typically an error or login page a download saved under the model's name.
    Html,
    /// Some other text file.
    Text {
        /// Its first line (shortened).
        first_line: String,
    },
    /// The file starts like an ONNX model but ends inside a field: a copy or download cut short.
    Truncated {
        /// Offset of the field that runs past the end.
        offset: u64,
        /// Bytes that field needs after its header.
        needs: u64,
        /// Bytes the file has after the header.
        has: u64,
    },
    /// Binary data that does not parse as an ONNX model (damaged, or another format).
    Unrecognised,
}

impl ModelFileProblem {
    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            ModelFileProblem::GitLfsPointer { .. } => {
                "fetch the real file: run `git lfs install && git lfs pull` in the repository it came from"
            }
            ModelFileProblem::Html => {
                "download the model again from the file's direct (raw) link, with any login or token the site needs"
            }
            ModelFileProblem::Empty | ModelFileProblem::Truncated { .. } => {
                "copy or download the model again and compare its size and checksum with the original"
            }
            ModelFileProblem::Text { .. } | ModelFileProblem::Unrecognised => {
                "point to the binary .onnx file (an ONNX ModelProto); export or convert the model to ONNX if needed"
            }
        }
    }
}

impl fmt::Display for ModelFileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelFileProblem::Empty => f.write_str("it is empty"),
            ModelFileProblem::GitLfsPointer { model_size: Some(size) } => {
                write!(f, "it is a Git LFS pointer to a {size}-byte file, not the model itself")
            }
            ModelFileProblem::GitLfsPointer { model_size: None } => {
                f.write_str("it is a Git LFS pointer, not the model itself")
            }
            ModelFileProblem::Html => f.write_str("it is an HTML page, not a model"),
            ModelFileProblem::Text { first_line } => write!(f, "it is a text file starting {first_line:?}"),
            ModelFileProblem::Truncated { offset, needs, has } => {
                write!(f, "it looks truncated: the field at byte {offset} needs {needs} bytes but only {has} follow")
            }
            ModelFileProblem::Unrecognised => {
                f.write_str("its bytes do not parse as an ONNX model (damaged or another format)")
            }
        }
    }
}
