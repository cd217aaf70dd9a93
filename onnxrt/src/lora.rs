//! LoRA adapters per run (C API 20): [`LoraAdapter`] holds the parameters of an adapter file (ONNX
//! Runtime's adapter format, e.g. written by its Python `AdapterFormat`), and
//! [`RunOptions::add_lora_adapter`](crate::RunOptions::add_lora_adapter) makes the runs that use
//! those options feed them to the model in place of the inputs (or overridable initializers) of
//! the same names. One session, many adapters, chosen per run.

use std::ffi::CString;
use std::path::Path;

use onnxrt_sys::OrtLoraAdapter;

use crate::api::api;
use crate::error::{Error, Result};
use crate::status::ort;

/// A loaded adapter. Share it (`Arc`) between run options; it lives as long as any uses it.
pub struct LoraAdapter {
    raw: *mut OrtLoraAdapter,
}

// SAFETY: ORT never changes an adapter after it is created; runs on any thread only read it.
unsafe impl Send for LoraAdapter {}
// SAFETY: as above.
unsafe impl Sync for LoraAdapter {}

impl std::fmt::Debug for LoraAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LoraAdapter")
    }
}

impl LoraAdapter {
    /// Reads an adapter file (its parameters stay in host memory).
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.20; ORT's error for a file that is not
    /// an adapter.
    ///
    /// Corresponds to `OrtApi::CreateLoraAdapter`.
    #[doc(alias = "CreateLoraAdapter")]
    pub fn from_file(path: impl AsRef<Path>) -> Result<LoraAdapter> {
        let path = path.as_ref();
        let api = api()?;
        api.needs(20, "LoraAdapter::from_file (CreateLoraAdapter)")?;
        let path_c = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::nul("adapter path", &path.display().to_string()))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the path is NUL-terminated and outlives the call; a null allocator keeps the
        // parameters on the host; the out-pointer is valid.
        unsafe { ort!(api, CreateLoraAdapter(path_c.as_ptr(), std::ptr::null_mut(), &mut raw)) }?;
        Self::owned(raw)
    }

    /// Reads an adapter from bytes (ORT copies them).
    ///
    /// # Errors
    /// As [`LoraAdapter::from_file`].
    ///
    /// Corresponds to `OrtApi::CreateLoraAdapterFromArray`.
    #[doc(alias = "CreateLoraAdapterFromArray")]
    pub fn from_bytes(bytes: &[u8]) -> Result<LoraAdapter> {
        let api = api()?;
        api.needs(20, "LoraAdapter::from_bytes (CreateLoraAdapterFromArray)")?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: `bytes` is live for the call and ORT copies it; null allocator as above.
        unsafe {
            ort!(api, CreateLoraAdapterFromArray(bytes.as_ptr().cast(), bytes.len(), std::ptr::null_mut(), &mut raw))
        }?;
        Self::owned(raw)
    }

    fn owned(raw: *mut OrtLoraAdapter) -> Result<LoraAdapter> {
        if raw.is_null() {
            Err(Error::null_out("CreateLoraAdapter", "adapter"))
        } else {
            Ok(LoraAdapter { raw })
        }
    }

    pub(crate) fn as_ptr(&self) -> *const OrtLoraAdapter {
        self.raw
    }
}

impl Drop for LoraAdapter {
    fn drop(&mut self) {
        if let Some(release) = api().ok().and_then(|api| api.ort.ReleaseLoraAdapter) {
            // SAFETY: created by ORT, released once; run options that point to it hold an `Arc`
            // of it and are released first.
            unsafe { release(self.raw) };
        }
    }
}
