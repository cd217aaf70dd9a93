//! Making the session a [`SessionBuilder`] describes: `commit_from_*`, the session options set
//! from the settings (`prepare`), and ORT's create call for each source of the model.

use std::ffi::CString;
use std::path::Path;
use std::sync::Arc;

use onnxrt_sys::OrtSessionOptions;

use super::builder::{config_keys, ConfigEntry, ExecutionMode, OptimizationLevel};
use crate::api::api;
use crate::custom_op;
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::session::saved_model::SavedModel;
use crate::session::shared_weights::SessionHeld;
use crate::session::{model_check, ModelBytes, Session, SessionBuilder};
use crate::status::ort;
use crate::value::Value;

impl SessionBuilder {
    /// Makes a session from a model file.
    ///
    /// # Errors
    /// [`Error::ModelFile`] if the file cannot be read; [`Error::NotOnnxModel`] if it is not an
    /// ONNX model (says whether it is a Git LFS pointer, an HTML page, text or cut short);
    /// [`Error::ModelTooNew`]; ORT's errors;
    /// provider errors (see [`crate::providers`]).
    ///
    /// Corresponds to `OrtApi::CreateSession`.
    #[doc(alias = "CreateSession")]
    pub fn commit_from_file(self, path: impl AsRef<Path>) -> Result<Session> {
        let path = path.as_ref();
        let meta =
            std::fs::metadata(path).map_err(|e| Error::ModelFile { path: path.to_owned(), message: e.to_string() })?;
        if !meta.is_file() {
            return Err(Error::ModelFile { path: path.to_owned(), message: "not a file (a directory?)".into() });
        }
        let path_c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::nul("model path", &path.display().to_string()))?;
        self.commit(Source::File(path, &path_c), &[])
    }

    /// Makes a session from model bytes (ORT copies them).
    ///
    /// # Errors
    /// [`Error::NotOnnxModel`] if the bytes are not an ONNX model; as
    /// [`SessionBuilder::commit_from_file`] otherwise.
    ///
    /// Corresponds to `OrtApi::CreateSessionFromArray`.
    #[doc(alias = "CreateSessionFromArray")]
    pub fn commit_from_memory(self, model: &[u8]) -> Result<Session> {
        self.commit(Source::Bytes(model), &[])
    }

    /// Makes a session from model bytes it keeps: an ORT-format model (`.ort`, as
    /// [`save_optimized_model`](SessionBuilder::save_optimized_model) writes one) is then used in
    /// place, its initializers pointing into these bytes instead of copies (lower peak and
    /// steady memory). The session holds the bytes until ORT has released it, so dropping the
    /// caller's handle (an `Arc<[u8]>` clone) is fine. ONNX-format bytes are parsed and copied
    /// as by [`commit_from_memory`](SessionBuilder::commit_from_memory).
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
    /// # let path = std::env::temp_dir().join(format!("mlp-doc-owned-{}.ort", std::process::id()));
    /// use onnxrt::{OptimizationLevel, Session};
    /// Session::builder().optimization_level(OptimizationLevel::Extended).save_optimized_model(&path).commit_from_file(model)?;
    /// let bytes = std::fs::read(&path).unwrap();
    /// let session = Session::builder().commit_from_owned_bytes(bytes)?;
    /// # drop(session); std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// Sets `session.use_ort_model_bytes_directly` and
    /// `session.use_ort_model_bytes_for_initializers`, the two keys
    /// [`config_entry`](SessionBuilder::config_entry) refuses: ORT reads the bytes during the
    /// create call and, with the second key, for as long as the session lives
    /// (`InferenceSession::LoadOrtModel`), and only reads them.
    ///
    /// # Errors
    /// As [`SessionBuilder::commit_from_memory`].
    ///
    /// Corresponds to `OrtApi::CreateSessionFromArray`.
    #[doc(alias = "CreateSessionFromArray")]
    pub fn commit_from_owned_bytes(mut self, model: impl Into<ModelBytes>) -> Result<Session> {
        let model = Arc::new(model.into());
        for key in [IN_PLACE_BYTES, IN_PLACE_INITIALIZERS] {
            self.config.retain(|e| e.key != key);
            self.config.push(ConfigEntry { key: key.into(), value: "1".into(), checked: false });
        }
        self.held.model_bytes = Some(Arc::clone(&model));
        // The session made below holds `model` (in `held`) until after ORT has released it.
        self.commit(Source::Bytes(model.as_slice()), &[])
    }

    /// Makes a session from model bytes whose weights live in external data, with those weights
    /// given from memory: one tensor per external initializer, by initializer name (a model
    /// exported with `save_as_external_data`, its `.data` file never touching the disk).
    ///
    /// ORT checks each tensor's element type and shape against the model and copies the data,
    /// so the values may be dropped once this returns.
    ///
    /// ```
    /// # let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models");
    /// # let model = std::fs::read(format!("{dir}/mlp_external.onnx")).unwrap();
    /// # let (w1, b1, w2, b2) = (vec![0f32; 16 * 32], vec![0f32; 32], vec![0f32; 32 * 4], vec![0f32; 4]);
    /// use onnxrt::{Session, Value};
    /// let weights = [
    ///     ("w1", Value::from_vec(&[16, 32], w1)?),
    ///     ("b1", Value::from_vec(&[32], b1)?),
    ///     ("w2", Value::from_vec(&[32, 4], w2)?),
    ///     ("b2", Value::from_vec(&[4], b2)?),
    /// ];
    /// let named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();
    /// let session = Session::builder().commit_from_memory_with_external_data(&model, &named)?;
    /// # drop(session);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name given twice or a value that is not a CPU tensor;
    /// ORT's error naming the initializer for a name the model has no external initializer for,
    /// or a type or shape that differs; ORT's error for external data left without a tensor;
    /// as [`SessionBuilder::commit_from_memory`] otherwise.
    ///
    /// Corresponds to `OrtApi::AddExternalInitializers`.
    #[doc(alias = "AddExternalInitializers")]
    pub fn commit_from_memory_with_external_data(
        self,
        model: &[u8],
        initializers: &[(&str, &Value<'_>)],
    ) -> Result<Session> {
        self.commit(Source::Bytes(model), initializers)
    }

    /// Makes the session: options, shared weights, external data, then ORT's create call.
    fn commit(self, source: Source<'_>, external: &[(&str, &Value<'_>)]) -> Result<Session> {
        let asyncs = self.async_settings();
        let mut held = self.held.clone();
        let saved = self.optimized_model.as_deref().map(SavedModel::new).transpose()?;
        let adds_domains = !self.op_domains.is_empty() || !self.custom_op_libraries.is_empty();
        let canceller = self.load_canceller.clone();
        super::cancel::check(canceller.as_ref())?;
        let (env, options, mut prepared, custom_ops) = self.prepare()?;
        held.device_selector = prepared.device_selector.take();
        let o = options.as_ptr();
        let mut raw = std::ptr::null_mut();
        let registering = adds_domains.then(DomainRegistration::take_turn);
        // Every step that can fail once the options exist ends up in `created`, so the options are
        // released (below) before anything they point to, whichever step fails.
        let created = match super::cancel::watch(canceller.as_ref(), o) {
            Ok(watching) => {
                // ORT reads its device list while it chooses by policy or selector.
                let _devices = (held.device_selector.is_some() || prepared.by_policy).then(crate::device_list::read);
                let created = create(source, &env, o, &held, saved.as_ref(), external, &mut raw);
                // Unregistered before the options are released.
                drop(watching);
                created
            }
            Err(e) => Err(Failure::Setup(e)),
        };
        drop(registering);
        // Before `custom_ops`, which the options point to (see custom_op::Registered), on every path.
        drop(options);
        match created {
            Ok(()) => {}
            Err(Failure::Setup(e)) => return Err(e),
            Err(Failure::Create(e)) => {
                // A selector that chose no GPU device under DevicePolicy::RequireGpu.
                if let Some(no_gpu) = held.device_selector.as_ref().and_then(|s| s.no_gpu_error()) {
                    return Err(no_gpu);
                }
                let e = super::external_data::explain(prepared.explain(e, &env), external);
                return Err(match source {
                    Source::File(path, _) => model_check::explain_file(e, path),
                    Source::Bytes(model) => model_check::explain_bytes(e, model),
                });
            }
        }
        // SAFETY: on success we own the session.
        let session = Session::new(unsafe { Owned::from_raw(raw) }?, env, prepared, asyncs, custom_ops, held)?;
        if let Some(saved) = saved {
            saved.keep()?;
        }
        Ok(session)
    }

    /// Creates the ORT session options from the settings, with the custom op domains they point to.
    pub(crate) fn prepare(
        self,
    ) -> Result<(Arc<Environment>, Owned<OrtSessionOptions>, crate::providers::Prepared, custom_op::Registered)> {
        let env = match &self.env {
            Some(env) => Arc::clone(env),
            None => Environment::global()?,
        };
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid.
        unsafe { ort!(api, CreateSessionOptions(&mut raw)) }?;
        // SAFETY: on success we own the options.
        let options = unsafe { Owned::from_raw(raw) }?;
        let o = options.as_ptr();
        let level = match self.optimization {
            OptimizationLevel::Disabled => onnxrt_sys::ORT_DISABLE_ALL,
            OptimizationLevel::Basic => onnxrt_sys::ORT_ENABLE_BASIC,
            OptimizationLevel::Extended => onnxrt_sys::ORT_ENABLE_EXTENDED,
            OptimizationLevel::All => onnxrt_sys::ORT_ENABLE_ALL,
        };
        // SAFETY: `o` is the live options object created above; strings passed are NUL-terminated
        // CStrings that outlive each call (ORT copies them). This holds for every call below
        // marked "see above".
        unsafe { ort!(api, SetSessionGraphOptimizationLevel(o, level)) }?;
        if let Some(n) = self.intra_op_threads {
            let n = i32::try_from(n).map_err(|_| too_many_threads("intra_op_threads", n))?;
            // SAFETY: see above.
            unsafe { ort!(api, SetIntraOpNumThreads(o, n)) }?;
        }
        if let Some(n) = self.inter_op_threads {
            let n = i32::try_from(n).map_err(|_| too_many_threads("inter_op_threads", n))?;
            // SAFETY: see above.
            unsafe { ort!(api, SetInterOpNumThreads(o, n)) }?;
        }
        let mode = match self.execution_mode {
            ExecutionMode::Sequential => onnxrt_sys::ORT_SEQUENTIAL,
            ExecutionMode::Parallel => onnxrt_sys::ORT_PARALLEL,
        };
        // SAFETY: see above.
        unsafe { ort!(api, SetSessionExecutionMode(o, mode)) }?;
        match self.memory_pattern {
            // SAFETY: see above.
            Some(true) => unsafe { ort!(api, EnableMemPattern(o)) }?,
            // SAFETY: see above.
            Some(false) => unsafe { ort!(api, DisableMemPattern(o)) }?,
            None => {}
        }
        match self.cpu_arena {
            // SAFETY: see above.
            Some(true) => unsafe { ort!(api, EnableCpuMemArena(o)) }?,
            // SAFETY: see above.
            Some(false) => unsafe { ort!(api, DisableCpuMemArena(o)) }?,
            None => {}
        }
        if let Some(prefix) = &self.profiling_prefix {
            let prefix_c = CString::new(prefix.as_os_str().as_encoded_bytes())
                .map_err(|_| Error::nul("profiling prefix", &prefix.display().to_string()))?;
            // SAFETY: see above.
            unsafe { ort!(api, EnableProfiling(o, prefix_c.as_ptr())) }?;
        }
        if let Some(id) = &self.log_id {
            let id_c = CString::new(id.as_str()).map_err(|_| Error::nul("log id", id))?;
            // SAFETY: see above.
            unsafe { ort!(api, SetSessionLogId(o, id_c.as_ptr())) }?;
        }
        if let Some(level) = self.log_level {
            // SAFETY: see above.
            unsafe { ort!(api, SetSessionLogSeverityLevel(o, level.to_raw() as i32)) }?;
        }
        if self.global_thread_pools {
            if env.global_thread_pools().is_none() {
                return Err(Error::BadSetting {
                    setting: "use_global_thread_pools".into(),
                    value: "on".into(),
                    allowed: "only in an environment with global thread pools; create it with EnvironmentBuilder::global_thread_pools".into(),
                });
            }
            // SAFETY: see above.
            unsafe { ort!(api, DisablePerSessionThreads(o)) }?;
        }
        if self.deterministic {
            // C API 17: the field exists in the table only on runtimes that serve it.
            let table = api.since(17, "SessionBuilder::deterministic_compute (SetDeterministicCompute)")?;
            let set = table.SetDeterministicCompute.ok_or_else(|| Error::missing("SetDeterministicCompute"))?;
            // SAFETY: see above; the runtime serves C API 17, so the function exists.
            unsafe { crate::status::check("SetDeterministicCompute", set(o, true)) }?;
        }
        let mut config = self.config.clone();
        if self.strict_gpu && !config.iter().any(|e| e.key == config_keys::DISABLE_CPU_EP_FALLBACK) {
            config.push(ConfigEntry {
                key: config_keys::DISABLE_CPU_EP_FALLBACK.into(),
                value: "1".into(),
                checked: true,
            });
        }
        // ORT chooses by policy: let it record what it chose (1.24+), for `Session::providers`.
        let by_policy =
            self.devices.appended.is_empty() && self.devices.selector.is_none() && self.devices.policy.is_some();
        if by_policy && api.api_level >= 24 && !config.iter().any(|e| e.key == super::placement::RECORD_KEY) {
            config.push(ConfigEntry { key: super::placement::RECORD_KEY.into(), value: "1".into(), checked: false });
        }
        for ConfigEntry { key, value, checked } in &config {
            let key_c = CString::new(key.as_str()).map_err(|_| Error::nul("config key", key))?;
            let value_c = CString::new(value.as_str()).map_err(|_| Error::nul("config value", value))?;
            if *checked {
                crate::allowed_keys::SESSION_CONFIG.check(key)?;
            }
            // SAFETY: see above.
            unsafe { ort!(api, AddSessionConfigEntry(o, key_c.as_ptr(), value_c.as_ptr())) }?;
        }
        for (name, size) in &self.free_dimensions {
            if *size < 0 {
                return Err(Error::BadSetting {
                    setting: format!("free dimension `{name}`"),
                    value: size.to_string(),
                    allowed: "sizes are 0 or more".into(),
                });
            }
            let name_c = CString::new(name.as_str()).map_err(|_| Error::nul("dimension name", name))?;
            // SAFETY: see above.
            unsafe { ort!(api, AddFreeDimensionOverrideByName(o, name_c.as_ptr(), *size)) }?;
        }
        for library in &self.custom_op_libraries {
            let lib_c = CString::new(library.as_os_str().as_encoded_bytes())
                .map_err(|_| Error::nul("custom op library", &library.display().to_string()))?;
            // SAFETY: see above. ORT loads the library and keeps it for the session's life.
            unsafe { ort!(api, RegisterCustomOpsLibrary_V2(o, lib_c.as_ptr())) }?;
        }
        let prepared = crate::providers::append_all(api, &env, o, &self.providers, self.strict_gpu, &self.devices)?;
        // Last: nothing fails after it here, and the caller releases `options` before it.
        let mut custom_ops = custom_op::register(api, o, &self.op_domains)?;
        if !self.custom_op_libraries.is_empty() {
            custom_ops.add_opaque_library();
        }
        Ok((env, options, prepared, custom_ops))
    }
}

