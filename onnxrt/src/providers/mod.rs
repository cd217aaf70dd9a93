//! Execution providers: which ones the loaded runtime has, and appending them to a session.
//!
//! Asking for a provider is never a silent CPU run: a provider missing from the runtime, or one
//! whose library fails to load, is a typed error ([`Error::ProviderNotAvailable`],
//! [`Error::ProviderLoad`]) that says why and what to do. With
//! [`SessionBuilder::strict_gpu`](crate::SessionBuilder::strict_gpu), nodes the GPU provider
//! cannot run make the session fail instead of falling back to the CPU.

mod append;
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
pub mod cuda;
pub mod diagnose;
pub mod named;
mod options;
#[cfg(feature = "tensorrt")]
mod private_folder;
#[cfg(feature = "tensorrt")]
#[cfg_attr(docsrs, doc(cfg(feature = "tensorrt")))]
pub mod tensorrt;

use std::sync::Arc;

use onnxrt_sys::OrtSessionOptions;

use crate::api::{api, Api};
use crate::env::Environment;
use crate::error::{Error, Names, Result};
use crate::status::ort;

/// Names of the providers compiled into the loaded runtime (what it has, not what can load).
///
/// Corresponds to `OrtApi::GetAvailableProviders`.
#[doc(alias = "GetAvailableProviders")]
pub fn available() -> Result<Vec<String>> {
    let api = api()?;
    let mut list = std::ptr::null_mut();
    let mut count = 0i32;
    // SAFETY: ORT allocates an array of `count` strings, released below with ReleaseAvailableProviders.
    unsafe { ort!(api, GetAvailableProviders(&mut list, &mut count)) }?;
    let mut names = Vec::new();
    for i in 0..usize::try_from(count).unwrap_or(0) {
        // SAFETY: i < count; each entry is a NUL-terminated string owned by the array.
        let name = unsafe { std::ffi::CStr::from_ptr(*list.add(i)) };
        names.push(name.to_string_lossy().into_owned());
    }
    // SAFETY: releases the array returned above, once.
    unsafe { ort!(api, ReleaseAvailableProviders(list, count)) }?;
    Ok(names)
}

/// A provider requested on a [`SessionBuilder`](crate::SessionBuilder).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ProviderRequest {
    /// CUDA, with its options.
    #[cfg(feature = "cuda")]
    Cuda(cuda::CudaOptions),
    /// TensorRT, with its options.
    #[cfg(feature = "tensorrt")]
    TensorRt(tensorrt::TensorRtOptions),
    /// Any provider by name, with string options ([`SessionBuilder::provider`](crate::SessionBuilder::provider)).
    Named(named::NamedProvider),
}

/// What appending providers produced, kept by the session.
pub(crate) struct Prepared {
    /// Providers registered, in priority order, `CPU` last (those appended by device included;
    /// a device selector's or policy's choice is added once the session exists).
    pub(crate) registered: Vec<&'static str>,
    /// Whether runs must be serialized (TensorRT on ORT < 1.17).
    pub(crate) serialize_runs: bool,
    /// Whether a GPU provider was requested strictly.
    pub(crate) strict: bool,
    /// The device selector the options point to, moved into the session's `SessionHeld`.
    pub(crate) device_selector: Option<crate::ep_device::SelectorHold>,
    /// Whether ORT chooses the providers by a selection policy (read back once the session exists).
    pub(crate) by_policy: bool,
}

impl Prepared {
    /// Adds what the runtime knows to a session-creation failure.
    pub(crate) fn explain(&self, error: Error, _env: &Arc<Environment>) -> Error {
        match error {
            Error::Ort { function, code, message } if self.strict && crate::ort_messages::CPU_FALLBACK_DISABLED.matches(&message) => Error::Ort {
                function,
                code,
                message: format!(
                    "{message}\nStrict GPU: some nodes of this model have no kernel in {:?}; run without strict_gpu to let them run on the CPU, or see onnxrt::profiling::placement for which nodes need the CPU",
                    self.registered
                ),
            },
            other => other,
        }
    }
}

