//! The Open Inference Protocol end to end over REST: the real `serve` on a repository of the test
//! models (every element type, several inputs and outputs, a batched model, a slow one). Answers
//! equal single runs bitwise; every bad request is refused with what to fix; deadlines stop runs;
//! queues, connections, request heads and bodies are bounded; each request leaves a log line.
//! (gRPC and the real pretrained models are driven by tritonclient: tools/serve/check-clients.sh.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Bytes;
use onnxrt::{Session, Value};
use onnxrt_serve::http_client::{Connection, Reply};
use serde_json::{json, Value as Json};

const MODELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models");

/// Element types of the identity models: (file suffix, protocol datatype, JSON sample).
const TYPES: [(&str, &str, &str); 14] = [
    ("f32", "FP32", "[1.5, -2.25, 0.0]"),
    ("f64", "FP64", "[1.5, -2.25, 1e300]"),
    ("f16", "FP16", "[1.5, -2.25, 0.5]"),
    ("bf16", "BF16", "[1.5, -2.25, 0.5]"),
    ("i8", "INT8", "[-128, 0, 127]"),
    ("i16", "INT16", "[-32768, 0, 32767]"),
    ("i32", "INT32", "[-2147483648, 0, 2147483647]"),
    ("i64", "INT64", "[-9223372036854775808, 0, 9223372036854775807]"),
    ("u8", "UINT8", "[0, 1, 255]"),
    ("u16", "UINT16", "[0, 1, 65535]"),
    ("u32", "UINT32", "[0, 1, 4294967295]"),
    ("u64", "UINT64", "[0, 1, 18446744073709551615]"),
    ("bool", "BOOL", "[true, false, true]"),
    ("string", "BYTES", "[\"a\", \"\", \"ünï\"]"),
];

/// A repository of the test models in a fresh folder.
fn repository() -> PathBuf {
    let root = std::env::temp_dir().join(format!("oip-repo-{}-{:?}", std::process::id(), std::thread::current().id()));
    let _ = std::fs::remove_dir_all(&root);
    let put = |name: &str, file: &str, config: Option<Json>| {
        let folder = root.join(name);
        std::fs::create_dir_all(&folder).expect("model folder");
        std::fs::copy(Path::new(MODELS).join(file), folder.join("model.onnx")).expect("copy model");
        if let Some(config) = config {
            std::fs::write(folder.join("config.json"), config.to_string()).expect("config");
        }
    };
    for (suffix, _, _) in TYPES {
        // One identity model batched, so /metrics holds the batcher families of two models.
        let config = (suffix == "f32").then(|| json!({ "batching": true }));
        put(&format!("id_{suffix}"), &format!("identity_{suffix}.onnx"), config);
    }
    put("add", "add_f32.onnx", None);
    put("multi", "multi_output.onnx", None);
    put("mlp", "mlp.onnx", Some(json!({ "batching": true, "max_batch": 8, "max_delay_us": 2000 })));
    put("slow", "slow_loop.onnx", Some(json!({ "concurrency": 1, "queue": 1 })));
    // Triton's layout: the highest numbered version folder.
    let versioned = root.join("versioned");
    for version in ["1", "7"] {
        std::fs::create_dir_all(versioned.join(version)).expect("version folder");
        std::fs::copy(Path::new(MODELS).join("mlp.onnx"), versioned.join(version).join("model.onnx")).expect("copy");
    }
    root
}

