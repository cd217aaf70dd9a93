//! Tensor `data` in JSON without a JSON tree in between: a request's `data` is read from its text
//! straight into the tensor's bytes ([`value_from_json`]), an answer's elements are written
//! straight into its text ([`Elements`], [`BoundedWriter`]). A tree of JSON values costs ~30
//! bytes per element on either side: a 54 MB body of 27 million numbers took 1.2 GB that way.

use std::fmt;
use std::time::Instant;

use half::{bf16, f16};
use onnxrt::{ElementType, Value};
use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeSeq, Serializer};

use crate::oip::tensor::{element_count, element_type};

/// A value from a JSON `data` array's text: flat or nested in row-major order; numbers for
/// numeric types (within the type's range; integers for integer types), `true`/`false` for BOOL,
/// strings for BYTES. Nested arrays must follow `shape` exactly (each level as long as its axis,
/// elements only at the last); a single element stands for a one-element tensor.
pub fn value_from_json(name: &str, datatype: &str, shape: &[i64], data: &str) -> Result<Value<'static>, String> {
    let element = element_type(name, datatype)?;
    let count = element_count(name, shape)?;
    // The elements are written straight into the tensor. `count` elements take at least
    // 2 * count - 1 characters (a scalar: one): a shape that `data` cannot fill gets no tensor,
    // and the reading only counts (to name what it holds).
    let fillable = element != ElementType::String && count <= (data.len() / 2).max(1);
    let mut value =
        if fillable { Some(Value::zeros(shape, element).map_err(|e| format!("input `{name}`: {e}"))?) } else { None };
    let target = match value.as_mut() {
        Some(value) => value.host_bytes_mut().map_err(|e| format!("input `{name}`: {e}"))?,
        None => &mut [],
    };
    let mut sink = Sink {
        name,
        datatype,
        element,
        shape,
        count,
        taken: 0,
        flat: None,
        target,
        at: 0,
        one: Vec::with_capacity(8),
        strings: Vec::new(),
        why: None,
    };
    if element == ElementType::String {
        sink.strings.reserve(count.min(data.len() / 2));
    }
    let mut reader = serde_json::Deserializer::from_str(data);
    let read = Node { sink: &mut sink, depth: 0 }.deserialize(&mut reader).and_then(|()| reader.end());
    if let Some(why) = sink.why.take() {
        return Err(why);
    }
    read.map_err(|e| format!("input `{name}`: `data` is not valid JSON: {e}"))?;
    if sink.taken != count {
        return Err(format!("input `{name}`: shape {shape:?} holds {count} element(s), `data` holds {}", sink.taken));
    }
    if element == ElementType::String {
        return Value::from_strings(shape, &sink.strings).map_err(|e| format!("input `{name}`: {e}"));
    }
    drop(sink);
    value.ok_or_else(|| format!("input `{name}`: shape {shape:?} is more than its `data` can hold"))
}

/// Where the elements go, and the first reason to stop (in the protocol's words).
struct Sink<'a> {
    name: &'a str,
    datatype: &'a str,
    element: ElementType,
    shape: &'a [i64],
    count: usize,
    taken: usize,
    /// Whether the outer array is flat (decided by its first item).
    flat: Option<bool>,
    /// The tensor's bytes (empty when `data` cannot fill the shape: then elements are only
    /// counted), and where the next element goes.
    target: &'a mut [u8],
    at: usize,
    /// One element's little-endian bytes.
    one: Vec<u8>,
    strings: Vec<String>,
    why: Option<String>,
}

