//! `run_async` the way a tokio service uses it: a dropped future stops its run,
//! dropping a session with runs in flight does not block, backpressure under 20,000
//! submissions, the typed error for a pool without workers, names on async outputs, shared
//! inputs, per-run options.
//!
//! Every check here is by counts, never by the clock: the runs that must be in flight are held
//! inside `onnxrt_tests::gate_op`'s `Gate` node until the test opens it, so "the run was still
//! going when X happened" is a fact, not a guess about how long a model takes. A wrong
//! behaviour fails an assertion or, for "does not wait for the run", hangs (the run can only
//! finish after the test opens the gate, which it does after the step that must not wait).
//! Times are printed for BENCHMARKS.md, never asserted.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use onnxrt::{Error, RunOptions, Session, Value};
use onnxrt_tests::gate_op::{self, GateHandle};
use onnxrt_tests::{builder, model};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_time().build().expect("tokio runtime")
}

/// A session of `gate_op::model(nodes)` with [`builder`]'s settings (one pool worker), and its gate.
fn gated(nodes: usize, max_async_runs: Option<usize>) -> (Session, GateHandle) {
    let (domain, gate) = gate_op::domain();
    let mut b = builder().custom_ops(domain);
    if let Some(runs) = max_async_runs {
        b = b.max_async_runs(runs);
    }
    (b.commit_from_memory(&gate_op::model(nodes)).expect("the gate model loads"), gate)
}

const X: [f32; 3] = [1.5, -2.0, 4.25];

fn x() -> Value<'static> {
    Value::from_vec(&[3], X.to_vec()).expect("x")
}

