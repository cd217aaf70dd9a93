//! Values the error variants carry and print: where the loader looked, lists of names, shapes.

use std::fmt;
use std::path::PathBuf;

/// One place the loader looked for the runtime, and why it did not use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadAttempt {
    /// Where the candidate came from (`ONNXRT_DYLIB_PATH`, the bundle, the build record...).
    pub origin: String,
    /// The path tried.
    pub path: PathBuf,
    /// What went wrong.
    pub why: String,
}

/// A list of names shown as `["a", "b"]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names(pub Vec<String>);

impl fmt::Display for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// A shape as the model declares it: numbers, or `?`/names for dynamic axes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeText(pub String);

impl fmt::Display for ShapeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
