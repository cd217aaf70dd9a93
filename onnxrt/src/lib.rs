//! Safe Rust bindings to ONNX Runtime for Linux x86-64 servers with NVIDIA GPUs.
//!
//! ```
//! use onnxrt::{ndarray::array, Session, Value};
//!
//! // A whole ONNX model, 102 bytes: `sum = a + b`, inputs `a` and `b` float [2, 3]. Your own
//! // model: `Session::builder().commit_from_file("model.onnx")?`.
//! const ADD: &[u8] = b"\x08\x08\x3a\x5c\x0a\x10\x0a\x01a\x0a\x01b\x12\x03sum\x22\x03Add\x12\x07add_f32\
//!     \x5a\x13\x0a\x01a\x12\x0e\x0a\x0c\x08\x01\x12\x08\x0a\x02\x08\x02\x0a\x02\x08\x03\x5a\x13\x0a\x01b\x12\x0e\
//!     \x0a\x0c\x08\x01\x12\x08\x0a\x02\x08\x02\x0a\x02\x08\x03\x62\x15\x0a\x03sum\x12\x0e\x0a\x0c\x08\x01\x12\x08\
//!     \x0a\x02\x08\x02\x0a\x02\x08\x03\x42\x04\x0a\x00\x10\x11";
//!
//! fn main() -> onnxrt::Result<()> {
//!     // The runtime was downloaded and verified at build time; it is found at run time without
//!     // LD_LIBRARY_PATH.
//!     let session = Session::builder().commit_from_memory(ADD)?;
//!     for input in session.inputs() {
//!         println!("input {input}"); // "input a: f32 [2, 3]"
//!     }
//!     let a = Value::from_array(array![[1.0f32, 2.0, 3.0], [4.0, 5.0, 6.0]])?;
//!     let b = Value::from_array(array![[0.5f32, 0.5, 0.5], [1.0, 1.0, 1.0]])?;
//!     let outputs = session.run(&[("a", &a), ("b", &b)])?;
//!     let sum = outputs.get("sum")?.view::<f32>()?;
//!     assert_eq!(sum[[1, 2]], 7.0);
//!
//!     // Mistakes are typed errors that say what the model wants.
//!     let err = session.run(&[("a", &a), ("c", &b)]).unwrap_err();
//!     assert!(err.to_string().contains(r#"the model's inputs are ["a", "b"]"#));
//!     println!("runtime {}", onnxrt::runtime_info()?.version);
//!     Ok(())
//! }
//! ```
//!
//! **Where to start.** Load: [`Session::builder`] then [`SessionBuilder::commit_from_file`].
//! Look: [`Session::inputs`] / [`Session::outputs`] ([`ValueInfo`] prints as `name: f32 [batch,
//! 3, 224, 224]`). Run: [`Value::from_array`], [`Session::run`], [`Value::view`]. On the GPU (cargo
//! feature `cuda`, on by default): `SessionBuilder::cuda` with `providers::cuda::CudaOptions`,
//! `SessionBuilder::strict_gpu` to fail instead of falling back to the CPU, and [`IoBinding`] to
//! keep inputs and outputs on the device. The [`guide`] walks through the first hour.
//!
//! [`Session::run`] takes the inputs in whatever shape you hold them: `&[("a", &a)]`, a
//! `&Vec<(String, Value)>`, a `&HashMap<String, Value>`, any iterator of `(name, &value)` pairs
//! (see [`SessionInput`]).
//!
//! **ndarray and half.** onnxrt uses ndarray 0.17 and half 2, and re-exports them as
//! [`onnxrt::ndarray`](ndarray) and [`onnxrt::half`](half). Build arrays through those paths (or
//! depend on the same versions: `ndarray = "0.17"`, `half = "2"`): an array of another ndarray
//! release is a different type, and passing one fails with E0277 (e.g. ndarray-npy 0.10 works
//! with ndarray 0.17, 0.9 does not).
//!
//! What makes this crate different is in its errors: every failure the field guides describe
//! (library not found, provider that will not load and why, a model input given in NHWC to an
//! NCHW model, an opset the runtime is too old for) is an [`Error`] variant whose message says
//! what to do. Features: `cuda`, `tensorrt` (implies `cuda`), `link` (link the runtime instead of
//! loading it at first use).
#![deny(unsafe_op_in_unsafe_fn)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// Layers: a module imports only from its own layer or below; the list is `LAYERS` in
// `layers.rs` (checked there), described in ARCHITECTURE.md. onnxrt-serve sits above, as L4.
// Rustdoc lists a type's methods in the order of the modules that define them: values and
// sessions first, so each page opens with what a newcomer calls first (`from_array`, `view`;
// `commit_from_file`, `run`) and the IoBinding and allocator methods come last.
mod value;

