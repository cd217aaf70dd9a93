//! Which ONNX Runtime release a provider library was built for, read from the file without
//! loading it.
//!
//! ORT loads `libonnxruntime_providers_cuda.so` from beside `libonnxruntime.so` and checks
//! neither its release nor the interface between the two (the provider bridge changes between
//! releases), so a provider library copied from another release loads and then crashes or
//! misbehaves. The CUDA provider library embeds its release once in its read-only data, as a
//! NUL-terminated string: "1.30.0" in `onnxruntime-gpu` 1.30.0's, "1.31.1" in 1.31.1's. The
//! shared and TensorRT provider libraries embed none, and older or other builds may not either:
//! a library with no such string (or with several different ones, none the runtime's) is not
//! judged, since there is nothing reliable to compare.
//!
//! The scan reads `.rodata` (or, without section headers, the read-only loadable segments) in
//! chunks of 1 MiB with positioned reads, at most [`MAX_SCANNED`] bytes in all; nothing is
//! mapped and nothing is loaded.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::{Endianness, ReadCache};

/// The most bytes one scan reads (the CUDA 13 provider's `.rodata` is about 26 MB).
pub const MAX_SCANNED: u64 = 512 << 20;

/// The size of one read.
const CHUNK: usize = 1 << 20;

/// The longest release string looked for: `1.NNN.NNN`.
const LONGEST: usize = 9;

/// At most this many different release-like strings are kept.
const KEEP: usize = 16;

/// What a provider library says about its release, against the runtime's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The library embeds the runtime's release (alone or among others).
    Same,
    /// The library embeds exactly one release, another than the runtime's.
    Other(String),
    /// No release string, several different ones none of which is the runtime's, or the file
    /// could not be read: nothing to judge by.
    Unknown,
}

/// Compares the release strings found in a provider library with the runtime's version.
pub fn compare(found: &[String], runtime: &str) -> Verdict {
    if found.iter().any(|f| f == runtime) {
        Verdict::Same
    } else if let [only] = found {
        Verdict::Other(only.clone())
    } else {
        Verdict::Unknown
    }
}

/// Whether `token` (the bytes between two NULs) is a release string `1.N.N`, each N of one to
/// three digits.
fn release(token: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(token).ok()?;
    let rest = text.strip_prefix("1.")?;
    let (minor, patch) = rest.split_once('.')?;
    let number = |s: &str| (1..=3).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
    (number(minor) && number(patch)).then(|| text.to_owned())
}

/// Adds `token` to `found` if it is a release string not yet there.
fn note(token: &[u8], found: &mut Vec<String>) {
    if let Some(release) = release(token) {
        if found.len() < KEEP && !found.contains(&release) {
            found.push(release);
        }
    }
}

/// The NUL-bounded release strings in `len` bytes of `file` from `start` (the range's ends count
/// as boundaries), added to `found`. Reads `CHUNK` bytes at a time; a string cut by a chunk's end
/// is carried into the next.
fn scan_range(file: &File, start: u64, len: u64, found: &mut Vec<String>) -> std::io::Result<()> {
    let mut buffer = vec![0u8; CHUNK];
    // The bytes after the last NUL read so far; `None` once they are too long to be a release.
    let mut pending: Option<Vec<u8>> = Some(Vec::new());
    let mut at = 0u64;
    while at < len {
        let want = usize::try_from(len - at).map_or(CHUNK, |left| left.min(CHUNK));
        let chunk = &mut buffer[..want];
        file.read_exact_at(chunk, start + at)?;
        at += want as u64;
        let mut pieces = chunk.split(|&b| b == 0).peekable();
        while let Some(piece) = pieces.next() {
            let carried = pending.take();
            let joined = carried.map(|mut head| {
                head.extend_from_slice(&piece[..piece.len().min(LONGEST + 1)]);
                head
            });
            let joined = joined.filter(|j| j.len() <= LONGEST && piece.len() <= LONGEST);
            if pieces.peek().is_none() {
                // The chunk ends inside this piece: carry it (a NUL ends it in the next chunk).
                pending = joined;
                break;
            }
            if let Some(token) = joined {
                note(&token, found);
            }
            pending = Some(Vec::new());
        }
    }
    if let Some(token) = pending {
        note(&token, found);
    }
    Ok(())
}