/// A running `serve`, killed when dropped; its log lines (stderr) collected.
struct Server {
    child: Child,
    rest: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(repository: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_serve"))
            .arg("--model-repository")
            .arg(repository)
            .args(["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--workers", "2"])
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("serve starts");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().expect("stderr piped");
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().expect("log").push(line);
            }
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("serve prints its address");
        let rest = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line {line:?}; log: {:?}", log.lock().expect("log")));
        Server { child, rest, log }
    }

    fn log_lines(&self) -> Vec<String> {
        self.log.lock().expect("log").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

async fn post_json(c: &mut Connection, path: &str, body: &Json) -> Reply {
    c.send("POST", path, &[("content-type", "application/json")], Bytes::from(body.to_string())).await.expect("reply")
}

fn json_of(reply: &Reply) -> Json {
    serde_json::from_slice(&reply.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", reply.text()))
}

/// A body with the binary-tensor extension: the JSON header, then `binary`.
fn binary_body(header: &Json, binary: &[u8]) -> (String, Bytes) {
    let mut body = header.to_string().into_bytes();
    let length = body.len().to_string();
    body.extend_from_slice(binary);
    (length, Bytes::from(body))
}

/// An answer with binary outputs: its JSON header and the bytes after it.
fn split_binary(reply: &Reply) -> (Json, Bytes) {
    let length: usize = reply
        .headers
        .get("inference-header-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no inference-header-content-length: {}", reply.text()));
    (serde_json::from_slice(&reply.body[..length]).expect("JSON header"), reply.body.slice(length..))
}

#[test]
fn every_element_type_round_trips_as_json_and_as_binary() {
    let root = repository();
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        for (suffix, datatype, sample) in TYPES {
            let name = format!("id_{suffix}");
            let metadata = json_of(&c.get(&format!("/v2/models/{name}")).await.expect("metadata"));
            assert_eq!(metadata["inputs"][0]["datatype"], datatype, "{metadata}");
            assert_eq!(metadata["platform"], "onnxruntime_onnx");
            let input_name = metadata["inputs"][0]["name"].as_str().expect("input name").to_owned();
            let data: Json = serde_json::from_str(sample).expect("sample");
            let request = json!({ "id": "r1", "inputs": [{ "name": input_name, "shape": [1, 3], "datatype": datatype, "data": data }] });
            let reply = post_json(&mut c, &format!("/v2/models/{name}/infer"), &request).await;
            assert_eq!(reply.status, 200, "{name}: {}", reply.text());
            let answer = json_of(&reply);
            assert_eq!(answer["id"], "r1");
            assert_eq!(answer["model_name"], name.as_str());
            let output = &answer["outputs"][0];
            assert_eq!(output["datatype"], datatype, "{answer}");
            assert_eq!(output["shape"], json!([1, 3]));
            // The samples are exactly representable in their type: the same numbers come back.
            assert_eq!(output["data"], data, "{name}");
            // The same tensor as raw bytes in, raw bytes out.
            let raw = raw_of(datatype, &data);
            let header = json!({
                "inputs": [{ "name": input_name, "shape": [1, 3], "datatype": datatype, "parameters": { "binary_data_size": raw.len() } }],
                "outputs": [{ "name": metadata["outputs"][0]["name"], "parameters": { "binary_data": true } }]
            });
            let (length, body) = binary_body(&header, &raw);
            let reply = c
                .send(
                    "POST",
                    &format!("/v2/models/{name}/infer"),
                    &[("content-type", "application/octet-stream"), ("inference-header-content-length", &length)],
                    body,
                )
                .await
                .expect("reply");
            assert_eq!(reply.status, 200, "{name}: {}", reply.text());
            let (answer, bytes) = split_binary(&reply);
            assert_eq!(answer["outputs"][0]["parameters"]["binary_data_size"], raw.len(), "{answer}");
            assert_eq!(&bytes[..], &raw[..], "{name}: binary answer");
        }
    });
}

/// The protocol's raw form of a JSON sample.
fn raw_of(datatype: &str, data: &Json) -> Vec<u8> {
    let items = data.as_array().expect("array");
    let mut out = Vec::new();
    for item in items {
        match datatype {
            "FP32" => out.extend((item.as_f64().expect("test value") as f32).to_le_bytes()),
            "FP64" => out.extend(item.as_f64().expect("test value").to_le_bytes()),
            "FP16" => out.extend(half::f16::from_f64(item.as_f64().expect("test value")).to_le_bytes()),
            "BF16" => out.extend(half::bf16::from_f64(item.as_f64().expect("test value")).to_le_bytes()),
            "INT8" => out.extend((item.as_i64().expect("test value") as i8).to_le_bytes()),
            "INT16" => out.extend((item.as_i64().expect("test value") as i16).to_le_bytes()),
            "INT32" => out.extend((item.as_i64().expect("test value") as i32).to_le_bytes()),
            "INT64" => out.extend(item.as_i64().expect("test value").to_le_bytes()),
            "UINT8" => out.extend((item.as_u64().expect("test value") as u8).to_le_bytes()),
            "UINT16" => out.extend((item.as_u64().expect("test value") as u16).to_le_bytes()),
            "UINT32" => out.extend((item.as_u64().expect("test value") as u32).to_le_bytes()),
            "UINT64" => out.extend(item.as_u64().expect("test value").to_le_bytes()),
            "BOOL" => out.push(u8::from(item.as_bool().expect("test value"))),
            "BYTES" => {
                let text = item.as_str().expect("test value").as_bytes();
                out.extend((text.len() as u32).to_le_bytes());
                out.extend(text);
            }
            other => panic!("{other}"),
        }
    }
    out
}

