//! Execution providers by device (C API 22+): the devices each registered provider can run on
//! ([`Environment::ep_devices`]), providers appended for chosen devices
//! ([`SessionBuilder::providers_for_devices`]), ORT's automatic selection by policy
//! ([`SessionBuilder::device_policy`]) or by a Rust closure ([`SessionBuilder::device_selector`]),
//! and plugin provider libraries ([`Environment::register_provider_library`]).
//!
//! Every call here needs ONNX Runtime 1.22 or newer; older runtimes get
//! [`Error::NeedsNewerRuntime`] before anything reaches ORT.
//!
//! ORT owns the `OrtEpDevice` objects (the environment keeps them until its provider library is
//! unregistered, which this crate never does; the `OrtEnv` is never released). An [`EpDevice`] is
//! a copy of what ORT says about one, plus its address, which is looked up again in ORT's current
//! list before it is handed back to ORT.

use std::collections::BTreeMap;
use std::ffi::{c_void, CStr, CString};
use std::path::Path;
use std::sync::{Arc, Mutex};

use onnxrt_sys::{OrtEpDevice, OrtKeyValuePairs, OrtSessionOptions, OrtStatus};

use crate::api::{api, Api};
use crate::env::Environment;
use crate::error::{Error, Result};
use crate::status::ort;

/// C API version of everything in this module (ORT 1.22).
const DEVICES_API: u32 = 22;

/// Most devices ORT lets a selection delegate choose (`max_selected`, 8 in ORT 1.22-1.32).
const MAX_SELECTED: usize = 8;

/// What kind of hardware a device is (`OrtHardwareDeviceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceKind {
    /// The host CPU.
    Cpu,
    /// A GPU.
    Gpu,
    /// A neural processing unit.
    Npu,
    /// A kind a newer runtime reports that this crate does not know (its raw number).
    Other(u32),
}

impl DeviceKind {
    fn from_raw(raw: onnxrt_sys::OrtHardwareDeviceType) -> DeviceKind {
        match raw {
            onnxrt_sys::OrtHardwareDeviceType_CPU => DeviceKind::Cpu,
            onnxrt_sys::OrtHardwareDeviceType_GPU => DeviceKind::Gpu,
            onnxrt_sys::OrtHardwareDeviceType_NPU => DeviceKind::Npu,
            other => DeviceKind::Other(other),
        }
    }
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceKind::Cpu => f.write_str("CPU"),
            DeviceKind::Gpu => f.write_str("GPU"),
            DeviceKind::Npu => f.write_str("NPU"),
            DeviceKind::Other(n) => write!(f, "device type {n}"),
        }
    }
}

/// One device an execution provider can run on, as ORT describes it (`OrtEpDevice` and its
/// `OrtHardwareDevice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpDevice {
    /// The provider's name, e.g. `CPUExecutionProvider`.
    pub provider: String,
    /// The provider's vendor, e.g. `Microsoft`.
    pub provider_vendor: String,
    /// What the device is.
    pub kind: DeviceKind,
    /// The hardware's vendor, as ORT's device discovery read it.
    pub vendor: String,
    /// PCI vendor id (0 where the discovery has none).
    pub vendor_id: u32,
    /// PCI device id (0 where the discovery has none).
    pub device_id: u32,
    /// What the discovery read about the hardware (e.g. `DiscoveredBy`, `LUID`).
    pub device_metadata: BTreeMap<String, String>,
    /// What the provider says about itself for this device (e.g. `version`, `library_path`).
    pub provider_metadata: BTreeMap<String, String>,
    /// The provider's default options for this device.
    pub provider_options: BTreeMap<String, String>,
    /// ORT's object, checked against ORT's current list before use.
    raw: usize,
}

