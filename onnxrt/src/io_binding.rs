//! [`IoBinding`]: inputs and outputs bound once, runs repeated without per-run setup.
//!
//! Use it on GPUs to keep outputs on the device (bind them to [`MemoryInfo::cuda`]), to receive
//! outputs in preallocated tensors, and with CUDA graphs (which need the same addresses on every
//! run). For a one-off CPU run, [`Session::run`] is simpler.
//!
//! A binding borrows its session and every value bound to it (`'v`): a value cannot be dropped or
//! changed while ORT may read it, which the compiler checks. Re-running a binding allocates nothing
//! on the Rust side. A binding is used from one thread at a time (`&mut self` to run).
//!
//! ORT keeps its own reference to every bound tensor until the binding is released, so the
//! binding has a `Drop` impl: the compiler then requires every bound value (and the
//! [`Allocator`](crate::Allocator) a bound tensor came from) to outlive the binding itself, not
//! only its last use. [`IoBinding::outputs`] returns values that share memory with the binding's
//! outputs (ORT reuses it on the next run): they borrow the binding, so the next `run` (which
//! takes `&mut self`) cannot start while one of them, or a view of one, is alive.

use std::ffi::CString;
use std::marker::PhantomData;

use onnxrt_sys::OrtIoBinding;

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::memory::{default_allocator, free, MemoryInfo};
use crate::run_options::RunOptions;
use crate::session::Session;
use crate::status::ort;
use crate::value::Value;

/// Inputs and outputs bound to a session. See the module docs.
pub struct IoBinding<'s, 'v> {
    raw: Owned<OrtIoBinding>,
    session: &'s Session,
    // Which inputs are bound (bit i = input i), so a run with one missing is a typed error.
    bound_inputs: u128,
    // Names are kept as CStrings so repeated binds of the same name do not allocate again.
    _values: PhantomData<&'v Value<'v>>,
}

// Not a no-op for the borrow checker: with a `Drop` impl, `'v` must still be alive where the
// binding is dropped, because ORT's binding releases its references to the bound tensors then
// (an allocator-made tensor's memory goes back through that allocator).
impl Drop for IoBinding<'_, '_> {
    fn drop(&mut self) {}
}

impl std::fmt::Debug for IoBinding<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IoBinding")
    }
}

impl Session {
    /// A new, empty binding for this session.
    ///
    /// Corresponds to `OrtApi::CreateIoBinding`.
    #[doc(alias = "CreateIoBinding")]
    pub fn io_binding(&self) -> Result<IoBinding<'_, '_>> {
        let api = api()?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the session is live; the out-pointer is valid.
        unsafe { ort!(api, CreateIoBinding(self.as_ptr(), &mut raw)) }?;
        // SAFETY: on success we own the binding.
        Ok(IoBinding { raw: unsafe { Owned::from_raw(raw) }?, session: self, bound_inputs: 0, _values: PhantomData })
    }
}

