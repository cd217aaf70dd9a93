//! `run_async` the way a tokio service uses it (issue 19): a dropped future stops its run,
//! dropping a session with runs in flight does not block, backpressure under 20,000
//! submissions, the typed error for a pool without workers, names on async outputs, shared
//! inputs, per-run options.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use onnxrt::{Error, RunOptions, Session, Value};
use onnxrt_tests::{builder, mlp_input, model};

/// Steps of `slow_loop.onnx` that take several seconds (about 0.2 ms a step on one core).
const LONG_RUN: i64 = 20_000;

/// The bound asserted for a dropped run to stop (measured: a few ms; see BENCHMARKS.md). Well
/// under the seconds `LONG_RUN` takes, so a run that is not terminated fails the test.
const STOP_BOUND: Duration = Duration::from_millis(1_000);

/// The bound asserted for dropping a session with runs in flight (measured: tens of µs).
const DROP_BOUND: Duration = Duration::from_millis(200);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("tokio runtime")
}

fn long_input() -> [(&'static str, Value<'static>); 1] {
    [("iters", Value::scalar(LONG_RUN).expect("iters"))]
}

/// Waits until the session has no asynchronous run with ORT, returning how long that took.
fn wait_idle(session: &Session, limit: Duration) -> Duration {
    let start = Instant::now();
    while session.async_runs_in_flight() > 0 {
        assert!(start.elapsed() < limit, "runs still in flight after {limit:?}");
        std::thread::sleep(Duration::from_micros(200));
    }
    start.elapsed()
}

#[test]
fn a_dropped_future_stops_its_run() {
    let session = builder().commit_from_file(model("slow_loop.onnx")).expect("slow_loop loads");
    let rt = runtime();
    // The reference: the same run, not cancelled, takes far longer than the bound.
    let started = Instant::now();
    let run = session.run_async([("iters", Value::scalar(LONG_RUN / 10).expect("iters"))], &[]).expect("starts");
    rt.block_on(run).expect("the reference run succeeds");
    let tenth = started.elapsed();
    assert!(tenth * 10 > STOP_BOUND * 2, "the long run is too short to show a stop ({tenth:?} for a tenth)");

    let run = session.run_async(long_input(), &[]).expect("starts");
    let timed_out = rt.block_on(async { tokio::time::timeout(Duration::from_millis(50), run).await });
    assert!(timed_out.is_err(), "the long run finished within 50 ms");
    // The timeout dropped the future: ORT must stop within the bound.
    let stopped = wait_idle(&session, STOP_BOUND);
    // A follow-up run does not wait behind the dropped one.
    let started = Instant::now();
    let small = session.run_async([("iters", Value::scalar(1i64).expect("iters"))], &[]).expect("starts");
    rt.block_on(small).expect("the follow-up run succeeds");
    let follow_up = started.elapsed();
    eprintln!("a dropped run stopped {stopped:?} after the drop; a follow-up run took {follow_up:?}; uncancelled it would take about {:?}", tenth * 10);
    assert!(follow_up < STOP_BOUND, "the follow-up waited {follow_up:?}");
}

#[test]
fn run_options_terminate_an_async_run() {
    let session = builder().commit_from_file(model("slow_loop.onnx")).expect("slow_loop loads");
    let mut options = RunOptions::new().expect("options");
    options.set_tag("terminated-run").expect("tag");
    let stop = options.terminator();
    let run = session.run_async_with(long_input(), &[], options).expect("starts");
    let started = Instant::now();
    stop.terminate().expect("terminate");
    match runtime().block_on(run) {
        Err(Error::Terminated { .. }) => {}
        other => panic!("expected Error::Terminated, got {other:?}"),
    }
    assert!(started.elapsed() < STOP_BOUND, "terminate took {:?}", started.elapsed());
}

#[test]
fn dropping_a_session_with_runs_in_flight_does_not_block() {
    let rt = runtime();
    let session = builder().commit_from_file(model("slow_loop.onnx")).expect("slow_loop loads");
    // One run kept (its task resolves after the drop), one dropped right away.
    let kept =
        rt.spawn(session.run_async([("iters", Value::scalar(LONG_RUN / 20).expect("iters"))], &[]).expect("starts"));
    drop(session.run_async(long_input(), &[]).expect("starts"));
    assert!(session.async_runs_in_flight() > 0, "no run in flight to test with");
    let started = Instant::now();
    drop(session);
    let dropping = started.elapsed();
    eprintln!("dropping a session with runs in flight took {dropping:?}");
    assert!(dropping < DROP_BOUND, "dropping the session blocked for {dropping:?}");
    let outputs = rt.block_on(kept).expect("task").expect("the kept run still succeeds");
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["out"]);
}

