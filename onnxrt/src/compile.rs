//! Compiled models (ORT's Compile API, C API 22+): a model compiled once for the providers a
//! [`SessionBuilder`] names (with their options), written as an EPContext model whose
//! provider-specific parts (e.g. a TensorRT engine) are embedded in the `.onnx` or written beside
//! it, then loaded ready on every start with [`Session::builder`](crate::Session::builder). The
//! compatibility check ([`compatibility`], C API 24) tells whether a compiled model suits the
//! devices at hand or wants recompiling.
//!
//! Every call here needs ONNX Runtime 1.22 or newer (the flags 1.23, the compatibility check
//! 1.24); older runtimes get [`Error::NeedsNewerRuntime`] before anything reaches ORT.

use std::ffi::{c_void, CString};
use std::path::{Path, PathBuf};

use onnxrt_sys::{OrtCompileApi, OrtModelCompilationOptions};

use crate::api::{api, Api};
use crate::env::Environment;
use crate::ep_device::EpDevice;
use crate::error::{Error, Result};
use crate::session::SessionBuilder;

/// C API version of the Compile API (ORT 1.22).
const COMPILE_API: u32 = 22;

/// Where the model to compile comes from.
#[derive(Debug, Clone)]
enum Input {
    File(PathBuf),
    Bytes(Vec<u8>),
}

/// Compiles a model for the providers of a [`SessionBuilder`].
///
/// ```no_run
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
/// use onnxrt::compile::ModelCompiler;
/// use onnxrt::Session;
/// // The builder names the providers (and their options) to compile for.
/// ModelCompiler::new(Session::builder()).input_file(model).embed_context(true).compile_to_file("mlp_ctx.onnx")?;
/// let session = Session::builder().commit_from_file("mlp_ctx.onnx")?;
/// # Ok::<(), onnxrt::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ModelCompiler {
    builder: SessionBuilder,
    input: Option<Input>,
    embed: bool,
    external_initializers: Option<(PathBuf, usize)>,
    error_if_nothing_compiled: bool,
}

impl ModelCompiler {
    /// A compiler for the providers, provider options and settings of `builder`.
    pub fn new(builder: SessionBuilder) -> ModelCompiler {
        ModelCompiler {
            builder,
            input: None,
            embed: false,
            external_initializers: None,
            error_if_nothing_compiled: false,
        }
    }

    /// Compiles the model in this file.
    pub fn input_file(mut self, path: impl AsRef<Path>) -> Self {
        self.input = Some(Input::File(path.as_ref().to_owned()));
        self
    }

    /// Compiles the model in these bytes.
    pub fn input_bytes(mut self, model: impl Into<Vec<u8>>) -> Self {
        self.input = Some(Input::Bytes(model.into()));
        self
    }

    /// Embeds the providers' compiled parts in the output model (`true`), or writes them beside
    /// it (`false`, the default: ORT names the files after the output model).
    pub fn embed_context(mut self, embed: bool) -> Self {
        self.embed = embed;
        self
    }

    /// Writes the initializers larger than `threshold` bytes into `path` instead of the model.
    ///
    /// `path` is relative to the folder of the output model (where ORT writes it and where a
    /// session looks for it): an absolute path or one with a `..` component is refused with
    /// [`Error::BadSetting`], as is this setting with
    /// [`compile_to_bytes`](ModelCompiler::compile_to_bytes) (bytes have no folder; ORT would write
    /// the file beside the input model). Both before ORT runs.
    pub fn external_initializers(mut self, path: impl AsRef<Path>, threshold: usize) -> Self {
        self.external_initializers = Some((path.as_ref().to_owned(), threshold));
        self
    }

    /// Fails when no provider compiled any node (e.g. only the CPU provider was asked for), instead
    /// of writing a model that is the input again (C API 23).
    pub fn error_if_nothing_compiled(mut self, on: bool) -> Self {
        self.error_if_nothing_compiled = on;
        self
    }

    /// Compiles into the file `output`. On failure no output file is left that was not there.
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.22; [`Error::BadSetting`] without an
    /// input; the builder's errors; ORT's errors.
    ///
    /// Corresponds to `OrtCompileApi::CompileModel` with `ModelCompilationOptions_SetOutputModelPath`.
    #[doc(alias = "CompileModel")]
    pub fn compile_to_file(self, output: impl AsRef<Path>) -> Result<()> {
        let output = output.as_ref();
        let existed = output.exists();
        let output_c = path_c("output model path", output)?;
        let result = self.compile(Output::File, |compile, o| {
            let set = compile
                .ModelCompilationOptions_SetOutputModelPath
                .ok_or_else(|| Error::missing("ModelCompilationOptions_SetOutputModelPath"))?;
            // SAFETY: `o` is live; the path is NUL-terminated and outlives the call (ORT copies it).
            unsafe { crate::status::check("ModelCompilationOptions_SetOutputModelPath", set(o, output_c.as_ptr())) }
        });
        if result.is_err() && !existed && output.exists() {
            let _ = std::fs::remove_file(output);
        }
        result
    }

