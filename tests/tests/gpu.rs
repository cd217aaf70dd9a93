//! GPU tests, run by hand on the GPU machine (CI has no GPU): `--features gpu-tests`.
//!
//! ```text
//! cargo test -p onnxrt-tests --features gpu-tests --test gpu -- --test-threads 1 --nocapture
//! ```
//! On the device, point `ONNXRT_DYLIB_PATH` at the GPU runtime and `ONNXRT_TEST_MODELS` at the
//! copied `tests/data/models`; `ONNXRT_GPU_RESNET` may name a ResNet-50 to compare too.
#![cfg(feature = "gpu-tests")]

use std::path::PathBuf;

use ndarray::{ArrayD, IxDyn};
use onnxrt::providers::cuda::CudaOptions;
use onnxrt::providers::tensorrt::TensorRtOptions;
use onnxrt::{Error, MemoryInfo, Session, Value};
use onnxrt_tests::{max_abs_diff, noise};

fn model(name: &str) -> PathBuf {
    let dir = std::env::var_os("ONNXRT_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/models")));
    dir.join(name)
}

/// GPU and CPU results agree within this fraction of the largest CPU value: cuBLAS/cuDNN reorder
/// sums (and use TF32 on Ampere+ unless `use_tf32(false)`), so bit equality is not expected.
fn assert_close(gpu: &ArrayD<f32>, cpu: &ArrayD<f32>, what: &str) {
    let diff = max_abs_diff(gpu, cpu);
    let scale = cpu.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1.0);
    println!("{what}: max |gpu - cpu| = {diff:e} (max |cpu| = {scale:e})");
    assert!(diff <= 1e-3 * scale, "{what}: {diff} > 1e-3 * {scale}");
}

fn cuda_session(name: &str) -> Session {
    Session::builder()
        .cuda(CudaOptions::new().device_id(0))
        .strict_gpu(true)
        .commit_from_file(model(name))
        .expect("CUDA session")
}

fn run_f32(session: &Session, input: &str, shape: &[i64], data: &[f32]) -> ArrayD<f32> {
    let value = Value::from_vec(shape, data.to_vec()).expect("input");
    let outputs = session.run(&[(input, &value)]).expect("run");
    outputs[0].to_array::<f32>().expect("f32 output")
}

/// 4 threads × 50 one-sample requests through `batcher` (seeds from `seed`): each answer matches
/// the CPU on its own sample.
fn each_caller_gets_its_own_row(batcher: &onnxrt_serve::batch::Batcher, cpu: &Session, seed: u64, what: &str) {
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            scope.spawn(move || {
                for round in 0..50u64 {
                    let data = noise(16, seed + thread * 100 + round);
                    let input = Value::from_vec(&[1, 16], data.clone()).expect("input");
                    let outputs = batcher.run([("x", input)]).expect("batched run");
                    let got = outputs[0].to_array::<f32>().expect("row");
                    assert_close(
                        &got,
                        &run_f32(cpu, "x", &[1, 16], &data),
                        &format!("{what}thread {thread} round {round}"),
                    );
                }
            });
        }
    });
}

#[test]
fn runtime_and_providers() {
    let info = onnxrt::runtime_info().expect("runtime");
    println!("runtime {} (API {}) at {}", info.version, info.api_level, info.library.display());
    let providers = onnxrt::providers::available().expect("providers");
    println!("compiled-in providers: {providers:?}");
    assert!(providers.iter().any(|p| p == "CUDAExecutionProvider"));
}

#[test]
fn cuda_is_registered_and_strict_gpu_runs_mlp_like_the_cpu() {
    let gpu = cuda_session("mlp.onnx");
    assert_eq!(gpu.providers(), ["CUDAExecutionProvider", "CPUExecutionProvider"]);
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let data = noise(8 * 16, 1);
    let expected = run_f32(&cpu, "x", &[8, 16], &data);
    assert_close(&run_f32(&gpu, "x", &[8, 16], &data), &expected, "mlp, default CUDA options");
    // Without TF32 the GPU matches the CPU to fp32 rounding.
    let exact = Session::builder()
        .cuda(CudaOptions::new().use_tf32(false))
        .strict_gpu(true)
        .commit_from_file(model("mlp.onnx"))
        .expect("CUDA session without TF32");
    let diff = max_abs_diff(&run_f32(&exact, "x", &[8, 16], &data), &expected);
    println!("mlp, use_tf32(false): max |gpu - cpu| = {diff:e}");
    assert!(diff < 1e-5, "{diff}");
}

#[test]
fn iobinding_keeps_outputs_on_the_device() {
    let session = cuda_session("mlp.onnx");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let data = noise(4 * 16, 2);
    let input = Value::from_vec(&[4, 16], data.clone()).expect("input");
    let device = MemoryInfo::cuda(0).expect("cuda memory info");
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("x", &input).expect("bind input");
    binding.bind_output_to_device("logits", &device).expect("bind output");
    for _ in 0..3 {
        binding.run(None).expect("run");
    }
    binding.synchronize_outputs().expect("sync");
    let outputs = binding.outputs().expect("outputs");
    // The CPU cannot read device memory: a typed error, not a crash.
    let err = outputs[0].view::<f32>().expect_err("device memory is not readable from the host");
    println!("reading device memory directly: {err}");
    assert!(matches!(&err, Error::NotHostMemory { memory } if memory == "Cuda"), "{err:?}");
    let on_host = outputs[0].copy_to_host::<f32>().expect("copy to host");
    assert_close(&on_host, &run_f32(&cpu, "x", &[4, 16], &data), "device-resident output copied back");
}

