//! [`AsyncInput`]: what [`Session::run_async`](crate::Session::run_async) accepts as one named
//! input. The run reads the value until ORT calls back, possibly after the future is gone, so the
//! run must own it or share it: a [`Value<'static>`] moved in, or an `Arc<Value<'static>>` shared
//! with other runs and the caller (no copy, the buffer is reused across requests).

use std::borrow::Cow;
use std::sync::Arc;

use crate::value::Value;

/// A value held by an asynchronous run until ORT calls back.
#[derive(Debug)]
pub(crate) enum Held {
    Owned(Value<'static>),
    Shared(Arc<Value<'static>>),
}

impl Held {
    pub(crate) fn value(&self) -> &Value<'static> {
        match self {
            Held::Owned(v) => v,
            Held::Shared(v) => v,
        }
    }
}

/// One named input of [`Session::run_async`](crate::Session::run_async): `(name, Value<'static>)`
/// or `(name, Arc<Value<'static>>)`, the name a `String`, `&str`, `Arc<str>` or `Cow<str>`.
///
/// Sealed: its impls decide which value an asynchronous run hands ORT and which one it keeps
/// alive until ORT calls back, so only the crate's own impls (above), which return the same
/// value from every method, exist. A run takes each input apart once (name and held value) and
/// derives ORT's pointers from the value it holds (docs/soundness.md, "Public traits").
pub trait AsyncInput: sealed::Sealed {
    /// The input's name.
    fn name(&self) -> &str;
    /// The input's value.
    fn value(&self) -> &Value<'static>;
    /// The value, owned (moved in) or shared (the `Arc`), without copying: for code that keeps
    /// inputs past the call that received them (a run in flight, a queue of requests).
    fn into_held(self) -> HeldValue;
}

/// An input value kept by whoever runs it: moved in, or an `Arc` shared with the caller. See
/// [`AsyncInput::into_held`].
#[derive(Debug)]
pub struct HeldValue(pub(crate) Held);

impl HeldValue {
    /// The value.
    pub fn value(&self) -> &Value<'static> {
        self.0.value()
    }
}

pub(crate) mod sealed {
    use super::{HeldValue, InputName};

    /// The crate's side of [`AsyncInput`](super::AsyncInput): nameable only inside the crate, so
    /// no other crate can implement it.
    pub trait Sealed {
        /// The name's type.
        type Name: InputName;
        /// The name and the value, taken apart once: what a run validates is what it holds.
        fn into_parts(self) -> (Self::Name, HeldValue);
    }
}

/// Names an input can have. Unsealed: a name is only compared with the model's input names (the
/// run looks it up once and hands ORT the session's own copy of it), never handed to ORT.
pub trait InputName {
    /// The name as text.
    fn as_name(&self) -> &str;
}

impl InputName for String {
    fn as_name(&self) -> &str {
        self
    }
}

impl InputName for &str {
    fn as_name(&self) -> &str {
        self
    }
}

impl InputName for Arc<str> {
    fn as_name(&self) -> &str {
        self
    }
}

impl InputName for Cow<'_, str> {
    fn as_name(&self) -> &str {
        self
    }
}

impl<N: InputName> sealed::Sealed for (N, Value<'static>) {
    type Name = N;
    fn into_parts(self) -> (N, HeldValue) {
        (self.0, HeldValue(Held::Owned(self.1)))
    }
}

impl<N: InputName> sealed::Sealed for (N, Arc<Value<'static>>) {
    type Name = N;
    fn into_parts(self) -> (N, HeldValue) {
        (self.0, HeldValue(Held::Shared(self.1)))
    }
}

impl<N: InputName> AsyncInput for (N, Value<'static>) {
    fn name(&self) -> &str {
        self.0.as_name()
    }
    fn value(&self) -> &Value<'static> {
        &self.1
    }
    fn into_held(self) -> HeldValue {
        HeldValue(Held::Owned(self.1))
    }
}

impl<N: InputName> AsyncInput for (N, Arc<Value<'static>>) {
    fn name(&self) -> &str {
        self.0.as_name()
    }
    fn value(&self) -> &Value<'static> {
        &self.1
    }
    fn into_held(self) -> HeldValue {
        HeldValue(Held::Shared(self.1))
    }
}
