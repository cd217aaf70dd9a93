//! The first hour with onnxrt: load, look, run, read the errors, threads, async, the GPU.
//!
//! # 1. Add it
//!
//! `cargo add onnxrt`. The first build fetches ONNX Runtime (the pinned archive, hashed before
//! anything is unpacked) into a cache and records where it is, so the binary finds it at run time
//! without `LD_LIBRARY_PATH`. `ONNXRT_DIST` picks another pinned runtime, `ONNXRT_LIB_DIR` an
//! install you already have; the build log says which one it used. The README lists them.
//!
//! # 2. Load a model and look at it
//!
//! ```no_run
//! use onnxrt::Session;
//!
//! # fn main() -> onnxrt::Result<()> {
//! let session = Session::builder().commit_from_file("model.onnx")?;
//! for input in session.inputs() {
//!     println!("in  {input}"); // "in  images: f32 [batch, 3, 224, 224]"
//! }
//! for output in session.outputs() {
//!     println!("out {output}"); // "out logits: f32 [batch, 1000]"
//! }
//! # Ok(()) }
//! ```
//!
//! A file that is not an ONNX model (an HTML page saved as `.onnx`, a Git LFS pointer, a cut
//! download) is [`Error::NotOnnxModel`](crate::Error::NotOnnxModel) saying which, before ORT sees
//! it. `onnxrt inspect model.onnx` (the CLI, `cargo install onnxrt-cli`) prints the same and the
//! graph's nodes.
//!
//! # 3. Run it
//!
//! ```no_run
//! use onnxrt::{ndarray::Array4, Session, Value};
//!
//! # fn main() -> onnxrt::Result<()> {
//! let session = Session::builder().commit_from_file("model.onnx")?;
//! let image = Value::from_array(Array4::<f32>::zeros((1, 3, 224, 224)))?;
//! let outputs = session.run(&[("images", &image)])?;
//! let logits = outputs.get("logits")?.view::<f32>()?; // an ndarray view, no copy
//! println!("{:?}", logits.shape());
//! # Ok(()) }
//! ```
//!
//! Inputs are checked before ORT runs: a wrong name lists the model's names, a wrong element type
//! or shape says what the model declares (an NHWC picture given to an NCHW model says so).
//!
//! # 4. When something goes wrong
//!
//! Every failure is an [`Error`](crate::Error) variant with the fix in its message; match on the
//! variant, print the message. The ones people meet first: [`RuntimeNotFound`]
//! (where the loader looked), [`ProviderLoad`] (which library of the GPU stack did not load, and
//! why), [`GpuLibrary`] (cuDNN/cuBLAS/CUDA failing inside a run), [`UnknownInput`],
//! [`ShapeMismatch`]. On a server that misbehaves, run `onnxrt doctor` first: it checks the
//! driver, every library the providers load (in the loader's order) and a real GPU session.
//!
//! [`RuntimeNotFound`]: crate::Error::RuntimeNotFound
//! [`ProviderLoad`]: crate::Error::ProviderLoad
//! [`GpuLibrary`]: crate::Error::GpuLibrary
//! [`UnknownInput`]: crate::Error::UnknownInput
//! [`ShapeMismatch`]: crate::Error::ShapeMismatch
//!
//! # 5. Threads
//!
//! A [`Session`](crate::Session) is `Send + Sync`: share it (`Arc<Session>` or a reference in
//! scoped threads) and call `run` from as many threads as you like; ORT runs them concurrently.
//! Each run uses ORT's intra-op pool ([`SessionBuilder::intra_op_threads`](crate::SessionBuilder::intra_op_threads));
//! with many threads of your own, give each session fewer intra-op threads.
//!
//! # 6. Async
//!
//! [`Session::run_async`](crate::Session::run_async) returns a future that does not block an
//! executor thread (ORT runs the model on its own pool and wakes the future); it works under
//! tokio or any other executor. Or call `run` inside `spawn_blocking`.
//!
//! # 7. The GPU
//!
//! ```no_run
//! # #[cfg(feature = "cuda")]
//! # fn main() -> onnxrt::Result<()> {
//! use onnxrt::providers::cuda::CudaOptions;
//! use onnxrt::Session;
//!
//! let session = Session::builder()
//!     .cuda(CudaOptions::new().device_id(0))
//!     // Every node on the GPU or an error saying which cannot be; also checks every library
//!     // the CUDA provider will load before anything loads it.
//!     .strict_gpu(true)
//!     .commit_from_file("model.onnx")?;
//! assert_eq!(session.providers()[0], "CUDAExecutionProvider");
//! # Ok(()) }
//! # #[cfg(not(feature = "cuda"))]
//! # fn main() {}
//! ```
//!
//! A CUDA provider that cannot load is an error either way ([`ProviderLoad`], naming the library);
//! without `strict_gpu`, nodes that have no CUDA kernel run on the CPU, and
//! [`profiling::placement`](crate::profiling::placement) tells which. To keep data on the device between runs, bind inputs and outputs with
//! [`Session::io_binding`](crate::Session::io_binding) (`IoBinding::bind_output_to_device` with
//! `MemoryInfo::cuda`); for inputs, a device tensor of your own (`Value::zeros_cuda`) filled with
//! `Value::copy_from` on a `CudaStream` of your own waits for that copy alone, not for other
//! threads' runs. The CUDA options (`prefer_nhwc`, `gpu_mem_limit`, …) are typed on
//! `CudaOptions` (`enable_cuda_graph` is `unsafe`: a captured graph replays the first run's
//! buffers whatever a later run binds); TensorRT (feature `tensorrt`) likewise on `TensorRtOptions`.
//!
//! # 8. Newer runtimes: devices, plugins, compiled models
//!
//! Everything above runs on every ONNX Runtime from 1.16.2. Newer features need a newer runtime
//! (build with `ONNXRT_DIST=cpu-1.32.0-registry`, or a GPU 1.30 archive); on an older one each
//! call fails with [`NeedsNewerRuntime`](crate::Error::NeedsNewerRuntime) naming the version.
//! The README's "Versions" table says which needs which: LoRA adapters ([`crate::lora`]) 1.20;
//! [`LoadCanceller`](crate::LoadCanceller), the device API ([`crate::ep_device`]) and
//! [`compile::ModelCompiler`](crate::compile::ModelCompiler) 1.22; allocator statistics 1.23;
//! [`Session::placement`](crate::Session::placement) 1.24.
//!
//! The device API lists the devices each registered provider offers and appends a provider for
//! chosen ones, or lets ORT (a [`DevicePolicy`](crate::ep_device::DevicePolicy)) or a closure
//! choose. [`Session::providers`](crate::Session::providers) lists the providers so appended or
//! chosen, as it does the classic ones. A plugin provider is registered first; a pinned bundle's
//! library safely, checked against its sha256:
//!
//! ```no_run
//! # fn main() -> onnxrt::Result<()> {
//! use onnxrt::ep_device::DevicePolicy;
//! use onnxrt::{Environment, Session};
//!
//! let env = Environment::global()?;
//! // The .so that `onnxrt-dist assemble webgpu-plugin-0.4.0-registry` names.
//! env.register_pinned_provider_library("webgpu", "libonnxruntime_providers_webgpu.so".as_ref())?;
//! let webgpu: Vec<_> =
//!     env.ep_devices()?.into_iter().filter(|d| d.provider == "WebGpuExecutionProvider").collect();
//! let session = Session::builder().providers_for_devices(&webgpu, &[]).commit_from_file("model.onnx")?;
//! assert_eq!(session.providers()[0], "WebGpuExecutionProvider");
//! // Or a GPU, whichever provider offers it, or an error saying why none is listed.
//! let session = Session::builder().device_policy(DevicePolicy::RequireGpu).commit_from_file("model.onnx")?;
//! # drop(session);
//! # Ok(()) }
//! ```
//!
//! ORT's Linux device discovery reads `/sys/class/drm`; where it is missing (many containers) no
//! GPU device is listed, and the classic `SessionBuilder::cuda`
//! path above still reaches the GPU.
