//! Minimal protobuf wire-format reader.
//!
//! Only what the ONNX messages need: varints, fixed32/fixed64, length-delimited fields, and
//! packed or unpacked repeated scalars. Groups (wire types 3 and 4) are rejected because no
//! ONNX message uses them. Every read is bounds-checked, so malformed input yields a
//! [`DecodeError`] instead of a panic.

use crate::DecodeError;

/// One decoded field value, borrowing from the message buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (little-endian 8 bytes).
    Fixed64(u64),
    /// Wire type 2: a sub-message, string, bytes or packed repeated scalars.
    Len(&'a [u8]),
    /// Wire type 5 (little-endian 4 bytes).
    Fixed32(u32),
}

impl<'a> Value<'a> {
    /// The protobuf wire type number of this value.
    pub fn wire_type(&self) -> u8 {
        match self {
            Value::Varint(_) => 0,
            Value::Fixed64(_) => 1,
            Value::Len(_) => 2,
            Value::Fixed32(_) => 5,
        }
    }
}

/// A cursor over a protobuf-encoded buffer.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// True once every byte has been consumed.
    pub fn is_at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Reads a base-128 varint of at most 10 bytes.
    pub fn read_varint(&mut self) -> Result<u64, DecodeError> {
        let mut result: u64 = 0;
        for i in 0..10 {
            let byte = *self.buf.get(self.pos).ok_or(DecodeError::Truncated("varint"))?;
            self.pos += 1;
            let bits = u64::from(byte & 0x7f);
            // The 10th byte may only carry the single remaining bit of a u64.
            if i == 9 && bits > 1 {
                return Err(DecodeError::Malformed("varint overflows 64 bits".into()));
            }
            result |= bits << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(result);
            }
        }
        Err(DecodeError::Malformed("varint longer than 10 bytes".into()))
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.buf.len()).ok_or(DecodeError::Truncated(what))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    /// Reads a little-endian fixed32.
    pub fn read_fixed32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4, "fixed32")?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Reads a little-endian fixed64.
    pub fn read_fixed64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8, "fixed64")?;
        let mut arr = [0u8; 8];
        arr.copy_from_slice(b);
        Ok(u64::from_le_bytes(arr))
    }

    /// Reads a length prefix and the bytes it covers.
    pub fn read_len_delimited(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.read_varint()?;
        let len = usize::try_from(len).map_err(|_| DecodeError::Truncated("length-delimited"))?;
        self.take(len, "length-delimited")
    }

    /// Reads one field key and its value.
    pub fn read_field(&mut self) -> Result<(u32, Value<'a>), DecodeError> {
        let key = self.read_varint()?;
        let wire_type = (key & 0x7) as u8;
        let number = key >> 3;
        // Field numbers are 29-bit and start at 1.
        if number == 0 || number > 0x1fff_ffff {
            return Err(DecodeError::Malformed(format!("invalid field number {number}")));
        }
        let number = number as u32;
        let value = match wire_type {
            0 => Value::Varint(self.read_varint()?),
            1 => Value::Fixed64(self.read_fixed64()?),
            2 => Value::Len(self.read_len_delimited()?),
            5 => Value::Fixed32(self.read_fixed32()?),
            other => return Err(DecodeError::Malformed(format!("unsupported wire type {other} for field {number}"))),
        };
        Ok((number, value))
    }
}

/// Iterates over the fields of one message; stops after the first error.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    reader: Reader<'a>,
    failed: bool,
}

/// Returns an iterator over the `(field number, value)` pairs of a message.
pub fn fields(buf: &[u8]) -> Fields<'_> {
    Fields { reader: Reader::new(buf), failed: false }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.reader.is_at_end() {
            return None;
        }
        let item = self.reader.read_field();
        self.failed = item.is_err();
        Some(item)
    }
}

fn wrong_type(field: &'static str, value: &Value<'_>) -> DecodeError {
    DecodeError::Malformed(format!("field `{field}` has unexpected wire type {}", value.wire_type()))
}

/// The value of a scalar varint field.
pub fn expect_varint(field: &'static str, value: Value<'_>) -> Result<u64, DecodeError> {
    match value {
        Value::Varint(v) => Ok(v),
        other => Err(wrong_type(field, &other)),
    }
}

/// A varint field holding an `int32`/enum; negative values arrive sign-extended to 64 bits.
pub fn expect_i32(field: &'static str, value: Value<'_>) -> Result<i32, DecodeError> {
    let raw = expect_varint(field, value)? as i64;
    i32::try_from(raw).map_err(|_| DecodeError::Malformed(format!("field `{field}` value {raw} exceeds int32")))
}

/// The bytes of a length-delimited field.
pub fn expect_bytes<'a>(field: &'static str, value: Value<'a>) -> Result<&'a [u8], DecodeError> {
    match value {
        Value::Len(b) => Ok(b),
        other => Err(wrong_type(field, &other)),
    }
}

/// A length-delimited field that must be UTF-8.
pub fn expect_string(field: &'static str, value: Value<'_>) -> Result<String, DecodeError> {
    let bytes = expect_bytes(field, value)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| DecodeError::Malformed(format!("field `{field}` is not valid UTF-8")))
}

