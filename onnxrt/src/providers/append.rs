//! The one way a provider reaches a session: typed CUDA/TensorRT options and providers asked for
//! by name all pass the same key policy ([`crate::allowed_keys`]), version gates, `device_id`
//! check, C-array builder ([`options::apply`]) and load-failure diagnosis ([`diagnose`]).
//!
//! CUDA and TensorRT go through their V2 option objects (the generic
//! `SessionOptionsAppendExecutionProvider` does not take them, not even in ORT 1.30); the V2
//! objects take the same strings, as Python's `providers=[("CUDAExecutionProvider", {...})]` does.

use std::ffi::CString;
use std::sync::Arc;

use onnxrt_sys::OrtSessionOptions;

use super::{diagnose, named, options};
use crate::api::Api;
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;

// The gates below: the first onnxruntime-gpu wheel among 1.16.3, 1.17.1, 1.18.1, 1.19.2, 1.20.0,
// 1.21.1 and 1.22.0 whose provider library holds the key's string (its option parser's literal).

/// CUDA provider options that ORT 1.16 does not know, with the first minor version (1.x) that
/// reads them (also for `provider("CUDA", ..)`).
pub(crate) const CUDA_OPTION_SINCE: &[(&str, u32)] =
    &[("prefer_nhwc", 17), ("use_ep_level_unified_stream", 17), ("use_tf32", 18), ("sdpa_kernel", 19)];

/// TensorRT provider options the table allows that ORT 1.16 does not know, as for CUDA.
pub(crate) const TENSORRT_OPTION_SINCE: &[(&str, u32)] = &[
    ("trt_dump_ep_context_model", 17),
    ("trt_ep_context_file_path", 17),
    ("trt_ep_context_embed_mode", 17),
    ("trt_timing_cache_path", 17),
    ("trt_engine_hw_compatible", 18),
    ("trt_op_types_to_exclude", 21),
];

/// One provider request as the append path reads it, whichever way it was asked for.
pub(crate) struct Request<'a> {
    /// The name as asked (`"CUDA"`, `"XnnpackExecutionProvider"`, …), for errors.
    pub(crate) name: &'a str,
    /// Option keys and values, as ORT's strings.
    pub(crate) options: Vec<(&'a str, &'a str)>,
    /// Whether keys go through the provider's allow-list (all but `provider_unchecked`).
    pub(crate) checked: bool,
    /// A CUDA stream (`cudaStream_t`) the caller vouched for (`CudaOptions::user_compute_stream`).
    pub(crate) user_stream: Option<usize>,
    /// How many options at the end of `options` the caller vouched for through an `unsafe`
    /// setter (`CudaOptions::enable_cuda_graph`): they skip the allow-list, the others do not.
    pub(crate) vouched: usize,
}

impl Request<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        // The last setting of a key wins, as in ORT's parsers.
        self.options.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| *v)
    }
}

/// Appends `request` to the session options, diagnosing a refusal.
pub(crate) fn append(
    api: &Api,
    env: &Arc<Environment>,
    session_options: *mut OrtSessionOptions,
    request: &Request<'_>,
) -> Result<()> {
    let (short, _) = named::resolve(request.name);
    if request.checked {
        check_keys(&short, request)?;
    }
    let (v2, full, short): (V2, _, _) = match short.as_str() {
        "CUDA" => (append_cuda, "CUDAExecutionProvider", "CUDA"),
        "TensorRT" => (append_tensorrt, "TensorrtExecutionProvider", "TensorRT"),
        _ => return append_by_name(api, env, session_options, &short, request),
    };
    check_versions(api, short, request)?;
    check_device(short, request)?;
    super::require(api, full, short)?;
    v2(api, env, session_options, request)
}

