//! [`Outputs`]: the values one run returned, by name or position.

use std::sync::Arc;

use super::{Indices, OutputValues, OwnedOutputs, Session};
use crate::error::{Error, Names, Result};
use crate::value::Value;

/// The outputs of one run, by name or position.
///
/// Each value owns its memory (allocated by ORT) and may outlive the session and the inputs: an
/// output that would be an input's own buffer (a graph output that is also a graph input) is
/// copied after the run, so no output ever points into memory the caller lent.
#[derive(Debug)]
pub struct Outputs<'s> {
    pub(super) session: &'s Session,
    // Model output positions of `values`; `None` when every output was returned, in order.
    pub(super) indices: Option<Indices>,
    pub(super) values: OutputValues,
}

impl<'s> Outputs<'s> {
    /// Model output position of the value at `p`.
    pub(super) fn model_index(&self, p: usize) -> usize {
        self.indices.as_ref().map_or(p, |indices| indices[p])
    }

    fn position(&self, name: &str) -> Option<usize> {
        (0..self.values.len()).find(|&p| self.session.inner.outputs[self.model_index(p)].name == name)
    }

    fn unknown(&self, name: &str) -> Error {
        Error::UnknownOutput { name: name.to_owned(), valid: Names(self.names().map(str::to_owned).collect()) }
    }

    /// The output called `name`.
    ///
    /// # Errors
    /// [`Error::UnknownOutput`] listing the outputs this run returned.
    pub fn get(&self, name: &str) -> Result<&Value<'static>> {
        self.position(name).map(|p| &self.values[p]).ok_or_else(|| self.unknown(name))
    }

    /// Removes and returns the output called `name`.
    pub fn take(&mut self, name: &str) -> Result<Value<'static>> {
        let p = self.position(name).ok_or_else(|| self.unknown(name))?;
        let n = self.values.len();
        self.indices.get_or_insert_with(|| (0..n).collect()).remove(p);
        Ok(self.values.remove(p))
    }

    /// Names of the outputs, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.values.len()).map(|p| self.session.inner.outputs[self.model_index(p)].name.as_str())
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
        self.values.into_vec()
    }

    /// The outputs with their names, no longer borrowing the session (e.g. to return them from
    /// a `spawn_blocking` closure).
    pub fn into_owned(self) -> OwnedOutputs {
        let names = (0..self.values.len())
            .map(|p| Arc::clone(&self.session.inner.output_labels[self.model_index(p)]))
            .collect();
        OwnedOutputs::new(names, self.values.into_vec())
    }
}

impl std::ops::Index<usize> for Outputs<'_> {
    type Output = Value<'static>;
    fn index(&self, index: usize) -> &Value<'static> {
        &self.values[index]
    }
}
