//! Intel's OpenVINO plugin named in a model's config.json, on the real `serve`: the pinned bundle
//! `openvino-plugin-1.8.1-registry` by its name and its library by path. On ORT 1.16 the model is
//! refused with `NeedsNewerRuntime`. On a newer runtime with the bundle (tools/dev.sh's `newest`
//! stage sets `ONNXRT_TEST_OPENVINO_PLUGIN` to its library): without the bundle's folder on
//! `LD_LIBRARY_PATH` the plugin cannot load (`ProviderLoad`, saying what to set); with it, the
//! plugin registers and, on a host that is not Intel, offers no device (refused, naming the count),
//! while on an Intel host the model answers as on the CPU. The other models keep serving.

use std::path::{Path, PathBuf};

use onnxrt_serve::http_client::Connection;
use serde_json::{json, Value as Json};

mod common;
use common::{folder, index_state, json_of, mlp_status, post, put, runtime, Server};

const BUNDLE: &str = "openvino-plugin-1.8.1-registry";

/// `model`'s output for the MLP's input of `seed`.
async fn logits(c: &mut Connection, model: &str, seed: u64) -> Vec<f32> {
    let data: Vec<f32> = (0..16u64).map(|i| ((seed * 16 + i) as f32 * 0.37).sin()).collect();
    let request = json!({ "inputs": [{ "name": "x", "shape": [1, 16], "datatype": "FP32", "data": data }] });
    let reply = post(c, &format!("/v2/models/{model}/infer"), &request).await;
    assert_eq!(reply.status, 200, "{model}: {}", reply.text());
    let answer = json_of(&reply);
    answer["outputs"][0]["data"].as_array().expect("data").iter().map(|v| v.as_f64().expect("number") as f32).collect()
}

fn config(root: &Path, model: &str, config: &Json) {
    std::fs::write(root.join(model).join("config.json"), config.to_string()).expect("config");
}

/// The bundle's library, where the environment names one.
fn openvino_plugin() -> Option<PathBuf> {
    std::env::var_os("ONNXRT_TEST_OPENVINO_PLUGIN").map(PathBuf::from)
}

fn intel_host() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| info.contains("GenuineIntel"))
}

#[test]
fn a_model_on_the_openvino_plugin_serves_or_is_refused_saying_what_to_do() {
    let plugin = openvino_plugin();
    let newer = onnxrt::runtime_info().expect("runtime").api_level >= 22;
    let root = folder("providers-openvino");
    put(&root, "cpu", "mlp.onnx");
    put(&root, "openvino", "mlp.onnx");
    config(&root, "openvino", &json!({ "provider": "openvino", "plugin": BUNDLE, "device": 0 }));
    let mut models = vec!["openvino"];
    if let Some(plugin) = &plugin {
        put(&root, "openvino_path", "mlp.onnx");
        let library = plugin.display().to_string();
        config(&root, "openvino_path", &json!({ "provider": "openvino", "plugin": library, "device": 0 }));
        models.push("openvino_path");
    }
    let finish = || {
        let _ = std::fs::remove_dir_all(&root);
    };
    if !newer {
        // ORT 1.16: no plugin API; the model fails alone with onnxrt's NeedsNewerRuntime.
        let server = Server::start(&root, &[]);
        runtime().block_on(async {
            let mut c = Connection::open(server.rest).await.expect("connects");
            let (state, reason) = index_state(&mut c, "openvino").await;
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            assert!(reason.contains("provider `openvino`") && reason.contains("(NeedsNewerRuntime)"), "{reason}");
            assert!(!logits(&mut c, "cpu", 1).await.is_empty());
        });
        return finish();
    }
    let Some(plugin) = plugin else { return finish() };
    let lib = plugin.parent().expect("the bundle's lib folder").display().to_string();
    // Without the bundle's folder on LD_LIBRARY_PATH: the plugin's own libraries are not found.
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        for model in &models {
            let (state, reason) = index_state(&mut c, model).await;
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            // The first model's load gets onnxrt's ProviderLoad, the other that registration's outcome.
            let typed = reason.contains("(ProviderLoad)") || reason.contains("failed earlier in this process");
            assert!(typed && reason.contains("libopenvino_onnx_frontend.so.2641"), "{model}: {reason}");
            assert!(reason.contains(&format!("LD_LIBRARY_PATH={lib} ")), "{model}: {reason}");
        }
        assert!(!logits(&mut c, "cpu", 1).await.is_empty());
    });
    drop(server);
    // With it: the plugin registers; its device is Intel's only.
    let path = std::env::var("LD_LIBRARY_PATH").map_or(lib.clone(), |old| format!("{lib}:{old}"));
    let server = Server::start_with_env(&root, &[], &[("LD_LIBRARY_PATH", &path)]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        for model in &models {
            let (state, reason) = index_state(&mut c, model).await;
            if intel_host() {
                assert_eq!(state, "READY", "{model}: {reason}");
                for seed in 0..4 {
                    let (got, expected) = (logits(&mut c, model, seed).await, logits(&mut c, "cpu", seed).await);
                    assert_eq!(got.len(), expected.len());
                    for (g, e) in got.iter().zip(&expected) {
                        assert!(onnxrt_tests::close(f64::from(*g), f64::from(*e), 1e-3, 1e-4), "{model}: {g} vs {e}");
                    }
                }
            } else {
                assert_eq!(state, "UNAVAILABLE", "{reason}");
                assert!(reason.contains("the plugin offers 0 device(s)"), "{model}: {reason}");
                assert!(reason.contains("Intel devices only"), "{model}: {reason}");
            }
        }
        assert!(!logits(&mut c, "cpu", 2).await.is_empty());
    });
    drop(server);
    finish();
}

