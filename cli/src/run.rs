//! `onnxrt run MODEL --input name=file.npy ...`: runs a model on `.npy` inputs and shows each
//! output, the timing and the providers the session registered (is the GPU really used?).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use onnxrt::{ElementType, Session, Value, ValueKind};

use crate::error::{CliError, Result};
use crate::npy::{self, Npy, NpyData};
use crate::output::{self, Table};

/// Values shown per output.
const PREVIEW: usize = 8;

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// ORT's CPU provider only.
    Cpu,
    /// CUDA first, CPU for nodes CUDA cannot run (unless strict).
    Cuda,
}

/// What `run` was asked to do.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The model file.
    pub model: PathBuf,
    /// `(input name, .npy file)` pairs.
    pub inputs: Vec<(String, PathBuf)>,
    /// Write each output as `<dir>/<name>.npy`.
    pub output_dir: Option<PathBuf>,
    /// The provider.
    pub provider: Provider,
    /// Fail instead of running nodes on the CPU.
    pub strict: bool,
    /// Timed runs after the first.
    pub repeat: usize,
}

/// Parses `name=file.npy`.
pub fn parse_input(text: &str) -> Result<(String, PathBuf)> {
    match text.split_once('=') {
        Some((name, file)) if !name.is_empty() && !file.is_empty() => Ok((name.to_owned(), PathBuf::from(file))),
        _ => Err(CliError::Usage(format!("--input takes NAME=FILE.npy, got `{text}`\nSee `onnxrt run --help`."))),
    }
}

fn builder(provider: Provider, strict: bool) -> Result<onnxrt::SessionBuilder> {
    let builder = Session::builder().strict_gpu(strict);
    match provider {
        Provider::Cpu => Ok(builder),
        #[cfg(feature = "cuda")]
        Provider::Cuda => Ok(builder.cuda(onnxrt::providers::cuda::CudaOptions::new())),
        #[cfg(not(feature = "cuda"))]
        Provider::Cuda => Err(CliError::Failed(
            "this onnxrt command was built without the `cuda` feature; reinstall it with the default features \
             (`cargo install --path cli`)"
                .into(),
        )),
    }
}

fn to_value(name: &str, array: Npy) -> Result<Value<'static>> {
    let shape: Vec<i64> = array.shape.iter().map(|&d| d as i64).collect();
    let value = match array.data {
        NpyData::F32(v) => Value::from_vec(&shape, v),
        NpyData::F64(v) => Value::from_vec(&shape, v),
        NpyData::I32(v) => Value::from_vec(&shape, v),
        NpyData::I64(v) => Value::from_vec(&shape, v),
        NpyData::U8(v) => Value::from_vec(&shape, v),
        NpyData::Bool(v) => Value::from_vec(&shape, v),
    };
    value.map_err(|e| CliError::Failed(format!("input `{name}`: {e}")))
}

fn median(mut times: Vec<Duration>) -> Option<Duration> {
    times.sort();
    let n = times.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(times[n / 2]),
        _ => Some((times[n / 2 - 1] + times[n / 2]) / 2),
    }
}

fn list<T: std::fmt::Display>(values: impl Iterator<Item = T>, total: usize) -> String {
    let shown: Vec<String> = values.take(PREVIEW).map(|v| v.to_string()).collect();
    let more = if total > PREVIEW { format!(", … ({total} values)") } else { String::new() };
    format!("[{}{more}]", shown.join(", "))
}

/// One output: its type, shape, first values, and the array to save when it has a `.npy` type.
struct Shown {
    type_name: String,
    shape: String,
    values: String,
    npy: Option<Npy>,
}

fn show(value: &Value<'_>) -> Result<Shown> {
    let kind = value.kind()?;
    if kind != ValueKind::Tensor {
        let what = match kind {
            ValueKind::Sequence => format!("sequence of {} values", value.sequence_items()?.len()),
            other => format!("{other:?}").to_lowercase(),
        };
        return Ok(Shown { type_name: what, shape: "-".into(), values: "(not a tensor)".into(), npy: None });
    }
    let info = value.tensor_info()?;
    let total = info.len();
    let shape: Vec<usize> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
    macro_rules! tensor {
        ($t:ty, $variant:expr) => {{
            let array = value.view::<$t>()?;
            let values = list(array.iter(), total);
            let data: Vec<$t> = array.iter().copied().collect();
            (values, $variant(data))
        }};
        ($t:ty) => {{
            let array = value.view::<$t>()?;
            (list(array.iter(), total), None)
        }};
    }
    let (values, npy): (String, Option<NpyData>) = match info.element_type {
        ElementType::F32 => tensor!(f32, |d| Some(NpyData::F32(d))),
        ElementType::F64 => tensor!(f64, |d| Some(NpyData::F64(d))),
        ElementType::I32 => tensor!(i32, |d| Some(NpyData::I32(d))),
        ElementType::I64 => tensor!(i64, |d| Some(NpyData::I64(d))),
        ElementType::U8 => tensor!(u8, |d| Some(NpyData::U8(d))),
        ElementType::Bool => tensor!(bool, |d| Some(NpyData::Bool(d))),
        ElementType::I8 => tensor!(i8),
        ElementType::I16 => tensor!(i16),
        ElementType::U16 => tensor!(u16),
        ElementType::U32 => tensor!(u32),
        ElementType::U64 => tensor!(u64),
        ElementType::F16 => tensor!(onnxrt::half::f16),
        ElementType::BF16 => tensor!(onnxrt::half::bf16),
        ElementType::F8E4M3Fn => tensor!(onnxrt::F8E4M3Fn),
        ElementType::F8E4M3Fnuz => tensor!(onnxrt::F8E4M3Fnuz),
        ElementType::F8E5M2 => tensor!(onnxrt::F8E5M2),
        ElementType::F8E5M2Fnuz => tensor!(onnxrt::F8E5M2Fnuz),
        ElementType::String => (list(value.strings()?.iter().map(|s| format!("{s:?}")), total), None),
        _ => ("(values of this type cannot be read)".into(), None),
    };
    Ok(Shown {
        type_name: info.element_type.to_string(),
        shape: format!("{:?}", info.shape),
        values,
        npy: npy.map(|data| Npy { shape, data }),
    })
}

