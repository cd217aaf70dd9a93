//! The REST side of the shared-memory extensions: `/v2/systemsharedmemory/...` and
//! `/v2/cudasharedmemory/...` (status, register, unregister), over [`Regions`](crate::shared_memory::Regions).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value as Json_};

use crate::server::access::error_response;
use crate::server::app::App;
use crate::server::rest::bad_request;
use crate::shared_memory::{Kind, RegionMemory};

pub(super) fn routes() -> Router<Arc<App>> {
    let mut router = Router::new();
    for (kind, root) in [(Kind::System, "/v2/systemsharedmemory"), (Kind::Cuda, "/v2/cudasharedmemory")] {
        router = router
            .route(&format!("{root}/status"), get(move |app| status(app, kind, None)))
            .route(&format!("{root}/region/{{name}}/status"), get(move |app, Path(name)| status(app, kind, Some(name))))
            .route(
                &format!("{root}/region/{{name}}/register"),
                post(move |app, name, body| register(app, kind, name, body)),
            )
            .route(&format!("{root}/unregister"), post(move |app| unregister(app, kind, None)))
            .route(
                &format!("{root}/region/{{name}}/unregister"),
                post(move |app, Path(name)| unregister(app, kind, Some(name))),
            );
    }
    router
}

async fn status(State(app): State<Arc<App>>, kind: Kind, name: Option<String>) -> Response {
    match app.regions.status(kind, name.as_deref()) {
        Ok(list) => Json(
            list.into_iter()
                .map(|r| match r.memory {
                    RegionMemory::System { key, offset } => {
                        json!({ "name": r.name, "key": key, "offset": offset, "byte_size": r.byte_size })
                    }
                    RegionMemory::Cuda { device_id } => {
                        json!({ "name": r.name, "device_id": device_id, "byte_size": r.byte_size })
                    }
                })
                .collect::<Vec<_>>(),
        )
        .into_response(),
        Err(error) => error_response(StatusCode::NOT_FOUND, error.to_string()),
    }
}

async fn register(State(app): State<Arc<App>>, kind: Kind, Path(name): Path<String>, body: Bytes) -> Response {
    let shape = match kind {
        Kind::System => "{\"key\", \"offset\", \"byte_size\"}",
        Kind::Cuda => "{\"raw_handle\": {\"b64\": ...}, \"device_id\", \"byte_size\"}",
    };
    let body: Json_ = match serde_json::from_slice(&body) {
        Ok(body @ Json_::Object(_)) => body,
        Ok(_) => return bad_request(format!("the body must be a JSON object {shape}")),
        Err(e) => return bad_request(format!("the body must be {shape}: {e}")),
    };
    let Some(byte_size) = body["byte_size"].as_u64() else {
        return bad_request("register needs `byte_size` (a whole number)");
    };
    let done = match kind {
        Kind::System => {
            let Some(key) = body["key"].as_str() else {
                return bad_request("register needs `key` (a string) and `byte_size` (a whole number)");
            };
            let Some(offset) = body.get("offset").map_or(Some(0), Json_::as_u64) else {
                return bad_request("`offset` must be a whole number from 0 to 18446744073709551615");
            };
            app.regions.register(&name, key, offset, byte_size)
        }
        Kind::Cuda => {
            let Some(encoded) = body["raw_handle"]["b64"].as_str() else {
                return bad_request("register needs `raw_handle` as {\"b64\": the handle's bytes in base64}");
            };
            let Ok(raw_handle) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
                return bad_request("`raw_handle.b64` is not base64");
            };
            let Some(device_id) = body.get("device_id").map_or(Some(0), Json_::as_i64) else {
                return bad_request("`device_id` must be a whole number");
            };
            app.regions.register_cuda(&name, &raw_handle, device_id, byte_size)
        }
    };
    match done {
        Ok(()) => StatusCode::OK.into_response(),
        Err(error) => bad_request(error.to_string()),
    }
}

async fn unregister(State(app): State<Arc<App>>, kind: Kind, name: Option<String>) -> Response {
    match app.regions.unregister(kind, name.as_deref()) {
        Ok(()) => StatusCode::OK.into_response(),
        Err(error) => bad_request(error.to_string()),
    }
}
