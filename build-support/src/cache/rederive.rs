//! `onnxrt-dist verify --archive FILE`: for a distribution the manifest pins only by its archive's
//! hash, the entry's record was written at install from the verified archive and is trusted from
//! then on ([`crate::Provenance::Install`]). This re-derives what the entry must hold from the archive
//! itself (verified against the pin first) and compares the entry's files and record with it. It
//! changes nothing in the cache: a difference is an error that names the file and what to do.

use std::io::{BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::cache::record::{self, Item};
use crate::cache::Cache;
use crate::error::{Error, Result};
use crate::manifest::DistKind;
use crate::{extract, verify, Checked, Config, Provenance, Provisioned, Source};

/// Checks the cache entry of `config.dist` against the files of `archive`.
pub fn verify_against_archive(config: &Config, archive: &Path) -> Result<Provisioned> {
    let dist = config.manifest.dist(&config.dist)?;
    if dist.kind != DistKind::Archive {
        return Err(Error::Manifest(format!(
            "`{0}` is assembled from package registries: the manifest pins its files, which \
             `onnxrt-dist verify {0}` checks; --archive is for archive distributions",
            dist.name
        )));
    }
    let cache = Cache::new(&config.cache_dir);
    let pin = crate::pin(config, dist)?;
    let _lock = cache.lock(&dist.name)?;
    // The archive is copied while hashed and the copy extracted, as at install (one stream).
    let key = format!("{}.rederive", dist.name);
    cache.sweep(&key);
    let mut copy = cache.temp_file(&key)?;
    let actual = verify::copy_regular_file(archive, copy.as_file_mut(), dist.max_bytes)?;
    let Some(expected) = pin else {
        return Err(Error::Unpinned { dist: dist.name.clone(), computed: actual });
    };
    let shown = archive.display().to_string();
    if dist.pinned_sha256() == Some(expected.as_str()) {
        let size = copy.as_file().metadata().map_err(Error::io(format!("reading {}", copy.path().display())))?.len();
        crate::check_size(dist, &shown, size)?;
    }
    let note = "Nothing was compared: it is not the pinned archive, so it cannot vouch for the entry";
    verify::check_with(&shown, &expected, &actual, note)?;
    let entry = cache.lookup(&expected)?.ok_or_else(|| Error::NoEntry {
        dist: dist.name.clone(),
        entry: cache.entry_path(&expected),
        archive: archive.to_owned(),
    })?;

    let remedy = format!(
        "Delete that folder and install it again from the archive: ONNXRT_ARCHIVE={shown} onnxrt-dist fetch {}",
        dist.name
    );
    let damaged = |file: &Path, why: String| Error::DamagedEntry {
        entry: entry.clone(),
        file: file.display().to_string(),
        why,
        remedy: remedy.clone(),
    };
    if let Some((path, why)) = difference(dist, &cache, &key, copy.as_file_mut(), &entry)? {
        return Err(damaged(&path, why));
    }
    let files = record::read(&entry).ok().flatten().map_or(0, |items| items.len());
    let checked = Checked::Hashes { files };
    let source = Source::Cache { entry: entry.clone(), checked, trust: Provenance::Archive(archive.to_owned()) };
    crate::finish(dist, &entry, source)
}

/// Extracts the verified archive `file` (from its start, through that descriptor) into a work
/// folder and compares the entry with it: its files, its record, and that its folders hold
/// nothing else and nothing writable by others. The first difference, if any.
pub(crate) fn difference(
    dist: &crate::Dist,
    cache: &Cache,
    key: &str,
    file: &mut std::fs::File,
    entry: &Path,
) -> Result<Option<(PathBuf, String)>> {
    let work = cache.temp_dir(key)?;
    file.seek(SeekFrom::Start(0)).map_err(Error::io("rewinding the verified archive"))?;
    extract::extract_tgz(BufReader::new(file), work.path(), &dist.root, extract::Bounds::for_dist(dist))?;
    let derived = record::list(work.path())?;
    if let Some(found) = first_difference(&derived, &record::list(entry)?, "is") {
        return Ok(Some(found));
    }
    match record::read(entry) {
        Ok(Some(items)) => {
            if let Some((path, why)) = first_difference(&derived, &items, "is recorded as") {
                let why = format!("differs from the archive's files: {} {why}", path.display());
                return Ok(Some((PathBuf::from(record::RECORD), why)));
            }
            if let Err(damage) = record::check_folder(entry, &items) {
                return Ok(Some((damage.file, damage.why)));
            }
        }
        Ok(None) => return Ok(Some((PathBuf::from(record::RECORD), "is missing".into()))),
        Err(damage) => return Ok(Some((damage.file, damage.why))),
    }
    Ok(None)
}

/// The first path where `found` differs from `derived`, and how.
fn first_difference(derived: &[(PathBuf, Item)], found: &[(PathBuf, Item)], is: &str) -> Option<(PathBuf, String)> {
    for (path, item) in derived {
        match found.iter().find(|(p, _)| p == path) {
            Some((_, f)) if f == item => {}
            Some((_, f)) => return Some((path.clone(), format!("{is} {f}, but the archive gives {item}"))),
            None => return Some((path.clone(), "is missing; the archive has it".into())),
        }
    }
    found
        .iter()
        .find(|(p, _)| !derived.iter().any(|(d, _)| d == p))
        .map(|(p, _)| (p.clone(), "is not in the archive".into()))
}
