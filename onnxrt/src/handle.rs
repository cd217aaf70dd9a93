//! One owner per ORT pointer: [`Owned<T>`] releases it exactly once, with the matching `Release*`.

use std::ptr::NonNull;

use crate::api::api;
use crate::error::{Error, Result};

/// An ORT object type and the function that frees it.
pub(crate) trait Release {
    /// Human name, for errors.
    const NAME: &'static str;
    /// Frees `ptr`.
    ///
    /// # Safety
    /// `ptr` is a live object of this type, released by no one else, not used afterwards.
    unsafe fn release(ort: &onnxrt_sys::OrtApi, ptr: *mut Self);
}

/// Implements [`Release`] for an ORT type with its `Release*` function (all `void(T*)`).
macro_rules! release_with {
    ($($ty:ident => $function:ident),* $(,)?) => {$(
        impl Release for onnxrt_sys::$ty {
            const NAME: &'static str = stringify!($ty);
            unsafe fn release(ort: &onnxrt_sys::OrtApi, ptr: *mut Self) {
                if let Some(f) = ort.$function {
                    // SAFETY: the trait's contract: `ptr` is live and released only here.
                    unsafe { f(ptr) }
                }
            }
        }
    )*};
}

release_with! {
    OrtEnv => ReleaseEnv,
    OrtSession => ReleaseSession,
    OrtSessionOptions => ReleaseSessionOptions,
    OrtValue => ReleaseValue,
    OrtMemoryInfo => ReleaseMemoryInfo,
    OrtRunOptions => ReleaseRunOptions,
    OrtTypeInfo => ReleaseTypeInfo,
    OrtTensorTypeAndShapeInfo => ReleaseTensorTypeAndShapeInfo,
    OrtModelMetadata => ReleaseModelMetadata,
    OrtIoBinding => ReleaseIoBinding,
    OrtAllocator => ReleaseAllocator,
    OrtThreadingOptions => ReleaseThreadingOptions,
    OrtCUDAProviderOptionsV2 => ReleaseCUDAProviderOptions,
    OrtTensorRTProviderOptionsV2 => ReleaseTensorRTProviderOptions,
}

/// Sole owner of one ORT object.
pub(crate) struct Owned<T: Release>(NonNull<T>);

impl<T: Release> Owned<T> {
    /// Takes ownership of what an ORT `Create*` wrote to its out-pointer.
    ///
    /// # Safety
    /// `ptr` is null or a live object that nobody else will release.
    pub(crate) unsafe fn from_raw(ptr: *mut T) -> Result<Owned<T>> {
        NonNull::new(ptr).map(Owned).ok_or_else(|| Error::null_out(T::NAME, "object"))
    }

    /// The raw pointer, for passing to ORT. It stays owned here.
    pub(crate) fn as_ptr(&self) -> *mut T {
        self.0.as_ptr()
    }
}

impl<T: Release> Drop for Owned<T> {
    fn drop(&mut self) {
        // The API exists: it was needed to create the object.
        if let Ok(api) = api() {
            // SAFETY: we own the pointer and this is the only release (Drop runs once).
            unsafe { T::release(api.ort, self.0.as_ptr()) }
        }
    }
}

impl<T: Release> std::fmt::Debug for Owned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({:p})", T::NAME, self.0)
    }
}
