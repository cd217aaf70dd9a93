//! `onnxrt bundle BINARY OUT_DIR` and `onnxrt bundle --check DIR`: the "binary + onnxruntime
//! folder" delivery. The binary goes to `OUT_DIR/`, the runtime and its provider libraries to
//! `OUT_DIR/onnxruntime/lib/` (where onnxrt's loader looks: `<exe dir>/onnxruntime/lib`) with the
//! `libonnxruntime.so.1` / `libonnxruntime.so` links, and `OUT_DIR/bundle-manifest.json` lists
//! every file with its sha256 and size. The bundle is built in a fresh folder of random name beside
//! `OUT_DIR` (created exclusively, mode 0700 until published) and renamed into place, so a
//! half-written bundle is never seen and no link planted in a shared folder is written through.
//! `OUT_DIR` itself must not be a symlink; `--force` replaces only a folder that is a bundle
//! (holds `bundle-manifest.json`), never any other folder.
//!
//! The runtime comes from `--lib-dir DIR`, else from `--dist NAME` (provisioned like the build),
//! else from the runtime this command itself loads (`onnxrt version` shows which).

use std::fs;
use std::path::{Component, Path, PathBuf};

use serde_json::json;

use crate::doctor::elf;
use crate::error::{CliError, Result};
use crate::output::{self, Table};

/// The manifest's file name inside a bundle.
pub const MANIFEST: &str = "bundle-manifest.json";
/// Where the runtime goes inside a bundle.
pub const LIB_DIR: &str = "onnxruntime/lib";

/// What `bundle` was asked to do.
#[derive(Debug, Clone)]
pub struct BundleRequest {
    /// The program to deliver.
    pub binary: PathBuf,
    /// The bundle folder to create.
    pub out_dir: PathBuf,
    /// Take the runtime from this folder.
    pub lib_dir: Option<PathBuf>,
    /// Take the runtime from this provisioned distribution.
    pub dist: Option<String>,
    /// Replace an existing `out_dir`.
    pub force: bool,
}

/// The runtime files to copy.
struct Runtime {
    /// The versioned runtime library (links resolved).
    library: PathBuf,
    version: String,
    providers: Vec<PathBuf>,
    from: String,
}

fn canonical(path: &Path) -> Result<PathBuf> {
    fs::canonicalize(path).map_err(CliError::io("cannot resolve", path))
}

/// The version in a name like `libonnxruntime.so.1.16.2`.
fn version_in(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    let version = name.strip_prefix("libonnxruntime.so.")?;
    (version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()))
        .then(|| version.to_owned())
}

