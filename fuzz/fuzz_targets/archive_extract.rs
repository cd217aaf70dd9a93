//! Arbitrary archives through `build_support::extract::extract_tgz` with small bounds. Whatever
//! it returns, nothing may appear outside the destination folder; this is checked after every
//! input.
//!
//! The first byte picks how the rest is read, so that the fuzzer gets past the gzip and tar
//! checksums often enough to reach the extractor's own checks:
//! - `0x1f` (gzip's first byte): the whole input is the `.tgz` (seed: a real tiny archive);
//! - other even bytes: the rest is a tar stream; the harness fixes each 512-byte block's header
//!   checksum and gzips it;
//! - odd bytes: the rest describes entries (type, path and link made of `..`, `/`, names...),
//!   written as a tar with valid checksums and gzipped.
//!
//! Run it as an unprivileged user (tools/reliability/fuzz.sh does): a real escape must not be able
//! to overwrite anything that matters.
#![no_main]

use std::collections::{BTreeSet, HashMap};
use std::io::{Cursor, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use arbitrary::{Arbitrary, Unstructured};
use build_support::extract::{extract_tgz, Bounds};
use libfuzzer_sys::fuzz_target;

const BOUNDS: Bounds = Bounds { max_entries: 64, max_unpacked: 1 << 20 };
/// Folders between the scratch root and the destination, so relative escapes land in the tree.
const DEPTH: usize = 8;

#[derive(Arbitrary, Debug)]
struct Entry {
    kind: u8,
    path: Vec<u8>,
    link: Vec<u8>,
    raw_path: bool,
    size: u8,
    mode: u16,
}

#[derive(Arbitrary, Debug)]
struct Entries {
    with_root: bool,
    entries: Vec<Entry>,
}

const TYPES: &[u8] = b"0512346 7LKxgSDM";
const PARTS: &[&str] = &["root", "..", ".", "lib", "", "escaped", "l", "d", "libonnxruntime.so", "/", "root/.."];

/// A path made of table words (most of the time) or raw bytes, at most 100 bytes (ustar name).
fn path(words: &[u8], raw: bool) -> Vec<u8> {
    let mut out = if raw {
        words.to_vec()
    } else {
        let parts: Vec<&str> = words.iter().map(|&w| PARTS[usize::from(w) % PARTS.len()]).collect();
        parts.join("/").into_bytes()
    };
    out.truncate(100);
    out
}

fn tar_of(spec: &Entries) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for e in spec.entries.iter().take(80) {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::new(TYPES[usize::from(e.kind) % TYPES.len()]));
        let data = vec![b'x'; usize::from(e.size)];
        header.set_size(data.len() as u64);
        header.set_mode(u32::from(e.mode) & 0o7777);
        let mut name = path(&e.path, e.raw_path);
        if spec.with_root && !e.raw_path {
            let mut rooted = b"root/".to_vec();
            rooted.append(&mut name);
            name = rooted;
            name.truncate(100);
        }
        let link = path(&e.link, e.raw_path);
        let old = header.as_old_mut();
        old.name[..name.len()].copy_from_slice(&name);
        old.linkname[..link.len()].copy_from_slice(&link);
        header.set_cksum();
        if builder.append(&header, data.as_slice()).is_err() {
            break;
        }
    }
    builder.into_inner().unwrap_or_default()
}

/// Sets the checksum of every 512-byte block as if it were a header.
fn fix_checksums(mut tar: Vec<u8>) -> Vec<u8> {
    tar.resize(tar.len().div_ceil(512) * 512, 0);
    for block in tar.chunks_exact_mut(512) {
        block[148..156].fill(b' ');
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }
    tar
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("gzip in memory");
    encoder.finish().expect("gzip in memory")
}

/// Entry names and link targets, as far as the tar crate can list them.
fn names_in(tgz: &[u8]) -> Vec<Vec<u8>> {
    let mut names = Vec::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(Cursor::new(tgz)));
    let Ok(entries) = archive.entries() else { return names };
    for entry in entries.take(200) {
        let Ok(mut entry) = entry else { break };
        names.push(entry.path_bytes().into_owned());
        if let Some(link) = entry.link_name_bytes() {
            names.push(link.into_owned());
        }
        let _ = std::io::copy(&mut (&mut entry).take(1 << 20), &mut std::io::sink());
    }
    names
}

/// `name` resolved lexically against `base` (no symlinks followed), or as given when absolute.
fn lexical(base: &Path, name: &[u8]) -> PathBuf {
    let name = Path::new(std::str::from_utf8(name).unwrap_or(""));
    let mut out = if name.is_absolute() { PathBuf::from("/") } else { base.to_path_buf() };
    for c in name.components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    out
}

/// Every path under `dir`, symlinks not followed.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(read) = std::fs::read_dir(dir) else { return };
    for entry in read.flatten() {
        let path = entry.path();
        out.push(path.clone());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&path, out);
        }
    }
}

fn check(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let tgz = match mode {
        0x1f => data.to_vec(),
        m if m % 2 == 0 => gzip(&fix_checksums(rest.to_vec())),
        _ => match Entries::arbitrary_take_rest(Unstructured::new(rest)) {
            Ok(spec) => gzip(&tar_of(&spec)),
            Err(_) => return,
        },
    };
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let root = scratch.path().canonicalize().expect("canonical scratch");
    let mut chain = vec![root.clone()];
    for i in 0..DEPTH {
        chain.push(chain[i].join(format!("p{i}")));
    }
    let dest = chain[DEPTH].join("dest");
    std::fs::create_dir_all(&dest).expect("dest");

    // Places outside the scratch tree an entry could name; none may appear.
    let names = names_in(&tgz);
    let outside: BTreeSet<PathBuf> =
        names.iter().map(|n| lexical(&dest, n)).filter(|p| !p.starts_with(&root) && !p.exists()).collect();

    let archive_root = if mode % 4 == 1 { "root" } else { "" };
    let _ = extract_tgz(Cursor::new(&tgz), &dest, archive_root, BOUNDS);

    for p in &outside {
        assert!(!p.exists(), "an entry appeared outside the destination: {}", p.display());
    }
    let mut found = Vec::new();
    walk(&root, &mut found);
    // A hard link made by the archive has all its names inside dest.
    let mut names_of_inode: HashMap<(u64, u64), u64> = HashMap::new();
    for p in &found {
        if let Ok(meta) = std::fs::symlink_metadata(p) {
            if meta.is_file() {
                *names_of_inode.entry((meta.dev(), meta.ino())).or_default() += 1;
            }
        }
    }
    for p in &found {
        if chain.contains(p) || *p == dest {
            continue;
        }
        assert!(p.starts_with(&dest), "written outside the destination: {}", p.display());
        let meta = std::fs::symlink_metadata(p).expect("metadata of a walked path");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(p).expect("a symlink's target");
            let parent = p.parent().expect("a parent");
            let resolved = lexical(parent, target.as_os_str().as_encoded_bytes());
            assert!(resolved.starts_with(&dest), "symlink {} -> {} leaves dest", p.display(), target.display());
        } else if let Ok(real) = p.canonicalize() {
            assert!(real.starts_with(&dest), "{} is really {}", p.display(), real.display());
        }
        if meta.is_file() {
            let inside = names_of_inode.get(&(meta.dev(), meta.ino())).copied().unwrap_or(0);
            assert_eq!(meta.nlink(), inside, "{} has links outside the destination", p.display());
        }
        assert!(meta.is_file() || meta.is_dir() || meta.file_type().is_symlink(), "special file {}", p.display());
    }
}

fuzz_target!(|data: &[u8]| check(data));