#[test]
fn several_inputs_requested_outputs_and_every_bad_request_named() {
    let root = repository();
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [[1, 2, 3], [4, 5, 6]] });
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [10, 20, 30, 40, 50, 60] });
        let reply = post_json(&mut c, "/v2/models/add/infer", &json!({ "inputs": [b, a] })).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(json_of(&reply)["outputs"][0]["data"], json!([11.0, 22.0, 33.0, 44.0, 55.0, 66.0]));

        let x = json!({ "name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2, 3] });
        let reply = post_json(&mut c, "/v2/models/multi/infer", &json!({ "inputs": [x], "outputs": [{ "name": "squared" }] })).await;
        let answer = json_of(&reply);
        assert_eq!(answer["outputs"].as_array().map(Vec::len), Some(1), "{answer}");
        assert_eq!(answer["outputs"][0]["name"], "squared");
        assert_eq!(answer["outputs"][0]["data"], json!([1.0, 4.0, 9.0]));
        let reply = post_json(&mut c, "/v2/models/multi/infer", &json!({ "inputs": [x] })).await;
        let names: Vec<&str> = json_of(&reply)["outputs"].as_array().expect("test value").iter().map(|o| o["name"].as_str().expect("test value").to_owned().leak() as &str).collect();
        assert_eq!(names, ["doubled", "squared", "negated"], "all outputs, in model order");

        // Versioned folders: the highest number is served.
        let metadata = json_of(&c.get("/v2/models/versioned").await.expect("metadata"));
        assert_eq!(metadata["versions"], json!(["7"]));
        assert_eq!(c.get("/v2/models/versioned/versions/7/ready").await.expect("ready").status, 200);

        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let cases: Vec<(&str, &str, Json, u16, &str)> = vec![
            ("unknown model", "/v2/models/nope/infer", json!({ "inputs": [] }), 404, "no model `nope`"),
            ("unknown version", "/v2/models/add/versions/9/infer", json!({ "inputs": [a] }), 404, "no version `9`"),
            ("missing input", "/v2/models/add/infer", json!({ "inputs": [a] }), 400, "input `b` (FP32 [2, 3]) is missing"),
            ("input twice", "/v2/models/add/infer", json!({ "inputs": [a, a] }), 400, "input `a` was given more than once"),
            ("unknown input", "/v2/models/multi/infer", json!({ "inputs": [{ "name": "y", "shape": [1], "datatype": "FP32", "data": [1] }] }), 400, "no input named `y`"),
            ("wrong datatype", "/v2/models/multi/infer", json!({ "inputs": [{ "name": "x", "shape": [1], "datatype": "INT32", "data": [1] }] }), 400, "input `x` is FP32 in the model; the request sent INT32"),
            ("wrong shape", "/v2/models/add/infer", json!({ "inputs": [{ "name": "a", "shape": [3, 2], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] }, { "name": "b", "shape": [3, 2], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] }] }), 400, "input `a` has shape [2, 3] in the model (-1: any size); the request sent [3, 2]"),
            ("data shorter than shape", "/v2/models/multi/infer", json!({ "inputs": [{ "name": "x", "shape": [4], "datatype": "FP32", "data": [1] }] }), 400, "holds 4 element(s), `data` holds 1"),
            ("unknown datatype", "/v2/models/multi/infer", json!({ "inputs": [{ "name": "x", "shape": [1], "datatype": "FLOAT", "data": [1] }] }), 400, "unknown datatype `FLOAT`"),
            ("no data", "/v2/models/multi/infer", json!({ "inputs": [{ "name": "x", "shape": [1], "datatype": "FP32" }] }), 400, "has no `data`"),
            ("unknown output", "/v2/models/multi/infer", json!({ "inputs": [x], "outputs": [{ "name": "cubed" }] }), 400, "no output `cubed`"),
            ("output twice", "/v2/models/multi/infer", json!({ "inputs": [x], "outputs": [{ "name": "squared" }, { "name": "squared" }] }), 400, "requested twice"),
            ("misspelt field", "/v2/models/multi/infer", json!({ "inputs": [x], "ouputs": [] }), 400, "unknown field `ouputs`"),
            ("negative axis", "/v2/models/multi/infer", json!({ "inputs": [{ "name": "x", "shape": [-1], "datatype": "FP32", "data": [] }] }), 400, "negative axis"),
            ("bad timeout", "/v2/models/multi/infer", json!({ "inputs": [x], "parameters": { "timeout": "soon" } }), 400, "microseconds"),
        ];
        for (what, path, body, status, message) in cases {
            let reply = post_json(&mut c, path, &body).await;
            assert_eq!(reply.status, status, "{what}: {}", reply.text());
            let error = json_of(&reply)["error"].as_str().unwrap_or_default().to_owned();
            assert!(error.contains(message), "{what}: {error:?} lacks {message:?}");
        }
        // Bodies that are not what their headers say.
        let binary_cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
            ("not JSON", "12", b"{not json at all".to_vec(), "not an inference request's JSON"),
            ("header longer than body", "999", b"{}".to_vec(), "says 999 bytes of JSON"),
            ("bad header length", "ten", b"{}".to_vec(), "must be the JSON header's length"),
        ];
        for (what, length, body, message) in binary_cases {
            let reply = c
                .send("POST", "/v2/models/multi/infer", &[("inference-header-content-length", length)], Bytes::from(body))
                .await
                .expect("reply");
            assert_eq!(reply.status, 400, "{what}: {}", reply.text());
            assert!(reply.text().contains(message), "{what}: {}", reply.text());
        }
        let header = json!({ "inputs": [{ "name": "x", "shape": [2], "datatype": "FP32", "parameters": { "binary_data_size": 8 } }] });
        for (what, extra, message) in [("binary cut short", 4usize, "only 4 bytes of binary data remain"), ("binary left over", 12, "4 bytes of binary data follow")] {
            let (length, body) = binary_body(&header, &vec![0u8; extra]);
            let reply = c.send("POST", "/v2/models/multi/infer", &[("inference-header-content-length", &length)], body).await.expect("reply");
            assert_eq!(reply.status, 400, "{what}: {}", reply.text());
            assert!(reply.text().contains(message), "{what}: {}", reply.text());
        }
        // Still serving, and the routes the protocol has.
        assert_eq!(c.get("/v2/health/live").await.expect("live").status, 200);
        assert_eq!(c.get("/v2/health/ready").await.expect("ready").status, 200);
        let index = json_of(&c.send("POST", "/v2/repository/index", &[], Bytes::new()).await.expect("index"));
        assert_eq!(index.as_array().map(Vec::len), Some(TYPES.len() + 5), "{index}");
        assert!(index.as_array().expect("test value").iter().all(|m| m["state"] == "READY"), "{index}");
        let server_metadata = json_of(&c.get("/v2").await.expect("server metadata"));
        assert!(server_metadata["extensions"].as_array().expect("test value").contains(&json!("binary_tensor_data")));
        let reply = c.get("/v3/nothing").await.expect("404");
        assert_eq!(reply.status, 404);
        let metrics = c.get("/metrics").await.expect("metrics").text();
        assert!(metrics.contains("serve_http_responses_total{code=\"404\"} 3"), "{metrics}");
        assert!(metrics.contains("serve_model_requests_total{model=\"multi\",version=\"1\",outcome=\"failure\"}"), "{metrics}");
        check_exposition_format(&metrics);
    });
}

