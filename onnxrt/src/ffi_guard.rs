//! The guard around every `extern "C"` function ORT calls back (custom-operator callbacks, the
//! log callback, the `run_async` completion): a panic must never unwind into C, where it aborts
//! the process. User code can panic in more places than its body: while its error is formatted,
//! when its error or its kernel is dropped, and when a panic's payload is dropped. So the whole
//! body of each callback runs inside [`guard`], and panics of user code inside it are caught
//! with [`catch`], which disposes of the payload without letting its `Drop` escape.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `body`, the whole body of an `extern "C"` function. If it panics (a bug of ours: user
/// code inside it runs under [`catch`]), returns `fallback()` instead.
///
/// `fallback` is a plain `fn`, so it captures nothing that a panic could have left half-made;
/// it must not panic (return a constant, or a status with a static message). If it does, the
/// process aborts here rather than unwinding into C.
pub(crate) fn guard<R>(fallback: fn() -> R, body: impl FnOnce() -> R) -> R {
    match catch(body) {
        Ok(value) => value,
        Err(_) => match catch_unwind(fallback) {
            Ok(value) => value,
            Err(payload) => {
                std::mem::forget(payload);
                std::process::abort()
            }
        },
    }
}

/// Runs `body`; a panic becomes `Err` with the panic's message (`panic!("...")` gives one;
/// `panic_any` of another type gives a fixed text). The payload is dropped here, see [`dispose`].
pub(crate) fn catch<R>(body: impl FnOnce() -> R) -> Result<R, String> {
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| {
        let text = payload_text(&*payload);
        dispose(payload);
        text
    })
}

/// Drops `value` (a user's error or kernel), catching a panic of its `Drop`.
pub(crate) fn drop_caught<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        dispose(payload);
    }
}

/// The `Display` text of a user's error, which is then dropped; a panic in either is caught.
pub(crate) fn text_of(error: impl std::fmt::Display) -> String {
    let text = catch(|| error.to_string()).unwrap_or_else(|panic| format!("(the error's Display panicked: {panic})"));
    drop_caught(error);
    text
}

/// Drops a panic payload. Its `Drop` is user code and may panic too: the drop runs inside a
/// nested `catch_unwind`, and the payload of *that* panic is leaked (`mem::forget`) rather than
/// dropped, because it may be of the same kind and dropping it could panic again, without end.
/// So an ordinary payload (`&str`, `String`) is freed, and a payload whose `Drop` panics costs
/// one leaked allocation (the second payload).
fn dispose(payload: Box<dyn Any + Send>) {
    if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(second);
    }
}

/// The text of a panic's payload.
fn payload_text(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "(a panic without a message)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct DropPanics;

    impl Drop for DropPanics {
        fn drop(&mut self) {
            std::panic::panic_any(DropPanics);
        }
    }

    #[test]
    fn panic_payloads_become_text() {
        assert_eq!(payload_text(&"static"), "static");
        assert_eq!(payload_text(&String::from("owned")), "owned");
        assert_eq!(payload_text(&7u32), "(a panic without a message)");
    }

    #[test]
    fn a_payload_whose_drop_panics_is_caught_and_its_second_payload_leaked() {
        // The second payload is a DropPanics too: dropping it would recurse; it is leaked.
        assert_eq!(catch(|| std::panic::panic_any(DropPanics)), Err::<(), _>("(a panic without a message)".into()));
        drop_caught(DropPanics);
        assert_eq!(guard(|| 7, || -> i32 { std::panic::panic_any(DropPanics) }), 7);
    }
}
