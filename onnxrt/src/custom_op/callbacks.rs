//! The `extern "C"` functions ORT calls for a Rust operator: the only code of this module that
//! runs on ORT's behalf. Each body runs entirely inside `ffi_guard::guard`; user code inside it
//! runs under `ffi_guard::catch`, and its panics, like its errors, become an `OrtStatus` whose
//! message `status::classify` recognises (`Error::CustomOp`). Formatting and dropping the user's
//! errors, kernels and panic payloads happen inside the guard too: nothing unwinds into C.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Arc;

use onnxrt_sys::{
    ONNXTensorElementDataType, OrtApi, OrtCustomOp, OrtCustomOpInputOutputCharacteristic, OrtKernelContext,
    OrtKernelInfo, OrtMemType, OrtStatusPtr,
};

use super::{Arity, IoSpec, Kernel, KernelContext, KernelInfo, OpEntry};
use crate::api::api;
use crate::ffi_guard::{catch, drop_caught, guard, text_of};
use crate::status::CUSTOM_OP_MARKER as MARKER;

/// The record ORT reads: version 16 (the C API this crate asks for; ORT reads no field added
/// after it), the V2 kernel functions (which return a status), no provider type (CPU).
pub(crate) fn record() -> OrtCustomOp {
    OrtCustomOp {
        version: onnxrt_sys::API_VERSION,
        CreateKernel: None,
        GetName: Some(name),
        GetExecutionProviderType: Some(provider_type),
        GetInputType: Some(input_type),
        GetInputTypeCount: Some(input_count),
        GetOutputType: Some(output_type),
        GetOutputTypeCount: Some(output_count),
        KernelCompute: None,
        KernelDestroy: Some(destroy_kernel),
        GetInputCharacteristic: Some(input_characteristic),
        GetOutputCharacteristic: Some(output_characteristic),
        GetInputMemoryType: Some(input_memory_type),
        GetVariadicInputMinArity: Some(variadic_input_min_arity),
        GetVariadicInputHomogeneity: Some(homogeneous),
        GetVariadicOutputMinArity: Some(variadic_output_min_arity),
        GetVariadicOutputHomogeneity: Some(homogeneous),
        CreateKernelV2: Some(create_kernel),
        KernelComputeV2: Some(compute),
        InferOutputShapeFn: None,
        GetStartVersion: None,
        GetEndVersion: None,
        GetMayInplace: None,
        ReleaseMayInplace: None,
        GetAliasMap: None,
        ReleaseAliasMap: None,
    }
}

/// The entry around the record ORT passed back.
///
/// # Safety
/// `op` is the `raw` field of a live [`OpEntry`] (every record ORT has comes from `record()` in
/// an entry that the session keeps alive, see `domain::Registered`).
unsafe fn entry<'a>(op: *const OrtCustomOp) -> &'a OpEntry {
    // SAFETY: `OpEntry` is repr(C) with `raw` first, so both start at the same address.
    unsafe { &*op.cast::<OpEntry>() }
}

/// What a kernel pointer given to ORT points to.
struct KernelBox {
    kernel: Box<dyn Kernel>,
    label: Arc<str>,
    /// The operator's outputs as declared, for `KernelContext`'s checks.
    outputs: Vec<IoSpec>,
}

unsafe extern "C" fn name(op: *const OrtCustomOp) -> *const c_char {
    guard(
        || c"".as_ptr(),
        // SAFETY: ORT passes back a record of ours.
        || unsafe { entry(op) }.name.as_ptr(),
    )
}

unsafe extern "C" fn provider_type(_op: *const OrtCustomOp) -> *const c_char {
    guard(std::ptr::null, std::ptr::null) // null: the CPU provider
}

fn element_at(specs: &[IoSpec], index: usize) -> ONNXTensorElementDataType {
    // 0 is ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED: any type.
    specs.get(index).and_then(|s| s.element).map_or(0, |e| e.to_raw())
}

fn characteristic_at(specs: &[IoSpec], index: usize) -> OrtCustomOpInputOutputCharacteristic {
    match specs.get(index).map(|s| s.arity) {
        Some(Arity::Optional) => onnxrt_sys::INPUT_OUTPUT_OPTIONAL,
        Some(Arity::Variadic { .. }) => onnxrt_sys::INPUT_OUTPUT_VARIADIC,
        _ => onnxrt_sys::INPUT_OUTPUT_REQUIRED,
    }
}

fn min_arity(specs: &[IoSpec]) -> c_int {
    match specs.last().map(|s| s.arity) {
        Some(Arity::Variadic { min }) => c_int::try_from(min).unwrap_or(c_int::MAX),
        _ => 1,
    }
}

unsafe extern "C" fn input_type(op: *const OrtCustomOp, index: usize) -> ONNXTensorElementDataType {
    // SAFETY: ORT passes back a record of ours.
    guard(|| 0, || element_at(&unsafe { entry(op) }.inputs, index))
}

unsafe extern "C" fn input_count(op: *const OrtCustomOp) -> usize {
    // SAFETY: ORT passes back a record of ours.
    guard(|| 0, || unsafe { entry(op) }.inputs.len())
}

unsafe extern "C" fn output_type(op: *const OrtCustomOp, index: usize) -> ONNXTensorElementDataType {
    // SAFETY: ORT passes back a record of ours.
    guard(|| 0, || element_at(&unsafe { entry(op) }.outputs, index))
}

unsafe extern "C" fn output_count(op: *const OrtCustomOp) -> usize {
    // SAFETY: ORT passes back a record of ours.
    guard(|| 0, || unsafe { entry(op) }.outputs.len())
}