#[test]
fn device_resident_input_from_the_session_allocator() {
    let session = cuda_session("mlp.onnx");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let device = MemoryInfo::cuda(0).expect("cuda memory info");
    let allocator = session.allocator(&device).expect("cuda allocator");
    let mut input = allocator.tensor::<f32>(&[2, 16]).expect("device tensor");
    let data = noise(32, 3);
    input.copy_from_host(&data).expect("host to device");
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("x", &input).expect("bind device input");
    binding.bind_output_to_device("logits", &MemoryInfo::cpu().expect("cpu info")).expect("bind");
    binding.run(None).expect("run");
    let out = binding.outputs().expect("outputs")[0].to_array::<f32>().expect("host output");
    assert_close(&out, &run_f32(&cpu, "x", &[2, 16], &data), "device-resident input");
}

#[test]
fn cuda_graph_replays_with_new_input_contents() {
    // SAFETY: every run binds `input` and `output` (device memory, fixed shapes), which live
    // until the end of the test, after the session's last run.
    let graph = unsafe { CudaOptions::new().enable_cuda_graph(true) };
    let session = Session::builder()
        .cuda(graph)
        .strict_gpu(true)
        .commit_from_file(model("mlp.onnx"))
        .expect("CUDA graph session");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let device = MemoryInfo::cuda(0).expect("cuda memory info");
    let allocator = session.allocator(&device).expect("allocator");
    let mut input = allocator.tensor::<f32>(&[4, 16]).expect("input");
    let mut output = allocator.tensor::<f32>(&[4, 4]).expect("output");
    let first = noise(64, 4);
    input.copy_from_host(&first).expect("copy");
    let expected_first = run_f32(&cpu, "x", &[4, 16], &first);
    {
        let mut binding = session.io_binding().expect("binding");
        binding.bind_input("x", &input).expect("bind");
        // The graph captures addresses: output preallocated on the device.
        binding.bind_output("logits", &mut output).expect("bind out");
        for _ in 0..5 {
            binding.run(None).expect("graph run");
        }
    }
    assert_close(&output.copy_to_host::<f32>().expect("host"), &expected_first, "CUDA graph, 5 replays");
    // New contents at the same address: the replayed graph must see them.
    let second = noise(64, 5);
    input.copy_from_host(&second).expect("copy");
    {
        let mut binding = session.io_binding().expect("binding");
        binding.bind_input("x", &input).expect("bind");
        binding.bind_output("logits", &mut output).expect("bind out");
        binding.run(None).expect("graph replay");
    }
    let replayed = output.copy_to_host::<f32>().expect("host");
    assert_close(&replayed, &run_f32(&cpu, "x", &[4, 16], &second), "CUDA graph replay with new input");
    assert!(max_abs_diff(&replayed, &expected_first) > 1e-2, "the replay must not return the first result");
}

/// `rows` samples of `x: [rows, 16]` through the graph (copied in on `stream`), its logits
/// copied back to the host.
fn graph_logits(graph: &mut onnxrt::CudaGraph, stream: &onnxrt::CudaStream, data: &[f32]) -> ArrayD<f32> {
    let rows = graph.rows();
    let host = Value::from_vec(&[rows as i64, 16], data.to_vec()).expect("input");
    graph.copy_input_rows_from(0, 0..rows, &host, stream).expect("copy in");
    graph.run().expect("graph run");
    let mut logits = Value::zeros(&[rows as i64, 4], onnxrt::ElementType::F32).expect("host logits");
    logits.copy_rows_from(0..rows, graph.output(0).expect("output 0"), stream).expect("copy out");
    logits.to_array::<f32>().expect("f32")
}

