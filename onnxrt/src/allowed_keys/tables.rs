//! The tables: one per place that takes string keys (session and run configuration, each
//! execution provider the crate names), and the callbacks ORT calls. Each table says which ORT
//! sources its classes were read from.

use super::{Key, KeyClass, KeyTable};

const fn plain(name: &'static str) -> Key {
    Key { name, class: KeyClass::Plain, why: "" }
}

const fn refused(name: &'static str, class: KeyClass, why: &'static str) -> Key {
    Key { name, class, why }
}

use KeyClass::{Address, CodeLoading, Ownership};

/// Session configuration entries (`SessionBuilder::config_entry`, `AddSessionConfigEntry`).
pub const SESSION_CONFIG: KeyTable = KeyTable {
    scope: "session config entry",
    version: "1.21.0 header; 1.16.2 library",
    read_from: "onnxruntime_session_options_config_keys.h of ORT 1.21.0 (Debian libonnxruntime-dev 1.21.0+dfsg-1; the crate itself builds with its distribution's headers or the checked-in C API 27 bindings of 1.27.1, onnxrt-sys) and its readers in inference_session.cc (a 1.16-era version); the key strings of libonnxruntime.so.1.16.2; not checked against a 1.30 tree, which could not be fetched",
    unchecked: "SessionBuilder::config_entry_unchecked",
    keys: &[
        plain("session.disable_prepacking"),
        plain("session.use_env_allocators"),
        plain("session.load_model_format"),
        plain("session.save_model_format"),
        plain("session.set_denormal_as_zero"),
        plain("session.disable_quant_qdq"),
        plain("session.disable_double_qdq_remover"),
        plain("session.enable_quant_qdq_cleanup"),
        plain("optimization.enable_gelu_approximation"),
        plain("session.disable_aot_function_inlining"),
        plain("optimization.memory_optimizer_config"),
        plain("optimization.enable_memory_probe_recompute_config"),
        plain("optimization.disable_specified_optimizers"),
        plain("session.use_device_allocator_for_initializers"),
        plain("session.inter_op.allow_spinning"),
        plain("session.intra_op.allow_spinning"),
        refused(
            "session.use_ort_model_bytes_directly",
            Ownership,
            "ORT keeps pointing into the model bytes instead of copying them, so they must outlive the session; use SessionBuilder::commit_from_owned_bytes, which holds the bytes for the session's life and sets this key",
        ),
        refused(
            "session.use_ort_model_bytes_for_initializers",
            Ownership,
            "ORT's initializers point into the model bytes for the session's whole life; use SessionBuilder::commit_from_owned_bytes, which holds the bytes and sets this key",
        ),
        plain("session.qdqisint8allowed"),
        plain("session.x64quantprecision"),
        plain("optimization.minimal_build_optimizations"),
        plain("ep.nnapi.partitioning_stop_ops"),
        plain("session.dynamic_block_base"),
        plain("session.force_spinning_stop"),
        plain("session.strict_shape_type_inference"),
        plain("session.allow_released_opsets_only"),
        plain("session.node_partition_config_file"),
        plain("session.intra_op_thread_affinities"),
        plain("session.debug_layout_transformation"),
        plain("session.disable_cpu_ep_fallback"),
        plain("session.optimized_model_external_initializers_file_name"),
        plain("session.optimized_model_external_initializers_min_size_in_bytes"),
        plain("session.model_external_initializers_file_folder_path"),
        plain("session.save_prepacked_constant_initializers"),
        plain("session.collect_node_memory_stats_to_file"),
        plain("session.resource_cuda_partitioning_settings"),
        plain("ep.context_enable"),
        plain("ep.context_file_path"),
        plain("ep.context_embed_mode"),
        plain("ep.context_node_name_prefix"),
        plain("ep.share_ep_contexts"),
        plain("ep.context_model_external_initializers_file_name"),
        plain("mlas.enable_gemm_fastmath_arm64_bfloat16"),
        plain("session.qdq_matmulnbits_accuracy_level"),
    ],
};

