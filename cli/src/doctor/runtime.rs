//! The runtime the crate loads (where, which version, how it was found, what it has compiled in)
//! and the manifest entry the machine is compared with.

use std::path::PathBuf;

use crate::dists::{Dist, Manifest};
use onnxrt::RuntimeInfo;

use super::{split_fix, Row, Status};
use crate::version;

/// What the loaded runtime is.
pub struct Facts {
    /// The runtime, or why it could not be loaded (a message whose last part may be `\nFix: ...`).
    pub info: Result<RuntimeInfo, String>,
    /// Providers compiled into it (empty when it did not load).
    pub providers: Vec<String>,
}

impl Facts {
    /// Loads the runtime (as any program using the crate would) and reads its providers; first
    /// checks the file the crate would load as a complete library, and does not load a damaged one.
    pub fn load() -> Facts {
        if let Some(why) = damaged_runtime() {
            return Facts { info: Err(why), providers: Vec::new() };
        }
        let info = onnxrt::runtime_info().map_err(|e| e.to_string());
        let providers = if info.is_ok() { onnxrt::providers::available().unwrap_or_default() } else { Vec::new() };
        Facts { info, providers }
    }

    /// Whether the CUDA provider is compiled in.
    pub fn has_cuda(&self) -> bool {
        self.providers.iter().any(|p| p == "CUDAExecutionProvider")
    }
}

/// The file the crate's loader would open first: the first place of its search order that
/// exists (a folder stands for the `libonnxruntime.so*` inside it).
fn first_candidate() -> Option<(String, PathBuf)> {
    for (origin, path) in onnxrt::search_paths() {
        let file = if path.is_dir() {
            let names = ["libonnxruntime.so", "libonnxruntime.so.1"];
            let usual = names.iter().map(|n| path.join(n)).find(|p| p.exists());
            usual.or_else(|| {
                std::fs::read_dir(&path).ok()?.flatten().map(|e| e.path()).find(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so."))
                })
            })
        } else {
            Some(path)
        };
        if let Some(file) = file.filter(|f| f.exists()) {
            return Some((origin, file));
        }
    }
    None
}

/// Why the runtime file the crate would load is not a complete library, if it is not.
fn damaged_runtime() -> Option<String> {
    let (origin, file) = first_candidate()?;
    let why = super::elf::check_complete(&file).err()?;
    Some(format!(
        "{} (found via {origin}) is not a loadable library: {why}; not loaded, since loading it would crash\nFix: replace {} with a complete copy of libonnxruntime.so (`onnxrt fetch` prints the verified one), or point ONNXRT_DYLIB_PATH at one",
        file.display(),
        file.display()
    ))
}

/// Where the build got the runtime it compiled against (recorded by onnxrt-sys's build script):
/// cargo hides a dependency's build warnings, so this is where a user of the published crates
/// sees that `ONNXRT_LIB_DIR` (perhaps set by an `[env]` table of a parent `.cargo/config.toml`)
/// replaced the verified runtime.
fn provenance(version: &str, source: &str) -> Row {
    let detail = format!("ONNX Runtime {version} from {source}");
    if source.starts_with("ONNXRT_LIB_DIR") {
        Row::new("built from", Status::Warn, detail).fix(
            "the build used ONNXRT_LIB_DIR instead of a verified runtime; unset it (check `[env]` in every \
             .cargo/config.toml above the project) and rebuild to use the pinned, verified one"
                .to_owned(),
        )
    } else {
        Row::new("built from", Status::Ok, detail)
    }
}

/// The runtime, search-path and compiled-in provider rows.
pub fn rows(facts: &Facts) -> Vec<Row> {
    let mut rows = Vec::new();
    match &facts.info {
        Ok(info) => {
            let via = match version::found_via(&info.library) {
                Some((origin, _)) => format!(", found via: {origin}"),
                None => String::new(),
            };
            let mut detail =
                format!("ONNX Runtime {} (C API {}) at {}{via}", info.version, info.api_level, info.library.display());
            if info.version != info.build_version {
                detail.push_str(&format!(" (the crate was built against {})", info.build_version));
            }
            rows.push(Row::new("runtime", Status::Ok, detail));
            rows.push(provenance(info.build_version, info.build_source));
        }
        Err(error) => {
            let (detail, fix) = split_fix(&error.to_string());
            rows.push(
                Row::new("runtime", Status::Fail, detail)
                    .fix(fix.unwrap_or_else(|| "set ONNXRT_DYLIB_PATH to a libonnxruntime.so of 1.16 or newer".into())),
            );
        }
    }
    let searched: Vec<String> = onnxrt::search_paths()
        .iter()
        .enumerate()
        .map(|(i, (origin, path))| {
            let loaded = facts.info.as_ref().ok().and_then(|i| version::found_via(&i.library));
            let state = match loaded {
                Some((_, place)) if place == *path => " (loaded)",
                _ if !path.exists() => " (absent)",
                _ => "",
            };
            format!("{}. {origin}: {}{state}", i + 1, path.display())
        })
        .collect();
    rows.push(Row::new("search paths", Status::Ok, searched.join("; ")));
    if facts.info.is_ok() {
        rows.push(Row::new(
            "providers compiled in",
            Status::Ok,
            format!("{:?} (what the build has, not what can load: see the rows below)", facts.providers),
        ));
    }
    rows
}

