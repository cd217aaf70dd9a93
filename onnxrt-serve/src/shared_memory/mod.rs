//! Triton's shared-memory extensions: a client puts tensors in shared memory, registers part of
//! it as a named region, and names the region, an offset and a byte count in an input or output
//! instead of sending the bytes. Two kinds share one set of names, as in Triton:
//! - system regions, parts of POSIX shared-memory objects (module `system`);
//! - CUDA regions, device allocations of the client's named by CUDA IPC handles (module `cuda`).
//!
//! Every offset and size is checked against the region as registered (and a system region's
//! object as it is now): a request outside its region is refused (400), never a read of other
//! bytes. A region in use by a request stays open until that request is done with it, even if
//! it is unregistered meanwhile.

mod cuda;
mod system;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::shown::shown;
use cuda::CudaRegion;
use system::SystemRegion;

/// Regions registered at once at most: each holds an open file or a device mapping. Fewer where
/// the process may open few files ([`max_regions`]).
const MAX_REGIONS: usize = 1024;

/// The regions this process lets clients register: [`MAX_REGIONS`], or a quarter of its
/// open-file limit if that is less, so that regions never take the files its connections,
/// models and worker processes need (a limit of 1024 is common; regions took it all before).
fn max_regions() -> usize {
    static MOST: OnceLock<usize> = OnceLock::new();
    *MOST.get_or_init(|| {
        // "Max open files            1024                 524288               files"
        let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        let soft = limits
            .lines()
            .find(|line| line.starts_with("Max open files"))
            .and_then(|line| line.split_whitespace().nth(3))
            .and_then(|soft| soft.parse::<usize>().ok());
        soft.map_or(MAX_REGIONS, |soft| MAX_REGIONS.min(soft / 4).max(1))
    })
}
/// A region name's most bytes: names travel in every status answer and in refusals (a gRPC
/// client refuses error texts over 16 KiB and answers over 4 MiB).
const MAX_NAME_BYTES: usize = 256;

/// Why a shared-memory request was refused.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RegionError {
    /// A bad key, handle, offset or size, or a region registered twice (400).
    #[error("{0}")]
    Invalid(String),
    /// No region of that name (404 for status; 400 in an inference request).
    #[error("{0}")]
    Unknown(String),
}

/// Which extension a region belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `/v2/systemsharedmemory`, `SystemSharedMemory*`.
    System,
    /// `/v2/cudasharedmemory`, `CudaSharedMemory*`.
    Cuda,
}

impl Kind {
    fn words(self) -> &'static str {
        match self {
            Kind::System => "system shared-memory",
            Kind::Cuda => "CUDA shared-memory",
        }
    }

    fn unregister_call(self) -> &'static str {
        match self {
            Kind::System => "REST /v2/systemsharedmemory/region/NAME/unregister, gRPC SystemSharedMemoryUnregister",
            Kind::Cuda => "REST /v2/cudasharedmemory/region/NAME/unregister, gRPC CudaSharedMemoryUnregister",
        }
    }
}

/// One registered region: `byte_size` bytes of its memory.
#[derive(Debug)]
struct Region {
    byte_size: u64,
    memory: Memory,
}

#[derive(Debug)]
enum Memory {
    System(SystemRegion),
    Cuda(CudaRegion),
}

impl Region {
    fn kind(&self) -> Kind {
        match self.memory {
            Memory::System(_) => Kind::System,
            Memory::Cuda(_) => Kind::Cuda,
        }
    }
}

/// A region as its status answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionStatus {
    /// The region's name.
    pub name: String,
    /// How long it is.
    pub byte_size: u64,
    /// Where it lies.
    pub memory: RegionMemory,
}

/// Where a region lies, as its status answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionMemory {
    /// In a shared-memory object, from an offset.
    System {
        /// The object's key.
        key: String,
        /// Where the region starts in the object.
        offset: u64,
    },
    /// On a CUDA device.
    Cuda {
        /// The device's id.
        device_id: i64,
    },
}

pub use crate::oip::parameters::Place;

/// The protocol extensions `regions`' server answers: the CUDA shared-memory one only where it
/// is on and CUDA sees a device (a client that finds it listed uses it).
pub fn extensions(regions: &Regions) -> Vec<&'static str> {
    let cuda = regions.cuda_available();
    crate::oip::messages::EXTENSIONS.iter().copied().filter(|&e| cuda || e != "cuda_shared_memory").collect()
}

/// The outputs a request asks to have written into regions, by name.
pub type OutputPlaces = std::collections::HashMap<String, OutputPlace>;

/// An output's place, checked before the run, with the region it was checked against: the
/// output is written there even if the name is unregistered or registered anew meanwhile (never
/// into memory registered after the request was read).
#[derive(Debug)]
pub struct OutputPlace {
    place: Place,
    region: Arc<Region>,
}

