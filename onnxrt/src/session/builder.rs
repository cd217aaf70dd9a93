//! [`SessionBuilder`](crate::SessionBuilder): plain settings, applied to ORT once, when the session is made.

use std::path::PathBuf;
use std::sync::Arc;

use crate::custom_op::OpDomain;
use crate::env::{Environment, LogLevel};
use crate::providers::named::NamedProvider;
use crate::providers::ProviderRequest;
use crate::session::shared_weights::{PrepackedWeights, SessionHeld, SharedInitializers};

/// Session configuration keys people need, for [`SessionBuilder::config_entry`](crate::SessionBuilder::config_entry) (names as in
/// ORT's `onnxruntime_session_options_config_keys.h`; values are strings, usually `"0"`/`"1"`).
pub mod config_keys {
    /// `"1"`: fail instead of running nodes on the CPU when a GPU provider was requested
    /// ([`super::SessionBuilder::strict_gpu`] sets it).
    pub const DISABLE_CPU_EP_FALLBACK: &str = "session.disable_cpu_ep_fallback";
    /// `"1"`: reject shapes and types that contradict the model instead of warning (catches
    /// dynamic-shape mistakes at load time).
    pub const STRICT_SHAPE_TYPE_INFERENCE: &str = "session.strict_shape_type_inference";
    /// `"1"`: refuse opsets that are still in development.
    pub const ALLOW_RELEASED_OPSETS_ONLY: &str = "session.allow_released_opsets_only";
    /// `"1"`: do not pre-pack constant weights (lower peak memory, slower kernels).
    pub const DISABLE_PREPACKING: &str = "session.disable_prepacking";
    /// `"0"` to stop intra-op threads spin-waiting between ops (less CPU burned, more latency).
    pub const INTRA_OP_ALLOW_SPINNING: &str = "session.intra_op.allow_spinning";
    /// `"0"` to stop inter-op threads spin-waiting.
    pub const INTER_OP_ALLOW_SPINNING: &str = "session.inter_op.allow_spinning";
    /// `"1"`: allocate initializers with the device allocator (lower peak memory at load).
    pub const USE_DEVICE_ALLOCATOR_FOR_INITIALIZERS: &str = "session.use_device_allocator_for_initializers";
    /// `"1"`: do not inline the model's local functions ahead of time.
    pub const DISABLE_AOT_FUNCTION_INLINING: &str = "session.disable_aot_function_inlining";
    /// `"1"`: flush denormal floats to zero (avoids slow denormal arithmetic on CPU).
    pub const SET_DENORMAL_AS_ZERO: &str = "session.set_denormal_as_zero";
    /// Format of the model given (`"ORT"` or `"ONNX"`); normally inferred.
    pub const LOAD_MODEL_FORMAT: &str = "session.load_model_format";
    /// `"1"`: use an ORT-format model's bytes without copying them. Refused by
    /// [`config_entry`](super::SessionBuilder::config_entry) (ORT keeps pointing into the bytes):
    /// [`commit_from_owned_bytes`](super::SessionBuilder::commit_from_owned_bytes) sets it, holding the bytes.
    pub const USE_ORT_MODEL_BYTES_DIRECTLY: &str = "session.use_ort_model_bytes_directly";
}

/// How much ORT rewrites the graph before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OptimizationLevel {
    /// No rewriting.
    Disabled,
    /// Constant folding and redundant-node removal.
    Basic,
    /// Basic plus fusions.
    Extended,
    /// Everything, including layout optimizations (the default, as the field guides advise).
    #[default]
    All,
}

/// Sequential or parallel execution of independent nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    /// One node at a time (default; best for most models).
    #[default]
    Sequential,
    /// Independent branches in parallel (uses the inter-op threads).
    Parallel,
}

