//! The provider a model runs on, as its config names it: `cpu`, `cuda` (strict, every node on the
//! GPU), `tensorrt` (with an engine cache per model version), any other provider ONNX Runtime
//! offers by name (`openvino`, `xnnpack`, …, options through onnxrt's allow-lists), or a plugin
//! provider's device (ORT ≥ 1.22's device API). What the server and its worker processes load.

mod choice;
mod plugin;
mod tensorrt;

use std::path::Path;

use onnxrt::Session;
use serde::{Deserialize, Serialize};

use crate::shown::{shown, shown_message};

pub use choice::{choose, ProviderChoice};
pub use tensorrt::{default_engine_cache_root, TensorRtSetup};

/// How a model's sessions get their provider: decided from its config (checked there, keys
/// included), carried to worker processes as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProviderSetup {
    /// ONNX Runtime's CPU provider.
    Cpu,
    /// CUDA on `device`, strict (every node on the GPU).
    Cuda {
        /// The CUDA device.
        device: i32,
        /// Option keys and values (onnxrt's CUDA allow-list; `device_id` comes from `device`).
        #[serde(default)]
        options: Vec<(String, String)>,
    },
    /// TensorRT, then CUDA for what TensorRT does not take.
    TensorRt(TensorRtSetup),
    /// A provider by the name ORT gives it, with options its allow-list lets through.
    Named {
        /// The name as the config wrote it (onnxrt resolves it, any case).
        name: String,
        /// Option keys and values.
        options: Vec<(String, String)>,
    },
    /// A plugin provider library's device.
    Plugin {
        /// The library: a pinned bundle's name (vendor-manifest.toml) or a path.
        library: String,
        /// The provider's name as the config wrote it (`webgpu`, `WebGpuExecutionProvider`).
        provider: String,
        /// Which of the provider's devices (in ORT's order).
        device: usize,
        /// Option keys and values.
        options: Vec<(String, String)>,
    },
}

impl ProviderSetup {
    /// The options the provider is given, as the start log and the model's configuration show
    /// them (TensorRT's engine and timing caches included).
    pub fn options(&self) -> Vec<(String, String)> {
        match self {
            ProviderSetup::Cpu => Vec::new(),
            ProviderSetup::Cuda { device, options } => {
                let mut shown = vec![("device_id".into(), device.to_string())];
                shown.extend(options.iter().cloned());
                shown
            }
            ProviderSetup::TensorRt(trt) => {
                let (plain, vouched) = trt.session_options();
                plain.into_iter().chain(vouched).collect()
            }
            ProviderSetup::Named { options, .. } => options.clone(),
            ProviderSetup::Plugin { library, device, options, .. } => {
                let mut shown = vec![("library".into(), library.clone()), ("device".into(), device.to_string())];
                shown.extend(options.iter().cloned());
                shown
            }
        }
    }
}

impl ProviderSetup {
    /// The lock every run of a session on this setup holds, where runs of different sessions on
    /// one device must not overlap: a plugin's (once a session was made on it).
    #[cfg_attr(not(feature = "server"), allow(dead_code))] // the repository's runs hold it
    pub(crate) fn run_turn(&self) -> Option<std::sync::Arc<std::sync::Mutex<()>>> {
        match self {
            ProviderSetup::Plugin { library, .. } => plugin::run_turn(library),
            _ => None,
        }
    }
}

/// Why a model's session could not get its provider: onnxrt's typed error (the provider is not in
/// the runtime, its library cannot load, the runtime is too old for plugins, no device…), with
/// what the server set up for it. Shown escaped and cut (`shown`): onnxrt's text may
/// echo the config's strings.
#[derive(Debug, thiserror::Error)]
#[error("provider `{}`{}: {} ({})", shown(.provider), shown_message(.settings), shown_message(&.source.to_string()), .source.variant())]
pub struct ProviderLoadError {
    /// The provider as the config named it.
    pub provider: String,
    /// What was set up, e.g. ` (engine cache /var/cache/…/m/1, timing cache …)`, or empty.
    pub settings: String,
    /// onnxrt's error.
    pub source: onnxrt::Error,
}