/// ORT's keys for using model bytes in place (`onnxruntime_session_options_config_keys.h`).
const IN_PLACE_BYTES: &str = "session.use_ort_model_bytes_directly";
const IN_PLACE_INITIALIZERS: &str = "session.use_ort_model_bytes_for_initializers";

/// Where the model comes from.
#[derive(Clone, Copy)]
enum Source<'a> {
    File(&'a Path, &'a CString),
    Bytes(&'a [u8]),
}

/// Why `create` failed: before ORT's create call (our checks, setting options) or in it.
enum Failure {
    Setup(Error),
    Create(Error),
}

/// The steps between the session options and ORT's session: shared weights, the saved-model
/// path, external data, then the create call that fits `source` and the pre-packed container.
fn create(
    source: Source<'_>,
    env: &Environment,
    o: *mut OrtSessionOptions,
    held: &SessionHeld,
    saved: Option<&SavedModel>,
    external: &[(&str, &Value<'_>)],
    raw: &mut *mut onnxrt_sys::OrtSession,
) -> std::result::Result<(), Failure> {
    let setup = || -> Result<()> {
        if let Some(initializers) = &held.initializers {
            initializers.add_to(o)?;
        }
        if let Some(saved) = saved {
            saved.set_on(o)?;
        }
        super::external_data::add(o, external)
    };
    setup().map_err(Failure::Setup)?;
    let api = api().map_err(Failure::Setup)?;
    let container = held.prepacked.as_ref().map_or(std::ptr::null_mut(), |c| c.as_ptr());
    let raw: *mut *mut onnxrt_sys::OrtSession = raw;
    let created = match source {
        // SAFETY: env and options are live; the path is NUL-terminated and outlives the call;
        // the container (if any) is live and held by the session made from it.
        Source::File(_, path_c) if !container.is_null() => unsafe {
            ort!(api, CreateSessionWithPrepackedWeightsContainer(env.as_ptr(), path_c.as_ptr(), o, container, raw))
        },
        // SAFETY: as above.
        Source::File(_, path_c) => unsafe { ort!(api, CreateSession(env.as_ptr(), path_c.as_ptr(), o, raw)) },
        // SAFETY: as above; `model` is a live slice for the call (ORT copies it).
        Source::Bytes(model) if !container.is_null() => unsafe {
            ort!(
                api,
                CreateSessionFromArrayWithPrepackedWeightsContainer(
                    env.as_ptr(),
                    model.as_ptr().cast(),
                    model.len(),
                    o,
                    container,
                    raw
                )
            )
        },
        // SAFETY: as above.
        Source::Bytes(model) => unsafe {
            ort!(api, CreateSessionFromArray(env.as_ptr(), model.as_ptr().cast(), model.len(), o, raw))
        },
    };
    created.map_err(Failure::Create)
}

/// A thread count ORT cannot take (it takes an `i32`).
fn too_many_threads(setting: &str, threads: usize) -> Error {
    Error::BadSetting {
        setting: setting.into(),
        value: threads.to_string(),
        allowed: "a thread count that fits an i32".into(),
    }
}

/// Turns for session creations that bring custom op domains. While it creates such a session, ORT
/// adds each domain to ONNX's process-wide table of domain versions, checking for the domain and
/// then adding it with no lock in between: two creations at once with a domain new to the process
/// fail ("Trying to add a domain to DomainToVersion map, but the domain is already exist"; ORT
/// 1.32, `rust_custom_ops::sessions_with_a_new_custom_domain_can_be_created_from_several_threads_at_once`).
/// A creation on a thread that already holds the turn (a kernel's constructor making a session)
/// goes on without waiting for itself.
struct DomainRegistration {
    guard: Option<std::sync::MutexGuard<'static, ()>>,
}

static DOMAIN_REGISTRATION: std::sync::Mutex<()> = std::sync::Mutex::new(());

thread_local! {
    static HOLDS_TURN: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl DomainRegistration {
    fn take_turn() -> DomainRegistration {
        if HOLDS_TURN.with(std::cell::Cell::get) {
            return DomainRegistration { guard: None };
        }
        let guard = DOMAIN_REGISTRATION.lock().unwrap_or_else(|e| e.into_inner());
        HOLDS_TURN.with(|holds| holds.set(true));
        DomainRegistration { guard: Some(guard) }
    }
}

impl Drop for DomainRegistration {
    fn drop(&mut self) {
        if self.guard.take().is_some() {
            HOLDS_TURN.with(|holds| holds.set(false));
        }
    }
}
