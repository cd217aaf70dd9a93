// expect: E0502
// `Value::copy_from` writes a tensor on a CUDA stream. A tensor bound to an IoBinding
// as an input is read by every run of that binding, so refilling it while the binding lives
// would race with a run; the binding's shared borrow must forbid the `&mut` copy_from needs.
use onnxrt::{CudaStream, ElementType, Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("add_f32.onnx")?;
    let stream = CudaStream::new(0)?;
    let mut device = Value::zeros_cuda(&[2, 3], ElementType::F32, 0)?;
    let host = Value::from_vec(&[2, 3], vec![1f32; 6])?;
    let mut binding = session.io_binding()?;
    binding.bind_input("a", &device)?;
    binding.bind_input("b", &device)?;
    device.copy_from(&host, &stream)?;
    binding.run(None)?;
    Ok(())
}