/// A session of the model at `path` (or `bytes`) on `setup` with `threads` intra-op threads:
/// what a worker process loads too.
pub(crate) fn session_for(
    path: &Path,
    bytes: Option<&[u8]>,
    setup: &ProviderSetup,
    threads: Option<usize>,
) -> Result<Session, Box<dyn std::error::Error>> {
    let mut builder = Session::builder();
    if let Some(threads) = threads {
        builder = builder.intra_op_threads(threads);
    }
    let (provider, settings) = match setup {
        ProviderSetup::Cpu => (None, String::new()),
        ProviderSetup::Cuda { device, options } => {
            builder = with_cuda(builder, *device, options)?;
            (Some("cuda"), String::new())
        }
        ProviderSetup::TensorRt(trt) => {
            #[cfg(feature = "tensorrt")]
            let applied = trt.apply(builder).map_err(|source| ProviderLoadError {
                provider: "tensorrt".into(),
                settings: trt.describe(),
                source,
            });
            #[cfg(not(feature = "tensorrt"))]
            let applied = trt.apply(builder);
            builder = applied?;
            (Some("tensorrt"), trt.describe())
        }
        ProviderSetup::Named { name, options } => {
            builder = builder.provider(name.as_str(), options.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            (Some(name.as_str()), String::new())
        }
        ProviderSetup::Plugin { library, provider, device, options } => {
            let describe = format!(" (plugin {}, device {device})", shown(library));
            builder = plugin::apply(builder, library, provider, *device, options).map_err(|source| {
                ProviderLoadError { provider: provider.clone(), settings: describe.clone(), source }
            })?;
            (Some(provider.as_str()), describe)
        }
    };
    // Building a session on a plugin's device takes the plugin's turn, as runs do: the WebGPU
    // plugin 0.4.0 failed runs of another model ("Command encoding already finished"), answered
    // wrong and crashed when a session was made on its device during them.
    let turn = setup.run_turn();
    let held = turn.as_ref().map(|turn| turn.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    let built = match bytes {
        Some(bytes) => builder.commit_from_memory(bytes),
        None => builder.commit_from_file(path),
    };
    drop(held);
    match (built, provider) {
        (Ok(session), _) => Ok(session),
        (Err(source), Some(provider)) if is_provider_error(&source) => {
            Err(Box::new(ProviderLoadError { provider: provider.to_owned(), settings, source }))
        }
        (Err(error), _) => Err(Box::new(error)),
    }
}

/// onnxrt's errors that are about the provider rather than the model.
fn is_provider_error(error: &onnxrt::Error) -> bool {
    matches!(
        error.variant(),
        "ProviderNotAvailable"
            | "ProviderLoad"
            | "NeedsNewerRuntime"
            | "NoGpuDevice"
            | "PluginNotPinned"
            | "KeyRefused"
            | "BadSetting"
            | "Unsupported"
    )
}

#[cfg(feature = "cuda")]
fn with_cuda(
    builder: onnxrt::SessionBuilder,
    device: i32,
    options: &[(String, String)],
) -> Result<onnxrt::SessionBuilder, Box<dyn std::error::Error>> {
    let mut cuda = onnxrt::providers::cuda::CudaOptions::new().device_id(device);
    for (key, value) in options {
        // Checked against the allow-list when the config was read; its entry gives the key's
        // lasting name (a key it lacks is passed on, for onnxrt to refuse).
        let key = onnxrt::allowed_keys::CUDA.get(key).map_or("", |known| known.name);
        cuda = cuda.raw(key, value);
    }
    Ok(builder.cuda(cuda).strict_gpu(true))
}

#[cfg(not(feature = "cuda"))]
fn with_cuda(
    _: onnxrt::SessionBuilder,
    _: i32,
    _: &[(String, String)],
) -> Result<onnxrt::SessionBuilder, Box<dyn std::error::Error>> {
    Err("provider `cuda` needs the `cuda` feature: cargo build --release -p onnxrt-serve --features cuda".into())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{session_for, ProviderLoadError, ProviderSetup, TensorRtSetup};

    fn mlp() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/models/mlp.onnx")
    }

    /// On a runtime without the provider (this machine's CPU builds): onnxrt's typed error, with
    /// what the server set up.
    #[test]
    fn a_provider_the_runtime_lacks_is_a_typed_load_error() {
        let have = onnxrt::providers::available().expect("providers");
        if have.iter().any(|p| p == "TensorrtExecutionProvider" || p == "OpenVINOExecutionProvider") {
            return; // a GPU or OpenVINO build: these load or fail for other reasons
        }
        let root = tempfile::tempdir().expect("temp dir");
        let mut trt = TensorRtSetup {
            device: 0,
            options: Vec::new(),
            engine_cache: true,
            cache_root: root.path().to_owned(),
            folder: None,
        };
        trt.place("mlp", "2", true).expect("cache folder");
        let named =
            ProviderSetup::Named { name: "openvino".into(), options: vec![("device_type".into(), "CPU".into())] };
        for (setup, provider) in [(ProviderSetup::TensorRt(trt), "tensorrt"), (named, "openvino")] {
            let error = session_for(&mlp(), None, &setup, None).expect_err("no such provider here");
            let text = error.to_string();
            if provider == "tensorrt" {
                let folder = root.path().join("mlp/2");
                assert!(text.contains(&format!("engine cache and timing cache in {}", folder.display())), "{text}");
                if !cfg!(feature = "tensorrt") {
                    assert!(text.contains("built without the `tensorrt` feature"), "{text}");
                    continue;
                }
            }
            let error = error.downcast::<ProviderLoadError>().unwrap_or_else(|e| panic!("not typed: {e}"));
            assert_eq!(
                (error.provider.as_str(), error.source.variant()),
                (provider, "ProviderNotAvailable"),
                "{error}"
            );
        }
        assert!(session_for(&mlp(), None, &ProviderSetup::Cpu, None).is_ok());
    }

    /// Worker processes get the setup as JSON: it comes back whole.
    #[test]
    fn a_setup_reaches_a_worker_process_unchanged() {
        let trt = TensorRtSetup {
            device: 2,
            options: vec![("trt_fp16_enable".into(), "1".into())],
            engine_cache: true,
            cache_root: "/srv/engines".into(),
            folder: Some("/srv/engines/m/4".into()),
        };
        let plugin = ProviderSetup::Plugin {
            library: "webgpu-plugin-0.4.0-registry".into(),
            provider: "webgpu".into(),
            device: 0,
            options: Vec::new(),
        };
        for setup in [
            ProviderSetup::Cpu,
            ProviderSetup::Cuda { device: 1, options: Vec::new() },
            ProviderSetup::TensorRt(trt),
            plugin,
        ] {
            let text = serde_json::to_string(&setup).expect("serializes");
            assert_eq!(serde_json::from_str::<ProviderSetup>(&text).expect("parses"), setup, "{text}");
        }
    }

    /// On ORT 1.16 a plugin is refused before any library is looked for.
    #[test]
    fn a_plugin_on_a_runtime_without_the_device_api_needs_a_newer_one() {
        if onnxrt::runtime_info().expect("runtime").api_level >= 22 {
            return;
        }
        let plugin = ProviderSetup::Plugin {
            library: "webgpu-plugin-0.4.0-registry".into(),
            provider: "webgpu".into(),
            device: 0,
            options: Vec::new(),
        };
        let error = session_for(&mlp(), None, &plugin, None).expect_err("1.16 has no plugins");
        let error = error.downcast::<ProviderLoadError>().unwrap_or_else(|e| panic!("not typed: {e}"));
        assert!(matches!(error.source, onnxrt::Error::NeedsNewerRuntime { needs: 22, .. }), "{error}");
        // The library's path as the config wrote it: escaped in the message (no forged line).
        let forged = ProviderSetup::Plugin {
            library: "/lib\nERROR forged.so".into(),
            provider: "webgpu".into(),
            device: 0,
            options: Vec::new(),
        };
        let text = session_for(&mlp(), None, &forged, None).expect_err("1.16 has no plugins").to_string();
        assert!(text.contains(r"(plugin /lib\nERROR forged.so, device 0)") && !text.contains('\n'), "{text}");
    }
}
