//! Per-run options: a tag for the logs, a log level, and termination from another thread.

use std::ffi::CString;
use std::sync::Arc;

use onnxrt_sys::OrtRunOptions;

use crate::api::api;
use crate::env::LogLevel;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;

struct Shared {
    raw: Owned<OrtRunOptions>,
    /// Adapters the options point to (`add_lora_adapter`); dropped after `raw`.
    adapters: std::sync::Mutex<Vec<Arc<crate::lora::LoraAdapter>>>,
}

// SAFETY: ORT's RunOptionsSetTerminate exists to be called from another thread while Run reads
// the options; the other setters are only reachable through &mut RunOptions (not shared).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// Options for one or more runs. Clone a [`RunTerminator`] from it to cancel runs from elsewhere.
pub struct RunOptions {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunOptions")
    }
}

/// Cancels the runs that use a [`RunOptions`]; `Send + Sync`, so it can live on another thread.
#[derive(Clone)]
pub struct RunTerminator {
    shared: Arc<Shared>,
}

impl RunOptions {
    /// Default options.
    ///
    /// Corresponds to `OrtApi::CreateRunOptions`.
    #[doc(alias = "CreateRunOptions")]
    pub fn new() -> Result<RunOptions> {
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid.
        unsafe { ort!(api, CreateRunOptions(&mut raw)) }?;
        // SAFETY: on success we own the options.
        let raw = unsafe { Owned::from_raw(raw) }?;
        Ok(RunOptions { shared: Arc::new(Shared { raw, adapters: Default::default() }) })
    }

    /// Makes the runs with these options feed `adapter`'s parameters to the model in place of the
    /// inputs (or overridable initializers) of the same names; the options keep it alive.
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.20; ORT's errors.
    ///
    /// Corresponds to `OrtApi::RunOptionsAddActiveLoraAdapter`.
    #[doc(alias = "RunOptionsAddActiveLoraAdapter")]
    pub fn add_lora_adapter(&mut self, adapter: &Arc<crate::lora::LoraAdapter>) -> Result<()> {
        let api = api()?;
        api.needs(20, "RunOptions::add_lora_adapter (RunOptionsAddActiveLoraAdapter)")?;
        let mut adapters = self.shared.adapters.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: the options and the adapter are live; ORT keeps a pointer to the adapter, which
        // `adapters` holds until the options are released (`raw` drops first).
        unsafe { ort!(api, RunOptionsAddActiveLoraAdapter(self.shared.raw.as_ptr(), adapter.as_ptr())) }?;
        adapters.push(Arc::clone(adapter));
        Ok(())
    }

    /// A tag that appears in ORT's log lines for these runs.
    ///
    /// Corresponds to `OrtApi::RunOptionsSetRunTag`.
    #[doc(alias = "RunOptionsSetRunTag")]
    pub fn set_tag(&mut self, tag: &str) -> Result<()> {
        let api = api()?;
        let tag_c = CString::new(tag).map_err(|_| Error::nul("run tag", tag))?;
        // SAFETY: the options are live; ORT copies the string.
        unsafe { ort!(api, RunOptionsSetRunTag(self.shared.raw.as_ptr(), tag_c.as_ptr())) }
    }

    /// Lowest severity logged during these runs.
    ///
    /// Corresponds to `OrtApi::RunOptionsSetRunLogSeverityLevel`.
    #[doc(alias = "RunOptionsSetRunLogSeverityLevel")]
    pub fn set_log_level(&mut self, level: LogLevel) -> Result<()> {
        let api = api()?;
        // SAFETY: the options are live.
        unsafe { ort!(api, RunOptionsSetRunLogSeverityLevel(self.shared.raw.as_ptr(), level.to_raw() as i32)) }
    }

    /// A run configuration entry, e.g. `gpu_graph_id` (which captured CUDA graph to replay) or
    /// `memory.enable_memory_arena_shrinkage`. Only keys known to carry plain values pass
    /// ([`crate::allowed_keys::RUN_CONFIG`]).
    ///
    /// # Errors
    /// [`Error::KeyRefused`] for any other key; [`Error::InteriorNul`]; ORT's error.
    ///
    /// Corresponds to `OrtApi::AddRunConfigEntry`.
    #[doc(alias = "AddRunConfigEntry")]
    pub fn config_entry(&mut self, key: &str, value: &str) -> Result<()> {
        if key.contains('\0') {
            return Err(Error::nul("run config key", key));
        }
        crate::allowed_keys::RUN_CONFIG.check(key)?;
        // SAFETY: the key is on the list of keys that carry plain values.
        unsafe { self.config_entry_unchecked(key, value) }
    }

    /// [`config_entry`](RunOptions::config_entry) without the allow-list check.
    ///
    /// # Safety
    /// Whatever ORT does with the key (read its value as an address, load a library it names)
    /// must be sound for every run that uses these options.
    ///
    /// # Errors
    /// [`Error::InteriorNul`]; ORT's error.
    pub unsafe fn config_entry_unchecked(&mut self, key: &str, value: &str) -> Result<()> {
        let api = api()?;
        let key_c = CString::new(key).map_err(|_| Error::nul("run config key", key))?;
        let value_c = CString::new(value).map_err(|_| Error::nul("run config value", value))?;
        // SAFETY: the options are live and reachable only through `&mut self`; ORT copies both strings.
        unsafe { ort!(api, AddRunConfigEntry(self.shared.raw.as_ptr(), key_c.as_ptr(), value_c.as_ptr())) }
    }

    /// A handle that terminates runs using these options, from any thread.
    pub fn terminator(&self) -> RunTerminator {
        RunTerminator { shared: Arc::clone(&self.shared) }
    }

    /// Lets runs proceed again after [`RunTerminator::terminate`].
    ///
    /// Corresponds to `OrtApi::RunOptionsUnsetTerminate`.
    #[doc(alias = "RunOptionsUnsetTerminate")]
    pub fn reset_terminate(&mut self) -> Result<()> {
        let api = api()?;
        // SAFETY: the options are live.
        unsafe { ort!(api, RunOptionsUnsetTerminate(self.shared.raw.as_ptr())) }
    }

    pub(crate) fn as_ptr(&self) -> *const OrtRunOptions {
        self.shared.raw.as_ptr()
    }
}

impl RunTerminator {
    /// Makes every current and later run with these options stop with [`Error::Terminated`].
    ///
    /// Corresponds to `OrtApi::RunOptionsSetTerminate`.
    #[doc(alias = "RunOptionsSetTerminate")]
    pub fn terminate(&self) -> Result<()> {
        let api = api()?;
        // SAFETY: the options are live (the Arc keeps them); ORT documents this call for use
        // while a run is in progress on another thread.
        unsafe { ort!(api, RunOptionsSetTerminate(self.shared.raw.as_ptr())) }
    }
}
