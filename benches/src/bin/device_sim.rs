//! How the dynamic batcher forms batches in front of one serial device, without a GPU: the model is
//! one Rust custom operator that takes a process-wide lock (the device: one batch at a time) and
//! sleeps `fixed + per_row × rows` (the device's service time; sleeping uses no CPU, so two cores
//! are enough). N caller threads each send a one-sample request, wait for the answer, wait
//! `turnaround` (the answer's and the next request's trip over HTTP), and send again.
//!
//! The device's own best rate is `max_batch / service(max_batch)` (or of `--reference-batch`);
//! the figure of merit is the share of it the batcher keeps, with the mean batch size beside it. Defaults mimic ResNet-50 on
//! an H200 (1.5 ms + 0.128 ms per row: 1.6 ms at 1 row, 17.9 ms at 128).
//!
//! ```sh
//! cargo run --release -p onnxrt-benches --bin device_sim -- [--callers 256] [--requests 20000] \
//!     [--workers 1,2,3] [--max-delay-us 0,2000] [--turnaround-us 2000] [--fixed-us 1500] [--per-row-us 128] \
//!     [--max-batch 128] [--pad-sizes 1,2,4,8,16,32,48,64,80,96,112,128] [--hold 0,1]
//! ```
//!
//! `--hold 1` builds the batcher with `hold_while_busy` (a worker keeps its batch open while
//! another worker's batch runs). Bounded by a request count, not by time. Prints one `SIM` line
//! per (workers, delay, hold).
//!
//! `--open-loads 0.5,0.8` adds open-loop runs: requests leave on a fixed schedule at that share of
//! the device's best rate (as loadgen's open loop does), each latency measured from its scheduled
//! time, and an `OPEN` line per (workers, delay, hold, load) gives p50/p99/max beside the service
//! time of a full batch (the serving goal: p99 at most 3 × that at 0.8). `--jitter-us J` adds a
//! uniform 0..J to every device run, for a device whose run times vary, and `--stall-us S
//! --stall-every N` adds S to every Nth run (a rare long run: a tail the uniform jitter lacks); `--curve-ms
//! 1:1.79,32:5.39,128:18.06` replaces the straight line by measured points.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Session, Value};
use onnxrt_onnx_proto::tensor_shape_proto::{dimension, Dimension};
use onnxrt_onnx_proto::{
    type_proto, GraphProto, Message, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use onnxrt_serve::batch::Batcher;

/// Floats per sample (the content does not matter: the operator only counts rows).
const SAMPLE: usize = 16;
const DOMAIN: &str = "ai.onnxrt.bench";

/// The one device every session shares: a batch holds it while it is "on the device".
static DEVICE: Mutex<()> = Mutex::new(());

#[derive(Clone)]
struct SerialDevice {
    fixed: Duration,
    per_row: Duration,
    /// Measured (rows, time) points, rows ascending; when given, they replace `fixed + per_row ×
    /// rows`: straight lines between points, the last line beyond them.
    curve: Arc<[(usize, Duration)]>,
    jitter: Duration,
    /// Added to every `stall_every`th run (0: never).
    stall: Duration,
    stall_every: u64,
}

/// Device runs so far, for `--stall-every`.
static RUNS: AtomicU64 = AtomicU64::new(0);

impl SerialDevice {
    /// The extra time of this run: its jitter, and a stall if it is the Nth.
    fn extra(&self) -> Duration {
        let run = RUNS.fetch_add(1, Ordering::Relaxed) + 1;
        let stalled = self.stall_every > 0 && run.is_multiple_of(self.stall_every);
        jitter_sample(self.jitter) + if stalled { self.stall } else { Duration::ZERO }
    }

    /// The device's time for a batch of `rows` (without jitter).
    fn service(&self, rows: usize) -> Duration {
        let curve = &self.curve[..];
        match curve {
            [] => self.fixed + self.per_row * rows as u32,
            [(_, only)] => *only,
            _ => {
                let segment = curve.windows(2).find(|w| rows <= w[1].0).unwrap_or(&curve[curve.len() - 2..]);
                let ((r0, t0), (r1, t1)) = (segment[0], segment[1]);
                let slope = (t1.as_secs_f64() - t0.as_secs_f64()) / (r1 - r0) as f64;
                Duration::from_secs_f64((t0.as_secs_f64() + slope * (rows as f64 - r0 as f64)).max(0.0))
            }
        }
    }
}

struct SerialDeviceKernel {
    device: SerialDevice,
}

/// Seed of the device's run-time jitter (xorshift64; the sequence need not be reproducible).
static JITTER_STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

/// A uniform share of `jitter`.
fn jitter_sample(jitter: Duration) -> Duration {
    if jitter.is_zero() {
        return Duration::ZERO;
    }
    let mut x = JITTER_STATE.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    JITTER_STATE.store(x, Ordering::Relaxed);
    jitter.mul_f64((x >> 11) as f64 / (1u64 << 53) as f64)
}

impl CustomOp for SerialDevice {
    type Kernel = SerialDeviceKernel;
    fn name(&self) -> &str {
        "SerialDevice"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _: &KernelInfo<'_>) -> OpResult<SerialDeviceKernel> {
        Ok(SerialDeviceKernel { device: self.clone() })
    }
}

impl Kernel for SerialDeviceKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        let rows = x.shape()[0];
        let sums: Vec<f32> = x.outer_iter().map(|row| row.sum()).collect();
        {
            let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
            let device = &self.device;
            std::thread::sleep(device.service(rows) + device.extra());
        }
        let mut y = ctx.output::<f32>(0, &[rows, 1])?;
        for (out, sum) in y.iter_mut().zip(sums) {
            *out = sum;
        }
        Ok(())
    }
}

