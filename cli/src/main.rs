//! `onnxrt`: the command-line companion of the `onnxrt` crate. It inspects and runs models,
//! provisions and bundles the runtime, and diagnoses GPU servers. See `onnxrt --help` and
//! `cli/README.md`.
#![forbid(unsafe_code)]

mod args;
mod bundle;
mod doctor;
mod error;
mod fetch;
mod inspect;
mod npy;
mod onnx_proto;
mod output;
mod run;
mod version;

use std::path::PathBuf;
use std::process::ExitCode;

use args::Spec;
use error::{CliError, Result};

const HELP: &str = "\
onnxrt: inspect and run ONNX models, fetch and bundle ONNX Runtime, diagnose GPU servers

USAGE
    onnxrt <COMMAND> [ARGS]            (onnxrt <COMMAND> --help for details)

COMMANDS
    inspect MODEL [--json]             inputs/outputs (symbolic dims), metadata, opsets, operators, initializers
    run MODEL --input NAME=FILE.npy    run a model on .npy inputs; outputs, timing, registered providers
    doctor [--json] [--dist NAME]      check the machine, driver, runtime and provider libraries, one row each
    fetch [DIST] [--offline]           provision a runtime distribution like the build does, with progress
    bundle BINARY OUT_DIR              copy a program and its runtime into a deployable folder
    bundle --check DIR                 verify a bundle against its bundle-manifest.json
    version [--json]                   this command's version and the runtime it loads (and how it found it)

EXIT STATUS
    0  success
    1  a command or check failed; the message (or the FAIL row) says what to do
    2  usage error (unknown command or option, missing argument)
";

const INSPECT: Spec =
    Spec { command: "inspect", flags: &["--json"], options: &[], positionals: (1, 1), positional_names: "MODEL" };
const INSPECT_HELP: &str = "\
onnxrt inspect MODEL [--json]

Shows the model's inputs and outputs (element type, shape with symbolic dimensions such as `batch`)
as ONNX Runtime loads them, its metadata (producer, graph, domain, version, custom properties), and
from the ONNX file itself: IR version, opset imports, node count per operator type, and the number
and size of the initializers (weights). --json prints the same as one JSON object.
";

const RUN: Spec = Spec {
    command: "run",
    flags: &["--strict"],
    options: &["--input", "--output-dir", "--provider", "--repeat"],
    positionals: (1, 1),
    positional_names: "MODEL",
};
const RUN_HELP: &str = "\
onnxrt run MODEL --input NAME=FILE.npy [--input ...] [--output-dir DIR] [--provider cpu|cuda] [--strict] [--repeat N]

Runs MODEL once on the given inputs (NumPy .npy files: little-endian float32, float64, int32, int64,
uint8 or bool, C order), then N more times (default 5) for timing. Prints the runtime, the providers
the session registered (is the GPU really used?), the session creation time, the first run and the
median of the repeats, and each output's name, type, shape and first values.

    --output-dir DIR     also write each output as DIR/<name>.npy
    --provider cuda      run on CUDA (nodes CUDA cannot run go to the CPU unless --strict)
    --strict             fail instead of running any node on the CPU (needs --provider cuda)
    --repeat N           timed runs after the first (0 for none)
";

const DOCTOR: Spec = Spec {
    command: "doctor",
    flags: &["--json"],
    options: &["--dist", "--provider-dir"],
    positionals: (0, 0),
    positional_names: "",
};
const DOCTOR_HELP: &str = "\
onnxrt doctor [--json] [--dist NAME] [--provider-dir DIR]

One row per check, OK / WARN / FAIL / SKIP, with the fix under each row that needs one:
architecture; GPU, NVIDIA driver and compute capability (nvidia-smi) against the distribution's
needs; the runtime this command loads (version, path, how it was found, the search order) and its
compiled-in providers; each provider library beside it (readable? which NEEDED libraries would the
loader find, where, and in which version?); CUDA versions on LD_LIBRARY_PATH; a test session on a
tiny embedded model on the CPU, and on CUDA with strict GPU placement when the runtime has CUDA.

    --json               print an array of {check, status, detail, fix}
    --dist NAME          compare with this vendor-manifest.toml entry (default: ONNXRT_DIST, else the
                         entry matching the loaded runtime)
    --provider-dir DIR   check the provider libraries in DIR instead of the runtime's folder

Exit status 1 if any row is FAIL.
";

const FETCH: Spec = Spec {
    command: "fetch",
    flags: &["--offline"],
    options: &["--dist"],
    positionals: (0, 1),
    positional_names: "at most one DIST",
};
const FETCH_HELP: &str = "\
onnxrt fetch [DIST | --dist DIST] [--offline]

