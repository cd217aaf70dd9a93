//! A model's `config.json` in the repository: how it is served. Every field is optional; what a
//! model's file does not say comes from the server's command line ([`Defaults`]). Unknown fields
//! are refused, so a misspelt setting is an error at start rather than silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::provider::{choose, ProviderChoice, ProviderSetup};
use crate::shown::shown_message;

/// The largest `max_batch` taken: the batcher keeps counters per batch size and buffers of
/// `max_batch` samples per worker (Triton's ONNX Runtime models rarely batch past a few hundred).
pub const MAX_BATCH_MOST: usize = 4096;
/// The largest `queue` taken (its places are made up front).
pub const QUEUE_MOST: usize = 1 << 20;
/// The most batch workers or gather threads per model.
pub const THREADS_MOST: usize = 256;
/// The most intra-op threads per run (`threads`).
pub const INTRA_OP_THREADS_MOST: usize = 1024;
/// The most unbatched runs at once per model.
pub const CONCURRENCY_MOST: usize = 4096;

/// What `config.json` may say.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Dynamic batching on or off (default: on for CUDA, off on the CPU, where batching small
    /// models on few cores costs more than it saves).
    pub batching: Option<bool>,
    /// Most requests in one batched run.
    pub max_batch: Option<usize>,
    /// How long a batch's first request waits for others, in microseconds.
    pub max_delay_us: Option<u64>,
    /// Requests waiting for a run at most (more are answered 503).
    pub queue: Option<usize>,
    /// Pad batches to the smallest of these row counts that holds them; `[]`: no padding for this
    /// model (as `pad_to_power_of_two: false`, it hides the command line's padding).
    pub pad_sizes: Option<Vec<usize>>,
    /// Pad each batch to the next power of two (few batch shapes for a GPU to tune; default: on
    /// for batched CUDA models given no `pad_sizes`).
    pub pad_to_power_of_two: Option<bool>,
    /// One session per padded batch size (CUDA: a new batch size rebuilds every convolution's
    /// plan; default: on for batched CUDA models without CUDA graphs).
    pub session_per_batch_size: Option<bool>,
    /// Threads that copy a batch's samples into its input buffer.
    pub gather_threads: Option<usize>,
    /// CUDA, batched: copy each gathered batch to device buffers of the batcher's own (one copy
    /// on its own stream) and bind those, instead of letting ONNX Runtime copy it in the run
    /// (default: on for CUDA in a build with the `cuda` feature).
    pub device_inputs: Option<bool>,
    /// CUDA, batched, with `device_inputs` and padded sizes: run each padded batch size as a
    /// CUDA graph (captured before the model is ready, replayed per batch); a size whose graph cannot be made
    /// runs without one, and the log says why (default: on where it can be, i.e. when all of
    /// those hold; `false` turns it off).
    pub cuda_graphs: Option<bool>,
    /// With several batch workers: after the delay, hold a batch open while another worker's
    /// batch runs and close it when that run ends (default: on for the `cuda` provider, off otherwise).
    pub hold_while_busy: Option<bool>,
    /// Batcher worker threads.
    pub batch_workers: Option<usize>,
    /// Runs at once without batching (each on a thread of its own).
    pub concurrency: Option<usize>,
    /// `cpu`, `cuda`, `tensorrt`, or any provider ONNX Runtime names (`openvino`, `xnnpack`,
    /// `webgpu`, …; with `plugin`, a plugin provider's).
    pub provider: Option<String>,
    /// The provider's options (ORT's keys; only those onnxrt's allow-list for the provider lets
    /// through), e.g. `{"device_type": "CPU"}` for OpenVINO.
    pub provider_options: Option<BTreeMap<String, serde_json::Value>>,
    /// A plugin provider library (ORT ≥ 1.22): a pinned bundle's name
    /// (`webgpu-plugin-0.4.0-registry`) or the library's path; `provider` names its provider and
    /// `device` which of its devices.
    pub plugin: Option<String>,
    /// TensorRT: cache built engines in the model version's folder under the server's
    /// `--engine-cache-root` (default on).
    pub engine_cache: Option<bool>,
    /// Where TensorRT caches go (`serve --engine-cache-root`; not read from a model's file).
    #[serde(skip)]
    pub engine_cache_root: Option<PathBuf>,
    /// The CUDA device (for a plugin: which of its provider's devices).
    pub device: Option<i32>,
    /// Threads of each run's operators (ONNX Runtime's intra-op threads).
    pub threads: Option<usize>,
    /// The warm-up run: `false` for none, or the shapes of its inputs by name, e.g.
    /// `{"x": [1, 3, 64, 64]}`, each fitting its input as the model declares it and as `shapes`
    /// narrows it (else the model is unavailable, before any run). Inputs not named take their declared shape, which must then be
    /// fixed (a free first axis counts as 1); a model with other free axes and no shapes here is
    /// not warmed up (it is ready at once, and the log says why).
    pub warmup: Option<Warmup>,
    /// Run requests in worker processes of their own, so that a crash of the runtime costs one
    /// request, not the server (default: on where the loaded runtime is known to crash on valid
    /// shapes, ONNX Runtime 1.16, batched models included, and the model is in a file; off for
    /// models whose batches run on the server's sessions: device inputs, CUDA graphs, a session
    /// per batch size).
    pub isolation: Option<bool>,
    /// What each warm-up input is filled with, by name (default 0), e.g. `{"sr": 16000}` for a
    /// model that refuses a sample rate of 0.
    #[serde(default)]
    pub warmup_fill: BTreeMap<String, f64>,
    /// Narrower input shapes than the model declares, by name (-1: any size), e.g.
    /// `{"x": [-1, 3, 48, -1]}`: requests of other shapes are refused before they reach ONNX
    /// Runtime, and the metadata says so. For models that fail, or crash the process, on shapes
    /// they were never meant for.
    #[serde(default)]
    pub shapes: BTreeMap<String, Vec<i64>>,
    /// `imagenet`: also accept pictures on `/v1/models/{name}/infer` (decoded, resized to
    /// 224×224, ImageNet mean/std) and answer top-k classes.
    pub preprocess: Option<String>,
    /// One label per line, for `preprocess` answers (relative to the model's folder).
    pub labels: Option<String>,
}

