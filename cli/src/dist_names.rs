//! Distribution names (the `vendor-manifest.toml` entries) on the command line: offered by the
//! shell completion scripts and listed by `--help`, and, when a name is not one of them, an error
//! worded for the command (the known names), not for a cargo build.

use clap::builder::{PossibleValue, TypedValueParser};

/// The names of the built-in manifest's distributions (empty if it cannot be read, which its
/// own tests rule out), read once.
pub fn known() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        build_support::Manifest::builtin().map(|m| m.dists.into_iter().map(|d| d.name).collect()).unwrap_or_default()
    })
}

/// The message for a name the manifest does not have.
pub fn unknown(name: &str, known: &[String]) -> String {
    format!(
        "no distribution named `{name}`; the known distributions are: {}\nSee `onnxrt fetch --help`.",
        known.join(", ")
    )
}

/// Takes any text (the command checks it and says what the known names are) but tells clap the
/// manifest's names, so that completion scripts and `--help` offer them.
#[derive(Debug, Clone, Copy, Default)]
pub struct DistName;

impl TypedValueParser for DistName {
    type Value = String;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        value.to_str().map(str::to_owned).ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8))
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(known().iter().map(|name| PossibleValue::new(name.as_str()))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_names_are_offered_and_an_unknown_one_lists_them() {
        let names = known();
        assert!(names.iter().any(|n| n == "cpu-1.16.2-registry"), "{names:?}");
        let text = unknown("nonsense", names);
        assert!(text.contains("`nonsense`") && text.contains("cpu-1.16.2-registry"), "{text}");
        assert!(!text.contains("config.toml") && !text.contains("ONNXRT_DIST"), "{text}");
    }
}
