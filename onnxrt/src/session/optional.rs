//! Making absent optional values (ONNX `optional(T)`) and sequences with no members.
//!
//! A *present* optional is simply its value: pass a tensor or a sequence where a model declares
//! `optional(tensor(...))` or `optional(seq(...))`, and read an optional output like any other
//! value. An *absent* optional (`None`) is its own kind of value, made with [`Value::none`] and
//! recognised with [`Value::is_none`]. This file makes the values only a run can make (ORT has no
//! constructor for them); reading them is in value/optional.rs.
//!
//! ORT's C API reads optionals (`HasValue`, `CastTypeInfoToOptionalTypeInfo`, all in API 16) but
//! has no function that makes an absent one, and `CreateValue` cannot make a sequence without a
//! member to take the element type from. ORT makes both itself when a model's `Optional` or
//! `SequenceEmpty` node runs, so this module does exactly that: a one-node model per type, built
//! here in a few bytes of protobuf, loaded for the call, and run without inputs. Its output owns
//! its (empty) contents and depends on nothing of the session. That costs a session's creation per
//! call: make such a value once and pass it by reference to every run that needs it.

use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::session::Session;
use crate::value::Value;

/// What a present optional holds: a tensor or a sequence of tensors of one element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueType {
    /// A tensor (`optional(tensor(T))`).
    Tensor(ElementType),
    /// A sequence of tensors (`optional(seq(tensor(T)))`).
    Sequence(ElementType),
}

impl ValueType {
    fn element_type(self) -> ElementType {
        match self {
            ValueType::Tensor(t) | ValueType::Sequence(t) => t,
        }
    }
}

impl Value<'static> {
    /// An absent optional value (`None`) of type `optional(of)`, for a model input declared as
    /// optional. A present one is the tensor or sequence itself.
    ///
    /// ```
    /// use onnxrt::{ElementType, Value, ValueType};
    /// let none = Value::none(ValueType::Tensor(ElementType::F32))?;
    /// assert!(none.is_none()?);
    /// assert!(!Value::scalar(1.0f32)?.is_none()?);
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for element types ORT's `Optional` operator does not take
    /// (ORT's message says which).
    ///
    /// Corresponds to running ONNX's `Optional` operator (the C API has no constructor).
    pub fn none(of: ValueType) -> Result<Value<'static>> {
        Ok(made_by(Maker::None(of))?.known_absent())
    }

    /// A sequence with no members whose tensors would be of `element_type` (ONNX
    /// `SequenceEmpty`). [`Value::sequence`] needs at least one member to know the type.
    ///
    /// ```
    /// let empty = onnxrt::Value::empty_sequence(onnxrt::ElementType::F32)?;
    /// assert!(empty.sequence_items()?.is_empty());
    /// # Ok::<(), onnxrt::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Value::none`].
    pub fn empty_sequence(element_type: ElementType) -> Result<Value<'static>> {
        made_by(Maker::EmptySequence(element_type))
    }
}

/// Which one-node model makes the value.
#[derive(Clone, Copy)]
enum Maker {
    None(ValueType),
    EmptySequence(ElementType),
}

/// Makes the value with a one-node session built for this call and dropped after it. The session
/// joins the process's environment, or, before there is one, a provisional one that leaves the
/// settings to the caller's first `EnvironmentBuilder::commit` (made here, a default
/// environment would fix the settings for good).
fn made_by(maker: Maker) -> Result<Value<'static>> {
    let element_type = match maker {
        Maker::None(of) => of.element_type(),
        Maker::EmptySequence(t) => t,
    };
    if matches!(element_type, ElementType::Unknown(_)) {
        return Err(Error::InvalidArgument {
            what: format!("a value of {element_type}"),
            why: "onnxrt does not know that element type".into(),
        });
    }
    let session = Session::builder()
        .environment(crate::env::Environment::provisional()?)
        .intra_op_threads(1)
        .commit_from_memory(&model(maker))
        .map_err(|e| refused(element_type, e))?;
    let no_inputs: [(&str, &Value<'static>); 0] = [];
    let mut values = session.run(no_inputs).map_err(|e| refused(element_type, e))?.into_values();
    let value = values.pop().ok_or_else(|| Error::InvalidArgument {
        what: "making an empty value".into(),
        why: "ORT returned no output".into(),
    })?;
    // It is nobody's output: errors about it should not name the maker model's.
    Ok(value.without_name())
}

fn refused(element_type: ElementType, error: Error) -> Error {
    match error {
        Error::Ort { message, .. } => Error::InvalidArgument {
            what: format!("an empty value of {element_type} elements"),
            why: format!("ONNX Runtime cannot make one: {message}"),
        },
        other => other,
    }
}

// The model, in protobuf wire format (field numbers from onnx.proto).

fn model(maker: Maker) -> Vec<u8> {
    let (node, output_type) = match maker {
        Maker::None(of) => {
            let contained = value_type(of);
            let attribute = [string(1, "type"), message(14, &contained), varint(20, 13)].concat();
            let node = [string(2, "out"), string(4, "Optional"), message(5, &attribute)].concat();
            (node, message(9, &message(1, &contained)))
        }
        Maker::EmptySequence(t) => {
            let attribute = [string(1, "dtype"), varint(3, u64::from(t.to_raw())), varint(20, 2)].concat();
            let node = [string(2, "out"), string(4, "SequenceEmpty"), message(5, &attribute)].concat();
            (node, value_type(ValueType::Sequence(t)))
        }
    };
    let output = [string(1, "out"), message(2, &output_type)].concat();
    let graph = [message(1, &node), string(2, "make"), message(12, &output)].concat();
    let opset = [string(1, ""), varint(2, 18)].concat();
    [varint(1, 8), message(7, &graph), message(8, &opset)].concat()
}

/// A `TypeProto` for a tensor or a sequence of tensors.
fn value_type(of: ValueType) -> Vec<u8> {
    match of {
        ValueType::Tensor(t) => message(1, &varint(1, u64::from(t.to_raw()))),
        ValueType::Sequence(t) => message(4, &message(1, &value_type(ValueType::Tensor(t)))),
    }
}

fn varint(field: u32, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    push_varint(u64::from(field) << 3, &mut out);
    push_varint(value, &mut out);
    out
}

fn message(field: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    push_varint((u64::from(field) << 3) | 2, &mut out);
    push_varint(bytes.len() as u64, &mut out);
    out.extend_from_slice(bytes);
    out
}

fn string(field: u32, text: &str) -> Vec<u8> {
    message(field, text.as_bytes())
}

fn push_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

#[cfg(test)]
mod tests {
    #[test]
    fn varints_follow_the_wire_format() {
        assert_eq!(super::varint(1, 8), [0x08, 0x08]);
        assert_eq!(super::varint(20, 300), [0xA0, 0x01, 0xAC, 0x02]);
        assert_eq!(super::string(2, "ab"), [0x12, 2, b'a', b'b']);
    }
}