impl ModelConfig {
    /// Reads `path`; a missing file is the empty config. A refusal is in the config writer's
    /// terms, escaped and cut (the parser's message echoes what the file says).
    pub fn read(path: &Path) -> Result<ModelConfig, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(ModelConfig::default()),
            Err(error) => return Err(format!("{}: {error}", path.display())),
        };
        let refuse = |why: &str| format!("{}: {}", path.display(), shown_message(why));
        // Anything but an object, said as such rather than in serde's terms ("invalid type: sequence").
        if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
            let found = match value {
                serde_json::Value::Object(_) => None,
                serde_json::Value::Array(_) => Some("an array"),
                serde_json::Value::String(_) => Some("a string"),
                serde_json::Value::Number(_) => Some("a number"),
                serde_json::Value::Bool(_) => Some("a boolean"),
                serde_json::Value::Null => Some("null"),
            };
            if let Some(found) = found {
                return Err(refuse(&format!("config.json must be a JSON object ({{...}}), found {found}")));
            }
        }
        serde_json::from_str(&text).map_err(|e| refuse(&e.to_string()))
    }
}

/// `warmup` in config.json: on/off, or the shapes to warm up with.
#[derive(Debug, Clone)]
pub enum Warmup {
    /// `true`: warm up from the declared shapes (where they are fixed); `false`: no warm-up.
    Switch(bool),
    /// The warm-up inputs' shapes by name.
    Shapes(BTreeMap<String, Vec<i64>>),
}

impl<'de> Deserialize<'de> for Warmup {
    /// Either form, or one refusal that shows both (serde's own for an untagged enum is "data did
    /// not match any variant of untagged enum Warmup": outside probe, for `{"x": [1.5, 4]}`).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Warmup, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Switch(bool),
            Shapes(BTreeMap<String, Vec<i64>>),
        }
        match Given::deserialize(deserializer) {
            Ok(Given::Switch(on)) => Ok(Warmup::Switch(on)),
            Ok(Given::Shapes(shapes)) => Ok(Warmup::Shapes(shapes)),
            Err(_) => Err(serde::de::Error::custom(
                "`warmup` must be true or false, or input shapes by name as lists of whole numbers, e.g. \
                 {\"x\": [1, 3, 64, 64]}",
            )),
        }
    }
}

/// The server-wide settings a model's config may override: the same fields, given by the
/// command line (`serve --max-batch …`). Only the serving settings are read from it (batching
/// through `threads`); the per-model ones (`warmup`, `warmup_fill`, `shapes`, `preprocess`,
/// `labels`) come from each model's own file. What neither says takes the built-in value
/// ([`Settings::of`]).
pub type Defaults = ModelConfig;

/// A model's settings: its config over the defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Batching on or off.
    pub batching: bool,
    /// See [`ModelConfig::max_batch`].
    pub max_batch: usize,
    /// See [`ModelConfig::max_delay_us`].
    pub max_delay_us: u64,
    /// See [`ModelConfig::queue`].
    pub queue: usize,
    /// See [`ModelConfig::pad_sizes`].
    pub pad_sizes: Vec<usize>,
    /// See [`ModelConfig::pad_to_power_of_two`].
    pub pad_to_power_of_two: bool,
    /// See [`ModelConfig::session_per_batch_size`].
    pub session_per_batch_size: bool,
    /// See [`ModelConfig::gather_threads`].
    pub gather_threads: usize,
    /// See [`ModelConfig::device_inputs`].
    pub device_inputs: bool,
    /// See [`ModelConfig::cuda_graphs`].
    pub cuda_graphs: bool,
    /// Whether `cuda_graphs` was given (by the model's file or the command line) rather than
    /// decided by default (a default gives way to a model whose samples have free axes).
    pub cuda_graphs_told: bool,
    /// See [`ModelConfig::hold_while_busy`].
    pub hold_while_busy: bool,
    /// See [`ModelConfig::batch_workers`].
    pub batch_workers: usize,
    /// See [`ModelConfig::concurrency`].
    pub concurrency: usize,
    /// The provider's name as written (`cpu`, `cuda`, `tensorrt`, `openvino`, …).
    pub provider: String,
    /// How sessions get that provider (checked; TensorRT's cache folder is placed at load).
    pub provider_setup: ProviderSetup,
    /// See [`ModelConfig::device`].
    pub device: i32,
    /// See [`ModelConfig::threads`].
    pub threads: Option<usize>,
    /// Whether the model is warmed up at start ([`ModelConfig::warmup`]).
    pub warm_up: bool,
    /// The warm-up shapes given ([`ModelConfig::warmup`]).
    pub warmup: BTreeMap<String, Vec<i64>>,
    /// [`ModelConfig::isolation`] as given (the default needs the loaded runtime's version).
    pub isolation: Option<bool>,
    /// See [`ModelConfig::warmup_fill`].
    pub warmup_fill: BTreeMap<String, f64>,
    /// See [`ModelConfig::shapes`].
    pub shapes: BTreeMap<String, Vec<i64>>,
}

impl Settings {
    /// Whether this model's batches run on sessions of the server's process (device inputs,
    /// CUDA graphs, a session per batch size), which isolation cannot move to a worker.
    pub fn batches_on_this_process(&self) -> bool {
        self.batching && (self.device_inputs || self.cuda_graphs || self.session_per_batch_size)
    }

    /// For a model whose samples have free axes (an image of any width; `samples_fixed` false),
    /// CUDA graphs that were only a default are turned off: a graph replays fixed shapes, so none
    /// can be made, and each padded size then runs on a session of its own
    /// (`session_per_batch_size`'s default). Tried anyway, every size ran on the one session,
    /// rebuilding its convolution plans at each change of size: PP-OCR cls answered in 1.4 s on
    /// an H100 (2026-12-07). Returns whether they were turned off.
    pub fn fit_graphs_to_samples(&mut self, samples_fixed: bool) -> bool {
        let off = self.cuda_graphs && !self.cuda_graphs_told && !samples_fixed;
        if off {
            self.cuda_graphs = false;
        }
        off
    }

    /// Whether batches are padded to a few sizes (`pad_to_power_of_two` or `pad_sizes`).
    pub fn padded(&self) -> bool {
        self.pad_to_power_of_two || !self.pad_sizes.is_empty()
    }

