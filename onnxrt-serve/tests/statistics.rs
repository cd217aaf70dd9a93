//! Triton's statistics extension and model configuration over REST on the real `serve`: counts
//! and times after a known number of requests (answered and refused), per model, per version and
//! for all; the configuration as perf_analyzer reads it. (tritonclient over HTTP and gRPC:
//! check_control.py in tools/serve/check-clients.sh.)

use onnxrt_serve::http_client::Connection;
use onnxrt_serve::oip::grpc::grpc_inference_service_client::GrpcInferenceServiceClient;
use onnxrt_serve::oip::grpc::model_infer_request::InferInputTensor;
use onnxrt_serve::oip::grpc::{InferTensorContents, ModelInferRequest};
use serde_json::{json, Value as Json};

mod common;
use common::{folder, json_of, post, put, runtime, Server};

fn sample(seed: u64) -> Vec<f32> {
    (0..16).map(|i| ((seed * 16 + i) as f32 * 0.37).sin()).collect()
}

fn mlp_request(seed: u64) -> Json {
    json!({ "inputs": [{ "name": "x", "shape": [1, 16], "datatype": "FP32", "data": sample(seed) }] })
}

async fn get(c: &mut Connection, path: &str) -> Json {
    let reply = c.get(path).await.expect("reply");
    assert_eq!(reply.status, 200, "{path}: {}", reply.text());
    json_of(&reply)
}

