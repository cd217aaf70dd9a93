//! The CLI's error: the libraries' typed errors (whose `Display` already says what to do), plus
//! usage mistakes and the CLI's own failures. Each maps to an exit status.

use std::path::Path;

/// Exit status of a usage mistake (unknown option, missing argument).
pub const EXIT_USAGE: u8 = 2;
/// Exit status of a command or check that failed.
pub const EXIT_FAILED: u8 = 1;

/// Why a command did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line is wrong; the message says how to call it.
    #[error("{0}")]
    Usage(String),

    /// An `onnxrt` error (its message carries the fix).
    #[error(transparent)]
    Onnxrt(#[from] onnxrt::Error),

    /// A provisioning error (its message carries the fix).
    #[cfg(feature = "fetch")]
    #[error(transparent)]
    Build(build_support::Error),

    /// A file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// Whoever read stdout closed it (`onnxrt … | head`): the command ends quietly, status 0.
    #[error("stdout was closed by its reader")]
    ClosedPipe,

    /// The command ran and found a problem (a failed check, a bad input file); the message says
    /// what and what to do.
    #[error("{0}")]
    Failed(String),
}

impl CliError {
    /// The process exit status for this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::ClosedPipe => 0,
            _ => EXIT_FAILED,
        }
    }

    /// A closure turning an I/O error into [`CliError::Io`] with `what` and the path.
    pub fn io(what: &str, path: &Path) -> impl FnOnce(std::io::Error) -> CliError {
        let context = format!("{what} {}", path.display());
        move |source| CliError::Io { context, source }
    }
}

#[cfg(feature = "fetch")]
impl From<build_support::Error> for CliError {
    /// An unknown distribution name is worded for the command: build-support's message tells a
    /// cargo build to set ONNXRT_DIST, which means nothing to `onnxrt doctor --dist NAME`.
    fn from(error: build_support::Error) -> CliError {
        match error {
            build_support::Error::UnknownDist { name, known } => CliError::Failed(crate::dists::unknown(&name, &known)),
            other => CliError::Build(other),
        }
    }
}

/// The error of a command (or option) that needs the `fetch` feature this build lacks.
#[cfg(not(feature = "fetch"))]
pub fn without_fetch(what: &str) -> CliError {
    CliError::Failed(format!(
        "`{what}` provisions ONNX Runtime, which this onnxrt command was built without (the `fetch` feature, \
         off by default); reinstall it with `cargo install onnxrt-cli --features fetch`"
    ))
}

/// Shorthand for the CLI's results.
pub type Result<T, E = CliError> = std::result::Result<T, E>;
