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
use common::{folder, index_state, json_of, mlp_status, post, put, runtime, Server, MODELS};

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

/// POSTs `body` as it is (not JSON-encoded).
async fn post_raw(c: &mut Connection, path: &str, body: &'static str) -> Reply {
    let headers = [("content-type", "application/json")];
    c.send("POST", path, &headers, hyper::body::Bytes::from_static(body.as_bytes())).await.expect("reply")
}

#[test]
fn start_flags_that_would_be_ignored_stop_the_start_or_warn() {
    // Issue 45, F3 and F11: a --load-model naming no folder, or given outside explicit mode, was
    // ignored silently; --repository-poll-secs outside poll mode too.
    let root = folder("start-flags");
    put(&root, "add", "add_f32.onnx");
    for args in [
        &["--model-control-mode", "explicit", "--load-model", "nosuch"][..],
        &["--model-control-mode", "explicit", "--load-model", "add", "--load-model", "nosuch", "--strict-start"],
        &["--load-model", "add"],
        &["--model-control-mode", "poll", "--load-model", "add"],
    ] {
        let (status, stderr) =
            common::refused_start(&root, args).unwrap_or_else(|line| panic!("{args:?} served: {line}"));
        assert!(!status.success(), "{args:?}: {status}");
        assert!(stderr.contains("--load-model"), "{args:?}: {stderr}");
    }
    let log = root.join("serve.log");
    let server =
        Server::start_logging(&root, &["--model-control-mode", "explicit", "--repository-poll-secs", "1"], &log);
    drop(server);
    let text = std::fs::read_to_string(&log).expect("log");
    assert!(text.contains("--repository-poll-secs is ignored"), "{text}");
    let _ = std::fs::remove_dir_all(&root);
}

/// `serve --help` gives isolation's default as the server applies it: batched CPU models are
/// isolated too (it said "for models that do not batch": outside probe).
#[test]
fn the_help_gives_the_isolation_default_as_applied() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_serve")).arg("--help").output().expect("serve --help");
    let help = String::from_utf8_lossy(&help.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    let isolation = &help[help.find("--isolation").unwrap_or_else(|| panic!("{help}"))..];
    assert!(
        isolation.contains("batched models included; off for models whose batches run on the server's sessions"),
        "{isolation}"
    );
    assert!(!help.contains("models that do not batch"), "{help}");
}

