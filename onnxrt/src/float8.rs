//! The four 8-bit float element types of ONNX (opset 19) and ORT 1.16: `FLOAT8E4M3FN`,
//! `FLOAT8E4M3FNUZ`, `FLOAT8E5M2` and `FLOAT8E5M2FNUZ`.
//!
//! Each is a byte holding the encoding as ONNX defines it (`#[repr(transparent)]` over `u8`, so a
//! `Vec<F8E4M3Fn>` is exactly the tensor's bytes). Decoding to `f32` is exact: every 8-bit float
//! is an `f32`. Encoding from `f32` rounds to nearest, ties to even, and handles values beyond the
//! format's range as ONNX's `Cast` does: [`from_f32`](F8E4M3Fn::from_f32) saturates (like
//! `Cast(saturate=1)`, the default), [`from_f32_unsaturated`](F8E4M3Fn::from_f32_unsaturated) gives
//! infinity where the format has one and NaN otherwise (`Cast(saturate=0)`).
//!
//! | type | exponent bits, bias | largest finite | infinity | NaN | negative zero |
//! | --- | --- | --- | --- | --- | --- |
//! | [`F8E4M3Fn`] | 4, 7 | 448 | none | `S.1111.111` | yes |
//! | [`F8E4M3Fnuz`] | 4, 8 | 240 | none | `0x80` only | no |
//! | [`F8E5M2`] | 5, 15 | 57344 | `S.11111.00` | `S.11111.xx` | yes |
//! | [`F8E5M2Fnuz`] | 5, 16 | 57344 | none | `0x80` only | no |
//!
//! The crates that offer 8-bit floats for Rust (`float8`) cover only the E4M3FN and E5M2 formats,
//! not the two `FNUZ` ones ORT also supports; these small types cover all four with one codec.

use std::fmt;

/// The parameters of one 8-bit float format.
struct Format {
    mantissa_bits: u32,
    bias: i32,
    /// The largest finite magnitude's code (the low seven bits).
    max_code: u8,
    /// `FNUZ`: one NaN (`0x80`), no infinity, no negative zero.
    unsigned_zero: bool,
    /// E5M2: IEEE-style infinities and NaNs in the top exponent.
    ieee_specials: bool,
}

const E4M3FN: Format = Format { mantissa_bits: 3, bias: 7, max_code: 0x7E, unsigned_zero: false, ieee_specials: false };
const E4M3FNUZ: Format =
    Format { mantissa_bits: 3, bias: 8, max_code: 0x7F, unsigned_zero: true, ieee_specials: false };
const E5M2: Format = Format { mantissa_bits: 2, bias: 15, max_code: 0x7B, unsigned_zero: false, ieee_specials: true };
const E5M2FNUZ: Format =
    Format { mantissa_bits: 2, bias: 16, max_code: 0x7F, unsigned_zero: true, ieee_specials: false };

impl Format {
    fn is_nan(&self, bits: u8) -> bool {
        let magnitude = bits & 0x7F;
        if self.unsigned_zero {
            bits == 0x80
        } else if self.ieee_specials {
            magnitude > 0x7C
        } else {
            magnitude == 0x7F
        }
    }

    /// The canonical NaN this crate writes.
    fn nan(&self) -> u8 {
        if self.unsigned_zero {
            0x80
        } else {
            0x7F
        }
    }

    fn decode(&self, bits: u8) -> f32 {
        if self.is_nan(bits) {
            return f32::NAN;
        }
        let negative = bits & 0x80 != 0;
        let magnitude = bits & 0x7F;
        if self.ieee_specials && magnitude == 0x7C {
            return if negative { f32::NEG_INFINITY } else { f32::INFINITY };
        }
        let m = self.mantissa_bits;
        let exponent = i32::from(magnitude >> m);
        let mantissa = f32::from(magnitude & ((1 << m) - 1));
        // Subnormals (exponent field 0) have no implicit 1 and the smallest normal exponent.
        let value = if exponent == 0 {
            mantissa * pow2(1 - self.bias - m as i32)
        } else {
            (f32::from(1u8 << m) + mantissa) * pow2(exponent - self.bias - m as i32)
        };
        if negative {
            -value
        } else {
            value
        }
    }

    fn encode(&self, value: f32, saturate: bool) -> u8 {
        if value.is_nan() {
            return self.nan();
        }
        let sign: u8 = if value.is_sign_negative() { 0x80 } else { 0 };
        let overflow = || {
            if saturate {
                sign | self.max_code
            } else if self.ieee_specials {
                sign | 0x7C
            } else {
                self.nan()
            }
        };
        if value.is_infinite() {
            return overflow();
        }
        let bits = value.abs().to_bits();
        let f32_exponent = (bits >> 23) as i32;
        // f32 subnormals are far below the smallest 8-bit subnormal: they round to zero.
        let code: u32 = if f32_exponent == 0 {
            0
        } else {
            let m = self.mantissa_bits;
            let significand = (1u32 << 23) | (bits & 0x7F_FFFF);
            let exponent = f32_exponent - 127;
            let min_normal = 1 - self.bias;
            // How many of the significand's low bits fall below the target's last place.
            let shift = 23 - m as i32 + (min_normal - exponent).max(0);
            let rounded = round_shift(significand, shift);
            if exponent < min_normal {
                // Subnormal: the exponent field is 0, a carry makes it the smallest normal.
                rounded
            } else {
                // `rounded` is 1.mmm (with a possible carry to 10.000, which the addition absorbs).
                let field = (exponent + self.bias) as u32;
                (field << m) + (rounded - (1 << m))
            }
        };
        if code > u32::from(self.max_code) {
            return overflow();
        }
        if code == 0 && self.unsigned_zero {
            return 0;
        }
        sign | code as u8
    }
}

