//! Any execution provider by the name ORT gives it, with string options: OpenVINO, XNNPACK, QNN,
//! SNPE, Azure, and on newer runtimes more (ORT's `SessionOptionsAppendExecutionProvider`).
//!
//! The typed CUDA and TensorRT options stay the better way to ask for those two; this is for the
//! providers onnxrt has no typed options for. Option keys pass only when the provider's table in
//! [`crate::allowed_keys`] lists them as plain values. A refusal is diagnosed as for CUDA: a provider the
//! runtime was not built with is [`Error::ProviderNotAvailable`], one whose library cannot load is
//! [`Error::ProviderLoad`] naming the library (and the missing dependency when the loader says).

use std::collections::BTreeSet;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use onnxrt_sys::OrtSessionOptions;

use crate::api::Api;
use crate::env::Environment;
use crate::error::{Error, Names, Result};
use crate::handle::Owned;
use crate::status::ort;

/// A provider asked for by name, with its options as ORT's strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedProvider {
    /// The name the C API takes (`"OpenVINO"`, `"XNNPACK"`, `"QNN"`, …) or the
    /// `…ExecutionProvider` name the session reports.
    pub name: String,
    /// Option keys and values, passed as given.
    pub options: Vec<(String, String)>,
    /// Whether keys off the allow-list were vouched for (`provider_unchecked`).
    unchecked: bool,
}

impl NamedProvider {
    /// A request for provider `name`; `unchecked` when the caller vouched for keys off the
    /// allow-list ([`SessionBuilder::provider_unchecked`](crate::SessionBuilder::provider_unchecked)).
    pub(crate) fn new(name: String, options: Vec<(String, String)>, unchecked: bool) -> NamedProvider {
        NamedProvider { name, options, unchecked }
    }
}

/// The C API's name for a provider and the name the session reports for it. Either is
/// accepted (`"XNNPACK"` or `"XnnpackExecutionProvider"`, any case); ORT 1.16 takes only the first.
const KNOWN: &[(&str, &str)] = &[
    ("CUDA", "CUDAExecutionProvider"),
    ("TensorRT", "TensorrtExecutionProvider"),
    ("OpenVINO", "OpenVINOExecutionProvider"),
    ("XNNPACK", "XnnpackExecutionProvider"),
    ("QNN", "QNNExecutionProvider"),
    ("SNPE", "SNPEExecutionProvider"),
    ("AZURE", "AzureExecutionProvider"),
    ("WEBNN", "WebNNExecutionProvider"),
    ("JS", "JsExecutionProvider"),
    ("CoreML", "CoreMLExecutionProvider"),
    ("DML", "DmlExecutionProvider"),
    ("MIGraphX", "MIGraphXExecutionProvider"),
    ("VitisAI", "VitisAIExecutionProvider"),
    ("WebGPU", "WebGpuExecutionProvider"),
];

/// `(C API name, reported name)` for what the caller wrote; unknown names pass through as given.
fn resolve(name: &str) -> (String, String) {
    match KNOWN.iter().find(|(short, full)| short.eq_ignore_ascii_case(name) || full.eq_ignore_ascii_case(name)) {
        Some((short, full)) => ((*short).to_owned(), (*full).to_owned()),
        None => (name.to_owned(), format!("{name}ExecutionProvider")),
    }
}

/// The name the session reports for a provider asked for as `name`, as a `&'static str` like the
/// typed providers' names: each distinct name is stored once per process.
pub(crate) fn registered_name(name: &str) -> &'static str {
    let (_, full) = resolve(name);
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = names.get(full.as_str()) {
        return known;
    }
    // Bounded by the distinct provider names a program asks for.
    let leaked: &'static str = Box::leak(full.into_boxed_str());
    names.insert(leaked);
    leaked
}

/// Appends `request` to the session options, diagnosing a refusal.
pub(crate) fn append(
    api: &Api,
    env: &Arc<Environment>,
    options: *mut OrtSessionOptions,
    request: &NamedProvider,
) -> Result<()> {
    let (short, _) = resolve(&request.name);
    if !request.unchecked {
        let checked = crate::allowed_keys::provider(&short).check_all(request.options.iter().map(|(k, _)| k.as_str()));
        // A provider the crate does not name has no table of its own: say which one it was.
        checked.map_err(|e| match e {
            Error::KeyRefused { scope, key, class, why, allowed } if scope == crate::allowed_keys::OTHER.scope => {
                Error::KeyRefused { scope: format!("{} {scope}", request.name), key, class, why, allowed }
            }
            other => other,
        })?;
    }
    let mut keys = Vec::with_capacity(request.options.len());
    let mut values = Vec::with_capacity(request.options.len());
    for (key, value) in &request.options {
        keys.push(CString::new(key.as_str()).map_err(|_| Error::nul("provider option key", key))?);
        values.push(CString::new(value.as_str()).map_err(|_| Error::nul("provider option value", value))?);
    }
    let key_ptrs: Vec<_> = keys.iter().map(|k| k.as_ptr()).collect();
    let value_ptrs: Vec<_> = values.iter().map(|v| v.as_ptr()).collect();
    let strings = StringOptions { keys: key_ptrs.as_ptr(), values: value_ptrs.as_ptr(), len: key_ptrs.len() };
    match short.as_str() {
        // The generic call does not take these two (not even ORT 1.30); their V2 option objects
        // take the same strings, as Python's `providers=[("CUDAExecutionProvider", {...})]` does.
        "CUDA" => append_cuda(api, env, options, &strings),
        "TensorRT" => append_tensorrt(api, env, options, &strings),
        _ => {
            let name_c = CString::new(short.as_str()).map_err(|_| Error::nul("provider name", &request.name))?;
            // SAFETY: `options` is the live session options being built; the name and both arrays
            // of `len` NUL-terminated strings outlive the call (ORT copies them).
            let appended = unsafe {
                ort!(
                    api,
                    SessionOptionsAppendExecutionProvider(
                        options,
                        name_c.as_ptr(),
                        strings.keys,
                        strings.values,
                        strings.len
                    )
                )
            };
            appended.map_err(|e| refusal(api, env, &request.name, e))
        }
    }
}

