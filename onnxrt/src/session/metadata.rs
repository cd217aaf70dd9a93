//! Model metadata: producer, graph name, domain, description, version and the custom map.

use std::collections::BTreeMap;

use onnxrt_sys::{OrtAllocator, OrtModelMetadata, OrtSession};

use crate::api::api;
use crate::error::{Error, Result};
use crate::handle::Owned;
use crate::memory::{default_allocator, free, take_string};
use crate::status::ort;

/// What the model file says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelMetadata {
    /// `producer_name`.
    pub producer: String,
    /// Graph name.
    pub graph_name: String,
    /// Model domain.
    pub domain: String,
    /// `doc_string`.
    pub description: String,
    /// Graph description.
    pub graph_description: String,
    /// `model_version`.
    pub version: i64,
    /// `metadata_props`.
    pub custom: BTreeMap<String, String>,
}

type Getter = unsafe extern "C" fn(
    *const OrtModelMetadata,
    *mut OrtAllocator,
    *mut *mut std::ffi::c_char,
) -> *mut onnxrt_sys::OrtStatus;

pub(crate) fn read(session: *mut OrtSession) -> Result<ModelMetadata> {
    let api = api()?;
    let allocator = default_allocator()?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: `session` is live (the caller owns it); we own the metadata returned.
    unsafe { ort!(api, SessionGetModelMetadata(session, &mut raw)) }?;
    // SAFETY: on success `raw` is a new metadata object we own.
    let meta = unsafe { Owned::from_raw(raw) }?;
    let text = |getter: Option<Getter>, name: &'static str| -> Result<String> {
        let getter = getter.ok_or_else(|| Error::missing(name))?;
        let mut out = std::ptr::null_mut();
        // SAFETY: `meta` is live; ORT allocates the string with `allocator`.
        unsafe { crate::status::check(name, getter(meta.as_ptr(), allocator, &mut out)) }?;
        // SAFETY: allocated by `allocator`, freed once inside.
        Ok(unsafe { take_string(allocator, out) })
    };
    let ort = api.ort;
    let mut version = 0i64;
    // SAFETY: `meta` is live; the out-pointer is valid.
    unsafe { ort!(api, ModelMetadataGetVersion(meta.as_ptr(), &mut version)) }?;
    let mut metadata = ModelMetadata {
        producer: text(ort.ModelMetadataGetProducerName, "ModelMetadataGetProducerName")?,
        graph_name: text(ort.ModelMetadataGetGraphName, "ModelMetadataGetGraphName")?,
        domain: text(ort.ModelMetadataGetDomain, "ModelMetadataGetDomain")?,
        description: text(ort.ModelMetadataGetDescription, "ModelMetadataGetDescription")?,
        graph_description: text(ort.ModelMetadataGetGraphDescription, "ModelMetadataGetGraphDescription")?,
        version,
        custom: BTreeMap::new(),
    };
    let mut keys = std::ptr::null_mut();
    let mut count = 0i64;
    // SAFETY: ORT allocates an array of `count` strings with `allocator`.
    unsafe { ort!(api, ModelMetadataGetCustomMetadataMapKeys(meta.as_ptr(), allocator, &mut keys, &mut count)) }?;
    if !keys.is_null() {
        // Every key is taken (and freed) before anything can fail, so an error below leaks none.
        let taken: Vec<String> = (0..usize::try_from(count).unwrap_or(0))
            // SAFETY: i < count; each key is a string allocated by `allocator`, freed once here.
            .map(|i| unsafe { take_string(allocator, *keys.add(i)) })
            .collect();
        // SAFETY: the array itself was allocated by `allocator`; its strings were freed above.
        unsafe { free(allocator, keys.cast()) };
        for key in taken {
            let c_key = std::ffi::CString::new(key.clone()).map_err(|_| Error::nul("metadata key", &key))?;
            let mut value = std::ptr::null_mut();
            // SAFETY: `c_key` is NUL-terminated; ORT allocates the value with `allocator`.
            unsafe {
                ort!(api, ModelMetadataLookupCustomMetadataMap(meta.as_ptr(), allocator, c_key.as_ptr(), &mut value))
            }?;
            // SAFETY: allocated by `allocator`, freed once inside.
            metadata.custom.insert(key, unsafe { take_string(allocator, value) });
        }
    }
    Ok(metadata)
}