/// What promtool checks of the text format that a mistake here could break: each family has one
/// HELP and one TYPE line, before its samples; every sample belongs to a declared family; no
/// sample (name and labels) appears twice.
fn check_exposition_format(metrics: &str) {
    let mut families: Vec<(String, String)> = Vec::new();
    let mut samples = std::collections::HashSet::new();
    for line in metrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split_whitespace().next().expect("HELP name").to_owned();
            assert!(!families.iter().any(|(f, _)| *f == name), "HELP {name} twice");
            families.push((name, String::new()));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            let name = words.next().expect("TYPE name");
            let kind = words.next().expect("TYPE kind");
            let family = families.last_mut().expect("TYPE after HELP");
            assert_eq!(family.0, name, "TYPE {name} does not follow its HELP");
            assert!(family.1.is_empty(), "TYPE {name} twice");
            family.1 = kind.to_owned();
        } else if !line.is_empty() {
            let (series, value) = line.rsplit_once(' ').expect("sample value");
            assert!(value.parse::<f64>().is_ok(), "{line}");
            let name = series.split('{').next().expect("name");
            let family = families.last().expect("a sample before any family");
            let belongs = name == family.0
                || (family.1 == "histogram"
                    && ["_bucket", "_sum", "_count"].iter().any(|s| name.strip_suffix(s) == Some(&family.0)));
            assert!(belongs, "sample {name} under family {}", family.0);
            assert!(samples.insert(series.to_owned()), "sample {series} twice");
        }
    }
    assert!(families.len() > 10, "{metrics}");
}