/// The file ranges that hold the library's read-only data: `.rodata`, or without it the loadable
/// segments that are readable only (not writable, not executable). Each clipped to the file.
fn read_only_ranges(file: &File, size: u64) -> Result<Vec<(u64, u64)>, String> {
    let data = ReadCache::new(file);
    let data = &data;
    let header = FileHeader64::<Endianness>::parse(data).map_err(|e| e.to_string())?;
    let endian = header.endian().map_err(|e| e.to_string())?;
    let clip = |offset: u64, len: u64| (offset.min(size), len.min(size.saturating_sub(offset)));
    if let Ok(sections) = header.sections(endian, data) {
        if let Some((_, rodata)) = sections.section_by_name(endian, b".rodata") {
            if rodata.sh_type(endian) != elf::SHT_NOBITS {
                return Ok(vec![clip(rodata.sh_offset(endian), rodata.sh_size(endian))]);
            }
        }
    }
    let segments = header.program_headers(endian, data).map_err(|e| e.to_string())?;
    Ok(segments
        .iter()
        .filter(|s| s.p_type(endian) == elf::PT_LOAD && s.p_flags(endian) == elf::PF_R)
        .map(|s| clip(s.p_offset(endian), s.p_filesz(endian)))
        .collect())
}

/// The release strings (`1.N.N`, NUL-terminated) in the read-only data of the ELF library at
/// `path`, different ones in file order; empty when it embeds none.
///
/// # Errors
/// The file cannot be opened or read, or is not an ELF64 file whose headers can be parsed
/// (call [`super::elf::check_complete`] first for a message about what is wrong with it).
pub fn release_strings(path: &Path) -> Result<Vec<String>, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    let mut budget = MAX_SCANNED;
    let mut found = Vec::new();
    for (offset, len) in read_only_ranges(&file, size)? {
        let len = len.min(budget);
        scan_range(&file, offset, len, &mut found).map_err(|e| e.to_string())?;
        budget -= len;
    }
    Ok(found)
}

/// The provider library at `path` and the runtime it is loaded by come from different releases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherRelease {
    /// The provider library.
    pub path: PathBuf,
    /// The release it embeds.
    pub release: String,
    /// The loaded runtime's version.
    pub runtime: String,
}

/// Checks that the provider library at `path` was built for ONNX Runtime `runtime` (the loaded
/// runtime's version, `1.30.0`). A library that embeds no release string, or that cannot be
/// read, passes: there is nothing to judge by (the closure check names a file it cannot read).
///
/// # Errors
/// [`OtherRelease`] when the library names exactly one release and it is not `runtime`.
pub fn check(path: &Path, runtime: &str) -> Result<Option<String>, OtherRelease> {
    let found = release_strings(path).unwrap_or_default();
    match compare(&found, runtime) {
        Verdict::Same => Ok(Some(runtime.to_owned())),
        Verdict::Unknown => Ok(None),
        Verdict::Other(release) => Err(OtherRelease { path: path.to_path_buf(), release, runtime: runtime.to_owned() }),
    }
}

