//! Triton's system shared-memory extension: a client puts tensors in a POSIX shared-memory object
//! (`/dev/shm/KEY`), registers part of it as a named region, and names the region, an offset and
//! a byte count in an input or output instead of sending the bytes.
//!
//! The server reads and writes the region's file at offsets (`pread`/`pwrite`, the same page
//! cache the client has mapped), so no `unsafe` mapping is needed: one copy in, one out, as a
//! tensor needs anyway. Every offset and size is checked against the region as registered and
//! the file as it is now: a request outside its region is refused (400), never a read of other
//! bytes. Keys name files directly in `/dev/shm` (no `/`, no `..`, no symbolic link).

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

/// `O_NOFOLLOW` on Linux: a symbolic link in `/dev/shm` is not followed to another file.
const O_NOFOLLOW: i32 = 0o400000;
/// Regions registered at once at most: each holds an open file.
const MAX_REGIONS: usize = 1024;

/// Why a shared-memory request was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RegionError {
    /// A bad key, offset or size, or a region registered twice (400).
    #[error("{0}")]
    Invalid(String),
    /// No region of that name (404 for status; 400 in an inference request).
    #[error("{0}")]
    Unknown(String),
}

/// One registered region: `byte_size` bytes of `/dev/shm/KEY` from `offset`.
#[derive(Debug)]
struct Region {
    key: String,
    offset: u64,
    byte_size: u64,
    file: File,
}

/// A region as its status answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionStatus {
    /// The region's name.
    pub name: String,
    /// The shared-memory object's key.
    pub key: String,
    /// Where the region starts in the object.
    pub offset: u64,
    /// How long it is.
    pub byte_size: u64,
}

pub use crate::oip::parameters::Place;

/// The outputs a request asks to have written into regions, by name.
pub type OutputPlaces = std::collections::HashMap<String, Place>;

/// The registered regions, by name.
#[derive(Debug, Default)]
pub struct Regions {
    regions: Mutex<BTreeMap<String, Region>>,
}

