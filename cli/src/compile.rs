//! `onnxrt compile`: a model compiled for a provider through the library's
//! [`onnxrt::compile::ModelCompiler`], written where asked, with what was written on stdout.

use std::time::Instant;

use onnxrt::compile::ModelCompiler;
use onnxrt::Session;

use crate::cli::Compile;
use crate::error::Result;

/// Compiles `args.model` into `args.output`.
pub fn run(args: &Compile) -> Result<()> {
    let builder = match args.provider.to_ascii_lowercase().as_str() {
        "cpu" | "cpuexecutionprovider" => {
            if !args.options.is_empty() {
                return Err(crate::error::CliError::Usage(
                    "--option is for a provider other than cpu\nSee `onnxrt compile --help`.".into(),
                ));
            }
            Session::builder()
        }
        _ => Session::builder().provider(args.provider.clone(), args.options.clone()),
    };
    let started = Instant::now();
    ModelCompiler::new(builder)
        .input_file(&args.model)
        .embed_context(args.embed)
        .error_if_nothing_compiled(args.require_compiled)
        .compile_to_file(&args.output)?;
    let took = started.elapsed();
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    crate::output::out(&format!(
        "compiled {} for {} into {} ({size} bytes) in {}\n",
        args.model.display(),
        args.provider,
        args.output.display(),
        crate::output::millis(took)
    ))
}