/// Appends every requested provider, in order, to the session options: typed or by name, each
/// goes through the one append path ([`append::append`]).
pub(crate) fn append_all(
    api: &Api,
    env: &Arc<Environment>,
    options: *mut OrtSessionOptions,
    requests: &[ProviderRequest],
    strict: bool,
    devices: &crate::ep_device::DeviceRequests,
) -> Result<Prepared> {
    let requests: Vec<append::Request<'_>> = requests.iter().map(ProviderRequest::request).collect();
    let registered_of = |request: &append::Request<'_>| named::registered_name(request.name);
    if strict {
        for request in &requests {
            if let Some((short, provider)) = gpu_library_of(registered_of(request)) {
                preflight(api, short, provider)?;
            }
        }
    }
    let mut registered = Vec::new();
    let mut serialize_runs = false;
    for request in &requests {
        append::append(api, env, options, request)?;
        let name = registered_of(request);
        registered.push(name);
        serialize_runs |= name == "TensorrtExecutionProvider" && tensorrt_runs_need_serializing(api.api_level);
    }
    // Providers by device after the classic ones: the order ORT tries them in.
    let applied = crate::ep_device::apply(api, env, options, devices)?;
    registered.extend(applied.appended.iter().map(|name| named::interned(name)));
    // Strict applies to the devices' providers too, as to a provider asked for by name.
    let requested = !requests.is_empty() || applied.appended.iter().any(|p| p != "CPUExecutionProvider");
    if strict && !requested {
        return Err(Error::StrictGpuWithoutProvider);
    }
    if !registered.contains(&"CPUExecutionProvider") {
        registered.push("CPUExecutionProvider");
    }
    Ok(Prepared { registered, serialize_runs, strict, device_selector: applied.selector, by_policy: applied.by_policy })
}

impl ProviderRequest {
    /// The request as the append path reads it.
    fn request(&self) -> append::Request<'_> {
        match self {
            #[cfg(feature = "cuda")]
            ProviderRequest::Cuda(cuda) => cuda.request(),
            #[cfg(feature = "tensorrt")]
            ProviderRequest::TensorRt(trt) => trt.request(),
            ProviderRequest::Named(named) => named.request(),
        }
    }
}

/// The provider library's short name and the provider's name, for the GPU providers whose
/// libraries a strict session checks before loading (`registered`: the name the session reports).
fn gpu_library_of(registered: &str) -> Option<(&'static str, &'static str)> {
    match registered {
        "CUDAExecutionProvider" => Some(("cuda", "CUDA")),
        "TensorrtExecutionProvider" => Some(("tensorrt", "TensorRT")),
        _ => None,
    }
}

/// A strict GPU session checks the provider library and every library it loads before ORT loads
/// it (once per process for a library that passed): a truncated CUDA library would otherwise kill
/// the process with SIGBUS inside the loader, and a missing cuDNN sub-library would show only at
/// the first convolution. First, the CUDA provider library's embedded release against the
/// runtime's: ORT loads one of another release without checking, and it crashes or misbehaves
/// (only the CUDA provider library embeds its release; the TensorRT one has none to compare). A
/// provider library that is not there at all is left to ORT's append, whose failure [`diagnose`]
/// explains.
fn preflight(api: &Api, short: &str, provider: &str) -> Result<()> {
    let library = diagnose::provider_library_path(&api.library, short);
    if !library.exists() {
        return Ok(());
    }
    if short == "cuda" {
        onnxrt_preflight::release::check_once(&library, &api.version)
            .map_err(|other| diagnose::other_release_failure(provider, &api.library, other))?;
    }
    onnxrt_preflight::check_closure_once(&library)
        .map_err(|problem| diagnose::preflight_failure(provider, &library, problem))
}

/// ORT made concurrent `Run` safe with the TensorRT provider in 1.17 (C API 17); before that a
/// session using it must not run on two threads at once.
pub(crate) fn tensorrt_runs_need_serializing(api_level: u32) -> bool {
    api_level < 17
}

/// Checks that `name` is compiled into the runtime.
pub(crate) fn require(api: &Api, name: &'static str, short: &'static str) -> Result<()> {
    let have = available()?;
    if have.iter().any(|p| p == name) {
        return Ok(());
    }
    let fix = match short {
        "TensorRT" => {
            "use a GPU build of ONNX Runtime that includes TensorRT (e.g. ONNXRT_DIST=gpu-1.16.2, the default)"
        }
        _ => "use a GPU build of ONNX Runtime (e.g. ONNXRT_DIST=gpu-1.16.2, the default, or gpu-cuda13-1.30.0)",
    };
    Err(Error::ProviderNotAvailable {
        provider: short.into(),
        available: Names(have),
        runtime: format!("{} at {}", api.version, api.library.display()),
        fix: fix.into(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn tensorrt_sessions_serialize_runs_only_before_ort_1_17() {
        assert!(super::tensorrt_runs_need_serializing(16));
        assert!(!super::tensorrt_runs_need_serializing(17));
        assert!(!super::tensorrt_runs_need_serializing(30));
    }
}
