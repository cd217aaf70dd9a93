//! [`ServedModel`]: one model of the repository, as the protocol sees it: its tensors, its
//! readiness (after a warm-up run), and `infer`, which checks a request against the model before
//! anything reaches ONNX Runtime and runs it batched or alone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onnxrt::{Dim, ElementType, Session, Value, ValueInfo};
use tokio::sync::Semaphore;

use crate::batch::{Batcher, RequestOptions, Shutdown};
use crate::isolation::{RunHandle, WorkerPool};
use crate::oip::datatype::datatype_of;
use crate::oip::messages::{ModelMetadata, TensorMetadata, PLATFORM};
use crate::repository::config::{ModelConfig, Settings};
pub use crate::repository::errors::{classify_run_error, InferError, RunErrorKind};
#[cfg(feature = "cuda")]
use crate::repository::sessions::make_graph;
use crate::repository::sessions::make_session;

/// A model input or output as the server checks requests against it.
#[derive(Debug, Clone)]
pub struct ModelTensor {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub element_type: ElementType,
    /// Its declared shape, -1 for a free axis.
    pub shape: Vec<i64>,
}

impl ModelTensor {
    fn of(info: &ValueInfo, what: &str) -> Result<ModelTensor, String> {
        let element_type = info
            .element_type
            .filter(|&t| datatype_of(t).is_some() && info.kind == onnxrt::ValueKind::Tensor)
            .ok_or_else(|| {
                format!(
                    "{what} `{}` is {:?} {:?}, which the protocol cannot carry",
                    info.name, info.kind, info.element_type
                )
            })?;
        let shape = info.shape.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { -1 }).collect();
        Ok(ModelTensor { name: info.name.clone(), element_type, shape })
    }

    /// `info` with the axes this tensor fixes (config.json `shapes`) fixed.
    fn fixing(&self, info: &ValueInfo) -> ValueInfo {
        let shape = info
            .shape
            .iter()
            .zip(&self.shape)
            .map(|(dim, &narrowed)| if narrowed >= 0 { Dim::Fixed(narrowed) } else { dim.clone() })
            .collect();
        ValueInfo { shape, ..info.clone() }
    }

    fn metadata(&self) -> TensorMetadata {
        TensorMetadata {
            name: self.name.clone(),
            datatype: datatype_of(self.element_type).unwrap_or("BYTES"),
            shape: self.shape.clone(),
        }
    }
}

/// What a model's warm-up did.
#[derive(Debug, Clone)]
pub enum WarmedUp {
    /// It ran, taking this long.
    Ran(Duration),
    /// It did not run, for this reason (the model is ready all the same).
    Skipped(String),
}

/// Per-model counters, for `/metrics`.
#[derive(Debug, Default)]
pub struct ModelStats {
    /// Requests answered with outputs.
    pub success: AtomicU64,
    /// Requests refused or failed.
    pub failure: AtomicU64,
    /// Time spent in `infer` by answered requests, in microseconds.
    pub success_micros: AtomicU64,
    /// Requests in `infer` now.
    pub in_flight: AtomicU64,
}

impl ModelStats {
    fn count(&self, result: &Result<Vec<(String, Value<'static>)>, InferError>, started: Instant) {
        match result {
            Ok(_) => {
                self.success.fetch_add(1, Relaxed);
                self.success_micros.fetch_add(started.elapsed().as_micros() as u64, Relaxed);
            }
            Err(_) => {
                self.failure.fetch_add(1, Relaxed);
            }
        }
    }
}

/// How requests reach the session.
enum Runner {
    /// Each request its own run on a blocking thread; `slots` runs at once.
    Direct { session: Arc<Session> },
    /// Requests of one sample go through the dynamic batcher; others run directly on its session.
    Batched { batcher: Arc<Batcher> },
    /// Each request runs in one of the model's worker processes (`slots` at once).
    Isolated { pool: Arc<WorkerPool> },
}

/// One model of the repository.
pub struct ServedModel {
    /// Its name in the protocol's paths.
    pub name: String,
    /// Its version (the folder's number, or `1`).
    pub version: String,
    /// The model file.
    pub path: PathBuf,
    /// Its inputs, in model order.
    pub inputs: Vec<ModelTensor>,
    /// Its inputs as requests are checked against them: as the model declares them, with the
    /// axes config.json `shapes` fixes fixed.
    declared: Vec<ValueInfo>,
    /// Its outputs, in model order.
    pub outputs: Vec<ModelTensor>,
    /// How it is served.
    pub settings: Settings,
    /// Its config file as written (the picture step and labels).
    pub config: ModelConfig,
    /// Labels for the picture step's answers.
    pub labels: Vec<String>,
    /// Counters.
    pub stats: ModelStats,
    runner: Runner,
    /// Direct runs at once.
    slots: Arc<Semaphore>,
    /// Direct requests waiting for a slot.
    waiting: AtomicUsize,
    ready: AtomicBool,
    /// Set when the warm-up failed: not ready for good.
    failed: AtomicBool,
    /// Why it is not ready (after a failed warm-up).
    reason: std::sync::Mutex<String>,
}

impl std::fmt::Debug for ServedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServedModel").field("name", &self.name).field("path", &self.path).finish_non_exhaustive()
    }
}

