//! `CudaGraphs`: one CUDA session with a captured graph per batch size (`gpu_graph_id`, ORT
//! 1.18 and newer), on the GPU machine (CI has no GPU): `--features gpu-tests`.
//!
//! ```text
//! cargo test -p onnxrt-tests --features gpu-tests --test gpu_graph_sizes -- --test-threads 1 --nocapture
//! ```
//! One test at a time (`--test-threads 1`): a capture fails if other CUDA work of the process
//! runs meanwhile, and the memory readings count the whole device. On the device, point
//! `ONNXRT_DYLIB_PATH` at the GPU runtime and `ONNXRT_TEST_MODELS` at the copied
//! `tests/data/models`; `ONNXRT_GPU_RESNET` names a ResNet-50 to use instead of the MLP
//! (`tools/gpu/graphs.sh` does all of it).
#![cfg(feature = "gpu-tests")]

use std::path::PathBuf;

use ndarray::ArrayD;
use onnxrt::providers::cuda::{device_memory, CudaOptions};
use onnxrt::{CudaGraph, CudaGraphs, CudaStream, Dim, ElementType, Error, Session, Value};
use onnxrt_tests::{max_abs_diff, noise};

/// The model under test: the ResNet-50 of `ONNXRT_GPU_RESNET` if set, else the MLP.
fn model_path() -> PathBuf {
    match std::env::var_os("ONNXRT_GPU_RESNET") {
        Some(resnet) => PathBuf::from(resnet),
        None => mlp_path(),
    }
}

fn mlp_path() -> PathBuf {
    let dir = std::env::var_os("ONNXRT_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/models")));
    dir.join("mlp.onnx")
}

/// A batch's contents for `seed`: noise with its own scale and shift, so that two batches give
/// answers apart even through a network that averages its features (ResNet's pooling).
fn batch(len: usize, seed: u64) -> Vec<f32> {
    let scale = 0.5 + (seed % 4) as f32 * 0.5;
    let shift = ((seed % 7) as f32 - 3.0) * 0.3;
    noise(len, seed).into_iter().map(|x| x * scale + shift).collect()
}

/// The model's first input and output, and their shapes past the batch axis.
struct Model {
    path: PathBuf,
    input: String,
    input_row: Vec<i64>,
    output_row: Vec<i64>,
    plain: Session,
}

impl Model {
    fn load() -> Model {
        let path = model_path();
        let plain = Session::builder()
            .cuda(CudaOptions::new().device_id(0))
            .strict_gpu(true)
            .commit_from_file(&path)
            .expect("plain CUDA session");
        let row = |shape: &[Dim]| -> Vec<i64> {
            shape[1..]
                .iter()
                .map(|dim| if let Dim::Fixed(n) = dim { *n } else { panic!("free axis past the first") })
                .collect()
        };
        let input = plain.inputs()[0].name.clone();
        let (input_row, output_row) = (row(&plain.inputs()[0].shape), row(&plain.outputs()[0].shape));
        println!("model {} ({input} {input_row:?} -> {output_row:?})", path.display());
        Model { path, input, input_row, output_row, plain }
    }

    fn shape(row: &[i64], rows: usize) -> Vec<i64> {
        std::iter::once(rows as i64).chain(row.iter().copied()).collect()
    }

    fn input_len(&self, rows: usize) -> usize {
        rows * self.input_row.iter().product::<i64>() as usize
    }

    /// The plain CUDA session's answer (no graph) for `data` of `rows` rows.
    fn expected(&self, rows: usize, data: &[f32]) -> ArrayD<f32> {
        let value = Value::from_vec(&Model::shape(&self.input_row, rows), data.to_vec()).expect("input");
        let outputs = self.plain.run([(self.input.as_str(), &value)]).expect("plain run");
        outputs[0].to_array::<f32>().expect("f32 output")
    }

    /// How far an answer may be from the plain session's: cuDNN may pick other algorithms for
    /// the graph's session.
    fn tolerance(expected: &ArrayD<f32>) -> f32 {
        1e-3 * expected.iter().fold(0.0f32, |m, x| m.max(x.abs())).max(1.0)
    }

    fn assert_close(&self, got: &ArrayD<f32>, expected: &ArrayD<f32>, what: &str) {
        let (diff, tolerance) = (max_abs_diff(got, expected), Model::tolerance(expected));
        assert!(diff <= tolerance, "{what}: max |graph - plain| = {diff} > {tolerance}");
    }

