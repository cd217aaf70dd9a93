//! Image classification on the GPU: the template to copy.
//!
//! ```text
//! cargo run --release --features cuda --example resnet_cuda -- \
//!     --model resnet50-v1-12.onnx --labels synset.txt --image cat.jpg --image dog.jpg \
//!     --device 0 --batch 8 --iterations 50 --strict
//! ```
//! With no arguments it classifies an embedded picture with an embedded model (a tiny color
//! classifier with an ImageNet model's input and output contract), so it runs on any machine.
//! Without a usable GPU it says why and runs on the CPU, unless `--strict` is given.
//!
//! The steps are the ones a production service needs: decode, resize (shorter side 256, center
//! crop 224), ImageNet mean/std, NCHW contiguous batch; a CUDA session with every graph
//! optimization; IoBinding (input bound once, output bound once, runs repeated without per-run
//! setup); softmax and top-5 with labels; a timing summary.
//!
//! For the last bit of speed (ORT 1.17+, recent GPUs), the fast recipe that `benches/src/bin/gpu_bench.rs`
//! documents and measures (`--modes fast`): export the model in fp16 and feed/read `onnxrt::half::f16`,
//! add `.prefer_nhwc(true)` and the `unsafe` `.enable_cuda_graph(true)` to the `CudaOptions` below
//! (its contract: every run binds the same device input and output, which outlive the session's
//! last run; a replay ignores anything else), and do a few warm-up runs before timing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use onnxrt::ndarray::Array4;
use onnxrt::{MemoryInfo, Session, SessionBuilder, Value};
use onnxrt_examples::embedded::{LABELS as DEFAULT_LABELS, MODEL as DEFAULT_MODEL, PICTURE as DEFAULT_IMAGE};
use onnxrt_examples::imagenet::{preprocess, softmax, top_k, SIDE};

/// Classify images with an ImageNet-style ONNX model on a CUDA GPU (falls back to the CPU unless
/// --strict). With no arguments: an embedded model and picture.
#[derive(Debug, clap::Parser)]
#[command(name = "resnet_cuda")]
struct Args {
    /// The model (default: the embedded color classifier)
    #[arg(long, value_name = "M.onnx")]
    model: Option<PathBuf>,
    /// One label per line, in the model's class order (default: the embedded model's)
    #[arg(long, value_name = "L.txt")]
    labels: Option<PathBuf>,
    /// A picture to classify (repeat for several; default: the embedded picture)
    #[arg(long = "image", value_name = "I")]
    images: Vec<PathBuf>,
    /// The CUDA device
    #[arg(long, value_name = "N", default_value_t = 0)]
    device: i32,
    /// Pictures per run (the pictures given repeat to fill it)
    #[arg(long, value_name = "B", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    batch: u32,
    /// Timed runs
    #[arg(long, value_name = "K", default_value_t = 20)]
    iterations: usize,
    /// Fail instead of running on the CPU (no GPU, or a node CUDA cannot run)
    #[arg(long)]
    strict: bool,
}

