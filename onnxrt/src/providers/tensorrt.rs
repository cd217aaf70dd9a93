//! TensorRT execution provider options, through ORT's V2 options API.
//!
//! ORT before 1.17 does not make concurrent `Run` safe with TensorRT; a session using it on such
//! a runtime serializes its own runs ([`crate::Session::serializes_runs`]).

use std::path::Path;

use crate::providers::append::Request;
use crate::providers::options::KeyValues;

/// TensorRT provider options that ORT 1.16 does not know, with the first minor version (1.x) that
/// reads them. Setting one on an older runtime fails at session build with
/// [`Error::Unsupported`](crate::Error::Unsupported), also through `SessionBuilder::provider("TensorRT", ..)`.
pub const OPTION_SINCE: &[(&str, u32)] = super::append::TENSORRT_OPTION_SINCE;

/// Options of the TensorRT provider. Unset options keep ORT's defaults.
#[derive(Debug, Clone, Default)]
pub struct TensorRtOptions {
    options: KeyValues,
    // Keys set through `unsafe` setters (`engine_cache`): refused by the allow-list, so kept
    // apart from `options` and passed as vouched for.
    vouched: KeyValues,
}

impl TensorRtOptions {
    /// Defaults: device 0.
    pub fn new() -> TensorRtOptions {
        TensorRtOptions::default()
    }

    fn set(mut self, key: &'static str, value: impl ToString) -> Self {
        self.options.set(key, value);
        self
    }

    /// The CUDA device.
    pub fn device_id(self, id: i32) -> Self {
        self.set("device_id", id)
    }

    /// Workspace TensorRT may use while building engines, in bytes.
    pub fn max_workspace_size(self, bytes: usize) -> Self {
        self.set("trt_max_workspace_size", bytes)
    }

    /// Allow fp16 kernels.
    pub fn fp16(self, yes: bool) -> Self {
        self.set("trt_fp16_enable", u8::from(yes))
    }

    /// Allow int8 kernels, calibrated with the given table.
    pub fn int8(self, calibration_table: &Path) -> Self {
        self.set("trt_int8_enable", 1).set("trt_int8_calibration_table_name", calibration_table.display())
    }

    /// Cache built engines in `dir` (building takes minutes for large models).
    ///
    /// A cached engine is compiled GPU code that TensorRT deserializes and runs as it finds it:
    /// ORT checks no signature (the engine decryption library hook exists for that reason). So
    /// the cache is code loading, this setter is `unsafe`, and the keys
    /// (`trt_engine_cache_enable`, `trt_engine_cache_path`, `trt_engine_cache_prefix`) through
    /// [`TensorRtOptions::raw`] or `SessionBuilder::provider` are
    /// [`Error::KeyRefused`](crate::Error::KeyRefused) (docs/soundness.md §10).
    ///
    /// # Safety
    /// Every file in `dir` that TensorRT may load as an engine was written by TensorRT for this
    /// model (by this program or a build you trust), and nothing else can write there.
    pub unsafe fn engine_cache(mut self, dir: &Path) -> Self {
        self.vouched.set("trt_engine_cache_enable", 1);
        self.vouched.set("trt_engine_cache_path", dir.display());
        self
    }

    /// Cache built engines in `dir` from safe code, where only this process's user can write:
    /// `dir` is made if missing (mode 0700), then refused unless it, every file in it and every
    /// folder above it can be written by no other user (owned by this user or root, no group or
    /// other write bit; a folder above may be shared if sticky, as `/tmp`). Engines there were
    /// then written by this user's programs, which already run as this process does; ORT names
    /// each engine by a hash of its subgraph, and a folder per model file (as `serve` keeps, per
    /// model version) keeps models apart.
    ///
    /// # Errors
    /// [`Error::BadSetting`](crate::Error::BadSetting) naming the folder or file and why: it cannot
    /// be made or read, or another user could write it.
    pub fn private_engine_cache(self, dir: &Path) -> crate::Result<Self> {
        super::private_folder::check(
            dir,
            "TensorRT engine cache",
            "TensorRT runs the engines it finds there as GPU code",
        )?;
        // SAFETY: `dir`, what is in it and the folders above can be written only by this
        // process's user (checked just now), so every engine TensorRT finds there was written by
        // a program of that user, the trust `engine_cache` asks for.
        Ok(unsafe { self.engine_cache(dir) })
    }

