//! A closed-loop load generator for `serve`: N clients, each on its own keep-alive connection,
//! send a request, wait for the answer, send the next; for a duration or a count. Prints
//! throughput, p50/p90/p99 latency and errors.
//!
//! ```text
//! loadgen --addr 127.0.0.1:8080 --model colors --concurrency 64 --seconds 10            # tensor
//! loadgen --addr 127.0.0.1:8080 --model resnet50 --concurrency 8 --image cat.jpg --requests 1000
//! ```
//! The default body is a preprocessed tensor (`--shape`, default 1,3,224,224, values from a fixed
//! seed), so the server's cost is the model's, not JPEG decoding. The last line is
//! `RESULT concurrency=N requests=R errors=E seconds=S throughput=T p50_ms=.. p90_ms=.. p99_ms=..`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use onnxrt_serve::http_client::Connection;
use onnxrt_serve::tensor_body;

/// Drive a serve instance with N concurrent clients.
#[derive(Debug, clap::Parser)]
#[command(name = "loadgen")]
struct Args {
    /// The server's address
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// The model name in /v1/models/{name}/infer
    #[arg(long, default_value = "colors")]
    model: String,
    /// Concurrent clients (closed loop: one request in flight each)
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: u32,
    /// Measure for this long (after the warm-up)
    #[arg(long, value_name = "S", default_value_t = 10.0)]
    seconds: f64,
    /// Stop after this many requests in all instead of a duration
    #[arg(long, value_name = "N")]
    requests: Option<u64>,
    /// Warm-up before measuring, in seconds (requests not counted)
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    warmup: f64,
    /// Send this JPEG or PNG instead of a tensor
    #[arg(long, value_name = "FILE")]
    image: Option<PathBuf>,
    /// The tensor's shape
    #[arg(long, default_value = "1,3,224,224")]
    shape: String,
}

/// One request's body and headers, shared by every client.
struct Request {
    path: String,
    content_type: String,
    shape: Option<String>,
    body: Bytes,
}

/// What one client saw while measuring.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| rt.block_on(drive(args)));
    if let Err(error) = result {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}

async fn drive(args: Args) -> Result<(), String> {
    let request = Arc::new(build_request(&args)?);
    let warmup = Duration::from_secs_f64(args.warmup.max(0.0));
    let start = Instant::now();
    let measure_from = start + warmup;
    let measure_until = args.requests.is_none().then(|| measure_from + Duration::from_secs_f64(args.seconds.max(0.0)));
    // With --requests, the clients share the count.
    let remaining = Arc::new(std::sync::atomic::AtomicI64::new(args.requests.map_or(i64::MAX, |n| n as i64)));
    let mut clients = Vec::new();
    for _ in 0..args.concurrency {
        let request = Arc::clone(&request);
        let remaining = Arc::clone(&remaining);
        let address = args.addr;
        clients.push(tokio::spawn(
            async move { client(address, &request, measure_from, measure_until, &remaining).await },
        ));
    }
    let mut tally = Tally::default();
    for handle in clients {
        let one = handle.await.map_err(|e| format!("a client task failed: {e}"))?;
        tally.latencies.extend(one.latencies);
        tally.errors += one.errors;
        if tally.first_error.is_none() {
            tally.first_error = one.first_error;
        }
    }
    let seconds = match measure_until {
        Some(until) => until.saturating_duration_since(measure_from).as_secs_f64(),
        None => measure_from.elapsed().as_secs_f64(),
    };
    report(&args, &mut tally, seconds);
    Ok(())
}

fn build_request(args: &Args) -> Result<Request, String> {
    let path = format!("/v1/models/{}/infer", args.model);
    if let Some(image) = &args.image {
        let body = std::fs::read(image).map_err(|e| format!("{}: {e}", image.display()))?;
        let png = image.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
        let content_type = if png { "image/png" } else { "image/jpeg" }.to_owned();
        return Ok(Request { path, content_type, shape: None, body: body.into() });
    }
    let shape: Vec<usize> = args
        .shape
        .split(',')
        .map(|d| d.trim().parse())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("--shape `{}` is not a comma-separated list", args.shape))?;
    // Values of a preprocessed picture's range, from a fixed seed (a small LCG).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<f32> = (0..shape.iter().product::<usize>())
        .map(|_| {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        })
        .collect();
    let (shape_text, body) = tensor_body::encode(&shape, &data);
    Ok(Request { path, content_type: tensor_body::CONTENT_TYPE.into(), shape: Some(shape_text), body: body.into() })
}

async fn client(
    address: SocketAddr,
    request: &Request,
    measure_from: Instant,
    measure_until: Option<Instant>,
    remaining: &std::sync::atomic::AtomicI64,
) -> Tally {
    let mut tally = Tally::default();
    let mut connection: Option<Connection> = None;
    let mut headers = vec![("content-type", request.content_type.as_str())];
    if let Some(shape) = &request.shape {
        headers.push((tensor_body::SHAPE_HEADER, shape.as_str()));
    }
    loop {
        let now = Instant::now();
        if measure_until.is_some_and(|until| now >= until) {
            return tally;
        }
        let counted = now >= measure_from;
        if counted && remaining.fetch_sub(1, std::sync::atomic::Ordering::Relaxed) <= 0 {
            return tally;
        }
        let sent = Instant::now();
        let outcome = match connection.as_mut() {
            Some(open) => open.send("POST", &request.path, &headers, request.body.clone()).await,
            None => match Connection::open(address).await {
                Ok(open) => connection.insert(open).send("POST", &request.path, &headers, request.body.clone()).await,
                Err(error) => Err(error),
            },
        };
        let took = sent.elapsed();
        let error = match outcome {
            Ok(reply) if reply.status == 200 => None,
            Ok(reply) => Some(format!("HTTP {}: {}", reply.status, reply.text())),
            Err(error) => {
                // A broken connection is reopened for the next request.
                connection = None;
                Some(error.to_string())
            }
        };
        if !counted {
            continue;
        }
        match error {
            None => tally.latencies.push(took),
            Some(message) => {
                tally.errors += 1;
                tally.first_error.get_or_insert(message);
                // Do not spin on a server that refuses connections.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

fn report(args: &Args, tally: &mut Tally, seconds: f64) {
    tally.latencies.sort();
    let quantile = |q: f64| -> f64 {
        if tally.latencies.is_empty() {
            return f64::NAN;
        }
        let index = ((tally.latencies.len() as f64 * q).ceil() as usize).clamp(1, tally.latencies.len()) - 1;
        tally.latencies[index].as_secs_f64() * 1e3
    };
    let ok = tally.latencies.len();
    if let Some(error) = &tally.first_error {
        eprintln!("first error: {error}");
    }
    println!(
        "RESULT concurrency={} requests={ok} errors={} seconds={seconds:.2} throughput={:.1} p50_ms={:.3} p90_ms={:.3} p99_ms={:.3}",
        args.concurrency,
        tally.errors,
        ok as f64 / seconds.max(1e-9),
        quantile(0.50),
        quantile(0.90),
        quantile(0.99),
    );
}