/// Default of [`SessionBuilder::max_async_runs`](crate::SessionBuilder::max_async_runs): well under ORT's queue of 1,024 runs per
/// worker, enough to keep every worker of a large machine busy.
pub const DEFAULT_MAX_ASYNC_RUNS: usize = 256;

/// The builder settings [`Session::run_async`](crate::Session::run_async) needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AsyncSettings {
    pub(crate) intra_op_threads: Option<usize>,
    pub(crate) max_async_runs: usize,
}

/// Settings for a [`Session`](crate::Session). Nothing reaches ORT until `commit_from_*`, which fails once, with
/// the first invalid setting.
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    pub(crate) env: Option<Arc<Environment>>,
    pub(super) optimization: OptimizationLevel,
    pub(super) intra_op_threads: Option<usize>,
    pub(super) inter_op_threads: Option<usize>,
    pub(super) execution_mode: ExecutionMode,
    pub(super) memory_pattern: Option<bool>,
    pub(super) cpu_arena: Option<bool>,
    pub(super) profiling_prefix: Option<PathBuf>,
    pub(super) log_id: Option<String>,
    pub(super) log_level: Option<LogLevel>,
    pub(super) config: Vec<ConfigEntry>,
    pub(super) free_dimensions: Vec<(String, i64)>,
    pub(super) custom_op_libraries: Vec<PathBuf>,
    pub(super) op_domains: Vec<OpDomain>,
    pub(super) global_thread_pools: bool,
    pub(super) deterministic: bool,
    pub(super) max_async_runs: usize,
    pub(super) providers: Vec<ProviderRequest>,
    pub(super) strict_gpu: bool,
    pub(super) optimized_model: Option<PathBuf>,
    pub(super) held: SessionHeld,
    /// Providers by device, ORT's selection policy or a selector (C API 22, `ep_device`).
    pub(crate) devices: crate::ep_device::DeviceRequests,
    /// Stops the load from another thread (C API 22, `session::cancel`).
    pub(crate) load_canceller: Option<super::cancel::LoadCanceller>,
}

impl Default for SessionBuilder {
    fn default() -> Self {
        SessionBuilder::new()
    }
}

impl SessionBuilder {
    /// Default settings: all graph optimizations, ORT's default threads, CPU only.
    pub fn new() -> SessionBuilder {
        SessionBuilder {
            env: None,
            optimization: OptimizationLevel::All,
            intra_op_threads: None,
            inter_op_threads: None,
            execution_mode: ExecutionMode::Sequential,
            memory_pattern: None,
            cpu_arena: None,
            profiling_prefix: None,
            log_id: None,
            log_level: None,
            config: Vec::new(),
            free_dimensions: Vec::new(),
            custom_op_libraries: Vec::new(),
            op_domains: Vec::new(),
            global_thread_pools: false,
            deterministic: false,
            max_async_runs: DEFAULT_MAX_ASYNC_RUNS,
            providers: Vec::new(),
            strict_gpu: false,
            optimized_model: None,
            held: SessionHeld::default(),
            devices: Default::default(),
            load_canceller: None,
        }
    }

    /// The environment to use (default: [`Environment::global`]).
    pub fn environment(mut self, env: Arc<Environment>) -> Self {
        self.env = Some(env);
        self
    }

    /// Graph optimization level (default [`OptimizationLevel::All`]).
    pub fn optimization_level(mut self, level: OptimizationLevel) -> Self {
        self.optimization = level;
        self
    }

    /// Threads used inside one operator (0 or unset: ORT's default, one per physical core).
    ///
    /// The count includes the thread that calls [`Session::run`](crate::Session::run), so `n` means `n - 1` pool
    /// workers. [`Session::run_async`](crate::Session::run_async) runs only on those workers: `intra_op_threads(1)` leaves
    /// it none (it then fails with [`Error::AsyncNeedsThreadPool`](crate::Error::AsyncNeedsThreadPool)); see
    /// [`async_threads`](SessionBuilder::async_threads).
    pub fn intra_op_threads(mut self, threads: usize) -> Self {
        self.intra_op_threads = Some(threads);
        self
    }

