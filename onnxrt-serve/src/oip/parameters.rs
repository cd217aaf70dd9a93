//! The protocol's request and output `parameters`, read once with one set of rules whichever
//! protocol brought them: REST's JSON values and gRPC's `InferParameter`s both become
//! [`Parameter`]s, then [`request_parameters`], [`output_parameters`] and [`place`] (a tensor in
//! shared memory, inputs and outputs) decide.

use std::time::Duration;

/// One parameter's value, as either protocol carries it.
#[derive(Debug, Clone, PartialEq)]
pub enum Parameter {
    /// `true`/`false` (gRPC `bool_param`).
    Bool(bool),
    /// A whole number (gRPC `int64_param`; JSON integers below zero).
    Int(i64),
    /// A whole number (gRPC `uint64_param`; JSON integers from zero).
    Uint(u64),
    /// A number with a fraction or exponent (gRPC `double_param`; JSON `5.0`).
    Double(f64),
    /// Text (gRPC `string_param`).
    Text(String),
    /// Anything else REST's JSON can hold (an array, an object), named.
    Other(&'static str),
}

impl std::fmt::Display for Parameter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Parameter::Bool(b) => write!(f, "{b}"),
            Parameter::Int(n) => write!(f, "{n}"),
            Parameter::Uint(n) => write!(f, "{n}"),
            Parameter::Double(x) => write!(f, "{x:?}"),
            Parameter::Text(s) => write!(f, "{s:?}"),
            Parameter::Other(what) => f.write_str(what),
        }
    }
}

impl Parameter {
    /// A JSON value as a parameter; `None` for `null` (as if absent).
    pub fn of_json(value: &serde_json::Value) -> Option<Parameter> {
        use serde_json::Value as Json;
        Some(match value {
            Json::Null => return None,
            Json::Bool(b) => Parameter::Bool(*b),
            Json::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Parameter::Uint(u),
                (None, Some(i)) => Parameter::Int(i),
                _ => Parameter::Double(n.as_f64().unwrap_or(f64::NAN)),
            },
            Json::String(s) => Parameter::Text(s.clone()),
            Json::Array(_) => Parameter::Other("an array"),
            Json::Object(_) => Parameter::Other("an object"),
        })
    }

    /// A whole number of at least zero, else `None`.
    fn count(&self) -> Option<u64> {
        match *self {
            Parameter::Uint(n) => Some(n),
            Parameter::Int(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    /// Whether a flag is on: `true`, or 1 (some clients send numbers); 0 and `false` are off.
    fn flag(&self, key: &str) -> Result<bool, String> {
        match (self, self.count()) {
            (Parameter::Bool(b), _) => Ok(*b),
            (_, Some(n @ (0 | 1))) => Ok(n == 1),
            _ => Err(format!("parameter `{key}` must be true or false, got {self}")),
        }
    }

    /// Whether a sequence parameter names a sequence: a nonzero number, nonempty text, `true`.
    fn names_sequence(&self) -> bool {
        match self {
            Parameter::Bool(b) => *b,
            Parameter::Int(n) => *n != 0,
            Parameter::Uint(n) => *n != 0,
            Parameter::Double(x) => *x != 0.0,
            Parameter::Text(s) => !s.is_empty(),
            Parameter::Other(_) => true,
        }
    }
}

/// What a request's own parameters ask for.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RequestParameters {
    /// `timeout` in microseconds (0: none of its own).
    pub timeout: Option<Duration>,
    /// `binary_data_output`: every output as raw bytes.
    pub all_binary: bool,
    /// `sequence_id`/`sequence_start`/`sequence_end` when one names a sequence, e.g.
    /// `(sequence_id 5)`.
    pub sequence: Option<String>,
}

/// What an output's parameters ask for.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct OutputParameters {
    /// `binary_data`: this output as raw bytes.
    pub binary: bool,
    /// `class_count` (KServe) or `classification` (Triton): the classification extension.
    pub class_count: u64,
    /// `shared_memory_*`: written into a registered region instead of the answer.
    pub place: Option<Place>,
}

/// A tensor's place in a shared-memory region, from its `shared_memory_*` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The region's name.
    pub region: String,
    /// Bytes, from `offset`.
    pub byte_size: u64,
    /// From the region's start.
    pub offset: u64,
}

/// A request's parameters, each looked up by `get`.
pub fn request_parameters(get: impl Fn(&str) -> Option<Parameter>) -> Result<RequestParameters, String> {
    let timeout = match get("timeout") {
        None => None,
        Some(micros) => Some(micros.count().ok_or_else(|| {
            format!("parameter `timeout` must be a whole number of microseconds (0 or more), got {micros}")
        })?),
    }
    .filter(|&micros| micros > 0)
    .map(Duration::from_micros);
    let all_binary = get("binary_data_output").map(|p| p.flag("binary_data_output")).transpose()?.unwrap_or(false);
    let sequence = ["sequence_id", "sequence_start", "sequence_end"]
        .iter()
        .find_map(|key| get(key).filter(Parameter::names_sequence).map(|v| format!("({key} {v})")));
    Ok(RequestParameters { timeout, all_binary, sequence })
}

