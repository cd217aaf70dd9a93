//! [`OpDomain`]: the operators of one ONNX domain, each behind the `OrtCustomOp` record ORT
//! reads it through; and their registration on session options.

use std::ffi::CString;
use std::sync::Arc;

use onnxrt_sys::{OrtCustomOpDomain, OrtSessionOptions};

use super::{callbacks, CustomOp, IoSpec, OpEntry};
use crate::api::Api;
use crate::error::{Error, Result};
use crate::handle::{Owned, Release};
use crate::status::ort;

/// The operators of one ONNX domain (the model's nodes name it in their `domain` field), for
/// [`SessionBuilder::custom_ops`](crate::SessionBuilder::custom_ops). Cheap to clone; one domain
/// may serve any number of sessions.
#[derive(Clone)]
pub struct OpDomain {
    name: String,
    // Each entry on the heap, never moved: ORT keeps pointers to `entry.raw`.
    ops: Vec<Arc<OpEntry>>,
    // The first invalid name given, reported when a session is made (builders fail once).
    problem: Option<Error>,
}

impl std::fmt::Debug for OpDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ops: Vec<&str> = self.ops.iter().map(|e| &*e.label).collect();
        f.debug_struct("OpDomain").field("name", &self.name).field("ops", &ops).finish()
    }
}

impl OpDomain {
    /// An empty domain called `name` (e.g. `"com.example.ops"`; the default ONNX domain `""` is
    /// ONNX Runtime's own and cannot be extended).
    pub fn new(name: impl Into<String>) -> OpDomain {
        let name = name.into();
        let problem = name.contains('\0').then(|| Error::nul("custom op domain", &name));
        OpDomain { name, ops: Vec::new(), problem }
    }

    /// Adds an operator. Its name, inputs and outputs are read here, once.
    #[allow(clippy::should_implement_trait)]
    pub fn with(mut self, op: impl CustomOp) -> OpDomain {
        let name = op.name().to_owned();
        let label: Arc<str> = Arc::from(format!("{}::{name}", self.name));
        let name = match CString::new(name) {
            Ok(name) => name,
            Err(_) => {
                self.problem.get_or_insert_with(|| Error::nul("custom op name", &label));
                return self;
            }
        };
        let (inputs, outputs) = (op.inputs(), op.outputs());
        if let Some(why) = variadic_problem(&inputs).or_else(|| variadic_problem(&outputs)).or_else(|| {
            inputs.iter().chain(&outputs).find_map(|s| match s.element {
                Some(crate::ElementType::Unknown(code)) => {
                    Some(format!("element type #{code} is not one this crate knows, so it cannot size it"))
                }
                _ => None,
            })
        }) {
            self.problem.get_or_insert_with(|| Error::InvalidArgument { what: format!("custom op `{label}`"), why });
            return self;
        }
        let entry = OpEntry { raw: callbacks::record(), label, name, inputs, outputs, op: Box::new(op) };
        self.ops.push(Arc::new(entry));
        self
    }

    /// The domain's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// ORT accepts a variadic input or output only in the last place.
fn variadic_problem(specs: &[IoSpec]) -> Option<String> {
    let last = specs.len().saturating_sub(1);
    specs
        .iter()
        .position(|s| matches!(s.arity, super::Arity::Variadic { .. }))
        .filter(|&i| i != last)
        .map(|i| format!("io {i} is variadic but not the last one; only the last input or output may be"))
}

// SAFETY: ReleaseCustomOpDomain frees a domain made by CreateCustomOpDomain; `Owned` calls it once.
impl Release for OrtCustomOpDomain {
    const NAME: &'static str = "OrtCustomOpDomain";
    unsafe fn release(ort: &onnxrt_sys::OrtApi, ptr: *mut Self) {
        if let Some(f) = ort.ReleaseCustomOpDomain {
            // SAFETY: the trait's contract: `ptr` is live and released only here.
            unsafe { f(ptr) }
        }
    }
}

/// The domains a session's options point to, kept by the session and dropped after it.
///
/// SAFETY rule (ORT's, for `AddCustomOpDomain`): the `OrtCustomOpDomain` and every `OrtCustomOp`
/// added to it must outlive the session options and every session made from them, since ORT
/// keeps the pointers and calls the operators' callbacks until the session is released. The
/// session holds this value in a field dropped after `ReleaseSession`, and the builder releases
/// the options before it (see `SessionBuilder::commit_from_*`).
#[derive(Default)]
pub(crate) struct Registered {
    // Released before the entries they point to (fields drop in order).
    domains: Vec<Owned<OrtCustomOpDomain>>,
    _entries: Vec<Arc<OpEntry>>,
    // Whether a kernel of the session may return without making one of its outputs: an
    // operator of ours with an optional output, or any operator of a loaded library (opaque).
    may_skip_outputs: bool,
}

impl Registered {
    /// Whether some node of the session may leave an output unwritten (so the output pool must not
    /// preallocate: ORT would hand back our buffer untouched; see session/output_pool.rs).
    pub(crate) fn may_skip_outputs(&self) -> bool {
        self.may_skip_outputs
    }

    /// Records that operators of a shared library were registered too (nothing is known of them).
    pub(crate) fn add_opaque_library(&mut self) {
        self.may_skip_outputs = true;
    }
}

// SAFETY: an OrtCustomOpDomain is a plain list ORT reads while creating a session and frees in
// ReleaseCustomOpDomain; it has no thread affinity, and through `Registered` we only release it.
unsafe impl Send for Registered {}
// SAFETY: `&Registered` gives no access to the domains at all.
unsafe impl Sync for Registered {}

/// Makes an ORT domain for each of `domains` and adds it to `options`.
pub(crate) fn register(api: &Api, options: *mut OrtSessionOptions, domains: &[OpDomain]) -> Result<Registered> {
    // Every problem of ours first, so that only ORT itself can fail once domains are added.
    if let Some(problem) = domains.iter().find_map(|d| d.problem.as_ref()) {
        return Err(problem.clone());
    }
    let mut registered = Registered::default();
    for domain in domains {
        let name = CString::new(domain.name.as_str()).map_err(|_| Error::nul("custom op domain", &domain.name))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `name` is NUL-terminated and outlives the call (ORT copies it).
        unsafe { ort!(api, CreateCustomOpDomain(name.as_ptr(), &mut raw)) }?;
        // SAFETY: on success we own the domain.
        let owned = unsafe { Owned::from_raw(raw) }?;
        for entry in &domain.ops {
            // SAFETY: `owned` is live; `entry.raw` lives on the heap, never moves, and is kept
            // alive by `registered` for as long as the session (the rule on `Registered`).
            unsafe { ort!(api, CustomOpDomain_Add(owned.as_ptr(), &entry.raw)) }?;
            registered.may_skip_outputs |= entry.outputs.iter().any(|s| s.arity == super::Arity::Optional);
            registered._entries.push(Arc::clone(entry));
        }
        // SAFETY: `options` is the live options object of the caller; the domain outlives it
        // (the rule on `Registered`).
        unsafe { ort!(api, AddCustomOpDomain(options, owned.as_ptr())) }?;
        registered.domains.push(owned);
    }
    Ok(registered)
}
