//! Any provider per model, named in its config.json, on the real `serve` and the real runtime:
//! TensorRT and OpenVINO named on a runtime without them fail to load with onnxrt's typed error
//! (TensorRT's engine-cache folder made per model version first, and reported), a key off a
//! provider's allow-list is refused naming the keys that pass, and the other models keep serving.
//! With the WebGPU plugin (tools/dev.sh's `newest` stage: ORT 1.32, `ONNXRT_TEST_WEBGPU_PLUGIN`
//! and Mesa's software Vulkan driver), a model served on the plugin's device answers as the same
//! model on the CPU; on ORT 1.16 the same config is refused with `NeedsNewerRuntime`.

use std::path::{Path, PathBuf};

use onnxrt_serve::http_client::{Connection, Reply};
use serde_json::{json, Value as Json};

mod common;
use common::{folder, json_of, post, put, runtime, Server};

/// The index as (name, state, reason).
async fn index(c: &mut Connection) -> Vec<(String, String, String)> {
    let reply = post(c, "/v2/repository/index", &json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let text = |e: &Json, key: &str| e[key].as_str().unwrap_or_default().to_owned();
    let entries = json_of(&reply);
    entries.as_array().expect("a list").iter().map(|e| (text(e, "name"), text(e, "state"), text(e, "reason"))).collect()
}

fn entry<'i>(index: &'i [(String, String, String)], name: &str) -> &'i (String, String, String) {
    index.iter().find(|(n, _, _)| n == name).unwrap_or_else(|| panic!("{name} not in {index:?}"))
}

/// A test model's one FP32 input: its name, its shape, and the step of the ramp whose sines
/// fill it (each seed its own stretch of the ramp).
struct Input {
    name: &'static str,
    shape: &'static [usize],
    step: f32,
}

/// mlp.onnx's input.
const MLP: Input = Input { name: "x", shape: &[1, 16], step: 0.37 };

/// convnet.onnx's input.
const CONVNET: Input = Input { name: "image", shape: &[1, 3, 32, 32], step: 0.013 };

/// `model`'s first output for `input` filled from `seed`, or the status and text of a reply
/// that was not 200.
async fn answer(c: &mut Connection, model: &str, input: &Input, seed: u64) -> Result<Vec<f32>, (u16, String)> {
    let n = input.shape.iter().product::<usize>() as u64;
    let data: Vec<f32> = (0..n).map(|i| ((seed * n + i) as f32 * input.step).sin()).collect();
    let request = json!({ "inputs": [{ "name": input.name, "shape": input.shape, "datatype": "FP32", "data": data }] });
    let reply: Reply = post(c, &format!("/v2/models/{model}/infer"), &request).await;
    if reply.status != 200 {
        return Err((reply.status, reply.text()));
    }
    let answer = json_of(&reply);
    let data = answer["outputs"][0]["data"].as_array().expect("data");
    Ok(data.iter().map(|v| v.as_f64().expect("number") as f32).collect())
}

async fn logits(c: &mut Connection, model: &str, seed: u64) -> Vec<f32> {
    answer(c, model, &MLP, seed).await.unwrap_or_else(|(status, text)| panic!("{model}: {status} {text}"))
}

