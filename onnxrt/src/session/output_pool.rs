//! Preallocated outputs: a run of a CPU session hands ORT output tensors over memory of ours,
//! recycled from run to run, instead of letting ORT allocate them.
//!
//! Why: reading an output ORT allocated means asking ORT for its element type, shape and data
//! pointer (ORT builds and frees a type-and-shape object for that: about a tenth of a small
//! model's whole run), and ORT's own allocation costs about as much again. An output whose
//! declared shape is fully fixed can be made once with that shape: ORT then writes into it and
//! enforces the shape (a kernel that produces another shape fails the run), so the value's type,
//! shape and data pointer are known without asking.
//!
//! The rule ("ORT wrote it" is a fact, or the buffer holds nothing of another run): after a run
//! the crate cannot tell a written buffer from an untouched one (ORT hands the value passed in
//! back either way). Hence:
//! - every buffer is zeroed before it is lent (fresh ones are allocated zeroed; a recycled one is
//!   zeroed when it comes back, `Home::give_back` below). ORT's own kernels make every output the
//!   graph names, but some make it and leave it unwritten: `MatMulInteger`, `QLinearMatMul` and
//!   `MatMulIntegerToFloat` over an empty inner axis (K = 0) on 1.16.2 and 1.32.0
//!   (docs/upstream-ort-bugs.md). Such an output reads as zeros, never as an earlier run's data;
//! - a session with a custom operator that may leave an output out (an optional output of a Rust
//!   operator, which `KernelContext::check_written` lets go unmade; or any operator of a loaded
//!   library, which the crate cannot inspect) never preallocates (`Registered::may_skip_outputs`);
//!   required outputs of Rust operators are checked after every compute, so they are written;
//! - an output named twice in one run is never preallocated (below, and `run_once`).
//!
//! When: only in sessions that run on the CPU provider alone; only for tensor outputs with a fixed
//! declared shape, a fixed-size element type and at least one element, that are not also graph
//! inputs. The first successful run is a probe: an output joins only when what ORT returned
//! equals its declaration. A run in which ORT refuses a preallocated output's shape switches
//! preallocation off for the session and is run once more without it, so a model whose outputs
//! differ from their declarations (ORT only warns about that) keeps its old behaviour; that
//! repeat happens at most once per session. Any other failure is returned as it is, once.
//!
//! Soundness: a pooled buffer is lent only where no other live value can point at it.
//! - ORT never replaces the value passed in (its `Run` fills in only the outputs passed as null).
//!   The value still pointing to our buffer (checked after every run) says only that ORT did not
//!   swap in a tensor of its own, not that a kernel wrote it: that it was written is what the rule
//!   above guarantees. Where ORT swapped the tensor, the value keeps our buffer until it is
//!   dropped and is treated like any output ORT allocated.
//! - An output named more than once in one run is never preallocated: ORT keeps one value per
//!   graph output and would write only one of the tensors, leaving the others holding an
//!   earlier run's data. ORT's own value is returned instead and copied per position.
//! - Outputs that are graph inputs are not pooled (ORT returns the input's own value there); an
//!   output ORT takes from an initializer (a folded constant) is copied by ORT into our tensor.
//! - A failed run frees the tensors it was lent instead of recycling them; the retry without
//!   preallocation gets its outputs from ORT.
//! - A buffer goes back to the pool only when the value that owned it is dropped, so no two live
//!   values share one.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::session::info::{Dim, ValueInfo};
use crate::value::pooled::{Home, PooledTensor};
use crate::value::{Shape, TensorMeta, Value, ValueKind};

/// Unused tensors kept per output; more than this many live at once are freed when dropped.
const MAX_FREE: usize = 8;

// Pool and slot states.
const PROBING: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// Whether a run with preallocated outputs failed because ORT refused one of them: the real
/// shape differs from the declared one ("OrtValue shape verification failed" in ORT 1.16's
/// execution frame; "shape mismatch" where it would reuse a buffer; newer runtimes say the
/// provided output "has shape {3} but the computed output shape for this run is {4}").
pub(crate) fn refused_shape(error: &Error) -> bool {
    let Error::Ort { message, .. } = error else { return false };
    crate::ort_messages::OUTPUT_SHAPE_REFUSED.matches(message)
}

/// The preallocated outputs of one session, by model output position.
pub(crate) struct OutputPool {
    // PROBING until a run succeeded, then ON (some slot is ON) or OFF; OFF for good after a run
    // with preallocated outputs failed.
    state: AtomicU8,
    slots: Vec<Option<Arc<Slot>>>,
}

/// One output's declaration and its unused tensors.
pub(crate) struct Slot {
    meta: TensorMeta,
    bytes: usize,
    // PROBING until a run returned this output, then ON or OFF.
    state: AtomicU8,
    free: Mutex<Vec<PooledTensor>>,
}

/// A pooled tensor lent to ORT for one run, with the slot it came from.
pub(crate) type Lent = (Arc<Slot>, PooledTensor);

impl Home for Slot {
    fn give_back(&self, mut tensor: PooledTensor) {
        if self.free.lock().unwrap_or_else(|e| e.into_inner()).len() >= MAX_FREE {
            return;
        }
        // Zeroed outside the lock, before another run can be lent it: a kernel that makes an
        // output but skips writing it then leaves zeros, never this run's data (the rule above).
        tensor.zero();
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < MAX_FREE {
            free.push(tensor);
        }
    }
}

