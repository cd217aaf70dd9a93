//! `onnxrt`: the command-line companion of the `onnxrt` crate. It inspects and runs models,
//! provisions and bundles the runtime, and diagnoses GPU servers. See `onnxrt --help` and
//! `cli/README.md`.
#![forbid(unsafe_code)]

#[cfg(feature = "fetch")]
mod assembly_progress;
mod bundle;
mod cli;
mod compile;
mod dists;
mod doctor;
mod error;
#[cfg(feature = "fetch")]
mod fetch;
mod inspect;
mod model_summary;
mod npy;
mod output;
mod run;
mod version;

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use cli::{Cli, Command};
use error::{CliError, Result};

fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Inspect(a) => inspect::run(&a.model, a.json, a.nodes),
        Command::Run(a) => run::run(&run::RunRequest {
            model: a.model,
            inputs: a.inputs,
            shapes: a.shapes,
            fill: a.fill.into(),
            seed: a.seed,
            output_dir: a.output_dir,
            compare: a.compare,
            tolerance: run::Tolerance { atol: a.atol, rtol: a.rtol },
            provider: a.provider,
            strict: a.strict,
            threads: a.threads.map(usize::from),
            repeat: a.repeat,
            concurrency: usize::from(a.concurrency),
            placement: a.placement,
        }),
        Command::Compile(a) => compile::run(&a),
        Command::Doctor(a) => {
            doctor::run(&doctor::Options { json: a.json, dist: a.dist, provider_dir: a.provider_dir })
        }
        #[cfg(feature = "fetch")]
        Command::Fetch(a) => fetch::run(a.dist.as_deref().or(a.positional.as_deref()), a.offline),
        #[cfg(not(feature = "fetch"))]
        Command::Fetch(a) => {
            // The name is still checked, so a typo is not hidden behind the missing feature.
            if let Some(name) = a.dist.as_deref().or(a.positional.as_deref()) {
                dists::Manifest::builtin().dist(name)?;
            }
            Err(error::without_fetch("onnxrt fetch"))
        }
        Command::Bundle(a) => match (a.check, a.binary, a.out_dir) {
            (Some(dir), None, None) => bundle::check(&dir),
            (None, Some(binary), Some(out_dir)) => bundle::create(&bundle::BundleRequest {
                binary,
                out_dir,
                lib_dir: a.lib_dir,
                dist: a.dist,
                force: a.force,
            }),
            _ => Err(CliError::Usage(
                "`onnxrt bundle` takes BINARY OUT_DIR, or --check DIR alone\nSee `onnxrt bundle --help`.".into(),
            )),
        },
        Command::Version(a) => version::run(a.json),
        Command::Completions { shell } => {
            // Into a buffer: clap_complete panics on a write error such as a closed pipe.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "onnxrt", &mut script);
            output::out(&String::from_utf8_lossy(&script))
        }
    }
}

/// Help and version go to stdout with status 0; any other parse error is a usage error
/// (status 2), printed like the CLI's other errors.
fn parse() -> std::result::Result<Cli, ExitCode> {
    Cli::try_parse().map_err(|error| {
        use clap::error::ErrorKind;
        match error.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                let _ = error.print();
                ExitCode::SUCCESS
            }
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                eprint!("{}", error.render());
                eprintln!("onnxrt: usage: no command given");
                ExitCode::from(error::EXIT_USAGE)
            }
            _ => {
                let text = error.render().to_string();
                eprint!("onnxrt: usage: {}", text.strip_prefix("error: ").unwrap_or(&text));
                ExitCode::from(error::EXIT_USAGE)
            }
        }
    })
}

fn main() -> ExitCode {
    // The doctor's CUDA test session runs in a child process started with this one argument; it
    // is no user command, so it stays out of clap (and of --help and the completion scripts).
    if std::env::args().nth(1).as_deref() == Some(doctor::session::CHILD_COMMAND) {
        doctor::session::child();
        return ExitCode::SUCCESS;
    }
    let cli = match parse() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    match dispatch(cli.command) {
        Ok(()) | Err(CliError::ClosedPipe) => ExitCode::SUCCESS,
        Err(error) => {
            let kind = if matches!(error, CliError::Usage(_)) { "usage" } else { "error" };
            eprintln!("onnxrt: {kind}: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
