//! The HTTP server end to end: the real `serve` binary on a free port, driven over HTTP.
//! Answers equal single runs bitwise; bad uploads get 4xx and the server keeps answering; 10,000
//! requests leave its memory flat; SIGTERM lets the requests in flight finish and exits 0 (after
//! `--drain-delay-ms`, not ready but still answering new connections); the GPU
//! call's `tools/gpu/phases.py` reads its metrics.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use onnxrt::{Session, Value};
use onnxrt_serve::http_client::{Connection, Reply};
use onnxrt_serve::{embedded, imagenet, tensor_body};

const INFER: &str = "/v1/models/colors/infer";
/// A small model of the test suite (f32 [batch, 16] -> [batch, 4]), for the long tests.
const MLP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
const MLP_INFER: &str = "/v1/models/mlp/infer";

/// A running `serve` process, killed if the test ends early.
struct Server {
    child: Child,
    address: SocketAddr,
}

impl Server {
    /// Starts `serve` on a free port with `args` and waits for its "listening on" line.
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_serve"))
            .args(["--listen", "127.0.0.1:0", "--grpc-listen", "127.0.0.1:0", "--workers", "2"])
            // An access line per request would bury the test output (the OIP tests read the log).
            .env("RUST_LOG", "warn")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("serve starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("serve prints its address");
        let address = line
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line from serve: {line:?}"));
        Server { child, address }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory of the server process, in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("/proc status");
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
        line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("VmRSS in kB")
    }

    /// The exit status once the process ends (at most 2000 polls, 10 ms apart); `None` if it
    /// is still running then.
    fn wait_for_exit(&mut self) -> Option<std::process::ExitStatus> {
        for _ in 0..2000 {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    fn assert_alive(&mut self) {
        assert!(self.child.try_wait().expect("try_wait").is_none(), "the server process exited");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime")
}

/// A sample of the embedded model's input, different for each seed.
fn sample(seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..3 * 224 * 224)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
        })
        .collect()
}

/// `clients` keep-alive connections, each sending its own MLP sample `per_client` times; every
/// answer must be 200.
fn drive_mlp(rt: &tokio::runtime::Runtime, address: SocketAddr, clients: u64, per_client: u64) {
    rt.block_on(async {
        let mut tasks = Vec::new();
        for client in 0..clients {
            tasks.push(tokio::spawn(async move {
                let mut connection = Connection::open(address).await.expect("connects");
                let data = sample(client);
                for _ in 0..per_client {
                    let reply = send_tensor(&mut connection, MLP_INFER, &[1, 16], &data[..16]).await;
                    assert_eq!(reply.status, 200, "{}", reply.text());
                }
            }));
        }
        for task in tasks {
            task.await.expect("client");
        }
    });
}

async fn send_tensor(connection: &mut Connection, path: &str, shape: &[usize], data: &[f32]) -> Reply {
    let (shape_text, body) = tensor_body::encode(shape, data);
    let headers = [("content-type", tensor_body::CONTENT_TYPE), (tensor_body::SHAPE_HEADER, shape_text.as_str())];
    connection.send("POST", path, &headers, body.into()).await.expect("a reply")
}

async fn send(connection: &mut Connection, content_type: &str, body: Vec<u8>) -> Reply {
    connection.send("POST", INFER, &[("content-type", content_type)], body.into()).await.expect("a reply")
}

fn logits_of(reply: &Reply) -> Vec<f32> {
    assert_eq!(reply.status, 200, "{}", reply.text());
    let json: serde_json::Value = serde_json::from_slice(&reply.body).expect("JSON");
    json["logits"].as_array().expect("logits").iter().map(|v| v.as_f64().expect("number") as f32).collect()
}

/// The embedded model run alone on one sample, in this process.
fn single_run(session: &Session, data: Vec<f32>) -> Vec<f32> {
    let input = Value::from_vec(&[1, 3, 224, 224], data).expect("input");
    let outputs = session.run([("image", &input)]).expect("run");
    outputs[0].view::<f32>().expect("f32").iter().copied().collect()
}

fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn answers_equal_single_runs_bitwise() {
    answers_equal_single_runs(&["--batching"]);
}

#[test]
fn answers_equal_single_runs_bitwise_without_batching() {
    answers_equal_single_runs(&["--no-batching"]);
}

