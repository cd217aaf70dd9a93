//! The inputs of `onnxrt run`: `.npy` files given with `--input`, and for every other input a
//! generated tensor, its shape the declared one with free axes taken from `--shape` (else 1),
//! filled with zeros or seeded pseudo-random values (the same seed gives the same values).

use onnxrt::{Dim, ElementType, Value, ValueInfo, ValueKind};

use crate::error::{CliError, Result};
use crate::npy::{Npy, NpyData};

/// How generated inputs are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Seeded pseudo-random values: floats in [0, 1), `uint8` in 0..=255, other integers in 0..10, bools.
    Random,
    /// All zeros (false).
    Zeros,
}

/// Parses `NAME=1x3x224x224` (`--shape`).
pub fn parse_shape(text: &str) -> Result<(String, Vec<i64>)> {
    let usage = || {
        CliError::Usage(format!(
            "--shape takes NAME=DIMS with DIMS like 1x3x224x224 (a scalar: NAME=), got `{text}`\nSee `onnxrt run --help`."
        ))
    };
    let (name, dims) = text.split_once('=').filter(|(n, _)| !n.is_empty()).ok_or_else(usage)?;
    if dims.is_empty() {
        return Ok((name.to_owned(), Vec::new()));
    }
    let dims = dims.split(['x', 'X', ',']).map(|d| d.trim().parse::<i64>().ok().filter(|&d| d >= 0));
    let dims: Option<Vec<i64>> = dims.collect();
    Ok((name.to_owned(), dims.ok_or_else(usage)?))
}

/// SplitMix64: small, fast and good enough for test data; the same seed, the same stream.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A stream for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The shape to generate for `info`: `--shape` if given (its rank and fixed axes must agree with
/// the model's), else the declared shape with each free axis 1. Also the free axes so set.
fn shape_for(info: &ValueInfo, given: Option<&[i64]>) -> Result<(Vec<i64>, Vec<String>)> {
    if let Some(given) = given {
        let fits = given.len() == info.shape.len()
            && info.shape.iter().zip(given).all(|(d, &g)| !matches!(d, Dim::Fixed(n) if *n >= 0 && *n != g));
        if !fits {
            return Err(CliError::Failed(format!(
                "--shape {}={}: the model declares input `{}` as {}; give every axis, with the fixed ones as declared",
                info.name,
                given.iter().map(i64::to_string).collect::<Vec<_>>().join("x"),
                info.name,
                info.shape_text()
            )));
        }
        return Ok((given.to_vec(), Vec::new()));
    }
    let mut free = Vec::new();
    let shape = info
        .shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) if *n >= 0 => *n,
            Dim::Symbolic(name) => {
                free.push(name.clone());
                1
            }
            _ => {
                free.push("?".into());
                1
            }
        })
        .collect();
    Ok((shape, free))
}

fn numbers<T>(len: usize, fill: Fill, rng: &mut Rng, random: impl Fn(&mut Rng) -> T, zero: T) -> Vec<T>
where
    T: Clone,
{
    match fill {
        Fill::Zeros => vec![zero; len],
        Fill::Random => (0..len).map(|_| random(rng)).collect(),
    }
}