/// `x` f32 [n, SAMPLE] -> SerialDevice -> `y` f32 [n, 1].
fn model() -> Vec<u8> {
    let info = |name: &str, last: i64| {
        let dims = vec![
            Dimension { value: Some(dimension::Value::DimParam("n".into())), denotation: None },
            Dimension { value: Some(dimension::Value::DimValue(last)), denotation: None },
        ];
        let tensor = type_proto::Tensor { elem_type: Some(1), shape: Some(TensorShapeProto { dim: dims }) };
        let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
        ValueInfoProto { name: Some(name.into()), r#type: Some(ty), doc_string: None }
    };
    let node = NodeProto {
        input: vec!["x".into()],
        output: vec!["y".into()],
        op_type: Some("SerialDevice".into()),
        domain: Some(DOMAIN.into()),
        ..Default::default()
    };
    let graph = GraphProto {
        node: vec![node],
        name: Some("device_sim".into()),
        input: vec![info("x", SAMPLE as i64)],
        output: vec![info("y", 1)],
        ..Default::default()
    };
    let opset = |domain: &str, version| OperatorSetIdProto { domain: Some(domain.into()), version: Some(version) };
    ModelProto {
        ir_version: Some(8),
        producer_name: Some("device_sim".into()),
        graph: Some(graph),
        opset_import: vec![opset("", 17), opset(DOMAIN, 1)],
        ..Default::default()
    }
    .encode_to_vec()
}

struct Args {
    callers: usize,
    requests: u64,
    workers: Vec<usize>,
    delays: Vec<u64>,
    turnaround: Duration,
    device: SerialDevice,
    max_batch: usize,
    pad_sizes: Vec<usize>,
    holds: Vec<u8>,
    open_loads: Vec<f64>,
    open_threads: usize,
    /// The batch size whose rate and service time the shares and ratios are of (default
    /// `max_batch`; the serving goals are of batch 128 also when `max_batch` is larger).
    reference_batch: Option<usize>,
}

impl Args {
    fn reference_batch(&self) -> usize {
        self.reference_batch.unwrap_or(self.max_batch)
    }

    /// The reference batch's time on the device (without jitter).
    fn full_batch(&self) -> Duration {
        self.device.service(self.reference_batch())
    }

    /// The device's rate with reference batches back to back.
    fn best_rate(&self) -> f64 {
        self.reference_batch() as f64 / self.full_batch().as_secs_f64()
    }
}

fn list<T: std::str::FromStr>(text: &str) -> Result<Vec<T>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    text.split(',').map(|x| x.trim().parse().map_err(|_| format!("not a number: {x}"))).collect()
}

