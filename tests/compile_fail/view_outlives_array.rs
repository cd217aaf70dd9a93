// expect: E0597
// A value made by Value::from_view must not outlive the array it borrows.
use onnxrt::ndarray::Array2;
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let x;
    {
        let data = Array2::<f32>::zeros((1, 1));
        x = Value::from_view(data.view())?;
    }
    session.run(&[("x", &x)])?;
    Ok(())
}
