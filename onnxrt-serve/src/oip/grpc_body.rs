//! `ModelInfer` over gRPC, without tonic: a `ModelInferRequest` decoded into an
//! [`infer::Request`] (inputs as `raw_input_contents`, what tritonclient sends, or typed
//! `contents`, or in a shared-memory region; parameters by the rules REST follows,
//! [`crate::oip::parameters`]), and an [`infer::Answer`] encoded back as `raw_output_contents`
//! (outputs asked for in shared memory written there, their entry empty).

use std::collections::HashMap;
use std::time::Duration;

use onnxrt::Value;

use crate::infer::{self, WantedOutput};
use crate::oip::grpc::infer_parameter::ParameterChoice as Choice;
use crate::oip::grpc::model_infer_request::InferInputTensor;
use crate::oip::grpc::model_infer_response::InferOutputTensor;
use crate::oip::grpc::{InferParameter, ModelInferRequest, ModelInferResponse};
use crate::oip::parameters::{output_parameters, place, request_parameters, Parameter};
use crate::oip::tensor;
use crate::repository::{InferError, ServedModel};
use crate::shared_memory::{OutputPlaces, Regions};

/// A decoded gRPC inference request.
pub struct Decoded {
    /// What to run.
    pub request: infer::Request,
    /// The outputs to write into shared-memory regions.
    pub places: OutputPlaces,
}

/// The request in `request`; `asked` is its gRPC deadline, if any. Inputs in shared memory are
/// read from `regions`, at most `limit` bytes each.
pub fn decode(
    request: &ModelInferRequest,
    asked: Option<Duration>,
    regions: &Regions,
    limit: usize,
) -> Result<Decoded, String> {
    let mut input_places = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        input_places.push(place(&input.name, lookup(&input.parameters))?);
    }
    // Inputs in shared memory have no raw contents: one entry per other input, in order.
    let sent = input_places.iter().filter(|p| p.is_none()).count();
    let raw = &request.raw_input_contents;
    if !raw.is_empty() && raw.len() != sent {
        return Err(format!(
            "raw_input_contents has {} entries for {sent} inputs not in shared memory; send one per input, in order",
            raw.len()
        ));
    }
    let mut raw = raw.iter();
    let mut inputs = Vec::with_capacity(request.inputs.len());
    for (input, place) in request.inputs.iter().zip(input_places) {
        let value = match place {
            Some(place) => {
                let bytes = regions.read(&input.name, &place, limit).map_err(|e| e.to_string())?;
                tensor::value_from_raw(&input.name, &input.datatype, &input.shape, &bytes)
            }
            None => match raw.next() {
                Some(bytes) => tensor::value_from_raw(&input.name, &input.datatype, &input.shape, bytes),
                None => value_from_contents(input),
            },
        }?;
        inputs.push((input.name.clone(), value));
    }
    let asked_by_parameters = request_parameters(lookup(&request.parameters))?;
    // The sooner of the gRPC deadline and the `timeout` parameter.
    let timeout = match (asked, asked_by_parameters.timeout) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut outputs = Vec::with_capacity(request.outputs.len());
    let mut places = OutputPlaces::new();
    for output in &request.outputs {
        let read = output_parameters(&output.name, lookup(&output.parameters))?;
        if let Some(place) = read.place {
            // Checked before the run, as Triton does: a bad place costs no run.
            let checked = regions.check(&output.name, &place).map_err(|e| e.to_string())?;
            places.insert(output.name.clone(), checked);
        }
        // gRPC answers every output raw.
        outputs.push(WantedOutput { name: output.name.clone(), binary: true, class_count: read.class_count });
    }
    let request =
        infer::Request { inputs, outputs, all_binary: true, timeout, sequence_id: asked_by_parameters.sequence };
    Ok(Decoded { request, places })
}

