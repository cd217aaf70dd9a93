//! An allocator's statistics (C API 23): what ORT's arena says about its memory (`Limit`,
//! `InUse`, `TotalAllocated`, `MaxInUse`, `NumAllocs`, `NumReserves`, ...), as text pairs.

use std::collections::BTreeMap;

use crate::allocator::Allocator;
use crate::api::api;
use crate::error::Result;
use crate::status::ort;

impl Allocator<'_> {
    /// The allocator's statistics, as ORT names them (an arena reports `InUse`, `MaxInUse`,
    /// `NumAllocs`...). An allocator that keeps none (the CPU allocator without its arena,
    /// [`SessionBuilder::cpu_arena(false)`](crate::SessionBuilder::cpu_arena)) returns an empty
    /// map (ORT 1.32).
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`](crate::Error::NeedsNewerRuntime) before ONNX Runtime 1.23;
    /// ORT's errors.
    ///
    /// Corresponds to `OrtApi::AllocatorGetStats`.
    #[doc(alias = "AllocatorGetStats")]
    pub fn stats(&self) -> Result<BTreeMap<String, String>> {
        let api = api()?;
        api.needs(23, "Allocator::stats (AllocatorGetStats)")?;
        let mut out = std::ptr::null_mut();
        // SAFETY: the allocator is live for `&self`; ORT hands back pairs we own, or null.
        unsafe { ort!(api, AllocatorGetStats(self.raw.as_ptr(), &mut out)) }?;
        // SAFETY: `out` is null or live pairs, read before they are released below.
        let stats = unsafe { crate::ep_device::pairs(api, out) };
        if let (Some(release), false) = (api.ort.ReleaseKeyValuePairs, out.is_null()) {
            // SAFETY: ours, released once, after the last read.
            unsafe { release(out) };
        }
        Ok(stats)
    }
}
