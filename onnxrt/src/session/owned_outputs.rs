//! [`OwnedOutputs`]: the outputs of a run with their names, tied to no session (what
//! [`RunFuture`](crate::RunFuture) resolves to, and what can leave a `spawn_blocking` closure).

use std::sync::Arc;

use crate::error::{Error, Names, Result};
use crate::value::Value;

/// Outputs of one run, by name or position, owning everything (`'static`, `Send`).
///
/// The same access as [`Outputs`](crate::Outputs): [`get`](OwnedOutputs::get) and
/// [`take`](OwnedOutputs::take) by name, indexing by position, [`names`](OwnedOutputs::names).
#[derive(Debug)]
pub struct OwnedOutputs {
    names: Vec<Arc<str>>,
    values: Vec<Value<'static>>,
}

impl OwnedOutputs {
    pub(crate) fn new(names: Vec<Arc<str>>, values: Vec<Value<'static>>) -> OwnedOutputs {
        OwnedOutputs { names, values }
    }

    fn position(&self, name: &str) -> Result<usize> {
        self.names.iter().position(|n| &**n == name).ok_or_else(|| Error::UnknownOutput {
            name: name.to_owned(),
            valid: Names(self.names.iter().map(|n| n.to_string()).collect()),
        })
    }

    /// The output called `name`.
    ///
    /// # Errors
    /// [`Error::UnknownOutput`] listing the outputs this run returned.
    pub fn get(&self, name: &str) -> Result<&Value<'static>> {
        self.position(name).map(|p| &self.values[p])
    }

    /// Removes and returns the output called `name`.
    ///
    /// # Errors
    /// [`Error::UnknownOutput`] listing the outputs left.
    pub fn take(&mut self, name: &str) -> Result<Value<'static>> {
        let p = self.position(name)?;
        self.names.remove(p);
        Ok(self.values.remove(p))
    }

    /// Names of the outputs, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(|n| &**n)
    }

    /// `(name, value)` pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value<'static>)> + '_ {
        self.names().zip(&self.values)
    }

    /// Number of outputs.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The values, in order.
    pub fn into_values(self) -> Vec<Value<'static>> {
        self.values
    }

    /// `(name, value)` pairs, in order.
    pub fn into_named(self) -> Vec<(String, Value<'static>)> {
        self.names.iter().map(|n| n.to_string()).zip(self.values).collect()
    }
}

/// Outputs put together by hand (e.g. one request's rows of a batched run), in the pairs' order.
/// Each value is named by its pair's name, which [`Value::name`] then returns as well. With two
/// pairs of one name, [`get`](OwnedOutputs::get) finds the first.
///
/// ```
/// # use onnxrt::{OwnedOutputs, Value};
/// let outputs: OwnedOutputs = [("logits", Value::scalar(1.5f32)?)].into_iter().collect();
/// assert_eq!(outputs.get("logits")?.name(), Some("logits"));
/// # Ok::<(), onnxrt::Error>(())
/// ```
impl<N: Into<Arc<str>>> FromIterator<(N, Value<'static>)> for OwnedOutputs {
    fn from_iter<I: IntoIterator<Item = (N, Value<'static>)>>(pairs: I) -> OwnedOutputs {
        let (names, values) = pairs
            .into_iter()
            .map(|(name, value)| {
                let name: Arc<str> = name.into();
                (Arc::clone(&name), value.with_name(name))
            })
            .unzip();
        OwnedOutputs { names, values }
    }
}

impl std::ops::Index<usize> for OwnedOutputs {
    type Output = Value<'static>;
    fn index(&self, index: usize) -> &Value<'static> {
        &self.values[index]
    }
}