mod session;

mod allocator;
mod allocator_stats;
pub mod allowed_keys;
mod api;
pub mod compile;
#[cfg(feature = "cuda")]
mod cuda_driver;
#[cfg(feature = "cuda")]
mod cuda_graph;
#[cfg(feature = "cuda")]
mod cuda_graphs;
#[cfg(feature = "cuda")]
mod cuda_ipc;
#[cfg(feature = "cuda")]
mod cuda_runtime;
#[cfg(feature = "cuda")]
mod cuda_stream;
pub mod custom_op;
mod device_list;
mod element;
mod env;
pub mod ep_device;
mod error;
mod ffi_guard;
pub mod float8;
mod gpu_failure;
pub mod guide;
mod handle;
mod io_binding;
#[cfg(test)]
mod layers;
mod loader;
pub mod lora;
mod memory;
pub mod ort_messages;
mod pinned_plugin;
pub mod profiling;
pub mod providers;
mod run_options;
mod status;

pub use allocator::{Allocator, SharedAllocator};
pub use api::{runtime_info, RuntimeInfo};
#[cfg(feature = "cuda")]
pub use cuda_graph::CudaGraph;
#[cfg(feature = "cuda")]
pub use cuda_graphs::CudaGraphs;
#[cfg(feature = "cuda")]
pub use cuda_stream::CudaStream;
pub use element::{Element, ElementType};
pub use env::{Environment, EnvironmentBuilder, GlobalThreadPools, LogHook, LogLevel, LogRecord};
pub use error::{Error, ErrorCode, LoadAttempt, ModelFileProblem, Names, Result, ShapeText};
// Listed under `float8` in the docs, not among the crate's main types.
#[doc(no_inline)]
pub use float8::{F8E4M3Fn, F8E4M3Fnuz, F8E5M2Fnuz, F8E5M2};
pub use gpu_failure::GpuFamily;
pub use io_binding::IoBinding;
pub use memory::{Device, MemoryInfo};
pub use pinned_plugin::{pinned_plugins, PinnedPlugin};
pub use run_options::{RunOptions, RunTerminator};
pub use session::LoadCanceller;
pub use session::{
    check_inputs, config_keys, AsyncInput, Dim, ExecutionMode, HeldValue, InputName, ModelBytes, ModelMetadata,
    OptimizationLevel, Outputs, PrepackedWeights, RunFuture, Session, SessionBuilder, SessionInput, SharedInitializers,
    ValueInfo, ValueType, DEFAULT_MAX_ASYNC_RUNS,
};
pub use value::{TensorInfo, Value, ValueKind};

/// The inputs of a run on a model that has none: `session.run(onnxrt::NO_INPUTS)` (an empty
/// `&[]` leaves the pair type to infer).
pub const NO_INPUTS: [(&str, &Value<'static>); 0] = [];

/// Re-exported so callers use the same `half` (2.x) and `ndarray` (0.17) as this crate.
pub use half;
pub use ndarray;

/// Loads the runtime from `path` (a file or the folder holding it) instead of searching. Call it
/// before anything else; afterwards it only succeeds for the library already loaded.
///
/// # Errors
/// [`Error::RuntimeNotFound`], [`Error::AlreadyLoaded`].
pub fn init_from(path: impl AsRef<std::path::Path>) -> Result<()> {
    api::init_from(path.as_ref())
}

/// The places the loader searches, in order, with where each came from.
pub fn search_paths() -> Vec<(String, std::path::PathBuf)> {
    loader::candidates(None)
}
