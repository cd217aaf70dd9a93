//! Any execution provider by the name ORT gives it, with string options: OpenVINO, XNNPACK, QNN,
//! SNPE, Azure, and on newer runtimes more (ORT's `SessionOptionsAppendExecutionProvider`).
//!
//! The typed CUDA and TensorRT options stay the better way to ask for those two; this is for the
//! providers onnxrt has no typed options for. Option keys pass only when the provider's table in
//! [`crate::allowed_keys`] lists them as plain values. A refusal is diagnosed as for CUDA: a provider the
//! runtime was not built with is [`Error::ProviderNotAvailable`], one whose library cannot load is
//! [`Error::ProviderLoad`] naming the library (and the missing dependency when the loader says).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use super::append::Request;
use crate::api::Api;
use crate::env::Environment;
use crate::error::{Error, Names};
use crate::ort_messages;

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
pub(crate) fn resolve(name: &str) -> (String, String) {
    match KNOWN.iter().find(|(short, full)| short.eq_ignore_ascii_case(name) || full.eq_ignore_ascii_case(name)) {
        Some((short, full)) => ((*short).to_owned(), (*full).to_owned()),
        None => (name.to_owned(), format!("{name}ExecutionProvider")),
    }
}

/// The name the session reports for a provider asked for as `name`, as a `&'static str` like the
/// typed providers' names: each distinct name is stored once per process.
pub(crate) fn registered_name(name: &str) -> &'static str {
    let (_, full) = resolve(name);
    interned(&full)
}

/// `full` (a provider's registered name), stored once for the program's life.
pub(crate) fn interned(full: &str) -> &'static str {
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut names = NAMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = names.get(full) {
        return known;
    }
    // Bounded by the distinct provider names a program asks for or ORT lists.
    let leaked: &'static str = Box::leak(full.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

impl NamedProvider {
    /// The request as the append path reads it.
    pub(crate) fn request(&self) -> Request<'_> {
        Request {
            name: &self.name,
            options: self.options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
            checked: !self.unchecked,
            user_stream: None,
            vouched: 0,
        }
    }
}

/// Turns ORT's refusal of a named provider into the most specific error.
pub(crate) fn refusal(api: &Api, env: &Arc<Environment>, name: &str, error: Error) -> Error {
    let message = error.to_string();
    // ORT's words for a name it does not know, and for a provider left out of this build.
    let unknown = ort_messages::UNKNOWN_PROVIDER.matches(&message);
    let not_built = ort_messages::PROVIDER_NOT_IN_BUILD.matches(&message);
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
    if ort_messages::LIBRARY_NOT_LOADED.matches(&message) {
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