/// [`check`], remembered per path for the life of the process once it passed (a failure is
/// checked again next time: the user may have replaced the file).
///
/// # Errors
/// As [`check`].
pub fn check_once(path: &Path, runtime: &str) -> Result<(), OtherRelease> {
    static PASSED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let passed = |list: &Vec<PathBuf>| list.iter().any(|p| p == path);
    if PASSED.lock().map(|l| passed(&l)).unwrap_or(false) {
        return Ok(());
    }
    check(path, runtime)?;
    if let Ok(mut list) = PASSED.lock() {
        list.push(path.to_path_buf());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain file of `bytes` (the scanner reads any range of any file).
    fn scan_bytes(bytes: &[u8]) -> Vec<String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("data");
        std::fs::write(&path, bytes).expect("write");
        let file = File::open(&path).expect("open");
        let mut found = Vec::new();
        scan_range(&file, 0, bytes.len() as u64, &mut found).expect("scan");
        found
    }

    #[test]
    fn only_whole_nul_bounded_release_strings_count() {
        assert_eq!(scan_bytes(b"Run\x001.31.1\x00Failed to get"), vec!["1.31.1"]);
        assert_eq!(scan_bytes(b"1.30.0\x00at the start"), vec!["1.30.0"]);
        assert_eq!(scan_bytes(b"at the end\x001.30.0"), vec!["1.30.0"]);
        // Inside longer strings, or not of the form 1.N.N: not a release.
        assert!(scan_bytes(b"x\x00v1.30.0\x00 1.30.0\x001.30.0a\x001..6\x002.0.1\x001.3000.0\x001.30\x00").is_empty());
        assert!(scan_bytes(b"no version here\x00\x00").is_empty());
        assert_eq!(scan_bytes(b"\x001.3.2\x00\x001.30.0\x001.3.2\x00"), vec!["1.3.2", "1.30.0"]);
    }

    #[test]
    fn a_release_string_cut_by_a_chunk_boundary_is_found() {
        for cut in 0..=8 {
            let mut bytes = vec![b'x'; CHUNK - cut - 1];
            bytes.extend_from_slice(b"\x001.29.0\x00");
            bytes.extend(std::iter::repeat_n(b'y', 100));
            assert_eq!(scan_bytes(&bytes), vec!["1.29.0"], "cut {cut}");
        }
        // A long run without NUL across the boundary whose tail looks like a release: not one.
        let mut bytes = vec![b'x'; CHUNK - 3];
        bytes.extend_from_slice(b"1.29.0\x00");
        assert!(scan_bytes(&bytes).is_empty());
    }

    #[test]
    fn the_verdict_needs_exactly_one_release_or_the_runtimes_own() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(compare(&s(&["1.30.0"]), "1.30.0"), Verdict::Same);
        assert_eq!(compare(&s(&["1.3.2", "1.30.0"]), "1.30.0"), Verdict::Same);
        assert_eq!(compare(&s(&["1.31.1"]), "1.30.0"), Verdict::Other("1.31.1".into()));
        assert_eq!(compare(&s(&[]), "1.30.0"), Verdict::Unknown);
        assert_eq!(compare(&s(&["1.3.2", "1.31.1"]), "1.30.0"), Verdict::Unknown);
    }

    /// A copy of this test binary (an ELF file) with its `.rodata` zeroed and `text` written in it.
    fn library_with_rodata(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
        let exe = std::env::current_exe().expect("exe");
        let mut bytes = std::fs::read(&exe).expect("read");
        let file = File::open(&exe).expect("open");
        let ranges = read_only_ranges(&file, bytes.len() as u64).expect("ranges");
        let (offset, len) = ranges[0];
        let (offset, len) = (offset as usize, len as usize);
        assert!(len > text.len() + 64, "{ranges:?}");
        bytes[offset..offset + len].fill(0);
        bytes[offset + 32..offset + 32 + text.len()].copy_from_slice(text);
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    #[test]
    fn a_library_of_another_release_is_told_apart_from_one_of_the_same_or_of_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let same = library_with_rodata(dir.path(), "same.so", b"Run\x001.30.0\x00Failed");
        let other = library_with_rodata(dir.path(), "other.so", b"Run\x001.29.0\x00Failed");
        let none = library_with_rodata(dir.path(), "none.so", b"Run\x00no release\x00Failed");
        assert_eq!(check(&same, "1.30.0"), Ok(Some("1.30.0".into())));
        assert_eq!(
            check(&other, "1.30.0"),
            Err(OtherRelease { path: other.clone(), release: "1.29.0".into(), runtime: "1.30.0".into() })
        );
        assert_eq!(check(&none, "1.30.0"), Ok(None));
        // Odd files are not judged, and nothing panics.
        let text = dir.path().join("text.so");
        std::fs::write(&text, b"INPUT(-lfoo)\n").expect("write");
        assert_eq!(check(&text, "1.30.0"), Ok(None));
        assert_eq!(check(&dir.path().join("absent.so"), "1.30.0"), Ok(None));
        assert_eq!(check(Path::new("/dev/null"), "1.30.0"), Ok(None));
        let mut cut = std::fs::read(&other).expect("read");
        cut.truncate(4096);
        std::fs::write(&other, cut).expect("write");
        assert_eq!(check(&other, "1.30.0"), Ok(None));
    }
}
