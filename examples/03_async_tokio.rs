//! Many runs in flight from a tokio service, without blocking its threads: `Session::run_async`
//! runs the model on ORT's own threads and wakes the future. `cargo run -p onnxrt-examples
//! --example 03_async_tokio`.

use std::sync::Arc;

use onnxrt::{Session, Value};

#[tokio::main]
async fn main() -> onnxrt::Result<()> {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
    // async_threads(): one intra-op worker per core (async runs execute on those workers);
    // max_async_runs bounds how many runs are with ORT at once (more wait their turn).
    let session = Arc::new(Session::builder().async_threads().max_async_runs(16).commit_from_file(model)?);

    let mut tasks = Vec::new();
    for i in 0..32 {
        let a = Value::from_vec(&[2, 3], vec![i as f32; 6])?;
        let b = Value::from_vec(&[2, 3], vec![1.0f32; 6])?;
        // The future owns its inputs; dropping it (a timeout, a client gone) cancels the run.
        let run = session.run_async([("a", a), ("b", b)], &["sum"])?;
        tasks.push(tokio::spawn(async move { (i, run.await) }));
    }
    for task in tasks {
        let (i, outputs) = task.await.expect("task");
        let sum = outputs?.get("sum")?.view::<f32>()?.sum();
        assert_eq!(sum, 6.0 * (i as f32 + 1.0));
    }
    println!("32 runs answered");
    Ok(())
}