    /// Compiles into bytes (the providers' parts embedded or beside, as set; beside needs a file,
    /// so use [`compile_to_file`](ModelCompiler::compile_to_file) for it).
    ///
    /// # Errors
    /// As [`compile_to_file`](ModelCompiler::compile_to_file).
    ///
    /// Corresponds to `OrtCompileApi::CompileModel` with `ModelCompilationOptions_SetOutputModelBuffer`.
    pub fn compile_to_bytes(self) -> Result<Vec<u8>> {
        let allocator = crate::memory::default_allocator()?;
        let mut buffer: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let (buffer_out, size_out) = (&mut buffer as *mut *mut c_void, &mut size as *mut usize);
        self.compile(Output::Bytes, |compile, o| {
            let set = compile
                .ModelCompilationOptions_SetOutputModelBuffer
                .ok_or_else(|| Error::missing("ModelCompilationOptions_SetOutputModelBuffer"))?;
            // SAFETY: `o` is live; ORT writes the buffer and its size through the two pointers
            // during CompileModel, while `buffer` and `size` (locals of this function) live.
            unsafe {
                crate::status::check(
                    "ModelCompilationOptions_SetOutputModelBuffer",
                    set(o, allocator, buffer_out, size_out),
                )
            }
        })?;
        if buffer.is_null() {
            return Err(Error::null_out("CompileModel", "output model"));
        }
        // SAFETY: ORT wrote `size` initialised bytes at `buffer`, allocated by `allocator`.
        let bytes = unsafe { std::slice::from_raw_parts(buffer.cast::<u8>(), size) }.to_vec();
        // SAFETY: allocated by `allocator`, not used after this.
        unsafe { crate::memory::free(allocator, buffer) };
        Ok(bytes)
    }