unsafe extern "C" fn input_characteristic(
    op: *const OrtCustomOp,
    index: usize,
) -> OrtCustomOpInputOutputCharacteristic {
    // SAFETY: ORT passes back a record of ours.
    guard(|| onnxrt_sys::INPUT_OUTPUT_REQUIRED, || characteristic_at(&unsafe { entry(op) }.inputs, index))
}

unsafe extern "C" fn output_characteristic(
    op: *const OrtCustomOp,
    index: usize,
) -> OrtCustomOpInputOutputCharacteristic {
    // SAFETY: ORT passes back a record of ours.
    guard(|| onnxrt_sys::INPUT_OUTPUT_REQUIRED, || characteristic_at(&unsafe { entry(op) }.outputs, index))
}

unsafe extern "C" fn input_memory_type(_op: *const OrtCustomOp, _index: usize) -> OrtMemType {
    guard(|| onnxrt_sys::OrtMemTypeDefault, || onnxrt_sys::OrtMemTypeDefault)
}

unsafe extern "C" fn variadic_input_min_arity(op: *const OrtCustomOp) -> c_int {
    // SAFETY: ORT passes back a record of ours.
    guard(|| 1, || min_arity(&unsafe { entry(op) }.inputs))
}

unsafe extern "C" fn variadic_output_min_arity(op: *const OrtCustomOp) -> c_int {
    // SAFETY: ORT passes back a record of ours.
    guard(|| 1, || min_arity(&unsafe { entry(op) }.outputs))
}

/// Variadic values all share one element type ([`IoSpec::variadic`]).
unsafe extern "C" fn homogeneous(_op: *const OrtCustomOp) -> c_int {
    guard(|| 1, || 1)
}

unsafe extern "C" fn create_kernel(
    op: *const OrtCustomOp,
    _api: *const OrtApi,
    info: *const OrtKernelInfo,
    kernel: *mut *mut c_void,
) -> OrtStatusPtr {
    guard(unexpected_panic, || {
        // SAFETY: ORT passes back a record of ours.
        let entry = unsafe { entry(op) };
        // SAFETY: `info` is ORT's live kernel info for this call; `info` is dropped before we return.
        let info = unsafe { KernelInfo::new(info, &entry.label) };
        match catch(|| entry.op.create(&info)) {
            Ok(Ok(made)) => {
                let outputs = entry.outputs.clone();
                let boxed = Box::new(KernelBox { kernel: made, label: Arc::clone(&entry.label), outputs });
                // SAFETY: `kernel` is ORT's valid out-pointer; ORT gives the pointer back to
                // `compute` and, once, to `destroy_kernel`, which frees it.
                unsafe { *kernel = Box::into_raw(boxed).cast() };
                std::ptr::null_mut()
            }
            Ok(Err(error)) => failure(&entry.label, "failed", &text_of(error)),
            Err(panic) => failure(&entry.label, "panicked", &panic),
        }
    })
}

unsafe extern "C" fn compute(kernel: *mut c_void, context: *mut OrtKernelContext) -> OrtStatusPtr {
    guard(unexpected_panic, || {
        // SAFETY: `kernel` is what `create_kernel` made, alive until `destroy_kernel`; ORT calls
        // compute only between the two. Shared access only: `Kernel: Sync`.
        let kernel = unsafe { &*kernel.cast::<KernelBox>() };
        // SAFETY: `context` is ORT's live context for this call.
        let ctx = unsafe { KernelContext::new(context, &kernel.label, &kernel.outputs) };
        let outcome = match catch(|| kernel.kernel.compute(&ctx)) {
            // `Ok` reports the outputs written: make sure no output ORT allocated is left unwritten.
            Ok(Ok(())) => ctx.check_written().map_err(|why| ("failed", why)),
            Ok(Err(error)) => Err(("failed", text_of(error))),
            Err(panic) => Err(("panicked", panic)),
        };
        match outcome {
            Ok(()) => std::ptr::null_mut(),
            Err((what, message)) => failure(&kernel.label, what, &message),
        }
    })
}

unsafe extern "C" fn destroy_kernel(kernel: *mut c_void) {
    guard(
        || (),
        || {
            if kernel.is_null() {
                return; // creation failed: there is nothing to free
            }
            // SAFETY: `kernel` came from Box::into_raw in `create_kernel`; ORT destroys it once.
            let boxed = unsafe { Box::from_raw(kernel.cast::<KernelBox>()) };
            // A panicking Drop of the user's kernel must not unwind into C either; the kernel is gone.
            drop_caught(boxed);
        },
    )
}

/// An ORT error status naming the operator: `onnxrt custom op `d::Op` failed: message`.
fn failure(label: &str, what: &str, message: &str) -> OrtStatusPtr {
    let text = format!("{MARKER}{label}` {what}: {message}").replace('\0', " ");
    status(&CString::new(text).unwrap_or_default())
}

/// The status for a panic of this module's own code (never expected): a static message, so
/// making it allocates and formats nothing, and cannot panic.
fn unexpected_panic() -> OrtStatusPtr {
    status(c"onnxrt custom op `(unknown)` panicked: a panic inside onnxrt's custom-operator callback")
}

/// An ORT status of `text`.
fn status(text: &CStr) -> OrtStatusPtr {
    let create = match api() {
        Ok(api) => api.ort.CreateStatus,
        Err(_) => None,
    };
    match create {
        // SAFETY: `text` is NUL-terminated and outlives the call; ORT copies it.
        Some(create) => unsafe { create(onnxrt_sys::ORT_RUNTIME_EXCEPTION, text.as_ptr()) },
        // ORT is calling us, so its table is loaded and has CreateStatus; returning null would
        // report success with outputs unwritten, so stop instead.
        None => std::process::abort(),
    }
}
