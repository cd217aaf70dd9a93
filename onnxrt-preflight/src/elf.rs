//! The dynamic section of a shared library (`NEEDED`, `SONAME`, `RPATH`, `RUNPATH`), read with the
//! `object` crate's ELF parser through a [`ReadCache`], which reads only the ranges asked for: a
//! 270 MB provider library costs a few small reads, and no `readelf` is needed (many servers lack it).
//!
//! Before anything else the file is checked as a complete, loadable library for this machine: a
//! regular file, ELF64 little-endian x86-64 `ET_DYN`, its program and section header tables and
//! every `PT_LOAD` segment inside the file. The loader maps segments without checking their
//! length, so a truncated copy passes `dlopen`'s first reads and then dies of SIGBUS when a page
//! past the end is touched: the doctor never loads a file that fails this check.
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

/// What a file that is not a regular file is, in words.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_dir() {
        "a folder"
    } else if kind.is_char_device() {
        "a character device (a library hidden with `mount --bind /dev/null` reads as empty: \"file too short\")"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// `e_machine` in words, for the common foreign ones.
fn machine_name(machine: u16) -> String {
    let name = match machine {
        3 => "x86 (32-bit)",
        40 => "ARM (32-bit)",
        183 => "AArch64",
        243 => "RISC-V",
        21 => "PowerPC64",
        _ => "another architecture",
    };
    format!("ELF machine {machine}, {name}")
}

/// Checks that the file at `path` is a complete shared library this machine's loader can map:
/// the header, the program and section header tables, and every loadable segment lie inside
/// the file, and it is ELF64 little-endian x86-64. Reads only the headers. Returns the size.
///
/// # Errors
/// [`ElfError::Io`] if the file cannot be opened; [`ElfError::Format`] naming what is wrong.
pub fn check_complete(path: &Path) -> Result<u64, ElfError> {
    let meta = std::fs::metadata(path).map_err(ElfError::Io)?;
    if !meta.is_file() {
        return Err(bad(format!("is {}, not a library file", kind_of(&meta))));
    }
    let data = ReadCache::new(File::open(path).map_err(ElfError::Io)?);
    let data = &data;
    let size = meta.len();
    let ident = data.read_bytes_at(0, 16).map_err(|()| {
        bad(format!("file too short: {size} bytes, less than an ELF identification (truncated or emptied)"))
    })?;
    if &ident[..4] != b"\x7fELF" {
        return Err(bad("not an ELF file (a text file, a linker script, or damaged)"));
    }
    if ident[4] != elf::ELFCLASS64.0 || ident[5] != elf::ELFDATA2LSB.0 {
        return Err(bad("not a 64-bit little-endian ELF file (built for another architecture)"));
    }
    let header = FileHeader64::<Endianness>::parse(data)
        .map_err(|_| bad(format!("truncated: {size} bytes, less than the 64-byte ELF header")))?;
    let endian = header.endian().map_err(damaged)?;
    let machine = header.e_machine(endian).0;
    if machine != MACHINE_X86_64 {
        return Err(bad(format!("built for {}, not x86-64", machine_name(machine))));
    }
    if header.e_type(endian) != elf::ET_DYN {
        return Err(bad(format!("ELF type {} is not a shared library (ET_DYN)", header.e_type(endian).0)));
    }
    let cut = |what: &str, end: u64| {
        bad(format!(
            "truncated: the file is {size} bytes but its {what} ends at byte {end} (a partial copy or download; the loader would die of SIGBUS mapping it)"
        ))
    };
    let table_end = |offset: u64, count: u64, entry: u64| offset.saturating_add(count.saturating_mul(entry));
    let ph_end = table_end(header.e_phoff(endian), header.e_phnum(endian).into(), header.e_phentsize(endian).into());
    if header.e_phnum(endian) == 0 {
        return Err(bad("no program headers: the loader has nothing to map"));
    }
    if ph_end > size {
        return Err(cut("program header table", ph_end));
    }
    // The segments first: they are what the loader maps (and dies on).
    let segments = header.program_headers(endian, data).map_err(damaged)?;
    for (i, segment) in segments.iter().enumerate() {
        if segment.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let end = segment.p_offset(endian).saturating_add(segment.p_filesz(endian));
        if end > size {
            return Err(cut(&format!("loadable segment (program header {i})"), end));
        }
    }
    let shoff = header.e_shoff(endian);
    if shoff != 0 {
        let count = u64::from(header.e_shnum(endian)).max(1);
        let sh_end = table_end(shoff, count, header.e_shentsize(endian).into());
        if sh_end > size {
            return Err(cut("section header table", sh_end));
        }
    }
    Ok(size)
}

/// Reads the dynamic section of the ELF file at `path`, after [`check_complete`].
///
/// # Errors
/// [`ElfError::Io`] if the file cannot be opened; [`ElfError::Format`] if it is not a complete
/// ELF64 little-endian x86-64 shared library with a dynamic section.
pub fn read_dynamic(path: &Path) -> Result<Dynamic, ElfError> {
    check_complete(path)?;
    let data = ReadCache::new(File::open(path).map_err(ElfError::Io)?);
    let data = &data;
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

    #[test]
    fn a_copy_cut_short_or_built_for_another_machine_is_not_complete() {
        let dir = tempfile::tempdir().expect("tempdir");
        let whole = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        let complete = dir.path().join("whole.so");
        std::fs::write(&complete, &whole).expect("write");
        assert_eq!(check_complete(&complete).expect("complete"), whole.len() as u64);
        // Headers intact, the end gone: what a full disk or an interrupted copy leaves.
        let half = dir.path().join("half.so");
        std::fs::write(&half, &whole[..whole.len() / 2]).expect("write");
        let why = check_complete(&half).expect_err("truncated").to_string();
        assert!(why.contains("truncated"), "{why}");
        // Cut inside the first loadable segment (this binary's code is far larger than 100 kB).
        std::fs::write(&half, &whole[..100_000]).expect("write");
        let why = check_complete(&half).expect_err("truncated").to_string();
        assert!(why.contains("truncated") && why.contains("loadable segment"), "{why}");
        let mut arm = whole.clone();
        arm[18..20].copy_from_slice(&183u16.to_le_bytes());
        let foreign = dir.path().join("arm.so");
        std::fs::write(&foreign, arm).expect("write");
        let why = check_complete(&foreign).expect_err("foreign").to_string();
        assert!(why.contains("AArch64"), "{why}");
        let empty = dir.path().join("empty.so");
        std::fs::write(&empty, b"").expect("write");
        assert!(check_complete(&empty).expect_err("empty").to_string().contains("file too short"));
        let device = check_complete(Path::new("/dev/null")).expect_err("a device").to_string();
        assert!(device.contains("character device"), "{device}");
    }
}
