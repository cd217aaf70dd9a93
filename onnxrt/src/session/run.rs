//! The synchronous run: checking the inputs, lending preallocated outputs, ORT's `Run`, and
//! taking ownership of what it returned.

use smallvec::{smallvec, SmallVec};
use std::ffi::c_char;

use onnxrt_sys::OrtValue;

use super::{output_pool, validate, Indices, Outputs, Session, SessionInput};
use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::run_options::RunOptions;
use crate::status::ort;
use crate::value::Value;

impl Session {
    /// Runs the model on named inputs and returns every output.
    ///
    /// `inputs` is any collection or iterator of named values: `&[("x", &x)]`, a
    /// `&Vec<(String, Value)>`, a `&HashMap<String, Value>`... (see [`SessionInput`]). Up to 8
    /// inputs and 4 outputs, a run makes no Rust heap allocation.
    ///
    /// In a session on the CPU provider alone, outputs whose declared shape is fully fixed are
    /// written into buffers the session recycles (a dropped output's buffer serves a later run),
    /// so their type, shape and data are known without asking ORT; see `session/output_pool.rs`.
    ///
    /// # Errors
    /// Typed input errors (see the module docs) before ORT is called; ORT's errors after.
    ///
    /// Corresponds to `OrtApi::Run`.
    #[doc(alias = "Run")]
    pub fn run<'v, 'd: 'v, I>(&self, inputs: I) -> Result<Outputs>
    where
        I: IntoIterator,
        I::Item: SessionInput<'v, 'd>,
    {
        self.run_with(inputs, &[], None)
    }

    /// Runs the model, returning only the outputs named in `outputs` (all when empty), with
    /// optional [`RunOptions`] (tag, log level, termination from another thread).
    ///
    /// ```
    /// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/multi_output.onnx");
    /// let session = onnxrt::Session::builder().commit_from_file(model)?;
    /// let x = onnxrt::Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0])?;
    /// let outputs = session.run_with(&[("x", &x)], &["squared"], None)?;
    /// assert_eq!(outputs.names().collect::<Vec<_>>(), ["squared"]);
    /// assert_eq!(outputs[0].view::<f32>()?.as_slice(), Some(&[1.0f32, 4.0, 9.0][..]));
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// Corresponds to `OrtApi::Run`.
    #[doc(alias = "Run")]
    pub fn run_with<'v, 'd: 'v, I>(&self, inputs: I, outputs: &[&str], options: Option<&RunOptions>) -> Result<Outputs>
    where
        I: IntoIterator,
        I::Item: SessionInput<'v, 'd>,
    {
        // The pairs (names may be owned, values are borrowed), on the stack for up to 8 inputs.
        // `SessionInput` is not sealed: `value()` is called once per input, and the checks and
        // ORT's pointer both come from that one reference, borrowed for the whole call.
        let held: SmallVec<[I::Item; 8]> = inputs.into_iter().collect();
        let pairs: SmallVec<[(&str, &'v Value<'d>); 8]> = held.iter().map(|i| (i.name(), i.value())).collect();
        let inputs = &pairs[..];
        let mut input_names: SmallVec<[*const c_char; 8]> = SmallVec::new();
        let mut input_values: SmallVec<[*const OrtValue; 8]> = SmallVec::new();
        validate::inputs(self, inputs, |index, value| {
            input_names.push(self.inner.input_names[index].as_ptr());
            input_values.push(value.as_ptr().cast_const());
        })?;
        // `None` means every output, in model order (the common case: nothing to build).
        let output_indices: Option<Indices> = if outputs.is_empty() {
            None
        } else {
            Some(outputs.iter().map(|name| self.output_index(name)).collect::<Result<_>>()?)
        };
        // Asking for every output (the common case) reuses the session's own name array.
        let chosen_names: SmallVec<[*const c_char; 8]>;
        let output_names: &[*const c_char] = match &output_indices {
            None => &self.inner.output_name_ptrs,
            Some(indices) => {
                chosen_names = indices.iter().map(|&i| self.inner.output_names[i].as_ptr()).collect();
                &chosen_names
            }
        };
        let run_options = options.map_or(std::ptr::null(), RunOptions::as_ptr);
        let call = RunCall { input_names: &input_names, input_values: &input_values, output_names, run_options };
        let pool = &self.inner.output_pool;
        if pool.is_on() {
            match self.run_once(&call, output_indices.as_deref(), inputs, true) {
                Ok(out) => return Ok(out),
                // An output whose shape differs from its declaration (ORT refused the preallocated
                // tensor): never preallocate again here, and run once more without.
                Err(error) if output_pool::refused_shape(&error) => pool.switch_off(),
                // Anything else (terminated, out of memory, a kernel's error) would fail again.
                Err(error) => return Err(self.memory_named(error)),
            }
        }
        let mut out =
            self.run_once(&call, output_indices.as_deref(), inputs, false).map_err(|e| self.memory_named(e))?;
        if pool.is_probing() {
            pool.observe(out.values_mut(), |p| output_indices.as_ref().map_or(p, |indices| indices[p]));
        }
        Ok(out)
    }

