//! The dynamic batcher (`onnxrt_serve::batch`) on real models and the real runtime: every
//! caller gets exactly what a run of its sample alone returns (bitwise), bad requests fail alone,
//! and every accepted request is answered once (full queue, deadlines, cancellation, shutdown),
//! with counters that add up.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use onnxrt::{Error as OrtError, Session, Value};
use onnxrt_serve::batch::{BatchFuture, Batcher, BatcherStats, RequestOptions, Shutdown, WhenFull};
use onnxrt_serve::Error;
use onnxrt_tests::{builder, model};

/// The example's embedded default model: a 1×1 Conv, GlobalAveragePool and Gemm over
/// `image: [batch, 3, 224, 224]`.
fn colors_model() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/colors.onnx")
}

/// Deterministic pseudo-random floats in [-1, 1) (a different stream per seed).
fn sample(seed: u64, len: usize) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// The bits of every output of a run of one sample alone (`[1, ...]`), in model order.
fn single_run(session: &Session, input: &str, shape: &[i64], data: &[f32]) -> Vec<(Vec<i64>, Vec<u32>)> {
    let mut batch_shape = vec![1];
    batch_shape.extend_from_slice(shape);
    let value = Value::from_vec(&batch_shape, data.to_vec()).expect("input");
    let outputs = session.run([(input, &value)]).expect("single run");
    outputs.into_values().iter().map(bits).collect()
}

fn bits(value: &Value<'_>) -> (Vec<i64>, Vec<u32>) {
    let shape = value.tensor_info().expect("tensor").shape;
    (shape, value.view::<f32>().expect("f32").iter().map(|x| x.to_bits()).collect())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("tokio runtime")
}

/// Every accepted request was answered exactly once, and the per-batch counters agree.
fn assert_consistent(stats: &BatcherStats) {
    let e = &stats.errors;
    assert_eq!(
        stats.submitted,
        stats.completed + e.deadline + e.cancelled + e.shut_down + e.run_failed,
        "accepted requests not all answered once: {stats:#?}"
    );
    assert_eq!(stats.queue_depth, 0, "{stats:#?}");
    let in_batches: u64 = stats.batch_sizes.iter().enumerate().map(|(n, runs)| n as u64 * runs).sum();
    assert_eq!(stats.batch_sizes.iter().sum::<u64>(), stats.batches, "{stats:#?}");
    assert_eq!(stats.run_time.count, stats.batches, "{stats:#?}");
    assert_eq!(stats.queue_time.count, in_batches, "{stats:#?}");
    // Requests run in a batch either completed, or were dropped after it (deadline, cancel).
    assert!(in_batches >= stats.completed, "{stats:#?}");
}

/// Many callers at once through one batcher: each gets the single run's result bit for bit, and
/// batches of more than one really formed.
fn bitwise_through_batches(path: PathBuf, input: &str, shape: &[i64], callers: usize) {
    bitwise_through_batches_padded(path, input, shape, callers, false);
}

fn bitwise_through_batches_padded(path: PathBuf, input: &str, shape: &[i64], callers: usize, pad: bool) {
    bitwise_through(path, input, shape, callers, |b| b.max_batch(8).pad_to_power_of_two(pad));
}

fn bitwise_through(
    path: PathBuf,
    input: &str,
    shape: &[i64],
    callers: usize,
    settings: impl FnOnce(onnxrt_serve::batch::BatcherBuilder) -> onnxrt_serve::batch::BatcherBuilder,
) -> BatcherStats {
    let session = builder().commit_from_file(&path).expect("model loads");
    let batcher = Arc::new(
        settings(Batcher::builder(session.clone()).max_delay(Duration::from_millis(20))).build().expect("batchable"),
    );
    callers_get_their_single_run_rows(&batcher, &session, input, shape, callers, 0);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!(stats.completed, callers as u64);
    assert!(stats.batch_sizes.iter().skip(2).any(|&runs| runs > 0), "no batch of 2 or more formed: {stats:#?}");
    assert_eq!(stats.gather_time.count, stats.batches, "every batch's gather is timed");
    assert_eq!(stats.model_time.count, stats.batches, "every batch's model run is timed");
    assert_eq!(stats.device_wait.count, stats.batches, "every batch's wait for the device is timed");
    stats
}

/// `callers` threads (seeds `seed..`) each send one sample at once through `batcher` and get
/// exactly the rows a run of their sample alone on `session` returns, bitwise.
fn callers_get_their_single_run_rows(
    batcher: &Arc<Batcher>,
    session: &Session,
    input: &str,
    shape: &[i64],
    callers: usize,
    seed: u64,
) {
    let len: usize = shape.iter().product::<i64>() as usize;
    let start = Arc::new(Barrier::new(callers));
    let handles: Vec<_> = (0..callers)
        .map(|i| {
            let (batcher, start, input, shape) =
                (Arc::clone(batcher), Arc::clone(&start), input.to_owned(), shape.to_vec());
            std::thread::spawn(move || {
                let data = sample(seed + i as u64, len);
                start.wait();
                let value = Value::from_vec(&shape, data.clone()).expect("sample");
                let outputs = batcher.run([(input.as_str(), value)]).expect("batched run");
                (data, outputs.into_values().iter().map(bits).collect::<Vec<_>>())
            })
        })
        .collect();
    for handle in handles {
        let (data, got) = handle.join().expect("caller");
        assert_eq!(got, single_run(session, input, shape, &data), "a caller's row differs from its single run");
    }
}

#[test]
fn each_caller_gets_its_single_run_result_bitwise_mlp_gemm() {
    bitwise_through_batches(model("mlp.onnx"), "x", &[16], 24);
}

#[test]
fn each_caller_gets_its_single_run_result_bitwise_conv_pool_gemm() {
    bitwise_through_batches(colors_model(), "image", &[3, 224, 224], 12);
}

#[test]
fn each_caller_gets_its_single_run_result_bitwise_3x3_convnet() {
    bitwise_through_batches(model("convnet.onnx"), "image", &[3, 32, 32], 24);
}

/// Padded to powers of two (batches of 3, 5, 6, 7 run as 4 or 8 rows): the padding rows' outputs
/// are dropped and every caller still gets its own row, bitwise.
#[test]
fn padded_batches_give_each_caller_its_single_run_result_bitwise() {
    bitwise_through_batches_padded(model("convnet.onnx"), "image", &[3, 32, 32], 21, true);
    bitwise_through_batches_padded(model("mlp.onnx"), "x", &[16], 13, true);
}

