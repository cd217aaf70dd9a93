//! The process's ORT environment: one value for the whole process, made once and kept until it
//! ends, with ORT's log routed to the `log` crate (target `onnxrt::ort`), to a log hook that can be
//! set at any time, and its latest warnings kept for diagnostics.
//!
//! ORT allows one `OrtEnv` per process and does not support creating it again (state it keeps in
//! statics points at the first env's logger; its maintainers say to create it once per process).
//! So the environment is made by the first [`EnvironmentBuilder::commit`] (with its settings) or
//! the first [`Environment::global`] (with defaults; a session made without an environment calls
//! it), and never released. A later `commit` returns that same environment when it asks for the
//! same settings and no hook; with other settings it fails with [`Error::EnvironmentExists`],
//! naming the settings in force. The log hook and the log level can change at any time
//! ([`Environment::set_log_hook`], [`Environment::set_log_level`]); the name (ORT's log id) and
//! the global thread pools cannot.

mod logging;

use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex, OnceLock};

use onnxrt_sys::OrtEnv;

use logging::{log_callback, LOGGER};
pub use logging::{LogHook, LogLevel, LogRecord};

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;

/// The process's environment, once made ([`Environment::global`], [`EnvironmentBuilder::commit`]).
static PROCESS: OnceLock<Arc<Environment>> = OnceLock::new();

/// ORT's env, made once (possibly before the process's environment, by a crate-internal session
/// that must not fix the settings: see [`Environment::provisional`]), with the pools it was made with.
static ORT_ENV: Mutex<Option<OrtEnvSlot>> = Mutex::new(None);

struct OrtEnvSlot {
    raw: *mut OrtEnv,
    pools: Option<GlobalThreadPools>,
}

// SAFETY: the env pointer is only passed to ORT, whose env may be used from any thread.
unsafe impl Send for OrtEnvSlot {}

/// Global thread pools shared by every session (sessions then opt in).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GlobalThreadPools {
    /// Intra-op threads (0: ORT's default).
    pub intra_op_threads: usize,
    /// Inter-op threads (0: ORT's default).
    pub inter_op_threads: usize,
}

/// The process's ORT environment: logging (routed to the `log` crate, target `onnxrt::ort`, to a
/// [log hook](Environment::set_log_hook), latest warnings in
/// [`recent_log`](Environment::recent_log)) and optional global thread pools.
///
/// One per process, kept until the process ends: [`Environment::global`] returns it (making it
/// with defaults the first time); [`EnvironmentBuilder::commit`] makes it with your settings, so
/// call it once at start-up, before any session. Sessions hold an `Arc<Environment>`; dropping
/// yours changes nothing.
///
/// ```
/// use onnxrt::{Environment, LogLevel, Session};
///
/// let env = Environment::builder().name("service").log_level(LogLevel::Warning).commit()?;
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
/// let session = Session::builder().commit_from_file(model)?;
/// assert_eq!(session.environment().name(), "service");
/// // The same settings again: the same environment. Other settings: Error::EnvironmentExists.
/// assert!(std::sync::Arc::ptr_eq(&env, &Environment::builder().name("service").commit()?));
/// assert_eq!(Environment::builder().name("other").commit().unwrap_err().variant(), "EnvironmentExists");
/// # Ok::<(), onnxrt::Error>(())
/// ```
///
/// Threads: sessions run on their own intra-op pools unless the environment has
/// [global thread pools](EnvironmentBuilder::global_thread_pools) and the session opts in;
/// asynchronous runs use those pools' workers (see [`Session::run_async`](crate::Session::run_async)).
pub struct Environment {
    // ORT's env, never released (see the module docs).
    raw: *mut OrtEnv,
    name: String,
    global_thread_pools: Option<GlobalThreadPools>,
}

// SAFETY: ORT documents the environment as shareable by every thread of the process; it is never
// released, and only changed through ORT's own thread-safe calls (its log level).
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

impl Environment {
    /// Settings for the process's environment.
    pub fn builder() -> EnvironmentBuilder {
        EnvironmentBuilder { name: "onnxrt".into(), level: LogLevel::Warning, hook: None, thread_pools: None }
    }