/// The manifest entry to compare with: `--dist`, else `ONNXRT_DIST`, else the entry of the loaded
/// runtime's version and kind (GPU when it has CUDA compiled in). Returns it with its row.
///
/// # Errors
/// [`build_support::Error::UnknownDist`] for a `--dist` the manifest does not have.
pub fn select_dist(
    manifest: &Manifest,
    explicit: Option<&str>,
    facts: &Facts,
    own_provider_dir: bool,
) -> crate::error::Result<(Option<Dist>, Row)> {
    let from_env = std::env::var("ONNXRT_DIST").ok().filter(|d| manifest.dist(d).is_ok());
    let (dist, why) = if let Some(name) = explicit {
        (Some(*manifest.dist(name)?), "--dist".to_owned())
    } else if let Some(name) = from_env {
        (manifest.dist(&name).ok().cloned(), "ONNXRT_DIST".to_owned())
    } else {
        let version = facts.info.as_ref().map(|i| i.version.clone()).unwrap_or_default();
        let matching =
            manifest.dists.iter().find(|d| d.ort_version == version && d.requires.is_some() == facts.has_cuda());
        (matching.cloned(), format!("matches the loaded runtime {version}"))
    };
    let Some(dist) = dist else {
        let row = Row::new(
            "manifest",
            Status::Skip,
            "no vendor-manifest.toml entry matches the loaded runtime; nothing to compare the machine with",
        )
        .fix("pass --dist NAME to compare with a distribution of vendor-manifest.toml");
        return Ok((None, row));
    };
    let needs = match &dist.requires {
        Some(r) => format!(
            "CUDA {}, cuDNN {}, driver {} or newer, compute capability up to {}",
            r.cuda, r.cudnn, r.driver_min, r.max_compute_capability
        ),
        None => "a CPU build: no GPU requirements".into(),
    };
    let mut row = Row::new(
        "manifest",
        Status::Ok,
        format!("comparing with `{}` ({why}): ONNX Runtime {}, {needs}", dist.name, dist.ort_version),
    );
    if let (Ok(info), true) = (&facts.info, own_provider_dir) {
        let gpu_dist = dist.requires.is_some();
        let kind = |gpu: bool| if gpu { "a GPU (CUDA) build" } else { "a CPU-only build" };
        if explicit.is_some() && (info.version != dist.ort_version || gpu_dist != facts.has_cuda()) {
            // Asked to check this machine for `--dist X`: a runtime that is not X is a failure.
            row = Row::new(
                "manifest",
                Status::Fail,
                format!(
                    "--dist `{}` is ONNX Runtime {}, {}, but the loaded runtime is ONNX Runtime {}, {} ({}; providers {:?})",
                    dist.name,
                    dist.ort_version,
                    kind(gpu_dist),
                    info.version,
                    kind(facts.has_cuda()),
                    info.library.display(),
                    facts.providers
                ),
            )
            .fix(format!(
                "point ONNXRT_DYLIB_PATH at the `{}` runtime (`onnxrt fetch {}` prints its folder) and run the doctor again, or pass the --dist of the runtime you deploy",
                dist.name, dist.name
            ));
        } else if info.version != dist.ort_version {
            row = Row::new(
                "manifest",
                Status::Warn,
                format!(
                    "`{}` is ONNX Runtime {} but the loaded runtime is {}; the comparisons below may not apply",
                    dist.name, dist.ort_version, info.version
                ),
            )
            .fix("pass --dist with the entry of the runtime you deploy (or set ONNXRT_DYLIB_PATH to that runtime)");
        }
    }
    Ok((Some(dist), row))
}