#[test]
fn bad_command_line_counts_stop_the_start_naming_the_flag() {
    // Outside review, 2026-12-07: `--max-batch 0` started the server with every model
    // unavailable, in config.json's terms (`max_batch`), and `--pad-sizes 64` over `--max-batch
    // 32` was dropped silently.
    let root = folder("start-counts");
    put(&root, "add", "add_f32.onnx");
    for (args, says) in [
        (&["--max-batch", "0"][..], "--max-batch 0: it must be from 1 to 4096"),
        (&["--max-batch", "4097"], "--max-batch 4097"),
        (&["--queue", "0"], "--queue 0"),
        (&["--gather-threads", "257"], "--gather-threads 257"),
        (&["--batch-workers", "0"], "--batch-workers 0"),
        (&["--concurrency", "4294967296"], "--concurrency 4294967296"),
        (&["--threads", "100000000"], "--threads 100000000: it must be from 0 to 1024"),
        (&["--pad-sizes", "1,64"], "--pad-sizes has 64: each size must be from 1 to --max-batch (32)"),
        (&["--pad-sizes", "0,8"], "--pad-sizes has 0"),
        (&["--pad-sizes", "8", "--pad-batches"], "give one"),
        (&["--max-connections", "0"], "--max-connections 0"),
    ] {
        let (status, stderr) =
            common::refused_start(&root, args).unwrap_or_else(|line| panic!("{args:?} served: {line}"));
        assert!(!status.success(), "{args:?}: {status}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn load_and_unload_refuse_bodies_that_are_not_json_and_do_nothing() {
    // Issue 45, F4: `{"parameters": `, `garbage`, `[[[` were answered 200 and acted on.
    let root = folder("control-bodies");
    put(&root, "add", "add_f32.onnx");
    let server = Server::start(&root, &["--model-control-mode", "explicit"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        for body in ["{\"parameters\": ", "garbage", "[[[", "[]"] {
            let reply = post_raw(&mut c, "/v2/repository/models/add/load", body).await;
            assert_eq!(reply.status, 400, "{body}: {}", reply.text());
            assert!(reply.text().contains("body"), "{}", reply.text());
        }
        assert!(index(&mut c).await.iter().any(|e| e.0 == "add" && e.2 == "UNAVAILABLE"), "loaded on a bad body");
        // An empty body and an object stay valid.
        assert_eq!(post_raw(&mut c, "/v2/repository/models/add/load", "").await.status, 200);
        for body in ["garbage", "{"] {
            let reply = post_raw(&mut c, "/v2/repository/models/add/unload", body).await;
            assert_eq!(reply.status, 400, "{body}: {}", reply.text());
        }
        assert!(index(&mut c).await.iter().any(|e| e.0 == "add" && e.2 == "READY"), "unloaded on a bad body");
        assert_eq!(post_raw(&mut c, "/v2/repository/models/add/unload", "{}").await.status, 200);
    });
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn folders_are_listed_as_they_are_and_a_bad_name_is_refused_with_the_reason() {
    // Issue 45, F5 and F7: an explicit load of a folder whose name the protocol cannot carry
    // answered 404 "no model folder"; a removed never-loaded folder stayed in the index.
    let root = folder("listing");
    put(&root, "add", "add_f32.onnx");
    put(&root, "a b", "add_f32.onnx");
    std::fs::create_dir_all(root.join("empty")).expect("empty folder");
    let server = Server::start(&root, &["--model-control-mode", "explicit", "--load-model", "add"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let reply = post(&mut c, "/v2/repository/models/a%20b/load", &json!({})).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("ASCII letters"), "{}", reply.text());
        let reply = post(&mut c, "/v2/repository/models/empty/load", &json!({})).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(index(&mut c).await.iter().any(|e| e.0 == "empty"));
        std::fs::remove_dir_all(root.join("empty")).expect("remove");
        std::fs::remove_dir_all(root.join("a b")).expect("remove");
        put(&root, "later", "add_f32.onnx");
        let names: Vec<String> = index(&mut c).await.into_iter().map(|e| e.0).collect();
        assert_eq!(names, ["add", "later"], "the index lists the folders there are");
        assert_eq!(post(&mut c, "/v2/repository/models/later/load", &json!({})).await.status, 200);
    });
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_model_with_the_longest_legal_name_runs_isolated() {
    // Issue 45, F6: its worker's shared-memory file name carried the model's name and was too long.
    let root = folder("long-name");
    let name = "m".repeat(255);
    put(&root, &name, "add_f32.onnx");
    let server = Server::start(&root, &["--isolation", "true"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 1, 1, 1, 1, 1] });
        let reply = post(&mut c, &format!("/v2/models/{name}/infer"), &json!({ "inputs": [a, b] })).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let answer = json_of(&reply);
        let sums: Vec<f64> =
            answer["outputs"][0]["data"].as_array().expect("data").iter().filter_map(Json::as_f64).collect();
        assert_eq!(sums, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0], "{answer}");
    });
    let _ = std::fs::remove_dir_all(&root);
}

/// A server in explicit mode serving the MLP as `cpu`, with `huge` beside it (not loaded) under
/// `config`; its address-space limit (util-linux `prlimit`) where `cap` names one.
fn server_beside_a_huge_config(test: &str, config: &Json, cap: Option<&str>) -> (std::path::PathBuf, Server) {
    let root = folder(test);
    put(&root, "cpu", "mlp.onnx");
    put(&root, "huge", "mlp.onnx");
    std::fs::write(root.join("huge").join("config.json"), config.to_string()).expect("config");
    let server = Server::start(&root, &["--model-control-mode", "explicit", "--load-model", "cpu"]);
    if let Some(cap) = cap {
        let capped = std::process::Command::new("prlimit")
            .args(["--pid", &server.pid().to_string(), cap])
            .status()
            .expect("util-linux prlimit runs");
        assert!(capped.success(), "prlimit failed");
    }
    (root, server)
}

/// The answer to loading `huge`, or why the server gave none.
async fn load_huge(c: &mut Connection) -> Result<Reply, String> {
    c.send("POST", "/v2/repository/models/huge/load", &[("content-type", "application/json")], "{}".into())
        .await
        .map_err(|e| e.to_string())
}

