// expect: E0521
// A custom operator's input views live only as long as the compute call: a kernel cannot keep one.
use std::sync::Mutex;

use onnxrt::custom_op::{Kernel, KernelContext, OpResult};
use onnxrt::ndarray::ArrayViewD;

struct Keeps {
    last: Mutex<Option<ArrayViewD<'static, f32>>>,
}

impl Kernel for Keeps {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        *self.last.lock().unwrap() = Some(x);
        Ok(())
    }
}

fn main() {}
