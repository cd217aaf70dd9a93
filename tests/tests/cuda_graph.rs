//! `CudaGraph` on a machine without CUDA (CI): every refusal is a typed error, the ones that need
//! no runtime come before anything is loaded, and nothing is left behind (also run under
//! valgrind: `tools/reliability/memcheck.sh`). Its runs are tested on the GPU (tests/tests/gpu.rs).
#![cfg(feature = "cuda")]

use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{CudaGraph, Error, Session};
use onnxrt_tests::model;

#[test]
fn zero_rows_and_a_builder_with_a_provider_are_refused_before_the_runtime_is_asked() {
    let zero = CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), 0).expect_err("0 rows");
    assert!(matches!(&zero, Error::InvalidArgument { what, .. } if what.contains("0 rows")), "{zero:?}");
    let twice = Session::builder().cuda(CudaOptions::new());
    let error =
        CudaGraph::from_file(twice, CudaOptions::new(), model("mlp.onnx"), 4).expect_err("provider given twice");
    assert!(error.to_string().contains("give the CUDA options to CudaGraph itself"), "{error}");
    let bad_device = CudaOptions::new().raw("device_id", "first");
    let error = CudaGraph::from_memory(Session::builder(), bad_device, b"", 4).expect_err("device");
    assert!(error.to_string().contains("device_id `first`"), "{error}");
}

#[test]
fn a_runtime_without_cuda_is_a_typed_error_naming_the_provider() {
    for rows in [1, 8] {
        let error = CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), rows)
            .expect_err("no CUDA here");
        println!("{rows} rows: {error}");
        assert!(
            matches!(
                error,
                Error::ProviderNotAvailable { .. } | Error::ProviderLoad { .. } | Error::NoSuchDevice { .. }
            ),
            "{error:?}"
        );
    }
    let no_such = onnxrt_tests::models_dir().join("no_such.onnx");
    let missing = CudaGraph::from_file(Session::builder(), CudaOptions::new(), no_such, 4);
    assert!(matches!(
        missing,
        Err(Error::ModelFile { .. } | Error::ProviderNotAvailable { .. } | Error::ProviderLoad { .. })
    ));
}

#[test]
fn a_batcher_refuses_graphs_without_device_inputs_or_padding_and_runs_without_them_where_none_can_be_made() {
    use onnxrt_serve::batch::Batcher;
    let graph = |rows| CudaGraph::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), rows);
    let session = || Session::builder().commit_from_file(model("mlp.onnx")).expect("session");
    let host_only = Batcher::builder(session()).pad_to_power_of_two(true).cuda_graphs(graph).build();
    assert!(host_only.expect_err("no device_inputs").to_string().contains("needs device_inputs"));
    let unpadded = Batcher::builder(session()).device_inputs(0).cuda_graphs(graph).build();
    assert!(unpadded.expect_err("no padding").to_string().contains("padded sizes"));
    // On this CPU-only runtime no graph can be made: each size says why and runs on the session.
    let batcher = Batcher::builder(session())
        .max_batch(4)
        .pad_to_power_of_two(true)
        .device_inputs(0)
        .cuda_graphs(graph)
        .build()
        .expect("batcher");
    assert_eq!(batcher.warm_up().expect("warm-up"), [1, 2, 4]);
    let outcomes = batcher.cuda_graphs();
    assert_eq!(outcomes.iter().map(|(rows, _)| *rows).collect::<Vec<_>>(), [1, 2, 4]);
    for (rows, outcome) in &outcomes {
        let why = outcome.as_ref().expect_err("no CUDA here");
        assert!(why.contains("CUDA"), "{rows} rows: {why}");
    }
    let x = onnxrt::Value::from_vec(&[16], vec![0.25f32; 16]).expect("x");
    let answer = batcher.run([("x", x)]).expect("runs without a graph");
    assert_eq!(answer[0].tensor_info().expect("info").shape.as_slice(), [1, 4]);
    assert_eq!(batcher.stats().graph_runs, 0);
}
