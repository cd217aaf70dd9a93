//! In link mode, bake the runtime's folder into the test binaries (cargo passes onnxrt-sys's rpath
//! to no one), and build the custom-operator library the tests load (`custom_op/add_one.c`).
use std::path::PathBuf;

fn main() {
    build_support::emit::rpath_for_dependent();
    println!("cargo:rerun-if-changed=custom_op/add_one.c");
    println!("cargo:rerun-if-env-changed=DEP_ONNXRUNTIME_INCLUDE_DIR");
    let include = std::env::var("DEP_ONNXRUNTIME_INCLUDE_DIR").unwrap_or_default();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("libonnxrt_test_add_one.so");
    let compiler = cc::Build::new().get_compiler();
    let status = compiler
        .to_command()
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&out)
        .arg(format!("-I{include}"))
        .arg("custom_op/add_one.c")
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => {
            println!("cargo:warning=building the test custom-op library failed: {other:?}");
            std::process::exit(1);
        }
    }
}