impl EpDevice {
    /// Reads everything ORT says about `device`.
    ///
    /// # Safety
    /// `device` is a live `OrtEpDevice` of the environment, on a runtime serving C API 22.
    unsafe fn read(api: &Api, device: *const OrtEpDevice) -> Result<EpDevice> {
        let ort = api.ort;
        let missing = |f: &'static str| Error::missing(f);
        let name = ort.EpDevice_EpName.ok_or_else(|| missing("EpDevice_EpName"))?;
        let vendor = ort.EpDevice_EpVendor.ok_or_else(|| missing("EpDevice_EpVendor"))?;
        let metadata = ort.EpDevice_EpMetadata.ok_or_else(|| missing("EpDevice_EpMetadata"))?;
        let options = ort.EpDevice_EpOptions.ok_or_else(|| missing("EpDevice_EpOptions"))?;
        let hardware = ort.EpDevice_Device.ok_or_else(|| missing("EpDevice_Device"))?;
        let kind = ort.HardwareDevice_Type.ok_or_else(|| missing("HardwareDevice_Type"))?;
        let hw_vendor = ort.HardwareDevice_Vendor.ok_or_else(|| missing("HardwareDevice_Vendor"))?;
        let vendor_id = ort.HardwareDevice_VendorId.ok_or_else(|| missing("HardwareDevice_VendorId"))?;
        let device_id = ort.HardwareDevice_DeviceId.ok_or_else(|| missing("HardwareDevice_DeviceId"))?;
        let hw_metadata = ort.HardwareDevice_Metadata.ok_or_else(|| missing("HardwareDevice_Metadata"))?;
        // SAFETY: `device` is live (caller's contract); these accessors only read it and return
        // strings and pairs that it owns, copied here before anything can change them.
        unsafe {
            let hw = hardware(device);
            if hw.is_null() {
                return Err(Error::null_out("EpDevice_Device", "hardware device"));
            }
            Ok(EpDevice {
                provider: text(name(device)),
                provider_vendor: text(vendor(device)),
                kind: DeviceKind::from_raw(kind(hw)),
                vendor: text(hw_vendor(hw)),
                vendor_id: vendor_id(hw),
                device_id: device_id(hw),
                device_metadata: pairs(api, hw_metadata(hw)),
                provider_metadata: pairs(api, metadata(device)),
                provider_options: pairs(api, options(device)),
                raw: device as usize,
            })
        }
    }
}

impl std::fmt::Display for EpDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on {} {} ({:04x}:{:04x})", self.provider, self.kind, self.vendor, self.vendor_id, self.device_id)
    }
}

/// A NUL-terminated string ORT owns, copied; null reads as empty.
///
/// # Safety
/// `ptr` is null or a live NUL-terminated string.
unsafe fn text(ptr: *const std::ffi::c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        // SAFETY: non-null and NUL-terminated (caller's contract).
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    }
}

/// The entries of an `OrtKeyValuePairs` ORT owns, copied; null reads as empty.
///
/// # Safety
/// `kvps` is null or a live `OrtKeyValuePairs`.
pub(crate) unsafe fn pairs(api: &Api, kvps: *const OrtKeyValuePairs) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(get) = api.ort.GetKeyValuePairs else { return out };
    if kvps.is_null() {
        return out;
    }
    let (mut keys, mut values, mut n) = (std::ptr::null(), std::ptr::null(), 0usize);
    // SAFETY: `kvps` is live; the out-pointers are valid. ORT hands back arrays it owns, of `n`
    // entries each, valid until `kvps` changes (nothing changes it while we copy).
    unsafe { get(kvps, &mut keys, &mut values, &mut n) };
    if n == 0 || keys.is_null() || values.is_null() {
        return out;
    }
    for i in 0..n {
        // SAFETY: `i < n`, both arrays hold `n` string pointers (null or NUL-terminated).
        let (key, value) = unsafe { (text(*keys.add(i)), text(*values.add(i))) };
        out.insert(key, value);
    }
    out
}

