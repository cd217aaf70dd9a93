//! Accepting connections with bounds: at most `max_connections` open at once (REST and gRPC
//! together; one more is answered 503 and closed), at most `per_peer` of them from one client
//! address, gRPC connections closed when their first bytes do not come within the header timeout
//! or they stay silent for the idle timeout, REST connections closed when a request's head does not
//! arrive within the header timeout (hyper's timer starts when the connection waits for a head,
//! so this also closes keep-alive connections idle for that long, and slowloris senders), and
//! drained on shutdown: no new connections, the requests in flight answered.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The bound on open connections, shared by the REST and gRPC listeners.
pub struct ConnectionLimit {
    slots: Arc<Semaphore>,
    /// The limit.
    pub max: usize,
    /// The limit per client address.
    pub per_peer: usize,
    /// Open connections by client address.
    by_peer: Arc<Mutex<HashMap<IpAddr, usize>>>,
    /// Connections refused because every slot was taken.
    pub refused: AtomicU64,
    /// Connections accepted so far.
    pub accepted: AtomicU64,
}

impl ConnectionLimit {
    pub fn new(max: usize, per_peer: usize) -> ConnectionLimit {
        ConnectionLimit {
            slots: Arc::new(Semaphore::new(max)),
            max,
            per_peer,
            by_peer: Arc::new(Mutex::new(HashMap::new())),
            refused: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// A slot for a new connection from `peer`, or `None` when all are taken, or that peer's
    /// share is (counted).
    pub fn try_take(&self, peer: IpAddr) -> Option<Slot> {
        let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() else {
            self.refuse(|refused| {
                tracing::warn!(
                    max = self.max,
                    refused_so_far = refused,
                    "connection refused: every connection slot is taken"
                )
            });
            return None;
        };
        let mut by_peer = self.by_peer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let open = by_peer.entry(peer).or_insert(0);
        if *open >= self.per_peer {
            drop(by_peer);
            self.refuse(|refused| {
                tracing::warn!(%peer, per_peer = self.per_peer, refused_so_far = refused, "connection refused: this client address has its share of connections open (--max-connections-per-peer)")
            });
            return None;
        }
        *open += 1;
        self.accepted.fetch_add(1, Relaxed);
        Some(Slot { _permit: permit, _peer: PeerSlot { peer, by_peer: Arc::clone(&self.by_peer) } })
    }

    /// Counts a refusal; logs the first and each thousandth after (a flood of connections must
    /// not become a flood of log lines).
    fn refuse(&self, log: impl FnOnce(u64)) {
        let refused = self.refused.fetch_add(1, Relaxed) + 1;
        if refused % 1000 == 1 {
            log(refused);
        }
    }
}

/// A connection's place in the limit, given back when dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    _peer: PeerSlot,
}

struct PeerSlot {
    peer: IpAddr,
    by_peer: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut by_peer = self.by_peer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(open) = by_peer.get_mut(&self.peer) {
            *open -= 1;
            if *open == 0 {
                by_peer.remove(&self.peer);
            }
        }
    }
}

/// What the REST listener needs.
pub struct RestSettings {
    pub header_timeout: Duration,
}

/// A request hyper refused before the service saw it (a broken request line or Content-Length,
/// a URI or head too long, over 100 headers), answered by hyper with an empty body: one access
/// line for it; other connection errors (a peer gone) at debug.
fn http_layer_refusal(peer: SocketAddr, error: &hyper::Error) {
    let text = error.to_string();
    let status = if !error.is_parse() && !error.is_parse_too_large() {
        tracing::debug!(%peer, %error, "connection ended with an error");
        return;
    } else if text.contains("URI too long") {
        414
    } else if error.is_parse_too_large() {
        431
    } else {
        400
    };
    tracing::info!(target: "access", id = "-", %peer, method = "-", path = "-", status, error = %text, "refused by the HTTP layer");
}

/// Serves `router` on `listener` until `stop` resolves, then waits for the connections' requests
/// in flight to be answered (each connection closes after its current request).
pub async fn serve_rest(
    listener: TcpListener,
    router: Router,
    limit: Arc<ConnectionLimit>,
    settings: RestSettings,
    stop: impl std::future::Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(settings.header_timeout).keep_alive(true);
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let Some(permit) = limit.try_take(peer.ip()) else {
            tracing::debug!(%peer, "connection refused");
            tokio::spawn(refuse(stream));
            continue;
        };
        // The peer's address reaches the access log as ConnectInfo.
        let service = TowerToHyperService::new(router.clone().layer(axum::Extension(ConnectInfo(peer))));
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                http_layer_refusal(peer, &error);
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Answers 503 on a connection over the limit, then closes it.
async fn refuse(mut stream: TcpStream) {
    let body = r#"{"error":"the server has as many connections open as it allows; retry later"}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer.as_bytes())).await;
}

/// How long a gRPC connection may wait for its first bytes, and stay silent after.
#[derive(Debug, Clone, Copy)]
pub struct GrpcTimeouts {
    /// The client's first bytes (the HTTP/2 preface) must come within this.
    pub first_bytes: Duration,
    /// No bytes either way for this long closes the connection.
    pub idle: Duration,
}

/// A gRPC connection holding its connection slot until it closes, closed when silent too long.
pub struct Capped {
    stream: TcpStream,
    _slot: Slot,
    timeouts: GrpcTimeouts,
    /// When the connection is closed unless a byte moves first.
    silence: Pin<Box<tokio::time::Sleep>>,
    /// Whether the client has sent a byte (before that, the server's own first frames do not
    /// count as the connection moving).
    heard: bool,
}

impl Capped {
    pub fn new(stream: TcpStream, slot: Slot, timeouts: GrpcTimeouts) -> Capped {
        let silence = Box::pin(tokio::time::sleep(timeouts.first_bytes));
        Capped { stream, _slot: slot, timeouts, silence, heard: false }
    }

    fn moved(&mut self) {
        let at = tokio::time::Instant::now() + self.timeouts.idle;
        self.silence.as_mut().reset(at);
    }
}

impl tonic::transport::server::Connected for Capped {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.stream.connect_info()
    }
}

impl AsyncRead for Capped {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.stream).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.heard = true;
                    self.moved();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => match self.silence.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the gRPC connection was silent too long (--header-timeout-ms before its first bytes, --grpc-idle-timeout-ms after)",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Capped {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &written {
            if *n > 0 && self.heard {
                self.moved();
            }
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &written {
            if *n > 0 && self.heard {
                self.moved();
            }
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// The gRPC listener's connections, each within the limit (one over it is closed at once: HTTP/2
/// has no plain-text refusal to send before its preface). tonic takes any such `Stream`.
pub struct CappedIncoming {
    listener: TcpListener,
    limit: Arc<ConnectionLimit>,
    timeouts: GrpcTimeouts,
}

impl CappedIncoming {
    pub fn new(listener: TcpListener, limit: Arc<ConnectionLimit>, timeouts: GrpcTimeouts) -> CappedIncoming {
        CappedIncoming { listener, limit, timeouts }
    }
}

impl futures_core::Stream for CappedIncoming {
    type Item = io::Result<Capped>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            let (stream, peer) = match this.listener.poll_accept(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(error)) => return Poll::Ready(Some(Err(error))),
                Poll::Ready(Ok(accepted)) => accepted,
            };
            let _ = stream.set_nodelay(true);
            match this.limit.try_take(peer.ip()) {
                Some(slot) => return Poll::Ready(Some(Ok(Capped::new(stream, slot, this.timeouts)))),
                None => tracing::debug!(%peer, "gRPC connection refused"),
            }
        }
    }
}