    /// An out-of-memory error of a session on the CPU alone is about host memory (ORT's message
    /// does not say which memory ran out; its advice would otherwise speak of the GPU's).
    pub(crate) fn memory_named(&self, error: Error) -> Error {
        error.in_host_memory_if(self.cpu_only())
    }

    /// Whether the session runs on the CPU alone.
    pub(crate) fn cpu_only(&self) -> bool {
        self.inner.providers.iter().all(|p| *p == "CPUExecutionProvider")
    }

    /// One call of ORT's `Run`, with preallocated outputs where `preallocate` and the pool has
    /// them; then the outputs are collected and checked for memory they share with the inputs.
    fn run_once<'v, 'd: 'v>(
        &self,
        call: &RunCall<'_>,
        output_indices: Option<&[usize]>,
        inputs: &[(&str, &'v Value<'d>)],
        preallocate: bool,
    ) -> Result<Outputs> {
        let api = api()?;
        let output_count = call.output_names.len();
        let model_index = |p: usize| output_indices.map_or(p, |indices| indices[p]);
        let mut output_values: SmallVec<[*mut OrtValue; 8]> = smallvec![std::ptr::null_mut(); output_count];
        // Our tensors handed to ORT, by output position (none unless preallocating).
        let mut lent: SmallVec<[Option<output_pool::Lent>; 8]> = SmallVec::new();
        if preallocate {
            for (p, slot) in output_values.iter_mut().enumerate() {
                // An output named twice in one run: ORT writes only one of the tensors handed to
                // it and returns the others unwritten, so such outputs are never preallocated
                // (ORT's one value is then copied per position, see `unalias`).
                let repeated =
                    output_indices.is_some_and(|indices| indices.iter().filter(|&&i| i == indices[p]).nth(1).is_some());
                let tensor = if repeated { None } else { self.inner.output_pool.take(model_index(p))? };
                if let Some((_, tensor)) = &tensor {
                    *slot = tensor.as_ptr();
                }
                lent.push(tensor);
            }
        }
        let _serialized = self.inner.run_lock.as_ref().map(|lock| lock.lock().unwrap_or_else(|e| e.into_inner()));
        // SAFETY: the session is live; the name and value arrays have the lengths passed and
        // point to CStrings/values that outlive the call; ORT fills the null entries of
        // `output_values` with new values we then own, and writes the others (our preallocated
        // tensors, owned by `lent`) in place.
        let status = unsafe {
            ort!(
                api,
                Run(
                    self.inner.raw.as_ptr(),
                    call.run_options,
                    call.input_names.as_ptr(),
                    call.input_values.as_ptr(),
                    call.input_values.len(),
                    call.output_names.as_ptr(),
                    output_count,
                    output_values.as_mut_ptr()
                )
            )
        };
        // Take ownership of whatever ORT produced before looking at the status, so nothing leaks.
        // The values go straight into the `Outputs` returned (it is large: moving it costs copies).
        let mut out = Outputs::default();
        let mut missing = false;
        // Whether every output is one of our buffers, which no input and no other output can share.
        let mut all_ours = !lent.is_empty();
        for (position, p) in output_values.into_iter().enumerate() {
            let label = &self.inner.output_labels[model_index(position)];
            match lent.get_mut(position).and_then(Option::take) {
                // ORT writes a preallocated output in place: `p` is still our value.
                Some((slot, tensor)) if status.is_ok() && p == tensor.as_ptr() => {
                    let meta = slot.meta().clone();
                    let (value, ours) = tensor.into_value(slot, meta)?;
                    all_ours &= ours;
                    out.push(label, value);
                }
                // A failed run: our tensor is released with its buffer, not reused.
                Some(_) if status.is_err() => {}
                lent_tensor => {
                    // Never the case with ORT's `Run`; a value ORT made instead is ours to release.
                    drop(lent_tensor);
                    all_ours = false;
                    // SAFETY: each non-null pointer left here is a new value ORT handed to us.
                    match unsafe { Owned::from_raw(p) } {
                        Ok(owned) => out.push(label, Value::from_owned(owned)),
                        Err(_) => missing = true,
                    }
                }
            }
        }
        status?;
        if missing {
            return Err(Error::null_out("Run", "value for an output"));
        }
        if all_ours {
            return Ok(out);
        }
        // An output that is an input's buffer (graph output == graph input) would outlive the
        // caller's memory as a `Value<'static>`: copy it.
        crate::value::alias::unalias(out.values_mut(), inputs.iter().map(|(_, v)| *v), |p| {
            self.inner.passthrough[model_index(p)]
        })?;
        Ok(out)
    }
}

/// The arrays one call of ORT's `Run` reads (the same for a repeated call).
struct RunCall<'a> {
    input_names: &'a [*const c_char],
    input_values: &'a [*const OrtValue],
    output_names: &'a [*const c_char],
    run_options: *const onnxrt_sys::OrtRunOptions,
}