    fn graphs(&self, sizes: &[usize]) -> CudaGraphs {
        CudaGraphs::from_file(Session::builder(), CudaOptions::new(), &self.path, sizes).expect("CudaGraphs")
    }

    /// Fills size `rows`'s input with `data`, runs it, and copies its output to the host.
    fn run(&self, graphs: &mut CudaGraphs, stream: &CudaStream, rows: usize, data: &[f32]) -> ArrayD<f32> {
        let host = Value::from_vec(&Model::shape(&self.input_row, rows), data.to_vec()).expect("input");
        graphs.copy_input_rows_from(rows, 0, 0..rows, &host, stream).expect("copy in");
        graphs.run(rows).expect("graph run");
        self.output(graphs, stream, rows)
    }

    /// Size `rows`'s output as it is now, on the host.
    fn output(&self, graphs: &CudaGraphs, stream: &CudaStream, rows: usize) -> ArrayD<f32> {
        let mut host = Value::zeros(&Model::shape(&self.output_row, rows), ElementType::F32).expect("host output");
        host.copy_rows_from(0..rows, graphs.output(rows, 0).expect("output 0"), stream).expect("copy out");
        host.to_array::<f32>().expect("f32")
    }
}

/// Sizes in an order that changes size on every run (the last and the first differ too).
const ORDER: [usize; 12] = [8, 1, 4, 2, 8, 2, 1, 4, 2, 8, 4, 1];

#[test]
fn sizes_interleaved_each_answer_like_a_plain_session() {
    let model = Model::load();
    let stream = CudaStream::new(0).expect("stream");
    let mut graphs = model.graphs(&[1, 2, 4, 8]);
    assert_eq!(graphs.sizes(), [1, 2, 4, 8]);
    let mut last: Vec<(usize, ArrayD<f32>)> = Vec::new();
    let (mut captures, mut bitwise, mut apart) = (0, 0, 0);
    for run in 0..40u64 {
        let rows = ORDER[run as usize % ORDER.len()];
        // New contents every run: a replay bound to another size's buffers, or to stale ones,
        // answers another batch.
        let data = batch(model.input_len(rows), 50_000 + run);
        captures += usize::from(graphs.run_captures(rows).expect("a size of the set"));
        let got = model.run(&mut graphs, &stream, rows, &data);
        let expected = model.expected(rows, &data);
        bitwise += usize::from(got == expected);
        model.assert_close(&got, &expected, &format!("run {run} ({rows} rows)"));
        // Where this batch's answer is far from the size's previous one, the closeness above
        // also shows the run did not return the previous (stale) answer: count those runs.
        if let Some((_, previous)) = last.iter().find(|(size, _)| *size == rows) {
            apart += usize::from(max_abs_diff(&expected, previous) > 2.0 * Model::tolerance(&expected));
        }
        last.retain(|(size, _)| *size != rows);
        last.push((rows, expected));
        assert!(!graphs.run_captures(rows).expect("a size of the set"), "a size that ran here replays next");
    }
    assert_eq!(captures, 4, "one capture per size on this thread");
    assert!(apart >= 30, "only {apart} of 36 runs had an answer apart from their size's previous one");
    // Each size's output still holds its own last answer: no other size's run wrote it.
    for (rows, expected) in &last {
        model.assert_close(&model.output(&graphs, &stream, *rows), expected, &format!("{rows} rows, read last"));
    }
    println!(
        "CudaGraphs: 40 interleaved runs of sizes 1, 2, 4, 8 match the plain session ({bitwise} of 40 bitwise; {apart} of 36 apart from their size's previous answer)"
    );
}

