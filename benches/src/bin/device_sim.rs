//! How the dynamic batcher forms batches in front of one serial device, without a GPU: the model is
//! one Rust custom operator that takes a process-wide lock (the device: one batch at a time) and
//! sleeps `fixed + per_row × rows` (the device's service time; sleeping uses no CPU, so two cores
//! are enough). N caller threads each send a one-sample request, wait for the answer, wait
//! `turnaround` (the answer's and the next request's trip over HTTP), and send again.
//!
//! The device's own best rate is `max_batch / service(max_batch)`; the figure of merit is the
//! share of it the batcher keeps, with the mean batch size beside it. Defaults mimic ResNet-50 on
//! the H200 of issue 29 (1.5 ms + 0.128 ms per row: 1.6 ms at 1 row, 17.9 ms at 128).
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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
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

struct SerialDevice {
    fixed: Duration,
    per_row: Duration,
}

struct SerialDeviceKernel {
    fixed: Duration,
    per_row: Duration,
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
        Ok(SerialDeviceKernel { fixed: self.fixed, per_row: self.per_row })
    }
}

impl Kernel for SerialDeviceKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        let rows = x.shape()[0];
        let sums: Vec<f32> = x.outer_iter().map(|row| row.sum()).collect();
        {
            let _device = DEVICE.lock().unwrap_or_else(|e| e.into_inner());
            std::thread::sleep(self.fixed + self.per_row * rows as u32);
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
    fixed: Duration,
    per_row: Duration,
    max_batch: usize,
    pad_sizes: Vec<usize>,
    holds: Vec<u8>,
}

fn list<T: std::str::FromStr>(text: &str) -> Result<Vec<T>, String> {
    text.split(',').map(|x| x.trim().parse().map_err(|_| format!("not a number: {x}"))).collect()
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        callers: 256,
        requests: 20_000,
        workers: vec![1, 2, 3],
        delays: vec![0, 2000],
        turnaround: Duration::from_micros(2000),
        fixed: Duration::from_micros(1500),
        per_row: Duration::from_micros(128),
        max_batch: 128,
        pad_sizes: vec![1, 2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128],
        holds: vec![0, 1],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let micros = |v: &str| v.parse().map(Duration::from_micros).map_err(|_| format!("{flag}: {v}"));
        match flag.as_str() {
            "--callers" => args.callers = value.parse().map_err(|_| format!("--callers: {value}"))?,
            "--requests" => args.requests = value.parse().map_err(|_| format!("--requests: {value}"))?,
            "--workers" => args.workers = list(&value)?,
            "--max-delay-us" => args.delays = list(&value)?,
            "--turnaround-us" => args.turnaround = micros(&value)?,
            "--fixed-us" => args.fixed = micros(&value)?,
            "--per-row-us" => args.per_row = micros(&value)?,
            "--max-batch" => args.max_batch = value.parse().map_err(|_| format!("--max-batch: {value}"))?,
            "--pad-sizes" => args.pad_sizes = list(&value)?,
            "--hold" => args.holds = list(&value)?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(args)
}

/// One configuration: `callers` threads until `requests` answers; returns (answers/s, mean batch).
fn simulate(args: &Args, workers: usize, delay_us: u64, hold: bool) -> Result<(f64, f64), String> {
    let domain = OpDomain::new(DOMAIN).with(SerialDevice { fixed: args.fixed, per_row: args.per_row });
    let session = Session::builder().custom_ops(domain).commit_from_memory(&model()).map_err(|e| e.to_string())?;
    let batcher = Batcher::builder(session)
        .max_batch(args.max_batch)
        .max_delay(Duration::from_micros(delay_us))
        .queue_capacity(args.callers * 2)
        .workers(workers)
        .pad_to_sizes(&args.pad_sizes)
        .hold_while_busy(hold)
        .build()
        .map_err(|e| e.to_string())?;
    let answered = AtomicU64::new(0);
    let start = Barrier::new(args.callers + 1);
    let elapsed = std::thread::scope(|scope| {
        for caller in 0..args.callers {
            let (batcher, answered, start) = (&batcher, &answered, &start);
            scope.spawn(move || {
                let input = Arc::new(Value::from_vec(&[1, SAMPLE as i64], vec![caller as f32; SAMPLE]).expect("input"));
                start.wait();
                // Each caller's row sums to its own number × SAMPLE: an answer from another row fails.
                let expected = (caller * SAMPLE) as f32;
                while answered.load(Ordering::Relaxed) < args.requests {
                    let outputs = batcher.run([("x", Arc::clone(&input))]).expect("a batched run");
                    let got = outputs[0].view::<f32>().expect("f32 output")[[0, 0]];
                    assert_eq!(got, expected, "caller {caller} got another caller's row");
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
    let stats = batcher.stats();
    let mean_batch = stats.completed as f64 / stats.batches.max(1) as f64;
    Ok((answered.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(), mean_batch))
}

fn main() {
    let args = match parse() {
        Ok(args) => args,
        Err(why) => {
            eprintln!("device_sim: {why}");
            std::process::exit(2);
        }
    };
    let best = args.max_batch as f64 / (args.fixed + args.per_row * args.max_batch as u32).as_secs_f64();
    println!(
        "device: {:?} + {:?}/row, best {best:.0} rows/s at {} rows; {} callers, turnaround {:?}, {} requests per run",
        args.fixed, args.per_row, args.max_batch, args.callers, args.turnaround, args.requests
    );
    for &workers in &args.workers {
        for &delay in &args.delays {
            for &hold in &args.holds {
                match simulate(&args, workers, delay, hold != 0) {
                    Ok((rate, mean_batch)) => println!(
                        "SIM workers={workers} max_delay_us={delay} hold={hold} throughput={rate:.0} share={:.1}% mean_batch={mean_batch:.1}",
                        100.0 * rate / best
                    ),
                    Err(why) => {
                        eprintln!("device_sim: workers {workers}, delay {delay} us, hold {hold}: {why}");
                        std::process::exit(1);
                    }
                }
            }
        }
    }
}
