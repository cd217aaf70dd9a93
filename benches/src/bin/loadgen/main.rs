//! A load generator for inference servers: `serve` over its private `/v1` protocol, or any server
//! that speaks the Open Inference Protocol's REST side (`--protocol v2`: onnxrt-serve, Triton,
//! MLServer, KServe), so that one client drives them all.
//!
//! ```text
//! # closed loop: N clients, one request in flight each (the maximum throughput)
//! loadgen --addr 127.0.0.1:8080 --model colors --concurrency 64 --seconds 10
//! loadgen --protocol v2 --addr 127.0.0.1:8080 --model cls --shape x=1x3x48x192 --clients 8 --requests 2000
//! # open loop: 200 requests/s on a fixed schedule, latency from the scheduled time
//! loadgen --protocol v2 --addr 127.0.0.1:8080 --model cls --shape x=1x3x48x192 --rate 200 --duration-requests 2000
//! ```
//! With `--protocol v2` the inputs come from `GET /v2/models/{model}`; free axes (-1) take their
//! size from `--shape NAME=DIMS`; values come from `--seed`; bodies are JSON tensors, or the
//! binary-tensor extension with `--binary`. With `/v1` the body is one preprocessed f32 tensor
//! (`--shape 1,3,224,224`) or a picture (`--image`). The last line is
//! `RESULT mode=closed concurrency=N requests=R errors=E seconds=S throughput=T p50_ms=.. p90_ms=.. p99_ms=.. max_ms=..`
//! (open loop: `mode=open rate=R` instead of the concurrency); failures are counted by kind on
//! stderr.
#![forbid(unsafe_code)]

mod closed_loop;
mod error;
mod open_loop;
mod request;
mod synthetic;
mod tally;
mod v1;
mod v2;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use error::LoadgenError;

/// Which protocol the requests speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Protocol {
    /// serve's private `POST /v1/models/{name}/infer` (a raw tensor or a picture)
    V1,
    /// The Open Inference Protocol's REST `POST /v2/models/{name}/infer`
    V2,
}

/// Drive an inference server, closed loop (N clients) or open loop (a fixed rate).
#[derive(Debug, clap::Parser)]
#[command(name = "loadgen")]
struct Args {
    /// The server's address
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// The protocol
    #[arg(long, value_enum, default_value_t = Protocol::V1)]
    protocol: Protocol,
    /// The model's name
    #[arg(long, default_value = "colors")]
    model: String,
    /// Concurrent clients of the closed loop (one request in flight each)
    #[arg(long, visible_alias = "clients", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: u32,
    /// Closed loop: measure for this long (after the warm-up)
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    seconds: f64,
    /// Closed loop: stop after this many requests in all instead of a duration
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Warm-up before measuring, in seconds (requests not counted); the open loop sends
    /// rate × warm-up requests first on the same schedule
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    warmup: f64,
    /// Open loop: send this many requests per second on a fixed schedule
    #[arg(long, value_name = "R", requires = "duration_requests", conflicts_with = "requests")]
    rate: Option<f64>,
    /// Open loop: how many requests to measure
    #[arg(long, value_name = "N", requires = "rate")]
    duration_requests: Option<u64>,
    /// Open loop: the most connections open at once (a request past it waits, and the wait counts)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_connections: usize,
    /// v1: the tensor's shape, `1,3,224,224`. v2: an input's shape, `NAME=1x3x48x192` (repeat per
    /// input), needed for inputs with free axes
    #[arg(long)]
    shape: Vec<String>,
    /// The seed of the input values
    #[arg(long, default_value_t = synthetic::DEFAULT_SEED)]
    seed: u64,
    /// v2: send tensors with the binary-tensor extension (and ask for binary outputs)
    #[arg(long)]
    binary: bool,
    /// v1: send this JPEG or PNG instead of a tensor
    #[arg(long, value_name = "FILE")]
    image: Option<PathBuf>,
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| LoadgenError::Runtime(e.to_string()))
        .and_then(|rt| rt.block_on(drive(args)));
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

async fn drive(args: Args) -> Result<(), LoadgenError> {
    let request = Arc::new(build_request(&args).await?);
    let warmup = Duration::from_secs_f64(args.warmup.max(0.0));
    match (args.rate, args.duration_requests) {
        (Some(rate), Some(requests)) => {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(LoadgenError::Rate(rate));
            }
            let plan = open_loop::Plan {
                rate,
                warmup_requests: (rate * warmup.as_secs_f64()).round() as u64,
                requests,
                max_connections: args.max_connections.max(1),
            };
            let (tally, seconds) = open_loop::run(args.addr, request, &plan).await?;
            tally.report(&format!("mode=open rate={rate:.1}"), seconds);
        }
        _ => {
            let plan = closed_loop::Plan {
                clients: args.concurrency,
                warmup,
                duration: Duration::from_secs_f64(args.seconds.max(0.0)),
                requests: args.requests,
            };
            let (tally, seconds) = closed_loop::run(args.addr, request, &plan).await?;
            tally.report(&format!("mode=closed concurrency={}", args.concurrency), seconds);
        }
    }
    Ok(())
}

async fn build_request(args: &Args) -> Result<request::Request, LoadgenError> {
    match args.protocol {
        Protocol::V1 => {
            if args.binary {
                return Err(LoadgenError::WrongProtocol { option: "--binary", protocol: "v2" });
            }
            if args.shape.len() > 1 {
                return Err(LoadgenError::ShapeArgument {
                    given: args.shape.join(" "),
                    reason: "with --protocol v1 give one shape".into(),
                });
            }
            v1::request(&args.model, args.image.as_deref(), args.shape.first().map(String::as_str), args.seed)
        }
        Protocol::V2 => {
            if args.image.is_some() {
                return Err(LoadgenError::WrongProtocol { option: "--image", protocol: "v1" });
            }
            let inputs = v2::inputs(args.addr, &args.model).await?;
            let given = v2::parse_shape_arguments(&args.shape)?;
            let shapes = v2::resolve_shapes(&inputs, &given)?;
            for (input, shape) in inputs.iter().zip(&shapes) {
                eprintln!("input {} {} {:?}", input.name, input.datatype, shape);
            }
            v2::request(&args.model, &inputs, &shapes, args.seed, args.binary)
        }
    }
}
