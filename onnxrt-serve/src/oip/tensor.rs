//! Tensors of the protocol to and from onnxrt values: JSON `data` arrays, and raw little-endian
//! bytes (the binary-tensor extension of REST, and `raw_input_contents` / `raw_output_contents`
//! of gRPC). Every check is made before a value is built: a request that does not fit gets a
//! message naming the tensor and what to send instead.

use half::{bf16, f16};
use onnxrt::{ElementType, Value};
use serde_json::Value as Json;

use crate::oip::datatype::{datatype_of, element_type_of};

/// The element type a tensor's `datatype` names.
pub fn element_type(name: &str, datatype: &str) -> Result<ElementType, String> {
    element_type_of(datatype).ok_or_else(|| {
        format!(
            "input `{name}`: unknown datatype `{datatype}`; the protocol's types are BOOL, UINT8…UINT64, INT8…INT64, \
             FP16, BF16, FP32, FP64, BYTES"
        )
    })
}

/// The element count of `shape`, refusing negative axes and sizes past `usize`.
pub fn element_count(name: &str, shape: &[i64]) -> Result<usize, String> {
    shape.iter().try_fold(1usize, |count, &axis| {
        let axis = usize::try_from(axis).map_err(|_| format!("input `{name}`: shape {shape:?} has a negative axis"))?;
        count.checked_mul(axis).ok_or_else(|| format!("input `{name}`: shape {shape:?} is too large"))
    })
}

/// A value from raw bytes: numbers little-endian in row-major order; `BYTES` elements each as a
/// 4-byte little-endian length and that many bytes; `BOOL` one byte, 0 or 1.
pub fn value_from_raw(name: &str, datatype: &str, shape: &[i64], bytes: &[u8]) -> Result<Value<'static>, String> {
    let element = element_type(name, datatype)?;
    let count = element_count(name, shape)?;
    if element == ElementType::String {
        let strings = split_length_prefixed(name, bytes)?;
        if strings.len() != count {
            return Err(format!(
                "input `{name}`: shape {shape:?} holds {count} element(s), the data holds {}",
                strings.len()
            ));
        }
        let strings = strings
            .into_iter()
            .map(|s| String::from_utf8(s.to_vec()).map_err(|_| format!("input `{name}`: a BYTES element is not UTF-8")))
            .collect::<Result<Vec<_>, _>>()?;
        return Value::from_strings(shape, &strings).map_err(|e| format!("input `{name}`: {e}"));
    }
    let expected =
        count.checked_mul(element.size()).ok_or_else(|| format!("input `{name}`: shape {shape:?} is too large"))?;
    if bytes.len() != expected {
        return Err(format!(
            "input `{name}`: {datatype} {shape:?} is {expected} bytes, the data has {}; send the elements \
             little-endian in row-major order",
            bytes.len()
        ));
    }
    if element == ElementType::Bool && bytes.iter().any(|&b| b > 1) {
        return Err(format!("input `{name}`: BOOL elements must be bytes 0 or 1"));
    }
    Value::from_bytes(shape, element, bytes).map_err(|e| format!("input `{name}`: {e}"))
}

/// The elements of a `BYTES` tensor in its raw form.
fn split_length_prefixed<'b>(name: &str, mut bytes: &'b [u8]) -> Result<Vec<&'b [u8]>, String> {
    let mut elements = Vec::new();
    while !bytes.is_empty() {
        let (length, rest) = bytes
            .split_first_chunk::<4>()
            .ok_or_else(|| format!("input `{name}`: a BYTES element's 4-byte length is cut short"))?;
        let length = u32::from_le_bytes(*length) as usize;
        if rest.len() < length {
            return Err(format!("input `{name}`: a BYTES element says {length} bytes, {} remain", rest.len()));
        }
        let (element, rest) = rest.split_at(length);
        elements.push(element);
        bytes = rest;
    }
    Ok(elements)
}

