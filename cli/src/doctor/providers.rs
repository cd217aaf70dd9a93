//! The provider libraries beside the runtime (`libonnxruntime_providers_{shared,cuda,tensorrt}.so`):
//! is each readable, a loadable x86-64 library, and would the loader find everything it needs?
//! ORT itself only says "Failed to load shared library"; this names the missing file.

use std::path::{Path, PathBuf};

use crate::dists::Dist;
use onnxrt::providers::diagnose::{fix_for, provider_library_name};

use super::elf::{self, ElfError, MACHINE_X86_64};
use super::search::{Found, Searcher};
use super::{cudnn, release, Row, Status};

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
    /// The loaded runtime's version and file, if it loaded.
    pub runtime: Option<(&'a str, &'a Path)>,
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
    // ORT loads the CUDA provider from beside itself; without it a CUDA session fails with
    // "Failed to load library", which reads like a problem with the options.
    let has_cuda = inputs.compiled.iter().any(|p| p == "CUDAExecutionProvider");
    if inputs.own_dir && has_cuda && !present.iter().any(|(s, _)| *s == "cuda") {
        let cuda = provider_library_name("cuda");
        rows.push(
            Row::new(
                &cuda,
                Status::Fail,
                format!(
                    "missing from {}: the runtime has CUDAExecutionProvider compiled in and loads it from {cuda} beside itself, so every CUDA session fails to load the provider",
                    dir.display()
                ),
            )
            .fix(format!(
                "copy {cuda} from the same ONNX Runtime distribution's lib/ folder into {} (`onnxrt bundle BINARY DIR` copies the runtime with its provider libraries)",
                dir.display()
            )),
        );
    }
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
    // Another release's provider library loads and then crashes: said before what it needs.
    let release_row = release::row(short, &path, inputs.runtime);
    let origin = inputs.dir;
    let searcher = inputs.searcher;
    let resolved: Vec<(String, Option<Found>)> =
        dynamic.needed.iter().map(|n| (n.clone(), searcher.resolve(n, &dynamic, origin))).collect();
    let missing: Vec<&str> = resolved.iter().filter(|(_, f)| f.is_none()).map(|(n, _)| n.as_str()).collect();
    // Checked before anything loads them: a truncated library kills the loader with SIGBUS.
    let damaged: Vec<(&str, &Found, String)> = resolved
        .iter()
        .filter_map(|(n, f)| {
            let f = f.as_ref()?;
            elf::check_complete(&f.path).err().map(|why| (n.as_str(), f, why.to_string()))
        })
        .collect();
    let mut summary =
        format!("complete ELF64 x86-64 library; NEEDED ({}): {}", dynamic.needed.len(), dynamic.needed.join(", "));
    if !dynamic.runpath.is_empty() {
        summary.push_str(&format!("; RUNPATH {}", dynamic.runpath.join(":")));
    }
    let mut rows: Vec<Row> = release_row.into_iter().collect();
    rows.push(if missing.is_empty() && damaged.is_empty() {
        Row::new(&name, Status::Ok, format!("{summary}; all found, each a complete library"))
    } else {
        // Damaged files first: they crash the process, where a missing one only fails the load.
        let mut problems = Vec::new();
        let mut blamed = Vec::new();
        for (needed, found, why) in &damaged {
            problems.push(format!(
                "damaged: {} ({why}; {})",
                found.path.display(),
                searcher.picked(found, &dynamic, origin)
            ));
            blamed.push(needed.to_string());
        }
        if !missing.is_empty() {
            problems.push(format!("missing: {}", missing.join(", ")));
            blamed.extend(missing.iter().map(|m| m.to_string()));
        }
        let status = if damaged.is_empty() { missing_status } else { Status::Fail };
        let mut row = Row::new(&name, status, format!("{summary}; {}", problems.join("; "))).fix(format!(
            "the {provider} provider cannot load until {} can be found and loaded (see the rows below)",
            blamed.join(", ")
        ));
        if optional {
            row.detail.push_str(" (only the TensorRT provider needs them)");
        }
        row
    });
    for (needed, found) in &resolved {
        let is_damaged = damaged.iter().any(|(n, _, _)| n == needed);
        if found.is_some() && !is_gpu_stack(needed) && !is_damaged {
            continue;
        }
        rows.push(needed_row(inputs, short, provider, &dynamic, needed, found.as_ref(), missing_status));
    }
    let found_gpu: Vec<Found> = resolved
        .iter()
        .filter(|(n, f)| is_gpu_stack(n) && f.as_ref().is_some_and(|f| elf::check_complete(&f.path).is_ok()))
        .filter_map(|(_, f)| f.clone())
        .collect();
    rows.extend(deeper_rows(inputs, short, &found_gpu, &dynamic.needed, missing_status));
    // What the manifest says this provider needs, against what the library asks for.
    let expected: &[&str] = match (short, requires) {
        ("cuda", Some(r)) => r.needed,
        ("tensorrt", Some(r)) => r.needed_tensorrt,
        _ => &[],
    };
    let dist_name = inputs.dist.map(|d| d.name).unwrap_or_default();
    for &want in expected {
        if dynamic.needed.iter().any(|n| n == want) {
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
            let front_ok = row.status == Status::Ok;
            rows.push(row);
            if let (true, Some(found)) = (front_ok, found.as_ref()) {
                rows.extend(cudnn::row(searcher, short, want, found, missing_status));
            }
        }
    }
    rows
}

