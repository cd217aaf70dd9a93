//! Values of the four 8-bit float encodings, decoded from the ONNX definition (a second,
//! independent reading of the formats that onnxrt's own types are checked against).

use crate::tensor::elem_type;

/// The value of `bits` in the 8-bit float format `elem_type` (17..=20), or `None` for another code.
pub fn float8_value(elem_type: i32, bits: u8) -> Option<f64> {
    // (mantissa bits, exponent bias, finite-only-with-single-NaN "fnuz", IEEE-style specials)
    let (mantissa_bits, bias, fnuz, ieee) = match elem_type {
        elem_type::FLOAT8E4M3FN => (3, 7, false, false),
        elem_type::FLOAT8E4M3FNUZ => (3, 8, true, false),
        elem_type::FLOAT8E5M2 => (2, 15, false, true),
        elem_type::FLOAT8E5M2FNUZ => (2, 16, true, false),
        _ => return None,
    };
    let sign = if bits & 0x80 == 0 { 1.0 } else { -1.0 };
    let exponent = i32::from((bits & 0x7F) >> mantissa_bits);
    let mantissa = f64::from(bits & ((1 << mantissa_bits) - 1));
    let top_exponent = (1 << (7 - mantissa_bits)) - 1;
    if fnuz && bits == 0x80 {
        return Some(f64::NAN);
    }
    if ieee && exponent == top_exponent {
        return Some(if mantissa == 0.0 { sign * f64::INFINITY } else { f64::NAN.copysign(sign) });
    }
    if !fnuz && !ieee && exponent == top_exponent && mantissa == f64::from((1 << mantissa_bits) - 1) {
        return Some(f64::NAN.copysign(sign));
    }
    let scale = f64::from(1 << mantissa_bits);
    Some(if exponent == 0 {
        sign * mantissa / scale * 2f64.powi(1 - bias)
    } else {
        sign * (1.0 + mantissa / scale) * 2f64.powi(exponent - bias)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes() {
        assert_eq!(float8_value(elem_type::FLOAT8E4M3FN, 0x7E), Some(448.0));
        assert_eq!(float8_value(elem_type::FLOAT8E4M3FNUZ, 0x7F), Some(240.0));
        assert_eq!(float8_value(elem_type::FLOAT8E5M2, 0x7B), Some(57344.0));
        assert_eq!(float8_value(elem_type::FLOAT8E5M2FNUZ, 0x7F), Some(57344.0));
        assert_eq!(float8_value(elem_type::FLOAT8E5M2, 0xFC), Some(f64::NEG_INFINITY));
        assert!(float8_value(elem_type::FLOAT8E4M3FN, 0xFF).is_some_and(f64::is_nan));
        assert_eq!(float8_value(elem_type::FLOAT8E5M2FNUZ, 0x01), Some(2f64.powi(-17)));
        assert_eq!(float8_value(elem_type::FLOAT, 0x01), None);
    }
}
