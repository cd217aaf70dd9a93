//! Model control end to end (Triton's model-repository extension) on the real `serve`: explicit
//! mode loads, unloads and reloads models on request, a new version takes over while clients
//! keep sending and not one request fails; a model that fails to load is listed with its reason;
//! poll mode picks up new and removed folders; none mode refuses load requests.
//! (tritonclient drives the same routes over HTTP and gRPC: tools/serve/check-clients.sh.)

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use onnxrt::{Session, Value};
use onnxrt_serve::http_client::{Connection, Reply};
use serde_json::{json, Value as Json};

mod common;
use common::{folder, json_of, post, put, runtime, Server, MODELS};

/// The index as (name, version, state, reason) by name.
async fn index(c: &mut Connection) -> Vec<(String, String, String, String)> {
    let reply = post(c, "/v2/repository/index", &json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let text = |e: &Json, key: &str| e[key].as_str().unwrap_or_default().to_owned();
    let entries = json_of(&reply);
    let entries = entries.as_array().expect("a list");
    entries.iter().map(|e| (text(e, "name"), text(e, "version"), text(e, "state"), text(e, "reason"))).collect()
}

fn sample(seed: u64) -> Vec<f32> {
    (0..16).map(|i| ((seed * 16 + i) as f32 * 0.37).sin()).collect()
}

fn mlp_request(seed: u64) -> Json {
    json!({ "inputs": [{ "name": "x", "shape": [1, 16], "datatype": "FP32", "data": sample(seed) }] })
}

/// The logits of an answer, as bits.
fn logits(reply: &Reply) -> Vec<u32> {
    let answer = json_of(reply);
    let data = answer["outputs"][0]["data"].as_array().expect("data");
    data.iter().map(|v| (v.as_f64().expect("a number") as f32).to_bits()).collect()
}

#[test]
fn explicit_mode_loads_unloads_and_reloads_without_a_failed_request() {
    let root = folder("explicit");
    put(&root, "mlp/1", "mlp.onnx");
    std::fs::write(root.join("mlp/config.json"), json!({ "batching": true, "max_batch": 4 }).to_string())
        .expect("config");
    put(&root, "add", "add_f32.onnx");
    put(&root, "broken", "bad_truncated.onnx");
    let server = Server::start(&root, &["--model-control-mode", "explicit", "--load-model", "mlp"]);
    let session = Session::builder().commit_from_file(Path::new(MODELS).join("mlp.onnx")).expect("mlp");
    let expected = |seed: u64| -> Vec<u32> {
        let x = Value::from_vec(&[1, 16], sample(seed)).expect("x");
        let outputs = session.run([("x", &x)]).expect("run");
        outputs.get("logits").expect("logits").view::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect()
    };
    let rt = runtime();
    rt.block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let listed = index(&mut c).await;
        let state = |listed: &[(String, String, String, String)], name: &str| {
            listed.iter().find(|e| e.0 == name).cloned().unwrap_or_else(|| panic!("{name} not in {listed:?}"))
        };
        assert_eq!(state(&listed, "mlp").2, "READY");
        assert_eq!(state(&listed, "mlp").1, "1");
        assert_eq!((state(&listed, "add").2.as_str(), state(&listed, "add").3.as_str()), ("UNAVAILABLE", "unloaded"));
        assert_eq!(state(&listed, "broken").3, "unloaded");

        // Not loaded: not served; loaded on request, then served.
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [0.5, 0.5, 0.5, 0.5, 0.5, 0.5] });
        let add = json!({ "inputs": [a, b] });
        assert_eq!(post(&mut c, "/v2/models/add/infer", &add).await.status, 503);
        let loaded = post(&mut c, "/v2/repository/models/add/load", &json!({})).await;
        assert_eq!(loaded.status, 200, "{}", loaded.text());
        let reply = post(&mut c, "/v2/models/add/infer", &add).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(json_of(&reply)["outputs"][0]["data"], json!([1.5, 2.5, 3.5, 4.5, 5.5, 6.5]));

        // A model that cannot load: refused with the reason, listed unavailable with it.
        let refused = post(&mut c, "/v2/repository/models/broken/load", &json!({})).await;
        assert_eq!(refused.status, 400, "{}", refused.text());
        assert!(refused.text().contains("failed to load `broken`"), "{}", refused.text());
        let broken = state(&index(&mut c).await, "broken");
        assert_eq!(broken.2, "UNAVAILABLE");
        assert!(broken.3.contains("model.onnx"), "{broken:?}");
        // No such folder, or a name that would leave the repository: 404.
        for name in ["nothing", "..", ".hidden"] {
            let reply = post(&mut c, &format!("/v2/repository/models/{name}/load"), &json!({})).await;
            assert_eq!(reply.status, 404, "{name}: {}", reply.text());
        }
        let reply = post(&mut c, "/v2/repository/models/add/load", &json!({ "parameters": { "config": "{}" } })).await;
        assert_eq!(reply.status, 400, "{}", reply.text());

        // Clients send all through two reloads (versions 2 and 3 appear): every answer is 200
        // and equals a single run bitwise.
        let reloading = Arc::new(AtomicBool::new(true));
        let mut clients = Vec::new();
        for client in 0..4u64 {
            let (address, reloading) = (server.rest, Arc::clone(&reloading));
            clients.push(tokio::spawn(async move {
                let mut c = Connection::open(address).await.expect("connects");
                let mut answers = Vec::new();
                // At least 30 requests each, then until the reloads end (at most 3,000).
                for n in 0..3000u64 {
                    if n >= 30 && !reloading.load(Ordering::SeqCst) {
                        break;
                    }
                    let seed = client * 10_000 + n;
                    let reply = post(&mut c, "/v2/models/mlp/infer", &mlp_request(seed)).await;
                    let version = json_of(&reply)["model_version"].as_str().unwrap_or_default().to_owned();
                    answers.push((
                        seed,
                        reply.status,
                        version,
                        if reply.status == 200 { logits(&reply) } else { vec![] },
                    ));
                }
                answers
            }));
        }
        for version in ["2", "3"] {
            put(&root, &format!("mlp/{version}"), "mlp.onnx");
            let reply = post(&mut c, "/v2/repository/models/mlp/load", &json!({})).await;
            assert_eq!(reply.status, 200, "{}", reply.text());
        }
        reloading.store(false, Ordering::SeqCst);
        let mut answered = 0;
        let mut versions = std::collections::BTreeSet::new();
        for client in clients {
            for (seed, status, version, bits) in client.await.expect("client") {
                assert_eq!(status, 200, "request {seed} failed during a reload");
                assert_eq!(bits, expected(seed), "request {seed}");
                versions.insert(version);
                answered += 1;
            }
        }
        assert!(answered >= 120, "{answered}");
        assert!(versions.contains("1") || versions.contains("2"), "{versions:?}");
        assert_eq!(state(&index(&mut c).await, "mlp").1, "3");
        let reply = post(&mut c, "/v2/models/mlp/versions/3/infer", &mlp_request(7)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(post(&mut c, "/v2/models/mlp/versions/1/infer", &mlp_request(7)).await.status, 404);

        // Unloaded: listed, not served; an unknown name: 404.
        let reply = post(&mut c, "/v2/repository/models/mlp/unload", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(post(&mut c, "/v2/models/mlp/infer", &mlp_request(7)).await.status, 503);
        assert_eq!(state(&index(&mut c).await, "mlp").3, "unloaded");
        assert_eq!(post(&mut c, "/v2/repository/models/nothing/unload", &json!({})).await.status, 404);
        // Loaded again after an unload.
        assert_eq!(post(&mut c, "/v2/repository/models/mlp/load", &json!({})).await.status, 200);
        let reply = post(&mut c, "/v2/models/mlp/infer", &mlp_request(8)).await;
        assert_eq!((reply.status, logits(&reply)), (200, expected(8)));
    });
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn poll_mode_follows_the_folder_and_none_mode_refuses_loads() {
    let root = folder("poll");
    put(&root, "add", "add_f32.onnx");
    let server = Server::start(&root, &["--model-control-mode", "poll", "--repository-poll-secs", "1"]);
    let rt = runtime();
    rt.block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let reply = post(&mut c, "/v2/repository/models/add/load", &json!({})).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("poll"), "{}", reply.text());
        // A new folder is loaded by a poll; a removed one is dropped (at most 120 looks).
        put(&root, "mlp", "mlp.onnx");
        let mut seen = false;
        for _ in 0..120 {
            if index(&mut c).await.iter().any(|e| e.0 == "mlp" && e.2 == "READY") {
                seen = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        assert!(seen, "mlp was not loaded by a poll: {:?}", index(&mut c).await);
        assert_eq!(post(&mut c, "/v2/models/mlp/infer", &mlp_request(1)).await.status, 200);
        std::fs::remove_dir_all(root.join("mlp")).expect("remove mlp");
        let mut gone = false;
        for _ in 0..120 {
            if !index(&mut c).await.iter().any(|e| e.0 == "mlp") {
                gone = true;
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
        assert!(gone, "mlp stayed listed after its folder was removed");
        assert_eq!(post(&mut c, "/v2/models/mlp/infer", &mlp_request(1)).await.status, 404);
    });
    drop(server);
    // None (the default): the models of the folder at start; load requests refused.
    let server = Server::start(&root, &[]);
    rt.block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let reply = post(&mut c, "/v2/repository/models/add/load", &json!({})).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("none"), "{}", reply.text());
        assert_eq!(post(&mut c, "/v2/repository/models/add/unload", &json!({})).await.status, 400);
    });
    let _ = std::fs::remove_dir_all(&root);
}
