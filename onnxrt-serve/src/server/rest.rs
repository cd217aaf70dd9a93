//! The Open Inference Protocol over REST: `/v2` (server metadata), `/v2/health/{live,ready}`,
//! `/v2/models/{name}[/versions/{version}]` (metadata), `…/ready`, `…/infer` (JSON tensors and
//! the binary-tensor extension), `POST /v2/repository/index`.

use std::sync::Arc;

use crate::infer;
use crate::oip::messages::{RepositoryEntry, ServerMetadata, EXTENSIONS};
use crate::oip::rest_body;
use crate::repository::{FindError, InferError, ServedModel};
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
        .route("/v2/models/{name}/ready", get(model_ready))
        .route("/v2/models/{name}/versions/{version}/ready", get(model_ready_version))
        .route("/v2/models/{name}/infer", post(infer))
        .route("/v2/models/{name}/versions/{version}/infer", post(infer_version))
        .route("/v2/repository/index", post(repository_index))
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
    app.repository.find(name, version).map(Arc::clone).map_err(|e| Refusal::from(e).0)
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

/// Triton's model configuration, as far as clients read it (perf_analyzer asks for it first):
/// `max_batch_size` 0 because shapes in the metadata include the batch axis.
async fn model_config(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    let model = match find(&app, &name, None) {
        Ok(model) => model,
        Err(response) => return response,
    };
    let metadata = model.metadata();
    let tensors = |list: &[crate::oip::messages::TensorMetadata]| -> Vec<Json_> {
        list.iter()
            .map(|t| {
                let data_type =
                    if t.datatype == "BYTES" { "TYPE_STRING".to_owned() } else { format!("TYPE_{}", t.datatype) };
                json!({ "name": t.name, "data_type": data_type, "dims": t.shape })
            })
            .collect()
    };
    Json(json!({
        "name": metadata.name,
        "platform": metadata.platform,
        "backend": "onnxruntime",
        "max_batch_size": 0,
        "input": tensors(&metadata.inputs),
        "output": tensors(&metadata.outputs),
    }))
    .into_response()
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

async fn repository_index(State(app): State<Arc<App>>) -> Json<Vec<RepositoryEntry>> {
    let entries = app
        .repository
        .index()
        .into_iter()
        .map(|m| RepositoryEntry {
            name: m.name,
            version: m.version,
            state: if m.ready { "READY" } else { "UNAVAILABLE" },
            reason: m.reason,
        })
        .collect();
    Json(entries)
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
    let decoded = rest_body::decode(&body, headers.get(rest_body::HEADER_LENGTH).map(HeaderValue::as_bytes));
    drop(body);
    let rest_body::Decoded { id, request } = decoded.map_err(bad_request)?;
    let deadline = app.deadline(request.timeout);
    let answer = infer::run(&model, request, deadline).await.map_err(|e| Refusal::from(e).0)?;
    let json_limit = app.limits.max_body_bytes.saturating_mul(rest_body::JSON_ANSWER_FACTOR);
    let encoded = rest_body::encode((&model.name, &model.version), id, &answer, json_limit, deadline)
        .map_err(|e| Refusal::from(e).0)?;
    drop(answer);
    let Some(json_length) = encoded.json_length else {
        return Ok(([(header::CONTENT_TYPE, "application/json")], encoded.body).into_response());
    };
    let mut response = (StatusCode::OK, encoded.body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(rest_body::HEADER_LENGTH, HeaderValue::from(json_length));
    Ok(response)
}