/// Two models naming the pinned plugin, one through a byte-identical copy in a folder without
/// OpenVINO's libraries: each refusal names the folder of its own path (a failed registration
/// was kept and its advice given to every model; outside review of 2026-12-07).
#[test]
fn the_library_path_advice_names_the_bundle_folder_whichever_model_registers_first() {
    let Some(plugin) = openvino_plugin() else {
        eprintln!("skipped: ONNXRT_TEST_OPENVINO_PLUGIN names no OpenVINO plugin library");
        return;
    };
    if onnxrt::runtime_info().expect("runtime").api_level < 22 {
        eprintln!("skipped: plugins need ORT 1.22+");
        return;
    }
    let root = folder("probe44-openvino-advice");
    // A byte-identical copy of the pinned library, in a folder without its sibling libraries.
    let copies = folder("probe44-openvino-copies");
    let copy = copies.join("libonnxruntime_providers_openvino_plugin.so");
    std::fs::copy(&plugin, &copy).expect("copy of the plugin");
    put(&root, "a_copy", "mlp.onnx");
    put(&root, "by_name", "mlp.onnx");
    put(&root, "cpu", "mlp.onnx");
    let copy_path = copy.display().to_string();
    config(&root, "a_copy", &json!({ "provider": "openvino", "plugin": copy_path, "device": 0 }));
    config(
        &root,
        "by_name",
        &json!({ "provider": "openvino", "plugin": "openvino-plugin-1.8.1-registry", "device": 0 }),
    );
    let bundle_lib = plugin.parent().expect("the bundle's lib folder").display().to_string();
    // No LD_LIBRARY_PATH: the plugin cannot find its siblings.
    let server = Server::start_with_env(&root, &[], &[("LD_LIBRARY_PATH", "")]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let (state, reason) = index_state(&mut c, "by_name").await;
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains("LD_LIBRARY_PATH"), "{reason}");
        // The folder named must be the one holding the plugin's sibling libraries.
        assert!(
            !reason.contains(&format!("LD_LIBRARY_PATH={}", copies.display())),
            "advice names the copy's folder, which holds no OpenVINO library: {reason}"
        );
        assert!(reason.contains(&format!("LD_LIBRARY_PATH={bundle_lib}")), "{reason}");
        // The copy's own advice: its folder lacks the libraries, so naming it would not help.
        let (state, reason) = index_state(&mut c, "a_copy").await;
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains(&format!("{} does not hold libopenvino", copies.display())), "{reason}");
        assert_eq!(mlp_status(&mut c, "cpu").await, 200);
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(&copies);
}
