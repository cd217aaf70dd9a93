//! The download deadline covers the whole request, the status line and headers included (issue
//! 26, item 7): a server that sends one header line at a time, each well inside the progress
//! window, never reaches the body; the attempt must still end at the deadline, and a response
//! head that takes longer than one progress window fails "too slow". The test server stops by
//! itself after [`LINES`] lines, which is all that bounds the tests.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use build_support::{provision, Error};
use common::*;

/// Header lines the server sends (one per [`EVERY`]) before it gives up and closes.
const LINES: usize = 60;
const EVERY: Duration = Duration::from_millis(250);

/// Serves one connection: a status line, then one header line per [`EVERY`], [`LINES`] in all,
/// never the blank line that ends the head. Returns the URL and the count of lines sent.
fn header_dripper() -> (String, Arc<AtomicUsize>, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding the test server");
    let url = format!("http://{}/{FILE_NAME}", listener.local_addr().expect("address"));
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let server = std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else { return };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let mut request = [0u8; 4096];
        let _ = stream.read(&mut request);
        if stream.write_all(b"HTTP/1.1 200 OK\r\n").is_err() {
            return;
        }
        for n in 0..LINES {
            std::thread::sleep(EVERY);
            if stream.write_all(format!("X-Drip-{n}: {n}\r\n").as_bytes()).is_err() {
                return;
            }
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    (url, sent, server)
}

/// Provisions from `url` with one attempt and these limits; the error it must end with.
fn fetch_failing(url: &str, stall: u64, deadline: u64) -> (Error, tempfile::TempDir) {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(url, &sha256(b"never sent"), MAX_BYTES), &cache);
    config.stall_timeout = Duration::from_secs(stall);
    config.deadline = Duration::from_secs(deadline);
    config.attempts = 1;
    let err = provision(&config).expect_err("the headers never end");
    assert_cache_clean(&cache);
    (err, tmp)
}

#[test]
fn server_dripping_header_lines_fails_at_the_deadline() {
    let (url, sent, server) = header_dripper();
    // Every line comes well inside the 5 s progress window; the 3 s deadline must end it.
    let (err, _tmp) = fetch_failing(&url, 5, 3);
    let Error::Download { why, .. } = &err else { panic!("expected Download, got {err:?}") };
    assert!(why.contains("deadline") && why.contains("ONNXRT_DOWNLOAD_DEADLINE"), "{why}");
    assert!(sent.load(Ordering::SeqCst) < LINES, "the client waited for every header line the server had; {err}");
    let _ = server.join();
}

#[test]
fn server_dripping_header_lines_fails_after_one_progress_window() {
    let (url, sent, server) = header_dripper();
    // A whole response head must arrive within the 2 s progress window, long before the deadline.
    let (err, _tmp) = fetch_failing(&url, 2, 600);
    let Error::Download { why, .. } = &err else { panic!("expected Download, got {err:?}") };
    assert!(why.contains("too slow") && why.contains("ONNXRT_DOWNLOAD_TIMEOUT"), "{why}");
    assert!(sent.load(Ordering::SeqCst) < LINES, "the client waited for every header line the server had; {err}");
    let _ = server.join();
}
