//! The process-wide ORT environment: created once, shared by `Arc`, with ORT's log routed to the
//! `log` crate (target `onnxrt::ort`) and the latest warnings kept for diagnostics.
//!
//! ORT allows one `OrtEnv` per process. [`Environment::global`] returns the live one or creates
//! it with defaults; [`EnvironmentBuilder::commit`] creates it with your settings and fails if one
//! is already alive (settings cannot change afterwards). Sessions hold an `Arc<Environment>`, so
//! the environment outlives every session made in it.
//!
//! ORT's own env is created by the first `Environment` and never released: ORT does not support
//! creating it again (state it keeps in statics still points at the first env's logger, and its
//! maintainers say to create it once per process). An `Environment` made after the previous one
//! was dropped reuses it: its log hook and log level take effect; ORT's log id and global thread
//! pools stay those of the first (a different `global_thread_pools` is refused).

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::{Arc, Mutex, Weak};

use onnxrt_sys::OrtEnv;

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;

/// ORT's log severities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Everything, including which provider each node was placed on.
    Verbose,
    /// Informational.
    Info,
    /// Warnings (default).
    Warning,
    /// Errors.
    Error,
    /// Fatal errors only.
    Fatal,
}

impl LogLevel {
    pub(crate) fn to_raw(self) -> onnxrt_sys::OrtLoggingLevel {
        match self {
            LogLevel::Verbose => onnxrt_sys::ORT_LOGGING_LEVEL_VERBOSE,
            LogLevel::Info => onnxrt_sys::ORT_LOGGING_LEVEL_INFO,
            LogLevel::Warning => onnxrt_sys::ORT_LOGGING_LEVEL_WARNING,
            LogLevel::Error => onnxrt_sys::ORT_LOGGING_LEVEL_ERROR,
            LogLevel::Fatal => onnxrt_sys::ORT_LOGGING_LEVEL_FATAL,
        }
    }

    fn from_raw(raw: onnxrt_sys::OrtLoggingLevel) -> LogLevel {
        match raw {
            0 => LogLevel::Verbose,
            1 => LogLevel::Info,
            2 => LogLevel::Warning,
            3 => LogLevel::Error,
            _ => LogLevel::Fatal,
        }
    }
}

/// One message from ORT's logger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// Severity.
    pub level: LogLevel,
    /// ORT's category (e.g. `onnxruntime`).
    pub category: String,
    /// The log id (the environment's name or a session's log id).
    pub log_id: String,
    /// Source location inside ORT.
    pub code_location: String,
    /// The message.
    pub message: String,
}

/// A function that sees every ORT log record (in addition to the `log` crate).
pub type LogHook = Box<dyn Fn(&LogRecord) + Send + Sync>;

/// How many recent records are kept for diagnostics.
const KEPT_RECORDS: usize = 256;

/// State the C logging callback reaches through its `param` pointer.
struct LoggerState {
    hook: Option<LogHook>,
    recent: Mutex<VecDeque<LogRecord>>,
}

/// Global thread pools shared by every session (sessions then opt in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GlobalThreadPools {
    /// Intra-op threads (0: ORT's default).
    pub intra_op_threads: usize,
    /// Inter-op threads (0: ORT's default).
    pub inter_op_threads: usize,
}

/// The process's ORT environment: logging (routed to the `log` crate, target `onnxrt::ort`,
/// latest warnings in [`recent_log`](Environment::recent_log)) and optional global thread pools.
///
/// One per process: [`Environment::global`] returns the live one or makes a default one;
/// [`EnvironmentBuilder::commit`] makes one with your settings and fails while another is alive.
/// Every session holds an `Arc<Environment>`, so it outlives them; but the registry holds it only
/// weakly, so **keep the `Arc` from `commit()`** (or pass it to
/// [`SessionBuilder::environment`](crate::SessionBuilder::environment)): if it is dropped
/// before the next session is made, that session gets a default environment, and the
/// replacement is reported as a warning in the `log` crate and in the new environment's
/// `recent_log()`.
///
/// ```
/// use onnxrt::{Environment, LogLevel, Session};
///
/// let env = Environment::builder().name("service").log_level(LogLevel::Warning).commit()?;
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
/// let session = Session::builder().environment(env.clone()).commit_from_file(model)?;
/// assert_eq!(session.environment().name(), "service");
/// # Ok::<(), onnxrt::Error>(())
/// ```
///
/// Threads: sessions run on their own intra-op pools unless the environment has
/// [global thread pools](EnvironmentBuilder::global_thread_pools) and the session opts in;
/// asynchronous runs use those pools' workers (see [`Session::run_async`](crate::Session::run_async)).
pub struct Environment {
    // ORT's env, never released (see the module docs and `Registry`).
    raw: *mut OrtEnv,
    // Reached by ORT's logging callback through `LOGGER` while this environment is the live one.
    logger: Arc<LoggerState>,
    name: String,
    global_thread_pools: Option<GlobalThreadPools>,
}

