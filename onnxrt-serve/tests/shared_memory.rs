//! Triton's system shared-memory extension over REST on the real `serve`: inputs read from a
//! registered region of a /dev/shm object (at an offset), outputs written into one; every place
//! outside its region, a key outside /dev/shm or a symbolic link is refused with 400 and the
//! server answers on. Over gRPC: an input in shared memory beside one in `raw_input_contents`
//! (one raw entry per input not in shared memory). (tritonclient: check_shared_memory.py.)

use std::path::Path;

use onnxrt_serve::http_client::Connection;
use onnxrt_serve::oip::grpc::grpc_inference_service_client::GrpcInferenceServiceClient;
use onnxrt_serve::oip::grpc::infer_parameter::ParameterChoice;
use onnxrt_serve::oip::grpc::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use onnxrt_serve::oip::grpc::{InferParameter, ModelInferRequest, SystemSharedMemoryRegisterRequest};
use serde_json::json;

mod common;
use common::{folder, json_of, post, put, runtime, Server};

#[test]
fn tensors_travel_through_shared_memory_and_every_place_outside_a_region_is_refused() {
    let root = folder("shm");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_test_{}", std::process::id());
    let object = Path::new("/dev/shm").join(&key);
    // Inputs a and b at 16 and 40 (6 f32 each), room for the output at 64.
    let mut bytes = vec![0u8; 96];
    for (at, values) in [(16, [1f32, 2., 3., 4., 5., 6.]), (40, [0.5; 6])] {
        for (i, v) in values.iter().enumerate() {
            bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(&object, &bytes).expect("shm object");
    let link = Path::new("/dev/shm").join(format!("{key}_link"));
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(root.join("add/model.onnx"), &link).expect("symlink");
    let server = Server::start_with_grpc(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let register = json!({ "key": format!("/{key}"), "offset": 8, "byte_size": 88 });
        let reply = post(&mut c, "/v2/systemsharedmemory/region/r/register", &register).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let status = json_of(&c.get("/v2/systemsharedmemory/status").await.expect("reply"));
        assert_eq!(status, json!([{ "name": "r", "key": format!("/{key}"), "offset": 8, "byte_size": 88 }]));
        let input = |name: &str, offset: u64| {
            json!({ "name": name, "shape": [2, 3], "datatype": "FP32",
                    "parameters": { "shared_memory_region": "r", "shared_memory_byte_size": 24, "shared_memory_offset": offset } })
        };
        let output = json!({ "name": "sum", "parameters": { "shared_memory_region": "r", "shared_memory_byte_size": 24, "shared_memory_offset": 56 } });
        let request = json!({ "inputs": [input("a", 8), input("b", 32)], "outputs": [output] });
        let reply = post(&mut c, "/v2/models/add/infer", &request).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let answer = json_of(&reply);
        assert!(answer["outputs"][0].get("parameters").is_none(), "as Triton answers: {answer}");
        assert!(answer["outputs"][0].get("data").is_none(), "{answer}");
        let written = std::fs::read(&object).expect("object");
        let sums: Vec<f32> = written[64..88].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4"))).collect();
        assert_eq!(sums, [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);

        // Hostile places: each refused with 400, naming the fault.
        let refused = [
            (json!({ "inputs": [input("a", 72), input("b", 32)] }), "outside region"),
            (json!({ "inputs": [input("a", u64::MAX - 4), input("b", 32)] }), "outside region"),
            (json!({ "inputs": [{ "name": "a", "shape": [2, 3], "datatype": "FP32", "parameters": { "shared_memory_region": "nowhere", "shared_memory_byte_size": 24 } }, input("b", 32)] }), "nowhere"),
            (json!({ "inputs": [{ "name": "a", "shape": [2, 3], "datatype": "FP32", "parameters": { "shared_memory_region": "r" } }, input("b", 32)] }), "needs shared_memory_byte_size"),
            (json!({ "inputs": [input("a", 8), input("b", 32)], "outputs": [{ "name": "sum", "parameters": { "shared_memory_region": "r", "shared_memory_byte_size": 8 } }] }), "is 24 bytes"),
        ];
        for (request, why) in refused {
            let reply = post(&mut c, "/v2/models/add/infer", &request).await;
            assert_eq!(reply.status, 400, "{request}: {}", reply.text());
            assert!(reply.text().contains(why), "{why}: {}", reply.text());
        }
        for (name, key, size) in [("r", format!("/{key}"), 8), ("up", "/../etc/passwd".into(), 8), ("link", format!("/{key}_link"), 8), ("big", format!("/{key}"), 97)] {
            let reply = post(&mut c, &format!("/v2/systemsharedmemory/region/{name}/register"), &json!({ "key": key, "byte_size": size })).await;
            assert_eq!(reply.status, 400, "{name}: {}", reply.text());
        }
        assert_eq!(c.get("/v2/systemsharedmemory/region/nowhere/status").await.expect("reply").status, 404);
        let reply = post(&mut c, "/v2/systemsharedmemory/region/r/unregister", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(json_of(&c.get("/v2/systemsharedmemory/status").await.expect("reply")), json!([]));
        let reply = post(&mut c, "/v2/models/add/infer", &request).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert_eq!(c.get("/v2/health/live").await.expect("reply").status, 200);
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn over_grpc_an_input_in_shared_memory_takes_no_raw_entry_and_outputs_land_in_the_region() {
    let root = folder("shm-grpc");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_test_grpc_{}", std::process::id());
    let object = Path::new("/dev/shm").join(&key);
    // Input a at 0 (6 f32), room for the output at 32.
    let mut bytes = vec![0u8; 64];
    for (i, v) in [1f32, 2., 3., 4., 5., 6.].iter().enumerate() {
        bytes[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&object, &bytes).expect("shm object");
    let server = Server::start_with_grpc(&root, &[]);
    runtime().block_on(async {
        let mut grpc = GrpcInferenceServiceClient::connect(format!("http://{}", server.grpc.expect("gRPC started")))
            .await
            .expect("gRPC");
        let register =
            SystemSharedMemoryRegisterRequest { name: "r".into(), key: format!("/{key}"), offset: 0, byte_size: 64 };
        grpc.system_shared_memory_register(register).await.expect("registered");
        let parameter = |choice| InferParameter { parameter_choice: Some(choice) };
        let place = |offset: u64| {
            [
                ("shared_memory_region".to_owned(), parameter(ParameterChoice::StringParam("r".into()))),
                ("shared_memory_byte_size".to_owned(), parameter(ParameterChoice::Int64Param(24))),
                ("shared_memory_offset".to_owned(), parameter(ParameterChoice::Uint64Param(offset))),
            ]
            .into_iter()
            .collect()
        };
        let input = |name: &str| InferInputTensor {
            name: name.into(),
            datatype: "FP32".into(),
            shape: vec![2, 3],
            ..Default::default()
        };
        let b: Vec<u8> = [0.5f32; 6].iter().flat_map(|x| x.to_le_bytes()).collect();
        let request = |raw: Vec<Vec<u8>>| ModelInferRequest {
            model_name: "add".into(),
            inputs: vec![InferInputTensor { parameters: place(0), ..input("a") }, input("b")],
            outputs: vec![InferRequestedOutputTensor { name: "sum".into(), parameters: place(32) }],
            raw_input_contents: raw,
            ..Default::default()
        };
        let answer = grpc.model_infer(request(vec![b.clone()])).await.expect("answered").into_inner();
        assert_eq!(answer.raw_output_contents, [Vec::<u8>::new()], "an empty entry for the output in the region");
        let region = answer.outputs[0].parameters.get("shared_memory_region").and_then(|p| p.parameter_choice.clone());
        assert_eq!(region, Some(ParameterChoice::StringParam("r".into())));
        let written = std::fs::read(&object).expect("object");
        let sums: Vec<f32> =
            written[32..56].chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4"))).collect();
        assert_eq!(sums, [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
        // Two raw entries for the one input not in shared memory: refused, naming the rule.
        let status = grpc.model_infer(request(vec![b.clone(), b])).await.expect_err("refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains("1 inputs not in shared memory"), "{}", status.message());
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_dir_all(&root);
}

/// The statistics of model `name`: (success, fail, execution_count).
async fn counts(c: &mut Connection, name: &str) -> (u64, u64, u64) {
    let stats = json_of(&c.get(&format!("/v2/models/{name}/stats")).await.expect("reply"));
    let model = &stats["model_stats"][0];
    let count = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("a count: {stats}"));
    let phases = &model["inference_stats"];
    (count(&phases["success"]["count"]), count(&phases["fail"]["count"]), count(&model["execution_count"]))
}

#[test]
fn an_output_in_shared_memory_is_answered_without_parameters_over_rest() {
    // Issue 45, F1: perf_analyzer's HTTP client reads `binary_data_size` from any output that has
    // `parameters`; Triton answers an output written to shared memory with none.
    let root = folder("shm-answer");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_test_answer_{}", std::process::id());
    let object = Path::new("/dev/shm").join(&key);
    std::fs::write(&object, vec![0u8; 24]).expect("shm object");
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let register = json!({ "key": format!("/{key}"), "byte_size": 24 });
        assert_eq!(post(&mut c, "/v2/systemsharedmemory/region/out/register", &register).await.status, 200);
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let output =
            json!({ "name": "sum", "parameters": { "shared_memory_region": "out", "shared_memory_byte_size": 24 } });
        let reply = post(&mut c, "/v2/models/add/infer", &json!({ "inputs": [a, b], "outputs": [output] })).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let answer = json_of(&reply);
        assert_eq!(answer["outputs"][0], json!({ "name": "sum", "datatype": "FP32", "shape": [2, 3] }), "{answer}");
        let written = std::fs::read(&object).expect("object");
        assert_eq!(f32::from_le_bytes(written[20..24].try_into().expect("4")), 12.0);
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn bad_output_places_are_refused_before_the_run_and_every_refusal_counts_as_a_failure() {
    // Issue 45, F2: an output place outside its region ran the model first and was counted a
    // success (statistics and /metrics); a refused input place was counted nowhere. F11: a
    // region of 0 bytes was refused as if it lay outside the object.
    let root = folder("shm-refusals");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_test_refusals_{}", std::process::id());
    let object = Path::new("/dev/shm").join(&key);
    std::fs::write(&object, vec![0u8; 96]).expect("shm object");
    let server = Server::start_with_grpc(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let reply = post(
            &mut c,
            "/v2/systemsharedmemory/region/z/register",
            &json!({ "key": format!("/{key}"), "byte_size": 0 }),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("byte_size must be more than 0"), "{}", reply.text());
        for (name, size) in [("r", 96), ("cut", 96)] {
            let register = json!({ "key": format!("/{key}"), "byte_size": size });
            assert_eq!(
                post(&mut c, &format!("/v2/systemsharedmemory/region/{name}/register"), &register).await.status,
                200
            );
        }
        let a = json!({ "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] });
        let b = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 1, 1, 1, 1, 1] });
        let out = |region: &str, size: u64, offset: u64| {
            json!({ "inputs": [a, b], "outputs": [{ "name": "sum", "parameters": {
                "shared_memory_region": region, "shared_memory_byte_size": size, "shared_memory_offset": offset } }] })
        };
        let in_nowhere = json!({ "name": "b", "shape": [2, 3], "datatype": "FP32",
                                 "parameters": { "shared_memory_region": "nowhere", "shared_memory_byte_size": 24 } });
        // Before any run: an unknown region, a place past the region's end, an unknown input region.
        for request in [out("nowhere", 24, 0), out("r", 24, 80), json!({ "inputs": [a, in_nowhere] })] {
            let reply = post(&mut c, "/v2/models/add/infer", &request).await;
            assert_eq!(reply.status, 400, "{request}: {}", reply.text());
        }
        // The object shrunk under its region by another process.
        std::fs::OpenOptions::new().write(true).open(&object).expect("object").set_len(16).expect("shrink");
        let reply = post(&mut c, "/v2/models/add/infer", &out("cut", 24, 32)).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("shorter than registered"), "{}", reply.text());
        assert_eq!(counts(&mut c, "add").await, (0, 4, 0), "refused before running, each a failure");
        // Known only after the run: the output does not fit its place.
        let reply = post(&mut c, "/v2/models/add/infer", &out("r", 8, 0)).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert_eq!(counts(&mut c, "add").await, (0, 5, 1));
        let metrics = c.get("/metrics").await.expect("metrics").text();
        assert!(
            metrics.contains("serve_model_requests_total{model=\"add\",version=\"1\",outcome=\"success\"} 0\n"),
            "{metrics}"
        );
        assert!(
            metrics.contains("serve_model_requests_total{model=\"add\",version=\"1\",outcome=\"failure\"} 5\n"),
            "{metrics}"
        );

        // gRPC likewise.
        let mut grpc = GrpcInferenceServiceClient::connect(format!("http://{}", server.grpc.expect("gRPC started")))
            .await
            .expect("gRPC");
        let parameter = |choice| InferParameter { parameter_choice: Some(choice) };
        let place = [
            ("shared_memory_region".to_owned(), parameter(ParameterChoice::StringParam("nowhere".into()))),
            ("shared_memory_byte_size".to_owned(), parameter(ParameterChoice::Int64Param(24))),
        ];
        let input = |name: &str| InferInputTensor {
            name: name.into(),
            datatype: "FP32".into(),
            shape: vec![2, 3],
            ..Default::default()
        };
        let raw: Vec<u8> = [1f32; 6].iter().flat_map(|x| x.to_le_bytes()).collect();
        let request = ModelInferRequest {
            model_name: "add".into(),
            inputs: vec![input("a"), input("b")],
            outputs: vec![InferRequestedOutputTensor { name: "sum".into(), parameters: place.into_iter().collect() }],
            raw_input_contents: vec![raw.clone(), raw],
            ..Default::default()
        };
        let status = grpc.model_infer(request).await.expect_err("refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert_eq!(counts(&mut c, "add").await, (0, 6, 1));
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_dir_all(&root);
}

/// An output's region is the one registered when the request was read: unregistering the name
/// and registering it on another object while the request waits for its batch sends the output
/// to the first object, never to memory registered afterwards (the outside probe: it went to
/// the new object). The wait is the batcher's delay; the test checks the swap happened inside it.
#[test]
fn an_output_goes_to_the_region_checked_when_the_request_was_read() {
    let root = folder("shm-swap");
    put(&root, "id", "identity_f32.onnx");
    std::fs::write(root.join("id/config.json"), r#"{"batching": true, "max_batch": 64, "max_delay_us": 3000000}"#)
        .expect("config");
    let pid = std::process::id();
    let keys = [format!("onnxrt_swap_in_{pid}"), format!("onnxrt_swap_old_{pid}"), format!("onnxrt_swap_new_{pid}")];
    let objects: Vec<_> = keys.iter().map(|k| Path::new("/dev/shm").join(k)).collect();
    for object in &objects {
        std::fs::write(object, [0u8; 64]).expect("shm object");
    }
    let input: Vec<u8> = [1f32, 2., 3., 4.].iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&objects[0], [input.as_slice(), &[0u8; 48]].concat()).expect("input");
    let server = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        for (name, key) in [("in", &keys[0]), ("out", &keys[1])] {
            let body = json!({ "key": format!("/{key}"), "byte_size": 64 });
            let reply = post(&mut c, &format!("/v2/systemsharedmemory/region/{name}/register"), &body).await;
            assert_eq!(reply.status, 200, "{}", reply.text());
        }
        let request = json!({
            "inputs": [{ "name": "x", "shape": [1, 4], "datatype": "FP32", "parameters": { "shared_memory_region": "in", "shared_memory_byte_size": 16 } }],
            "outputs": [{ "name": "y", "parameters": { "shared_memory_region": "out", "shared_memory_byte_size": 16 } }],
        });
        let rest = server.rest;
        let waiting = tokio::spawn(async move {
            let mut c = Connection::open(rest).await.expect("connects");
            post(&mut c, "/v2/models/id/infer", &request).await
        });
        // Let the request reach the batcher (it waits there up to 3 s for company).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let reply = post(&mut c, "/v2/systemsharedmemory/region/out/unregister", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = json!({ "key": format!("/{}", keys[2]), "byte_size": 64 });
        let reply = post(&mut c, "/v2/systemsharedmemory/region/out/register", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(!waiting.is_finished(), "the swap must happen while the request waits for its batch");
        let answer = waiting.await.expect("request task");
        assert_eq!(answer.status, 200, "{}", answer.text());
    });
    let old = std::fs::read(&objects[1]).expect("old");
    let new = std::fs::read(&objects[2]).expect("new");
    assert_eq!(&old[..16], input.as_slice(), "the output lands where `out` was when the request was read");
    assert_eq!(&new[..16], &[0u8; 16], "nothing lands in memory registered after the request was read");
    for object in &objects {
        let _ = std::fs::remove_file(object);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Region names are at most 256 bytes, over REST and gRPC: a longer one would travel in every
/// status answer and refusal (the probe registered a 3,000,000-byte name over gRPC, after which
/// a stock client could not read the status).
#[test]
fn a_region_name_over_256_bytes_is_refused_and_refusals_never_echo_it_whole() {
    let root = folder("shm-names");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_names_{}", std::process::id());
    let object = Path::new("/dev/shm").join(&key);
    std::fs::write(&object, [0u8; 64]).expect("shm object");
    let server = Server::start_with_grpc(&root, &[]);
    runtime().block_on(async {
        let mut grpc = GrpcInferenceServiceClient::connect(format!("http://{}", server.grpc.expect("gRPC started")))
            .await
            .expect("gRPC");
        let long = "n".repeat(100_000);
        let register = SystemSharedMemoryRegisterRequest { name: long, key: format!("/{key}"), offset: 0, byte_size: 64 };
        let status = grpc.system_shared_memory_register(register).await.expect_err("refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains("at most 256 bytes"), "{}", status.message());
        assert!(status.message().len() < 1000, "the refusal does not echo the name whole: {} bytes", status.message().len());
        let fits = SystemSharedMemoryRegisterRequest { name: "n".repeat(256), key: format!("/{key}"), offset: 0, byte_size: 64 };
        grpc.system_shared_memory_register(fits).await.expect("256 bytes is allowed");
        let mut c = Connection::open(server.rest).await.expect("connects");
        let body = json!({ "inputs": [
            { "name": "a", "shape": [2, 3], "datatype": "FP32", "parameters": { "shared_memory_region": "r".repeat(50_000), "shared_memory_byte_size": 24 } },
            { "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] },
        ] });
        let reply = post(&mut c, "/v2/models/add/infer", &body).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().len() < 1000, "an unknown region's name is cut: {} bytes", reply.text().len());
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_dir_all(&root);
}

/// The second outside probe: regions held one open file each up to 1,024, the common open-file
/// limit, after which the server's own files (isolated workers, connections) failed with 500s.
/// Now a quarter of the limit at most; keys and long names are never echoed whole or raw.
#[test]
fn regions_leave_the_server_its_open_files_and_refusals_echo_keys_and_names_cut() {
    let root = folder("shm-files");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_files_{}", std::process::id());
    let object = Path::new("/dev/shm").join(&key);
    std::fs::write(&object, [0u8; 64]).expect("shm object");
    let server = Server::start_with_open_files(&root, &[], 256);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let mut accepted = 0;
        let mut refusal = String::new();
        for n in 0..100 {
            let body = json!({ "key": format!("/{key}"), "byte_size": 64 });
            let reply = post(&mut c, &format!("/v2/systemsharedmemory/region/r{n}/register"), &body).await;
            if reply.status == 200 {
                accepted += 1;
            } else {
                refusal = reply.text();
                break;
            }
        }
        assert_eq!(accepted, 64, "a quarter of 256 open files: {refusal}");
        assert!(refusal.contains("64 regions are registered already"), "{refusal}");
        // The server's own files are still there: a plain request is answered.
        let plain = json!({ "inputs": [
            { "name": "a", "shape": [2, 3], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6] },
            { "name": "b", "shape": [2, 3], "datatype": "FP32", "data": [1, 1, 1, 1, 1, 1] },
        ] });
        let reply = post(&mut c, "/v2/models/add/infer", &plain).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let reply = post(&mut c, "/v2/systemsharedmemory/unregister", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());

        // A 100,000-byte key, a key with a right-to-left override, a 200-emoji name.
        let long_key = format!("/{}", "a".repeat(100_000));
        let reply =
            post(&mut c, "/v2/systemsharedmemory/region/k/register", &json!({ "key": long_key, "byte_size": 8 })).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().len() < 1000, "the key is cut: {} bytes", reply.text().len());
        let reply = post(
            &mut c,
            "/v2/systemsharedmemory/region/k/register",
            &json!({ "key": "/x\u{202e}evil", "byte_size": 8 }),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(!reply.text().contains('\u{202e}'), "the override is escaped: {}", reply.text());
        let name = "\u{1f600}".repeat(200);
        let reply = post(
            &mut c,
            &format!("/v2/systemsharedmemory/region/{name}/register"),
            &json!({ "key": format!("/{key}"), "byte_size": 8 }),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(!reply.text().contains(&name), "a name over the limit is not echoed: {}", reply.text());
        assert!(reply.text().contains("this one is 800"), "{}", reply.text());
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_dir_all(&root);
}
