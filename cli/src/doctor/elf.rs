//! The dynamic section of a shared library (`NEEDED`, `SONAME`, `RPATH`, `RUNPATH`), read with the
//! `object` crate's ELF parser through a [`ReadCache`], which reads only the ranges asked for: a
//! 270 MB provider library costs a few small reads, and no `readelf` is needed (many servers lack it).
//!
//! The dynamic section is found the way the dynamic loader finds it, through the `PT_DYNAMIC`
//! program header; its string table (`DT_STRTAB`, a virtual address) is mapped back to a file
//! offset through the `PT_LOAD` segments. Files without program headers fall back to the
//! section headers (`SHT_DYNAMIC` and the string table it links to).

use std::fs::File;
use std::path::Path;

use object::elf::{self, FileHeader64};
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use object::{Endianness, ReadCache, ReadRef, StringTable};

/// `EM_X86_64`.
pub const MACHINE_X86_64: u16 = 62;

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
    /// Opening the file failed (permission denied is the common case).
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

/// `object`'s error, as a damaged-file message.
fn damaged(error: object::Error) -> ElfError {
    bad(format!("damaged or truncated ELF file ({error})"))
}

type Data<'a> = &'a ReadCache<File>;
type Tables<'a> = (&'a [elf::Dyn64<Endianness>], StringTable<'a, Data<'a>>);

/// Reads the dynamic section of the ELF file at `path`.
///
/// # Errors
/// [`ElfError::Io`] if the file cannot be opened; [`ElfError::Format`] if it is not an ELF64
/// little-endian file with a dynamic section, or is cut short.
pub fn read_dynamic(path: &Path) -> Result<Dynamic, ElfError> {
    let data = ReadCache::new(File::open(path).map_err(ElfError::Io)?);
    let data = &data;
    let ident = data.read_bytes_at(0, 16).map_err(|()| bad("too short to be an ELF file"))?;
    if &ident[..4] != b"\x7fELF" {
        return Err(bad("not an ELF file"));
    }
    if ident[4] != elf::ELFCLASS64.0 || ident[5] != elf::ELFDATA2LSB.0 {
        return Err(bad("not a 64-bit little-endian ELF file (built for another architecture)"));
    }
    let header = FileHeader64::<Endianness>::parse(data).map_err(damaged)?;
    let endian = header.endian().map_err(damaged)?;
    let (dynamic, strings) = match from_segments(header, endian, data)? {
        Some(tables) => tables,
        None => from_sections(header, endian, data)?,
    };
    let mut out = Dynamic { machine: header.e_machine(endian).0, ..Dynamic::default() };
    for entry in dynamic {
        let tag = entry.tag(endian);
        if tag == elf::DT_NULL {
            break;
        }
        if !entry.is_string(endian) {
            continue;
        }
        let text = entry.string(endian, strings).map_err(|_| bad("a string offset is outside the string table"))?;
        let text = String::from_utf8_lossy(text).into_owned();
        let folders = || text.split(':').filter(|s| !s.is_empty()).map(str::to_owned).collect::<Vec<_>>();
        match tag {
            elf::DT_NEEDED => out.needed.push(text.clone()),
            elf::DT_SONAME => out.soname = Some(text.clone()),
            elf::DT_RPATH => out.rpath.extend(folders()),
            elf::DT_RUNPATH => out.runpath.extend(folders()),
            _ => {}
        }
    }
    Ok(out)
}

/// The dynamic table and its strings through the program headers, as the loader reads them.
fn from_segments<'a>(
    header: &FileHeader64<Endianness>,
    endian: Endianness,
    data: Data<'a>,
) -> Result<Option<Tables<'a>>, ElfError> {
    let segments = header.program_headers(endian, data).map_err(damaged)?;
    let mut dynamic = None;
    for segment in segments {
        if let Some(table) = segment.dynamic(endian, data).map_err(damaged)? {
            dynamic = Some(table);
            break;
        }
    }
    let Some(dynamic) = dynamic else { return Ok(None) };
    let mut address = None;
    let mut size = None;
    for entry in dynamic.iter().take_while(|e| e.tag(endian) != elf::DT_NULL) {
        match entry.tag(endian) {
            elf::DT_STRTAB => address = Some(entry.val(endian)),
            elf::DT_STRSZ => size = Some(entry.val(endian)),
            _ => {}
        }
    }
    let (Some(address), Some(size)) = (address, size) else {
        return Err(bad("the dynamic section has no string table"));
    };
    // Virtual address → file offset, through the loadable segment that holds it.
    let offset = segments
        .iter()
        .filter(|s| s.p_type(endian) == elf::PT_LOAD)
        .find(|s| address >= s.p_vaddr(endian) && address - s.p_vaddr(endian) < s.p_filesz(endian))
        .map(|s| address - s.p_vaddr(endian) + s.p_offset(endian))
        .ok_or_else(|| bad("the string table is outside every loadable segment"))?;
    let end = offset.checked_add(size).ok_or_else(|| bad("the string table's size overflows"))?;
    Ok(Some((dynamic, StringTable::new(data, offset, end))))
}

/// The dynamic table and its strings through the section headers.
fn from_sections<'a>(
    header: &FileHeader64<Endianness>,
    endian: Endianness,
    data: Data<'a>,
) -> Result<Tables<'a>, ElfError> {
    let sections = header.sections(endian, data).map_err(damaged)?;
    let Some((dynamic, link)) = sections.dynamic(endian, data).map_err(damaged)? else {
        return Err(bad("no dynamic section (a static executable, or not a shared library)"));
    };
    let strings =
        sections.strings(endian, data, link).map_err(|_| bad("the dynamic section links to no string table"))?;
    Ok((dynamic, strings))
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
