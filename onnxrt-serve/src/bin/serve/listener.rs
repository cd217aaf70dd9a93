//! Accepting connections with bounds: at most `max_connections` open at once (REST and gRPC
//! together; one more is answered 503 and closed), each closed when a request's head does not
//! arrive within the header timeout (hyper's timer starts when the connection waits for a head,
//! so this also closes keep-alive connections idle for that long, and slowloris senders), and
//! drained on shutdown: no new connections, the requests in flight answered.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
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
    /// Connections refused because every slot was taken.
    pub refused: AtomicU64,
    /// Connections accepted so far.
    pub accepted: AtomicU64,
}

impl ConnectionLimit {
    pub fn new(max: usize) -> ConnectionLimit {
        ConnectionLimit {
            slots: Arc::new(Semaphore::new(max)),
            max,
            refused: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
        }
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// A slot for a new connection, or `None` when all are taken (counted).
    pub fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => {
                self.accepted.fetch_add(1, Relaxed);
                Some(permit)
            }
            Err(_) => {
                self.refused.fetch_add(1, Relaxed);
                None
            }
        }
    }
}

/// What the REST listener needs.
pub struct RestSettings {
    pub header_timeout: Duration,
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
        let Some(permit) = limit.try_take() else {
            tracing::warn!(%peer, max = limit.max, "connection refused: every connection slot is taken");
            tokio::spawn(refuse(stream));
            continue;
        };
        // The peer's address reaches the access log as ConnectInfo.
        let service = TowerToHyperService::new(router.clone().layer(axum::Extension(ConnectInfo(peer))));
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "connection ended with an error");
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

/// A gRPC connection holding its connection slot until it closes.
pub struct Capped {
    stream: TcpStream,
    _slot: OwnedSemaphorePermit,
}

impl Capped {
    pub fn new(stream: TcpStream, slot: OwnedSemaphorePermit) -> Capped {
        Capped { stream, _slot: slot }
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
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Capped {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
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
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
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
}

impl CappedIncoming {
    pub fn new(listener: TcpListener, limit: Arc<ConnectionLimit>) -> CappedIncoming {
        CappedIncoming { listener, limit }
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
            match this.limit.try_take() {
                Some(slot) => return Poll::Ready(Some(Ok(Capped::new(stream, slot)))),
                None => {
                    tracing::warn!(%peer, max = this.limit.max, "gRPC connection refused: every connection slot is taken")
                }
            }
        }
    }
}