    /// Makes the compilation options from the builder's session options, sets the input, the
    /// embed mode and `set_output`, then compiles (the builder's
    /// [`LoadCanceller`](crate::LoadCanceller) can stop it); releases everything on every path.
    fn compile(
        self,
        output: Output,
        set_output: impl FnOnce(&OrtCompileApi, *mut OrtModelCompilationOptions) -> Result<()>,
    ) -> Result<()> {
        let api = api()?;
        let compile = compile_api(api, "ModelCompiler (the Compile API)")?;
        let Some(input) = &self.input else {
            return Err(Error::BadSetting {
                setting: "ModelCompiler input".into(),
                value: "none".into(),
                allowed: "input_file(path) or input_bytes(bytes)".into(),
            });
        };
        if let Some((path, _)) = &self.external_initializers {
            check_external_initializers(path, output)?;
        }
        if self.error_if_nothing_compiled {
            api.needs(23, "ModelCompiler::error_if_nothing_compiled (ModelCompilationOptions_SetFlags)")?;
        }
        let canceller = self.builder.load_canceller.clone();
        crate::session::cancel_check(canceller.as_ref())?;
        let (env, session_options, prepared, _custom_ops) = self.builder.prepare()?;
        let create = compile
            .CreateModelCompilationOptionsFromSessionOptions
            .ok_or_else(|| Error::missing("CreateModelCompilationOptionsFromSessionOptions"))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the environment and the session options are live; the out-pointer is valid.
        unsafe {
            crate::status::check(
                "CreateModelCompilationOptionsFromSessionOptions",
                create(env.as_ptr(), session_options.as_ptr(), &mut raw),
            )
        }?;
        let options = CompilationOptions { compile, raw };
        let o = options.raw;
        let input_c = match input {
            Input::File(path) => Some(path_c("input model path", path)?),
            Input::Bytes(_) => None,
        };
        match (input, &input_c) {
            (Input::File(_), Some(path)) => {
                let set = compile
                    .ModelCompilationOptions_SetInputModelPath
                    .ok_or_else(|| Error::missing("ModelCompilationOptions_SetInputModelPath"))?;
                // SAFETY: `o` is live; the path is NUL-terminated and outlives the call.
                unsafe { crate::status::check("ModelCompilationOptions_SetInputModelPath", set(o, path.as_ptr())) }?;
            }
            (Input::Bytes(bytes), _) => {
                let set = compile
                    .ModelCompilationOptions_SetInputModelFromBuffer
                    .ok_or_else(|| Error::missing("ModelCompilationOptions_SetInputModelFromBuffer"))?;
                // SAFETY: `o` is live; ORT reads the bytes until CompileModel returns, and
                // `self.input` (which owns them) outlives `options`, released below first.
                unsafe {
                    crate::status::check(
                        "ModelCompilationOptions_SetInputModelFromBuffer",
                        set(o, bytes.as_ptr().cast(), bytes.len()),
                    )
                }?;
            }
            (Input::File(_), None) => unreachable!("a file input has its path"),
        }
        set_output(compile, o)?;
        let embed = compile
            .ModelCompilationOptions_SetEpContextEmbedMode
            .ok_or_else(|| Error::missing("ModelCompilationOptions_SetEpContextEmbedMode"))?;
        // SAFETY: `o` is live.
        unsafe { crate::status::check("ModelCompilationOptions_SetEpContextEmbedMode", embed(o, self.embed)) }?;
        if let Some((path, threshold)) = &self.external_initializers {
            let path = path_c("external initializers path", path)?;
            let set = compile
                .ModelCompilationOptions_SetOutputModelExternalInitializersFile
                .ok_or_else(|| Error::missing("ModelCompilationOptions_SetOutputModelExternalInitializersFile"))?;
            // SAFETY: `o` is live; the path is NUL-terminated and outlives the call (ORT copies it).
            unsafe {
                crate::status::check(
                    "ModelCompilationOptions_SetOutputModelExternalInitializersFile",
                    set(o, path.as_ptr(), *threshold),
                )
            }?;
        }
        if self.error_if_nothing_compiled {
            let set = compile
                .ModelCompilationOptions_SetFlags
                .ok_or_else(|| Error::missing("ModelCompilationOptions_SetFlags"))?;
            // SAFETY: `o` is live; the flag is one of ORT's values (the runtime serves C API 23).
            unsafe {
                crate::status::check(
                    "ModelCompilationOptions_SetFlags",
                    set(o, onnxrt_sys::OrtCompileApiFlags_ERROR_IF_NO_NODES_COMPILED as _),
                )
            }?;
        }
        let run = compile.CompileModel.ok_or_else(|| Error::missing("CompileModel"))?;
        // ORT's compilation reads the cancellation flag its session options share with these.
        let result = match crate::session::cancel_watch(canceller.as_ref(), session_options.as_ptr()) {
            Ok(watching) => {
                // ORT reads its device list while it chooses by policy or selector.
                let _devices =
                    (prepared.device_selector.is_some() || prepared.by_policy).then(crate::device_list::read);
                // SAFETY: the environment and `o` are live; everything `o` points to (input bytes,
                // the output buffer's locals, the device selector in `prepared`) outlives the call.
                let result = unsafe { crate::status::check("CompileModel", run(env.as_ptr(), o)) };
                // Unregistered before the session options are released.
                drop(watching);
                result
            }
            Err(e) => Err(e),
        };
        // The compilation options first, then the session options and what they point to.
        drop(options);
        drop(session_options);
        drop(prepared);
        result
    }
}

/// Where the compiled model goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    File,
    Bytes,
}

/// The external initializers file must be a plain relative path inside the output model's
/// folder, and the output a file (ORT resolves it against that folder; bytes have none).
fn check_external_initializers(path: &Path, output: Output) -> Result<()> {
    let refuse = |allowed: &str| {
        Err(Error::BadSetting {
            setting: "ModelCompiler::external_initializers".into(),
            value: path.display().to_string(),
            allowed: allowed.into(),
        })
    };
    if output == Output::Bytes {
        return refuse(
            "only with compile_to_file: the file is written beside the output model, and bytes have no folder",
        );
    }
    if path.is_absolute() || path.has_root() {
        return refuse("a path relative to the output model's folder (ORT refuses absolute ones)");
    }
    if path.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return refuse("a path inside the output model's folder, without `..` (ORT refuses to load data outside it)");
    }
    if path.as_os_str().is_empty() {
        return refuse("a file name, relative to the output model's folder");
    }
    Ok(())
}

/// Owns an `OrtModelCompilationOptions`.
struct CompilationOptions {
    compile: &'static OrtCompileApi,
    raw: *mut OrtModelCompilationOptions,
}

impl Drop for CompilationOptions {
    fn drop(&mut self) {
        if let Some(release) = self.compile.ReleaseModelCompilationOptions {
            if !self.raw.is_null() {
                // SAFETY: created by CreateModelCompilationOptionsFromSessionOptions, released once.
                unsafe { release(self.raw) };
            }
        }
    }
}