impl OutputPool {
    /// The pool for a session's outputs; `allowed` says whether the session may preallocate at all:
    /// the CPU provider is its only one, and every node must write its outputs (the rule above).
    pub(crate) fn new(outputs: &[ValueInfo], passthrough: &[bool], allowed: bool) -> OutputPool {
        let slots: Vec<Option<Arc<Slot>>> = outputs
            .iter()
            .zip(passthrough)
            .map(|(info, &passthrough)| Slot::for_output(info).filter(|_| allowed && !passthrough).map(Arc::new))
            .collect();
        let state = if slots.iter().any(Option::is_some) { PROBING } else { OFF };
        OutputPool { state: AtomicU8::new(state), slots }
    }

    /// Whether this run may preallocate (outputs are known to match their declarations).
    pub(crate) fn is_on(&self) -> bool {
        self.state.load(Ordering::Relaxed) == ON
    }

    /// Whether the outputs of the next successful run should be compared with their declarations.
    pub(crate) fn is_probing(&self) -> bool {
        self.state.load(Ordering::Relaxed) == PROBING
    }

    /// Never preallocate again in this session (a run with preallocated outputs failed).
    pub(crate) fn switch_off(&self) {
        self.state.store(OFF, Ordering::Relaxed);
    }

    /// A tensor for model output `index`, when it is preallocated.
    pub(crate) fn take(&self, index: usize) -> Result<Option<Lent>> {
        let Some(slot) = self.slots.get(index).and_then(Option::as_ref) else { return Ok(None) };
        if slot.state.load(Ordering::Relaxed) != ON {
            return Ok(None);
        }
        let reused = slot.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let tensor = match reused {
            Some(tensor) => Some(tensor),
            None => slot.make()?,
        };
        Ok(tensor.map(|tensor| (Arc::clone(slot), tensor)))
    }

    /// Compares what a successful run returned (output `p` is model output `model_index(p)`)
    /// with the declarations: matching outputs are preallocated from now on.
    pub(crate) fn observe(&self, values: &[Value<'static>], model_index: impl Fn(usize) -> usize) {
        for (p, value) in values.iter().enumerate() {
            let Some(slot) = self.slots.get(model_index(p)).and_then(Option::as_ref) else { continue };
            if slot.state.load(Ordering::Relaxed) != PROBING {
                continue;
            }
            // `tensor_meta` fails for anything but a tensor.
            let matches = value.host_data_if_host().ok().flatten().is_some()
                && value
                    .tensor_meta()
                    .is_ok_and(|m| m.element_type == slot.meta.element_type && m.shape == slot.meta.shape);
            slot.state.store(if matches { ON } else { OFF }, Ordering::Relaxed);
        }
        let states = || self.slots.iter().flatten().map(|s| s.state.load(Ordering::Relaxed));
        if states().all(|s| s != PROBING) {
            let next = if states().any(|s| s == ON) { ON } else { OFF };
            // Only from PROBING: a concurrent failure's OFF stays.
            let _ = self.state.compare_exchange(PROBING, next, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

impl Slot {
    /// A slot for an output that can be preallocated, or `None`.
    fn for_output(info: &ValueInfo) -> Option<Slot> {
        let element_type = info.element_type?;
        // Strings and unknown codes have no size the crate vouches for.
        let fixed_size = element_type.byte_size().is_ok()
            && !matches!(element_type, ElementType::Complex64 | ElementType::Complex128);
        if info.kind != ValueKind::Tensor || !fixed_size {
            return None;
        }
        let shape: Shape = info
            .shape
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) if *n > 0 => Some(*n),
                _ => None,
            })
            .collect::<Option<_>>()?;
        let count = crate::value::element_count(&shape).ok()?;
        let bytes = count.checked_mul(element_type.byte_size().ok()?)?;
        Some(Slot {
            meta: TensorMeta { element_type, shape },
            bytes,
            state: AtomicU8::new(PROBING),
            free: Mutex::new(Vec::with_capacity(MAX_FREE)),
        })
    }

    /// The declared type and shape.
    pub(crate) fn meta(&self) -> &TensorMeta {
        &self.meta
    }

    /// A new tensor of the declared type and shape (`None` if the memory cannot be had).
    fn make(&self) -> Result<Option<PooledTensor>> {
        PooledTensor::zeroed(self.bytes, &self.meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn only_a_refused_shape_is_retried() {
        let ort =
            |message: &str| Error::Ort { function: "Run", code: ErrorCode::RuntimeException, message: message.into() };
        // ORT 1.16.2's words for a [3] output that came out [4].
        assert!(refused_shape(&ort("Non-zero status code returned while running Neg node. Name:'' Status Message: /onnxruntime_src/onnxruntime/core/framework/execution_frame.cc:171 onnxruntime::common::Status onnxruntime::IExecutionFrame::GetOrCreateNodeOutputMLValue(int, int, const onnxruntime::TensorShape*, OrtValue*&, const onnxruntime::Node&) shape && tensor.Shape() == *shape was false. OrtValue shape verification failed. Current shape:{3} Requested shape:{4}")));
        // ORT 1.32.0's words for the same run.
        assert!(refused_shape(&ort("Non-zero status code returned while running Neg node. Name:'' Status Message: /onnxruntime_src/onnxruntime/core/framework/op_kernel.cc:87 virtual OrtValue* onnxruntime::OpKernelContext::OutputMLValue(int, const onnxruntime::TensorShape&) [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : The output OrtValue provided for output 'y' of node '' (Neg) has shape {3} but the computed output shape for this run is {4}. When calling Run() with pre-allocated output OrtValues on a model with dynamic output shapes, either supply unallocated output OrtValues or ensure the pre-allocated shapes match the expected output shapes for each run.")));
        assert!(!refused_shape(&ort("Exiting due to terminate flag being set to true.")));
        assert!(!refused_shape(&Error::Terminated { message: "shape verification failed".into() }));
    }
}