/// `rows:ms,rows:ms,…` with rows ascending, e.g. `1:1.79,8:2.04,32:5.39,64:9.65,128:18.06`.
fn curve(text: &str) -> Result<Vec<(usize, Duration)>, String> {
    let mut points = Vec::new();
    for point in text.split(',') {
        let bad = || format!("--curve-ms: {point} is not rows:ms");
        let (rows, ms) = point.trim().split_once(':').ok_or_else(bad)?;
        let rows: usize = rows.parse().map_err(|_| bad())?;
        let ms: f64 = ms.parse().map_err(|_| bad())?;
        if !(ms.is_finite() && ms >= 0.0) || points.last().is_some_and(|&(last, _)| rows <= last) {
            return Err(format!("--curve-ms: {point}: rows must rise and times be finite and not negative"));
        }
        points.push((rows, Duration::from_secs_f64(ms / 1e3)));
    }
    Ok(points)
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        callers: 256,
        requests: 20_000,
        workers: vec![1, 2, 3],
        delays: vec![0, 2000],
        turnaround: Duration::from_micros(2000),
        device: SerialDevice {
            fixed: Duration::from_micros(1500),
            per_row: Duration::from_micros(128),
            curve: Arc::new([]),
            jitter: Duration::ZERO,
            stall: Duration::ZERO,
            stall_every: 0,
        },
        max_batch: 128,
        pad_sizes: vec![1, 2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128],
        holds: vec![0, 1],
        open_loads: Vec::new(),
        open_threads: 1024,
        reference_batch: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let micros = |v: &str| v.parse().map(Duration::from_micros).map_err(|_| format!("{flag}: {v}"));
        let count = |v: &str| v.parse().map_err(|_| format!("{flag}: {v}"));
        match flag.as_str() {
            "--callers" => args.callers = count(&value)?,
            "--requests" => args.requests = value.parse().map_err(|_| format!("--requests: {value}"))?,
            "--workers" => args.workers = list(&value)?,
            "--max-delay-us" => args.delays = list(&value)?,
            "--turnaround-us" => args.turnaround = micros(&value)?,
            "--fixed-us" => args.device.fixed = micros(&value)?,
            "--per-row-us" => args.device.per_row = micros(&value)?,
            "--jitter-us" => args.device.jitter = micros(&value)?,
            "--stall-us" => args.device.stall = micros(&value)?,
            "--stall-every" => {
                args.device.stall_every = value.parse().map_err(|_| format!("--stall-every: {value}"))?
            }
            "--curve-ms" => args.device.curve = curve(&value)?.into(),
            "--max-batch" => args.max_batch = count(&value)?,
            "--pad-sizes" => args.pad_sizes = list(&value)?,
            "--hold" => args.holds = list(&value)?,
            "--open-loads" => args.open_loads = list(&value)?,
            "--open-threads" => args.open_threads = count(&value)?,
            "--reference-batch" => args.reference_batch = Some(count(&value)?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.open_loads.iter().any(|&load| !(load > 0.0 && load <= 2.0)) {
        return Err(format!("--open-loads: each a share of the best rate in (0, 2], got {:?}", args.open_loads));
    }
    Ok(args)
}

fn batcher(args: &Args, workers: usize, delay_us: u64, hold: bool) -> Result<Batcher, String> {
    let domain = OpDomain::new(DOMAIN).with(args.device.clone());
    let session = Session::builder().custom_ops(domain).commit_from_memory(&model()).map_err(|e| e.to_string())?;
    Batcher::builder(session)
        .max_batch(args.max_batch)
        .max_delay(Duration::from_micros(delay_us))
        .queue_capacity(args.callers.max(args.open_threads) * 2)
        .workers(workers)
        .pad_to_sizes(&args.pad_sizes)
        .hold_while_busy(hold)
        .build()
        .map_err(|e| e.to_string())
}

/// One sample whose row sums to `caller × SAMPLE`, and that sum: an answer from another row fails.
fn sample(caller: usize) -> (Arc<Value<'static>>, f32) {
    let input = Arc::new(Value::from_vec(&[1, SAMPLE as i64], vec![caller as f32; SAMPLE]).expect("input"));
    (input, (caller * SAMPLE) as f32)
}

fn run_checked(batcher: &Batcher, input: &Arc<Value<'static>>, expected: f32, who: usize) {
    let outputs = batcher.run([("x", Arc::clone(input))]).expect("a batched run");
    let got = outputs[0].view::<f32>().expect("f32 output")[[0, 0]];
    assert_eq!(got, expected, "request {who} got another request's row");
}

/// Closed loop: `callers` threads until `requests` answers; returns answers/s.
fn closed(args: &Args, batcher: &Batcher) -> f64 {
    let answered = AtomicU64::new(0);
    let start = Barrier::new(args.callers + 1);
    let elapsed = std::thread::scope(|scope| {
        for caller in 0..args.callers {
            let (answered, start) = (&answered, &start);
            scope.spawn(move || {
                let (input, expected) = sample(caller);
                start.wait();
                while answered.load(Ordering::Relaxed) < args.requests {
                    run_checked(batcher, &input, expected, caller);
                    answered.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(args.turnaround);
                }
            });
        }
        start.wait();
        let began = Instant::now();
        while answered.load(Ordering::Relaxed) < args.requests {
            std::thread::sleep(Duration::from_millis(5));
        }
        began.elapsed()
    });
    answered.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64()
}

/// What an open-loop run measured.
struct OpenRun {
    offered: f64,
    throughput: f64,
    /// Sorted latencies of the measured requests, from each one's scheduled time.
    latencies: Vec<Duration>,
}

impl OpenRun {
    fn quantile(&self, q: f64) -> Duration {
        let last = self.latencies.len().saturating_sub(1);
        self.latencies.get(((last as f64) * q).round() as usize).copied().unwrap_or_default()
    }
}

/// Open loop: request i leaves at start + i / rate (one of `open_threads` threads takes it; a
/// late thread's wait counts), `requests` measured after a tenth as many unmeasured ones.
fn open(args: &Args, batcher: &Batcher, load: f64) -> OpenRun {
    let rate = load * args.best_rate();
    let interval = Duration::from_secs_f64(1.0 / rate);
    let warmup = args.requests / 10;
    let total = warmup + args.requests;
    let next = AtomicU64::new(0);
    let start = Barrier::new(args.open_threads + 1);
    let latencies = Mutex::new(Vec::with_capacity(args.requests as usize));
    // Set once every thread is up (the barrier publishes it), so spawning is not counted as lateness.
    let schedule_start = OnceLock::new();
    std::thread::scope(|scope| {
        for thread in 0..args.open_threads {
            let (next, start, latencies, schedule_start) = (&next, &start, &latencies, &schedule_start);
            scope.spawn(move || {
                let (input, expected) = sample(thread);
                let mut mine = Vec::new();
                start.wait();
                let began: Instant = *schedule_start.get().expect("set before the barrier");
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let scheduled = began + interval.mul_f64(i as f64);
                    std::thread::sleep(scheduled.saturating_duration_since(Instant::now()));
                    run_checked(batcher, &input, expected, thread);
                    if i >= warmup {
                        mine.push(scheduled.elapsed());
                    }
                }
                latencies.lock().unwrap_or_else(|e| e.into_inner()).extend(mine);
            });
        }
        schedule_start.set(Instant::now()).expect("set once");
        start.wait();
    });
    let began = *schedule_start.get().expect("set above");
    let measured_from = began + interval.mul_f64(warmup as f64);
    let seconds = measured_from.elapsed().as_secs_f64();
    let mut latencies = latencies.into_inner().unwrap_or_else(|e| e.into_inner());
    latencies.sort_unstable();
    OpenRun { offered: rate, throughput: latencies.len() as f64 / seconds, latencies }
}

fn mean_batch(batcher: &Batcher) -> f64 {
    let stats = batcher.stats();
    stats.completed as f64 / stats.batches.max(1) as f64
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("device_sim: {why}");
            std::process::exit(2);
        }
    };
    let best = args.best_rate();
    let full = args.full_batch();
    let service = if args.device.curve.is_empty() {
        format!("{:?} + {:?}/row", args.device.fixed, args.device.per_row)
    } else {
        format!("curve {:?}", args.device.curve.iter().map(|&(rows, t)| (rows, ms(t))).collect::<Vec<_>>())
    };
    println!(
        "device: {service} (+ up to {:?} jitter, {:?} every {} runs), best {best:.0} rows/s at {} rows ({:.2} ms a batch), max_batch {}; {} callers, turnaround {:?}, {} requests per run",
        args.device.jitter,
        args.device.stall,
        args.device.stall_every,
        args.reference_batch(),
        ms(full),
        args.max_batch,
        args.callers,
        args.turnaround,
        args.requests
    );
    for &workers in &args.workers {
        for &delay in &args.delays {
            for &hold in &args.holds {
                let configured = match batcher(&args, workers, delay, hold != 0) {
                    Ok(batcher) => batcher,
                    Err(why) => {
                        eprintln!("device_sim: workers {workers}, delay {delay} us, hold {hold}: {why}");
                        std::process::exit(1);
                    }
                };
                let rate = closed(&args, &configured);
                println!(
                    "SIM workers={workers} max_delay_us={delay} hold={hold} throughput={rate:.0} share={:.1}% mean_batch={:.1}",
                    100.0 * rate / best,
                    mean_batch(&configured)
                );
                for &load in &args.open_loads {
                    let before = configured.stats();
                    let run = open(&args, &configured, load);
                    let after = configured.stats();
                    let batches = (after.batches - before.batches).max(1);
                    println!(
                        "OPEN workers={workers} max_delay_us={delay} hold={hold} load={load:.2} offered={:.0} throughput={:.0} p50_ms={:.2} p90_ms={:.2} p99_ms={:.2} max_ms={:.2} p99_over_reference_batch={:.2} mean_batch={:.1}",
                        run.offered,
                        run.throughput,
                        ms(run.quantile(0.5)),
                        ms(run.quantile(0.9)),
                        ms(run.quantile(0.99)),
                        ms(run.quantile(1.0)),
                        run.quantile(0.99).as_secs_f64() / full.as_secs_f64(),
                        (after.completed - before.completed) as f64 / batches as f64
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(curve: &[(usize, u64)]) -> SerialDevice {
        SerialDevice {
            fixed: Duration::from_micros(100),
            per_row: Duration::from_micros(10),
            curve: curve.iter().map(|&(rows, us)| (rows, Duration::from_micros(us))).collect(),
            jitter: Duration::ZERO,
            stall: Duration::ZERO,
            stall_every: 0,
        }
    }

    fn us(d: Duration) -> u128 {
        (d.as_nanos() + 500) / 1000
    }

    #[test]
    fn service_follows_the_line_or_the_curve() {
        assert_eq!(us(device(&[]).service(8)), 180);
        assert_eq!(us(device(&[(4, 700)]).service(64)), 700);
        let measured = device(&[(1, 100), (5, 500), (9, 1300)]);
        assert_eq!(us(measured.service(3)), 300);
        assert_eq!(us(measured.service(7)), 900);
        // Past the last point, the last segment's slope (200 µs a row); before the first, the first's.
        assert_eq!(us(measured.service(10)), 1500);
        assert_eq!(us(measured.service(0)), 0);
    }

    #[test]
    fn curve_text_must_rise() {
        assert_eq!(
            curve("1:0.5,8:2").expect("a rising curve"),
            vec![(1, Duration::from_micros(500)), (8, Duration::from_millis(2))]
        );
        assert!(curve("8:2,8:3").is_err());
        assert!(curve("1:-1").is_err());
        assert!(curve("one:1").is_err());
    }
}