impl Regions {
    /// Registers `byte_size` bytes of `/dev/shm/KEY` from `offset` as region `name`.
    pub fn register(&self, name: &str, key: &str, offset: u64, byte_size: u64) -> Result<(), RegionError> {
        let invalid = |why: String| RegionError::Invalid(format!("shared-memory region `{name}`: {why}"));
        if name.is_empty() {
            return Err(RegionError::Invalid("a shared-memory region needs a name".into()));
        }
        let file_name = key.strip_prefix('/').unwrap_or(key);
        if file_name.is_empty() || file_name == "." || file_name == ".." || file_name.contains(['/', '\0']) {
            return Err(invalid(format!(
                "key {key:?} is not a shared-memory object's name (as shm_open takes it: `/name`)"
            )));
        }
        let mut regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        if regions.contains_key(name) {
            return Err(invalid("is already registered; unregister it first".into()));
        }
        if regions.len() >= MAX_REGIONS {
            return Err(invalid(format!("{MAX_REGIONS} regions are registered already; unregister some")));
        }
        let path = Path::new("/dev/shm").join(file_name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(O_NOFOLLOW)
            .open(&path)
            .map_err(|e| invalid(format!("cannot open {}: {e}", path.display())))?;
        let length = file.metadata().map_err(|e| invalid(e.to_string()))?;
        if !length.is_file() {
            return Err(invalid(format!("{} is not a shared-memory object", path.display())));
        }
        if byte_size == 0 {
            return Err(invalid("byte_size must be more than 0".into()));
        }
        let end = offset.checked_add(byte_size).ok_or_else(|| invalid("offset + byte_size overflows".into()))?;
        if end > length.len() {
            return Err(invalid(format!(
                "offset {offset} + byte_size {byte_size} does not lie within the object's {} bytes",
                length.len()
            )));
        }
        regions.insert(name.to_owned(), Region { key: key.to_owned(), offset, byte_size, file });
        Ok(())
    }

    /// Unregisters region `name`, or every region (`None`). An unknown name is no error.
    pub fn unregister(&self, name: Option<&str>) {
        let mut regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        match name {
            Some(name) => drop(regions.remove(name)),
            None => regions.clear(),
        }
    }

    /// The status of region `name`, or of every region (`None`).
    pub fn status(&self, name: Option<&str>) -> Result<Vec<RegionStatus>, RegionError> {
        let regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        let status = |(name, r): (&String, &Region)| RegionStatus {
            name: name.clone(),
            key: r.key.clone(),
            offset: r.offset,
            byte_size: r.byte_size,
        };
        match name {
            None => Ok(regions.iter().map(status).collect()),
            Some(name) => match regions.get_key_value(name) {
                Some(found) => Ok(vec![status(found)]),
                None => Err(RegionError::Unknown(format!("no shared-memory region `{name}` is registered"))),
            },
        }
    }

    /// The `place.byte_size` bytes at `place`, for tensor `tensor`; at most `limit` bytes.
    pub fn read(&self, tensor: &str, place: &Place, limit: usize) -> Result<Vec<u8>, RegionError> {
        let regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        let (region, at) = locate(&regions, tensor, place)?;
        let size = usize::try_from(place.byte_size).ok().filter(|&s| s <= limit).ok_or_else(|| {
            RegionError::Invalid(format!(
                "`{tensor}`: shared_memory_byte_size {} is over {limit} bytes",
                place.byte_size
            ))
        })?;
        let mut bytes = vec![0; size];
        region.file.read_exact_at(&mut bytes, at).map_err(|e| {
            RegionError::Invalid(format!("`{tensor}`: reading region `{}`: {e} (was the object shrunk?)", place.region))
        })?;
        Ok(bytes)
    }

    /// Checks, before a run, that output `tensor` can be written at `place`: its region is
    /// registered, the place lies within it and the object still holds it (as Triton checks
    /// output regions when it reads the request). Whether the output fits is known after the run.
    pub fn check(&self, tensor: &str, place: &Place) -> Result<(), RegionError> {
        let regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        let (region, at) = locate(&regions, tensor, place)?;
        fits_object(region, tensor, place, at.saturating_add(place.byte_size))
    }

    /// Writes `bytes` at `place` for output `tensor`: they must fit its `byte_size`.
    pub fn write(&self, tensor: &str, place: &Place, bytes: &[u8]) -> Result<(), RegionError> {
        if bytes.len() as u64 > place.byte_size {
            return Err(RegionError::Invalid(format!(
                "output `{tensor}` is {} bytes; shared_memory_byte_size gives it {}",
                bytes.len(),
                place.byte_size
            )));
        }
        let regions = self.regions.lock().unwrap_or_else(PoisonError::into_inner);
        let (region, at) = locate(&regions, tensor, place)?;
        fits_object(region, tensor, place, at.saturating_add(bytes.len() as u64))?;
        region
            .file
            .write_all_at(bytes, at)
            .map_err(|e| RegionError::Invalid(format!("`{tensor}`: writing region `{}`: {e}", place.region)))
    }
}

/// Whether `region`'s object still reaches `end`: it may have been shrunk since it was
/// registered, and writing past its end would grow it.
fn fits_object(region: &Region, tensor: &str, place: &Place, end: u64) -> Result<(), RegionError> {
    let length = region.file.metadata().map(|m| m.len()).unwrap_or(0);
    if end > length {
        return Err(RegionError::Invalid(format!("`{tensor}`: region `{}` is shorter than registered", place.region)));
    }
    Ok(())
}

/// The region of `place` and the file offset it starts at, once `place` is checked to lie
/// within the region.
fn locate<'a>(
    regions: &'a BTreeMap<String, Region>,
    tensor: &str,
    place: &Place,
) -> Result<(&'a Region, u64), RegionError> {
    let region = regions.get(&place.region).ok_or_else(|| {
        RegionError::Invalid(format!("`{tensor}`: no shared-memory region `{}` is registered", place.region))
    })?;
    let end = place.offset.checked_add(place.byte_size);
    if end.is_none_or(|end| end > region.byte_size) {
        return Err(RegionError::Invalid(format!(
            "`{tensor}`: shared_memory_offset {} + shared_memory_byte_size {} is outside region `{}` ({} bytes)",
            place.offset, place.byte_size, place.region, region.byte_size
        )));
    }
    Ok((region, region.offset + place.offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_outside_their_region_and_bad_keys_are_refused() {
        let key = format!("onnxrt-serve-unit-{}", std::process::id());
        let path = Path::new("/dev/shm").join(&key);
        std::fs::write(&path, (0u8..64).collect::<Vec<_>>()).expect("shm file");
        let regions = Regions::default();
        for bad in ["", "/", "..", "/../etc/passwd", "a/b"] {
            assert!(regions.register("r", bad, 0, 8).is_err(), "{bad:?}");
        }
        assert!(regions.register("r", &format!("/{key}"), 60, 8).is_err(), "past the object's end");
        assert!(regions.register("r", &format!("/{key}"), u64::MAX, 2).is_err(), "overflow");
        regions.register("r", &format!("/{key}"), 16, 16).expect("register");
        assert!(regions.register("r", &format!("/{key}"), 0, 8).is_err(), "twice");
        let place = |offset, byte_size| Place { region: "r".into(), byte_size, offset };
        assert_eq!(regions.read("x", &place(4, 4), 1 << 20).expect("read"), [20, 21, 22, 23]);
        for (offset, size) in [(0, 17), (16, 1), (u64::MAX, 2), (8, u64::MAX)] {
            assert!(regions.read("x", &place(offset, size), 1 << 20).is_err(), "{offset} {size}");
        }
        assert!(regions.read("x", &place(0, 16), 8).is_err(), "over the limit");
        assert!(regions.write("y", &place(0, 2), &[1, 2, 3]).is_err(), "larger than its place");
        regions.write("y", &place(14, 2), &[7, 9]).expect("write");
        assert_eq!(std::fs::read(&path).expect("read back")[30..32], [7, 9]);
        regions.unregister(Some("r"));
        assert!(regions.read("x", &place(0, 1), 8).is_err(), "unregistered");
        let _ = std::fs::remove_file(&path);
    }
}