/// A tensor of `shape` with every element `fill` (converted to the element type; strings stay
/// empty), e.g. for a warm-up run.
pub fn filled(name: &str, element: ElementType, shape: &[i64], fill: f64) -> Result<Value<'static>, String> {
    let mut value = Value::zeros(shape, element).map_err(|e| format!("input `{name}`: {e}"))?;
    if fill == 0.0 || element == ElementType::String {
        return Ok(value);
    }
    let item = if element == ElementType::Bool {
        Json::Bool(true)
    } else if fill.fract() == 0.0 && fill.abs() < 9.0e15 {
        Json::from(fill as i64)
    } else {
        Json::from(fill)
    };
    let mut one = Vec::new();
    push_element(&mut one, element, &item).ok_or_else(|| format!("input `{name}`: {fill} is not a valid {element}"))?;
    let bytes = value.host_bytes_mut().map_err(|e| format!("input `{name}`: {e}"))?;
    for chunk in bytes.chunks_exact_mut(one.len()) {
        chunk.copy_from_slice(&one);
    }
    Ok(value)
}

/// Appends one JSON element as `element`'s little-endian bytes; `None` when it does not fit.
fn push_element(out: &mut Vec<u8>, element: ElementType, item: &Json) -> Option<()> {
    let int = || item.as_i64();
    let uint = || item.as_u64();
    let float = || item.as_f64();
    match element {
        ElementType::Bool => out.push(u8::from(item.as_bool()?)),
        ElementType::U8 => out.push(u8::try_from(uint()?).ok()?),
        ElementType::U16 => out.extend(u16::try_from(uint()?).ok()?.to_le_bytes()),
        ElementType::U32 => out.extend(u32::try_from(uint()?).ok()?.to_le_bytes()),
        ElementType::U64 => out.extend(uint()?.to_le_bytes()),
        ElementType::I8 => out.extend(i8::try_from(int()?).ok()?.to_le_bytes()),
        ElementType::I16 => out.extend(i16::try_from(int()?).ok()?.to_le_bytes()),
        ElementType::I32 => out.extend(i32::try_from(int()?).ok()?.to_le_bytes()),
        ElementType::I64 => out.extend(int()?.to_le_bytes()),
        ElementType::F16 => out.extend(f16::from_f64(float()?).to_le_bytes()),
        ElementType::BF16 => out.extend(bf16::from_f64(float()?).to_le_bytes()),
        ElementType::F32 => out.extend((float()? as f32).to_le_bytes()),
        ElementType::F64 => out.extend(float()?.to_le_bytes()),
        _ => return None,
    }
    Some(())
}

/// An output's protocol description: its datatype and shape.
pub fn datatype_and_shape(name: &str, value: &Value<'_>) -> Result<(&'static str, Vec<i64>), String> {
    let info = value.tensor_info().map_err(|e| format!("output `{name}` is not a tensor: {e}"))?;
    let datatype = datatype_of(info.element_type)
        .ok_or_else(|| format!("output `{name}` is {}, which the protocol has no datatype for", info.element_type))?;
    Ok((datatype, info.shape.to_vec()))
}

