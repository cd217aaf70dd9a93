//! The functions ORT calls back into this crate (custom-operator kernels, the log callback, the
//! `run_async` completion) on the real runtime, with user code that misbehaves in the ways safe
//! Rust allows (docs/soundness.md §3):
//! - a kernel that returns `Ok` without writing an output ORT allocated for it must fail the run,
//!   never hand back memory nobody wrote (valgrind: no uninitialised read);
//! - a kernel may try element types one after another on an `IoSpec::any()` output;
//! - an error whose `Display` or `Drop` panics, and a panic payload whose `Drop` panics, from a
//!   kernel, a kernel's creation or destruction, the log hook or an async waker, must not abort
//!   the process. Those cases run in a child process (this binary, re-run with [`CHILD`] set),
//!   so an abort is reported as a failure instead of killing the harness.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Environment, Error, LogLevel, Session, Value};
use onnxrt_tests::{builder, model, proto};

const DOMAIN: &str = "ai.onnxrt.callback_test";

/// Set (to the test's name) in the child process a test starts for its case.
const CHILD: &str = "ONNXRT_TESTS_CALLBACK_CHILD";

/// Runs `case` when this process is the child started for `test`; otherwise re-runs this binary
/// with only `test`, in a child, and fails if the child did not pass (an abort included).
fn in_child(test: &str, case: impl FnOnce()) {
    if std::env::var(CHILD).as_deref() == Ok(test) {
        case();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new(exe)
        .args(["--exact", test, "--test-threads=1"])
        .env(CHILD, test)
        .output()
        .expect("the child test process starts");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let tail: String =
        stderr.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    assert!(output.status.success(), "{test} in a child process did not pass ({}):\n{tail}", output.status);
    assert!(String::from_utf8_lossy(&output.stdout).contains("1 passed"), "the child ran {test}");
}

// ---- the misbehaving values ----

/// A value whose `Drop` panics: as a panic payload (`panic_any`) or inside an error.
struct DropPanics;

impl Drop for DropPanics {
    fn drop(&mut self) {
        panic!("DropPanics::drop panics");
    }
}

/// An error whose `Display` panics.
#[derive(Debug)]
struct DisplayPanics;

impl fmt::Display for DisplayPanics {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("DisplayPanics::fmt panics")
    }
}

impl std::error::Error for DisplayPanics {}

/// An error that displays fine and panics when dropped.
#[derive(Debug)]
struct ErrorDropPanics(DropPanics);

impl fmt::Display for ErrorDropPanics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error whose drop panics")
    }
}

impl std::error::Error for ErrorDropPanics {}

impl fmt::Debug for DropPanics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DropPanics")
    }
}

/// Formats as text, but panics with a [`DropPanics`] payload while doing so.
struct FormatPanicsWithBadPayload;

impl fmt::Display for FormatPanicsWithBadPayload {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        std::panic::panic_any(DropPanics)
    }
}

// ---- one operator, its behaviour given as a closure ----

type Body = Arc<dyn Fn(&KernelContext<'_>) -> OpResult + Send + Sync>;

/// `DOMAIN::name(x) -> y`, both of element type `io`, computing with `body`.
struct Op {
    name: &'static str,
    io: IoSpec,
    body: Body,
    create: fn() -> OpResult<()>,
    drop_panics: bool,
}

struct OpKernel {
    body: Body,
    drop_panics: bool,
}

impl Drop for OpKernel {
    fn drop(&mut self) {
        if self.drop_panics {
            std::panic::panic_any(DropPanics);
        }
    }
}

impl CustomOp for Op {
    type Kernel = OpKernel;
    fn name(&self) -> &str {
        self.name
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![self.io]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![self.io]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<OpKernel> {
        (self.create)()?;
        Ok(OpKernel { body: Arc::clone(&self.body), drop_panics: self.drop_panics })
    }
}

impl Kernel for OpKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        (self.body)(ctx)
    }
}

fn op(name: &'static str, io: IoSpec, body: impl Fn(&KernelContext<'_>) -> OpResult + Send + Sync + 'static) -> Op {
    Op { name, io, body: Arc::new(body), create: || Ok(()), drop_panics: false }
}

/// A session of one `DOMAIN::op` node, `x` and `y` float `[4]`.
fn session_of(op: Op) -> onnxrt::Result<Session> {
    let node = proto::domain_node(DOMAIN, op.name, &["x"], &["y"], &[]);
    let model = proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &[node],
        &[proto::tensor_info("x", proto::FLOAT, &[4])],
        &[proto::tensor_info("y", proto::FLOAT, &[4])],
    );
    builder().custom_ops(OpDomain::new(DOMAIN).with(op)).commit_from_memory(&model)
}

