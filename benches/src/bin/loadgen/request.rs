//! One prepared request, the same for every client and every send, and how a send is judged.

use std::time::Instant;

use hyper::body::Bytes;
use onnxrt_serve::http_client::Connection;

use crate::tally::Outcome;

/// The method is always POST; the body is shared (cloning `Bytes` copies no data).
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Request {
    /// Sends on `connection` (opened first when there is none) and judges the reply: 200 is an
    /// answer, with its latency measured from `since`; anything else is a failure. A broken
    /// connection is dropped so that the next send opens a new one.
    pub async fn send(
        &self,
        address: std::net::SocketAddr,
        connection: &mut Option<Connection>,
        since: Instant,
    ) -> Outcome {
        let headers: Vec<(&str, &str)> = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let open = match connection {
            Some(open) => open,
            None => match Connection::open(address).await {
                Ok(open) => connection.insert(open),
                Err(error) => {
                    return Outcome::Failed { kind: "connect".into(), message: format!("connect: {error}") };
                }
            },
        };
        match open.send("POST", &self.path, &headers, self.body.clone()).await {
            Ok(reply) if reply.status == 200 => Outcome::Answered(since.elapsed()),
            Ok(reply) => {
                let text = reply.text();
                let shown: String = text.chars().take(300).collect();
                Outcome::Failed {
                    kind: format!("HTTP {}", reply.status),
                    message: format!("HTTP {}: {shown}", reply.status),
                }
            }
            Err(error) => {
                *connection = None;
                Outcome::Failed { kind: "connection".into(), message: error.to_string() }
            }
        }
    }
}
