//! `POST /v2/models/{name}/infer` over REST, without the web framework: the body (JSON, or the
//! binary-tensor extension's JSON header and raw tensors, or tensors in shared memory) decoded
//! into an [`infer::Request`], and an [`infer::Answer`] encoded back, its JSON bounded in size and
//! by the request's deadline, outputs asked for in shared memory written there.

use std::time::Instant;

use onnxrt::Value;
use serde_json::json;

use crate::infer::{self, WantedOutput};
use crate::oip::json_data::{value_from_json, BoundedWriter, Elements, Stopped};
use crate::oip::messages::{InferRequest, InferResponse, Parameters, ResponseOutput};
use crate::oip::parameters::{output_parameters, place, request_parameters, Parameter};
use crate::oip::tensor;
use crate::repository::InferError;
use crate::shared_memory::{OutputPlaces, Regions};

/// The header that says how long the JSON part of a body with binary tensors is.
pub const HEADER_LENGTH: &str = "inference-header-content-length";

/// How many times `--max-body-bytes` an answer's JSON may be: its elements as text take several
/// times their bytes; past this the client is told to ask for binary outputs.
pub const JSON_ANSWER_FACTOR: usize = 2;

/// A decoded REST inference request: its `id` (echoed) and the request.
pub struct Decoded {
    /// The request's `id`, if any.
    pub id: Option<String>,
    /// What to run.
    pub request: infer::Request,
    /// The outputs to write into shared-memory regions.
    pub places: OutputPlaces,
}

/// The request in `body`; `header_length` is the binary-tensor extension's header, when sent.
/// Inputs in shared memory are read from `regions`, at most `limit` bytes each.
pub fn decode(body: &[u8], header_length: Option<&[u8]>, regions: &Regions, limit: usize) -> Result<Decoded, String> {
    // The binary-tensor extension: the JSON header first, then the tensors' bytes.
    let (json_part, mut binary) = match header_length {
        Some(value) => {
            let length =
                std::str::from_utf8(value).ok().and_then(|v| v.trim().parse::<usize>().ok()).ok_or_else(|| {
                    format!(
                        "{HEADER_LENGTH} must be the JSON header's length in bytes, got {:?}",
                        String::from_utf8_lossy(value)
                    )
                })?;
            if length > body.len() {
                return Err(format!("{HEADER_LENGTH} says {length} bytes of JSON, the body has {} bytes", body.len()));
            }
            body.split_at(length)
        }
        None => (body, &[][..]),
    };
    let request: InferRequest<'_> = serde_json::from_slice(json_part)
        .map_err(|e| format!("the request is not an inference request's JSON: {e}"))?;
    let mut inputs: Vec<(String, Value<'static>)> = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        let binary_size =
            match input.parameters.get("binary_data_size") {
                None => None,
                Some(size) => Some(size.as_u64().and_then(|s| usize::try_from(s).ok()).ok_or_else(|| {
                    format!("input `{}`: binary_data_size must be a byte count, got {size}", input.name)
                })?),
            };
        let value = match (binary_size, input.data, place(&input.name, lookup(&input.parameters))?) {
            (None, None, Some(place)) => {
                let bytes = regions.read(&input.name, &place, limit).map_err(|e| e.to_string())?;
                tensor::value_from_raw(&input.name, &input.datatype, &input.shape, &bytes)
            }
            (_, _, Some(_)) => {
                Err(format!("input `{}` names a shared-memory region and also sends data; send one", input.name))
            }
            (Some(size), None, None) => {
                if size > binary.len() {
                    return Err(format!(
                        "input `{}`: binary_data_size is {size}, only {} bytes of binary data remain",
                        input.name,
                        binary.len()
                    ));
                }
                let (bytes, rest) = binary.split_at(size);
                binary = rest;
                tensor::value_from_raw(&input.name, &input.datatype, &input.shape, bytes)
            }
            (None, Some(data), None) => value_from_json(&input.name, &input.datatype, &input.shape, data.get()),
            (Some(_), Some(_), None) => {
                Err(format!("input `{}` has both `data` and binary_data_size; send one", input.name))
            }
            (None, None, None) => Err(format!("input `{}` has no `data` (nor binary_data_size)", input.name)),
        }?;
        inputs.push((input.name.clone(), value));
    }
    if !binary.is_empty() {
        return Err(format!(
            "{} bytes of binary data follow the inputs' data; each binary input must say its binary_data_size",
            binary.len()
        ));
    }
    let asked = request_parameters(lookup(&request.parameters))?;
    let mut outputs = Vec::with_capacity(request.outputs.len());
    let mut places = OutputPlaces::new();
    for output in &request.outputs {
        let read = output_parameters(&output.name, lookup(&output.parameters))?;
        if let Some(place) = read.place {
            // Checked before the run, as Triton does: a bad place costs no run.
            let checked = regions.check(&output.name, &place).map_err(|e| e.to_string())?;
            places.insert(output.name.clone(), checked);
        }
        outputs.push(WantedOutput { name: output.name.clone(), binary: read.binary, class_count: read.class_count });
    }
    let decoded = infer::Request {
        inputs,
        outputs,
        all_binary: asked.all_binary,
        timeout: asked.timeout,
        sequence_id: asked.sequence,
    };
    Ok(Decoded { id: request.id, request: decoded, places })
}

