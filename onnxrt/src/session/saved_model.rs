//! Saving the model ORT optimized ([`SessionBuilder::save_optimized_model`]) without ever
//! leaving a half-written file where the caller asked for one: ORT writes to a temporary name in
//! the same folder, renamed into place once the session exists and removed if it does not.
//!
//! [`SessionBuilder::save_optimized_model`]: crate::SessionBuilder::save_optimized_model

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::api::api;
use crate::error::{Error, Result};
use crate::status::ort;

/// A file ORT is asked to write, under a temporary name until [`SavedModel::keep`].
pub(crate) struct SavedModel {
    target: PathBuf,
    temporary: PathBuf,
    kept: bool,
}

impl SavedModel {
    /// Checks that the folder of `target` exists and picks the temporary name beside it, with
    /// the same extension (ORT picks the format from it: `.ort` or ONNX).
    pub(crate) fn new(target: &Path) -> Result<SavedModel> {
        let refuse = |why: String| Error::ModelFile { path: target.to_owned(), message: why };
        let name = target.file_name().ok_or_else(|| refuse("names no file to save the optimized model to".into()))?;
        let folder = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        if !folder.is_dir() {
            return Err(refuse(format!(
                "cannot save the optimized model: the folder {} does not exist",
                folder.display()
            )));
        }
        if target.is_dir() {
            return Err(refuse("cannot save the optimized model over a folder".into()));
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let unique = format!("{}.{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let extension = target.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        let temporary = folder.join(format!(".{}.partial-{unique}{extension}", name.to_string_lossy()));
        Ok(SavedModel { target: target.to_owned(), temporary, kept: false })
    }

    /// Asks ORT to write the optimized model to the temporary name.
    pub(crate) fn set_on(&self, options: *mut onnxrt_sys::OrtSessionOptions) -> Result<()> {
        let api = api()?;
        let path_c = CString::new(self.temporary.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::nul("optimized model path", &self.target.display().to_string()))?;
        // SAFETY: `options` is live; the path is NUL-terminated and outlives the call (ORT copies it).
        unsafe { ort!(api, SetOptimizedModelFilePath(options, path_c.as_ptr())) }
    }

    /// Moves the finished file into place.
    pub(crate) fn keep(mut self) -> Result<()> {
        self.kept = true;
        std::fs::rename(&self.temporary, &self.target).map_err(|e| {
            let _ = std::fs::remove_file(&self.temporary);
            Error::ModelFile {
                path: self.target.clone(),
                message: format!("the optimized model was written but could not be moved into place: {e}"),
            }
        })
    }
}

impl Drop for SavedModel {
    fn drop(&mut self) {
        if !self.kept {
            // The session was not made: whatever ORT wrote is not the caller's file.
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}
