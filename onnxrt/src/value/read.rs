//! Reading values: typed views and copies of tensors, strings, sequence members and map entries,
//! and where a tensor's data lives.

use std::ffi::c_void;

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, IxDyn};
use smallvec::SmallVec;

use super::info::{check_element, Access};
use super::{check_bools, Value, ValueKind};
use crate::api::api;
use crate::element::{Element, ElementType};
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::memory::default_allocator;
use crate::status::ort;

impl Value<'_> {
    /// The tensor's data, which the CPU can read (an error for device memory).
    pub(super) fn host_data(&self) -> Result<*mut c_void> {
        self.host_data_if_host()?.ok_or_else(|| Error::NotHostMemory { memory: self.memory_name().unwrap_or_default() })
    }

    /// The name of the memory the tensor lives in (`Cpu`, `Cuda`, `CudaPinned`).
    pub(super) fn memory_name(&self) -> Result<String> {
        let api = api()?;
        let mut info = std::ptr::null();
        // SAFETY: `self.raw` is a live tensor; the memory info returned is owned by the value.
        unsafe { ort!(api, GetTensorMemoryInfo(self.raw.as_ptr(), &mut info)) }?;
        let mut name = std::ptr::null();
        // SAFETY: `info` is valid while the value lives; the name is a static string in ORT.
        unsafe { ort!(api, MemoryInfoGetName(info, &mut name)) }?;
        // SAFETY: a NUL-terminated static string.
        Ok(unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy().into_owned())
    }

    /// The tensor's data if the CPU can read it (host or pinned memory), `None` on a device.
    pub(crate) fn host_data_if_host(&self) -> Result<Option<*mut c_void>> {
        // A preallocated output: ORT wrote into our host buffer (checked after the run).
        if let Some(recycle) = &self.recycle {
            return Ok(Some(recycle.data()));
        }
        let api = api()?;
        let mut info = std::ptr::null();
        // SAFETY: `self.raw` is a live tensor; the memory info returned is owned by the value.
        unsafe { ort!(api, GetTensorMemoryInfo(self.raw.as_ptr(), &mut info)) }?;
        let mut name = std::ptr::null();
        // SAFETY: `info` is valid while the value lives; the name is a static string in ORT.
        unsafe { ort!(api, MemoryInfoGetName(info, &mut name)) }?;
        // SAFETY: a NUL-terminated static string.
        let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
        // Host memory by name (the common case, one call fewer), else by memory type.
        let on_host = name == b"Cpu" || name == b"CudaPinned" || {
            let mut mem_type = 0;
            // SAFETY: as above.
            unsafe { ort!(api, MemoryInfoGetMemType(info, &mut mem_type)) }?;
            mem_type == onnxrt_sys::OrtMemTypeCPUOutput || mem_type == onnxrt_sys::OrtMemTypeCPUInput
        };
        if !on_host {
            return Ok(None);
        }
        let mut data = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live tensor; the out-pointer is valid.
        unsafe { ort!(api, GetTensorMutableData(self.raw.as_ptr(), &mut data)) }?;
        Ok(Some(data))
    }

    /// Borrows a tensor's elements as an n-dimensional view.
    ///
    /// # Errors
    /// [`Error::ReadTypeMismatch`] if `T` is not the tensor's element type; [`Error::ValueKind`]
    /// if this is not a tensor; [`Error::NotHostMemory`] if the tensor is in device memory.
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        let info = self.tensor_meta()?;
        check_element(info, T::TYPE, Access::Read, self.name())?;
        // On the stack (ndarray keeps up to 4 dimensions inline, so views of rank <= 4 allocate nothing).
        let shape: SmallVec<[usize; 6]> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
        let len = info.len();
        if len == 0 {
            return ArrayViewD::from_shape(IxDyn(&shape), &[])
                .map_err(|e| Error::InvalidArgument { what: "empty tensor".into(), why: e.to_string() });
        }
        let data = self.host_data()?;
        if T::TYPE == ElementType::Bool {
            // SAFETY: a bool tensor holds `len` bytes; reading them as u8 is always valid.
            check_bools(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })?;
        }
        // SAFETY: ORT guarantees the buffer holds `len` elements of the tensor's type, which is T
        // (checked above), aligned for it, and for bool every byte was checked to be 0 or 1; it
        // lives as long as the value, which `&self` borrows. `shape` has `len` elements in all
        // (both come from the same cached dims), so its row-major strides stay inside the buffer.
        Ok(unsafe { ArrayViewD::from_shape_ptr(IxDyn(&shape), data.cast::<T>().cast_const()) })
    }

    /// Borrows the elements of a host tensor this value may write, as a mutable n-dimensional
    /// view: fill an input in place (a camera frame into the same tensor every run) instead of
    /// building a new array.
    ///
    /// ```
    /// # use onnxrt::Value;
    /// let mut image = Value::from_vec(&[1, 2, 2], vec![0f32; 4])?;
    /// image.view_mut::<f32>()?.fill(0.5);
    /// assert_eq!(image.view::<f32>()?.sum(), 2.0);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::ReadOnlyValue`] for a value that only borrows its data for reading
    /// ([`Value::from_view`]) or shares its tensor with an [`IoBinding`](crate::IoBinding); the
    /// errors of [`view`](Value::view) otherwise (element type, not a tensor, device memory, a
    /// `bool` tensor holding bytes other than 0 and 1).
    pub fn view_mut<T: Element>(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        if !self.writable {
            return Err(Error::ReadOnlyValue { operation: "a mutable view of the tensor".into() });
        }
        let info = self.tensor_meta()?;
        check_element(info, T::TYPE, Access::Write, self.name())?;
        let shape: SmallVec<[usize; 6]> = info.shape.iter().map(|&d| d.max(0) as usize).collect();
        let len = info.len();
        if len == 0 {
            return ArrayViewMutD::from_shape(IxDyn(&shape), &mut [])
                .map_err(|e| Error::InvalidArgument { what: "empty tensor".into(), why: e.to_string() });
        }
        let data = self.host_data()?;
        if T::TYPE == ElementType::Bool {
            // SAFETY: a bool tensor holds `len` bytes; reading them as u8 is always valid.
            check_bools(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) })?;
        }
        // SAFETY: as in `view` (buffer of `len` elements of T, aligned, bools checked, `shape`
        // covering exactly `len` elements); in addition `&mut self` makes this the only reference
        // into the data through this value, and a writable value owns its memory or borrows it
        // mutably from the one value it was cut from (`first_rows_mut`); values that borrow for
        // reading or share an IoBinding's tensor are not writable (checked above).
        Ok(unsafe { ArrayViewMutD::from_shape_ptr(IxDyn(&shape), data.cast::<T>()) })
    }

    /// Copies a tensor's elements into an owned array.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        self.view::<T>().map(|v| v.to_owned())
    }

    /// The strings of a string tensor, as bytes (ORT does not check UTF-8).
    ///
    /// Corresponds to `OrtApi::GetStringTensorContent`.
    #[doc(alias = "GetStringTensorContent")]
    pub fn string_bytes(&self) -> Result<Vec<Vec<u8>>> {
        let info = self.tensor_meta()?;
        check_element(info, ElementType::String, Access::Read, self.name())?;
        let count = info.len();
        let api = api()?;
        let mut total = 0usize;
        // SAFETY: `self.raw` is a live string tensor.
        unsafe { ort!(api, GetStringTensorDataLength(self.raw.as_ptr(), &mut total)) }?;
        let mut buffer = vec![0u8; total];
        let mut offsets = vec![0usize; count];
        // SAFETY: `buffer` has `total` bytes and `offsets` `count` entries, as ORT requires.
        unsafe {
            ort!(
                api,
                GetStringTensorContent(
                    self.raw.as_ptr(),
                    buffer.as_mut_ptr().cast(),
                    total,
                    offsets.as_mut_ptr(),
                    count
                )
            )
        }?;
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let start = offsets[i];
            let end = offsets.get(i + 1).copied().unwrap_or(total);
            out.push(buffer.get(start..end).unwrap_or_default().to_vec());
        }
        Ok(out)
    }

    /// The strings of a string tensor.
    ///
    /// # Errors
    /// [`Error::InvalidString`] naming the first element that is not UTF-8 (use
    /// [`Value::string_bytes`] to read such data).
    pub fn strings(&self) -> Result<Vec<String>> {
        self.string_bytes()?
            .into_iter()
            .enumerate()
            .map(|(index, bytes)| {
                String::from_utf8(bytes)
                    .map_err(|_| Error::InvalidString { index, why: "not valid UTF-8; read it with string_bytes()" })
            })
            .collect()
    }

    /// The members of a sequence (copies owned by the caller).
    ///
    /// Corresponds to `OrtApi::GetValueCount` + `OrtApi::GetValue`.
    #[doc(alias = "GetValue")]
    pub fn sequence_items(&self) -> Result<Vec<Value<'static>>> {
        self.expect_kind(ValueKind::Sequence)?;
        self.members()
    }

    /// The keys and values of a map, as two tensors.
    pub fn map_entries(&self) -> Result<(Value<'static>, Value<'static>)> {
        self.expect_kind(ValueKind::Map)?;
        let mut members = self.members()?.into_iter();
        match (members.next(), members.next()) {
            (Some(keys), Some(values)) => Ok((keys, values)),
            _ => Err(Error::InvalidArgument { what: "map value".into(), why: "ORT returned no keys/values".into() }),
        }
    }

    fn members(&self) -> Result<Vec<Value<'static>>> {
        let api = api()?;
        let allocator = default_allocator()?;
        let mut count = 0usize;
        // SAFETY: `self.raw` is a live sequence or map.
        unsafe { ort!(api, GetValueCount(self.raw.as_ptr(), &mut count)) }?;
        let mut out = Vec::with_capacity(count);
        for index in 0..count {
            let index = i32::try_from(index)
                .map_err(|_| Error::InvalidArgument { what: "sequence".into(), why: "too many members".into() })?;
            let mut member = std::ptr::null_mut();
            // SAFETY: index < count; ORT allocates a new value we own.
            unsafe { ort!(api, GetValue(self.raw.as_ptr(), index, allocator, &mut member)) }?;
            // SAFETY: on success `member` is a new value we own.
            out.push(Value::from_owned(unsafe { Owned::from_raw(member) }?));
        }
        Ok(out)
    }
}
