//! Concurrency: one session shared by many threads, cancelling a run from another thread, and
//! `run_async` driven by a minimal executor.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use ndarray::{array, ArrayD};
use onnxrt::{Error, RunOptions, RunTerminator, Session, Value};
use onnxrt_tests::{builder, mlp_input, model, session};

// Compile-time: the types meant to cross threads do.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Session>();
    send_sync::<Value<'static>>();
    send_sync::<RunTerminator>();
    send_sync::<onnxrt::Environment>();
};

fn mlp_bits(session: &Session, x: &Value<'_>) -> Vec<u32> {
    let outputs = session.run(&[("x", x)]).expect("mlp runs");
    outputs[0].view::<f32>().expect("f32 logits").iter().map(|v| v.to_bits()).collect()
}

#[test]
fn shared_session_across_threads_is_deterministic() {
    const THREADS: usize = 8;
    const RUNS: usize = 200;
    let session = Arc::new(session("mlp.onnx"));
    let x = Arc::new(Value::from_array(mlp_input()).expect("x"));
    let reference = mlp_bits(&session, &x);
    assert_eq!(reference.len(), 8);

    let start = Arc::new(Barrier::new(THREADS));
    let completed = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (session, x, start, completed) =
                (Arc::clone(&session), Arc::clone(&x), Arc::clone(&start), Arc::clone(&completed));
            let reference = reference.clone();
            thread::spawn(move || {
                start.wait();
                for run in 0..RUNS {
                    // Half the threads share one input value, the others make their own.
                    let bits = if t % 2 == 0 {
                        mlp_bits(&session, &x)
                    } else {
                        let own = Value::from_array(mlp_input()).expect("x");
                        mlp_bits(&session, &own)
                    };
                    assert_eq!(bits, reference, "thread {t}, run {run} differs");
                    completed.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a worker thread panicked");
    }
    assert_eq!(completed.load(Ordering::Relaxed), THREADS * RUNS);
}

#[test]
fn terminate_stops_a_long_run() {
    let session = builder().commit_from_file(model("slow_loop.onnx")).expect("slow_loop loads");
    // About 0.2 ms per step: ten million steps would take more than half an hour.
    let iters = Value::scalar(10_000_000i64).expect("iters");
    let mut options = RunOptions::new().expect("run options");
    options.set_tag("terminate-test").expect("tag");
    let terminator = options.terminator();
    // Timed from before the canceller starts, so the run provably lasted at least its sleep
    // however the threads are scheduled.
    let started = Instant::now();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        terminator.terminate().expect("terminate");
    });
    let result = session.run_with(&[("iters", &iters)], &[], Some(&options));
    let elapsed = started.elapsed();
    canceller.join().expect("canceller thread");
    match result {
        Err(Error::Terminated { message }) => {
            assert!(message.contains("Exiting due to terminate flag being set to true"), "{message}");
        }
        other => panic!("expected Error::Terminated, got {other:?}"),
    }
    // (A run that ignored the flag would take more than half an hour: no upper time bound needed.)
    assert!(elapsed >= Duration::from_millis(300), "the run ended before it was terminated ({elapsed:?})");

    // The flag stays set: the next run with these options stops at once...
    let again = session.run_with(&[("iters", &iters)], &[], Some(&options));
    assert!(matches!(again, Err(Error::Terminated { .. })), "{again:?}");
    // ...until it is reset; then a short run completes.
    options.reset_terminate().expect("reset");
    let few = Value::scalar(3i64).expect("iters");
    let outputs = session.run_with(&[("iters", &few)], &[], Some(&options)).expect("a short run after reset");
    assert_eq!(outputs[0].tensor_info().expect("info").shape, [256, 256]);
}

/// Wakes a parked thread.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls a future to completion on this thread, parking between polls (a minimal executor).
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        // Spurious wake-ups just poll again; the park timeout covers a lost wake-up (no limit on
        // the total: a future that never completes hangs the test).
        thread::park_timeout(Duration::from_millis(100));
    }
}

/// A session for `run_async` (ORT's RunAsync runs on the intra-op pool, which needs more than
/// one thread).
fn async_session(name: &str) -> Session {
    builder().intra_op_threads(2).commit_from_file(model(name)).expect("session loads")
}