/// The append of one provider through its V2 option object.
type V2 = fn(&Api, &Arc<Environment>, *mut OrtSessionOptions, &Request<'_>) -> Result<()>;

/// Refuses every key the provider's table does not list as a plain value.
fn check_keys(short: &str, request: &Request<'_>) -> Result<()> {
    let listed = &request.options[..request.options.len().saturating_sub(request.vouched)];
    let checked = crate::allowed_keys::provider(short).check_all(listed.iter().map(|(k, _)| *k));
    // A provider the crate does not name has no table of its own: say which one it was.
    checked.map_err(|e| match e {
        Error::KeyRefused { scope, key, class, why, allowed } if scope == crate::allowed_keys::OTHER.scope => {
            Error::KeyRefused { scope: format!("{} {scope}", request.name), key, class, why, allowed }
        }
        other => other,
    })
}

/// Refuses options the loaded runtime is too old to know, naming the first.
fn check_versions(api: &Api, short: &str, request: &Request<'_>) -> Result<()> {
    let since: &[(&str, u32)] = match short {
        "CUDA" => CUDA_OPTION_SINCE,
        "TensorRT" => TENSORRT_OPTION_SINCE,
        _ => &[],
    };
    for (key, _) in &request.options {
        if let Some(&(_, level)) = since.iter().find(|(k, _)| k == key) {
            if api.api_level < level {
                return Err(Error::Unsupported {
                    feature: format!("{short} provider option `{key}`"),
                    since: format!("1.{level}"),
                    found: api.version.clone(),
                });
            }
        }
    }
    Ok(())
}

/// A device id that does not exist is an error here, not a crash or a silent device 0 later.
fn check_device(short: &str, request: &Request<'_>) -> Result<()> {
    let Some(text) = request.get("device_id") else { return Ok(()) };
    let id: i32 = text.trim().parse().map_err(|_| Error::BadSetting {
        setting: format!("{short} device_id"),
        value: text.to_owned(),
        allowed: "a device number (0, 1, ...)".into(),
    })?;
    // Without libcudart ORT's own load will fail with a better diagnosis; do not hide it.
    #[cfg(feature = "cuda")]
    if let Ok(count) = crate::cuda_runtime::device_count() {
        if id < 0 || id >= count {
            return Err(Error::NoSuchDevice { device: short.to_owned(), id, count: Some(count) });
        }
    }
    // Without the cuda feature there is no CUDA runtime binding to count devices with.
    #[cfg(not(feature = "cuda"))]
    let _ = id;
    Ok(())
}

fn append_cuda(
    api: &Api,
    env: &Arc<Environment>,
    session_options: *mut OrtSessionOptions,
    request: &Request<'_>,
) -> Result<()> {
    let load_failure = |e| diagnose::provider_load_failure(api, env, "CUDA", e);
    let mut raw = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid.
    let created = unsafe { ort!(api, CreateCUDAProviderOptions(&mut raw)) };
    created.map_err(load_failure)?;
    // SAFETY: on success we own the options.
    let cuda = unsafe { Owned::from_raw(raw) }?;
    // Updating loads the provider library (ORT 1.30), so this is where a missing CUDA shows.
    options::apply(api, env, "CUDA", &request.options, |keys, values, len| {
        // SAFETY: both arrays hold `len` NUL-terminated strings alive for the call; ORT copies them.
        unsafe { ort!(api, UpdateCUDAProviderOptions(cuda.as_ptr(), keys, values, len)) }
    })?;
    if let Some(stream) = request.user_stream {
        let ort_api = api.since(16, "UpdateCUDAProviderOptionsWithValue")?;
        let update = ort_api
            .UpdateCUDAProviderOptionsWithValue
            .ok_or_else(|| Error::missing("UpdateCUDAProviderOptionsWithValue"))?;
        let key = c"user_compute_stream";
        // SAFETY: the caller of `user_compute_stream` promised a valid stream; ORT stores the pointer.
        unsafe {
            crate::status::check(
                "UpdateCUDAProviderOptionsWithValue",
                update(cuda.as_ptr(), key.as_ptr(), stream as *mut std::ffi::c_void),
            )
        }?;
    }
    // SAFETY: both option objects are live; ORT copies the CUDA options.
    let appended = unsafe { ort!(api, SessionOptionsAppendExecutionProvider_CUDA_V2(session_options, cuda.as_ptr())) };
    appended.map_err(load_failure)
}

fn append_tensorrt(
    api: &Api,
    env: &Arc<Environment>,
    session_options: *mut OrtSessionOptions,
    request: &Request<'_>,
) -> Result<()> {
    let load_failure = |e| diagnose::provider_load_failure(api, env, "TensorRT", e);
    let mut raw = std::ptr::null_mut();
    // SAFETY: the out-pointer is valid.
    let created = unsafe { ort!(api, CreateTensorRTProviderOptions(&mut raw)) };
    created.map_err(load_failure)?;
    // SAFETY: on success we own the options.
    let trt = unsafe { Owned::from_raw(raw) }?;
    options::apply(api, env, "TensorRT", &request.options, |keys, values, len| {
        // SAFETY: both arrays hold `len` NUL-terminated strings alive for the call; ORT copies them.
        unsafe { ort!(api, UpdateTensorRTProviderOptions(trt.as_ptr(), keys, values, len)) }
    })?;
    // SAFETY: both option objects are live; ORT copies the TensorRT options.
    let appended =
        unsafe { ort!(api, SessionOptionsAppendExecutionProvider_TensorRT_V2(session_options, trt.as_ptr())) };
    appended.map_err(load_failure)
}

/// Every other provider: ORT's generic append, which takes the strings directly.
fn append_by_name(
    api: &Api,
    env: &Arc<Environment>,
    session_options: *mut OrtSessionOptions,
    short: &str,
    request: &Request<'_>,
) -> Result<()> {
    let name = CString::new(short).map_err(|_| Error::nul("provider name", request.name))?;
    options::with_c_arrays(&request.options, |keys, values, len| {
        // SAFETY: `session_options` is the live session options being built; the name and both
        // arrays of `len` NUL-terminated strings outlive the call (ORT copies them).
        let appended = unsafe {
            ort!(api, SessionOptionsAppendExecutionProvider(session_options, name.as_ptr(), keys, values, len))
        };
        appended.map_err(|e| named::refusal(api, env, request.name, e))
    })
}
