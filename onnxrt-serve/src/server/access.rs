//! The edge every REST request passes: a request id (the client's `x-request-id`, or a new one,
//! echoed in the answer), the body read whole within the body timeout and size limit (408 and 413
//! otherwise, before any handler runs), one access-log line per request, and the status counted.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use http_body_util::BodyExt;
use serde_json::json;

pub use crate::on_drop::OnDrop;
use crate::server::app::App;

/// Why a request was refused or failed, for the access log (in the response's extensions).
#[derive(Debug, Clone)]
pub struct Failure(pub String);

/// An answer `{"error": message}` with `status`, its message kept for the access log.
pub fn error_response(status: StatusCode, message: impl Into<String>) -> Response {
    let message = message.into();
    let mut response = (status, Json(json!({ "error": message }))).into_response();
    response.extensions_mut().insert(Failure(message));
    response
}

const REQUEST_ID: &str = "x-request-id";

/// The access log's status for a request whose client went away before its answer (nginx's).
pub const CLIENT_GONE: u16 = 499;

pub async fn edge(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map_or_else(|| app.new_request_id(), str::to_owned);
    let peer = request.extensions().get::<ConnectInfo<std::net::SocketAddr>>().map(|c| c.0);
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let (parts, body) = request.into_parts();
    let abandoned = {
        let (id, method, path) = (id.clone(), method.clone(), path.clone());
        let peer = peer.map(|p| p.to_string()).unwrap_or_default();
        OnDrop::new(move || {
            let micros = started.elapsed().as_micros() as u64;
            let error = "the client closed the connection before the answer";
            tracing::info!(target: "access", id, peer, %method, path, status = CLIENT_GONE, micros, error);
        })
    };
    let (mut response, bytes_in) = match read_body(&app, &parts.headers, body).await {
        Ok(bytes) => {
            let length = bytes.len();
            (next.run(Request::from_parts(parts, Body::from(bytes))).await, length)
        }
        Err(refusal) => (refusal, 0),
    };
    if (status_is_error(response.status())) && response.extensions().get::<Failure>().is_none() {
        response = in_protocol_shape(response, &method, &path).await;
    }
    abandoned.disarm();
    let status = response.status();
    app.metrics.responded(status.as_u16());
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    let micros = started.elapsed().as_micros() as u64;
    let failure = response.extensions().get::<Failure>().map(|f| f.0.as_str());
    let peer = peer.map(|p| p.to_string()).unwrap_or_default();
    match (status.is_server_error(), failure) {
        (true, Some(why)) => {
            tracing::error!(target: "access", id, peer, %method, path, status = status.as_u16(), bytes_in, micros, error = why)
        }
        (false, Some(why)) => {
            tracing::info!(target: "access", id, peer, %method, path, status = status.as_u16(), bytes_in, micros, error = why)
        }
        (_, None) => {
            tracing::info!(target: "access", id, peer, %method, path, status = status.as_u16(), bytes_in, micros)
        }
    }
    response
}

fn status_is_error(status: StatusCode) -> bool {
    status.is_client_error() || status.is_server_error()
}

/// A refusal the framework wrote (an extractor's plain text, a 405's empty body) as the
/// protocol's `{"error": ...}`, so that every client can read why.
async fn in_protocol_shape(response: Response, method: &axum::http::Method, path: &str) -> Response {
    let status = response.status();
    let allow = response.headers().get(header::ALLOW).cloned();
    let text = match http_body_util::Limited::new(response.into_body(), 64 << 10).collect().await {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).trim().to_owned(),
        Err(_) => String::new(),
    };
    let message = match (status, text.is_empty()) {
        (StatusCode::METHOD_NOT_ALLOWED, _) => format!(
            "{method} is not allowed on {path}{}",
            allow.as_ref().and_then(|a| a.to_str().ok()).map(|a| format!("; allowed: {a}")).unwrap_or_default()
        ),
        (_, false) => text,
        (_, true) => format!("{method} {path}: {}", status.canonical_reason().unwrap_or("refused")),
    };
    let mut answer = error_response(status, message);
    if let Some(allow) = allow {
        answer.headers_mut().insert(header::ALLOW, allow);
    }
    answer
}

/// The whole body, within the size limit and the body timeout.
async fn read_body(app: &App, headers: &axum::http::HeaderMap, body: Body) -> Result<axum::body::Bytes, Response> {
    let limit = app.limits.max_body_bytes;
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limit as u64) {
        return Err(too_large(limit));
    }
    let limited = http_body_util::Limited::new(body, limit);
    match tokio::time::timeout(app.limits.body_timeout, limited.collect()).await {
        Err(_) => Err(error_response(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} ms; send it at once (the server's --body-timeout-ms)",
                app.limits.body_timeout.as_millis()
            ),
        )),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => Err(too_large(limit)),
        Ok(Err(error)) => Err(error_response(StatusCode::BAD_REQUEST, format!("the request body broke off: {error}"))),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

fn too_large(limit: usize) -> Response {
    error_response(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is larger than {limit} bytes (the server's --max-body-bytes)"),
    )
}
