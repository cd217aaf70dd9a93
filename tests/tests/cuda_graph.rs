//! `CudaGraph` on a machine without CUDA (CI): every refusal is a typed error, the ones that need
//! no runtime come before anything is loaded, and nothing is left behind (also run under
//! valgrind: `tools/reliability/memcheck.sh`). Its runs are tested on the GPU (tests/tests/gpu.rs,
//! tests/tests/gpu_graph_sizes.rs).
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

#[test]
fn several_sizes_are_checked_before_the_runtime_and_need_onnx_runtime_1_18() {
    use onnxrt::CudaGraphs;
    let graphs =
        |sizes: &[usize]| CudaGraphs::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), sizes);
    for (sizes, says) in
        [(&[][..], "no sizes"), (&[1, 0, 4][..], "0 rows"), (&[1, 2, 4, 2][..], "2 listed twice"), (&[0][..], "0 rows")]
    {
        let error = graphs(sizes).expect_err("bad sizes");
        assert!(matches!(&error, Error::InvalidArgument { what, .. } if what.contains(says)), "{sizes:?}: {error:?}");
    }
    let named = Session::builder().cuda(CudaOptions::new());
    let error = CudaGraphs::from_memory(named, CudaOptions::new(), b"", &[1, 1]).expect_err("sizes first");
    assert!(error.to_string().contains("1 listed twice"), "{error}");
    let named = Session::builder().cuda(CudaOptions::new());
    let error = CudaGraphs::from_memory(named, CudaOptions::new(), b"", &[1, 2]).expect_err("provider given twice");
    assert!(error.to_string().contains("give the CUDA options to CudaGraph itself"), "{error}");
    // The runtime decides the rest: before 1.18 several sizes are refused by version, before
    // any session is built (an empty model would otherwise be ORT's error); one size is not.
    let runtime = onnxrt::runtime_info().expect("runtime");
    let several = CudaGraphs::from_memory(Session::builder(), CudaOptions::new(), b"", &[8, 1, 4, 2]);
    let one = CudaGraphs::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), &[4]);
    println!("ORT {}: several sizes: {several:?}; one size: {one:?}", runtime.version);
    if runtime.api_level < 18 {
        let error = several.expect_err("too old");
        assert!(
            matches!(&error, Error::NeedsNewerRuntime { needs: 18, feature, found }
                if feature.contains("gpu_graph_id") && *found == runtime.version),
            "{error:?}"
        );
    } else {
        assert!(matches!(
            several,
            Err(Error::ProviderNotAvailable { .. } | Error::ProviderLoad { .. } | Error::NoSuchDevice { .. })
        ));
    }
    assert!(matches!(
        one,
        Err(Error::ProviderNotAvailable { .. } | Error::ProviderLoad { .. } | Error::NoSuchDevice { .. })
    ));
}

#[test]
fn a_batcher_asks_for_one_session_of_every_size_from_1_18_and_one_per_size_before() {
    use onnxrt::CudaGraphs;
    use onnxrt_serve::batch::Batcher;
    use std::sync::{Arc, Mutex};
    let asked: Arc<Mutex<Vec<Vec<usize>>>> = Arc::default();
    let log = Arc::clone(&asked);
    let session = Session::builder().commit_from_file(model("mlp.onnx")).expect("session");
    let batcher = Batcher::builder(session)
        .max_batch(4)
        .pad_to_power_of_two(true)
        .device_inputs(0)
        .workers(2)
        .cuda_graphs_in_one_session(move |sizes| {
            log.lock().expect("log").push(sizes.to_vec());
            CudaGraphs::from_file(Session::builder(), CudaOptions::new(), model("mlp.onnx"), sizes)
        })
        .build()
        .expect("batcher");
    assert_eq!(batcher.warm_up().expect("warm-up"), [1, 2, 4]);
    let asked = asked.lock().expect("log").clone();
    let runtime = onnxrt::runtime_info().expect("runtime");
    println!("ORT {}: the factory was asked for {asked:?}", runtime.version);
    if runtime.api_level < 18 {
        assert_eq!(asked, [vec![1], vec![2], vec![4]], "a session per size before 1.18");
    } else {
        assert_eq!(asked, [vec![1, 2, 4]], "one session of every size");
    }
    // No CUDA here: every size says why and runs on the batcher's session.
    let outcomes = batcher.cuda_graphs();
    assert_eq!(outcomes.iter().map(|(rows, _)| *rows).collect::<Vec<_>>(), [1, 2, 4]);
    assert!(
        outcomes.iter().all(|(_, outcome)| outcome.as_ref().is_err_and(|why| why.contains("CUDA"))),
        "{outcomes:?}"
    );
    assert_eq!(batcher.cuda_graph_sessions(), 0);
    let x = onnxrt::Value::from_vec(&[16], vec![0.25f32; 16]).expect("x");
    assert_eq!(
        batcher.run([("x", x)]).expect("runs without a graph")[0].tensor_info().expect("info").shape.as_slice(),
        [1, 4]
    );
}
