//! Which string keys the crate hands to ONNX Runtime from safe code: one table per place that
//! takes them (session configuration, run configuration, each execution provider's options).
//!
//! ORT reads some string keys as plain values (a number, a flag, a file to write) and others as
//! something safe code cannot vouch for: an integer cast to a pointer (a CUDA stream, an allocator
//! function), a shared library to load and call, or a promise that caller memory outlives the
//! session (`session.use_ort_model_bytes_for_initializers`). So the rule is an allow-list: a key
//! passes only when its table lists it as [`KeyClass::Plain`]. Every other key, listed with its
//! class or unknown to the table, is [`Error::KeyRefused`] naming the
//! key, why, and the keys that pass; the `unsafe` doors (`SessionBuilder::provider_unchecked`,
//! `SessionBuilder::config_entry_unchecked`, `RunOptions::config_entry_unchecked`) skip the check.
//!
//! The tables were read from ORT's option parsers (each table's [`KeyTable::read_from`] says which
//! files, at which version). A key a table does not list is refused even if it is harmless: adding
//! it here, after reading how ORT parses it, is the way to let it through. `docs/allowed-keys.md`
//! is rendered from these tables, and a test keeps the two equal.

use crate::error::{Error, Names, Result};

mod tables;
pub use tables::*;

/// What ORT does with a key's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyClass {
    /// A number, flag, name or path of a data file: let through from safe code.
    Plain,
    /// Makes ORT use memory outside the call that lent it, or out of order with the work that
    /// writes it: it keeps pointing into caller memory, replays a captured graph on the first
    /// runs' buffers, copies on streams its kernels do not wait for, or returns before its GPU
    /// work ends.
    Ownership,
    /// Parsed as an integer and used as a pointer.
    Address,
    /// Names a shared library ORT loads and calls into.
    CodeLoading,
}

impl KeyClass {
    /// The class as the audit table writes it.
    pub fn label(self) -> &'static str {
        match self {
            KeyClass::Plain => "plain value",
            KeyClass::Ownership => "ownership",
            KeyClass::Address => "address",
            KeyClass::CodeLoading => "code loading",
        }
    }
}

/// One key of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The key, exactly as ORT compares it (case-sensitive).
    pub name: &'static str,
    /// What ORT does with its value.
    pub class: KeyClass,
    /// For a key that is not plain: why it is refused and what to use instead.
    pub why: &'static str,
}

/// The keys one place takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTable {
    /// Where the keys go, as errors name it (`"CUDA provider option"`, `"session config entry"`).
    pub scope: &'static str,
    /// The ORT sources (file, version or commit) the classes were read from.
    pub read_from: &'static str,
    /// The same, in a few words (the audit table's column).
    pub version: &'static str,
    /// The `unsafe` function that takes keys without this check.
    pub unchecked: &'static str,
    /// Every key the crate knows for this place, plain or not.
    pub keys: &'static [Key],
}

impl KeyTable {
    /// The keys that pass from safe code.
    pub fn allowed(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.keys.iter().filter(|k| k.class == KeyClass::Plain).map(|k| k.name)
    }

    /// The table's entry for `key`, if it lists it.
    pub fn get(&self, key: &str) -> Option<&'static Key> {
        self.keys.iter().find(|k| k.name == key)
    }

    /// `Ok` when `key` is listed as a plain value; otherwise the typed refusal.
    ///
    /// # Errors
    /// [`Error::KeyRefused`] naming the key, its class (or that the table does not list it), why,
    /// and every key the table lets through.
    pub fn check(&self, key: &str) -> Result<()> {
        let (class, why) = match self.get(key) {
            Some(k) if k.class == KeyClass::Plain => return Ok(()),
            Some(k) => (k.class.label(), format!("{}; or, vouching for it yourself, the unsafe {}", k.why, self.unchecked)),
            None => (
                "not on the list",
                format!(
                    "this crate lets through only keys whose parsing in ONNX Runtime was read and found to take a plain value; pass another through the unsafe {}",
                    self.unchecked
                ),
            ),
        };
        Err(Error::KeyRefused {
            scope: self.scope.to_owned(),
            key: key.to_owned(),
            class,
            why,
            allowed: Names(self.allowed().map(str::to_owned).collect()),
        })
    }

    /// Checks every key of `entries`, failing on the first refused one.
    ///
    /// # Errors
    /// As [`KeyTable::check`].
    pub fn check_all<'k>(&self, keys: impl IntoIterator<Item = &'k str>) -> Result<()> {
        keys.into_iter().try_for_each(|key| self.check(key))
    }
}