#[test]
fn run_async_adds() {
    let session = &async_session("add_f32.onnx");
    let a = array![[1.0f32, -2.0, 3.5], [0.25, 8.0, -1.0]];
    let b = array![[10.0f32, 20.0, -30.0], [0.5, 0.125, 1.0]];
    let expected = (&a + &b).into_dyn();
    for _ in 0..5 {
        let future = session
            .run_async(
                vec![
                    ("a".to_owned(), Value::from_array(a.clone()).expect("a")),
                    ("b".to_owned(), Value::from_array(b.clone()).expect("b")),
                ],
                &[],
            )
            .expect("run_async starts");
        let outputs = block_on(future).expect("the async run succeeds");
        assert_eq!(outputs.names().collect::<Vec<_>>(), ["sum"]);
        let sum: ArrayD<f32> = outputs.get("sum").expect("by name").to_array().expect("f32");
        assert_eq!(sum, expected);
    }

    // Input errors come back at once, before anything runs.
    // (RunFuture has no Debug, so no expect_err.)
    match session.run_async(vec![("a".to_owned(), Value::from_array(a).expect("a"))], &[]) {
        Err(Error::MissingInput { name, .. }) => assert_eq!(name, "b"),
        Err(other) => panic!("expected MissingInput, got {other:?}"),
        Ok(_) => panic!("run_async started without input b"),
    }
}

#[test]
fn run_async_futures_can_be_dropped_early() {
    let session = &async_session("mlp.onnx");
    let reference = mlp_bits(session, &Value::from_array(mlp_input()).expect("x"));
    // Started and dropped without polling: the run still finishes safely in the background.
    for _ in 0..20 {
        let future =
            session.run_async(vec![("x".to_owned(), Value::from_array(mlp_input()).expect("x"))], &[]).expect("starts");
        drop(future);
    }
    let outputs = block_on(
        session
            .run_async(vec![("x".to_owned(), Value::from_array(mlp_input()).expect("x"))], &["logits"])
            .expect("starts"),
    )
    .expect("completes");
    assert_eq!(outputs.len(), 1);
    let bits: Vec<u32> = outputs[0].view::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect();
    assert_eq!(bits, reference);
}

#[test]
fn run_async_needs_an_intra_op_pool() {
    // With one intra-op thread there is no pool for ORT to run on: a typed error, not a hang.
    let session = builder().intra_op_threads(1).commit_from_file(model("add_f32.onnx")).expect("add_f32 loads");
    let value = || Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("input");
    match session.run_async(vec![("a".to_owned(), value()), ("b".to_owned(), value())], &[]) {
        Err(error @ Error::AsyncNeedsThreadPool { threads: 1 }) => {
            assert!(
                error.to_string().contains("Fix: build the session with SessionBuilder::async_threads()"),
                "{error}"
            );
        }
        Err(other) => panic!("expected Error::AsyncNeedsThreadPool, got {other:?}"),
        Ok(_) => panic!("RunAsync started without an intra-op pool"),
    }
    // The session is still usable synchronously.
    let (a, b) = (value(), value());
    let outputs = session.run(&[("a", &a), ("b", &b)]).expect("sync run");
    assert!(outputs[0].view::<f32>().expect("f32").iter().all(|&v| v == 2.0));
}

/// Set in the child process that `run_async_release_from_callback` starts.
const RELEASE_CHILD: &str = "ONNXRT_TESTS_RUN_ASYNC_RELEASE_CHILD";

/// The scenario that crashes: a session dropped right after its async runs, so the completion
/// callback (on the session's own intra-op thread) may hold the last reference. Both ordinary
/// use (await, then drop the session) and dropped futures trigger it.
fn release_sessions_with_runs_in_flight() {
    for round in 0..30 {
        let session = builder().intra_op_threads(2).commit_from_file(model("mlp.onnx")).expect("mlp loads");
        for _ in 0..4 {
            let future = session
                .run_async(vec![("x".to_owned(), Value::from_array(mlp_input()).expect("x"))], &[])
                .expect("starts");
            if round % 2 == 0 {
                block_on(future).expect("completes");
            } else {
                drop(future);
            }
        }
        drop(session);
    }
    // Let the callbacks (and whatever they tear down) finish before the process exits.
    thread::sleep(Duration::from_millis(500));
}

/// Sessions dropped right after (or while) their asynchronous runs complete: the session waits
/// for its in-flight runs and is released on the dropping thread, never on ORT's pool thread.
#[test]
fn run_async_release_from_callback() {
    if std::env::var_os(RELEASE_CHILD).is_some() {
        release_sessions_with_runs_in_flight();
        return;
    }
    // In a child process, so the crash is reported as a failure instead of killing this binary.
    let exe = std::env::current_exe().expect("the test binary's path");
    for attempt in 0..3 {
        let status = std::process::Command::new(&exe)
            .args(["--exact", "run_async_release_from_callback", "--test-threads=1"])
            .env(RELEASE_CHILD, "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("the child test process starts");
        assert!(
            status.success(),
            "attempt {attempt}: dropping sessions with async runs in flight killed the process ({status})"
        );
    }
}