// SAFETY: ORT documents the environment as shareable by every thread of the process; it is never
// released, and only changed (its log level) under the registry lock while no `Environment` is
// alive. The logger state is Sync (a Mutex and a Sync hook).
unsafe impl Send for Environment {}
// SAFETY: as above.
unsafe impl Sync for Environment {}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("name", &self.name)
            .field("global_thread_pools", &self.global_thread_pools)
            .finish()
    }
}

/// ORT's env as created (once), with what ORT fixed at creation.
struct OrtEnvSlot {
    raw: *mut OrtEnv,
    pools: Option<GlobalThreadPools>,
}

/// The process's environments.
///
/// Issue 20: releasing ORT's env while another thread created one handed the new `Environment`
/// the old env, whose logger `param` pointed at the dropped environment's freed state; and ORT
/// itself keeps state from its first env that dangles once that env is released. So ORT's env
/// is never released (`ort`), and its logging callback takes no `param`: it reaches the live
/// environment's state through `LOGGER`, which an `Environment` clears when it goes.
struct Registry {
    current: Weak<Environment>,
    ort: Option<OrtEnvSlot>,
    // Name and level of the last environment made by `EnvironmentBuilder::commit`, until a
    // default one replaces it (then said loudly: its settings are gone).
    committed: Option<(String, LogLevel)>,
}

// SAFETY: the env pointer is only passed to ORT, whose env may be used from any thread.
unsafe impl Send for Registry {}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { current: Weak::new(), ort: None, committed: None });

/// The live environment's logger state, for ORT's logging callback (an `Arc` clone is taken
/// per record, so a state stays valid while a hook runs even if its environment goes).
static LOGGER: Mutex<Option<Arc<LoggerState>>> = Mutex::new(None);

impl Drop for Environment {
    fn drop(&mut self) {
        // Records from now on reach the `log` crate only; a newer environment may already have
        // installed its own state (the `Weak` stopped upgrading before this ran): keep that.
        let mut logger = LOGGER.lock().unwrap_or_else(|e| e.into_inner());
        if logger.as_ref().is_some_and(|live| Arc::ptr_eq(live, &self.logger)) {
            *logger = None;
        }
    }
}

impl Environment {
    /// Settings for a new environment.
    pub fn builder() -> EnvironmentBuilder {
        EnvironmentBuilder { name: "onnxrt".into(), level: LogLevel::Warning, hook: None, thread_pools: None }
    }

    /// The live environment, or a new one with default settings.
    pub fn global() -> Result<Arc<Environment>> {
        let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(env) = registry.current.upgrade() {
            return Ok(env);
        }
        // Default settings, except that thread pools are whatever ORT's env was made with.
        let mut builder = Environment::builder();
        builder.thread_pools = registry.ort.as_ref().and_then(|ort| ort.pools);
        let env = Arc::new(builder.create(&mut registry)?);
        registry.current = Arc::downgrade(&env);
        if let Some((name, level)) = registry.committed.take() {
            env.warn_replaced(&name, level);
        }
        Ok(env)
    }

    /// Says, in the `log` crate and in [`Environment::recent_log`], that a default environment
    /// took the place of the configured one `name`, which was dropped.
    fn warn_replaced(&self, name: &str, level: LogLevel) {
        let message = format!(
            "the environment `{name}` (log level {level:?}) built with Environment::builder() was dropped, so a \
             default one (log level Warning, no hook) was created for a new session; its settings are lost. \
             Fix: keep the Arc<Environment> from commit() alive, or pass it to SessionBuilder::environment"
        );
        log::warn!(target: "onnxrt::env", "{message}");
        let record = LogRecord {
            level: LogLevel::Warning,
            category: "onnxrt".into(),
            log_id: self.name.clone(),
            code_location: "onnxrt::Environment::global".into(),
            message,
        };
        if let Ok(mut recent) = self.logger.recent.lock() {
            recent.push_back(record);
        }
    }