    /// Cache TensorRT's layer timings in `dir`.
    pub fn timing_cache(self, dir: &Path) -> Self {
        self.set("trt_timing_cache_enable", 1).set("trt_timing_cache_path", dir.display())
    }

    /// How many times ORT tries to partition the graph for TensorRT.
    pub fn max_partition_iterations(self, n: u32) -> Self {
        self.set("trt_max_partition_iterations", n)
    }

    /// Smallest subgraph handed to TensorRT.
    pub fn min_subgraph_size(self, nodes: u32) -> Self {
        self.set("trt_min_subgraph_size", nodes)
    }

    /// Run on deep-learning accelerator core `core` (Jetson/DRIVE).
    pub fn dla(self, core: u32) -> Self {
        self.set("trt_dla_enable", 1).set("trt_dla_core", core)
    }

    /// Any other V2 key.
    ///
    /// Only keys [`allowed_keys::TENSORRT`](crate::allowed_keys::TENSORRT) lists as plain values
    /// pass; any other (those ORT reads as raw addresses or as libraries to load and call,
    /// [`UNSAFE_KEYS`], or a key the list does not know) is refused when the session is built,
    /// with [`Error::KeyRefused`](crate::Error::KeyRefused).
    pub fn raw(self, key: &'static str, value: impl ToString) -> Self {
        self.set(key, value)
    }

    /// The options as key/value pairs.
    pub fn entries(&self) -> &[(&'static str, String)] {
        &self.options.entries
    }
}

/// TensorRT keys refused through [`TensorRtOptions::raw`]: the CUDA graph key (a captured graph
/// replays the first runs' memory), then those ORT parses as addresses (`tensorrt_execution_provider_info.cc`, 1.16 and later), loads the libraries
/// named by the next ones and calls into them (plugins, engine decryption), and the last ones make
/// TensorRT load compiled engines from files (the `unsafe` [`TensorRtOptions::engine_cache`]),
/// which no safe function can vouch for. The same as the keys [`allowed_keys::TENSORRT`](crate::allowed_keys::TENSORRT)
/// refuses (a test keeps the two in step).
pub const UNSAFE_KEYS: &[&str] = &[
    "trt_cuda_graph_enable",
    "user_compute_stream",
    "has_user_compute_stream",
    "trt_onnx_bytestream",
    "trt_onnx_bytestream_size",
    "trt_external_data_bytestream",
    "trt_external_data_bytestream_size",
    "trt_extra_plugin_lib_paths",
    "trt_engine_decryption_lib_path",
    "trt_engine_decryption_enable",
    "trt_engine_cache_enable",
    "trt_engine_cache_path",
    "trt_engine_cache_prefix",
];

impl TensorRtOptions {
    /// The options as the append path reads them.
    pub(crate) fn request(&self) -> Request<'_> {
        let mut options = self.options.pairs();
        // After the checked keys: `Request::vouched` counts from the end.
        let vouched = self.vouched.pairs();
        let count = vouched.len();
        options.extend(vouched);
        Request { name: "TensorRT", options, checked: true, user_stream: None, vouched: count }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn unsafe_keys_are_the_tables_refused_keys() {
        use crate::allowed_keys::{KeyClass, TENSORRT};
        let refused: Vec<_> = TENSORRT.keys.iter().filter(|k| k.class != KeyClass::Plain).map(|k| k.name).collect();
        assert_eq!(refused, super::UNSAFE_KEYS);
    }

    #[test]
    fn every_typed_setter_uses_a_key_the_table_lets_through() {
        let dir = std::path::Path::new("/tmp");
        let all = super::TensorRtOptions::new()
            .device_id(0)
            .max_workspace_size(1 << 30)
            .fp16(true)
            .int8(dir)
            .timing_cache(dir)
            .max_partition_iterations(10)
            .min_subgraph_size(1)
            .dla(0);
        assert_eq!(all.entries().len(), 11);
        all.options.check(&crate::allowed_keys::TENSORRT).expect("every typed key is plain");
    }
}