/// A file name for an output name (which may hold `/` or `:`).
fn file_name_for(output: &str) -> String {
    let safe: String =
        output.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    format!("{}.npy", safe.trim_start_matches('.'))
}

/// Runs `run`.
pub fn run(request: &RunRequest) -> Result<()> {
    let mut inputs = Vec::new();
    for (name, file) in &request.inputs {
        inputs.push((name.clone(), to_value(name, npy::read(file)?)?));
    }
    let started = Instant::now();
    let session = builder(request.provider, request.strict)?.commit_from_file(&request.model)?;
    let created = started.elapsed();
    let refs: Vec<(&str, &Value<'_>)> = inputs.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let started = Instant::now();
    let outputs = session.run(&refs)?;
    let first = started.elapsed();
    let mut times = Vec::with_capacity(request.repeat);
    for _ in 0..request.repeat {
        let started = Instant::now();
        drop(session.run(&refs)?);
        times.push(started.elapsed());
    }
    let runtime = onnxrt::runtime_info()?;
    let mut pairs = vec![
        ("runtime", format!("ONNX Runtime {} ({})", runtime.version, runtime.library.display())),
        ("providers", format!("{:?}", session.providers())),
        ("session", format!("created in {}", output::millis(created))),
        ("first run", output::millis(first)),
    ];
    match median(times.clone()) {
        Some(m) => {
            let (min, max) = (times.iter().min().copied().unwrap_or(m), times.iter().max().copied().unwrap_or(m));
            pairs.push((
                "median",
                format!(
                    "{} of {} runs (min {}, max {})",
                    output::millis(m),
                    times.len(),
                    output::millis(min),
                    output::millis(max)
                ),
            ));
        }
        None => pairs.push(("median", "(no repeats; use --repeat N)".into())),
    }
    if request.provider == Provider::Cuda && !request.strict {
        pairs.push(("note", "nodes without a CUDA kernel run on the CPU; add --strict to fail instead".into()));
    }
    print!("{}", output::key_values(&pairs));
    let names: Vec<String> = outputs.names().map(str::to_owned).collect();
    let mut table = Table::new(&["OUTPUT", "TYPE", "SHAPE", "VALUES"]);
    let mut not_saved = Vec::new();
    for (name, value) in names.iter().zip(outputs.into_values()) {
        let shown = show(&value)?;
        table.row([name.clone(), shown.type_name.clone(), shown.shape, shown.values]);
        if let Some(dir) = &request.output_dir {
            match &shown.npy {
                Some(array) => save(dir, name, array)?,
                None => not_saved.push(format!("`{name}` ({})", shown.type_name)),
            }
        }
    }
    println!();
    print!("{}", table.render());
    if let Some(dir) = &request.output_dir {
        println!("\noutputs written to {}", dir.display());
    }
    if !not_saved.is_empty() {
        return Err(CliError::Failed(format!(
            "not written as .npy: {} (onnxrt run writes f32, f64, i32, i64, u8 and bool tensors)",
            not_saved.join(", ")
        )));
    }
    Ok(())
}

fn save(dir: &Path, name: &str, array: &Npy) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(CliError::io("cannot create", dir))?;
    npy::write(&dir.join(file_name_for(name)), array)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_names() {
        let ms = Duration::from_millis;
        assert_eq!(median(vec![ms(3), ms(1), ms(2)]), Some(ms(2)));
        assert_eq!(median(vec![ms(4), ms(1), ms(2), ms(3)]), Some(Duration::from_micros(2500)));
        assert_eq!(median(vec![]), None);
        assert_eq!(file_name_for("logits:0/a"), "logits_0_a.npy");
        assert_eq!(file_name_for("../x"), "_x.npy");
        assert!(parse_input("a=x.npy").is_ok());
        assert!(matches!(parse_input("a"), Err(CliError::Usage(_))));
    }
}
