//! The devices every registered execution provider sees (ORT 1.22+, `GetEpDevices`), and why a
//! GPU is missing from them: ORT's Linux device discovery reads `/sys/class/drm`, which many
//! containers and VMs lack; then only a provider that finds its GPU by itself lists one (ORT
//! 1.30's CUDA provider library, registered, did on an H100 VM without it; a plugin provider may
//! "register" and everything runs on the CPU), while the classic append path (`--provider cuda`)
//! always reaches it.

use std::path::Path;

use super::runtime::Facts;
use super::{Row, Status};

/// The row's name.
pub const CHECK: &str = "provider devices";

/// Where ORT's Linux device discovery looks for GPUs.
const DRM: &str = "/sys/class/drm";

/// Lists the devices, or says why it cannot.
pub fn row(facts: &Facts, gpu_found: bool) -> Row {
    if facts.info.is_err() {
        return Row::new(CHECK, Status::Skip, "the runtime did not load (see the runtime row)");
    }
    let env = match onnxrt::Environment::global() {
        Ok(env) => env,
        Err(e) => return Row::new(CHECK, Status::Fail, format!("no environment: {e}")),
    };
    let devices = match env.ep_devices() {
        Ok(devices) => devices,
        Err(onnxrt::Error::NeedsNewerRuntime { found, .. }) => {
            return Row::new(
                CHECK,
                Status::Skip,
                format!("ONNX Runtime {found} has no device API (it came in 1.22); providers are appended by name"),
            );
        }
        Err(e) => return Row::new(CHECK, Status::Fail, format!("GetEpDevices failed: {e}")),
    };
    let listed: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let detail = if listed.is_empty() { "none".to_owned() } else { listed.join("; ") };
    let has_gpu = devices.iter().any(|d| d.kind == onnxrt::ep_device::DeviceKind::Gpu);
    if gpu_found && !has_gpu {
        let why = if Path::new(DRM).is_dir() {
            format!("{DRM} exists, yet ORT's device discovery found no GPU")
        } else {
            format!("{DRM} is missing (a container or VM without it), and ORT's device discovery reads it")
        };
        return Row::new(CHECK, Status::Warn, format!("{detail}; nvidia-smi sees a GPU but no provider lists one: {why}"))
            .fix("providers chosen by device (providers_for_devices, device policies, plugin providers) run on the CPU unless a registered provider lists the GPU: register the GPU provider's library first (Environment::register_provider_library; for CUDA, libonnxruntime_providers_cuda.so beside the runtime), or append it by name (`--provider cuda`, SessionBuilder::cuda), which does not use the device discovery");
    }
    Row::new(CHECK, Status::Ok, detail)
}
