//! Compiles c/raw_run.c (the raw C API baseline) against the headers of the runtime onnxrt-sys
//! provisioned, so the benchmark times it in the same process as onnxrt.

fn main() {
    println!("cargo:rerun-if-changed=c/raw_run.c");
    println!("cargo:rerun-if-env-changed=DEP_ONNXRUNTIME_INCLUDE_DIR");
    let include = std::env::var("DEP_ONNXRUNTIME_INCLUDE_DIR")
        .expect("onnxrt-sys sets DEP_ONNXRUNTIME_INCLUDE_DIR (it is a direct dependency)");
    cc::Build::new().file("c/raw_run.c").include(&include).opt_level(2).warnings(true).compile("raw_run");
    println!("cargo:rustc-link-lib=dl");
}