/// Run configuration entries (`RunOptions::config_entry`, `AddRunConfigEntry`).
pub const RUN_CONFIG: KeyTable = KeyTable {
    scope: "run config entry",
    version: "1.21.0 header; 1.16.2 library",
    read_from: "onnxruntime_run_options_config_keys.h of ORT 1.21.0 (Debian libonnxruntime-dev 1.21.0+dfsg-1); the key strings of libonnxruntime.so.1.16.2",
    unchecked: "RunOptions::config_entry_unchecked",
    keys: &[
        plain("memory.enable_memory_arena_shrinkage"),
        refused(
            "disable_synchronize_execution_providers",
            Ownership,
            "the run then returns while the GPU may still read its inputs and write its outputs, so memory the caller reuses or frees after the run (bound buffers, Value::copy_from into them) would race with it; there is no safe equivalent",
        ),
        plain("qnn.htp_perf_mode"),
        plain("qnn.htp_perf_mode_post_run"),
        plain("qnn.rpc_control_latency"),
        plain("gpu_graph_id"),
    ],
};

const CUDA_STREAM: &str =
    "ONNX Runtime casts the value to a pointer; pass a stream with the unsafe CudaOptions::user_compute_stream";
/// Both providers' CUDA graphs: ORT records the device (and pinned host) addresses of the first
/// runs' inputs, outputs and copies, and from then on a run of the session only replays them.
const CUDA_GRAPH: &str = "ONNX Runtime captures the first runs in a CUDA graph that holds the addresses of their inputs, outputs and copies, and from then on every run of the session replays it without reading the new inputs or outputs (inference_session.cc: a captured graph's Run goes straight to ReplayGraph), so later runs read and write memory lent for the first one, freed or reused since; use the unsafe CudaOptions::enable_cuda_graph and bind the same buffers, alive and in place, for every run";
const CUDA_COPY_STREAM: &str = "with 0, ONNX Runtime copies inputs and outputs on streams of their own that its compute stream does not wait for (its own notes warn of the race), so a kernel can read an input before its copy lands; use the unsafe CudaOptions::do_copy_in_default_stream";
const CUDA_ALLOCATOR: &str =
    "ONNX Runtime casts the value to an allocator function pointer and calls it; there is no safe equivalent";

/// CUDA provider options (`CudaOptions`, `provider("CUDA", …)`, `UpdateCUDAProviderOptions`).
pub const CUDA: KeyTable = KeyTable {
    scope: "CUDA provider option",
    version: "ORT commit 90ed1589 and a 1.18-era parser",
    read_from: "onnxruntime/core/providers/cuda/cuda_execution_provider_info.cc: microsoft/onnxruntime commit 90ed158919c2e36f31814edcdf0fe62b7a661646 (an early version) and a 1.18-era version of the same file (with use_tf32); sdpa_kernel (a later key) named from ORT's CUDA provider documentation; not checked against a 1.30 tree",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("device_id"),
        plain("gpu_mem_limit"),
        plain("arena_extend_strategy"),
        plain("cudnn_conv_algo_search"),
        refused("do_copy_in_default_stream", Ownership, CUDA_COPY_STREAM),
        plain("cudnn_conv_use_max_workspace"),
        refused("enable_cuda_graph", Ownership, CUDA_GRAPH),
        plain("cudnn_conv1d_pad_to_nc1d"),
        plain("tunable_op_enable"),
        plain("tunable_op_tuning_enable"),
        plain("tunable_op_max_tuning_duration_ms"),
        plain("enable_skip_layer_norm_strict_mode"),
        plain("prefer_nhwc"),
        plain("use_ep_level_unified_stream"),
        plain("use_tf32"),
        plain("sdpa_kernel"),
        refused("user_compute_stream", Address, CUDA_STREAM),
        refused("has_user_compute_stream", Address, CUDA_STREAM),
        refused("gpu_external_alloc", Address, CUDA_ALLOCATOR),
        refused("gpu_external_free", Address, CUDA_ALLOCATOR),
        refused("gpu_external_empty_cache", Address, CUDA_ALLOCATOR),
    ],
};

const TRT_STREAM: &str = "ONNX Runtime casts the value to a CUDA stream pointer; there is no safe equivalent";
const TRT_BYTES: &str =
    "ONNX Runtime casts the value to a pointer to model bytes it reads later; give the model to commit_from_* instead";
