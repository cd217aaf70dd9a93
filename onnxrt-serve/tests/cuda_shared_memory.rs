//! Triton's CUDA shared-memory extension on the real `serve`, over REST and gRPC.
//!
//! Off unless `serve --cuda-shared-memory true`. Everywhere (CI has no GPU): a CUDA region is refused with its reason (no CUDA, a handle of the
//! wrong length, not base64, bytes that name nothing), names are shared with system regions and
//! each kind is unregistered through its own extension. On a GPU (`ONNXRT_REQUIRE_GPU=1` makes a
//! missing one a failure): this process exports device memory, `serve` (another process) maps
//! it, reads the inputs from it and writes the output into it, under four clients at once; a
//! region longer than its allocation, a device it lacks and an unregistered region are refused,
//! and the owner freeing its memory never takes the server down.

use base64::Engine;
use onnxrt::providers::cuda::SharedDeviceMemory;
use onnxrt_serve::http_client::Connection;
use onnxrt_serve::oip::grpc::grpc_inference_service_client::GrpcInferenceServiceClient;
use onnxrt_serve::oip::grpc::infer_parameter::ParameterChoice;
use onnxrt_serve::oip::grpc::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use onnxrt_serve::oip::grpc::{
    CudaSharedMemoryRegisterRequest, CudaSharedMemoryStatusRequest, InferParameter, ModelInferRequest,
};
use serde_json::{json, Value as Json};

mod common;
use common::{folder, json_of, post, put, runtime, Server};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4"))).collect()
}

#[test]
fn cuda_regions_are_refused_with_their_reason_and_share_names_with_system_regions() {
    let root = folder("cuda-shm-refusals");
    put(&root, "add", "add_f32.onnx");
    let key = format!("onnxrt_serve_cuda_test_{}", std::process::id());
    let object = std::path::Path::new("/dev/shm").join(&key);
    std::fs::write(&object, [0u8; 64]).expect("shm object");
    // Off by default: refused with the switch to turn it on, and not listed.
    let plain = Server::start(&root, &[]);
    runtime().block_on(async {
        let mut c = Connection::open(plain.rest).await.expect("connects");
        let extensions = json_of(&c.get("/v2").await.expect("reply"))["extensions"].clone();
        assert!(!extensions.as_array().expect("list").contains(&json!("cuda_shared_memory")), "{extensions}");
        let body = json!({ "raw_handle": { "b64": b64(&[0x41; 64]) }, "byte_size": 16 });
        let reply = post(&mut c, "/v2/cudasharedmemory/region/g/register", &body).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("--cuda-shared-memory true"), "{}", reply.text());
    });
    drop(plain);
    let server = Server::start_with_grpc(&root, &["--cuda-shared-memory", "true"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        // Listed only where CUDA sees a device (a client that finds it listed uses it).
        let extensions = json_of(&c.get("/v2").await.expect("reply"))["extensions"].clone();
        let cuda = onnxrt::providers::cuda::device_count().is_ok_and(|n| n > 0);
        assert_eq!(extensions.as_array().expect("list").contains(&json!("cuda_shared_memory")), cuda, "{extensions}");
        let register = |name: &str, body: Json| (format!("/v2/cudasharedmemory/region/{name}/register"), body);
        let refused = [
            (register("g", json!({ "raw_handle": { "b64": "not base64!" }, "byte_size": 16 })), "not base64"),
            (
                register("g", json!({ "raw_handle": { "b64": b64(&[1, 2, 3]) }, "byte_size": 16 })),
                "raw_handle is 3 bytes",
            ),
            (register("g", json!({ "raw_handle": "AAAA", "byte_size": 16 })), "raw_handle"),
            (register("g", json!({ "raw_handle": { "b64": b64(&[0; 64]) } })), "byte_size"),
            (register("g", json!({ "raw_handle": { "b64": b64(&[0; 64]) }, "byte_size": 0 })), "more than 0"),
            (
                register("g", json!({ "raw_handle": { "b64": b64(&[0; 64]) }, "byte_size": 8, "device_id": "0" })),
                "device_id",
            ),
            (register("g", json!([])), "JSON object"),
            // 64 bytes that name no allocation: no CUDA here, or CUDA's refusal on a GPU.
            (register("g", json!({ "raw_handle": { "b64": b64(&[0x41; 64]) }, "byte_size": 16 })), "region `g`"),
        ];
        for ((path, body), why) in refused {
            let reply = post(&mut c, &path, &body).await;
            assert_eq!(reply.status, 400, "{body}: {}", reply.text());
            assert!(reply.text().contains(why), "{why}: {}", reply.text());
        }
        assert_eq!(json_of(&c.get("/v2/cudasharedmemory/status").await.expect("reply")), json!([]));

        // One set of names: a system region's name cannot be taken by a CUDA one, and each kind
        // answers status and unregister for its own regions only.
        let reply = post(
            &mut c,
            "/v2/systemsharedmemory/region/r/register",
            &json!({ "key": format!("/{key}"), "byte_size": 64 }),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let (path, body) = register("r", json!({ "raw_handle": { "b64": b64(&[0x41; 64]) }, "byte_size": 16 }));
        let reply = post(&mut c, &path, &body).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("taken by a system shared-memory region"), "{}", reply.text());
        assert_eq!(c.get("/v2/cudasharedmemory/region/r/status").await.expect("reply").status, 404);
        let reply = post(&mut c, "/v2/cudasharedmemory/region/r/unregister", &json!({})).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("SystemSharedMemoryUnregister"), "both protocols' ways: {}", reply.text());
        let reply = post(&mut c, "/v2/cudasharedmemory/unregister", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let status = json_of(&c.get("/v2/systemsharedmemory/status").await.expect("reply"));
        assert_eq!(
            status.as_array().map(Vec::len),
            Some(1),
            "unregistering every CUDA region keeps system ones: {status}"
        );

        // gRPC: the same refusal, typed.
        let mut grpc = GrpcInferenceServiceClient::connect(format!("http://{}", server.grpc.expect("gRPC started")))
            .await
            .expect("gRPC");
        let request = CudaSharedMemoryRegisterRequest {
            name: "g".into(),
            raw_handle: vec![0x41; 64],
            device_id: 0,
            byte_size: 16,
        };
        let status = grpc.cuda_shared_memory_register(request).await.expect_err("refused");
        assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
        let listed = grpc.cuda_shared_memory_status(CudaSharedMemoryStatusRequest::default()).await.expect("status");
        assert!(listed.into_inner().regions.is_empty());
        // The server answers on.
        assert_eq!(c.get("/v2/health/ready").await.expect("reply").status, 200);
    });
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_dir_all(&root);
}

