//! String key/value options, the form ORT's V2 provider-options API takes for every provider, and
//! the one place they become C arrays.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use crate::api::Api;
use crate::env::Environment;
use crate::error::{Error, Result};

/// An ordered set of options; setting a key again replaces its value.
#[cfg(feature = "cuda")]
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyValues {
    pub(crate) entries: Vec<(&'static str, String)>,
}

#[cfg(feature = "cuda")]
impl KeyValues {
    pub(crate) fn set(&mut self, key: &'static str, value: impl ToString) {
        self.entries.retain(|(k, _)| *k != key);
        self.entries.push((key, value.to_string()));
    }

    /// Refuses every key `table` does not list as a plain value (used by the typed options'
    /// tests; the append path checks every request, typed or named, the same way).
    #[cfg(test)]
    pub(crate) fn check(&self, table: &crate::allowed_keys::KeyTable) -> Result<()> {
        table.check_all(self.entries.iter().map(|(k, _)| *k))
    }

    /// The options as the append path reads them.
    pub(crate) fn pairs(&self) -> Vec<(&str, &str)> {
        self.entries.iter().map(|(k, v)| (*k, v.as_str())).collect()
    }
}

/// Calls `f` with `options` as C arrays (keys, values, count) of NUL-terminated strings that
/// live for the call.
pub(crate) fn with_c_arrays<T>(
    options: &[(&str, &str)],
    f: impl FnOnce(*const *const c_char, *const *const c_char, usize) -> Result<T>,
) -> Result<T> {
    let c = |what: &'static str, text: &str| CString::new(text).map_err(|_| Error::nul(what, text));
    let keys: Vec<CString> = options.iter().map(|(k, _)| c("provider option key", k)).collect::<Result<_>>()?;
    let values: Vec<CString> = options.iter().map(|(_, v)| c("provider option value", v)).collect::<Result<_>>()?;
    let key_ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr()).collect();
    let value_ptrs: Vec<*const c_char> = values.iter().map(|v| v.as_ptr()).collect();
    f(key_ptrs.as_ptr(), value_ptrs.as_ptr(), key_ptrs.len())
}

/// Hands the options to a V2 `update` call as C arrays, unless there are none. A refusal is
/// reported as the runtime refusing these options, naming them, unless ORT failed to load the
/// provider's library on the way (ORT 1.30 loads it at the first options call): that is
/// diagnosed as the load failure it is, naming the file.
pub(crate) fn apply(
    api: &Api,
    env: &Arc<Environment>,
    provider: &str,
    options: &[(&str, &str)],
    update: impl FnOnce(*const *const c_char, *const *const c_char, usize) -> Result<()>,
) -> Result<()> {
    if options.is_empty() {
        return Ok(());
    }
    with_c_arrays(options, |keys, values, len| Ok(update(keys, values, len)))?.map_err(|e| {
        if super::diagnose::is_load_failure(&e) {
            return super::diagnose::provider_load_failure(api, env, provider, e);
        }
        Error::BadSetting {
            setting: format!("{provider} provider options"),
            value: format!("{options:?}"),
            allowed: format!("ONNX Runtime {} refused them: {e}", api.version),
        }
    })
}
