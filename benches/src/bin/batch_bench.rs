//! The dynamic batcher in-process against running each request on its own, side by side in one
//! process: N caller threads each send one-sample requests back to back for a fixed
//! time; for each N both variants run, alternating order per round. Prints requests/s and
//! latency percentiles per variant, and the batcher's mean batch size.
//!
//! ```sh
//! cargo run --release -p onnxrt-benches --bin batch_bench -- \
//!     [--model tests/data/models/convnet.onnx] [--concurrency 1,8,64] [--seconds 3] [--rounds 2] \
//!     [--max-batch 32] [--max-delay-us 0] [--workers 1] [--pad] [--pad-sizes 1,2,4,..] [--gather-threads 1] [--session-per-size] [--provider cpu|cuda]
//! ```
//!
//! `--provider cuda` needs `--features cuda` (the GPU machine); `--pad` pads each batch to the next
//! power of two (`BatcherBuilder::pad_to_power_of_two`), and the batcher first runs every padded
//! size once so cuDNN's per-shape tuning is not measured; `--session-per-size` runs each batch
//! size on a session of its own (`BatcherBuilder::session_per_batch_size`). After each concurrency the batcher's
//! run time per batch (gather, run, scatter) is printed.
//!
//! *alone*: every caller calls `Session::run` with its own `[1, ...]` tensor (ORT's Run is
//! thread-safe, so N runs overlap on the shared session). *batcher*: every caller calls
//! `Batcher::run` with its own sample (an `Arc<Value>`, no copy on submission); the batcher owns a
//! clone of the same session. Inputs are made once per caller; outputs are dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use onnxrt::{Dim, Session, Value};
use onnxrt_serve::batch::Batcher;