#[test]
fn dropping_the_session_inside_a_task_does_not_stall_the_worker() {
    // The session's last handle is dropped on a tokio worker while a run is in flight; a timer
    // on the same single-threaded runtime must still fire on time.
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let session = builder().commit_from_file(model("slow_loop.onnx")).expect("slow_loop loads");
    let run = session.run_async(long_input(), &[]).expect("starts");
    let elapsed = rt.block_on(async move {
        let started = Instant::now();
        drop(session);
        tokio::time::sleep(Duration::from_millis(10)).await;
        drop(run);
        started.elapsed()
    });
    assert!(elapsed < DROP_BOUND, "the worker was stalled for {elapsed:?}");
}

/// Submits `count` runs of `mlp.onnx` from a tokio task; returns how many had finished before
/// `run_async` returned (ran inline on the caller), the most runs seen with ORT, and the
/// longest `run_async` call.
fn submit(session: &Session, count: usize) -> (usize, usize, Duration) {
    let rt = runtime();
    let x = Arc::new(Value::from_array(mlp_input()).expect("x"));
    let reference = session.run(&[("x", &*x)]).expect("sync run").into_owned();
    let expected: Vec<u32> = reference[0].view::<f32>().expect("f32").iter().map(|v| v.to_bits()).collect();
    rt.block_on(async {
        let mut cx = Context::from_waker(Waker::noop());
        let (mut inline, mut most, mut longest) = (0, 0, Duration::ZERO);
        let mut tasks = Vec::with_capacity(count);
        for _ in 0..count {
            let started = Instant::now();
            let mut run = Box::pin(session.run_async([("x", Arc::clone(&x))], &[]).expect("submits"));
            longest = longest.max(started.elapsed());
            most = most.max(session.async_runs_in_flight());
            match run.as_mut().poll(&mut cx) {
                Poll::Ready(result) => {
                    inline += 1;
                    result.expect("an inline run succeeds");
                }
                Poll::Pending => tasks.push(tokio::spawn(run)),
            }
        }
        for task in tasks {
            let outputs = task.await.expect("task").expect("run succeeds");
            let bits: Vec<u32> = outputs
                .get("logits")
                .expect("logits")
                .view::<f32>()
                .expect("f32")
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(bits, expected);
        }
        (inline, most, longest)
    })
}

#[test]
fn backpressure_holds_under_20000_submissions() {
    let session = builder().max_async_runs(16).commit_from_file(model("mlp.onnx")).expect("mlp loads");
    assert_eq!(session.max_async_runs(), 16);
    let (inline, most, longest) = submit(&session, 20_000);
    eprintln!("bounded: {inline} of 20000 done before run_async returned, at most {most} with ORT, longest run_async {longest:?}");
    assert!(most <= 16, "{most} runs with ORT at once, more than the bound");
    // A run that finished before its first poll either ran inline or beat the poll on a worker;
    // with 16 runs queued ahead of most submissions, that is rare.
    assert!(inline < 50, "{inline} runs finished before run_async returned");
    wait_idle(&session, Duration::from_secs(10));

    // The control: without a bound, ORT's queue (1,024 runs per worker) overflows and ORT runs
    // the model on the submitting thread, which the counts above would show.
    let unbounded = builder().max_async_runs(usize::MAX).commit_from_file(model("mlp.onnx")).expect("mlp loads");
    let (inline, most, _) = submit(&unbounded, 20_000);
    eprintln!("unbounded: {inline} of 20000 ran before run_async returned, at most {most} with ORT");
    // (Seen: 357 to 4,775 inline, 1,025 with ORT.)
    assert!(most > 1_000, "expected ORT's queue to fill without a bound, saw {most}");
    assert!(inline >= 50, "expected ORT to run overflowing runs inline, saw {inline}");
}