/// A parameter map's lookup.
fn lookup(parameters: &HashMap<String, InferParameter>) -> impl Fn(&str) -> Option<Parameter> + '_ {
    move |key| parameters.get(key).and_then(|p| p.parameter_choice.as_ref()).map(Parameter::from)
}

/// The answer to request `id` of `model`: every output as raw bytes, those in `places` written
/// into `regions` instead (their raw entry empty, keeping `raw_output_contents` aligned).
pub fn encode(
    model: &ServedModel,
    id: String,
    answer: &infer::Answer,
    places: &OutputPlaces,
) -> Result<ModelInferResponse, InferError> {
    let mut described = Vec::with_capacity(answer.outputs.len());
    let mut raw_outputs = Vec::with_capacity(answer.outputs.len());
    for (name, value, _) in &answer.outputs {
        let (datatype, shape) = tensor::datatype_and_shape(name, value).map_err(InferError::Failed)?;
        let bytes = tensor::raw_of(name, value).map_err(InferError::Failed)?;
        let mut parameters = HashMap::new();
        if let Some(place) = places.get(name) {
            place.write(name, &bytes).map_err(|e| InferError::Invalid(e.to_string()))?;
            let parameter = |choice| InferParameter { parameter_choice: Some(choice) };
            parameters
                .insert("shared_memory_region".into(), parameter(Choice::StringParam(place.region_name().to_owned())));
            let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
            parameters.insert("shared_memory_byte_size".into(), parameter(Choice::Int64Param(size)));
            raw_outputs.push(Vec::new());
        } else {
            raw_outputs.push(bytes);
        }
        described.push(InferOutputTensor {
            name: name.clone(),
            datatype: datatype.into(),
            shape,
            parameters,
            contents: None,
        });
    }
    Ok(ModelInferResponse {
        model_name: model.name.clone(),
        model_version: model.version.clone(),
        id,
        parameters: Default::default(),
        outputs: described,
        raw_output_contents: raw_outputs,
    })
}

/// A value from an input's typed `contents`.
fn value_from_contents(input: &InferInputTensor) -> Result<Value<'static>, String> {
    let name = &input.name;
    let contents = input.contents.clone().unwrap_or_default();
    let mut bytes = Vec::new();
    let narrow = |what: &str| format!("input `{name}`: an element does not fit {what}");
    match input.datatype.as_str() {
        "BYTES" => {
            for element in &contents.bytes_contents {
                let length = u32::try_from(element.len()).map_err(|_| narrow("a 4 GiB element"))?;
                bytes.extend(length.to_le_bytes());
                bytes.extend(element);
            }
        }
        "BOOL" => bytes.extend(contents.bool_contents.iter().map(|&b| u8::from(b))),
        "INT8" => {
            for &x in &contents.int_contents {
                bytes.extend(i8::try_from(x).map_err(|_| narrow("INT8"))?.to_le_bytes())
            }
        }
        "INT16" => {
            for &x in &contents.int_contents {
                bytes.extend(i16::try_from(x).map_err(|_| narrow("INT16"))?.to_le_bytes())
            }
        }
        "INT32" => contents.int_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "INT64" => contents.int64_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "UINT8" => {
            for &x in &contents.uint_contents {
                bytes.extend(u8::try_from(x).map_err(|_| narrow("UINT8"))?.to_le_bytes())
            }
        }
        "UINT16" => {
            for &x in &contents.uint_contents {
                bytes.extend(u16::try_from(x).map_err(|_| narrow("UINT16"))?.to_le_bytes())
            }
        }
        "UINT32" => contents.uint_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "UINT64" => contents.uint64_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "FP32" => contents.fp32_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "FP64" => contents.fp64_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "FP16" | "BF16" => {
            return Err(format!(
                "input `{name}`: {} has no typed contents field; send it in raw_input_contents",
                input.datatype
            ))
        }
        other => {
            tensor::element_type(name, other)?;
        }
    }
    tensor::value_from_raw(name, &input.datatype, &input.shape, &bytes)
}