    /// The name given at creation (ORT's log id).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Global thread pools, if the environment has them.
    pub fn global_thread_pools(&self) -> Option<GlobalThreadPools> {
        self.global_thread_pools
    }

    /// The latest ORT log records of warning severity or worse (at most 256), oldest first.
    /// ORT reports some failures only here (e.g. which library a provider could not load).
    pub fn recent_log(&self) -> Vec<LogRecord> {
        self.logger.recent.lock().map(|r| r.iter().cloned().collect()).unwrap_or_default()
    }

    pub(crate) fn as_ptr(&self) -> *mut OrtEnv {
        self.raw
    }
}

/// Settings for [`Environment`]; nothing reaches ORT before [`EnvironmentBuilder::commit`].
pub struct EnvironmentBuilder {
    name: String,
    level: LogLevel,
    hook: Option<LogHook>,
    thread_pools: Option<GlobalThreadPools>,
}

impl EnvironmentBuilder {
    /// ORT's log id for this environment.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Lowest severity ORT emits (default: warning).
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.level = level;
        self
    }

    /// A function called with every record. A panic inside it is caught and never reaches ORT.
    pub fn log_hook(mut self, hook: impl Fn(&LogRecord) + Send + Sync + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// Thread pools shared by all sessions that call `SessionBuilder::use_global_thread_pools`.
    pub fn global_thread_pools(mut self, pools: GlobalThreadPools) -> Self {
        self.thread_pools = Some(pools);
        self
    }

    /// Creates the process's environment.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if an environment is already alive (its settings cannot be
    /// changed; build it once at start-up); ORT's errors.
    ///
    /// Corresponds to `OrtApi::CreateEnvWithCustomLogger` (or `...AndGlobalThreadPools`).
    #[doc(alias = "CreateEnvWithCustomLogger")]
    pub fn commit(self) -> Result<Arc<Environment>> {
        let mut registry = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = registry.current.upgrade() {
            let existing_name = existing.name.clone();
            // `existing` may be the last reference now: drop it after the lock.
            drop(registry);
            drop(existing);
            return Err(Error::InvalidArgument {
                what: format!("a second environment `{}`", self.name),
                why: format!("environment `{existing_name}` is alive; ORT allows one per process. Build it once at start-up, or use Environment::global()"),
            });
        }
        let committed = (self.name.clone(), self.level);
        let env = Arc::new(self.create(&mut registry)?);
        registry.current = Arc::downgrade(&env);
        registry.committed = Some(committed);
        Ok(env)
    }

    /// A new `Environment` over ORT's env (created now if this is the first), whose logger state
    /// becomes the live one. Called with the registry locked and no environment alive.
    fn create(self, registry: &mut Registry) -> Result<Environment> {
        let api = api()?;
        let raw = match &registry.ort {
            Some(ort) => {
                if self.thread_pools.is_some() && self.thread_pools != ort.pools {
                    return Err(Error::InvalidArgument {
                        what: format!("environment `{}` with global thread pools {:?}", self.name, self.thread_pools),
                        why: format!("ONNX Runtime keeps the thread pools of the process's first environment ({:?}) until the process ends", ort.pools),
                    });
                }
                // The new level applies to ORT's env (the log id cannot change).
                // SAFETY: the env is live (never released); a plain integer.
                unsafe { ort!(api, UpdateEnvWithCustomLogLevel(ort.raw, self.level.to_raw())) }?;
                ort.raw
            }
            None => {
                let raw = self.create_ort_env(api)?;
                registry.ort = Some(OrtEnvSlot { raw, pools: self.thread_pools });
                raw
            }
        };
        let logger = Arc::new(LoggerState { hook: self.hook, recent: Mutex::new(VecDeque::new()) });
        *LOGGER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&logger));
        Ok(Environment { raw, logger, name: self.name, global_thread_pools: self.thread_pools })
    }

    /// Creates ORT's env (once per process), logging through `log_callback` without a `param`.
    fn create_ort_env(&self, api: &crate::api::Api) -> Result<*mut OrtEnv> {
        let name = CString::new(self.name.clone()).map_err(|_| Error::nul("environment name", &self.name))?;
        let param = std::ptr::null_mut::<c_void>();
        let mut raw = std::ptr::null_mut();
        match self.thread_pools {
            None => {
                // SAFETY: the callback takes no state through `param`; `name` outlives the call.
                unsafe {
                    ort!(
                        api,
                        CreateEnvWithCustomLogger(
                            Some(log_callback),
                            param,
                            self.level.to_raw(),
                            name.as_ptr(),
                            &mut raw
                        )
                    )
                }?;
            }
            Some(pools) => {
                let mut options = std::ptr::null_mut();
                // SAFETY: the out-pointer is valid.
                unsafe { ort!(api, CreateThreadingOptions(&mut options)) }?;
                // SAFETY: on success we own the threading options.
                let options = unsafe { Owned::from_raw(options) }?;
                let intra = i32::try_from(pools.intra_op_threads).map_err(|_| too_many("intra_op_threads"))?;
                let inter = i32::try_from(pools.inter_op_threads).map_err(|_| too_many("inter_op_threads"))?;
                // SAFETY: `options` is live; plain integers.
                unsafe { ort!(api, SetGlobalIntraOpNumThreads(options.as_ptr(), intra)) }?;
                // SAFETY: as above.
                unsafe { ort!(api, SetGlobalInterOpNumThreads(options.as_ptr(), inter)) }?;
                // SAFETY: as for CreateEnvWithCustomLogger; ORT copies the threading options.
                unsafe {
                    ort!(
                        api,
                        CreateEnvWithCustomLoggerAndGlobalThreadPools(
                            Some(log_callback),
                            param,
                            self.level.to_raw(),
                            name.as_ptr(),
                            options.as_ptr(),
                            &mut raw
                        )
                    )
                }?;
            }
        }
        if raw.is_null() {
            return Err(Error::null_out("CreateEnvWithCustomLogger", "environment"));
        }
        Ok(raw)
    }
}

