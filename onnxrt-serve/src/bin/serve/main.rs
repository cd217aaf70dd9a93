//! An HTTP inference server: the production template (axum on tokio).
//!
//! ```text
//! cargo run --release -p onnxrt-serve --bin serve                          # embedded model, CPU
//! cargo run --release -p onnxrt-serve --features cuda --bin serve -- \
//!     --model resnet50.onnx --labels synset.txt --provider cuda --port 8080
//! curl -s --data-binary @cat.jpg -H 'content-type: image/jpeg' localhost:8080/v1/models/resnet50/infer
//! ```
//! Requests: `POST /v1/models/{name}/infer` with a JPEG or PNG (decoded within size limits,
//! resized and cropped to the model's 224×224, ImageNet mean/std) or a raw tensor
//! (`application/octet-stream`, shape in `X-Tensor-Shape`, little-endian f32; see
//! `onnxrt_serve::tensor_body`); answers top-k JSON (`?top_k=N`, `?logits=true` adds the raw
//! logits). `GET /health`, `GET /metrics` (Prometheus text). SIGTERM or Ctrl-C: stop accepting,
//! finish the requests in flight, exit 0.
//!
//! Requests are batched by the dynamic batcher (`--max-batch`, `--max-delay-us`); `--no-batching`
//! runs each on its own through `run_async`, the baseline.

mod backend;
mod metrics;
mod routes;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use onnxrt::Session;
use onnxrt_serve::batch::Batcher;
use onnxrt_serve::embedded;
use onnxrt_serve::imagenet::DecodeLimits;
use tokio::sync::Semaphore;

use backend::{Backend, ModelContract};
use routes::App;

/// Serve an image classifier over HTTP (default: the embedded color classifier on the CPU).
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "serve")]
struct Args {
    /// The model (default: the embedded color classifier)
    #[arg(long, value_name = "M.onnx")]
    model: Option<PathBuf>,
    /// One label per line, in the model's class order
    #[arg(long, value_name = "L.txt")]
    labels: Option<PathBuf>,
    /// The name in /v1/models/{name}/infer (default: the model file's stem, or `colors`)
    #[arg(long)]
    name: Option<String>,
    /// Where the model runs: cpu or cuda
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "cuda"])]
    provider: String,
    /// The CUDA device
    #[arg(long, value_name = "N", default_value_t = 0)]
    device: i32,
    /// Address to listen on (port 0: any free port; the address is printed)
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Run each request on its own (run_async), without the batcher
    #[arg(long)]
    no_batching: bool,
    /// Most requests in one batched run
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_batch: usize,
    /// How long the first request of a batch waits for others, in microseconds
    #[arg(long, value_name = "US", default_value_t = 2000)]
    max_delay_us: u64,
    /// Requests waiting for a batch at most (more: 503)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    queue: usize,
    /// Pad each batch to the next power of two (on a GPU: only log2(max-batch)+1 batch shapes
    /// for cuDNN to tune, instead of every size from 1 to max-batch; see
    /// BatcherBuilder::pad_to_power_of_two)
    #[arg(long)]
    pad_batches: bool,
    /// One session per batch size (for CUDA: a change of batch size rebuilds every convolution's
    /// plan in ORT's CUDA provider); give it with --pad-batches. Every size is warmed up at start.
    #[arg(long)]
    session_per_size: bool,
    /// Pad each batch to the smallest of these row counts that holds it (max-batch added), e.g.
    /// 1,2,4,8,16,32,64,96: finer steps than --pad-batches, less padding
    #[arg(long, value_name = "N,..", value_delimiter = ',')]
    pad_sizes: Vec<usize>,
    /// Threads that copy the samples of a batch into its input buffer
    #[arg(long, value_name = "N", default_value_t = 1)]
    gather_threads: usize,
    /// Batcher worker threads (2 on a GPU overlaps one batch's gathering with the other's run)
    #[arg(long, value_name = "N", default_value_t = 1)]
    batch_workers: usize,
    /// A request not answered within this many milliseconds gets 504
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// Largest request body in bytes (larger: 413)
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    max_body_bytes: usize,
    /// Widest or tallest picture accepted, in pixels
    #[arg(long, value_name = "PX", default_value_t = 4096)]
    max_picture_side: u32,
    /// Async worker threads (default: one per CPU)
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.workers {
        runtime.worker_threads(workers.max(1));
    }
    let result = runtime.enable_all().build().map_err(|e| e.to_string()).and_then(|rt| rt.block_on(serve(args)));
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

