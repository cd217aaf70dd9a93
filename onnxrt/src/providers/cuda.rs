//! CUDA execution provider options, through ORT's V2 options API (string keys, so options that a
//! runtime does not know are refused by that runtime, as a typed error, never silently ignored).
//!
//! Options that appeared after ORT 1.16 ([`OPTION_SINCE`]) are checked against the loaded
//! runtime's version before anything else, so asking for one on an older runtime is
//! [`Error::Unsupported`](crate::Error::Unsupported) naming the option and the first version that has it.
//!
//! The fastest ResNet-style configuration on a recent runtime (see `benches/src/bin/gpu_bench.rs`,
//! mode `fast`): an fp16 model with fp16 inputs and outputs, [`CudaOptions::prefer_nhwc`],
//! [`CudaOptions::enable_cuda_graph`] (`unsafe`: see its contract) with one `IoBinding` over
//! device buffers whose addresses never change, and a few warm-up runs (cuDNN's exhaustive search
//! and the graph capture happen in the first runs). [`CudaGraph`](crate::CudaGraph) is the same
//! without `unsafe`: it owns the session and the buffers.

use crate::providers::append::Request;
use crate::providers::options::KeyValues;

pub use crate::cuda_ipc::{CudaIpcHandle, MappedDeviceMemory, SharedDeviceMemory};
pub use crate::cuda_runtime::{device_count, device_memory, DeviceMemoryInfo};

/// How the CUDA memory arena grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArenaExtendStrategy {
    /// Double each time (ORT's default; fewer, larger allocations).
    NextPowerOfTwo,
    /// Exactly what is requested (tighter memory, more allocations).
    SameAsRequested,
}

/// How cuDNN picks convolution algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvAlgoSearch {
    /// Benchmark every algorithm once per shape (ORT's default; slow first run, fastest after).
    Exhaustive,
    /// cuDNN's heuristics (fast start).
    Heuristic,
    /// cuDNN's default algorithm.
    Default,
}

/// CUDA provider options that ORT 1.16 does not know, with the first minor version (1.x) that
/// reads them. Setting one on an older runtime fails at session build with [`Error::Unsupported`](crate::Error::Unsupported).
/// The same gates apply to `SessionBuilder::provider("CUDA", ..)`.
pub const OPTION_SINCE: &[(&str, u32)] = super::append::CUDA_OPTION_SINCE;

/// Options of the CUDA provider. Unset options keep ORT's defaults.
#[derive(Debug, Clone, Default)]
pub struct CudaOptions {
    options: KeyValues,
    // Raw cudaStream_t; kept as an address so the options stay Send.
    user_stream: Option<usize>,
    // Set only through the unsafe `enable_cuda_graph`; not in `options`, whose keys the
    // allow-list checks (where `enable_cuda_graph` is refused).
    cuda_graph: Option<bool>,
    // Keys set through other `unsafe` setters (`do_copy_in_default_stream`): refused by the
    // allow-list, so kept apart from `options` and passed as vouched for.
    vouched: KeyValues,
}

impl CudaOptions {
    /// Defaults: device 0.
    pub fn new() -> CudaOptions {
        CudaOptions::default()
    }

    fn set(mut self, key: &'static str, value: impl ToString) -> Self {
        self.options.set(key, value);
        self
    }

    /// The CUDA device to run on.
    pub fn device_id(self, id: i32) -> Self {
        self.set("device_id", id)
    }

