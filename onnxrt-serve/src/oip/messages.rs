//! The REST side's JSON bodies, as the Open Inference Protocol (KServe v2) describes them.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json};

use crate::oip::json_data::Elements;

/// `parameters`: free-form name → value pairs.
pub type Parameters = Map<String, Json>;

/// `POST /v2/models/{name}/infer`'s JSON (the whole body, or its JSON header when the
/// binary-tensor extension is used).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InferRequest<'a> {
    /// Echoed in the answer.
    #[serde(default)]
    pub id: Option<String>,
    /// Request parameters: `binary_data_output` (all outputs as binary), `timeout` (µs).
    #[serde(default)]
    pub parameters: Parameters,
    /// One entry per model input.
    #[serde(borrow)]
    pub inputs: Vec<RequestInput<'a>>,
    /// The outputs wanted (all when empty or absent).
    #[serde(default)]
    pub outputs: Vec<RequestOutput>,
}

/// One input tensor of a request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestInput<'a> {
    /// The model input's name.
    pub name: String,
    /// Its shape.
    pub shape: Vec<i64>,
    /// Its datatype (`FP32`, `INT64`…).
    pub datatype: String,
    /// `binary_data_size`: the tensor's bytes follow the JSON in the body.
    #[serde(default)]
    pub parameters: Parameters,
    /// The elements' text (absent when sent as binary), read once the datatype and shape are
    /// known ([`value_from_json`](crate::oip::json_data::value_from_json)): no JSON tree.
    #[serde(default, borrow)]
    pub data: Option<&'a RawValue>,
}

/// One requested output.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestOutput {
    /// The model output's name.
    pub name: String,
    /// `binary_data`: answer this output as binary.
    #[serde(default)]
    pub parameters: Parameters,
}

/// The answer to an inference request.
#[derive(Serialize)]
pub struct InferResponse<'v> {
    /// The model's name.
    pub model_name: String,
    /// The model's version.
    pub model_version: String,
    /// The request's id, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// One entry per output.
    pub outputs: Vec<ResponseOutput<'v>>,
}

/// One output tensor of an answer.
#[derive(Serialize)]
pub struct ResponseOutput<'v> {
    /// Its name.
    pub name: String,
    /// Its datatype.
    pub datatype: &'static str,
    /// Its shape.
    pub shape: Vec<i64>,
    /// `binary_data_size` when the data follows the JSON as binary.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub parameters: Parameters,
    /// The elements, when sent as JSON (written as they are read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Elements<'v>>,
}

/// A tensor in model metadata (free axes are -1).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TensorMetadata {
    /// Its name.
    pub name: String,
    /// Its datatype.
    pub datatype: &'static str,
    /// Its declared shape, -1 for a free axis.
    pub shape: Vec<i64>,
}

/// `GET /v2/models/{name}`.
#[derive(Debug, Serialize)]
pub struct ModelMetadata {
    /// The model's name.
    pub name: String,
    /// Its versions (one).
    pub versions: Vec<String>,
    /// `onnxruntime_onnx`, as Triton names it.
    pub platform: &'static str,
    /// Its inputs.
    pub inputs: Vec<TensorMetadata>,
    /// Its outputs.
    pub outputs: Vec<TensorMetadata>,
}

/// `GET /v2`.
#[derive(Debug, Serialize)]
pub struct ServerMetadata {
    /// `onnxrt-serve`.
    pub name: &'static str,
    /// This crate's version.
    pub version: &'static str,
    /// The protocol extensions served.
    pub extensions: Vec<&'static str>,
}

/// One entry of `POST /v2/repository/index`.
#[derive(Debug, Serialize)]
pub struct RepositoryEntry {
    /// The model's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// `READY` or `UNAVAILABLE`.
    pub state: &'static str,
    /// Why it is not ready (empty when it is).
    pub reason: String,
}

/// The protocol extensions this server answers.
pub const EXTENSIONS: [&str; 6] = [
    "binary_tensor_data",
    "model_repository",
    "parameters",
    "statistics",
    "system_shared_memory",
    "cuda_shared_memory",
];

/// The platform name in model metadata.
pub const PLATFORM: &str = "onnxruntime_onnx";
