//! Generates the Open Inference Protocol's gRPC messages and service from proto/ (feature
//! `server`). The .proto is parsed in Rust (protox), so no `protoc` is needed on the machine.

fn main() {
    println!("cargo:rerun-if-changed=proto/grpc_service.proto");
    #[cfg(feature = "server")]
    generate();
}

#[cfg(feature = "server")]
fn generate() {
    let descriptors = match protox::compile(["grpc_service.proto"], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(error) => panic!("proto/grpc_service.proto: {error}"),
    };
    if let Err(error) = tonic_prost_build::configure().build_client(true).compile_fds(descriptors) {
        panic!("generating the gRPC code from proto/grpc_service.proto: {error}");
    }
}
