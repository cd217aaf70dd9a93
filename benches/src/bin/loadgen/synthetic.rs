//! Input values from a fixed seed, so that every server in a comparison gets the same bytes:
//! floats in [-2, 2) (a preprocessed picture's range), integers in 0..10, booleans.

use serde_json::Value as Json;

use crate::error::LoadgenError;

/// The seed when none is given (the one the load generator always used).
pub const DEFAULT_SEED: u64 = 0x2545_f491_4f6c_dd1d;

/// A small linear congruential generator: reproducible, not random enough for anything else.
pub struct Numbers {
    state: u64,
}

impl Numbers {
    pub fn new(seed: u64) -> Numbers {
        Numbers { state: seed }
    }

    fn next_bits(&mut self) -> u64 {
        self.state = self.state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.state >> 40
    }

    /// A float in [-2, 2).
    pub fn next_f32(&mut self) -> f32 {
        (self.next_bits() as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
    }

    /// An integer in 0..10.
    fn next_small(&mut self) -> u8 {
        (self.next_bits() % 10) as u8
    }
}

/// One tensor's values for the protocol: the JSON `data` array and the little-endian bytes the
/// binary-tensor extension sends. Only the form asked for is made.
pub enum Tensor {
    Json(Json),
    Raw(Vec<u8>),
}

/// `count` values of the protocol data type `datatype` for input `input`.
pub fn tensor(
    input: &str,
    datatype: &str,
    count: usize,
    numbers: &mut Numbers,
    raw: bool,
) -> Result<Tensor, LoadgenError> {
    macro_rules! integers {
        ($t:ty) => {{
            // 0..10 fits every integer type.
            let values: Vec<$t> = (0..count).map(|_| numbers.next_small() as $t).collect();
            if raw {
                Tensor::Raw(values.iter().flat_map(|v| v.to_le_bytes()).collect())
            } else {
                Tensor::Json(Json::from(values))
            }
        }};
    }
    Ok(match datatype {
        "FP32" => {
            let values: Vec<f32> = (0..count).map(|_| numbers.next_f32()).collect();
            if raw {
                Tensor::Raw(values.iter().flat_map(|v| v.to_le_bytes()).collect())
            } else {
                Tensor::Json(Json::from(values))
            }
        }
        "FP64" => {
            let values: Vec<f64> = (0..count).map(|_| f64::from(numbers.next_f32())).collect();
            if raw {
                Tensor::Raw(values.iter().flat_map(|v| v.to_le_bytes()).collect())
            } else {
                Tensor::Json(Json::from(values))
            }
        }
        "FP16" | "BF16" => {
            let values: Vec<f32> = (0..count).map(|_| numbers.next_f32()).collect();
            if raw {
                let bits = |v: f32| {
                    if datatype == "FP16" {
                        half::f16::from_f32(v).to_bits()
                    } else {
                        half::bf16::from_f32(v).to_bits()
                    }
                };
                Tensor::Raw(values.iter().flat_map(|&v| bits(v).to_le_bytes()).collect())
            } else {
                Tensor::Json(Json::from(values))
            }
        }
        "BOOL" => {
            let values: Vec<bool> = (0..count).map(|_| numbers.next_small() % 2 == 1).collect();
            if raw {
                Tensor::Raw(values.iter().map(|&v| u8::from(v)).collect())
            } else {
                Tensor::Json(Json::from(values))
            }
        }
        "INT8" => integers!(i8),
        "INT16" => integers!(i16),
        "INT32" => integers!(i32),
        "INT64" => integers!(i64),
        "UINT8" => integers!(u8),
        "UINT16" => integers!(u16),
        "UINT32" => integers!(u32),
        "UINT64" => integers!(u64),
        other => return Err(LoadgenError::UnsupportedDatatype { input: input.into(), datatype: other.into() }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_values() {
        let mut a = Numbers::new(7);
        let mut b = Numbers::new(7);
        let first: Vec<f32> = (0..100).map(|_| a.next_f32()).collect();
        let second: Vec<f32> = (0..100).map(|_| b.next_f32()).collect();
        assert_eq!(first, second);
        assert!(first.iter().all(|v| (-2.0..2.0).contains(v)));
    }

    #[test]
    fn raw_tensors_have_the_width_of_their_type() {
        let mut numbers = Numbers::new(DEFAULT_SEED);
        for (datatype, width) in [("FP32", 4), ("FP64", 8), ("FP16", 2), ("INT64", 8), ("UINT8", 1), ("BOOL", 1)] {
            match tensor("x", datatype, 6, &mut numbers, true) {
                Ok(Tensor::Raw(bytes)) => assert_eq!(bytes.len(), 6 * width, "{datatype}"),
                _ => panic!("{datatype}: no raw tensor"),
            }
        }
        assert!(matches!(tensor("x", "BYTES", 1, &mut numbers, false), Err(LoadgenError::UnsupportedDatatype { .. })));
    }
}