#[test]
fn cuda_graph_type_replays_new_contents_like_a_plain_session() {
    let plain = cuda_session("mlp.onnx");
    let stream = onnxrt::CudaStream::new(0).expect("stream");
    let mut graph =
        onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), 8).expect("CUDA graph");
    assert_eq!((graph.rows(), graph.inputs()[0].name.as_str(), graph.outputs()[0].name.as_str()), (8, "x", "logits"));
    // Six runs with new contents each: the first captures, the rest replay. Each must answer its
    // own batch (a replay that read the first run's buffers, or stale contents, fails here).
    let mut previous: Option<ArrayD<f32>> = None;
    let mut bitwise = 0;
    for run in 0..6u64 {
        let data = noise(8 * 16, 40_000 + run);
        let got = graph_logits(&mut graph, &stream, &data);
        let expected = run_f32(&plain, "x", &[8, 16], &data);
        bitwise += usize::from(got == expected);
        assert!(max_abs_diff(&got, &expected) <= 1e-5, "run {run}: graph and plain session differ");
        if let Some(previous) = &previous {
            assert!(max_abs_diff(&got, previous) > 1e-3, "run {run} returned the previous run's logits");
        }
        previous = Some(got);
    }
    println!("CudaGraph: 6 runs match the plain CUDA session ({bitwise} of 6 bitwise)");
    // Rows 0..3 replaced, rows 3..8 keep the last batch: the replay reads the buffer as it is now.
    let last = noise(8 * 16, 40_005);
    let mut mixed = noise(8 * 16, 41_000);
    mixed[3 * 16..].copy_from_slice(&last[3 * 16..]);
    let head = Value::from_vec(&[3, 16], mixed[..3 * 16].to_vec()).expect("head");
    graph.copy_input_rows_from(0, 0..3, &head, &stream).expect("rows 0..3");
    graph.run().expect("replay");
    let mut logits = Value::zeros(&[8, 4], onnxrt::ElementType::F32).expect("host logits");
    logits.copy_rows_from(0..8, graph.output(0).expect("output"), &stream).expect("copy out");
    let got = logits.to_array::<f32>().expect("f32");
    assert!(max_abs_diff(&got, &run_f32(&plain, "x", &[8, 16], &mixed)) <= 1e-5, "partly refilled batch");
    // Dropped and made again, several times: the session goes before its buffers.
    drop(graph);
    for round in 0..3u64 {
        let mut graph = onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), 4)
            .expect("CUDA graph");
        let data = noise(4 * 16, 42_000 + round);
        for _ in 0..3 {
            let got = graph_logits(&mut graph, &stream, &data);
            assert!(max_abs_diff(&got, &run_f32(&plain, "x", &[4, 16], &data)) <= 1e-5, "round {round}");
        }
    }
}

#[test]
fn cuda_graph_type_refusals_are_typed_and_leave_the_graph_usable() {
    let stream = onnxrt::CudaStream::new(0).expect("stream");
    // A CPU-only operator: no graph (the session is strict), a typed error.
    let strings = onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("strings.onnx"), 4);
    println!("CPU-only op: {:?}", strings.as_ref().err());
    assert!(strings.is_err(), "a model with a CPU-only op has no CUDA graph");
    // An output whose first axis is not the batch axis: the bound buffer has the wrong shape, so
    // the capture run fails, every time, with ORT's error; nothing was captured.
    let mut reshape =
        onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("batch_reshape.onnx"), 4)
            .expect("buffers made from the declared shapes");
    for attempt in 0..2 {
        let error = reshape.run().expect_err("output shape differs from the bound buffer");
        println!("batch_reshape run {attempt}: {error}");
    }
    drop(reshape);
    // Bad copies change nothing and the next run still answers correctly.
    let plain = cuda_session("mlp.onnx");
    let mut graph =
        onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), 4).expect("CUDA graph");
    let data = noise(64, 43_000);
    let expected = run_f32(&plain, "x", &[4, 16], &data);
    assert!(max_abs_diff(&graph_logits(&mut graph, &stream, &data), &expected) <= 1e-5);
    let wide = Value::from_vec(&[4, 17], vec![1.0f32; 68]).expect("wide");
    let long = Value::from_vec(&[6, 16], vec![1.0f32; 96]).expect("long");
    let ints = Value::from_vec(&[4, 16], vec![1i32; 64]).expect("ints");
    assert!(graph.copy_input_rows_from(0, 0..4, &wide, &stream).is_err(), "other row shape");
    assert!(graph.copy_input_rows_from(0, 0..6, &long, &stream).is_err(), "rows past the graph's 4");
    assert!(graph.copy_input_rows_from(0, 0..4, &ints, &stream).is_err(), "other element type");
    assert!(graph.copy_input_rows_from(1, 0..4, &long, &stream).is_err(), "no input 1");
    assert!(graph.output(1).is_err() && graph.input(1).is_err(), "no such index");
    graph.run().expect("replay");
    let mut logits = Value::zeros(&[4, 4], onnxrt::ElementType::F32).expect("host");
    logits.copy_rows_from(0..4, graph.output(0).expect("output"), &stream).expect("copy out");
    assert!(max_abs_diff(&logits.to_array::<f32>().expect("f32"), &expected) <= 1e-5, "refusals changed the input");
}

#[test]
fn batcher_with_cuda_graphs_answers_each_request_with_its_own_row() {
    use onnxrt_serve::batch::Batcher;
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let batcher = Batcher::builder(cuda_session("mlp.onnx"))
        .max_batch(16)
        .workers(2)
        .pad_to_sizes(&[1, 4, 8, 16])
        .hold_while_busy(true)
        .device_inputs(0)
        .cuda_graphs(|rows| {
            // Size 8 cannot have a graph here (a model with a CPU-only op stands in for one
            // whose nodes are not all on CUDA), and size 4's capture run fails (an output that
            // does not follow the batch axis): both run on the plain session.
            let file = match rows {
                8 => "strings.onnx",
                4 => "batch_reshape.onnx",
                _ => "mlp.onnx",
            };
            onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model(file), rows)
        })
        .build()
        .expect("batcher");
    batcher.warm_up().expect("warm-up captures every graph");
    let outcomes = batcher.cuda_graphs();
    println!("graphs: {outcomes:?}");
    let sizes: Vec<(usize, bool)> = outcomes.iter().map(|(rows, outcome)| (*rows, outcome.is_ok())).collect();
    assert_eq!(sizes, [(1, true), (4, false), (8, false), (16, true)]);
    assert!(outcomes[1].1.as_ref().is_err_and(|why| why.contains("capture run failed")), "{outcomes:?}");
    each_caller_gets_its_own_row(&batcher, &cpu, 50_000, "graphs: ");
    let stats = batcher.stats();
    println!("cuda_graphs batcher: {stats:?}");
    assert!(stats.graph_runs > 0 && stats.graph_runs <= stats.batches, "{} of {}", stats.graph_runs, stats.batches);
    assert_eq!(stats.completed, 200);
    let unpadded = Batcher::builder(cuda_session("mlp.onnx"))
        .device_inputs(0)
        .cuda_graphs(|rows| {
            onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), rows)
        })
        .build()
        .expect_err("graphs need padded sizes");
    assert!(unpadded.to_string().contains("padded sizes"), "{unpadded}");
}