/// `docs/allowed-keys.md`, rendered from the tables above: per place, where the classes were
/// read, the keys that pass and the keys refused with their class; then the callbacks.
pub fn audit_markdown() -> String {
    let mut out = String::from(
        "# String keys onnxrt hands to ONNX Runtime\n\n\
         Generated from `onnxrt/src/allowed_keys/tables.rs` by `cargo test -p onnxrt --lib allowed_keys`, \
         which fails when the two differ; `ONNXRT_BLESS=1` rewrites this file. Do not edit it by hand.\n\n\
         A key passes from safe code only when its place's table lists it as a plain value. Any other key, \
         listed with its class or unknown, is `Error::KeyRefused` naming the key, why, and the keys that pass. \
         Classes: *ownership* (ORT keeps pointing into memory lent for one call), *address* (parsed as an \
         integer and used as a pointer), *code loading* (a library ORT loads and calls). Each place's `unsafe` \
         door takes keys unchecked. Which ORT files each table was read from: its `read_from`. How to add a key: \
         ARCHITECTURE.md, \"Where to add a provider option\".\n",
    );
    let mut tables: Vec<&KeyTable> = vec![&SESSION_CONFIG, &RUN_CONFIG];
    tables.extend(PROVIDERS.iter().map(|(_, t)| *t));
    let mut door = "";
    for table in &tables {
        out.push_str(&format!("\n## {}\n\n", table.scope));
        // The door is named where it changes (every provider shares one).
        if table.unchecked != door {
            door = table.unchecked;
            out.push_str(&format!("Unchecked: `{door}`. "));
        }
        out.push_str(&format!("Read from: {}.\n\n", table.version));
        let plain: Vec<String> = table.allowed().map(|k| format!("`{k}`")).collect();
        let plain = if plain.is_empty() { "none".to_owned() } else { plain.join(", ") };
        out.push_str(&format!("Pass: {plain}.\n"));
        let refused: Vec<String> = table
            .keys
            .iter()
            .filter(|k| k.class != KeyClass::Plain)
            .map(|k| format!("`{}` ({})", k.name, k.class.label()))
            .collect();
        if !refused.is_empty() {
            out.push_str(&format!("\nRefused: {}.\n", refused.join(", ")));
        }
    }
    out.push_str("\n## Callbacks: code ORT runs, each body inside one `catch_unwind`\n\n| function | when ORT calls it |\n|---|---|\n");
    for callback in CALLBACKS {
        out.push_str(&format!("| `{}` | {} |\n", callback.function, callback.when));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_table_lists_a_key_twice() {
        let mut tables: Vec<&KeyTable> = vec![&SESSION_CONFIG, &RUN_CONFIG];
        tables.extend(PROVIDERS.iter().map(|(_, t)| *t));
        for table in tables {
            let mut names: Vec<_> = table.keys.iter().map(|k| k.name).collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(before, names.len(), "{}", table.scope);
            for key in table.keys {
                assert_eq!(key.class == KeyClass::Plain, key.why.is_empty(), "{}: {}", table.scope, key.name);
            }
        }
    }

    #[test]
    fn refusals_name_the_key_the_class_and_what_passes() {
        match CUDA.check("gpu_external_alloc") {
            Err(Error::KeyRefused { scope, key, class, why, allowed }) => {
                assert_eq!(
                    (scope.as_str(), key.as_str(), class),
                    ("CUDA provider option", "gpu_external_alloc", "address")
                );
                assert!(why.contains("provider_unchecked"), "{why}");
                assert!(allowed.0.contains(&"device_id".to_owned()), "{allowed}");
                assert!(!allowed.0.contains(&"gpu_external_alloc".to_owned()), "{allowed}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(QNN.check("backend_path"), Err(Error::KeyRefused { class: "code loading", .. })));
        assert!(matches!(QNN.check("no_such_key"), Err(Error::KeyRefused { class: "not on the list", .. })));
        assert!(QNN.check("htp_performance_mode").is_ok());
        // Exact, as ORT compares: another case is another key.
        assert!(CUDA.check("Device_Id").is_err());
        assert_eq!(provider("Foo"), &OTHER);
        assert!(OTHER.check("anything").is_err() && provider("QNN").check("vtcm_mb").is_ok());
    }

    /// `docs/allowed-keys.md` is exactly what `audit_markdown` renders; with `ONNXRT_BLESS=1` the
    /// test rewrites the file instead.
    #[test]
    fn allowed_keys_md_lists_exactly_these_keys() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/allowed-keys.md");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let expected = audit_markdown();
        if text != expected && std::env::var("ONNXRT_BLESS").is_ok_and(|v| v == "1") {
            std::fs::write(&path, &expected).expect("write docs/allowed-keys.md");
            return;
        }
        assert!(
            text == expected,
            "docs/allowed-keys.md differs from onnxrt/src/allowed_keys/tables.rs; rerun with ONNXRT_BLESS=1 to rewrite it"
        );
    }
}

#[cfg(test)]
mod callbacks_tests {
    use super::CALLBACKS;

    /// Every `extern "C" fn` defined in the crate's sources (not a function-pointer type) is
    /// named in [`CALLBACKS`], by its module path or inside a `{..}` group of one.
    #[test]
    fn callbacks_name_every_extern_c_function() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = vec![src.clone()];
        let mut missing = Vec::new();
        let mut found = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                files.extend(std::fs::read_dir(&path).expect("read src").map(|e| e.expect("entry").path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            let module = path.strip_prefix(&src).expect("under src").with_extension("");
            let module = module.to_string_lossy().trim_end_matches("/mod").replace('/', "::");
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                let Some((_, rest)) = line.split_once("extern \"C\" fn ") else { continue };
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if name.is_empty() {
                    continue; // a function-pointer type
                }
                found += 1;
                let listed = CALLBACKS.iter().any(|c| {
                    c.function == format!("{module}::{name}")
                        || c.function
                            .strip_prefix(&format!("{module}::{{"))
                            .is_some_and(|group| group.trim_end_matches('}').split(", ").any(|n| n == name))
                });
                if !listed {
                    missing.push(format!("{module}::{name}"));
                }
            }
        }
        assert!(found >= 17, "found only {found} extern \"C\" functions");
        assert!(missing.is_empty(), "extern \"C\" functions missing from CALLBACKS: {missing:?}");
    }
}
