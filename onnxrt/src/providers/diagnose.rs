//! Why a provider failed to load, found out the way a person would: is its library beside the
//! runtime, and if so, which of its dependencies the dynamic loader cannot find.
//!
//! ORT itself reports only "Failed to load shared library" (the real cause goes to its log), so
//! the provider library is loaded here with libloading to get the loader's own message, and the
//! environment's recent log is searched too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::api::Api;
use crate::env::Environment;
use crate::error::Error;
use crate::ort_messages;

/// The file name of a provider's library (`cuda` → `libonnxruntime_providers_cuda.so`).
pub fn provider_library_name(short: &str) -> String {
    format!("libonnxruntime_providers_{}.so", short.to_ascii_lowercase())
}

/// Where ORT looks for provider libraries: beside the runtime library.
pub fn provider_library_path(runtime: &Path, short: &str) -> PathBuf {
    runtime.parent().unwrap_or(Path::new(".")).join(provider_library_name(short))
}

/// The library named in a loader message such as
/// `libcublasLt.so.11: cannot open shared object file: No such file or directory`.
pub fn missing_library_in(message: &str) -> Option<String> {
    let marker = ": cannot open shared object file";
    let end = message.find(marker)?;
    let start =
        message[..end].rfind(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '[').map_or(0, |i| i + 1);
    let name = message[start..end].trim_matches(|c| c == ':' || c == ' ');
    (!name.is_empty()).then(|| name.to_owned())
}

/// The fix for a missing dependency, by library family.
pub fn fix_for(missing: &str, provider: &str) -> String {
    let family = if missing.starts_with("libcudnn") {
        "cuDNN"
    } else if missing.starts_with("libnvinfer") || missing.starts_with("libnvonnxparser") {
        "TensorRT"
    } else if missing.starts_with("libcuda.so") {
        "the NVIDIA driver"
    } else if missing.starts_with("libcu") || missing.starts_with("libnv") {
        "the CUDA toolkit libraries"
    } else if missing.starts_with("libonnxruntime_providers_shared") {
        "ONNX Runtime's provider bridge (libonnxruntime_providers_shared.so, shipped beside libonnxruntime.so)"
    } else {
        "the package that provides it"
    };
    format!(
        "install {family} so that {missing} can be found (check with `ldconfig -p | grep {}`), or add its folder to LD_LIBRARY_PATH; \
         the versions must match the runtime's build (see vendor-manifest.toml, or run `onnxrt doctor`). The {provider} provider cannot run without it",
        missing.split(".so").next().unwrap_or(missing)
    )
}

/// A strict session's check of `library` (the `provider`'s library) found `problem`.
pub(crate) fn preflight_failure(provider: &str, library: &Path, problem: onnxrt_preflight::Problem) -> Error {
    use onnxrt_preflight::Problem;
    let cause = format!("checked before loading it: {problem}");
    match problem {
        Problem::Missing { name, .. } => Error::ProviderLoad {
            provider: provider.into(),
            library: library.to_path_buf(),
            fix: fix_for(&name, provider),
            missing: Some(name),
            cause,
        },
        Problem::Damaged { path, .. } => Error::ProviderLoad {
            provider: provider.into(),
            library: library.to_path_buf(),
            missing: None,
            fix: format!(
                "replace {} with a complete copy of the same release, or take the folder that put it first out of the search order: the loader would map it and the process would die (SIGBUS) instead of failing. `onnxrt doctor` lists every library the {provider} provider resolves",
                path.display()
            ),
            cause,
        },
    }
}

/// A strict session found that the `provider`'s library comes from another ORT release than the
/// runtime at `runtime_library`.
pub(crate) fn other_release_failure(
    provider: &str,
    runtime_library: &Path,
    other: onnxrt_preflight::release::OtherRelease,
) -> Error {
    let name = other.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    Error::ProviderLoad {
        provider: provider.into(),
        library: other.path.clone(),
        missing: None,
        cause: format!(
            "checked before loading it: {} was built for ONNX Runtime {}, but the runtime is {} ({}); ONNX Runtime does not check this itself, and a provider library of another release can crash the process or misbehave",
            other.path.display(),
            other.release,
            other.runtime,
            runtime_library.display()
        ),
        fix: format!(
            "copy {name} and libonnxruntime_providers_shared.so from the ONNX Runtime {runtime} distribution, the one libonnxruntime.so comes from, into {} (`onnxrt bundle BINARY DIR` copies the runtime with its own provider libraries; `onnxrt fetch` prints the distribution's folder), or load the {release} runtime instead",
            runtime_library.parent().unwrap_or(Path::new(".")).display(),
            runtime = other.runtime,
            release = other.release,
        ),
    }
}

