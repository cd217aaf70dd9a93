//! [`SessionBuilder`] settings that choose execution providers by device (C API 22+): see
//! [`crate::ep_device`]. On older runtimes building the session fails with
//! [`Error::NeedsNewerRuntime`](crate::Error::NeedsNewerRuntime).

use std::sync::Arc;

use crate::ep_device::{DevicePolicy, EpDevice};
use crate::session::SessionBuilder;

impl SessionBuilder {
    /// Appends the provider of `devices` (all of one provider, from
    /// [`Environment::ep_devices`](crate::Environment::ep_devices) of this builder's environment)
    /// for those devices, with provider `options` (string keys and values the provider reads;
    /// each key must pass the provider's allow-list, as for [`provider`](SessionBuilder::provider):
    /// a provider without a table, the CPU's and unknown plugins' included, takes none, and
    /// building the session fails with [`Error::KeyRefused`](crate::Error::KeyRefused)).
    /// ORT tries the classic providers ([`provider`](SessionBuilder::provider), `cuda`...) first,
    /// then those appended this way in the order given, then the CPU; [`Session::providers`](crate::Session::providers)
    /// lists them in that order. With [`strict_gpu`](SessionBuilder::strict_gpu), a provider
    /// appended this way (other than the CPU's) is the one to be strict about.
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
    /// let env = onnxrt::Environment::global()?;
    /// match env.ep_devices() {
    ///     Ok(devices) => {
    ///         let cpu: Vec<_> = devices.into_iter().filter(|d| d.provider == "CPUExecutionProvider").collect();
    ///         onnxrt::Session::builder().providers_for_devices(&cpu, &[]).commit_from_file(model)?;
    ///     }
    ///     Err(onnxrt::Error::NeedsNewerRuntime { .. }) => {} // ONNX Runtime before 1.22
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// Corresponds to `OrtApi::SessionOptionsAppendExecutionProvider_V2`.
    #[doc(alias = "SessionOptionsAppendExecutionProvider_V2")]
    pub fn providers_for_devices(mut self, devices: &[EpDevice], options: &[(&str, &str)]) -> Self {
        let options = options.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        self.devices.appended.push((devices.to_vec(), options, true));
        self
    }

    /// [`providers_for_devices`](SessionBuilder::providers_for_devices) without the allow-list:
    /// option keys the provider's table refuses (paths ORT loads, pointers) reach ORT as given.
    ///
    /// # Safety
    /// Each key and value must be one the provider reads safely: no path to a file ORT would
    /// load or execute that the caller does not trust, no address in a value (docs/allowed-keys.md
    /// lists why each refused key is refused).
    #[doc(alias = "SessionOptionsAppendExecutionProvider_V2")]
    pub unsafe fn providers_for_devices_unchecked(mut self, devices: &[EpDevice], options: &[(&str, &str)]) -> Self {
        let options = options.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        self.devices.appended.push((devices.to_vec(), options, false));
        self
    }

    /// Lets ORT choose the providers and devices by `policy` among the devices every registered
    /// provider offers (used where no provider is appended explicitly).
    ///
    /// Corresponds to `OrtApi::SessionOptionsSetEpSelectionPolicy`.
    #[doc(alias = "SessionOptionsSetEpSelectionPolicy")]
    pub fn device_policy(mut self, policy: DevicePolicy) -> Self {
        self.devices.policy = Some(policy);
        self
    }

    /// Chooses the devices with a Rust closure: ORT calls it while it creates the session with
    /// the devices it offers; it returns the indices of those to use (at most 8), best first.
    /// It wins over [`device_policy`](SessionBuilder::device_policy), except that
    /// [`DevicePolicy::RequireGpu`] still holds: a choice without a GPU device fails with
    /// [`Error::NoGpuDevice`](crate::Error::NoGpuDevice). A panic or an index out of range fails
    /// the session's creation with ORT's error naming it; nothing unwinds into ORT.
    ///
    /// The selector runs on the thread that builds the session, while ORT reads its device list:
    /// it may list devices and build other sessions, but registering a provider library there is
    /// refused, and it must not wait for another thread that registers one (that thread waits
    /// for this session's creation to end).
    ///
    /// Corresponds to `OrtApi::SessionOptionsSetEpSelectionPolicyDelegate`.
    #[doc(alias = "SessionOptionsSetEpSelectionPolicyDelegate")]
    pub fn device_selector(mut self, selector: impl Fn(&[EpDevice]) -> Vec<usize> + Send + Sync + 'static) -> Self {
        self.devices.selector = Some(Arc::new(selector));
        self
    }
}
