//! The embedded default model, its labels and a picture, so the examples run with no files: a tiny
//! color classifier with an ImageNet model's contract (input `image` f32 [batch, 3, 224, 224],
//! output `logits` f32 [batch, 10]).

/// The model (ONNX bytes).
pub const MODEL: &[u8] = include_bytes!("../data/colors.onnx");
/// One label per line, in the model's class order.
pub const LABELS: &str = include_str!("../data/colors.labels");
/// A red 8-bit PNG, classified as "red".
pub const PICTURE: &[u8] = include_bytes!("../data/red.png");
