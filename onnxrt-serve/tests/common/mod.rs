//! What the end-to-end tests of model control, statistics and shared memory share: a real
//! `serve` on a repository folder made for the test, and small REST helpers.
#![allow(dead_code)] // each test binary uses a part

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use hyper::body::Bytes;
use onnxrt_serve::http_client::{Connection, Reply};
use serde_json::Value as Json;

pub const MODELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models");

/// A running `serve`, killed when dropped.
pub struct Server {
    child: Child,
    pub rest: SocketAddr,
    /// The gRPC address, where started with gRPC.
    pub grpc: Option<SocketAddr>,
}

impl Server {
    /// The server's process id.
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// REST only.
    pub fn start(repository: &Path, args: &[&str]) -> Server {
        Server::launch(repository, args, false)
    }

    /// REST and gRPC.
    pub fn start_with_grpc(repository: &Path, args: &[&str]) -> Server {
        Server::launch(repository, args, true)
    }

    /// REST and gRPC, its access lines and warnings written to `log`.
    pub fn start_logging(repository: &Path, args: &[&str], log: &Path) -> Server {
        let file = std::fs::File::create(log).expect("log file");
        Server::spawn(Server::command(repository, args, true).env("RUST_LOG", "warn,access=info").stderr(file), true)
    }

    fn command(repository: &Path, args: &[&str], grpc: bool) -> Command {
        // `ONNXRT_SERVE_BIN`: the binary where the tests run on another machine (the GPU one).
        let binary = std::env::var_os("ONNXRT_SERVE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_serve").into());
        let mut command = Command::new(binary);
        command
            .arg("--model-repository")
            .arg(repository)
            .args(["--listen", "127.0.0.1:0", "--grpc-listen", if grpc { "127.0.0.1:0" } else { "off" }])
            .args(["--workers", "2"])
            .args(args)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        command
    }

    /// REST only, with `vars` set in the server's environment.
    pub fn start_with_env(repository: &Path, args: &[&str], vars: &[(&str, &str)]) -> Server {
        let mut command = Server::command(repository, args, false);
        command.envs(vars.iter().copied());
        Server::spawn(&mut command, false)
    }

    /// REST only, the process limited to `files` open files (`ulimit -n` in a shell).
    pub fn start_with_open_files(repository: &Path, args: &[&str], files: u32) -> Server {
        let serve = Server::command(repository, args, false);
        let mut shell = Command::new("sh");
        shell
            .arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(serve.get_program())
            .args(serve.get_args())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        Server::spawn(&mut shell, false)
    }

    fn launch(repository: &Path, args: &[&str], grpc: bool) -> Server {
        Server::spawn(&mut Server::command(repository, args, grpc), grpc)
    }

    fn spawn(command: &mut Command, grpc: bool) -> Server {
        let mut child = command.spawn().expect("serve starts");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        let mut address = |prefix: &str| {
            let mut line = String::new();
            stdout.read_line(&mut line).expect("address line");
            line.strip_prefix(prefix)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|a| a.parse().ok())
                .unwrap_or_else(|| panic!("expected `{prefix}…`, got {line:?}"))
        };
        let rest = address("listening on http://");
        let grpc = grpc.then(|| address("grpc listening on "));
        Server { child, rest, grpc }
    }
}

/// Starts `serve` on `repository` with `args`, expecting it to refuse to start: its exit status
/// and stderr, or (it listens) the line it printed.
pub fn refused_start(repository: &Path, args: &[&str]) -> Result<(std::process::ExitStatus, String), String> {
    let mut child = Server::command(repository, args, false).stderr(Stdio::piped()).spawn().expect("serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout piped")).read_line(&mut line).expect("stdout");
    if !line.is_empty() {
        let _ = child.kill();
        let _ = child.wait();
        return Err(line);
    }
    let output = child.wait_with_output().expect("serve ends");
    Ok((output.status, String::from_utf8_lossy(&output.stderr).into_owned()))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fresh folder named for this test.
pub fn folder(test: &str) -> PathBuf {
    let root = std::env::temp_dir().join(format!("control-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).expect("repository folder");
    root
}

/// Puts test model `file` at `root/path/model.onnx`.
pub fn put(root: &Path, path: &str, file: &str) {
    let at = root.join(path);
    std::fs::create_dir_all(&at).expect("model folder");
    // `ONNXRT_TEST_MODELS`: the models' folder where the tests run on another machine.
    let models = std::env::var_os("ONNXRT_TEST_MODELS").map_or_else(|| PathBuf::from(MODELS), PathBuf::from);
    std::fs::copy(models.join(file), at.join("model.onnx.part")).expect("copy model");
    // Whole or not at all: a poll never sees half a file.
    std::fs::rename(at.join("model.onnx.part"), at.join("model.onnx")).expect("rename");
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

pub async fn post(c: &mut Connection, path: &str, body: &Json) -> Reply {
    c.send("POST", path, &[("content-type", "application/json")], Bytes::from(body.to_string())).await.expect("reply")
}

pub fn json_of(reply: &Reply) -> Json {
    serde_json::from_slice(&reply.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", reply.text()))
}

/// The repository index's (state, reason) of `model`.
pub async fn index_state(c: &mut Connection, model: &str) -> (String, String) {
    let reply = post(c, "/v2/repository/index", &serde_json::json!({})).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let entries = json_of(&reply);
    let entry = entries.as_array().expect("a list").iter().find(|e| e["name"] == model).cloned();
    let entry = entry.unwrap_or_else(|| panic!("{model} not in {entries}"));
    let text = |key: &str| entry[key].as_str().unwrap_or_default().to_owned();
    (text("state"), text("reason"))
}

/// The HTTP status of one MLP inference on `model`.
pub async fn mlp_status(c: &mut Connection, model: &str) -> u16 {
    let request = serde_json::json!({
        "inputs": [{ "name": "x", "shape": [1, 16], "datatype": "FP32", "data": vec![0.25f32; 16] }]
    });
    post(c, &format!("/v2/models/{model}/infer"), &request).await.status
}
