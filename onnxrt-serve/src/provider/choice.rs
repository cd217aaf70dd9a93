//! From a model's config to its [`ProviderSetup`], checked when the config is read: option keys
//! against onnxrt's allow-list of the provider (a refusal names the keys that pass), the fields
//! each kind of provider takes.

use std::collections::BTreeMap;
use std::path::PathBuf;

use onnxrt::allowed_keys::{self, KeyTable};

use super::{ProviderSetup, TensorRtSetup};
use crate::shown::shown;

/// The longest provider name taken (ORT's longest are under 40 characters).
const NAME_MOST: usize = 100;

/// What a config says about its provider (its own fields over the command line's).
#[derive(Debug, Clone, Default)]
pub struct ProviderChoice<'c> {
    /// `cpu`, `cuda`, `tensorrt`, or any provider ORT names (`openvino`, `xnnpack`, `webgpu`, …).
    pub provider: &'c str,
    /// The device: CUDA's for `cuda` and `tensorrt`, the index among the plugin provider's devices.
    pub device: i32,
    /// `provider_options`, values as JSON scalars.
    pub options: Option<&'c BTreeMap<String, serde_json::Value>>,
    /// `plugin`: a pinned bundle's name or a library path.
    pub plugin: Option<&'c str>,
    /// Whether the model's own config set `device` (refused where the provider takes none).
    pub device_set: bool,
    /// `engine_cache` (TensorRT).
    pub engine_cache: Option<bool>,
    /// `serve --engine-cache-root`.
    pub engine_cache_root: Option<PathBuf>,
}

/// The checked setup for `choice`, or why the config is refused.
pub fn choose(choice: &ProviderChoice<'_>) -> Result<ProviderSetup, String> {
    let name = choice.provider;
    if name.trim().is_empty() {
        return Err(
            "`provider` is empty: name one (`cpu`, `cuda`, `tensorrt`, or a provider ONNX Runtime names)".into()
        );
    }
    // Past this, the name is safe in every log line and message (no newline to forge a line).
    if name.len() > NAME_MOST || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "`provider` `{}` is no provider's name: ONNX Runtime's are letters, digits and `_`, at most {NAME_MOST} \
             (`openvino`, `WebGpuExecutionProvider`)",
            shown(name)
        ));
    }
    let options = options_of(choice.options)?;
    let takes = |what: &str, given: bool| -> Result<(), String> {
        if given {
            return Err(format!("`{what}` is not taken by provider `{name}`"));
        }
        Ok(())
    };
    let lower = name.to_ascii_lowercase();
    let short = lower.strip_suffix("executionprovider").unwrap_or(&lower);
    if matches!(short, "cpu" | "cuda" | "tensorrt") && choice.plugin.is_some() {
        return Err(format!(
            "provider `{name}` is ONNX Runtime's own, not a plugin's: with `plugin`, name the plugin's provider \
             (`webgpu` for the WebGPU plugin)"
        ));
    }
    if short == "cpu" {
        takes("provider_options", !options.is_empty())?;
        takes("plugin", choice.plugin.is_some())?;
        takes("engine_cache", choice.engine_cache.is_some())?;
        takes("device", choice.device_set)?;
        return Ok(ProviderSetup::Cpu);
    }
    let (short, table) = table_of(name);
    if short == "CUDA" {
        if let Some((key, _)) = options.iter().find(|(k, _)| k == "device_id") {
            return Err(format!("provider `{name}`: option `{key}` is refused; give the GPU as `\"device\"`"));
        }
    }
    // Paths are the server's to give TensorRT: its caches go in a folder per model version.
    let path_key = options.iter().map(|(k, _)| k).find(|k| k.ends_with("_path") || k.ends_with("_dir"));
    if let (Some(key), "TensorRT") = (path_key, short) {
        return Err(format!(
            "provider `{name}`: `{}` is not taken from a model's config: the server keeps TensorRT's engine and \
             timing caches in a folder per model version under `serve --engine-cache-root` (\"engine_cache\": false \
             turns both off)",
            shown(key)
        ));
    }
    // In the config writer's terms: onnxrt's refusal points at unsafe Rust calls.
    if let Some(key) = options.iter().map(|(k, _)| k.as_str()).find(|k| table.check(k).is_err()) {
        let why =
            table.get(key).map_or("not on onnxrt's list of keys known to take a plain value", |k| k.class.label());
        let allowed: Vec<&str> = table.allowed().collect();
        let key = shown(key);
        if allowed.is_empty() {
            return Err(format!(
                "provider `{name}`: option `{key}` is refused ({why}); this provider takes no options"
            ));
        }
        return Err(format!(
            "provider `{name}`: option `{key}` is refused ({why}); a model's `provider_options` may set {allowed:?}"
        ));
    }
    if short == "CUDA" {
        takes("engine_cache", choice.engine_cache.is_some())?;
        return Ok(ProviderSetup::Cuda { device: choice.device, options });
    }
    if short == "TensorRT" {
        takes("plugin", choice.plugin.is_some())?;
        let engine_cache = choice.engine_cache.unwrap_or(true);
        tensorrt_files(&options, engine_cache)?;
        return Ok(ProviderSetup::TensorRt(TensorRtSetup {
            device: choice.device,
            options,
            engine_cache,
            cache_root: choice.engine_cache_root.clone().unwrap_or_else(super::default_engine_cache_root),
            folder: None,
        }));
    }
    takes("engine_cache", choice.engine_cache.is_some())?;
    match choice.plugin {
        Some(library) if !library.starts_with('/') && !onnxrt::pinned_plugins().iter().any(|p| p.dist == library) => {
            Err(format!(
                "`plugin` `{}` is neither a pinned bundle's name ({}) nor an absolute path to a library",
                shown(library),
                onnxrt::pinned_plugins().iter().map(|p| p.dist).collect::<Vec<_>>().join(", ")
            ))
        }
        Some(library) => {
            let device = usize::try_from(choice.device)
                .map_err(|_| format!("`device` {} is no index of the plugin's devices", choice.device))?;
            Ok(ProviderSetup::Plugin { library: library.to_owned(), provider: name.to_owned(), device, options })
        }
        None => {
            takes("device", choice.device_set)?;
            Ok(ProviderSetup::Named { name: name.to_owned(), options })
        }
    }
}

