//! The Open Inference Protocol over REST: `/v2` (server metadata), `/v2/health/{live,ready}`,
//! `/v2/models/{name}[/versions/{version}]` (metadata), `…/ready`, `…/infer` (JSON tensors and
//! the binary-tensor extension), `POST /v2/repository/index`, `…/models/{name}/load`, `…/unload`.

use std::sync::Arc;
use std::time::Duration;

use crate::infer::{self, WantedOutput};
use crate::oip::messages::{InferRequest, InferResponse, RepositoryEntry, ResponseOutput, ServerMetadata, EXTENSIONS};
use crate::oip::tensor;
use crate::repository::{ControlError, FindError, InferError, ServedModel};
use crate::shared_memory::{self, Place};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use onnxrt::Value;
use serde_json::{json, Value as Json_};

use crate::server::access::error_response;
use crate::server::app::App;

/// The header that says how long the JSON part of a body with binary tensors is.
const HEADER_LENGTH: &str = "inference-header-content-length";

pub fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/v2", get(server_metadata))
        .route("/v2/health/live", get(live))
        .route("/v2/health/ready", get(ready))
        .route("/v2/models/{name}", get(model_metadata))
        .route("/v2/models/{name}/versions/{version}", get(model_metadata_version))
        .route("/v2/models/{name}/config", get(model_config))
        .route("/v2/models/{name}/versions/{version}/config", get(model_config_version))
        .route("/v2/models/stats", get(all_statistics))
        .route("/v2/models/{name}/stats", get(model_statistics))
        .route("/v2/models/{name}/versions/{version}/stats", get(model_statistics_version))
        .route("/v2/models/{name}/ready", get(model_ready))
        .route("/v2/models/{name}/versions/{version}/ready", get(model_ready_version))
        .route("/v2/models/{name}/infer", post(infer))
        .route("/v2/models/{name}/versions/{version}/infer", post(infer_version))
        .route("/v2/repository/index", post(repository_index))
        .route("/v2/repository/models/{name}/load", post(load_model))
        .route("/v2/repository/models/{name}/unload", post(unload_model))
        .route("/v2/systemsharedmemory/status", get(regions_status))
        .route("/v2/systemsharedmemory/region/{name}/status", get(region_status))
        .route("/v2/systemsharedmemory/region/{name}/register", post(region_register))
        .route("/v2/systemsharedmemory/unregister", post(regions_unregister))
        .route("/v2/systemsharedmemory/region/{name}/unregister", post(region_unregister))
}

async fn server_metadata() -> Json<ServerMetadata> {
    Json(ServerMetadata { name: "onnxrt-serve", version: env!("CARGO_PKG_VERSION"), extensions: EXTENSIONS.to_vec() })
}

async fn live() -> Json<Json_> {
    Json(json!({ "live": true }))
}

async fn ready(State(app): State<Arc<App>>) -> Response {
    let ready = app.is_ready();
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(json!({ "ready": ready }))).into_response()
}

/// The model named in the path, or a 404 naming the models there are (503 with the reason for
/// one that could not be loaded or warmed up).
pub fn find(app: &App, name: &str, version: Option<&str>) -> Result<Arc<ServedModel>, Response> {
    app.repository.find(name, version).map_err(|e| Refusal::from(e).0)
}

async fn model_metadata(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    match find(&app, &name, None) {
        Ok(model) => Json(model.metadata()).into_response(),
        Err(response) => response,
    }
}

async fn model_metadata_version(
    State(app): State<Arc<App>>,
    Path((name, version)): Path<(String, String)>,
) -> Response {
    match find(&app, &name, Some(&version)) {
        Ok(model) => Json(model.metadata()).into_response(),
        Err(response) => response,
    }
}

/// Triton's model configuration, as far as clients read it (perf_analyzer asks for it first).
async fn model_config(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    match find(&app, &name, None) {
        Ok(model) => Json(crate::server::triton::config_json(&model)).into_response(),
        Err(response) => response,
    }
}

async fn model_config_version(State(app): State<Arc<App>>, Path((name, version)): Path<(String, String)>) -> Response {
    match find(&app, &name, Some(&version)) {
        Ok(model) => Json(crate::server::triton::config_json(&model)).into_response(),
        Err(response) => response,
    }
}

/// The statistics extension: every model served.
async fn all_statistics(State(app): State<Arc<App>>) -> Response {
    Json(crate::server::triton::statistics_json(&app.repository.models())).into_response()
}

async fn model_statistics(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    match find(&app, &name, None) {
        Ok(model) => Json(crate::server::triton::statistics_json(&[model])).into_response(),
        Err(response) => response,
    }
}

