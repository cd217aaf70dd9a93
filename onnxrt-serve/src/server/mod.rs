//! An inference server speaking the Open Inference Protocol (KServe v2, as Triton and MLServer
//! do) over REST and gRPC, for any ONNX model, from a model repository.
//!
//! ```text
//! serve --model-repository models/                         # every models/NAME/model.onnx
//! serve --model resnet50.onnx --labels synset.txt          # one model, with the picture step
//! serve                                                    # the embedded color classifier
//! curl -s localhost:8000/v2/models/resnet50                # its inputs and outputs
//! curl -s -d '{"inputs":[…]}' localhost:8000/v2/models/resnet50/infer
//! ```
//! REST on `--listen` (default 127.0.0.1:8000), gRPC (`inference.GRPCInferenceService`) on
//! `--grpc-listen` (default 127.0.0.1:8001; `off` for none). Each model is loaded and warmed up
//! before the server listens. `/v1/models/{name}/infer` takes pictures for models with the
//! picture step; `/health` and `/metrics` (Prometheus text) too. Logs go to stderr (`RUST_LOG`,
//! default `info`: an access line per request). SIGTERM or Ctrl-C: not ready, and after
//! `--drain-delay-ms` (default 0) stop accepting, finish the requests in flight, exit 0.

//!
//! This module is the whole server as a library: `src/bin/serve/main.rs` parses [`Args`] and
//! calls [`run`]; tests and other programs may do the same.

// Handlers return the answer to send as their error (an axum Response): boxing it would only add
// an allocation to every refusal.
#![allow(clippy::result_large_err)]

mod access;
mod app;
mod batch_metrics;
mod grpc;
mod grpc_limit;
mod legacy;
mod listener;
mod metrics;
mod rest;
mod rest_shared_memory;
mod triton;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::embedded;
use crate::imagenet::DecodeLimits;
use crate::oip::grpc::grpc_inference_service_server::GrpcInferenceServiceServer;
use crate::repository::{ControlMode, Defaults, ModelConfig, Repository, WarmedUp};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::sync::watch;

use app::{App, RequestLimits};
use listener::{CappedIncoming, ConnectionLimit, RestSettings};

