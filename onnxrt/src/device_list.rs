//! Turns on ORT's list of execution-provider devices. `GetEpDevices` hands back ORT's own array,
//! and ORT reads it again while it chooses devices for a session (a policy or a selector), with no
//! lock; `RegisterExecutionProviderLibrary` grows it, reallocating and freeing the old array. So
//! readers (a copy of the list, a session or compilation that chooses by device) and registrations
//! take turns here: any number of readers at once, a registration alone.
//!
//! A thread already reading (e.g. a device selector, which ORT calls inside session creation) may
//! read again without waiting; it may not register (that would wait for itself): the registration
//! is refused with an error instead. A thread registering (whose log hook ORT may call meanwhile)
//! may read without waiting (ORT changes the list on that same thread, not during the callback),
//! and may not register again (ORT would lock its own lock twice).

use std::cell::Cell;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{Error, Result};

static TURNS: RwLock<()> = RwLock::new(());

thread_local! {
    /// How many read turns this thread holds (only the outermost holds the lock).
    static READING: Cell<usize> = const { Cell::new(0) };
    /// Whether this thread holds the write turn.
    static WRITING: Cell<bool> = const { Cell::new(false) };
}

/// A read turn: ORT's device list does not change while it lives. Not `Send` (the lock guard is not).
pub(crate) struct ReadTurn {
    _guard: Option<RwLockReadGuard<'static, ()>>,
}

impl Drop for ReadTurn {
    fn drop(&mut self) {
        READING.with(|n| n.set(n.get() - 1));
    }
}

/// Waits for a read turn (at once where this thread holds one already, or the write turn).
pub(crate) fn read() -> ReadTurn {
    let nested = READING.with(Cell::get) > 0 || WRITING.with(Cell::get);
    let guard = (!nested).then(|| TURNS.read().unwrap_or_else(PoisonError::into_inner));
    READING.with(|n| n.set(n.get() + 1));
    ReadTurn { _guard: guard }
}

/// The write turn: no reader and no other registration while it lives. Not `Send`.
pub(crate) struct WriteTurn {
    _guard: RwLockWriteGuard<'static, ()>,
}

impl Drop for WriteTurn {
    fn drop(&mut self) {
        WRITING.with(|w| w.set(false));
    }
}

/// Waits for the list to be the caller's alone (no reader, no other registration); refused on a
/// thread that is reading it (inside a device selector) or registering already (a log hook).
pub(crate) fn write(what: &str) -> Result<WriteTurn> {
    if READING.with(Cell::get) > 0 || WRITING.with(Cell::get) {
        return Err(Error::BadSetting {
            setting: what.into(),
            value: "called while this thread chooses devices for a session (inside a device selector) or registers a library (inside a log hook)".into(),
            allowed: "registering a provider library outside device selectors and log hooks".into(),
        });
    }
    let guard = TURNS.write().unwrap_or_else(PoisonError::into_inner);
    WRITING.with(|w| w.set(true));
    Ok(WriteTurn { _guard: guard })
}
