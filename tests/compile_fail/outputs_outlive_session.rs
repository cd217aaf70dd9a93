// expect: E0597
// Outputs borrow the session that produced them (for their names).
use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let x = Value::from_vec(&[1, 1], vec![1.0f32])?;
    let outputs;
    {
        let session = Session::builder().commit_from_file("identity_f32.onnx")?;
        outputs = session.run(&[("x", &x)])?;
    }
    println!("{}", outputs.len());
    Ok(())
}