#[test]
fn the_new_surface_resists_misuse_with_right_answers_or_typed_errors() {
    let model = Model::load();
    let stream = CudaStream::new(0).expect("stream");
    let mut graphs = model.graphs(&[4, 1, 2]);
    for rows in [4, 1, 2] {
        let data = batch(model.input_len(rows), 60_000 + rows as u64);
        let got = model.run(&mut graphs, &stream, rows, &data);
        model.assert_close(&got, &model.expected(rows, &data), &format!("{rows} rows, first thread"));
    }
    // A size not in the set, or an index past the model's: typed errors, and nothing changes.
    let invalid = |result: Result<(), Error>, what: &str| {
        assert!(matches!(&result, Err(Error::InvalidArgument { .. })), "{what}: {result:?}");
    };
    invalid(graphs.run(3), "run of 3 rows");
    invalid(graphs.run(8), "run of 8 rows");
    invalid(graphs.run(0), "run of 0 rows");
    invalid(graphs.run_captures(16).map(drop), "run_captures of 16 rows");
    invalid(graphs.input(3, 0).map(drop), "input of 3 rows");
    invalid(graphs.output(4, 7).map(drop), "output 7");
    let host = Value::from_vec(&Model::shape(&model.input_row, 4), batch(model.input_len(4), 1)).expect("input");
    invalid(graphs.copy_input_rows_from(3, 0, 0..3, &host, &stream), "copy into 3 rows");
    invalid(graphs.copy_input_rows_from(4, 5, 0..4, &host, &stream), "copy into input 5");
    // Four rows into the one-row buffer: the copy checks the rows fit.
    let overflow = graphs.copy_input_rows_from(1, 0, 0..4, &host, &stream);
    assert!(overflow.is_err(), "4 rows into a 1-row graph: {overflow:?}");
    // A size run on a second thread after the first captured it: that thread captures its own
    // graph (ORT keeps them per thread), and both threads answer right afterwards.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                assert!(graphs.run_captures(2).expect("size 2"), "a new thread captures");
                for round in 0..3u64 {
                    let data = batch(model.input_len(2), 61_000 + round);
                    let got = model.run(&mut graphs, &stream, 2, &data);
                    model.assert_close(
                        &got,
                        &model.expected(2, &data),
                        &format!("2 rows, second thread, round {round}"),
                    );
                }
            })
            .join()
            .expect("second thread");
    });
    assert!(!graphs.run_captures(2).expect("size 2"), "the first thread keeps its capture");
    for rows in [2, 4, 1, 2] {
        let data = batch(model.input_len(rows), 62_000 + rows as u64);
        let got = model.run(&mut graphs, &stream, rows, &data);
        model.assert_close(&got, &model.expected(rows, &data), &format!("{rows} rows, back on the first thread"));
    }
    // Outputs copied out (to the host and to the device) outlive the session: they are copies.
    let data = batch(model.input_len(4), 63_000);
    let on_host = model.run(&mut graphs, &stream, 4, &data);
    let mut on_device =
        Value::zeros_cuda(&Model::shape(&model.output_row, 4), ElementType::F32, 0).expect("device output");
    on_device.copy_rows_from(0..4, graphs.output(4, 0).expect("output"), &stream).expect("device copy");
    drop(graphs);
    let expected = model.expected(4, &data);
    model.assert_close(&on_host, &expected, "host copy after the drop");
    let mut back = Value::zeros(&Model::shape(&model.output_row, 4), ElementType::F32).expect("host");
    back.copy_rows_from(0..4, &on_device, &stream).expect("device to host");
    model.assert_close(&back.to_array::<f32>().expect("f32"), &expected, "device copy after the drop");
    // Made and dropped again: each session goes before its buffers, and the next one answers.
    for round in 0..3u64 {
        let mut graphs = model.graphs(&[2, 8]);
        for rows in [8, 2, 8] {
            let data = batch(model.input_len(rows), 64_000 + round * 10 + rows as u64);
            let got = model.run(&mut graphs, &stream, rows, &data);
            model.assert_close(&got, &model.expected(rows, &data), &format!("round {round}, {rows} rows"));
        }
    }
    println!("CudaGraphs: misuse gave typed errors; a second thread, drops and remakes answered right");
}

/// MiB in use on device 0 now.
fn used_mib() -> f64 {
    device_memory(0).expect("cudaMemGetInfo").used() as f64 / (1024.0 * 1024.0)
}

