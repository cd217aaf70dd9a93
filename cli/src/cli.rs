//! The command line, declared with clap's derive: each subcommand's options, its `--help` text and
//! the values it accepts. Anything else is a usage error (exit status 2).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::dists::DistName;
use crate::run::Fill;

const EXIT_STATUS: &str = "\
EXIT STATUS
    0  success
    1  a command or check failed; the message (or the FAIL row) says what to do
    2  usage error (unknown command or option, missing argument)";

/// inspect and run ONNX models, fetch and bundle ONNX Runtime, diagnose GPU servers
#[derive(Debug, Parser)]
#[command(name = "onnxrt", version, after_help = EXIT_STATUS, subcommand_required = true, arg_required_else_help = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Inputs/outputs (symbolic dims), metadata, opsets, operators, initializers
    #[command(long_about = "\
Shows the model's inputs and outputs (element type, shape with symbolic dimensions such as `batch`)
as ONNX Runtime loads them, its metadata (producer, graph, domain, version, custom properties), and
from the ONNX file itself: IR version, opset imports, node count per operator type, and the number
and size of the initializers (weights).")]
    Inspect(Inspect),
    /// Run a model on .npy inputs; outputs, timing, registered providers
    #[command(long_about = "\
Runs MODEL once on the given inputs (NumPy .npy files of float32, float64, int32, int64, uint8 or
bool), then N more times for timing. Prints the runtime, the providers the
session registered (is the GPU really used?), the session creation time, the first run and the
median of the repeats, and each output's name, type, shape and first values.")]
    Run(Run),
    /// Check the machine, driver, runtime and provider libraries, one row each
    #[command(
        long_about = "\
One row per check, OK / WARN / FAIL / SKIP, with the fix under each row that needs one:
architecture; GPU, NVIDIA driver and compute capability (nvidia-smi) against the distribution's
needs; the runtime this command loads (version, path, how it was found, the search order) and its
compiled-in providers; each provider library beside it (readable? which NEEDED libraries would the
loader find, where, and in which version?); CUDA versions on LD_LIBRARY_PATH; a test session on a
tiny embedded model on the CPU, and on CUDA with strict GPU placement when the runtime has CUDA.",
        after_help = "Exit status 1 if any row is FAIL."
    )]
    Doctor(Doctor),
    /// Compile a model for a provider (an EPContext model), to load ready on every start (ORT 1.22+)
    #[command(long_about = "\
Compiles MODEL for a provider through ONNX Runtime's Compile API and writes the result to OUTPUT:
an EPContext model whose provider-specific parts (e.g. a TensorRT engine) are embedded in it
(--embed) or written beside it. Load OUTPUT like any model; the provider does not rebuild it.
Provider options go with --option KEY=VALUE. Needs ONNX Runtime 1.22 or newer (build with
ONNXRT_DIST=cpu-1.32.0-registry, or point ONNXRT_DYLIB_PATH at a newer library); an older runtime
is refused with what to use. On failure no OUTPUT file is left behind.")]
    Compile(Compile),
    /// Provision a runtime distribution like the build does, with progress (feature `fetch`)
    #[command(long_about = "\
