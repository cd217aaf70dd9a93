//! A custom operator that holds a run where the test wants it: `ai.onnxrt.gate::Gate`, `y = x`
//! (float), whose compute waits until the test opens the gate. With it a test puts a run in a
//! known state (started, at the first node, not finished) by counting, instead of hoping that a
//! slow model is still running after some milliseconds: what is checked no longer depends on
//! the machine's speed.
//!
//! ```no_run
//! # use onnxrt_tests::{builder, gate_op};
//! let (domain, gate) = gate_op::domain();
//! let session = builder().custom_ops(domain).commit_from_memory(&gate_op::model(2)).unwrap();
//! // ... start a run ...
//! gate.wait_entered(1); // the run is inside its first node, and stays there
//! gate.open(); // now every compute passes
//! ```

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::ElementType;

use crate::proto;

/// The operator's domain.
pub const DOMAIN: &str = "ai.onnxrt.gate";

#[derive(Debug, Default)]
struct State {
    open: bool,
    // Computes that started, and that finished.
    entered: usize,
    passed: usize,
    // Computes on this thread do not wait (they count as `inline`).
    bypass: Option<ThreadId>,
    inline: usize,
}

/// The test's side of the gate: open it, and count what reached it. Clones share the gate.
#[derive(Debug, Clone, Default)]
pub struct GateHandle {
    shared: Arc<(Mutex<State>, Condvar)>,
}

impl GateHandle {
    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lets every compute, waiting or later, pass.
    pub fn open(&self) {
        self.state().open = true;
        self.shared.1.notify_all();
    }

    /// Blocks until `n` computes have started (no timeout: if the runs never get here the test
    /// hangs, which is the failure).
    pub fn wait_entered(&self, n: usize) {
        let mut state = self.state();
        while state.entered < n {
            state = self.shared.1.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Computes that started so far.
    pub fn entered(&self) -> usize {
        self.state().entered
    }

    /// Computes that finished so far.
    pub fn passed(&self) -> usize {
        self.state().passed
    }

    /// Computes on `thread` pass a closed gate at once and are counted by [`inline`](Self::inline):
    /// a run that ORT executes on the submitting thread must not block the test forever.
    pub fn bypass_on(&self, thread: ThreadId) {
        self.state().bypass = Some(thread);
    }

    /// Computes that ran on the bypass thread.
    pub fn inline(&self) -> usize {
        self.state().inline
    }
}

struct Gate(GateHandle);

struct GateKernel(GateHandle);

impl CustomOp for Gate {
    type Kernel = GateKernel;
    fn name(&self) -> &str {
        "Gate"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _: &KernelInfo<'_>) -> OpResult<GateKernel> {
        Ok(GateKernel(self.0.clone()))
    }
}

impl Kernel for GateKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        {
            let (lock, changed) = &*self.0.shared;
            let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
            state.entered += 1;
            changed.notify_all();
            if state.bypass == Some(std::thread::current().id()) {
                state.inline += 1;
            } else {
                while !state.open {
                    state = changed.wait(state).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
        let x = ctx.input::<f32>(0)?;
        ctx.output::<f32>(0, x.shape())?.assign(&x);
        self.0.state().passed += 1;
        Ok(())
    }
}

/// The gate's domain for [`SessionBuilder::custom_ops`](onnxrt::SessionBuilder::custom_ops),
/// and its handle. The gate starts closed.
pub fn domain() -> (OpDomain, GateHandle) {
    let handle = GateHandle::default();
    (OpDomain::new(DOMAIN).with(Gate(handle.clone())), handle)
}

/// One Gate node over a batch: `x` float `[n, 3]` → `y` float `[n, 3]` (for the batcher, which
/// needs a free first axis).
pub fn batched_model() -> Vec<u8> {
    proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &[proto::domain_node(DOMAIN, "Gate", &["x"], &["y"], &[])],
        &[proto::batched_tensor_info("x", proto::FLOAT, &[3])],
        &[proto::batched_tensor_info("y", proto::FLOAT, &[3])],
    )
}

/// A model of `nodes` Gate nodes in a row (at least one): `x` float `[3]` → … → `y`.
pub fn model(nodes: usize) -> Vec<u8> {
    let names: Vec<String> = (0..=nodes.max(1))
        .map(|i| {
            if i == 0 {
                "x".into()
            } else if i == nodes.max(1) {
                "y".into()
            } else {
                format!("t{i}")
            }
        })
        .collect();
    let chain: Vec<_> =
        names.windows(2).map(|pair| proto::domain_node(DOMAIN, "Gate", &[&pair[0]], &[&pair[1]], &[])).collect();
    proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &chain,
        &[proto::tensor_info("x", proto::FLOAT, &[3])],
        &[proto::tensor_info("y", proto::FLOAT, &[3])],
    )
}
