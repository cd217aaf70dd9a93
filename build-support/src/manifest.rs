//! `vendor-manifest.toml`: the pinned distributions, parsed into plain data.

use serde::Deserialize;

use crate::error::{Error, Result};

/// The manifest shipped with this crate: a copy of the workspace's `vendor-manifest.toml`, kept
/// inside the crate so a published crate carries it (a test keeps the two identical).
pub const BUILTIN: &str = include_str!("../vendor-manifest.toml");

/// All pinned distributions.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format version of the file.
    pub schema: u32,
    /// The distribution used when `ONNXRT_DIST` is unset.
    pub default: String,
    /// Every distribution.
    #[serde(rename = "dist")]
    pub dists: Vec<Dist>,
}

/// How a distribution's bytes are obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DistKind {
    /// One archive (the official release asset), downloaded or delivered by hand.
    Archive,
    /// Assembled from files in package registries (`onnxrt-dist assemble`).
    Registry,
}

/// One distribution of ONNX Runtime.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// Key used by `ONNXRT_DIST`.
    pub name: String,
    /// One line for people.
    pub description: String,
    /// ONNX Runtime version, e.g. `1.16.2`.
    pub ort_version: String,
    /// C API version this crate requests from it.
    pub api_version: u32,
    /// Rust target triple it runs on.
    pub target: String,
    /// Archive or registry-assembled.
    pub kind: DistKind,
    /// Where the archive is published (archive kind only).
    #[serde(default)]
    pub url: Option<String>,
    /// Pinned sha256 of the archive; empty means "not pinned".
    #[serde(default)]
    pub sha256: String,
    /// Pinned exact size of the archive in bytes, checked before the hash (absent: not pinned).
    #[serde(default)]
    pub size: Option<u64>,
    /// Largest archive accepted, in bytes.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
    /// Bytes the distribution occupies once unpacked (the sum of its files' sizes). Extraction
    /// stops at this plus a margin ([`Dist::unpacked_bound`]); absent, the bound is derived from
    /// `max_bytes`.
    #[serde(default)]
    pub unpacked_bytes: Option<u64>,
    /// The single top-level folder of the archive.
    pub root: String,
    /// The runtime library, relative to `root`.
    pub library: String,
    /// Provider libraries, relative to `root`.
    #[serde(default)]
    pub providers: Vec<String>,
    /// Headers that must be present, relative to `root`.
    #[serde(default)]
    pub headers: Vec<String>,
    /// Every file and symlink an entry of this distribution holds, relative to `root`, pinned;
    /// empty: the entry is trusted from its install (its record was written from the verified
    /// archive). An entry whose record differs from these pins is damaged ([`crate::cache::pins`]).
    #[serde(default)]
    pub files: Vec<FilePin>,
    /// Registry files it is assembled from (registry kind only).
    #[serde(default)]
    pub parts: Vec<Part>,
    /// What the runtime needs on the machine (GPU builds).
    #[serde(default)]
    pub requires: Option<Requires>,
    /// Only the provisioning tests use it: never pinned, so a test can pin its own synthetic
    /// archive whatever the manifest pins elsewhere; not offered to users (listings skip it).
    #[serde(default)]
    pub test_only: bool,
    /// A plugin execution-provider bundle, not a runtime: `library` is the plugin and
    /// `ort_version` the oldest runtime it loads into. `onnxrt-dist assemble` makes it;
    /// `ONNXRT_DIST` refuses it.
    #[serde(default)]
    pub plugin: bool,
}

fn default_max_bytes() -> u64 {
    512 * 1024 * 1024
}

/// One file (with `size` and `sha256`) or symlink (with `link`) of an entry, relative to the
/// distribution's root.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilePin {
    /// Path below the root, `/`-separated.
    pub path: String,
    /// Exact size in bytes (files).
    #[serde(default)]
    pub size: Option<u64>,
    /// sha256 in lowercase hex (files).
    #[serde(default)]
    pub sha256: Option<String>,
    /// The symlink's target (links).
    #[serde(default)]
    pub link: Option<String>,
}