const TRT_ENGINE_CACHE: &str = "TensorRT deserializes the engines it finds in the cache and runs them as GPU code, unchecked (no signature; the decryption library is the only hook); use the unsafe TensorRtOptions::engine_cache";
const TRT_LIBRARY: &str =
    "ONNX Runtime loads the library named and calls into it, which no safe function can vouch for";

/// TensorRT provider options (`TensorRtOptions`, `provider("TensorRT", …)`).
pub const TENSORRT: KeyTable = KeyTable {
    scope: "TensorRT provider option",
    version: "ORT commit 3a282a29 (1.16 keys)",
    read_from: "onnxruntime/core/providers/tensorrt/tensorrt_execution_provider_info.cc: microsoft/onnxruntime commit 3a282a295475775510fbfa5234bda55a2db6f015 (the 1.16 key set, with trt_cuda_graph_enable); the later trt_dump_ep_context_model, trt_ep_context_*, trt_engine_hw_compatible and trt_op_types_to_exclude named from ORT's TensorRT provider documentation; not checked against a 1.30 tree",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("device_id"),
        plain("trt_max_partition_iterations"),
        plain("trt_min_subgraph_size"),
        plain("trt_max_workspace_size"),
        plain("trt_fp16_enable"),
        plain("trt_int8_enable"),
        plain("trt_int8_calibration_table_name"),
        plain("trt_int8_use_native_calibration_table"),
        plain("trt_dla_enable"),
        plain("trt_dla_core"),
        plain("trt_dump_subgraphs"),
        plain("trt_force_sequential_engine_build"),
        plain("trt_context_memory_sharing_enable"),
        plain("trt_layer_norm_fp32_fallback"),
        plain("trt_timing_cache_enable"),
        plain("trt_timing_cache_path"),
        plain("trt_force_timing_cache"),
        plain("trt_detailed_build_log"),
        plain("trt_build_heuristics_enable"),
        plain("trt_sparsity_enable"),
        plain("trt_builder_optimization_level"),
        plain("trt_auxiliary_streams"),
        plain("trt_tactic_sources"),
        plain("trt_profile_min_shapes"),
        plain("trt_profile_max_shapes"),
        plain("trt_profile_opt_shapes"),
        refused("trt_cuda_graph_enable", Ownership, CUDA_GRAPH),
        plain("trt_dump_ep_context_model"),
        plain("trt_ep_context_file_path"),
        plain("trt_ep_context_embed_mode"),
        plain("trt_engine_hw_compatible"),
        plain("trt_op_types_to_exclude"),
        refused("user_compute_stream", Address, TRT_STREAM),
        refused("has_user_compute_stream", Address, TRT_STREAM),
        refused("trt_onnx_bytestream", Address, TRT_BYTES),
        refused("trt_onnx_bytestream_size", Address, TRT_BYTES),
        refused("trt_external_data_bytestream", Address, TRT_BYTES),
        refused("trt_external_data_bytestream_size", Address, TRT_BYTES),
        refused("trt_extra_plugin_lib_paths", CodeLoading, TRT_LIBRARY),
        refused("trt_engine_decryption_lib_path", CodeLoading, TRT_LIBRARY),
        refused("trt_engine_decryption_enable", CodeLoading, TRT_LIBRARY),
        refused("trt_engine_cache_enable", CodeLoading, TRT_ENGINE_CACHE),
        refused("trt_engine_cache_path", CodeLoading, TRT_ENGINE_CACHE),
        refused("trt_engine_cache_prefix", CodeLoading, TRT_ENGINE_CACHE),
    ],
};

/// QNN provider options (`provider("QNN", …)`).
pub const QNN: KeyTable = KeyTable {
    scope: "QNN provider option",
    version: "ORT commit 048abfa6 (1.16/1.17)",
    read_from: "onnxruntime/core/providers/qnn/qnn_execution_provider.cc: microsoft/onnxruntime commit 048abfa678d703ba4522da5746246572bf25bb29 (a 1.16/1.17-era version); later keys (backend_type, soc_model, htp_arch, device_id, enable_htp_*, offload_graph_io_quantization, op_packages) named from ORT's QNN provider documentation; not checked against a 1.30 tree",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("backend_type"),
        plain("profiling_level"),
        plain("profiling_file_path"),
        plain("rpc_control_latency"),
        plain("vtcm_mb"),
        plain("htp_performance_mode"),
        plain("htp_graph_finalization_optimization_mode"),
        plain("qnn_context_priority"),
        plain("soc_model"),
        plain("htp_arch"),
        plain("device_id"),
        plain("enable_htp_fp16_precision"),
        plain("offload_graph_io_quantization"),
        plain("enable_htp_spill_fill_buffer"),
        refused(
            "backend_path",
            CodeLoading,
            "ONNX Runtime loads the QNN backend library named and calls into it; choose a bundled backend with `backend_type`",
        ),
        refused("qnn_saver_path", CodeLoading, "ONNX Runtime loads the QNN Saver library named and calls into it"),
        refused("op_packages", CodeLoading, "ONNX Runtime loads the operator package libraries named and calls into them"),
    ],
};

