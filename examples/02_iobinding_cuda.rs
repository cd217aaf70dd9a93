//! A CUDA session that keeps its output on the GPU between runs (IoBinding), then copies it to
//! the host once. `cargo run -p onnxrt-examples --features cuda --example 02_iobinding_cuda --
//! model.onnx` (a model with one float input; without a path, this repository's small MLP).

use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{Dim, MemoryInfo, Session, Value};

fn main() -> onnxrt::Result<()> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx").to_owned());
    // strict_gpu: every node on the GPU, and the CUDA libraries checked before anything loads
    // them; an error names what is missing (run `onnxrt doctor` for the whole picture).
    let session = Session::builder().cuda(CudaOptions::new().device_id(0)).strict_gpu(true).commit_from_file(&path)?;
    println!("providers {:?}", session.providers());

    let input = &session.inputs()[0];
    let output = &session.outputs()[0];
    let shape: Vec<i64> = input.shape.iter().map(|d| if let Dim::Fixed(n) = d { *n } else { 1 }).collect();
    let x = Value::zeros(&shape, input.element_type.unwrap_or(onnxrt::ElementType::F32))?;

    let mut binding = session.io_binding()?;
    binding.bind_input(&input.name, &x)?; // copied to the device once, at the first run
    binding.bind_output_to_device(&output.name, &MemoryInfo::cuda(0)?)?;
    for _ in 0..10 {
        binding.run(None)?; // the output stays in device memory
    }
    binding.synchronize_outputs()?;
    let on_device = binding.outputs()?;
    let host = on_device[0].copy_to_host::<f32>()?;
    println!("{}: shape {:?}, first values {:?}", output.name, host.shape(), host.iter().take(4).collect::<Vec<_>>());
    Ok(())
}
