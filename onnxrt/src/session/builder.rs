//! [`SessionBuilder`]: plain settings, applied to ORT once, when the session is made.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use onnxrt_sys::OrtSessionOptions;

use crate::api::api;
use crate::custom_op::{self, OpDomain};
use crate::env::{Environment, LogLevel};
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::providers::ProviderRequest;
use crate::session::saved_model::SavedModel;
use crate::session::shared_weights::{PrepackedWeights, SessionHeld, SharedInitializers};
use crate::session::{model_check, ModelBytes, Session};
use crate::status::ort;
use crate::value::Value;

/// Session configuration keys people need, for [`SessionBuilder::config_entry`] (names as in
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

/// Default of [`SessionBuilder::max_async_runs`]: well under ORT's queue of 1,024 runs per
/// worker, enough to keep every worker of a large machine busy.
pub const DEFAULT_MAX_ASYNC_RUNS: usize = 256;

/// The builder settings [`Session::run_async`] needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AsyncSettings {
    pub(crate) intra_op_threads: Option<usize>,
    pub(crate) max_async_runs: usize,
}

/// Settings for a [`Session`]. Nothing reaches ORT until `commit_from_*`, which fails once, with
/// the first invalid setting.
#[derive(Debug, Clone)]
pub struct SessionBuilder {
    pub(crate) env: Option<Arc<Environment>>,
    optimization: OptimizationLevel,
    intra_op_threads: Option<usize>,
    inter_op_threads: Option<usize>,
    execution_mode: ExecutionMode,
    memory_pattern: Option<bool>,
    cpu_arena: Option<bool>,
    profiling_prefix: Option<PathBuf>,
    log_id: Option<String>,
    log_level: Option<LogLevel>,
    config: Vec<ConfigEntry>,
    free_dimensions: Vec<(String, i64)>,
    custom_op_libraries: Vec<PathBuf>,
    op_domains: Vec<OpDomain>,
    global_thread_pools: bool,
    deterministic: bool,
    max_async_runs: usize,
    pub(crate) providers: Vec<ProviderRequest>,
    pub(crate) strict_gpu: bool,
    optimized_model: Option<PathBuf>,
    held: SessionHeld,
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
    /// The count includes the thread that calls [`Session::run`], so `n` means `n - 1` pool
    /// workers. [`Session::run_async`] runs only on those workers: `intra_op_threads(1)` leaves
    /// it none (it then fails with [`Error::AsyncNeedsThreadPool`]); see
    /// [`async_threads`](SessionBuilder::async_threads).
    pub fn intra_op_threads(mut self, threads: usize) -> Self {
        self.intra_op_threads = Some(threads);
        self
    }

    /// Intra-op threads for a session driven mostly by [`Session::run_async`]: one pool worker
    /// per logical CPU (`intra_op_threads(cores + 1)`).
    ///
    /// ORT's default (one thread per physical core, the caller being one of them) leaves async
    /// runs one core short, since they run on the workers only: on 2 cores a compute-bound
    /// model got 206 runs/s with `run_async` against 295 with `spawn_blocking(run)`, and 383 with
    /// `intra_op_threads(3)`, what this sets there (BENCHMARKS.md, "Async"). The trade-off: a
    /// synchronous [`Session::run`] on such a session has one thread more than there are cores,
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

    /// Most [`Session::run_async`] runs of the session handed to ORT at once (default 256, at
    /// least 1); later runs wait inside their futures, in arrival order, for one to end.
    ///
    /// Without a bound, ORT queues up to 1,024 runs per pool worker and past that runs the
    /// model inline on the thread that called `run_async` (an async worker).
    pub fn max_async_runs(mut self, runs: usize) -> Self {
        self.max_async_runs = runs.max(1);
        self
    }