    /// The process's environment, made now with default settings if there is none yet.
    pub fn global() -> Result<Arc<Environment>> {
        if let Some(env) = PROCESS.get() {
            return Ok(Arc::clone(env));
        }
        let mut ort_env = ORT_ENV.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(env) = PROCESS.get() {
            return Ok(Arc::clone(env));
        }
        // Default settings, except that thread pools are whatever ORT's env was made with.
        let mut builder = Environment::builder();
        builder.thread_pools = ort_env.as_ref().and_then(|ort| ort.pools);
        builder.install(&mut ort_env)
    }

    /// The process's environment if there is one; otherwise one over ORT's env (made now with
    /// defaults if needed) that does not become the process's, so a later
    /// [`EnvironmentBuilder::commit`] still applies its settings. For sessions the crate makes for
    /// itself (`Value::none`, `Value::empty_sequence`).
    pub(crate) fn provisional() -> Result<Arc<Environment>> {
        if let Some(env) = PROCESS.get() {
            return Ok(Arc::clone(env));
        }
        let mut ort_env = ORT_ENV.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(env) = PROCESS.get() {
            return Ok(Arc::clone(env));
        }
        let builder = Environment::builder();
        let (raw, pools) = builder.ort_env(&mut ort_env)?;
        Ok(Arc::new(Environment { raw, name: builder.name, global_thread_pools: pools }))
    }

    /// The name given at creation (ORT's log id).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Global thread pools, if the environment has them.
    pub fn global_thread_pools(&self) -> Option<GlobalThreadPools> {
        self.global_thread_pools
    }

    /// The lowest severity ORT emits now.
    pub fn log_level(&self) -> LogLevel {
        *LOGGER.level.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the lowest severity ORT emits, for the whole process.
    ///
    /// Corresponds to `OrtApi::UpdateEnvWithCustomLogLevel`.
    #[doc(alias = "UpdateEnvWithCustomLogLevel")]
    pub fn set_log_level(&self, level: LogLevel) -> Result<()> {
        let api = api()?;
        let mut current = LOGGER.level.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the env is live (never released); a plain integer.
        unsafe { ort!(api, UpdateEnvWithCustomLogLevel(self.raw, level.to_raw())) }?;
        *current = level;
        Ok(())
    }

    /// Calls `hook` with every ORT log record from now on, instead of the previous hook (there is
    /// one for the process). A panic inside it is caught and never reaches ORT. A record already
    /// being handed to the previous hook on another thread may still reach that one.
    pub fn set_log_hook(&self, hook: impl Fn(&LogRecord) + Send + Sync + 'static) {
        *LOGGER.hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(hook));
    }

