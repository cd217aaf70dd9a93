//! Values whose memory another value may share, and how the crate keeps that sound.
//!
//! ORT hands back `OrtValue`s that share a tensor with something else in three places: a run's
//! output that is one of its inputs (a graph output that is a graph input), the outputs of an
//! `IoBinding` (new references to the tensors the binding keeps), and the bound values
//! themselves. Shared memory is either copied here ([`Value::detached`]) or marked read-only
//! ([`Value::shared`]) and tied by a lifetime to what it shares; see docs/soundness.md.

use std::ffi::c_void;

use smallvec::SmallVec;

use onnxrt_sys::OrtValue;

use crate::api::api;
use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::status::ort;
use crate::value::{Value, ValueKind};

impl<'a> Value<'a> {
    /// A value over a tensor that something else (named by `'a`) shares with it. It is never
    /// writable: neither ORT (as a bound output) nor `copy_from_host` may write it.
    pub(crate) fn shared(raw: Owned<OrtValue>) -> Value<'a> {
        let mut value = Value::new(raw, None, None);
        value.writable = false;
        value
    }

    /// The address range of a tensor's data (at least one byte wide), `None` for other kinds or
    /// a tensor without data. Device memory is compared by address as well: CUDA addresses do
    /// not overlap host ones.
    pub(crate) fn data_span(&self) -> Result<Option<(usize, usize)>> {
        let api = api()?;
        if !self.is_tensor(api)? {
            return Ok(None);
        }
        let info = self.tensor_meta()?;
        let mut data: *mut c_void = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live tensor; the out-pointer is valid. Only the address is used.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        if data.is_null() {
            return Ok(None);
        }
        let start = data as usize;
        // A code the crate cannot size counts as the widest type (16 bytes), so an overlap is
        // never missed; strings (objects) count one byte each at least.
        let size = match info.element_type {
            ElementType::Unknown(_) => 16,
            other => other.size(),
        };
        let bytes = info.len().saturating_mul(size).max(1);
        Ok(Some((start, start.saturating_add(bytes))))
    }

    /// The address of a tensor's data (`None` for other kinds), without reading its shape or
    /// type (two flag and pointer reads in ORT), so checking every output of every run stays cheap.
    pub(crate) fn data_start(&self) -> Result<Option<usize>> {
        if let Some(recycle) = &self.recycle {
            return Ok(Some(recycle.data() as usize));
        }
        let api = api()?;
        // An absent optional holds no data, and ORT 1.16.2 crashes when `IsTensor` or
        // GetValueType is asked about one: `HasValue` first (a flag read) while the kind is unknown.
        if self.meta.get().is_none() && self.is_none()? {
            return Ok(None);
        }
        if !self.is_tensor(api)? {
            return Ok(None);
        }
        let mut data: *mut c_void = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live tensor; the out-pointer is valid. Only the address is used.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        Ok((!data.is_null()).then_some(data as usize))
    }

    /// A copy of this host tensor in memory of its own (ORT's default allocator), so it no longer
    /// shares anything. Sequences are rebuilt from copies of their members.
    pub(crate) fn detached(&self) -> Result<Value<'static>> {
        if self.kind()? == ValueKind::Sequence {
            return Value::sequence(self.sequence_items()?);
        }
        let info = self.tensor_meta()?.clone();
        if info.element_type == ElementType::String {
            return super::string_tensor(&info.shape, self.string_bytes()?);
        }
        let bytes = info
            .len()
            .checked_mul(info.element_type.byte_size()?)
            .ok_or_else(|| Error::BadShape { shape: info.shape.to_vec(), why: "byte size overflows" })?;
        let api = api()?;
        let copy = Value::new(super::allocated_tensor(&info.shape, info.element_type)?, None, Some(info));
        if bytes > 0 {
            let source = self.host_data()?;
            let mut target: *mut c_void = std::ptr::null_mut();
            // SAFETY: `copy.raw` is a live tensor; the out-pointer is valid.
            unsafe { ort!(api, GetTensorMutableData(copy.raw.as_ptr(), &mut target)) }?;
            // SAFETY: both tensors hold `bytes` bytes (same element type and shape); the target
            // was just allocated, so the two do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(source.cast::<u8>(), target.cast::<u8>(), bytes) };
        }
        Ok(copy)
    }
}

/// Replaces each output that shares memory with an input (its data starts inside an input's
/// data, as when a graph output is a graph input or an alias of one) or with an earlier output
/// by a copy of its own, so outputs never point into the caller's buffers. Non-tensor outputs
/// (sequences) are copied when `passthrough(i)` says the model returns an input as output `i`.
///
/// Each input's span and each output's start is read once (on the stack for up to 8 of each),
/// so a run with `n` inputs and `m` outputs makes `n + 2m` cheap calls into ORT.
pub(crate) fn unalias<'i, 'd: 'i, I>(
    outputs: &mut [Value<'static>],
    inputs: I,
    passthrough: impl Fn(usize) -> bool,
) -> Result<()>
where
    I: Iterator<Item = &'i Value<'d>>,
{
    let mut spans: SmallVec<[(usize, usize); 8]> = SmallVec::new();
    for input in inputs {
        if let Some(span) = input.data_span()? {
            spans.push(span);
        }
    }
    // Starts of the outputs already looked at (after any copy).
    let mut starts: SmallVec<[Option<usize>; 8]> = SmallVec::new();
    for (i, output) in outputs.iter_mut().enumerate() {
        let start = output.data_start()?;
        let shared = match start {
            None => passthrough(i),
            Some(start) => spans.iter().any(|&(from, to)| (from..to).contains(&start)) || starts.contains(&Some(start)),
        };
        if shared {
            *output = output.detached()?;
            starts.push(output.data_start()?);
        } else {
            starts.push(start);
        }
    }
    Ok(())
}