/// OpenVINO provider options (`provider("OpenVINO", …)`).
pub const OPENVINO: KeyTable = KeyTable {
    scope: "OpenVINO provider option",
    version: "documentation only",
    read_from: "key names from ORT's OpenVINO provider documentation (1.16 to 1.30); openvino_provider_factory.cc not read here",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("device_type"),
        plain("precision"),
        plain("num_of_threads"),
        refused(
            "cache_dir",
            CodeLoading,
            "OpenVINO's model cache: it loads the compiled blobs it finds in this folder (on its GPU device, compiled kernels) and runs them unchecked, as TensorRT's engine cache; there is no safe equivalent",
        ),
        plain("num_streams"),
        plain("enable_opencl_throttling"),
        plain("enable_qdq_optimizer"),
        plain("disable_dynamic_shapes"),
        plain("enable_dynamic_shapes"),
        plain("enable_npu_fast_compile"),
        plain("device_id"),
        plain("model_priority"),
        refused("context", Address, "ONNX Runtime casts the value to an OpenCL context pointer; there is no safe equivalent"),
    ],
};

/// XNNPACK provider options (`provider("XNNPACK", …)`).
pub const XNNPACK: KeyTable = KeyTable {
    scope: "XNNPACK provider option",
    version: "documentation only",
    read_from: "the one key of ORT's XNNPACK provider documentation (1.16 to 1.30); xnnpack_execution_provider.cc not read here",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[plain("intra_op_num_threads")],
};

/// SNPE provider options (`provider("SNPE", …)`).
pub const SNPE: KeyTable = KeyTable {
    scope: "SNPE provider option",
    version: "documentation only",
    read_from: "key names from ORT's SNPE provider documentation; snpe_execution_provider.cc not read here",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[plain("runtime"), plain("priority"), plain("buffer_type"), plain("enable_init_cache")],
};

/// CoreML provider options by name (`provider("CoreML", …)`, ORT 1.20 and later).
pub const COREML: KeyTable = KeyTable {
    scope: "CoreML provider option",
    version: "documentation only",
    read_from: "key names from ORT's CoreML provider documentation (1.20 to 1.30); coreml_options.cc not read here",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("ModelFormat"),
        plain("MLComputeUnits"),
        plain("RequireStaticInputShapes"),
        plain("EnableOnSubgraphs"),
        plain("SpecializationStrategy"),
        plain("ProfileComputePlan"),
        plain("AllowLowPrecisionAccumulationOnGPU"),
        refused(
            "ModelCacheDirectory",
            CodeLoading,
            "CoreML loads the compiled models it finds in this folder and runs them unchecked, instead of compiling the model given; there is no safe equivalent",
        ),
    ],
};

/// DirectML provider options by name (`provider("DML", …)`).
pub const DML: KeyTable = KeyTable {
    scope: "DML provider option",
    version: "documentation only",
    read_from: "key names from ORT's DirectML provider documentation; dml_provider_factory.cc not read here",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("device_id"),
        plain("performance_preference"),
        plain("device_filter"),
        plain("disable_metacommands"),
        refused(
            "enable_graph_capture",
            Ownership,
            "DirectML's graph capture has the CUDA graph's replay hazard: once captured, a run replays the first runs' work on their memory without reading the new inputs or outputs; there is no safe equivalent",
        ),
    ],
};

const MIGRAPHX_COMPILED: &str = "ONNX Runtime loads a compiled MIGraphX program (GPU code) from the file named and runs it unchecked; there is no safe equivalent";