    /// Stops calling the log hook (records still reach the `log` crate and `recent_log`).
    pub fn remove_log_hook(&self) {
        *LOGGER.hook.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// The latest ORT log records of warning severity or worse (at most 256), oldest first.
    /// ORT reports some failures only here (e.g. which library a provider could not load).
    pub fn recent_log(&self) -> Vec<LogRecord> {
        LOGGER.recent.lock().map(|r| r.iter().cloned().collect()).unwrap_or_default()
    }

    pub(crate) fn as_ptr(&self) -> *mut OrtEnv {
        self.raw
    }

    /// The settings in force, as [`Error::EnvironmentExists`] names them.
    fn describe(&self) -> String {
        let hook = LOGGER.hook.lock().map(|h| h.is_some()).unwrap_or(false);
        describe(self.log_level(), hook, self.global_thread_pools)
    }
}

fn describe(level: LogLevel, hook: bool, pools: Option<GlobalThreadPools>) -> String {
    let pools = match pools {
        Some(p) => format!("global thread pools {}/{} (intra/inter)", p.intra_op_threads, p.inter_op_threads),
        None => "no global thread pools".into(),
    };
    format!("log level {level:?}, {}, {pools}", if hook { "a log hook" } else { "no log hook" })
}

/// Settings for the process's [`Environment`]; nothing reaches ORT before [`EnvironmentBuilder::commit`].
pub struct EnvironmentBuilder {
    name: String,
    level: LogLevel,
    hook: Option<LogHook>,
    thread_pools: Option<GlobalThreadPools>,
}

impl EnvironmentBuilder {
    /// ORT's log id for this environment. (If the crate made ORT's env before, for
    /// `Value::none` or `Value::empty_sequence`, ORT keeps the log id `onnxrt`; this name is then
    /// the environment's own.)
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
    /// (Change it later with [`Environment::set_log_hook`].)
    pub fn log_hook(mut self, hook: impl Fn(&LogRecord) + Send + Sync + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// Thread pools shared by all sessions that call `SessionBuilder::use_global_thread_pools`.
    pub fn global_thread_pools(mut self, pools: GlobalThreadPools) -> Self {
        self.thread_pools = Some(pools);
        self
    }

    /// Makes the process's environment with these settings, or returns it if it exists already
    /// with the same name, log level and thread pools and these settings set no hook.
    ///
    /// # Errors
    /// [`Error::EnvironmentExists`] if the process's environment exists with other settings, or
    /// this commit sets a log hook (change that one with [`Environment::set_log_hook`]);
    /// [`Error::BadSetting`] for global thread pools other than those ORT's env was made
    /// with (by a value the crate made before, e.g. `Value::none`); ORT's errors.
    ///
    /// Corresponds to `OrtApi::CreateEnvWithCustomLogger` (or `...AndGlobalThreadPools`).
    #[doc(alias = "CreateEnvWithCustomLogger")]
    pub fn commit(self) -> Result<Arc<Environment>> {
        let mut ort_env = ORT_ENV.lock().unwrap_or_else(|e| e.into_inner());
        match PROCESS.get() {
            Some(env) => {
                let same = env.name == self.name
                    && env.log_level() == self.level
                    && env.global_thread_pools == self.thread_pools
                    && self.hook.is_none();
                if same {
                    return Ok(Arc::clone(env));
                }
                Err(Error::EnvironmentExists {
                    name: env.name.clone(),
                    in_force: env.describe(),
                    asked: format!("`{}`: {}", self.name, describe(self.level, self.hook.is_some(), self.thread_pools)),
                })
            }
            None => self.install(&mut ort_env),
        }
    }

    /// Makes the process's environment over ORT's env (made now if there is none). Called with
    /// `ORT_ENV` locked and no process environment.
    fn install(self, ort_env: &mut Option<OrtEnvSlot>) -> Result<Arc<Environment>> {
        let api = api()?;
        let existed = ort_env.is_some();
        let (raw, pools) = self.ort_env(ort_env)?;
        if existed {
            // ORT's env was made with the default level: this one applies now (the log id cannot change).
            // SAFETY: the env is live (never released); a plain integer.
            unsafe { ort!(api, UpdateEnvWithCustomLogLevel(raw, self.level.to_raw())) }?;
        }
        *LOGGER.level.lock().unwrap_or_else(|e| e.into_inner()) = self.level;
        if let Some(hook) = self.hook {
            *LOGGER.hook.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::from(hook));
        }
        let env = Arc::new(Environment { raw, name: self.name, global_thread_pools: pools });
        // `ORT_ENV` is locked and `PROCESS` was empty: this is the one value it will hold.
        let _ = PROCESS.set(Arc::clone(&env));
        Ok(env)
    }

    /// ORT's env and its thread pools, made now (with these settings) if there is none yet.
    fn ort_env(&self, ort_env: &mut Option<OrtEnvSlot>) -> Result<(*mut OrtEnv, Option<GlobalThreadPools>)> {
        if let Some(ort) = ort_env.as_ref() {
            if self.thread_pools.is_some() && self.thread_pools != ort.pools {
                return Err(Error::BadSetting {
                    setting: format!("global thread pools of environment `{}`", self.name),
                    value: format!("{:?}", self.thread_pools),
                    allowed: format!(
                        "ONNX Runtime keeps the thread pools of its first environment ({:?}) until the process ends",
                        ort.pools
                    ),
                });
            }
            return Ok((ort.raw, ort.pools));
        }
        let raw = self.create_ort_env(api()?)?;
        *ort_env = Some(OrtEnvSlot { raw, pools: self.thread_pools });
        Ok((raw, self.thread_pools))
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
                let intra = i32::try_from(pools.intra_op_threads)
                    .map_err(|_| too_many("intra_op_threads", pools.intra_op_threads))?;
                let inter = i32::try_from(pools.inter_op_threads)
                    .map_err(|_| too_many("inter_op_threads", pools.inter_op_threads))?;
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

fn too_many(what: &str, threads: usize) -> Error {
    Error::BadSetting {
        setting: what.into(),
        value: threads.to_string(),
        allowed: "a thread count that fits an i32".into(),
    }
}
