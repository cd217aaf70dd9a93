// expect: E0502
// Values are Send, but one from IoBinding::outputs() cannot be read on another
// thread while the binding runs again (it would change under the reader: a data race).
use onnxrt::{MemoryInfo, Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("add_f32.onnx")?;
    let a = Value::from_vec(&[2, 3], vec![1f32; 6])?;
    let mut binding = session.io_binding()?;
    binding.bind_input("a", &a)?;
    binding.bind_input("b", &a)?;
    binding.bind_output_to_device("sum", &MemoryInfo::cpu()?)?;
    binding.run(None)?;
    let first = binding.outputs()?.remove(0);
    std::thread::scope(|s| {
        s.spawn(move || println!("{:?}", first.view::<f32>().map(|v| v.sum())));
        binding.run(None)
    })
}