/// Arrays of `len` option keys and values (NUL-terminated strings), alive for the append.
struct StringOptions {
    keys: *const *const std::ffi::c_char,
    values: *const *const std::ffi::c_char,
    len: usize,
}

fn append_cuda(
    api: &Api,
    env: &Arc<Environment>,
    options: *mut OrtSessionOptions,
    strings: &StringOptions,
) -> Result<()> {
    super::require(api, "CUDAExecutionProvider", "CUDA")?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid.
    let created = unsafe { ort!(api, CreateCUDAProviderOptions(&mut raw)) };
    created.map_err(|e| super::diagnose::provider_load_failure(api, env, "CUDA", e))?;
    // SAFETY: on success we own the options.
    let cuda = unsafe { Owned::from_raw(raw) }?;
    // SAFETY: both arrays hold `len` NUL-terminated strings alive for the call; ORT copies them.
    let updated =
        unsafe { ort!(api, UpdateCUDAProviderOptions(cuda.as_ptr(), strings.keys, strings.values, strings.len)) };
    // Updating loads the provider library (ORT 1.30), so this is where a missing CUDA shows.
    updated.map_err(|e| super::diagnose::provider_load_failure(api, env, "CUDA", e))?;
    // SAFETY: both option objects are live; ORT copies the CUDA options.
    let appended = unsafe { ort!(api, SessionOptionsAppendExecutionProvider_CUDA_V2(options, cuda.as_ptr())) };
    appended.map_err(|e| super::diagnose::provider_load_failure(api, env, "CUDA", e))
}

fn append_tensorrt(
    api: &Api,
    env: &Arc<Environment>,
    options: *mut OrtSessionOptions,
    strings: &StringOptions,
) -> Result<()> {
    super::require(api, "TensorrtExecutionProvider", "TensorRT")?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid.
    let created = unsafe { ort!(api, CreateTensorRTProviderOptions(&mut raw)) };
    created.map_err(|e| super::diagnose::provider_load_failure(api, env, "TensorRT", e))?;
    // SAFETY: on success we own the options.
    let trt = unsafe { Owned::from_raw(raw) }?;
    // SAFETY: both arrays hold `len` NUL-terminated strings alive for the call; ORT copies them.
    let updated =
        unsafe { ort!(api, UpdateTensorRTProviderOptions(trt.as_ptr(), strings.keys, strings.values, strings.len)) };
    updated.map_err(|e| super::diagnose::provider_load_failure(api, env, "TensorRT", e))?;
    // SAFETY: both option objects are live; ORT copies the TensorRT options.
    let appended = unsafe { ort!(api, SessionOptionsAppendExecutionProvider_TensorRT_V2(options, trt.as_ptr())) };
    appended.map_err(|e| super::diagnose::provider_load_failure(api, env, "TensorRT", e))
}

/// Turns ORT's refusal of a named provider into the most specific error.
fn refusal(api: &Api, env: &Arc<Environment>, name: &str, error: Error) -> Error {
    let message = error.to_string();
    // ORT's words for a name it does not know, and for a provider left out of this build.
    let unknown = message.contains("Unknown provider name");
    let not_built = message.contains("not supported in this build") || message.contains("not enabled in this build");
    if unknown || not_built {
        let have = super::available().unwrap_or_default();
        let fix = if unknown {
            format!(
                "ONNX Runtime {} does not know a provider called `{name}` ({}); check the name against that list, and ask for CUDA and TensorRT with SessionBuilder::cuda / ::tensorrt",
                api.version,
                message.lines().next().unwrap_or_default()
            )
        } else {
            format!(
                "use an ONNX Runtime build that includes the {name} provider (this one has {})",
                Names(have.clone())
            )
        };
        return Error::ProviderNotAvailable {
            provider: name.to_owned(),
            available: Names(have),
            runtime: format!("{} at {}", api.version, api.library.display()),
            fix,
        };
    }
    if message.contains("Failed to load") || message.contains("cannot open shared object") {
        return super::diagnose::provider_load_failure(api, env, name, error);
    }
    error
}

#[cfg(test)]
mod tests {
    #[test]
    fn registered_names_follow_ort() {
        assert_eq!(super::registered_name("OpenVINO"), "OpenVINOExecutionProvider");
        assert_eq!(super::registered_name("XNNPACK"), "XnnpackExecutionProvider");
        assert_eq!(super::registered_name("xnnpackexecutionprovider"), "XnnpackExecutionProvider");
        assert_eq!(super::registered_name("cuda"), "CUDAExecutionProvider");
        assert_eq!(super::registered_name("Foo"), "FooExecutionProvider");
        // Stored once: the same pointer each time.
        assert!(std::ptr::eq(super::registered_name("Foo"), super::registered_name("Foo")));
    }
}
