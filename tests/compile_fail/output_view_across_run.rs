// expect: E0502
// ORT reuses an output's memory on the next run, so a view of an output of
// IoBinding::outputs() cannot be alive while the binding runs again.
use onnxrt::{MemoryInfo, Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("add_f32.onnx")?;
    let a = Value::from_vec(&[2, 3], vec![1f32; 6])?;
    let mut binding = session.io_binding()?;
    binding.bind_input("a", &a)?;
    binding.bind_input("b", &a)?;
    binding.bind_output_to_device("sum", &MemoryInfo::cpu()?)?;
    binding.run(None)?;
    let outputs = binding.outputs()?;
    let view = outputs[0].view::<f32>()?;
    binding.run(None)?;
    println!("{view:?}");
    Ok(())
}
