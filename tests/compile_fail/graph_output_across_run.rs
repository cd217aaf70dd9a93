// expect: E0502
// A `CudaGraph`'s output buffer is rewritten by every run. A borrow of it must end before the
// next run starts: reading it during the run would race ORT's kernels.
use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{CudaGraph, Session};

fn main() -> onnxrt::Result<()> {
    let mut graph = CudaGraph::from_file(Session::builder(), CudaOptions::new(), "mlp.onnx", 4)?;
    graph.run()?;
    let logits = graph.output(0)?;
    graph.run()?;
    println!("{:?}", logits.tensor_info()?);
    Ok(())
}
