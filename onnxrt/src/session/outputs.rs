//! [`Outputs`]: the values one run returned, by name or position, tied to no session.

use std::sync::Arc;

use smallvec::SmallVec;

use super::OutputValues;
use crate::error::{Error, Names, Result};
use crate::value::Value;

/// Output names of one run, shared with the session (on the stack for up to 4 outputs).
type OutputNames = SmallVec<[Arc<str>; 4]>;

/// The outputs of one run, by name or position: what [`Session::run`](crate::Session::run),
/// [`RunFuture`](crate::RunFuture) and the batcher return.
///
/// `Outputs` owns everything (`'static`, `Send`): its names are shared with the session, not
/// borrowed, so it may outlive the session and leave a `spawn_blocking` closure. Each value owns
/// its memory (allocated by ORT), and an output that would be an input's own buffer (a graph
/// output that is also a graph input) is copied after the run, so no output ever points into
/// memory the caller lent.
#[derive(Debug, Default)]
pub struct Outputs {
    names: OutputNames,
    values: OutputValues,
}

impl Outputs {
    /// Outputs from names and values of the same length, in order.
    pub(crate) fn new(names: Vec<Arc<str>>, values: Vec<Value<'static>>) -> Outputs {
        debug_assert_eq!(names.len(), values.len());
        Outputs { names: names.into(), values: values.into() }
    }

    /// Adds one output (the run path builds its outputs in place).
    pub(crate) fn push(&mut self, name: &Arc<str>, value: Value<'static>) {
        self.names.push(Arc::clone(name));
        self.values.push(value.with_name(Arc::clone(name)));
    }

    /// The values, for the run path's checks after the run.
    pub(crate) fn values_mut(&mut self) -> &mut OutputValues {
        &mut self.values
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
        self.values.into_vec()
    }

    /// `(name, value)` pairs, in order.
    pub fn into_named(self) -> Vec<(String, Value<'static>)> {
        self.names.iter().map(|n| n.to_string()).zip(self.values).collect()
    }
}

impl std::ops::Index<usize> for Outputs {
    type Output = Value<'static>;
    fn index(&self, index: usize) -> &Value<'static> {
        &self.values[index]
    }
}

/// Outputs from `(name, value)` pairs, e.g. the rows a batcher splits from one run.
impl<N: Into<Arc<str>>> FromIterator<(N, Value<'static>)> for Outputs {
    fn from_iter<I: IntoIterator<Item = (N, Value<'static>)>>(pairs: I) -> Outputs {
        let mut outputs = Outputs::default();
        for (name, value) in pairs {
            outputs.push(&name.into(), value);
        }
        outputs
    }
}