Provisions a runtime distribution (default: ONNXRT_DIST, else the manifest's default) exactly as the
build does: ONNXRT_LIB_DIR, ONNXRT_ARCHIVE, the cache (ONNXRT_CACHE_DIR), or a verified download
(ONNXRT_MIRROR), with progress on stderr (bytes, rate, ETA). Registry-assembled distributions
(cpu-1.16.2-registry) are assembled from npm / PyPI / Debian. Prints the library folder on stdout.
A later `cargo build` with the same ONNXRT_DIST finds it in the cache. Needs the `fetch` feature
(`cargo install onnxrt-cli --features fetch`).")]
    Fetch(Fetch),
    /// Copy a program and its runtime into a deployable folder, or check one (--check DIR)
    #[command(long_about = "\
Copies BINARY into OUT_DIR and ONNX Runtime with its provider libraries into OUT_DIR/onnxruntime/lib
(with the libonnxruntime.so.1 and libonnxruntime.so links), where the onnxrt loader looks first
after ONNXRT_DYLIB_PATH, and writes OUT_DIR/bundle-manifest.json (binary, ONNX Runtime version,
every file's sha256 and size). The bundle is written to OUT_DIR.tmp-<pid> and renamed into place.
`onnxrt bundle --check DIR` re-hashes a bundle's files instead.")]
    Bundle(Bundle),
    /// This command's version and the runtime it loads (and how it found it)
    #[command(long_about = "\
Prints this command's version, then loads ONNX Runtime as any program using the crate would and
prints its version, the library path and which step of the search order found it:
ONNXRT_DYLIB_PATH, <exe dir>/onnxruntime/lib (a bundle), or the path recorded at build time.")]
    Version(Json),
    /// Print a shell completion script (e.g. `onnxrt completions bash > /etc/bash_completion.d/onnxrt`)
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// `--json` alone.
#[derive(Debug, Args)]
pub struct Json {
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// `onnxrt inspect`.
#[derive(Debug, Args)]
pub struct Inspect {
    /// The .onnx file
    pub model: PathBuf,
    /// Print the same as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Also list every node of the main graph: name, operator type, inputs and outputs
    #[arg(long)]
    pub nodes: bool,
}

/// `onnxrt run`.
#[derive(Debug, Args)]
pub struct Run {
    /// The .onnx file
    pub model: PathBuf,
    /// An input: its name and a .npy file (repeat for each input; inputs not given are generated)
    #[arg(long = "input", value_name = "NAME=FILE.npy", value_parser = parse_input)]
    pub inputs: Vec<(String, PathBuf)>,
    /// The shape of a generated input, e.g. images=1x3x224x224 (free axes not given are 1)
    #[arg(long = "shape", value_name = "NAME=DIMS", value_parser = parse_shape)]
    pub shapes: Vec<(String, Vec<i64>)>,
    /// How generated inputs are filled
    #[arg(long, value_enum, default_value_t = FillArg::Random)]
    pub fill: FillArg,
    /// The seed of random inputs (the same seed gives the same inputs)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Also write each output as DIR/<name>.npy
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Compare the outputs with reference .npy files: DIR/<name>.npy, or FILE for a model with one
    /// output; exit status 1 naming the worst element if any differs
    #[arg(long, value_name = "DIR|FILE")]
    pub compare: Option<PathBuf>,
    /// Absolute tolerance of --compare: |got - expected| <= atol + rtol * |expected|
    #[arg(long, value_name = "X", default_value_t = 1e-5, requires = "compare")]
    pub atol: f64,
    /// Relative tolerance of --compare
    #[arg(long, value_name = "X", default_value_t = 1e-5, requires = "compare")]
    pub rtol: f64,
    /// Where to run: cpu, cuda, tensorrt, or any provider name ONNX Runtime knows (XNNPACK,
    /// OpenVINO, …); nodes the provider cannot run go to the CPU unless --strict
    #[arg(long, value_name = "NAME", default_value = "cpu", value_parser = ProviderName)]
    pub provider: String,
    /// Fail instead of running any node on the CPU (needs a --provider other than cpu)
    #[arg(long)]
    pub strict: bool,
    /// Threads of each run's operators (ONNX Runtime's intra-op threads; default: its own choice)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    /// Timed runs after the first (0 for none)
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub repeat: usize,
    /// Threads sharing the timed runs, each calling the same session
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrency: u16,
    /// Show which provider ran each node (one more run, profiled)
    #[arg(long)]
    pub placement: bool,
}

/// `--fill`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FillArg {
    /// Seeded pseudo-random: floats in [0, 1), uint8 0..=255, other integers 0..=9
    Random,
    /// All zeros
    Zeros,
}

impl From<FillArg> for Fill {
    fn from(f: FillArg) -> Fill {
        match f {
            FillArg::Random => Fill::Random,
            FillArg::Zeros => Fill::Zeros,
        }
    }
}

/// Any provider name, with the ones every build can name offered to completion and `--help`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProviderName;

impl clap::builder::TypedValueParser for ProviderName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::NonEmptyStringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let names = ["cpu", "cuda", "tensorrt", "XNNPACK", "OpenVINO", "QNN", "SNPE", "AZURE"];
        Some(Box::new(names.into_iter().map(clap::builder::PossibleValue::new)))
    }
}

fn parse_shape(text: &str) -> Result<(String, Vec<i64>), String> {
    crate::run::parse_shape(text).map_err(|e| e.to_string())
}

fn parse_input(text: &str) -> Result<(String, PathBuf), String> {
    crate::run::parse_input(text).map_err(|e| e.to_string())
}

