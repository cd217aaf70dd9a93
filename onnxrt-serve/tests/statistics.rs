//! Triton's statistics extension and model configuration over REST on the real `serve`: counts
//! and times after a known number of requests (answered and refused), per model, per version and
//! for all; the configuration as perf_analyzer reads it. (tritonclient over HTTP and gRPC:
//! check_control.py in tools/serve/check-clients.sh.)

use onnxrt_serve::http_client::Connection;
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
