//! Decoder for ONNX protobuf test data, for the `onnxrt` tests.
//!
//! The ONNX backend test suite ships each case as a `model.onnx` plus `test_data_set_*`
//! folders of `input_N.pb` / `output_N.pb` files. This crate decodes those with the messages of
//! `onnxrt-onnx-proto` (generated from the official `onnx.proto`) and turns `TensorProto`,
//! `SequenceProto`, `MapProto`, `OptionalProto` and the interface of a `ModelProto` into plain
//! Rust values for the tests to compare.
//!
//! ```no_run
//! use onnxrt_testdata::{case_dirs, load_model_summary, load_value};
//!
//! # fn main() -> Result<(), onnxrt_testdata::DecodeError> {
//! for case in case_dirs("/path/to/onnx/backend/test/data")? {
//!     let summary = load_model_summary(&case.model)?;
//!     for set in &case.data_sets {
//!         for (path, (_, kind)) in set.inputs.iter().zip(&summary.inputs) {
//!             let _value = load_value(path, *kind)?;
//!         }
//!     }
//! }
//! # Ok(())
//! # }
//! ```

mod cases;
mod error;
mod float8;
mod model;
mod tensor;
mod value;

pub use cases::{case_dirs, light_input, onnx_backend_data_dir, DataSet, TestCase, CASE_GROUPS};
pub use error::DecodeError;
pub use float8::float8_value;
pub use model::{decode_model_summary, load_model_summary, Dim, ModelSummary, TypeKind};
pub use tensor::{decode_tensor, elem_type, Tensor, TensorData};
pub use value::{decode_map, decode_optional, decode_sequence, decode_value, load_value, MapKeys, MapValue, TestValue};
