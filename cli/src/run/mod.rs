//! `onnxrt run MODEL [--input name=file.npy ...]`: runs a model on `.npy` inputs, or on generated
//! ones (`--shape`, `--fill`, `--seed`), and shows each output with its statistics, the latency
//! of repeated (and concurrent) runs, the providers the session registered and, with
//! `--placement`, which provider ran each node. `--compare` checks the outputs against
//! reference `.npy` files.

mod compare;
mod inputs;
mod latency;
mod show;

use std::path::{Path, PathBuf};
use std::time::Instant;

use onnxrt::{Session, Value};

use crate::error::{CliError, Result};
use crate::npy::{self, Npy};
use crate::output::{self, Table};
pub use compare::Tolerance;
pub use inputs::{parse_shape, Fill};
use show::{file_name_for, number};

/// What `run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The model file.
    pub model: PathBuf,
    /// `(input name, .npy file)` pairs.
    pub inputs: Vec<(String, PathBuf)>,
    /// Shapes for generated inputs.
    pub shapes: Vec<(String, Vec<i64>)>,
    /// How generated inputs are filled.
    pub fill: Fill,
    /// The seed of random inputs.
    pub seed: u64,
    /// Write each output as `<dir>/<name>.npy`.
    pub output_dir: Option<PathBuf>,
    /// Reference outputs: a folder of `<name>.npy`, or one file.
    pub compare: Option<PathBuf>,
    /// Tolerances of `compare`.
    pub tolerance: Tolerance,
    /// The provider: `cpu`, `cuda`, `tensorrt`, or any name ORT knows.
    pub provider: String,
    /// Fail instead of running nodes on the CPU.
    pub strict: bool,
    /// Intra-op threads (`None`: ORT's default).
    pub threads: Option<usize>,
    /// Timed runs after the first.
    pub repeat: usize,
    /// Threads sharing the timed runs.
    pub concurrency: usize,
    /// Show which provider ran each node.
    pub placement: bool,
}

/// Parses `name=file.npy`.
pub fn parse_input(text: &str) -> Result<(String, PathBuf)> {
    match text.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => Ok((name.to_owned(), PathBuf::from(file))),
        _ => Err(CliError::Usage(format!("--input takes NAME=FILE.npy, got `{text}`\nSee `onnxrt run --help`."))),
    }
}

/// The session builder for `provider`: nothing added for the CPU; CUDA and TensorRT through their
/// typed options where this command was built with them, else (and for every other name) through
/// the library's provider-by-name API. An unavailable provider is refused by the library at
/// session creation with its typed error (`ProviderNotAvailable`, `ProviderLoad`).
fn builder(request: &RunRequest) -> onnxrt::SessionBuilder {
    let mut builder = Session::builder().strict_gpu(request.strict);
    if let Some(threads) = request.threads {
        builder = builder.intra_op_threads(threads);
    }
    match request.provider.to_ascii_lowercase().as_str() {
        "cpu" | "cpuexecutionprovider" => builder,
        #[cfg(feature = "cuda")]
        "cuda" => builder.cuda(onnxrt::providers::cuda::CudaOptions::new()),
        #[cfg(not(feature = "cuda"))]
        "cuda" => builder.provider("CUDA", std::iter::empty::<(String, String)>()),
        #[cfg(feature = "tensorrt")]
        "tensorrt" => builder.tensorrt(onnxrt::providers::tensorrt::TensorRtOptions::new()),
        #[cfg(not(feature = "tensorrt"))]
        "tensorrt" => builder.provider("TensorRT", std::iter::empty::<(String, String)>()),
        _ => builder.provider(request.provider.clone(), std::iter::empty::<(String, String)>()),
    }
}

