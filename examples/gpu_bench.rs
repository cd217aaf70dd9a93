//! GPU latency/throughput of one model (the numbers behind BENCHMARKS.md), in these modes:
//! - `run`: host arrays in and out;
//! - `iobinding`: IoBinding with device-resident input and output;
//! - `cuda_graph`: the same plus a CUDA graph (captured on the first run, replayed after);
//! - `nhwc`: `iobinding` with `CudaOptions::prefer_nhwc` (ORT 1.17+);
//! - `fast`: the fastest recipe: `nhwc` + CUDA graph. Give it the fp16 model (inputs and outputs
//!   in `half::f16`, re-exported as `onnxrt::half`), as `tools/gpu/export_resnet.py` writes it.
//!
//! ```text
//! cargo build --release --features cuda --example gpu_bench
//! gpu_bench MODEL.onnx [--modes run,iobinding,cuda_graph] [--batches 1,32,128] [--iterations 50] [--warmup 10]
//! ```
//! The fast recipe, step by step (what `fast` does; the same in your own code):
//! 1. an fp16 model, fed and read in `f16` (half the bytes, tensor cores);
//! 2. `CudaOptions::new().prefer_nhwc(true).enable_cuda_graph(true)` and `strict_gpu(true)`;
//! 3. input and output tensors allocated once on the device (`session.allocator(&MemoryInfo::cuda(0))`),
//!    bound once with `IoBinding` (a CUDA graph replays fixed addresses), refilled in place;
//! 4. a few warm-up runs before timing: cuDNN's algorithm search and the graph capture happen
//!    in the first runs;
//! 5. `binding.run(None)` then `synchronize_outputs()` per call.
//!
//! The input element type (f32 or f16) is read from the model. Prints one line per measurement:
//! `mode batch median_ms p90_ms images_per_s`.

use std::time::{Duration, Instant};

use onnxrt::half::f16;
use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{ElementType, MemoryInfo, Session, Value};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn arg(args: &[String], flag: &str, default: &str) -> String {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_owned())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model = args
        .first()
        .ok_or("usage: gpu_bench MODEL.onnx [--modes run,iobinding,cuda_graph,nhwc,fast] [--batches 1,32,128] [--iterations N] [--warmup N]")?;
    let modes: Vec<String> = arg(&args, "--modes", "run,iobinding,cuda_graph").split(',').map(str::to_owned).collect();
    if let Some(bad) = modes.iter().find(|m| !["run", "iobinding", "cuda_graph", "nhwc", "fast"].contains(&m.as_str()))
    {
        return Err(format!("unknown mode `{bad}`; modes are run, iobinding, cuda_graph, nhwc, fast").into());
    }
    let batches: Vec<i64> = arg(&args, "--batches", "1,32,128").split(',').map(str::parse).collect::<Result<_, _>>()?;
    let iterations: usize = arg(&args, "--iterations", "50").parse()?;
    let warmup: usize = arg(&args, "--warmup", "10").parse()?;
    println!("# runtime {}; model {model}", onnxrt::runtime_info()?.version);
    println!("mode batch median_ms p90_ms images_per_s");
    for &batch in &batches {
        for mode in modes.iter().map(String::as_str) {
            let times = measure(model, mode, batch, iterations, warmup)?;
            let median = times[times.len() / 2];
            let p90 = times[times.len() * 9 / 10];
            println!("{mode} {batch} {:.3} {:.3} {:.1}", ms(median), ms(p90), batch as f64 / median.as_secs_f64());
        }
    }
    Ok(())
}

fn measure(
    model: &str,
    mode: &str,
    batch: i64,
    iterations: usize,
    warmup: usize,
) -> Result<Vec<Duration>, onnxrt::Error> {
    let graph = mode == "cuda_graph" || mode == "fast";
    let mut cuda = CudaOptions::new().enable_cuda_graph(graph);
    if mode == "nhwc" || mode == "fast" {
        cuda = cuda.prefer_nhwc(true);
    }
    let session = Session::builder().cuda(cuda).strict_gpu(true).commit_from_file(model)?;
    let input = &session.inputs()[0];
    let output = &session.outputs()[0];
    let mut shape: Vec<i64> = vec![batch, 3, 224, 224];
    if let Some(onnxrt::Dim::Fixed(n)) = input.shape.first() {
        shape[0] = *n;
    }
    let len = shape.iter().product::<i64>() as usize;
    let half = input.element_type == Some(ElementType::F16);
    let host = if half {
        Value::from_vec(&shape, vec![f16::from_f32(0.5); len])?
    } else {
        Value::from_vec(&shape, vec![0.5f32; len])?
    };
    let mut times = Vec::with_capacity(iterations);
    if mode == "run" {
        for i in 0..warmup + iterations {
            let t = Instant::now();
            let outputs = session.run(&[(&input.name, &host)])?;
            drop(outputs);
            if i >= warmup {
                times.push(t.elapsed());
            }
        }
    } else {
        let device = MemoryInfo::cuda(0)?;
        let allocator = session.allocator(&device)?;
        let mut dev_in = if half { allocator.tensor::<f16>(&shape)? } else { allocator.tensor::<f32>(&shape)? };
        if half {
            dev_in.copy_from_host(&vec![f16::from_f32(0.5); len])?;
        } else {
            dev_in.copy_from_host(&vec![0.5f32; len])?;
        }
        let out_shape: Vec<i64> = vec![shape[0], 1000];
        let mut dev_out =
            if half { allocator.tensor::<f16>(&out_shape)? } else { allocator.tensor::<f32>(&out_shape)? };
        let mut binding = session.io_binding()?;
        binding.bind_input(&input.name, &dev_in)?;
        binding.bind_output(&output.name, &mut dev_out)?;
        for i in 0..warmup + iterations {
            let t = Instant::now();
            binding.run(None)?;
            binding.synchronize_outputs()?;
            if i >= warmup {
                times.push(t.elapsed());
            }
        }
    }
    times.sort();
    Ok(times)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