/// `value / 2^shift` rounded to nearest, ties to even.
fn round_shift(value: u32, shift: i32) -> u32 {
    if shift <= 0 {
        return value << (-shift);
    }
    if shift > 31 {
        return 0;
    }
    let quotient = value >> shift;
    let rest = value & ((1 << shift) - 1);
    let half = 1u32 << (shift - 1);
    if rest > half || (rest == half && quotient & 1 == 1) {
        quotient + 1
    } else {
        quotient
    }
}

fn pow2(exponent: i32) -> f32 {
    // Every exponent used here (-17..=15) is a normal f32.
    f32::from_bits(((exponent + 127) as u32) << 23)
}

macro_rules! float8 {
    ($(#[$doc:meta])* $name:ident, $format:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The value with this encoding.
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits)
            }

            /// The encoding.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The nearest value (ties to even); beyond the range, the largest finite value of
            /// the same sign (ONNX `Cast` with `saturate=1`). NaN stays NaN.
            pub fn from_f32(value: f32) -> Self {
                $name($format.encode(value, true))
            }

            /// The nearest value (ties to even); beyond the range, infinity where the format
            /// has one, else NaN (ONNX `Cast` with `saturate=0`).
            pub fn from_f32_unsaturated(value: f32) -> Self {
                $name($format.encode(value, false))
            }

            /// The exact value.
            pub fn to_f32(self) -> f32 {
                $format.decode(self.0)
            }

            /// Whether this is a NaN encoding.
            pub fn is_nan(self) -> bool {
                $format.is_nan(self.0)
            }
        }

        impl From<$name> for f32 {
            fn from(value: $name) -> f32 {
                value.to_f32()
            }
        }

        impl From<$name> for f64 {
            fn from(value: $name) -> f64 {
                f64::from(value.to_f32())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?} = {:#04x})", stringify!($name), self.to_f32(), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }
    };
}

float8!(
    /// ONNX `FLOAT8E4M3FN`: 4 exponent bits, 3 mantissa bits, finite only (largest 448), one
    /// NaN per sign.
    F8E4M3Fn,
    E4M3FN
);
float8!(
    /// ONNX `FLOAT8E4M3FNUZ`: 4 exponent bits, 3 mantissa bits, finite only (largest 240), no
    /// negative zero, NaN is `0x80`.
    F8E4M3Fnuz,
    E4M3FNUZ
);
float8!(
    /// ONNX `FLOAT8E5M2`: 5 exponent bits, 2 mantissa bits, with infinities and NaNs like IEEE
    /// half precision truncated to its top byte (largest finite 57344).
    F8E5M2,
    E5M2
);
float8!(
    /// ONNX `FLOAT8E5M2FNUZ`: 5 exponent bits, 2 mantissa bits, finite only (largest 57344), no
    /// negative zero, NaN is `0x80`.
    F8E5M2Fnuz,
    E5M2FNUZ
);

#[cfg(test)]
mod tests {
    use super::*;

    fn all<T>(make: impl Fn(u8) -> T) -> impl Iterator<Item = (u8, T)> {
        (0..=255u8).map(move |b| (b, make(b)))
    }

    #[test]
    fn known_values_decode_exactly() {
        assert_eq!(F8E4M3Fn::from_bits(0x7E).to_f32(), 448.0);
        assert_eq!(F8E4M3Fn::from_bits(0x01).to_f32(), 2f32.powi(-9));
        assert_eq!(F8E4M3Fn::from_bits(0x38).to_f32(), 1.0);
        assert_eq!(F8E4M3Fnuz::from_bits(0x7F).to_f32(), 240.0);
        assert_eq!(F8E4M3Fnuz::from_bits(0x01).to_f32(), 2f32.powi(-10));
        assert_eq!(F8E4M3Fnuz::from_bits(0x40).to_f32(), 1.0);
        assert_eq!(F8E5M2::from_bits(0x7B).to_f32(), 57344.0);
        assert_eq!(F8E5M2::from_bits(0x7C).to_f32(), f32::INFINITY);
        assert_eq!(F8E5M2::from_bits(0xFC).to_f32(), f32::NEG_INFINITY);
        assert_eq!(F8E5M2::from_bits(0x3C).to_f32(), 1.0);
        assert_eq!(F8E5M2::from_bits(0x01).to_f32(), 2f32.powi(-16));
        assert_eq!(F8E5M2Fnuz::from_bits(0x7F).to_f32(), 57344.0);
        assert_eq!(F8E5M2Fnuz::from_bits(0x01).to_f32(), 2f32.powi(-17));
        assert!(F8E4M3Fn::from_bits(0xFF).is_nan() && F8E4M3Fn::from_bits(0x7F).to_f32().is_nan());
        assert!(F8E4M3Fnuz::from_bits(0x80).is_nan() && F8E5M2Fnuz::from_bits(0x80).is_nan());
        assert_eq!(F8E4M3Fn::from_bits(0x80).to_f32().to_bits(), (-0.0f32).to_bits());
    }