/// ORT's current devices, as raw pointers.
fn raw_devices(api: &Api, env: &Environment) -> Result<Vec<*const OrtEpDevice>> {
    api.needs(DEVICES_API, "Environment::ep_devices (GetEpDevices)")?;
    // ORT's array changes (and is freed) when a library registers: not until it is copied.
    let _turn = crate::device_list::read();
    let (mut list, mut n) = (std::ptr::null(), 0usize);
    // SAFETY: the environment is live for `&self`; the out-pointers are valid. ORT hands back an
    // array it owns of `n` device pointers, copied at once below, while no registration can
    // reallocate it (the read turn).
    unsafe { ort!(api, GetEpDevices(env.as_ptr(), &mut list, &mut n)) }?;
    if n == 0 || list.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: `list` holds `n` pointers (ORT's contract for GetEpDevices).
    Ok(unsafe { std::slice::from_raw_parts(list, n) }.to_vec())
}

/// Maps devices the caller holds to ORT's current objects, refusing any that ORT no longer lists.
pub(crate) fn resolve(api: &Api, env: &Environment, devices: &[EpDevice]) -> Result<Vec<*const OrtEpDevice>> {
    let current = raw_devices(api, env)?;
    devices
        .iter()
        .map(|d| {
            current.iter().copied().find(|&raw| raw as usize == d.raw).ok_or_else(|| Error::BadSetting {
                setting: "providers_for_devices".into(),
                value: d.to_string(),
                allowed: "a device this environment's Environment::ep_devices() lists now".into(),
            })
        })
        .collect()
}

impl Environment {
    /// The devices every registered execution provider can run on: the built-in ones (the CPU
    /// provider's CPU; a CUDA build's GPUs where ORT's device discovery sees them) and those of
    /// provider libraries registered with [`Environment::register_provider_library`].
    ///
    /// ORT's Linux device discovery reads `/sys/class/drm`: in a container or VM without it no GPU
    /// device is listed for any provider, while the classic append path
    /// ([`SessionBuilder::cuda`](crate::SessionBuilder)) still reaches the GPU.
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.22; ORT's errors.
    ///
    /// Corresponds to `OrtApi::GetEpDevices`.
    #[doc(alias = "GetEpDevices")]
    pub fn ep_devices(&self) -> Result<Vec<EpDevice>> {
        let api = api()?;
        let raw = raw_devices(api, self)?;
        // SAFETY: each pointer was just listed by ORT for this environment, which keeps it.
        raw.into_iter().map(|device| unsafe { EpDevice::read(api, device) }).collect()
    }

    /// Registers an execution-provider plugin library (a shared library exporting
    /// `CreateEpFactories` and `ReleaseEpFactory`, ORT's plugin-EP API) under `name`; its devices
    /// then appear in [`Environment::ep_devices`]. The library stays loaded for the process's life.
    ///
    /// # Safety
    /// ORT loads `path` and runs its code in this process (its initialisers, its factories): the
    /// library must be a plugin provider made for this runtime's plugin API, from a source you
    /// trust. Nothing here can check that.
    ///
    /// Waits while other threads list devices or build sessions that choose by device (ORT reads
    /// its device list then, and a registration reallocates it); refused from inside a
    /// [`device_selector`](crate::SessionBuilder::device_selector), which would wait for itself,
    /// and from a log hook ORT calls during a registration (ORT would take its own lock twice).
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.22; [`Error::InvalidString`] for a name
    /// or path with a NUL byte; [`Error::BadSetting`] inside a device selector or a registration's
    /// log hook; ORT's error when
    /// the library cannot be loaded or is not a plugin.
    ///
    /// Corresponds to `OrtApi::RegisterExecutionProviderLibrary`.
    #[doc(alias = "RegisterExecutionProviderLibrary")]
    pub unsafe fn register_provider_library(&self, name: &str, path: &Path) -> Result<()> {
        let api = api()?;
        api.needs(DEVICES_API, "Environment::register_provider_library (RegisterExecutionProviderLibrary)")?;
        let name_c = CString::new(name).map_err(|_| Error::nul("provider library name", name))?;
        let path_c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::nul("provider library path", &path.display().to_string()))?;
        // ORT reallocates its device array: not while anyone reads it (device_list.rs).
        let _turn = crate::device_list::write("Environment::register_provider_library")?;
        // SAFETY: the environment is live; both strings are NUL-terminated and outlive the call
        // (ORT copies them). Loading the library's code is the caller's contract.
        unsafe { ort!(api, RegisterExecutionProviderLibrary(self.as_ptr(), name_c.as_ptr(), path_c.as_ptr())) }
    }
}