/// Waits until the session has no asynchronous run holding a slot (no time limit).
fn wait_idle(session: &Session) {
    while session.async_runs_in_flight() > 0 {
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[test]
fn a_dropped_future_stops_its_run() {
    let (session, gate) = gated(2, None);
    let run = session.run_async([("x", x())], &[]).expect("starts");
    gate.wait_entered(1);
    // The run is inside its first node and cannot leave it: dropping the future now must stop it
    // before the second node.
    drop(run);
    let dropped = Instant::now();
    gate.open();
    wait_idle(&session);
    let stopped = dropped.elapsed();
    assert_eq!(gate.entered(), 1, "the second node ran after the future was dropped: the run was not terminated");
    // The slot came back: a follow-up run goes through both nodes.
    let started = Instant::now();
    let outputs = runtime().block_on(session.run_async([("x", x())], &[]).expect("starts")).expect("follow-up runs");
    eprintln!("a dropped run left ORT {stopped:?} after its gate opened; a follow-up run took {:?}", started.elapsed());
    assert_eq!(outputs.get("y").expect("y").view::<f32>().expect("f32").as_slice(), Some(&X[..]));
    assert_eq!(gate.entered(), 3);
}

#[test]
fn run_options_terminate_an_async_run() {
    let (session, gate) = gated(2, None);
    let mut options = RunOptions::new().expect("options");
    options.set_tag("terminated-run").expect("tag");
    let stop = options.terminator();
    let run = session.run_async_with([("x", x())], &[], options).expect("starts");
    gate.wait_entered(1);
    stop.terminate().expect("terminate");
    gate.open();
    match runtime().block_on(run) {
        Err(Error::Terminated { .. }) => {}
        other => panic!("expected Error::Terminated, got {other:?}"),
    }
    assert_eq!(gate.entered(), 1, "the second node ran after terminate()");
}

#[test]
fn dropping_a_session_with_runs_in_flight_does_not_block() {
    let rt = runtime();
    let (session, gate) = gated(1, None);
    // One run kept (its task resolves after the drop), one dropped right away.
    let kept = rt.spawn(session.run_async([("x", x())], &[]).expect("starts"));
    drop(session.run_async([("x", x())], &[]).expect("starts"));
    gate.wait_entered(1);
    assert!(session.async_runs_in_flight() > 0, "no run in flight to test with");
    let started = Instant::now();
    // If this waited for the runs, it would wait forever: they finish only once the gate opens.
    drop(session);
    let dropping = started.elapsed();
    assert_eq!(gate.passed(), 0, "a run finished before the gate opened");
    eprintln!("dropping a session with runs in flight took {dropping:?}");
    gate.open();
    let outputs = rt.block_on(kept).expect("task").expect("the kept run still succeeds");
    assert_eq!(outputs.names().collect::<Vec<_>>(), ["y"]);
    assert_eq!(outputs.get("y").expect("y").view::<f32>().expect("f32").as_slice(), Some(&X[..]));
}

#[test]
fn dropping_the_session_inside_a_task_does_not_stall_the_worker() {
    // The session's last handle is dropped on a tokio worker while a run is in flight: the task
    // (and a timer after it, on the same single-threaded runtime) must go on while the run is
    // still held inside the model.
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("runtime");
    let (session, gate) = gated(1, None);
    let run = session.run_async([("x", x())], &[]).expect("starts");
    gate.wait_entered(1);
    rt.block_on(async move {
        drop(session);
        tokio::time::sleep(Duration::from_millis(1)).await;
        drop(run);
    });
    assert_eq!(gate.passed(), 0, "the run finished before the worker went on");
    gate.open();
}

/// What [`submit`] saw.
struct Submitted {
    // Runs that had finished when first polled, just after `run_async` returned.
    ready_at_once: usize,
    // The most runs holding a slot at once.
    most: usize,
    // How many runs were submitted.
    submitted: usize,
}

/// Submits up to `count` runs of the gate model from a tokio task, polling each once, with the
/// gate closed; stops early after the first run that finished at once if `stop_at_inline`.
/// Then opens the gate and checks every output.
fn submit(session: &Session, gate: &GateHandle, count: usize, stop_at_inline: bool) -> Submitted {
    let rt = runtime();
    let input = Arc::new(x());
    rt.block_on(async {
        let mut cx = Context::from_waker(Waker::noop());
        let mut seen = Submitted { ready_at_once: 0, most: 0, submitted: 0 };
        let mut tasks = Vec::with_capacity(count);
        let mut longest = Duration::ZERO;
        for _ in 0..count {
            let started = Instant::now();
            let mut run = Box::pin(session.run_async([("x", Arc::clone(&input))], &[]).expect("submits"));
            longest = longest.max(started.elapsed());
            seen.submitted += 1;
            seen.most = seen.most.max(session.async_runs_in_flight());
            match run.as_mut().poll(&mut cx) {
                Poll::Ready(result) => {
                    seen.ready_at_once += 1;
                    let outputs = result.expect("a run that finished at once succeeded");
                    assert_eq!(outputs.get("y").expect("y").view::<f32>().expect("f32").as_slice(), Some(&X[..]));
                    if stop_at_inline {
                        break;
                    }
                }
                Poll::Pending => tasks.push(tokio::spawn(run)),
            }
        }
        eprintln!("{} submitted, longest run_async call {longest:?}", seen.submitted);
        gate.open();
        for task in tasks {
            let outputs = task.await.expect("task").expect("run succeeds");
            assert_eq!(outputs.get("y").expect("y").view::<f32>().expect("f32").as_slice(), Some(&X[..]));
        }
        seen
    })
}

#[test]
fn backpressure_holds_under_20000_submissions() {
    let (session, gate) = gated(1, Some(16));
    assert_eq!(session.max_async_runs(), 16);
    // The gate stays closed while all 20,000 are submitted: no run can finish, so the slots
    // fill and stay full, and a run executed on the submitting thread would show as finished
    // at once (the gate lets that thread through instead of blocking the test).
    gate.bypass_on(std::thread::current().id());
    let seen = submit(&session, &gate, 20_000, false);
    eprintln!("bounded: {} finished at once, at most {} holding slots", seen.ready_at_once, seen.most);
    assert_eq!(seen.most, 16, "the slots must fill to the bound and never pass it");
    assert_eq!(seen.ready_at_once, 0, "a run finished before the gate opened: it ran on the submitting thread");
    assert_eq!(gate.inline(), 0, "a run executed on the submitting thread");
    assert_eq!(gate.entered(), 20_000);
    wait_idle(&session);

    // The control: without a bound, ORT's queue (1,024 runs per worker; `builder()` has one
    // worker, held inside the gate by the first run) fills, and ORT runs the next submission on
    // the submitting thread, which the counts above would show.
    let (unbounded, gate) = gated(1, Some(usize::MAX));
    gate.bypass_on(std::thread::current().id());
    let seen = submit(&unbounded, &gate, 20_000, true);
    eprintln!("unbounded: run {} ran on the submitting thread, with {} holding slots", seen.submitted, seen.most);
    assert_eq!(gate.inline(), 1, "without a bound ORT must run an overflowing submission inline");
    assert_eq!(seen.ready_at_once, 1);
    assert!(seen.most > 1_000, "ORT's queue overflowed with only {} runs with it", seen.most);
    wait_idle(&unbounded);
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
        .block_on(async move { tokio::task::spawn_blocking(move || shared.run(&[("x", &x())])).await })
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
    // futures resolved): the caller's handle is soon the only one left. No time limit: a run
    // that kept its input would hang the test here.
    wait_idle(&session);
    while Arc::strong_count(&a) > 1 {
        std::thread::sleep(Duration::from_millis(1));
    }
}