#[test]
fn each_caller_gets_its_single_run_result_bitwise_reduce_mean() {
    bitwise_through_batches(model("dynamic_batch.onnx"), "images", &[3, 4, 4], 16);
}

#[test]
fn a_leading_axis_of_one_is_accepted_and_outputs_keep_it() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let batcher = Batcher::builder(session.clone()).build().expect("batchable");
    let data = sample(7, 16);
    let outputs = batcher.run([("x", Value::from_vec(&[1, 16], data.clone()).expect("x"))]).expect("run");
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["logits"]);
    assert_eq!(vec![bits(&outputs[0])], single_run(&session, "x", &[16], &data));
}

#[test]
fn models_without_a_free_batch_axis_are_refused_at_construction() {
    for (file, culprit) in [("add_f32.onnx", "a"), ("strings.onnx", ""), ("scalar.onnx", "")] {
        let session = builder().commit_from_file(model(file)).expect("model loads");
        let err = Batcher::builder(session).build().expect_err(file);
        assert!(
            matches!(&err, Error::NotBatchable { name, .. } if culprit.is_empty() || name == culprit),
            "{file}: {err}"
        );
        assert!(err.to_string().contains("cannot batch this model"), "{err}");
    }
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let err = Batcher::builder(session).max_batch(0).build().expect_err("max_batch 0");
    assert!(matches!(err, Error::Onnxrt(OrtError::InvalidArgument { .. })), "{err}");
}

#[test]
fn bad_requests_fail_alone_and_good_ones_in_the_same_batch_succeed() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    // The batch closes when the 12 good requests are in (and not before: the delay is an hour),
    // however slowly they are submitted: every request below lands in one batch unless refused.
    let batcher =
        Batcher::builder(session.clone()).max_batch(12).max_delay(Duration::from_secs(3600)).build().expect("batcher");
    let rt = runtime();
    let mut good = Vec::new();
    let mut refused = Vec::new();
    for i in 0..12u64 {
        let data = sample(100 + i, 16);
        let value = Value::from_vec(&[16], data.clone()).expect("x");
        good.push((data, batcher.run_async([("x", value)]).expect("a good request is queued")));
        let bad = match i % 6 {
            0 => batcher.run_async([("y", Value::from_vec(&[16], vec![0f32; 16]).expect("v"))]),
            1 => batcher.run_async([("x", Value::from_vec(&[16], vec![0f64; 16]).expect("v"))]),
            2 => batcher.run_async([("x", Value::from_vec(&[15], vec![0f32; 15]).expect("v"))]),
            3 => batcher.run_async([("x", Value::from_vec(&[2, 16], vec![0f32; 32]).expect("v"))]),
            4 => batcher.run_async(Vec::<(&str, Value<'static>)>::new()),
            _ => batcher.run_async([
                ("x", Value::from_vec(&[16], vec![0f32; 16]).expect("v")),
                ("x", Value::from_vec(&[16], vec![0f32; 16]).expect("v")),
            ]),
        };
        refused.push(bad.expect_err("a bad request is refused before it is queued"));
    }
    for (i, err) in refused.iter().enumerate() {
        let expected =
            ["UnknownInput", "ElementTypeMismatch", "ShapeMismatch", "ShapeMismatch", "MissingInput", "DuplicateInput"]
                [i % 6];
        let Error::Onnxrt(err) = err else { panic!("an input error is onnxrt's: {err}") };
        assert_eq!(err.variant(), expected, "{err}");
    }
    assert!(refused[2].to_string().contains("expects shape [16]"), "{}", refused[2]);
    for (data, future) in good {
        let outputs = rt.block_on(future).expect("good request");
        assert_eq!(vec![bits(&outputs[0])], single_run(&session, "x", &[16], &data));
    }
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!((stats.completed, stats.errors.invalid, stats.batches), (12, 12, 1), "{stats:#?}");
    assert_eq!(stats.batch_sizes[12], 1);
}

#[test]
fn a_full_queue_refuses_with_a_typed_error_or_makes_waiters_wait() {
    // The conv model on a 224×224 sample takes far longer per run than queueing a request
    // (a shared input, no copy), so a tight submit loop fills a queue of 4.
    let session = builder().commit_from_file(colors_model()).expect("colors");
    let batcher =
        Batcher::builder(session).max_batch(1).max_delay(Duration::ZERO).queue_capacity(4).build().expect("batcher");
    let image = Arc::new(Value::from_vec(&[3, 224, 224], sample(1, 3 * 224 * 224)).expect("image"));
    let mut queued = Vec::new();
    let mut full = 0;
    for _ in 0..200 {
        match batcher.run_async([("image", Arc::clone(&image))]) {
            Ok(future) => queued.push(future),
            Err(Error::QueueFull { capacity: 4 }) => full += 1,
            Err(other) => panic!("unexpected error: {other}"),
        }
    }
    assert!(full > 0, "200 submissions never found the queue of 4 full");
    let rt = runtime();
    let accepted = queued.len();
    for future in queued {
        rt.block_on(future).expect("accepted request runs");
    }
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!(
        (stats.submitted, stats.completed, stats.errors.queue_full),
        (accepted as u64, accepted as u64, full),
        "{stats:#?}"
    );

    // WhenFull::Wait: the same pressure, from threads and tasks, and nobody is refused.
    let batcher = Arc::new(batcher);
    let wait = RequestOptions { when_full: WhenFull::Wait, ..RequestOptions::default() };
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (batcher, image) = (Arc::clone(&batcher), Arc::clone(&image));
            std::thread::spawn(move || {
                for _ in 0..10 {
                    batcher.run_with([("image", Arc::clone(&image))], wait).expect("waits for room");
                }
            })
        })
        .collect();
    let futures: Vec<BatchFuture> = (0..40)
        .map(|_| batcher.run_async_with([("image", Arc::clone(&image))], wait).expect("queued or waiting"))
        .collect();
    rt.block_on(async {
        let tasks: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
        for task in tasks {
            task.await.expect("task").expect("waits for room");
        }
    });
    for thread in threads {
        thread.join().expect("caller");
    }
    let after = batcher.stats();
    assert_consistent(&after);
    assert_eq!(after.errors.queue_full, stats.errors.queue_full, "a waiting request was refused");
    assert_eq!(after.completed - stats.completed, 80);
}