/// A generated tensor for `info`, and a line describing it.
///
/// # Errors
/// An input that is not a numeric or bool tensor, or a `--shape` that does not fit.
pub fn generate(
    info: &ValueInfo,
    given: Option<&[i64]>,
    fill: Fill,
    rng: &mut Rng,
) -> Result<(Value<'static>, String)> {
    let element = match (info.kind, info.element_type) {
        (ValueKind::Tensor, Some(element)) => element,
        _ => {
            return Err(CliError::Failed(format!(
                "input `{}` is a {}, not a tensor; onnxrt run generates tensors only: pass it with --input",
                info.name,
                crate::inspect::type_name(info)
            )))
        }
    };
    let (shape, free) = shape_for(info, given)?;
    let len = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
    let len = len.ok_or_else(|| CliError::Failed(format!("input `{}`: shape {shape:?} is too large", info.name)))?;
    let fail = |e: onnxrt::Error| CliError::Failed(format!("input `{}`: {e}", info.name));
    let f = |r: &mut Rng| r.unit();
    let int = |r: &mut Rng| r.below(10);
    let value = match element {
        ElementType::F32 => Value::from_vec(&shape, numbers(len, fill, rng, |r| f(r) as f32, 0.0)),
        ElementType::F64 => Value::from_vec(&shape, numbers(len, fill, rng, f, 0.0)),
        ElementType::F16 => {
            Value::from_vec(&shape, numbers(len, fill, rng, |r| onnxrt::half::f16::from_f64(f(r)), Default::default()))
        }
        ElementType::BF16 => {
            Value::from_vec(&shape, numbers(len, fill, rng, |r| onnxrt::half::bf16::from_f64(f(r)), Default::default()))
        }
        ElementType::I8 => Value::from_vec(&shape, numbers(len, fill, rng, |r| int(r) as i8, 0)),
        ElementType::I16 => Value::from_vec(&shape, numbers(len, fill, rng, |r| int(r) as i16, 0)),
        ElementType::I32 => Value::from_vec(&shape, numbers(len, fill, rng, |r| int(r) as i32, 0)),
        ElementType::I64 => Value::from_vec(&shape, numbers(len, fill, rng, |r| int(r) as i64, 0)),
        ElementType::U8 => Value::from_vec(&shape, numbers(len, fill, rng, |r| r.below(256) as u8, 0)),
        ElementType::U16 => Value::from_vec(&shape, numbers(len, fill, rng, |r| int(r) as u16, 0)),
        ElementType::U32 => Value::from_vec(&shape, numbers(len, fill, rng, |r| int(r) as u32, 0)),
        ElementType::U64 => Value::from_vec(&shape, numbers(len, fill, rng, int, 0)),
        ElementType::Bool => Value::from_vec(&shape, numbers(len, fill, rng, |r| r.below(2) == 1, false)),
        other => {
            return Err(CliError::Failed(format!(
                "input `{}` is a {other} tensor, which onnxrt run does not generate; pass it with --input",
                info.name
            )))
        }
    }
    .map_err(fail)?;
    let what = match (fill, element) {
        (Fill::Zeros, _) => "zeros".to_owned(),
        (Fill::Random, ElementType::F32 | ElementType::F64 | ElementType::F16 | ElementType::BF16) => {
            "random in [0, 1)".into()
        }
        (Fill::Random, ElementType::U8) => "random in 0..=255".into(),
        (Fill::Random, ElementType::Bool) => "random true/false".into(),
        (Fill::Random, _) => "random in 0..=9".into(),
    };
    let mut line = format!("{element} {shape:?}, {what}");
    if !free.is_empty() {
        line.push_str(&format!(" (free axes {} set to 1; choose with --shape {}=DIMS)", free.join(", "), info.name));
    }
    Ok((value, line))
}

/// A `.npy` array as a value.
pub fn from_npy(name: &str, array: Npy) -> Result<Value<'static>> {
    let shape: Vec<i64> = array.shape.iter().map(|&d| d as i64).collect();
    let value = match array.data {
        NpyData::F32(v) => Value::from_vec(&shape, v),
        NpyData::F64(v) => Value::from_vec(&shape, v),
        NpyData::I32(v) => Value::from_vec(&shape, v),
        NpyData::I64(v) => Value::from_vec(&shape, v),
        NpyData::U8(v) => Value::from_vec(&shape, v),
        NpyData::Bool(v) => Value::from_vec(&shape, v),
    };
    value.map_err(|e| CliError::Failed(format!("input `{name}`: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_bad_ones_are_usage_errors() {
        assert_eq!(parse_shape("images=1x3x224x224").ok(), Some(("images".into(), vec![1, 3, 224, 224])));
        assert_eq!(parse_shape("s=").ok(), Some(("s".into(), vec![])));
        for bad in ["images", "=1x2", "a=1xb", "a=-1"] {
            assert!(matches!(parse_shape(bad), Err(CliError::Usage(_))), "{bad}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_stream_and_another_does_not() {
        let take = |seed| {
            let mut rng = Rng::new(seed);
            (0..16).map(|_| rng.unit()).collect::<Vec<f64>>()
        };
        assert_eq!(take(7), take(7));
        assert_ne!(take(7), take(8));
        assert!(take(1).iter().all(|x| (0.0..1.0).contains(x)));
    }
}