fn answers_equal_single_runs(mode: &[&str]) {
    let server = Server::start(mode);
    let session = Session::builder().commit_from_memory(embedded::MODEL).expect("model");
    let rt = runtime();
    // 16 clients at once, so requests share batches; each sends two different samples.
    let answers: Vec<(u64, Vec<f32>)> = rt.block_on(async {
        let mut tasks = Vec::new();
        for client in 0..16u64 {
            let address = server.address;
            tasks.push(tokio::spawn(async move {
                let mut connection = Connection::open(address).await.expect("connects");
                let mut got = Vec::new();
                for round in 0..2 {
                    let seed = client * 2 + round;
                    let path = format!("{INFER}?logits=true&top_k=10");
                    got.push((
                        seed,
                        logits_of(&send_tensor(&mut connection, &path, &[3, 224, 224], &sample(seed)).await),
                    ));
                }
                got
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.expect("client"));
        }
        all
    });
    assert_eq!(answers.len(), 32);
    for (seed, logits) in &answers {
        assert_eq!(bits(logits), bits(&single_run(&session, sample(*seed))), "sample {seed}");
    }
    // Different samples gave different answers (the comparison above is not vacuous).
    assert_ne!(bits(&answers[0].1), bits(&answers[1].1));

    // A picture: the server's decode and preprocessing equal the library's, then the same run.
    let reply = rt.block_on(async {
        let mut connection = Connection::open(server.address).await.expect("connects");
        connection
            .send(
                "POST",
                &format!("{INFER}?logits=true"),
                &[("content-type", "image/png")],
                Bytes::from_static(embedded::PICTURE),
            )
            .await
            .expect("reply")
    });
    let picture = imagenet::decode_bounded(embedded::PICTURE, imagenet::DecodeLimits::default()).expect("decodes");
    let expected = single_run(&session, imagenet::preprocess(&picture).into_raw_vec_and_offset().0);
    assert_eq!(bits(&logits_of(&reply)), bits(&expected));
    let json: serde_json::Value = serde_json::from_slice(&reply.body).expect("JSON");
    assert_eq!(json["top_k"][0]["label"], "red", "{json}");
    assert_eq!(json["top_k"].as_array().map(Vec::len), Some(5), "top 5 by default");
}

/// A PNG of `width`×`height` declared in its header; only the header is real for huge sizes.
fn png_with_declared_size(width: u32, height: u32) -> Vec<u8> {
    let mut png = embedded::PICTURE.to_vec();
    // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4), ..., CRC over type+data.
    png[16..20].copy_from_slice(&width.to_be_bytes());
    png[20..24].copy_from_slice(&height.to_be_bytes());
    let crc = crc32(&png[12..29]);
    png[29..33].copy_from_slice(&crc.to_be_bytes());
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xedb8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn tiny_png() -> Vec<u8> {
    let mut bytes = Vec::new();
    image::RgbImage::from_pixel(1, 1, image::Rgb([255, 0, 0]))
        .write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png)
        .expect("encodes");
    bytes
}

#[test]
fn bad_requests_get_a_4xx_and_the_server_keeps_answering() {
    let mut server = Server::start(&["--max-body-bytes", "1048576"]);
    let server_address = server.address;
    let rt = runtime();
    rt.block_on(async {
        let mut c = Connection::open(server.address).await.expect("connects");
        let good = sample(1);
        let cases: Vec<(&str, Reply, u16, &str)> = vec![
            (
                "garbage as PNG",
                send(&mut c, "image/png", b"not a picture at all".to_vec()).await,
                400,
                "not a JPEG or PNG",
            ),
            ("truncated PNG", send(&mut c, "image/png", embedded::PICTURE[..60].to_vec()).await, 400, "picture"),
            ("1x1 picture", send(&mut c, "image/png", tiny_png()).await, 400, "at least"),
            (
                "huge declared size",
                send(&mut c, "image/png", png_with_declared_size(100_000, 100_000)).await,
                400,
                "at most",
            ),
            ("JPEG header only", send(&mut c, "image/jpeg", vec![0xff, 0xd8, 0xff, 0xe0, 0, 16]).await, 400, "picture"),
            ("wrong tensor shape", send_tensor(&mut c, INFER, &[1, 3, 2, 2], &good[..12]).await, 400, "does not fit"),
            ("1x1 tensor", send_tensor(&mut c, INFER, &[1, 3, 1, 1], &good[..3]).await, 400, "does not fit"),
            (
                "body shorter than its shape",
                {
                    let headers =
                        [("content-type", tensor_body::CONTENT_TYPE), (tensor_body::SHAPE_HEADER, "3,224,224")];
                    c.send("POST", INFER, &headers, Bytes::from_static(&[0; 64])).await.expect("reply")
                },
                400,
                "needs 602112 bytes",
            ),
            ("no shape header", send(&mut c, tensor_body::CONTENT_TYPE, vec![0; 16]).await, 400, "x-tensor-shape"),
            (
                "bad shape header",
                {
                    let headers = [("content-type", tensor_body::CONTENT_TYPE), (tensor_body::SHAPE_HEADER, "3,x,-1")];
                    c.send("POST", INFER, &headers, Bytes::new()).await.expect("reply")
                },
                400,
                "not a comma-separated",
            ),
            (
                "overflowing shape",
                {
                    let headers = [
                        ("content-type", tensor_body::CONTENT_TYPE),
                        (tensor_body::SHAPE_HEADER, "4294967296,4294967296,4294967296"),
                    ];
                    c.send("POST", INFER, &headers, Bytes::new()).await.expect("reply")
                },
                400,
                "more than addressable",
            ),
            ("unknown content type", send(&mut c, "text/plain", b"hello".to_vec()).await, 415, "not accepted"),
            (
                "unknown model",
                c.send("POST", "/v1/models/nope/infer", &[], Bytes::new()).await.expect("reply"),
                404,
                "no model `nope`",
            ),
            (
                "bad top_k",
                {
                    let (shape, body) = tensor_body::encode(&[3, 224, 224], &good);
                    let headers =
                        [("content-type", tensor_body::CONTENT_TYPE), (tensor_body::SHAPE_HEADER, shape.as_str())];
                    c.send("POST", &format!("{INFER}?top_k=0"), &headers, body.into()).await.expect("reply")
                },
                400,
                "top_k",
            ),
        ];
        for (what, reply, status, message) in cases {
            assert_eq!(reply.status, status, "{what}: {}", reply.text());
            assert!(reply.text().contains(message), "{what}: {} lacks {message:?}", reply.text());
            assert_eq!(reply.content_type.as_deref(), Some("application/json"), "{what}");
        }
        // An upload over --max-body-bytes: 413 as soon as the head says so, before any of the body
        // is read (a 2 GB Content-Length lie costs nothing). On a raw connection: the server
        // closes it after answering, so a client still writing the body may see a broken pipe.
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut raw = std::net::TcpStream::connect(server_address).expect("connects");
            raw.set_read_timeout(Some(Duration::from_secs(120))).expect("read timeout");
            let head = "POST /v1/models/colors/infer HTTP/1.1\r\nhost: x\r\ncontent-type: image/png\r\ncontent-length: 2147483648\r\n\r\n";
            raw.write_all(head.as_bytes()).expect("head");
            let mut answer = Vec::new();
            let _ = raw.read_to_end(&mut answer);
            String::from_utf8_lossy(&answer).into_owned()
        })
        .await
        .expect("raw client");
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.contains("larger than 1048576 bytes"), "{answer}");

        // Still serving: a good request, health and metrics (which counted the refusals).
        let mut c = Connection::open(server.address).await.expect("connects");
        let reply = send_tensor(&mut c, INFER, &[1, 3, 224, 224], &good).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(c.get("/health").await.expect("health").status, 200);
        let metrics = c.get("/metrics").await.expect("metrics").text();
        // 14 refused by the handler; the 413 before it, by the body limit at the edge.
        assert!(metrics.contains("serve_http_requests_total{code=\"4xx\"} 14"), "{metrics}");
        assert!(metrics.contains("serve_http_responses_total{code=\"413\"} 1"), "{metrics}");
        assert!(metrics.contains("serve_http_requests_total{code=\"2xx\"} 1"), "{metrics}");
    });
    server.assert_alive();
}

