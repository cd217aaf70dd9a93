//! A minimal HTTP/1.1 client on one keep-alive connection (hyper), for the load generator and the
//! server's tests: a closed-loop client sends its next request when the previous answer is in.

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

/// One connection to a server.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

/// A response: its status code, content type and whole body.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: Bytes,
    /// Every header of the reply.
    pub headers: hyper::HeaderMap,
}

impl Reply {
    /// The body as text (lossy), for messages and JSON.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why a request got no reply.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

impl Connection {
    /// Connects; the connection's I/O runs on a task of the current tokio runtime.
    pub async fn open(address: SocketAddr) -> Result<Connection, Error> {
        let stream = tokio::net::TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // Ends when the server closes the connection or the sender is dropped.
            let _ = connection.await;
        });
        Ok(Connection { sender, host: address.to_string() })
    }

    /// Sends one request and reads the whole reply.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Result<Reply, Error> {
        let mut request = hyper::Request::builder().method(method).uri(path).header("host", &self.host);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request.body(Full::new(body))?;
        self.sender.ready().await?;
        let response = self.sender.send_request(request).await?;
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let headers = response.headers().clone();
        let body = response.into_body().collect().await?.to_bytes();
        Ok(Reply { status, content_type, body, headers })
    }

    /// Whether the server has closed the connection (an idle keep-alive connection past the
    /// server's idle timeout): a request sent on it would fail without reaching the server.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// A GET without a body.
    pub async fn get(&mut self, path: &str) -> Result<Reply, Error> {
        self.send("GET", path, &[], Bytes::new()).await
    }
}