/// ORT's automatic provider selection policies (`OrtExecutionProviderDevicePolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DevicePolicy {
    /// ORT's default choice.
    Default,
    /// Prefer the CPU.
    PreferCpu,
    /// Prefer an NPU.
    PreferNpu,
    /// Prefer a GPU.
    PreferGpu,
    /// The fastest.
    MaxPerformance,
    /// The most efficient.
    MaxEfficiency,
    /// The lowest power draw overall.
    MinOverallPower,
    /// A GPU or nothing: as [`PreferGpu`](DevicePolicy::PreferGpu) where a registered provider
    /// lists a GPU device; where none does, building the session fails with
    /// [`Error::NoGpuDevice`] (what discovery listed, and whether `/sys/class/drm`, which ORT's
    /// Linux discovery reads, exists) instead of running on the CPU. It also holds for the
    /// devices chosen another way: the devices given to
    /// [`providers_for_devices`](crate::SessionBuilder::providers_for_devices) must include a GPU
    /// device, and a [`device_selector`](crate::SessionBuilder::device_selector) must choose one;
    /// otherwise the same error.
    RequireGpu,
}

impl DevicePolicy {
    fn to_raw(self) -> onnxrt_sys::OrtExecutionProviderDevicePolicy {
        match self {
            DevicePolicy::Default => onnxrt_sys::OrtExecutionProviderDevicePolicy_DEFAULT,
            DevicePolicy::PreferCpu => onnxrt_sys::OrtExecutionProviderDevicePolicy_PREFER_CPU,
            DevicePolicy::PreferNpu => onnxrt_sys::OrtExecutionProviderDevicePolicy_PREFER_NPU,
            DevicePolicy::PreferGpu | DevicePolicy::RequireGpu => {
                onnxrt_sys::OrtExecutionProviderDevicePolicy_PREFER_GPU
            }
            DevicePolicy::MaxPerformance => onnxrt_sys::OrtExecutionProviderDevicePolicy_MAX_PERFORMANCE,
            DevicePolicy::MaxEfficiency => onnxrt_sys::OrtExecutionProviderDevicePolicy_MAX_EFFICIENCY,
            DevicePolicy::MinOverallPower => onnxrt_sys::OrtExecutionProviderDevicePolicy_MIN_OVERALL_POWER,
        }
    }
}

/// A custom selection: given the devices ORT offers, the indices (into that list) of those to use,
/// best first; at most 8.
pub type DeviceSelector = dyn Fn(&[EpDevice]) -> Vec<usize> + Send + Sync;

/// Devices of one provider, the provider options to append them with, and whether those keys
/// are checked against the provider's allow-list (`false` only through the `unsafe`
/// `providers_for_devices_unchecked`).
pub(crate) type DevicesWithOptions = (Vec<EpDevice>, Vec<(String, String)>, bool);

/// What a [`SessionBuilder`](crate::SessionBuilder) asked for by device.
#[derive(Clone, Default)]
pub(crate) struct DeviceRequests {
    /// Providers appended for chosen devices, with their options, in order.
    pub(crate) appended: Vec<DevicesWithOptions>,
    /// ORT's automatic selection.
    pub(crate) policy: Option<DevicePolicy>,
    /// A Rust closure as the selection (wins over `policy`).
    pub(crate) selector: Option<Arc<DeviceSelector>>,
}

impl std::fmt::Debug for DeviceRequests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceRequests")
            .field("appended", &self.appended)
            .field("policy", &self.policy)
            .field("selector", &self.selector.as_ref().map(|_| "closure"))
            .finish()
    }
}

impl DeviceRequests {
    pub(crate) fn is_empty(&self) -> bool {
        self.appended.is_empty() && self.policy.is_none() && self.selector.is_none()
    }
}

