//! GPU latency/throughput of one model (the numbers behind BENCHMARKS.md), in these modes:
//! - `run`: host arrays in and out;
//! - `iobinding`: IoBinding with device-resident input and output;
//! - `cuda_graph`: the same plus a CUDA graph (captured on the first run, replayed after);
//! - `nhwc`: `iobinding` with `CudaOptions::prefer_nhwc` (ORT 1.17+);
//! - `fast`: the fastest recipe: `nhwc` + CUDA graph. Give it the fp16 model (inputs and outputs
//!   in `half::f16`, re-exported as `onnxrt::half`), as `tools/gpu/export_resnet.py` writes it;
//! - `host_binding`: host input and host output bound through an `IoBinding` made for each run
//!   (what the dynamic batcher's worker does): ORT copies the input to the device and the output
//!   back inside the run;
//! - `safe_graph`: `cuda_graph` through `onnxrt::CudaGraph`, which owns its session and device
//!   buffers (no `unsafe` in the caller; a binding made per run). Beside `cuda_graph` it shows
//!   what the safe wrapper costs.
//!
//! `--mixed` adds, per mode, one session that runs the batch sizes in rotation (the size changes
//! on every run, as in a server's batcher) after warming each up; its lines are `mixed_<mode>`.
//!
//! ```text
//! cargo build --release -p onnxrt-benches --features cuda --bin gpu_bench
//! gpu_bench MODEL.onnx [--modes run,iobinding,cuda_graph] [--batches 1,32,128] [--iterations 50] [--warmup 10]
//! gpu_bench --help
//! ```
//! The fast recipe, step by step (what `fast` does; the same in your own code):
//! 1. an fp16 model, fed and read in `f16` (half the bytes, tensor cores);
//! 2. `CudaOptions::new().prefer_nhwc(true)` with the `unsafe` `enable_cuda_graph(true)` and `strict_gpu(true)`;
//! 3. input and output tensors allocated once on the device (`session.allocator(&MemoryInfo::cuda(0))`),
//!    bound once with `IoBinding` (a CUDA graph replays fixed addresses), refilled in place;
//! 4. a few warm-up runs before timing: cuDNN's algorithm search and the graph capture happen
//!    in the first runs;
//! 5. `binding.run(None)` then `synchronize_outputs()` per call.
//!
//! The input element type (f32 or f16) is read from the model. Prints one line per measurement:
//! `mode batch median_ms p90_ms images_per_s`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use onnxrt::half::f16;
use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{ElementType, MemoryInfo, Session, Value};

/// GPU latency and throughput of one model, one line per mode and batch size:
/// `mode batch median_ms p90_ms images_per_s`.
#[derive(Debug, clap::Parser)]
#[command(name = "gpu_bench")]
struct Args {
    /// The model (an ImageNet-style classifier with a [N, 3, 224, 224] input, f32 or f16)
    #[arg(value_name = "MODEL.onnx")]
    model: PathBuf,
    /// Modes to measure, comma-separated
    #[arg(long, value_name = "M,..", value_delimiter = ',', default_value = "run,iobinding,cuda_graph")]
    modes: Vec<Mode>,
    /// Batch sizes, comma-separated (a model with a fixed batch dimension uses its own)
    #[arg(long, value_name = "B,..", value_delimiter = ',', default_value = "1,32,128")]
    batches: Vec<i64>,
    /// Timed runs per measurement
    #[arg(long, value_name = "N", default_value_t = 50)]
    iterations: usize,
    /// Untimed runs before them
    #[arg(long, value_name = "N", default_value_t = 10)]
    warmup: usize,
    /// Also run the batch sizes in rotation in one session (per mode, not for CUDA graphs)
    #[arg(long)]
    mixed: bool,
}

/// How the model is fed and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    /// Host arrays in and out
    Run,
    /// IoBinding with device-resident input and output
    Iobinding,
    /// `iobinding` plus a CUDA graph
    #[value(name = "cuda_graph")]
    CudaGraph,
    /// `iobinding` with prefer_nhwc
    Nhwc,
    /// `nhwc` plus a CUDA graph (give it the fp16 model)
    Fast,
    /// Host input and output bound through a new IoBinding per run
    #[value(name = "host_binding")]
    HostBinding,
    /// `cuda_graph` through the safe `onnxrt::CudaGraph` (its own buffers, a binding per run)
    #[value(name = "safe_graph")]
    SafeGraph,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Run => "run",
            Mode::Iobinding => "iobinding",
            Mode::CudaGraph => "cuda_graph",
            Mode::Nhwc => "nhwc",
            Mode::Fast => "fast",
            Mode::HostBinding => "host_binding",
            Mode::SafeGraph => "safe_graph",
        }
    }
}