impl ServedModel {
    /// Loads the model at `path` (or `bytes`, when given: an embedded model) with `settings`.
    pub fn load(
        name: &str,
        version: &str,
        path: &Path,
        bytes: Option<&'static [u8]>,
        config: ModelConfig,
        settings: Settings,
        labels: Vec<String>,
    ) -> Result<ServedModel, String> {
        let session = make_session(path, bytes, &settings).map_err(|e| e.to_string())?;
        let mut inputs = session.inputs().iter().map(|i| ModelTensor::of(i, "input")).collect::<Result<Vec<_>, _>>()?;
        narrow(&mut inputs, &settings.shapes)?;
        let declared = session.inputs().iter().zip(&inputs).map(|(info, narrowed)| narrowed.fixing(info)).collect();
        let warmup_names = settings.warmup.keys().map(|n| ("warmup", n));
        for (what, name) in warmup_names.chain(settings.warmup_fill.keys().map(|n| ("warmup_fill", n))) {
            if !inputs.iter().any(|i| &i.name == name) {
                let known: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
                return Err(format!("config.json `{what}` names `{name}`, which is not an input (inputs: {known:?})"));
            }
        }
        let outputs = session.outputs().iter().map(|o| ModelTensor::of(o, "output")).collect::<Result<Vec<_>, _>>()?;
        let isolate = settings.isolation.unwrap_or_else(|| !settings.batching && bytes.is_none() && runtime_crashes());
        let runner = if isolate {
            if bytes.is_some() {
                return Err("`isolation` needs the model in a file (worker processes load it)".into());
            }
            drop(session);
            let pool = WorkerPool::start(
                name,
                path,
                &settings.provider,
                settings.device,
                settings.threads,
                settings.concurrency,
            )?;
            Runner::Isolated { pool: Arc::new(pool) }
        } else if settings.batching {
            let mut builder = Batcher::builder(session)
                .max_batch(settings.max_batch)
                .max_delay(Duration::from_micros(settings.max_delay_us))
                .queue_capacity(settings.queue)
                .workers(settings.batch_workers)
                .gather_threads(settings.gather_threads)
                .hold_while_busy(settings.hold_while_busy)
                .pad_to_power_of_two(settings.pad_to_power_of_two);
            if !settings.pad_sizes.is_empty() {
                builder = builder.pad_to_sizes(&settings.pad_sizes);
            }
            // (Settings::of refuses device_inputs in a build without CUDA.)
            #[cfg(feature = "cuda")]
            if settings.device_inputs {
                builder = builder.device_inputs(settings.device);
            }
            #[cfg(feature = "cuda")]
            if settings.cuda_graphs {
                let (path, settings) = (path.to_owned(), settings.clone());
                builder = builder.cuda_graphs(move |rows| make_graph(&path, bytes, &settings, rows));
            }
            if settings.session_per_batch_size {
                let (path, settings) = (path.to_owned(), settings.clone());
                builder = builder.session_per_batch_size(move || {
                    make_session(&path, bytes, &settings).map_err(|e| onnxrt::Error::InvalidArgument {
                        what: "a session for another batch size".into(),
                        why: e.to_string(),
                    })
                });
            }
            let batcher = builder.build().map_err(|e| {
                format!("{e}\n(or turn batching off for this model: \"batching\": false in config.json)")
            })?;
            // Its workers capture their CUDA graphs now. Neither the next model's session nor a
            // warm-up run may meet a capture (it would break it): both come after this.
            #[cfg(feature = "cuda")]
            batcher.wait_for_cuda_graphs();
            Runner::Batched { batcher: Arc::new(batcher) }
        } else {
            Runner::Direct { session: Arc::new(session) }
        };
        Ok(ServedModel {
            name: name.to_owned(),
            version: version.to_owned(),
            path: path.to_owned(),
            inputs,
            declared,
            outputs,
            slots: Arc::new(Semaphore::new(settings.concurrency)),
            settings,
            config,
            labels,
            stats: ModelStats::default(),
            runner,
            waiting: AtomicUsize::new(0),
            ready: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            reason: std::sync::Mutex::new("not warmed up yet".into()),
        })
    }