/// What the selection callback reads and records: the user's closure, whether a GPU device must
/// be among its choices ([`DevicePolicy::RequireGpu`]), the providers of the devices it chose, and
/// the devices offered when it chose no GPU device though one was required.
struct SelectorState {
    selector: Arc<DeviceSelector>,
    require_gpu: bool,
    chosen: Mutex<Vec<String>>,
    refused_no_gpu: Mutex<Option<Vec<String>>>,
}

/// The selector state a session's options point to, kept alive until the session is gone.
#[derive(Clone)]
pub(crate) struct SelectorHold(Arc<SelectorState>);

impl SelectorHold {
    /// The providers of the devices the selector chose (empty until ORT has called it).
    pub(crate) fn chosen_providers(&self) -> Vec<String> {
        self.0.chosen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// [`Error::NoGpuDevice`] where the selector chose no GPU device though
    /// [`DevicePolicy::RequireGpu`] asked for one (the session's creation then failed).
    pub(crate) fn no_gpu_error(&self) -> Option<Error> {
        let seen = self.0.refused_no_gpu.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        Some(Error::NoGpuDevice {
            seen,
            why: "DevicePolicy::RequireGpu was set with a device_selector, and the selector chose no GPU device among them".into(),
        })
    }
}

impl std::fmt::Debug for SelectorHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SelectorHold")
    }
}

/// What [`apply`] set on the session options.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// The selector state ORT keeps pointing to.
    pub(crate) selector: Option<SelectorHold>,
    /// The providers appended for devices, in order, each once.
    pub(crate) appended: Vec<String>,
    /// Whether a GPU device is among the devices appended.
    pub(crate) appended_gpu: bool,
    /// Whether ORT chooses by policy (what it chose is known only once the session exists).
    pub(crate) by_policy: bool,
}

/// Refuses an option key the allow-list of a provider of `raw` does not let through (the table of
/// its C API name, as for [`SessionBuilder::provider`](crate::SessionBuilder::provider); a
/// provider the crate has no table for, the CPU's and unknown plugins' included, takes none).
/// The name is ORT's, read from the device itself: `EpDevice::provider` is the caller's to edit.
fn check_option_keys(api: &Api, raw: &[*const OrtEpDevice], options: &[(String, String)]) -> Result<()> {
    let name = api.ort.EpDevice_EpName.ok_or_else(|| Error::missing("EpDevice_EpName"))?;
    for &device in raw {
        // SAFETY: `device` is one ORT lists now (`resolve`); ORT does not free its devices while
        // the environment lives, and the name it returns is copied at once.
        let provider = unsafe { text(name(device)) };
        let (short, _) = crate::providers::named::resolve(&provider);
        let table = crate::allowed_keys::KeyTable {
            unchecked: "SessionBuilder::providers_for_devices_unchecked",
            ..*crate::allowed_keys::provider(&short)
        };
        table.check_all(options.iter().map(|(k, _)| k.as_str()))?;
    }
    Ok(())
}