async fn model_statistics_version(
    State(app): State<Arc<App>>,
    Path((name, version)): Path<(String, String)>,
) -> Response {
    match find(&app, &name, Some(&version)) {
        Ok(model) => Json(crate::server::triton::statistics_json(&[model])).into_response(),
        Err(response) => response,
    }
}

fn readiness(app: &App, name: &str, version: Option<&str>) -> Response {
    match app.repository.find(name, version) {
        Ok(model) => {
            let ready = model.is_ready() && app.is_ready();
            let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
            (status, Json(json!({ "name": model.name, "ready": ready }))).into_response()
        }
        // In the repository, not served: not ready, with the reason.
        Err(FindError::Unavailable(why)) => {
            let mut response =
                (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "name": name, "ready": false, "error": why.clone() })))
                    .into_response();
            response.extensions_mut().insert(crate::server::access::Failure(why));
            response
        }
        Err(unknown) => Refusal::from(unknown).0,
    }
}

async fn model_ready(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    readiness(&app, &name, None)
}

async fn model_ready_version(State(app): State<Arc<App>>, Path((name, version)): Path<(String, String)>) -> Response {
    readiness(&app, &name, Some(&version))
}

/// The index; a body `{"ready": true}` lists only the models that serve.
async fn repository_index(State(app): State<Arc<App>>, body: Bytes) -> Json<Vec<RepositoryEntry>> {
    let only_ready = serde_json::from_slice::<Json_>(&body).is_ok_and(|b| b["ready"] == json!(true));
    let entries = app
        .repository
        .index()
        .into_iter()
        .filter(|m| !only_ready || m.ready)
        .map(|m| RepositoryEntry {
            name: m.name,
            version: m.version,
            state: if m.ready { "READY" } else { "UNAVAILABLE" },
            reason: m.reason,
        })
        .collect();
    Json(entries)
}

async fn load_model(State(app): State<Arc<App>>, Path(name): Path<String>, body: Bytes) -> Response {
    // Triton's load may carry a config or files to use instead of the repository's: not taken.
    let parameters = serde_json::from_slice::<Json_>(&body).ok().and_then(|b| b.get("parameters").cloned());
    if let Some(Json_::Object(parameters)) = parameters {
        if let Some(key) = parameters.keys().find(|k| *k == "config" || k.starts_with("file:")) {
            return bad_request(format!(
                "load parameter `{key}` is not supported: put the model and its config.json in the repository"
            ));
        }
    }
    control(app, name, true).await
}

async fn unload_model(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    control(app, name, false).await
}

/// Loads (`load`) or unloads model `name` on a blocking thread: 200 with an empty body, as Triton.
async fn control(app: Arc<App>, name: String, load: bool) -> Response {
    let done = tokio::task::spawn_blocking(move || {
        if load {
            app.repository.load_model(&name)
        } else {
            app.repository.unload_model(&name)
        }
    })
    .await;
    match done {
        Ok(Ok(())) => StatusCode::OK.into_response(),
        Ok(Err(ControlError::Unknown(why))) => error_response(StatusCode::NOT_FOUND, why),
        Ok(Err(ControlError::NotAllowed(why) | ControlError::Failed(why))) => bad_request(why),
        Err(error) => error_response(StatusCode::INTERNAL_SERVER_ERROR, format!("the load task ended: {error}")),
    }
}

async fn regions_status(State(app): State<Arc<App>>) -> Response {
    status_answer(&app, None)
}

async fn region_status(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    status_answer(&app, Some(&name))
}

fn status_answer(app: &App, name: Option<&str>) -> Response {
    match app.regions.status(name) {
        Ok(list) => Json(
            list.into_iter()
                .map(|r| json!({ "name": r.name, "key": r.key, "offset": r.offset, "byte_size": r.byte_size }))
                .collect::<Vec<_>>(),
        )
        .into_response(),
        Err(error) => error_response(StatusCode::NOT_FOUND, error.to_string()),
    }
}

async fn region_register(State(app): State<Arc<App>>, Path(name): Path<String>, body: Bytes) -> Response {
    let body: Json_ = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return bad_request(format!("the body must be {{\"key\", \"offset\", \"byte_size\"}}: {e}")),
    };
    let (Some(key), Some(byte_size)) = (body["key"].as_str(), body["byte_size"].as_u64()) else {
        return bad_request("register needs `key` (a string) and `byte_size` (a whole number)");
    };
    let Some(offset) = body.get("offset").map_or(Some(0), Json_::as_u64) else {
        return bad_request("`offset` must be a whole number");
    };
    match app.regions.register(&name, key, offset, byte_size) {
        Ok(()) => StatusCode::OK.into_response(),
        Err(error) => bad_request(error.to_string()),
    }
}

async fn regions_unregister(State(app): State<Arc<App>>) -> Response {
    app.regions.unregister(None);
    StatusCode::OK.into_response()
}

