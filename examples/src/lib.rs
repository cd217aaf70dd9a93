//! Code shared by the example programs: `resnet_cuda.rs` (the GPU template), `serve/` (the HTTP
//! inference server) and `loadgen.rs` (its load generator).

pub mod embedded;
pub mod http_client;
pub mod imagenet;
pub mod tensor_body;
