//! `serve`: the inference server (the library's [`onnxrt_serve::server`]). Parses the command
//! line and runs the server; re-executed with `--isolated-worker` it is one model's worker
//! process instead ([`onnxrt_serve::isolation`]).
#![forbid(unsafe_code)]

fn main() {
    if let Some(code) = onnxrt_serve::isolation::worker_main_if_asked() {
        std::process::exit(code);
    }
    let args = <onnxrt_serve::server::Args as clap::Parser>::parse();
    onnxrt_serve::server::init_logs();
    if let Err(error) = onnxrt_serve::server::run(args) {
        tracing::error!("{error}");
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}
