//! What every handler shares: the models, the limits, the counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::imagenet::DecodeLimits;
use crate::repository::Repository;
use crate::shared_memory::Regions;
use tokio::sync::Semaphore;

use crate::server::listener::ConnectionLimit;
use crate::server::metrics::HttpMetrics;

/// Limits on each request.
#[derive(Debug, Clone, Copy)]
pub struct RequestLimits {
    /// Largest body (413 past it).
    pub max_body_bytes: usize,
    /// The whole body must arrive within this (408 otherwise).
    pub body_timeout: Duration,
    /// A request's answer must be ready within this, unless it asks for less (504 otherwise).
    pub request_timeout: Duration,
}

/// Shared by all handlers, REST and gRPC.
pub struct App {
    /// The models.
    pub repository: Repository,
    /// HTTP counters.
    pub metrics: HttpMetrics,
    /// Registered system shared-memory regions.
    pub regions: Regions,
    /// Limits on each request.
    pub limits: RequestLimits,
    /// What an uploaded picture may be (the picture step of `/v1`).
    pub decode_limits: DecodeLimits,
    /// Pictures decoded at once (each may take `decode_limits.max_alloc` bytes): bounds memory.
    pub decode_slots: Semaphore,
    /// Set on SIGTERM: readiness answers 503 so a load balancer stops sending.
    pub draining: AtomicBool,
    /// Open connections and their bound.
    pub connections: Arc<ConnectionLimit>,
    /// When the server started (process metrics).
    pub started: Instant,
    next_request_id: AtomicU64,
}

impl App {
    pub fn new(
        repository: Repository,
        limits: RequestLimits,
        decode_limits: DecodeLimits,
        connections: Arc<ConnectionLimit>,
    ) -> App {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        App {
            repository,
            metrics: HttpMetrics::default(),
            regions: Regions::default(),
            limits,
            decode_limits,
            decode_slots: Semaphore::new(cores * 2),
            draining: AtomicBool::new(false),
            connections,
            started: Instant::now(),
            next_request_id: AtomicU64::new(1),
        }
    }

    /// A request id for a request that brought none: unique in this process.
    pub fn new_request_id(&self) -> String {
        format!("{:x}-{}", std::process::id(), self.next_request_id.fetch_add(1, Relaxed))
    }

    /// The deadline of a request that asks for `asked` (or nothing): the server's request timeout
    /// or the request's own, whichever is sooner.
    pub fn deadline(&self, asked: Option<Duration>) -> Instant {
        let timeout = asked.map_or(self.limits.request_timeout, |a| a.min(self.limits.request_timeout));
        Instant::now() + timeout
    }

    /// Whether the server takes inference requests: every model warmed up, not draining.
    pub fn is_ready(&self) -> bool {
        !self.draining.load(Relaxed) && self.repository.is_ready()
    }
}