/// ORT's Compile API table, if the runtime serves C API 22.
fn compile_api(api: &Api, feature: &'static str) -> Result<&'static OrtCompileApi> {
    let table = api.needs(COMPILE_API, feature)?;
    let get = table.GetCompileApi.ok_or_else(|| Error::missing("GetCompileApi"))?;
    // SAFETY: the runtime serves C API 22, so GetCompileApi exists; it returns a static table.
    let compile = unsafe { get() };
    // SAFETY: non-null results point to ORT's static table, alive as long as the library.
    unsafe { compile.as_ref() }.ok_or_else(|| Error::null_out("GetCompileApi", "Compile API"))
}

fn path_c(what: &'static str, path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| Error::nul(what, &path.display().to_string()))
}

/// Whether a compiled model suits a provider's devices (`OrtCompiledModelCompatibility`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compatibility {
    /// The model holds nothing compiled for this provider (it runs, uncompiled).
    NotApplicable,
    /// Compiled for these devices: use it.
    Optimal,
    /// Runs, but recompiling would suit these devices better.
    PreferRecompilation,
    /// Compiled for something else: recompile.
    Unsupported,
    /// A value a newer runtime returns that this crate does not know.
    Other(u32),
}

/// Whether the compiled model at `model` suits `devices` (all of one provider, from
/// [`Environment::ep_devices`] of `env`): reads the compatibility information the provider
/// wrote into the model and asks the provider.
///
/// # Errors
/// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.24; [`Error::BadSetting`] for no devices
/// or devices ORT no longer lists; ORT's errors.
///
/// Corresponds to `OrtApi::GetCompatibilityInfoFromModel` and `OrtApi::GetModelCompatibilityForEpDevices`.
#[doc(alias = "GetModelCompatibilityForEpDevices")]
pub fn compatibility(env: &Environment, model: &Path, devices: &[EpDevice]) -> Result<Compatibility> {
    let api = api()?;
    let table = api.needs(24, "onnxrt::compile::compatibility (GetCompatibilityInfoFromModel)")?;
    let Some(first) = devices.first() else {
        return Err(Error::BadSetting {
            setting: "compatibility devices".into(),
            value: "none".into(),
            allowed: "one or more devices of one provider".into(),
        });
    };
    let raw = crate::ep_device::resolve(api, env, devices)?;
    let model_c = path_c("model path", model)?;
    let provider_c = CString::new(first.provider.as_str()).map_err(|_| Error::nul("provider", &first.provider))?;
    let allocator = crate::memory::default_allocator()?;
    let read = table.GetCompatibilityInfoFromModel.ok_or_else(|| Error::missing("GetCompatibilityInfoFromModel"))?;
    let mut info = std::ptr::null_mut();
    // SAFETY: both strings are NUL-terminated and outlive the call; the allocator is ORT's
    // default; ORT writes a string it allocated with it, or null, through the out-pointer.
    unsafe {
        crate::status::check(
            "GetCompatibilityInfoFromModel",
            read(model_c.as_ptr(), provider_c.as_ptr(), allocator, &mut info),
        )
    }?;
    if info.is_null() {
        return Ok(Compatibility::NotApplicable);
    }
    // SAFETY: `info` is a NUL-terminated string allocated by `allocator`, freed here once.
    let info = unsafe { crate::memory::take_string(allocator, info) };
    let info_c = CString::new(info.as_str()).map_err(|_| Error::nul("compatibility info", &info))?;
    let check =
        table.GetModelCompatibilityForEpDevices.ok_or_else(|| Error::missing("GetModelCompatibilityForEpDevices"))?;
    let mut out = onnxrt_sys::OrtCompiledModelCompatibility_EP_NOT_APPLICABLE;
    // SAFETY: `raw` holds devices ORT lists now; the info string outlives the call; `out` is valid.
    unsafe {
        crate::status::check(
            "GetModelCompatibilityForEpDevices",
            check(raw.as_ptr(), raw.len(), info_c.as_ptr(), &mut out),
        )
    }?;
    Ok(match out {
        onnxrt_sys::OrtCompiledModelCompatibility_EP_NOT_APPLICABLE => Compatibility::NotApplicable,
        onnxrt_sys::OrtCompiledModelCompatibility_EP_SUPPORTED_OPTIMAL => Compatibility::Optimal,
        onnxrt_sys::OrtCompiledModelCompatibility_EP_SUPPORTED_PREFER_RECOMPILATION => {
            Compatibility::PreferRecompilation
        }
        onnxrt_sys::OrtCompiledModelCompatibility_EP_UNSUPPORTED => Compatibility::Unsupported,
        other => Compatibility::Other(other),
    })
}
