//! The one error type. Each variant is something a caller can act on, and its message says how.

use std::fmt;
use std::path::PathBuf;

use crate::element::ElementType;
use crate::gpu_failure::GpuFamily;

mod code;
mod fields;
mod model_file;
pub use code::ErrorCode;
pub use fields::{LoadAttempt, Names, ShapeText};
pub use model_file::ModelFileProblem;

fn tried_list(tried: &[LoadAttempt]) -> String {
    tried.iter().map(|t| format!("\n  - {} ({}): {}", t.path.display(), t.origin, t.why)).collect()
}

fn described(name: Option<&str>) -> String {
    name.map_or_else(|| "this tensor".to_owned(), |name| format!("output `{name}`"))
}

/// How to read a tensor of element type `holds`.
fn how_to_read(holds: ElementType) -> String {
    match holds {
        ElementType::String => "read it with strings() or string_bytes()".into(),
        ElementType::F16 | ElementType::BF16 => format!("read it as {holds} (view::<half::{holds}>)"),
        ElementType::F8E4M3Fn | ElementType::F8E4M3Fnuz | ElementType::F8E5M2 | ElementType::F8E5M2Fnuz => {
            format!("read it as {holds} (view::<onnxrt::{holds:?}>)")
        }
        ElementType::Complex64 | ElementType::Complex128 | ElementType::Unknown(_) => {
            "onnxrt cannot read that element type; add a Cast to the model's output".into()
        }
        _ => format!("read it as {holds} (view::<{holds}>)"),
    }
}

