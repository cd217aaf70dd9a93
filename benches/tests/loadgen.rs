//! The load generator end to end: the real `loadgen` binary against the real server with a small
//! model (f32 x [batch, 16] -> [batch, 4]), over the Open Inference Protocol (JSON and binary
//! tensors, closed and open loop) and the private /v1 protocol; its refusals name the fix.
//!
//! The server is onnxrt-serve's (`onnxrt_serve::server`, what its `serve` program runs): this test
//! binary (`harness = false`) runs it when started with [`SERVE`] set, and is then also its worker
//! processes, as `serve` is. Cargo builds only this package's binaries for its tests.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

/// Set in the environment of this binary when it is to be the server.
const SERVE: &str = "ONNXRT_LOADGEN_TEST_SERVE";

fn main() {
    if let Some(code) = onnxrt_serve::isolation::worker_main_if_asked() {
        std::process::exit(code);
    }
    if std::env::var_os(SERVE).is_some() {
        let args = <onnxrt_serve::server::Args as clap::Parser>::parse();
        onnxrt_serve::server::init_logs();
        if let Err(error) = onnxrt_serve::server::run(args) {
            eprintln!("error: {error}");
            std::process::exit(1);
        }
        return;
    }
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let tests: [(&str, fn()); 3] = [
        (
            "the_open_inference_protocol_closed_and_open_loop_json_and_binary",
            the_open_inference_protocol_closed_and_open_loop_json_and_binary,
        ),
        ("the_private_v1_protocol_still_works", the_private_v1_protocol_still_works),
        ("refusals_say_what_to_pass", refusals_say_what_to_pass),
    ];
    let mut ran = 0;
    for (name, test) in tests {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        // A failing test panics: the binary exits non-zero and cargo reports it.
        test();
        println!("test {name} ... ok");
        ran += 1;
    }
    println!("test result: ok. {ran} passed; 0 failed");
}

const MLP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");

/// A running `serve`, killed when the test ends.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(std::env::current_exe().expect("this test binary"))
            .args(["--model", MLP, "--listen", "127.0.0.1:0", "--grpc-listen", "off", "--workers", "2"])
            .env("RUST_LOG", "warn")
            .env(SERVE, "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout piped"))
            .read_line(&mut line)
            .expect("serve prints its address");
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("unexpected first line from serve: {line:?}"))
            .to_owned();
        Server { child, address }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs loadgen against `server`'s model `mlp` unless `args` name another.
fn loadgen(server: &Server, args: &[&str]) -> Output {
    let model = if args.contains(&"--model") { &[][..] } else { &["--model", "mlp"][..] };
    Command::new(env!("CARGO_BIN_EXE_loadgen"))
        .args(["--addr", &server.address, "--warmup", "0.2"])
        .args(model)
        .args(args)
        .output()
        .expect("loadgen runs")
}

/// The value of `key` in loadgen's RESULT line.
fn field(output: &Output, key: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .unwrap_or_else(|| panic!("no RESULT line; stdout: {stdout}; stderr: {stderr}"));
    line.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        .to_owned()
}

fn the_open_inference_protocol_closed_and_open_loop_json_and_binary() {
    let server = Server::start();
    let v2 = ["--protocol", "v2", "--shape", "x=2x16"];
    let closed = loadgen(&server, &[&v2[..], &["--clients", "3", "--requests", "60"]].concat());
    assert!(closed.status.success(), "{}", String::from_utf8_lossy(&closed.stderr));
    assert_eq!(
        (field(&closed, "mode"), field(&closed, "requests"), field(&closed, "errors")),
        ("closed".into(), "60".into(), "0".into())
    );

    let binary = loadgen(&server, &[&v2[..], &["--clients", "2", "--requests", "40", "--binary"]].concat());
    assert_eq!((field(&binary, "requests"), field(&binary, "errors")), ("40".into(), "0".into()));

    let open = loadgen(&server, &[&v2[..], &["--rate", "200", "--duration-requests", "50"]].concat());
    assert_eq!(
        (field(&open, "mode"), field(&open, "requests"), field(&open, "errors")),
        ("open".into(), "50".into(), "0".into())
    );
    // 50 requests at 200/s take a quarter of a second, however fast the answers.
    let seconds: f64 = field(&open, "seconds").parse().expect("seconds");
    assert!(seconds >= 0.24, "the open loop kept its schedule: {seconds} s");
}

fn the_private_v1_protocol_still_works() {
    let server = Server::start();
    let output = loadgen(&server, &["--shape", "1,16", "--concurrency", "2", "--requests", "30"]);
    assert_eq!((field(&output, "requests"), field(&output, "errors")), ("30".into(), "0".into()));
}

fn refusals_say_what_to_pass() {
    let server = Server::start();
    let free_axes = loadgen(&server, &["--protocol", "v2", "--requests", "1"]);
    assert!(!free_axes.status.success());
    let message = String::from_utf8_lossy(&free_axes.stderr);
    assert!(message.contains("--shape x=1x16"), "{message}");

    let misfit = loadgen(&server, &["--protocol", "v2", "--shape", "x=1x15", "--requests", "1"]);
    assert!(String::from_utf8_lossy(&misfit.stderr).contains("does not fit the model's shape [-1, 16]"));

    let unknown = loadgen(&server, &["--protocol", "v2", "--model", "nope", "--requests", "1"]);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("HTTP 404"));
}
