// expect: E0277
// Only types whose memory layout is an ONNX element's can back a tensor (Element is sealed).
use onnxrt::Value;

fn main() -> onnxrt::Result<()> {
    let _strings = Value::from_vec(&[1], vec![String::from("use Value::from_strings")])?;
    let _sizes = Value::from_vec(&[1], vec![1usize])?;
    let _chars = Value::from_vec(&[1], vec!['x'])?;
    Ok(())
}
