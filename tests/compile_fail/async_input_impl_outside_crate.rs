// expect: E0277
// AsyncInput is sealed: an impl outside the crate could hand a run one value to read (`value`)
// and another to keep alive (`into_held`), so ORT would read a value the run had dropped. Only
// the crate's own `(name, Value<'static>)` and `(name, Arc<Value<'static>>)` impls exist.
use onnxrt::{AsyncInput, HeldValue, Value};

struct TwoValues {
    shown: Value<'static>,
    kept: Value<'static>,
}

impl AsyncInput for TwoValues {
    fn name(&self) -> &str {
        "x"
    }
    fn value(&self) -> &Value<'static> {
        &self.shown
    }
    fn into_held(self) -> HeldValue {
        ("x", self.kept).into_held()
    }
}

fn main() -> onnxrt::Result<()> {
    let session = onnxrt::Session::builder().async_threads().commit_from_file("identity_f32.onnx")?;
    let shown = Value::from_vec(&[1], vec![1.0f32])?;
    let kept = Value::from_vec(&[1], vec![2.0f32])?;
    drop(session.run_async([TwoValues { shown, kept }], &[])?);
    Ok(())
}