impl Sink<'_> {
    fn stop<E: de::Error>(&mut self, why: String) -> E {
        let name = self.name;
        self.why.get_or_insert_with(|| format!("input `{name}`: {why}"));
        E::custom("refused")
    }

    fn ragged<E: de::Error>(&mut self, what: String) -> E {
        let shape = self.shape;
        self.stop(format!(
            "nested `data` does not follow shape {shape:?}: {what}; send a flat array or arrays nested as the shape"
        ))
    }

    /// Whether an element may stand `depth` arrays deep: alone, in a flat array, or at the last
    /// axis of a nested one.
    fn placed<E: de::Error>(&mut self, depth: usize) -> Result<(), E> {
        match (depth, self.flat) {
            (0, _) | (1, Some(true)) => Ok(()),
            (1, None) => {
                self.flat = Some(true);
                Ok(())
            }
            (d, _) if d == self.shape.len() => Ok(()),
            (d, _) => Err(self.ragged(format!("an element at depth {d}, above the last axis"))),
        }
    }

    fn push<E: de::Error>(&mut self, depth: usize, item: Item<'_>) -> Result<(), E> {
        self.placed(depth)?;
        if self.taken == self.count {
            let (shape, count) = (self.shape, self.count);
            return Err(self.stop(format!("shape {shape:?} holds {count} element(s), `data` holds more")));
        }
        let out = &mut self.one;
        out.clear();
        let fits = match (self.element, &item) {
            (ElementType::Bool, Item::Bool(b)) => {
                out.push(u8::from(*b));
                Some(())
            }
            (ElementType::String, Item::Str(s)) => {
                self.strings.push((*s).to_owned());
                Some(())
            }
            (ElementType::U8, _) => item.uint().and_then(|v| u8::try_from(v).ok()).map(|v| out.extend([v])),
            (ElementType::U16, _) => {
                item.uint().and_then(|v| u16::try_from(v).ok()).map(|v| out.extend(v.to_le_bytes()))
            }
            (ElementType::U32, _) => {
                item.uint().and_then(|v| u32::try_from(v).ok()).map(|v| out.extend(v.to_le_bytes()))
            }
            (ElementType::U64, _) => item.uint().map(|v| out.extend(v.to_le_bytes())),
            (ElementType::I8, _) => item.int().and_then(|v| i8::try_from(v).ok()).map(|v| out.extend(v.to_le_bytes())),
            (ElementType::I16, _) => {
                item.int().and_then(|v| i16::try_from(v).ok()).map(|v| out.extend(v.to_le_bytes()))
            }
            (ElementType::I32, _) => {
                item.int().and_then(|v| i32::try_from(v).ok()).map(|v| out.extend(v.to_le_bytes()))
            }
            (ElementType::I64, _) => item.int().map(|v| out.extend(v.to_le_bytes())),
            (ElementType::F16, _) => item.float().map(|v| out.extend(f16::from_f64(v).to_le_bytes())),
            (ElementType::BF16, _) => item.float().map(|v| out.extend(bf16::from_f64(v).to_le_bytes())),
            (ElementType::F32, _) => item.float().map(|v| out.extend((v as f32).to_le_bytes())),
            (ElementType::F64, _) => item.float().map(|v| out.extend(v.to_le_bytes())),
            _ => None,
        };
        if fits.is_none() {
            let datatype = self.datatype;
            return Err(self.stop(format!("{item} is not a valid {datatype} element")));
        }
        let end = self.at + self.one.len();
        if let Some(slot) = self.target.get_mut(self.at..end) {
            slot.copy_from_slice(&self.one);
        }
        self.at = end;
        self.taken += 1;
        Ok(())
    }
}

/// One JSON element as read.
enum Item<'s> {
    Bool(bool),
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(&'s str),
    Other(&'static str),
}

impl Item<'_> {
    fn uint(&self) -> Option<u64> {
        match *self {
            Item::Uint(v) => Some(v),
            _ => None,
        }
    }

    fn int(&self) -> Option<i64> {
        match *self {
            Item::Uint(v) => i64::try_from(v).ok(),
            Item::Int(v) => Some(v),
            _ => None,
        }
    }

    fn float(&self) -> Option<f64> {
        match *self {
            Item::Uint(v) => Some(v as f64),
            Item::Int(v) => Some(v as f64),
            Item::Float(v) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for Item<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Bool(b) => write!(f, "{b}"),
            Item::Uint(v) => write!(f, "{v}"),
            Item::Int(v) => write!(f, "{v}"),
            Item::Float(v) => write!(f, "{v}"),
            Item::Str(s) => write!(f, "{s:?}"),
            Item::Other(what) => f.write_str(what),
        }
    }
}

