//! Checks inputs against the model's declarations before ORT sees them: the one input check of
//! the workspace. Runs use it ([`inputs`]); callers that check a request before it reaches a run
//! (a server, a batcher) use it through [`check_inputs`], [`Session::check_inputs`],
//! [`ValueInfo::check`] and [`ValueInfo::check_sample`].

use crate::element::ElementType;
use crate::error::{Error, Names, Result, ShapeText};
use crate::session::{Dim, Session, ValueInfo};
use crate::value::{Value, ValueKind};

/// Checks names, kinds, types and shapes, handing each accepted (model input index, value) to
/// `accept` in the order given (so callers build their arrays without an intermediate one).
///
/// An input the model declares of optional type may be absent: given as [`Value::none`] or not
/// given at all. Such an input is not handed to `accept`, so ORT's `Run` does not see it: ORT
/// takes a graph input that is not fed as an absent optional (its `Identity` kernel says so), while
/// the `None` value an `Optional` node makes crashes ORT 1.16.2's `Run` when fed back as an input.
pub(crate) fn inputs<'v, 'd>(
    session: &Session,
    given: &[(&str, &'v Value<'d>)],
    accept: impl FnMut(usize, &'v Value<'d>),
) -> Result<()> {
    inputs_against(session.inputs(), given, accept)
}

