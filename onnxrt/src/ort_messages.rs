//! ORT's message texts that this crate reads, in one table: what each pattern means (the typed
//! error or the explanation it leads to) and the runtimes its text was seen on.
//!
//! ORT reports most failures as a code and a text; the code is too coarse to act on (a missing
//! provider, a model too new and a refused output shape are all `Fail` or `InvalidArgument`), so
//! the explaining functions (`status`, `gpu_failure`, `providers`, `session`) look for these
//! texts, and only through this table. `tests/tests/ort_messages.rs` provokes every entry that a
//! CPU runtime can produce from the real ORT 1.16.2 and 1.32.0 (`provoked_on`) and checks the
//! pattern against what ORT wrote; the entries only a GPU produces are checked here against the
//! texts recorded on a GPU machine (`recorded`), each with the runtime it came from.

/// How an entry's fragments are compared with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// As written.
    Exact,
    /// ASCII case ignored (the fragments are written in lower case).
    Ignored,
}

/// A message ORT wrote on a GPU machine, kept because no CPU runtime produces it.
#[derive(Debug, Clone, Copy)]
pub struct Recorded {
    /// The runtime that wrote it, where the record says (`None`: the record names none).
    pub runtime: Option<&'static str>,
    /// The machine and the setup that made ORT write it.
    pub on: &'static str,
    /// The text (a C++ signature ORT puts before it may be shortened to `…`).
    pub text: &'static str,
}

/// One text ORT writes, and what the crate makes of it.
#[derive(Debug, Clone, Copy)]
pub struct OrtMessage {
    /// The entry's name (the constant's), as the tests and the docs name it.
    pub name: &'static str,
    /// The pattern: the message matches when it contains every fragment of any one alternative.
    pub any_of: &'static [&'static [&'static str]],
    /// How the fragments are compared.
    pub case: Case,
    /// What a match means: the error or the explanation the crate gives.
    pub means: &'static str,
    /// The runtimes `tests/tests/ort_messages.rs` provokes this text from.
    pub provoked_on: &'static [&'static str],
    /// The texts recorded on GPU machines, for what a CPU runtime cannot produce.
    pub recorded: &'static [Recorded],
}

impl OrtMessage {
    /// Whether `message` is this entry's text.
    pub fn matches(&self, message: &str) -> bool {
        let lower;
        let message = match self.case {
            Case::Exact => message,
            Case::Ignored => {
                lower = message.to_ascii_lowercase();
                lower.as_str()
            }
        };
        self.any_of.iter().any(|all| all.iter().all(|fragment| message.contains(fragment)))
    }
}

/// The runtimes whose every CPU-provoked entry CI checks (tools/dev.sh: the workspace stage and
/// the `newest` stage).
pub const CHECKED_ON: [&str; 2] = ["1.16.2", "1.32.0"];

const BOTH: &[&str] = &CHECKED_ON;

/// The issue-27 GPU runs (cuDNN's files hidden from ORT 1.30's CUDA build on an H200).
const H200_HIDDEN_CUDNN: &str =
    "H200, ORT 1.30's CUDA 13 build with cuDNN files hidden (docs/history/diagnostics-2026-12.md)";
/// The GPU test suite of 2026-12-06 on an H100 (driver 580), ORT 1.30.0's CUDA build.
const H100_GPU_TESTS: &str = "H100 80GB, the GPU test suite of 2026-12-06 (tests/tests/gpu.rs)";

// ---- Failures every session can meet (status.rs) ----

/// A memory allocation failed: the CPU or CUDA arena, or `new` throwing.
pub const OUT_OF_MEMORY: OrtMessage = OrtMessage {
    name: "OUT_OF_MEMORY",
    any_of: &[
        &["out of memory"],
        &["failed to allocate memory"],
        &["cudaerrormemoryallocation"],
        &["bad_alloc"],
        // The CUDA arena refusing past gpu_mem_limit.
        &["is smaller than requested bytes"],
    ],
    case: Case::Ignored,
    means: "Error::OutOfMemory",
    provoked_on: BOTH,
    recorded: &[Recorded {
        runtime: Some("1.30.0"),
        on: H100_GPU_TESTS,
        text: "/onnxruntime_src/onnxruntime/core/framework/bfc_arena.cc:360 void* onnxruntime::BFCArena::AllocateRawInternal(size_t, bool, onnxruntime::Stream*) Available memory of 1048576 is smaller than requested bytes of 67108864",
    }],
};

