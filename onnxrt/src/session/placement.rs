//! Placement as data (C API 24): which provider runs which node, as ORT assigned them when it
//! created the session ([`Session::placement`]), in the same [`Placement`] type the profile parser
//! ([`crate::profiling::placement`]) gives on older runtimes, without a profiled run.

use std::ffi::CStr;

use onnxrt_sys::OrtEpAssignedNode;

use super::builder::ConfigEntry;
use crate::api::api;
use crate::error::{Error, Result};
use crate::profiling::Placement;
use crate::session::{Session, SessionBuilder};
use crate::status::ort;

/// ORT's session key that makes it record the assignment (`kOrtSessionOptionsRecordEpGraphAssignmentInfo`).
pub(super) const RECORD_KEY: &str = "session.record_ep_graph_assignment_info";

impl SessionBuilder {
    /// Makes ORT record which provider each node is assigned to, for [`Session::placement`]
    /// (ONNX Runtime 1.24+; older runtimes ignore the setting).
    pub fn record_placement(mut self, on: bool) -> Self {
        self.config.retain(|e| e.key != RECORD_KEY);
        self.config.push(ConfigEntry {
            key: RECORD_KEY.into(),
            value: if on { "1" } else { "0" }.into(),
            checked: false,
        });
        self
    }
}

impl Session {
    /// Which provider runs which node (name, op type), as ORT assigned them (a node without a name
    /// in the model has an empty name here); needs a session built
    /// with [`SessionBuilder::record_placement`]. On older runtimes use
    /// [`crate::profiling::placement`], which reads the same from a profiled run.
    ///
    /// # Errors
    /// [`Error::NeedsNewerRuntime`] before ONNX Runtime 1.24; [`Error::BadSetting`] for a session
    /// built without `record_placement(true)`; ORT's errors.
    ///
    /// Corresponds to `OrtApi::Session_GetEpGraphAssignmentInfo`.
    #[doc(alias = "Session_GetEpGraphAssignmentInfo")]
    pub fn placement(&self) -> Result<Placement> {
        let api = api()?;
        api.needs(24, "Session::placement (Session_GetEpGraphAssignmentInfo)")?;
        let (mut subgraphs, mut n) = (std::ptr::null(), 0usize);
        // SAFETY: the session is live for `&self`; the out-pointers are valid. ORT hands back an
        // array it owns (alive with the session) of `n` subgraph pointers.
        let listed =
            unsafe { ort!(api, Session_GetEpGraphAssignmentInfo(self.inner.raw.as_ptr(), &mut subgraphs, &mut n)) };
        if let Err(Error::Ort { message, .. }) = &listed {
            if crate::ort_messages::PLACEMENT_NOT_RECORDED.matches(message) {
                return Err(Error::BadSetting {
                    setting: "record_placement".into(),
                    value: "off".into(),
                    allowed: format!("SessionBuilder::record_placement(true) when the session is built ({message})"),
                });
            }
        }
        listed?;
        let mut placement = Placement::default();
        if n == 0 || subgraphs.is_null() {
            return Ok(placement);
        }
        // SAFETY: `subgraphs` holds `n` pointers (ORT's contract), alive with the session.
        let subgraphs = unsafe { std::slice::from_raw_parts(subgraphs, n) };
        for &subgraph in subgraphs {
            let mut ep = std::ptr::null();
            // SAFETY: `subgraph` is one of ORT's live subgraphs; the out-pointer is valid.
            unsafe { ort!(api, EpAssignedSubgraph_GetEpName(subgraph, &mut ep)) }?;
            // SAFETY: null or a NUL-terminated string the subgraph owns.
            let ep = unsafe { text(ep) };
            let (mut nodes, mut count) = (std::ptr::null(), 0usize);
            // SAFETY: as above; ORT hands back an array of `count` node pointers it owns.
            unsafe { ort!(api, EpAssignedSubgraph_GetNodes(subgraph, &mut nodes, &mut count)) }?;
            let listed = placement.by_provider.entry(ep).or_default();
            if count == 0 || nodes.is_null() {
                continue;
            }
            // SAFETY: `nodes` holds `count` live node pointers.
            for &node in unsafe { std::slice::from_raw_parts(nodes, count) } {
                let entry = (node_text(api, node, Field::Name)?, node_text(api, node, Field::OpType)?);
                // Unnamed nodes (ORT's profile calls them `<op>_<index>`) are each listed.
                if entry.0.is_empty() || !listed.contains(&entry) {
                    listed.push(entry);
                }
            }
        }
        Ok(placement)
    }
}

enum Field {
    Name,
    OpType,
}

fn node_text(api: &crate::api::Api, node: *const OrtEpAssignedNode, field: Field) -> Result<String> {
    let mut out = std::ptr::null();
    match field {
        // SAFETY: `node` is a live node of the session's assignment info; the out-pointer is valid.
        Field::Name => unsafe { ort!(api, EpAssignedNode_GetName(node, &mut out)) }?,
        // SAFETY: as above.
        Field::OpType => unsafe { ort!(api, EpAssignedNode_GetOperatorType(node, &mut out)) }?,
    }
    // SAFETY: null or a NUL-terminated string the node owns.
    Ok(unsafe { text(out) })
}

/// # Safety
/// `ptr` is null or a live NUL-terminated string.
unsafe fn text(ptr: *const std::ffi::c_char) -> String {
    if ptr.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(ptr) }.to_string_lossy().into_owned()
    }
}

impl Session {
    /// For a session whose providers ORT chose by policy: the providers it assigned nodes to, in
    /// place of every provider it could choose from, where the runtime recorded them (1.24+).
    pub(super) fn providers_from_placement(&mut self) {
        let Ok(placement) = self.placement() else { return };
        let Some(inner) = std::sync::Arc::get_mut(&mut self.inner) else { return };
        let mut providers = Vec::new();
        super::add_before_cpu(&mut providers, placement.by_provider.keys().map(String::as_str));
        inner.providers = providers;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_message_table_names_the_key_it_sets() {
        let pattern = crate::ort_messages::PLACEMENT_NOT_RECORDED.any_of;
        assert!(pattern.iter().any(|all| *all == [super::RECORD_KEY]), "{pattern:?}");
    }
}