#[test]
fn an_expired_request_is_not_run_and_gets_a_deadline_error() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let x = || Value::from_vec(&[16], sample(3, 16)).expect("x");

    // Blocking: returns at its deadline, not when the batch's delay ends. The delay is an hour,
    // so a call that waited for the batch would hang the test (no wall-clock bound needed).
    let lingering =
        Batcher::builder(session.clone()).max_batch(64).max_delay(Duration::from_secs(3600)).build().expect("batcher");
    let err =
        lingering.run_with([("x", x())], RequestOptions::timeout(Duration::from_millis(30))).expect_err("expires");
    assert!(matches!(err, Error::DeadlineExpired { waited } if waited >= Duration::from_millis(30)), "{err}");
    lingering.shutdown(Shutdown::Cancel);
    let stats = lingering.stats();
    assert_consistent(&stats);
    assert_eq!((stats.submitted, stats.completed, stats.errors.deadline, stats.batches), (1, 0, 1, 0), "{stats:#?}");

    let batcher = Batcher::builder(session).max_batch(64).max_delay(Duration::from_secs(1)).build().expect("batcher");

    // Async: a request whose deadline passes while its batch gathers is left out of the run;
    // its neighbour without a deadline runs.
    let rt = runtime();
    let patient = batcher.run_async([("x", x())]).expect("queued");
    let hurried =
        batcher.run_async_with([("x", x())], RequestOptions::timeout(Duration::from_millis(30))).expect("queued");
    let err = rt.block_on(hurried).expect_err("expires");
    assert!(matches!(err, Error::DeadlineExpired { waited } if waited >= Duration::from_millis(30)), "{err}");
    rt.block_on(patient).expect("the other request runs");

    // A request already past its deadline when the worker takes it is not run either.
    let past = RequestOptions { deadline: Some(Instant::now()), ..RequestOptions::default() };
    let err = rt.block_on(batcher.run_async_with([("x", x())], past).expect("queued")).expect_err("expired");
    assert!(matches!(err, Error::DeadlineExpired { .. }), "{err}");

    batcher.shutdown(Shutdown::Drain);
    let stats = batcher.stats();
    assert_consistent(&stats);
    // The hurried and the late request expired; the batch ran with the patient one alone.
    assert_eq!((stats.completed, stats.errors.deadline), (1, 2), "{stats:#?}");
    assert_eq!(stats.batch_sizes[1], 1, "an expired request was run: {stats:#?}");
}

/// Polls a future once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_dropped_future_cancels_only_its_own_request() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let batcher =
        Batcher::builder(session.clone()).max_batch(64).max_delay(Duration::from_secs(1)).build().expect("batcher");
    let inputs: Vec<Vec<f32>> = (0..5).map(|i| sample(200 + i, 16)).collect();
    let mut futures: Vec<Option<BatchFuture>> = inputs
        .iter()
        .map(|data| Some(batcher.run_async([("x", Value::from_vec(&[16], data.clone()).expect("x"))]).expect("queued")))
        .collect();
    for future in futures.iter_mut().flatten() {
        assert!(poll_once(future).is_pending());
    }
    // Two callers give up while the batch gathers.
    futures[1] = None;
    futures[3] = None;
    let rt = runtime();
    for (i, future) in futures.into_iter().enumerate() {
        if let Some(future) = future {
            let outputs = rt.block_on(future).expect("kept request runs");
            assert_eq!(vec![bits(&outputs[0])], single_run(&session, "x", &[16], &inputs[i]));
        }
    }
    batcher.shutdown(Shutdown::Drain);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!((stats.completed, stats.errors.cancelled, stats.batches), (3, 2, 1), "{stats:#?}");
    assert_eq!(stats.batch_sizes[3], 1, "the cancelled requests were run: {stats:#?}");
}

#[test]
fn shutdown_answers_every_pending_request() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let rt = runtime();
    for mode in [Shutdown::Drain, Shutdown::Cancel] {
        // A delay far longer than the test (an hour): the requests are still gathering at
        // shutdown, and a shutdown that waited for the delay would hang the test.
        let batcher = Arc::new(
            Batcher::builder(session.clone())
                .max_batch(256)
                .max_delay(Duration::from_secs(3600))
                .build()
                .expect("batcher"),
        );
        let futures: Vec<BatchFuture> = (0..40)
            .map(|i| batcher.run_async([("x", Value::from_vec(&[16], sample(i, 16)).expect("x"))]).expect("queued"))
            .collect();
        // Blocking callers waiting in the same batch.
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let batcher = Arc::clone(&batcher);
                std::thread::spawn(move || batcher.run([("x", Value::from_vec(&[16], sample(50 + i, 16)).expect("x"))]))
            })
            .collect();
        while batcher.stats().submitted < 44 {
            std::thread::sleep(Duration::from_millis(1));
        }
        batcher.shutdown(mode);
        let mut answers: Vec<Result<_, Error>> = rt.block_on(async {
            let mut answers = Vec::new();
            for future in futures {
                answers.push(future.await);
            }
            answers
        });
        answers.extend(threads.into_iter().map(|t| t.join().expect("caller")));
        assert_eq!(answers.len(), 44);
        for answer in &answers {
            match (mode, answer) {
                (Shutdown::Drain, Ok(outputs)) => assert_eq!(outputs[0].tensor_info().expect("t").shape, [1, 4]),
                (Shutdown::Cancel, Err(Error::BatcherShutDown)) => {}
                (_, other) => panic!("{mode:?}: unexpected answer {other:?}"),
            }
        }
        // After shutdown: refused at once, counted apart.
        let err = batcher.run([("x", Value::from_vec(&[16], sample(0, 16)).expect("x"))]).expect_err("closed");
        assert!(matches!(err, Error::BatcherShutDown), "{err}");
        let stats = batcher.stats();
        assert_consistent(&stats);
        assert_eq!(stats.submitted, 44, "{stats:#?}");
        assert_eq!(stats.errors.closed, 1);
        match mode {
            Shutdown::Drain => assert_eq!(stats.completed, 44, "{stats:#?}"),
            Shutdown::Cancel => {
                assert_eq!((stats.completed, stats.errors.shut_down, stats.batches), (0, 44, 0), "{stats:#?}")
            }
        }
        batcher.shutdown(mode); // again: returns at once
    }
}