/// The paths whose file name starts with `prefix`.
fn named<'a>(paths: &'a [PathBuf], prefix: &'a str) -> impl Iterator<Item = &'a PathBuf> {
    paths.iter().filter(move |p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
}

fn runtime_in(dir: &Path, from: String, known_version: Option<String>) -> Result<Runtime> {
    let entries: Vec<PathBuf> =
        fs::read_dir(dir).map_err(CliError::io("cannot list", dir))?.flatten().map(|e| e.path()).collect();
    let mut versioned: Vec<(Vec<u32>, &PathBuf)> = named(&entries, "libonnxruntime.so.")
        .filter_map(|p| Some((version_in(p)?.split('.').map(|n| n.parse().unwrap_or(0)).collect(), p)))
        .collect();
    versioned.sort();
    let library = match versioned.last() {
        Some((_, path)) => canonical(path)?,
        None => match ["libonnxruntime.so.1", "libonnxruntime.so"].iter().map(|n| dir.join(n)).find(|p| p.exists()) {
            Some(path) => canonical(&path)?,
            None => {
                return Err(CliError::Failed(format!(
                "{} holds no libonnxruntime.so*; pass --lib-dir with the `lib` folder of an ONNX Runtime distribution",
                dir.display()
            )))
            }
        },
    };
    let version = version_in(&library).or(known_version).unwrap_or_else(|| "unknown".into());
    let mut providers = Vec::new();
    for path in named(&entries, "libonnxruntime_providers_") {
        if path.extension().is_some_and(|e| e == "so") {
            providers.push(canonical(path)?);
        }
    }
    providers.sort();
    Ok(Runtime { library, version, providers, from })
}

fn find_runtime(request: &BundleRequest) -> Result<Runtime> {
    if let Some(dir) = &request.lib_dir {
        return runtime_in(dir, format!("--lib-dir {}", dir.display()), None);
    }
    #[cfg(feature = "fetch")]
    if let Some(dist) = &request.dist {
        let mut config = build_support::Config::from_env()?;
        config.manifest.dist(dist)?;
        dist.clone_into(&mut config.dist);
        let p = build_support::provision(&config)?;
        return runtime_in(&p.lib_dir, format!("`{}` ({})", p.dist, p.source), Some(p.ort_version));
    }
    #[cfg(not(feature = "fetch"))]
    if let Some(dist) = &request.dist {
        crate::dists::Manifest::builtin().dist(dist)?;
        return Err(crate::error::without_fetch("onnxrt bundle --dist"));
    }
    let info = onnxrt::runtime_info()?;
    let dir = info.library.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let origin = crate::version::found_via(&info.library).map(|(o, _)| o).unwrap_or_else(|| "loaded".into());
    runtime_in(
        &dir,
        format!("the runtime this command loads ({origin}: {})", info.library.display()),
        Some(info.version),
    )
}

/// A warning when `binary` links the runtime (the `link` feature) with a search path that does not
/// lead into the bundle: such a binary ignores `<exe dir>/onnxruntime/lib`.
fn linked_elsewhere(binary: &Path) -> Option<String> {
    let dynamic = elf::read_dynamic(binary).ok()?;
    let needed = dynamic.needed.iter().find(|n| n.starts_with("libonnxruntime.so"))?;
    let paths = if dynamic.runpath.is_empty() { &dynamic.rpath } else { &dynamic.runpath };
    let reaches = paths.iter().any(|p| p.contains("ORIGIN") && p.trim_end_matches('/').ends_with("onnxruntime/lib"));
    (!reaches).then(|| {
        format!(
            "{} links {needed} (built with the `link` feature) and searches {paths:?}, not the bundle: \
             build it without `link` (the default loads <exe dir>/onnxruntime/lib), or run it with \
             LD_LIBRARY_PATH=<bundle>/onnxruntime/lib",
            binary.display()
        )
    })
}

/// A fresh folder of random name in `parent`, removed on drop unless renamed away.
fn fresh_dir(parent: &Path, name: &str, purpose: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!(".{name}.{purpose}-"))
        .rand_bytes(12)
        .tempdir_in(parent)
        .map_err(CliError::io("cannot create a work folder in", parent))
}

/// Refuses an `OUT_DIR` that is a link, not a folder, or (without `force`) not empty, and with
/// `force` one that is not a bundle.
fn check_out_dir(out: &Path, force: bool) -> Result<()> {
    let meta = match fs::symlink_metadata(out) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(CliError::io("cannot read", out)(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(CliError::Failed(format!(
            "{} is a symbolic link; bundle writes only into a real folder: give the folder itself",
            out.display()
        )));
    }
    if !meta.is_dir() {
        return Err(CliError::Failed(format!("{} exists and is not a folder; choose another path", out.display())));
    }
    let empty = fs::read_dir(out).map_err(CliError::io("cannot list", out))?.next().is_none();
    if empty {
        return Ok(());
    }
    if !force {
        return Err(CliError::Failed(format!(
            "{} exists and is not empty; choose another folder or pass --force to replace it",
            out.display()
        )));
    }
    let is_bundle = fs::symlink_metadata(out.join(MANIFEST)).is_ok_and(|m| m.is_file());
    if !is_bundle {
        return Err(CliError::Failed(format!(
            "{} is not a bundle (it has no {MANIFEST}), and --force replaces only a bundle; choose another \
             folder, or remove that one yourself",
            out.display()
        )));
    }
    Ok(())
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| CliError::Io { context: format!("cannot copy {} to {}", from.display(), to.display()), source: e })
}