/// Applies `requests` to the session options `o`; returns what ORT keeps pointing to and what
/// was appended.
///
/// [`DevicePolicy::RequireGpu`] holds for every way of choosing: the devices given to
/// `providers_for_devices` must include a GPU device, a selector must choose one, and ORT's own
/// selection needs a provider that lists one; each is refused with [`Error::NoGpuDevice`].
pub(crate) fn apply(
    api: &Api,
    env: &Environment,
    o: *mut OrtSessionOptions,
    requests: &DeviceRequests,
) -> Result<Applied> {
    let mut applied = Applied::default();
    if requests.is_empty() {
        return Ok(applied);
    }
    let require_gpu = requests.policy == Some(DevicePolicy::RequireGpu);
    for (devices, options, checked) in &requests.appended {
        api.needs(DEVICES_API, "SessionBuilder::providers_for_devices (SessionOptionsAppendExecutionProvider_V2)")?;
        let raw = resolve(api, env, devices)?;
        let keys: Vec<CString> = options
            .iter()
            .map(|(k, _)| CString::new(k.as_str()).map_err(|_| Error::nul("provider option", k)))
            .collect::<Result<_>>()?;
        let values: Vec<CString> = options
            .iter()
            .map(|(_, v)| CString::new(v.as_str()).map_err(|_| Error::nul("provider option value", v)))
            .collect::<Result<_>>()?;
        if *checked {
            check_option_keys(api, &raw, options)?;
        }
        let key_ptrs: Vec<_> = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs: Vec<_> = values.iter().map(|v| v.as_ptr()).collect();
        // SAFETY: `o` and the environment are live; `raw` holds devices ORT lists now; the key
        // and value arrays hold `options.len()` NUL-terminated strings that outlive the call
        // (ORT copies them).
        unsafe {
            ort!(
                api,
                SessionOptionsAppendExecutionProvider_V2(
                    o,
                    env.as_ptr(),
                    raw.as_ptr(),
                    raw.len(),
                    key_ptrs.as_ptr(),
                    value_ptrs.as_ptr(),
                    options.len()
                )
            )
        }?;
        for device in devices {
            if !applied.appended.contains(&device.provider) {
                applied.appended.push(device.provider.clone());
            }
            applied.appended_gpu |= device.kind == DeviceKind::Gpu;
        }
    }
    if require_gpu && !requests.appended.is_empty() && !applied.appended_gpu {
        // Where no provider lists a GPU at all, say why discovery found none.
        require_gpu_listed(api, env)?;
        return Err(Error::NoGpuDevice {
            seen: requests.appended.iter().flat_map(|(d, _, _)| d.iter().map(ToString::to_string)).collect(),
            why:
                "DevicePolicy::RequireGpu was set, and the devices given to providers_for_devices include no GPU device"
                    .into(),
        });
    }
    if let Some(selector) = &requests.selector {
        api.needs(DEVICES_API, "SessionBuilder::device_selector (SessionOptionsSetEpSelectionPolicyDelegate)")?;
        if require_gpu {
            require_gpu_listed(api, env)?;
        }
        let state = Arc::new(SelectorState {
            selector: Arc::clone(selector),
            require_gpu,
            chosen: Mutex::default(),
            refused_no_gpu: Mutex::default(),
        });
        let raw_state = Arc::as_ptr(&state) as *mut c_void;
        // SAFETY: `o` is live; `select` matches EpSelectionDelegate; `raw_state` points to the
        // `SelectorState` in `state`, which the session holds for as long as ORT can call it.
        unsafe { ort!(api, SessionOptionsSetEpSelectionPolicyDelegate(o, Some(select), raw_state)) }?;
        applied.selector = Some(SelectorHold(state));
        return Ok(applied);
    }
    if let Some(policy) = requests.policy {
        api.needs(DEVICES_API, "SessionBuilder::device_policy (SessionOptionsSetEpSelectionPolicy)")?;
        if require_gpu && requests.appended.is_empty() {
            require_gpu_listed(api, env)?;
        }
        // SAFETY: `o` is live; the policy is one of ORT's enum values.
        unsafe { ort!(api, SessionOptionsSetEpSelectionPolicy(o, policy.to_raw())) }?;
        applied.by_policy = requests.appended.is_empty();
    }
    Ok(applied)
}

/// The providers of every device the environment lists, in ORT's order, each once (what a
/// selection policy can choose from).
pub(crate) fn listed_providers(env: &Environment) -> Result<Vec<String>> {
    let mut providers: Vec<String> = Vec::new();
    for device in env.ep_devices()? {
        if !providers.contains(&device.provider) {
            providers.push(device.provider);
        }
    }
    Ok(providers)
}