/// A client's wrong answers: (model, seed, status).
type Wrong = Vec<(&'static str, u64, u16)>;

/// One client per entry of `models`, all at once, each asking for `input` of seeds
/// 0..`expected.len()` and comparing with `expected` (the CPU's answers) within (relative,
/// absolute) `tolerance`. Each ends with the (model, seed, status) of every answer that was not
/// 200 or not close.
fn clients(
    rest: std::net::SocketAddr,
    models: &[&'static str],
    input: &'static Input,
    expected: &std::sync::Arc<Vec<Vec<f32>>>,
    tolerance: (f64, f64),
) -> Vec<tokio::task::JoinHandle<Wrong>> {
    let client = |model: &'static str| {
        let expected = std::sync::Arc::clone(expected);
        tokio::spawn(async move {
            let mut c = Connection::open(rest).await.expect("connects");
            let mut wrong = Vec::new();
            for (seed, expected) in (0u64..).zip(expected.iter()) {
                let (status, got) = match answer(&mut c, model, input, seed).await {
                    Ok(got) => (200, got),
                    Err((status, _)) => (status, Vec::new()),
                };
                let close = got.len() == expected.len()
                    && got
                        .iter()
                        .zip(expected)
                        .all(|(g, e)| onnxrt_tests::close(f64::from(*g), f64::from(*e), tolerance.0, tolerance.1));
                if status != 200 || !close {
                    wrong.push((model, seed, status));
                }
            }
            wrong
        })
    };
    models.iter().map(|model| client(model)).collect()
}

/// What `clients` found wrong, once all have ended.
async fn wrong_answers(clients: Vec<tokio::task::JoinHandle<Wrong>>) -> Wrong {
    let mut wrong = Vec::new();
    for client in clients {
        wrong.extend(client.await.expect("the client ran to its end"));
    }
    wrong
}

fn config(root: &Path, model: &str, config: &Json) {
    std::fs::write(root.join(model).join("config.json"), config.to_string()).expect("config");
}

#[test]
fn providers_the_runtime_lacks_fail_their_model_alone_with_the_typed_error() {
    let root = folder("providers-missing");
    put(&root, "mlp", "mlp.onnx");
    put(&root, "trt/3", "mlp.onnx");
    config(&root, "trt", &json!({ "provider": "tensorrt", "provider_options": { "trt_fp16_enable": true } }));
    put(&root, "openvino", "mlp.onnx");
    config(&root, "openvino", &json!({ "provider": "openvino", "provider_options": { "device_type": "CPU" } }));
    put(&root, "typo", "mlp.onnx");
    config(&root, "typo", &json!({ "provider": "openvino", "provider_options": { "device_typo": "CPU" } }));
    put(&root, "shared_cache", "mlp.onnx");
    config(
        &root,
        "shared_cache",
        &json!({ "provider": "tensorrt", "provider_options": { "trt_engine_cache_path": "/tmp" } }),
    );
    for (model, key) in [("timing_path", "trt_timing_cache_path"), ("context_path", "trt_ep_context_file_path")] {
        put(&root, model, "mlp.onnx");
        config(&root, model, &json!({ "provider": "tensorrt", "provider_options": { key: "/tmp/x" } }));
    }
    for (model, config_json) in [
        ("cpu_long", json!({ "provider": "CPUExecutionProvider" })),
        ("cpu_device", json!({ "provider": "cpu", "device": -1 })),
        ("openvino_device", json!({ "provider": "openvino", "device": 7 })),
        ("empty", json!({ "provider": "" })),
        ("plugin_cpu", json!({ "provider": "CPUExecutionProvider", "plugin": "webgpu-plugin-0.4.0-registry" })),
        ("plugin_relative", json!({ "provider": "webgpu", "plugin": "lib/libonnxruntime_providers_webgpu.so" })),
    ] {
        put(&root, model, "mlp.onnx");
        config(&root, model, &config_json);
    }
    let cache = root.join("engines");
    let cache_arg = cache.display().to_string();
    let server = Server::start(&root, &["--engine-cache-root", &cache_arg]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let index = index(&mut c).await;
        assert_eq!(entry(&index, "mlp").1, "READY", "{index:?}");
        // TensorRT: the runtime's refusal, and no cache folder made for a provider that cannot run.
        let (_, state, reason) = entry(&index, "trt");
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(!cache.exists(), "nothing made for a model that cannot load: {reason}");
        if cfg!(feature = "tensorrt") {
            assert!(reason.contains("provider `tensorrt`") && reason.contains("(ProviderNotAvailable)"), "{reason}");
            assert!(reason.contains("the TensorRT execution provider is not in this ONNX Runtime build"), "{reason}");
            assert!(reason.contains("includes TensorRT"), "what to install: {reason}");
        } else {
            assert!(
                reason.contains("built without the `tensorrt` feature") && reason.contains("--features tensorrt"),
                "{reason}"
            );
        }
        // OpenVINO by name: the same typed error.
        let (_, state, reason) = entry(&index, "openvino");
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains("provider `openvino`") && reason.contains("(ProviderNotAvailable)"), "{reason}");
        assert!(reason.contains("includes the openvino provider"), "what to install: {reason}");
        // Keys off the allow-list: refused when the config is read, with the keys that pass.
        let (_, state, reason) = entry(&index, "typo");
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains("`device_typo`") && reason.contains("\"device_type\", \"precision\""), "{reason}");
        assert!(!reason.contains("unsafe"), "nothing a config writer cannot act on: {reason}");
        let (_, _, reason) = entry(&index, "shared_cache");
        assert!(reason.contains("`trt_engine_cache_path`") && reason.contains("--engine-cache-root"), "{reason}");
        assert!(!reason.contains("unsafe"), "nothing a config writer cannot act on: {reason}");
        for model in ["timing_path", "context_path"] {
            let (_, state, reason) = entry(&index, model);
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            assert!(reason.contains("--engine-cache-root") && reason.contains("\"engine_cache\": false"), "{reason}");
        }
        // Spellings of ORT's names; `device` where the provider takes none; an empty name.
        assert_eq!(entry(&index, "cpu_long").1, "READY", "{index:?}");
        for (model, why) in [
            ("cpu_device", "`device` is not taken by provider `cpu`"),
            ("openvino_device", "`device` is not taken by provider `openvino`"),
            ("empty", "`provider` is empty"),
            ("plugin_cpu", "is ONNX Runtime's own, not a plugin's"),
            ("plugin_relative", "nor an absolute path"),
        ] {
            let (_, state, reason) = entry(&index, model);
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            assert!(reason.contains(why), "{reason}");
        }
        assert!(!cache.join("shared_cache").exists(), "refused before any folder was made");
        // The other model serves, as it would alone.
        assert!(!logits(&mut c, "mlp", 1).await.is_empty());
        let missing = c.send("GET", "/v2/models/trt/ready", &[], Default::default()).await.expect("reply");
        assert_ne!(missing.status, 200);
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

/// TensorRT's cache folders are checked before anything is made in them: a root others can
/// write, a link below the root, a folder of another user are refused and nothing is made there.
/// With the engine cache off the model has no folder: the root is not its concern.
#[test]
fn tensorrt_cache_folders_are_checked_before_anything_is_made() {
    use std::os::unix::fs::PermissionsExt;
    let root = folder("providers-cache-private");
    let open = root.join("ww");
    std::fs::create_dir_all(&open).expect("folder");
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let private = root.join("private");
    let elsewhere = root.join("elsewhere");
    for dir in [&private, &elsewhere] {
        std::fs::create_dir_all(dir).expect("folder");
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    std::os::unix::fs::symlink(&elsewhere, private.join("trt_link")).expect("link");
    // A folder of another user (root can give it away; others skip this case).
    let others = private.join("trt_other");
    std::fs::create_dir_all(&others).expect("folder");
    let given_away = std::process::Command::new("chown").arg("65534").arg(&others).status().is_ok_and(|s| s.success());
    let at = |dir: &Path| dir.display().to_string();
    // Per cache root: (model, engine cache on, what its refusal names; "" for none).
    type Cases<'a> = [(&'a Path, &'a [(&'a str, bool, &'a str)]); 2];
    let cases: Cases = [
        (&open, &[("trt_open", true, "with mode 777"), ("trt_open_off", false, "")]),
        (
            &private,
            &[
                ("trt_link", true, "trt_link is a symbolic link"),
                ("trt_other", true, if given_away { "belongs to uid 65534" } else { "" }),
                ("trt_ok", true, ""),
            ],
        ),
    ];
    for (cache_root, models) in cases {
        let repository = root.join(format!("repository-{}", cache_root.file_name().expect("name").to_string_lossy()));
        for (model, engine_cache, _) in models {
            put(&repository, model, "mlp.onnx");
            config(&repository, model, &json!({ "provider": "tensorrt", "engine_cache": engine_cache }));
        }
        let server = Server::start(&repository, &["--engine-cache-root", &at(cache_root)]);
        runtime().block_on(async {
            let mut c = Connection::open(server.rest).await.expect("connects");
            let index = index(&mut c).await;
            for (model, engine_cache, why) in models {
                let (_, state, reason) = entry(&index, model);
                assert_eq!(state, "UNAVAILABLE", "no TensorRT here: {reason}");
                if !why.is_empty() {
                    assert!(reason.contains(why) && reason.contains("--engine-cache-root"), "{model}: {reason}");
                }
                if !engine_cache {
                    assert!(!reason.contains("cache folder"), "the root is no concern of {model}: {reason}");
                    assert!(reason.contains("engine cache and timing cache off"), "{model}: {reason}");
                }
            }
        });
        drop(server);
    }
    assert!(!others.join("1").exists(), "nothing made in another user's folder");
    assert!(!open.join("trt_open").exists() && !open.join("trt_open_off").exists(), "nothing made in a shared root");
    assert!(!elsewhere.join("1").exists(), "nothing made through a link");
    assert!(!private.join("trt_ok").exists(), "nothing made for a provider that cannot run");
    let _ = std::fs::remove_dir_all(&root);
}

/// A root that is a regular file: the TensorRT model's refusal says so, after why TensorRT
/// cannot run here where it cannot (the build or the runtime lacks it: what to fix first); a
/// model with the engine cache off does not use the root and is not refused for it.
#[test]
fn a_cache_root_that_cannot_be_made_fails_the_tensorrt_model_with_a_clear_error() {
    let root = folder("providers-cache-root");
    put(&root, "mlp", "mlp.onnx");
    put(&root, "trt", "mlp.onnx");
    config(&root, "trt", &json!({ "provider": "tensorrt" }));
    put(&root, "trt_off", "mlp.onnx");
    config(&root, "trt_off", &json!({ "provider": "tensorrt", "engine_cache": false }));
    let file = root.join("a-file");
    std::fs::write(&file, b"not a folder").expect("write");
    let file_arg = file.display().to_string();
    let server = Server::start(&root, &["--engine-cache-root", &file_arg]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let index = index(&mut c).await;
        let (_, state, reason) = entry(&index, "trt");
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains(&format!("{} cannot be made", file.join("trt/1").display())), "{reason}");
        assert!(reason.contains("--engine-cache-root") && reason.contains("\"engine_cache\": false"), "{reason}");
        if !onnxrt_serve::provider::TensorRtSetup::usable() {
            let first = if cfg!(feature = "tensorrt") {
                "(ProviderNotAvailable)"
            } else {
                "built without the `tensorrt` feature"
            };
            let (at_first, at_cache) = (reason.find(first), reason.find("the TensorRT cache folder"));
            assert!(matches!((at_first, at_cache), (Some(a), Some(c)) if a < c), "`{first}` first: {reason}");
        }
        let (_, state, reason) = entry(&index, "trt_off");
        assert_eq!(state, "UNAVAILABLE", "no TensorRT here: {reason}");
        assert!(!reason.contains("cache folder") && !reason.contains(&file_arg), "not the root's concern: {reason}");
        assert_eq!(entry(&index, "mlp").1, "READY", "{index:?}");
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

/// A config's strings reach the index's reasons and the log escaped and cut: a newline in a
/// provider's name forges no log line, a 200 KB name is not echoed whole; a calibration table
/// given as a path and a config.json that is no object are refused in the config writer's terms.
#[test]
fn config_strings_reach_reasons_and_the_log_escaped_and_cut() {
    let root = folder("providers-shown");
    let repository = root.join("repository");
    put(&repository, "mlp", "mlp.onnx");
    let huge = "x".repeat(200_000);
    for (model, config_json) in [
        ("forged", json!({ "provider": "cpu\nERROR forged line\u{0}" })),
        ("huge", json!({ "provider": huge })),
        ("forged_key", json!({ "provider": "openvino", "provider_options": { "device_type\nERROR forged key": 1 } })),
        (
            "int8",
            json!({ "provider": "tensorrt", "provider_options": { "trt_int8_calibration_table_name": "../../t" } }),
        ),
        ("array", json!([])),
    ] {
        put(&repository, model, "mlp.onnx");
        config(&repository, model, &config_json);
    }
    let log = root.join("serve.log");
    let server = Server::start_logging(&repository, &[], &log);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let index = index(&mut c).await;
        assert_eq!(entry(&index, "mlp").1, "READY", "{index:?}");
        for (model, why) in [
            ("forged", r"`cpu\nERROR forged line\u{0}` is no provider's name"),
            ("huge", "… (200000 bytes)"),
            ("forged_key", r"`device_type\nERROR forged key` is refused"),
            ("int8", "`../../t` is not a file name"),
            ("array", "config.json must be a JSON object ({...}), found an array"),
        ] {
            let (_, state, reason) = entry(&index, model);
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            assert!(reason.contains(why), "{model}: {reason}");
            assert!(!reason.contains(['\n', '\0']) && reason.len() < 1000, "{model}: {} bytes: {reason}", reason.len());
        }
    });
    drop(server);
    let log = std::fs::read_to_string(&log).expect("log");
    assert!(log.contains("is no provider's name"), "the refusals are logged: {log}");
    assert!(!log.lines().any(|line| line.starts_with("ERROR forged")), "a forged line: {log}");
    assert!(!log.contains('\0') && log.len() < 20_000, "{} bytes", log.len());
    let _ = std::fs::remove_dir_all(&root);
}

/// The WebGPU plugin's library, where the environment names one.
fn webgpu_plugin() -> Option<PathBuf> {
    let path = std::env::var_os("ONNXRT_TEST_WEBGPU_PLUGIN").map(PathBuf::from);
    if path.is_none() && std::env::var_os("ONNXRT_REQUIRE_WEBGPU_PLUGIN").is_some_and(|v| v == "1") {
        panic!("ONNXRT_REQUIRE_WEBGPU_PLUGIN=1 but ONNXRT_TEST_WEBGPU_PLUGIN is unset (tools/dev.sh newest sets it)");
    }
    path
}

#[test]
fn a_model_served_on_a_plugin_providers_device_answers_as_on_the_cpu() {
    let plugin = webgpu_plugin();
    let newer = onnxrt::runtime_info().expect("runtime").api_level >= 22;
    let root = folder("providers-plugin");
    put(&root, "cpu", "mlp.onnx");
    // By the bundle's name and by the library's path: one registration for both models.
    let library = plugin.as_ref().map_or("webgpu-plugin-0.4.0-registry".to_owned(), |p| p.display().to_string());
    for (model, library) in [("webgpu", "webgpu-plugin-0.4.0-registry"), ("webgpu_path", library.as_str())] {
        put(&root, model, "mlp.onnx");
        config(&root, model, &json!({ "provider": "webgpu", "plugin": library, "concurrency": 1 }));
    }
    let copies = PathBuf::from(format!("{}-copy", root.display()));
    // A byte-identical copy at another path: the same pinned library, registered once (else
    // ORT lists its device twice and `webgpu_second` below would find a second one).
    if let Some(plugin) = &plugin {
        let copy = copies.join("libonnxruntime_providers_webgpu.so");
        std::fs::create_dir_all(copy.parent().expect("folder")).expect("folder");
        std::fs::copy(plugin, &copy).expect("copy");
        put(&root, "webgpu_copy", "mlp.onnx");
        config(&root, "webgpu_copy", &json!({ "provider": "webgpu", "plugin": copy.display().to_string() }));
    }
    // A FIFO (its open would block: the start with it) and a folder: refused, saying which.
    let fifo = root.join("fifo.so");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    for (model, library) in [("webgpu_fifo", fifo.clone()), ("webgpu_folder", copies.clone())] {
        put(&root, model, "mlp.onnx");
        config(&root, model, &json!({ "provider": "webgpu", "plugin": library.display().to_string() }));
    }
    // A device the plugin does not offer (it offers one).
    put(&root, "webgpu_second", "mlp.onnx");
    config(&root, "webgpu_second", &json!({ "provider": "webgpu", "plugin": library, "device": 1 }));
    // Another provider's name with this plugin: the refusal names the plugin's own.
    put(&root, "webgpu_misnamed", "mlp.onnx");
    config(&root, "webgpu_misnamed", &json!({ "provider": "openvino", "plugin": "webgpu-plugin-0.4.0-registry" }));
    if !newer {
        // ORT 1.16: no plugin API; the models fail alone with onnxrt's NeedsNewerRuntime.
        let server = Server::start(&root, &[]);
        runtime().block_on(async {
            let mut c = Connection::open(server.rest).await.expect("connects");
            let index = index(&mut c).await;
            for model in ["webgpu", "webgpu_path", "webgpu_second"] {
                let (_, state, reason) = entry(&index, model);
                assert_eq!(state, "UNAVAILABLE", "{reason}");
                assert!(reason.contains("provider `webgpu`") && reason.contains("(NeedsNewerRuntime)"), "{reason}");
            }
            assert!(!logits(&mut c, "cpu", 2).await.is_empty());
        });
        drop(server);
    }
    if !newer || plugin.is_none() {
        // (Without the plugin on a newer runtime, plain `cargo test`: its setup is tools/dev.sh's.)
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&copies);
        return;
    }
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let index = index(&mut c).await;
        for model in ["cpu", "webgpu", "webgpu_path", "webgpu_copy"] {
            assert_eq!(entry(&index, model).1, "READY", "{index:?}");
        }
        for (model, why) in [("webgpu_fifo", "it is not a regular file"), ("webgpu_folder", "it is a directory")] {
            let (_, state, reason) = entry(&index, model);
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            assert!(reason.contains(why), "{reason}");
        }
        let (_, state, reason) = entry(&index, "webgpu_misnamed");
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains("[\"WebGpuExecutionProvider\"], not `openvino`"), "{reason}");
        assert!(!reason.contains("/sys/class/drm"), "{reason}");
        // No such device: said so, with what ORT's discovery reads (onnxrt's words).
        let (_, state, reason) = entry(&index, "webgpu_second");
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains("the plugin offers 1 device(s)") && reason.contains("/sys/class/drm"), "{reason}");
        let config = json_of(&c.send("GET", "/v2/models/webgpu/config", &[], Default::default()).await.expect("reply"));
        let accelerator = &config["optimization"]["execution_accelerators"]["gpu_execution_accelerator"][0];
        assert_eq!(accelerator["name"], "webgpu", "{config}");
        assert_eq!(accelerator["parameters"]["library"], "webgpu-plugin-0.4.0-registry", "{config}");
        // The session got the plugin's provider for the device chosen, ahead of the CPU's.
        let providers = accelerator["parameters"]["session_providers"].as_str().unwrap_or_default();
        assert_eq!(providers, "WebGpuExecutionProvider,CPUExecutionProvider", "{config}");
        for seed in 0..4 {
            let expected = logits(&mut c, "cpu", seed).await;
            for model in ["webgpu", "webgpu_path", "webgpu_copy"] {
                let got = logits(&mut c, model, seed).await;
                assert_eq!(got.len(), expected.len());
                // WebGPU computes in its own shaders: close, not bitwise (as tests/tests/plugin_webgpu.rs).
                for (g, e) in got.iter().zip(&expected) {
                    assert!(onnxrt_tests::close(f64::from(*g), f64::from(*e), 1e-4, 1e-5), "{model}: {g} vs CPU {e}");
                }
            }
        }
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&copies);
}