/// Whether ORT's error is its report of a provider library that did not load (it names only
/// "Failed to load library …"; the real cause is in its log or found by loading it ourselves).
pub(crate) fn is_load_failure(error: &Error) -> bool {
    ort_messages::LIBRARY_NOT_LOADED.matches(&error.to_string())
}

/// Turns a failed append of provider `short` into the most specific error we can establish.
pub(crate) fn provider_load_failure(api: &Api, env: &Arc<Environment>, short: &str, error: Error) -> Error {
    let original = error.to_string();
    if ort_messages::PROVIDER_NOT_IN_BUILD.matches(&original) {
        let have = super::available().unwrap_or_default();
        return Error::ProviderNotAvailable {
            provider: short.into(),
            available: crate::error::Names(have),
            runtime: format!("{} at {}", api.version, api.library.display()),
            fix: "this ONNX Runtime is a CPU-only build; use a GPU build (ONNXRT_DIST=gpu-1.16.2, the default)".into(),
        };
    }
    let library = provider_library_path(&api.library, short);
    let shared = provider_library_path(&api.library, "shared");
    for (lib, what) in [(&shared, "provider bridge"), (&library, "provider library")] {
        if !lib.exists() {
            return Error::ProviderLoad {
                provider: short.into(),
                library: lib.clone(),
                missing: lib.file_name().map(|f| f.to_string_lossy().into_owned()),
                cause: format!("the {what} {} is not beside {}", lib.display(), api.library.display()),
                fix: format!(
                    "ONNX Runtime loads provider libraries from the folder of libonnxruntime.so: copy {} there (it ships in the GPU archive's lib/ folder; `onnxrt bundle` does this)",
                    lib.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default()
                ),
            };
        }
    }
    // Load the provider library ourselves: the loader names the dependency it could not find.
    // SAFETY: loading runs the provider library's initialisers, which ORT itself would run when
    // appending the provider; the handle is dropped (unloaded) right away if it does load.
    let loaded = unsafe { libloading::Library::new(&library) };
    let loader_message = match loaded {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    let logged =
        env.recent_log().into_iter().rev().map(|r| r.message).find(|m| ort_messages::LIBRARY_NOT_LOADED.matches(m));
    let cause_text = loader_message.clone().or(logged.clone()).unwrap_or_else(|| original.clone());
    let missing = loader_message
        .as_deref()
        .and_then(missing_library_in)
        .or_else(|| logged.as_deref().and_then(missing_library_in));
    match missing {
        Some(missing) => Error::ProviderLoad {
            provider: short.into(),
            library,
            fix: fix_for(&missing, short),
            missing: Some(missing),
            cause: cause_text,
        },
        None => Error::ProviderLoad {
            provider: short.into(),
            library,
            missing: None,
            cause: format!("{original} ({cause_text})"),
            fix: "run `onnxrt doctor` to check the driver, CUDA and cuDNN versions against the runtime's needs".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_library_is_read_from_loader_messages() {
        let m = "libonnxruntime_providers_cuda.so: libcublasLt.so.11: cannot open shared object file: No such file or directory";
        assert_eq!(missing_library_in(m).as_deref(), Some("libcublasLt.so.11"));
        let logged = "Failed to load library libonnxruntime_providers_cuda.so with error: libcudnn.so.8: cannot open shared object file: No such file or directory";
        assert_eq!(missing_library_in(logged).as_deref(), Some("libcudnn.so.8"));
        assert_eq!(missing_library_in("something else"), None);
        assert!(fix_for("libcudnn.so.8", "CUDA").contains("cuDNN"));
        assert!(fix_for("libnvinfer.so.8", "TensorRT").contains("TensorRT"));
    }
}
