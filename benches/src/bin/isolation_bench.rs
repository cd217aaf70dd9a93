//! What isolating a model in a worker process costs per request: one model served in this process and the same
//! model served by a worker process (`onnxrt_serve::isolation`), side by side in one run. Each
//! round sends N requests one after another to each variant, the order alternating per round;
//! prints the median and p99 latency of `ServedModel::infer` and the difference.
//!
//! ```sh
//! cargo run --release -p onnxrt-benches --bin isolation_bench -- \
//!     [--model tests/data/models/mlp.onnx] [--input x=1,16[:FILL]]... [--requests 2000] [--rounds 3] [--threads N]
//! ```
//! Inputs not given take their declared shape (free axes 1) filled with 0.5 (`FILL` otherwise).

use std::path::PathBuf;
use std::time::Instant;

use onnxrt::Value;
use onnxrt_serve::oip::tensor;
use onnxrt_serve::repository::model::Phases;
use onnxrt_serve::repository::{Defaults, ModelConfig, Repository, ServedModel};

struct Args {
    model: PathBuf,
    inputs: Vec<(String, Vec<i64>, f64)>,
    requests: usize,
    rounds: usize,
    threads: Option<usize>,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        model: concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx").into(),
        inputs: Vec::new(),
        requests: 2000,
        rounds: 3,
        threads: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--model" => args.model = value()?.into(),
            "--requests" => args.requests = value()?.parse().map_err(|e| format!("--requests: {e}"))?,
            "--rounds" => args.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--threads" => args.threads = Some(value()?.parse().map_err(|e| format!("--threads: {e}"))?),
            "--input" => {
                let text = value()?;
                let (name, rest) = text.split_once('=').ok_or("--input NAME=D1,D2,..[:FILL]")?;
                let (dims, fill) = rest.split_once(':').unwrap_or((rest, "0.5"));
                let shape = dims.split(',').filter(|d| !d.is_empty()).map(str::parse).collect::<Result<_, _>>();
                let shape = shape.map_err(|e| format!("--input {text}: {e}"))?;
                let fill = fill.parse().map_err(|e| format!("--input {text}: {e}"))?;
                args.inputs.push((name.to_owned(), shape, fill));
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(args)
}

fn served(args: &Args, isolation: bool) -> Result<Repository, String> {
    let name = if isolation { "isolated" } else { "in_process" };
    let folder = args.model.parent().map(PathBuf::from).unwrap_or_default();
    let config = ModelConfig {
        isolation: Some(isolation),
        batching: Some(false),
        concurrency: Some(1),
        threads: args.threads,
        warmup: Some(onnxrt_serve::repository::config::Warmup::Switch(false)),
        ..ModelConfig::default()
    };
    let mut repository = Repository::default();
    repository.add_file(name, "1", &args.model, &folder, config, &Defaults::default()).map_err(|e| e.to_string())?;
    repository.warm_up(true).map_err(|e| e.to_string())?;
    Ok(repository)
}

fn inputs_of(args: &Args, model: &ServedModel) -> Result<Vec<(String, Value<'static>)>, String> {
    model
        .inputs
        .iter()
        .map(|input| {
            let given = args.inputs.iter().find(|(name, _, _)| *name == input.name);
            let (shape, fill) = match given {
                Some((_, shape, fill)) => (shape.clone(), *fill),
                None => (input.shape.iter().map(|&d| d.max(1)).collect(), 0.5),
            };
            Ok((input.name.clone(), tensor::filled(&input.name, input.element_type, &shape, fill)?))
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    if let Some(code) = onnxrt_serve::isolation::worker_main_if_asked() {
        std::process::exit(code);
    }
    if let Err(error) = run() {
        eprintln!("isolation_bench: {error}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let args = parse()?;
    let variants = [("in-process", served(&args, false)?), ("isolated", served(&args, true)?)];
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let mut latencies: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..args.rounds {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for at in order {
            let model = variants[at].1.models().into_iter().next().ok_or("no model")?;
            for _ in 0..args.requests {
                let inputs = inputs_of(&args, &model)?;
                let started = Instant::now();
                let mut phases = Phases::default();
                rt.block_on(model.infer(inputs, &[], None, &mut phases)).map_err(|e| e.to_string())?;
                latencies[at].push(started.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    println!(
        "model {}, {} rounds of {} requests each, one at a time",
        args.model.display(),
        args.rounds,
        args.requests
    );
    println!("| variant | median µs | p99 µs | requests/s |");
    println!("|---|---:|---:|---:|");
    let mut medians = [0.0; 2];
    for (at, (name, _)) in variants.iter().enumerate() {
        let mut sorted = latencies[at].clone();
        sorted.sort_by(f64::total_cmp);
        let total: f64 = sorted.iter().sum();
        medians[at] = percentile(&sorted, 0.5);
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} |",
            medians[at],
            percentile(&sorted, 0.99),
            sorted.len() as f64 / (total / 1e6)
        );
    }
    println!("isolation's cost per request (median): {:.0} µs", medians[1] - medians[0]);
    Ok(())
}
