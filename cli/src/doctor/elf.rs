//! A small ELF64 reader: the dynamic section of a shared library (`NEEDED`, `SONAME`, `RPATH`,
//! `RUNPATH`), read with a few seeks so that a 270 MB provider library costs nothing, and without
//! `readelf`, which many servers lack.
//!
//! The dynamic section is found the way the dynamic loader finds it, through the `PT_DYNAMIC`
//! program header; its string table (`DT_STRTAB`, a virtual address) is mapped back to a file
//! offset through the `PT_LOAD` segments. Files without program headers fall back to the
//! section headers (`SHT_DYNAMIC` and the string table it links to).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const SHT_DYNAMIC: u32 = 6;
const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_STRSZ: u64 = 10;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;
/// `EM_X86_64`.
pub const MACHINE_X86_64: u16 = 62;
/// Largest dynamic section or string table read (far above any real library's).
const MAX_TABLE: u64 = 16 * 1024 * 1024;

/// What the dynamic loader reads from a shared library.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    /// `e_machine` (62 = x86-64).
    pub machine: u16,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `DT_SONAME`.
    pub soname: Option<String>,
    /// `DT_RPATH` folders (searched before `LD_LIBRARY_PATH`, and only when there is no RUNPATH).
    pub rpath: Vec<String>,
    /// `DT_RUNPATH` folders (searched after `LD_LIBRARY_PATH`).
    pub runpath: Vec<String>,
}

/// Why a file's dynamic section could not be read.
#[derive(Debug)]
pub enum ElfError {
    /// Opening or reading failed (permission denied is the common case).
    Io(std::io::Error),
    /// Not an ELF64 little-endian shared object, or damaged.
    Format(String),
}

impl std::fmt::Display for ElfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ElfError::Io(e) => write!(f, "{e}"),
            ElfError::Format(why) => f.write_str(why),
        }
    }
}

fn bad(why: impl Into<String>) -> ElfError {
    ElfError::Format(why.into())
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn read_at(file: &mut File, offset: u64, len: u64) -> Result<Vec<u8>, ElfError> {
    if len > MAX_TABLE {
        return Err(bad(format!("a table of {len} bytes is implausibly large (damaged file?)")));
    }
    file.seek(SeekFrom::Start(offset)).map_err(ElfError::Io)?;
    let mut buf = vec![0u8; len as usize];
    file.read_exact(&mut buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => bad("the file ends inside a table it declares (truncated?)"),
        _ => ElfError::Io(e),
    })?;
    Ok(buf)
}

/// Reads the dynamic section of the ELF file at `path`.
///
/// # Errors
/// [`ElfError::Io`] if the file cannot be opened or read; [`ElfError::Format`] if it is not an
/// ELF64 little-endian file with a dynamic section.
pub fn read_dynamic(path: &Path) -> Result<Dynamic, ElfError> {
    let mut file = File::open(path).map_err(ElfError::Io)?;
    let header = read_at(&mut file, 0, 64).map_err(|e| match e {
        ElfError::Format(_) => bad("too short to be an ELF file"),
        other => other,
    })?;
    if &header[..4] != b"\x7fELF" {
        return Err(bad("not an ELF file"));
    }
    if header[4] != 2 || header[5] != 1 {
        return Err(bad("not a 64-bit little-endian ELF file (built for another architecture)"));
    }
    let machine = u16_at(&header, 18);
    let (phoff, phentsize, phnum) =
        (u64_at(&header, 32), u64::from(u16_at(&header, 54)), u64::from(u16_at(&header, 56)));
    let (shoff, shentsize, shnum) =
        (u64_at(&header, 40), u64::from(u16_at(&header, 58)), u64::from(u16_at(&header, 60)));
    let from_segments =
        if phnum > 0 && phentsize >= 56 { from_program_headers(&mut file, phoff, phentsize, phnum)? } else { None };
    let (dynamic, strtab) = match from_segments {
        Some(tables) => tables,
        None => from_section_headers(&mut file, shoff, shentsize, shnum)?,
    };
    let mut out = Dynamic { machine, ..Dynamic::default() };
    let string = |offset: u64| -> Result<String, ElfError> {
        let start = usize::try_from(offset)
            .ok()
            .filter(|&s| s < strtab.len())
            .ok_or_else(|| bad("a string offset is outside the string table"))?;
        let end = strtab[start..].iter().position(|&b| b == 0).map_or(strtab.len(), |p| start + p);
        Ok(String::from_utf8_lossy(&strtab[start..end]).into_owned())
    };
    for entry in dynamic.chunks_exact(16) {
        let (tag, value) = (u64_at(entry, 0), u64_at(entry, 8));
        match tag {
            DT_NULL => break,
            DT_NEEDED => out.needed.push(string(value)?),
            DT_SONAME => out.soname = Some(string(value)?),
            DT_RPATH => out.rpath.extend(string(value)?.split(':').filter(|s| !s.is_empty()).map(str::to_owned)),
            DT_RUNPATH => out.runpath.extend(string(value)?.split(':').filter(|s| !s.is_empty()).map(str::to_owned)),
            _ => {}
        }
    }
    Ok(out)
}

