//! The server's side: a model's worker processes, each running one request at a time, started
//! on demand up to the model's `concurrency`, restarted after a crash (counted).

use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use onnxrt::Value;

use super::wire::{self, Reply, RunRequest};
use super::worker::{WorkerSpec, WORKER_FLAG};

/// Inputs larger than this in all return the worker's arena memory after their run.
pub const SHRINK_AFTER_BYTES: u64 = 16 << 20;

/// Why an isolated run gave no outputs.
#[derive(Debug)]
pub enum IsolatedError {
    /// ONNX Runtime refused the inputs (the client's fault), with its reason.
    Refused(String),
    /// The run failed (ORT's reason, or the worker could not be started).
    Failed(String),
    /// The worker process died running this request (a signal or an exit code); it is restarted.
    Crashed(String),
    /// The run was stopped from outside ([`RunHandle::abandon`]: the request's deadline passed).
    Abandoned,
}

/// Lets the request's async side stop its run: the worker running it is killed (and replaced).
#[derive(Debug, Default)]
pub struct RunHandle {
    child: Mutex<Option<Arc<Mutex<Child>>>>,
    abandoned: AtomicBool,
}

impl RunHandle {
    /// Kills the worker running this request (if one has it), so a request past its deadline
    /// does not keep a worker and a core busy.
    pub fn abandon(&self) {
        self.abandoned.store(true, Relaxed);
        let child = self.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Some(child) = child {
            let _ = child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).kill();
        }
    }
}

/// One worker process and its pipe and files.
struct Worker {
    child: Arc<Mutex<Child>>,
    to: BufWriter<ChildStdin>,
    from: BufReader<ChildStdout>,
    request_file: File,
    answer_file: File,
}

/// The worker processes of one model.
pub struct WorkerPool {
    name: String,
    program: PathBuf,
    spec: WorkerSpec,
    idle: Mutex<Vec<Worker>>,
    /// The most workers kept alive: the model's `concurrency` (runs at once). A worker parked
    /// beyond it is ended, so crash replacements never pile up past the limit.
    most: usize,
    /// Workers that died running a request (each answered 500 and replaced).
    pub crashes: AtomicU64,
    /// Workers started, the first ones included.
    pub started: AtomicU64,
    next_file: AtomicU64,
    /// This pool's number in this process: its shared-memory files' names carry it.
    number: u64,
}

/// Pools started in this process so far.
static POOLS: AtomicU64 = AtomicU64::new(0);

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool").field("name", &self.name).field("model", &self.spec.model).finish_non_exhaustive()
    }
}

impl WorkerPool {
    /// A pool for the model `name` in `model`, its workers started from this process's own
    /// program (`serve`, which turns worker on [`WORKER_FLAG`]); starts one worker now, so a
    /// model its runtime cannot load fails here.
    pub fn start(
        name: &str,
        model: &Path,
        provider: &crate::provider::ProviderSetup,
        threads: Option<usize>,
        most: usize,
    ) -> Result<WorkerPool, String> {
        let program = std::env::current_exe().map_err(|e| format!("this program's path (to start workers): {e}"))?;
        let model = std::path::absolute(model).map_err(|e| format!("{}: {e}", model.display()))?;
        let spec = WorkerSpec {
            model,
            provider: provider.clone(),
            threads,
            request_file: PathBuf::new(),
            answer_file: PathBuf::new(),
        };
        let pool = WorkerPool {
            name: name.to_owned(),
            program,
            spec,
            idle: Mutex::new(Vec::new()),
            most: most.max(1),
            crashes: AtomicU64::new(0),
            started: AtomicU64::new(0),
            next_file: AtomicU64::new(0),
            number: POOLS.fetch_add(1, Relaxed),
        };
        sweep_debris(&shared_memory_folder());
        let first = pool.spawn()?;
        pool.park(first);
        Ok(pool)
    }