/// MIGraphX provider options by name (`provider("MIGraphX", …)`).
pub const MIGRAPHX: KeyTable = KeyTable {
    scope: "MIGraphX provider option",
    version: "documentation only",
    read_from:
        "key names from ORT's MIGraphX provider documentation; migraphx_execution_provider_info.cc not read here",
    unchecked: "SessionBuilder::provider_unchecked",
    keys: &[
        plain("device_id"),
        plain("migraphx_fp16_enable"),
        plain("migraphx_int8_enable"),
        plain("migraphx_int8_calibration_table_name"),
        plain("migraphx_use_native_calibration_table"),
        plain("migraphx_exhaustive_tune"),
        plain("migraphx_save_compiled_model"),
        plain("migraphx_save_model_path"),
        refused("migraphx_load_compiled_model", CodeLoading, MIGRAPHX_COMPILED),
        refused("migraphx_load_model_path", CodeLoading, MIGRAPHX_COMPILED),
    ],
};

/// Providers whose options this crate has not read: every key is refused from safe code.
const UNREAD: &str = "not read: every option key is refused from safe code";

macro_rules! unread {
    ($name:ident, $scope:literal) => {
        #[doc = concat!("Options of a provider whose parser this crate has not read (", $scope, "): none pass.")]
        pub const $name: KeyTable = KeyTable {
            scope: $scope,
            read_from: UNREAD,
            version: "not read",
            unchecked: "SessionBuilder::provider_unchecked",
            keys: &[],
        };
    };
}
unread!(AZURE, "AZURE provider option");
unread!(WEBNN, "WEBNN provider option");
unread!(JS, "JS provider option");
unread!(VITISAI, "VitisAI provider option");
unread!(WEBGPU, "WebGPU provider option");
unread!(OTHER, "provider option");

/// Each provider the crate names, by its C API name, with its table.
pub const PROVIDERS: &[(&str, &KeyTable)] = &[
    ("CUDA", &CUDA),
    ("TensorRT", &TENSORRT),
    ("OpenVINO", &OPENVINO),
    ("XNNPACK", &XNNPACK),
    ("QNN", &QNN),
    ("SNPE", &SNPE),
    ("AZURE", &AZURE),
    ("WEBNN", &WEBNN),
    ("JS", &JS),
    ("CoreML", &COREML),
    ("DML", &DML),
    ("MIGraphX", &MIGRAPHX),
    ("VitisAI", &VITISAI),
    ("WebGPU", &WEBGPU),
];

/// The table for a provider by its C API name (as `providers::named` resolves it); a provider
/// the crate does not name gets [`OTHER`] (scope `"provider option"`, prefixed with the
/// provider's name in errors), which lets no key through.
pub fn provider(short_name: &str) -> &'static KeyTable {
    PROVIDERS.iter().find(|(name, _)| *name == short_name).map_or(&OTHER, |(_, table)| *table)
}

/// A function ORT calls back into: the audit list's rows for callbacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Callback {
    /// The Rust function (module path).
    pub function: &'static str,
    /// When ORT calls it.
    pub when: &'static str,
}

/// Every `extern "C"` function of the crate that ORT calls (class: code ORT runs; each body must
/// stay inside one `catch_unwind`, `ffi_guard`).
pub const CALLBACKS: &[Callback] = &[
    Callback { function: "env::logging::log_callback", when: "every ORT log line (OrtLoggingFunction)" },
    Callback { function: "session::run_async::on_done", when: "completion of RunAsync (RunAsyncCallbackFn)" },
    Callback { function: "ep_device::select", when: "session creation (EpSelectionDelegate)" },
    Callback { function: "custom_op::callbacks::create_kernel", when: "session creation (OrtCustomOp::CreateKernel)" },
    Callback { function: "custom_op::callbacks::compute", when: "each run (OrtCustomOp::KernelCompute)" },
    Callback { function: "custom_op::callbacks::destroy_kernel", when: "session release (OrtCustomOp::KernelDestroy)" },
    Callback {
        function: "custom_op::callbacks::{name, provider_type, input_type, input_count, output_type, output_count, input_characteristic, output_characteristic, input_memory_type, variadic_input_min_arity, variadic_output_min_arity, homogeneous}",
        when: "schema queries at registration and session creation (OrtCustomOp getters)",
    },
];
