//! ORT's log, as the process's environment routes it: to the `log` crate (target `onnxrt::ort`),
//! to one settable hook, and the latest warnings kept for diagnostics.

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::{Arc, Mutex};

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

/// The installed log hook, shared with the calls that run it.
pub(super) type SharedHook = Arc<dyn Fn(&LogRecord) + Send + Sync>;

/// The log hook, the level and the latest warnings: one set for the process, reached by ORT's
/// logging callback directly (it takes no `param`).
pub(super) struct Logger {
    // An `Arc` clone is taken per record, so a hook replaced while it runs stays valid until it
    // returns, and the lock is not held while it runs.
    pub(super) hook: Mutex<Option<SharedHook>>,
    pub(super) level: Mutex<LogLevel>,
    pub(super) recent: Mutex<VecDeque<LogRecord>>,
}

pub(super) static LOGGER: Logger =
    Logger { hook: Mutex::new(None), level: Mutex::new(LogLevel::Warning), recent: Mutex::new(VecDeque::new()) };

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
pub(super) unsafe extern "C" fn log_callback(
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
            if record.level >= LogLevel::Warning {
                if let Ok(mut recent) = LOGGER.recent.lock() {
                    if recent.len() == KEPT_RECORDS {
                        recent.pop_front();
                    }
                    recent.push_back(record.clone());
                }
            }
            // A clone, so the lock is not held while the hook runs and the hook outlives this
            // call even if another thread replaces it meanwhile.
            let hook = LOGGER.hook.lock().ok().and_then(|hook| hook.clone());
            if let Some(hook) = hook {
                let _ = crate::ffi_guard::catch(|| hook(&record));
            }
        },
    )
}
