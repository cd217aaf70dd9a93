//! The provider libraries beside the runtime (`libonnxruntime_providers_{shared,cuda,tensorrt}.so`):
//! is each readable, a loadable x86-64 library, and would the loader find everything it needs?
//! ORT itself only says "Failed to load shared library"; this names the missing file.

use std::path::Path;

use build_support::manifest::Dist;
use onnxrt::providers::diagnose::{fix_for, provider_library_name};

use super::elf::{self, ElfError, MACHINE_X86_64};
use super::search::{Found, Searcher};
use super::{Row, Status};

/// The provider libraries ORT may load, with the provider each serves.
const LIBRARIES: [(&str, &str); 3] = [("shared", "GPU"), ("cuda", "CUDA"), ("tensorrt", "TensorRT")];

/// Libraries that tell about the GPU stack (shown one row each, found or not).
fn is_gpu_stack(name: &str) -> bool {
    ["libcu", "libnv", "libonnxruntime"].iter().any(|p| name.starts_with(p))
}

/// `libcublasLt.so` for `libcublasLt.so.13`.
fn stem(name: &str) -> &str {
    name.find(".so").map_or(name, |i| &name[..i + 3])
}

/// What the checks of the provider libraries need to know.
pub struct Inputs<'a> {
    /// The folder holding the provider libraries (the runtime's, or `--provider-dir`).
    pub dir: &'a Path,
    /// Whether `dir` is the loaded runtime's own folder.
    pub own_dir: bool,
    /// Providers compiled into the loaded runtime.
    pub compiled: &'a [String],
    /// The manifest entry compared with.
    pub dist: Option<&'a Dist>,
    /// The loader's search places.
    pub searcher: &'a Searcher,
}

/// The provider library rows.
pub fn rows(inputs: &Inputs<'_>) -> Vec<Row> {
    let dir = inputs.dir;
    if !dir.is_dir() {
        return vec![Row::new("provider libraries", Status::Fail, format!("{} is not a folder", dir.display()))
            .fix("pass --provider-dir the folder that holds libonnxruntime_providers_*.so")];
    }
    let present: Vec<(&str, &str)> =
        LIBRARIES.iter().copied().filter(|(short, _)| dir.join(provider_library_name(short)).exists()).collect();
    let compiled_gpu: Vec<&String> = inputs.compiled.iter().filter(|p| p.as_str() != "CPUExecutionProvider").collect();
    let mut rows = Vec::new();
    if present.is_empty() {
        if inputs.own_dir && !compiled_gpu.is_empty() {
            rows.push(
                Row::new(
                    "provider libraries",
                    Status::Fail,
                    format!("the runtime has {compiled_gpu:?} compiled in, but none of its provider libraries is in {}", dir.display()),
                )
                .fix(format!(
                    "copy libonnxruntime_providers_shared.so and libonnxruntime_providers_cuda.so from the GPU distribution's lib/ folder into {} (`onnxrt bundle` does this)",
                    dir.display()
                )),
            );
        } else {
            rows.push(Row::new(
                "provider libraries",
                Status::Ok,
                format!("none in {}: a CPU-only build has no provider libraries, nothing to check", dir.display()),
            ));
        }
        return rows;
    }
    let names: Vec<String> = present.iter().map(|(short, _)| provider_library_name(short)).collect();
    rows.push(Row::new("provider libraries", Status::Ok, format!("{} in {}", names.join(", "), dir.display())));
    // A GPU provider without the bridge does not load at all.
    if !present.iter().any(|(s, _)| *s == "shared") {
        rows.push(
            Row::new(
                provider_library_name("shared"),
                Status::Fail,
                format!("missing from {}: ORT loads every GPU provider through it", dir.display()),
            )
            .fix(format!(
                "copy libonnxruntime_providers_shared.so from the same ONNX Runtime distribution into {}",
                dir.display()
            )),
        );
    }
    for (short, provider) in present {
        rows.extend(library_rows(inputs, short, provider));
    }
    rows
}

