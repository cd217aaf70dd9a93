//! Why the load generator could not start measuring. Failures of single requests while measuring
//! are not errors of the program: they are counted (see `tally`).

/// A reason the load generator stops before or instead of measuring.
#[derive(Debug, thiserror::Error)]
pub enum LoadgenError {
    /// The `--image` file could not be read.
    #[error("cannot read the picture {path}: {source}")]
    Picture { path: String, source: std::io::Error },
    /// A `--shape` argument that does not parse.
    #[error("--shape `{given}`: {reason}")]
    ShapeArgument { given: String, reason: String },
    /// The server did not answer the metadata request.
    #[error("GET {path} on {address}: {reason}; is the server up and does it speak the Open Inference Protocol?")]
    MetadataUnreachable { address: String, path: String, reason: String },
    /// The server answered the metadata request with an error status.
    #[error("GET {path} answered HTTP {status}: {body}")]
    MetadataStatus { path: String, status: u16, body: String },
    /// The metadata is not the protocol's model metadata.
    #[error("the metadata of model `{model}` is not the protocol's model metadata ({reason}): {body}")]
    MetadataShape { model: String, reason: String, body: String },
    /// An input has free axes and no `--shape` for it.
    #[error("input `{input}` has shape {shape:?} with free axes (-1); give its shape with --shape {input}={example}")]
    FreeAxes { input: String, shape: Vec<i64>, example: String },
    /// A `--shape` that disagrees with the model's fixed axes.
    #[error("--shape {input}={given:?} does not fit the model's shape {model:?} (rank and fixed axes must agree)")]
    ShapeMismatch { input: String, given: Vec<usize>, model: Vec<i64> },
    /// A `--shape` for an input the model does not have.
    #[error("--shape names input `{input}`; the model's inputs are {known:?}")]
    UnknownInput { input: String, known: Vec<String> },
    /// An input of a data type the generator cannot make values for.
    #[error("input `{input}` is {datatype}; the load generator makes numbers and booleans only")]
    UnsupportedDatatype { input: String, datatype: String },
    /// A `--rate` that is not a positive number.
    #[error("--rate {0}: give a positive number of requests per second")]
    Rate(f64),
    /// An option that only makes sense with the other protocol.
    #[error("{option} needs --protocol {protocol}")]
    WrongProtocol { option: &'static str, protocol: &'static str },
    /// The async runtime could not be started, or a task of it failed.
    #[error("runtime: {0}")]
    Runtime(String),
}
