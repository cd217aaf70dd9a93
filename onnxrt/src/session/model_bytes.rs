//! [`ModelBytes`]: model bytes a session owns, so ORT may use them in place for its whole life.

use std::sync::Arc;

/// Model bytes given to [`SessionBuilder::commit_from_owned_bytes`](crate::SessionBuilder::commit_from_owned_bytes),
/// which the session holds until ORT has released it. Made from a `Vec<u8>` or `Box<[u8]>` (moved;
/// a `Vec` with spare capacity is shrunk to its length first) or an `Arc<[u8]>` (shared with other sessions or the caller, read-only).
#[derive(Clone)]
pub struct ModelBytes(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Box<[u8]>),
    Shared(Arc<[u8]>),
}

impl ModelBytes {
    /// The bytes. Their address never changes: nothing can write to or move them while a
    /// `ModelBytes` exists (the box is never handed out mutably; an `Arc<[u8]>` is read-only).
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(bytes) => bytes,
            Repr::Shared(bytes) => bytes,
        }
    }
}

impl From<Vec<u8>> for ModelBytes {
    fn from(bytes: Vec<u8>) -> ModelBytes {
        ModelBytes(Repr::Owned(bytes.into_boxed_slice()))
    }
}

impl From<Box<[u8]>> for ModelBytes {
    fn from(bytes: Box<[u8]>) -> ModelBytes {
        ModelBytes(Repr::Owned(bytes))
    }
}

impl From<Arc<[u8]>> for ModelBytes {
    fn from(bytes: Arc<[u8]>) -> ModelBytes {
        ModelBytes(Repr::Shared(bytes))
    }
}

impl std::fmt::Debug for ModelBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModelBytes({} bytes)", self.as_slice().len())
    }
}