const X: [f32; 4] = [1.0, -2.0, 0.5, 10.0];

fn run(session: &Session) -> onnxrt::Result<Vec<f32>> {
    let x = Value::from_vec(&[4], X.to_vec())?;
    let outputs = session.run(&[("x", &x)])?;
    Ok(outputs[0].view::<f32>()?.iter().copied().collect())
}

/// Runs a session whose kernel returns `Ok` without writing `y`: the run must fail with a
/// `CustomOp` error naming output 0. A success means the caller got memory nobody wrote; its
/// values are formatted into the failure, which valgrind reports as an uninitialised read.
fn expect_unwritten_output_error(session: &Session) {
    for round in 0..3 {
        match run(session) {
            Ok(y) => {
                let sum: f32 = y.iter().sum();
                panic!("round {round}: the run succeeded with an output the kernel never wrote: {y:?} (sum {sum})");
            }
            Err(Error::CustomOp { panicked: false, message, .. }) => {
                assert!(message.contains("output 0"), "the error names the output: {message}");
            }
            Err(other) => panic!("round {round}: expected Error::CustomOp, got {other:?}"),
        }
    }
}

// ---- item 1: outputs ORT allocated and nobody wrote ----

#[test]
fn a_kernel_that_asks_for_the_wrong_type_and_returns_ok_fails_the_run() {
    let careless = op("Careless", IoSpec::tensor(ElementType::F32), |ctx| {
        assert!(ctx.output::<f64>(0, &[4]).is_err(), "an f32 output read as f64 is refused");
        Ok(())
    });
    expect_unwritten_output_error(&session_of(careless).expect("session"));
}

#[test]
fn a_kernel_that_writes_nothing_and_returns_ok_fails_the_run() {
    let lazy = op("Lazy", IoSpec::tensor(ElementType::F32), |_| Ok(()));
    expect_unwritten_output_error(&session_of(lazy).expect("session"));
}

#[test]
fn a_kernel_may_try_types_in_turn_on_an_any_output() {
    let tries = op("Tries", IoSpec::any(), |ctx| {
        let info = ctx.input_info(0)?.expect("x is given");
        assert_eq!(info.element_type, ElementType::F32);
        let x = ctx.input::<f32>(0)?;
        let refused = ctx.output::<f64>(0, x.shape());
        assert!(matches!(refused, Err(Error::ElementTypeMismatch { .. })), "f64 refused: {refused:?}");
        let mut y = ctx.output::<f32>(0, x.shape())?;
        y.zip_mut_with(&x, |y, &x| *y = x * 2.0);
        Ok(())
    });
    let session = session_of(tries).expect("session");
    for _ in 0..3 {
        assert_eq!(run(&session).expect("the second try writes y"), X.map(|x| x * 2.0));
    }
}

#[test]
fn a_kernel_that_gives_up_on_an_any_output_fails_the_run() {
    let gives_up = op("GivesUp", IoSpec::any(), |ctx| {
        assert!(ctx.output::<i64>(0, &[4]).is_err(), "an f32 output read as i64 is refused");
        assert!(ctx.output::<f64>(0, &[4]).is_err(), "an f32 output read as f64 is refused");
        Ok(())
    });
    expect_unwritten_output_error(&session_of(gives_up).expect("session"));
}

#[test]
fn a_retry_with_another_shape_is_refused_clearly() {
    let reshapes = op("Reshapes", IoSpec::any(), |ctx| {
        assert!(ctx.output::<f64>(0, &[4]).is_err());
        match ctx.output::<f32>(0, &[2, 2]) {
            Err(Error::InvalidArgument { why, .. }) => assert!(why.contains("shape"), "{why}"),
            other => panic!("a second shape is refused: {other:?}"),
        }
        let mut y = ctx.output::<f32>(0, &[4])?;
        y.fill(3.0);
        Ok(())
    });
    let session = session_of(reshapes).expect("session");
    assert_eq!(run(&session).expect("the same shape works"), [3.0; 4]);
}

// ---- item 4: nothing that user code does aborts the process ----

fn expect_custom_op_error(result: onnxrt::Result<Vec<f32>>, panicked: bool, text: &str) {
    match result {
        Err(Error::CustomOp { panicked: p, message, .. }) => {
            assert_eq!(p, panicked, "panicked flag: {message}");
            assert!(message.contains(text), "message {message:?} contains {text:?}");
        }
        other => panic!("expected Error::CustomOp, got {other:?}"),
    }
}

