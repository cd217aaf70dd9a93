//! Examples live in this package's example targets; see hello.rs and resnet_cuda.rs.
