//! Cancelling a session's load (C API 22): a [`LoadCanceller`] given to a
//! [`SessionBuilder`](crate::SessionBuilder) can stop its `commit_from_*` from another thread; the
//! load then fails with ORT's "canceled" error. ORT reads the flag from the session options while it
//! loads, so the canceller reaches them only while they exist: the commit registers them under a
//! lock and unregisters them before they are released. One canceller may cover several loads at
//! once (it and the builder are `Clone`): each registration is its own, so a cancel reaches every
//! load in progress and a load that ends removes only its own options.

use std::sync::{Arc, Mutex};

use onnxrt_sys::OrtSessionOptions;

use crate::api::api;
use crate::error::Result;
use crate::session::SessionBuilder;
use crate::status::ort;

/// Stops a session's load from another thread ([`SessionBuilder::load_canceller`]). Once
/// cancelled it stays cancelled: a later load with it fails at once.
#[derive(Debug, Clone, Default)]
pub struct LoadCanceller {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    cancelled: bool,
    /// The options of each load in progress (its registration number, the options' address),
    /// while they exist.
    options: Vec<(u64, usize)>,
    /// The next registration number.
    next: u64,
}

impl LoadCanceller {
    /// A canceller not yet cancelled.
    pub fn new() -> LoadCanceller {
        LoadCanceller::default()
    }

    /// Cancels the load in progress, if any, and every later load given this canceller.
    ///
    /// Corresponds to `OrtApi::SessionOptionsSetLoadCancellationFlag`.
    #[doc(alias = "SessionOptionsSetLoadCancellationFlag")]
    pub fn cancel(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.cancelled = true;
        for &(_, options) in &state.options {
            // Best effort: the load ends on its own if ORT cannot take the flag.
            let _ = set_flag(options as *mut OrtSessionOptions);
        }
    }

    /// Whether [`cancel`](LoadCanceller::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).cancelled
    }
}

/// Sets ORT's cancellation flag on live options.
fn set_flag(options: *mut OrtSessionOptions) -> Result<()> {
    let api = api()?;
    api.needs(22, "LoadCanceller (SessionOptionsSetLoadCancellationFlag)")?;
    // SAFETY: the caller holds the state's lock, under which `options` are registered only while
    // they are live; ORT's flag is made to be set while another thread loads.
    unsafe { ort!(api, SessionOptionsSetLoadCancellationFlag(options, true)) }
}

/// The registration of a load's options with its canceller (and its number); unregisters
/// exactly that registration on drop.
pub(crate) struct Watching<'c>(Option<(&'c LoadCanceller, u64)>);

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        if let Some((canceller, id)) = self.0 {
            canceller.state.lock().unwrap_or_else(|p| p.into_inner()).options.retain(|&(other, _)| other != id);
        }
    }
}

/// Checks that the runtime can cancel a load (before any options exist).
pub(crate) fn check(canceller: Option<&LoadCanceller>) -> Result<()> {
    match canceller {
        Some(_) => api()?.needs(22, "LoadCanceller (SessionOptionsSetLoadCancellationFlag)").map(drop),
        None => Ok(()),
    }
}

/// Registers `options` (live until the returned guard is dropped, which the caller does first)
/// with `canceller`; sets the flag at once if it was already cancelled.
pub(crate) fn watch(canceller: Option<&LoadCanceller>, options: *mut OrtSessionOptions) -> Result<Watching<'_>> {
    let Some(canceller) = canceller else { return Ok(Watching(None)) };
    let mut state = canceller.state.lock().unwrap_or_else(|p| p.into_inner());
    if state.cancelled {
        set_flag(options)?;
    }
    let id = state.next;
    state.next += 1;
    state.options.push((id, options as usize));
    Ok(Watching(Some((canceller, id))))
}

impl SessionBuilder {
    /// Lets `canceller` stop this builder's `commit_from_*` from another thread (ONNX Runtime
    /// 1.22+; older runtimes refuse the commit with
    /// [`Error::NeedsNewerRuntime`](crate::Error::NeedsNewerRuntime)).
    pub fn load_canceller(mut self, canceller: &LoadCanceller) -> Self {
        self.load_canceller = Some(canceller.clone());
        self
    }
}
