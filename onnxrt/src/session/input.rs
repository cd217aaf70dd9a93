//! [`SessionInput`]: one named input of [`Session::run`](crate::Session::run), in whatever shape
//! the caller holds it.

use std::borrow::Borrow;

use crate::value::Value;

/// One named input of a run: a `(name, value)` pair, or a reference to one.
///
/// The name is anything `AsRef<str>` (`&str`, `String`, `&String`); the value anything that
/// borrows as a [`Value`] (`&Value`, `Value`, `Box<Value>`, `Arc<Value>`). So
/// [`Session::run`](crate::Session::run) takes a slice or array of pairs, a `Vec` of owned pairs,
/// a `HashMap<String, Value>` (by value or by reference), or any iterator of pairs:
///
/// ```
/// use std::collections::HashMap;
/// use onnxrt::{Session, Value};
///
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
/// let session = Session::builder().commit_from_file(model)?;
/// let a = Value::from_vec(&[2, 3], vec![1.0f32; 6])?;
/// let b = Value::from_vec(&[2, 3], vec![2.0f32; 6])?;
/// // Borrowed pairs (allocation-free for up to 8 inputs).
/// session.run(&[("a", &a), ("b", &b)])?;
/// // Owned pairs, e.g. built in a loop; the values are dropped after the run.
/// let owned: Vec<(String, Value)> = vec![("a".into(), a), ("b".into(), b)];
/// session.run(&owned)?;
/// let by_name: HashMap<String, Value> = owned.into_iter().collect();
/// let outputs = session.run(by_name)?;
/// assert_eq!(outputs.get("sum")?.view::<f32>()?[[1, 2]], 3.0);
/// # Ok::<(), onnxrt::Error>(())
/// ```
///
/// A model without inputs takes [`NO_INPUTS`](crate::NO_INPUTS) (an empty `&[]` has no type to
/// infer). Implement this trait for your own types to pass them directly.
pub trait SessionInput<'d> {
    /// The model input's name.
    fn name(&self) -> &str;
    /// The value to feed it.
    fn value(&self) -> &Value<'d>;
}

impl<'d, N: AsRef<str>, V: Borrow<Value<'d>>> SessionInput<'d> for (N, V) {
    fn name(&self) -> &str {
        self.0.as_ref()
    }

    fn value(&self) -> &Value<'d> {
        self.1.borrow()
    }
}

impl<'d, T: SessionInput<'d> + ?Sized> SessionInput<'d> for &T {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn value(&self) -> &Value<'d> {
        (**self).value()
    }
}