/// Serve ONNX models over the Open Inference Protocol (REST and gRPC).
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "serve")]
pub struct Args {
    /// A folder of models, each as NAME/model.onnx (or NAME/VERSION/model.onnx) with an optional
    /// NAME/config.json
    #[arg(long, value_name = "DIR", conflicts_with_all = ["model", "labels", "name"])]
    model_repository: Option<PathBuf>,
    /// One model, served with the picture step (default: the embedded color classifier)
    #[arg(long, value_name = "M.onnx")]
    model: Option<PathBuf>,
    /// One label per line, in the model's class order (the picture step's answers)
    #[arg(long, value_name = "L.txt")]
    labels: Option<PathBuf>,
    /// The name of --model in the paths (default: the file's stem, or `colors`)
    #[arg(long)]
    name: Option<String>,
    /// Where models run unless their config says: cpu or cuda
    #[arg(long, default_value = "cpu", value_parser = ["cpu", "cuda"])]
    provider: String,
    /// The CUDA device
    #[arg(long, value_name = "N", default_value_t = 0)]
    device: i32,
    /// Where TensorRT models cache engines and layer timings, each version in DIR/MODEL/VERSION
    /// (default: $XDG_CACHE_HOME/onnxrt-serve/tensorrt or ~/.cache/onnxrt-serve/tensorrt); keep
    /// it writable by the server's user alone: TensorRT runs the engines it finds there
    #[arg(long, value_name = "DIR")]
    engine_cache_root: Option<PathBuf>,
    /// REST address (port 0: any free port; the address is printed)
    #[arg(long, default_value = "127.0.0.1:8000")]
    listen: SocketAddr,
    /// gRPC address, or `off`
    #[arg(long, value_name = "ADDR|off", default_value = "127.0.0.1:8001")]
    grpc_listen: String,
    /// Batch requests of one sample (default: on for CUDA, off on the CPU)
    #[arg(long, conflicts_with = "no_batching")]
    batching: bool,
    /// Run each request on its own
    #[arg(long)]
    no_batching: bool,
    /// Most requests in one batched run
    #[arg(long, value_name = "N", default_value_t = 32)]
    max_batch: usize,
    /// How long the first request of a batch waits for others, in microseconds
    #[arg(long, value_name = "US", default_value_t = 0)]
    max_delay_us: u64,
    /// Requests waiting per model at most (more: 503)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    queue: usize,
    /// Pad each batch to the next power of two (default: true for batched CUDA models without
    /// --pad-sizes, false otherwise; `--pad-batches` alone is `true`)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pad_batches: Option<bool>,
    /// One session per padded batch size (default: true for batched CUDA models without CUDA
    /// graphs, false otherwise; `--session-per-size` alone is `true`)
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    session_per_size: Option<bool>,
    /// Pad each batch to the smallest of these row counts that holds it, e.g. 1,2,4,8,16,32
    #[arg(long, value_name = "N,..", value_delimiter = ',')]
    pad_sizes: Vec<usize>,
    /// Threads that copy the samples of a batch into its input buffer
    #[arg(long, value_name = "N", default_value_t = 1)]
    gather_threads: usize,
    /// Batcher worker threads per model (default: 2 on CUDA, 1 on the CPU)
    #[arg(long, value_name = "N")]
    batch_workers: Option<usize>,
    /// After the delay, a batcher worker holds its batch open while another worker's batch runs,
    /// and closes it when that run ends (default: true on CUDA, false on the CPU)
    #[arg(long, value_name = "BOOL")]
    hold_while_busy: Option<bool>,
    /// CUDA, batched, with --pad-batches or --pad-sizes: run each padded size as a CUDA graph
    /// (captured before the model is ready; a size whose graph cannot be made runs without one, and the log says why)
    /// (default: true where all of that holds)
    #[arg(long, value_name = "BOOL")]
    cuda_graphs: Option<bool>,
    /// Unbatched runs at once per model (default: one per CPU)
    #[arg(long, value_name = "N")]
    concurrency: Option<usize>,
    /// Threads of each run's operators (ONNX Runtime's intra-op threads)
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// A request not answered within this many milliseconds gets 504 (a request may ask for less)
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    timeout_ms: u64,
    /// A connection's request head must arrive within this many milliseconds of the connection
    /// opening or its previous answer (closes idle keep-alive connections and slow senders)
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    header_timeout_ms: u64,
    /// A request's whole body must arrive within this many milliseconds of its head (408)
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    body_timeout_ms: u64,
    /// After SIGTERM, keep serving this many milliseconds while /v2/health/ready answers 503, then
    /// close the listeners and finish the requests in flight (behind a load balancer: longer than
    /// its health-check interval times the failures it needs, so it stops sending first; a second
    /// signal ends the wait)
    #[arg(long, value_name = "MS", default_value_t = 0)]
    drain_delay_ms: u64,
    /// Open connections at most, REST and gRPC together (more are refused)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,
    /// Open connections at most from one client address (default: half of --max-connections;
    /// behind a load balancer, give --max-connections)
    #[arg(long, value_name = "N")]
    max_connections_per_peer: Option<usize>,
    /// A gRPC connection with no bytes either way for this many milliseconds is closed (at
    /// least --timeout-ms plus a second, so a running request is never cut); its first bytes
    /// must come within --header-timeout-ms
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    grpc_idle_timeout_ms: u64,
    /// Answer Triton's CUDA shared-memory extension: clients register their device memory by
    /// CUDA IPC handle and the server maps it. Off by default: a crafted handle can map another
    /// process's memory or leave the server's CUDA context in a sticky error (docs/serving.md)
    #[arg(long, value_name = "BOOL", default_value_t = false, action = clap::ArgAction::Set)]
    cuda_shared_memory: bool,
    /// Warm models up at start (false: none is; a model's config.json may say otherwise)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    warmup: bool,
    /// How models change while serving (Triton's names): none (those of the folder at start),
    /// explicit (POST /v2/repository/models/NAME/load and /unload; --load-model at start), poll
    /// (the folder scanned every --repository-poll-secs)
    #[arg(long, value_name = "MODE", default_value = "none", value_parser = ["none", "poll", "explicit"], requires = "model_repository")]
    model_control_mode: String,
    /// With --model-control-mode explicit: a model to load at start (again for more; `*`: all)
    #[arg(long, value_name = "NAME")]
    load_model: Vec<String>,
    /// With --model-control-mode poll: seconds between scans of the repository (default 15)
    #[arg(long, value_name = "S")]
    repository_poll_secs: Option<u64>,
    /// Exit 1 if any model cannot be loaded or warmed up (default: such a model is listed as
    /// unavailable, with the reason, and the others serve)
    #[arg(long)]
    strict_start: bool,
    /// Run each model's requests in worker processes of their own, so that a runtime crash
    /// costs one request (500), not the server (default: on where the loaded runtime is known
    /// to crash on valid shapes, ONNX Runtime 1.16, batched models included; off for models
    /// whose batches run on the server's sessions: device inputs, CUDA graphs, a session per
    /// batch size)
    #[arg(long, value_name = "BOOL")]
    isolation: Option<bool>,
    /// Largest request body in bytes (larger: 413; gRPC messages too)
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    max_body_bytes: usize,
    /// Widest or tallest picture accepted, in pixels
    #[arg(long, value_name = "PX", default_value_t = 4096)]
    max_picture_side: u32,
    /// Async worker threads (default: one per CPU)
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
}