    /// The row counts batches run with when padded, ascending and ending at `max_batch` (as the
    /// batcher pads them); empty when unpadded or unbatched.
    pub fn padded_sizes(&self) -> Vec<usize> {
        if !self.batching {
            return Vec::new();
        }
        let given = (!self.pad_sizes.is_empty()).then_some(self.pad_sizes.as_slice());
        crate::batch::padded_sizes(self.max_batch, self.pad_to_power_of_two, given).unwrap_or_default()
    }

    /// `config` over `defaults`, over the built-in values, checked. Built in: batching on for
    /// CUDA and off on the CPU, `max_batch` 32, no delay, `queue` 1024, padding to powers of two
    /// and a session per size without CUDA graphs on CUDA (none and one on the CPU),
    /// one gather thread, batch workers 2 holding batches while the other runs
    /// (`hold_while_busy`) and copying them to their own device buffers (`device_inputs`, in a
    /// build with the `cuda` feature) on CUDA and 1 on the CPU, `concurrency` one run per core,
    /// the CPU, device 0; CUDA graphs per padded size where they can be (CUDA, batching,
    /// `device_inputs`, padded sizes).
    ///
    /// The CUDA values are what measured best on an H200: with them 256 clients kept 95 % of the
    /// offline batch-128 rate, against 70 % without the hold (`tools/gpu/run.sh serve`).
    pub fn of(config: &ModelConfig, defaults: &Defaults) -> Result<Settings, String> {
        // The sizes first: they do not depend on the provider, whose checks may fail on this host.
        let (pad_sizes, sizes_from_command_line) = padding_told(config, defaults)?;
        let max_batch = config.max_batch.or(defaults.max_batch).unwrap_or(32);
        if (1..=MAX_BATCH_MOST).contains(&max_batch) && !sizes_from_command_line {
            check_sizes(&pad_sizes, max_batch)?;
        }
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let provider = config.provider.clone().or_else(|| defaults.provider.clone()).unwrap_or_else(|| "cpu".into());
        let device = config.device.or(defaults.device).unwrap_or(0);
        let provider_setup = choose(&ProviderChoice {
            provider: &provider,
            device,
            device_set: config.device.is_some(),
            options: config.provider_options.as_ref(),
            plugin: config.plugin.as_deref(),
            engine_cache: config.engine_cache,
            engine_cache_root: config.engine_cache_root.clone().or_else(|| defaults.engine_cache_root.clone()),
        })?;
        // One spelling from here on for the two the server's own settings depend on.
        let provider = match provider_setup {
            ProviderSetup::Cpu => "cpu".to_owned(),
            ProviderSetup::Cuda { .. } => "cuda".to_owned(),
            _ => provider,
        };
        let batching = config.batching.or(defaults.batching).unwrap_or(provider == "cuda");
        let mut settings = Settings {
            batching,
            max_batch,
            max_delay_us: config.max_delay_us.or(defaults.max_delay_us).unwrap_or(0),
            queue: config.queue.or(defaults.queue).unwrap_or(1024),
            pad_sizes,
            // Decided below for CUDA (see `cuda_batch_shapes`); a model's own `pad_sizes` hides
            // the command line's `--pad-batches` (see `padding_told`).
            pad_to_power_of_two: config
                .pad_to_power_of_two
                .or(if config.pad_sizes.is_none() { defaults.pad_to_power_of_two } else { None })
                .unwrap_or(false),
            session_per_batch_size: config.session_per_batch_size.or(defaults.session_per_batch_size).unwrap_or(false),
            gather_threads: config.gather_threads.or(defaults.gather_threads).unwrap_or(1),
            // On by default where it can be (a CUDA model in a build with CUDA, not isolated:
            // a model's own `"isolation": true` wins over defaults it cannot have with it).
            device_inputs: config.device_inputs.or(defaults.device_inputs).unwrap_or(
                provider == "cuda" && cfg!(feature = "cuda") && config.isolation.or(defaults.isolation) != Some(true),
            ),
            // Decided below, once the settings it needs are known.
            cuda_graphs: false,
            cuda_graphs_told: config.cuda_graphs.or(defaults.cuda_graphs).is_some(),
            hold_while_busy: config.hold_while_busy.or(defaults.hold_while_busy).unwrap_or(provider == "cuda"),
            batch_workers: config.batch_workers.or(defaults.batch_workers).unwrap_or(if provider == "cuda" {
                2
            } else {
                1
            }),
            concurrency: config.concurrency.or(defaults.concurrency).unwrap_or(cores),
            provider,
            provider_setup,
            device,
            threads: config.threads.or(defaults.threads),
            warm_up: match (&config.warmup, &defaults.warmup) {
                (Some(Warmup::Switch(on)), _) => *on,
                (Some(Warmup::Shapes(_)), _) => true,
                (None, Some(Warmup::Switch(on))) => *on,
                (None, _) => true,
            },
            warmup: match &config.warmup {
                Some(Warmup::Shapes(shapes)) => shapes.clone(),
                _ => BTreeMap::new(),
            },
            isolation: config.isolation.or(defaults.isolation),
            warmup_fill: config.warmup_fill.clone(),
            shapes: config.shapes.clone(),
        };
        if settings.provider == "cuda" && settings.batching {
            cuda_batch_shapes(&mut settings, config, defaults);
        }
        // On by default where it can be: graphs served one client 1.2-1.8x faster and kept the
        // open-loop p99 at 80 % under the goal in every H100 call, where the same settings
        // without them missed it on a busy host (`tools/gpu/run.sh serve`).
        settings.cuda_graphs = config
            .cuda_graphs
            .or(defaults.cuda_graphs)
            .unwrap_or_else(|| graph_needs(&settings).iter().all(|(met, _)| *met));
        if settings.provider == "cuda" && settings.batching {
            // Sizes without a graph (all in a build without CUDA graphs or for a model whose
            // samples have free axes, or one whose capture failed) run on a session of their own,
            // so that no session sees changing sizes. Sessions are made only for such sizes.
            settings.session_per_batch_size = config
                .session_per_batch_size
                .or(defaults.session_per_batch_size)
                .unwrap_or(settings.isolation != Some(true) && settings.padded());
        }
        if settings.device_inputs && settings.provider != "cuda" {
            return Err("`device_inputs` copies batches to a CUDA device: it needs \"provider\": \"cuda\"".into());
        }
        if settings.device_inputs && !cfg!(feature = "cuda") {
            return Err("`device_inputs`: this server was built without the `cuda` feature".into());
        }
        if settings.isolation == Some(true) && settings.batches_on_this_process() {
            return Err("`isolation` runs batches in a worker process, while `device_inputs`, `cuda_graphs` and \
                 `session_per_batch_size` run them on sessions of the server's process: turn those off, or isolation \
                 off for this model"
                .into());
        }
        if settings.cuda_graphs {
            if let Some((_, what)) = graph_needs(&settings).iter().find(|(met, _)| !met) {
                return Err(format!("`cuda_graphs` needs {what}"));
            }
        }
        for (what, value) in [
            ("max_batch", settings.max_batch),
            ("queue", settings.queue),
            ("batch_workers", settings.batch_workers),
            ("gather_threads", settings.gather_threads),
            ("concurrency", settings.concurrency),
        ] {
            if value == 0 {
                return Err(format!("`{what}` is 0; it must be at least 1"));
            }
        }
        // Each is memory or threads made up front (per batch size, per queue place, per worker).
        for (what, value, most) in [
            ("max_batch", settings.max_batch, MAX_BATCH_MOST),
            ("queue", settings.queue, QUEUE_MOST),
            ("batch_workers", settings.batch_workers, THREADS_MOST),
            ("gather_threads", settings.gather_threads, THREADS_MOST),
            ("concurrency", settings.concurrency, CONCURRENCY_MOST),
        ] {
            if value > most {
                return Err(format!("`{what}` is {value}; it must be at most {most}"));
            }
        }
        check_padding(&settings, config, defaults, sizes_from_command_line)?;
        // ORT makes each intra-op thread's state when the session is made: 10^8 took the
        // server's memory at 300 MB/s (outside review, 2026-12-07).
        if let Some(threads) = settings.threads.filter(|&n| n > INTRA_OP_THREADS_MOST) {
            return Err(format!("`threads` is {threads}; it must be at most {INTRA_OP_THREADS_MOST}"));
        }
        Ok(settings)
    }
}