    /// Cap on the CUDA arena in bytes; exceeding it gives [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    pub fn gpu_mem_limit(self, bytes: usize) -> Self {
        self.set("gpu_mem_limit", bytes)
    }

    /// How the arena grows.
    pub fn arena_extend_strategy(self, strategy: ArenaExtendStrategy) -> Self {
        self.set(
            "arena_extend_strategy",
            match strategy {
                ArenaExtendStrategy::NextPowerOfTwo => "kNextPowerOfTwo",
                ArenaExtendStrategy::SameAsRequested => "kSameAsRequested",
            },
        )
    }

    /// How cuDNN picks convolution algorithms.
    pub fn cudnn_conv_algo_search(self, search: ConvAlgoSearch) -> Self {
        self.set(
            "cudnn_conv_algo_search",
            match search {
                ConvAlgoSearch::Exhaustive => "EXHAUSTIVE",
                ConvAlgoSearch::Heuristic => "HEURISTIC",
                ConvAlgoSearch::Default => "DEFAULT",
            },
        )
    }

    /// Whether ORT copies inputs and outputs on its compute stream (`true`, ORT's default) or on
    /// separate copy streams (`false`).
    ///
    /// With `false`, ORT's own notes warn that a copy and the kernels reading it may race: a run
    /// can read an input before its copy has landed, or an output can be read before it is
    /// written. So this setter is `unsafe`, and the key through [`CudaOptions::raw`] or
    /// `SessionBuilder::provider` is [`Error::KeyRefused`](crate::Error::KeyRefused)
    /// (docs/soundness.md §10).
    ///
    /// # Safety
    /// With `false`: the runtime loaded orders its copy streams with its compute stream for every
    /// model run with these options (you have checked that for your ORT version and models).
    /// With `true` (the default), nothing.
    pub unsafe fn do_copy_in_default_stream(mut self, yes: bool) -> Self {
        self.vouched.set("do_copy_in_default_stream", u8::from(yes));
        self
    }

    /// Let cuDNN use as much workspace as the fastest algorithm wants.
    pub fn cudnn_conv_use_max_workspace(self, yes: bool) -> Self {
        self.set("cudnn_conv_use_max_workspace", u8::from(yes))
    }

    /// Capture the model in a CUDA graph in the first runs and replay it on every later run.
    ///
    /// Once the graph is captured, ORT's run does nothing but replay it: it does not look at the
    /// inputs and outputs of the new run, and reads and writes the memory of the first one
    /// (`InferenceSession::Run` goes straight to `ReplayGraph`). From safe code that memory could
    /// be freed or reused by then, so this option is `unsafe`, and the same key through
    /// [`CudaOptions::raw`] or `SessionBuilder::provider` is [`Error::KeyRefused`](crate::Error::KeyRefused).
    ///
    /// [`CudaGraph`](crate::CudaGraph) keeps this contract for you (it owns the session and its
    /// buffers); use this only where it does not fit.
    ///
    /// # Safety
    /// For every session built with these options (with `yes`):
    /// - every run goes through an [`IoBinding`](crate::IoBinding) that binds every input and
    ///   output to device memory (not `Session::run`, not outputs ORT allocates);
    /// - every run binds the same buffers, at the same addresses and with the same shapes, as the
    ///   first run;
    /// - those buffers stay alive until the last run of the session has ended, and are not written
    ///   by anything else while a run is in progress.
    pub unsafe fn enable_cuda_graph(mut self, yes: bool) -> Self {
        self.cuda_graph = Some(yes);
        self
    }

    /// TF32 tensor cores for fp32 matmuls/convolutions (ORT's default: on). ORT 1.18 and later;
    /// on older runtimes building the session fails with [`Error::Unsupported`](crate::Error::Unsupported).
    pub fn use_tf32(self, yes: bool) -> Self {
        self.set("use_tf32", u8::from(yes))
    }

    /// Prefer channels-last (NHWC) kernels: ORT rewrites convolutions, pooling and normalisation
    /// to NHWC inside the graph (inputs and outputs keep the model's layout), which is what lets
    /// cuDNN use tensor cores without transposes, mostly a gain for fp16 models.
    ///
    /// ORT 1.17 and later; on older runtimes building the session fails with
    /// [`Error::Unsupported`](crate::Error::Unsupported). ORT builds made without NHWC CUDA kernels (the build option is on
    /// in the official packages from 1.20) accept the key and keep NCHW.
    pub fn prefer_nhwc(self, yes: bool) -> Self {
        self.set("prefer_nhwc", u8::from(yes))
    }

    /// Run every CUDA kernel of the session on one stream owned by the provider (ORT 1.17 and
    /// later; older runtimes give [`Error::Unsupported`](crate::Error::Unsupported)).
    pub fn use_ep_level_unified_stream(self, yes: bool) -> Self {
        self.set("use_ep_level_unified_stream", u8::from(yes))
    }

    /// ORT's tunable ops (kernel auto-tuning).
    pub fn tunable_op(self, enable: bool, tuning: bool) -> Self {
        self.set("tunable_op_enable", u8::from(enable)).set("tunable_op_tuning_enable", u8::from(tuning))
    }

    /// Upper bound on the time one tunable op spends tuning, in milliseconds (0: no bound).
    pub fn tunable_op_max_tuning_duration_ms(self, ms: u32) -> Self {
        self.set("tunable_op_max_tuning_duration_ms", ms)
    }

    /// Any other V2 key (`UpdateCUDAProviderOptions`), for options this builder does not name.
    ///
    /// Only keys [`allowed_keys::CUDA`](crate::allowed_keys::CUDA) lists as plain values pass;
    /// any other (the address keys of [`ADDRESS_KEYS`]: the compute stream, external allocator
    /// functions; `enable_cuda_graph`; or a key the list does not know) is refused when the session
    /// is built, with [`Error::KeyRefused`](crate::Error::KeyRefused): pass a stream with the
    /// `unsafe` [`CudaOptions::user_compute_stream`], a CUDA graph with the `unsafe`
    /// [`CudaOptions::enable_cuda_graph`].
    pub fn raw(self, key: &'static str, value: impl ToString) -> Self {
        self.set(key, value)
    }

    /// Runs ORT's kernels on your CUDA stream (`cudaStream_t`), so your own kernels and ORT's
    /// are ordered without extra synchronization.
    ///
    /// # Safety
    /// `stream` is a valid CUDA stream on the chosen device that outlives every session built
    /// with these options.
    pub unsafe fn user_compute_stream(mut self, stream: *mut std::ffi::c_void) -> Self {
        self.user_stream = Some(stream as usize);
        self
    }

    /// The options as key/value pairs, as given to ORT (without `enable_cuda_graph`, which is
    /// added last when [`CudaOptions::enable_cuda_graph`] was called).
    pub fn entries(&self) -> &[(&'static str, String)] {
        &self.options.entries
    }
}