/// A run stopped through its run options' terminate flag.
pub const TERMINATED: OrtMessage = OrtMessage {
    name: "TERMINATED",
    any_of: &[&["exiting due to terminate flag"]],
    case: Case::Ignored,
    means: "Error::Terminated",
    provoked_on: BOTH,
    recorded: &[],
};

/// A model whose opset or IR version this runtime does not read.
pub const MODEL_TOO_NEW: OrtMessage = OrtMessage {
    name: "MODEL_TOO_NEW",
    any_of: &[
        &["opset", "is under development"],
        &["opset", "current official support for domain"],
        &["unsupported model ir version"],
    ],
    case: Case::Ignored,
    means: "Error::ModelTooNew",
    provoked_on: BOTH,
    recorded: &[],
};

/// ORT's protobuf parser refusing the model's bytes (besides the code `InvalidProtobuf`).
pub const PROTOBUF_PARSE_FAILED: OrtMessage = OrtMessage {
    name: "PROTOBUF_PARSE_FAILED",
    any_of: &[&["protobuf parsing failed"]],
    case: Case::Ignored,
    means: "Error::NotOnnxModel, with what the file holds instead (session/model_check.rs)",
    provoked_on: BOTH,
    recorded: &[],
};

// ---- Failures inside the GPU stack (gpu_failure.rs): only a GPU produces them ----

/// A cuDNN call failed, or cuDNN did not load.
pub const CUDNN_FAILURE: OrtMessage = OrtMessage {
    name: "CUDNN_FAILURE",
    any_of: &[&["cudnn_status_"], &["cudnn failure"], &["cudnn is unavailable"]],
    case: Case::Ignored,
    means: "Error::GpuLibrary { family: Cudnn }",
    provoked_on: &[],
    recorded: &[RECORDED_CUDNN_INTERNAL, RECORDED_CUDNN_UNAVAILABLE],
};

/// Within a cuDNN failure: cuDNN itself could not be loaded.
pub const CUDNN_NOT_LOADED: OrtMessage = OrtMessage {
    name: "CUDNN_NOT_LOADED",
    any_of: &[&["dlopen"], &["unavailable"], &["cannot open"]],
    case: Case::Ignored,
    means: "the fix of a cuDNN Error::GpuLibrary: install the cuDNN major version the runtime was built against",
    provoked_on: &[],
    recorded: &[RECORDED_CUDNN_UNAVAILABLE],
};

/// Within a cuDNN failure: an internal error, which a missing lazily loaded sub-library causes.
pub const CUDNN_SUBLIBRARY: OrtMessage = OrtMessage {
    name: "CUDNN_SUBLIBRARY",
    any_of: &[&["internal_error"], &["not_initialized"], &["4000"]],
    case: Case::Ignored,
    means: "the fix of a cuDNN Error::GpuLibrary: the sub-libraries cuDNN loads when first needed",
    provoked_on: &[],
    recorded: &[RECORDED_CUDNN_INTERNAL],
};

/// A cuBLAS call failed.
pub const CUBLAS_FAILURE: OrtMessage = OrtMessage {
    name: "CUBLAS_FAILURE",
    any_of: &[&["cublas_status_"], &["cublas failure"]],
    case: Case::Ignored,
    means: "Error::GpuLibrary { family: Cublas }",
    provoked_on: &[],
    recorded: &[RECORDED_CUBLAS_ALLOC],
};

