//! The Open Inference Protocol: the model's inputs from `GET /v2/models/{name}`, shapes for free
//! axes from `--shape name=1x3x48x192`, and one `POST /v2/models/{name}/infer` body with every
//! input, as JSON tensors or with the binary-tensor extension.

use std::net::SocketAddr;

use onnxrt_serve::http_client::Connection;
use serde_json::{json, Value as Json};

use crate::error::LoadgenError;
use crate::request::Request;
use crate::synthetic::{self, Numbers, Tensor};

/// The header that says how long the JSON part of a body with binary tensors is.
const HEADER_LENGTH: &str = "inference-header-content-length";

/// An input as the model's metadata describes it (`-1` for a free axis).
#[derive(Debug, Clone, PartialEq)]
pub struct InputMetadata {
    pub name: String,
    pub datatype: String,
    pub shape: Vec<i64>,
}

/// The inputs of `model`, asked of the server.
pub async fn inputs(address: SocketAddr, model: &str) -> Result<Vec<InputMetadata>, LoadgenError> {
    let path = format!("/v2/models/{model}");
    let unreachable =
        |reason: String| LoadgenError::MetadataUnreachable { address: address.to_string(), path: path.clone(), reason };
    let mut connection = Connection::open(address).await.map_err(|e| unreachable(e.to_string()))?;
    let reply = connection.get(&path).await.map_err(|e| unreachable(e.to_string()))?;
    if reply.status != 200 {
        return Err(LoadgenError::MetadataStatus { path, status: reply.status, body: reply.text() });
    }
    parse_inputs(model, &reply.text())
}

fn parse_inputs(model: &str, body: &str) -> Result<Vec<InputMetadata>, LoadgenError> {
    let wrong =
        |reason: &str| LoadgenError::MetadataShape { model: model.into(), reason: reason.into(), body: body.into() };
    let metadata: Json = serde_json::from_str(body).map_err(|_| wrong("not JSON"))?;
    let inputs = metadata.get("inputs").and_then(Json::as_array).ok_or_else(|| wrong("no `inputs` list"))?;
    if inputs.is_empty() {
        return Err(wrong("the `inputs` list is empty; the server must describe the model's inputs"));
    }
    inputs
        .iter()
        .map(|input| {
            let name = input.get("name").and_then(Json::as_str).ok_or_else(|| wrong("an input without `name`"))?;
            let datatype =
                input.get("datatype").and_then(Json::as_str).ok_or_else(|| wrong("an input without `datatype`"))?;
            let shape = input
                .get("shape")
                .and_then(Json::as_array)
                .and_then(|dims| dims.iter().map(Json::as_i64).collect::<Option<Vec<i64>>>())
                .ok_or_else(|| wrong("an input without an integer `shape`"))?;
            Ok(InputMetadata { name: name.into(), datatype: datatype.into(), shape })
        })
        .collect()
}

/// Parses `--shape name=1x3x48x192` arguments into (name, dims).
pub fn parse_shape_arguments(given: &[String]) -> Result<Vec<(String, Vec<usize>)>, LoadgenError> {
    given
        .iter()
        .map(|text| {
            let wrong = |reason: &str| LoadgenError::ShapeArgument { given: text.clone(), reason: reason.into() };
            let (name, dims) =
                text.split_once('=').ok_or_else(|| wrong("with --protocol v2 write NAME=DIMS, e.g. x=1x3x48x192"))?;
            let dims = dims
                .split('x')
                .map(|d| d.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| wrong("the dimensions are whole numbers joined by `x`, e.g. 1x3x48x192"))?;
            Ok((name.to_owned(), dims))
        })
        .collect()
}

/// Every input's shape: its own when all axes are fixed, else the one given for it, which must
/// agree with the fixed axes.
pub fn resolve_shapes(
    inputs: &[InputMetadata],
    given: &[(String, Vec<usize>)],
) -> Result<Vec<Vec<usize>>, LoadgenError> {
    for (name, _) in given {
        if !inputs.iter().any(|input| &input.name == name) {
            let known = inputs.iter().map(|input| input.name.clone()).collect();
            return Err(LoadgenError::UnknownInput { input: name.clone(), known });
        }
    }
    inputs
        .iter()
        .map(|input| match given.iter().find(|(name, _)| name == &input.name) {
            Some((_, dims)) => {
                let fits = dims.len() == input.shape.len()
                    && dims.iter().zip(&input.shape).all(|(&d, &m)| m < 0 || d as i64 == m);
                if fits {
                    Ok(dims.clone())
                } else {
                    Err(LoadgenError::ShapeMismatch {
                        input: input.name.clone(),
                        given: dims.clone(),
                        model: input.shape.clone(),
                    })
                }
            }
            None if input.shape.iter().all(|&d| d >= 0) => Ok(input.shape.iter().map(|&d| d as usize).collect()),
            None => {
                // The first free axis is usually the batch (1); `N` marks the others to choose.
                let first_free = input.shape.iter().position(|&d| d < 0);
                let example = (input.shape.iter().enumerate())
                    .map(|(i, &d)| match (d < 0, Some(i) == first_free) {
                        (false, _) => d.to_string(),
                        (true, true) => "1".into(),
                        (true, false) => "N".into(),
                    })
                    .collect::<Vec<_>>();
                Err(LoadgenError::FreeAxes {
                    input: input.name.clone(),
                    shape: input.shape.clone(),
                    example: example.join("x"),
                })
            }
        })
        .collect()
}