fn library_rows(inputs: &Inputs<'_>, short: &str, provider: &str) -> Vec<Row> {
    let name = provider_library_name(short);
    let path = inputs.dir.join(&name);
    let requires = inputs.dist.and_then(|d| d.requires.as_ref());
    let optional = short == "tensorrt" && requires.is_none_or(|r| r.tensorrt_optional);
    let missing_status = if optional { Status::Warn } else { Status::Fail };
    let dynamic = match elf::read_dynamic(&path) {
        Ok(d) => d,
        Err(ElfError::Io(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return vec![Row::new(name, Status::Fail, format!("cannot read {}: permission denied", path.display())).fix(
                format!(
                    "chmod a+r {} (and a+x on its folders): the process that loads ONNX Runtime must be able to read its provider libraries",
                    path.display()
                ),
            )];
        }
        Err(e) => {
            return vec![Row::new(name, Status::Fail, format!("cannot use {}: {e}", path.display())).fix(
                "replace it with the file from the same ONNX Runtime distribution (`onnxrt fetch` prints its folder)",
            )];
        }
    };
    if dynamic.machine != MACHINE_X86_64 {
        return vec![Row::new(
            name,
            Status::Fail,
            format!("{} is built for ELF machine {}, not x86-64", path.display(), dynamic.machine),
        )
        .fix("use the linux-x64 distribution of ONNX Runtime")];
    }
    let origin = inputs.dir;
    let searcher = inputs.searcher;
    let resolved: Vec<(String, Option<Found>)> =
        dynamic.needed.iter().map(|n| (n.clone(), searcher.resolve(n, &dynamic, origin))).collect();
    let missing: Vec<&str> = resolved.iter().filter(|(_, f)| f.is_none()).map(|(n, _)| n.as_str()).collect();
    let mut summary =
        format!("readable ELF64 x86-64; NEEDED ({}): {}", dynamic.needed.len(), dynamic.needed.join(", "));
    if !dynamic.runpath.is_empty() {
        summary.push_str(&format!("; RUNPATH {}", dynamic.runpath.join(":")));
    }
    let mut rows = vec![if missing.is_empty() {
        Row::new(&name, Status::Ok, format!("{summary}; all found"))
    } else {
        let mut row =
            Row::new(&name, missing_status, format!("{summary}; missing: {}", missing.join(", "))).fix(format!(
                "the {provider} provider cannot load until {} can be found (see the rows below)",
                missing.join(", ")
            ));
        if optional {
            row.detail.push_str(" (only the TensorRT provider needs them)");
        }
        row
    }];
    for (needed, found) in &resolved {
        if found.is_some() && !is_gpu_stack(needed) {
            continue;
        }
        rows.push(needed_row(inputs, short, provider, &dynamic, needed, found.as_ref(), missing_status));
    }
    // What the manifest says this provider needs, against what the library asks for.
    let expected: &[String] = match (short, requires) {
        ("cuda", Some(r)) => &r.needed,
        ("tensorrt", Some(r)) => &r.needed_tensorrt,
        _ => &[],
    };
    let dist_name = inputs.dist.map(|d| d.name.as_str()).unwrap_or_default();
    for want in expected {
        if dynamic.needed.contains(want) {
            continue;
        }
        if let Some(other) = dynamic.needed.iter().find(|n| stem(n) == stem(want)) {
            rows.push(
                Row::new(
                    format!("{short}: {want}"),
                    Status::Warn,
                    format!("`{dist_name}` needs {want}, but {name} asks for {other}: this is not the build `{dist_name}` describes"),
                )
                .fix("pass --dist with the vendor-manifest.toml entry of this runtime"),
            );
        } else {
            // Not a NEEDED entry: loaded at run time with dlopen (cuDNN, libcuda); check it the same way.
            let found = searcher.resolve(want, &dynamic, origin);
            let mut row = needed_row(inputs, short, provider, &dynamic, want, found.as_ref(), missing_status);
            row.detail.push_str(" (loaded at run time, not a NEEDED entry)");
            rows.push(row);
        }
    }
    rows
}

fn needed_row(
    inputs: &Inputs<'_>,
    short: &str,
    provider: &str,
    dynamic: &elf::Dynamic,
    needed: &str,
    found: Option<&Found>,
    missing_status: Status,
) -> Row {
    let check = format!("{short}: {needed}");
    if let Some(found) = found {
        let real = if found.real != found.path { format!(" (→ {})", found.real.display()) } else { String::new() };
        return Row::new(check, Status::Ok, format!("found {}{real} via {}", found.path.display(), found.via));
    }
    let others = inputs.searcher.other_versions(needed, dynamic, inputs.dir);
    let mut detail = format!("not found; searched {}", inputs.searcher.searched(dynamic, inputs.dir));
    let mut fix = fix_for(needed, provider);
    if !others.is_empty() {
        let list: Vec<String> = others.iter().map(|p| p.display().to_string()).collect();
        detail.push_str(&format!("; other versions present: {}", list.join(", ")));
        let cuda =
            inputs.dist.and_then(|d| d.requires.as_ref()).map(|r| format!(" (CUDA {})", r.cuda)).unwrap_or_default();
        fix.push_str(&format!(
            ". The version found is not the one this build was linked against{cuda}: a different major version does not load"
        ));
    }
    Row::new(check, missing_status, detail).fix(fix)
}
