//! Triton's classification extension: an output asked for with `class_count` (KServe) or
//! `classification` (Triton's gRPC) K is answered as its top K classes instead of its values, a
//! BYTES tensor of `"value:index"` strings (`"value:index:label"` where the model has labels),
//! highest value first, per row: `[rows, K]` for an output of two or more axes (the first is the
//! batch), `[K]` for one of one axis. The value is printed with six decimals, as Triton does.

use half::{bf16, f16};
use onnxrt::{Element, ElementType, Value};

use crate::oip::tensor;

/// The top `count` classes of output `name`'s `value`, labelled from `labels`.
pub fn top_classes(name: &str, value: &Value<'_>, count: u64, labels: &[String]) -> Result<Value<'static>, String> {
    let (datatype, shape) = tensor::datatype_and_shape(name, value)?;
    let values = numbers(value)
        .map_err(|e| format!("output `{name}`: {e}"))?
        .ok_or_else(|| format!("output `{name}` is {datatype}: class_count needs numbers to rank"))?;
    let rows = if shape.len() >= 2 { usize::try_from(shape[0]).unwrap_or(0) } else { 1 };
    let classes = values.len().checked_div(rows).unwrap_or(0);
    if classes == 0 {
        return Err(format!("output `{name}` of shape {shape:?} has no classes to rank"));
    }
    let k = usize::try_from(count).unwrap_or(usize::MAX).min(classes);
    let mut strings = Vec::with_capacity(rows * k);
    for row in values.chunks_exact(classes) {
        let mut order: Vec<usize> = (0..classes).collect();
        // Highest first; NaN last; ties by index.
        order.sort_by(|&a, &b| row[b].partial_cmp(&row[a]).unwrap_or_else(|| row[a].is_nan().cmp(&row[b].is_nan())));
        for &index in &order[..k] {
            let text = match labels.get(index) {
                Some(label) => format!("{:.6}:{index}:{label}", row[index]),
                None => format!("{:.6}:{index}", row[index]),
            };
            strings.push(text);
        }
    }
    let out_shape: Vec<i64> = if shape.len() >= 2 { vec![rows as i64, k as i64] } else { vec![k as i64] };
    Value::from_strings(&out_shape, &strings).map_err(|e| format!("output `{name}`: {e}"))
}

/// A numeric tensor's elements as f64; `None` for strings and booleans.
fn numbers(value: &Value<'_>) -> onnxrt::Result<Option<Vec<f64>>> {
    fn all<T: Element>(value: &Value<'_>, to: impl Fn(&T) -> f64) -> onnxrt::Result<Option<Vec<f64>>> {
        Ok(Some(value.view::<T>()?.iter().map(to).collect()))
    }
    match value.tensor_info()?.element_type {
        ElementType::U8 => all::<u8>(value, |&x| f64::from(x)),
        ElementType::U16 => all::<u16>(value, |&x| f64::from(x)),
        ElementType::U32 => all::<u32>(value, |&x| f64::from(x)),
        ElementType::U64 => all::<u64>(value, |&x| x as f64),
        ElementType::I8 => all::<i8>(value, |&x| f64::from(x)),
        ElementType::I16 => all::<i16>(value, |&x| f64::from(x)),
        ElementType::I32 => all::<i32>(value, |&x| f64::from(x)),
        ElementType::I64 => all::<i64>(value, |&x| x as f64),
        ElementType::F32 => all::<f32>(value, |&x| f64::from(x)),
        ElementType::F64 => all::<f64>(value, |&x| x),
        ElementType::F16 => all::<f16>(value, |x| f64::from(x.to_f32())),
        ElementType::BF16 => all::<bf16>(value, |x| f64::from(x.to_f32())),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(value: &Value<'_>) -> Vec<String> {
        value.strings().expect("strings")
    }

    #[test]
    fn top_classes_per_row_highest_first_with_labels() {
        let scores = Value::from_vec(&[2, 4], vec![0.1f32, 0.7, 0.2, 0.0, 0.5, 0.25, 0.125, 0.9]).expect("scores");
        let top = top_classes("p", &scores, 2, &[]).expect("top");
        assert_eq!(top.tensor_info().expect("info").shape.to_vec(), [2, 2]);
        assert_eq!(strings(&top), ["0.700000:1", "0.200000:2", "0.900000:3", "0.500000:0"]);
        let labels: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        let one_row = Value::from_vec(&[4], vec![1i64, 3, 2, 3]).expect("ints");
        let top = top_classes("p", &one_row, 9, &labels).expect("top");
        assert_eq!(strings(&top), ["3.000000:1:b", "3.000000:3:d", "2.000000:2:c", "1.000000:0:a"]);
        let nan = Value::from_vec(&[3], vec![f32::NAN, 1.0, 0.5]).expect("nan");
        assert_eq!(strings(&top_classes("p", &nan, 3, &[]).expect("top"))[0], "1.000000:1");
    }
}