impl OutputPlace {
    /// The region's name, as the request gave it.
    pub fn region_name(&self) -> &str {
        &self.place.region
    }

    /// Writes output `tensor`'s `bytes` at the place: they must fit its `byte_size`.
    pub fn write(&self, tensor: &str, bytes: &[u8]) -> Result<(), RegionError> {
        let place = &self.place;
        if bytes.len() as u64 > place.byte_size {
            return Err(RegionError::Invalid(format!(
                "output `{tensor}` is {} bytes; shared_memory_byte_size gives it {}",
                bytes.len(),
                place.byte_size
            )));
        }
        let written = match &self.region.memory {
            Memory::System(s) => s.write(place.offset, bytes),
            Memory::Cuda(c) => c.write(place.offset, bytes),
        };
        written.map_err(|e| RegionError::Invalid(format!("`{tensor}`: writing region `{}`: {e}", shown(&place.region))))
    }
}

/// The registered regions, by name.
#[derive(Debug, Default)]
pub struct Regions {
    regions: Mutex<BTreeMap<String, Arc<Region>>>,
    /// Whether CUDA regions may be registered (`serve --cuda-shared-memory`).
    cuda: bool,
}

impl Regions {
    /// Whether CUDA regions can be registered: the switch is on and CUDA sees a device.
    pub fn cuda_available(&self) -> bool {
        self.cuda && cuda::usable()
    }

    /// No regions; CUDA ones may be registered only with `cuda` (system ones always may).
    pub fn new(cuda: bool) -> Regions {
        Regions { regions: Mutex::default(), cuda }
    }

    /// Registers `byte_size` bytes of `/dev/shm/KEY` from `offset` as region `name`.
    pub fn register(&self, name: &str, key: &str, offset: u64, byte_size: u64) -> Result<(), RegionError> {
        self.insert(Kind::System, name, byte_size, || SystemRegion::open(key, offset, byte_size).map(Memory::System))
    }

    /// Registers the first `byte_size` bytes of the device allocation `raw_handle` (a CUDA IPC
    /// handle) names, on CUDA device `device_id`, as region `name`.
    pub fn register_cuda(
        &self,
        name: &str,
        raw_handle: &[u8],
        device_id: i64,
        byte_size: u64,
    ) -> Result<(), RegionError> {
        if !self.cuda {
            return Err(RegionError::Invalid(format!(
                "CUDA shared-memory region `{}`: the extension is off; start serve with --cuda-shared-memory true \
                 (a handle lets a client make the server map device memory: docs/serving.md)",
                shown(name)
            )));
        }
        self.insert(Kind::Cuda, name, byte_size, || {
            CudaRegion::open(raw_handle, device_id, byte_size).map(Memory::Cuda)
        })
    }

