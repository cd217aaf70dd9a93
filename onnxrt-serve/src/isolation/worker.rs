//! The worker process's side: `serve --isolated-worker SPEC` loads one model and runs the
//! requests its server sends over stdin, one at a time, answering on stdout. A crash here (ONNX
//! Runtime 1.16's SIGFPE on some shapes) ends this process only; the server answers the request
//! 500 and starts another worker. The worker ends when the server closes its stdin.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;

use onnxrt::Value;
use serde::{Deserialize, Serialize};

use super::wire::{self, Reply, RunRequest};
use crate::provider::session_for;
use crate::run_error::{classify_run_error, RunErrorKind};

/// The first argument that makes `serve` a worker process.
pub const WORKER_FLAG: &str = "--isolated-worker";

/// What a worker process is started with (its second argument, as JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// The model file.
    pub model: PathBuf,
    /// The provider and its settings, as the model's config chose them.
    pub provider: crate::provider::ProviderSetup,
    /// Intra-op threads.
    pub threads: Option<usize>,
    /// The request tensors' shared-memory file (read).
    pub request_file: PathBuf,
    /// The answer tensors' shared-memory file (written).
    pub answer_file: PathBuf,
}

/// When this process was started as a worker (`serve --isolated-worker SPEC`): serves its server
/// until it closes the pipe and returns the exit code; otherwise `None` at once. Programs that
/// use [`crate::server::run`] call this first in `main` (the server re-executes its own binary).
pub fn worker_main_if_asked() -> Option<i32> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != WORKER_FLAG {
        return None;
    }
    let spec = args.next().and_then(|s| s.into_string().ok()).unwrap_or_default();
    let spec: WorkerSpec = match serde_json::from_str(&spec) {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("serve {WORKER_FLAG}: the worker's spec: {error}");
            return Some(2);
        }
    };
    Some(match serve_requests(&spec) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("serve {WORKER_FLAG} ({}): {error}", spec.model.display());
            1
        }
    })
}

fn serve_requests(spec: &WorkerSpec) -> std::io::Result<()> {
    end_with_the_server();
    let mut from = BufReader::new(std::io::stdin().lock());
    let mut to = BufWriter::new(std::io::stdout().lock());
    let request_file = File::open(&spec.request_file)?;
    let answer_file = OpenOptions::new().read(true).write(true).open(&spec.answer_file)?;
    let session = match session_for(&spec.model, None, &spec.provider, spec.threads) {
        Ok(session) => session,
        Err(error) => return wire::send(&mut to, &Reply::Failed(error.to_string())),
    };
    wire::send(&mut to, &Reply::Loaded)?;
    while let Some(request) = wire::receive::<RunRequest>(&mut from)? {
        let reply = run_one(&session, &request_file, &answer_file, &request);
        wire::send(&mut to, &reply)?;
    }
    Ok(())
}

/// A worker whose server is gone (killed, so its pipe's end is only seen between requests)
/// ends too, even in the middle of a long run: a thread watches for the parent to change.
fn end_with_the_server() {
    let server = std::os::unix::process::parent_id();
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        if std::os::unix::process::parent_id() != server {
            std::process::exit(0);
        }
    });
}

fn run_one(session: &onnxrt::Session, request_file: &File, answer_file: &File, request: &RunRequest) -> Reply {
    let mut inputs: Vec<(&str, Value<'static>)> = Vec::with_capacity(request.inputs.len());
    for placed in &request.inputs {
        match wire::take(request_file, placed) {
            Ok(value) => inputs.push((placed.name.as_str(), value)),
            Err(why) => return Reply::Refused(why),
        }
    }
    let mut options = match onnxrt::RunOptions::new() {
        Ok(options) => options,
        Err(error) => return Reply::Failed(error.to_string()),
    };
    if request.shrink_arena {
        // Returns the arena's unused chunks to the system at the end of this run.
        if let Err(error) = options.config_entry("memory.enable_memory_arena_shrinkage", "cpu:0") {
            return Reply::Failed(error.to_string());
        }
    }
    let wanted: Vec<&str> = request.outputs.iter().map(String::as_str).collect();
    let pairs = inputs.iter().map(|(name, value)| (*name, value));
    match session.run_with(pairs, &wanted, Some(&options)) {
        Ok(outputs) => {
            let named = outputs.into_named();
            match wire::place(answer_file, named.iter().map(|(name, value)| (name.as_str(), value))) {
                Ok(placed) => Reply::Ran(placed),
                Err(why) => Reply::Failed(why),
            }
        }
        Err(error) => match classify_run_error(&error) {
            RunErrorKind::Request => Reply::Refused(error.to_string()),
            RunErrorKind::Server => Reply::Failed(error.to_string()),
        },
    }
}