fn main() {
    // Usage mistakes print clap's message and exit with status 2; --help exits with 0.
    let args = <Args as clap::Parser>::parse();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let model = &args.model;
    println!("# runtime {}; model {}", onnxrt::runtime_info()?.version, model.display());
    println!("mode batch median_ms p90_ms images_per_s");
    for &batch in &args.batches {
        for &mode in &args.modes {
            let times = measure(model, mode, batch, args.iterations, args.warmup)?;
            let median = times[times.len() / 2];
            let p90 = times[times.len() * 9 / 10];
            let name = mode.name();
            println!("{name} {batch} {:.3} {:.3} {:.1}", ms(median), ms(p90), batch as f64 / median.as_secs_f64());
        }
    }
    if args.mixed {
        for &mode in args.modes.iter().filter(|m| !matches!(m, Mode::CudaGraph | Mode::Fast | Mode::SafeGraph)) {
            for (batch, mut times) in measure_mixed(model, mode, &args.batches, args.iterations, args.warmup)? {
                times.sort();
                let (median, p90) = (times[times.len() / 2], times[times.len() * 9 / 10]);
                let name = format!("mixed_{}", mode.name());
                println!("{name} {batch} {:.3} {:.3} {:.1}", ms(median), ms(p90), batch as f64 / median.as_secs_f64());
            }
        }
    }
    Ok(())
}

fn session_for(model: &Path, mode: Mode) -> Result<Session, onnxrt::Error> {
    let graph = matches!(mode, Mode::CudaGraph | Mode::Fast);
    // SAFETY: a graph mode's session only runs in `measure`'s device branch: one IoBinding that
    // binds `dev_in` and `dev_out` (device memory, fixed shapes) once, before the first run;
    // both are declared after the session and live past its last run, and nothing else writes
    // them. `measure_mixed` refuses graph modes.
    let mut cuda = unsafe { CudaOptions::new().enable_cuda_graph(graph) };
    if matches!(mode, Mode::Nhwc | Mode::Fast) {
        cuda = cuda.prefer_nhwc(true);
    }
    Session::builder().cuda(cuda).strict_gpu(true).commit_from_file(model)
}

/// The input shape for `batch` (a model with a fixed batch dimension keeps its own).
fn input_shape(session: &Session, batch: i64) -> Vec<i64> {
    let mut shape: Vec<i64> = vec![batch, 3, 224, 224];
    if let Some(onnxrt::Dim::Fixed(n)) = session.inputs()[0].shape.first() {
        shape[0] = *n;
    }
    shape
}

/// A host tensor of `shape` filled with 0.5 in the model's input element type.
fn host_input(session: &Session, shape: &[i64]) -> Result<Value<'static>, onnxrt::Error> {
    let len = shape.iter().product::<i64>() as usize;
    if session.inputs()[0].element_type == Some(ElementType::F16) {
        Value::from_vec(shape, vec![f16::from_f32(0.5); len])
    } else {
        Value::from_vec(shape, vec![0.5f32; len])
    }
}

/// One run the way `mode` feeds the model: host arrays (`run`) or a fresh IoBinding over host
/// input and output (`host_binding`).
fn run_from_host(
    session: &Session,
    mode: Mode,
    input: &Value<'static>,
    output: &mut Value<'static>,
) -> Result<(), onnxrt::Error> {
    let (input_name, output_name) = (&session.inputs()[0].name, &session.outputs()[0].name);
    if mode == Mode::Run {
        drop(session.run(&[(input_name, input)])?);
    } else {
        let mut binding = session.io_binding()?;
        binding.bind_input(input_name, input)?;
        binding.bind_output(output_name, output)?;
        binding.run(None)?;
    }
    Ok(())
}

