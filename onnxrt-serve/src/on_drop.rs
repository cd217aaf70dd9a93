//! [`OnDrop`]: what must happen when a request's work ends, also when it ends by being dropped
//! (its client closed the connection, or its gRPC deadline or cancellation ended the call: the
//! server then drops the request's future and writes no answer).

/// Runs its closure when dropped, unless [`OnDrop::disarm`]ed first.
pub struct OnDrop<F: FnOnce()>(Option<F>);

impl<F: FnOnce()> OnDrop<F> {
    /// Runs `then` when dropped.
    pub fn new(then: F) -> OnDrop<F> {
        OnDrop(Some(then))
    }

    /// Drops it without running its closure.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl<F: FnOnce()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        if let Some(then) = self.0.take() {
            then();
        }
    }
}
