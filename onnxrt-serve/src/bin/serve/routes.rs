//! The HTTP routes: `POST /v1/models/{name}/infer`, `GET /health`, `GET /metrics`. Every failure
//! is answered with a status code and a JSON `{"error": "..."}` saying what to change.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use onnxrt_serve::imagenet::{self, DecodeLimits};
use onnxrt_serve::tensor_body;
use serde_json::json;
use tokio::sync::Semaphore;

use crate::backend::{Backend, InferError, ModelContract};
use crate::metrics::HttpMetrics;

/// Everything a request handler needs, shared by all of them.
pub struct App {
    /// The name in `/v1/models/{name}/infer`.
    pub model_name: String,
    /// Class labels (may be shorter than the class count: then `class N` is answered).
    pub labels: Vec<String>,
    /// The model's input and output, as checked before a run.
    pub contract: ModelContract,
    /// What runs the model.
    pub backend: Backend,
    /// HTTP counters.
    pub metrics: HttpMetrics,
    /// What an uploaded picture may be.
    pub decode_limits: DecodeLimits,
    /// Pictures decoded at once (each may take `decode_limits.max_alloc` bytes): bounds memory.
    pub decode_slots: Semaphore,
    /// Set on SIGTERM: `/health` answers 503 so a load balancer stops sending.
    pub draining: AtomicBool,
}

/// The router, with the body size limit applied to every route.
pub fn router(app: Arc<App>, max_body_bytes: usize) -> Router {
    Router::new()
        .route("/v1/models/{name}/infer", post(infer))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .with_state(app)
}

/// An answer with a status code and `{"error": message}`.
struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

fn bad_request(message: impl Into<String>) -> Refusal {
    Refusal(StatusCode::BAD_REQUEST, message.into())
}

async fn infer(
    State(app): State<Arc<App>>,
    Path(name): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let started = Instant::now();
    let _in_flight = app.metrics.start();
    let response = match answer(&app, &name, &query, &headers, body).await {
        Ok(json) => (StatusCode::OK, Json(json)).into_response(),
        Err(refusal) => refusal.into_response(),
    };
    app.metrics.answered(response.status().as_u16(), started.elapsed());
    response
}

async fn answer(
    app: &App,
    name: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<serde_json::Value, Refusal> {
    if name != app.model_name {
        return Err(Refusal(StatusCode::NOT_FOUND, format!("no model `{name}`; this server has `{}`", app.model_name)));
    }
    let classes = app.contract.classes;
    let k = match query.get("top_k") {
        None => 5.min(classes),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|k| (1..=classes).contains(k))
            .ok_or_else(|| bad_request(format!("top_k must be a number from 1 to {classes}, got `{text}`")))?,
    };
    let with_logits = query.get("logits").is_some_and(|v| v == "true" || v == "1");
    // A body over the limit, or one that broke off, is refused with the extractor's status.
    let body = body.map_err(|rejection| Refusal(rejection.status(), rejection.body_text()))?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    let sample = match media.as_str() {
        "image/jpeg" | "image/png" => picture_sample(app, body).await?,
        tensor_body::CONTENT_TYPE => tensor_sample(app, headers, &body)?,
        _ => {
            return Err(Refusal(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                "Content-Type `{content_type}` is not accepted: send image/jpeg, image/png, or {} with an `{}` header",
                tensor_body::CONTENT_TYPE,
                tensor_body::SHAPE_HEADER
            ),
            ))
        }
    };
    let logits = app.backend.infer(&app.contract, sample).await.map_err(|error| match error {
        InferError::Overloaded(why) => Refusal(StatusCode::SERVICE_UNAVAILABLE, why),
        InferError::ShuttingDown => Refusal(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down".into()),
        InferError::Timeout(why) => Refusal(StatusCode::GATEWAY_TIMEOUT, why),
        InferError::Failed(why) => Refusal(StatusCode::INTERNAL_SERVER_ERROR, format!("the model run failed: {why}")),
    })?;
    let ranked: Vec<serde_json::Value> = imagenet::top_k(&imagenet::softmax(&logits), k)
        .into_iter()
        .map(|(class, probability)| {
            let label = app.labels.get(class).cloned().unwrap_or_else(|| format!("class {class}"));
            json!({ "class": class, "label": label, "probability": probability })
        })
        .collect();
    let mut answer = json!({ "model": app.model_name, "top_k": ranked });
    if with_logits {
        answer["logits"] = json!(logits);
    }
    Ok(answer)
}

/// Decodes and preprocesses a picture off the async workers, a bounded number at once.
async fn picture_sample(app: &App, body: Bytes) -> Result<Vec<f32>, Refusal> {
    let side = imagenet::SIDE as usize;
    if app.contract.sample_shape != [3, side, side] {
        return Err(bad_request(format!(
            "this model takes {:?} samples, not pictures: send a raw tensor ({})",
            app.contract.sample_shape,
            tensor_body::CONTENT_TYPE
        )));
    }
    let _slot = app
        .decode_slots
        .acquire()
        .await
        .map_err(|_| Refusal(StatusCode::SERVICE_UNAVAILABLE, "shutting down".into()))?;
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
fn tensor_sample(app: &App, headers: &HeaderMap, body: &[u8]) -> Result<Vec<f32>, Refusal> {
    let shape_header = headers.get(tensor_body::SHAPE_HEADER).and_then(|v| v.to_str().ok());
    let (shape, data) = tensor_body::decode(shape_header, body).map_err(bad_request)?;
    let expected = &app.contract.sample_shape;
    let fits = shape == *expected || (shape.first() == Some(&1) && shape[1..] == expected[..]);
    if !fits {
        return Err(bad_request(format!(
            "tensor shape {shape:?} does not fit the model: send {expected:?} or [1, ...] of it"
        )));
    }
    Ok(data)
}

async fn health(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Ordering::Relaxed) {
        (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "draining" }))).into_response()
    } else {
        Json(json!({ "status": "ok", "model": app.model_name })).into_response()
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    let mut text = String::new();
    app.metrics.render(&mut text);
    app.backend.metrics(&mut text);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}