    /// Checks `name` and `byte_size`, opens the memory with `open` (not under the lock: mapping
    /// device memory or opening a file may take a while), then adds the region unless the name
    /// was taken meanwhile.
    fn insert(
        &self,
        kind: Kind,
        name: &str,
        byte_size: u64,
        open: impl FnOnce() -> Result<Memory, String>,
    ) -> Result<(), RegionError> {
        let invalid = |why: String| RegionError::Invalid(format!("{} region `{}`: {why}", kind.words(), shown(name)));
        if name.is_empty() {
            return Err(RegionError::Invalid(format!("a {} region needs a name", kind.words())));
        }
        if name.len() > MAX_NAME_BYTES {
            return Err(RegionError::Invalid(format!(
                "a {} region's name is at most {MAX_NAME_BYTES} bytes; this one is {}",
                kind.words(),
                name.len()
            )));
        }
        if byte_size == 0 {
            return Err(invalid("byte_size must be more than 0".into()));
        }
        let taken = |regions: &BTreeMap<String, Arc<Region>>| {
            if let Some(region) = regions.get(name) {
                let other = region.kind();
                return Err(invalid(if other == kind {
                    "is already registered; unregister it first".into()
                } else {
                    format!("the name is taken by a {} region", other.words())
                }));
            }
            let most = max_regions();
            if regions.len() >= most {
                return Err(invalid(format!(
                    "{most} regions are registered already (at most {MAX_REGIONS}, and a quarter of the server's open-file limit); unregister some"
                )));
            }
            Ok(())
        };
        taken(&self.lock())?;
        let memory = open().map_err(invalid)?;
        let mut regions = self.lock();
        taken(&regions)?;
        regions.insert(name.to_owned(), Arc::new(Region { byte_size, memory }));
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Arc<Region>>> {
        self.regions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Unregisters region `name`, or every region of `kind` (`None`). An unknown name is no
    /// error; a name of the other kind is (it is unregistered through its own extension).
    pub fn unregister(&self, kind: Kind, name: Option<&str>) -> Result<(), RegionError> {
        let mut regions = self.lock();
        // Closed after the lock is let go: unmapping device memory takes a while.
        let mut removed = Vec::new();
        let done = match name {
            Some(name) => match regions.get(name).map(|r| r.kind()) {
                Some(other) if other != kind => Err(RegionError::Invalid(format!(
                    "region `{}` is a {} region: unregister it through its own extension ({})",
                    shown(name),
                    other.words(),
                    other.unregister_call()
                ))),
                _ => {
                    removed.extend(regions.remove(name));
                    Ok(())
                }
            },
            None => {
                let names: Vec<String> =
                    regions.iter().filter(|(_, r)| r.kind() == kind).map(|(n, _)| n.clone()).collect();
                removed.extend(names.iter().filter_map(|n| regions.remove(n)));
                Ok(())
            }
        };
        drop(regions);
        drop(removed);
        done
    }

    /// The status of region `name`, or of every region of `kind` (`None`).
    pub fn status(&self, kind: Kind, name: Option<&str>) -> Result<Vec<RegionStatus>, RegionError> {
        let regions = self.lock();
        let status = |(name, r): (&String, &Arc<Region>)| RegionStatus {
            name: name.clone(),
            byte_size: r.byte_size,
            memory: match &r.memory {
                Memory::System(s) => RegionMemory::System { key: s.key.clone(), offset: s.offset },
                Memory::Cuda(c) => RegionMemory::Cuda { device_id: c.device_id },
            },
        };
        match name {
            None => Ok(regions.iter().filter(|(_, r)| r.kind() == kind).map(status).collect()),
            Some(name) => match regions.get_key_value(name) {
                Some(found) if found.1.kind() == kind => Ok(vec![status(found)]),
                _ => Err(RegionError::Unknown(format!("no {} region `{}` is registered", kind.words(), shown(name)))),
            },
        }
    }

    /// The `place.byte_size` bytes at `place`, for tensor `tensor`; at most `limit` bytes.
    pub fn read(&self, tensor: &str, place: &Place, limit: usize) -> Result<Vec<u8>, RegionError> {
        let region = self.locate(tensor, place)?;
        let size = usize::try_from(place.byte_size).ok().filter(|&s| s <= limit).ok_or_else(|| {
            RegionError::Invalid(format!(
                "`{tensor}`: shared_memory_byte_size {} is over {limit} bytes",
                place.byte_size
            ))
        })?;
        let mut bytes = vec![0; size];
        let read = match &region.memory {
            Memory::System(s) => s.read(place.offset, &mut bytes),
            Memory::Cuda(c) => c.read(place.offset, &mut bytes),
        };
        read.map_err(|e| RegionError::Invalid(format!("`{tensor}`: reading region `{}`: {e}", shown(&place.region))))?;
        Ok(bytes)
    }

    /// Checks, before a run, that output `tensor` can be written at `place`: its region is
    /// registered, the place lies within it and (system regions) the object still holds it, as
    /// Triton checks output regions when it reads the request. Whether the output fits is known
    /// after the run; the place keeps the region it was checked against.
    pub fn check(&self, tensor: &str, place: &Place) -> Result<OutputPlace, RegionError> {
        let region = self.locate(tensor, place)?;
        if let Memory::System(s) = &region.memory {
            if !s.reaches(place.offset.saturating_add(place.byte_size)) {
                return Err(RegionError::Invalid(format!(
                    "`{tensor}`: region `{}` is shorter than registered",
                    shown(&place.region)
                )));
            }
        }
        Ok(OutputPlace { place: place.clone(), region })
    }

    /// The region of `place`, once `place` is checked to lie within it. The region is handed out
    /// (not borrowed under the lock), so a copy does not hold up other requests.
    fn locate(&self, tensor: &str, place: &Place) -> Result<Arc<Region>, RegionError> {
        let region = self.lock().get(&place.region).cloned().ok_or_else(|| {
            RegionError::Invalid(format!(
                "`{tensor}`: no shared-memory region `{}` is registered",
                shown(&place.region)
            ))
        })?;
        let end = place.offset.checked_add(place.byte_size);
        if end.is_none_or(|end| end > region.byte_size) {
            return Err(RegionError::Invalid(format!(
                "`{tensor}`: shared_memory_offset {} + shared_memory_byte_size {} is outside region `{}` ({} bytes)",
                place.offset,
                place.byte_size,
                shown(&place.region),
                region.byte_size
            )));
        }
        Ok(region)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

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
        let checked = |p| regions.check("y", &p).expect("checked");
        assert!(checked(place(0, 2)).write("y", &[1, 2, 3]).is_err(), "larger than its place");
        checked(place(14, 2)).write("y", &[7, 9]).expect("write");
        assert_eq!(std::fs::read(&path).expect("read back")[30..32], [7, 9]);
        regions.unregister(Kind::System, Some("r")).expect("unregister");
        assert!(regions.read("x", &place(0, 1), 8).is_err(), "unregistered");
        let _ = std::fs::remove_file(&path);
    }
}