/// The padded sizes given, the model's own over the command line's; refused when one level gives
/// both `pad_sizes` and `pad_to_power_of_two: true` (which would win is not obvious). The model's
/// own `pad_to_power_of_two` hides the command line's sizes, as its own sizes (`[]` too) hide the
/// command line's `--pad-batches`: the model's file says how that model pads, or that it does not.
/// The second value says whether the sizes are the command line's.
fn padding_told(config: &ModelConfig, defaults: &Defaults) -> Result<(Vec<usize>, bool), String> {
    for (level, sizes, powers) in [
        ("config.json", &config.pad_sizes, config.pad_to_power_of_two),
        ("the command line", &defaults.pad_sizes, defaults.pad_to_power_of_two),
    ] {
        if sizes.as_ref().is_some_and(|sizes| !sizes.is_empty()) && powers == Some(true) {
            return Err(format!(
                "{level} gives both `pad_sizes` and `pad_to_power_of_two` (--pad-sizes, --pad-batches): give one"
            ));
        }
    }
    if let Some(sizes) = &config.pad_sizes {
        return Ok((sizes.clone(), false));
    }
    if config.pad_to_power_of_two.is_some() {
        return Ok((Vec::new(), false));
    }
    let sizes = defaults.pad_sizes.clone().unwrap_or_default();
    let from_command_line = !sizes.is_empty();
    Ok((sizes, from_command_line))
}

/// The padded sizes and what needs them: every size from 1 to `max_batch` (batched or not, as
/// the command line's are), a session per size asked for by the model's file only with batching,
/// and for a batched model only with few sizes (unpadded, up to `max_batch` sessions, each with
/// the model's weights).
fn check_padding(
    settings: &Settings,
    config: &ModelConfig,
    defaults: &Defaults,
    sizes_from_command_line: bool,
) -> Result<(), String> {
    // The command line's sizes against this model's `max_batch` (which may be smaller than the
    // command line's), only where the model batches: an unbatched model never pads.
    if !sizes_from_command_line || settings.batching {
        check_sizes(&settings.pad_sizes, settings.max_batch).map_err(|why| match sizes_from_command_line {
            true => format!("{why} (the sizes of --pad-sizes)"),
            false => why,
        })?;
    }
    // Not the command line's `--session-per-size` or padding: they are for every model, batched
    // or not. A model's own file asking for them unbatched was silently ignored (outside probe).
    let asked = [
        ("session_per_batch_size", config.session_per_batch_size == Some(true)),
        ("pad_sizes", config.pad_sizes.as_ref().is_some_and(|sizes| !sizes.is_empty())),
        ("pad_to_power_of_two", config.pad_to_power_of_two == Some(true)),
    ];
    // Except a CUDA model in a build without CUDA, unbatched only by that build's default: its
    // provider is what to tell (it fails to load there), not its padding.
    let unbatched_by_build =
        settings.provider == "cuda" && !cfg!(feature = "cuda") && config.batching.or(defaults.batching).is_none();
    if let Some((key, _)) = asked.iter().find(|(_, asked)| !settings.batching && !unbatched_by_build && *asked) {
        return Err(format!(
            "`{key}` needs batching: it shapes the batches of a batched model, and this model runs unbatched \
             (\"batching\": true for it, or drop the setting)"
        ));
    }
    if settings.batching && settings.session_per_batch_size && !settings.padded() {
        return Err("`session_per_batch_size` makes a session, with its own copy of the weights, per padded batch \
             size: it needs `pad_to_power_of_two` or `pad_sizes` (unpadded, every size from 1 to `max_batch` \
             would get one)"
            .into());
    }
    Ok(())
}

/// Every padded size from 1 to `max_batch`.
fn check_sizes(pad_sizes: &[usize], max_batch: usize) -> Result<(), String> {
    match pad_sizes.iter().find(|&&n| n == 0 || n > max_batch) {
        Some(size) => Err(format!("`pad_sizes` has {size}; each size must be from 1 to `max_batch` ({max_batch})")),
        None => Ok(()),
    }
}

