//! Weights shared between sessions: initializers the caller supplies ([`SharedInitializers`],
//! ORT's `AddInitializer`) and a container of pre-packed weights ([`PrepackedWeights`], ORT's
//! `OrtPrepackedWeightsContainer`).
//!
//! Several sessions of one model (one per GPU, per tenant, per model version) each deserialize
//! their own copy of every weight. Handing each session the same [`SharedInitializers`] makes
//! them use one copy; giving them the same [`PrepackedWeights`] lets kernels that re-lay weights
//! out for speed (MatMul/Gemm on the CPU) keep one re-laid copy too. ORT keeps raw pointers to
//! both, so every session holds an `Arc` of what it was built with and drops it only after the
//! session is released.

use std::ffi::CString;
use std::sync::Arc;

use onnxrt_sys::OrtPrepackedWeightsContainer;

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::{Owned, Release};
use crate::status::ort;
use crate::value::{Value, ValueKind};

/// Initializers supplied by the caller, used by every session built with them instead of the
/// model's own copies (matched by initializer name). Build once, share with `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use onnxrt::{Session, SharedInitializers, Value};
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
/// // The weights, loaded once (here: zeros of the shape the model declares for `w1`).
/// let mut weights = SharedInitializers::new();
/// weights.add("w1", Value::from_vec(&[16, 32], vec![0f32; 16 * 32])?)?;
/// let weights = Arc::new(weights);
/// let a = Session::builder().shared_initializers(Arc::clone(&weights)).commit_from_file(model)?;
/// let b = Session::builder().shared_initializers(weights).commit_from_file(model)?;
/// # drop((a, b));
/// # Ok::<(), onnxrt::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct SharedInitializers {
    // The values ORT reads from: CPU tensors whose buffers the values own.
    entries: Vec<(CString, Value<'static>)>,
}

impl SharedInitializers {
    /// An empty set.
    pub fn new() -> SharedInitializers {
        SharedInitializers::default()
    }

    /// Adds a tensor for the initializer called `name`. Its element type and shape must be the
    /// model's: ORT 1.16 does not compare them when the session is made, so a mismatch shows as
    /// the consuming kernel's error at the first run (a name the model does not have is ignored).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a name given twice, a name with a NUL byte, or a value that
    /// is not a tensor.
    pub fn add(&mut self, name: impl Into<String>, value: Value<'static>) -> Result<&mut Self> {
        let name = name.into();
        if value.kind()? != ValueKind::Tensor {
            return Err(Error::InvalidArgument {
                what: format!("shared initializer `{name}`"),
                why: "initializers are tensors".into(),
            });
        }
        let name_c = CString::new(name.as_str()).map_err(|_| Error::nul("initializer name", &name))?;
        if self.entries.iter().any(|(n, _)| *n == name_c) {
            return Err(Error::InvalidArgument {
                what: format!("shared initializer `{name}`"),
                why: "given twice".into(),
            });
        }
        self.entries.push((name_c, value));
        Ok(self)
    }

    /// The initializer names, in the order added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.to_str().unwrap_or_default())
    }

    /// How many initializers the set holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Hands every entry to ORT for the session options `options`.
    pub(crate) fn add_to(&self, options: *mut onnxrt_sys::OrtSessionOptions) -> Result<()> {
        let api = api()?;
        for (name, value) in &self.entries {
            // SAFETY: `options` is live; the name is NUL-terminated; ORT keeps the value pointer,
            // which stays valid because every session built from these options holds an `Arc` of
            // this set until after the session is released (see `SessionHeld`). ORT only reads it.
            unsafe { ort!(api, AddInitializer(options, name.as_ptr(), value.as_ptr())) }?;
        }
        Ok(())
    }
}

/// A container in which sessions built with it share their pre-packed weights (kernels that
/// re-lay a constant weight out for speed do it once for all of them). Use it with
/// [`SharedInitializers`]: ORT shares pre-packed copies only of initializers it knows are shared.
///
/// ```
/// use std::sync::Arc;
/// use onnxrt::{PrepackedWeights, Session, SharedInitializers, Value};
/// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
/// let mut weights = SharedInitializers::new();
/// weights.add("w1", Value::from_vec(&[16, 32], vec![0.5f32; 16 * 32])?)?;
/// let (weights, packed) = (Arc::new(weights), Arc::new(PrepackedWeights::new()?));
/// let sessions = (0..4)
///     .map(|_| {
///         Session::builder()
///             .shared_initializers(Arc::clone(&weights))
///             .prepacked_weights(Arc::clone(&packed))
///             .commit_from_file(model)
///     })
///     .collect::<onnxrt::Result<Vec<_>>>()?;
/// # drop(sessions);
/// # Ok::<(), onnxrt::Error>(())
/// ```
///
/// Corresponds to `OrtApi::CreatePrepackedWeightsContainer`.
#[doc(alias = "CreatePrepackedWeightsContainer")]
pub struct PrepackedWeights {
    raw: Owned<OrtPrepackedWeightsContainer>,
}

impl Release for OrtPrepackedWeightsContainer {
    const NAME: &'static str = "OrtPrepackedWeightsContainer";
    unsafe fn release(ort: &onnxrt_sys::OrtApi, ptr: *mut Self) {
        if let Some(f) = ort.ReleasePrepackedWeightsContainer {
            // SAFETY: the trait's contract: `ptr` is live and released only here.
            unsafe { f(ptr) }
        }
    }
}

impl PrepackedWeights {
    /// An empty container.
    ///
    /// # Errors
    /// ORT's, if it cannot make one.
    pub fn new() -> Result<PrepackedWeights> {
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the out-pointer is valid.
        unsafe { ort!(api, CreatePrepackedWeightsContainer(&mut raw)) }?;
        // SAFETY: on success we own the container.
        Ok(PrepackedWeights { raw: unsafe { Owned::from_raw(raw) }? })
    }

    pub(crate) fn as_ptr(&self) -> *mut OrtPrepackedWeightsContainer {
        self.raw.as_ptr()
    }
}

impl std::fmt::Debug for PrepackedWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrepackedWeights({:p})", self.raw.as_ptr())
    }
}

// SAFETY: ORT's container guards its map with a mutex of its own (sessions on different threads
// may be created with one container at once); after creation sessions only read the buffers.
unsafe impl Send for PrepackedWeights {}
// SAFETY: as above.
unsafe impl Sync for PrepackedWeights {}

/// What a session must keep alive for ORT, released after the session (see `Inner`'s `Drop`).
#[derive(Debug, Default, Clone)]
pub(crate) struct SessionHeld {
    pub(crate) initializers: Option<Arc<SharedInitializers>>,
    pub(crate) prepacked: Option<Arc<PrepackedWeights>>,
    /// Model bytes ORT uses in place (`SessionBuilder::commit_from_owned_bytes`).
    pub(crate) model_bytes: Option<Arc<super::ModelBytes>>,
    /// The device selector the session's options point to (`SessionBuilder::device_selector`).
    pub(crate) device_selector: Option<crate::ep_device::SelectorHold>,
}