#[test]
fn threads_and_tokio_tasks_at_once_each_get_their_own_row() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let batcher = Arc::new(
        Batcher::builder(session.clone())
            .max_batch(32)
            .max_delay(Duration::from_millis(1))
            .workers(2)
            .build()
            .expect("batcher"),
    );
    let threads: Vec<_> = (0..6u64)
        .map(|t| {
            let batcher = Arc::clone(&batcher);
            std::thread::spawn(move || {
                (0..60u64)
                    .map(|i| {
                        let data = sample(1_000 * t + i, 16);
                        let options = RequestOptions { when_full: WhenFull::Wait, ..RequestOptions::default() };
                        let outputs = batcher
                            .run_with([("x", Value::from_vec(&[16], data.clone()).expect("x"))], options)
                            .expect("run");
                        (data, bits(&outputs[0]))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let rt = runtime();
    let from_tasks = rt.block_on(async {
        let tasks: Vec<_> = (0..64u64)
            .map(|t| {
                let batcher = Arc::clone(&batcher);
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    for i in 0..6u64 {
                        let data = sample(100_000 + 1_000 * t + i, 16);
                        let options = RequestOptions { when_full: WhenFull::Wait, ..RequestOptions::default() };
                        let future = batcher
                            .run_async_with([("x", Value::from_vec(&[16], data.clone()).expect("x"))], options)
                            .expect("queued");
                        got.push((data, bits(&future.await.expect("run")[0])));
                    }
                    got
                })
            })
            .collect();
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.expect("task"));
        }
        all
    });
    let mut all = from_tasks;
    for thread in threads {
        all.extend(thread.join().expect("caller"));
    }
    assert_eq!(all.len(), 6 * 60 + 64 * 6);
    for (data, got) in &all {
        assert_eq!(vec![got.clone()], single_run(&session, "x", &[16], data), "a caller got another's row");
    }
    batcher.shutdown(Shutdown::Drain);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!(stats.completed, all.len() as u64);
    assert_eq!(stats.errors, Default::default(), "{stats:#?}");
    assert!(stats.batches < stats.completed, "no request was batched with another: {stats:#?}");
}

#[test]
fn samples_of_different_shapes_run_in_separate_batches_and_other_element_types_work() {
    // identity: x [N, M] -> y [N, M]; M is free, so requests batch only with their own M, and the
    // output's shape is known only after the run (ORT allocates it).
    let session = builder().commit_from_file(model("identity_f32.onnx")).expect("identity");
    let batcher =
        Batcher::builder(session).max_batch(64).max_delay(Duration::from_millis(100)).build().expect("batcher");
    let rt = runtime();
    let requests: Vec<(Vec<f32>, BatchFuture)> = (0..12u64)
        .map(|i| {
            let data = sample(300 + i, if i % 2 == 0 { 3 } else { 5 });
            let len = data.len() as i64;
            let future = batcher.run_async([("x", Value::from_vec(&[len], data.clone()).expect("x"))]).expect("queued");
            (data, future)
        })
        .collect();
    for (data, future) in requests {
        let outputs = rt.block_on(future).expect("run");
        assert_eq!(outputs.get("y").expect("y").tensor_info().expect("t").shape, [1, data.len() as i64]);
        assert_eq!(
            outputs[0].view::<f32>().expect("f32").iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            data.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
    batcher.shutdown(Shutdown::Drain);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!(stats.completed, 12);
    // Alternating shapes: each shape change ends a batch, so more than one batch ran, and none
    // mixed shapes (the rows above are exact).
    assert!(stats.batches >= 2, "{stats:#?}");

    let session = builder().commit_from_file(model("identity_u8.onnx")).expect("identity u8");
    let batcher = Batcher::builder(session).build().expect("batcher");
    let bytes: Vec<u8> = (0..=255).collect();
    let outputs = batcher.run([("x", Value::from_vec(&[256], bytes.clone()).expect("x"))]).expect("run");
    assert_eq!(outputs[0].view::<u8>().expect("u8").iter().copied().collect::<Vec<_>>(), bytes);
}

#[test]
fn a_failed_batch_gives_every_request_its_error_and_the_batcher_goes_on() {
    // `y`'s first axis is free but holds 2 rows per sample: no batch fits rows of one per sample.
    let session = builder().commit_from_file(model("batch_reshape.onnx")).expect("batch_reshape");
    // Batches of exactly 3, closed by count (the delay is an hour), however slow the machine.
    let batcher = Batcher::builder(session).max_batch(3).max_delay(Duration::from_secs(3600)).build().expect("batcher");
    let rt = runtime();
    let three = |seed: u64| -> Vec<BatchFuture> {
        (seed..seed + 3)
            .map(|i| batcher.run_async([("x", Value::from_vec(&[4], sample(i, 4)).expect("x"))]).expect("queued"))
            .collect()
    };
    let futures = three(0);
    // The batcher preallocates `y` as [n, 2]; ORT refuses to write 2n rows there, the batch runs
    // again unallocated to say which output and how, and that one error reaches every request
    // of the batch (it was ORT's "Requested shape:{6,2}").
    let not_split = |error: &Error| matches!(error, Error::NotSplitAlongBatch { name, rows: 3, shape } if name == "y" && shape == &[6, 2]);
    let errors: Vec<Error> =
        futures.into_iter().map(|f| rt.block_on(f).expect_err("the batch cannot be split")).collect();
    assert!(errors.iter().all(not_split), "{errors:#?}");
    // The worker survives a failed batch: the next batch is answered (with its own failure).
    for future in three(9) {
        let err = rt.block_on(future).expect_err("fails alike");
        assert!(not_split(&err), "{err}");
    }
    batcher.shutdown(Shutdown::Drain);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!((stats.completed, stats.errors.run_failed, stats.batch_sizes[3]), (0, 6, 2), "{stats:#?}");
}

/// A session per batch size (for CUDA, where a size change rebuilds every convolution's plan):
/// `warm_up` makes one per padded size, the factory is called for all but the first, and callers
/// still get their single-run rows bitwise from whichever session ran their batch.
#[test]
fn a_session_per_batch_size_is_made_by_warm_up_and_rows_stay_bitwise() {
    let path = model("convnet.onnx");
    let session = builder().commit_from_file(&path).expect("model loads");
    let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let factory = {
        let (made, path) = (Arc::clone(&made), path.clone());
        move || {
            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            builder().commit_from_file(&path)
        }
    };
    let batcher = Arc::new(
        Batcher::builder(session.clone())
            .max_batch(6)
            .max_delay(Duration::from_millis(20))
            .pad_to_power_of_two(true)
            .session_per_batch_size(factory)
            .build()
            .expect("batchable"),
    );
    assert_eq!(batcher.session_count(), 1);
    assert_eq!(batcher.warm_up().expect("warm-up"), [1, 2, 4, 6]);
    assert_eq!(batcher.session_count(), 4);
    assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 3, "the batcher's own session serves the first size");
    callers_get_their_single_run_rows(&batcher, &session, "image", &[3, 32, 32], 11, 100);
    // Warming up again makes nothing new.
    batcher.warm_up().expect("second warm-up");
    assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 3);
    assert_consistent(&batcher.stats());
}

/// A factory that loads another model is refused (the batch that needed it fails alone, typed).
#[test]
fn a_session_factory_for_another_model_is_refused() {
    let session = builder().commit_from_file(model("convnet.onnx")).expect("model loads");
    let batcher = Batcher::builder(session)
        .max_batch(4)
        .pad_to_power_of_two(true)
        .session_per_batch_size(|| builder().commit_from_file(model("mlp.onnx")))
        .build()
        .expect("batchable");
    match batcher.warm_up() {
        Err(Error::Onnxrt(OrtError::InvalidArgument { why, .. })) => assert!(why.contains("same model"), "{why}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// `warm_up` needs a fixed sample shape to make its zeros (identity_f32: x [N, M], M free).
#[test]
fn warm_up_of_a_model_with_free_sample_axes_is_a_typed_error() {
    let session = builder().commit_from_file(model("identity_f32.onnx")).expect("model loads");
    let batcher = Batcher::builder(session).max_batch(4).build().expect("batchable");
    match batcher.warm_up() {
        Err(Error::Onnxrt(OrtError::InvalidArgument { why, .. })) => assert!(why.contains("free axis"), "{why}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// `pad_to_sizes`: batches pad to the smallest listed size that holds them (`max_batch` added),
/// rows stay bitwise, and a size of 0 is refused.
#[test]
fn batches_pad_to_the_listed_sizes() {
    let path = model("convnet.onnx");
    let session = builder().commit_from_file(&path).expect("model loads");
    let batcher = Arc::new(
        Batcher::builder(session.clone())
            .max_batch(8)
            .max_delay(Duration::from_millis(20))
            .pad_to_sizes(&[3, 1, 3])
            .build()
            .expect("batchable"),
    );
    assert_eq!(batcher.warm_up().expect("warm-up"), [1, 3, 8]);
    callers_get_their_single_run_rows(&batcher, &session, "image", &[3, 32, 32], 13, 200);
    assert_consistent(&batcher.stats());
    let zero = Batcher::builder(session).pad_to_sizes(&[0, 4]).build();
    assert!(matches!(zero, Err(Error::Onnxrt(OrtError::InvalidArgument { .. }))), "{zero:?}");
}

/// Several gather threads (16 samples of 600 KB = 9.6 MB: two threads' worth) copy every
/// caller's sample into its own row: rows stay bitwise, and the gather time is counted.
#[test]
fn gather_threads_keep_rows_bitwise() {
    let stats = bitwise_through(colors_model(), "image", &[3, 224, 224], 16, |b| {
        b.max_batch(16).max_delay(Duration::from_millis(500)).gather_threads(4)
    });
    // With every caller in one batch the copy ran on 2 threads (the log shows the sizes otherwise).
    eprintln!("batch sizes: {:?}", stats.batch_sizes);
}

/// `hold_while_busy` with two workers: rounds of callers at once, batches held open while the
/// other worker runs and their samples copied as they arrive; every caller still gets its single
/// run's rows bitwise, padded or not, and every request is answered once.
#[test]
fn held_batches_give_each_caller_its_single_run_rows_bitwise() {
    let path = model("convnet.onnx");
    let session = builder().commit_from_file(&path).expect("model loads");
    for pad in [false, true] {
        let batcher = Arc::new(
            Batcher::builder(session.clone())
                .max_batch(8)
                .workers(2)
                .pad_to_power_of_two(pad)
                .hold_while_busy(true)
                .build()
                .expect("batchable"),
        );
        for round in 0..6u64 {
            callers_get_their_single_run_rows(&batcher, &session, "image", &[3, 32, 32], 21, 1000 * round);
        }
        batcher.shutdown(Shutdown::Drain);
        let stats = batcher.stats();
        assert_consistent(&stats);
        assert_eq!(stats.completed, 6 * 21, "{stats:#?}");
        assert!(stats.batch_sizes.iter().skip(2).any(|&runs| runs > 0), "no batch of 2 or more formed: {stats:#?}");
    }
}

/// A request whose deadline passes while its held batch gathers is left out of the run, and the
/// rows after it move up: the samples copied while holding are then copied again, so the request
/// behind it gets its own answer, not the expired one's.
#[test]
fn a_request_expiring_inside_a_held_batch_leaves_its_neighbours_their_own_rows() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let batcher = Batcher::builder(session.clone())
        .max_batch(4)
        .max_delay(Duration::from_secs(1))
        .hold_while_busy(true)
        .build()
        .expect("batcher");
    let rt = runtime();
    let data: Vec<Vec<f32>> = (0..3).map(|i| sample(40 + i, 16)).collect();
    let x = |i: usize| Value::from_vec(&[16], data[i].clone()).expect("x");
    let first = batcher.run_async([("x", x(0))]).expect("queued");
    let hurried =
        batcher.run_async_with([("x", x(1))], RequestOptions::timeout(Duration::from_millis(30))).expect("queued");
    let third = batcher.run_async([("x", x(2))]).expect("queued");
    let err = rt.block_on(hurried).expect_err("expires");
    assert!(matches!(err, Error::DeadlineExpired { .. }), "{err}");
    for (future, i) in [(first, 0), (third, 2)] {
        let got: Vec<_> = rt.block_on(future).expect("runs").into_values().iter().map(bits).collect();
        assert_eq!(got, single_run(&session, "x", &[16], &data[i]), "request {i} got another row");
    }
    batcher.shutdown(Shutdown::Drain);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!((stats.completed, stats.errors.deadline, stats.batch_sizes[2]), (2, 1, 1), "{stats:#?}");
}

/// A shutdown reaches a worker that holds its batch open for another worker's run (which the
/// gate operator keeps on the device, by count, not by time): with `Cancel` the held requests
/// are answered `BatcherShutDown` while that run is still stuck; with `Drain` the held batch runs
/// once the device is free, as one batch. The stuck run's own request is answered either way.
#[test]
fn a_shutdown_reaches_a_batch_held_for_a_running_one() {
    use onnxrt_tests::gate_op;
    let rt = runtime();
    for mode in [Shutdown::Cancel, Shutdown::Drain] {
        let (domain, gate) = gate_op::domain();
        let session = builder().custom_ops(domain).commit_from_memory(&gate_op::batched_model()).expect("gate model");
        let batcher =
            Arc::new(Batcher::builder(session).max_batch(8).workers(2).hold_while_busy(true).build().expect("batcher"));
        let x = |i: u64| Value::from_vec(&[3], sample(i, 3)).expect("x");
        let stuck = batcher.run_async([("x", x(0))]).expect("queued");
        gate.wait_entered(1);
        // The other worker takes these and holds them: the stuck run is on the device. (A worker
        // that did not hold would close on the first and get stuck at the gate too, leaving two
        // queued: this loop then never ends, the gate_op way of failing.)
        let held: Vec<BatchFuture> = (1..4).map(|i| batcher.run_async([("x", x(i))]).expect("queued")).collect();
        while batcher.stats().queue_depth > 0 {
            std::thread::yield_now();
        }
        let closing = {
            let batcher = Arc::clone(&batcher);
            std::thread::spawn(move || batcher.shutdown(mode))
        };
        if mode == Shutdown::Cancel {
            // Answered while the gate is still closed: the hold ended on the shutdown, not the run.
            for future in held {
                let answer = rt.block_on(future);
                assert!(matches!(answer, Err(Error::BatcherShutDown)), "{answer:?}");
            }
            assert_eq!(gate.passed(), 0, "the stuck run was let through before the held requests were answered");
            gate.open();
        } else {
            gate.open();
            for (i, future) in (1..4).zip(held) {
                let outputs = rt.block_on(future).expect("drained");
                let got: Vec<f32> = outputs[0].view::<f32>().expect("f32").iter().copied().collect();
                assert_eq!(got, sample(i, 3), "request {i} got another row");
            }
        }
        rt.block_on(stuck).expect("the run on the device completes");
        closing.join().expect("shutdown returns");
        let stats = batcher.stats();
        assert_consistent(&stats);
        match mode {
            Shutdown::Cancel => assert_eq!((stats.completed, stats.errors.shut_down), (1, 3), "{stats:#?}"),
            Shutdown::Drain => {
                assert_eq!(stats.completed, 4, "{stats:#?}");
                assert_eq!((stats.batch_sizes[1], stats.batch_sizes[3]), (1, 1), "held requests split: {stats:#?}");
            }
        }
    }
}

#[test]
fn batches_run_by_a_runner_of_the_callers_choice_answer_as_on_the_session() {
    // The runner here is another session of the model, counting its batches; onnxrt-serve's
    // isolation passes a worker process instead.
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let elsewhere = session.clone();
    let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let run = move |inputs: &[(&str, &Value<'_>)]| -> onnxrt_serve::Result<Vec<Value<'static>>> {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let outputs = elsewhere.run(inputs)?;
        Ok(outputs.into_named().into_iter().map(|(_, value)| value).collect())
    };
    let batcher = Arc::new(
        Batcher::builder(session.clone())
            .max_batch(8)
            .max_delay(Duration::from_millis(20))
            .run_batches_with(run)
            .build()
            .expect("batchable"),
    );
    callers_get_their_single_run_rows(&batcher, &session, "x", &[16], 12, 0);
    let stats = batcher.stats();
    assert_consistent(&stats);
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed) as u64, stats.batches, "{stats:#?}");
    assert_eq!(batcher.warm_up().expect("warm-up through the runner").len(), 8);
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed) as u64, stats.batches + 8);

    // A runner's failure is every request's of the batch, as it says.
    let failing = Batcher::builder(session.clone())
        .run_batches_with(|_: &[(&str, &Value<'_>)]| {
            Err(Error::BatchRun { why: "the worker died".into(), refused: false })
        })
        .build()
        .expect("batchable");
    let error = failing.run([("x", Value::from_vec(&[16], vec![0f32; 16]).expect("v"))]).expect_err("fails");
    assert!(matches!(&error, Error::BatchRun { why, refused: false } if why == "the worker died"), "{error:?}");

    // Batches on sessions of this process do not combine with a runner elsewhere.
    let load = || builder().commit_from_file(model("mlp.onnx"));
    let refused = Batcher::builder(session)
        .session_per_batch_size(load)
        .run_batches_with(|_: &[(&str, &Value<'_>)]| Ok(Vec::new()))
        .build()
        .expect_err("refused");
    assert!(refused.to_string().contains("session_per_batch_size"), "{refused}");
}

/// A model whose samples have free axes (an image of any width) is warmed up at every padded
/// size, each on its own session, for the sample shape given; the shape alone has none to use.
/// (Why: a CUDA session tunes each shape on its first run, about 0.6 s for PP-OCR cls on an H100.)
#[test]
fn a_model_with_free_sample_axes_warms_up_every_size_at_the_shape_given() {
    use onnxrt_tests::proto;
    let x = proto::free_tensor_info("x", proto::FLOAT, &["n", "w"]);
    let y = proto::free_tensor_info("y", proto::FLOAT, &["n", "w"]);
    let bytes: &'static [u8] = proto::model(8, 17, &[proto::node("Relu", &["x"], &["y"], &[])], &[x], &[y]).leak();
    let load = move || builder().commit_from_memory(bytes);
    let batcher = Batcher::builder(load().expect("session"))
        .max_batch(8)
        .pad_to_power_of_two(true)
        .session_per_batch_size(load)
        .build()
        .expect("batcher");
    let error = batcher.warm_up().expect_err("no shape for the free axis");
    assert!(error.to_string().contains("free axis"), "{error}");
    // Names it does not have, given twice: refused before any run (outside review, 2026-12-07).
    for (samples, says) in
        [(&[("nope", &[5i64][..])][..], "no such input"), (&[("x", &[5][..]), ("x", &[6][..])], "given twice")]
    {
        let error = batcher.warm_up_with(samples).expect_err("refused");
        assert!(error.to_string().contains(says), "{error}");
    }
    assert_eq!(batcher.session_count(), 1);
    assert_eq!(batcher.warm_up_with(&[("x", &[5])]).expect("warmed up"), [1, 2, 4, 8]);
    assert_eq!(batcher.session_count(), 4);
    // Requests of that width run on those sessions: no new one is made.
    let reply = batcher.run([("x", Value::from_vec(&[1, 5], vec![-1f32, 2., -3., 4., 0.]).expect("x"))]).expect("run");
    assert_eq!(
        reply.get("y").expect("y").to_array::<f32>().expect("f32").into_raw_vec_and_offset().0,
        [0., 2., 0., 4., 0.]
    );
    assert_eq!(batcher.session_count(), 4);
}

/// A sample shape of another rank, or with another size on a fixed axis, is refused before any
/// run, naming the input, the shape given and the model's (it failed only in the first batch
/// run: outside probe).
#[test]
fn warm_up_with_refuses_a_sample_of_another_rank_or_fixed_axis_before_any_run() {
    use onnxrt_tests::proto;
    let x = proto::partly_free_tensor_info("x", proto::FLOAT, &[-1, 3, -1]);
    let y = proto::partly_free_tensor_info("y", proto::FLOAT, &[-1, 3, -1]);
    let bytes = proto::model(8, 17, &[proto::node("Relu", &["x"], &["y"], &[])], &[x], &[y]);
    let session = builder().commit_from_memory(&bytes).expect("session");
    let (batcher, runs) = batcher_counting_its_runs(session, 2);
    for shape in [&[5][..], &[3, 5, 1], &[4, 5], &[3, -1]] {
        let error = batcher.warm_up_with(&[("x", shape)]).expect_err("refused").to_string();
        let says = format!("{shape:?} does not fit the input's sample shape [3, d2]");
        assert!(error.contains("`x`") && error.contains(&says), "{error}");
    }
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 0, "refused before any run");
    assert_eq!(batcher.warm_up_with(&[("x", &[3, 5])]).expect("fits"), [1, 2]);
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 2);
}

/// After a shutdown a warm-up runs nothing and says so as `run` does (it ran: outside probe).
#[test]
fn warm_up_after_shutdown_is_refused_as_run_is() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let (batcher, runs) = batcher_counting_its_runs(session, 4);
    assert_eq!(batcher.warm_up().expect("before the shutdown"), [1, 2, 3, 4]);
    batcher.shutdown(Shutdown::Cancel);
    let x = Value::from_vec(&[16], vec![0f32; 16]).expect("x");
    assert!(matches!(batcher.run([("x", x)]), Err(Error::BatcherShutDown)));
    assert!(matches!(batcher.warm_up(), Err(Error::BatcherShutDown)));
    assert!(matches!(batcher.warm_up_with(&[("x", &[16])]), Err(Error::BatcherShutDown)));
    assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 4, "only the warm-up before the shutdown ran");
}

/// A sample shape given for an input whose sample is fixed must be that shape.
#[test]
fn warm_up_with_refuses_a_shape_that_differs_from_a_fixed_sample() {
    let batcher = Batcher::builder(builder().commit_from_file(model("mlp.onnx")).expect("session"))
        .max_batch(4)
        .build()
        .expect("batcher");
    let error = batcher.warm_up_with(&[("x", &[17])]).expect_err("mlp's sample is [16]");
    assert!(error.to_string().contains("fixed at [16]"), "{error}");
    assert_eq!(batcher.warm_up_with(&[("x", &[16])]).expect("its own shape"), [1, 2, 3, 4]);
}

/// A model whose output is not split along the batch axis (it sums over the batch) is refused by
/// the warm-up at the first size above 1, naming the output; a batch of requests gets the same
/// error (it warmed up, and every batched request then failed: outside probe).
#[test]
fn a_model_whose_output_is_not_split_along_the_batch_axis_fails_its_warm_up() {
    let bytes = onnxrt_tests::proto::batch_sum();
    let session = builder().commit_from_memory(&bytes).expect("session");
    let not_split = |error: &Error| {
        matches!(error, Error::NotSplitAlongBatch { name, rows: 2, shape } if name == "y" && shape == &[1, 4])
            && error.to_string().contains("batching must be off for this model")
    };
    let batcher = Batcher::builder(session.clone()).max_batch(4).build().expect("batchable by its declared shapes");
    let error = batcher.warm_up().expect_err("not split");
    assert!(not_split(&error), "{error:?}");
    // Through a runner elsewhere (a worker process in the server) too; and a batch of two
    // requests, closed by count (the delay is an hour), gets the same error.
    let elsewhere = session.clone();
    let run = move |inputs: &[(&str, &Value<'_>)]| -> onnxrt_serve::Result<Vec<Value<'static>>> {
        Ok(elsewhere.run(inputs)?.into_values())
    };
    let batcher = Batcher::builder(session)
        .max_batch(2)
        .max_delay(Duration::from_secs(3600))
        .run_batches_with(run)
        .build()
        .expect("batchable");
    let error = batcher.warm_up().expect_err("not split");
    assert!(not_split(&error), "{error:?}");
    let rt = runtime();
    let futures: Vec<BatchFuture> = (0..2)
        .map(|i| batcher.run_async([("x", Value::from_vec(&[4], sample(i, 4)).expect("x"))]).expect("queued"))
        .collect();
    for future in futures {
        let error = rt.block_on(future).expect_err("not split");
        assert!(not_split(&error), "{error:?}");
    }
}

/// `y = x·xᵀ` keeps a first axis of the batch's size, so the first-axis check passes, but its
/// sample shape is the batch size: the warm-up compares each output's sample shape across the
/// sizes it runs and refuses the model (it was READY, and batched requests got [1, 3] and other
/// callers' data: outside probe). With a single padded size, a run of one row is compared.
#[test]
fn a_model_whose_sample_shape_changes_with_the_batch_size_fails_its_warm_up() {
    let session = builder().commit_from_memory(&onnxrt_tests::proto::batch_outer()).expect("session");
    let changes = |error: &Error, (expected, before): (&[i64], usize), (sample, rows): (&[i64], usize)| {
        matches!(error, Error::SampleShapeChanges { name, expected: e, expected_rows: Some(b), sample: s, rows: r }
            if name == "y" && e == expected && *b == before && s == sample && *r == rows)
            && error.to_string().contains("batching must be off for this model")
    };
    let batcher = Batcher::builder(session.clone()).max_batch(4).build().expect("batchable by its declared shapes");
    let error = batcher.warm_up().expect_err("sample shape [1] at 1 row, [2] at 2");
    assert!(changes(&error, (&[1], 1), (&[2], 2)), "{error:?}");
    let says = "output `y`'s sample shape changes with the batch size: [1] at 1 row, [2] at 2 rows; its rows are not per sample";
    assert!(error.to_string().contains(says), "{error}");
    // One padded size: every batch runs 4 rows, compared with a run of one on the session.
    let batcher = Batcher::builder(session).max_batch(4).pad_to_sizes(&[4]).build().expect("batchable");
    let error = batcher.warm_up().expect_err("[4] at 4 rows, [1] at 1");
    assert!(changes(&error, (&[4], 4), (&[1], 1)), "{error:?}");
}

/// A batcher of up to `max_batch` rows whose batches run elsewhere (as in a worker process): on
/// another handle of `session`, counting the batches run.
fn batcher_counting_its_runs(session: Session, max_batch: usize) -> (Batcher, Arc<AtomicUsize>) {
    let elsewhere = session.clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let run = move |inputs: &[(&str, &Value<'_>)]| -> onnxrt_serve::Result<Vec<Value<'static>>> {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(elsewhere.run(inputs)?.into_named().into_iter().map(|(_, value)| value).collect())
    };
    let batcher = Batcher::builder(session).max_batch(max_batch).run_batches_with(run).build().expect("batcher");
    (batcher, runs)
}

/// `check_rows_with` runs one row and two only, at the shape given, whatever the padded sizes:
/// enough to refuse a model with free sample axes whose rows mix, and it passes one whose rows
/// are per sample.
#[test]
fn check_rows_with_runs_one_row_and_two_at_the_shape_given() {
    let session = builder().commit_from_memory(&onnxrt_tests::proto::batch_outer_free()).expect("session");
    let batcher = Batcher::builder(session).max_batch(64).build().expect("batchable by its declared shapes");
    let error = batcher.check_rows_with(&[("x", &[4])]).expect_err("[1] at 1 row, [2] at 2");
    assert!(matches!(error, Error::SampleShapeChanges { rows: 2, .. }), "{error:?}");
    assert!(matches!(batcher.check_rows_with(&[]), Err(Error::Onnxrt(_))), "no shape for the free axis");
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp");
    let batcher = Batcher::builder(session).max_batch(4096).pad_to_sizes(&[4096]).build().expect("batchable");
    assert_eq!(batcher.check_rows_with(&[]).expect("rows per sample"), [1, 2], "not the padded size");
    batcher.shutdown(Shutdown::Drain);
    assert!(matches!(batcher.check_rows_with(&[]), Err(Error::BatcherShutDown)));
}

/// Batches run elsewhere (a worker process) whose output's sample shape is not the fixed one the
/// model declares are refused, not split into rows of another shape.
#[test]
fn a_batch_whose_output_sample_shape_is_not_the_declared_one_fails() {
    let session = builder().commit_from_file(model("mlp.onnx")).expect("mlp: logits [n, 4]");
    let run = move |inputs: &[(&str, &Value<'_>)]| -> onnxrt_serve::Result<Vec<Value<'static>>> {
        let rows = inputs[0].1.tensor_info()?.shape[0];
        Ok(vec![Value::zeros(&[rows, 5], onnxrt::ElementType::F32)?])
    };
    let batcher = Batcher::builder(session)
        .max_batch(2)
        .max_delay(Duration::from_secs(3600))
        .run_batches_with(run)
        .build()
        .expect("batcher");
    let rt = runtime();
    let futures: Vec<BatchFuture> = (0..2)
        .map(|i| batcher.run_async([("x", Value::from_vec(&[16], sample(i, 16)).expect("x"))]).expect("queued"))
        .collect();
    for future in futures {
        let error = rt.block_on(future).expect_err("[5] where [4] is declared");
        let declared = matches!(&error, Error::SampleShapeChanges { name, expected, expected_rows: None, sample, rows: 2 }
            if name == "logits" && expected == &[4] && sample == &[5]);
        assert!(
            declared && error.to_string().contains("is not the declared one: [4] as declared, [5] at 2 rows"),
            "{error}"
        );
    }
}

/// `y = Reshape(x, [-1])` declares `y` [m]: its sample shape looks fixed (rank 0), so the worker
/// preallocates [rows] and ORT refuses the [4 rows] it makes. Without a warm-up, a batch (of
/// one request or two) gets Error::NotSplitAlongBatch naming the output, not ORT's "shape
/// verification failed" (Error::Onnxrt from RunWithBinding, which the server answered 400:
/// outside probe).
#[test]
fn a_flattened_output_in_a_preallocated_batch_is_not_split_along_the_batch_axis() {
    let session = builder().commit_from_memory(&onnxrt_tests::proto::batch_flatten()).expect("session");
    let batcher = Batcher::builder(session)
        .max_batch(2)
        .max_delay(Duration::from_secs(3600))
        .build()
        .expect("batchable by its declared shapes");
    let rt = runtime();
    for requests in [2, 1] {
        let futures: Vec<BatchFuture> = (0..requests)
            .map(|i| batcher.run_async([("x", Value::from_vec(&[4], sample(i, 4)).expect("x"))]).expect("queued"))
            .collect();
        if requests == 1 {
            // Closed by shutdown (draining), not by count.
            batcher.shutdown(Shutdown::Drain);
        }
        for future in futures {
            let error = rt.block_on(future).expect_err("not split");
            let rows = requests as usize;
            let not_split = matches!(&error, Error::NotSplitAlongBatch { name, rows: r, shape }
                if name == "y" && *r == rows && shape == &[4 * requests as i64]);
            assert!(not_split && error.to_string().contains("batching must be off"), "{error:?}");
        }
    }
}
