//! `POST /v1/models/{name}/infer`: the picture step. For a model configured with
//! `"preprocess": "imagenet"` (and the single model of `serve --model`, and the embedded one), a
//! JPEG or PNG is decoded within size limits, resized and cropped to 224×224 with ImageNet's
//! mean/std, run, and answered with the top-k classes; a raw tensor body
//! (`application/octet-stream`, shape in `X-Tensor-Shape`) skips the picture step. The contract:
//! one f32 input `[batch, …fixed]` and an f32 output `[batch, classes]`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use crate::imagenet;
use crate::repository::ServedModel;
use crate::tensor_body;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use onnxrt::{ElementType, Value};
use serde_json::json;

use crate::server::access::error_response;
use crate::server::app::App;
use crate::server::rest::Refusal;

pub fn routes() -> Router<Arc<App>> {
    Router::new().route("/v1/models/{name}/infer", post(infer)).route("/health", get(health))
}

/// What the picture step needs of a model.
struct Contract {
    input: String,
    output: String,
    /// One sample's shape (the input's shape without the batch axis).
    sample_shape: Vec<usize>,
    classes: usize,
}

impl Contract {
    fn of(model: &ServedModel) -> Result<Contract, String> {
        let (input, output) = match (&model.inputs[..], model.outputs.first()) {
            ([input], Some(output)) => (input, output),
            (inputs, _) => {
                return Err(format!(
                    "the picture step needs a model with one input, `{}` has {}; use /v2/models/{}/infer",
                    model.name,
                    inputs.len(),
                    model.name
                ))
            }
        };
        if input.element_type != ElementType::F32 || output.element_type != ElementType::F32 {
            return Err(format!("the picture step feeds and reads f32; use /v2/models/{}/infer", model.name));
        }
        let fixed = |dims: &[i64]| -> Option<Vec<usize>> {
            dims.iter().map(|&d| usize::try_from(d).ok().filter(|&d| d > 0)).collect()
        };
        let sample_shape = input.shape.get(1..).and_then(fixed).filter(|s| !s.is_empty()).ok_or_else(|| {
            format!(
                "input `{}` is {:?}; the picture step needs [batch, ...] with the other axes fixed",
                input.name, input.shape
            )
        })?;
        let classes =
            output.shape.get(1..).and_then(fixed).filter(|s| s.len() == 1).map(|s| s[0]).ok_or_else(|| {
                format!("output `{}` is {:?}; the picture step needs [batch, classes]", output.name, output.shape)
            })?;
        Ok(Contract { input: input.name.clone(), output: output.name.clone(), sample_shape, classes })
    }
}

fn bad_request(message: impl Into<String>) -> Response {
    error_response(StatusCode::BAD_REQUEST, message)
}

async fn infer(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let started = Instant::now();
    let _in_flight = app.metrics.start();
    let response = match answer(&app, &name, &query, &headers, body).await {
        Ok(json) => (StatusCode::OK, Json(json)).into_response(),
        Err(refusal) => refusal,
    };
    app.metrics.answered(response.status().as_u16(), started.elapsed());
    response
}