/// TensorRT's options that name files, checked: the calibration table (which ORT reads from the
/// engine-cache folder, joined to its name) is a plain file name there, and with the engine cache
/// off, which turns the model's cache folder off, neither it nor the timing cache is taken
/// (without a folder TensorRT would use the server's working directory).
fn tensorrt_files(options: &[(String, String)], engine_cache: bool) -> Result<(), String> {
    for (key, value) in options {
        let no_folder = |what: &str| {
            format!(
                "provider `tensorrt`: `{key}` {what} the model version's cache folder, which \"engine_cache\": false \
                 turns off: turn the engine cache on, or drop `{key}`"
            )
        };
        match key.as_str() {
            "trt_int8_calibration_table_name" => {
                let plain =
                    !matches!(value.as_str(), "" | "." | "..") && !value.chars().any(|c| c == '/' || c.is_control());
                if !plain {
                    return Err(format!(
                        "provider `tensorrt`: `{key}` `{}` is not a file name: TensorRT reads the table from the model \
                         version's cache folder (`--engine-cache-root`/MODEL/VERSION); put it there and name only the \
                         file, without `/` or `..`",
                        shown(value)
                    ));
                }
                if !engine_cache {
                    return Err(no_folder("is read from"));
                }
            }
            "trt_timing_cache_enable" if !engine_cache && !matches!(value.as_str(), "0" | "false") => {
                return Err(no_folder("keeps the timing cache in"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// onnxrt's name and allow-list for a provider named as ORT's C API does or as the session
/// reports it (`OpenVINO`, `OpenVINOExecutionProvider`), any case; unknown names get the table
/// that lets no key through.
fn table_of(name: &str) -> (&'static str, &'static KeyTable) {
    let lower = name.to_ascii_lowercase();
    let short = lower.strip_suffix("executionprovider").unwrap_or(&lower);
    allowed_keys::PROVIDERS
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(short))
        .map_or(("", &allowed_keys::OTHER), |(known, table)| (*known, *table))
}

/// The options as ORT's strings: strings as written, numbers and booleans as JSON writes them.
fn options_of(options: Option<&BTreeMap<String, serde_json::Value>>) -> Result<Vec<(String, String)>, String> {
    let Some(options) = options else { return Ok(Vec::new()) };
    options
        .iter()
        .map(|(key, value)| {
            let text = match value {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Number(_) | serde_json::Value::Bool(_) => value.to_string(),
                _ => {
                    return Err(format!(
                        "`provider_options` `{}`: give a string, number or boolean, not {}",
                        shown(key),
                        shown(&value.to_string())
                    ))
                }
            };
            Ok((key.clone(), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::{choose, ProviderChoice};
    use crate::provider::ProviderSetup;

    fn options(value: serde_json::Value) -> BTreeMap<String, serde_json::Value> {
        serde_json::from_value(value).expect("a map")
    }

    #[test]
    fn a_provider_by_name_takes_the_keys_its_allow_list_lets_through() {
        let given = options(json!({ "device_type": "CPU", "num_of_threads": 4, "enable_qdq_optimizer": true }));
        let setup =
            choose(&ProviderChoice { provider: "openvino", options: Some(&given), ..ProviderChoice::default() });
        let expected = vec![
            ("device_type".to_owned(), "CPU".to_owned()),
            ("enable_qdq_optimizer".into(), "true".into()),
            ("num_of_threads".into(), "4".into()),
        ];
        assert_eq!(setup, Ok(ProviderSetup::Named { name: "openvino".into(), options: expected }));
        let unknown = options(json!({ "device_typo": "CPU" }));
        let error = choose(&ProviderChoice {
            provider: "OpenVINOExecutionProvider",
            options: Some(&unknown),
            ..ProviderChoice::default()
        })
        .expect_err("refused");
        assert!(error.contains("`device_typo`") && error.contains("not on onnxrt's list"), "{error}");
        assert!(error.contains("device_type") && error.contains("num_of_threads"), "the keys that pass: {error}");
        let address = options(json!({ "context": "0x1234" }));
        let error =
            choose(&ProviderChoice { provider: "openvino", options: Some(&address), ..ProviderChoice::default() })
                .expect_err("refused");
        assert!(error.contains("address"), "{error}");
        // A provider onnxrt has no table for: no key passes; without options it is asked for.
        let error = choose(&ProviderChoice { provider: "dnnl", options: Some(&given), ..ProviderChoice::default() })
            .expect_err("refused");
        assert!(error.contains("provider `dnnl`"), "{error}");
        assert!(matches!(
            choose(&ProviderChoice { provider: "dnnl", ..ProviderChoice::default() }),
            Ok(ProviderSetup::Named { .. })
        ));
    }

    #[test]
    fn tensorrt_caches_engines_by_default_and_refuses_the_engine_keys_in_its_options() {
        let root = std::path::PathBuf::from("/srv/trt");
        let choice =
            ProviderChoice { provider: "tensorrt", engine_cache_root: Some(root.clone()), ..ProviderChoice::default() };
        let Ok(ProviderSetup::TensorRt(trt)) = choose(&choice) else { panic!("{:?}", choose(&choice)) };
        assert!(trt.engine_cache && trt.cache_root == root && trt.folder.is_none());
        // The engine cache is the server's, per model version: not a key the config sets.
        let engine = options(json!({ "trt_engine_cache_path": "/tmp/shared" }));
        let error = choose(&ProviderChoice { options: Some(&engine), ..choice.clone() }).expect_err("refused");
        assert!(error.contains("trt_engine_cache_path") && error.contains("--engine-cache-root"), "{error}");
        let fp16 = options(json!({ "trt_fp16_enable": 1 }));
        assert!(choose(&ProviderChoice { options: Some(&fp16), engine_cache: Some(false), ..choice }).is_ok());
    }

    /// The calibration table is a file name in the model version's cache folder (ORT joins it
    /// to the folder), and neither it nor the timing cache is taken with the engine cache off.
    #[test]
    fn tensorrt_options_that_name_files_stay_in_the_cache_folder() {
        let choice = |table: &str, engine_cache: bool| {
            let given = options(json!({ "trt_int8_enable": 1, "trt_int8_calibration_table_name": table }));
            choose(&ProviderChoice {
                provider: "tensorrt",
                options: Some(&given),
                engine_cache: Some(engine_cache),
                ..ProviderChoice::default()
            })
        };
        assert!(matches!(choice("calibration.flatbuffers", true), Ok(ProviderSetup::TensorRt(_))));
        for table in ["/etc/passwd", "../../other/1/table", "sub/table", "..", ".", "", "ta\nble"] {
            let error = choice(table, true).expect_err(table);
            assert!(error.contains("is not a file name") && error.contains("--engine-cache-root"), "{error}");
            assert!(!error.contains('\n'), "{error}");
        }
        let error = choice("calibration.flatbuffers", false).expect_err("no folder");
        assert!(error.contains("is read from the model version's cache folder"), "{error}");
        let timing = options(json!({ "trt_timing_cache_enable": true }));
        let off = ProviderChoice {
            provider: "tensorrt",
            options: Some(&timing),
            engine_cache: Some(false),
            ..ProviderChoice::default()
        };
        assert!(choose(&off).expect_err("no folder").contains("keeps the timing cache in"));
        assert!(choose(&ProviderChoice { engine_cache: None, ..off }).is_ok());
    }

    /// A config's strings reach messages (and the log) escaped and cut: a provider's name is
    /// refused unless it is a plain word, and says what it was, shown.
    #[test]
    fn config_strings_are_shown_escaped_and_cut() {
        let forged = "cpu\nERROR forged line\0";
        let huge = "x".repeat(200_000);
        for name in [forged, huge.as_str(), "open vino"] {
            let error = choose(&ProviderChoice { provider: name, ..ProviderChoice::default() }).expect_err("refused");
            assert!(error.contains("is no provider's name"), "{error}");
            assert!(!error.contains(['\n', '\0']) && error.len() < 500, "{error}");
        }
        let error = choose(&ProviderChoice { provider: forged, ..ProviderChoice::default() }).expect_err("refused");
        assert!(error.contains(r"cpu\nERROR forged line\u{0}"), "{error}");
        let error = choose(&ProviderChoice { provider: &huge, ..ProviderChoice::default() }).expect_err("refused");
        assert!(error.contains("… (200000 bytes)"), "{error}");
        for key in ["device_type\nERROR forged".to_owned(), "x".repeat(100_000)] {
            let given = options(json!({ key: "CPU" }));
            let error =
                choose(&ProviderChoice { provider: "openvino", options: Some(&given), ..ProviderChoice::default() })
                    .expect_err("refused");
            assert!(!error.contains('\n') && error.len() < 2000, "{error}");
        }
        let nested = options(json!({ "device_type": ["\n".repeat(100_000)] }));
        let error =
            choose(&ProviderChoice { provider: "openvino", options: Some(&nested), ..ProviderChoice::default() })
                .expect_err("refused");
        assert!(error.len() < 2000, "{} bytes", error.len());
        let plugin =
            ProviderChoice { provider: "webgpu", plugin: Some("lib\nERROR forged"), ..ProviderChoice::default() };
        let error = choose(&plugin).expect_err("refused");
        assert!(error.contains(r"lib\nERROR forged"), "{error}");
    }

    /// CUDA takes its allow-listed keys (cuDNN's search among them), not its device as a key,
    /// and refuses the keys that carry addresses.
    #[test]
    fn cuda_takes_the_options_on_its_allow_list() {
        let cuda = |given: serde_json::Value| {
            let given = options(given);
            choose(&ProviderChoice {
                provider: "CUDAExecutionProvider",
                device: 1,
                options: Some(&given),
                ..ProviderChoice::default()
            })
        };
        let setup = cuda(json!({ "cudnn_conv_algo_search": "HEURISTIC", "use_tf32": 0 })).expect("taken");
        let expected =
            vec![("cudnn_conv_algo_search".to_owned(), "HEURISTIC".to_owned()), ("use_tf32".into(), "0".into())];
        assert_eq!(setup, ProviderSetup::Cuda { device: 1, options: expected.clone() });
        assert_eq!(setup.options()[0], ("device_id".to_owned(), "1".to_owned()));
        assert_eq!(setup.options()[1..], expected[..]);
        let error = cuda(json!({ "device_id": 3 })).expect_err("refused");
        assert!(error.contains("`device_id` is refused") && error.contains("\"device\""), "{error}");
        let error = cuda(json!({ "user_compute_stream": "140000000" })).expect_err("refused");
        assert!(
            error.contains("`user_compute_stream` is refused") && error.contains("cudnn_conv_algo_search"),
            "{error}"
        );
        let error = cuda(json!({ "cudnn_conv_algo_serch": "HEURISTIC" })).expect_err("refused");
        assert!(error.contains("`cudnn_conv_algo_serch`"), "{error}");
    }

    #[test]
    fn fields_a_provider_does_not_take_are_refused() {
        let given = options(json!({ "device_id": "0" }));
        let cpu = choose(&ProviderChoice { provider: "cpu", options: Some(&given), ..ProviderChoice::default() });
        assert!(cpu.expect_err("refused").contains("`provider_options` is not taken by provider `cpu`"));
        let cuda_cache =
            choose(&ProviderChoice { provider: "cuda", engine_cache: Some(true), ..ProviderChoice::default() });
        assert!(cuda_cache.expect_err("refused").contains("`engine_cache`"));
        let nested = options(json!({ "device_type": ["CPU"] }));
        let error =
            choose(&ProviderChoice { provider: "openvino", options: Some(&nested), ..ProviderChoice::default() });
        assert!(error.expect_err("refused").contains("string, number or boolean"));
        let plugin = ProviderChoice {
            provider: "webgpu",
            plugin: Some("webgpu-plugin-0.4.0-registry"),
            ..ProviderChoice::default()
        };
        assert!(matches!(choose(&plugin), Ok(ProviderSetup::Plugin { device: 0, .. })));
        let negative = choose(&ProviderChoice { device: -1, ..plugin });
        assert!(negative.expect_err("refused").contains("no index"));
    }
}
