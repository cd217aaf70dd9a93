//! Which bytes rows `start..end` of a tensor's first axis are, for a copy of some rows between two
//! tensors of one row shape ([`Value::copy_rows_from`](crate::Value::copy_rows_from)). Checked
//! without touching memory, so every refusal is tested on machines without CUDA too.

use std::ops::Range;

use super::info::TensorMeta;
use crate::error::{Error, Result, ShapeText};

/// The byte offset and length of rows `rows` in `to` and in `from`: the same in both, since their
/// element types and row shapes must be equal and both must have those rows. `name` names the
/// destination in errors.
pub(crate) fn row_span(to: &TensorMeta, from: &TensorMeta, rows: &Range<usize>, name: &str) -> Result<(usize, usize)> {
    if to.element_type != from.element_type {
        return Err(Error::ElementTypeMismatch {
            name: name.to_owned(),
            expected: to.element_type,
            got: from.element_type,
            hint: "; copy_rows_from copies bytes and does not convert".into(),
        });
    }
    let element = to.element_type.byte_size().map_err(|_| Error::InvalidArgument {
        what: format!("copy_rows_from of a {} tensor", to.element_type),
        why: "only fixed-size (numeric) elements of a type this crate knows are copied as bytes".into(),
    })?;
    let (Some(&to_rows), Some(&from_rows)) = (to.shape.first(), from.shape.first()) else {
        return Err(Error::InvalidArgument {
            what: "rows of a scalar tensor".into(),
            why: "a scalar has no first axis".into(),
        });
    };
    if to.shape[1..] != from.shape[1..] {
        return Err(Error::ShapeMismatch {
            name: name.to_owned(),
            expected: ShapeText(format!("[rows, {:?}]", &to.shape[1..])),
            got: from.shape.to_vec(),
            hint: "; copy_rows_from copies between tensors whose rows have one shape".into(),
        });
    }
    let have = usize::try_from(to_rows.min(from_rows)).unwrap_or(0);
    if rows.start > rows.end || rows.end > have {
        return Err(Error::InvalidArgument {
            what: format!("rows {}..{} of tensors of {to_rows} and {from_rows} rows", rows.start, rows.end),
            why: format!("the rows must be an ascending range within both (at most {have})"),
        });
    }
    let overflow = || Error::InvalidArgument {
        what: format!("rows {}..{} of a tensor of shape {:?}", rows.start, rows.end, to.shape.as_slice()),
        why: "their byte size overflows".into(),
    };
    let per_row = to.shape[1..].iter().try_fold(element, |bytes, &d| bytes.checked_mul(usize::try_from(d).ok()?));
    let per_row = per_row.ok_or_else(overflow)?;
    let offset = rows.start.checked_mul(per_row).ok_or_else(overflow)?;
    let length = (rows.end - rows.start).checked_mul(per_row).ok_or_else(overflow)?;
    Ok((offset, length))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::ElementType;

    fn meta(element_type: ElementType, shape: &[i64]) -> TensorMeta {
        TensorMeta { element_type, shape: shape.into() }
    }

    #[test]
    fn rows_inside_both_give_their_bytes() {
        let (to, from) = (meta(ElementType::F32, &[8, 3, 2]), meta(ElementType::F32, &[5, 3, 2]));
        assert_eq!(row_span(&to, &from, &(2..5), "x").expect("inside both"), (2 * 24, 3 * 24));
        assert_eq!(row_span(&to, &from, &(5..5), "x").expect("empty at the end"), (5 * 24, 0));
        let bytes = meta(ElementType::U8, &[4]);
        assert_eq!(row_span(&bytes, &bytes, &(1..4), "x").expect("1-d"), (1, 3));
    }

    #[test]
    fn every_other_request_is_refused() {
        let to = meta(ElementType::F32, &[8, 3]);
        let variant = |from: &TensorMeta, rows: Range<usize>| {
            row_span(&to, from, &rows, "x").map(|_| ()).expect_err("refused").variant().to_owned()
        };
        // Past the shorter tensor, a reversed range, a range past usize's rows.
        assert_eq!(variant(&meta(ElementType::F32, &[5, 3]), 4..6), "InvalidArgument");
        #[allow(clippy::reversed_empty_ranges)]
        let reversed = 3..2;
        assert_eq!(variant(&meta(ElementType::F32, &[8, 3]), reversed), "InvalidArgument");
        assert_eq!(variant(&meta(ElementType::F32, &[8, 3]), usize::MAX - 1..usize::MAX), "InvalidArgument");
        // Another element type, another row shape, a scalar, strings.
        assert_eq!(variant(&meta(ElementType::F64, &[8, 3]), 0..1), "ElementTypeMismatch");
        assert_eq!(variant(&meta(ElementType::F32, &[8, 4]), 0..1), "ShapeMismatch");
        assert_eq!(variant(&meta(ElementType::F32, &[24]), 0..1), "ShapeMismatch");
        let scalar = meta(ElementType::F32, &[]);
        assert_eq!(
            row_span(&scalar, &scalar, &(0..0), "x").map(|_| ()).expect_err("refused").variant(),
            "InvalidArgument"
        );
        let strings = meta(ElementType::String, &[2]);
        assert_eq!(
            row_span(&strings, &strings, &(0..1), "x").map(|_| ()).expect_err("refused").variant(),
            "InvalidArgument"
        );
    }

    #[test]
    fn a_row_size_that_overflows_is_refused() {
        let huge = meta(ElementType::F64, &[2, i64::MAX / 2]);
        let error = row_span(&huge, &huge, &(1..2), "x").map(|_| ()).expect_err("refused");
        assert!(error.to_string().contains("overflows"), "{error}");
    }
}
