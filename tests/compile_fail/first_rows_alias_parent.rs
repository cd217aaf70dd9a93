// expect: E0502
// Value::first_rows_mut borrows its parent mutably, so the parent cannot be read (or
// written) while the tensor over its rows is alive: no two views of one buffer, one of them mutable.
use onnxrt::{ElementType, Value};

fn main() -> onnxrt::Result<()> {
    let mut buffer = Value::zeros(&[4, 2], ElementType::F32)?;
    let mut rows = buffer.first_rows_mut(2)?;
    let read = buffer.host_bytes()?;
    rows.host_bytes_mut()?[0] = 1;
    println!("{}", read[0]);
    Ok(())
}