/// ORT keeps captured graphs per thread, so each worker captures each size on its own thread,
/// while the other worker may copy rows to the device: a capture meeting other CUDA work fails
/// ("operation failed due to a previous error during capture", seen in the GPU server runs on an H100
/// before the batcher held captures alone). 16 sizes, 2 workers, 8 callers: every request must
/// be answered, and right.
#[test]
fn graph_captures_on_worker_threads_beside_copies_answer_every_request() {
    use onnxrt_serve::batch::Batcher;
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let sizes: Vec<usize> = (1..=16).collect();
    let batcher = Batcher::builder(cuda_session("mlp.onnx"))
        .max_batch(16)
        .workers(2)
        .pad_to_sizes(&sizes)
        .hold_while_busy(true)
        .device_inputs(0)
        .cuda_graphs(|rows| {
            onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), rows)
        })
        .build()
        .expect("batcher");
    // No warm-up: requests arrive while the workers make and capture their graphs (one worker
    // may copy rows while the other captures).
    std::thread::scope(|scope| {
        for thread in 0..8u64 {
            let (batcher, cpu) = (&batcher, &cpu);
            scope.spawn(move || {
                for round in 0..60u64 {
                    let data = noise(16, 60_000 + thread * 1000 + round);
                    let input = Value::from_vec(&[1, 16], data.clone()).expect("input");
                    let outputs = batcher.run([("x", input)]).expect("every request is answered");
                    let got = outputs[0].to_array::<f32>().expect("row");
                    let expected = run_f32(cpu, "x", &[1, 16], &data);
                    assert!(max_abs_diff(&got, &expected) <= 1e-3, "thread {thread} round {round}");
                }
            });
        }
    });
    let stats = batcher.stats();
    println!(
        "captures beside requests: {} graph runs of {} batches, {} sizes with a graph",
        stats.graph_runs,
        stats.batches,
        batcher.cuda_graphs().len()
    );
    assert_eq!((stats.completed, stats.errors.run_failed), (480, 0));
    assert!(stats.graph_runs > 0);
    // One `device_wait` observation per batch, a graph's run included (its wait at the graph's
    // lock and at the device lock count once, together).
    assert_eq!(stats.device_wait.count, stats.batches, "device_wait per batch");
}

/// Two models' batchers built back to back (as a repository of two models is loaded): their
/// workers' captures, and the second batcher's session made meanwhile, meet in one process. The
/// process-wide hold keeps every capture alone: every size of both gets its graph, every request
/// its own answer.
#[test]
fn two_batchers_with_graphs_capture_beside_each_other() {
    use onnxrt_serve::batch::Batcher;
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let make = || {
        Batcher::builder(cuda_session("mlp.onnx"))
            .max_batch(8)
            .workers(2)
            .pad_to_power_of_two(true)
            .hold_while_busy(true)
            .device_inputs(0)
            .cuda_graphs(|rows| {
                onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), rows)
            })
            .build()
            .expect("batcher")
    };
    let batchers = [make(), make()];
    for batcher in &batchers {
        batcher.warm_up().expect("warm-up");
        let outcomes = batcher.cuda_graphs();
        assert!(outcomes.iter().all(|(_, outcome)| outcome.is_ok()), "{outcomes:?}");
        assert_eq!(outcomes.len(), 4, "sizes 1, 2, 4, 8");
    }
    std::thread::scope(|scope| {
        for (index, batcher) in batchers.iter().enumerate() {
            let cpu = &cpu;
            scope.spawn(move || {
                each_caller_gets_its_own_row(batcher, cpu, 70_000 + index as u64 * 1000, "two batchers: ")
            });
        }
    });
    for batcher in &batchers {
        let stats = batcher.stats();
        assert_eq!((stats.completed, stats.errors.run_failed), (200, 0));
        assert_eq!(stats.graph_runs, stats.batches, "every batch replayed a graph");
    }
}

#[test]
fn gpu_mem_limit_exceeded_is_out_of_memory() {
    let session = Session::builder()
        .cuda(CudaOptions::new().gpu_mem_limit(1 << 20))
        .strict_gpu(true)
        .commit_from_file(model("identity_f32.onnx"))
        .expect("session");
    let big = Value::from_array(ArrayD::<f32>::zeros(IxDyn(&[4096, 4096]))).expect("64 MB input");
    let err = session.run(&[("x", &big)]).expect_err("64 MB cannot fit a 1 MB arena");
    println!("gpu_mem_limit 1 MiB, 64 MiB tensor: {err}");
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
}