    /// Intra-op threads for a session driven mostly by [`Session::run_async`](crate::Session::run_async): one pool worker
    /// per logical CPU (`intra_op_threads(cores + 1)`).
    ///
    /// ORT's default (one thread per physical core, the caller being one of them) leaves async
    /// runs one core short, since they run on the workers only: on 2 cores a compute-bound
    /// model got 206 runs/s with `run_async` against 295 with `spawn_blocking(run)`, and 383 with
    /// `intra_op_threads(3)`, what this sets there (`benches/src/bin/async_throughput.rs`). The trade-off: a
    /// synchronous [`Session::run`](crate::Session::run) on such a session has one thread more than there are cores,
    /// so prefer ORT's default for sessions run mostly with `run`.
    ///
    /// ```
    /// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
    /// let session = onnxrt::Session::builder().async_threads().commit_from_file(model)?;
    /// # drop(session);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    pub fn async_threads(self) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        self.intra_op_threads(cores + 1)
    }

    /// Most [`Session::run_async`](crate::Session::run_async) runs of the session handed to ORT at once (default 256, at
    /// least 1); later runs wait inside their futures, in arrival order, for one to end.
    ///
    /// Without a bound, ORT queues up to 1,024 runs per pool worker and past that runs the
    /// model inline on the thread that called `run_async` (an async worker).
    pub fn max_async_runs(mut self, runs: usize) -> Self {
        self.max_async_runs = runs.max(1);
        self
    }

    /// What the session keeps of these settings for `run_async`.
    pub(super) fn async_settings(&self) -> AsyncSettings {
        AsyncSettings {
            intra_op_threads: if self.global_thread_pools { None } else { self.intra_op_threads },
            max_async_runs: self.max_async_runs,
        }
    }

    /// Threads used across independent nodes in [`ExecutionMode::Parallel`].
    pub fn inter_op_threads(mut self, threads: usize) -> Self {
        self.inter_op_threads = Some(threads);
        self
    }

    /// Sequential or parallel node execution.
    pub fn execution_mode(mut self, mode: ExecutionMode) -> Self {
        self.execution_mode = mode;
        self
    }

    /// Memory pattern planning (on by default in ORT; turn off for highly dynamic shapes).
    pub fn memory_pattern(mut self, enabled: bool) -> Self {
        self.memory_pattern = Some(enabled);
        self
    }

    /// ORT's CPU memory arena (on by default).
    pub fn cpu_arena(mut self, enabled: bool) -> Self {
        self.cpu_arena = Some(enabled);
        self
    }

    /// Writes a profile (Chrome trace JSON) whose path starts with `prefix`; read it back with
    /// [`Session::end_profiling`](crate::Session::end_profiling).
    pub fn profiling(mut self, prefix: impl Into<PathBuf>) -> Self {
        self.profiling_prefix = Some(prefix.into());
        self
    }

    /// The id ORT uses in this session's log lines.
    pub fn log_id(mut self, id: impl Into<String>) -> Self {
        self.log_id = Some(id.into());
        self
    }

    /// Lowest severity this session logs.
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// A session configuration entry (see [`config_keys`]). Only keys known to carry plain
    /// values pass ([`crate::allowed_keys::SESSION_CONFIG`]): a key that makes ORT keep pointing
    /// into caller memory (`session.use_ort_model_bytes_directly`; use
    /// [`commit_from_owned_bytes`](SessionBuilder::commit_from_owned_bytes)) or that the list
    /// does not know fails `commit_from_*` with [`Error::KeyRefused`](crate::Error::KeyRefused).
    ///
    /// Corresponds to `OrtApi::AddSessionConfigEntry`.
    #[doc(alias = "AddSessionConfigEntry")]
    pub fn config_entry(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.push(ConfigEntry { key: key.into(), value: value.into(), checked: true });
        self
    }

    /// [`config_entry`](SessionBuilder::config_entry) without the allow-list check.
    ///
    /// # Safety
    /// Whatever ORT does with the key must hold for every session built with it: for
    /// `session.use_ort_model_bytes_directly` / `session.use_ort_model_bytes_for_initializers`
    /// the bytes given to `commit_from_memory` must stay alive and unchanged until the session
    /// (and every clone of it) is dropped and released.
    pub unsafe fn config_entry_unchecked(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.push(ConfigEntry { key: key.into(), value: value.into(), checked: false });
        self
    }

    /// Fixes a symbolic dimension (e.g. `batch`) to a size, so ORT can plan memory for it.
    pub fn free_dimension(mut self, name: impl Into<String>, size: i64) -> Self {
        self.free_dimensions.push((name.into(), size));
        self
    }

    /// Loads a shared library of custom operators before the model: when the session is made,
    /// ONNX Runtime `dlopen`s `path` and calls its `RegisterCustomOps`, and later calls the
    /// library's kernels during every run. Operators written in Rust need no library and no
    /// `unsafe`: see [`custom_ops`](SessionBuilder::custom_ops).
    ///
    /// # Safety
    /// Loading a library runs its initialisers and `RegisterCustomOps`, and its kernels then read
    /// and write the session's tensors: no safe function can check what that code does. The
    /// caller vouches that `path` names a library built for this ONNX Runtime's C API (as
    /// `RegisterCustomOps(OrtSessionOptions*, const OrtApiBase*)`), whose code, at load time,
    /// at registration and in every kernel, is memory-safe and writes only what it was given
    /// (including every output it is asked for), and that the file cannot be replaced by someone
    /// else before the session is made. ORT keeps the library loaded for the session's life.
    ///
    /// Corresponds to `OrtApi::RegisterCustomOpsLibrary_V2`.
    #[doc(alias = "RegisterCustomOpsLibrary_V2")]
    pub unsafe fn custom_op_library(mut self, path: impl Into<PathBuf>) -> Self {
        self.custom_op_libraries.push(path.into());
        self
    }

    /// Adds operators written in Rust (see [`crate::custom_op`]). The session keeps the domain
    /// alive for as long as it lives.
    ///
    /// Corresponds to `OrtApi::AddCustomOpDomain`.
    #[doc(alias = "AddCustomOpDomain")]
    pub fn custom_ops(mut self, domain: OpDomain) -> Self {
        self.op_domains.push(domain);
        self
    }

    /// Asks ORT for deterministic kernels (same output bits on every run, at some speed cost).
    /// Needs ONNX Runtime 1.17 or newer: on older runtimes `commit_from_*` returns
    /// [`Error::Unsupported`](crate::Error::Unsupported) instead of silently ignoring the request.
    ///
    /// Corresponds to `OrtApi::SetDeterministicCompute` (C API 17).
    #[doc(alias = "SetDeterministicCompute")]
    pub fn deterministic_compute(mut self, yes: bool) -> Self {
        self.deterministic = yes;
        self
    }

    /// Uses the environment's global thread pools instead of per-session ones.
    pub fn use_global_thread_pools(mut self) -> Self {
        self.global_thread_pools = true;
        self
    }

    /// Saves the model as ORT optimized it (after the graph optimizations of
    /// [`optimization_level`](SessionBuilder::optimization_level)) to `path` when the session is
    /// made. Loading that file later with `OptimizationLevel::Disabled` skips the optimizations
    /// at start-up (`benches/src/bin/deploy_bench.rs` measures it). The file appears only once the session exists:
    /// ORT writes a temporary file beside it, renamed into place on success and removed on failure.
    ///
    /// A model saved at [`OptimizationLevel::All`] may hold layout-specific CPU kernels fit for
    /// this machine's instruction set only; save at [`OptimizationLevel::Extended`] for a file to
    /// copy to other machines. A path ending in `.ort` is written in ORT's own format.
    ///
    /// ```
    /// use onnxrt::{OptimizationLevel, Session};
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
    /// let saved = std::env::temp_dir().join(format!("mlp-optimized-{}.onnx", std::process::id()));
    /// // Once (at deployment): optimize and save.
    /// Session::builder().optimization_level(OptimizationLevel::Extended).save_optimized_model(&saved).commit_from_file(model)?;
    /// // At every start: load the optimized file without optimizing again.
    /// let session = Session::builder().optimization_level(OptimizationLevel::Disabled).commit_from_file(&saved)?;
    /// # drop(session); std::fs::remove_file(&saved).unwrap();
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// Corresponds to `OrtApi::SetOptimizedModelFilePath`.
    #[doc(alias = "SetOptimizedModelFilePath")]
    pub fn save_optimized_model(mut self, path: impl Into<PathBuf>) -> Self {
        self.optimized_model = Some(path.into());
        self
    }

    /// Uses the caller's initializers instead of the model's copies of them (by name), shared
    /// with every other session built with the same set; see [`SharedInitializers`].
    ///
    /// Corresponds to `OrtApi::AddInitializer`.
    #[doc(alias = "AddInitializer")]
    pub fn shared_initializers(mut self, initializers: Arc<SharedInitializers>) -> Self {
        self.held.initializers = Some(initializers);
        self
    }

    /// Shares pre-packed weights with every other session built with the same container; see
    /// [`PrepackedWeights`].
    ///
    /// Corresponds to `OrtApi::CreateSessionWithPrepackedWeightsContainer`.
    #[doc(alias = "CreateSessionWithPrepackedWeightsContainer")]
    pub fn prepacked_weights(mut self, container: Arc<PrepackedWeights>) -> Self {
        self.held.prepacked = Some(container);
        self
    }
}