/// Runs `bundle BINARY OUT_DIR`.
pub fn create(request: &BundleRequest) -> Result<()> {
    let binary = &request.binary;
    if !binary.is_file() {
        return Err(CliError::Failed(format!("{} is not a file; give the program to bundle", binary.display())));
    }
    let binary_name = binary
        .file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| CliError::Failed(format!("{} has no usable file name", binary.display())))?;
    if binary_name == MANIFEST || binary_name == "onnxruntime" {
        return Err(CliError::Failed(format!(
            "a binary named `{binary_name}` would collide with the bundle's own files; rename it"
        )));
    }
    let runtime = find_runtime(request)?;
    let link_note = linked_elsewhere(binary);
    let out = &request.out_dir;
    let name = out
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| CliError::Usage(format!("OUT_DIR {} has no folder name", out.display())))?;
    let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    check_out_dir(out, request.force)?;
    fs::create_dir_all(parent).map_err(CliError::io("cannot create", parent))?;
    let work = fresh_dir(parent, name, "tmp")?;
    let lib = work.path().join(LIB_DIR);
    fs::create_dir_all(&lib).map_err(CliError::io("cannot create", &lib))?;

    let mut files = vec![binary_name.clone()];
    copy(binary, &work.path().join(&binary_name))?;
    for source in std::iter::once(&runtime.library).chain(&runtime.providers) {
        let file = source.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
        copy(source, &lib.join(&file))?;
        files.push(format!("{LIB_DIR}/{file}"));
    }
    // The names the loader and the linker ask for: the SONAME, `.so.<major>` and `.so`.
    let real = runtime.library.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    let major = runtime.version.split('.').next().unwrap_or("1");
    let soname = elf::read_dynamic(&runtime.library).ok().and_then(|d| d.soname);
    let mut links: Vec<String> =
        soname.into_iter().chain([format!("libonnxruntime.so.{major}"), "libonnxruntime.so".into()]).collect();
    links.retain(|l| *l != real);
    links.sort();
    links.dedup();
    for link in &links {
        std::os::unix::fs::symlink(&real, lib.join(link)).map_err(CliError::io("cannot link", &lib.join(link)))?;
    }

    let mut listed = Vec::new();
    let mut table = Table::new(&["FILE", "SIZE", "SHA256"]);
    for file in &files {
        let path = work.path().join(file);
        let size = fs::metadata(&path).map_err(CliError::io("cannot read", &path))?.len();
        let sha256 = sha256_file(&path)?;
        table.row([file.clone(), output::bytes(size), sha256[..16].to_owned() + "…"]);
        listed.push(json!({ "path": file, "sha256": sha256, "size": size }));
    }
    for link in &links {
        table.row([format!("{LIB_DIR}/{link}"), "link".to_owned(), format!("→ {real}")]);
    }
    let manifest = json!({
        "format": 1,
        "binary": binary_name,
        "ort_version": runtime.version,
        "runtime_from": runtime.from,
        "created_by": format!("onnxrt-cli {}", env!("CARGO_PKG_VERSION")),
        "files": listed,
        "links": links.iter().map(|l| json!({ "path": format!("{LIB_DIR}/{l}"), "target": real })).collect::<Vec<_>>(),
    });
    let manifest_path = work.path().join(MANIFEST);
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| CliError::Failed(format!("cannot encode the manifest: {e}")))?;
    fs::write(&manifest_path, text + "\n").map_err(CliError::io("cannot write", &manifest_path))?;

    publish(work, out, parent, name)?;
    output::outln(&format!("bundled {binary_name} with ONNX Runtime {} from {}", runtime.version, runtime.from))?;
    output::out(&table.render())?;
    if let Some(note) = link_note {
        eprintln!("onnxrt: warning: {note}");
    }
    output::outln(&format!(
        "\n{} is ready: run {}/{binary_name} (it loads {}/{LIB_DIR}/{real}); check it with `onnxrt bundle --check {}`",
        out.display(),
        out.display(),
        out.display(),
        out.display()
    ))?;
    Ok(())
}

/// Renames the finished work folder to `out`, replacing an empty folder or (checked by
/// [`check_out_dir`]) a bundle, which is first renamed into a fresh folder and then deleted.
fn publish(work: tempfile::TempDir, out: &Path, parent: &Path, name: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(work.path(), fs::Permissions::from_mode(0o755))
        .map_err(CliError::io("cannot set the mode of", work.path()))?;
    let mut aside = None;
    // An empty folder is removed; a bundle (anything else was refused) is renamed aside.
    if fs::symlink_metadata(out).is_ok() && fs::remove_dir(out).is_err() {
        let old = fresh_dir(parent, name, "old")?;
        fs::rename(out, old.path().join(name)).map_err(CliError::io("cannot move aside", out))?;
        aside = Some(old);
    }
    fs::rename(work.path(), out).map_err(CliError::io("cannot rename the bundle into", out))?;
    // Renamed away: nothing is left for the drop to remove.
    let _ = work.keep();
    drop(aside);
    Ok(())
}

/// A manifest path that stays inside the bundle.
fn inside(dir: &Path, relative: &str) -> Option<PathBuf> {
    let path = Path::new(relative);
    path.components().all(|c| matches!(c, Component::Normal(_))).then(|| dir.join(path))
}