/// Whether this machine has a CUDA device to test on; without one the GPU test returns early,
/// unless `ONNXRT_REQUIRE_GPU=1` says the run is on the GPU machine.
fn gpu_here() -> bool {
    let count = onnxrt::providers::cuda::device_count().unwrap_or(0);
    if count == 0 {
        assert!(std::env::var_os("ONNXRT_REQUIRE_GPU").is_none(), "ONNXRT_REQUIRE_GPU=1 but CUDA sees no device");
        eprintln!("no CUDA device: the CUDA shared-memory transfer test runs on the GPU machine");
    }
    count > 0
}

#[test]
fn tensors_travel_through_another_process_s_device_memory() {
    if !gpu_here() {
        return;
    }
    let root = folder("cuda-shm");
    put(&root, "add", "add_f32.onnx");
    // Inputs a and b (6 f32 each) at 0 and 32 of a 1 KiB allocation; outputs from 256 on.
    let memory = SharedDeviceMemory::new(0, 1024).expect("device memory");
    let a = [1f32, 2., 3., 4., 5., 6.];
    memory.write(0, &f32_bytes(&a)).expect("a");
    memory.write(32, &f32_bytes(&[0.5; 6])).expect("b");
    let handle = b64(memory.ipc_handle().expect("exports").as_bytes());
    let server = Server::start_with_grpc(&root, &["--cuda-shared-memory", "true"]);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let body = json!({ "raw_handle": { "b64": handle }, "device_id": 0, "byte_size": 1024 });
        let reply = post(&mut c, "/v2/cudasharedmemory/region/g/register", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let status = json_of(&c.get("/v2/cudasharedmemory/status").await.expect("reply"));
        assert_eq!(status, json!([{ "name": "g", "device_id": 0, "byte_size": 1024 }]));
        // The same allocation under a second name (one mapping in the server), then the first
        // unregistered: the second still reads the right bytes.
        let reply = post(&mut c, "/v2/cudasharedmemory/region/g2/register", &body).await;
        assert_eq!(reply.status, 200, "{}", reply.text());

        let place = |region: &str, offset: u64| json!({ "shared_memory_region": region, "shared_memory_byte_size": 24, "shared_memory_offset": offset });
        let request = |region: &str, out: u64| json!({
            "inputs": [
                { "name": "a", "shape": [2, 3], "datatype": "FP32", "parameters": place(region, 0) },
                { "name": "b", "shape": [2, 3], "datatype": "FP32", "parameters": place(region, 32) },
            ],
            "outputs": [{ "name": "sum", "parameters": place(region, out) }],
        });
        let reply = post(&mut c, "/v2/models/add/infer", &request("g", 256)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let mut out = [0u8; 24];
        memory.read(256, &mut out).expect("reads the output");
        assert_eq!(f32s(&out), [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
        let reply = post(&mut c, "/v2/cudasharedmemory/region/g/unregister", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        memory.write(0, &f32_bytes(&[10.; 6])).expect("new a");
        let reply = post(&mut c, "/v2/models/add/infer", &request("g2", 512)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        memory.read(512, &mut out).expect("reads");
        assert_eq!(f32s(&out), [10.5; 6], "read through the second name after the first was unregistered");
        let reply = post(&mut c, "/v2/models/add/infer", &request("g", 256)).await;
        assert_eq!(reply.status, 400, "an unregistered region: {}", reply.text());

        // Refused: longer than the allocation, a device the server lacks, a place outside the region.
        for (body, why) in [
            (json!({ "raw_handle": { "b64": handle }, "device_id": 0, "byte_size": 1u64 << 30 }), "holds"),
            (json!({ "raw_handle": { "b64": handle }, "device_id": 4096, "byte_size": 16 }), "device"),
        ] {
            let reply = post(&mut c, "/v2/cudasharedmemory/region/bad/register", &body).await;
            assert_eq!(reply.status, 400, "{body}: {}", reply.text());
            assert!(reply.text().contains(why), "{why}: {}", reply.text());
        }
        let reply = post(&mut c, "/v2/models/add/infer", &request("g2", 1010)).await;
        assert_eq!(reply.status, 400, "{}", reply.text());
        assert!(reply.text().contains("outside region"), "{}", reply.text());

        // gRPC: input a from the region, b in the message, the output into the region.
        let mut grpc = GrpcInferenceServiceClient::connect(format!("http://{}", server.grpc.expect("gRPC started")))
            .await
            .expect("gRPC");
        let parameter = |choice| InferParameter { parameter_choice: Some(choice) };
        let grpc_place = |offset: u64| {
            [
                ("shared_memory_region".to_owned(), parameter(ParameterChoice::StringParam("g2".into()))),
                ("shared_memory_byte_size".to_owned(), parameter(ParameterChoice::Int64Param(24))),
                ("shared_memory_offset".to_owned(), parameter(ParameterChoice::Uint64Param(offset))),
            ]
            .into_iter()
            .collect()
        };
        let input = |name: &str| InferInputTensor { name: name.into(), datatype: "FP32".into(), shape: vec![2, 3], ..Default::default() };
        let request = ModelInferRequest {
            model_name: "add".into(),
            inputs: vec![InferInputTensor { parameters: grpc_place(0), ..input("a") }, input("b")],
            outputs: vec![InferRequestedOutputTensor { name: "sum".into(), parameters: grpc_place(768) }],
            raw_input_contents: vec![f32_bytes(&[1.; 6])],
            ..Default::default()
        };
        grpc.model_infer(request).await.expect("answered");
        memory.read(768, &mut out).expect("reads");
        assert_eq!(f32s(&out), [11.; 6]);
    });

    // Four clients at once, each with its own output place: every answer is its own.
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (memory, rest) = (&memory, server.rest);
            scope.spawn(move || {
                runtime().block_on(async {
                    let mut c = Connection::open(rest).await.expect("connects");
                    for round in 0..25u64 {
                        let out = 128 + t * 24;
                        let body = json!({
                            "inputs": [
                                { "name": "a", "shape": [2, 3], "datatype": "FP32", "data": vec![round as f32; 6] },
                                { "name": "b", "shape": [2, 3], "datatype": "FP32", "parameters": { "shared_memory_region": "g2", "shared_memory_byte_size": 24, "shared_memory_offset": 32 } },
                            ],
                            "outputs": [{ "name": "sum", "parameters": { "shared_memory_region": "g2", "shared_memory_byte_size": 24, "shared_memory_offset": out } }],
                        });
                        let reply = post(&mut c, "/v2/models/add/infer", &body).await;
                        assert_eq!(reply.status, 200, "{}", reply.text());
                        let mut got = [0u8; 24];
                        memory.read(out as usize, &mut got).expect("reads");
                        assert_eq!(f32s(&got), [round as f32 + 0.5; 6], "client {t} round {round}");
                    }
                });
            });
        }
    });

    // The owner frees its memory while the region is registered: requests through it get an
    // answer (the driver keeps or refuses the memory), and the server serves on.
    drop(memory);
    runtime().block_on(async {
        let mut c = Connection::open(server.rest).await.expect("connects");
        let body = json!({
            "inputs": [
                { "name": "a", "shape": [2, 3], "datatype": "FP32", "data": vec![1.0f32; 6] },
                { "name": "b", "shape": [2, 3], "datatype": "FP32", "data": vec![1.0f32; 6] },
            ],
            "outputs": [{ "name": "sum", "parameters": { "shared_memory_region": "g2", "shared_memory_byte_size": 24, "shared_memory_offset": 0 } }],
        });
        let reply = post(&mut c, "/v2/models/add/infer", &body).await;
        assert!(reply.status == 200 || reply.status == 400, "{}: {}", reply.status, reply.text());
        eprintln!("after the owner freed its memory: {} {}", reply.status, reply.text());
        let reply = post(&mut c, "/v2/cudasharedmemory/unregister", &json!({})).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let plain = json!({ "inputs": [
            { "name": "a", "shape": [2, 3], "datatype": "FP32", "data": vec![1.0f32; 6] },
            { "name": "b", "shape": [2, 3], "datatype": "FP32", "data": vec![2.0f32; 6] },
        ] });
        let reply = post(&mut c, "/v2/models/add/infer", &plain).await;
        assert_eq!(reply.status, 200, "the server serves on: {}", reply.text());
        assert_eq!(json_of(&reply)["outputs"][0]["data"], json!([3.0, 3.0, 3.0, 3.0, 3.0, 3.0]));
    });
    let _ = std::fs::remove_dir_all(&root);
}
