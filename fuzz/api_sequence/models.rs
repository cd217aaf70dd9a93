//! The committed test models the sequences build sessions from, compiled in (no file reads at run
//! time, so a replay behaves the same from the fuzz crate and from the tests crate).

macro_rules! models {
    ($($file:literal),* $(,)?) => {
        /// `(file name, bytes)` of every model a `Build` may pick.
        pub const MODELS: &[(&str, &[u8])] =
            &[$(($file, include_bytes!(concat!("../../tests/data/models/", $file)))),*];
    };
}

// Not slow_loop (a fuzzed iteration count would run for hours), not convnet (large and slow under
// ASan), not mlp_external (its weights are a second file).
models![
    "add_f32.onnx",
    "custom_scale.onnx",
    "scalar.onnx",
    "multi_output.onnx",
    "identity_f32.onnx",
    "identity_string.onnx",
    "passthrough.onnx",
    "sequence.onnx",
    "sequence_len.onnx",
    "map_out.onnx",
    "identity_f64.onnx",
    "identity_f16.onnx",
    "identity_bf16.onnx",
    "identity_i8.onnx",
    "identity_i16.onnx",
    "identity_i32.onnx",
    "identity_i64.onnx",
    "identity_u8.onnx",
    "identity_u16.onnx",
    "identity_u32.onnx",
    "identity_u64.onnx",
    "identity_bool.onnx",
    "strings.onnx",
    "dynamic_batch.onnx",
    "batch_reshape.onnx",
    "mlp.onnx",
    "opset_too_new.onnx",
    "bad_truncated.onnx",
];

/// The index of `custom_scale.onnx` (its `ai.onnxrt.example::Scale` node needs the Rust op).
pub const CUSTOM_SCALE: usize = 1;
