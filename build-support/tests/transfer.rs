//! Downloads in bounded time over the transport the user allowed: a server that drips bytes
//! fails "too slow", a whole attempt has a deadline, plain http needs `ONNXRT_ALLOW_HTTP=1`,
//! redirects are followed hop by hop and the final URL is logged, and an HTTP error's advice is
//! printed once.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use build_support::{provision, Error};
use common::*;

const PATH: &str = "/v1.16.2/onnxruntime-linux-x64-1.16.2.tgz";
const BIN: &str = env!("CARGO_BIN_EXE_onnxrt-dist");

#[test]
fn server_dripping_a_byte_every_3_s_fails_too_slow_within_60_s() {
    // As a user would meet it: `onnxrt-dist fetch` with ONNXRT_DOWNLOAD_TIMEOUT=5 and the
    // default three attempts, against a server that sends one byte every three seconds.
    // The unpinned distribution, so that the test's own pin is accepted.
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let every = Duration::from_secs(3);
    let path = format!("/{UNPINNED_FILE}");
    let server = Server::start(vec![(path.as_str(), Behaviour::Drip { body: archive, chunk: 1, every })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let out = Command::new(BIN)
        .args(["fetch", UNPINNED_DIST])
        .env_clear()
        .env("ONNXRT_CACHE_DIR", &cache)
        .env("ONNXRT_MIRROR", server.base())
        .env("ONNXRT_ALLOW_HTTP", "1")
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .env("ONNXRT_DOWNLOAD_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()
        .expect("running onnxrt-dist");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // "too slow" is the progress rule's verdict (no elapsed-time assertion, which would fail on
    // a slow machine: without the rule the download would take the archive's length × 3 s).
    assert!(stderr.contains("too slow"), "{stderr}");
    assert_eq!(server.total_hits(), 3, "three attempts");
    assert_cache_clean(&cache);
}

#[test]
fn download_making_progress_still_ends_at_the_deadline() {
    // 100 KB a second passes the progress rule (64 KiB per 2 s window) but not a 3 s deadline.
    let body = vec![0x42u8; 1_000_000];
    let server = Server::start(vec![(
        PATH,
        Behaviour::Drip { body: body.clone(), chunk: 100_000, every: Duration::from_secs(1) },
    )]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha256(&body), MAX_BYTES), &cache);
    config.stall_timeout = Duration::from_secs(2);
    config.deadline = Duration::from_secs(3);
    config.attempts = 1;
    let err = provision(&config).expect_err("past the deadline");
    let Error::Download { why, .. } = &err else { panic!("expected Download, got {err:?}") };
    // The deadline's own verdict, not an elapsed-time assertion.
    assert!(why.contains("too slow") && why.contains("deadline"), "{why}");
    assert_cache_clean(&cache);
}

#[test]
fn plain_http_is_refused_without_a_request_unless_allowed() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    config.allow_http = false;
    let err = provision(&config).expect_err("http without the opt-in");
    let Error::Insecure { url, from: None, .. } = &err else { panic!("expected Insecure, got {err:?}") };
    assert_eq!(url, &server.url(PATH));
    assert!(err.to_string().contains("ONNXRT_ALLOW_HTTP=1"), "{err}");
    assert_eq!(server.total_hits(), 0);
    assert_cache_clean(&cache);

    config.allow_http = true;
    let p = provision(&config).expect("allowed");
    assert_installed(&p, &cache, &sha);
}

#[test]
fn redirect_to_another_host_is_followed_and_the_final_url_logged() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let target = Server::start(vec![("/release-assets/blob", Behaviour::Serve(archive))]);
    let first = Server::start(vec![(PATH, Behaviour::Redirect(target.url("/release-assets/blob")))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&first.url(PATH), &sha, MAX_BYTES), &cache);
    let p = provision(&config).expect("a redirected download");
    let build_support::Source::Download { url, final_url } = &p.source else { panic!("source {:?}", p.source) };
    assert_eq!(url, &first.url(PATH));
    assert_eq!(final_url, &target.url("/release-assets/blob"));
    let line = p.source.to_string();
    assert!(line.contains(&format!("redirected to {}", target.url("/release-assets/blob"))), "{line}");
    assert_installed(&p, &cache, &sha);
    assert_eq!((first.hits(PATH), target.hits("/release-assets/blob")), (1, 1));
}

// An https URL redirected to http is refused hop by hop: `download::tests` checks that rule,
// since the test servers speak plain http only.

#[test]
fn redirect_loop_ends_after_a_bounded_number_of_hops() {
    let server = Server::start(vec![(PATH, Behaviour::Redirect(PATH.to_owned()))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha256(b"x"), MAX_BYTES), &cache);
    let err = provision(&config).expect_err("a loop");
    let Error::Download { why, .. } = &err else { panic!("expected Download, got {err:?}") };
    assert!(why.contains("redirects"), "{why}");
    assert_eq!(server.hits(PATH), build_support::download::MAX_REDIRECTS + 1, "not retried, bounded");
    assert_cache_clean(&cache);
}

#[test]
fn http_5xx_advice_is_printed_once() {
    let server = Server::start(vec![(PATH, Behaviour::Status(503))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha256(b"x"), MAX_BYTES), &cache);
    config.attempts = 2;
    let err = provision(&config).expect_err("503");
    let text = err.to_string();
    assert!(text.contains("503"), "{text}");
    assert_eq!(text.matches("ONNXRT_ARCHIVE=/path/to/file").count(), 1, "{text}");
    assert_cache_clean(&cache);
}