/// One registry file that contributes to an assembled distribution.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// `npm`, `pypi` or `debian`.
    pub registry: String,
    /// Package name in that registry.
    pub package: String,
    /// Exact version.
    pub version: String,
    /// Debian suite the package comes from (debian only).
    #[serde(default)]
    pub suite: Option<String>,
    /// File name the registry client saves.
    pub file: String,
    /// Pinned sha256 of that file.
    pub sha256: String,
    /// File or folder inside the package to take.
    pub member: String,
    /// Pinned sha256 of `member` when it is a single file.
    #[serde(default)]
    pub member_sha256: Option<String>,
    /// Where it goes, relative to the distribution root.
    pub dest: String,
}

/// Machine requirements of a GPU distribution; read by the diagnostics.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requires {
    /// CUDA version the build targets.
    pub cuda: String,
    /// cuDNN version recommended.
    pub cudnn: String,
    /// Oldest cuDNN known to work.
    pub cudnn_min: String,
    /// TensorRT version of the TensorRT provider.
    pub tensorrt: String,
    /// Whether TensorRT is needed only for the TensorRT provider.
    pub tensorrt_optional: bool,
    /// Oldest NVIDIA driver for that CUDA.
    pub driver_min: String,
    /// Newest GPU architecture that CUDA knows.
    pub max_compute_capability: String,
    /// Libraries the CUDA provider needs at load time.
    pub needed: Vec<String>,
    /// Libraries the TensorRT provider needs at load time.
    pub needed_tensorrt: Vec<String>,
}

impl Manifest {
    /// The manifest compiled into this crate.
    pub fn builtin() -> Result<Manifest> {
        Manifest::parse(BUILTIN)
    }

    /// Parses and checks a manifest.
    pub fn parse(text: &str) -> Result<Manifest> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| Error::Manifest(e.to_string()))?;
        manifest.check()?;
        Ok(manifest)
    }

    /// Finds a distribution by name.
    pub fn dist(&self, name: &str) -> Result<&Dist> {
        self.dists.iter().find(|d| d.name == name).ok_or_else(|| Error::UnknownDist {
            name: name.to_owned(),
            known: self.dists.iter().filter(|d| !d.test_only).map(|d| d.name.clone()).collect(),
        })
    }

    fn check(&self) -> Result<()> {
        if self.schema != 1 {
            return Err(Error::Manifest(format!("schema {} is not supported (expected 1)", self.schema)));
        }
        self.dist(&self.default)?;
        for dist in &self.dists {
            let bad = |why: &str| Err(Error::Manifest(format!("dist `{}`: {why}", dist.name)));
            if !dist.sha256.is_empty() && !is_sha256(&dist.sha256) {
                return bad("sha256 must be 64 lowercase hex digits or empty");
            }
            if dist.size.is_some_and(|size| size == 0 || size > dist.max_bytes) {
                return bad("size must be above 0 and within max_bytes");
            }
            match dist.kind {
                DistKind::Archive if dist.url.is_none() => return bad("an archive needs a url"),
                DistKind::Registry if dist.parts.is_empty() => return bad("a registry dist needs parts"),
                _ => {}
            }
            if dist.parts.iter().any(|p| !is_sha256(&p.sha256)) {
                return bad("every part needs a sha256");
            }
            if dist.test_only && (!dist.sha256.is_empty() || !dist.files.is_empty() || dist.name == self.default) {
                return bad("a test-only distribution is never pinned and never the default");
            }
            if dist.plugin && (dist.kind != DistKind::Registry || dist.name == self.default) {
                return bad("a plugin bundle is assembled from registries and is never the default");
            }
            if let Err(why) = dist.check_file_pins() {
                return bad(&why);
            }
        }
        Ok(())
    }
}

