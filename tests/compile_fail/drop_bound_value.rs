// expect: E0505
// Dropping (or moving) a value while an IoBinding holds it: ORT would read freed memory.
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let x = Value::from_vec(&[1, 1], vec![1.0f32])?;
    let mut binding = session.io_binding()?;
    binding.bind_input("x", &x)?;
    drop(x);
    binding.run(None)
}
