//! Session building: every `SessionBuilder` option, config entries (some that must be refused),
//! providers by name (known and unknown), the Rust custom op, environments.

use std::sync::Arc;

use arbitrary::Arbitrary;
use onnxrt::{Environment, ExecutionMode, LogLevel, OptimizationLevel, Session, SessionBuilder};

use crate::api_sequence::count;
use crate::api_sequence::kernel::{self, Mode};
use crate::api_sequence::models::{CUSTOM_SCALE, MODELS};

/// Session config entries: plain ones, ones that change who owns memory, bad keys and values.
const CONFIG: &[(&str, &str)] = &[
    ("session.disable_prepacking", "1"),
    ("session.intra_op.allow_spinning", "0"),
    ("session.inter_op.allow_spinning", "0"),
    ("session.strict_shape_type_inference", "1"),
    ("session.allow_released_opsets_only", "0"),
    ("session.disable_aot_function_inlining", "1"),
    ("session.use_device_allocator_for_initializers", "1"),
    ("session.disable_cpu_ep_fallback", "1"),
    ("session.set_denormal_as_zero", "1"),
    ("session.load_model_format", "ONNX"),
    ("session.load_model_format", "ORT"),
    ("session.use_ort_model_bytes_directly", "1"),
    ("session.use_ort_model_bytes_for_initializers", "1"),
    ("session.use_env_allocators", "1"),
    ("session.enable_quant_qdq_cleanup", "1"),
    ("session.dynamic_block_base", "4"),
    ("session.intra_op.allow_spinning", "maybe"),
    ("no.such.key", "x"),
    ("", "1"),
    ("session.disable_prepacking", ""),
    ("nul\0key", "1"),
    ("session.disable_prepacking", "nul\0value"),
];

/// Provider names: the CPU one spelled three ways, providers this runtime lacks, nonsense.
const PROVIDERS: &[&str] = &["cpu", "CPU", "CPUExecutionProvider", "CUDA", "TensorRT", "XNNPACK", "QNN", "", "nope"];

/// Provider options: plain values, addresses and library paths (refused), bad text.
const PROVIDER_OPTIONS: &[(&str, &str)] = &[
    ("device_id", "0"),
    ("intra_op_num_threads", "2"),
    ("arena_extend_strategy", "kSameAsRequested"),
    ("user_compute_stream", "4096"),
    ("backend_path", "/nonexistent/libQnnCpu.so"),
    ("trt_engine_cache_path", "/nonexistent"),
    ("", ""),
    ("device_id", "not a number"),
    ("nul\0", "1"),
];

const FREE_DIMS: &[&str] = &["N", "M", "batch", "rows", "nope"];

#[derive(Arbitrary, Debug)]
pub struct Options {
    intra: Option<u8>,
    inter: Option<u8>,
    level: u8,
    parallel: bool,
    memory_pattern: Option<bool>,
    arena: Option<bool>,
    config: Vec<u8>,
    provider: Option<(u8, Vec<u8>)>,
    /// How the custom op's `create_kernel` ends (0: a kernel, 1: `Err`, 2: panic).
    create: u8,
    any_type: bool,
    /// Leaves the custom op out (custom_scale.onnx then fails to load).
    no_custom: bool,
    deterministic: bool,
    async_threads: bool,
    max_async: Option<u8>,
    free_dim: Option<(u8, i8)>,
    global_pools: bool,
    env: bool,
    log_level: Option<u8>,
    log_id: Option<String>,
    strict_gpu: bool,
}

pub fn log_level(b: u8) -> LogLevel {
    [LogLevel::Verbose, LogLevel::Info, LogLevel::Warning, LogLevel::Error, LogLevel::Fatal][usize::from(b % 5)]
}

/// Whether the options leave results bit-exact (flushing denormals does not).
pub fn exact(o: &Options) -> bool {
    !o.config.iter().any(|&c| CONFIG[usize::from(c) % CONFIG.len()].0 == "session.set_denormal_as_zero")
}

fn builder(o: &Options, env: Option<&Arc<Environment>>, mode: &Mode, custom: bool) -> SessionBuilder {
    let mut b = Session::builder();
    count(1);
    if let (true, Some(env)) = (o.env, env) {
        b = b.environment(Arc::clone(env));
    }
    b = b.optimization_level(
        [OptimizationLevel::Disabled, OptimizationLevel::Basic, OptimizationLevel::Extended, OptimizationLevel::All]
            [usize::from(o.level % 4)],
    );
    b = b.execution_mode(if o.parallel { ExecutionMode::Parallel } else { ExecutionMode::Sequential });
    if let Some(t) = o.intra {
        b = b.intra_op_threads(usize::from(t % 4));
    }
    if let Some(t) = o.inter {
        b = b.inter_op_threads(usize::from(t % 3));
    }
    if let Some(on) = o.memory_pattern {
        b = b.memory_pattern(on);
    }
    if let Some(on) = o.arena {
        b = b.cpu_arena(on);
    }
    for &c in o.config.iter().take(4) {
        let (key, value) = CONFIG[usize::from(c) % CONFIG.len()];
        b = b.config_entry(key, value);
    }
    if let Some((name, options)) = &o.provider {
        let options = options.iter().take(3).map(|&i| PROVIDER_OPTIONS[usize::from(i) % PROVIDER_OPTIONS.len()]);
        b = b.provider(PROVIDERS[usize::from(*name) % PROVIDERS.len()], options);
    }
    if o.deterministic {
        b = b.deterministic_compute(true);
    }
    if o.async_threads {
        b = b.async_threads();
    }
    if let Some(runs) = o.max_async {
        b = b.max_async_runs(usize::from(runs % 4));
    }
    if let Some((name, size)) = o.free_dim {
        b = b.free_dimension(FREE_DIMS[usize::from(name) % FREE_DIMS.len()], i64::from(size));
    }
    if o.global_pools {
        b = b.use_global_thread_pools();
    }
    if let Some(level) = o.log_level {
        b = b.log_level(log_level(level));
    }
    if let Some(id) = &o.log_id {
        b = b.log_id(id.as_str());
    }
    if o.strict_gpu {
        b = b.strict_gpu(true);
    }
    if custom {
        b = b.custom_ops(kernel::domain(mode, o.create, o.any_type));
    }
    count(16);
    b
}

/// A session of model `model` (mod the model count), or `None` where building was refused.
pub fn session(model: u8, o: &Options, env: Option<&Arc<Environment>>, mode: &Mode) -> Option<(Session, usize)> {
    let index = usize::from(model) % MODELS.len();
    // The custom op goes to every model sometimes (an unused domain), to custom_scale unless left out.
    let custom = if index == CUSTOM_SCALE { !o.no_custom } else { o.no_custom && o.any_type };
    let b = builder(o, env, mode, custom);
    count(1);
    b.commit_from_memory(MODELS[index].1).ok().map(|s| (s, index))
}

/// `Environment::builder()...commit()` (refused while one is alive), with a log hook that counts.
pub fn environment(name: &str, level: u8, hook: bool, pools: Option<(u8, u8)>) -> Option<Arc<Environment>> {
    let mut b = Environment::builder().name(name).log_level(log_level(level));
    if hook {
        b = b.log_hook(|record| {
            let _ = format!("{record:?}");
        });
    }
    if let Some((intra, inter)) = pools {
        let pools = onnxrt::GlobalThreadPools {
            intra_op_threads: usize::from(intra % 3),
            inter_op_threads: usize::from(inter % 3),
        };
        b = b.global_thread_pools(pools);
    }
    count(5);
    b.commit().ok()
}