/// Within a cuBLAS failure: cuBLAS could not start (memory, or libraries of another release).
pub const CUBLAS_NOT_STARTED: OrtMessage = OrtMessage {
    name: "CUBLAS_NOT_STARTED",
    any_of: &[&["not_initialized"], &["alloc_failed"]],
    case: Case::Ignored,
    means: "the fix of a cuBLAS Error::GpuLibrary: memory, or libcublas of another CUDA release",
    provoked_on: &[],
    recorded: &[RECORDED_CUBLAS_ALLOC],
};

/// A CUDA runtime error named by its enum (`cudaErrorNoDevice`), in ORT's spelling.
pub const CUDA_ERROR_NAME: OrtMessage = OrtMessage {
    name: "CUDA_ERROR_NAME",
    any_of: &[&["cudaError"]],
    case: Case::Exact,
    means: "Error::GpuLibrary { family: Cuda }",
    provoked_on: &[],
    recorded: &[RECORDED_NO_DEVICE],
};

/// A CUDA runtime call failed ("CUDA failure N: …").
pub const CUDA_FAILURE: OrtMessage = OrtMessage {
    name: "CUDA_FAILURE",
    any_of: &[&["cuda failure"], &["cuda error"]],
    case: Case::Ignored,
    means: "Error::GpuLibrary { family: Cuda }",
    provoked_on: &[],
    recorded: &[RECORDED_NO_DEVICE],
};

/// Within a CUDA failure: no GPU is visible to the process.
pub const CUDA_NO_DEVICE: OrtMessage = OrtMessage {
    name: "CUDA_NO_DEVICE",
    any_of: &[&["no cuda-capable device"], &["cudaerrornodevice"]],
    case: Case::Ignored,
    means: "the fix of a CUDA Error::GpuLibrary: CUDA_VISIBLE_DEVICES, nvidia-smi, the container",
    provoked_on: &[],
    recorded: &[RECORDED_NO_DEVICE],
};

/// Within a CUDA failure: the driver is too old or does not match. No text recorded yet.
pub const CUDA_DRIVER: OrtMessage = OrtMessage {
    name: "CUDA_DRIVER",
    any_of: &[&["driver"]],
    case: Case::Ignored,
    means: "the fix of a CUDA Error::GpuLibrary: update the NVIDIA driver",
    provoked_on: &[],
    recorded: &[],
};

/// Within a CUDA failure: the runtime has no kernels for this GPU. No text recorded yet.
pub const CUDA_NO_KERNEL: OrtMessage = OrtMessage {
    name: "CUDA_NO_KERNEL",
    any_of: &[&["no kernel image"], &["invalid device function"]],
    case: Case::Ignored,
    means: "the fix of a CUDA Error::GpuLibrary: a runtime built for this GPU generation",
    provoked_on: &[],
    recorded: &[],
};

const RECORDED_CUDNN_INTERNAL: Recorded = Recorded {
    runtime: Some("1.30"),
    on: H200_HIDDEN_CUDNN,
    text: "CUDNN failure 4000: CUDNN_STATUS_INTERNAL_ERROR ; GPU=0 ; hostname=h ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/nn/conv.cc ; line=503 ; expr=cudnnFindConvolutionForwardAlgorithmEx(...)",
};
const RECORDED_CUDNN_UNAVAILABLE: Recorded = Recorded {
    runtime: Some("1.30"),
    on: H200_HIDDEN_CUDNN,
    text: "cuDNN is unavailable or disabled. dlopen failed for libcudnn.so: libcudnn.so.9: file too short",
};
const RECORDED_CUBLAS_ALLOC: Recorded = Recorded {
    runtime: None,
    on: "the GPU runs with libraries hidden (docs/history/diagnostics-2026-12.md; the record names no runtime)",
    text: "CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; file=cublas_handle.cc",
};
const RECORDED_NO_DEVICE: Recorded = Recorded {
    runtime: None,
    on: "a GPU machine with CUDA_VISIBLE_DEVICES empty, as the doctor's test keeps it (the record names no runtime)",
    text: "/onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:154 … [with ERRTYPE = cudaError; bool THRW = true; SUCCTYPE = cudaError; …] CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; expr=cudaSetDevice(info_.device_id);",
};

