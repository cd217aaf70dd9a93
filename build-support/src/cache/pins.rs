//! Cache entries bound to the manifest: what an entry's record may say.
//!
//! An entry's record ([`crate::cache::record::RECORD`]) and completion marker sit beside its files, so a
//! record proves nothing to whoever can write the cache: a planted library comes with a planted
//! record. Where the manifest pins a distribution's files ([`Dist::files`], and each part's
//! `member_sha256`), the record must list exactly those files with those sizes and hashes, and
//! [`crate::cache::record::check`] then checks the files against the record, so against the manifest.
//! Where the manifest pins only the archive, the record was written at install from the verified
//! archive and is trusted from then on ([`Provenance::Install`]); `onnxrt-dist verify --archive FILE`
//! re-derives it from the archive ([`crate::cache::rederive`]).

use std::path::{Path, PathBuf};

use crate::cache::record::{self, Damage, Item};
use crate::error::{Error, Result};
use crate::manifest::Dist;

/// What an entry's files were checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Provenance {
    /// The manifest's pins of every file.
    Manifest,
    /// The entry's own record, written at install from the verified archive (the manifest pins
    /// the archive only): trusted since the install.
    Install,
    /// Files re-derived just now from this archive, verified against the pin.
    Archive(PathBuf),
}

/// Checks an entry's record against the manifest's pins of `dist`: the parts' `member_sha256`
/// first (the runtime library), then every pinned file, then that nothing unpinned is listed.
pub fn check(dist: &Dist, items: &[(PathBuf, Item)]) -> std::result::Result<Provenance, Damage> {
    compare(dist, items, "the entry's record")
}

/// Checks a filled work folder, before it is published, against the manifest's pins of `dist`.
pub fn check_tree(dist: &Dist, dir: &Path) -> Result<()> {
    if dist.files.is_empty() && dist.parts.iter().all(|p| p.member_sha256.is_none()) {
        return Ok(());
    }
    let items = record::list(dir)?;
    compare(dist, &items, "what was unpacked").map(|_| ()).map_err(|damage| Error::NotAsPinned {
        dist: dist.name.clone(),
        file: damage.file.display().to_string(),
        why: damage.why,
    })
}

fn compare(dist: &Dist, items: &[(PathBuf, Item)], listing: &str) -> std::result::Result<Provenance, Damage> {
    let root = Path::new(&dist.root);
    let find = |path: &Path| items.iter().find(|(p, _)| p == path).map(|(_, item)| item);
    let absent = |file: PathBuf| Damage { file, why: format!("is pinned by the manifest but not in {listing}") };
    for part in &dist.parts {
        let Some(expected) = &part.member_sha256 else { continue };
        let path = root.join(&part.dest);
        match find(&path) {
            Some(Item::File { sha256, .. }) if sha256 == expected => {}
            Some(found) => {
                let why = format!(
                    "is {found} in {listing}, but the manifest pins sha256 {expected} (`member_sha256` of {} {})",
                    part.package, part.version
                );
                return Err(Damage { file: path, why });
            }
            None => return Err(absent(path)),
        }
    }
    if dist.files.is_empty() {
        return Ok(Provenance::Install);
    }
    let pins = pinned(dist);
    for (path, pin) in &pins {
        match find(path) {
            Some(found) if found == pin => {}
            Some(found) => {
                let why = format!("is {found} in {listing}, but the manifest pins {pin}");
                return Err(Damage { file: path.clone(), why });
            }
            None => return Err(absent(path.clone())),
        }
    }
    if let Some((path, _)) = items.iter().find(|(path, _)| !pins.iter().any(|(p, _)| p == path)) {
        let why = format!("is in {listing}, but is not among the files the manifest pins for `{}`", dist.name);
        return Err(Damage { file: path.clone(), why });
    }
    Ok(Provenance::Manifest)
}

/// The manifest's file pins as record items, paths relative to the entry (below `root`).
fn pinned(dist: &Dist) -> Vec<(PathBuf, Item)> {
    let root = Path::new(&dist.root);
    let mut pins: Vec<(PathBuf, Item)> = dist
        .files
        .iter()
        .map(|pin| {
            let item = match (&pin.link, pin.size, &pin.sha256) {
                (Some(target), _, _) => Item::Link(PathBuf::from(target)),
                (None, size, sha256) => {
                    Item::File { size: size.unwrap_or_default(), sha256: sha256.clone().unwrap_or_default() }
                }
            };
            (root.join(&pin.path), item)
        })
        .collect();
    pins.sort_by(|a, b| a.0.cmp(&b.0));
    pins
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Manifest;

    fn registry() -> Dist {
        Manifest::builtin().expect("manifest").dist("cpu-1.16.2-registry").expect("dist").clone()
    }

    #[test]
    fn the_pins_themselves_pass_and_any_change_is_named() {
        let dist = registry();
        let good = pinned(&dist);
        assert_eq!(check(&dist, &good), Ok(Provenance::Manifest));

        let mut extra = good.clone();
        extra.push((PathBuf::from("onnxruntime-linux-x64-1.16.2/lib/libplanted.so"), Item::Link("x".into())));
        let damage = check(&dist, &extra).expect_err("an unpinned file");
        assert!(damage.file.ends_with("lib/libplanted.so") && damage.why.contains("not among"), "{damage:?}");

        let missing: Vec<_> = good.iter().filter(|(p, _)| !p.ends_with("VERSION_NUMBER")).cloned().collect();
        let damage = check(&dist, &missing).expect_err("a pinned file missing");
        assert!(damage.file.ends_with("VERSION_NUMBER") && damage.why.contains("not in"), "{damage:?}");

        let mut relinked = good.clone();
        let link = relinked.iter_mut().find(|(p, _)| p.ends_with("lib/libonnxruntime.so")).expect("link pin");
        link.1 = Item::Link("/usr/lib/libevil.so".into());
        let damage = check(&dist, &relinked).expect_err("a link elsewhere");
        assert!(damage.why.contains("a link to /usr/lib/libevil.so"), "{damage:?}");
    }

    #[test]
    fn an_unpinned_archive_dist_trusts_its_install() {
        let m = Manifest::builtin().expect("manifest");
        let dist = m.dist("cpu-1.16.2").expect("dist");
        assert_eq!(check(dist, &[]), Ok(Provenance::Install));
    }
}
