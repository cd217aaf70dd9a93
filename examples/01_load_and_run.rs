//! Load any ONNX model, print what it takes and gives, run it once on zeros, print the outputs'
//! shapes. `cargo run -p onnxrt-examples --example 01_load_and_run -- model.onnx`
//! (without a path: the small model of this repository's tests).

use onnxrt::{Dim, Session, Value, ValueKind};

fn main() -> onnxrt::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx").to_owned());
    let session = Session::builder().commit_from_file(&path)?;
    println!("ONNX Runtime {}, model {path}", onnxrt::runtime_info()?.version);
    for input in session.inputs() {
        println!("  in  {input}");
    }
    for output in session.outputs() {
        println!("  out {output}");
    }

    // One zero-filled tensor per input, free axes set to 1 (`onnxrt run --shape` does it per axis).
    let mut inputs = Vec::new();
    for input in session.inputs() {
        let (ValueKind::Tensor, Some(element_type)) = (input.kind, input.element_type) else {
            println!("skipping the run: input `{}` is not a tensor", input.name);
            return Ok(());
        };
        let shape: Vec<i64> = input.shape.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 1 }).collect();
        inputs.push((input.name.clone(), Value::zeros(&shape, element_type)?));
    }
    let outputs = session.run(&inputs)?;
    for name in outputs.names() {
        println!("  {name}: {:?}", outputs.get(name)?.tensor_info()?.shape);
    }
    Ok(())
}