// ---- Providers (providers/) ----

/// A provider name ORT does not know (it lists the names it takes).
pub const UNKNOWN_PROVIDER: OrtMessage = OrtMessage {
    name: "UNKNOWN_PROVIDER",
    any_of: &[&["Unknown provider name"]],
    case: Case::Exact,
    means: "Error::ProviderNotAvailable quoting ORT's list of names",
    provoked_on: BOTH,
    recorded: &[],
};

/// A provider ORT knows but this build of it left out.
pub const PROVIDER_NOT_IN_BUILD: OrtMessage = OrtMessage {
    name: "PROVIDER_NOT_IN_BUILD",
    any_of: &[&["not supported in this build"], &["not enabled in this build"]],
    case: Case::Exact,
    means: "Error::ProviderNotAvailable: use a build that includes the provider",
    provoked_on: BOTH,
    recorded: &[],
};

/// A library ORT loads (a provider's, a custom-op library) did not load.
pub const LIBRARY_NOT_LOADED: OrtMessage = OrtMessage {
    name: "LIBRARY_NOT_LOADED",
    any_of: &[&["Failed to load"], &["cannot open shared object"], &["LoadLibrary"]],
    case: Case::Exact,
    means: "for a provider, Error::ProviderLoad naming the missing file (providers/diagnose.rs)",
    provoked_on: BOTH,
    recorded: &[],
};

/// A strict GPU session whose model has nodes only the CPU provider runs.
pub const CPU_FALLBACK_DISABLED: OrtMessage = OrtMessage {
    name: "CPU_FALLBACK_DISABLED",
    any_of: &[&["fallback"]],
    case: Case::Exact,
    means: "Error::Ort with the strict-GPU explanation added (providers/mod.rs)",
    provoked_on: &[],
    recorded: &[Recorded {
        runtime: Some("1.30.0"),
        on: H100_GPU_TESTS,
        text: "This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP has been explicitly disabled by the user.",
    }],
};

// ---- Sessions (session/) ----

/// `RunAsync` on a session whose intra-op pool has no worker thread.
pub const RUN_ASYNC_NEEDS_THREADS: OrtMessage = OrtMessage {
    name: "RUN_ASYNC_NEEDS_THREADS",
    any_of: &[&["at least one thread for RunAsync"]],
    case: Case::Exact,
    means: "Error::AsyncNeedsThreadPool",
    provoked_on: BOTH,
    recorded: &[],
};

/// A preallocated output whose shape is not the run's: ORT 1.16's execution frame ("OrtValue
/// shape verification failed"), a reused buffer ("shape mismatch"), newer runtimes ("has shape
/// {3} but the computed output shape for this run is {4}").
pub const OUTPUT_SHAPE_REFUSED: OrtMessage = OrtMessage {
    name: "OUTPUT_SHAPE_REFUSED",
    any_of: &[&["shape verification failed"], &["shape mismatch"], &["but the computed output shape for this run is"]],
    case: Case::Ignored,
    means: "the run is repeated without preallocated outputs (session/output_pool.rs; onnxrt-serve's batch/worker.rs, whose split then names the output)",
    provoked_on: BOTH,
    recorded: &[],
};

/// External data with no tensor given and no folder to read its file from: ORT 1.16 says the
/// model path is empty; 1.32 that the "External data path" of a model loaded from bytes fails
/// validation (its text also says "does not exist", so this entry is asked first).
pub const EXTERNAL_DATA_WITHOUT_FILE: OrtMessage = OrtMessage {
    name: "EXTERNAL_DATA_WITHOUT_FILE",
    any_of: &[&["model_path must not be empty"], &["external data"], &["External data path"]],
    case: Case::Exact,
    means: "Error::Ort with the hint: give a tensor for every external initializer",
    provoked_on: BOTH,
    recorded: &[],
};