/// Runs the server of `args` until SIGTERM or Ctrl-C (logs to stderr, see [`init_logs`]); an
/// error is what stopped it from starting.
pub fn run(args: Args) -> Result<(), String> {
    check_command_line(&args)?;
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(workers) = args.workers {
        runtime.worker_threads(workers.max(1));
    }
    runtime.enable_all().build().map_err(|e| e.to_string()).and_then(|rt| rt.block_on(serve(args)))
}

/// The command line's counts, checked before anything starts: each is made up front (threads,
/// queue places, counters per batch size), and a bad one would otherwise leave every model
/// unavailable with a reason in config.json's terms rather than the flag's.
fn check_command_line(args: &Args) -> Result<(), String> {
    use crate::repository::config::{
        CONCURRENCY_MOST, INTRA_OP_THREADS_MOST, MAX_BATCH_MOST, QUEUE_MOST, THREADS_MOST,
    };
    let counts = [
        ("--max-batch", Some(args.max_batch), 1, MAX_BATCH_MOST),
        ("--queue", Some(args.queue), 1, QUEUE_MOST),
        ("--gather-threads", Some(args.gather_threads), 1, THREADS_MOST),
        ("--batch-workers", args.batch_workers, 1, THREADS_MOST),
        ("--concurrency", args.concurrency, 1, CONCURRENCY_MOST),
        // 0 is ONNX Runtime's own choice (one per core).
        ("--threads", args.threads, 0, INTRA_OP_THREADS_MOST),
        ("--workers", args.workers, 1, WORKERS_MOST),
        ("--max-connections", Some(args.max_connections), 1, CONNECTIONS_MOST),
        ("--max-connections-per-peer", args.max_connections_per_peer, 1, CONNECTIONS_MOST),
    ];
    for (flag, value, least, most) in counts {
        if let Some(value) = value.filter(|v| !(least..=most).contains(v)) {
            return Err(format!("{flag} {value}: it must be from {least} to {most}"));
        }
    }
    if let Some(size) = args.pad_sizes.iter().find(|&&n| n == 0 || n > args.max_batch) {
        return Err(format!("--pad-sizes has {size}: each size must be from 1 to --max-batch ({})", args.max_batch));
    }
    if !args.pad_sizes.is_empty() && args.pad_batches == Some(true) {
        return Err("--pad-sizes and --pad-batches both say how to pad: give one".into());
    }
    Ok(())
}