#[test]
fn statistics_count_requests_and_their_time_and_the_config_is_tritons() {
    let root = folder("statistics");
    put(&root, "add", "add_f32.onnx");
    put(&root, "mlp/2", "mlp.onnx");
    std::fs::write(root.join("mlp/config.json"), json!({ "batching": true, "max_delay_us": 500 }).to_string())
        .expect("config");
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        for _ in 0..7 {
            let reply = post(&mut c, "/v2/models/add/infer", &json!({ "inputs": [a, a] })).await;
            assert_eq!(reply.status, 400, "{}", reply.text());
        }
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 1, 1, 1, 1, 1] });
        for _ in 0..10 {
            let reply = post(&mut c, "/v2/models/add/infer", &json!({ "inputs": [a, b] })).await;
            assert_eq!(reply.status, 200, "{}", reply.text());
        }
        for seed in 0..6 {
            assert_eq!(post(&mut c, "/v2/models/mlp/infer", &mlp_request(seed)).await.status, 200);
        }
        let stats = get(&mut c, "/v2/models/add/stats").await;
        let add = &stats["model_stats"][0];
        assert_eq!((add["name"].clone(), add["version"].clone()), (json!("add"), json!("1")), "{stats}");
        assert_eq!((add["inference_count"].clone(), add["execution_count"].clone()), (json!(10), json!(10)), "{add}");
        let phases = &add["inference_stats"];
        assert_eq!(phases["success"]["count"], 10, "{phases}");
        assert_eq!(phases["fail"]["count"], 7, "{phases}");
        for phase in ["queue", "compute_input", "compute_infer", "compute_output"] {
            assert_eq!(phases[phase]["count"], 10, "{phase}: {phases}");
        }
        let ns = |phase: &str| phases[phase]["ns"].as_u64().expect("ns");
        assert!(ns("compute_infer") > 0 && ns("success") >= ns("compute_infer") + ns("queue"), "{phases}");
        assert!(add["last_inference"].as_u64().expect("ms") > 1_700_000_000_000, "{add}");
        // Batched: the batches are the executions, the batcher's queue time is `queue`.
        let mlp = get(&mut c, "/v2/models/mlp/versions/2/stats").await;
        let mlp = &mlp["model_stats"][0];
        assert_eq!((mlp["version"].clone(), mlp["inference_count"].clone()), (json!("2"), json!(6)), "{mlp}");
        assert!((1..=6).contains(&mlp["execution_count"].as_u64().expect("count")), "{mlp}");
        let all = get(&mut c, "/v2/models/stats").await;
        let names: Vec<&str> =
            all["model_stats"].as_array().expect("list").iter().filter_map(|m| m["name"].as_str()).collect();
        assert_eq!(names, ["add", "mlp"]);
        assert_eq!(c.get("/v2/models/nothing/stats").await.expect("reply").status, 404);
        assert_eq!(c.get("/v2/models/mlp/versions/1/stats").await.expect("reply").status, 404);

        let config = get(&mut c, "/v2/models/mlp/versions/2/config").await;
        assert_eq!(config["platform"], "onnxruntime_onnx");
        assert_eq!(config["max_batch_size"], 0);
        assert_eq!(config["input"], json!([{ "name": "x", "data_type": "TYPE_FP32", "dims": [-1, 16] }]), "{config}");
        assert_eq!(config["dynamic_batching"]["max_queue_delay_microseconds"], 500, "{config}");
        let config = get(&mut c, "/v2/models/add/config").await;
        assert!(config.get("dynamic_batching").is_none(), "{config}");
    });
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_request_its_client_gives_up_on_is_logged_and_counted_as_a_failure() {
    // Issue 45, F9: a request whose client closed the connection (REST) or cancelled the call
    // (gRPC) mid-run left no access line and no statistics.
    use std::io::Write;
    let root = folder("abandoned");
    put(&root, "slow", "slow_loop.onnx");
    std::fs::write(root.join("slow/config.json"), json!({ "concurrency": 1, "warmup": false }).to_string())
        .expect("config");
    let log = root.join("serve.log");
    let server = Server::start_logging(&root, &[], &log);
    let rt = runtime();
    // About 0.2 ms per step: a few seconds, so that the client is gone while it runs.
    let body =
        json!({ "inputs": [{ "name": "iters", "shape": [], "datatype": "INT64", "data": [20_000] }] }).to_string();
    let mut stream = std::net::TcpStream::connect(server.rest).expect("connects");
    write!(
        stream,
        "POST /v2/models/slow/infer HTTP/1.1\r\nhost: x\r\nx-request-id: gave-up\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("request sent");
    let metric = |line: &str| {
        let line = line.to_owned();
        (0..400).any(|_| {
            let metrics = rt.block_on(async {
                Connection::open(server.rest).await.expect("c").get("/metrics").await.expect("m").text()
            });
            metrics.contains(&line) || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                false
            }
        })
    };
    assert!(metric("serve_model_in_flight{model=\"slow\"} 1\n"), "the run never started");
    drop(stream);
    // Until it is counted (at most 400 looks, 50 ms apart; the run takes a few seconds).
    let mut counted = json!(null);
    for _ in 0..400 {
        let stats = rt.block_on(async {
            get(&mut Connection::open(server.rest).await.expect("c"), "/v2/models/slow/stats").await
        });
        counted = stats["model_stats"][0]["inference_stats"].clone();
        if counted["success"]["count"] != 0 || counted["fail"]["count"] != 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(
        (counted["success"]["count"].clone(), counted["fail"]["count"].clone()),
        (json!(0), json!(1)),
        "{counted}"
    );
    assert!(metric("serve_model_in_flight{model=\"slow\"} 0\n"), "still counted in flight");
    let text = std::fs::read_to_string(&log).expect("log");
    let line = text.lines().find(|l| l.contains("gave-up")).unwrap_or_else(|| panic!("no access line: {text}"));
    assert!(line.contains("status=499"), "{line}");

    // gRPC: the client cancels the call mid-run (no deadline: only the cancel can end it early).
    let grpc = format!("http://{}", server.grpc.expect("gRPC started"));
    let call = rt.spawn(async move {
        let mut client = GrpcInferenceServiceClient::connect(grpc).await.expect("gRPC");
        let iters = InferInputTensor {
            name: "iters".into(),
            datatype: "INT64".into(),
            shape: vec![],
            contents: Some(InferTensorContents { int64_contents: vec![20_000], ..Default::default() }),
            ..Default::default()
        };
        let request = ModelInferRequest {
            model_name: "slow".into(),
            id: "gave-up-grpc".into(),
            inputs: vec![iters],
            ..Default::default()
        };
        client.model_infer(request).await
    });
    assert!(metric("serve_model_in_flight{model=\"slow\"} 1\n"), "the gRPC run never started");
    call.abort();
    let mut lines = Vec::new();
    for _ in 0..400 {
        let text = std::fs::read_to_string(&log).expect("log");
        lines = text.lines().filter(|l| l.contains("gave-up-grpc")).map(str::to_owned).collect();
        if !lines.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(lines.len(), 1, "one access line for the gRPC call: {lines:?}");
    assert!(lines[0].contains("status=\"Cancelled\""), "{lines:?}");
    let stats =
        rt.block_on(async { get(&mut Connection::open(server.rest).await.expect("c"), "/v2/models/slow/stats").await });
    assert_eq!(stats["model_stats"][0]["inference_stats"]["fail"]["count"], 2, "{stats}");
    drop(server);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn batch_statistics_are_filled_and_a_reload_of_the_same_version_keeps_the_counts() {
    // Issue 45, F10: `batch_stats` was always empty, and every load reset the statistics.
    let root = folder("reload-stats");
    put(&root, "mlp/1", "mlp.onnx");
    std::fs::write(root.join("mlp/config.json"), json!({ "batching": true, "max_batch": 4 }).to_string())
        .expect("config");
    put(&root, "add", "add_f32.onnx");
    let server = Server::start(&root, &["--model-control-mode", "explicit", "--load-model", "*"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        for seed in 0..6 {
            assert_eq!(post(&mut c, "/v2/models/mlp/infer", &mlp_request(seed)).await.status, 200);
        }
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 1, 1, 1, 1, 1] });
        for _ in 0..3 {
            assert_eq!(post(&mut c, "/v2/models/add/infer", &json!({ "inputs": [a, b] })).await.status, 200);
        }
        let batched = |stats: &Json| -> (u64, u64, u64) {
            let model = &stats["model_stats"][0];
            let sizes = model["batch_stats"].as_array().unwrap_or_else(|| panic!("batch_stats: {stats}"));
            let runs: u64 = sizes.iter().map(|s| s["compute_infer"]["count"].as_u64().expect("count")).sum();
            let requests: u64 = sizes
                .iter()
                .map(|s| s["batch_size"].as_u64().expect("size") * s["compute_infer"]["count"].as_u64().expect("count"))
                .sum();
            assert!(sizes.iter().all(|s| s["compute_infer"]["ns"].as_u64() > Some(0)), "{stats}");
            (model["inference_count"].as_u64().expect("count"), runs, requests)
        };
        let before = get(&mut c, "/v2/models/mlp/stats").await;
        let (count, runs, requests) = batched(&before);
        assert_eq!((count, requests), (6, 6), "{before}");
        assert_eq!(json!(runs), before["model_stats"][0]["execution_count"], "{before}");
        assert_eq!(batched(&get(&mut c, "/v2/models/add/stats").await), (3, 3, 3), "unbatched: runs of one");
        // The same version loaded again: the counts go on.
        assert_eq!(post(&mut c, "/v2/repository/models/mlp/load", &json!({})).await.status, 200);
        assert_eq!(post(&mut c, "/v2/models/mlp/infer", &mlp_request(9)).await.status, 200);
        let after = get(&mut c, "/v2/models/mlp/stats").await;
        let (count, runs_after, requests) = batched(&after);
        assert_eq!((count, requests), (7, 7), "{after}");
        assert_eq!(json!(runs_after), after["model_stats"][0]["execution_count"], "{after}");
        let metrics = c.get("/metrics").await.expect("metrics").text();
        assert!(
            metrics.contains("serve_model_requests_total{model=\"mlp\",version=\"1\",outcome=\"success\"} 7\n"),
            "{metrics}"
        );
    });
    let _ = std::fs::remove_dir_all(&root);
}
