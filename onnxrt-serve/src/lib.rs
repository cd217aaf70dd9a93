//! Serving with [`onnxrt`]: what a service that answers many callers builds on top of a
//! [`Session`](onnxrt::Session), kept out of the binding and written against its public API only.
//!
//! - [`batch`]: [`Batcher`](batch::Batcher), dynamic batching for services that receive one
//!   sample per request (a bounded queue, deadlines, cancellation, shutdown, counters).
//! - `pool` (feature `cuda`): `GpuPool`, one session per GPU, each request
//!   run on the least busy one.
//! - [`oip`] and [`repository`] (feature `server`): the Open Inference Protocol's tensors and
//!   messages, and a repository of models served by name, each checked, warmed up and run
//!   batched or alone.
//! - [`server`] (the `serve` program as a library: REST and gRPC adapters over [`infer`]),
//!   [`isolation`] (runs in worker processes a runtime crash cannot take the server down with).
//! - The programs `serve` (an inference server speaking the Open Inference Protocol over REST
//!   and gRPC) and `loadgen` (its load generator),
//!   and the modules they share (feature `server`, on by default; turn it off with
//!   `default-features = false` to depend on the batcher alone).
//!
//! Errors are [`Error`]: the batcher's own refusals ([`Error::NotBatchable`],
//! [`Error::QueueFull`], [`Error::DeadlineExpired`], [`Error::BatcherShutDown`]) and every
//! onnxrt error, wrapped ([`Error::Onnxrt`]).
//!
//! Features: `server` (default), `cuda` (the GPU pool; page-locked batch buffers for CUDA
//! sessions), `tensorrt` (implies `cuda`).
#![forbid(unsafe_code)]

pub mod batch;
mod error;
#[cfg(feature = "cuda")]
pub mod pool;

#[cfg(feature = "server")]
pub mod embedded;
#[cfg(feature = "server")]
pub mod http_client;
#[cfg(feature = "server")]
pub mod imagenet;
#[cfg(feature = "server")]
pub mod infer;
#[cfg(feature = "server")]
pub mod isolation;
#[cfg(feature = "server")]
pub mod oip;
#[cfg(feature = "server")]
pub mod repository;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod tensor_body;

pub use error::{Error, Result};