async fn answer(
    app: &App,
    name: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<serde_json::Value, Response> {
    let model = crate::server::rest::find(app, name, None)?;
    // Counted once it is answered; a refusal from here on counts as a failure.
    let mut tally = crate::repository::model::Tally::start(&model.stats);
    if model.config.preprocess.as_deref() != Some("imagenet") {
        return Err(error_response(
            StatusCode::NOT_FOUND,
            format!(
                "model `{name}` has no picture step (\"preprocess\": \"imagenet\" in its config.json); send tensors to \
                 /v2/models/{name}/infer"
            ),
        ));
    }
    let contract = Contract::of(&model).map_err(bad_request)?;
    let classes = contract.classes;
    let k = match query.get("top_k") {
        None => 5.min(classes),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|k| (1..=classes).contains(k))
            .ok_or_else(|| bad_request(format!("top_k must be a number from 1 to {classes}, got `{text}`")))?,
    };
    let with_logits = query.get("logits").is_some_and(|v| v == "true" || v == "1");
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let sample = match media.as_str() {
        "image/jpeg" | "image/png" => picture_sample(app, &contract, body).await?,
        tensor_body::CONTENT_TYPE => tensor_sample(&contract, headers, &body)?,
        _ => {
            return Err(error_response(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                "Content-Type `{content_type}` is not accepted: send image/jpeg, image/png, or {} with an `{}` header",
                tensor_body::CONTENT_TYPE,
                tensor_body::SHAPE_HEADER
            ),
            ))
        }
    };
    let mut shape = vec![1i64];
    shape.extend(contract.sample_shape.iter().map(|&d| d as i64));
    let value = Value::from_vec(&shape, sample)
        .map_err(|e| error_response(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    // The same core as /v2: infer::run (its checks, deadline, extensions).
    let wanted = crate::infer::WantedOutput { name: contract.output.clone(), ..Default::default() };
    let request = crate::infer::Request {
        inputs: vec![(contract.input.clone(), value)],
        outputs: vec![wanted],
        ..Default::default()
    };
    let answer = crate::infer::run(&model, request, app.deadline(None), &mut tally.phases)
        .await
        .map_err(|error| Refusal::from(error).0)?;
    tally.answered();
    let logits: Vec<f32> = answer
        .outputs
        .first()
        .and_then(|(_, v, _)| v.view::<f32>().ok())
        .map(|view| view.iter().copied().collect())
        .ok_or_else(|| error_response(StatusCode::INTERNAL_SERVER_ERROR, "the run returned no logits"))?;
    let ranked: Vec<serde_json::Value> = imagenet::top_k(&imagenet::softmax(&logits), k)
        .into_iter()
        .map(|(class, probability)| {
            let label = model.labels.get(class).cloned().unwrap_or_else(|| format!("class {class}"));
            json!({ "class": class, "label": label, "probability": probability })
        })
        .collect();
    let mut answer = json!({ "model": model.name, "top_k": ranked });
    if with_logits {
        answer["logits"] = json!(logits);
    }
    Ok(answer)
}

/// Decodes and preprocesses a picture off the async workers, a bounded number at once.
async fn picture_sample(app: &App, contract: &Contract, body: Bytes) -> Result<Vec<f32>, Response> {
    let side = imagenet::SIDE as usize;
    if contract.sample_shape != [3, side, side] {
        return Err(bad_request(format!(
            "this model takes {:?} samples, not pictures: send a raw tensor ({})",
            contract.sample_shape,
            tensor_body::CONTENT_TYPE
        )));
    }
    let _slot = app
        .decode_slots
        .acquire()
        .await
        .map_err(|_| error_response(StatusCode::SERVICE_UNAVAILABLE, "shutting down"))?;
    let limits = app.decode_limits;
    let decoded = tokio::task::spawn_blocking(move || {
        imagenet::decode_bounded(&body, limits)
            .map(|picture| imagenet::preprocess(&picture).into_raw_vec_and_offset().0)
    })
    .await;
    match decoded {
        Ok(result) => result.map_err(bad_request),
        // A decoder that panicked on a hostile picture ends its task, not the server.
        Err(_) => Err(bad_request("the picture could not be decoded")),
    }
}

/// A raw tensor: its shape must be one sample, with or without a batch axis of 1.
fn tensor_sample(contract: &Contract, headers: &HeaderMap, body: &[u8]) -> Result<Vec<f32>, Response> {
    let shape_header = headers.get(tensor_body::SHAPE_HEADER).and_then(|v| v.to_str().ok());
    let (shape, data) = tensor_body::decode(shape_header, body).map_err(bad_request)?;
    let expected = &contract.sample_shape;
    let fits = shape == *expected || (shape.first() == Some(&1) && shape[1..] == expected[..]);
    if !fits {
        return Err(bad_request(format!(
            "tensor shape {shape:?} does not fit the model: send {expected:?} or [1, ...] of it"
        )));
    }
    Ok(data)
}

/// `GET /health`: 200 when every model is warmed up and the server is not draining.
async fn health(State(app): State<Arc<App>>) -> Response {
    if app.is_ready() {
        let models: Vec<String> = app.repository.models().iter().map(|m| m.name.clone()).collect();
        Json(json!({ "status": "ok", "models": models })).into_response()
    } else {
        let status = if app.draining.load(std::sync::atomic::Ordering::Relaxed) { "draining" } else { "starting" };
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": status }))).into_response()
    }
}
