//! The Open Inference Protocol over REST: `/v2` (server metadata), `/v2/health/{live,ready}`,
//! `/v2/models/{name}[/versions/{version}]` (metadata), `…/ready`, `…/infer` (JSON tensors and
//! the binary-tensor extension), `POST /v2/repository/index`, `…/models/{name}/load`, `…/unload`.

use std::sync::Arc;

use crate::infer;
use crate::oip::messages::{RepositoryEntry, ServerMetadata};
use crate::oip::rest_body;
use crate::repository::model::Tally;
use crate::repository::{ControlError, FindError, InferError, ServedModel};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value as Json_};

use crate::server::access::error_response;
use crate::server::app::App;

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
        .merge(crate::server::rest_shared_memory::routes())
}

async fn server_metadata(State(app): State<Arc<App>>) -> Json<ServerMetadata> {
    Json(ServerMetadata {
        name: "onnxrt-serve",
        version: env!("CARGO_PKG_VERSION"),
        extensions: crate::shared_memory::extensions(&app.regions),
    })
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

/// A load or unload request's body: empty, or a JSON object (`{"parameters": {...}}`); anything
/// else is refused rather than acted on.
fn control_body(body: &[u8], what: &str) -> Result<serde_json::Map<String, Json_>, Response> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice::<Json_>(body) {
        Ok(Json_::Object(object)) => Ok(object),
        Ok(_) => Err(bad_request(format!("the {what} request's body must be a JSON object (or empty)"))),
        Err(e) => Err(bad_request(format!("the {what} request's body is not JSON: {e} (send none, or an object)"))),
    }
}

async fn load_model(State(app): State<Arc<App>>, Path(name): Path<String>, body: Bytes) -> Response {
    let body = match control_body(&body, "load") {
        Ok(body) => body,
        Err(refusal) => return refusal,
    };
    // Triton's load may carry a config or files to use instead of the repository's: not taken.
    if let Some(Json_::Object(parameters)) = body.get("parameters") {
        if let Some(key) = parameters.keys().find(|k| *k == "config" || k.starts_with("file:")) {
            return bad_request(format!(
                "load parameter `{key}` is not supported: put the model and its config.json in the repository"
            ));
        }
    }
    control(app, name, true).await
}

async fn unload_model(State(app): State<Arc<App>>, Path(name): Path<String>, body: Bytes) -> Response {
    if let Err(refusal) = control_body(&body, "unload") {
        return refusal;
    }
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

pub(super) fn bad_request(message: impl Into<String>) -> Response {
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
    // Counted once it is answered; a refusal from here on counts as a failure.
    let mut tally = Tally::start(&model.stats);
    let header_length = headers.get(rest_body::HEADER_LENGTH).map(HeaderValue::as_bytes);
    let decoded = rest_body::decode(&body, header_length, &app.regions, app.limits.max_body_bytes);
    drop(body);
    let rest_body::Decoded { id, request, places } = decoded.map_err(bad_request)?;
    let deadline = app.deadline(request.timeout);
    let answer = infer::run(&model, request, deadline, &mut tally.phases).await.map_err(|e| Refusal::from(e).0)?;
    let json_limit = app.limits.max_body_bytes.saturating_mul(rest_body::JSON_ANSWER_FACTOR);
    let shared = &places;
    let encoded = rest_body::encode((&model.name, &model.version), id, &answer, shared, json_limit, deadline)
        .map_err(|e| Refusal::from(e).0)?;
    drop(answer);
    tally.answered();
    let Some(json_length) = encoded.json_length else {
        return Ok(([(header::CONTENT_TYPE, "application/json")], encoded.body).into_response());
    };
    let mut response = (StatusCode::OK, encoded.body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(rest_body::HEADER_LENGTH, HeaderValue::from(json_length));
    Ok(response)
}