impl Dist {
    /// File pins are files or links, each path once, below the root, and agree with the parts'
    /// `member_sha256`.
    fn check_file_pins(&self) -> std::result::Result<(), String> {
        let mut seen = std::collections::HashSet::new();
        for pin in &self.files {
            let p = &pin.path;
            if p.is_empty() || p.starts_with('/') || p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
                return Err(format!("file pin `{p}` must be a relative path below the root"));
            }
            if !seen.insert(p.as_str()) {
                return Err(format!("file `{p}` is pinned twice"));
            }
            match (&pin.size, &pin.sha256, &pin.link) {
                (Some(_), Some(sha), None) if is_sha256(sha) => {}
                (None, None, Some(target)) if !target.is_empty() => {}
                _ => return Err(format!("file pin `{p}` needs `size` and a sha256, or `link` alone")),
            }
        }
        for part in self.parts.iter().filter(|_| !self.files.is_empty()) {
            let Some(member) = &part.member_sha256 else { continue };
            if !self.files.iter().any(|f| f.path == part.dest && f.sha256.as_ref() == Some(member)) {
                return Err(format!("`member_sha256` of {} is not the file pin of `{}`", part.package, part.dest));
            }
        }
        Ok(())
    }

    /// The pinned archive hash, if any.
    pub fn pinned_sha256(&self) -> Option<&str> {
        (!self.sha256.is_empty()).then_some(self.sha256.as_str())
    }

    /// Most bytes an archive of this distribution may expand to: `unpacked_bytes` plus a quarter
    /// and 16 MiB, or, without it, four times the download cap (shared libraries compress about
    /// 2-3 to 1).
    pub fn unpacked_bound(&self) -> u64 {
        match self.unpacked_bytes {
            Some(bytes) => bytes.saturating_add(bytes / 4).saturating_add(16 << 20),
            None => self.max_bytes.saturating_mul(4),
        }
    }

    /// File name of the archive (last segment of the URL).
    pub fn file_name(&self) -> String {
        match &self.url {
            Some(url) => url.rsplit('/').next().unwrap_or(url).to_owned(),
            None => format!("{}.tgz", self.root),
        }
    }
}