/// Batched CUDA models pad their batches to powers of two unless told otherwise (no padding
/// given): ORT's CUDA provider (1.30, cuDNN 9) keeps each convolution's plan for the last input
/// shape only, and rebuilds every plan when the batch size changes. Unpadded, a batcher under
/// changing load changes sizes on nearly every run: PP-OCR cls answered in about 2 s instead of
/// 8 ms on an H100 (2026-12-07, `tools/gpu/serve-batching-diag.sh`). Padded, the sizes are few,
/// and each gets its CUDA graph or (decided after the graphs) its own session.
fn cuda_batch_shapes(settings: &mut Settings, config: &ModelConfig, defaults: &Defaults) {
    // A model's own `pad_sizes` (`[]` too) says how it pads.
    let told = config.pad_to_power_of_two.or(defaults.pad_to_power_of_two).is_some() || config.pad_sizes.is_some();
    if !told && settings.pad_sizes.is_empty() {
        settings.pad_to_power_of_two = true;
    }
}

/// What CUDA graphs per batch size need, each with whether `settings` has it.
fn graph_needs(settings: &Settings) -> [(bool, &'static str); 5] {
    [
        (settings.provider == "cuda", "\"provider\": \"cuda\""),
        (cfg!(feature = "cuda"), "a server built with the `cuda` feature"),
        (settings.batching, "batching"),
        (settings.device_inputs, "`device_inputs` (the graphs are filled from the batcher's device buffers)"),
        (settings.padded(), "padded sizes (`pad_to_power_of_two` or `pad_sizes`: one graph per size)"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batching_defaults_to_on_for_cuda_and_off_on_the_cpu() {
        let defaults = Defaults::default();
        let cpu = Settings::of(&ModelConfig::default(), &defaults).expect("test value");
        assert!(!cpu.batching);
        let cuda = ModelConfig { provider: Some("cuda".into()), ..ModelConfig::default() };
        assert!(Settings::of(&cuda, &defaults).expect("test value").batching);
        let forced = ModelConfig { batching: Some(true), ..ModelConfig::default() };
        assert!(Settings::of(&forced, &defaults).expect("test value").batching);
    }

    #[test]
    fn cuda_batches_with_two_workers_that_hold_while_the_other_runs_unless_told_otherwise() {
        let defaults = Defaults::default();
        let cpu = Settings::of(&ModelConfig::default(), &defaults).expect("test value");
        assert_eq!((cpu.batch_workers, cpu.hold_while_busy), (1, false));
        let cuda = ModelConfig { provider: Some("cuda".into()), ..ModelConfig::default() };
        let settings = Settings::of(&cuda, &defaults).expect("test value");
        let device_inputs = cfg!(feature = "cuda");
        assert_eq!(
            (settings.batch_workers, settings.hold_while_busy, settings.device_inputs),
            (2, true, device_inputs)
        );
        let told = ModelConfig { batch_workers: Some(3), hold_while_busy: Some(false), ..cuda };
        let settings = Settings::of(&told, &defaults).expect("test value");
        assert_eq!((settings.batch_workers, settings.hold_while_busy), (3, false));
        let command_line = Defaults { batch_workers: Some(1), hold_while_busy: Some(false), ..Defaults::default() };
        let cuda = ModelConfig { provider: Some("cuda".into()), ..ModelConfig::default() };
        let settings = Settings::of(&cuda, &command_line).expect("test value");
        assert_eq!((settings.batch_workers, settings.hold_while_busy), (1, false));
    }

    #[test]
    fn a_models_config_wins_over_the_defaults_which_win_over_the_built_in_values() {
        let defaults =
            Defaults { max_batch: Some(64), queue: Some(10), pad_sizes: Some(vec![1, 8]), ..Defaults::default() };
        let config = ModelConfig { max_batch: Some(8), ..ModelConfig::default() };
        let settings = Settings::of(&config, &defaults).expect("test value");
        assert_eq!((settings.max_batch, settings.queue, settings.pad_sizes), (8, 10, vec![1, 8]));
        assert_eq!((settings.gather_threads, settings.provider.as_str(), settings.device_inputs), (1, "cpu", false));
        let own_sizes = ModelConfig { batching: Some(true), pad_sizes: Some(vec![4]), ..ModelConfig::default() };
        assert_eq!(Settings::of(&own_sizes, &defaults).expect("test value").pad_sizes, [4]);
    }

    #[test]
    fn a_warmup_of_neither_form_is_refused_showing_both() {
        for given in [r#"{"x": [1.5, 4]}"#, r#""yes""#, r#"{"x": 4}"#, "[1, 4]"] {
            let text = format!(r#"{{"warmup": {given}}}"#);
            let error = serde_json::from_str::<ModelConfig>(&text).expect_err("refused").to_string();
            let says = r#"`warmup` must be true or false, or input shapes by name as lists of whole numbers, e.g. {"x": [1, 3, 64, 64]}"#;
            assert!(error.contains(says) && !error.contains("untagged"), "{given}: {error}");
        }
        let shapes = serde_json::from_str::<ModelConfig>(r#"{"warmup": {"x": [1, 4]}}"#).expect("shapes");
        assert!(matches!(shapes.warmup, Some(Warmup::Shapes(s)) if s["x"] == [1, 4]));
        let off = serde_json::from_str::<ModelConfig>(r#"{"warmup": false}"#).expect("off");
        assert!(matches!(off.warmup, Some(Warmup::Switch(false))));
    }

    #[test]
    fn a_misspelt_setting_is_refused() {
        let error = serde_json::from_str::<ModelConfig>(r#"{"max_bacth": 8}"#).expect_err("refused").to_string();
        assert!(error.contains("unknown field `max_bacth`"), "{error}");
        let zero = ModelConfig { max_batch: Some(0), ..ModelConfig::default() };
        assert!(Settings::of(&zero, &Defaults::default()).expect_err("refused").contains("`max_batch` is 0"));
        // Sizes that would be allocated up front are bounded (u32::MAX aborted the server).
        for (config, what) in [
            (ModelConfig { max_batch: Some(u32::MAX as usize), ..ModelConfig::default() }, "`max_batch` is 4294967295"),
            (ModelConfig { queue: Some(usize::MAX), ..ModelConfig::default() }, "`queue` is"),
            (ModelConfig { batch_workers: Some(100_000), ..ModelConfig::default() }, "`batch_workers` is 100000"),
            (ModelConfig { concurrency: Some(1 << 30), ..ModelConfig::default() }, "`concurrency` is"),
            (ModelConfig { threads: Some(100_000_000), ..ModelConfig::default() }, "`threads` is 100000000"),
        ] {
            let error = Settings::of(&config, &Defaults::default()).expect_err(what);
            assert!(error.contains(what) && error.contains("at most"), "{error}");
        }
        let largest = ModelConfig { max_batch: Some(MAX_BATCH_MOST), ..ModelConfig::default() };
        assert!(Settings::of(&largest, &Defaults::default()).is_ok());
        let tpu_keys = serde_json::from_str::<ModelConfig>(r#"{"provider": "tpu", "provider_options": {"cores": 2}}"#)
            .expect("parses");
        let error = Settings::of(&tpu_keys, &Defaults::default()).expect_err("refused");
        assert!(error.contains("provider `tpu`") && error.contains("`cores`"), "{error}");
        let openvino = serde_json::from_str::<ModelConfig>(
            r#"{"provider": "openvino", "provider_options": {"device_type": "CPU", "precison": "FP32"}}"#,
        )
        .expect("parses");
        let error = Settings::of(&openvino, &Defaults::default()).expect_err("refused");
        assert!(error.contains("`precison`") && error.contains("precision"), "the keys that pass: {error}");
        let cpu_device = ModelConfig { device_inputs: Some(true), ..ModelConfig::default() };
        assert!(Settings::of(&cpu_device, &Defaults::default())
            .expect_err("refused")
            .contains("needs \"provider\": \"cuda\""));
    }

    /// A config.json that is no object is refused in the config writer's terms; the parser's
    /// message, which echoes the file, is escaped and cut.
    #[test]
    fn a_config_that_is_no_object_is_refused_in_the_writers_terms() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("config.json");
        let read = |text: &str| {
            std::fs::write(&path, text).expect("write");
            ModelConfig::read(&path)
        };
        for (text, found) in
            [("[]", "an array"), ("7", "a number"), ("\"cpu\"", "a string"), ("true", "a boolean"), ("null", "null")]
        {
            let error = read(text).expect_err(text);
            assert!(error.contains(&format!("config.json must be a JSON object ({{...}}), found {found}")), "{error}");
            assert!(!error.contains("invalid type"), "{error}");
        }
        assert!(read(r#"{"max_batch": 8}"#).is_ok_and(|c| c.max_batch == Some(8)));
        let unknown = format!(r#"{{"bad\nERROR forged{}": 1}}"#, "x".repeat(100_000));
        let error = read(&unknown).expect_err("unknown field");
        assert!(error.contains(r"unknown field `bad\nERROR forged") && !error.contains('\n'), "{error}");
        assert!(error.len() < 3000, "{} bytes", error.len());
        assert!(read("{").expect_err("not JSON").contains("EOF"));
    }

    #[test]
    fn cuda_graphs_are_on_where_they_can_be_and_refused_without_what_they_need() {
        let refusal = |config: ModelConfig| Settings::of(&config, &Defaults::default()).expect_err("refused");
        let graphs = |config: &ModelConfig| Settings::of(config, &Defaults::default()).expect("test value").cuda_graphs;
        let cuda = ModelConfig { provider: Some("cuda".into()), ..ModelConfig::default() };
        // Not asked for: on for CUDA (padded by default) in a build with CUDA, off without
        // padded sizes, and always off on the CPU.
        assert_eq!(graphs(&cuda), cfg!(feature = "cuda"));
        assert!(!graphs(&ModelConfig { pad_to_power_of_two: Some(false), ..cuda.clone() }));
        let cpu_padded =
            ModelConfig { batching: Some(true), pad_to_power_of_two: Some(true), ..ModelConfig::default() };
        assert!(!graphs(&cpu_padded));
        let cuda_padded = ModelConfig { pad_sizes: Some(vec![1, 8, 32]), ..cuda.clone() };
        // Not asked for, and everything they need is there: on exactly in a build with CUDA.
        assert_eq!(graphs(&cuda_padded), cfg!(feature = "cuda"));
        assert!(!graphs(&ModelConfig { cuda_graphs: Some(false), ..cuda_padded.clone() }), "false turns them off");
        let off_by_default = Defaults { cuda_graphs: Some(false), ..Defaults::default() };
        assert!(!Settings::of(&cuda_padded, &off_by_default).expect("test value").cuda_graphs, "--cuda-graphs false");
        // Any of their needs turned off: off, not refused.
        // (Unbatched, padding in its own file is refused: `a_session_per_batch_size_needs_batching_…`.)
        assert!(!graphs(&ModelConfig { batching: Some(false), ..cuda.clone() }));
        if cfg!(feature = "cuda") {
            assert!(!graphs(&ModelConfig { device_inputs: Some(false), ..cuda_padded.clone() }));
        }
        let on_cpu = ModelConfig { cuda_graphs: Some(true), batching: Some(true), ..ModelConfig::default() };
        assert!(refusal(on_cpu).contains("`cuda_graphs` needs \"provider\": \"cuda\""));
        if cfg!(feature = "cuda") {
            let graphs = ModelConfig { cuda_graphs: Some(true), ..cuda.clone() };
            let unpadded = ModelConfig { pad_to_power_of_two: Some(false), ..graphs.clone() };
            assert!(refusal(unpadded).contains("padded sizes"));
            let unbatched = ModelConfig { batching: Some(false), pad_to_power_of_two: Some(true), ..graphs.clone() };
            assert!(refusal(unbatched).contains("needs batching"));
            let host_only = ModelConfig { device_inputs: Some(false), pad_sizes: Some(vec![8, 32]), ..graphs.clone() };
            assert!(refusal(host_only).contains("`device_inputs`"));
            let padded = ModelConfig { pad_to_power_of_two: Some(true), ..graphs };
            assert!(Settings::of(&padded, &Defaults::default()).expect("test value").cuda_graphs);
        } else {
            let graphs = ModelConfig { cuda_graphs: Some(true), pad_to_power_of_two: Some(true), ..cuda };
            assert!(refusal(graphs).contains("built with the `cuda` feature"));
        }
    }

    /// ORT's CUDA provider rebuilds every convolution's plan when a session's batch size
    /// changes: batched CUDA models pad to powers of two, and sizes without a CUDA graph run on
    /// a session each, unless the config or the command line says otherwise.
    #[test]
    fn cuda_batches_are_padded_and_each_size_has_a_graph_or_a_session_unless_told_otherwise() {
        let of = |config: &ModelConfig, defaults: &Defaults| Settings::of(config, defaults).expect("test value");
        let shapes = |s: Settings| (s.pad_to_power_of_two, s.pad_sizes, s.session_per_batch_size, s.cuda_graphs);
        let none = Defaults::default();
        let cuda = ModelConfig { provider: Some("cuda".into()), ..ModelConfig::default() };
        let graphs = cfg!(feature = "cuda");
        // Graphs where they can be, and a session of its own for each size without one (made
        // only for such sizes).
        assert_eq!(shapes(of(&cuda, &none)), (true, vec![], true, graphs));
        assert!(!of(&cuda, &none).cuda_graphs_told);
        assert!(of(&ModelConfig { cuda_graphs: Some(false), ..cuda.clone() }, &none).cuda_graphs_told);
        // A model with free sample axes: default graphs give way, each size on its own session.
        let mut free = of(&cuda, &none);
        assert_eq!(free.fit_graphs_to_samples(false), graphs);
        assert_eq!(shapes(free), (true, vec![], true, false));
        let mut fixed = of(&cuda, &none);
        assert!(!fixed.fit_graphs_to_samples(true));
        assert_eq!(fixed.cuda_graphs, graphs);
        assert_eq!(of(&cuda, &none).padded_sizes(), [1, 2, 4, 8, 16, 32]);
        let odd = ModelConfig { max_batch: Some(24), ..cuda.clone() };
        assert_eq!(of(&odd, &none).padded_sizes(), [1, 2, 4, 8, 16, 24]);
        // Without graphs, every size has its own session.
        let no_graphs = ModelConfig { cuda_graphs: Some(false), ..cuda.clone() };
        assert_eq!(shapes(of(&no_graphs, &none)), (true, vec![], true, false));
        // Sizes given: those, not powers of two.
        let sized = ModelConfig { pad_sizes: Some(vec![4, 16]), cuda_graphs: Some(false), ..cuda.clone() };
        assert_eq!(shapes(of(&sized, &none)), (false, vec![4, 16], true, false));
        assert_eq!(of(&sized, &none).padded_sizes(), [4, 16, 32]);
        // Told: as told, by the config or by the command line.
        let told =
            ModelConfig { pad_to_power_of_two: Some(false), session_per_batch_size: Some(false), ..cuda.clone() };
        assert_eq!(shapes(of(&told, &none)), (false, vec![], false, false));
        let command_line =
            Defaults { pad_to_power_of_two: Some(false), session_per_batch_size: Some(false), ..none.clone() };
        assert_eq!(shapes(of(&cuda, &command_line)), (false, vec![], false, false));
        // Unbatched, isolated or on the CPU: untouched.
        let unbatched = ModelConfig { batching: Some(false), ..cuda.clone() };
        assert_eq!(shapes(of(&unbatched, &none)), (false, vec![], false, false));
        assert!(of(&unbatched, &none).padded_sizes().is_empty());
        // Isolated: padded, but neither device inputs, graphs nor sessions per size, which
        // isolation cannot have (defaults, so not refused).
        let isolated = ModelConfig { isolation: Some(true), ..cuda };
        let settings = of(&isolated, &none);
        assert!(!settings.device_inputs);
        assert_eq!(shapes(settings), (true, vec![], false, false));
        let cpu = ModelConfig { batching: Some(true), ..ModelConfig::default() };
        assert_eq!(shapes(of(&cpu, &none)), (false, vec![], false, false));
        // Told not to pad: no session per size either (it would be one per size up to max_batch).
        let unpadded = ModelConfig { pad_to_power_of_two: Some(false), cuda_graphs: Some(false), ..cuda_again() };
        assert_eq!(shapes(of(&unpadded, &none)), (false, vec![], false, false));
    }

    fn cuda_again() -> ModelConfig {
        ModelConfig { provider: Some("cuda".into()), ..ModelConfig::default() }
    }

    #[test]
    fn padding_that_cannot_be_meant_is_refused_before_any_provider_is_loaded() {
        let none = Defaults::default();
        let refused = |config: ModelConfig, defaults: &Defaults| Settings::of(&config, defaults).expect_err("refused");
        let batched = ModelConfig { batching: Some(true), max_batch: Some(16), ..ModelConfig::default() };
        for (sizes, size) in [(vec![0], 0), (vec![4, 32], 32), (vec![1, 17], 17)] {
            let why = refused(ModelConfig { pad_sizes: Some(sizes), ..batched.clone() }, &none);
            assert!(why.contains(&format!("`pad_sizes` has {size}")) && why.contains("(16)"), "{why}");
        }
        // Unbatched too (as on the command line), and on CUDA unbatched before the provider.
        let unbatched = ModelConfig { batching: Some(false), pad_sizes: Some(vec![0]), ..ModelConfig::default() };
        assert!(refused(unbatched, &none).contains("`pad_sizes` has 0"));
        let cuda_unbatched = ModelConfig { batching: Some(false), pad_sizes: Some(vec![33]), ..cuda_again() };
        assert!(refused(cuda_unbatched, &none).contains("`pad_sizes` has 33"));
        // The limit itself is a size.
        Settings::of(&ModelConfig { pad_sizes: Some(vec![4, 16]), ..batched.clone() }, &none).expect("16 of 16");
        // On CUDA too, before the provider's load (which fails on a host without CUDA).
        let cuda = ModelConfig { pad_sizes: Some(vec![0]), ..cuda_again() };
        assert!(refused(cuda, &none).contains("`pad_sizes` has 0"));
        // A session per size without padding: refused, not max_batch sessions.
        let spbs = ModelConfig { session_per_batch_size: Some(true), ..batched.clone() };
        assert!(refused(spbs.clone(), &none).contains("needs `pad_to_power_of_two` or `pad_sizes`"));
        Settings::of(&ModelConfig { pad_to_power_of_two: Some(true), ..spbs }, &none).expect("padded");
        // Both ways of padding at one level: refused, naming the level.
        let both = ModelConfig { pad_sizes: Some(vec![4]), pad_to_power_of_two: Some(true), ..batched.clone() };
        assert!(refused(both, &none).contains("config.json gives both"));
        let command_line = Defaults { pad_sizes: Some(vec![4]), pad_to_power_of_two: Some(true), ..none.clone() };
        assert!(refused(batched.clone(), &command_line).contains("the command line gives both"));
        // The command line's sizes against a model's smaller max_batch: said where they came from.
        let small = ModelConfig { batching: Some(true), max_batch: Some(8), ..ModelConfig::default() };
        let wide = Defaults { pad_sizes: Some(vec![1, 32]), ..none.clone() };
        let why = refused(small.clone(), &wide);
        assert!(why.contains("`pad_sizes` has 32") && why.contains("--pad-sizes"), "{why}");
        // An unbatched model never pads: the command line's sizes do not concern it.
        Settings::of(&ModelConfig { batching: Some(false), ..small }, &wide).expect("unbatched");
        // Across levels, the model's file says how it pads.
        let powers_here = ModelConfig { pad_to_power_of_two: Some(true), ..batched.clone() };
        let sizes_there = Defaults { pad_sizes: Some(vec![4]), ..none.clone() };
        let settings = Settings::of(&powers_here, &sizes_there).expect("the model's own");
        assert_eq!(settings.padded_sizes(), [1, 2, 4, 8, 16]);
        let sizes_here = ModelConfig { pad_sizes: Some(vec![4]), ..batched };
        let powers_there = Defaults { pad_to_power_of_two: Some(true), ..none };
        let settings = Settings::of(&sizes_here, &powers_there).expect("the model's own");
        assert_eq!(settings.padded_sizes(), [4, 16]);
    }

    /// A session per batch size or padding asked for by an unbatched model's file is refused (it
    /// was silently ignored: outside probes); the command line's `--session-per-size` and
    /// padding, for every model, leave unbatched ones alone.
    #[test]
    fn a_session_per_batch_size_needs_batching_unless_the_command_line_gave_it() {
        let asked =
            ModelConfig { session_per_batch_size: Some(true), pad_to_power_of_two: Some(true), ..Default::default() };
        for batching in [None, Some(false)] {
            let why =
                Settings::of(&ModelConfig { batching, ..asked.clone() }, &Defaults::default()).expect_err("refused");
            assert!(why.contains("`session_per_batch_size` needs batching"), "{why}");
        }
        let cuda_unbatched = ModelConfig { provider: Some("cuda".into()), batching: Some(false), ..asked.clone() };
        assert!(Settings::of(&cuda_unbatched, &Defaults::default()).expect_err("refused").contains("needs batching"));
        let off = ModelConfig { session_per_batch_size: Some(false), ..ModelConfig::default() };
        Settings::of(&off, &Defaults::default()).expect("false asks for nothing");
        let command_line = Defaults { session_per_batch_size: Some(true), ..Defaults::default() };
        Settings::of(&ModelConfig::default(), &command_line).expect("the command line's flag, unbatched model");
        let batched = ModelConfig { batching: Some(true), ..asked };
        assert!(Settings::of(&batched, &Defaults::default()).expect("batched, padded").session_per_batch_size);
        // Padding in an unbatched model's file too (it was ignored); `[]` and `false` ask for none.
        let unbatched = ModelConfig { batching: Some(false), ..ModelConfig::default() };
        for (key, config) in [
            ("pad_sizes", ModelConfig { pad_sizes: Some(vec![4]), ..unbatched.clone() }),
            ("pad_to_power_of_two", ModelConfig { pad_to_power_of_two: Some(true), ..unbatched.clone() }),
        ] {
            let why = Settings::of(&config, &Defaults::default()).expect_err("refused");
            assert!(why.contains(&format!("`{key}` needs batching")), "{why}");
        }
        let none = ModelConfig { pad_sizes: Some(vec![]), pad_to_power_of_two: Some(false), ..unbatched };
        Settings::of(&none, &Defaults::default()).expect("no padding asked for");
        let padded_command_line = Defaults { pad_to_power_of_two: Some(true), ..Defaults::default() };
        Settings::of(&ModelConfig::default(), &padded_command_line).expect("the command line's, unbatched model");
    }

    /// `"pad_sizes": []` in a model's file is no padding for that model, over the command line's
    /// `--pad-batches` or `--pad-sizes` and CUDA's default, as `"pad_to_power_of_two": false` is
    /// (read as absent, it left `--pad-batches` in force: outside probe).
    #[test]
    fn an_empty_pad_sizes_in_a_models_file_turns_its_padding_off() {
        let unpadded: ModelConfig =
            serde_json::from_str(r#"{"batching": true, "max_batch": 16, "pad_sizes": []}"#).expect("parses");
        let no_powers: ModelConfig =
            serde_json::from_str(r#"{"batching": true, "max_batch": 16, "pad_to_power_of_two": false}"#)
                .expect("parses");
        for command_line in [
            Defaults { pad_to_power_of_two: Some(true), ..Defaults::default() },
            Defaults { pad_sizes: Some(vec![4, 16]), ..Defaults::default() },
        ] {
            for config in [&unpadded, &no_powers] {
                let settings = Settings::of(config, &command_line).expect("no padding");
                assert!(!settings.padded() && settings.padded_sizes().is_empty(), "{config:?} over {command_line:?}");
            }
        }
        let cuda: ModelConfig = serde_json::from_str(r#"{"provider": "cuda", "pad_sizes": []}"#).expect("parses");
        let settings = Settings::of(&cuda, &Defaults::default()).expect("no padding");
        assert_eq!((settings.padded(), settings.session_per_batch_size, settings.cuda_graphs), (false, false, false));
        // Powers of two asked beside it, in the same file: those.
        let powers = ModelConfig { pad_to_power_of_two: Some(true), ..unpadded };
        assert_eq!(Settings::of(&powers, &Defaults::default()).expect("powers").padded_sizes(), [1, 2, 4, 8, 16]);
    }
}