/// Everything that can go wrong, each with what to do about it.
///
/// `Debug` prints the same text as `Display`, so `fn main() -> Result<(), onnxrt::Error>` (and
/// `unwrap`/`expect`) show the message and its fix; match on the variant to inspect fields.
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// ORT returned an error status.
    #[error("ONNX Runtime {function} failed ({code:?}): {message}")]
    Ort {
        /// The C API function that failed.
        function: &'static str,
        /// ORT's error code.
        code: ErrorCode,
        /// ORT's message.
        message: String,
    },

    /// The runtime library could not be found or loaded.
    #[error(
        "libonnxruntime.so could not be loaded; tried:{}\nFix: set ONNXRT_DYLIB_PATH to the library (or its folder), \
         deploy it in <exe dir>/onnxruntime/lib (`onnxrt bundle`), or rebuild so the recorded path exists again",
        tried_list(tried)
    )]
    RuntimeNotFound {
        /// Every candidate and why it failed.
        tried: Vec<LoadAttempt>,
    },

    /// The runtime is older than ORT 1.16 (C API 16).
    #[error("{} is ONNX Runtime {found}; onnxrt needs {required} or newer (C API 16). Install a newer runtime", library.display())]
    RuntimeTooOld {
        /// Version found.
        found: String,
        /// Version needed.
        required: String,
        /// The library loaded.
        library: PathBuf,
    },

    /// A different runtime was already loaded when [`crate::init_from`] was called.
    #[error("ONNX Runtime is already loaded from {}; cannot switch to {} in the same process. Call onnxrt::init_from before anything else", loaded.display(), requested.display())]
    AlreadyLoaded {
        /// The library in use.
        loaded: PathBuf,
        /// The one asked for.
        requested: PathBuf,
    },

    /// A feature needs a newer runtime than the one loaded.
    #[error("{feature} needs ONNX Runtime {since} or newer; the loaded runtime is {found}")]
    Unsupported {
        /// What was asked for.
        feature: String,
        /// First runtime version that has it.
        since: String,
        /// The loaded version.
        found: String,
    },

    /// A call of the C API newer than the loaded runtime serves (execution-provider devices, the
    /// Compile API, placement as data...): refused before anything reaches ORT.
    #[error("{feature} needs ONNX Runtime 1.{needs} or newer (C API {needs}); the loaded runtime is {found}. Use a newer runtime: build with ONNXRT_DIST=cpu-1.32.0-registry (or load one with ONNXRT_DYLIB_PATH / onnxrt::init_from)")]
    NeedsNewerRuntime {
        /// What was asked for (the crate's function and the C API function behind it).
        feature: String,
        /// The C API version (= ORT 1.x minor version) that first has it.
        needs: u32,
        /// The loaded runtime's version.
        found: String,
    },

    /// No model input has this name.
    #[error("no input named `{name}`; the model's inputs are {valid}")]
    UnknownInput {
        /// The name given.
        name: String,
        /// The model's input names.
        valid: Names,
    },

    /// No model output has this name.
    #[error("no output named `{name}`; the model's outputs are {valid}")]
    UnknownOutput {
        /// The name given.
        name: String,
        /// The model's output names.
        valid: Names,
    },

    /// The same input was given twice.
    #[error("input `{name}` was given more than once")]
    DuplicateInput {
        /// The repeated name.
        name: String,
    },

    /// A required input was not given.
    #[error("input `{name}` ({element_type}, shape {shape}) is missing; the model needs all of {required}")]
    MissingInput {
        /// The missing input.
        name: String,
        /// Its element type.
        element_type: ElementType,
        /// Its declared shape.
        shape: ShapeText,
        /// All required inputs.
        required: Names,
    },

    /// A value has the wrong element type.
    #[error("`{name}` expects {expected} elements but got {got}{hint}")]
    ElementTypeMismatch {
        /// Input or value name.
        name: String,
        /// Declared element type.
        expected: ElementType,
        /// Given element type.
        got: ElementType,
        /// A suggestion (e.g. convert f64 to f32).
        hint: String,
    },

    /// A tensor was read as an element type other than the one it holds.
    #[error("{} holds {holds} elements; {}, not {requested}", described(name.as_deref()), how_to_read(*holds))]
    ReadTypeMismatch {
        /// The output the value came from (`None` for values not returned by a session run).
        name: Option<String>,
        /// The tensor's element type.
        holds: ElementType,
        /// The type it was read as.
        requested: ElementType,
    },

    /// A value has the wrong rank or a wrong static dimension.
    #[error("`{name}` expects shape {expected} but got {got:?}{hint}")]
    ShapeMismatch {
        /// Input name.
        name: String,
        /// Declared shape (`?` or a name for dynamic axes).
        expected: ShapeText,
        /// Given shape.
        got: Vec<i64>,
        /// A suggestion (e.g. NHWC given to an NCHW model: transpose).
        hint: String,
    },

    /// A value is not of the kind expected (tensor, sequence, map).
    #[error("`{name}` is a {got}, not a {expected}")]
    ValueKind {
        /// Value name.
        name: String,
        /// Expected kind.
        expected: &'static str,
        /// Actual kind.
        got: String,
    },

    /// Data length and shape disagree, or a shape is invalid.
    #[error("shape {shape:?} needs {expected} elements but {got} were given")]
    DataLength {
        /// The shape.
        shape: Vec<i64>,
        /// Elements the shape holds.
        expected: usize,
        /// Elements given.
        got: usize,
    },

    /// A shape whose element count or byte size does not fit in memory, or has negative dims.
    #[error("shape {shape:?} is invalid: {why}")]
    BadShape {
        /// The shape.
        shape: Vec<i64>,
        /// What is wrong.
        why: &'static str,
    },

    /// An array that cannot be passed without a copy was refused.
    #[error("`{name}` is not in standard (C-contiguous) layout; call `.as_standard_layout()` or use Value::from_array, which copies")]
    NotContiguous {
        /// Value name.
        name: String,
    },

    /// A string cannot be given to ORT (it holds a NUL byte) or read back as UTF-8.
    #[error("string #{index}: {why}")]
    InvalidString {
        /// Position in the tensor.
        index: usize,
        /// What is wrong.
        why: &'static str,
    },

    /// A name, key or path given to ORT holds a NUL byte.
    #[error("{what} {value:?} contains a NUL byte")]
    InteriorNul {
        /// What it is.
        what: &'static str,
        /// The value.
        value: String,
    },

    /// A model file could not be read.
    #[error("cannot read model {}: {message}", path.display())]
    ModelFile {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        message: String,
    },

    /// The model file (or bytes) is not an ONNX model: ORT's protobuf parser refused it. Says
    /// what the bytes look like instead (a Git LFS pointer, an HTML page, text, a cut-off copy).
    #[error(
        "{} is not a valid ONNX model ({size} bytes): {problem}\nFix: {}\n(ONNX Runtime said: {message})",
        path.as_ref().map_or("the in-memory model".to_owned(), |p| p.display().to_string()),
        problem.fix()
    )]
    NotOnnxModel {
        /// The file, or `None` for [`crate::SessionBuilder::commit_from_memory`].
        path: Option<PathBuf>,
        /// Its size in bytes.
        size: u64,
        /// What the bytes look like.
        problem: ModelFileProblem,
        /// ORT's message.
        message: String,
    },

    /// The model needs a newer runtime (opset or IR version too new).
    #[error(
        "{message}\nFix: export the model with an older opset / IR version (ONNX Runtime {runtime} supports \
         default-domain opsets up to {max_opset}; ORT 1.16 reads IR versions up to 9), or use a newer ONNX Runtime"
    )]
    ModelTooNew {
        /// ORT's message.
        message: String,
        /// Loaded runtime version.
        runtime: String,
        /// Newest default-domain opset that runtime supports.
        max_opset: u32,
    },

    /// An execution provider is not compiled into the loaded runtime.
    #[error("the {provider} execution provider is not in this ONNX Runtime build ({runtime}, providers: {available}); {fix}")]
    ProviderNotAvailable {
        /// The provider asked for.
        provider: String,
        /// Providers the runtime has.
        available: Names,
        /// Loaded runtime version/path.
        runtime: String,
        /// What to do.
        fix: String,
    },

    /// A provider library or one of its dependencies could not be loaded.
    #[error("the {provider} execution provider could not be loaded: {cause}\nFix: {fix}")]
    ProviderLoad {
        /// The provider.
        provider: String,
        /// The provider library involved.
        library: PathBuf,
        /// The missing dependency, if one was identified (e.g. `libcudnn.so.8`).
        missing: Option<String>,
        /// The loader's or ORT's own words.
        cause: String,
        /// What to do.
        fix: String,
    },

    /// A CUDA, cuDNN or cuBLAS call inside ONNX Runtime failed (`CUDNN_STATUS_*`, "cuDNN is
    /// unavailable", `CUBLAS_STATUS_*`, `cudaError*`): a library of the GPU stack is missing, damaged
    /// or of the wrong version, or the device is not usable. ORT's own words are kept in `message`.
    #[error("{family} failed inside ONNX Runtime ({function}): {message}\nFix: {fix}")]
    GpuLibrary {
        /// Which part of the GPU stack failed.
        family: GpuFamily,
        /// The C API function that returned the failure (`Run`, `CreateSession`...).
        function: &'static str,
        /// ORT's message.
        message: String,
        /// What to check, `onnxrt doctor` first.
        fix: String,
    },

    /// Device (or host) memory ran out, or a configured limit was hit.
    #[error("out of memory in {function}: {message}\nFix: {}", oom_fix(*.host))]
    OutOfMemory {
        /// The C API function.
        function: &'static str,
        /// ORT's message.
        message: String,
        /// Whether the memory is known to be the host's (a tensor made by a CPU allocator); else
        /// it may be a GPU's (ORT's arena messages do not say which).
        host: bool,
    },

    /// A run was cancelled through its [`crate::RunOptions`].
    #[error("the run was terminated through RunOptions::terminate: {message}")]
    Terminated {
        /// ORT's message.
        message: String,
    },

    /// [`crate::Session::run_async`] on a session whose intra-op pool has no worker thread.
    #[error("run_async runs on ORT's intra-op pool workers, and intra_op_threads({threads}) leaves none (the count includes the calling thread)\nFix: build the session with SessionBuilder::async_threads() (one worker per core), leave intra_op_threads unset, or set 2 or more; or call Session::run inside spawn_blocking")]
    AsyncNeedsThreadPool {
        /// The intra-op thread count of the session.
        threads: usize,
    },

    /// A setting's value is outside what the setting takes (a thread count that does not fit, a
    /// negative size, a device id that is not a number, provider options the runtime refused, a
    /// setting that needs another one).
    #[error("{setting} = {value} is refused: {allowed}")]
    BadSetting {
        /// The setting (`"intra_op_threads"`, `"CUDA device_id"`, `"free dimension `N`"`, ...).
        setting: String,
        /// The value given.
        value: String,
        /// What the setting takes, and how to fix it.
        allowed: String,
    },

    /// A device id that does not exist on this machine.
    #[error("{device} device id {id} does not exist: {}", devices_fix(.count))]
    NoSuchDevice {
        /// The kind of device or memory (`"CUDA"`, `"TensorRT"`, `"Cuda"` memory, ...).
        device: String,
        /// The id given.
        id: i32,
        /// How many devices the CUDA runtime reports, when it could be asked.
        count: Option<i32>,
    },

    /// [`SessionBuilder::strict_gpu`](crate::SessionBuilder::strict_gpu) without a GPU provider:
    /// there is nothing to be strict about.
    #[error("strict_gpu is set but no execution provider was requested (providers_for_devices counts for any provider but the CPU's; a device_policy or device_selector does not count)\nFix: add one with SessionBuilder::cuda or ::tensorrt (or ::provider, or providers_for_devices with a GPU provider's devices), use DevicePolicy::RequireGpu for ORT's or a selector's choice, or leave strict_gpu off")]
    StrictGpuWithoutProvider,

    /// [`DevicePolicy::RequireGpu`](crate::ep_device::DevicePolicy::RequireGpu) where no
    /// registered execution provider lists a GPU device: refused instead of running on the CPU.
    #[error("a GPU was required through the device API, but no GPU device was listed or chosen; the devices: {seen:?}. {why}\nFix: the classic append path (SessionBuilder::cuda / ::tensorrt, with strict_gpu) does not depend on device discovery and still reaches the GPU; or register the GPU provider's library first (Environment::register_provider_library; for CUDA, libonnxruntime_providers_cuda.so beside the runtime), which lists the GPU where it finds it")]
    NoGpuDevice {
        /// Every device the providers listed (`provider on KIND vendor (vendor:device)`).
        seen: Vec<String>,
        /// Why discovery found no GPU, as far as the crate can tell (what `/sys/class/drm` holds).
        why: String,
    },

    /// [`Environment::register_pinned_provider_library`](crate::Environment::register_pinned_provider_library)
    /// refused a file that is not, byte for byte, the library of a plugin bundle pinned in
    /// vendor-manifest.toml. Nothing was loaded.
    #[error("{} is not a pinned plugin provider library: {why}; the pinned ones: {pinned:?}\nFix: use the library of the bundle `onnxrt-dist assemble <bundle>` provides, unchanged, or, for a library you vouch for yourself, the unsafe Environment::register_provider_library", path.display())]
    PluginNotPinned {
        /// The file.
        path: PathBuf,
        /// Why it is not one (its size or sha256, or that it cannot be read).
        why: String,
        /// The pinned libraries (bundle, path inside it, sha256).
        pinned: Vec<String>,
    },

    /// A write into a value that is read-only: one over memory it only borrows for reading
    /// ([`Value::from_view`](crate::Value::from_view)) or one that shares its tensor (an
    /// `IoBinding` output).
    #[error("{operation}: the value is read-only (it borrows memory for reading, from Value::from_view, or shares its tensor with an IoBinding)\nFix: write into a value made by Value::from_vec / from_array or by an Allocator")]
    ReadOnlyValue {
        /// What was attempted (`"copy_from_host"`, `"binding it to output `y`"`, ...).
        operation: String,
    },

    /// The CPU was asked to read a tensor that lives in device memory.
    #[error("reading a tensor that lives in `{memory}` memory: the CPU cannot read device memory\nFix: bind the output to MemoryInfo::cpu() or MemoryInfo::cuda_pinned(), or copy it with Value::copy_to_host (feature `cuda`)")]
    NotHostMemory {
        /// The memory's name (`Cuda`, ...).
        memory: String,
    },

    /// A value or call refused before reaching ORT, of a kind that has no variant of its own.
    #[error("{what}: {why}")]
    InvalidArgument {
        /// What was given.
        what: String,
        /// What is wrong and what is allowed.
        why: String,
    },

    /// A string key (session or run configuration entry, execution provider option) that the
    /// crate does not let through from safe code: ORT reads it as an address, loads code from it,
    /// or keeps pointing into caller memory because of it, or the crate's list does not know it
    /// ([`crate::allowed_keys`]).
    #[error("{scope} `{key}` is refused ({class}): {why}\nKeys let through: {allowed}")]
    KeyRefused {
        /// Where the key was given (`"CUDA provider option"`, `"session config entry"`, ...).
        scope: String,
        /// The key.
        key: String,
        /// `"ownership"`, `"address"`, `"code loading"`, or `"not on the list"`.
        class: &'static str,
        /// Why, and what to use instead.
        why: String,
        /// The keys this place lets through.
        allowed: Names,
    },

    /// [`EnvironmentBuilder::commit`](crate::EnvironmentBuilder::commit) asked for settings other
    /// than those of the process's environment, which exists already (ORT's environment lives
    /// until the process ends).
    #[error("the process's ONNX Runtime environment `{name}` exists already ({in_force}); this commit asked for {asked}\nFix: build the environment once at start-up, or take it with Environment::global() and change its log hook and level with Environment::set_log_hook / set_log_level (its name and global thread pools stay until the process ends)")]
    EnvironmentExists {
        /// The name of the environment in force.
        name: String,
        /// Its settings (log level, hook, global thread pools).
        in_force: String,
        /// The settings this commit asked for.
        asked: String,
    },

    /// A Rust custom operator ([`crate::custom_op`]) returned an error or panicked, while its
    /// kernel was made (session creation) or while it computed (a run).
    #[error("custom operator `{op}` {}: {message} (in ONNX Runtime {function})", if *panicked { "panicked" } else { "failed" })]
    CustomOp {
        /// The operator, as `domain::Name`.
        op: String,
        /// Whether it panicked (the panic was caught) rather than returned an error.
        panicked: bool,
        /// The error's or the panic's message.
        message: String,
        /// The ORT call that failed (`CreateSession`, `Run`...).
        function: &'static str,
    },
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Error {
    /// The variant's name (`"UnknownInput"`, `"Ort"`...), e.g. for a metrics label or a log
    /// field; `Debug` prints the message instead.
    pub fn variant(&self) -> &'static str {
        match self {
            Error::Ort { .. } => "Ort",
            Error::RuntimeNotFound { .. } => "RuntimeNotFound",
            Error::RuntimeTooOld { .. } => "RuntimeTooOld",
            Error::AlreadyLoaded { .. } => "AlreadyLoaded",
            Error::Unsupported { .. } => "Unsupported",
            Error::NeedsNewerRuntime { .. } => "NeedsNewerRuntime",
            Error::UnknownInput { .. } => "UnknownInput",
            Error::UnknownOutput { .. } => "UnknownOutput",
            Error::DuplicateInput { .. } => "DuplicateInput",
            Error::MissingInput { .. } => "MissingInput",
            Error::ElementTypeMismatch { .. } => "ElementTypeMismatch",
            Error::ReadTypeMismatch { .. } => "ReadTypeMismatch",
            Error::ShapeMismatch { .. } => "ShapeMismatch",
            Error::ValueKind { .. } => "ValueKind",
            Error::DataLength { .. } => "DataLength",
            Error::BadShape { .. } => "BadShape",
            Error::NotContiguous { .. } => "NotContiguous",
            Error::InvalidString { .. } => "InvalidString",
            Error::InteriorNul { .. } => "InteriorNul",
            Error::ModelFile { .. } => "ModelFile",
            Error::NotOnnxModel { .. } => "NotOnnxModel",
            Error::ModelTooNew { .. } => "ModelTooNew",
            Error::ProviderNotAvailable { .. } => "ProviderNotAvailable",
            Error::ProviderLoad { .. } => "ProviderLoad",
            Error::GpuLibrary { .. } => "GpuLibrary",
            Error::OutOfMemory { .. } => "OutOfMemory",
            Error::Terminated { .. } => "Terminated",
            Error::AsyncNeedsThreadPool { .. } => "AsyncNeedsThreadPool",
            Error::BadSetting { .. } => "BadSetting",
            Error::NoSuchDevice { .. } => "NoSuchDevice",
            Error::StrictGpuWithoutProvider => "StrictGpuWithoutProvider",
            Error::NoGpuDevice { .. } => "NoGpuDevice",
            Error::PluginNotPinned { .. } => "PluginNotPinned",
            Error::ReadOnlyValue { .. } => "ReadOnlyValue",
            Error::NotHostMemory { .. } => "NotHostMemory",
            Error::InvalidArgument { .. } => "InvalidArgument",
            Error::KeyRefused { .. } => "KeyRefused",
            Error::EnvironmentExists { .. } => "EnvironmentExists",
            Error::CustomOp { .. } => "CustomOp",
        }
    }

    pub(crate) fn missing(function: &'static str) -> Error {
        Error::Unsupported {
            feature: function.to_owned(),
            since: "a newer release".into(),
            found: "this runtime".into(),
        }
    }

    /// ORT reported success for `function` but handed back no `what` (a null out-pointer).
    pub(crate) fn null_out(function: &'static str, what: &str) -> Error {
        Error::Ort {
            function,
            code: ErrorCode::Fail,
            message: format!("ONNX Runtime reported success but returned no {what}"),
        }
    }

    pub(crate) fn nul(what: &'static str, value: &str) -> Error {
        Error::InteriorNul { what, value: value.to_owned() }
    }
}

/// What [`Error::NoSuchDevice`] says to do.
fn devices_fix(count: &Option<i32>) -> String {
    match count {
        Some(count) => format!(
            "this machine has {count} CUDA device(s) (ids 0..{count}); check CUDA_VISIBLE_DEVICES and nvidia-smi"
        ),
        None => "device ids start at 0".to_owned(),
    }
}

/// Shorthand for this crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to do about an out-of-memory failure: GPU advice unless the memory is the host's.
impl Error {
    /// This error with its out-of-memory advice about host memory where `host` (the memory is
    /// known to be the host's: a CPU-only session, ORT's default allocator); ORT's message does
    /// not say which memory ran out.
    pub(crate) fn in_host_memory_if(self, host: bool) -> Error {
        match self {
            Error::OutOfMemory { function, message, host: false } if host => {
                Error::OutOfMemory { function, message, host: true }
            }
            other => other,
        }
    }
}

fn oom_fix(host: bool) -> &'static str {
    if host {
        "lower the tensor's size or the batch size, or free host memory (a CPU allocator's limit, e.g. the arena's, bounds it too)"
    } else {
        "lower the batch size, raise gpu_mem_limit, or free other GPU work"
    }
}
