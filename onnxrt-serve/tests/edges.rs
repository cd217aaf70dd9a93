//! The protocol's edges against the real `serve`, over REST and gRPC: JSON tensors bounded in
//! memory on the way in and in size on the way out, request and output parameters read by one
//! set of rules whichever protocol brought them, gRPC messages past `--max-body-bytes` refused
//! in the server's terms. Bounded by counts.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Bytes;
use onnxrt_serve::http_client::{Connection, Reply};
use onnxrt_serve::oip::grpc::grpc_inference_service_client::GrpcInferenceServiceClient;
use onnxrt_serve::oip::grpc::infer_parameter::ParameterChoice;
use onnxrt_serve::oip::grpc::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use onnxrt_serve::oip::grpc::{InferParameter, ModelInferRequest};
use serde_json::{json, Value as Json};

const MODELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models");

/// A repository with `identity_f32.onnx` as `id` (input `x`, output `y`, FP32 [1, n]).
fn repository(test: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("edges-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("id")).expect("model folder");
    std::fs::copy(Path::new(MODELS).join("identity_f32.onnx"), root.join("id/model.onnx")).expect("model");
    root
}

/// A running `serve`, killed when dropped; its log lines (stderr) collected.
struct Server {
    child: Child,
    rest: SocketAddr,
    grpc: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(repository: &Path, args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_serve"))
            .arg("--model-repository")
            .arg(repository)
            .args(["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--workers", "2"])
            .args(["--body-timeout-ms", "120000"])
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
        let mut address = |prefix: &str| {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            line.strip_prefix(prefix)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("expected `{prefix}…`, got {line:?}; log: {:?}", log.lock().expect("log")))
        };
        let rest = address("listening on http://");
        let grpc = address("grpc listening on ");
        Server { child, rest, grpc, log }
    }

    /// The log once a line holds every one of `words`, or as it is after a bounded number of looks.
    fn log_with(&self, words: &[&str]) -> String {
        for _ in 0..400 {
            let log = self.log.lock().expect("log").join("\n");
            if log.lines().any(|l| words.iter().all(|w| l.contains(w))) {
                return log;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        self.log.lock().expect("log").join("\n")
    }

    /// The server process's peak resident memory so far (VmHWM), in MiB.
    fn peak_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
        line.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).expect("kB") / 1024
    }

    async fn grpc_client(&self) -> GrpcInferenceServiceClient<tonic::transport::Channel> {
        GrpcInferenceServiceClient::connect(format!("http://{}", self.grpc)).await.expect("gRPC connects")
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

async fn post(address: SocketAddr, body: impl Into<Bytes>) -> Reply {
    let mut c = Connection::open(address).await.expect("connects");
    c.send("POST", "/v2/models/id/infer", &[("content-type", "application/json")], body.into()).await.expect("reply")
}

fn error_of(reply: &Reply) -> String {
    let json: Json = serde_json::from_slice(&reply.body).unwrap_or_else(|e| panic!("{e}: {}", reply.text()));
    json["error"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn json_tensor_data_is_read_without_a_json_tree() {
    let root = repository("json-in");
    let server = Server::start(&root, &[]);
    let before = server.peak_mib();
    // 8 million numbers in 16 MB of JSON: 32 MB as FP32. A tree of JSON values took ~40 bytes
    // an element (over 300 MiB here); read straight into the tensor it stays near the tensor's
    // size. The input's name is wrong, so nothing runs: the peak is the reading's.
    let count = 8_000_000usize;
    let mut body = String::with_capacity(count * 2 + 200);
    body.push_str(r#"{"inputs":[{"name":"not_x","datatype":"FP32","shape":[1,"#);
    body.push_str(&count.to_string());
    body.push_str(r#"],"data":["#);
    for i in 0..count {
        body.push_str(if i + 1 < count { "0," } else { "0" });
    }
    body.push_str("]}]}");
    let reply = runtime().block_on(post(server.rest, body));
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(error_of(&reply).contains("not_x"), "{}", reply.text());
    let grown = server.peak_mib().saturating_sub(before);
    assert!(grown < 200, "reading 16 MB of JSON data raised the peak by {grown} MiB");
}

#[test]
fn a_json_answer_past_its_limit_is_refused_naming_the_binary_extension() {
    let root = repository("json-out");
    // 1 MiB bodies: JSON answers up to 2 MiB.
    let server = Server::start(&root, &["--max-body-bytes", "1048576"]);
    // 250,000 floats: 1 MB sent as binary, several MB as JSON text.
    let count = 250_000usize;
    let raw: Vec<u8> = (0..count).flat_map(|i| (i as f32 * 0.123_457).to_le_bytes()).collect();
    let request = |binary_out: bool| {
        let header = json!({
            "inputs": [{ "name": "x", "shape": [1, count], "datatype": "FP32", "parameters": { "binary_data_size": raw.len() } }],
            "parameters": { "binary_data_output": binary_out },
        })
        .to_string();
        let mut body = header.clone().into_bytes();
        body.extend(&raw);
        (header.len(), Bytes::from(body))
    };
    runtime().block_on(async {
        let send = |(length, body): (usize, Bytes)| async move {
            let mut c = Connection::open(server.rest).await.expect("connects");
            let length = length.to_string();
            c.send("POST", "/v2/models/id/infer", &[("inference-header-content-length", length.as_str())], body)
                .await
                .expect("reply")
        };
        let refused = send(request(false)).await;
        assert_eq!(refused.status, 400, "{}", refused.text().chars().take(300).collect::<String>());
        let error = error_of(&refused);
        assert!(error.contains("--max-body-bytes") && error.contains("binary_data_output"), "{error}");
        let answered = send(request(true)).await;
        assert_eq!(answered.status, 200, "{}", answered.text().chars().take(300).collect::<String>());
        assert!(answered.body.ends_with(&raw), "the binary answer carries the input back");
    });
}

/// A gRPC request for `id` of three floats with `parameters` and, on its one output, `output`.
fn grpc_request(parameters: &[(&str, ParameterChoice)], output: &[(&str, ParameterChoice)]) -> ModelInferRequest {
    let map = |pairs: &[(&str, ParameterChoice)]| {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), InferParameter { parameter_choice: Some(v.clone()) })).collect()
    };
    ModelInferRequest {
        model_name: "id".into(),
        inputs: vec![InferInputTensor {
            name: "x".into(),
            datatype: "FP32".into(),
            shape: vec![1, 3],
            ..Default::default()
        }],
        raw_input_contents: vec![[1.0f32, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect()],
        outputs: vec![InferRequestedOutputTensor { name: "y".into(), parameters: map(output) }],
        parameters: map(parameters),
        ..Default::default()
    }
}

/// What is sent, its REST request and output parameters, the same over gRPC, and the words the
/// refusal has.
type Case = (
    &'static str,
    Json,
    Json,
    Vec<(&'static str, ParameterChoice)>,
    Vec<(&'static str, ParameterChoice)>,
    &'static str,
);

#[test]
fn parameters_follow_one_set_of_rules_over_rest_and_grpc() {
    let root = repository("parameters");
    let server = Server::start(&root, &[]);
    use ParameterChoice::{DoubleParam, Int64Param, StringParam, Uint64Param};
    // (what, request parameters, output parameters, the words the refusal has); each refused.
    let refused: [Case; 4] = [
        (
            "classification -1",
            json!({}),
            json!({ "classification": -1 }),
            vec![],
            vec![("classification", Int64Param(-1))],
            "whole number",
        ),
        (
            "sequence_id 5.0",
            json!({ "sequence_id": 5.0 }),
            json!({}),
            vec![("sequence_id", DoubleParam(5.0))],
            vec![],
            "sequence_id",
        ),
        (
            "sequence_id text",
            json!({ "sequence_id": "s1" }),
            json!({}),
            vec![("sequence_id", StringParam("s1".into()))],
            vec![],
            "sequence_id",
        ),
        ("timeout -5", json!({ "timeout": -5 }), json!({}), vec![("timeout", Int64Param(-5))], vec![], "timeout"),
    ];
    runtime().block_on(async {
        let mut grpc = server.grpc_client().await;
        for (what, parameters, output, grpc_parameters, grpc_output, words) in refused {
            let rest = json!({
                "inputs": [{ "name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1.0, 2.0, 3.0] }],
                "outputs": [{ "name": "y", "parameters": output }],
                "parameters": parameters,
            });
            let reply = post(server.rest, rest.to_string()).await;
            assert_eq!(reply.status, 400, "REST {what}: {}", reply.text());
            assert!(error_of(&reply).contains(words), "REST {what}: {}", reply.text());
            let status = grpc.model_infer(grpc_request(&grpc_parameters, &grpc_output)).await.expect_err(what);
            assert_eq!(status.code(), tonic::Code::InvalidArgument, "gRPC {what}: {status:?}");
            assert!(status.message().contains(words), "gRPC {what}: {}", status.message());
        }
        // And what both take: no sequence (0), a timeout in µs, class_count 0.
        let fine = [("sequence_id", Uint64Param(0)), ("timeout", Uint64Param(60_000_000))];
        let answered = grpc.model_infer(grpc_request(&fine, &[("classification", Int64Param(0))])).await;
        assert!(answered.is_ok(), "{answered:?}");
        let rest = json!({
            "inputs": [{ "name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1.0, 2.0, 3.0] }],
            "outputs": [{ "name": "y", "parameters": { "class_count": 0 } }],
            "parameters": { "sequence_id": 0, "timeout": 60_000_000 },
        });
        assert_eq!(post(server.rest, rest.to_string()).await.status, 200);
        // class_count 2 (REST) and classification 2 (gRPC, int or uint): the same top two classes.
        let top_two = ["3.000000:2", "2.000000:1"];
        let rest = json!({
            "inputs": [{ "name": "x", "shape": [1, 3], "datatype": "FP32", "data": [1.0, 2.0, 3.0] }],
            "outputs": [{ "name": "y", "parameters": { "class_count": 2 } }],
        });
        let reply = post(server.rest, rest.to_string()).await;
        assert_eq!(reply.status, 200, "REST class_count: {}", reply.text());
        let output = &serde_json::from_slice::<Json>(&reply.body).expect("JSON")["outputs"][0];
        assert_eq!((&output["datatype"], &output["shape"]), (&json!("BYTES"), &json!([1, 2])), "{output}");
        assert_eq!(output["data"], json!(top_two), "{output}");
        for count in [Int64Param(2), Uint64Param(2)] {
            let answer = grpc.model_infer(grpc_request(&[], &[("classification", count)])).await.expect("answered");
            let answer = answer.into_inner();
            assert_eq!(
                (answer.outputs[0].datatype.as_str(), answer.outputs[0].shape.as_slice()),
                ("BYTES", &[1, 2][..])
            );
            let (mut raw, mut strings) = (answer.raw_output_contents[0].as_slice(), Vec::new());
            while let Some((length, rest)) = raw.split_first_chunk::<4>() {
                let (text, rest) = rest.split_at(u32::from_le_bytes(*length) as usize);
                strings.push(String::from_utf8(text.to_vec()).expect("UTF-8"));
                raw = rest;
            }
            assert_eq!(strings, top_two);
        }
    });
}

#[test]
fn a_grpc_message_past_the_body_limit_is_resource_exhausted_and_logged() {
    let root = repository("grpc-limit");
    let server = Server::start(&root, &["--max-body-bytes", "1048576"]);
    runtime().block_on(async {
        let mut grpc = server.grpc_client().await;
        let mut request = grpc_request(&[], &[]);
        let count = 400_000usize;
        request.inputs[0].shape = vec![1, count as i64];
        request.raw_input_contents = vec![vec![0u8; count * 4]];
        let status = grpc.model_infer(request).await.expect_err("over the limit");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
        assert!(status.message().contains("1048576") && status.message().contains("--max-body-bytes"), "{status:?}");
    });
    let log = server.log_with(&["access", "ModelInfer", "ResourceExhausted"]);
    assert!(
        log.lines().any(|l| l.contains("access") && l.contains("ModelInfer") && l.contains("ResourceExhausted")),
        "{log}"
    );
}

#[test]
fn requests_the_http_layer_refuses_get_an_access_line() {
    use std::io::{Read, Write};
    let root = repository("http-layer");
    let server = Server::start(&root, &[]);
    // A request line of garbage, and 200 headers (hyper's limit is 100): hyper answers them
    // itself, before the service; the access log still has a line for each.
    let many: String = (0..200).map(|i| format!("x-h{i}: v\r\n")).collect();
    for (request, status) in
        [("GARBAGE\r\n\r\n".to_owned(), "400"), (format!("GET /v2 HTTP/1.1\r\nHost: x\r\n{many}\r\n"), "431")]
    {
        let mut stream = std::net::TcpStream::connect(server.rest).expect("connects");
        stream.write_all(request.as_bytes()).expect("sent");
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(answer.starts_with(&format!("HTTP/1.1 {status}")), "{answer}");
        let log = server.log_with(&["refused by the HTTP layer", &format!("status={status}")]);
        assert!(
            log.lines().any(|l| l.contains("refused by the HTTP layer") && l.contains(&format!("status={status}"))),
            "{log}"
        );
    }
}