/// Checks candidate inputs against `declared` (a session's [`inputs`](Session::inputs), or a
/// copy whose free axes a server has narrowed) as a run checks them, before any run: every
/// name known and given once, every required input given, and each value's kind, element type,
/// rank and fixed dimensions (and a bool tensor's bytes). Errors are the run's own:
/// [`Error::UnknownInput`], [`Error::DuplicateInput`], [`Error::MissingInput`],
/// [`Error::ValueKind`], [`Error::ElementTypeMismatch`], [`Error::ShapeMismatch`].
///
/// ```
/// let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/multi_output.onnx");
/// let session = onnxrt::Session::builder().commit_from_file(model)?;
/// let mut declared = session.inputs().to_vec();
/// declared[0].shape = vec![onnxrt::Dim::Fixed(2)];
/// let x = onnxrt::Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0])?;
/// assert!(matches!(
///     onnxrt::check_inputs(&declared, &[("x", &x)]),
///     Err(onnxrt::Error::ShapeMismatch { .. })
/// ));
/// assert!(session.check_inputs(&[("x", &x)]).is_ok());
/// # Ok::<(), onnxrt::Error>(())
/// ```
pub fn check_inputs(declared: &[ValueInfo], given: &[(&str, &Value<'_>)]) -> Result<()> {
    inputs_against(declared, given, |_, _| ())
}

impl Session {
    /// Checks candidate inputs against this model's inputs without running it: what
    /// [`run`](Session::run) checks first, with the same errors ([`check_inputs`]).
    pub fn check_inputs(&self, given: &[(&str, &Value<'_>)]) -> Result<()> {
        check_inputs(self.inputs(), given)
    }
}

impl ValueInfo {
    /// Checks one value against this declaration as a run does: its kind, element type, rank
    /// and fixed dimensions, and a bool tensor's bytes (0 or 1).
    pub fn check(&self, value: &Value<'_>) -> Result<()> {
        check_value(self, value)?;
        value.check_valid_bytes(|| format!("input `{}`", self.name))
    }

    /// Checks one sample of a batch against this declaration, whose first axis is the batch
    /// axis: the value has the declared shape without that axis, or with a leading axis of 1.
    /// A [`Error::ShapeMismatch`] names the sample's shape.
    pub fn check_sample(&self, value: &Value<'_>) -> Result<()> {
        let Some((_, sample)) = self.shape.split_first() else {
            return Err(Error::InvalidArgument {
                what: format!("a sample for `{}`", self.name),
                why: "it is a scalar: it has no batch axis".into(),
            });
        };
        let rank = value.meta()?.tensor.as_ref().map(|t| t.shape.len());
        if rank == Some(self.shape.len()) {
            // With its batch axis: of 1 row, else the sample shape is what it breaks.
            let with_axis = ValueInfo { shape: [&[Dim::Fixed(1)], sample].concat(), ..self.clone() };
            return with_axis.check(value).map_err(|e| sample_mismatch(e, sample));
        }
        let without_axis = ValueInfo { shape: sample.to_vec(), ..self.clone() };
        without_axis.check(value).map_err(|e| sample_mismatch(e, sample))
    }
}

/// A shape mismatch of a sample states the sample shape and how a sample is given.
fn sample_mismatch(error: Error, sample: &[Dim]) -> Error {
    match error {
        Error::ShapeMismatch { name, got, .. } => {
            let dims: Vec<String> = sample.iter().map(Dim::to_string).collect();
            Error::ShapeMismatch {
                name,
                expected: ShapeText(format!("[{}]", dims.join(", "))),
                got,
                hint: "; a sample is given without the batch axis (a leading axis of 1 is accepted)".into(),
            }
        }
        other => other,
    }
}

fn inputs_against<'v, 'd>(
    declared: &[ValueInfo],
    given: &[(&str, &'v Value<'d>)],
    mut accept: impl FnMut(usize, &'v Value<'d>),
) -> Result<()> {
    // A bit per declared input (models with more than 128 inputs fall back to a Vec).
    let mut seen = Seen::new(declared.len());
    for (position, &(name, value)) in given.iter().enumerate() {
        // Inputs usually come in model order: try that position before searching by name.
        let index = match declared.get(position) {
            Some(info) if info.name == name => position,
            _ => declared.iter().position(|i| i.name == name).ok_or_else(|| Error::UnknownInput {
                name: name.to_owned(),
                valid: Names(declared.iter().map(|i| i.name.clone()).collect()),
            })?,
        };
        if seen.insert(index) {
            return Err(Error::DuplicateInput { name: name.to_owned() });
        }
        if is_absent(&declared[index], value)? {
            continue;
        }
        declared[index].check(value)?;
        accept(index, value);
    }
    let required = |i: &usize| declared[*i].kind != ValueKind::Optional;
    if let Some(missing) = seen.missing(declared.len()).find(required) {
        return Err(missing_input(declared, missing));
    }
    Ok(())
}

/// The error for a request that lacks input `index` of `declared`.
fn missing_input(declared: &[ValueInfo], index: usize) -> Error {
    let info = &declared[index];
    Error::MissingInput {
        name: info.name.clone(),
        element_type: info.element_type.unwrap_or(ElementType::Unknown(0)),
        shape: ShapeText(info.shape_text()),
        required: Names(declared.iter().map(|i| i.name.clone()).collect()),
    }
}

/// Whether `value` is an absent optional (`None`) for an input declared optional, which is then
/// left out of the run. `None` for any other input is refused.
fn is_absent(info: &ValueInfo, value: &Value<'_>) -> Result<bool> {
    if value.meta()?.kind != ValueKind::Optional {
        return Ok(false);
    }
    if info.kind == ValueKind::Optional {
        Ok(true)
    } else {
        Err(absent_optional(&info.name))
    }
}

fn check_value(info: &ValueInfo, value: &Value<'_>) -> Result<()> {
    let meta = value.meta()?;
    if meta.kind == ValueKind::Optional {
        // Only IoBinding gets here (`inputs` leaves absent values out before): ORT 1.16.2's
        // `Run` crashes (SIGSEGV) on the `None` value an `Optional` node makes.
        return Err(Error::InvalidArgument {
            what: format!("binding an absent optional value (None) to `{}`", info.name),
            why: "ONNX Runtime crashes on a None value handed to it; use Session::run, which leaves an absent \
                  optional input out"
                .into(),
        });
    }
    // An optional input takes an absent value, or a present one: the tensor or sequence itself.
    let accepted = meta.kind == info.kind || (info.kind == ValueKind::Optional && Some(meta.kind) == info.contains);
    if !accepted {
        return Err(Error::ValueKind {
            name: info.name.clone(),
            expected: kind_name(info.kind),
            got: meta.kind.name(),
        });
    }
    let Some(tensor) = &meta.tensor else { return Ok(()) };
    if let Some(expected) = info.element_type {
        if expected != tensor.element_type {
            let hint = match (expected, tensor.element_type) {
                (ElementType::F32, ElementType::F64) => "; convert with `.mapv(|x| x as f32)`".to_owned(),
                (expected, _) => format!("; convert the data to {expected}"),
            };
            return Err(Error::ElementTypeMismatch {
                name: info.name.clone(),
                expected,
                got: tensor.element_type,
                hint,
            });
        }
    }
    let fits = info.shape.len() == tensor.shape.len()
        && info.shape.iter().zip(&tensor.shape).all(|(dim, &got)| !matches!(dim, Dim::Fixed(n) if *n != got));
    if !fits {
        return Err(Error::ShapeMismatch {
            name: info.name.clone(),
            expected: ShapeText(info.shape_text()),
            got: tensor.shape.to_vec(),
            hint: shape_hint(&info.shape, &tensor.shape),
        });
    }
    Ok(())
}

/// `None` for an input that is not of optional type.
fn absent_optional(name: &str) -> Error {
    Error::InvalidArgument {
        what: format!("an absent optional value (None) for `{name}`"),
        why: "only an input the model declares of optional type can be absent (pass Value::none for it, or leave it \
              out); this one needs a value"
            .into(),
    }
}

fn kind_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Tensor => "tensor",
        ValueKind::Sequence => "sequence",
        ValueKind::Map => "map",
        ValueKind::Optional => "optional",
        ValueKind::SparseTensor => "sparse tensor",
        ValueKind::Other(_) => "value",
    }
}

/// Recognises the common mistakes: channels-last data for a channels-first model and back, and
/// a missing or extra batch axis.
fn shape_hint(declared: &[Dim], got: &[i64]) -> String {
    let fixed = |i: usize| match declared.get(i) {
        Some(Dim::Fixed(n)) => Some(*n),
        _ => None,
    };
    if declared.len() == 4 && got.len() == 4 {
        if fixed(1).is_some_and(|c| c == got[3]) && fixed(3).is_none_or(|w| w == got[2]) {
            return "; this looks like NHWC (channels-last) data for an NCHW model: transpose with `.permuted_axes([0, 3, 1, 2])` and make it contiguous".into();
        }
        if fixed(3).is_some_and(|c| c == got[1]) {
            return "; this looks like NCHW (channels-first) data for an NHWC model: transpose with `.permuted_axes([0, 2, 3, 1])`".into();
        }
    }
    if declared.len() == got.len() + 1 {
        return "; the batch axis seems missing: add one with `.insert_axis(Axis(0))`".into();
    }
    if declared.len() + 1 == got.len() {
        return "; there is one axis too many".into();
    }
    String::new()
}

/// Checks a preallocated value against output `name` (IoBinding::bind_output).
pub(crate) fn output_partial(session: &Session, name: &str, value: &Value<'_>) -> Result<()> {
    let index = session.output_index(name)?;
    check_value(&session.outputs()[index], value)
}

/// Checks one value against input `name` (for IoBinding, where inputs are bound one by one).
pub(crate) fn inputs_partial(session: &Session, name: &str, value: &Value<'_>) -> Result<()> {
    let index = session.input_index(name)?;
    session.inputs()[index].check(value)
}

/// Which inputs were given, without allocating for ordinary models.
enum Seen {
    Bits(u128),
    Many(Vec<bool>),
}

impl Seen {
    fn new(len: usize) -> Seen {
        if len <= 128 {
            Seen::Bits(0)
        } else {
            Seen::Many(vec![false; len])
        }
    }

    /// Marks `index`; true if it was already marked.
    fn insert(&mut self, index: usize) -> bool {
        match self {
            Seen::Bits(bits) => {
                let was = *bits & (1 << index) != 0;
                *bits |= 1 << index;
                was
            }
            Seen::Many(flags) => std::mem::replace(&mut flags[index], true),
        }
    }

    /// The indices below `len` not marked, in order.
    fn missing(&self, len: usize) -> impl Iterator<Item = usize> + '_ {
        (0..len).filter(move |&i| match self {
            Seen::Bits(bits) => bits & (1 << i) == 0,
            Seen::Many(flags) => !flags[i],
        })
    }
}