async fn serve(args: Args) -> Result<(), String> {
    let session = make_session(&args).map_err(|e| e.to_string())?;
    let contract = ModelContract::of(&session)?;
    let labels: Vec<String> = match &args.labels {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .lines()
            .map(str::to_owned)
            .collect(),
        None if args.model.is_none() => embedded::LABELS.lines().map(str::to_owned).collect(),
        None => Vec::new(),
    };
    let model_name = args.name.clone().unwrap_or_else(|| match &args.model {
        Some(path) => path.file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned()),
        None => "colors".into(),
    });
    let (backend, mode) = if args.no_batching {
        (Backend::Unbatched(Arc::new(session)), "unbatched (run_async per request)".to_owned())
    } else {
        let mut builder = Batcher::builder(session)
            .max_batch(args.max_batch)
            .max_delay(Duration::from_micros(args.max_delay_us))
            .queue_capacity(args.queue)
            .workers(args.batch_workers)
            .pad_to_power_of_two(args.pad_batches)
            .gather_threads(args.gather_threads);
        if !args.pad_sizes.is_empty() {
            builder = builder.pad_to_sizes(&args.pad_sizes);
        }
        if args.session_per_size {
            let settings = args.clone();
            builder = builder.session_per_batch_size(move || {
                make_session(&settings).map_err(|e| onnxrt::Error::InvalidArgument {
                    what: "a session for another batch size".into(),
                    why: e.to_string(),
                })
            });
        }
        let batcher = builder.build().map_err(|e| e.to_string())?;
        // Sessions made and per-shape tuning done before the first request (Triton's warm-up).
        if args.pad_batches || args.session_per_size || !args.pad_sizes.is_empty() {
            let started = std::time::Instant::now();
            let sizes = batcher.warm_up().map_err(|e| format!("warm-up: {e}"))?;
            eprintln!(
                "serve: warmed up batch sizes {sizes:?} on {} session(s) in {:.1} s",
                batcher.session_count(),
                started.elapsed().as_secs_f64()
            );
        }
        let padded = match (args.pad_batches, args.pad_sizes.is_empty()) {
            (_, false) => format!(", padded to {:?}", args.pad_sizes),
            (true, true) => ", padded to powers of two".to_owned(),
            (false, true) => String::new(),
        };
        let padded = if args.session_per_size { format!("{padded}, a session per size") } else { padded };
        let mode = format!("batched: max {} per run, max delay {} us{padded}", args.max_batch, args.max_delay_us);
        (Backend::Batched { batcher, timeout: Duration::from_millis(args.timeout_ms) }, mode)
    };
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let app = Arc::new(App {
        model_name,
        labels,
        contract,
        backend,
        metrics: metrics::HttpMetrics::default(),
        decode_limits: DecodeLimits { max_side: args.max_picture_side, ..DecodeLimits::default() },
        decode_slots: Semaphore::new(cores * 2),
        draining: AtomicBool::new(false),
    });

    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    // Tests and scripts read this line to find the port.
    println!("listening on http://{address} (model `{}`, {}, {mode})", app.model_name, args.provider);
    let router = routes::router(Arc::clone(&app), args.max_body_bytes);
    let draining = Arc::clone(&app);
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            draining.draining.store(true, Ordering::Relaxed);
            eprintln!("serve: stop signal: no new connections, finishing the requests in flight");
        })
        .await
        .map_err(|e| e.to_string())?;
    app.backend.shutdown();
    eprintln!("serve: stopped cleanly");
    Ok(())
}

/// SIGTERM (what orchestrators send) or Ctrl-C.
async fn stop_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(error) => {
            eprintln!("serve: cannot watch SIGTERM ({error}); Ctrl-C only");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The session: on the CPU, or on a CUDA device (strict: every node
/// on the GPU, or an error).
fn make_session(args: &Args) -> Result<Session, Box<dyn std::error::Error>> {
    // run_async needs a thread pool (one worker per core); the batcher runs on its own thread.
    let builder = if args.no_batching { Session::builder().async_threads() } else { Session::builder() };
    let builder = match args.provider.as_str() {
        "cuda" => with_cuda(builder, args.device)?,
        _ => builder,
    };
    Ok(match &args.model {
        Some(path) => builder.commit_from_file(path)?,
        None => builder.commit_from_memory(embedded::MODEL)?,
    })
}

#[cfg(feature = "cuda")]
fn with_cuda(
    builder: onnxrt::SessionBuilder,
    device: i32,
) -> Result<onnxrt::SessionBuilder, Box<dyn std::error::Error>> {
    Ok(builder.cuda(onnxrt::providers::cuda::CudaOptions::new().device_id(device)).strict_gpu(true))
}

#[cfg(not(feature = "cuda"))]
fn with_cuda(_: onnxrt::SessionBuilder, _: i32) -> Result<onnxrt::SessionBuilder, Box<dyn std::error::Error>> {
    Err("--provider cuda needs the `cuda` feature: cargo build --release -p onnxrt-serve --features cuda --bin serve"
        .into())
}
