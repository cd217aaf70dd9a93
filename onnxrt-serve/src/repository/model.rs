//! [`ServedModel`]: one model of the repository, as the protocol sees it: its tensors, its
//! readiness (after a warm-up run), and `infer`, which checks a request against the model before
//! anything reaches ONNX Runtime and runs it batched or alone.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onnxrt::{Session, Value, ValueInfo};
use tokio::sync::Semaphore;

use crate::batch::{Batcher, RequestOptions, Shutdown};
use crate::isolation::WorkerPool;
use crate::oip::messages::{ModelMetadata, PLATFORM};
use crate::repository::config::{ModelConfig, Settings};
pub use crate::repository::errors::{classify_run_error, InferError, RunErrorKind};
use crate::repository::runner::{run_batch_in, run_batch_taking, runtime_crashes, Runner, SessionRef};
#[cfg(feature = "cuda")]
use crate::repository::sessions::make_graphs;
use crate::repository::sessions::make_session;
pub use crate::repository::stats::{ModelStats, Phases, Tally};
use crate::repository::tensor::narrow;
pub use crate::repository::tensor::ModelTensor;
use crate::repository::warm_up::check_warmup_shapes;
pub use crate::repository::warm_up::WarmedUp;
use crate::shown::shown;

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
    pub(super) declared: Vec<ValueInfo>,
    /// Its outputs, in model order.
    pub outputs: Vec<ModelTensor>,
    /// How it is served.
    pub settings: Settings,
    /// Its config file as written (the picture step and labels).
    pub config: ModelConfig,
    /// Labels for the picture step's answers.
    pub labels: Vec<String>,
    /// Counters (shared with the model it replaced, when reloaded at the same version).
    pub stats: Arc<ModelStats>,
    pub(super) runner: Runner,
    /// Held over each run in this process where sessions share a device that must not run two
    /// at once (a plugin provider's: [`ProviderSetup::run_turn`](crate::provider::ProviderSetup)).
    pub(super) turn: Option<Arc<std::sync::Mutex<()>>>,
    /// Direct runs at once.
    pub(super) slots: Arc<Semaphore>,
    /// Direct requests waiting for a slot.
    pub(super) waiting: AtomicUsize,
    pub(super) ready: AtomicBool,
    /// Set when the warm-up failed: not ready for good.
    pub(super) failed: AtomicBool,
    /// Why it is not ready (after a failed warm-up).
    pub(super) reason: std::sync::Mutex<String>,
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
        let mut settings = settings;
        // Where TensorRT cannot run (the build or the runtime lacks it), that is said before a
        // refused cache folder: it is what the operator fixes first.
        let mut cache_refused = None;
        if let crate::provider::ProviderSetup::TensorRt(trt) = &mut settings.provider_setup {
            let usable = crate::provider::TensorRtSetup::usable();
            match trt.place(name, version, usable) {
                Err(why) if !usable => cache_refused = Some(why),
                placed => placed?,
            }
        }
        if settings.provider_setup != crate::provider::ProviderSetup::Cpu {
            // The config's values, escaped and cut (the name is checked to be a plain word).
            let options: Vec<String> =
                settings.provider_setup.options().iter().map(|(k, v)| format!("{k}={}", shown(v))).collect();
            let options = options.join(", ");
            tracing::info!(model = %name, %version, provider = %settings.provider, %options, "provider settings");
        }
        let session = make_session(path, bytes, &settings).map_err(|e| match &cache_refused {
            Some(cache) => format!("{e}; then: {cache}"),
            None => e.to_string(),
        })?;
        if let Some(cache) = cache_refused {
            return Err(cache);
        }
        let turn = settings.provider_setup.run_turn();
        // The batch workers' runs on a plugin's device take its turn too (through the batcher,
        // set once it is built).
        let batcher_of: Arc<std::sync::OnceLock<std::sync::Weak<Batcher>>> = Arc::default();
        let mut inputs = session.inputs().iter().map(|i| ModelTensor::of(i, "input")).collect::<Result<Vec<_>, _>>()?;
        let model_inputs = inputs.clone();
        narrow(&mut inputs, &settings.shapes)?;
        // CUDA graphs replay fixed shapes (`Settings::fit_graphs_to_samples`).
        let samples_fixed = inputs.iter().all(|i| i.shape.iter().skip(1).all(|&d| d >= 0));
        if settings.fit_graphs_to_samples(samples_fixed) {
            tracing::info!(model = %name, "no CUDA graphs: an input's sample shape has free axes, and a graph replays fixed shapes");
        }
        let declared = session.inputs().iter().zip(&inputs).map(|(info, narrowed)| narrowed.fixing(info)).collect();
        let warmup_names = settings.warmup.keys().map(|n| ("warmup", n));
        for (what, name) in warmup_names.chain(settings.warmup_fill.keys().map(|n| ("warmup_fill", n))) {
            if !inputs.iter().any(|i| &i.name == name) {
                let known: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
                return Err(format!(
                    "config.json `{what}` names `{}`, which is not an input (inputs: {known:?})",
                    shown(name)
                ));
            }
        }
        check_warmup_shapes(&model_inputs, &inputs, &settings.warmup, &settings.shapes)?;
        let outputs = session.outputs().iter().map(|o| ModelTensor::of(o, "output")).collect::<Result<Vec<_>, _>>()?;
        // Batched models too: the batcher gathers in this process and runs each batch in a
        // worker (unless its batches run on this process's sessions: device inputs, graphs).
        let isolate = settings
            .isolation
            .unwrap_or_else(|| bytes.is_none() && runtime_crashes() && !settings.batches_on_this_process());
        let pool = if isolate {
            if bytes.is_some() {
                return Err("`isolation` needs the model in a file (worker processes load it)".into());
            }
            // A batched model's runs are its batch workers' (and requests of several samples).
            let most = if settings.batching { settings.batch_workers } else { settings.concurrency };
            let pool = WorkerPool::start(name, path, &settings.provider_setup, settings.threads, most)?;
            Some(Arc::new(pool))
        } else {
            None
        };
        let runner = if let (Some(pool), false) = (&pool, settings.batching) {
            drop(session);
            Runner::Isolated { pool: Arc::clone(pool) }
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
                builder = builder.cuda_graphs_in_one_session(move |sizes| make_graphs(&path, bytes, &settings, sizes));
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
            if let Some(pool) = &pool {
                let pool = Arc::clone(pool);
                builder = builder.run_batches_with(move |inputs| run_batch_in(&pool, inputs));
            } else if let Some(turn) = &turn {
                let (turn, batcher_of) = (Arc::clone(turn), Arc::clone(&batcher_of));
                builder = builder.run_batches_with(move |inputs| run_batch_taking(&batcher_of, &turn, inputs));
            }
            let batcher = builder.build().map_err(|e| match e {
                // In the repository's terms, not the library's (the reason reaches protocol clients).
                crate::Error::NotBatchable { name, why } => format!(
                    "cannot batch this model: `{name}` {why}; turn batching off for it (\"batching\": false in \
                     config.json), or export it with a free first (batch) axis"
                ),
                other => format!("{other}\n(or turn batching off for this model: \"batching\": false in config.json)"),
            })?;
            // Its workers capture their CUDA graphs now. Neither the next model's session nor a
            // warm-up run may meet a capture (it would break it): both come after this.
            #[cfg(feature = "cuda")]
            batcher.wait_for_cuda_graphs();
            let batcher = Arc::new(batcher);
            let _ = batcher_of.set(Arc::downgrade(&batcher));
            Runner::Batched { batcher, pool }
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
            stats: Arc::default(),
            runner,
            turn,
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
            Runner::Batched { batcher, pool: None } => Some(batcher.session()),
            Runner::Batched { pool: Some(_), .. } | Runner::Isolated { .. } => None,
        }
    }

    /// The batcher, when batching is on.
    pub fn batcher(&self) -> Option<&Batcher> {
        match &self.runner {
            Runner::Batched { batcher, .. } => Some(batcher),
            Runner::Direct { .. } | Runner::Isolated { .. } => None,
        }
    }

    /// The worker processes, when runs are isolated.
    pub fn workers(&self) -> Option<&WorkerPool> {
        match &self.runner {
            Runner::Isolated { pool } | Runner::Batched { pool: Some(pool), .. } => Some(pool),
            Runner::Direct { .. } | Runner::Batched { pool: None, .. } => None,
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
    /// Where its time went goes into `phases`; the caller counts the request ([`Tally`]) once
    /// it is answered or refused.
    pub async fn infer(
        &self,
        inputs: Vec<(String, Value<'static>)>,
        outputs: &[String],
        deadline: Option<Instant>,
        phases: &mut Phases,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        self.stats.in_flight.fetch_add(1, Relaxed);
        // Also when the request is dropped mid-run (its client gave up).
        let _in_flight = crate::on_drop::OnDrop::new(|| {
            self.stats.in_flight.fetch_sub(1, Relaxed);
        });
        let result = self.infer_checked(inputs, outputs, deadline, phases).await;
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
        phases: &mut Phases,
    ) -> Result<Vec<(String, Value<'static>)>, InferError> {
        let checking = Instant::now();
        if !self.is_ready() {
            return Err(InferError::Overloaded(format!("model `{}` is not ready: {}", self.name, self.reason())));
        }
        let inputs = self.check_inputs(inputs)?;
        let wanted = self.check_outputs(outputs)?;
        if deadline.is_some_and(|at| Instant::now() >= at) {
            return Err(self.late());
        }
        phases.input = checking.elapsed();
        let one_sample = inputs.iter().all(|(_, v)| v.tensor_info().is_ok_and(|i| i.shape.first() == Some(&1)));
        let all = match &self.runner {
            Runner::Batched { batcher, .. } if one_sample => {
                let options = RequestOptions { deadline, ..RequestOptions::default() };
                let submitted = Instant::now();
                let future = batcher.run_async_with(inputs, options)?;
                let ran = match deadline {
                    Some(at) => tokio::time::timeout_at(at.into(), future).await.map_err(|_| self.late())?,
                    None => future.await,
                };
                phases.infer = submitted.elapsed();
                ran?.into_named()
            }
            Runner::Batched { batcher, pool } => {
                let session = match pool {
                    Some(pool) => SessionRef::Isolated(Arc::clone(pool)),
                    None => SessionRef::Batched(Arc::clone(batcher)),
                };
                self.run_direct(session, inputs, &wanted, deadline, phases).await?
            }
            Runner::Direct { session } => {
                self.run_direct(SessionRef::Direct(Arc::clone(session)), inputs, &wanted, deadline, phases).await?
            }
            Runner::Isolated { pool } => {
                self.run_direct(SessionRef::Isolated(Arc::clone(pool)), inputs, &wanted, deadline, phases).await?
            }
        };
        let picking = Instant::now();
        let mut all: Vec<Option<(String, Value<'static>)>> = all.into_iter().map(Some).collect();
        let mut answer = Vec::with_capacity(wanted.len());
        for name in wanted {
            let at = all.iter().position(|o| o.as_ref().is_some_and(|(n, _)| n == name));
            match at.and_then(|at| all[at].take()) {
                Some(output) => answer.push(output),
                None => return Err(InferError::Failed(format!("the run returned no output `{name}`"))),
            }
        }
        phases.output = picking.elapsed();
        Ok(answer)
    }

    pub(super) fn late(&self) -> InferError {
        InferError::Timeout(format!(
            "model `{}`: the request's deadline passed before its answer was ready (its `timeout` parameter, its \
             gRPC deadline, or the server's --timeout-ms)",
            self.name
        ))
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
