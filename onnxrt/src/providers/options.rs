//! String key/value options, the form ORT's V2 provider-options API takes for every provider.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use crate::api::Api;
use crate::env::Environment;
use crate::error::{Error, Result};

/// An ordered set of options; setting a key again replaces its value.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyValues {
    pub(crate) entries: Vec<(&'static str, String)>,
}

impl KeyValues {
    pub(crate) fn set(&mut self, key: &'static str, value: impl ToString) {
        self.entries.retain(|(k, _)| *k != key);
        self.entries.push((key, value.to_string()));
    }

    /// Refuses every key `table` does not list as a plain value: through `raw()` a key ORT reads
    /// as an address or a library to load would let safe code hand ORT any integer as a pointer.
    /// The same check as for options given by name (`allowed_keys`).
    pub(crate) fn check(&self, table: &crate::allowed_keys::KeyTable) -> Result<()> {
        table.check_all(self.entries.iter().map(|(k, _)| *k))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, v)| v.as_str())
    }

    /// Hands the options to `update` as C arrays (keys, values, count), unless there are none.
    /// A refusal is reported as the runtime refusing these options, naming them, unless ORT failed
    /// to load the provider's library on the way (ORT 1.30 loads it at the first options call):
    /// that is diagnosed as the load failure it is, naming the file.
    pub(crate) fn apply(
        &self,
        api: &Api,
        env: &Arc<Environment>,
        provider: &str,
        update: impl FnOnce(*const *const c_char, *const *const c_char, usize) -> Result<()>,
    ) -> Result<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        let c = |what: &'static str, text: &str| CString::new(text).map_err(|_| Error::nul(what, text));
        let keys: Vec<CString> =
            self.entries.iter().map(|(k, _)| c("provider option key", k)).collect::<Result<_>>()?;
        let values: Vec<CString> =
            self.entries.iter().map(|(_, v)| c("provider option value", v)).collect::<Result<_>>()?;
        let key_ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
        let value_ptrs: Vec<*const c_char> = values.iter().map(|v| v.as_ptr()).collect();
        update(key_ptrs.as_ptr(), value_ptrs.as_ptr(), key_ptrs.len()).map_err(|e| {
            if super::diagnose::is_load_failure(&e) {
                return super::diagnose::provider_load_failure(api, env, provider, e);
            }
            Error::InvalidArgument {
                what: format!("{provider} options {:?}", self.entries),
                why: format!("ONNX Runtime {} refused them: {e}", api.version),
            }
        })
    }
}