/// The GPU-stack libraries that the found ones need in turn (`libcublas.so.13` needs
/// `libcublasLt.so.13`...), resolved from each one's folder and checked; rows only for problems.
fn deeper_rows(
    inputs: &Inputs<'_>,
    short: &str,
    found: &[Found],
    direct: &[String],
    missing_status: Status,
) -> Vec<Row> {
    let mut seen: Vec<String> = direct.to_vec();
    let mut queue: Vec<Found> = found.to_vec();
    let mut rows = Vec::new();
    while let Some(parent) = queue.pop() {
        let Ok(dynamic) = elf::read_dynamic(&parent.path) else { continue };
        let origin = parent.path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let parent_name = parent.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for needed in dynamic.needed.iter().filter(|n| is_gpu_stack(n)) {
            if seen.contains(needed) {
                continue;
            }
            seen.push(needed.clone());
            let check = format!("{short}: {needed} (needed by {parent_name})");
            match inputs.searcher.resolve(needed, &dynamic, &origin) {
                None => rows.push(
                    Row::new(
                        check,
                        missing_status,
                        format!("not found; searched {}", inputs.searcher.searched(&dynamic, &origin)),
                    )
                    .fix(fix_for(needed, short)),
                ),
                Some(at) => match elf::check_complete(&at.path) {
                    Ok(_) => queue.push(at),
                    Err(why) => {
                        rows.push(damaged_row(check, &at, &why.to_string(), inputs.searcher, &dynamic, &origin))
                    }
                },
            }
        }
    }
    rows
}

/// A FAIL row for a library file the loader would pick but cannot map.
fn damaged_row(check: String, found: &Found, why: &str, searcher: &Searcher, lib: &elf::Dynamic, origin: &Path) -> Row {
    let real = if found.real != found.path { format!(" (→ {})", found.real.display()) } else { String::new() };
    Row::new(check, Status::Fail, format!("{}{real}: {why}; {}", found.path.display(), searcher.picked(found, lib, origin)))
        .fix(format!(
            "replace {} with a complete copy of the same library, or take it off the search path (remove its folder from LD_LIBRARY_PATH or put the right folder first); loading it would crash the process",
            found.path.display()
        ))
}

/// The version part after `.so.` of a library file name (`9.14.0` for `libcudnn.so.9.14.0`).
fn so_version(name: &str) -> &str {
    name.find(".so.").map_or("", |i| &name[i + 4..])
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
        if let Err(why) = elf::check_complete(&found.path) {
            return damaged_row(check, found, &why.to_string(), inputs.searcher, dynamic, inputs.dir);
        }
        let real = if found.real != found.path { format!(" (→ {})", found.real.display()) } else { String::new() };
        return Row::new(
            check,
            Status::Ok,
            format!("found {}{real} via {}, a complete library", found.path.display(), found.via),
        );
    }
    let others = inputs.searcher.other_versions(needed, dynamic, inputs.dir);
    let mut detail = format!("not found; searched {}", inputs.searcher.searched(dynamic, inputs.dir));
    let mut fix = fix_for(needed, provider);
    if !others.is_empty() {
        let list: Vec<String> = others.iter().map(|p| p.display().to_string()).collect();
        detail.push_str(&format!("; other files of that library present: {}", list.join(", ")));
        // The same major version under its full name (the SONAME link is what is missing), or
        // other versions (which do not load in its place).
        let wanted = so_version(needed);
        let real_name = |p: &Path| {
            std::fs::canonicalize(p).ok().and_then(|r| r.file_name().map(|n| n.to_string_lossy().into_owned()))
        };
        let same: Vec<&Path> = others
            .iter()
            .map(PathBuf::as_path)
            .filter(|p| {
                real_name(p).is_some_and(|n| !wanted.is_empty() && so_version(&n).starts_with(&format!("{wanted}.")))
            })
            .collect();
        if let Some(file) = same.first() {
            let folder = file.parent().unwrap_or(Path::new("."));
            fix.push_str(&format!(
                ". {} is that version under its full name, but the loader opens only `{needed}`: link it (ln -s {} {})",
                file.display(),
                file.display(),
                folder.join(needed).display()
            ));
        } else {
            fix.push_str(&format!(
                ". Those are other versions: this build was linked against `{needed}`, and a different major version does not load in its place"
            ));
        }
    }
    Row::new(check, missing_status, detail).fix(fix)
}