#[test]
fn batched_answers_equal_single_runs_bitwise() {
    let root = repository();
    let server = Server::start(&root, &[]);
    let session = Session::builder().commit_from_file(Path::new(MODELS).join("mlp.onnx")).expect("mlp");
    let sample = |seed: u64| -> Vec<f32> { (0..16).map(|i| ((seed * 16 + i) as f32 * 0.37).sin()).collect() };
    let single = |data: Vec<f32>, rows: i64| -> Vec<f32> {
        let x = Value::from_vec(&[rows, 16], data).expect("x");
        let outputs = session.run([("x", &x)]).expect("run");
        outputs.get("logits").expect("logits").view::<f32>().expect("f32").iter().copied().collect()
    };
    let rt = runtime();
    let answers: Vec<(u64, Vec<f32>)> = rt.block_on(async {
        let mut tasks = Vec::new();
        for client in 0..16u64 {
            let address = server.rest;
            let data = sample(client);
            tasks.push(tokio::spawn(async move {
                let mut c = Connection::open(address).await.expect("connects");
                let request = json!({ "inputs": [{ "name": "x", "shape": [1, 16], "datatype": "FP32", "data": data }],
                                      "parameters": { "binary_data_output": true } });
                let reply = post_json(&mut c, "/v2/models/mlp/infer", &request).await;
                assert_eq!(reply.status, 200, "{}", reply.text());
                let (_, bytes) = split_binary(&reply);
                let logits: Vec<f32> =
                    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("test value"))).collect();
                (client, logits)
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.push(task.await.expect("client"));
        }
        all
    });
    for (seed, logits) in &answers {
        let expected = single(sample(*seed), 1);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(logits), bits(&expected), "sample {seed}");
    }
    assert_ne!(answers[0].1, answers[1].1);
    // A request of three rows runs alone, on the same session.
    let data: Vec<f32> = (0..3).flat_map(sample).collect();
    let reply = rt.block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        post_json(
            &mut c,
            "/v2/models/mlp/infer",
            &json!({ "inputs": [{ "name": "x", "shape": [3, 16], "datatype": "FP32", "data": data }] }),
        )
        .await
    });
    let answer = json_of(&reply);
    assert_eq!(answer["outputs"][0]["shape"], json!([3, 4]));
    let got: Vec<f32> = answer["outputs"][0]["data"]
        .as_array()
        .expect("test value")
        .iter()
        .map(|v| v.as_f64().expect("test value") as f32)
        .collect();
    assert_eq!(got, single(data, 3));
    let metrics =
        rt.block_on(async { Connection::open(server.rest).await.expect("c").get("/metrics").await.expect("m").text() });
    assert!(metrics.contains("batcher_requests_completed_total{model=\"mlp\"} 16"), "{metrics}");
}