/// An output's data as raw bytes (the inverse of [`value_from_raw`]).
pub fn raw_of(name: &str, value: &Value<'_>) -> Result<Vec<u8>, String> {
    let info = value.tensor_info().map_err(|e| format!("output `{name}`: {e}"))?;
    if info.element_type == ElementType::String {
        let mut out = Vec::new();
        for element in value.string_bytes().map_err(|e| format!("output `{name}`: {e}"))? {
            let length = u32::try_from(element.len()).map_err(|_| format!("output `{name}`: an element over 4 GiB"))?;
            out.extend(length.to_le_bytes());
            out.extend(element);
        }
        return Ok(out);
    }
    value.host_bytes().map(<[u8]>::to_vec).map_err(|e| format!("output `{name}`: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oip::json_data::Elements;
    use serde_json::json;

    fn value_from_json(name: &str, datatype: &str, shape: &[i64], data: &Json) -> Result<Value<'static>, String> {
        crate::oip::json_data::value_from_json(name, datatype, shape, &data.to_string())
    }

    fn json_of(value: &Value<'static>) -> Json {
        serde_json::to_value(Elements(value)).expect("test value")
    }

    #[test]
    fn json_and_raw_give_the_same_tensor() {
        let from_json = value_from_json("x", "INT16", &[2, 2], &json!([[1, -2], [3, 4]])).expect("test value");
        let raw: Vec<u8> = [1i16, -2, 3, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
        let from_raw = value_from_raw("x", "INT16", &[2, 2], &raw).expect("test value");
        assert_eq!(from_json.host_bytes().expect("test value"), from_raw.host_bytes().expect("test value"));
        assert_eq!(raw_of("x", &from_json).expect("test value"), raw);
        assert_eq!(json_of(&from_raw), json!([1, -2, 3, 4]));
    }

    #[test]
    fn ragged_nested_data_is_refused_even_when_the_count_matches() {
        // Six elements for a [2, 3] tensor, nested 2 + 4: the count matches, the nesting does not.
        let ragged = [json!([[1, 2], [3, 4, 5, 6]]), json!([[1, 2, 3], [4, 5], [6]]), json!([[1, 2, 3], 4, 5, 6])];
        for data in ragged {
            let error = value_from_json("x", "INT32", &[2, 3], &data).expect_err("ragged data refused");
            assert!(error.contains("does not follow shape [2, 3]") && error.contains("`x`"), "{data}: {error}");
        }
        let deep = value_from_json("x", "INT32", &[2, 3], &json!([[[1], [2], [3]], [[4], [5], [6]]]));
        assert!(deep.expect_err("too deep").contains("below the last axis"));
        // Flat, nested as the shape, and a bare element for a scalar still pass.
        for data in [json!([1, 2, 3, 4, 5, 6]), json!([[1, 2, 3], [4, 5, 6]])] {
            let value = value_from_json("x", "INT32", &[2, 3], &data).expect("well-formed data");
            assert_eq!(value.view::<i32>().expect("i32").iter().copied().collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6]);
        }
        assert!(value_from_json("x", "INT32", &[], &json!(7)).is_ok());
        assert!(value_from_json("x", "INT32", &[2, 0], &json!([[], []])).is_ok());
        assert!(value_from_json("x", "INT32", &[2, 0], &json!([])).is_ok());
    }

    #[test]
    fn strings_round_trip_through_the_length_prefixed_form() {
        let value = value_from_json("s", "BYTES", &[2], &json!(["ab", ""])).expect("test value");
        let raw = raw_of("s", &value).expect("test value");
        assert_eq!(raw, [2, 0, 0, 0, b'a', b'b', 0, 0, 0, 0]);
        let back = value_from_raw("s", "BYTES", &[2], &raw).expect("test value");
        assert_eq!(back.strings().expect("test value"), ["ab", ""]);
    }

    #[test]
    fn bad_tensors_are_named_and_explained() {
        let cases: [(&str, &[i64], Json, &str); 6] = [
            ("FP32", &[3], json!([1.0, 2.0]), "holds 3 element(s), `data` holds 2"),
            ("UINT8", &[1], json!([256]), "is not a valid UINT8"),
            ("INT32", &[1], json!([1.5]), "is not a valid INT32"),
            ("BOOL", &[1], json!([1]), "is not a valid BOOL"),
            ("FP99", &[1], json!([1]), "unknown datatype `FP99`"),
            ("FP32", &[-1], json!([]), "negative axis"),
        ];
        for (datatype, shape, data, expected) in cases {
            let error = value_from_json("x", datatype, shape, &data).expect_err("refused");
            assert!(error.contains(expected) && error.contains("`x`"), "{datatype}: {error}");
        }
        let error = value_from_raw("x", "FP32", &[2], &[0; 7]).expect_err("refused");
        assert!(error.contains("is 8 bytes, the data has 7"), "{error}");
        let error = value_from_raw("x", "BOOL", &[1], &[2]).expect_err("refused");
        assert!(error.contains("0 or 1"), "{error}");
        let error = value_from_raw("x", "BYTES", &[1], &[9, 0, 0, 0, 1]).expect_err("refused");
        assert!(error.contains("says 9 bytes, 1 remain"), "{error}");
        let error = value_from_raw("x", "FP32", &[i64::MAX, 4], &[]).expect_err("refused");
        assert!(error.contains("too large"), "{error}");
    }
}
