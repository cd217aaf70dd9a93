//! In link mode, bake the runtime's folder into the examples (cargo passes onnxrt-sys's rpath to no one).
fn main() {
    build_support::emit::rpath_for_dependent();
}