#[test]
fn strict_gpu_refuses_a_model_with_cpu_only_ops() {
    // StringNormalizer has no CUDA kernel.
    let err = Session::builder()
        .cuda(CudaOptions::new())
        .strict_gpu(true)
        .commit_from_file(model("strings.onnx"))
        .expect_err("strict GPU with a CPU-only op");
    println!("strict GPU, CPU-only op: {err}");
    let relaxed = Session::builder().cuda(CudaOptions::new()).commit_from_file(model("strings.onnx"));
    assert!(relaxed.is_ok(), "without strict_gpu the CPU fallback works");
}

#[test]
fn device_id_that_does_not_exist_is_a_typed_error() {
    let err = Session::builder()
        .cuda(CudaOptions::new().device_id(7))
        .commit_from_file(model("mlp.onnx"))
        .expect_err("device 7");
    println!("device_id 7: {err}");
    assert!(matches!(err, Error::NoSuchDevice { id: 7, count: Some(_), .. }), "{err:?}");
}

#[test]
fn tensorrt_without_tensorrt_names_the_missing_library() {
    let err = Session::builder()
        .tensorrt(TensorRtOptions::new())
        .commit_from_file(model("mlp.onnx"))
        .expect_err("no TensorRT on this machine");
    println!("TensorRT: {err}");
    match err {
        Error::ProviderLoad { missing: Some(missing), .. } => assert!(missing.starts_with("libnvinfer"), "{missing}"),
        other => panic!("expected ProviderLoad naming libnvinfer, got {other:?}"),
    }
}

#[test]
fn models_match_the_cpu() {
    let mut cases: Vec<(PathBuf, &str, Vec<i64>)> = vec![
        (model("mlp.onnx"), "x", vec![32, 16]),
        (model("dynamic_batch.onnx"), "images", vec![5, 3, 4, 4]),
        (model("add_f32.onnx"), "a", vec![2, 3]),
    ];
    if let Some(resnet) = std::env::var_os("ONNXRT_GPU_RESNET") {
        cases.push((PathBuf::from(resnet), "input", vec![8, 3, 224, 224]));
    }
    for (path, input, shape) in cases {
        let gpu = Session::builder().cuda(CudaOptions::new()).strict_gpu(true).commit_from_file(&path).expect("gpu");
        let cpu = Session::builder().commit_from_file(&path).expect("cpu");
        let len: i64 = shape.iter().product();
        let mut values = vec![(input.to_owned(), Value::from_vec(&shape, noise(len as usize, 9)).expect("input"))];
        for extra in gpu.inputs().iter().filter(|i| i.name != input) {
            values.push((extra.name.clone(), Value::from_vec(&shape, noise(len as usize, 10)).expect("input")));
        }
        let named: Vec<(&str, &Value<'_>)> = values.iter().map(|(n, v)| (n.as_str(), v)).collect();
        let a = gpu.run(&named).expect("gpu run")[0].to_array::<f32>().expect("f32");
        let b = cpu.run(&named).expect("cpu run")[0].to_array::<f32>().expect("f32");
        assert_close(&a, &b, &format!("{} {:?}", path.display(), a.shape()));
    }
}

#[test]
fn cuda_pinned_host_memory_is_readable_on_the_host() {
    let session = cuda_session("mlp.onnx");
    let pinned = MemoryInfo::cuda_pinned().expect("pinned memory info");
    let allocator = session.allocator(&pinned).expect("pinned allocator");
    let mut input = allocator.tensor::<f32>(&[2, 16]).expect("pinned tensor");
    let data = noise(32, 6);
    input.copy_from_host(&data).expect("fill pinned memory");
    // Pinned memory is host memory: the CPU reads it directly.
    assert_eq!(input.view::<f32>().expect("host-readable").iter().copied().collect::<Vec<_>>(), data);
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("x", &input).expect("bind pinned input");
    binding.bind_output_to_device("logits", &pinned).expect("bind pinned output");
    binding.run(None).expect("run");
    let out = binding.outputs().expect("outputs")[0].to_array::<f32>().expect("pinned output readable on the host");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    assert_close(&out, &run_f32(&cpu, "x", &[2, 16], &data), "pinned input and output");
}

#[test]
fn pool_spreads_requests_over_every_gpu_and_matches_the_cpu() {
    use onnxrt_serve::pool::GpuPool;
    let pool = GpuPool::all_devices(model("mlp.onnx"), |b, _| b, |_| CudaOptions::new()).expect("pool");
    println!("pool devices: {:?}", pool.devices());
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let data = noise(4 * 16, 7);
    let expected = run_f32(&cpu, "x", &[4, 16], &data);
    let used = std::sync::Mutex::new(std::collections::BTreeMap::<i32, usize>::new());
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let input = Value::from_vec(&[4, 16], data.clone()).expect("input");
                for _ in 0..50 {
                    let (device, outputs) = pool.run(&[("x", &input)]).expect("pool run");
                    let got = outputs[0].to_array::<f32>().expect("f32");
                    assert!(max_abs_diff(&got, &expected) <= 1e-3 * 2.0, "pool run differs from the CPU");
                    *used.lock().expect("lock").entry(device).or_default() += 1;
                }
            });
        }
    });
    let used = used.into_inner().expect("lock");
    println!("runs per device: {used:?}");
    assert_eq!(used.values().sum::<usize>(), 200);
    assert_eq!(used.len(), pool.devices().len(), "every device took requests");
}