    /// What the session keeps of these settings for `run_async`.
    fn async_settings(&self) -> AsyncSettings {
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
    /// [`Session::end_profiling`].
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
    /// does not know fails `commit_from_*` with [`Error::KeyRefused`].
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
    /// [`Error::Unsupported`] instead of silently ignoring the request.
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
    /// at start-up (BENCHMARKS.md, "Start-up"). The file appears only once the session exists:
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

    /// Makes a session from a model file.
    ///
    /// # Errors
    /// [`Error::ModelFile`] if the file cannot be read; [`Error::NotOnnxModel`] if it is not an
    /// ONNX model (says whether it is a Git LFS pointer, an HTML page, text or cut short);
    /// [`Error::ModelTooNew`]; ORT's errors;
    /// provider errors (see [`crate::providers`]).
    ///
    /// Corresponds to `OrtApi::CreateSession`.
    #[doc(alias = "CreateSession")]
    pub fn commit_from_file(self, path: impl AsRef<Path>) -> Result<Session> {
        let path = path.as_ref();
        let meta =
            std::fs::metadata(path).map_err(|e| Error::ModelFile { path: path.to_owned(), message: e.to_string() })?;
        if !meta.is_file() {
            return Err(Error::ModelFile { path: path.to_owned(), message: "not a file (a directory?)".into() });
        }
        let path_c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::nul("model path", &path.display().to_string()))?;
        self.commit(Source::File(path, &path_c), &[])
    }

    /// Makes a session from model bytes (ORT copies them).
    ///
    /// # Errors
    /// [`Error::NotOnnxModel`] if the bytes are not an ONNX model; as
    /// [`SessionBuilder::commit_from_file`] otherwise.
    ///
    /// Corresponds to `OrtApi::CreateSessionFromArray`.
    #[doc(alias = "CreateSessionFromArray")]
    pub fn commit_from_memory(self, model: &[u8]) -> Result<Session> {
        self.commit(Source::Bytes(model), &[])
    }

    /// Makes a session from model bytes it keeps: an ORT-format model (`.ort`, as
    /// [`save_optimized_model`](SessionBuilder::save_optimized_model) writes one) is then used in
    /// place, its initializers pointing into these bytes instead of copies (lower peak and
    /// steady memory). The session holds the bytes until ORT has released it, so dropping the
    /// caller's handle (an `Arc<[u8]>` clone) is fine. ONNX-format bytes are parsed and copied
    /// as by [`commit_from_memory`](SessionBuilder::commit_from_memory).
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
    /// # let path = std::env::temp_dir().join(format!("mlp-doc-owned-{}.ort", std::process::id()));
    /// use onnxrt::{OptimizationLevel, Session};
    /// Session::builder().optimization_level(OptimizationLevel::Extended).save_optimized_model(&path).commit_from_file(model)?;
    /// let bytes = std::fs::read(&path).unwrap();
    /// let session = Session::builder().commit_from_owned_bytes(bytes)?;
    /// # drop(session); std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// Sets `session.use_ort_model_bytes_directly` and
    /// `session.use_ort_model_bytes_for_initializers`, the two keys
    /// [`config_entry`](SessionBuilder::config_entry) refuses: ORT reads the bytes during the
    /// create call and, with the second key, for as long as the session lives
    /// (`InferenceSession::LoadOrtModel`), and only reads them.
    ///
    /// # Errors
    /// As [`SessionBuilder::commit_from_memory`].
    ///
    /// Corresponds to `OrtApi::CreateSessionFromArray`.
    #[doc(alias = "CreateSessionFromArray")]
    pub fn commit_from_owned_bytes(mut self, model: impl Into<ModelBytes>) -> Result<Session> {
        let model = Arc::new(model.into());
        for key in [IN_PLACE_BYTES, IN_PLACE_INITIALIZERS] {
            self.config.retain(|e| e.key != key);
            self.config.push(ConfigEntry { key: key.into(), value: "1".into(), checked: false });
        }
        self.held.model_bytes = Some(Arc::clone(&model));
        // The session made below holds `model` (in `held`) until after ORT has released it.
        self.commit(Source::Bytes(model.as_slice()), &[])
    }

