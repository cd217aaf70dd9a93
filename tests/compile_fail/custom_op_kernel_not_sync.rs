// expect: E0277
// ORT calls compute from several threads at once: a kernel with unsynchronised state is refused.
use std::cell::Cell;

use onnxrt::custom_op::{Kernel, KernelContext, OpResult};

struct Counts {
    calls: Cell<u64>,
}

impl Kernel for Counts {
    fn compute(&self, _ctx: &KernelContext<'_>) -> OpResult {
        self.calls.set(self.calls.get() + 1);
        Ok(())
    }
}

fn main() {}