#[test]
fn pool_with_a_device_that_does_not_exist_is_refused() {
    use onnxrt_serve::pool::GpuPool;
    let err = GpuPool::new(model("mlp.onnx"), &[0, 9], |b, _| b, |_| CudaOptions::new()).expect_err("no device 9");
    println!("pool over [0, 9]: {err}");
    assert!(matches!(err, onnxrt_serve::Error::Onnxrt(Error::NoSuchDevice { id: 9, .. })), "{err:?}");
}

#[test]
fn pool_throughput_against_one_gpu() {
    use onnxrt_serve::pool::GpuPool;
    let Some(resnet) = std::env::var_os("ONNXRT_GPU_RESNET") else {
        println!("skipped: set ONNXRT_GPU_RESNET to a ResNet-50");
        return;
    };
    let input = Value::from_vec(&[32, 3, 224, 224], noise(32 * 3 * 224 * 224, 8)).expect("batch 32");
    let measure = |pool: &GpuPool, threads: usize| {
        for _ in 0..3 {
            pool.run(&[("input", &input)]).expect("warm-up");
        }
        let start = std::time::Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    for _ in 0..20 {
                        pool.run(&[("input", &input)]).expect("run");
                    }
                });
            }
        });
        (threads * 20 * 32) as f64 / start.elapsed().as_secs_f64()
    };
    let all = GpuPool::all_devices(&resnet, |b, _| b, |_| CudaOptions::new()).expect("pool");
    let one = GpuPool::new(&resnet, &[0], |b, _| b, |_| CudaOptions::new()).expect("one");
    let threads = 2 * all.devices().len();
    let (one_rate, all_rate) = (measure(&one, threads), measure(&all, threads));
    println!(
        "ResNet-50 batch 32, {threads} threads: 1 GPU {one_rate:.0} images/s; {} GPU(s) {all_rate:.0} images/s; ratio {:.2}",
        all.devices().len(),
        all_rate / one_rate
    );
}

#[test]
fn a_cuda_option_the_runtime_does_not_know_is_refused() {
    let err = Session::builder()
        .cuda(CudaOptions::new().raw("no_such_option", 1))
        .commit_from_file(model("mlp.onnx"))
        .expect_err("unknown CUDA option");
    println!("unknown CUDA option: {err}");
    // Off the CUDA allow-list: refused before ORT sees it (docs/soundness.md §10).
    assert!(matches!(err, Error::KeyRefused { .. }), "{err:?}");
    assert!(err.to_string().contains("no_such_option"), "{err}");
}

/// The crate's own device memory (`Value::zeros_cuda`), rows of it (`first_rows_mut`) and copies
/// on a private stream (`Value::copy_from`): zeroed at birth, round trips bitwise, binds as an
/// input whose rows ORT reads without a copy of its own.
#[test]
fn crate_owned_device_memory_round_trips_and_binds_by_rows() {
    use onnxrt::{CudaStream, ElementType};
    let stream = CudaStream::new(0).expect("stream");
    let mut device = Value::zeros_cuda(&[4, 16], ElementType::F32, 0).expect("device tensor");
    let mut back = Value::from_vec(&[4, 16], vec![7.0f32; 64]).expect("host");
    back.copy_from(&device, &stream).expect("device to host");
    assert!(back.view::<f32>().expect("view").iter().all(|&x| x.to_bits() == 0), "zeros_cuda is zeroed");
    let data = noise(64, 11);
    let host = Value::from_vec(&[4, 16], data.clone()).expect("host input");
    device.copy_from(&host, &stream).expect("host to device");
    back.copy_from(&device, &stream).expect("device to host");
    assert_eq!(back.host_bytes().expect("bytes"), host.host_bytes().expect("bytes"), "bitwise round trip");
    assert_eq!(device.host_bytes().expect_err("device memory").variant(), "NotHostMemory");

    let session = cuda_session("mlp.onnx");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let rows = device.first_rows_mut(3).expect("device rows");
    assert_eq!(rows.tensor_info().expect("info").shape, [3, 16]);
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("x", &rows).expect("bind device rows");
    binding.bind_output_to_device("logits", &MemoryInfo::cpu().expect("cpu info")).expect("bind");
    binding.run(None).expect("run");
    let out = binding.outputs().expect("outputs")[0].to_array::<f32>().expect("host output");
    assert_close(&out, &run_f32(&cpu, "x", &[3, 16], &data[..48]), "first 3 device rows");
}