async fn region_unregister(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    app.regions.unregister(Some(&name));
    StatusCode::OK.into_response()
}

/// The `shared_memory_*` parameters of a tensor: where its bytes are, if in a region.
fn place_in(tensor: &str, parameters: &serde_json::Map<String, Json_>) -> Result<Option<Place>, Response> {
    let region = match parameters.get("shared_memory_region") {
        None => None,
        Some(Json_::String(region)) => Some(region.clone()),
        Some(other) => {
            return Err(bad_request(format!("`{tensor}`: shared_memory_region must be a string, got {other}")))
        }
    };
    let number = |key: &str| parameters.get(key).map(Json_::as_u64);
    shared_memory::place_of(tensor, region, number("shared_memory_byte_size"), number("shared_memory_offset"))
        .map_err(bad_request)
}

async fn infer(State(app): State<Arc<App>>, Path(name): Path<String>, headers: HeaderMap, body: Bytes) -> Response {
    answer(&app, &name, None, &headers, body).await
}

async fn infer_version(
    State(app): State<Arc<App>>,
    Path((name, version)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    answer(&app, &name, Some(&version), &headers, body).await
}

/// The HTTP status of an inference failure.
pub fn status_of(error: &InferError) -> StatusCode {
    match error {
        InferError::Invalid(_) => StatusCode::BAD_REQUEST,
        InferError::Overloaded(_) | InferError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        InferError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
        InferError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An inference failure as the protocol's error answer: the one place REST maps them.
pub struct Refusal(pub Response);

impl From<FindError> for Refusal {
    fn from(error: FindError) -> Refusal {
        Refusal(match error {
            FindError::Unknown(why) => error_response(StatusCode::NOT_FOUND, why),
            FindError::Unavailable(why) => error_response(StatusCode::SERVICE_UNAVAILABLE, why),
        })
    }
}

impl From<InferError> for Refusal {
    fn from(error: InferError) -> Refusal {
        Refusal(error_response(status_of(&error), error.to_string()))
    }
}

fn bad_request(message: impl Into<String>) -> Response {
    error_response(StatusCode::BAD_REQUEST, message)
}

async fn answer(app: &App, name: &str, version: Option<&str>, headers: &HeaderMap, body: Bytes) -> Response {
    let started = std::time::Instant::now();
    let _in_flight = app.metrics.start();
    let response = match answer_inner(app, name, version, headers, body).await {
        Ok(response) => response,
        Err(response) => response,
    };
    app.metrics.answered(response.status().as_u16(), started.elapsed());
    response
}

async fn answer_inner(
    app: &App,
    name: &str,
    version: Option<&str>,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    let model = find(app, name, version)?;
    // The binary-tensor extension: the JSON header first, then the tensors' bytes.
    let (json_part, mut binary) = match headers.get(HEADER_LENGTH) {
        Some(value) => {
            let length = value.to_str().ok().and_then(|v| v.trim().parse::<usize>().ok()).ok_or_else(|| {
                bad_request(format!("{HEADER_LENGTH} must be the JSON header's length in bytes, got {value:?}"))
            })?;
            if length > body.len() {
                return Err(bad_request(format!(
                    "{HEADER_LENGTH} says {length} bytes of JSON, the body has {} bytes",
                    body.len()
                )));
            }
            (body.slice(..length), body.slice(length..))
        }
        None => (body.clone(), Bytes::new()),
    };
    let request: InferRequest = serde_json::from_slice(&json_part)
        .map_err(|e| bad_request(format!("the request is not an inference request's JSON: {e}")))?;
    let mut inputs: Vec<(String, Value<'static>)> = Vec::with_capacity(request.inputs.len());
    for input in &request.inputs {
        let binary_size = match input.parameters.get("binary_data_size") {
            None => None,
            Some(size) => Some(size.as_u64().and_then(|s| usize::try_from(s).ok()).ok_or_else(|| {
                bad_request(format!("input `{}`: binary_data_size must be a byte count, got {size}", input.name))
            })?),
        };
        let place = place_in(&input.name, &input.parameters)?;
        let value = match (binary_size, &input.data, place) {
            (None, None, Some(place)) => {
                let bytes = app
                    .regions
                    .read(&input.name, &place, app.limits.max_body_bytes)
                    .map_err(|e| bad_request(e.to_string()))?;
                tensor::value_from_raw(&input.name, &input.datatype, &input.shape, &bytes)
            }
            (_, _, Some(_)) => {
                Err(format!("input `{}` names a shared-memory region and also sends data; send one", input.name))
            }
            (Some(size), None, None) => {
                if size > binary.len() {
                    return Err(bad_request(format!(
                        "input `{}`: binary_data_size is {size}, only {} bytes of binary data remain",
                        input.name,
                        binary.len()
                    )));
                }
                let bytes = binary.split_to(size);
                tensor::value_from_raw(&input.name, &input.datatype, &input.shape, &bytes)
            }
            (None, Some(data), None) => tensor::value_from_json(&input.name, &input.datatype, &input.shape, data),
            (Some(_), Some(_), None) => {
                Err(format!("input `{}` has both `data` and binary_data_size; send one", input.name))
            }
            (None, None, None) => Err(format!("input `{}` has no `data` (nor binary_data_size)", input.name)),
        }
        .map_err(bad_request)?;
        inputs.push((input.name.clone(), value));
    }
    if !binary.is_empty() {
        return Err(bad_request(format!(
            "{} bytes of binary data follow the inputs' data; each binary input must say its binary_data_size",
            binary.len()
        )));
    }
    let all_binary = flag(request.parameters.get("binary_data_output"));
    let mut outputs = Vec::with_capacity(request.outputs.len());
    let mut places = std::collections::HashMap::new();
    for output in &request.outputs {
        if let Some(place) = place_in(&output.name, &output.parameters)? {
            places.insert(output.name.clone(), place);
        }
        let class_count = match output.parameters.get("class_count").or_else(|| output.parameters.get("classification"))
        {
            None => 0,
            Some(count) => count.as_u64().ok_or_else(|| {
                bad_request(format!("output `{}`: class_count must be a whole number, got {count}", output.name))
            })?,
        };
        let binary = flag(output.parameters.get("binary_data"));
        outputs.push(WantedOutput { name: output.name.clone(), binary, class_count });
    }
    // `timeout` in microseconds, as Triton reads it; 0 is "none of its own".
    let timeout = match request.parameters.get("timeout") {
        None => None,
        Some(micros) => Some(micros.as_u64().ok_or_else(|| {
            bad_request(format!("parameter `timeout` must be a whole number of microseconds, got {micros}"))
        })?),
    }
    .filter(|&micros| micros > 0)
    .map(Duration::from_micros);
    let sequence_id = ["sequence_id", "sequence_start", "sequence_end"]
        .iter()
        .find_map(|key| request.parameters.get(*key).and_then(infer::sequence_named).map(|v| format!("({key} {v})")));
    let decoded = infer::Request { inputs, outputs, all_binary, timeout, sequence_id };
    let deadline = app.deadline(decoded.timeout);
    let answer = infer::run(&model, decoded, deadline).await.map_err(|e| Refusal::from(e).0)?;
    let outputs = answer.outputs;
    let mut described = Vec::with_capacity(outputs.len());
    let mut tail: Vec<u8> = Vec::new();
    for (output_name, value, binary) in &outputs {
        let failed = |why: String| error_response(StatusCode::INTERNAL_SERVER_ERROR, why);
        let (datatype, shape) = tensor::datatype_and_shape(output_name, value).map_err(failed)?;
        let mut parameters = serde_json::Map::new();
        let data = if let Some(place) = places.get(output_name) {
            let raw = tensor::raw_of(output_name, value).map_err(failed)?;
            app.regions.write(output_name, place, &raw).map_err(|e| bad_request(e.to_string()))?;
            parameters.insert("shared_memory_region".into(), json!(place.region));
            parameters.insert("shared_memory_byte_size".into(), json!(raw.len()));
            if place.offset != 0 {
                parameters.insert("shared_memory_offset".into(), json!(place.offset));
            }
            None
        } else if *binary {
            let raw = tensor::raw_of(output_name, value).map_err(failed)?;
            parameters.insert("binary_data_size".into(), json!(raw.len()));
            tail.extend(raw);
            None
        } else {
            Some(tensor::json_of(output_name, value).map_err(failed)?)
        };
        described.push(ResponseOutput { name: output_name.clone(), datatype, shape, parameters, data });
    }
    let response = InferResponse {
        model_name: model.name.clone(),
        model_version: model.version.clone(),
        id: request.id.clone(),
        outputs: described,
    };
    let json_bytes = serde_json::to_vec(&response)
        .map_err(|e| error_response(StatusCode::INTERNAL_SERVER_ERROR, format!("encoding the answer: {e}")))?;
    if tail.is_empty() {
        return Ok(([(header::CONTENT_TYPE, "application/json")], json_bytes).into_response());
    }
    let json_length = json_bytes.len();
    let mut body = json_bytes;
    body.extend(tail);
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(HEADER_LENGTH, HeaderValue::from(json_length));
    Ok(response)
}

/// A boolean parameter (`true`, or a nonzero number as some clients send).
fn flag(value: Option<&Json_>) -> bool {
    match value {
        Some(Json_::Bool(b)) => *b,
        Some(Json_::Number(n)) => n.as_u64().is_some_and(|n| n != 0),
        _ => false,
    }
}