/// The most async worker threads (`--workers`; each is made at start).
const WORKERS_MOST: usize = 1024;
/// The most open connections (`--max-connections`): far above any descriptor limit.
const CONNECTIONS_MOST: usize = 1 << 20;

/// Logs to stderr, filtered by `RUST_LOG` (default: `info`).
pub fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(false).init();
}

/// The command line's serving settings, under every model's own config.
fn defaults(args: &Args) -> Defaults {
    Defaults {
        batching: match (args.batching, args.no_batching) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
        max_batch: Some(args.max_batch),
        max_delay_us: Some(args.max_delay_us),
        queue: Some(args.queue),
        pad_sizes: (!args.pad_sizes.is_empty()).then(|| args.pad_sizes.clone()),
        pad_to_power_of_two: args.pad_batches,
        session_per_batch_size: args.session_per_size,
        gather_threads: Some(args.gather_threads),
        batch_workers: args.batch_workers,
        hold_while_busy: args.hold_while_busy,
        cuda_graphs: args.cuda_graphs,
        concurrency: args.concurrency,
        provider: Some(args.provider.clone()),
        device: Some(args.device),
        engine_cache_root: args.engine_cache_root.clone(),
        threads: args.threads,
        warmup: (!args.warmup).then_some(crate::repository::config::Warmup::Switch(false)),
        isolation: args.isolation,
        ..Defaults::default()
    }
}

/// The repository: the folder given, or the one model of `--model`, or the embedded one (both
/// with the picture step).
fn repository(args: &Args) -> Result<Repository, String> {
    let defaults = defaults(args);
    if let Some(root) = &args.model_repository {
        let mode = control_mode(args);
        if mode != ControlMode::Explicit && !args.load_model.is_empty() {
            return Err(format!(
                "--load-model needs --model-control-mode explicit (the server runs with {}: it loads every model \
                 of the repository at start)",
                args.model_control_mode
            ));
        }
        if mode != ControlMode::Poll && args.repository_poll_secs.is_some() {
            tracing::warn!(
                mode = %args.model_control_mode,
                "--repository-poll-secs is ignored: the repository is polled only with --model-control-mode poll"
            );
        }
        return Repository::open(root, &defaults, args.strict_start, mode, &args.load_model).map_err(|e| e.to_string());
    }
    let picture_step = ModelConfig { preprocess: Some("imagenet".into()), ..ModelConfig::default() };
    let mut repository = Repository::default();
    match &args.model {
        Some(path) => {
            let name = args.name.clone().unwrap_or_else(|| {
                path.file_stem().map_or_else(|| "model".into(), |s| s.to_string_lossy().into_owned())
            });
            let folder = path.parent().map(PathBuf::from).unwrap_or_default();
            // Labels given on the command line are relative to the working folder, not the model's.
            let labels = match &args.labels {
                Some(labels) => Some(std::path::absolute(labels).map_err(|e| e.to_string())?.display().to_string()),
                None => None,
            };
            let config = ModelConfig { labels, ..picture_step };
            repository.add_file(&name, "1", path, &folder, config, &defaults).map_err(|e| e.to_string())?;
        }
        None => {
            let labels = embedded::LABELS.lines().map(str::to_owned).collect();
            let name = args.name.clone().unwrap_or_else(|| "colors".into());
            repository.add_bytes(&name, embedded::MODEL, picture_step, &defaults, labels).map_err(|e| e.to_string())?;
        }
    }
    Ok(repository)
}