/// What `copy_from` refuses, on real device memory: another element type or shape, a read-only
/// destination (a view, a binding's output), string tensors. Nothing is copied when refused.
#[test]
fn copy_from_refusals_on_the_device() {
    use onnxrt::{CudaStream, ElementType};
    let stream = CudaStream::new(0).expect("stream");
    let mut device = Value::zeros_cuda(&[2, 16], ElementType::F32, 0).expect("device tensor");
    let halves = Value::zeros(&[2, 16], ElementType::F16).expect("f16");
    assert_eq!(device.copy_from(&halves, &stream).expect_err("type").variant(), "ElementTypeMismatch");
    let longer = Value::zeros(&[3, 16], ElementType::F32).expect("3 rows");
    assert_eq!(device.copy_from(&longer, &stream).expect_err("shape").variant(), "ShapeMismatch");
    let data = [1.0f32; 32];
    let array = ndarray::ArrayView::from_shape((2, 16), &data).expect("view");
    let mut view = Value::from_view(array).expect("view value");
    assert_eq!(view.copy_from(&device, &stream).expect_err("read-only").variant(), "ReadOnlyValue");
    assert_eq!(data, [1.0f32; 32], "a refused copy writes nothing");
    let strings = Value::from_strings(&[1], &["a"]).expect("strings");
    let mut other = Value::from_strings(&[1], &["b"]).expect("strings");
    assert!(matches!(other.copy_from(&strings, &stream), Err(Error::InvalidArgument { .. })));

    let session = cuda_session("mlp.onnx");
    let input = Value::from_vec(&[2, 16], noise(32, 12)).expect("input");
    let mut binding = session.io_binding().expect("binding");
    binding.bind_input("x", &input).expect("bind");
    binding.bind_output_to_device("logits", &MemoryInfo::cuda(0).expect("cuda info")).expect("bind out");
    binding.run(None).expect("run");
    let mut outputs = binding.outputs().expect("outputs");
    let source = Value::zeros(&[2, 4], ElementType::F32).expect("zeros");
    let err = outputs[0].copy_from(&source, &stream).expect_err("a binding's output is shared");
    assert_eq!(err.variant(), "ReadOnlyValue");
}

/// `copy_rows_from` copies its rows and no others, host to device and back, between tensors of
/// different row counts; and refuses, before any copy, rows past either tensor, a reversed range,
/// another row shape or element type, a read-only destination and strings.
#[test]
fn copy_rows_from_copies_its_rows_only_and_refuses_the_rest() {
    use onnxrt::{CudaStream, ElementType};
    let stream = CudaStream::new(0).expect("stream");
    let mut device = Value::zeros_cuda(&[8, 16], ElementType::F32, 0).expect("device tensor");
    let data = noise(8 * 16, 13);
    let host = Value::from_vec(&[8, 16], data.clone()).expect("host");
    device.copy_rows_from(2..5, &host, &stream).expect("rows 2..5");
    let four_data = noise(4 * 16, 14);
    let four = Value::from_vec(&[4, 16], four_data.clone()).expect("4 rows");
    device.copy_rows_from(0..1, &four, &stream).expect("row 0 from a shorter tensor");
    device.copy_rows_from(6..6, &host, &stream).expect("no rows");
    let mut back = Value::from_vec(&[8, 16], vec![7.0f32; 128]).expect("host");
    back.copy_rows_from(0..8, &device, &stream).expect("device to host, every row");
    let got: Vec<u32> = back.view::<f32>().expect("view").iter().map(|x| x.to_bits()).collect();
    let bits = |values: &[f32]| values.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    for r in 0..8 {
        let expected = match r {
            0 => bits(&four_data[..16]),
            2..=4 => bits(&data[r * 16..(r + 1) * 16]),
            _ => vec![0u32; 16],
        };
        assert_eq!(got[r * 16..(r + 1) * 16], expected[..], "row {r}");
    }
    let before = back.host_bytes().expect("bytes").to_vec();
    let refused = |result: onnxrt::Result<()>| result.expect_err("refused").variant();
    assert_eq!(refused(device.copy_rows_from(6..9, &host, &stream)), "InvalidArgument");
    assert_eq!(refused(device.copy_rows_from(3..6, &four, &stream)), "InvalidArgument");
    #[allow(clippy::reversed_empty_ranges)]
    let reversed = 5..3;
    assert_eq!(refused(device.copy_rows_from(reversed, &host, &stream)), "InvalidArgument");
    let narrower = Value::zeros(&[8, 15], ElementType::F32).expect("15 wide");
    assert_eq!(refused(device.copy_rows_from(0..1, &narrower, &stream)), "ShapeMismatch");
    let halves = Value::zeros(&[8, 16], ElementType::F16).expect("f16");
    assert_eq!(refused(device.copy_rows_from(0..1, &halves, &stream)), "ElementTypeMismatch");
    let fixed = [1.0f32; 32];
    let mut view = Value::from_view(ndarray::ArrayView::from_shape((2, 16), &fixed).expect("view")).expect("value");
    assert_eq!(refused(view.copy_rows_from(0..1, &device, &stream)), "ReadOnlyValue");
    assert_eq!(fixed, [1.0f32; 32], "a refused copy writes nothing");
    let strings = Value::from_strings(&[2], &["a", "b"]).expect("strings");
    let mut other = Value::from_strings(&[2], &["c", "d"]).expect("strings");
    assert_eq!(refused(other.copy_rows_from(0..1, &strings, &stream)), "InvalidArgument");
    back.copy_rows_from(0..8, &device, &stream).expect("device to host again");
    assert_eq!(back.host_bytes().expect("bytes"), &before[..], "the refusals changed nothing on the device");
}