/// Runs `bundle --check DIR`.
pub fn check(dir: &Path) -> Result<()> {
    let manifest_path = dir.join(MANIFEST);
    let text = fs::read_to_string(&manifest_path).map_err(CliError::io("cannot read", &manifest_path))?;
    let manifest: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Failed(format!("{} is not valid JSON: {e}", manifest_path.display())))?;
    let bad_manifest = |why: &str| {
        CliError::Failed(format!("{}: {why}; recreate the bundle with `onnxrt bundle`", manifest_path.display()))
    };
    let files = manifest.get("files").and_then(|f| f.as_array()).ok_or_else(|| bad_manifest("no `files` list"))?;
    let links = manifest.get("links").and_then(|l| l.as_array()).cloned().unwrap_or_default();
    let mut table = Table::new(&["STATUS", "PATH", "DETAIL"]);
    let mut problems = Vec::new();
    for entry in files {
        let (Some(rel), Some(sha), Some(size)) = (
            entry.get("path").and_then(|v| v.as_str()),
            entry.get("sha256").and_then(|v| v.as_str()),
            entry.get("size").and_then(|v| v.as_u64()),
        ) else {
            return Err(bad_manifest("a file entry lacks path, sha256 or size"));
        };
        let path = inside(dir, rel).ok_or_else(|| bad_manifest(&format!("path `{rel}` leaves the bundle")))?;
        let (status, detail) = match fs::symlink_metadata(&path) {
            Err(_) => ("MISSING", "not in the bundle".to_owned()),
            Ok(meta) if !meta.is_file() => ("CHANGED", "is no longer a regular file".to_owned()),
            Ok(meta) if meta.len() != size => ("CHANGED", format!("size {} instead of {size}", meta.len())),
            Ok(_) => match sha256_file(&path) {
                Ok(actual) if actual == sha => ("OK", format!("{} sha256 ok", output::bytes(size))),
                Ok(actual) => ("CHANGED", format!("sha256 {actual} instead of {sha}")),
                Err(e) => ("UNREADABLE", e.to_string()),
            },
        };
        if status != "OK" {
            problems.push(format!("{rel} ({})", status.to_lowercase()));
        }
        table.row([status.to_owned(), rel.to_owned(), detail]);
    }
    for entry in &links {
        let (Some(rel), Some(target)) =
            (entry.get("path").and_then(|v| v.as_str()), entry.get("target").and_then(|v| v.as_str()))
        else {
            return Err(bad_manifest("a link entry lacks path or target"));
        };
        let path = inside(dir, rel).ok_or_else(|| bad_manifest(&format!("path `{rel}` leaves the bundle")))?;
        let (status, detail) = match fs::read_link(&path) {
            Ok(t) if t == Path::new(target) => ("OK", format!("→ {target}")),
            Ok(t) => ("CHANGED", format!("→ {} instead of {target}", t.display())),
            Err(_) => ("MISSING", format!("link → {target} is missing")),
        };
        if status != "OK" {
            problems.push(format!("{rel} ({})", status.to_lowercase()));
        }
        table.row([status.to_owned(), rel.to_owned(), detail]);
    }
    output::out(&table.render())?;
    if problems.is_empty() {
        output::outln(&format!(
            "\n{}: all {} files and {} links match {MANIFEST}",
            dir.display(),
            files.len(),
            links.len()
        ))?;
        Ok(())
    } else {
        Err(CliError::Failed(format!(
            "bundle check failed for {}: {}. Recreate the bundle with `onnxrt bundle`, or restore the files",
            dir.display(),
            problems.join(", ")
        )))
    }
}

/// The sha256 of a file's bytes, in lowercase hex (as `sha256sum` prints it).
fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    let mut file = fs::File::open(path).map_err(CliError::io("cannot open", path))?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(CliError::io("cannot read", path))?;
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_paths() {
        assert_eq!(version_in(Path::new("/x/libonnxruntime.so.1.16.2")).as_deref(), Some("1.16.2"));
        assert_eq!(version_in(Path::new("libonnxruntime.so.1")), None);
        assert!(inside(Path::new("/b"), "onnxruntime/lib/x.so").is_some());
        assert!(inside(Path::new("/b"), "../etc/passwd").is_none());
        assert!(inside(Path::new("/b"), "/etc/passwd").is_none());
    }
}
