//! A panicking waker must not stop a session from being released (docs/soundness.md §3). ORT's
//! completion callback of `run_async` hands the run's slot to the oldest
//! waiting future and wakes it; that waker is user code. Before, the wake ran outside the
//! callback's `ffi_guard::catch`: if it panicked, the callback's guard caught the panic but the
//! run never counted as finished, and the thread releasing the session waited for it for ever
//! (the session's kernels were never destroyed). Runs under valgrind in CI.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Value};
use onnxrt_tests::{builder, gate_op, proto};

const WITNESS: &str = "ai.onnxrt.witness";

/// Kernels of `Witness` destroyed so far: ORT destroys them when it releases the session.
static RELEASED: AtomicUsize = AtomicUsize::new(0);

/// `y = x`; its kernel's drop is the sign that the session was released.
struct Witness;
struct WitnessKernel;

impl CustomOp for Witness {
    type Kernel = WitnessKernel;
    fn name(&self) -> &str {
        "Witness"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<WitnessKernel> {
        Ok(WitnessKernel)
    }
}

impl Kernel for WitnessKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        ctx.output::<f32>(0, x.shape())?.assign(&x);
        Ok(())
    }
}

impl Drop for WitnessKernel {
    fn drop(&mut self) {
        RELEASED.fetch_add(1, Ordering::SeqCst);
    }
}

/// A waker that panics, after noting that it was called.
struct PanickingWaker(AtomicBool);

impl Wake for PanickingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
        panic!("a waker that panics");
    }
}

/// Wakes the thread that polls.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park();
    }
}

/// Waits, a bounded number of short naps, for `done`.
fn settles(done: impl Fn() -> bool) -> bool {
    for _ in 0..30_000 {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    done()
}

fn x() -> Value<'static> {
    Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).expect("x")
}

#[test]
fn a_panicking_waker_of_a_queued_run_does_not_keep_the_session_alive() {
    // Gate(x) -> t -> Witness(t) -> y: the gate holds the first run at its first node.
    let model = proto::model_with_opsets(
        8,
        &[("", 17), (gate_op::DOMAIN, 1), (WITNESS, 1)],
        &[
            proto::domain_node(gate_op::DOMAIN, "Gate", &["x"], &["t"], &[]),
            proto::domain_node(WITNESS, "Witness", &["t"], &["y"], &[]),
        ],
        &[proto::tensor_info("x", proto::FLOAT, &[3])],
        &[proto::tensor_info("y", proto::FLOAT, &[3])],
    );
    let (gate_domain, gate) = gate_op::domain();
    let session = builder()
        .intra_op_threads(2)
        .max_async_runs(1)
        .custom_ops(gate_domain)
        .custom_ops(OpDomain::new(WITNESS).with(Witness))
        .commit_from_memory(&model)
        .expect("session");
    let first = session.run_async([("x", x())], &[]).expect("first run starts");
    gate.wait_entered(1);
    // The one slot is taken: the second run waits for it, parked with a waker that panics.
    let mut second = pin!(session.run_async([("x", x())], &[]).expect("second run queued"));
    let panicking = Arc::new(PanickingWaker(AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&panicking));
    assert!(second.as_mut().poll(&mut Context::from_waker(&waker)).is_pending(), "queued behind the first");
    gate.open();
    let outputs = block_on(first).expect("the first run");
    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&[1.0f32, 2.0, 3.0][..]));
    // The first run's callback hands the slot to the second run and wakes it: the waker panics.
    assert!(settles(|| panicking.0.load(Ordering::SeqCst)), "the queued run's waker was never called");
    let outputs = block_on(second).expect("the second run, started with the slot it was handed");
    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&[1.0f32, 2.0, 3.0][..]));
    assert!(settles(|| session.async_runs_in_flight() == 0), "a slot was never given back");
    // Releasing the session (on a thread of its own, after both runs count as finished) destroys
    // the kernels. Before, the first run never counted as finished and this never happened.
    drop(session);
    assert!(settles(|| RELEASED.load(Ordering::SeqCst) == 1), "the session was never released");
}