/// Polls `/metrics` until `line` appears (a bounded number of times).
fn wait_for_metric(rt: &tokio::runtime::Runtime, address: SocketAddr, line: &str) {
    for _ in 0..400 {
        let metrics =
            rt.block_on(async { Connection::open(address).await.expect("c").get("/metrics").await.expect("m").text() });
        if metrics.contains(line) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("`{line}` never appeared in /metrics");
}

#[test]
fn deadlines_stop_runs_and_every_queue_is_bounded() {
    let root = repository();
    let server = Server::start(&root, &["--timeout-ms", "120000"]);
    let rt = runtime();
    // About 0.2 ms per step: ten million steps are half an hour.
    let long = json!({ "inputs": [{ "name": "iters", "shape": [], "datatype": "INT64", "data": [10_000_000] }] });
    let short = json!({ "inputs": [{ "name": "iters", "shape": [], "datatype": "INT64", "data": [1] }] });
    rt.block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        // A deadline of its own (200 ms): 504, and the run is stopped...
        let mut timed = long.clone();
        timed["parameters"] = json!({ "timeout": 200_000 });
        let reply = post_json(&mut c, "/v2/models/slow/infer", &timed).await;
        assert_eq!(reply.status, 504, "{}", reply.text());
        assert!(reply.text().contains("deadline passed"), "{}", reply.text());
        // ...so the model's one run slot is free again: this one is answered (it would wait for
        // the half-hour run otherwise, until the 120 s server timeout).
        let reply = post_json(&mut c, "/v2/models/slow/infer", &short).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    });
    // The slot taken by a long run, one request waiting (the queue holds 1): the next is refused.
    let address = server.rest;
    let first = rt.spawn(async move {
        let mut c = Connection::open(address).await.expect("connects");
        post_json(&mut c, "/v2/models/slow/infer", &long).await
    });
    wait_for_metric(&rt, address, "serve_model_in_flight{model=\"slow\"} 1\n");
    let waiting = short.clone();
    let second = rt.spawn(async move {
        let mut c = Connection::open(address).await.expect("connects");
        post_json(&mut c, "/v2/models/slow/infer", &waiting).await
    });
    wait_for_metric(&rt, address, "serve_model_in_flight{model=\"slow\"} 2\n");
    rt.block_on(async {
        let mut c = Connection::open(address).await.expect("connects");
        let reply = post_json(&mut c, "/v2/models/slow/infer", &short).await;
        assert_eq!(reply.status, 503, "{}", reply.text());
        assert!(reply.text().contains("its queue holds 1"), "{}", reply.text());
        // Other models are not held up by it.
        let x = json!({ "inputs": [{ "name": "x", "shape": [1], "datatype": "FP32", "data": [2] }] });
        assert_eq!(post_json(&mut c, "/v2/models/multi/infer", &x).await.status, 200);
    });
    first.abort();
    second.abort();
}

/// A raw connection with a guard against hanging the test (never an assertion about time).
fn raw(address: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(address).expect("connects");
    stream.set_read_timeout(Some(Duration::from_secs(120))).expect("read timeout");
    stream
}

fn read_all(mut stream: TcpStream) -> String {
    let mut text = Vec::new();
    let _ = stream.read_to_end(&mut text);
    String::from_utf8_lossy(&text).into_owned()
}

#[test]
fn stalled_bodies_slow_heads_and_surplus_connections_are_closed() {
    let root = repository();
    let server =
        Server::start(&root, &["--header-timeout-ms", "300", "--body-timeout-ms", "300", "--max-connections", "24"]);
    // A body that stalls: 1 KB of a declared 600 KB.
    let mut stalled = raw(server.rest);
    stalled
        .write_all(b"POST /v2/models/multi/infer HTTP/1.1\r\nhost: x\r\ncontent-length: 600000\r\n\r\n")
        .expect("head");
    stalled.write_all(&[b' '; 1024]).expect("some body");
    let answer = read_all(stalled);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("did not arrive within 300 ms"), "{answer}");
    // Slowloris: 20 connections that never finish their head are all closed.
    let slow: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = raw(server.rest);
            s.write_all(b"GET /v2 HTTP/1.1\r\nx-slow: ").expect("part of a head");
            s
        })
        .collect();
    for stream in slow {
        let answer = read_all(stream);
        assert!(!answer.contains("200 OK"), "a head that never ended was answered: {answer}");
    }
    // An idle keep-alive connection is closed too (no second request within the header timeout).
    let mut idle = raw(server.rest);
    idle.write_all(b"GET /v2/health/live HTTP/1.1\r\nhost: x\r\n\r\n").expect("request");
    let answer = read_all(idle);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Still serving.
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        assert_eq!(c.get("/v2/health/ready").await.expect("ready").status, 200);
    });
    let log = server.log_lines().join("\n");
    assert!(log.contains("status=408"), "{log}");
}

