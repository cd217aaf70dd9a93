//! Code shared by the example programs: `resnet_cuda.rs` (the GPU template) takes the embedded
//! default model and the ImageNet preprocessing from onnxrt-serve, whose HTTP server uses them too.

pub use onnxrt_serve::{embedded, imagenet};
