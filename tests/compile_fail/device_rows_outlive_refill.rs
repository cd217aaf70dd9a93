// expect: E0499
// Rows cut from a device buffer (`first_rows_mut`) share its memory, so the buffer
// cannot be refilled with `copy_from` while a row view still lives (two writers of one memory).
use onnxrt::{CudaStream, ElementType, Value};

fn main() -> onnxrt::Result<()> {
    let stream = CudaStream::new(0)?;
    let mut buffer = Value::zeros_cuda(&[8, 3], ElementType::F32, 0)?;
    let host = Value::from_vec(&[8, 3], vec![1f32; 24])?;
    let mut rows = buffer.first_rows_mut(2)?;
    buffer.copy_from(&host, &stream)?;
    rows.copy_from(&Value::from_vec(&[2, 3], vec![2f32; 6])?, &stream)?;
    Ok(())
}