Provisions a runtime distribution (default: ONNXRT_DIST, else the manifest's default) exactly as the
build does: ONNXRT_LIB_DIR, ONNXRT_ARCHIVE, the cache (ONNXRT_CACHE_DIR), or a verified download
(ONNXRT_MIRROR), with a progress line on stderr (bytes, rate, ETA). Registry-assembled
distributions (cpu-1.16.2-registry) are assembled from npm / PyPI / Debian. Prints the library
folder on stdout. A later `cargo build` with the same ONNXRT_DIST finds it in the cache.

    --dist DIST          the distribution (same as the positional DIST)

    --offline            never download (like ONNXRT_OFFLINE=1)
";

const BUNDLE: Spec = Spec {
    command: "bundle",
    flags: &["--force"],
    options: &["--check", "--lib-dir", "--dist"],
    positionals: (0, 2),
    positional_names: "BINARY OUT_DIR (or --check DIR)",
};
const BUNDLE_HELP: &str = "\
onnxrt bundle BINARY OUT_DIR [--lib-dir DIR | --dist NAME] [--force]
onnxrt bundle --check DIR

Copies BINARY into OUT_DIR and ONNX Runtime with its provider libraries into OUT_DIR/onnxruntime/lib
(with the libonnxruntime.so.1 and libonnxruntime.so links), where the onnxrt loader looks first
after ONNXRT_DYLIB_PATH, and writes OUT_DIR/bundle-manifest.json (binary, ONNX Runtime version,
every file's sha256 and size). The bundle is written to OUT_DIR.tmp-<pid> and renamed into place.

    --lib-dir DIR        take the runtime from this folder
    --dist NAME          take the runtime from this distribution (provisioned like the build)
                         (default: the runtime this command loads; see `onnxrt version`)
    --force              replace OUT_DIR if it exists
    --check DIR          re-hash the bundle's files; exit 1 naming each missing or changed file
";

const VERSION: Spec =
    Spec { command: "version", flags: &["--json"], options: &[], positionals: (0, 0), positional_names: "" };
const VERSION_HELP: &str = "\
onnxrt version [--json]

Prints this command's version, then loads ONNX Runtime as any program using the crate would and
prints its version, the library path and which step of the search order found it:
ONNXRT_DYLIB_PATH, <exe dir>/onnxruntime/lib (a bundle), or the path recorded at build time.
";

/// Parses the subcommand's arguments, or prints its help (`None`).
fn parse(spec: &Spec, help: &str, args: &[String]) -> Result<Option<args::Parsed>> {
    let parsed = spec.parse(args)?;
    if parsed.help {
        print!("{help}");
        return Ok(None);
    }
    Ok(Some(parsed))
}

fn dispatch(args: &[String]) -> Result<()> {
    let Some((command, rest)) = args.split_first() else {
        eprint!("{HELP}");
        return Err(CliError::Usage("no command given".into()));
    };
    match command.as_str() {
        "-h" | "--help" | "help" => {
            print!("{HELP}");
            Ok(())
        }
        "-V" | "--version" => {
            println!("onnxrt {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        "inspect" => {
            let Some(p) = parse(&INSPECT, INSPECT_HELP, rest)? else { return Ok(()) };
            inspect::run(&PathBuf::from(&p.positionals[0]), p.flag("--json"))
        }
        "run" => {
            let Some(p) = parse(&RUN, RUN_HELP, rest)? else { return Ok(()) };
            let provider = match p.value("--provider").unwrap_or("cpu") {
                "cpu" => run::Provider::Cpu,
                "cuda" => run::Provider::Cuda,
                other => {
                    return Err(CliError::Usage(format!(
                        "--provider takes cpu or cuda, got `{other}`\nSee `onnxrt run --help`."
                    )))
                }
            };
            let repeat = match p.value("--repeat") {
                None => 5,
                Some(n) => n.parse().map_err(|_| {
                    CliError::Usage(format!("--repeat takes a number, got `{n}`\nSee `onnxrt run --help`."))
                })?,
            };
            let inputs = p.values("--input").into_iter().map(run::parse_input).collect::<Result<Vec<_>>>()?;
            run::run(&run::RunRequest {
                model: PathBuf::from(&p.positionals[0]),
                inputs,
                output_dir: p.value("--output-dir").map(PathBuf::from),
                provider,
                strict: p.flag("--strict"),
                repeat,
            })
        }
        "doctor" => {
            let Some(p) = parse(&DOCTOR, DOCTOR_HELP, rest)? else { return Ok(()) };
            doctor::run(&doctor::Options {
                json: p.flag("--json"),
                dist: p.value("--dist").map(str::to_owned),
                provider_dir: p.value("--provider-dir").map(PathBuf::from),
            })
        }
        doctor::session::CHILD_COMMAND => {
            doctor::session::child();
            Ok(())
        }
        "fetch" => {
            let Some(p) = parse(&FETCH, FETCH_HELP, rest)? else { return Ok(()) };
            let dist = p.value("--dist").or(p.positionals.first().map(String::as_str));
            fetch::run(dist, p.flag("--offline"))
        }
        "bundle" => {
            let Some(p) = parse(&BUNDLE, BUNDLE_HELP, rest)? else { return Ok(()) };
            match (p.value("--check"), p.positionals.as_slice()) {
                (Some(dir), []) => bundle::check(&PathBuf::from(dir)),
                (None, [binary, out]) => bundle::create(&bundle::BundleRequest {
                    binary: PathBuf::from(binary),
                    out_dir: PathBuf::from(out),
                    lib_dir: p.value("--lib-dir").map(PathBuf::from),
                    dist: p.value("--dist").map(str::to_owned),
                    force: p.flag("--force"),
                }),
                _ => Err(CliError::Usage(
                    "`onnxrt bundle` takes BINARY OUT_DIR, or --check DIR alone\nSee `onnxrt bundle --help`.".into(),
                )),
            }
        }
        "version" => {
            let Some(p) = parse(&VERSION, VERSION_HELP, rest)? else { return Ok(()) };
            version::run(p.flag("--json"))
        }
        other => Err(CliError::Usage(format!("unknown command `{other}`\nSee `onnxrt --help`."))),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match dispatch(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let kind = if matches!(error, CliError::Usage(_)) { "usage" } else { "error" };
            eprintln!("onnxrt: {kind}: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