/// Named input values.
type Inputs = Vec<(String, Value<'static>)>;

/// The inputs: `--input` files, and a generated tensor for every other input of the model.
/// Returns them with one line per generated input.
fn gather_inputs(request: &RunRequest, session: &Session) -> Result<(Inputs, Vec<String>)> {
    let declared = session.inputs();
    for (name, _) in &request.shapes {
        if !declared.iter().any(|i| &i.name == name) {
            let names: Vec<&str> = declared.iter().map(|i| i.name.as_str()).collect();
            return Err(CliError::Failed(format!(
                "--shape: the model has no input named `{name}`; its inputs: {names:?}"
            )));
        }
        if request.inputs.iter().any(|(n, _)| n == name) {
            return Err(CliError::Usage(format!(
                "input `{name}` has both --input and --shape; --shape is for generated inputs"
            )));
        }
    }
    let mut values = Vec::new();
    for (name, file) in &request.inputs {
        values.push((name.clone(), inputs::from_npy(name, npy::read(file)?)?));
    }
    let mut rng = inputs::Rng::new(request.seed);
    let mut generated = Vec::new();
    for info in declared.iter().filter(|i| !request.inputs.iter().any(|(n, _)| *n == i.name)) {
        let given = request.shapes.iter().find(|(n, _)| *n == info.name).map(|(_, s)| s.as_slice());
        let (value, line) = inputs::generate(info, given, request.fill, &mut rng)?;
        generated.push(format!("{}: {line}", info.name));
        values.push((info.name.clone(), value));
    }
    if !generated.is_empty() && request.fill == Fill::Random {
        generated.push(format!("(generated with --seed {}; the same seed gives the same values)", request.seed));
    }
    Ok((values, generated))
}

/// Runs `run`.
pub fn run(request: &RunRequest) -> Result<()> {
    let started = Instant::now();
    let session = builder(request).commit_from_file(&request.model)?;
    let created = started.elapsed();
    let (inputs, generated) = gather_inputs(request, &session)?;
    let refs: Vec<(&str, &Value<'_>)> = inputs.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let started = Instant::now();
    let outputs = session.run(&refs)?;
    let first = started.elapsed();
    let timed = latency::measure(&session, &refs, request.repeat, request.concurrency)?;
    let runtime = onnxrt::runtime_info()?;
    let mut pairs = vec![
        ("runtime", format!("ONNX Runtime {} ({})", runtime.version, runtime.library.display())),
        ("providers", format!("{:?}", session.providers())),
        ("session", format!("created in {}", output::millis(created))),
    ];
    for line in &generated {
        pairs.push(("generated", line.clone()));
    }
    pairs.push(("first run", output::millis(first)));
    pairs.push(("latency", latency_line(&timed)));
    if request.provider.eq_ignore_ascii_case("cuda") && !request.strict {
        pairs.push(("note", "nodes without a CUDA kernel run on the CPU; add --strict to fail instead".into()));
    }
    let mut text = output::key_values(&pairs);
    let names: Vec<String> = outputs.names().map(str::to_owned).collect();
    let mut table = Table::new(&["OUTPUT", "TYPE", "SHAPE", "MIN", "MAX", "MEAN", "NAN", "INF", "FIRST VALUES"]);
    let mut not_saved = Vec::new();
    let mut compared = Vec::new();
    for (name, value) in names.iter().zip(outputs.into_values()) {
        let shown = show::show(&value)?;
        let stats = shown.numbers.as_deref().map(show::stats);
        let opt = |x: Option<f64>| x.map_or_else(|| "-".to_owned(), number);
        table.row([
            name.clone(),
            shown.type_name.clone(),
            shown.shape.as_ref().map_or_else(|| "-".to_owned(), |s| format!("{s:?}")),
            opt(stats.and_then(|s| s.min)),
            opt(stats.and_then(|s| s.max)),
            opt(stats.and_then(|s| s.mean)),
            stats.map_or_else(|| "-".to_owned(), |s| s.nan.to_string()),
            stats.map_or_else(|| "-".to_owned(), |s| s.inf.to_string()),
            shown.values.clone(),
        ]);
        if let Some(dir) = &request.output_dir {
            match &shown.npy {
                Some(array) => save(dir, name, array)?,
                None => not_saved.push(format!("`{name}` ({})", shown.type_name)),
            }
        }
        if let Some(reference) = &request.compare {
            let file = compare::reference_for(reference, name, names.len())?;
            let (Some(numbers), Some(shape)) = (&shown.numbers, &shown.shape) else {
                return Err(CliError::Failed(format!(
                    "--compare: output `{name}` is a {}, which cannot be compared with a .npy file",
                    shown.type_name
                )));
            };
            compared.push(compare::compare(name, shape, numbers, &file, request.tolerance)?);
        }
    }
    text.push('\n');
    text.push_str(&table.render());
    if let Some(dir) = &request.output_dir {
        text.push_str(&format!("\noutputs written to {}\n", dir.display()));
    }
    if request.placement {
        text.push_str(&placement(request, &refs)?);
    }
    if !compared.is_empty() {
        let tol = request.tolerance;
        let mut table = Table::new(&["OUTPUT", "RESULT", "MAX |DIFF|", "REFERENCE / WORST"]);
        for c in &compared {
            let result = if c.ok() { "ok" } else { "MISMATCH" };
            let detail = if c.ok() { c.reference.display().to_string() } else { c.verdict.clone() };
            table.row([c.output.clone(), result.to_owned(), number(c.max_abs), detail]);
        }
        text.push_str(&format!("\nCOMPARE (atol {}, rtol {})\n", tol.atol, tol.rtol));
        text.push_str(&table.render());
    }
    // A reader that went away loses the text, not the verdict: a mismatch still exits 1.
    let printed = output::out(&text);
    let failed: Vec<String> =
        compared.iter().filter(|c| !c.ok()).map(|c| format!("`{}`: {}", c.output, c.verdict)).collect();
    if !failed.is_empty() {
        return Err(CliError::Failed(format!(
            "outputs differ from the reference beyond atol {} + rtol {} × |expected|: {}",
            request.tolerance.atol,
            request.tolerance.rtol,
            failed.join("; ")
        )));
    }
    if !not_saved.is_empty() {
        return Err(CliError::Failed(format!(
            "not written as .npy: {} (onnxrt run writes f32, f64, i32, i64, u8 and bool tensors)",
            not_saved.join(", ")
        )));
    }
    printed
}

fn latency_line(timed: &latency::Latency) -> String {
    let n = timed.sorted.len();
    let (Some(p50), Some(p90), Some(p99)) = (timed.percentile(50.0), timed.percentile(90.0), timed.percentile(99.0))
    else {
        return "(no timed runs; use --repeat N)".into();
    };
    let ms = output::millis;
    format!(
        "p50 {}, p90 {}, p99 {} (min {}, max {}) of {n} runs on {} thread(s), {:.1} runs/s",
        ms(p50),
        ms(p90),
        ms(p99),
        ms(timed.sorted[0]),
        ms(timed.sorted[n - 1]),
        timed.threads,
        timed.throughput()
    )
}

/// `--placement`: one profiled run of a second session built the same way; which provider ran
/// each node of the (optimized) graph, from ORT's profile (`onnxrt::profiling::placement`).
fn placement(request: &RunRequest, inputs: &[(&str, &Value<'_>)]) -> Result<String> {
    let scratch = tempfile::tempdir()
        .map_err(|e| CliError::Io { context: "cannot create a temporary folder".into(), source: e })?;
    let (placement, _) = onnxrt::profiling::placement(builder(request), &request.model, inputs, scratch.path())?;
    let mut table = Table::new(&["PROVIDER", "NODE", "OP"]);
    let mut counts = Vec::new();
    for (provider, nodes) in &placement.by_provider {
        counts.push(format!("{} on {provider}", nodes.len()));
        for (node, op) in nodes {
            table.row([provider.clone(), node.clone(), op.clone()]);
        }
    }
    Ok(format!("\nPLACEMENT ({})\n{}", counts.join(", "), table.render()))
}

fn save(dir: &Path, name: &str, array: &Npy) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(CliError::io("cannot create", dir))?;
    npy::write(&dir.join(file_name_for(name)), array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_parse() {
        assert!(parse_input("a=x.npy").is_ok());
        assert!(matches!(parse_input("a"), Err(CliError::Usage(_))));
    }
}
