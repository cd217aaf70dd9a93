//! gRPC messages past `--max-body-bytes`: tonic refuses them while decoding, before any handler
//! runs, with OUT_OF_RANGE and no access line. [`MessageLimit`] wraps the service and answers
//! those RESOURCE_EXHAUSTED, naming the server's limit, with an access line as every call has.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Instant;

use tonic::body::Body;
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};
use tonic::server::NamedService;
use tonic::{Code, Status};

use crate::server::app::App;

/// `inner`, with tonic's decoding-size refusal answered in the server's terms.
#[derive(Clone)]
pub struct MessageLimit<S> {
    inner: S,
    app: Arc<App>,
}

impl<S> MessageLimit<S> {
    /// Wraps `inner` (whose `max_decoding_message_size` is `app`'s `--max-body-bytes`).
    pub fn new(inner: S, app: Arc<App>) -> MessageLimit<S> {
        MessageLimit { inner, app }
    }
}

impl<S: NamedService> NamedService for MessageLimit<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> Service<http::Request<Body>> for MessageLimit<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<http::Response<Body>, Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let started = Instant::now();
        let rpc = request.uri().path().rsplit('/').next().unwrap_or_default().to_owned();
        let peer = request
            .extensions()
            .get::<tonic::transport::server::TcpConnectInfo>()
            .and_then(|info| info.remote_addr())
            .map(|a| a.to_string())
            .unwrap_or_default();
        let app = Arc::clone(&self.app);
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            // Our handlers never answer OUT_OF_RANGE: it is tonic's decoding limit.
            let Some(refused) = Status::from_header_map(response.headers()).filter(|s| s.code() == Code::OutOfRange)
            else {
                return Ok(response);
            };
            let limit = app.limits.max_body_bytes;
            let status = Status::resource_exhausted(format!(
                "the request message is larger than {limit} bytes (the server's --max-body-bytes); send less per \
                 request (tonic said: {})",
                refused.message()
            ));
            let (id, micros) = (app.new_request_id(), started.elapsed().as_micros() as u64);
            tracing::info!(target: "access", id, peer, method = "grpc", rpc, model = "", status = ?status.code(), micros, error = status.message());
            Ok(status.into_http())
        })
    }
}
