//! The lock of a cache key: taken without blocking in a loop, so that a build that waits can say,
//! after a few seconds and then periodically, which process holds the lock and where. The holder
//! is read from `/proc/locks` (any program that holds the `flock`, an older onnxrt included).

use std::fs::{self, File, TryLockError};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// An exclusive lock on one cache key, released on drop.
#[derive(Debug)]
pub struct KeyLock {
    _file: File,
}

/// When a waiting build first says that it waits.
pub const FIRST_NOTICE: Duration = Duration::from_secs(2);
/// How often it says it again.
pub const NOTICE_EVERY: Duration = Duration::from_secs(10);
/// How often it tries the lock.
const POLL: Duration = Duration::from_millis(100);

/// Where a waiting build says that it waits: stderr (in a build script, cargo's log of it).
pub(crate) fn eprint(line: &str) {
    eprintln!("onnxrt: {line}");
}

/// Takes the lock of `file`, telling `report` about the wait.
pub(crate) fn acquire(file: File, path: &Path, report: &dyn Fn(&str)) -> Result<KeyLock> {
    let started = Instant::now();
    let mut next_notice = FIRST_NOTICE;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(KeyLock { _file: file }),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(Error::io(format!("locking {}", path.display()))(e)),
        }
        let waited = started.elapsed();
        if waited >= next_notice {
            report(&format!(
                "waiting {} s for the lock {}, held by {}: another build or fetch is installing into this cache; \
                 this one goes on when it finishes",
                waited.as_secs(),
                path.display(),
                holder(&file)
            ));
            next_notice = waited + NOTICE_EVERY;
        }
        std::thread::sleep(POLL);
    }
}

/// "pid N (program)" of the process holding the lock on `file`, from `/proc/locks`.
fn holder(file: &File) -> String {
    let unknown = || "another process (not found in /proc/locks)".to_owned();
    let Ok(meta) = file.metadata() else { return unknown() };
    let Ok(locks) = fs::read_to_string("/proc/locks") else { return unknown() };
    let wanted = (dev_major(meta.dev()), dev_minor(meta.dev()), meta.ino());
    for line in locks.lines().filter(|l| !l.contains("->")) {
        // `1: FLOCK  ADVISORY  WRITE 1234 08:02:131 0 EOF`: pid, then major:minor:inode (hex, hex, decimal).
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = fields.iter().position(|f| f.matches(':').count() == 2) else { continue };
        let Some(pid) = at.checked_sub(1).and_then(|i| fields[i].parse::<u32>().ok()) else { continue };
        let parts: Vec<&str> = fields[at].split(':').collect();
        let parsed = (
            u64::from_str_radix(parts[0], 16).ok(),
            u64::from_str_radix(parts[1], 16).ok(),
            parts[2].parse::<u64>().ok(),
        );
        if parsed == (Some(wanted.0), Some(wanted.1), Some(wanted.2)) {
            let program = fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "program not readable".into());
            return format!("pid {pid} ({program})");
        }
    }
    unknown()
}

/// The major number of a Linux device number (glibc's encoding).
fn dev_major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
}

/// The minor number of a Linux device number (glibc's encoding).
fn dev_minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & !0xff)
}