/// Appends a repeated varint field, packed or not.
pub fn push_varints(field: &'static str, value: Value<'_>, out: &mut Vec<u64>) -> Result<(), DecodeError> {
    match value {
        Value::Varint(v) => out.push(v),
        Value::Len(bytes) => {
            let mut r = Reader::new(bytes);
            while !r.is_at_end() {
                out.push(r.read_varint()?);
            }
        }
        other => return Err(wrong_type(field, &other)),
    }
    Ok(())
}

/// Appends a repeated fixed32 field (`float`), packed or not.
pub fn push_fixed32(field: &'static str, value: Value<'_>, out: &mut Vec<u32>) -> Result<(), DecodeError> {
    match value {
        Value::Fixed32(v) => out.push(v),
        Value::Len(bytes) => {
            if !bytes.len().is_multiple_of(4) {
                return Err(DecodeError::Malformed(format!(
                    "packed field `{field}` length {} is not a multiple of 4",
                    bytes.len()
                )));
            }
            let mut r = Reader::new(bytes);
            while !r.is_at_end() {
                out.push(r.read_fixed32()?);
            }
        }
        other => return Err(wrong_type(field, &other)),
    }
    Ok(())
}

/// Appends a repeated fixed64 field (`double`), packed or not.
pub fn push_fixed64(field: &'static str, value: Value<'_>, out: &mut Vec<u64>) -> Result<(), DecodeError> {
    match value {
        Value::Fixed64(v) => out.push(v),
        Value::Len(bytes) => {
            if !bytes.len().is_multiple_of(8) {
                return Err(DecodeError::Malformed(format!(
                    "packed field `{field}` length {} is not a multiple of 8",
                    bytes.len()
                )));
            }
            let mut r = Reader::new(bytes);
            while !r.is_at_end() {
                out.push(r.read_fixed64()?);
            }
        }
        other => return Err(wrong_type(field, &other)),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode() {
        let mut r = Reader::new(&[0x00, 0x01, 0xac, 0x02, 0x7f]);
        assert_eq!(r.read_varint(), Ok(0));
        assert_eq!(r.read_varint(), Ok(1));
        assert_eq!(r.read_varint(), Ok(300));
        assert_eq!(r.read_varint(), Ok(127));
        assert!(r.is_at_end());
    }

    #[test]
    fn max_u64_and_negative_int32() {
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert_eq!(Reader::new(&max).read_varint(), Ok(u64::MAX));
        // -1 as an int32 field is sign-extended to ten bytes on the wire.
        assert_eq!(expect_i32("x", Value::Varint(u64::MAX)), Ok(-1));
    }

    #[test]
    fn truncated_varint_is_error() {
        assert_eq!(Reader::new(&[0x80, 0x80]).read_varint(), Err(DecodeError::Truncated("varint")));
        assert!(Reader::new(&[]).read_varint().is_err());
    }

    #[test]
    fn overlong_varint_is_error() {
        let too_long = [0xff; 11];
        assert!(matches!(Reader::new(&too_long).read_varint(), Err(DecodeError::Malformed(_))));
        let overflow = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        assert!(Reader::new(&overflow).read_varint().is_err());
    }

    #[test]
    fn length_past_end_is_error() {
        // Field 1, wire type 2, claims 5 bytes but only 2 follow.
        let mut f = fields(&[0x0a, 0x05, 0x01, 0x02]);
        assert_eq!(f.next(), Some(Err(DecodeError::Truncated("length-delimited"))));
        assert_eq!(f.next(), None);
        // A length near u64::MAX must not overflow the position arithmetic.
        let huge = [0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        assert!(fields(&huge).any(|r| r.is_err()));
    }

    #[test]
    fn fixed_truncated_is_error() {
        assert!(fields(&[0x0d, 0x01, 0x02]).any(|r| r.is_err()));
        assert!(fields(&[0x09, 0x01, 0x02, 0x03, 0x04]).any(|r| r.is_err()));
    }

    #[test]
    fn bad_keys_are_errors() {
        // Field number 0.
        assert!(fields(&[0x00, 0x01]).any(|r| r.is_err()));
        // Wire types 3, 4, 6, 7.
        for wt in [3u8, 4, 6, 7] {
            assert!(fields(&[(1 << 3) | wt, 0x00]).any(|r| r.is_err()), "{wt}");
        }
    }

    #[test]
    fn packed_and_unpacked_repeated() {
        let mut out = Vec::new();
        push_varints("d", Value::Varint(7), &mut out).expect("unpacked");
        push_varints("d", Value::Len(&[0x01, 0xac, 0x02]), &mut out).expect("packed");
        assert_eq!(out, vec![7, 1, 300]);
        assert!(push_varints("d", Value::Len(&[0x80]), &mut out).is_err());

        let mut floats = Vec::new();
        push_fixed32("f", Value::Len(&1.5f32.to_le_bytes()), &mut floats).expect("packed");
        push_fixed32("f", Value::Fixed32(2.5f32.to_bits()), &mut floats).expect("unpacked");
        assert_eq!(floats, vec![1.5f32.to_bits(), 2.5f32.to_bits()]);
        assert!(push_fixed32("f", Value::Len(&[1, 2, 3]), &mut floats).is_err());
        assert!(push_fixed32("f", Value::Varint(1), &mut floats).is_err());

        let mut doubles = Vec::new();
        push_fixed64("d", Value::Len(&[0; 7]), &mut doubles).expect_err("short packed");
    }

    #[test]
    fn int32_out_of_range_is_error() {
        assert!(expect_i32("x", Value::Varint(1 << 40)).is_err());
    }
}