/// A JSON value `depth` arrays deep in `data`.
struct Node<'s, 'a> {
    sink: &'s mut Sink<'a>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Node<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, reader: D) -> Result<(), D::Error> {
        reader.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor elements")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.sink.push(self.depth, Item::Bool(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        self.sink.push(self.depth, Item::Uint(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        self.sink.push(self.depth, Item::Int(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        self.sink.push(self.depth, Item::Float(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        self.sink.push(self.depth, Item::Str(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.sink.push(self.depth, Item::Other("null"))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<(), A::Error> {
        self.sink.push(self.depth, Item::Other("an object"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let (sink, depth) = (self.sink, self.depth);
        // The outer array is flat or nested as its first item says; an inner one is nested.
        if depth == 1 {
            match sink.flat {
                None => sink.flat = Some(false),
                Some(true) => return Err(sink.ragged("an array among the elements of a flat array".into())),
                Some(false) => {}
            }
        }
        if depth > 0 && sink.shape.get(depth).is_none() {
            return Err(sink.ragged(format!("an array at depth {depth}, below the last axis")));
        }
        let mut length = 0usize;
        while items.next_element_seed(Node { sink: &mut *sink, depth: depth + 1 })?.is_some() {
            length += 1;
        }
        let nested = depth > 0 || sink.flat == Some(false);
        match sink.shape.get(depth) {
            Some(&axis) if nested && i64::try_from(length).ok() != Some(axis) => {
                Err(sink.ragged(format!("an array of {length} at depth {depth} where axis {depth} is {axis}")))
            }
            None if nested => Err(sink.ragged(format!("an array at depth {depth}, below the last axis"))),
            _ => Ok(()),
        }
    }
}

/// A tensor's elements as a JSON array, written as they are read (non-finite floats become
/// `null`, as JSON has no NaN).
pub struct Elements<'v>(pub &'v Value<'static>);

impl Serialize for Elements<'_> {
    fn serialize<S: Serializer>(&self, out: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let value = self.0;
        let failed = |e: onnxrt::Error| S::Error::custom(e.to_string());
        let info = value.tensor_info().map_err(failed)?;
        let mut seq = out.serialize_seq(Some(info.len()))?;
        match info.element_type {
            ElementType::String => {
                value.strings().map_err(failed)?.iter().try_for_each(|s| seq.serialize_element(s))?
            }
            ElementType::Bool => each::<bool, _, _>(value, &mut seq, |&b| b).map_err(failed)??,
            ElementType::U8 => each::<u8, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::U16 => each::<u16, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::U32 => each::<u32, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::U64 => each::<u64, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::I8 => each::<i8, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::I16 => each::<i16, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::I32 => each::<i32, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            ElementType::I64 => each::<i64, _, _>(value, &mut seq, |&x| x).map_err(failed)??,
            // As f64, as the answers always were (a client reading them as f64 gets the same numbers).
            ElementType::F32 => each::<f32, _, _>(value, &mut seq, |&x| finite(f64::from(x))).map_err(failed)??,
            ElementType::F64 => each::<f64, _, _>(value, &mut seq, |&x| finite(x)).map_err(failed)??,
            ElementType::F16 => {
                each::<f16, _, _>(value, &mut seq, |x| finite(f64::from(x.to_f32()))).map_err(failed)??
            }
            ElementType::BF16 => {
                each::<bf16, _, _>(value, &mut seq, |x| finite(f64::from(x.to_f32()))).map_err(failed)??
            }
            other => return Err(S::Error::custom(format!("{other} has no protocol datatype"))),
        }
        seq.end()
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// Each element of `value` as `T`, converted, into `seq`.
fn each<T: onnxrt::Element, U: Serialize, Q: SerializeSeq>(
    value: &Value<'_>,
    seq: &mut Q,
    convert: impl Fn(&T) -> U,
) -> onnxrt::Result<Result<(), Q::Error>> {
    let view = value.view::<T>()?;
    Ok(view.iter().try_for_each(|x| seq.serialize_element(&convert(x))))
}

/// Why an answer's encoding stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It grew past its limit.
    TooLarge,
    /// Its deadline passed.
    Late,
}

/// A growing buffer that refuses to grow past `limit` bytes or past `deadline`.
pub struct BoundedWriter {
    /// What has been written.
    pub out: Vec<u8>,
    limit: usize,
    deadline: Option<Instant>,
    checked_at: usize,
    /// Set when a write was refused.
    pub stopped: Option<Stopped>,
}

impl BoundedWriter {
    /// An empty buffer bounded by `limit` bytes and `deadline`.
    pub fn new(limit: usize, deadline: Option<Instant>) -> BoundedWriter {
        BoundedWriter { out: Vec::new(), limit, deadline, checked_at: 0, stopped: None }
    }
}

impl std::io::Write for BoundedWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + bytes.len() > self.limit {
            self.stopped = Some(Stopped::TooLarge);
            return Err(std::io::Error::other("the answer is over its limit"));
        }
        // The clock is read once a MiB.
        if self.out.len() - self.checked_at > 1 << 20 {
            self.checked_at = self.out.len();
            if self.deadline.is_some_and(|at| Instant::now() >= at) {
                self.stopped = Some(Stopped::Late);
                return Err(std::io::Error::other("the answer's deadline passed"));
            }
        }
        self.out.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