/// Execution providers, in priority order (the CPU provider always comes last); the options and
/// the appending are in [`crate::providers`].
impl SessionBuilder {
    /// Runs the model on CUDA (nodes without a CUDA kernel fall back to the CPU unless
    /// [`SessionBuilder::strict_gpu`](crate::SessionBuilder::strict_gpu) is set).
    #[cfg(feature = "cuda")]
    #[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
    pub fn cuda(mut self, options: crate::providers::cuda::CudaOptions) -> Self {
        self.providers.push(ProviderRequest::Cuda(options));
        self
    }

    /// Runs what TensorRT can on TensorRT. Add [`SessionBuilder::cuda`](crate::SessionBuilder::cuda) after it so the rest runs
    /// on CUDA rather than the CPU.
    #[cfg(feature = "tensorrt")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tensorrt")))]
    pub fn tensorrt(mut self, options: crate::providers::tensorrt::TensorRtOptions) -> Self {
        self.providers.push(ProviderRequest::TensorRt(options));
        self
    }

    /// Appends an execution provider by name, with string options, in priority order with the
    /// others asked for (CUDA, TensorRT, more named ones); the CPU provider always comes last.
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
    /// // The XNNPACK provider with two threads of its own.
    /// let built = onnxrt::Session::builder().provider("XNNPACK", [("intra_op_num_threads", "2")]).commit_from_file(model);
    /// match built {
    ///     Ok(session) => assert!(session.providers().contains(&"XnnpackExecutionProvider")),
    ///     // The runtime was built without it: the error names the providers it has.
    ///     Err(onnxrt::Error::ProviderNotAvailable { provider, available, .. }) => {
    ///         assert_eq!(provider, "XNNPACK");
    ///         assert!(available.0.contains(&"CPUExecutionProvider".to_string()));
    ///     }
    ///     Err(other) => panic!("{other}"),
    /// }
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// `"CUDA"` and `"TensorRT"` (or their `…ExecutionProvider` names) take the same string
    /// options as ORT's Python API; `SessionBuilder::cuda` / `tensorrt`
    /// (cargo features `cuda`, `tensorrt`) are the typed way to the same thing, and both ways go
    /// through one append path: the same key policy, version gates, `device_id` check and
    /// load-failure diagnosis (and TensorRT on ORT < 1.17 serializes runs). Only option keys
    /// the provider's table in [`crate::allowed_keys`] lists as plain values pass (the same check
    /// as the typed options); keys ORT reads as raw addresses or libraries to load (QNN
    /// `backend_path`, CUDA `gpu_external_free`, …), and keys the table does not know, are
    /// refused: see [`provider_unchecked`](SessionBuilder::provider_unchecked). A provider the
    /// crate does not name takes no keys from safe code.
    ///
    /// # Errors
    /// [`Error::KeyRefused`](crate::Error::KeyRefused) for such a key, naming it, why, and the keys that pass. At `commit_from_*`: [`Error::ProviderNotAvailable`](crate::Error::ProviderNotAvailable) when the runtime was built without it
    /// or does not know the name (the message lists what it has), [`Error::ProviderLoad`](crate::Error::ProviderLoad) when
    /// its library is missing or cannot load, [`Error::Unsupported`](crate::Error::Unsupported) for a CUDA option newer than the runtime,
    /// [`Error::Ort`](crate::Error::Ort) (or, for CUDA and TensorRT, [`Error::BadSetting`](crate::Error::BadSetting)), [`Error::NoSuchDevice`](crate::Error::NoSuchDevice) for a `device_id` this machine does not have, for options the provider refuses.
    ///
    /// Corresponds to `OrtApi::SessionOptionsAppendExecutionProvider`.
    #[doc(alias = "SessionOptionsAppendExecutionProvider")]
    pub fn provider<K, V>(mut self, name: impl Into<String>, options: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        let options = options.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self.providers.push(ProviderRequest::Named(NamedProvider::new(name.into(), options, false)));
        self
    }

