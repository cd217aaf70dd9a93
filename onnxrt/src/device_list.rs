//! Turns on ORT's list of execution-provider devices. `GetEpDevices` hands back ORT's own array,
//! and ORT reads it again while it chooses devices for a session (a policy or a selector), with no
//! lock; `RegisterExecutionProviderLibrary` grows it, reallocating and freeing the old array. So
//! readers (a copy of the list, a session or compilation that chooses by device) and registrations
//! take turns here: any number of readers at once, a registration alone.
//!
//! A thread already reading (e.g. a device selector, which ORT calls inside session creation) may
//! read again without waiting; it may not register (that would wait for itself): the registration
//! is refused with an error instead.

use std::cell::Cell;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{Error, Result};

static TURNS: RwLock<()> = RwLock::new(());

thread_local! {
    /// How many read turns this thread holds (only the outermost holds the lock).
    static READING: Cell<usize> = const { Cell::new(0) };
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

/// Waits for a read turn (at once where this thread holds one already).
pub(crate) fn read() -> ReadTurn {
    let nested = READING.with(Cell::get) > 0;
    let guard = (!nested).then(|| TURNS.read().unwrap_or_else(PoisonError::into_inner));
    READING.with(|n| n.set(n.get() + 1));
    ReadTurn { _guard: guard }
}

/// Waits for the list to be the caller's alone (no reader, no other registration); refused on a
/// thread that is reading it (inside a device selector).
pub(crate) fn write(what: &str) -> Result<RwLockWriteGuard<'static, ()>> {
    if READING.with(Cell::get) > 0 {
        return Err(Error::BadSetting {
            setting: what.into(),
            value: "called while this thread chooses devices for a session (inside a device selector)".into(),
            allowed: "registering a provider library outside a device selector".into(),
        });
    }
    Ok(TURNS.write().unwrap_or_else(PoisonError::into_inner))
}