fn control_mode(args: &Args) -> ControlMode {
    match args.model_control_mode.as_str() {
        "poll" => ControlMode::Poll,
        "explicit" => ControlMode::Explicit,
        _ => ControlMode::None,
    }
}

/// Poll mode: scans the repository every `every` until the server stops.
async fn poll_repository(app: Arc<App>, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        if app.draining.load(Ordering::Relaxed) {
            return;
        }
        let app = Arc::clone(&app);
        let _ = tokio::task::spawn_blocking(move || app.repository.poll()).await;
    }
}

async fn serve(args: Args) -> Result<(), String> {
    log_runtime();
    let repository = repository(&args)?;
    // Warm-up before listening: a client that finds the port finds every model ready (or
    // marked unavailable, with the reason).
    let warm = tokio::task::block_in_place(|| repository.warm_up(args.strict_start)).map_err(|e| e.to_string())?;
    for model in &repository.models() {
        let s = &model.settings;
        let mode = if model.batcher().is_some() {
            let isolated = if model.workers().is_some() { ", isolated: each batch in a worker process" } else { "" };
            let sizes = s.padded_sizes();
            let padded = if sizes.is_empty() { String::new() } else { format!(", padded to {sizes:?}") };
            let runs_on = match (s.cuda_graphs, s.session_per_batch_size) {
                (true, true) => ", each size on its CUDA graph (else its own session)",
                (true, false) => ", each size on its CUDA graph",
                (false, true) => ", each size on its own session",
                (false, false) => "",
            };
            format!("batched: max {} per run, max delay {} us{padded}{runs_on}{isolated}", s.max_batch, s.max_delay_us)
        } else if model.workers().is_some() {
            format!("isolated: {} worker processes at most", s.concurrency)
        } else {
            format!("unbatched: {} runs at once", s.concurrency)
        };
        let (name, version, path) = (&model.name, &model.version, model.path.display());
        match warm.iter().find(|(n, _)| n == name).map(|(_, outcome)| outcome) {
            Some(Ok(WarmedUp::Ran(took))) => {
                tracing::info!(model = %name, %version, %path, provider = %s.provider, %mode, warm_up_s = took.as_secs_f64(), "model ready")
            }
            Some(Ok(WarmedUp::Skipped(why))) => {
                tracing::info!(model = %name, %version, %path, provider = %s.provider, %mode, warm_up = %why, "model ready (not warmed up)")
            }
            Some(Err(why)) => {
                tracing::error!(model = %name, %version, %path, cause = %why, "model not ready: its warm-up failed; it is listed as unavailable (--strict-start makes this an error)")
            }
            None => {}
        }
        if model.workers().is_none() && runtime_crashes() {
            let why = if model.settings.isolation == Some(false) {
                "isolation is off for it (\"isolation\": false or --isolation false)"
            } else {
                "isolation cannot run batches on device inputs, CUDA graphs or a session per batch size"
            };
            tracing::warn!(model = %name, %mode, "this model runs in the server's process on a runtime known to crash on some valid shapes: one such request ends the server ({why})");
        }
    }
    let limits = RequestLimits {
        max_body_bytes: args.max_body_bytes,
        body_timeout: Duration::from_millis(args.body_timeout_ms),
        request_timeout: Duration::from_millis(args.timeout_ms),
    };
    let max_connections = args.max_connections.max(1);
    let per_peer = args.max_connections_per_peer.unwrap_or(max_connections / 2).clamp(1, max_connections);
    let connections = Arc::new(ConnectionLimit::new(max_connections, per_peer));
    let decode_limits = DecodeLimits { max_side: args.max_picture_side, ..DecodeLimits::default() };
    let mut app = App::new(repository, limits, decode_limits, Arc::clone(&connections));
    app.regions = crate::shared_memory::Regions::new(args.cuda_shared_memory);
    if args.cuda_shared_memory && !app.regions.cuda_available() {
        tracing::warn!(
            "--cuda-shared-memory is on, but this process cannot use CUDA (no libcudart or no device): CUDA regions will be refused and the extension is not listed"
        );
    }
    let app = Arc::new(app);

    // Watched from before the port opens: a SIGTERM sent as soon as the server answers (before
    // the wait below begins, on a loaded machine) ends it cleanly, not by the default action
    // (a CI run of 2026-12-07 saw connections reset that way).
    let mut stop = StopSignals::watch();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let grpc_listener = match args.grpc_listen.as_str() {
        "off" => None,
        text => {
            let at: SocketAddr = text.parse().map_err(|e| format!("--grpc-listen `{text}`: {e}"))?;
            Some(tokio::net::TcpListener::bind(at).await.map_err(|e| format!("cannot listen on {at} (gRPC): {e}"))?)
        }
    };
    let served = app.repository.models();
    let names: Vec<&str> = served.iter().map(|m| m.name.as_str()).collect();
    let grpc_address = match &grpc_listener {
        Some(listener) => Some(listener.local_addr().map_err(|e| e.to_string())?),
        None => None,
    };
    // Tests and scripts read these lines to find the ports (and may close the pipe after the
    // line they need: a failed write is no reason to stop).
    let mut stdout = std::io::stdout().lock();
    let mut providers: Vec<&str> = served.iter().map(|m| m.settings.provider.as_str()).collect();
    providers.dedup();
    let _ = writeln!(stdout, "listening on http://{address} (models {names:?} on {})", providers.join(", "));
    if let Some(at) = grpc_address {
        let _ = writeln!(stdout, "grpc listening on {at}");
    }
    let _ = stdout.flush();
    drop(stdout);
    // Holding them would keep an unloaded or replaced model alive.
    drop(served);
    tracing::info!(rest = %address, grpc = ?grpc_address, "listening");

    let (stop_sender, stop_receiver) = watch::channel(false);
    let stopped = |mut receiver: watch::Receiver<bool>| async move {
        let _ = receiver.wait_for(|stop| *stop).await;
    };
    let router = Router::new()
        .merge(rest::routes())
        .merge(legacy::routes())
        .route("/metrics", get(metrics))
        .fallback(not_found)
        // The edge (access::edge) reads every body within --max-body-bytes: no second limit.
        .layer(axum::extract::DefaultBodyLimit::disable())
        .layer(axum::middleware::from_fn_with_state(Arc::clone(&app), access::edge))
        .with_state(Arc::clone(&app));
    let rest = tokio::spawn(listener::serve_rest(
        listener,
        router,
        Arc::clone(&connections),
        RestSettings { header_timeout: Duration::from_millis(args.header_timeout_ms) },
        stopped(stop_receiver.clone()),
    ));
    let grpc = grpc_listener.map(|listener| {
        let service = GrpcInferenceServiceServer::new(grpc::Service { app: Arc::clone(&app) })
            .max_decoding_message_size(args.max_body_bytes)
            .max_encoding_message_size(usize::MAX);
        let service = grpc_limit::MessageLimit::new(service, Arc::clone(&app));
        // Idle connections end on a silence timer (listener::Capped), so no keep-alive pings:
        // their answers would keep an idle connection busy for ever.
        let idle = Duration::from_millis(args.grpc_idle_timeout_ms.max(args.timeout_ms.saturating_add(1000)));
        let timeouts = listener::GrpcTimeouts { first_bytes: Duration::from_millis(args.header_timeout_ms), idle };
        let incoming = CappedIncoming::new(listener, Arc::clone(&connections), timeouts);
        let shutdown = stopped(stop_receiver.clone());
        tokio::spawn(
            tonic::transport::Server::builder().add_service(service).serve_with_incoming_shutdown(incoming, shutdown),
        )
    });

    let poll = (app.repository.control_mode() == ControlMode::Poll).then(|| {
        tokio::spawn(poll_repository(
            Arc::clone(&app),
            Duration::from_secs(args.repository_poll_secs.unwrap_or(15).max(1)),
        ))
    });
    stop.next().await;
    if let Some(poll) = poll {
        poll.abort();
    }
    app.draining.store(true, Ordering::Relaxed);
    // Not ready, still listening: a balancer's health check sees the 503 and stops sending before
    // the listeners close (closed at once, its requests already on the way would be refused).
    if args.drain_delay_ms > 0 {
        tracing::info!(drain_delay_ms = args.drain_delay_ms, "stop signal: not ready, serving on for the drain delay");
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.drain_delay_ms)) => {}
            () = stop.next() => tracing::info!("second stop signal: the drain delay cut short"),
        }
    }
    tracing::info!("stop signal: no new connections, finishing the requests in flight");
    let _ = stop_sender.send(true);
    let _ = rest.await;
    if let Some(grpc) = grpc {
        match grpc.await {
            Ok(Err(error)) => tracing::warn!(%error, "the gRPC server ended with an error"),
            Err(error) => tracing::warn!(%error, "the gRPC server's task ended"),
            Ok(Ok(())) => {}
        }
    }
    app.repository.shutdown();
    tracing::info!("stopped cleanly");
    eprintln!("serve: stopped cleanly");
    Ok(())
}

