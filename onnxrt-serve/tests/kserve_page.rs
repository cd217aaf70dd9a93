//! docs/serving-kserve.md stays true: every `serve` flag it and the ServingRuntime it points to
//! (deploy/kserve/serving-runtime.yaml) name is one `serve --help` lists, and the ServingRuntime's
//! container arguments start a server whose probe paths answer 200 (the repository swapped for a
//! test one and the addresses for free local ports; nothing else changed).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};

use onnxrt_serve::http_client::Connection;

const PAGE: &str = include_str!("../../docs/serving-kserve.md");
const RUNTIME: &str = include_str!("../../deploy/kserve/serving-runtime.yaml");
const MLP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");

/// `--flag` words of the page, leaving out the cargo commands in it (`` `cargo build … --bin
/// serve` ``, which may wrap across lines): those flags are cargo's.
fn flags_named(page: &str) -> Vec<String> {
    let mut text = String::new();
    let mut rest = page;
    while let Some(at) = rest.find("`cargo ") {
        text.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        rest = after.find('`').map_or("", |end| &after[end + 1..]);
    }
    text.push_str(rest);
    let mut flags: Vec<String> = text
        .lines()
        .flat_map(|line| line.match_indices("--").map(move |(at, _)| &line[at + 2..]))
        .map(|rest| rest.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-').collect())
        .filter(|flag: &String| flag.len() > 1 && flag.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

/// The `args:` list of the ServingRuntime (`- --flag=value` lines under `args:`).
fn runtime_args(page: &str) -> Vec<String> {
    let mut lines = page.lines().skip_while(|line| line.trim() != "args:").skip(1);
    let mut args = Vec::new();
    while let Some(arg) = lines.next().and_then(|line| line.trim().strip_prefix("- --")) {
        args.push(format!("--{arg}"));
    }
    args
}

#[test]
fn every_flag_the_page_names_is_a_serve_flag() {
    let help = Command::new(env!("CARGO_BIN_EXE_serve")).arg("--help").output().expect("serve --help");
    let help = String::from_utf8_lossy(&help.stdout);
    let flags = flags_named(&format!("{PAGE}\n{RUNTIME}"));
    for named in ["model-repository", "grpc-listen", "max-body-bytes", "header-timeout-ms"] {
        assert!(flags.iter().any(|flag| flag == named), "--{named} is read from the page: {flags:?}");
    }
    let unknown: Vec<&String> = flags.iter().filter(|flag| !help.contains(&format!("--{flag}"))).collect();
    assert!(
        unknown.is_empty(),
        "docs/serving-kserve.md or its ServingRuntime names flags serve does not have: {unknown:?}\n{help}"
    );
}

#[test]
fn the_serving_runtimes_arguments_start_a_server_whose_probes_answer() {
    let args = runtime_args(RUNTIME);
    assert_eq!(args.len(), 3, "the ServingRuntime's args: {args:?}");
    let repository = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(repository.path().join("mlp")).expect("model folder");
    std::fs::copy(MLP, repository.path().join("mlp/model.onnx")).expect("model");
    let args: Vec<String> = args
        .iter()
        .map(|arg| match arg.split_once('=') {
            Some(("--model-repository", _)) => format!("--model-repository={}", repository.path().display()),
            Some((flag @ ("--listen" | "--grpc-listen"), _)) => format!("{flag}=127.0.0.1:0"),
            _ => panic!("an argument this test does not know how to keep local: {arg}"),
        })
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_serve"))
        .args(&args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("serve prints its address");
    let address: SocketAddr = line
        .strip_prefix("listening on http://")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line from serve: {line:?}"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let statuses = runtime.block_on(async {
        let mut connection = Connection::open(address).await.expect("connect");
        let mut statuses = Vec::new();
        // The probes of the ServingRuntime, and the metrics path its annotations name.
        for path in ["/v2/health/ready", "/v2/health/live", "/metrics"] {
            assert!(RUNTIME.contains(path), "the ServingRuntime names {path}");
            statuses.push((path, connection.get(path).await.expect("a reply").status));
        }
        statuses
    });
    let _ = child.kill();
    let _ = child.wait();
    assert!(statuses.iter().all(|(_, status)| *status == 200), "{statuses:?}");
}