    #[test]
    fn every_encoding_round_trips_through_f32() {
        for (b, x) in all(F8E4M3Fn::from_bits) {
            if !x.is_nan() {
                assert_eq!(F8E4M3Fn::from_f32(x.to_f32()).to_bits(), b, "{x:?}");
            }
        }
        for (b, x) in all(F8E4M3Fnuz::from_bits) {
            if !x.is_nan() {
                assert_eq!(F8E4M3Fnuz::from_f32(x.to_f32()).to_bits(), b, "{x:?}");
            }
        }
        for (b, x) in all(F8E5M2::from_bits) {
            if !x.is_nan() {
                assert_eq!(F8E5M2::from_f32_unsaturated(x.to_f32()).to_bits(), b, "{x:?}");
            }
        }
        for (b, x) in all(F8E5M2Fnuz::from_bits) {
            if !x.is_nan() {
                assert_eq!(F8E5M2Fnuz::from_f32(x.to_f32()).to_bits(), b, "{x:?}");
            }
        }
    }

    #[test]
    fn rounding_is_to_nearest_even_and_monotonic() {
        // Between 1.0 (0x38) and 1.125 (0x39): the midpoint goes to the even code.
        assert_eq!(F8E4M3Fn::from_f32(1.0625).to_bits(), 0x38);
        assert_eq!(F8E4M3Fn::from_f32(1.0626).to_bits(), 0x39);
        // 1.125..1.25: the midpoint 1.1875 rounds up to the even 0x3A.
        assert_eq!(F8E4M3Fn::from_f32(1.1875).to_bits(), 0x3A);
        // Half the smallest subnormal rounds to (even) zero, a bit more to the subnormal.
        assert_eq!(F8E4M3Fn::from_f32(2f32.powi(-10)).to_bits(), 0x00);
        assert_eq!(F8E4M3Fn::from_f32(2f32.powi(-10) * 1.01).to_bits(), 0x01);
        // Each f32 between two neighbours lands on one of them.
        for b in 0..0x7Eu8 {
            let (lo, hi) = (F8E4M3Fn::from_bits(b).to_f32(), F8E4M3Fn::from_bits(b + 1).to_f32());
            for k in 0..=16 {
                let x = lo + (hi - lo) * k as f32 / 16.0;
                let got = F8E4M3Fn::from_f32(x).to_bits();
                assert!(got == b || got == b + 1, "{x} -> {got:#x}");
            }
        }
    }

    #[test]
    fn out_of_range_saturates_or_overflows_as_cast_does() {
        assert_eq!(F8E4M3Fn::from_f32(1e6).to_f32(), 448.0);
        assert_eq!(F8E4M3Fn::from_f32(-f32::INFINITY).to_f32(), -448.0);
        assert!(F8E4M3Fn::from_f32_unsaturated(1e6).is_nan());
        assert_eq!(F8E4M3Fnuz::from_f32(f32::INFINITY).to_f32(), 240.0);
        assert!(F8E4M3Fnuz::from_f32_unsaturated(300.0).is_nan());
        assert_eq!(F8E5M2::from_f32(1e9).to_f32(), 57344.0);
        assert_eq!(F8E5M2::from_f32_unsaturated(1e9).to_f32(), f32::INFINITY);
        assert_eq!(F8E5M2::from_f32_unsaturated(f32::NEG_INFINITY).to_f32(), f32::NEG_INFINITY);
        assert!(F8E5M2Fnuz::from_f32_unsaturated(f32::INFINITY).is_nan());
        // 464 is the midpoint between 448 and the next step (480, not a number in E4M3FN).
        assert_eq!(F8E4M3Fn::from_f32(460.0).to_f32(), 448.0);
        assert!(F8E4M3Fn::from_f32(f32::NAN).is_nan() && F8E5M2Fnuz::from_f32(f32::NAN).is_nan());
    }

    #[test]
    fn no_negative_zero_in_fnuz() {
        assert_eq!(F8E4M3Fnuz::from_f32(-0.0).to_bits(), 0);
        assert_eq!(F8E5M2Fnuz::from_f32(-1e-30).to_bits(), 0);
        assert_eq!(F8E4M3Fn::from_f32(-0.0).to_bits(), 0x80);
    }
}
