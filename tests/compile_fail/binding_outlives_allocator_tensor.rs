// expect: E0505
// ORT's binding keeps its own reference to a bound tensor until the binding is
// released, and an allocator-made tensor's memory goes back through its allocator; so the tensor
// and the allocator must outlive the binding itself (IoBinding has a Drop impl), not only its
// last use.
use onnxrt::{MemoryInfo, Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("add_f32.onnx")?;
    let a = Value::from_vec(&[2, 3], vec![1f32; 6])?;
    let mut binding = session.io_binding()?;
    let allocator = session.allocator(&MemoryInfo::cpu()?)?;
    let mut out = allocator.tensor::<f32>(&[2, 3])?;
    binding.bind_input("a", &a)?;
    binding.bind_input("b", &a)?;
    binding.bind_output("sum", &mut out)?;
    binding.run(None)?;
    drop(out);
    drop(allocator);
    Ok(())
}