    /// The session requests run on in this process (the batcher's, when batched; none when
    /// they run in worker processes).
    pub fn session(&self) -> Option<&Session> {
        match &self.runner {
            Runner::Direct { session } => Some(session),
            Runner::Batched { batcher } => Some(batcher.session()),
            Runner::Isolated { .. } => None,
        }
    }

    /// The batcher, when batching is on.
    pub fn batcher(&self) -> Option<&Batcher> {
        match &self.runner {
            Runner::Batched { batcher } => Some(batcher),
            Runner::Direct { .. } | Runner::Isolated { .. } => None,
        }
    }

    /// The worker processes, when runs are isolated.
    pub fn workers(&self) -> Option<&WorkerPool> {
        match &self.runner {
            Runner::Isolated { pool } => Some(pool),
            Runner::Direct { .. } | Runner::Batched { .. } => None,
        }
    }

    /// Warms the model up (unless its settings say not to): one run on zeros (values from
    /// `warmup_fill`) of the shapes in `warmup`, or else of the declared shapes where they are
    /// fixed (a free first axis as 1), and each batch size the batcher will use when its samples
    /// have fixed shapes. Skipped, and the model ready at once, when an input has free axes and
    /// no warm-up shape. A failed warm-up leaves the model not ready, with the reason.
    pub fn warm_up(&self) -> Result<WarmedUp, String> {
        if !self.settings.warm_up {
            self.ready.store(true, Relaxed);
            return Ok(WarmedUp::Skipped("warm-up is off (`\"warmup\": false` or --warmup false)".into()));
        }
        let started = Instant::now();
        let result = self.warm_up_runs();
        match &result {
            Ok(_) => self.ready.store(true, Relaxed),
            Err(why) => {
                self.failed.store(true, Relaxed);
                format!("warm-up failed: {why}")
                    .clone_into(&mut self.reason.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
            }
        }
        result.map(|skipped| skipped.map_or_else(|| WarmedUp::Ran(started.elapsed()), WarmedUp::Skipped))
    }

    /// The warm-up runs; `Some(why)` when there is no shape to warm up with.
    fn warm_up_runs(&self) -> Result<Option<String>, String> {
        let mut values = Vec::with_capacity(self.inputs.len());
        for input in &self.inputs {
            let shape = match self.settings.warmup.get(&input.name) {
                Some(shape) => shape.clone(),
                None => {
                    let free: Vec<usize> =
                        input.shape.iter().enumerate().skip(1).filter(|(_, &d)| d < 0).map(|(axis, _)| axis).collect();
                    if !free.is_empty() {
                        return Ok(Some(format!(
                            "input `{}` has free axes {free:?} (shape {:?}) and config.json gives no `warmup` shape for it",
                            input.name, input.shape
                        )));
                    }
                    input.shape.iter().map(|&d| d.max(1)).collect()
                }
            };
            let fill = self.settings.warmup_fill.get(&input.name).copied().unwrap_or(0.0);
            let value = crate::oip::tensor::filled(&input.name, input.element_type, &shape, fill)
                .map_err(|e| format!("warm-up: {e}"))?;
            values.push((input.name.clone(), value));
        }
        let shapes: Vec<String> = values
            .iter()
            .map(|(name, value)| {
                format!("{name}: {:?}", value.tensor_info().map(|i| i.shape.to_vec()).unwrap_or_default())
            })
            .collect();
        if let Err(error) = self.run_blocking(values) {
            return Err(format!(
                "the warm-up run ({}; zeros unless `warmup_fill` says) failed: {error}\nFix: give the warm-up shapes this model \
                 needs in its config.json, e.g. \"warmup\": {{\"{}\": [1, …]}}, or turn its warm-up off (\"warmup\": false)",
                shapes.join(", "),
                self.inputs.first().map_or("input", |i| i.name.as_str())
            ));
        }
        if let Some(batcher) = self.batcher() {
            let fixed = self.inputs.iter().all(|i| i.shape.iter().skip(1).all(|&d| d >= 0));
            if fixed {
                batcher.warm_up().map_err(|e| format!("warming up the batch sizes: {e}"))?;
            }
            #[cfg(feature = "cuda")]
            for (rows, outcome) in batcher.cuda_graphs() {
                match outcome {
                    Ok(()) => tracing::debug!(model = %self.name, rows, "CUDA graph captured"),
                    Err(why) => {
                        tracing::warn!(model = %self.name, rows, cause = %why, "no CUDA graph for this batch size: it runs without one (\"cuda_graphs\": false in its config.json stops trying)")
                    }
                }
            }
        }
        Ok(None)
    }

    /// One run of `inputs` where requests run (in this process or a worker), on this thread.
    fn run_blocking(&self, inputs: Vec<(String, Value<'static>)>) -> Result<(), InferError> {
        match &self.runner {
            Runner::Isolated { pool } => {
                pool.run(&inputs, &[], &RunHandle::default()).map(drop).map_err(InferError::from)
            }
            Runner::Direct { session } => run_on(session, &inputs, &[], None).map(drop),
            Runner::Batched { batcher } => run_on(batcher.session(), &inputs, &[], None).map(drop),
        }
    }

    /// Whether the model is marked not ready for good (its warm-up failed).
    pub fn failed(&self) -> bool {
        self.failed.load(Relaxed)
    }

    /// Whether the warm-up ran.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Relaxed)
    }

    /// Why it is not ready (empty when it is).
    pub fn reason(&self) -> String {
        if self.is_ready() {
            return String::new();
        }
        self.reason.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The protocol's model metadata.
    pub fn metadata(&self) -> ModelMetadata {
        ModelMetadata {
            name: self.name.clone(),
            versions: vec![self.version.clone()],
            platform: PLATFORM,
            inputs: self.inputs.iter().map(ModelTensor::metadata).collect(),
            outputs: self.outputs.iter().map(ModelTensor::metadata).collect(),
        }
    }

    /// Runs one request: `inputs` by name (every model input, each once), the outputs named in
    /// `outputs` (all when empty), answered before `deadline` or refused with
    /// [`InferError::Timeout`]. Returns the outputs in the order asked (model order for all).
    pub async fn infer(
        &self,
        inputs: Vec<(String, Value<'static>)>,
        outputs: &[String],
        deadline: Option<Instant>,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        self.stats.in_flight.fetch_add(1, Relaxed);
        let started = Instant::now();
        let result = self.infer_checked(inputs, outputs, deadline).await;
        self.stats.in_flight.fetch_sub(1, Relaxed);
        self.stats.count(&result, started);
        if let Err(InferError::Failed(why)) = &result {
            tracing::error!(model = %self.name, cause = %why, "inference failed");
        }
        result
    }

    async fn infer_checked(
        &self,
        inputs: Vec<(String, Value<'static>)>,
        outputs: &[String],
        deadline: Option<Instant>,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        if !self.is_ready() {
            return Err(InferError::Overloaded(format!("model `{}` is not ready: {}", self.name, self.reason())));
        }
        let inputs = self.check_inputs(inputs)?;
        let wanted = self.check_outputs(outputs)?;
        if deadline.is_some_and(|at| Instant::now() >= at) {
            return Err(self.late());
        }
        let one_sample = inputs.iter().all(|(_, v)| v.tensor_info().is_ok_and(|i| i.shape.first() == Some(&1)));
        let all = match &self.runner {
            Runner::Batched { batcher } if one_sample => {
                let options = RequestOptions { deadline, ..RequestOptions::default() };
                let future = batcher.run_async_with(inputs, options)?;
                let ran = match deadline {
                    Some(at) => tokio::time::timeout_at(at.into(), future).await.map_err(|_| self.late())?,
                    None => future.await,
                };
                ran?.into_named()
            }
            Runner::Batched { batcher } => {
                let session = SessionRef::Batched(Arc::clone(batcher));
                self.run_direct(session, inputs, &wanted, deadline).await?
            }
            Runner::Direct { session } => {
                self.run_direct(SessionRef::Direct(Arc::clone(session)), inputs, &wanted, deadline).await?
            }
            Runner::Isolated { pool } => {
                self.run_direct(SessionRef::Isolated(Arc::clone(pool)), inputs, &wanted, deadline).await?
            }
        };
        let mut all: Vec<Option<(String, Value<'static>)>> = all.into_iter().map(Some).collect();
        let mut answer = Vec::with_capacity(wanted.len());
        for name in wanted {
            let at = all.iter().position(|o| o.as_ref().is_some_and(|(n, _)| n == name));
            match at.and_then(|at| all[at].take()) {
                Some(output) => answer.push(output),
                None => return Err(InferError::Failed(format!("the run returned no output `{name}`"))),
            }
        }
        Ok(answer)
    }

    fn late(&self) -> InferError {
        InferError::Timeout(format!(
            "model `{}`: the request's deadline passed before its answer was ready (its `timeout` parameter, its \
             gRPC deadline, or the server's --timeout-ms)",
            self.name
        ))
    }

    /// Runs on a blocking thread once one of the model's run slots is free; at most `queue`
    /// requests wait for one.
    async fn run_direct(
        &self,
        session: SessionRef,
        inputs: Vec<(String, Value<'static>)>,
        wanted: &[&str],
        deadline: Option<Instant>,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        let waiting = self.waiting.fetch_add(1, Relaxed);
        let _waiting = Decrement(&self.waiting);
        if waiting >= self.settings.queue {
            return Err(InferError::Overloaded(format!(
                "model `{}` has {waiting} requests waiting (its queue holds {}); retry later",
                self.name, self.settings.queue
            )));
        }
        let acquire = Arc::clone(&self.slots).acquire_owned();
        let permit = match deadline {
            Some(at) => tokio::time::timeout_at(at.into(), acquire).await.map_err(|_| self.late())?,
            None => acquire.await,
        }
        .map_err(|_| InferError::ShuttingDown)?;
        drop(_waiting);
        // A run past the request's deadline is stopped (ORT's terminate flag, or its worker
        // process killed), so an abandoned request does not keep its slot and a core busy.
        let options = onnxrt::RunOptions::new().map_err(|e| InferError::Failed(e.to_string()))?;
        let terminator = options.terminator();
        let handle = Arc::new(RunHandle::default());
        let run_handle = Arc::clone(&handle);
        let wanted: Vec<String> = wanted.iter().map(|&w| w.to_owned()).collect();
        let run = tokio::task::spawn_blocking(move || {
            // The slot is held until the run ends, even when the caller stopped waiting.
            let _permit = permit;
            match &session {
                SessionRef::Isolated(pool) => pool.run(&inputs, &wanted, &run_handle).map_err(InferError::from),
                SessionRef::Direct(session) => run_on(session, &inputs, &wanted, Some(options)),
                SessionRef::Batched(batcher) => run_on(batcher.session(), &inputs, &wanted, Some(options)),
            }
        });
        let joined = match deadline {
            Some(at) => match tokio::time::timeout_at(at.into(), run).await {
                Ok(joined) => joined,
                Err(_) => {
                    if let Err(error) = terminator.terminate() {
                        tracing::warn!(model = %self.name, %error, "could not stop a run past its deadline");
                    }
                    handle.abandon();
                    return Err(self.late());
                }
            },
            None => run.await,
        };
        joined.map_err(|e| InferError::Failed(format!("the run's thread ended: {e}")))?
    }

    /// Checks the inputs against the model's inputs as narrowed by config.json `shapes`
    /// (onnxrt's own check, [`onnxrt::check_inputs`]) and puts them in model order.
    fn check_inputs(
        &self,
        mut given: Vec<(String, Value<'static>)>,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        let pairs: Vec<(&str, &Value<'static>)> = given.iter().map(|(name, value)| (name.as_str(), value)).collect();
        onnxrt::check_inputs(&self.declared, &pairs)?;
        // Each name is known and given once: model order is their positions.
        given.sort_by_key(|(name, _)| self.declared.iter().position(|i| &i.name == name));
        Ok(given)
    }

    /// The output names to answer, checked: known, none twice (all, in model order, when none named).
    fn check_outputs<'n>(&'n self, asked: &'n [String]) -> Result<Vec<&'n str>, InferError> {
        if asked.is_empty() {
            return Ok(self.outputs.iter().map(|o| o.name.as_str()).collect());
        }
        let mut wanted: Vec<&str> = Vec::with_capacity(asked.len());
        for name in asked {
            if !self.outputs.iter().any(|o| &o.name == name) {
                let known: Vec<&str> = self.outputs.iter().map(|o| o.name.as_str()).collect();
                return Err(InferError::Invalid(format!(
                    "model `{}` has no output `{name}`; its outputs are {known:?}",
                    self.name
                )));
            }
            if wanted.contains(&name.as_str()) {
                return Err(InferError::Invalid(format!("output `{name}` is requested twice")));
            }
            wanted.push(name);
        }
        Ok(wanted)
    }

    /// Stops the batcher after running what is queued.
    pub fn shutdown(&self) {
        if let Some(batcher) = self.batcher() {
            batcher.shutdown(Shutdown::Drain);
        }
    }
}

/// Applies `shapes` from config.json: each must name an input, have its rank, and keep its fixed
/// axes (a free axis may become fixed, or stay free with -1).
fn narrow(inputs: &mut [ModelTensor], shapes: &std::collections::BTreeMap<String, Vec<i64>>) -> Result<(), String> {
    for (name, shape) in shapes {
        let Some(input) = inputs.iter_mut().find(|i| &i.name == name) else {
            let known: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
            return Err(format!("config.json `shapes` names `{name}`, which is not an input (inputs: {known:?})"));
        };
        let fits = shape.len() == input.shape.len()
            && shape
                .iter()
                .zip(&input.shape)
                .all(|(&narrow, &declared)| narrow >= -1 && (declared < 0 || narrow == declared || narrow == -1));
        if !fits {
            return Err(format!(
                "config.json `shapes`: {shape:?} for `{name}` does not fit the model's {:?} (same rank; fixed axes kept; -1 for any size)",
                input.shape
            ));
        }
        input.shape = shape
            .iter()
            .zip(&input.shape)
            .map(|(&narrow, &declared)| if narrow == -1 { declared } else { narrow })
            .collect();
    }
    Ok(())
}

/// Where a direct run runs, kept alive by the blocking thread.
enum SessionRef {
    Direct(Arc<Session>),
    Batched(Arc<Batcher>),
    Isolated(Arc<WorkerPool>),
}

/// One run of `inputs` on `session` in this process, answering the outputs `wanted` (all when
/// empty), with `options` (the request's terminate flag). After inputs over
/// [`SHRINK_AFTER_BYTES`](crate::isolation::pool::SHRINK_AFTER_BYTES) the CPU arena gives its
/// unused memory back (ORT's `memory.enable_memory_arena_shrinkage`).
fn run_on(
    session: &Session,
    inputs: &[(String, Value<'static>)],
    wanted: &[String],
    options: Option<onnxrt::RunOptions>,
) -> Result<Vec<(String, Value<'static>)>, InferError> {
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let bytes: u64 =
        inputs.iter().filter_map(|(_, v)| v.tensor_info().ok()).map(|i| (i.len() * i.element_type.size()) as u64).sum();
    let mut options = match options {
        Some(options) => options,
        None => onnxrt::RunOptions::new()?,
    };
    if bytes > crate::isolation::pool::SHRINK_AFTER_BYTES {
        options.config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")?;
    }
    let pairs = inputs.iter().map(|(name, value)| (name.as_str(), value));
    Ok(session.run_with(pairs, &wanted, Some(&options))?.into_named())
}

/// Whether the loaded runtime is one known to crash on valid shapes (isolation's default).
fn runtime_crashes() -> bool {
    onnxrt::runtime_info().is_ok_and(|info| crate::isolation::crashes_on_valid_shapes(&info.version))
}

struct Decrement<'c>(&'c AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}
