// expect: E0597
// binding_outlives_allocator_tensor without explicit drops: a binding declared before the value bound to it would
// be dropped after it (locals drop in reverse order), while ORT still holds the tensor.
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("add_f32.onnx")?;
    let mut binding = session.io_binding()?;
    let mut sum = Value::from_vec(&[2, 3], vec![0f32; 6])?;
    binding.bind_output("sum", &mut sum)?;
    Ok(())
}