/// CUDA keys that ORT parses as addresses (`cuda_execution_provider_info.cc`, 1.16 and later):
/// refused through [`CudaOptions::raw`], like every key
/// [`allowed_keys::CUDA`](crate::allowed_keys::CUDA) does not list as plain (a test keeps the two in step).
pub const ADDRESS_KEYS: &[&str] = &[
    "user_compute_stream",
    "has_user_compute_stream",
    "gpu_external_alloc",
    "gpu_external_free",
    "gpu_external_empty_cache",
];

impl CudaOptions {
    /// The device the options name (`device_id`; ORT's default, 0, when unset).
    pub(crate) fn device(&self) -> crate::Result<i32> {
        match self.options.entries.iter().find(|(key, _)| *key == "device_id") {
            None => Ok(0),
            Some((_, id)) => id.trim().parse().map_err(|_| crate::Error::InvalidArgument {
                what: format!("CUDA device_id `{id}`"),
                why: "it must be a device number (0, 1, ...)".into(),
            }),
        }
    }

    /// The options as the append path reads them.
    pub(crate) fn request(&self) -> Request<'_> {
        let mut options = self.options.pairs();
        // After the checked keys: `Request::vouched` counts from the end.
        let mut vouched = self.vouched.pairs();
        if let Some(yes) = self.cuda_graph {
            vouched.push(("enable_cuda_graph", if yes { "1" } else { "0" }));
        }
        let vouched_count = vouched.len();
        options.extend(vouched);
        let vouched = vouched_count;
        Request { name: "CUDA", options, checked: true, user_stream: self.user_stream, vouched }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn address_keys_are_the_tables_refused_keys() {
        use crate::allowed_keys::{KeyClass, CUDA};
        let addresses: Vec<_> = CUDA.keys.iter().filter(|k| k.class == KeyClass::Address).map(|k| k.name).collect();
        assert_eq!(addresses, super::ADDRESS_KEYS);
        // The other refused keys: copies off the compute stream (a copy/compute race), and the
        // CUDA graph, whose replay keeps the first run's memory. Both have `unsafe` setters.
        let others: Vec<_> =
            CUDA.keys.iter().filter(|k| !matches!(k.class, KeyClass::Plain | KeyClass::Address)).collect();
        assert_eq!(
            others.iter().map(|k| (k.name, k.class)).collect::<Vec<_>>(),
            [("do_copy_in_default_stream", KeyClass::Ownership), ("enable_cuda_graph", KeyClass::Ownership)]
        );
    }

    #[test]
    fn every_typed_setter_uses_a_key_the_table_lets_through() {
        use super::{ArenaExtendStrategy, ConvAlgoSearch, CudaOptions};
        let all = CudaOptions::new()
            .device_id(0)
            .gpu_mem_limit(1 << 30)
            .arena_extend_strategy(ArenaExtendStrategy::SameAsRequested)
            .cudnn_conv_algo_search(ConvAlgoSearch::Heuristic)
            .cudnn_conv_use_max_workspace(true)
            .use_tf32(true)
            .prefer_nhwc(true)
            .use_ep_level_unified_stream(false)
            .tunable_op(true, false)
            .tunable_op_max_tuning_duration_ms(10);
        assert_eq!(all.entries().len(), 11);
        all.options.check(&crate::allowed_keys::CUDA).expect("every typed key is plain");
    }

    #[test]
    fn only_the_unsafe_setter_vouches_for_a_cuda_graph() {
        use super::CudaOptions;
        // Through `raw`, the key is among the checked options (the allow-list refuses it).
        let raw = CudaOptions::new().raw("enable_cuda_graph", "1");
        let request = raw.request();
        assert_eq!((request.options.as_slice(), request.vouched), (&[("enable_cuda_graph", "1")][..], 0));
        // SAFETY: no session is built from these options.
        let vouched = unsafe { CudaOptions::new().prefer_nhwc(true).enable_cuda_graph(true) };
        let request = vouched.request();
        assert_eq!(request.options, [("prefer_nhwc", "1"), ("enable_cuda_graph", "1")]);
        assert_eq!(request.vouched, 1);
        assert_eq!(vouched.entries().len(), 1, "the graph is not among the checked entries");
    }
}