/// Output `name`'s parameters, each looked up by `get`.
pub fn output_parameters(name: &str, get: impl Fn(&str) -> Option<Parameter>) -> Result<OutputParameters, String> {
    let class_count = match get("class_count")
        .map(|p| ("class_count", p))
        .or_else(|| get("classification").map(|p| ("classification", p)))
    {
        None => 0,
        Some((key, count)) => count
            .count()
            .ok_or_else(|| format!("output `{name}`: `{key}` must be a whole number (0 or more), got {count}"))?,
    };
    let binary =
        get("binary_data").map(|p| p.flag("binary_data")).transpose().map_err(|e| format!("output `{name}`: {e}"))?;
    let place = place(name, &get)?;
    Ok(OutputParameters { binary: binary.unwrap_or(false), class_count, place })
}

/// Where tensor `tensor`'s bytes lie when its parameters (looked up by `get`) name a
/// shared-memory region: `shared_memory_region` (text), `shared_memory_byte_size` and
/// `shared_memory_offset` (whole numbers; the offset 0 when absent). `None` when they name none.
pub fn place(tensor: &str, get: impl Fn(&str) -> Option<Parameter>) -> Result<Option<Place>, String> {
    let region = match get("shared_memory_region") {
        None => None,
        Some(Parameter::Text(region)) => Some(region),
        Some(other) => return Err(format!("`{tensor}`: shared_memory_region must be a string, got {other}")),
    };
    let (byte_size, offset) = (get("shared_memory_byte_size"), get("shared_memory_offset"));
    let Some(region) = region else {
        return match (byte_size, offset) {
            (None, None) => Ok(None),
            _ => Err(format!("`{tensor}`: shared_memory_byte_size or _offset without shared_memory_region")),
        };
    };
    let byte_size = match byte_size.map(|size| size.count()) {
        Some(Some(size)) => size,
        Some(None) => return Err(format!("`{tensor}`: shared_memory_byte_size must be a whole number of bytes")),
        None => return Err(format!("`{tensor}`: shared_memory_region `{region}` needs shared_memory_byte_size")),
    };
    let offset = match offset.map(|offset| offset.count()) {
        Some(Some(offset)) => offset,
        Some(None) => return Err(format!("`{tensor}`: shared_memory_offset must be a whole number of bytes")),
        None => 0,
    };
    Ok(Some(Place { region, byte_size, offset }))
}

#[cfg(feature = "server")]
impl From<&crate::oip::grpc::infer_parameter::ParameterChoice> for Parameter {
    fn from(choice: &crate::oip::grpc::infer_parameter::ParameterChoice) -> Parameter {
        use crate::oip::grpc::infer_parameter::ParameterChoice as Choice;
        match choice {
            Choice::BoolParam(b) => Parameter::Bool(*b),
            Choice::Int64Param(n) => Parameter::Int(*n),
            Choice::Uint64Param(n) => Parameter::Uint(*n),
            Choice::DoubleParam(x) => Parameter::Double(*x),
            Choice::StringParam(s) => Parameter::Text(s.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of<'a>(pairs: &'a [(&'a str, Parameter)]) -> impl Fn(&str) -> Option<Parameter> + 'a {
        move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone())
    }

    #[test]
    fn one_set_of_rules() {
        let read = request_parameters(of(&[("timeout", Parameter::Int(2_000))])).expect("timeout");
        assert_eq!(read.timeout, Some(Duration::from_millis(2)));
        assert_eq!(request_parameters(of(&[("timeout", Parameter::Uint(0))])).expect("0").timeout, None);
        for bad in [Parameter::Int(-1), Parameter::Double(5.0), Parameter::Text("5".into())] {
            assert!(request_parameters(of(&[("timeout", bad.clone())])).is_err(), "{bad}");
        }
        let sequence = request_parameters(of(&[("sequence_id", Parameter::Double(5.0))])).expect("sequence");
        assert_eq!(sequence.sequence.as_deref(), Some("(sequence_id 5.0)"));
        let none = request_parameters(of(&[
            ("sequence_id", Parameter::Double(0.0)),
            ("sequence_start", Parameter::Bool(false)),
        ]));
        assert_eq!(none.expect("no sequence").sequence, None);
        let output = output_parameters("y", of(&[("class_count", Parameter::Uint(3))])).expect("class_count");
        assert_eq!(output.class_count, 3);
        let error = output_parameters("y", of(&[("classification", Parameter::Int(-1))])).expect_err("negative");
        assert!(error.contains("`classification` must be a whole number"), "{error}");
        assert!(output_parameters("y", of(&[("binary_data", Parameter::Text("yes".into()))])).is_err());
        let placed = output_parameters(
            "y",
            of(&[
                ("shared_memory_region", Parameter::Text("r".into())),
                ("shared_memory_byte_size", Parameter::Int(8)),
            ]),
        );
        assert_eq!(placed.expect("place").place, Some(Place { region: "r".into(), byte_size: 8, offset: 0 }));
        for bad in [
            vec![("shared_memory_region", Parameter::Uint(1)), ("shared_memory_byte_size", Parameter::Uint(8))],
            vec![("shared_memory_region", Parameter::Text("r".into()))],
            vec![
                ("shared_memory_region", Parameter::Text("r".into())),
                ("shared_memory_byte_size", Parameter::Int(-8)),
            ],
            vec![
                ("shared_memory_region", Parameter::Text("r".into())),
                ("shared_memory_byte_size", Parameter::Uint(8)),
                ("shared_memory_offset", Parameter::Double(1.0)),
            ],
            vec![("shared_memory_offset", Parameter::Uint(8))],
        ] {
            assert!(place("x", of(&bad)).is_err(), "{bad:?}");
        }
    }
}