fn too_many(what: &str) -> Error {
    Error::InvalidArgument { what: what.into(), why: "more threads than an i32 holds".into() }
}

fn text(ptr: *const c_char) -> String {
    if ptr.is_null() {
        return String::new();
    }
    // SAFETY: ORT passes NUL-terminated strings valid for the duration of the callback.
    unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
}

/// ORT's logging callback. Its whole body runs inside `ffi_guard::guard`, and the user's code in
/// it (the `log` crate's logger, the hook) under `ffi_guard::catch`, which also disposes of a
/// panic's payload: nothing unwinds into C, and a panicking logger does not silence the hook.
unsafe extern "C" fn log_callback(
    _param: *mut c_void,
    severity: onnxrt_sys::OrtLoggingLevel,
    category: *const c_char,
    log_id: *const c_char,
    code_location: *const c_char,
    message: *const c_char,
) {
    crate::ffi_guard::guard(
        || (),
        || {
            let record = LogRecord {
                level: LogLevel::from_raw(severity),
                category: text(category),
                log_id: text(log_id),
                code_location: text(code_location),
                message: text(message),
            };
            let level = match record.level {
                LogLevel::Verbose => log::Level::Trace,
                LogLevel::Info => log::Level::Debug,
                LogLevel::Warning => log::Level::Warn,
                LogLevel::Error | LogLevel::Fatal => log::Level::Error,
            };
            let _ = crate::ffi_guard::catch(
                || log::log!(target: "onnxrt::ort", level, "[{}] {}: {}", record.log_id, record.code_location, record.message),
            );
            // The live environment's state (none between environments): a clone, so the lock is
            // not held while the hook runs and the state outlives this call whatever happens.
            let Some(state) = LOGGER.lock().ok().and_then(|live| live.clone()) else { return };
            if record.level >= LogLevel::Warning {
                if let Ok(mut recent) = state.recent.lock() {
                    if recent.len() == KEPT_RECORDS {
                        recent.pop_front();
                    }
                    recent.push_back(record.clone());
                }
            }
            if let Some(hook) = &state.hook {
                let _ = crate::ffi_guard::catch(|| hook(&record));
            }
        },
    )
}
