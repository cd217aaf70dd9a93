//! A one-shot process for tests that need a runtime of their own (one ORT per process): loads the
//! runtime the environment points at, optionally appends a provider, and prints the outcome.
//!
//! ```text
//! onnxrt-probe [--init PATH] [cuda|cuda-options|cuda-strict|tensorrt|none|named:NAME] MODEL
//! ```
//! Prints `OK <version> <providers> <library path>` or `ERR <variant>: <Display>`; exit status 0 either way, 2 on
//! usage errors. Variants are printed from `Debug` up to the first `{` or `(`.

use onnxrt::Session;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--init") && args.len() >= 2 {
        let path = args.remove(1);
        args.remove(0);
        if let Err(e) = onnxrt::init_from(&path) {
            report(&e);
            return;
        }
    }
    let (provider, model) = match args.as_slice() {
        [provider, model] => (provider.clone(), model.clone()),
        _ => {
            eprintln!("usage: onnxrt-probe [--init PATH] cuda|cuda-options|cuda-strict|tensorrt|none|named:NAME MODEL");
            std::process::exit(2);
        }
    };
    let builder = Session::builder();
    // Any provider by name, through the generic append call (no cargo feature needed).
    let builder = match provider.strip_prefix("named:") {
        Some(name) => builder.provider(name, std::iter::empty::<(String, String)>()),
        None => builder,
    };
    #[cfg(feature = "cuda")]
    let builder = match provider.as_str() {
        "cuda" => builder.cuda(onnxrt::providers::cuda::CudaOptions::new()),
        // With an option set (ORT 1.30 loads the provider library at the options update).
        "cuda-options" => builder.cuda(onnxrt::providers::cuda::CudaOptions::new().device_id(0)),
        // Strict: the provider's libraries are checked before anything loads them.
        "cuda-strict" => builder.cuda(onnxrt::providers::cuda::CudaOptions::new().device_id(0)).strict_gpu(true),
        _ => builder,
    };
    #[cfg(feature = "tensorrt")]
    let builder = match provider.as_str() {
        "tensorrt" => builder.tensorrt(onnxrt::providers::tensorrt::TensorRtOptions::new()),
        _ => builder,
    };
    if provider != "none" && !provider.starts_with("named:") && !cfg!(feature = "cuda") {
        eprintln!("onnxrt-probe was built without the cuda/tensorrt features");
        std::process::exit(2);
    }
    match builder.commit_from_file(&model) {
        Ok(session) => {
            let (version, library) =
                onnxrt::runtime_info().map(|i| (i.version, i.library.display().to_string())).unwrap_or_default();
            println!("OK {version} {:?} {library}", session.providers());
        }
        Err(e) => report(&e),
    }
}

fn report(error: &onnxrt::Error) {
    println!("ERR {}: {error}", error.variant());
}