type Tables = (Vec<u8>, Vec<u8>);

fn from_program_headers(file: &mut File, off: u64, entsize: u64, num: u64) -> Result<Option<Tables>, ElfError> {
    let table = read_at(file, off, entsize * num)?;
    let headers: Vec<&[u8]> = table.chunks_exact(entsize as usize).collect();
    let Some(dynamic) = headers.iter().find(|h| u32_at(h, 0) == PT_DYNAMIC) else { return Ok(None) };
    let dynamic = read_at(file, u64_at(dynamic, 8), u64_at(dynamic, 32))?;
    let mut strtab_addr = None;
    let mut strsz = None;
    for entry in dynamic.chunks_exact(16) {
        match u64_at(entry, 0) {
            DT_NULL => break,
            DT_STRTAB => strtab_addr = Some(u64_at(entry, 8)),
            DT_STRSZ => strsz = Some(u64_at(entry, 8)),
            _ => {}
        }
    }
    let (Some(addr), Some(size)) = (strtab_addr, strsz) else {
        return Err(bad("the dynamic section has no string table"));
    };
    // Virtual address → file offset, through the loadable segment that holds it.
    let offset = headers
        .iter()
        .filter(|h| u32_at(h, 0) == PT_LOAD)
        .find(|h| addr >= u64_at(h, 16) && addr - u64_at(h, 16) < u64_at(h, 32))
        .map(|h| addr - u64_at(h, 16) + u64_at(h, 8))
        .ok_or_else(|| bad("the string table is outside every loadable segment"))?;
    Ok(Some((dynamic, read_at(file, offset, size)?)))
}

fn from_section_headers(file: &mut File, off: u64, entsize: u64, num: u64) -> Result<Tables, ElfError> {
    if num == 0 || entsize < 64 {
        return Err(bad("no dynamic section (a static executable, or not a shared library)"));
    }
    let table = read_at(file, off, entsize * num)?;
    let sections: Vec<&[u8]> = table.chunks_exact(entsize as usize).collect();
    let dynamic = sections
        .iter()
        .find(|s| u32_at(s, 4) == SHT_DYNAMIC)
        .ok_or_else(|| bad("no dynamic section (a static executable, or not a shared library)"))?;
    let link = u32_at(dynamic, 40) as usize;
    let strings = sections.get(link).ok_or_else(|| bad("the dynamic section links to no string table"))?;
    let dynamic_bytes = read_at(file, u64_at(dynamic, 24), u64_at(dynamic, 32))?;
    let string_bytes = read_at(file, u64_at(strings, 24), u64_at(strings, 32))?;
    Ok((dynamic_bytes, string_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_executable_needs_libc() {
        // The test binary is itself a dynamically linked ELF64 x86-64 file.
        let exe = std::env::current_exe().expect("current exe");
        let dynamic = read_dynamic(&exe).expect("reads");
        assert_eq!(dynamic.machine, MACHINE_X86_64);
        assert!(dynamic.needed.iter().any(|n| n.starts_with("libc.so")), "{dynamic:?}");
    }

    #[test]
    fn non_elf_files_are_format_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = dir.path().join("libfake.so");
        std::fs::write(&text, b"INPUT(-lfoo)\n").expect("write");
        assert!(matches!(read_dynamic(&text), Err(ElfError::Format(_))));
        let missing = dir.path().join("nope.so");
        assert!(matches!(read_dynamic(&missing), Err(ElfError::Io(_))));
        let mut truncated = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        truncated.truncate(200);
        let cut = dir.path().join("cut.so");
        std::fs::write(&cut, truncated).expect("write");
        assert!(read_dynamic(&cut).is_err());
    }
}