/// The batcher holding batches open (`hold_while_busy`) with `device_inputs`: each request's row
/// goes to the device as it is taken, the rest (and the padding) when the batch closes. 4
/// threads × 50 requests through 2 workers match the CPU on their own samples; then a request
/// whose deadline passes inside a held batch makes the rows behind it move up, so they are
/// copied to the device again and still answer their own callers.
#[test]
fn held_batches_with_device_inputs_answer_each_request_with_its_own_row() {
    use onnxrt_serve::batch::{Batcher, RequestOptions};
    use std::time::Duration;
    let session = cuda_session("mlp.onnx");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let batcher = Batcher::builder(session.clone())
        .max_batch(16)
        .workers(2)
        .pad_to_sizes(&[1, 4, 8, 16])
        .hold_while_busy(true)
        .device_inputs(0)
        .build()
        .expect("batcher");
    batcher.warm_up().expect("warm-up");
    each_caller_gets_its_own_row(&batcher, &cpu, 20_000, "held: ");
    let stats = batcher.stats();
    println!("held device_inputs batcher: {stats:?}");
    assert!(stats.batches < 200, "some requests shared a batch: {} batches for 200 requests", stats.batches);

    let single = Batcher::builder(session)
        .max_batch(4)
        .max_delay(Duration::from_secs(1))
        .hold_while_busy(true)
        .device_inputs(0)
        .build()
        .expect("batcher");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let data: Vec<Vec<f32>> = (0..3).map(|i| noise(16, 30_000 + i)).collect();
    let x = |i: usize| Value::from_vec(&[1, 16], data[i].clone()).expect("x");
    let first = single.run_async([("x", x(0))]).expect("queued");
    let hurried =
        single.run_async_with([("x", x(1))], RequestOptions::timeout(Duration::from_millis(30))).expect("queued");
    let third = single.run_async([("x", x(2))]).expect("queued");
    assert!(rt.block_on(hurried).is_err(), "the hurried request expires inside the held batch");
    for (future, i) in [(first, 0), (third, 2)] {
        let got = rt.block_on(future).expect("runs")[0].to_array::<f32>().expect("row");
        assert_close(&got, &run_f32(&cpu, "x", &[1, 16], &data[i]), &format!("request {i} after the expiry"));
    }
}

/// Two threads, each with its own stream and device buffer, refill their buffer and run the same
/// session 200 times each: every answer matches its own input (no copy lands in the other's
/// buffer, no run reads a half-copied one).
#[test]
fn copies_on_two_streams_beside_runs_on_two_threads() {
    use onnxrt::{CudaStream, ElementType};
    let session = cuda_session("mlp.onnx");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    std::thread::scope(|scope| {
        for thread in 0..2u64 {
            let (session, cpu) = (&session, &cpu);
            scope.spawn(move || {
                let stream = CudaStream::new(0).expect("stream");
                let mut device = Value::zeros_cuda(&[8, 16], ElementType::F32, 0).expect("device buffer");
                for round in 0..200u64 {
                    let rows = 1 + (round % 8) as usize;
                    let data = noise(rows * 16, thread * 1000 + round);
                    let host = Value::from_vec(&[rows as i64, 16], data.clone()).expect("host");
                    let mut batch = device.first_rows_mut(rows).expect("rows");
                    batch.copy_from(&host, &stream).expect("copy");
                    let mut binding = session.io_binding().expect("binding");
                    binding.bind_input("x", &batch).expect("bind");
                    binding.bind_output_to_device("logits", &MemoryInfo::cpu().expect("cpu")).expect("bind out");
                    binding.run(None).expect("run");
                    let out = binding.outputs().expect("outputs")[0].to_array::<f32>().expect("out");
                    let want = run_f32(cpu, "x", &[rows as i64, 16], &data);
                    assert!(max_abs_diff(&out, &want) <= 1e-3 * 4.0, "thread {thread} round {round}");
                }
            });
        }
    });
}

/// The batcher with `device_inputs`: batches gathered in page-locked memory, copied to the
/// workers' own device buffers and bound there. 4 threads × 50 requests through 2 workers; every
/// answer matches the CPU on its own sample, and batches did form.
#[test]
fn batcher_with_device_inputs_answers_each_request_with_its_own_row() {
    use onnxrt_serve::batch::Batcher;
    let session = cuda_session("mlp.onnx");
    let cpu = Session::builder().commit_from_file(model("mlp.onnx")).expect("cpu");
    let batcher = Batcher::builder(session)
        .max_batch(16)
        .workers(2)
        .max_delay(std::time::Duration::from_millis(2))
        .pad_to_sizes(&[1, 4, 8, 16])
        .device_inputs(0)
        .build()
        .expect("batcher");
    batcher.warm_up().expect("warm-up");
    each_caller_gets_its_own_row(&batcher, &cpu, 10_000, "");
    let stats = batcher.stats();
    println!("device_inputs batcher: {stats:?}");
    assert!(stats.batches < 200, "some requests shared a batch: {} batches for 200 requests", stats.batches);
}