/// An external initializer's tensor of another element type or shape than the model's.
pub const EXTERNAL_DATA_WRONG_TENSOR: OrtMessage = OrtMessage {
    name: "EXTERNAL_DATA_WRONG_TENSOR",
    any_of: &[&["dimensions do not match"], &["type does not match"]],
    case: Case::Exact,
    means: "Error::Ort with the hint: a tensor's type or shape differs from the initializer's",
    provoked_on: BOTH,
    recorded: &[],
};

/// A tensor given for a name that is no initializer of the model.
pub const EXTERNAL_DATA_UNKNOWN_NAME: OrtMessage = OrtMessage {
    name: "EXTERNAL_DATA_UNKNOWN_NAME",
    any_of: &[&["not found"], &["Failed to find"], &["does not exist"]],
    case: Case::Exact,
    means: "Error::Ort with the hint: a name given is not an initializer of the model",
    provoked_on: BOTH,
    recorded: &[],
};

/// The placement report asked of a session built without recording it (ORT 1.24+). The key is
/// the session option `record_placement` sets (session/placement.rs).
pub const PLACEMENT_NOT_RECORDED: OrtMessage = OrtMessage {
    name: "PLACEMENT_NOT_RECORDED",
    any_of: &[&["session.record_ep_graph_assignment_info"], &["not enabled"]],
    case: Case::Exact,
    means: "Error::BadSetting for record_placement",
    provoked_on: &["1.32.0"],
    recorded: &[],
};

/// Every entry, in the order above.
pub const TABLE: &[&OrtMessage] = &[
    &OUT_OF_MEMORY,
    &TERMINATED,
    &MODEL_TOO_NEW,
    &PROTOBUF_PARSE_FAILED,
    &CUDNN_FAILURE,
    &CUDNN_NOT_LOADED,
    &CUDNN_SUBLIBRARY,
    &CUBLAS_FAILURE,
    &CUBLAS_NOT_STARTED,
    &CUDA_ERROR_NAME,
    &CUDA_FAILURE,
    &CUDA_NO_DEVICE,
    &CUDA_DRIVER,
    &CUDA_NO_KERNEL,
    &UNKNOWN_PROVIDER,
    &PROVIDER_NOT_IN_BUILD,
    &LIBRARY_NOT_LOADED,
    &CPU_FALLBACK_DISABLED,
    &RUN_ASYNC_NEEDS_THREADS,
    &OUTPUT_SHAPE_REFUSED,
    &EXTERNAL_DATA_WITHOUT_FILE,
    &EXTERNAL_DATA_WRONG_TENSOR,
    &EXTERNAL_DATA_UNKNOWN_NAME,
    &PLACEMENT_NOT_RECORDED,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_recorded_text_matches_its_entry() {
        for entry in TABLE {
            for record in entry.recorded {
                assert!(entry.matches(record.text), "{}: {:?}", entry.name, record.text);
            }
        }
    }

    #[test]
    fn the_entries_are_well_formed() {
        let mut names: Vec<&str> = TABLE.iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len(), "each entry once, each name once");
        for entry in TABLE {
            assert!(!entry.any_of.is_empty() && entry.any_of.iter().all(|all| !all.is_empty()), "{}", entry.name);
            if entry.case == Case::Ignored {
                let fragments = entry.any_of.iter().flat_map(|all| all.iter());
                assert!(fragments.clone().all(|f| *f == f.to_ascii_lowercase()), "{}: lower case", entry.name);
            }
            assert!(entry.provoked_on.iter().all(|v| CHECKED_ON.contains(v)), "{}", entry.name);
        }
    }

    #[test]
    fn case_and_alternatives() {
        assert!(OUT_OF_MEMORY.matches("std::BAD_ALLOC"));
        assert!(!CUDA_ERROR_NAME.matches("CUDAERROR"));
        assert!(MODEL_TOO_NEW.matches("Opset 30 is under development"));
        assert!(!MODEL_TOO_NEW.matches("is under development"), "both fragments of an alternative");
    }
}