#[test]
fn connections_over_the_cap_are_refused_and_requests_are_logged() {
    let root = repository();
    let server = Server::start(&root, &["--max-connections", "3", "--max-connections-per-peer", "3"]);
    // Three open connections hold every slot (the header timeout is 10 s by default).
    let held: Vec<TcpStream> = (0..3).map(|_| raw(server.rest)).collect();
    let mut refused = String::new();
    for _ in 0..100 {
        // The slot count is read when the server accepts: retry until it has accepted all three.
        let mut extra = raw(server.rest);
        let _ = extra.write_all(b"GET /v2 HTTP/1.1\r\nhost: x\r\n\r\n");
        refused = read_all(extra);
        if refused.starts_with("HTTP/1.1 503") {
            break;
        }
    }
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("as many connections open as it allows"), "{refused}");
    drop(held);
    // Once they close, requests are served again; the request id is echoed and logged.
    let reply = runtime().block_on(async {
        let mut reply = None;
        for _ in 0..100 {
            let Ok(mut c) = Connection::open(server.rest).await else { continue };
            let body = Bytes::from(json!({ "inputs": [] }).to_string());
            match c.send("POST", "/v2/models/multi/infer", &[("x-request-id", "req-42")], body).await {
                Ok(r) if r.status != 503 => {
                    reply = Some(r);
                    break;
                }
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        reply.expect("served again after the held connections closed")
    });
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(reply.headers.get("x-request-id").and_then(|v| v.to_str().ok()), Some("req-42"));
    let mut log = String::new();
    for _ in 0..100 {
        log = server.log_lines().join("\n");
        if log.contains("req-42") {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let line = log.lines().find(|l| l.contains("id=\"req-42\"")).unwrap_or_else(|| panic!("no access line: {log}"));
    assert!(line.contains("status=400") && line.contains("is missing"), "{line}");
    assert!(log.contains("connection refused: every connection slot is taken"), "{log}");
}

#[test]
fn with_strict_start_a_repository_that_cannot_be_served_is_refused_at_start_naming_the_folder() {
    type MakeRepository = fn(&Path);
    let cases: [(&str, MakeRepository, &str); 6] = [
        ("no model file", |root| std::fs::create_dir_all(root.join("empty")).expect("test value"), "has no model.onnx"),
        (
            "misspelt setting",
            |root| {
                std::fs::create_dir_all(root.join("m")).expect("test value");
                std::fs::copy(Path::new(MODELS).join("mlp.onnx"), root.join("m/model.onnx")).expect("test value");
                std::fs::write(root.join("m/config.json"), r#"{"max_bacth": 4}"#).expect("test value");
            },
            "unknown field `max_bacth`",
        ),
        (
            "batching a model without a batch axis",
            |root| {
                std::fs::create_dir_all(root.join("add")).expect("test value");
                std::fs::copy(Path::new(MODELS).join("add_f32.onnx"), root.join("add/model.onnx")).expect("test value");
                std::fs::write(root.join("add/config.json"), r#"{"batching": true}"#).expect("test value");
            },
            "\"batching\": false",
        ),
        (
            "warm-up fill of an input the model lacks",
            |root| {
                std::fs::create_dir_all(root.join("m")).expect("folder");
                std::fs::copy(Path::new(MODELS).join("mlp.onnx"), root.join("m/model.onnx")).expect("copy");
                std::fs::write(root.join("m/config.json"), r#"{"warmup_fill": {"sr": 16000}}"#).expect("config");
            },
            "`warmup_fill` names `sr`, which is not an input",
        ),
        (
            "shapes that do not fit the model",
            |root| {
                std::fs::create_dir_all(root.join("m")).expect("folder");
                std::fs::copy(Path::new(MODELS).join("mlp.onnx"), root.join("m/model.onnx")).expect("copy");
                std::fs::write(root.join("m/config.json"), r#"{"shapes": {"x": [-1, 8]}}"#).expect("config");
            },
            "does not fit the model's [-1, 16]",
        ),
        (
            "not a model",
            |root| {
                std::fs::create_dir_all(root.join("bad")).expect("test value");
                std::fs::copy(Path::new(MODELS).join("bad_truncated.onnx"), root.join("bad/model.onnx"))
                    .expect("test value");
            },
            "bad/model.onnx",
        ),
    ];
    for (what, make, message) in cases {
        let root = std::env::temp_dir().join(format!("oip-bad-{}-{}", std::process::id(), what.replace(' ', "-")));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("test value");
        make(&root);
        let output = Command::new(env!("CARGO_BIN_EXE_serve"))
            .arg("--model-repository")
            .arg(&root)
            .args(["--listen", "127.0.0.1:0", "--grpc-listen", "off", "--strict-start"])
            .output()
            .expect("serve runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
        assert!(stderr.contains(message), "{what}: {stderr}");
        assert!(output.stdout.is_empty(), "{what}: it must not listen");
    }
}
