// expect: E0505
// IoBinding::outputs() values share the bound output's tensor, so they borrow
// the binding; dropping the binding (and then the bound value) while one is alive is refused.
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("add_f32.onnx")?;
    let a = Value::from_vec(&[2, 3], vec![1f32; 6])?;
    let mut sum = Value::from_vec(&[2, 3], vec![0f32; 6])?;
    let mut binding = session.io_binding()?;
    binding.bind_input("a", &a)?;
    binding.bind_input("b", &a)?;
    binding.bind_output("sum", &mut sum)?;
    binding.run(None)?;
    let escaped = binding.outputs()?;
    drop(binding);
    println!("{:?}", escaped[0].view::<f32>()?);
    Ok(())
}