/// Whether `s` is a sha256 in lowercase hex.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_bundle_is_assembled_never_provisioned_as_the_runtime() {
        let m = Manifest::builtin().expect("builtin manifest");
        let plugin = m.dist("webgpu-plugin-0.4.0-registry").expect("the WebGPU plugin bundle");
        assert!(plugin.plugin && plugin.kind == DistKind::Registry && plugin.files.len() == 2);
        let cache = tempfile::tempdir().expect("temp dir");
        let config = crate::Config::new(m.clone(), &plugin.name, cache.path().to_owned()).expect("config");
        let error = crate::provision(&config).expect_err("not a runtime");
        assert!(error.to_string().contains("plugin provider bundle, not a runtime"), "{error}");
        assert!(std::fs::read_dir(cache.path()).expect("cache").next().is_none(), "nothing fetched");
        let as_default = BUILTIN.replacen("default = \"gpu-1.16.2\"", "default = \"webgpu-plugin-0.4.0-registry\"", 1);
        assert_ne!(as_default, BUILTIN);
        let error = Manifest::parse(&as_default).expect_err("a plugin is never the default");
        assert!(error.to_string().contains("never the default"), "{error}");
    }

    #[test]
    fn builtin_manifest_parses_and_defaults_to_the_users_pin() {
        let m = Manifest::builtin().expect("builtin manifest");
        let d = m.dist(&m.default).expect("default dist");
        assert_eq!(d.name, "gpu-1.16.2");
        assert_eq!(d.file_name(), "onnxruntime-linux-x64-gpu-1.16.2.tgz");
        assert_eq!(d.requires.as_ref().map(|r| r.cuda.as_str()), Some("11.8"));
        assert_eq!(d.pinned_sha256(), Some("84618c385d5cbac48fc714b8fb86e43828b52038144c1e0fdcb4c03293ae2d5a"));
        assert_eq!(d.size, Some(136_715_070));
        let cpu = m.dist("cpu-1.16.2").expect("official cpu dist");
        assert_eq!(cpu.pinned_sha256(), Some("70c769771ad4b6d63b87ca1f62d3f11e998ea0b9d738d6bbdd6a5e6d8c1deb31"));
        assert_eq!(cpu.size, Some(6_656_336));
        let reg = m.dist("cpu-1.16.2-registry").expect("registry dist");
        assert_eq!(reg.kind, DistKind::Registry);
        assert_eq!(reg.parts.len(), 2);
    }

    #[test]
    fn the_crate_copy_is_the_workspace_manifest() {
        // In a published crate the workspace file is absent; in the workspace they must agree.
        let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/../vendor-manifest.toml");
        if let Ok(text) = std::fs::read_to_string(workspace) {
            assert_eq!(text, BUILTIN, "copy vendor-manifest.toml into build-support/ after editing it");
        }
    }

    #[test]
    fn unknown_dist_lists_the_known_ones() {
        let m = Manifest::builtin().expect("builtin manifest");
        let err = m.dist("gpu-9.9").expect_err("no such dist");
        assert!(err.to_string().contains("cpu-1.16.2-registry"), "{err}");
    }

    #[test]
    fn the_registry_dists_pin_every_file_and_agree_with_their_member_pins() {
        let m = Manifest::builtin().expect("builtin manifest");
        for name in ["cpu-1.16.2-registry", "cpu-1.32.0-registry", "gpu-cuda13-1.30.0-wheel"] {
            let dist = m.dist(name).expect("registry dist");
            assert!(dist.files.iter().any(|f| f.path == dist.library && f.sha256.is_some()), "{name}");
            assert!(dist.files.iter().any(|f| f.path == "include/onnxruntime_c_api.h"), "{name}");
        }
        for name in ["cpu-1.16.2-registry", "cpu-1.32.0-registry"] {
            let cpu = m.dist(name).expect("dist");
            let library = cpu.files.iter().find(|f| f.path == cpu.library).expect("library pin");
            assert_eq!(library.sha256, cpu.parts[0].member_sha256, "{name}");
        }
    }

    #[test]
    fn dev_sh_tests_the_newest_cpu_registry_dist() {
        // In a published crate tools/dev.sh is absent; in the workspace its second pass must run
        // the newest CPU runtime the manifest can assemble.
        let Ok(script) = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/dev.sh")) else {
            return;
        };
        let m = Manifest::builtin().expect("builtin manifest");
        let version = |d: &Dist| -> Vec<u32> { d.ort_version.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
        let newest = m
            .dists
            .iter()
            .filter(|d| d.kind == DistKind::Registry && d.providers.is_empty() && !d.plugin)
            .max_by_key(|d| version(d))
            .expect("a CPU registry dist");
        assert!(script.contains(&format!("NEWEST_DIST={}\n", newest.name)), "tools/dev.sh should test {}", newest.name);
    }

    #[test]
    fn a_file_pin_contradicting_the_member_pin_is_refused() {
        let bad = BUILTIN.replacen("size = 17_434_352, sha256 = \"09aa6d", "size = 17_434_352, sha256 = \"19aa6d", 1);
        assert_ne!(bad, BUILTIN, "the manifest pins the npm library with this size and hash");
        let err = Manifest::parse(&bad).expect_err("refused");
        assert!(err.to_string().contains("member_sha256"), "{err}");
    }

    #[test]
    fn file_pins_need_a_hash_or_a_link_and_stay_below_the_root() {
        for pin in [
            r#"{ path = "lib/x.so", size = 3 }"#,
            r#"{ path = "../x.so", link = "y" }"#,
            r#"{ path = "lib/x.so", size = 3, sha256 = "abc" }"#,
        ] {
            let text = BUILTIN.replacen("providers = []\n", &format!("providers = []\nfiles = [{pin}]\n"), 1);
            assert_ne!(text, BUILTIN);
            assert!(Manifest::parse(&text).is_err(), "{pin}");
        }
    }

    #[test]
    fn a_malformed_pin_is_refused() {
        let bad = BUILTIN.replacen("sha256 = \"\"", "sha256 = \"abc\"", 1);
        assert!(Manifest::parse(&bad).is_err());
    }
}
