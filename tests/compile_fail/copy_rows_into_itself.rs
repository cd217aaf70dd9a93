// expect: E0502
// `Value::copy_rows_from` copies rows of one tensor into another on a CUDA stream. Copying a
// tensor's rows onto its own (overlapping memory, one side being written while read) must not
// compile: the destination is borrowed mutably, the source shared.
use onnxrt::{CudaStream, ElementType, Value};

fn main() -> onnxrt::Result<()> {
    let stream = CudaStream::new(0)?;
    let mut device = Value::zeros_cuda(&[4, 3], ElementType::F32, 0)?;
    device.copy_rows_from(0..2, &device, &stream)?;
    Ok(())
}
