// expect: E0277
// Session::run borrows its inputs: an output can be an input's own memory (a graph output that
// is a graph input), so values moved into the run would be freed while the output still reads
// them. Owned pairs and maps are passed by reference (`session.run(&inputs)`).
use std::collections::HashMap;

use onnxrt::{Session, Value};

fn main() -> onnxrt::Result<()> {
    let session = Session::builder().commit_from_file("identity_f32.onnx")?;
    let mut inputs = HashMap::new();
    inputs.insert("x".to_owned(), Value::from_vec(&[1, 1], vec![1.0f32])?);
    let outputs = session.run(inputs)?;
    println!("{:?}", outputs[0].view::<f32>()?);
    Ok(())
}