#[test]
fn a_kernel_error_whose_display_panics() {
    in_child("a_kernel_error_whose_display_panics", || {
        let session = session_of(op("BadDisplay", IoSpec::tensor(ElementType::F32), |_| Err(Box::new(DisplayPanics))))
            .expect("session");
        expect_custom_op_error(run(&session), false, "Display panicked");
        // The session is still usable: the same failure again.
        expect_custom_op_error(run(&session), false, "Display panicked");
    });
}

#[test]
fn a_kernel_error_whose_drop_panics() {
    in_child("a_kernel_error_whose_drop_panics", || {
        let body = |_: &KernelContext<'_>| -> OpResult { Err(Box::new(ErrorDropPanics(DropPanics))) };
        let session = session_of(op("BadDrop", IoSpec::tensor(ElementType::F32), body)).expect("session");
        expect_custom_op_error(run(&session), false, "an error whose drop panics");
    });
}

#[test]
fn a_kernel_panic_payload_whose_drop_panics() {
    in_child("a_kernel_panic_payload_whose_drop_panics", || {
        let body = |_: &KernelContext<'_>| -> OpResult { std::panic::panic_any(DropPanics) };
        let session = session_of(op("BadPayload", IoSpec::tensor(ElementType::F32), body)).expect("session");
        expect_custom_op_error(run(&session), true, "without a message");
    });
}

#[test]
fn a_kernel_creation_panic_payload_whose_drop_panics() {
    in_child("a_kernel_creation_panic_payload_whose_drop_panics", || {
        let mut bad = op("BadCreate", IoSpec::tensor(ElementType::F32), |_| Ok(()));
        bad.create = || std::panic::panic_any(DropPanics);
        match session_of(bad) {
            Err(Error::CustomOp { panicked: true, .. }) => {}
            other => panic!("expected Error::CustomOp from session creation, got {:?}", other.map(drop)),
        }
    });
}

#[test]
fn a_kernel_whose_drop_panics_with_such_a_payload() {
    in_child("a_kernel_whose_drop_panics_with_such_a_payload", || {
        let mut bad = op("BadKernelDrop", IoSpec::tensor(ElementType::F32), |ctx| {
            ctx.output::<f32>(0, &[4])?.fill(1.0);
            Ok(())
        });
        bad.drop_panics = true;
        let session = session_of(bad).expect("session");
        assert_eq!(run(&session).expect("run"), [1.0; 4]);
        drop(session); // destroys the kernel, whose Drop panics with a DropPanics payload
    });
}

#[test]
fn a_log_hook_that_panics_while_formatting_with_a_bad_payload() {
    in_child("a_log_hook_that_panics_while_formatting_with_a_bad_payload", || {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&calls);
        let env = Environment::builder()
            .log_level(LogLevel::Verbose)
            .log_hook(move |record| {
                if seen.fetch_add(1, Ordering::SeqCst) < 3 {
                    let _ = format!("{}: {}", record.message, FormatPanicsWithBadPayload);
                }
            })
            .commit()
            .expect("environment");
        let session = Session::builder().environment(env).commit_from_file(model("add_f32.onnx")).expect("session");
        drop(session);
        assert!(calls.load(Ordering::SeqCst) >= 3, "the hook ran (and panicked) at least 3 times");
    });
}

/// A waker that reports on a channel, then panics with a [`DropPanics`] payload.
struct PanickingWaker(Mutex<mpsc::Sender<()>>);

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        let _ = self.0.lock().map(|tx| tx.send(()));
        std::panic::panic_any(DropPanics)
    }
}

#[test]
fn a_run_async_waker_that_panics_with_a_bad_payload() {
    in_child("a_run_async_waker_that_panics_with_a_bad_payload", || {
        let session = builder().commit_from_file(model("slow_loop.onnx")).expect("session");
        let mut woken = 0;
        for _ in 0..20 {
            let (tx, rx) = mpsc::channel();
            let waker = Waker::from(Arc::new(PanickingWaker(Mutex::new(tx))));
            let future = session.run_async([("iters", Value::scalar(200i64).expect("iters"))], &[]).expect("starts");
            let mut future = pin!(future);
            if future.as_mut().poll(&mut Context::from_waker(&waker)).is_ready() {
                continue; // finished before the first poll: the waker was never registered
            }
            drop(waker);
            rx.recv().expect("the completion callback wakes the waker");
            woken += 1;
            match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
                Poll::Ready(result) => drop(result.expect("the run succeeded")),
                Poll::Pending => panic!("woken, but the result is not there"),
            }
            if woken == 3 {
                break;
            }
        }
        assert!(woken > 0, "no run was still in flight at its first poll");
        // Dropping the session waits for runs in flight: the callback must have finished them.
        drop(session);
    });
}
