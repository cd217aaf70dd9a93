// expect: E0594
// A captured CUDA graph replays the addresses of its buffers. Replacing a buffer (and so freeing
// the one the graph reads) must not compile: the graph hands out shared references only.
use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{CudaGraph, ElementType, Session, Value};

fn main() -> onnxrt::Result<()> {
    let mut graph = CudaGraph::from_file(Session::builder(), CudaOptions::new(), "mlp.onnx", 4)?;
    graph.run()?;
    *graph.input(0)? = Value::zeros_cuda(&[4, 16], ElementType::F32, 0)?;
    graph.run()?;
    Ok(())
}