/// RSS may grow by this much between request 1,000 and request 10,000: 4 MiB, about 466 bytes
/// per request. A leaked request (its headers, tensor, outputs and future: well over that) would
/// exceed it; measured here: +148 KiB (the growth is printed), so the bound has a wide margin
/// for allocator noise.
const RSS_GROWTH_BOUND_KIB: u64 = 4 * 1024;

#[test]
fn ten_thousand_requests_leave_memory_flat() {
    // The small MLP: the HTTP path and the batcher are what is measured, not the model (the
    // embedded model's 600 KB bodies take minutes for 10,000 requests in a debug build here).
    let server = Server::start(&["--model", MLP, "--batching"]);
    let rt = runtime();
    let clients = 8u64;
    let total = 10_000u64;
    let warm_up = 1_000u64;
    let started = Instant::now();
    let drive = |count: u64| drive_mlp(&rt, server.address, clients, count / clients);
    drive(warm_up);
    let after_warm_up = server.rss_kib();
    drive(total - warm_up);
    let after_all = server.rss_kib();
    let growth = after_all.saturating_sub(after_warm_up);
    eprintln!(
        "RSS after {warm_up} requests {after_warm_up} KiB, after {total} {after_all} KiB (+{growth} KiB); {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(growth <= RSS_GROWTH_BOUND_KIB, "RSS grew by {growth} KiB over {} requests", total - warm_up);
    // And the server counted every one of them.
    let metrics = rt.block_on(async {
        let mut connection = Connection::open(server.address).await.expect("connects");
        connection.get("/metrics").await.expect("metrics").text()
    });
    assert!(metrics.contains(&format!("serve_http_requests_total{{code=\"2xx\"}} {total}\n")), "{metrics}");
    assert!(metrics.contains(&format!("batcher_requests_completed_total{{model=\"mlp\"}} {total}\n")), "{metrics}");
}

#[test]
fn sigterm_lets_the_requests_in_flight_finish_and_exits_0() {
    // A long batching delay keeps the requests in flight (waiting for their batch) at SIGTERM.
    // The small MLP (16 inputs) so that all requests arrive well within the delay.
    let mut server = Server::start(&["--model", MLP, "--batching", "--max-delay-us", "2000000", "--max-batch", "64"]);
    let clients = 16;
    let rt = runtime();
    let replies = rt.block_on(async {
        let mut tasks = Vec::new();
        for client in 0..clients {
            // Connected and served once before, so the server has accepted the connection.
            let mut connection = Connection::open(server.address).await.expect("connects");
            assert_eq!(connection.get("/health").await.expect("health").status, 200);
            tasks.push(tokio::spawn(async move {
                send_tensor(&mut connection, MLP_INFER, &[16], &sample(client)[..16]).await
            }));
        }
        // Wait until every request is inside the server, then SIGTERM.
        let mut watcher = Connection::open(server.address).await.expect("connects");
        let started = Instant::now();
        loop {
            let metrics = watcher.get("/metrics").await.expect("metrics").text();
            if metrics.contains(&format!("serve_http_requests_in_flight {clients}\n")) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(20), "requests never all in flight:\n{metrics}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(watcher);
        let status = Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().expect("kill runs");
        assert!(status.success());
        let mut replies = Vec::new();
        for task in tasks {
            replies.push(task.await.expect("client"));
        }
        replies
    });
    for reply in &replies {
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "the server did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    // New connections are refused once it is gone.
    assert!(std::net::TcpStream::connect(server.address).is_err());
}

/// Behind a load balancer: with `--drain-delay-ms`, SIGTERM turns readiness to 503 while
/// the server still takes new connections and answers them, so the balancer's health checks take
/// it out before anything is refused; a second SIGTERM ends the delay, and it exits 0. (Without the
/// delay the listener closed at the moment readiness turned: tools/serve/scale-out.sh with
/// SCALE_OUT_RETRY_ON=none lost 179 and 134 of 1000 requests in its drain, in two runs.)
#[test]
fn sigterm_with_a_drain_delay_answers_new_connections_while_not_ready() {
    // A delay no test run outlasts: the second signal, not the clock, ends it.
    let mut server = Server::start(&["--model", MLP, "--drain-delay-ms", "600000"]);
    let rt = runtime();
    let term = |pid: u32| {
        let status = Command::new("kill").args(["-TERM", &pid.to_string()]).status().expect("kill runs");
        assert!(status.success());
    };
    rt.block_on(async {
        let mut connection = Connection::open(server.address).await.expect("connects");
        assert_eq!(connection.get("/v2/health/ready").await.expect("ready").status, 200);
        term(server.pid());
        // Readiness turns 503 (at most 2000 polls, a new connection each, 5 ms apart).
        let mut ready = 200;
        for _ in 0..2000 {
            let mut poll = Connection::open(server.address).await.expect("still listening while draining");
            ready = poll.get("/v2/health/ready").await.expect("ready").status;
            if ready == 503 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(ready, 503, "readiness after SIGTERM");
        // A request on a connection opened now is still answered.
        let mut fresh = Connection::open(server.address).await.expect("a new connection while not ready");
        let reply = send_tensor(&mut fresh, MLP_INFER, &[16], &sample(1)[..16]).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
    });
    term(server.pid());
    let status = server.wait_for_exit().expect("the server exits after the second SIGTERM");
    assert_eq!(status.code(), Some(0), "exit status {status:?}");
    assert!(std::net::TcpStream::connect(server.address).is_err());
}

/// A SIGTERM sent the moment `serve` says it listens ends it cleanly (exit 0), never by the
/// signal's default action: the signals are watched from before the port opens. (A CI run of
/// 2026-12-07 on a loaded machine: a SIGTERM right after the first answer killed the process, and
/// the drain test's next connection was reset. Only a loaded machine meets that window: with four
/// busy loops beside it, the old code failed at round 1 with signal 15; idle, it may pass.)
#[test]
fn a_sigterm_right_after_listening_ends_the_server_cleanly() {
    for round in 0..20 {
        let mut server = Server::start(&["--model", MLP, "--isolation", "false"]);
        let status = Command::new("kill").args(["-TERM", &server.pid().to_string()]).status().expect("kill runs");
        assert!(status.success());
        let exited = server.wait_for_exit().expect("the server exits after SIGTERM");
        assert_eq!(exited.code(), Some(0), "round {round}: exit status {exited:?}");
    }
}

/// `tools/gpu/phases.py` (the GPU call's per-run breakdown) reads this server's own `/metrics`:
/// the batch count between two snapshots, the mean phases, and the p99 bucket bounds of the queue
/// wait, the wait for the device, the run and the HTTP request latency.
#[test]
fn phases_py_reads_the_batch_phases_and_their_tails_from_the_metrics() {
    let server = Server::start(&["--model", MLP, "--batching"]);
    let rt = runtime();
    let metrics = || {
        rt.block_on(async {
            let mut connection = Connection::open(server.address).await.expect("connects");
            connection.get("/metrics").await.expect("metrics").text()
        })
    };
    let (clients, per_client) = (4u64, 50u64);
    let before = metrics();
    drive_mlp(&rt, server.address, clients, per_client);
    let after = metrics();
    let folder = std::env::temp_dir().join(format!("phases-{}", std::process::id()));
    std::fs::create_dir_all(&folder).expect("a scratch folder");
    std::fs::write(folder.join("before"), &before).expect("write");
    std::fs::write(folder.join("after"), &after).expect("write");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/gpu/phases.py");
    let output = Command::new("python3")
        .arg(script)
        .args([folder.join("before"), folder.join("after")])
        .args(["--label", "mlp"])
        .output()
        .expect("python3 runs phases.py");
    let _ = std::fs::remove_dir_all(&folder);
    let line = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    eprintln!("{line}");
    assert!(output.status.success(), "{line}\n{}", String::from_utf8_lossy(&output.stderr));
    let field = |name: &str| -> f64 {
        let text = line.split_whitespace().find_map(|f| f.strip_prefix(&format!("{name}=")));
        text.and_then(|t| t.parse().ok()).unwrap_or_else(|| panic!("no number {name}= in {line:?}"))
    };
    // Every request was answered through the batcher, in at least one batch and at most one each.
    let batches = field("batches");
    assert!((1.0..=(clients * per_client) as f64).contains(&batches), "{line}");
    let mean_batch = field("mean_batch");
    assert!((batches * mean_batch - (clients * per_client) as f64).abs() < 0.5 * batches, "{line}");
    for phase in ["queue_ms", "gather_ms", "device_wait_ms", "model_ms", "run_ms"] {
        assert!(field(phase) >= 0.0, "{line}");
    }
    // Tails are bucket bounds: positive, and a request's latency is at least its run.
    for tail in ["queue_p99_le_ms", "device_wait_p99_le_ms", "run_p99_le_ms", "http_p99_le_ms"] {
        assert!(field(tail) > 0.0, "{line}");
    }
    assert!(field("http_p99_le_ms") >= field("model_ms"), "{line}");
}