#[test]
fn one_intra_op_thread_gives_the_typed_error() {
    let session = builder().intra_op_threads(1).commit_from_file(model("add_f32.onnx")).expect("loads");
    let v = || Value::from_vec(&[2, 3], vec![1.0f32; 6]).expect("input");
    match session.run_async([("a", v()), ("b", v())], &[]) {
        Err(error @ Error::AsyncNeedsThreadPool { threads: 1 }) => {
            assert_eq!(error.variant(), "AsyncNeedsThreadPool");
            assert!(error.to_string().contains("async_threads()"), "{error}");
        }
        other => panic!("expected AsyncNeedsThreadPool, got {other:?}"),
    }
    // The helper's builder (two threads) and async_threads() both work.
    for session in
        [builder(), builder().async_threads()].map(|b| b.commit_from_file(model("add_f32.onnx")).expect("loads"))
    {
        let outputs =
            runtime().block_on(session.run_async([("a", v()), ("b", v())], &[]).expect("starts")).expect("runs");
        assert!(outputs.get("sum").expect("sum").view::<f32>().expect("f32").iter().all(|&s| s == 2.0));
    }
}

#[test]
fn names_survive_async_outputs() {
    let session = builder().commit_from_file(model("multi_output.onnx")).expect("loads");
    let x = || Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).expect("x");
    let rt = runtime();
    let mut outputs =
        rt.block_on(session.run_async([("x", x())], &["negated", "squared"]).expect("starts")).expect("runs");
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["negated", "squared"]);
    assert_eq!(
        outputs.get("squared").expect("squared").view::<f32>().expect("f32").as_slice(),
        Some(&[1.0f32, 4.0, 9.0][..])
    );
    match outputs.get("doubled") {
        Err(Error::UnknownOutput { name, valid }) => {
            assert_eq!(name, "doubled");
            assert_eq!(valid.to_string(), Names(["negated", "squared"]).to_string());
        }
        other => panic!("expected UnknownOutput, got {other:?}"),
    }
    let negated = outputs.take("negated").expect("take");
    assert_eq!(negated.view::<f32>().expect("f32").as_slice(), Some(&[-1.0f32, -2.0, -3.0][..]));
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["squared"]);
    // Sync outputs leave spawn_blocking with their names too.
    let shared = session.clone();
    let owned = rt
        .block_on(async move {
            tokio::task::spawn_blocking(move || shared.run(&[("x", &x())]).map(|o| o.into_owned())).await
        })
        .expect("task")
        .expect("run");
    assert_eq!(owned.names().collect::<Vec<_>>(), ["doubled", "squared", "negated"]);
    assert_eq!(
        owned.get("doubled").expect("doubled").view::<f32>().expect("f32").as_slice(),
        Some(&[2.0f32, 4.0, 6.0][..])
    );
}

/// `Names` as the error prints it.
#[allow(non_snake_case)]
fn Names<const N: usize>(names: [&str; N]) -> onnxrt::Names {
    onnxrt::Names(names.iter().map(|n| (*n).to_owned()).collect())
}

#[test]
fn shared_inputs_are_lent_not_copied() {
    let session = builder().commit_from_file(model("add_f32.onnx")).expect("loads");
    let a = Arc::new(Value::from_vec(&[2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).expect("a"));
    let rt = runtime();
    let outputs = rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..100 {
            let b = Value::from_vec(&[2, 3], vec![i as f32; 6]).expect("b");
            tasks.push(tokio::spawn(
                session.run_async([("a", Arc::clone(&a)), ("b", Arc::new(b))], &[]).expect("starts"),
            ));
        }
        assert!(Arc::strong_count(&a) > 1, "the runs hold the shared input");
        let mut outputs = Vec::new();
        for task in tasks {
            outputs.push(task.await.expect("task").expect("run"));
        }
        outputs
    });
    for (i, out) in outputs.iter().enumerate() {
        let sum = out.get("sum").expect("sum").view::<f32>().expect("f32").iter().copied().collect::<Vec<_>>();
        assert_eq!(sum, [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].map(|v| v + i as f32));
    }
    // Every run lets go of the buffer (the last ones as ORT's callback returns, just after their
    // futures resolved): the caller's handle is soon the only one left.
    let deadline = Instant::now() + Duration::from_secs(5);
    while Arc::strong_count(&a) > 1 {
        assert!(Instant::now() < deadline, "{} runs still hold the shared input", Arc::strong_count(&a) - 1);
        std::thread::sleep(Duration::from_millis(1));
    }
}
