// expect: E0133
// Loading a shared library runs its code, which no safe function can vouch for: the call needs
// `unsafe`.
fn main() {
    let _builder = onnxrt::Session::builder().custom_op_library("/tmp/libcustom_ops.so");
}
