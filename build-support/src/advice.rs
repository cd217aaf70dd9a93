//! What to tell someone whose build could not get its distribution: the variable that chooses
//! one (`ONNXRT_DIST`), what the cache already holds, and the `.cargo/config.toml` lines that make
//! a choice stick for every cargo command in their project. Written for a user who has only the
//! published crates: it never names a command that works only inside this repository.

use crate::assemble::registry_key;
use crate::cache::Cache;
use crate::error::Error;
use crate::manifest::{Dist, DistKind};
use crate::Config;

/// The distribution that works wherever package registries are reachable.
const REGISTRY_FALLBACK: &str = "cpu-1.16.2-registry";

/// Whether `error` is about getting the distribution's bytes, so that choosing another one helps.
pub fn applies(error: &Error) -> bool {
    matches!(
        error,
        Error::Unpinned { .. }
            | Error::HashMismatch { .. }
            | Error::SizeMismatch { .. }
            | Error::Download { .. }
            | Error::HttpStatus { .. }
            | Error::Truncated { .. }
            | Error::TooLarge { .. }
            | Error::Offline { .. }
            | Error::NotAssembled { .. }
            | Error::Tool { .. }
            | Error::MissingFile { .. }
            | Error::Corrupt { .. }
            | Error::UnsafeEntry { .. }
    )
}

/// Names of the manifest's distributions that have a complete entry in the cache.
pub fn cached(config: &Config) -> Vec<String> {
    let cache = Cache::new(&config.cache_dir);
    config
        .manifest
        .dists
        .iter()
        .filter(|d| !d.test_only)
        .filter(|d| cache_key(config, d).is_some_and(|k| matches!(cache.lookup(&k), Ok(Some(_)))))
        .map(|d| d.name.clone())
        .collect()
}

fn cache_key(config: &Config, dist: &Dist) -> Option<String> {
    match dist.kind {
        DistKind::Registry => Some(registry_key(dist)),
        DistKind::Archive => dist
            .pinned_sha256()
            .map(str::to_owned)
            .or_else(|| (dist.name == config.dist).then(|| config.archive_sha256.clone()).flatten()),
    }
}

/// The paragraph printed after a provisioning failure.
pub fn choosing(config: &Config) -> String {
    let known: Vec<&str> = config.manifest.dists.iter().filter(|d| !d.test_only).map(|d| d.name.as_str()).collect();
    let cached = cached(config);
    let held = if cached.is_empty() { "none of them".to_owned() } else { cached.join(", ") };
    let suggestion = cached
        .iter()
        .map(String::as_str)
        .find(|name| *name != config.dist)
        .or((config.dist != REGISTRY_FALLBACK).then_some(REGISTRY_FALLBACK))
        .unwrap_or("cpu-1.16.2");
    format!(
        "The distribution was `{current}`{default}. Choose another one with ONNXRT_DIST (known: {known}).\n\
         The cache {cache} already holds: {held}.\n\
         Where the release assets are unreachable but package registries are not, \
         ONNXRT_DIST={REGISTRY_FALLBACK} makes the build assemble ONNX Runtime 1.16.2 (CPU) itself \
         from npm and Debian packages (it needs npm and apt-get).\n\
         To make the choice stick for every cargo command of your project, put in its .cargo/config.toml:\n    \
         [env]\n    \
         ONNXRT_DIST = \"{suggestion}\"",
        current = config.dist,
        default =
            if config.dist == config.manifest.default { " (the default, used while ONNXRT_DIST is unset)" } else { "" },
        known = known.join(", "),
        cache = config.cache_dir.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Manifest;

    #[test]
    fn advice_names_the_variable_the_cache_and_the_config_lines() {
        let tmp = std::env::temp_dir().join(format!("onnxrt-advice-{}", std::process::id()));
        let manifest = Manifest::builtin().expect("manifest");
        let mut config = Config::new(manifest, "gpu-1.16.2", tmp.clone()).expect("config");
        let text = choosing(&config);
        assert!(text.contains("`gpu-1.16.2` (the default, used while ONNXRT_DIST is unset)"), "{text}");
        assert!(text.contains(&format!("The cache {} already holds: none of them.", tmp.display())), "{text}");
        assert!(text.contains("[env]\n    ONNXRT_DIST = \"cpu-1.16.2-registry\""), "{text}");
        assert!(!text.contains("cargo run -p"), "{text}");

        // A complete entry for the registry distribution is listed and becomes the suggestion.
        let dist = config.manifest.dist("cpu-1.16.2-registry").expect("dist").clone();
        let marker = tmp.join(registry_key(&dist)).join(crate::cache::COMPLETE_MARKER);
        std::fs::create_dir_all(marker.parent().expect("parent")).expect("entry folder");
        std::fs::write(&marker, b"").expect("marker");
        config.dist = "cpu-1.16.2".into();
        let text = choosing(&config);
        let _ = std::fs::remove_dir_all(&tmp);
        assert!(text.contains("already holds: cpu-1.16.2-registry."), "{text}");
        assert!(text.contains("ONNXRT_DIST = \"cpu-1.16.2-registry\""), "{text}");
    }

    #[test]
    fn only_errors_about_getting_the_bytes_get_the_advice() {
        assert!(applies(&Error::HttpStatus { url: "u".into(), status: 404 }));
        assert!(!applies(&Error::NoLibrary { dir: "/opt/ort/lib".into() }));
    }
}