/// `onnxrt compile`.
#[derive(Debug, Args)]
pub struct Compile {
    /// The .onnx file to compile
    pub model: PathBuf,
    /// Where to write the compiled model
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// The provider to compile for: cpu, or any provider name ONNX Runtime knows (TensorRT,
    /// OpenVINO, …)
    #[arg(long, value_name = "NAME", default_value = "cpu", value_parser = ProviderName)]
    pub provider: String,
    /// A provider option (repeat for each)
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_option)]
    pub options: Vec<(String, String)>,
    /// Embed the provider's compiled parts in OUTPUT instead of writing them beside it
    #[arg(long)]
    pub embed: bool,
    /// Fail when the provider compiled no node (ORT 1.23+), instead of writing the model again
    #[arg(long)]
    pub require_compiled: bool,
}

fn parse_option(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("--option takes KEY=VALUE, got `{text}`")),
    }
}

/// `onnxrt doctor`.
#[derive(Debug, Args)]
pub struct Doctor {
    /// Print an array of {check, status, detail, fix}
    #[arg(long)]
    pub json: bool,
    /// Compare with this vendor-manifest.toml entry (default: ONNXRT_DIST, else the entry
    /// matching the loaded runtime); a FAIL row when the loaded runtime is not this one
    #[arg(long, value_name = "NAME", value_parser = DistName)]
    pub dist: Option<String>,
    /// Check the provider libraries in DIR instead of the runtime's folder
    #[arg(long, value_name = "DIR")]
    pub provider_dir: Option<PathBuf>,
}

/// `onnxrt fetch`.
#[derive(Debug, Args)]
pub struct Fetch {
    /// The distribution (a vendor-manifest.toml entry)
    #[arg(value_name = "DIST", value_parser = DistName)]
    pub positional: Option<String>,
    /// The distribution (same as the positional DIST)
    #[arg(long, value_name = "DIST", value_parser = DistName)]
    pub dist: Option<String>,
    /// Never download (like ONNXRT_OFFLINE=1)
    #[arg(long)]
    pub offline: bool,
}

/// `onnxrt bundle`.
#[derive(Debug, Args)]
pub struct Bundle {
    /// The program to deliver
    #[arg(required_unless_present = "check")]
    pub binary: Option<PathBuf>,
    /// The bundle folder to create
    #[arg(required_unless_present = "check")]
    pub out_dir: Option<PathBuf>,
    /// Take the runtime from this folder (default: the runtime this command loads)
    #[arg(long, value_name = "DIR", conflicts_with = "dist")]
    pub lib_dir: Option<PathBuf>,
    /// Take the runtime from this distribution (provisioned like the build)
    #[arg(long, value_name = "NAME", value_parser = DistName)]
    pub dist: Option<String>,
    /// Replace OUT_DIR if it exists
    #[arg(long)]
    pub force: bool,
    /// Re-hash the bundle's files; exit 1 naming each missing or changed file
    #[arg(long, value_name = "DIR", conflicts_with_all = ["binary", "out_dir", "lib_dir", "dist", "force"])]
    pub check: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_options_and_positionals_are_separated() {
        let cli = Cli::try_parse_from(["onnxrt", "run", "m.onnx", "--input", "a=a.npy", "--input=b=b.npy", "--strict"])
            .expect("parses");
        let Command::Run(run) = cli.command else { panic!("not run: {cli:?}") };
        assert_eq!(run.model, PathBuf::from("m.onnx"));
        let names: Vec<&str> = run.inputs.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(run.strict);
        assert_eq!((run.repeat, run.provider.as_str(), run.concurrency), (5, "cpu", 1));
    }

    #[test]
    fn mistakes_are_errors() {
        for bad in [
            &["run", "m.onnx", "--nope"][..],
            &["run", "m.onnx", "--input"],
            &["run"],
            &["run", "a", "b"],
            &["run", "m", "--strict=1"],
            &["run", "m", "--repeat", "x"],
            &["run", "m", "--provider", ""],
            &["run", "m", "--concurrency", "0"],
            &["run", "m", "--shape", "x=1xq"],
            &["run", "m", "--atol", "0.1"],
            &["bundle", "app"],
            &["bundle", "app", "out", "--check", "dir"],
        ] {
            let args = std::iter::once("onnxrt").chain(bad.iter().copied());
            assert!(Cli::try_parse_from(args).is_err(), "{bad:?} was accepted");
        }
    }
}