fn main() {
    // Usage mistakes print clap's message and exit with status 2; --help exits with 0.
    let args = <Args as clap::Parser>::parse();
    if let Err(error) = run(&args) {
        // The crate's errors carry their fix; print it whole.
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let batch_size = args.batch as usize;
    let runtime = onnxrt::runtime_info()?;
    println!("ONNX Runtime {} from {}", runtime.version, runtime.library.display());
    println!("  built against {} ({})", runtime.build_version, runtime.build_source);

    let (session, on_gpu) = make_session(args)?;
    let input = &session.inputs()[0];
    let output = &session.outputs()[0];
    println!(
        "model: input `{}` {}, output `{}` {}; providers {:?}",
        input.name,
        input.shape_text(),
        output.name,
        output.shape_text(),
        session.providers()
    );

    let labels: Vec<String> = match &args.labels {
        Some(path) => std::fs::read_to_string(path)?.lines().map(str::to_owned).collect(),
        None if args.model.is_none() => DEFAULT_LABELS.lines().map(str::to_owned).collect(),
        None => Vec::new(),
    };

    // Decode and preprocess; the batch repeats the images given to fill `--batch`.
    let t = Instant::now();
    let pictures: Vec<(String, image::RgbImage)> = if args.images.is_empty() {
        vec![("embedded red.png".into(), image::load_from_memory(DEFAULT_IMAGE)?.to_rgb8())]
    } else {
        args.images
            .iter()
            .map(|p| Ok((p.display().to_string(), image::open(p)?.to_rgb8())))
            .collect::<Result<_, image::ImageError>>()?
    };
    let mut batch = Array4::<f32>::zeros((batch_size, 3, SIDE as usize, SIDE as usize));
    for (i, mut slot) in batch.outer_iter_mut().enumerate() {
        let picture = preprocess(&pictures[i % pictures.len()].1);
        slot.assign(&picture);
    }
    let preprocess_time = t.elapsed();

    // IoBinding: the input is bound once; the output is allocated by ORT on the host (ORT copies
    // it back from the GPU), so it can be read after each run without further setup.
    let input_value = Value::from_array(batch)?;
    let host = MemoryInfo::cpu()?;
    let mut binding = session.io_binding()?;
    binding.bind_input(&input.name, &input_value)?;
    binding.bind_output_to_device(&output.name, &host)?;

    let t = Instant::now();
    binding.run(None)?; // the first run includes cuDNN algorithm search and memory planning
    let first = t.elapsed();
    let mut times = Vec::with_capacity(args.iterations);
    for _ in 0..args.iterations {
        let t = Instant::now();
        binding.run(None)?;
        times.push(t.elapsed());
    }
    let outputs = binding.outputs()?;
    let logits = outputs[0].view::<f32>()?;
    let logits = logits.into_dimensionality::<onnxrt::ndarray::Ix2>()?;

    for (i, (name, _)) in pictures.iter().enumerate().take(batch_size) {
        println!("{name}:");
        for (class, p) in top_k(&softmax(logits.row(i).as_slice().ok_or("non-contiguous output")?), 5) {
            let label = labels.get(class).map_or_else(|| format!("class {class}"), Clone::clone);
            println!("  {p:>7.4}  {label}");
        }
    }
    times.sort();
    let median = times.get(times.len() / 2).copied().unwrap_or(first);
    let mean = times.iter().sum::<Duration>().checked_div(times.len() as u32).unwrap_or(first);
    println!(
        "timing ({}, batch {}): preprocess {:.2} ms, first run {:.2} ms, then {} runs: median {:.3} ms, mean {:.3} ms, {:.1} images/s",
        if on_gpu { format!("CUDA device {}", args.device) } else { "CPU".into() },
        batch_size,
        ms(preprocess_time),
        ms(first),
        times.len(),
        ms(median),
        ms(mean),
        batch_size as f64 / median.as_secs_f64().max(1e-9),
    );
    Ok(())
}

/// A CUDA session when the `cuda` feature is on and the GPU works; otherwise the CPU, saying why.
fn make_session(args: &Args) -> Result<(Session, bool), onnxrt::Error> {
    let builder = || {
        let builder = Session::builder();
        // Unused without `cuda`.
        let _ = args.device;
        builder
    };
    let load = |b: SessionBuilder| match &args.model {
        Some(path) => b.commit_from_file(path),
        None => b.commit_from_memory(DEFAULT_MODEL),
    };
    #[cfg(feature = "cuda")]
    {
        let cuda = onnxrt::providers::cuda::CudaOptions::new().device_id(args.device);
        match load(builder().cuda(cuda).strict_gpu(args.strict)) {
            Ok(session) => return Ok((session, true)),
            Err(error) if args.strict => return Err(error),
            Err(error) => eprintln!("no GPU: {error}\nrunning on the CPU instead (pass --strict to fail)"),
        }
    }
    #[cfg(not(feature = "cuda"))]
    {
        if args.strict {
            return Err(onnxrt::Error::InvalidArgument {
                what: "--strict".into(),
                why: "this example was built without the `cuda` feature; rebuild with --features cuda".into(),
            });
        }
        eprintln!("note: built without the `cuda` feature, running on the CPU (cargo run --features cuda --example resnet_cuda)");
    }
    load(builder()).map(|s| (s, false))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