/// A parameter map's lookup.
fn lookup(parameters: &Parameters) -> impl Fn(&str) -> Option<Parameter> + '_ {
    move |key| parameters.get(key).and_then(Parameter::of_json)
}

/// An encoded answer: the body, and the length of its JSON part when raw tensors follow it.
pub struct Encoded {
    /// The whole body.
    pub body: Vec<u8>,
    /// The JSON header's length, when binary outputs follow it.
    pub json_length: Option<usize>,
}

/// The answer's body: JSON, with the binary outputs' bytes after it; the outputs in `places`
/// written into `regions` instead. Its JSON may be at most `json_limit` bytes and must be written
/// before `deadline`.
pub fn encode(
    model: (&str, &str),
    id: Option<String>,
    answer: &infer::Answer,
    places: &OutputPlaces,
    json_limit: usize,
    deadline: Instant,
) -> Result<Encoded, InferError> {
    let mut described = Vec::with_capacity(answer.outputs.len());
    let mut tail: Vec<u8> = Vec::new();
    let mut as_text = 0usize;
    for (name, value, binary) in &answer.outputs {
        let (datatype, shape) = tensor::datatype_and_shape(name, value).map_err(InferError::Failed)?;
        let mut parameters = serde_json::Map::new();
        let data = if let Some(place) = places.get(name) {
            let raw = tensor::raw_of(name, value).map_err(InferError::Failed)?;
            place.write(name, &raw).map_err(|e| InferError::Invalid(e.to_string()))?;
            // No parameters, as Triton answers: tritonclient's C++ HTTP client reads
            // `binary_data_size` from any output that has parameters.
            None
        } else if *binary {
            let raw = tensor::raw_of(name, value).map_err(InferError::Failed)?;
            parameters.insert("binary_data_size".into(), json!(raw.len()));
            tail.extend(raw);
            None
        } else {
            // Each element takes at least two characters ("0,"): refused before writing any.
            as_text = as_text.saturating_add(value.tensor_info().map_or(0, |i| i.len()).saturating_mul(2));
            Some(Elements(value))
        };
        described.push(ResponseOutput { name: name.clone(), datatype, shape, parameters, data });
    }
    let too_large = || {
        InferError::Invalid(format!(
            "the answer's JSON would be over {json_limit} bytes ({JSON_ANSWER_FACTOR} x the server's --max-body-bytes); \
             ask for the outputs as binary (the binary-tensor extension: parameter `binary_data_output` true, or \
             `binary_data` true on each output)"
        ))
    };
    if as_text > json_limit {
        return Err(too_large());
    }
    let response =
        InferResponse { model_name: model.0.to_owned(), model_version: model.1.to_owned(), id, outputs: described };
    let mut writer = BoundedWriter::new(json_limit, Some(deadline));
    if let Err(error) = serde_json::to_writer(&mut writer, &response) {
        return Err(match writer.stopped {
            Some(Stopped::TooLarge) => too_large(),
            Some(Stopped::Late) => InferError::Timeout(format!(
                "model `{}`: the request's deadline passed while its answer was written as JSON; ask for binary outputs",
                model.0
            )),
            None => InferError::Failed(format!("encoding the answer: {error}")),
        });
    }
    let mut body = writer.out;
    if tail.is_empty() {
        return Ok(Encoded { body, json_length: None });
    }
    let json_length = body.len();
    body.extend(tail);
    Ok(Encoded { body, json_length: Some(json_length) })
}