    /// Makes a session from model bytes whose weights live in external data, with those weights
    /// given from memory: one tensor per external initializer, by initializer name (a model
    /// exported with `save_as_external_data`, its `.data` file never touching the disk).
    ///
    /// ORT checks each tensor's element type and shape against the model and copies the data,
    /// so the values may be dropped once this returns.
    ///
    /// ```
    /// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models");
    /// # let model = std::fs::read(format!("{dir}/mlp_external.onnx")).unwrap();
    /// # let (w1, b1, w2, b2) = (vec![0f32; 16 * 32], vec![0f32; 32], vec![0f32; 32 * 4], vec![0f32; 4]);
    /// use onnxrt::{Session, Value};
    /// let weights = [
    ///     ("w1", Value::from_vec(&[16, 32], w1)?),
    ///     ("b1", Value::from_vec(&[32], b1)?),
    ///     ("w2", Value::from_vec(&[32, 4], w2)?),
    ///     ("b2", Value::from_vec(&[4], b2)?),
    /// ];
    /// let named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();
    /// let session = Session::builder().commit_from_memory_with_external_data(&model, &named)?;
    /// # drop(session);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name given twice or a value that is not a CPU tensor;
    /// ORT's error naming the initializer for a name the model has no external initializer for,
    /// or a type or shape that differs; ORT's error for external data left without a tensor;
    /// as [`SessionBuilder::commit_from_memory`] otherwise.
    ///
    /// Corresponds to `OrtApi::AddExternalInitializers`.
    #[doc(alias = "AddExternalInitializers")]
    pub fn commit_from_memory_with_external_data(
        self,
        model: &[u8],
        initializers: &[(&str, &Value<'_>)],
    ) -> Result<Session> {
        self.commit(Source::Bytes(model), initializers)
    }

    /// Makes the session: options, shared weights, external data, then ORT's create call.
    fn commit(self, source: Source<'_>, external: &[(&str, &Value<'_>)]) -> Result<Session> {
        let asyncs = self.async_settings();
        let held = self.held.clone();
        let saved = self.optimized_model.as_deref().map(SavedModel::new).transpose()?;
        let (env, options, prepared, custom_ops) = self.prepare()?;
        let o = options.as_ptr();
        let mut raw = std::ptr::null_mut();
        // Every step that can fail once the options exist ends up in `created`, so the options are
        // released (below) before anything they point to, whichever step fails.
        let created = create(source, &env, o, &held, saved.as_ref(), external, &mut raw);
        // Before `custom_ops`, which the options point to (see custom_op::Registered), on every path.
        drop(options);
        match created {
            Ok(()) => {}
            Err(Failure::Setup(e)) => return Err(e),
            Err(Failure::Create(e)) => {
                let e = super::external_data::explain(prepared.explain(e, &env), external);
                return Err(match source {
                    Source::File(path, _) => model_check::explain_file(e, path),
                    Source::Bytes(model) => model_check::explain_bytes(e, model),
                });
            }
        }
        // SAFETY: on success we own the session.
        let session = Session::new(unsafe { Owned::from_raw(raw) }?, env, prepared, asyncs, custom_ops, held)?;
        if let Some(saved) = saved {
            saved.keep()?;
        }
        Ok(session)
    }