/// Two models on the plugin's one device, four clients at once (two per model): every answer
/// 200 and the CPU's (issue 45: the plugin 0.4.0 broke, then crashed the server, when runs of
/// two sessions overlapped on its device; the server gives the device one run at a time).
#[test]
fn two_plugin_models_answer_concurrent_requests_as_the_cpu() {
    let (Some(_), true) = (webgpu_plugin(), onnxrt::runtime_info().expect("runtime").api_level >= 22) else {
        return;
    };
    let root = folder("providers-plugin-concurrent");
    put(&root, "cpu", "mlp.onnx");
    for model in ["wg_a", "wg_b"] {
        put(&root, model, "mlp.onnx");
        let plugin = json!({ "provider": "webgpu", "plugin": "webgpu-plugin-0.4.0-registry", "concurrency": 4 });
        config(&root, model, &plugin);
    }
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let mut expected = Vec::new();
        for seed in 0..25 {
            expected.push(logits(&mut c, "cpu", seed).await);
        }
        let expected = std::sync::Arc::new(expected);
        let clients = clients(server.rest, &["wg_a", "wg_b", "wg_a", "wg_b"], &MLP, &expected, (1e-4, 1e-5));
        let wrong = wrong_answers(clients).await;
        assert!(wrong.is_empty(), "requests not answered as on the CPU (model, seed, status): {wrong:?}");
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

/// A plugin model loaded again and again while another model on the same plugin answers: every
/// answer 200 and the CPU's, and the server stays up (the outside probe of issue 45: sessions
/// made on the WebGPU plugin's device during another model's runs failed them with "Command
/// encoding already finished", answered wrong and crashed the server, until building a session
/// took the plugin's turn as runs do).
#[test]
fn loading_a_plugin_model_while_another_answers_fails_no_request() {
    let (Some(_), true) = (webgpu_plugin(), onnxrt::runtime_info().expect("runtime").api_level >= 22) else {
        return;
    };
    let root = folder("providers-plugin-reload");
    put(&root, "cpu", "convnet.onnx");
    for model in ["wg_serving", "wg_loaded"] {
        put(&root, model, "convnet.onnx");
        config(
            &root,
            model,
            &json!({ "provider": "webgpu", "plugin": "webgpu-plugin-0.4.0-registry", "concurrency": 4 }),
        );
    }
    let server = Server::start(&root, &["--model-control-mode", "explicit", "--load-model", "*"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let mut expected = Vec::new();
        for seed in 0..60 {
            expected.push(answer(&mut c, "cpu", &CONVNET, seed).await.unwrap_or_default());
        }
        let expected = std::sync::Arc::new(expected);
        let clients = clients(server.rest, &["wg_serving"; 4], &CONVNET, &expected, (1e-3, 1e-4));
        for _ in 0..10 {
            let reply = post(&mut c, "/v2/repository/models/wg_loaded/load", &json!({})).await;
            assert_eq!(reply.status, 200, "load: {}", reply.text());
        }
        let wrong = wrong_answers(clients).await;
        assert!(wrong.is_empty(), "requests answered wrongly or not 200 (model, seed, status): {wrong:?}");
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}
