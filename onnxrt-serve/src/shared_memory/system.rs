//! A system shared-memory region: part of a POSIX shared-memory object (`/dev/shm/KEY`).
//!
//! The server reads and writes the object's file at offsets (`pread`/`pwrite`, the same page
//! cache the client has mapped), so no `unsafe` mapping is needed: one copy in, one out, as a
//! tensor needs anyway. Keys name files directly in `/dev/shm` (no `/`, no `..`, no symbolic link).

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use crate::shown::shown;

/// `O_NOFOLLOW` on Linux: a symbolic link in `/dev/shm` is not followed to another file.
const O_NOFOLLOW: i32 = 0o400000;

/// `byte_size` bytes of `/dev/shm/KEY` from `offset`, its file open.
#[derive(Debug)]
pub(super) struct SystemRegion {
    pub(super) key: String,
    pub(super) offset: u64,
    file: File,
}

impl SystemRegion {
    /// Opens `/dev/shm/KEY` and checks that `byte_size` bytes from `offset` lie within it; the
    /// error says why not, for the region's owner.
    pub(super) fn open(key: &str, offset: u64, byte_size: u64) -> Result<SystemRegion, String> {
        let file_name = key.strip_prefix('/').unwrap_or(key);
        if file_name.is_empty() || file_name == "." || file_name == ".." || file_name.contains(['/', '\0']) {
            return Err(format!(
                "key `{}` is not a shared-memory object's name (as shm_open takes it: `/name`)",
                shown(key)
            ));
        }
        let path = Path::new("/dev/shm").join(file_name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("cannot open /dev/shm/{}: {e}", shown(file_name)))?;
        let length = file.metadata().map_err(|e| e.to_string())?;
        if !length.is_file() {
            return Err(format!("/dev/shm/{} is not a shared-memory object", shown(file_name)));
        }
        let end = offset.checked_add(byte_size).ok_or("offset + byte_size overflows")?;
        if end > length.len() {
            return Err(format!(
                "offset {offset} + byte_size {byte_size} does not lie within the object's {} bytes",
                length.len()
            ));
        }
        Ok(SystemRegion { key: key.to_owned(), offset, file })
    }

    /// Fills `into` from `at` bytes into the region.
    pub(super) fn read(&self, at: u64, into: &mut [u8]) -> Result<(), String> {
        self.file.read_exact_at(into, self.offset + at).map_err(|e| format!("{e} (was the object shrunk?)"))
    }

    /// Whether the object still reaches `end` bytes into the region: it may have been shrunk
    /// since it was registered, and writing past its end would grow it.
    pub(super) fn reaches(&self, end: u64) -> bool {
        self.file.metadata().is_ok_and(|m| self.offset.saturating_add(end) <= m.len())
    }

    /// Writes `bytes` at `at` bytes into the region.
    pub(super) fn write(&self, at: u64, bytes: &[u8]) -> Result<(), String> {
        if !self.reaches(at.saturating_add(bytes.len() as u64)) {
            return Err("the object is shorter than registered".into());
        }
        self.file.write_all_at(bytes, self.offset + at).map_err(|e| e.to_string())
    }
}
