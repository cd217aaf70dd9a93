//! Provides a verified ONNX Runtime (build-support does all the work and all the printing), then
//! generates the raw bindings from its headers into OUT_DIR.

use std::path::PathBuf;
use std::process::ExitCode;

use build_support::{emit, provision, Config};

fn main() -> ExitCode {
    println!("cargo:rerun-if-changed=wrapper.h");
    let provided = Config::from_env().and_then(|config| {
        emit::rerun_lines(&config);
        provision(&config)
    });
    let provided = match provided {
        Ok(provided) => provided,
        Err(error) => {
            emit::failure(&error);
            return ExitCode::FAILURE;
        }
    };
    emit::provisioned(&provided);
    if std::env::var_os("CARGO_FEATURE_LINK").is_some() {
        emit::link(&provided);
    }

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_arg(format!("-I{}", provided.include_dir.display()))
        .allowlist_type("Ort.*|ONNX.*|GraphOptimizationLevel|ExecutionMode|OrtCustomOp.*")
        .allowlist_var("ORT_API_VERSION")
        // Loaded at run time (or linked under `link`), declared by hand in lib.rs.
        .blocklist_function("OrtGetApiBase")
        // C enums stay integer constants: a value a newer runtime returns must never be UB.
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate();
    let bindings = match bindings {
        Ok(bindings) => bindings,
        Err(error) => {
            println!("cargo:warning=onnxrt-sys: bindgen failed on {}: {error}", provided.include_dir.display());
            eprintln!("bindgen needs libclang: on Debian/Ubuntu `apt-get install libclang-dev`");
            return ExitCode::FAILURE;
        }
    };
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("bindings.rs");
    if let Err(error) = bindings.write_to_file(&out) {
        println!("cargo:warning=onnxrt-sys: writing {}: {error}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