/// Refuses, with what discovery saw, where no registered provider lists a GPU device.
fn require_gpu_listed(api: &Api, env: &Environment) -> Result<()> {
    let raw = raw_devices(api, env)?;
    // SAFETY: each pointer was just listed by ORT for this environment, which keeps it.
    let devices: Vec<EpDevice> = raw.into_iter().map(|d| unsafe { EpDevice::read(api, d) }).collect::<Result<_>>()?;
    if devices.iter().any(|d| d.kind == DeviceKind::Gpu) {
        return Ok(());
    }
    Err(Error::NoGpuDevice { seen: devices.iter().map(ToString::to_string).collect(), why: drm_note(Path::new(DRM)) })
}

/// Where ORT's Linux device discovery looks for GPUs.
const DRM: &str = "/sys/class/drm";

/// Why ORT's Linux device discovery may list no GPU here, as far as this crate can tell (what
/// `/sys/class/drm` holds): the words [`Error::NoGpuDevice`] uses, for a caller that looked for a
/// provider's device itself (a plugin that offers none) and wants to say why.
pub fn discovery_note() -> String {
    drm_note(Path::new(DRM))
}

/// What `drm` (`/sys/class/drm`) says about why no GPU device was discovered.
pub(crate) fn drm_note(drm: &Path) -> String {
    let entries = match std::fs::read_dir(drm) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return format!(
                "{} does not exist here (as in many containers and VMs): ORT's Linux device discovery reads it to find GPUs, so only a provider that finds its GPU by itself lists one (ORT 1.30's CUDA provider library, registered, listed an H100 of a VM without it)",
                drm.display()
            )
        }
        Err(e) => return format!("{} cannot be read ({e}): ORT's Linux device discovery reads it to find GPUs", drm.display()),
    };
    let mut cards: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("card") && name[4..].bytes().all(|b| b.is_ascii_digit()) && name.len() > 4)
        .collect();
    cards.sort();
    if cards.is_empty() {
        format!("{} exists but lists no card: ORT's Linux device discovery finds no GPU there", drm.display())
    } else {
        format!(
            "{} lists {}, but no registered provider claims it as a GPU device (its provider may not take part in the device API, or may not support this GPU)",
            drm.display(),
            cards.join(", ")
        )
    }
}

/// The selection delegate ORT calls while it creates the session. The whole body runs inside
/// [`crate::ffi_guard::guard`]; the user's closure runs inside `catch`.
unsafe extern "C" fn select(
    ep_devices: *mut *const OrtEpDevice,
    num_devices: usize,
    _model_metadata: *const OrtKeyValuePairs,
    _runtime_metadata: *const OrtKeyValuePairs,
    selected: *mut *const OrtEpDevice,
    max_selected: usize,
    num_selected: *mut usize,
    state: *mut c_void,
) -> *mut OrtStatus {
    crate::ffi_guard::guard(unexpected_panic, || {
        // SAFETY: ORT passes `num_devices` live devices, room for `max_selected` choices, a
        // valid `num_selected`, and the state given in `apply` (a `SelectorState` the session
        // keeps alive).
        unsafe { select_inner(ep_devices, num_devices, selected, max_selected, num_selected, state) }
    })
}