/// The infer request for `model` with every input of the given shapes, values from `seed`. With
/// `binary`, the tensors follow the JSON header as bytes and the outputs are asked for as bytes.
pub fn request(
    model: &str,
    inputs: &[InputMetadata],
    shapes: &[Vec<usize>],
    seed: u64,
    binary: bool,
) -> Result<Request, LoadgenError> {
    let mut numbers = Numbers::new(seed);
    let mut described = Vec::with_capacity(inputs.len());
    let mut bytes = Vec::new();
    for (input, shape) in inputs.iter().zip(shapes) {
        let count = shape.iter().product();
        let mut entry = json!({ "name": input.name, "shape": shape, "datatype": input.datatype });
        match synthetic::tensor(&input.name, &input.datatype, count, &mut numbers, binary)? {
            Tensor::Json(data) => entry["data"] = data,
            Tensor::Raw(raw) => {
                entry["parameters"] = json!({ "binary_data_size": raw.len() });
                bytes.extend_from_slice(&raw);
            }
        }
        described.push(entry);
    }
    let path = format!("/v2/models/{model}/infer");
    let body = if binary {
        json!({ "inputs": described, "parameters": { "binary_data_output": true } })
    } else {
        json!({ "inputs": described })
    };
    let mut body = body.to_string().into_bytes();
    let mut headers = Vec::new();
    if binary {
        headers.push(("content-type".to_owned(), "application/octet-stream".to_owned()));
        headers.push((HEADER_LENGTH.to_owned(), body.len().to_string()));
        body.extend_from_slice(&bytes);
    } else {
        headers.push(("content-type".to_owned(), "application/json".to_owned()));
    }
    Ok(Request { path, headers, body: body.into() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cls() -> Vec<InputMetadata> {
        parse_inputs("cls", r#"{"name":"cls","inputs":[{"name":"x","datatype":"FP32","shape":[-1,3,48,192]}]}"#)
            .expect("metadata")
    }

    #[test]
    fn free_axes_need_a_shape_that_fits_the_fixed_ones() {
        let inputs = cls();
        assert!(matches!(resolve_shapes(&inputs, &[]), Err(LoadgenError::FreeAxes { .. })));
        let given = parse_shape_arguments(&["x=2x3x48x192".into()]).expect("parses");
        assert_eq!(resolve_shapes(&inputs, &given).expect("fits"), vec![vec![2, 3, 48, 192]]);
        let wrong = parse_shape_arguments(&["x=1x3x48x100".into()]).expect("parses");
        assert!(matches!(resolve_shapes(&inputs, &wrong), Err(LoadgenError::ShapeMismatch { .. })));
        let unknown = parse_shape_arguments(&["y=1".into()]).expect("parses");
        assert!(matches!(resolve_shapes(&inputs, &unknown), Err(LoadgenError::UnknownInput { .. })));
        assert!(parse_shape_arguments(&["1,3,48,192".into()]).is_err());
    }

    #[test]
    fn a_binary_body_is_a_json_header_then_the_bytes() {
        let inputs = cls();
        let shapes = vec![vec![1, 3, 48, 192]];
        let request = request("cls", &inputs, &shapes, 1, true).expect("request");
        let length: usize = request
            .headers
            .iter()
            .find(|(name, _)| name == HEADER_LENGTH)
            .and_then(|(_, value)| value.parse().ok())
            .expect("header length");
        assert_eq!(request.body.len(), length + 3 * 48 * 192 * 4);
        let header: Json = serde_json::from_slice(&request.body[..length]).expect("JSON header");
        assert_eq!(header["inputs"][0]["parameters"]["binary_data_size"], 3 * 48 * 192 * 4);
        let as_json = super::request("cls", &inputs, &shapes, 1, false).expect("request");
        let body: Json = serde_json::from_slice(&as_json.body).expect("JSON");
        assert_eq!(body["inputs"][0]["data"].as_array().map(Vec::len), Some(3 * 48 * 192));
    }
}