    /// Creates the ORT session options from the settings, with the custom op domains they point to.
    fn prepare(
        self,
    ) -> Result<(Arc<Environment>, Owned<OrtSessionOptions>, crate::providers::Prepared, custom_op::Registered)> {
        let env = match &self.env {
            Some(env) => Arc::clone(env),
            None => Environment::global()?,
        };
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid.
        unsafe { ort!(api, CreateSessionOptions(&mut raw)) }?;
        // SAFETY: on success we own the options.
        let options = unsafe { Owned::from_raw(raw) }?;
        let o = options.as_ptr();
        let level = match self.optimization {
            OptimizationLevel::Disabled => onnxrt_sys::ORT_DISABLE_ALL,
            OptimizationLevel::Basic => onnxrt_sys::ORT_ENABLE_BASIC,
            OptimizationLevel::Extended => onnxrt_sys::ORT_ENABLE_EXTENDED,
            OptimizationLevel::All => onnxrt_sys::ORT_ENABLE_ALL,
        };
        // SAFETY: `o` is the live options object created above; strings passed are NUL-terminated
        // CStrings that outlive each call (ORT copies them). This holds for every call below
        // marked "see above".
        unsafe { ort!(api, SetSessionGraphOptimizationLevel(o, level)) }?;
        if let Some(n) = self.intra_op_threads {
            let n = i32::try_from(n)
                .map_err(|_| Error::InvalidArgument { what: "intra_op_threads".into(), why: "too large".into() })?;
            // SAFETY: see above.
            unsafe { ort!(api, SetIntraOpNumThreads(o, n)) }?;
        }
        if let Some(n) = self.inter_op_threads {
            let n = i32::try_from(n)
                .map_err(|_| Error::InvalidArgument { what: "inter_op_threads".into(), why: "too large".into() })?;
            // SAFETY: see above.
            unsafe { ort!(api, SetInterOpNumThreads(o, n)) }?;
        }
        let mode = match self.execution_mode {
            ExecutionMode::Sequential => onnxrt_sys::ORT_SEQUENTIAL,
            ExecutionMode::Parallel => onnxrt_sys::ORT_PARALLEL,
        };
        // SAFETY: see above.
        unsafe { ort!(api, SetSessionExecutionMode(o, mode)) }?;
        match self.memory_pattern {
            // SAFETY: see above.
            Some(true) => unsafe { ort!(api, EnableMemPattern(o)) }?,
            // SAFETY: see above.
            Some(false) => unsafe { ort!(api, DisableMemPattern(o)) }?,
            None => {}
        }
        match self.cpu_arena {
            // SAFETY: see above.
            Some(true) => unsafe { ort!(api, EnableCpuMemArena(o)) }?,
            // SAFETY: see above.
            Some(false) => unsafe { ort!(api, DisableCpuMemArena(o)) }?,
            None => {}
        }
        if let Some(prefix) = &self.profiling_prefix {
            let prefix_c = CString::new(prefix.as_os_str().as_encoded_bytes())
                .map_err(|_| Error::nul("profiling prefix", &prefix.display().to_string()))?;
            // SAFETY: see above.
            unsafe { ort!(api, EnableProfiling(o, prefix_c.as_ptr())) }?;
        }
        if let Some(id) = &self.log_id {
            let id_c = CString::new(id.as_str()).map_err(|_| Error::nul("log id", id))?;
            // SAFETY: see above.
            unsafe { ort!(api, SetSessionLogId(o, id_c.as_ptr())) }?;
        }
        if let Some(level) = self.log_level {
            // SAFETY: see above.
            unsafe { ort!(api, SetSessionLogSeverityLevel(o, level.to_raw() as i32)) }?;
        }
        if self.global_thread_pools {
            if env.global_thread_pools().is_none() {
                return Err(Error::InvalidArgument {
                    what: "use_global_thread_pools".into(),
                    why: "the environment has no global thread pools; create it with EnvironmentBuilder::global_thread_pools".into(),
                });
            }
            // SAFETY: see above.
            unsafe { ort!(api, DisablePerSessionThreads(o)) }?;
        }
        if self.deterministic {
            // C API 17: the field exists in the table only on runtimes that serve it.
            let table = api.since(17, "SessionBuilder::deterministic_compute (SetDeterministicCompute)")?;
            let set = table.SetDeterministicCompute.ok_or_else(|| Error::missing("SetDeterministicCompute"))?;
            // SAFETY: see above; the runtime serves C API 17, so the function exists.
            unsafe { crate::status::check("SetDeterministicCompute", set(o, true)) }?;
        }
        let mut config = self.config.clone();
        if self.strict_gpu && !config.iter().any(|e| e.key == config_keys::DISABLE_CPU_EP_FALLBACK) {
            config.push(ConfigEntry {
                key: config_keys::DISABLE_CPU_EP_FALLBACK.into(),
                value: "1".into(),
                checked: true,
            });
        }
        for ConfigEntry { key, value, checked } in &config {
            let key_c = CString::new(key.as_str()).map_err(|_| Error::nul("config key", key))?;
            let value_c = CString::new(value.as_str()).map_err(|_| Error::nul("config value", value))?;
            if *checked {
                crate::allowed_keys::SESSION_CONFIG.check(key)?;
            }
            // SAFETY: see above.
            unsafe { ort!(api, AddSessionConfigEntry(o, key_c.as_ptr(), value_c.as_ptr())) }?;
        }
        for (name, size) in &self.free_dimensions {
            if *size < 0 {
                return Err(Error::InvalidArgument {
                    what: format!("free dimension `{name}` = {size}"),
                    why: "sizes are 0 or more".into(),
                });
            }
            let name_c = CString::new(name.as_str()).map_err(|_| Error::nul("dimension name", name))?;
            // SAFETY: see above.
            unsafe { ort!(api, AddFreeDimensionOverrideByName(o, name_c.as_ptr(), *size)) }?;
        }
        for library in &self.custom_op_libraries {
            let lib_c = CString::new(library.as_os_str().as_encoded_bytes())
                .map_err(|_| Error::nul("custom op library", &library.display().to_string()))?;
            // SAFETY: see above. ORT loads the library and keeps it for the session's life.
            unsafe { ort!(api, RegisterCustomOpsLibrary_V2(o, lib_c.as_ptr())) }?;
        }
        let prepared = crate::providers::append_all(api, &env, o, &self.providers, self.strict_gpu)?;
        // Last: nothing fails after it here, and the caller releases `options` before it.
        let custom_ops = custom_op::register(api, o, &self.op_domains)?;
        Ok((env, options, prepared, custom_ops))
    }
}

