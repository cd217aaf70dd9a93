// expect: E0502
// Writing into an array while a zero-copy value of it is bound: ORT could read it mid-write.
use onnxrt::ndarray::Array2;
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let mut data = Array2::<f32>::zeros((1, 1));
    let x = Value::from_view(data.view())?;
    let mut binding = session.io_binding()?;
    binding.bind_input("x", &x)?;
    data[[0, 0]] = 1.0;
    binding.run(None)
}