struct Args {
    model: String,
    concurrency: Vec<usize>,
    seconds: f64,
    rounds: usize,
    max_batch: usize,
    max_delay: Duration,
    workers: usize,
    pad: bool,
    session_per_size: bool,
    pad_sizes: Vec<usize>,
    gather_threads: usize,
    provider: String,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        model: concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/convnet.onnx").into(),
        concurrency: vec![1, 8, 64],
        seconds: 3.0,
        rounds: 2,
        max_batch: 32,
        max_delay: Duration::ZERO,
        workers: 1,
        pad: false,
        session_per_size: false,
        pad_sizes: Vec::new(),
        gather_threads: 1,
        provider: "cpu".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--pad" {
            args.pad = true;
            continue;
        }
        if flag == "--session-per-size" {
            args.session_per_size = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<f64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--model" => args.model = value,
            "--concurrency" => {
                args.concurrency =
                    value.split(',').map(|v| v.parse().map_err(|e| format!("{v}: {e}"))).collect::<Result<_, _>>()?
            }
            "--seconds" => args.seconds = number(&value)?,
            "--rounds" => args.rounds = number(&value)? as usize,
            "--max-batch" => args.max_batch = number(&value)? as usize,
            "--max-delay-us" => args.max_delay = Duration::from_micros(number(&value)? as u64),
            "--workers" => args.workers = number(&value)? as usize,
            "--provider" => args.provider = value,
            "--gather-threads" => args.gather_threads = number(&value)? as usize,
            "--pad-sizes" => {
                args.pad_sizes = value
                    .split(',')
                    .map(|n| n.parse().map_err(|e| format!("--pad-sizes {value}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

/// Latencies of one variant at one concurrency, over all rounds.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Tally {
    fn percentile(&mut self, q: f64) -> f64 {
        self.latencies.sort_unstable();
        let index = ((self.latencies.len() as f64 * q).ceil() as usize).clamp(1, self.latencies.len()) - 1;
        self.latencies[index].as_secs_f64() * 1e3
    }
}

/// Runs `callers` threads, each calling `request(caller)` back to back for `seconds`.
fn drive(callers: usize, seconds: f64, request: Arc<dyn Fn(usize) + Send + Sync>, tally: &mut Tally) {
    let stop = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(callers + 1));
    let threads: Vec<_> = (0..callers)
        .map(|caller| {
            let (stop, start, request) = (Arc::clone(&stop), Arc::clone(&start), Arc::clone(&request));
            std::thread::spawn(move || {
                let mut latencies = Vec::new();
                start.wait();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    request(caller);
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        tally.latencies.extend(thread.join().expect("caller thread"));
    }
    tally.elapsed += began.elapsed();
}

/// Session settings for `provider` (`cpu`, or `cuda` with the `cuda` feature).
fn builder(provider: &str) -> Result<onnxrt::SessionBuilder, String> {
    match provider {
        "cpu" => Ok(Session::builder()),
        #[cfg(feature = "cuda")]
        "cuda" => Ok(Session::builder().cuda(onnxrt::providers::cuda::CudaOptions::new()).strict_gpu(true)),
        other => Err(format!(
            "--provider {other}: cpu{}",
            if cfg!(feature = "cuda") { " or cuda" } else { " (build with --features cuda for cuda)" }
        )),
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse()?;
    let session = builder(&args.provider)?.commit_from_file(&args.model)?;
    let input = session.inputs().first().ok_or("the model has no inputs")?.clone();
    let sample: Vec<i64> = input.shape[1..]
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => Ok(*n),
            _ => Err(format!("input `{}` has a dynamic dimension after the batch axis", input.name)),
        })
        .collect::<Result<_, _>>()?;
    let len: usize = sample.iter().product::<i64>() as usize;
    let max_callers = args.concurrency.iter().copied().max().unwrap_or(1);
    let data = |caller: usize| (0..len).map(|i| ((i * 7 + caller * 13) % 255) as f32 / 255.0).collect::<Vec<f32>>();
    let mut batch1 = vec![1];
    batch1.extend_from_slice(&sample);
    let alone_inputs: Arc<Vec<Value<'static>>> =
        Arc::new((0..max_callers).map(|c| Value::from_vec(&batch1, data(c))).collect::<Result<_, _>>()?);
    let batch_inputs: Arc<Vec<Arc<Value<'static>>>> =
        Arc::new((0..max_callers).map(|c| Value::from_vec(&sample, data(c)).map(Arc::new)).collect::<Result<_, _>>()?);
    let batcher = Batcher::builder(session.clone())
        .max_batch(args.max_batch)
        .max_delay(args.max_delay)
        .queue_capacity(max_callers.max(1) * 2)
        .workers(args.workers)
        .pad_to_power_of_two(args.pad);
    let batcher = if args.pad_sizes.is_empty() { batcher } else { batcher.pad_to_sizes(&args.pad_sizes) };
    let batcher = if args.session_per_size {
        let (provider, model) = (args.provider.clone(), args.model.clone());
        batcher.session_per_batch_size(move || {
            builder(&provider)
                .map_err(|why| onnxrt::Error::InvalidArgument { what: "--provider".into(), why })?
                .commit_from_file(&model)
        })
    } else {
        batcher
    };
    let batcher = Arc::new(batcher.build()?);
    if args.pad || args.session_per_size || !args.pad_sizes.is_empty() {
        // Every size a batch can run with, once, so per-shape tuning (cuDNN) is not measured.
        let sizes = batcher.warm_up()?;
        println!("warmed up batch sizes {sizes:?} on {} session(s)", batcher.session_count());
    }
    println!(
        "model {} (input `{}` {:?} per request), runtime {}, {} cores; max_batch {}, max_delay {:?}, workers {}; {} rounds x {} s",
        args.model,
        input.name,
        sample,
        onnxrt::runtime_info()?.version,
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        args.max_batch,
        args.max_delay,
        args.workers,
        args.rounds,
        args.seconds
    );
    println!("| callers | variant | requests/s | p50 ms | p90 ms | p99 ms | mean batch | batcher/alone |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let name = input.name.clone();
    for &callers in &args.concurrency {
        let mut alone = Tally::default();
        let mut batched = Tally::default();
        let before = batcher.stats();
        for round in 0..args.rounds {
            let run_alone = {
                let (session, inputs, name) = (session.clone(), Arc::clone(&alone_inputs), name.clone());
                Arc::new(move |c: usize| {
                    session.run([(name.as_str(), &inputs[c])]).expect("run");
                }) as Arc<dyn Fn(usize) + Send + Sync>
            };
            let run_batched = {
                let (batcher, inputs, name) = (Arc::clone(&batcher), Arc::clone(&batch_inputs), name.clone());
                Arc::new(move |c: usize| {
                    batcher.run([(name.as_str(), Arc::clone(&inputs[c]))]).expect("batched run");
                }) as Arc<dyn Fn(usize) + Send + Sync>
            };
            if round % 2 == 0 {
                drive(callers, args.seconds, run_alone, &mut alone);
                drive(callers, args.seconds, run_batched, &mut batched);
            } else {
                drive(callers, args.seconds, run_batched, &mut batched);
                drive(callers, args.seconds, run_alone, &mut alone);
            }
        }
        let after = batcher.stats();
        let batches = after.batches - before.batches;
        let mean_ms = |a: &onnxrt_serve::batch::HistogramSnapshot, b: &onnxrt_serve::batch::HistogramSnapshot| {
            (a.sum - b.sum).as_secs_f64() * 1e3 / (a.count - b.count).max(1) as f64
        };
        println!(
            "  batcher at {callers} callers: {batches} batches, mean per batch: whole {:.3} ms = gather {:.3} ms + model {:.3} ms + rest; mean queue time {:.3} ms",
            mean_ms(&after.run_time, &before.run_time),
            mean_ms(&after.gather_time, &before.gather_time),
            mean_ms(&after.model_time, &before.model_time),
            mean_ms(&after.queue_time, &before.queue_time),
        );
        let mean_batch = (after.completed - before.completed) as f64 / (after.batches - before.batches).max(1) as f64;
        let rate = |t: &Tally| t.latencies.len() as f64 / t.elapsed.as_secs_f64();
        let (alone_rate, batched_rate) = (rate(&alone), rate(&batched));
        for (label, tally, batch, ratio) in [
            ("alone", &mut alone, "1".to_string(), String::new()),
            ("batcher", &mut batched, format!("{mean_batch:.1}"), format!("{:.2}x", batched_rate / alone_rate)),
        ] {
            let requests = rate(tally);
            println!(
                "| {callers} | {label} | {requests:.0} | {:.3} | {:.3} | {:.3} | {batch} | {ratio} |",
                tally.percentile(0.50),
                tally.percentile(0.90),
                tally.percentile(0.99)
            );
        }
    }
    let stats = batcher.stats();
    println!(
        "batcher totals: {} requests in {} batches, errors {:?}, queue time p50 <= {:?}, run time p50 <= {:?}",
        stats.completed,
        stats.batches,
        stats.errors,
        stats.queue_time.quantile_bound(0.5),
        stats.run_time.quantile_bound(0.5)
    );
    Ok(())
}
