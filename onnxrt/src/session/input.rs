//! [`SessionInput`]: one named input of [`Session::run`](crate::Session::run), in whatever shape
//! the caller holds it.

use std::borrow::Borrow;

use crate::value::Value;

/// One named input of a run: a `(name, &value)` pair, or a reference to a `(name, value)` pair.
///
/// The name is anything `AsRef<str>` (`&str`, `String`, `&String`); the value anything that
/// borrows as a [`Value`] (`Value`, `&Value`, `Box<Value>`, `Arc<Value>`). So
/// [`Session::run`](crate::Session::run) takes a slice or array of pairs, a `&Vec` of owned
/// pairs, a `&HashMap<String, Value>`, or any iterator of `(name, &value)` pairs:
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
/// // Owned names and values, e.g. built in a loop.
/// let owned: Vec<(String, Value)> = vec![("a".into(), a), ("b".into(), b)];
/// session.run(&owned)?;
/// let by_name: HashMap<String, Value> = owned.into_iter().collect();
/// let outputs = session.run(&by_name)?;
/// assert_eq!(outputs.get("sum")?.view::<f32>()?[[1, 2]], 3.0);
/// # Ok::<(), onnxrt::Error>(())
/// ```
///
/// Values are always borrowed, never moved into the run: an output can be an input's own memory
/// (a graph output that is a graph input), so the inputs must outlive the call; pass owned
/// collections by reference. A model without inputs takes [`NO_INPUTS`](crate::NO_INPUTS) (an
/// empty `&[]` has no type to infer).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a named input for `Session::run`",
    note = "pass `(name, &value)` pairs, or owned `(name, value)` pairs and maps by reference: `session.run(&inputs)`"
)]
pub trait SessionInput<'v, 'd: 'v> {
    /// The model input's name.
    fn name(&self) -> &str;
    /// The value to feed it, borrowed for the whole run.
    fn value(&self) -> &'v Value<'d>;
}

/// `("x", &value)`, and the `(&String, &Value)` items of a borrowed map.
impl<'v, 'd: 'v, N: AsRef<str>, V: Borrow<Value<'d>> + ?Sized> SessionInput<'v, 'd> for (N, &'v V) {
    fn name(&self) -> &str {
        self.0.as_ref()
    }

    fn value(&self) -> &'v Value<'d> {
        let value: &'v V = self.1;
        value.borrow()
    }
}

/// The items of a borrowed slice, array or `Vec` of pairs, owned (`(String, Value)`) or not.
impl<'v, 'd: 'v, N: AsRef<str>, V: Borrow<Value<'d>>> SessionInput<'v, 'd> for &'v (N, V) {
    fn name(&self) -> &str {
        self.0.as_ref()
    }

    fn value(&self) -> &'v Value<'d> {
        let pair: &'v (N, V) = self;
        pair.1.borrow()
    }
}