#[test]
fn one_session_for_every_size_holds_less_device_memory_than_a_session_per_size() {
    const SIZES: [usize; 6] = [1, 2, 4, 8, 16, 32];
    let model = Model::load();
    let stream = CudaStream::new(0).expect("stream");
    // Kernels load at their first use and stay loaded: run every size once on the plain
    // session first, so neither way pays for that.
    for rows in SIZES {
        model.expected(rows, &batch(model.input_len(rows), 1));
    }
    let capture_all_and_read = |run: &mut dyn FnMut(usize, &[f32]) -> ArrayD<f32>| {
        for rows in SIZES {
            let data = batch(model.input_len(rows), 70_000 + rows as u64);
            model.assert_close(&run(rows, &data), &model.expected(rows, &data), &format!("{rows} rows"));
        }
        used_mib()
    };
    // (a) Today's way: a CudaGraph (a session, a copy of the weights) per size.
    let before_a = used_mib();
    let mut per_size: Vec<CudaGraph> = SIZES
        .iter()
        .map(|&rows| {
            CudaGraph::from_file(Session::builder(), CudaOptions::new(), &model.path, rows).expect("CudaGraph")
        })
        .collect();
    let after_a = capture_all_and_read(&mut |rows, data| {
        let graph = per_size.iter_mut().find(|graph| graph.rows() == rows).expect("size");
        let host = Value::from_vec(&Model::shape(&model.input_row, rows), data.to_vec()).expect("input");
        graph.copy_input_rows_from(0, 0..rows, &host, &stream).expect("copy in");
        graph.run().expect("run");
        let mut out = Value::zeros(&Model::shape(&model.output_row, rows), ElementType::F32).expect("host");
        out.copy_rows_from(0..rows, graph.output(0).expect("output"), &stream).expect("copy out");
        out.to_array::<f32>().expect("f32")
    });
    drop(per_size);
    // (b) One session for every size.
    let before_b = used_mib();
    let mut one = model.graphs(&SIZES);
    let after_b = capture_all_and_read(&mut |rows, data| model.run(&mut one, &stream, rows, data));
    drop(one);
    let (a, b) = (after_a - before_a, after_b - before_b);
    println!(
        "device memory, sizes {SIZES:?}, every size captured: a CudaGraph per size (6 sessions) {a:.0} MiB; one CudaGraphs session {b:.0} MiB ({:.0} MiB less)",
        a - b
    );
    println!("graph memory lines: per-size={a:.0} MiB one-session={b:.0} MiB model={}", model.path.display());
    assert!(b < a, "one session ({b:.0} MiB) holds less than six ({a:.0} MiB)");
}

#[test]
fn a_batcher_runs_every_padded_size_on_one_graph_session() {
    use onnxrt_serve::batch::Batcher;
    let cuda = Session::builder()
        .cuda(CudaOptions::new().device_id(0))
        .strict_gpu(true)
        .commit_from_file(mlp_path())
        .expect("CUDA session");
    let cpu = Session::builder().commit_from_file(mlp_path()).expect("CPU session");
    let batcher = Batcher::builder(cuda)
        .max_batch(16)
        .workers(2)
        .pad_to_sizes(&[1, 4, 8, 16])
        .hold_while_busy(true)
        .device_inputs(0)
        .cuda_graphs_in_one_session(|sizes| {
            CudaGraphs::from_file(Session::builder(), CudaOptions::new(), mlp_path(), sizes)
        })
        .build()
        .expect("batcher");
    batcher.warm_up().expect("warm-up captures every graph");
    let outcomes = batcher.cuda_graphs();
    println!("one-session graphs: {outcomes:?}, sessions {}", batcher.cuda_graph_sessions());
    assert_eq!(
        outcomes.iter().map(|(rows, ok)| (*rows, ok.is_ok())).collect::<Vec<_>>(),
        [(1, true), (4, true), (8, true), (16, true)]
    );
    assert_eq!(batcher.cuda_graph_sessions(), 1, "every size on one session (ORT 1.18 and newer)");
    // Four callers at once: batches of changing sizes, each caller gets its own row.
    std::thread::scope(|scope| {
        for thread in 0..4u64 {
            let (batcher, cpu) = (&batcher, &cpu);
            scope.spawn(move || {
                for round in 0..50u64 {
                    let data = batch(16, 80_000 + thread * 100 + round);
                    let input = Value::from_vec(&[1, 16], data.clone()).expect("input");
                    let got = batcher.run([("x", input)]).expect("batched run")[0].to_array::<f32>().expect("row");
                    let expected = Value::from_vec(&[1, 16], data).expect("input");
                    let expected = cpu.run([("x", &expected)]).expect("cpu run")[0].to_array::<f32>().expect("row");
                    // The CPU sums in another order and ORT's CUDA provider uses TF32 (use_tf32 on by
                    // default): up to 1.3e-3 of the scale on an H100 (2026-12-07), so 5e-3 of it here.
                    // (Graph against plain GPU session is compared bitwise in the tests above.)
                    let diff = max_abs_diff(&got, &expected);
                    let bound = 5.0 * Model::tolerance(&expected);
                    assert!(diff <= bound, "thread {thread} round {round}: {diff} > {bound}");
                }
            });
        }
    });
    let stats = batcher.stats();
    println!("one-session cuda_graphs batcher: {stats:?}");
    assert_eq!(stats.completed, 200);
    assert!(stats.graph_runs > 0 && stats.graph_runs <= stats.batches, "{} of {}", stats.graph_runs, stats.batches);
}
