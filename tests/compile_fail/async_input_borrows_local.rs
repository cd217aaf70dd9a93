// expect: E0597
// run_async holds its inputs until ORT calls back, which can be after the future is dropped: a
// value borrowing a local buffer cannot be an input (a Value<'static> moved in, or an
// Arc<Value<'static>> shared, only).
use onnxrt::ndarray::Array1;
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let future = {
        let data = Array1::from(vec![1.0f32]);
        let x = Value::from_view(data.view())?;
        session.run_async([("x", x)], &[])?
    };
    drop(future);
    Ok(())
}