/// A config whose sizes would be allocated up front past what the machine has (`max_batch`
/// u32::MAX aborted the whole server, at start and on a model-control load): refused, and the
/// server serves on (found by the outside review of 2026-12-07).
#[test]
fn a_huge_max_batch_is_refused_and_the_server_keeps_serving() {
    let config = json!({ "batching": true, "max_batch": 4_294_967_295u64 });
    let (root, server) = server_beside_a_huge_config("probe44-max-batch", &config, None);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        assert_eq!(mlp_status(&mut c, "cpu").await, 200);
        // The load must be answered (a refusal, or a model that serves), not end the process.
        let load = load_huge(&mut c).await;
        let load = load.unwrap_or_else(|e| panic!("the server ended on the load of max_batch 4294967295: {e}"));
        if load.status != 200 {
            let (state, reason) = index_state(&mut c, "huge").await;
            assert_eq!(state, "UNAVAILABLE", "{reason}");
            assert!(reason.contains("max_batch"), "{reason}");
        }
        let mut c = Connection::open(server.rest).await.expect("the server still listens");
        assert_eq!(mlp_status(&mut c, "cpu").await, 200);
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

/// `"threads"` is bounded like `max_batch` should be: 100,000,000 intra-op threads made ORT
/// allocate its thread pool's state up front, about 300 MB a second in the serving process until
/// the machine ran out (SIGINT not heeded meanwhile). The test caps the server's address space at
/// 4 GiB (util-linux `prlimit`) so a regression fails as ORT's `bad_alloc` instead of exhausting
/// the machine; the fix must refuse the value with a reason that names `threads` (found by the
/// outside review reprobe45 of 2026-12-07).
#[test]
fn a_huge_thread_count_is_refused_with_a_reason_and_the_server_keeps_serving() {
    let config = json!({ "threads": 100_000_000u64 });
    let (root, server) = server_beside_a_huge_config("reprobe45-intra-op", &config, Some("--as=4294967296"));
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        assert_eq!(mlp_status(&mut c, "cpu").await, 200);
        let load = load_huge(&mut c).await;
        let load = load.unwrap_or_else(|e| panic!("the server ended on the load of threads 100000000: {e}"));
        assert_ne!(load.status, 200, "{}", load.text());
        let (state, reason) = index_state(&mut c, "huge").await;
        assert_eq!(state, "UNAVAILABLE", "{reason}");
        assert!(reason.contains("`threads`"), "the refusal must name `threads`, not run out of memory: {reason}");
        let mut c = Connection::open(server.rest).await.expect("the server still listens");
        assert_eq!(mlp_status(&mut c, "cpu").await, 200);
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

/// A model that failed to load and whose folder is then removed: the next load request says the
/// folder is gone and the model is no longer listed, so its requests answer 404 (unknown), not
/// 503 (unavailable, as if it might come back). A serving model keeps serving its loaded copy.
/// (Outside review, 2026-12-06.)
#[test]
fn a_failed_model_whose_folder_is_removed_is_forgotten_on_the_next_load() {
    let (root, server) = server_beside_a_huge_config("removed-failed", &json!({ "max_batch": 0 }), None);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        assert_ne!(load_huge(&mut c).await.expect("answered").status, 200, "max_batch 0 loaded");
        assert_eq!(index_state(&mut c, "huge").await.0, "UNAVAILABLE");
        assert_eq!(mlp_status(&mut c, "huge").await, 503);
        std::fs::remove_dir_all(root.join("huge")).expect("remove the folder");
        let reload = load_huge(&mut c).await.expect("answered");
        assert!(reload.status >= 400 && reload.text().contains("no model folder `huge`"), "{}", reload.text());
        assert!(index(&mut c).await.iter().all(|e| e.0 != "huge"), "still listed");
        assert_eq!(mlp_status(&mut c, "huge").await, 404);
        // A serving model whose folder is removed keeps serving.
        std::fs::remove_dir_all(root.join("cpu")).expect("remove the folder");
        let reload = post(&mut c, "/v2/repository/models/cpu/load", &json!({})).await;
        assert!(reload.status >= 400, "{}", reload.text());
        assert_eq!(mlp_status(&mut c, "cpu").await, 200);
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}