    /// Runs `inputs` in a worker, answering the `outputs` named (all when empty). Blocks: call
    /// from a thread that may wait (the caller bounds how many run at once).
    pub fn run(
        self: &Arc<Self>,
        inputs: &[(String, Value<'static>)],
        outputs: &[String],
        handle: &RunHandle,
    ) -> Result<Vec<(String, Value<'static>)>, IsolatedError> {
        let pairs: Vec<(&str, &Value<'_>)> = inputs.iter().map(|(name, value)| (name.as_str(), value)).collect();
        self.run_borrowed(&pairs, outputs, handle)
    }

    /// [`run`](WorkerPool::run) on borrowed values (a batch's rows in the batcher's buffers).
    pub fn run_borrowed(
        self: &Arc<Self>,
        inputs: &[(&str, &Value<'_>)],
        outputs: &[String],
        handle: &RunHandle,
    ) -> Result<Vec<(String, Value<'static>)>, IsolatedError> {
        let mut worker = match self.unpark() {
            Some(worker) => worker,
            None => self.spawn().map_err(IsolatedError::Failed)?,
        };
        *handle.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&worker.child));
        if handle.abandoned.load(Relaxed) {
            self.park(worker);
            return Err(IsolatedError::Abandoned);
        }
        let placed = wire::place(&worker.request_file, inputs.iter().copied()).map_err(IsolatedError::Refused)?;
        let bytes: u64 = placed.iter().map(|p| p.len).sum();
        let request =
            RunRequest { inputs: placed, outputs: outputs.to_vec(), shrink_arena: bytes > SHRINK_AFTER_BYTES };
        let replied = wire::send(&mut worker.to, &request).and_then(|()| wire::receive::<Reply>(&mut worker.from));
        *handle.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        let reply = match replied {
            Ok(Some(reply)) => reply,
            Ok(None) | Err(_) => {
                let status = end(&worker);
                if handle.abandoned.load(Relaxed) {
                    return Err(IsolatedError::Abandoned);
                }
                self.crashes.fetch_add(1, Relaxed);
                let how = describe(status);
                tracing::error!(model = %self.name, worker = %how, "a worker process died running a request; starting another");
                let pool = Arc::clone(self);
                std::thread::spawn(move || match pool.spawn() {
                    Ok(worker) => pool.park(worker),
                    Err(why) => tracing::error!(model = %pool.name, cause = %why, "could not restart a worker process"),
                });
                return Err(IsolatedError::Crashed(format!(
                    "the worker process running model `{}` {how} on this request (ONNX Runtime crashed on these inputs); \
                     the worker was restarted",
                    self.name
                )));
            }
        };
        let result = match reply {
            Reply::Ran(placed) => placed
                .iter()
                .map(|p| wire::take(&worker.answer_file, p).map(|value| (p.name.clone(), value)))
                .collect::<Result<Vec<_>, _>>()
                .map_err(IsolatedError::Failed),
            Reply::Refused(why) => Err(IsolatedError::Refused(why)),
            Reply::Failed(why) => Err(IsolatedError::Failed(why)),
            Reply::Loaded => Err(IsolatedError::Failed("the worker answered out of turn".into())),
        };
        if bytes > SHRINK_AFTER_BYTES || result.as_ref().is_ok_and(|o| o.len() as u64 > SHRINK_AFTER_BYTES) {
            // An outsized request: give the shared-memory pages back too.
            let _ = worker.request_file.set_len(0);
            let _ = worker.answer_file.set_len(0);
        }
        self.park(worker);
        result
    }

    /// Worker processes alive now (idle ones).
    pub fn idle_workers(&self) -> usize {
        self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    /// Keeps a worker for the next request, or ends it when `most` are kept already (a run that
    /// found none idle started its own while a crashed one's replacement was starting).
    fn park(&self, worker: Worker) {
        let mut idle = self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < self.most {
            idle.push(worker);
            return;
        }
        drop(idle);
        retire(worker);
    }

    fn unpark(&self) -> Option<Worker> {
        self.idle.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop()
    }

    /// Starts a worker and waits until it has loaded the model.
    fn spawn(&self) -> Result<Worker, String> {
        let folder = shared_memory_folder();
        let n = self.next_file.fetch_add(1, Relaxed);
        // Numbers, not the model's name: a name of up to 255 bytes, legal as a folder, would
        // make a file name too long.
        let stem = format!("onnxrt-serve-{}-{}-{n}", std::process::id(), self.number);
        let request_path = folder.join(format!("{stem}.request"));
        let answer_path = folder.join(format!("{stem}.answer"));
        let files = Files(vec![request_path.clone(), answer_path.clone()]);
        let create = |path: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| format!("shared memory {}: {e}", path.display()))
        };
        let request_file = create(&request_path)?;
        let answer_file = create(&answer_path)?;
        let spec = WorkerSpec { request_file: request_path, answer_file: answer_path, ..self.spec.clone() };
        let spec = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
        let mut child = Command::new(&self.program)
            .arg(WORKER_FLAG)
            .arg(spec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("starting a worker process ({}): {e}", self.program.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err("a worker process without its pipes".into());
        };
        let mut worker = Worker {
            child: Arc::new(Mutex::new(child)),
            to: BufWriter::new(stdin),
            from: BufReader::new(stdout),
            request_file,
            answer_file,
        };
        let hello = wire::receive::<Reply>(&mut worker.from);
        // Both processes have the files open now (or the worker is gone): their names can go.
        drop(files);
        match hello {
            Ok(Some(Reply::Loaded)) => {
                self.started.fetch_add(1, Relaxed);
                Ok(worker)
            }
            Ok(Some(Reply::Failed(why))) => {
                let _ = end(&worker);
                Err(why)
            }
            other => {
                let status = end(&worker);
                Err(format!("the worker process {} before loading the model ({other:?})", describe(status)))
            }
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        for worker in self.idle.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).drain(..) {
            retire(worker);
        }
    }
}

/// Ends a worker between requests: closing its stdin ends it; then it is reaped.
fn retire(worker: Worker) {
    let Worker { child, to, .. } = worker;
    drop(to);
    let _ = child.lock().unwrap_or_else(std::sync::PoisonError::into_inner).wait();
}

/// Removes the files' names when dropped.
struct Files(Vec<PathBuf>);

impl Drop for Files {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Removes the shared-memory files of servers that are gone: a file's name is dropped once its
/// worker has opened it, so only a server killed while a worker started leaves one behind. The
/// name carries the server's pid; a pid with no `/proc` entry is a server that is gone.
fn sweep_debris(folder: &Path) {
    let Ok(entries) = std::fs::read_dir(folder) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.strip_prefix("onnxrt-serve-")).and_then(|n| n.split('-').next())
        else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// `/dev/shm` (memory only) where there is one, else the temporary folder.
fn shared_memory_folder() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// Kills a worker that broke its protocol (if it still runs) and reaps it.
fn end(worker: &Worker) -> Option<ExitStatus> {
    let mut child = worker.child.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    // The pipe broke while the process lives: wait a moment for it to end on its own (a crash
    // closes the pipe just before the process is gone), then kill it.
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(2));
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
    }
    let _ = child.kill();
    child.wait().ok()
}

/// "died of signal 8 (SIGFPE)", "exited with code 3".
fn describe(status: Option<ExitStatus>) -> String {
    match status {
        Some(status) => match (status.signal(), status.code()) {
            (Some(signal), _) => format!("died of signal {signal} ({})", signal_name(signal)),
            (None, Some(code)) => format!("exited with code {code}"),
            (None, None) => format!("ended ({status})"),
        },
        None => "ended (its status is unknown)".into(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => "a signal",
    }
}