/// See [`select`].
///
/// # Safety
/// As ORT's `EpSelectionDelegate` contract, with `state` from [`apply`].
unsafe fn select_inner(
    ep_devices: *mut *const OrtEpDevice,
    num_devices: usize,
    selected: *mut *const OrtEpDevice,
    max_selected: usize,
    num_selected: *mut usize,
    state: *mut c_void,
) -> *mut OrtStatus {
    if num_selected.is_null() || state.is_null() || (num_devices > 0 && ep_devices.is_null()) {
        return failure("ORT passed the device selector a null pointer");
    }
    // SAFETY: `num_selected` is valid (checked non-null; ORT's contract). Nothing chosen until set.
    unsafe { *num_selected = 0 };
    let Ok(api) = api() else { return failure("the runtime is not loaded") };
    // SAFETY: `state` is the `SelectorState` `apply` gave ORT, alive with the session.
    let state: &SelectorState = unsafe { &*(state as *const SelectorState) };
    let raw: &[*const OrtEpDevice] =
        // SAFETY: `ep_devices` holds `num_devices` device pointers (checked non-null above).
        if num_devices == 0 { &[] } else { unsafe { std::slice::from_raw_parts(ep_devices, num_devices) } };
    // SAFETY: each pointer is a live device ORT offers for this call.
    let devices: Result<Vec<EpDevice>> = raw.iter().map(|&d| unsafe { EpDevice::read(api, d) }).collect();
    let devices = match devices {
        Ok(devices) => devices,
        Err(e) => return failure(&format!("reading the devices: {e}")),
    };
    let chosen = match crate::ffi_guard::catch(|| (state.selector)(&devices)) {
        Ok(chosen) => chosen,
        Err(panic) => return failure(&format!("the device selector panicked: {panic}")),
    };
    let room = max_selected.min(MAX_SELECTED);
    if chosen.len() > room {
        return failure(&format!("the device selector chose {} devices; at most {room} can be chosen", chosen.len()));
    }
    if selected.is_null() && !chosen.is_empty() {
        return failure("ORT passed no room for the chosen devices");
    }
    for (slot, &index) in chosen.iter().enumerate() {
        let Some(&device) = raw.get(index) else {
            return failure(&format!(
                "the device selector chose index {index}, but {num_devices} devices were offered"
            ));
        };
        // SAFETY: `slot < chosen.len() <= max_selected`: inside the array ORT passed.
        unsafe { *selected.add(slot) = device };
    }
    if state.require_gpu && !chosen.iter().any(|&i| devices[i].kind == DeviceKind::Gpu) {
        *state.refused_no_gpu.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(devices.iter().map(ToString::to_string).collect());
        // SAFETY: as above; nothing is chosen.
        unsafe { *num_selected = 0 };
        return failure("DevicePolicy::RequireGpu: the device selector chose no GPU device");
    }
    let mut providers: Vec<String> = Vec::new();
    for &index in &chosen {
        if !providers.contains(&devices[index].provider) {
            providers.push(devices[index].provider.clone());
        }
    }
    *state.chosen.lock().unwrap_or_else(|p| p.into_inner()) = providers;
    // SAFETY: as above.
    unsafe { *num_selected = chosen.len() };
    std::ptr::null_mut()
}

/// An ORT status saying why the selection failed.
fn failure(message: &str) -> *mut OrtStatus {
    let text = CString::new(format!("onnxrt device selector: {message}").replace('\0', " ")).unwrap_or_default();
    status(&text)
}

/// The status for a panic of this module's own code: a static message, nothing to format.
fn unexpected_panic() -> *mut OrtStatus {
    status(c"onnxrt device selector: a panic inside onnxrt's selection callback")
}

fn status(text: &CStr) -> *mut OrtStatus {
    match api().ok().and_then(|api| api.ort.CreateStatus) {
        // SAFETY: `text` is NUL-terminated and outlives the call; ORT copies it.
        Some(create) => unsafe { create(onnxrt_sys::ORT_FAIL, text.as_ptr()) },
        // ORT is calling us, so its table is loaded and has CreateStatus; a null status would
        // report a selection that was never made.
        None => std::process::abort(),
    }
}

#[cfg(test)]
mod tests {
    use super::drm_note;

    #[test]
    fn the_drm_note_names_what_the_folder_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("drm");
        assert!(drm_note(&missing).contains("does not exist"), "{}", drm_note(&missing));
        std::fs::create_dir(&missing).expect("mkdir");
        std::fs::create_dir(missing.join("renderD128")).expect("mkdir");
        std::fs::create_dir(missing.join("card0-HDMI-A-1")).expect("mkdir");
        assert!(drm_note(&missing).contains("lists no card"), "{}", drm_note(&missing));
        std::fs::create_dir(missing.join("card1")).expect("mkdir");
        std::fs::create_dir(missing.join("card0")).expect("mkdir");
        let note = drm_note(&missing);
        assert!(note.contains("lists card0, card1, but no registered provider"), "{note}");
        // The public note reads the real folder.
        assert!(super::discovery_note().contains("/sys/class/drm"), "{}", super::discovery_note());
    }
}