    /// [`provider`](SessionBuilder::provider) without its allow-list: every key is passed to ORT.
    ///
    /// # Safety
    /// Every option ORT reads as an address must hold a valid one of the right type, alive for
    /// as long as every session built with it; every library named must be safe to load.
    pub unsafe fn provider_unchecked<K, V>(
        mut self,
        name: impl Into<String>,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        let options = options.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self.providers.push(ProviderRequest::Named(NamedProvider::new(name.into(), options, true)));
        self
    }

    /// Fail instead of running any node on the CPU when a GPU provider was requested
    /// (`session.disable_cpu_ep_fallback=1`), and fail with
    /// [`Error::StrictGpuWithoutProvider`](crate::Error::StrictGpuWithoutProvider) if no provider
    /// was requested.
    ///
    /// A provider appended by device ([`providers_for_devices`](SessionBuilder::providers_for_devices))
    /// counts as requested unless it is the CPU provider: the same no-fallback rule applies to it. Devices chosen by ORT ([`device_policy`](SessionBuilder::device_policy)) or by a
    /// [`device_selector`](SessionBuilder::device_selector) do not count: use
    /// [`DevicePolicy::RequireGpu`](crate::ep_device::DevicePolicy::RequireGpu) to require a GPU there.
    pub fn strict_gpu(mut self, strict: bool) -> Self {
        self.strict_gpu = strict;
        self
    }

    /// Whether an execution provider has been asked for (`cuda`, `tensorrt`, `provider`).
    #[cfg(feature = "cuda")]
    pub(crate) fn names_a_provider(&self) -> bool {
        !self.providers.is_empty()
    }
}

/// One configuration entry; `checked: false` only from the unsafe door or the crate itself.
#[derive(Debug, Clone)]
pub(super) struct ConfigEntry {
    pub(super) key: String,
    pub(super) value: String,
    pub(super) checked: bool,
}