impl<'s, 'v> IoBinding<'s, 'v> {
    fn name(&self, name: &str, input: bool) -> Result<&'s CString> {
        let inner = &self.session.inner;
        Ok(if input {
            &inner.input_names[self.session.input_index(name)?]
        } else {
            &inner.output_names[self.session.output_index(name)?]
        })
    }

    /// Binds `value` (host or device memory) to input `name`, checked like [`Session::run`]'s inputs.
    ///
    /// Corresponds to `OrtApi::BindInput`.
    #[doc(alias = "BindInput")]
    pub fn bind_input(&mut self, name: &str, value: &'v Value<'_>) -> Result<()> {
        crate::session::validate::inputs_partial(self.session, name, value)?;
        let index = self.session.input_index(name)?;
        let name = self.name(name, true)?;
        let api = api()?;
        // SAFETY: binding and value are live; the value stays borrowed for 'v, longer than any
        // run of this binding; ORT copies the name.
        unsafe { ort!(api, BindInput(self.raw.as_ptr(), name.as_ptr(), value.as_ptr())) }?;
        if index < 128 {
            self.bound_inputs |= 1 << index;
        }
        Ok(())
    }

    /// Binds a preallocated tensor to output `name`; runs write into it.
    ///
    /// Corresponds to `OrtApi::BindOutput`.
    #[doc(alias = "BindOutput")]
    pub fn bind_output(&mut self, name: &str, value: &'v mut Value<'_>) -> Result<()> {
        if !value.is_writable() {
            // ORT would write into memory that is only borrowed for reading.
            return Err(Error::ReadOnlyValue { operation: format!("binding it to output `{name}`") });
        }
        crate::session::validate::output_partial(self.session, name, value)?;
        let name = self.name(name, false)?;
        let api = api()?;
        // SAFETY: binding and value are live; the value is exclusively borrowed for 'v.
        unsafe { ort!(api, BindOutput(self.raw.as_ptr(), name.as_ptr(), value.as_ptr())) }
    }

    /// Lets ORT allocate output `name` on `memory` (e.g. [`MemoryInfo::cuda`] to keep it on the
    /// GPU, [`MemoryInfo::cpu`] to receive it on the host).
    ///
    /// Corresponds to `OrtApi::BindOutputToDevice`.
    #[doc(alias = "BindOutputToDevice")]
    pub fn bind_output_to_device(&mut self, name: &str, memory: &MemoryInfo) -> Result<()> {
        let name = self.name(name, false)?;
        let api = api()?;
        // SAFETY: binding and memory info are live; ORT copies both.
        unsafe { ort!(api, BindOutputToDevice(self.raw.as_ptr(), name.as_ptr(), memory.as_ptr())) }
    }

    /// Removes all bound inputs.
    ///
    /// Corresponds to `OrtApi::ClearBoundInputs`.
    #[doc(alias = "ClearBoundInputs")]
    pub fn clear_inputs(&mut self) -> Result<()> {
        let api = api()?;
        let clear = api.ort.ClearBoundInputs.ok_or_else(|| Error::missing("ClearBoundInputs"))?;
        // SAFETY: the binding is live.
        unsafe { clear(self.raw.as_ptr()) };
        self.bound_inputs = 0;
        Ok(())
    }

    /// Waits until bound inputs are ready on their device (needed after writing them from
    /// another stream).
    ///
    /// Corresponds to `OrtApi::SynchronizeBoundInputs`.
    #[doc(alias = "SynchronizeBoundInputs")]
    pub fn synchronize_inputs(&mut self) -> Result<()> {
        let api = api()?;
        // SAFETY: the binding is live.
        unsafe { ort!(api, SynchronizeBoundInputs(self.raw.as_ptr())) }
    }

    /// Waits until bound outputs are complete on their device.
    ///
    /// Corresponds to `OrtApi::SynchronizeBoundOutputs`.
    #[doc(alias = "SynchronizeBoundOutputs")]
    pub fn synchronize_outputs(&mut self) -> Result<()> {
        let api = api()?;
        // SAFETY: the binding is live.
        unsafe { ort!(api, SynchronizeBoundOutputs(self.raw.as_ptr())) }
    }

    /// Runs the session with this binding. Allocates nothing on the Rust side.
    ///
    /// Corresponds to `OrtApi::RunWithBinding`.
    #[doc(alias = "RunWithBinding")]
    pub fn run(&mut self, options: Option<&RunOptions>) -> Result<()> {
        let declared = self.session.inputs();
        if let Some(missing) = (0..declared.len().min(128)).find(|&i| self.bound_inputs & (1 << i) == 0) {
            let info = &declared[missing];
            return Err(Error::MissingInput {
                name: info.name.clone(),
                element_type: info.element_type.unwrap_or(crate::ElementType::Unknown(0)),
                shape: crate::error::ShapeText(info.shape_text()),
                required: crate::error::Names(declared.iter().map(|i| i.name.clone()).collect()),
            });
        }
        let api = api()?;
        let inner = &self.session.inner;
        let _serialized = inner.run_lock.as_ref().map(|lock| lock.lock().unwrap_or_else(|e| e.into_inner()));
        let run_options = options.map_or(std::ptr::null(), RunOptions::as_ptr);
        // SAFETY: session, binding and everything bound are live (borrowed for 's and 'v).
        let ran = unsafe { ort!(api, RunWithBinding(self.session.as_ptr(), run_options, self.raw.as_ptr())) };
        ran.map_err(|e| self.session.memory_named(e))
    }

    /// The output values of the last run, in binding order.
    ///
    /// They are new references to the tensors the binding holds: a preallocated output bound with
    /// [`IoBinding::bind_output`], or memory ORT allocated and reuses on the next run. So they
    /// borrow the binding (and through it the bound values), cannot be written
    /// (`copy_from_host` and `bind_output` refuse them), and must be dropped before the next
    /// [`IoBinding::run`]. Copy what you keep with [`Value::to_array`].
    ///
    /// Corresponds to `OrtApi::GetBoundOutputValues`.
    #[doc(alias = "GetBoundOutputValues")]
    pub fn outputs(&self) -> Result<Vec<Value<'_>>> {
        let api = api()?;
        let allocator = default_allocator()?;
        let mut values = std::ptr::null_mut();
        let mut count = 0usize;
        // SAFETY: the binding is live; ORT allocates an array of `count` new values with `allocator`.
        unsafe { ort!(api, GetBoundOutputValues(self.raw.as_ptr(), allocator, &mut values, &mut count)) }?;
        if values.is_null() {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: i < count; each entry is a new value we own.
            let owned = unsafe { Owned::from_raw(*values.add(i)) };
            if let Ok(owned) = owned {
                // Shares the binding's tensor: read-only, and borrowing `self`.
                out.push(Value::shared(owned));
            }
        }
        // SAFETY: the array was allocated by `allocator`; its values are now owned above.
        unsafe { free(allocator, values.cast()) };
        Ok(out)
    }
}