/// ORT's keys for using model bytes in place (`onnxruntime_session_options_config_keys.h`).
const IN_PLACE_BYTES: &str = "session.use_ort_model_bytes_directly";
const IN_PLACE_INITIALIZERS: &str = "session.use_ort_model_bytes_for_initializers";

/// One configuration entry; `checked: false` only from the unsafe door or the crate itself.
#[derive(Debug, Clone)]
struct ConfigEntry {
    key: String,
    value: String,
    checked: bool,
}

/// Where the model comes from.
#[derive(Clone, Copy)]
enum Source<'a> {
    File(&'a Path, &'a CString),
    Bytes(&'a [u8]),
}

/// Why `create` failed: before ORT's create call (our checks, setting options) or in it.
enum Failure {
    Setup(Error),
    Create(Error),
}

/// The steps between the session options and ORT's session: shared weights, the saved-model
/// path, external data, then the create call that fits `source` and the pre-packed container.
fn create(
    source: Source<'_>,
    env: &Environment,
    o: *mut OrtSessionOptions,
    held: &SessionHeld,
    saved: Option<&SavedModel>,
    external: &[(&str, &Value<'_>)],
    raw: &mut *mut onnxrt_sys::OrtSession,
) -> std::result::Result<(), Failure> {
    let setup = || -> Result<()> {
        if let Some(initializers) = &held.initializers {
            initializers.add_to(o)?;
        }
        if let Some(saved) = saved {
            saved.set_on(o)?;
        }
        super::external_data::add(o, external)
    };
    setup().map_err(Failure::Setup)?;
    let api = api().map_err(Failure::Setup)?;
    let container = held.prepacked.as_ref().map_or(std::ptr::null_mut(), |c| c.as_ptr());
    let raw: *mut *mut onnxrt_sys::OrtSession = raw;
    let created = match source {
        // SAFETY: env and options are live; the path is NUL-terminated and outlives the call;
        // the container (if any) is live and held by the session made from it.
        Source::File(_, path_c) if !container.is_null() => unsafe {
            ort!(api, CreateSessionWithPrepackedWeightsContainer(env.as_ptr(), path_c.as_ptr(), o, container, raw))
        },
        // SAFETY: as above.
        Source::File(_, path_c) => unsafe { ort!(api, CreateSession(env.as_ptr(), path_c.as_ptr(), o, raw)) },
        // SAFETY: as above; `model` is a live slice for the call (ORT copies it).
        Source::Bytes(model) if !container.is_null() => unsafe {
            ort!(
                api,
                CreateSessionFromArrayWithPrepackedWeightsContainer(
                    env.as_ptr(),
                    model.as_ptr().cast(),
                    model.len(),
                    o,
                    container,
                    raw
                )
            )
        },
        // SAFETY: as above.
        Source::Bytes(model) => unsafe {
            ort!(api, CreateSessionFromArray(env.as_ptr(), model.as_ptr().cast(), model.len(), o, raw))
        },
    };
    created.map_err(Failure::Create)
}
