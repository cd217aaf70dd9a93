//! Downloads go through the proxy the environment names, as curl reads it:
//! `http_proxy` for http URLs (upper-case `HTTP_PROXY` is ignored, as
//! curl ignores it: `hostile_environment`), `https_proxy` for
//! https ones (tunnelled with CONNECT), `no_proxy` to go direct. The proxies are written here, on
//! 127.0.0.1; the origin's host name does not resolve, so only a proxy can reach it. A proxy that
//! alters the bytes makes the download fail its pin: nothing is installed.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::*;

/// An origin host name that never resolves (`.invalid` is reserved): only a proxy reaches it.
const ORIGIN: &str = "onnxrt-origin.invalid";
/// Most connections a test proxy accepts before it stops.
const PROXY_CONNECTIONS: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Forwards absolute-form requests to the origin; answers CONNECT, then closes the tunnel.
    Honest,
    /// Forwards, but flips one byte of the response body.
    Tampering,
}

/// A proxy on 127.0.0.1 that sends every request, whatever its host, to the test server at
/// `origin`, and records each request line it receives.
struct Proxy {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    fn start(origin: std::net::SocketAddr, mode: Mode) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the test proxy");
        let port = listener.local_addr().expect("the proxy's address").port();
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let seen = requests.clone();
        let thread = std::thread::spawn(move || {
            for _ in 0..PROXY_CONNECTIONS {
                let Ok((client, _)) = listener.accept() else { return };
                let _ = serve(client, origin, mode, &seen);
            }
        });
        Proxy { port, requests, thread: Some(thread) }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("the proxy's log").clone()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Wake the accept loop with connections until it has taken its last one.
        if let Some(thread) = self.thread.take() {
            while !thread.is_finished() {
                let _ = TcpStream::connect(("127.0.0.1", self.port));
                std::thread::sleep(Duration::from_millis(5));
            }
            let _ = thread.join();
        }
    }
}

/// Reads a request head (at most 8 KiB).
fn read_head(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 8192 {
        if stream.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    Ok(head)
}

fn serve(
    mut client: TcpStream,
    origin: std::net::SocketAddr,
    mode: Mode,
    seen: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    client.set_read_timeout(Some(Duration::from_secs(10)))?;
    let head = read_head(&mut client)?;
    let text = String::from_utf8_lossy(&head).into_owned();
    let line = text.lines().next().unwrap_or("").to_owned();
    if line.is_empty() {
        return Ok(());
    }
    seen.lock().expect("the proxy's log").push(line.clone());
    let mut words = line.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if method == "CONNECT" {
        // The tunnel is granted, then closed: the test server speaks no TLS, and the request
        // line is what the test checks.
        client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
        return client.shutdown(Shutdown::Both);
    }
    // Absolute form (`GET http://host/path HTTP/1.1`) to origin form for the test server.
    let path = target.split_once("://").and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..])).unwrap_or("/");
    let rest = text.split_once("\r\n").map_or("", |(_, rest)| rest);
    let mut upstream = TcpStream::connect(origin)?;
    upstream.set_read_timeout(Some(Duration::from_secs(10)))?;
    upstream.write_all(format!("{method} {path} HTTP/1.1\r\n{rest}").as_bytes())?;
    let mut response = Vec::new();
    upstream.read_to_end(&mut response)?;
    if mode == Mode::Tampering {
        if let Some(body) = find_bytes(&response, b"\r\n\r\n").map(|i| i + 4) {
            let at = body + (response.len() - body) / 2;
            response[at] ^= 0x01;
        }
    }
    client.write_all(&response)?;
    client.shutdown(Shutdown::Write)
}

/// `onnxrt-dist fetch` of the test-only distribution from `mirror` with the test's own pin and
/// `env`, nothing else of the outer environment.
fn fetch(cache: &Path, sha: &str, mirror: &str, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(["fetch", UNPINNED_DIST])
        .env_clear()
        .env("ONNXRT_CACHE_DIR", cache)
        .env("ONNXRT_ARCHIVE_SHA256", sha)
        .env("ONNXRT_MIRROR", mirror)
        .env("ONNXRT_ALLOW_HTTP", "1")
        .env("ONNXRT_DOWNLOAD_TIMEOUT", "20")
        .envs(env.iter().copied())
        .output()
        .expect("running onnxrt-dist")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_download_goes_through_the_http_proxy_the_environment_names() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let path = format!("/dl/{UNPINNED_FILE}");
    let server = Server::start(vec![(path.as_str(), Behaviour::Serve(archive))]);
    let mirror = format!("http://{ORIGIN}/dl");
    for var in ["http_proxy", "all_proxy", "ALL_PROXY"] {
        let proxy = Proxy::start(server.addr(), Mode::Honest);
        let tmp = tempdir();
        let cache = tmp.path().join("cache");
        let ran = fetch(&cache, &sha, &mirror, &[(var, &proxy.url())]);
        let text = stderr(&ran);
        assert!(ran.status.success(), "{var}: {text}");
        assert!(text.contains(&format!("through the proxy {} (from {var})", proxy.url())), "{var}: {text}");
        assert_eq!(proxy.requests(), vec![format!("GET http://{ORIGIN}/dl/{UNPINNED_FILE} HTTP/1.1")], "{var}");
        assert_cache_holds_only(&cache, &sha);
    }
    assert_eq!(server.hits(&path), 3);
}

#[test]
fn no_proxy_names_the_hosts_reached_directly() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let path = format!("/{UNPINNED_FILE}");
    let server = Server::start(vec![(path.as_str(), Behaviour::Serve(archive))]);
    let proxy = Proxy::start(server.addr(), Mode::Honest);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let ran = fetch(&cache, &sha, &server.base(), &[("http_proxy", &proxy.url()), ("NO_PROXY", "localhost,127.0.0.1")]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    assert!(!stderr(&ran).contains("through the proxy"), "{}", stderr(&ran));
    assert_eq!(proxy.requests(), Vec::<String>::new());
    assert_eq!(server.hits(&path), 1);
}

#[test]
fn an_https_url_is_tunnelled_through_the_proxy_with_connect() {
    let server = Server::start(vec![]);
    let proxy = Proxy::start(server.addr(), Mode::Honest);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let sha = sha256(b"never fetched");
    let ran = fetch(&cache, &sha, &format!("https://{ORIGIN}/dl"), &[("https_proxy", &proxy.url())]);
    let text = stderr(&ran);
    assert_eq!(ran.status.code(), Some(1), "{text}");
    let requests = proxy.requests();
    assert!(!requests.is_empty(), "the proxy was never asked: {text}");
    assert!(requests.iter().all(|r| r.starts_with(&format!("CONNECT {ORIGIN}:443 "))), "{requests:?}");
    assert!(text.contains(&format!("through the proxy {}", proxy.url())), "{text}");
    assert_cache_clean(&cache);
}

#[test]
fn a_proxy_that_alters_the_bytes_fails_verification_and_installs_nothing() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let path = format!("/dl/{UNPINNED_FILE}");
    let server = Server::start(vec![(path.as_str(), Behaviour::Serve(archive))]);
    let proxy = Proxy::start(server.addr(), Mode::Tampering);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let ran = fetch(&cache, &sha, &format!("http://{ORIGIN}/dl"), &[("http_proxy", &proxy.url())]);
    let text = stderr(&ran);
    assert_eq!(ran.status.code(), Some(1), "{text}");
    assert!(text.contains("sha256 mismatch"), "{text}");
    assert_eq!(proxy.requests().len(), 1, "{:?}", proxy.requests());
    assert_cache_clean(&cache);
}