/// Which runtime was loaded; on one known to crash on valid shapes, the runtime to move to.
fn log_runtime() {
    match onnxrt::runtime_info() {
        Ok(info) if crate::isolation::crashes_on_valid_shapes(&info.version) => tracing::warn!(
            version = %info.version,
            library = %info.library.display(),
            "ONNX Runtime {} is known to crash (SIGFPE) on some shapes models declare valid: models run in worker \
             processes (isolation; a batched model's batches too, unless they run on device inputs or CUDA graphs). The newest runtime this workspace pins runs \
             them: build with ONNXRT_DIST={} (docs/serving.md)",
            info.version,
            crate::isolation::NEWEST_PINNED_RUNTIME
        ),
        Ok(info) => tracing::info!(version = %info.version, library = %info.library.display(), "ONNX Runtime loaded"),
        Err(error) => tracing::error!(%error, "ONNX Runtime could not be loaded"),
    }
}

fn runtime_crashes() -> bool {
    onnxrt::runtime_info().is_ok_and(|info| crate::isolation::crashes_on_valid_shapes(&info.version))
}

async fn metrics(State(app): State<Arc<App>>) -> impl IntoResponse {
    let mut text = String::new();
    metrics::render_all(&app, &mut text);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    access::error_response(
        axum::http::StatusCode::NOT_FOUND,
        format!(
            "no route {}: the protocol's routes start with /v2 (GET /v2/models/NAME lists a model's tensors)",
            uri.path()
        ),
    )
}

/// SIGTERM (what orchestrators send) and Ctrl-C (SIGINT), each watched from `watch` on.
struct StopSignals {
    term: Option<tokio::signal::unix::Signal>,
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn watch() -> StopSignals {
        use tokio::signal::unix::{signal, SignalKind};
        let watch = |kind: SignalKind, name: &str| match signal(kind) {
            Ok(stream) => Some(stream),
            Err(error) => {
                tracing::warn!(%error, "cannot watch {name}");
                None
            }
        };
        StopSignals {
            term: watch(SignalKind::terminate(), "SIGTERM"),
            interrupt: watch(SignalKind::interrupt(), "SIGINT"),
        }
    }

    /// The next SIGTERM or SIGINT (one sent since the last is not lost).
    async fn next(&mut self) {
        async fn one(stream: &mut Option<tokio::signal::unix::Signal>) {
            match stream {
                Some(stream) => drop(stream.recv().await),
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = one(&mut self.term) => {}
            () = one(&mut self.interrupt) => {}
        }
    }
}
