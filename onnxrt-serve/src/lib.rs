//! Serving with [`onnxrt`]: what a service that answers many callers builds on top of a
//! [`Session`](onnxrt::Session), kept out of the binding and written against its public API only.
//!
//! - [`batch`]: [`Batcher`](batch::Batcher), dynamic batching for services that receive one
//!   sample per request (a bounded queue, deadlines, cancellation, shutdown, counters).
//! - `pool` (feature `cuda`): `GpuPool`, one session per GPU, each request
//!   run on the least busy one.
//! - [`isolation`] and [`oip`] (feature `isolation`, without the web stack): runs in worker
//!   processes a runtime crash cannot take the server down with, and the Open Inference
//!   Protocol's tensors and messages.
//! - [`repository`] (feature `server`): a repository of models served by name, each checked,
//!   warmed up and run batched or alone.
//! - [`server`] (the `serve` program as a library: REST and gRPC adapters over [`infer`]).
//! - The program `serve` (an inference server speaking the Open Inference Protocol over REST
//!   and gRPC) and the modules it shares with the load generator (`loadgen`, in the workspace's
//!   `benches/`): feature `server`, on by default; turn it off with `default-features = false`
//!   to depend on the batcher alone.
//!
//! Errors are [`Error`]: the batcher's own refusals ([`Error::NotBatchable`],
//! [`Error::NotSplitAlongBatch`], [`Error::SampleShapeChanges`], [`Error::QueueFull`], [`Error::DeadlineExpired`], [`Error::BatcherShutDown`]) and every
//! onnxrt error, wrapped ([`Error::Onnxrt`]).
//!
//! Features: `server` (default; implies `isolation`), `isolation` (worker processes, without
//! axum, tonic, tokio or hyper), `cuda` (the GPU pool; page-locked batch buffers for CUDA
//! sessions), `tensorrt` (implies `cuda`). With `default-features = false` the crate is the
//! batcher alone (and the pool with `cuda`).
#![forbid(unsafe_code)]

pub mod batch;
mod error;
#[cfg(feature = "cuda")]
pub mod pool;

#[cfg(feature = "server")]
pub mod classification;
#[cfg(feature = "server")]
pub mod embedded;
#[cfg(feature = "server")]
pub mod http_client;
#[cfg(feature = "server")]
pub mod imagenet;
#[cfg(feature = "server")]
pub mod infer;
#[cfg(feature = "isolation")]
pub mod isolation;
#[cfg(feature = "isolation")]
pub mod oip;
#[cfg(feature = "server")]
mod on_drop;
#[cfg(feature = "isolation")]
pub mod provider;
#[cfg(feature = "server")]
pub mod repository;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod shared_memory;
#[cfg(feature = "isolation")]
mod shown;
#[cfg(feature = "server")]
pub mod tensor_body;

#[cfg(feature = "isolation")]
pub mod run_error;

pub use error::{Error, Result};