fn measure(
    model: &Path,
    mode: Mode,
    batch: i64,
    iterations: usize,
    warmup: usize,
) -> Result<Vec<Duration>, onnxrt::Error> {
    if mode == Mode::SafeGraph {
        return measure_safe_graph(model, batch, iterations, warmup);
    }
    let session = session_for(model, mode)?;
    let shape = input_shape(&session, batch);
    let half = session.inputs()[0].element_type == Some(ElementType::F16);
    let host = host_input(&session, &shape)?;
    let out_shape: Vec<i64> = vec![shape[0], 1000];
    let mut times = Vec::with_capacity(iterations);
    if matches!(mode, Mode::Run | Mode::HostBinding) {
        let mut host_out = host_input(&session, &out_shape)?;
        for i in 0..warmup + iterations {
            let t = Instant::now();
            run_from_host(&session, mode, &host, &mut host_out)?;
            if i >= warmup {
                times.push(t.elapsed());
            }
        }
    } else {
        let (input, output) = (&session.inputs()[0], &session.outputs()[0]);
        let device = MemoryInfo::cuda(0)?;
        let allocator = session.allocator(&device)?;
        let (dev_in, mut dev_out) = device_io(&allocator, &shape, &out_shape, half)?;
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

/// `CudaGraph` runs of `batch` rows (its inputs hold zeros; the outputs stay on the device, as in
/// `cuda_graph` mode, so the two differ only by the safe wrapper).
fn measure_safe_graph(
    model: &Path,
    batch: i64,
    iterations: usize,
    warmup: usize,
) -> Result<Vec<Duration>, onnxrt::Error> {
    let rows = usize::try_from(batch).unwrap_or(1);
    let mut graph = onnxrt::CudaGraph::from_file(Session::builder(), CudaOptions::new(), model, rows)?;
    let mut times = Vec::with_capacity(iterations);
    for i in 0..warmup + iterations {
        let t = Instant::now();
        graph.run()?;
        if i >= warmup {
            times.push(t.elapsed());
        }
    }
    times.sort();
    Ok(times)
}

/// One session, the batch sizes in rotation (a new size on every run) after `warmup` runs of
/// each; per size, its timed runs. Device-resident modes keep one input and output per size.
fn measure_mixed(
    model: &Path,
    mode: Mode,
    batches: &[i64],
    iterations: usize,
    warmup: usize,
) -> Result<Vec<(i64, Vec<Duration>)>, onnxrt::Error> {
    // A CUDA graph replays its first batch size's buffers: rotating sizes would break
    // `enable_cuda_graph`'s contract (see `session_for`).
    assert!(
        !matches!(mode, Mode::CudaGraph | Mode::Fast | Mode::SafeGraph),
        "mixed batch sizes cannot run a CUDA graph"
    );
    let session = session_for(model, mode)?;
    let from_host = matches!(mode, Mode::Run | Mode::HostBinding);
    let device = MemoryInfo::cuda(0)?;
    let allocator = session.allocator(&device)?;
    let (input_name, output_name) = (session.inputs()[0].name.clone(), session.outputs()[0].name.clone());
    let mut hosts = Vec::new();
    let mut devices = Vec::new();
    for &batch in batches {
        let shape = input_shape(&session, batch);
        let out_shape = vec![shape[0], 1000];
        if from_host {
            hosts.push((host_input(&session, &shape)?, host_input(&session, &out_shape)?));
        } else {
            let half = session.inputs()[0].element_type == Some(ElementType::F16);
            devices.push(device_io(&allocator, &shape, &out_shape, half)?);
        }
    }
    let mut times: Vec<(i64, Vec<Duration>)> = batches.iter().map(|&b| (b, Vec::with_capacity(iterations))).collect();
    for round in 0..warmup + iterations {
        for (index, (_, timed)) in times.iter_mut().enumerate() {
            let t = Instant::now();
            if from_host {
                let (input, output) = &mut hosts[index];
                run_from_host(&session, mode, input, output)?;
            } else {
                let (input, output) = &mut devices[index];
                let mut binding = session.io_binding()?;
                binding.bind_input(&input_name, input)?;
                binding.bind_output(&output_name, output)?;
                binding.run(None)?;
                binding.synchronize_outputs()?;
            }
            if round >= warmup {
                timed.push(t.elapsed());
            }
        }
    }
    Ok(times)
}

/// A device input of `shape` filled with 0.5 and a device output of `out_shape`, in f16 or f32.
fn device_io<'a>(
    allocator: &'a onnxrt::Allocator<'_>,
    shape: &[i64],
    out_shape: &[i64],
    half: bool,
) -> Result<(Value<'a>, Value<'a>), onnxrt::Error> {
    let len = shape.iter().product::<i64>() as usize;
    if half {
        let mut input = allocator.tensor::<f16>(shape)?;
        input.copy_from_host(&vec![f16::from_f32(0.5); len])?;
        Ok((input, allocator.tensor::<f16>(out_shape)?))
    } else {
        let mut input = allocator.tensor::<f32>(shape)?;
        input.copy_from_host(&vec![0.5f32; len])?;
        Ok((input, allocator.tensor::<f32>(out_shape)?))
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
