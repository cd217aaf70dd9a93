//! Provisioning over the network and from local archives, against a real HTTP server on
//! 127.0.0.1: verification, caching, bounded retries, size caps, stalls, pins, offline mode,
//! `ONNXRT_ARCHIVE` and `pack`. Every failure must be the exact typed error and leave the cache
//! without an entry and without leftover work.

mod common;

use std::time::Duration;

use build_support::{provision, Error, Source};
use common::*;

const PATH: &str = "/v1.16.2/onnxruntime-linux-x64-1.16.2.tgz";

#[test]
fn good_archive_is_downloaded_verified_and_then_served_from_the_cache() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);

    let first = provision(&config).expect("a good archive provisions");
    assert_eq!(first.source, downloaded(&server.url(PATH)));
    assert_installed(&first, &cache, &sha);
    assert_cache_holds_only(&cache, &sha);

    let second = provision(&config).expect("the second build hits the cache");
    assert_eq!(cache_hit(&second.source), Some(cache.join(&sha)));
    assert_installed(&second, &cache, &sha);
    assert_eq!(server.hits(PATH), 1, "a warm build must not download");
    assert_eq!(server.total_hits(), 1);
}

#[test]
fn one_flipped_byte_is_a_hash_mismatch() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let mut flipped = archive.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    let server = Server::start(vec![(PATH, Behaviour::Serve(flipped.clone()))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);

    let err = provision(&config).expect_err("a corrupted download must be refused");
    let Error::HashMismatch { expected, actual, .. } = &err else { panic!("expected HashMismatch, got {err:?}") };
    assert_eq!(expected, &sha);
    assert_eq!(actual, &sha256(&flipped));
    assert_eq!(server.hits(PATH), 1, "a hash mismatch is not retried");
    assert_cache_clean(&cache);
}

#[test]
fn truncated_body_is_reported_as_truncated_after_bounded_retries() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let sent = archive.len() / 2;
    let announced = archive.len() as u64;
    let server = Server::start(vec![(PATH, Behaviour::Truncated { body: archive[..sent].to_vec(), announced })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);

    let err = provision(&config).expect_err("a truncated body must be refused");
    let Error::Truncated { got, expected, .. } = &err else { panic!("expected Truncated, got {err:?}") };
    assert_eq!((*got, *expected), (sent as u64, announced));
    assert_eq!(server.hits(PATH), config.attempts as usize, "a cut connection is retried, boundedly");
    assert_cache_clean(&cache);
}

#[test]
fn http_404_is_final_and_not_retried() {
    let server = Server::start(vec![(PATH, Behaviour::Status(404))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha256(b"whatever"), MAX_BYTES), &cache);

    let err = provision(&config).expect_err("404 must fail");
    let Error::HttpStatus { status, url } = &err else { panic!("expected HttpStatus, got {err:?}") };
    assert_eq!(*status, 404);
    assert_eq!(url, &server.url(PATH));
    assert_eq!(server.hits(PATH), 1, "4xx is not retried");
    assert_cache_clean(&cache);
}

#[test]
fn http_503_twice_then_200_succeeds_on_the_third_attempt() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Flaky { failures: 2, body: archive })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    assert_eq!(config.attempts, 3);

    let p = provision(&config).expect("5xx is retried and the third attempt succeeds");
    assert_eq!(p.source, downloaded(&server.url(PATH)));
    assert_installed(&p, &cache, &sha);
    assert_eq!(server.hits(PATH), 3);
    assert_cache_holds_only(&cache, &sha);
}

#[test]
fn http_503_forever_gives_up_after_the_allowed_attempts() {
    let server = Server::start(vec![(PATH, Behaviour::Flaky { failures: 100, body: Vec::new() })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha256(b"whatever"), MAX_BYTES), &cache);

    let err = provision(&config).expect_err("a server that keeps failing must fail the build");
    let Error::Download { attempts, why, .. } = &err else { panic!("expected Download, got {err:?}") };
    assert_eq!(*attempts, 3);
    assert!(why.contains("503"), "{why}");
    assert_eq!(server.hits(PATH), 3, "retries are bounded");
    assert_cache_clean(&cache);
}

#[test]
fn announced_body_larger_than_the_cap_is_refused_before_reading() {
    let body = vec![0x5a; 5000];
    let server = Server::start(vec![(PATH, Behaviour::Serve(body.clone()))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha256(&body), 1000), &cache);

    let err = provision(&config).expect_err("an over-long body must be refused");
    let Error::TooLarge { cap, .. } = &err else { panic!("expected TooLarge, got {err:?}") };
    assert_eq!(*cap, 1000);
    assert_eq!(server.hits(PATH), 1, "TooLarge is not retried");
    assert_cache_clean(&cache);
}

#[test]
fn unannounced_body_larger_than_the_cap_is_cut_and_refused() {
    let body = vec![0x5a; 200_000];
    let server = Server::start(vec![(PATH, Behaviour::Unannounced(body.clone()))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(PATH), &sha256(&body), 1000), &cache);

    let err = provision(&config).expect_err("an over-long body without Content-Length must be refused");
    let Error::TooLarge { cap, .. } = &err else { panic!("expected TooLarge, got {err:?}") };
    assert_eq!(*cap, 1000);
    assert_eq!(server.hits(PATH), 1, "TooLarge is not retried");
    assert_cache_clean(&cache);
}

#[test]
fn server_stalling_inside_the_body_fails_within_seconds() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let sent = archive.len() / 3;
    // An hour: if the stall timeout were not applied the test would hang, so no wall-clock
    // assertion is needed (one would fail on a slow machine).
    let stall = Duration::from_secs(3600);
    let server = Server::start(vec![(PATH, Behaviour::StallInBody { body: archive, sent, stall })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    config.stall_timeout = Duration::from_secs(1);

    let err = provision(&config).expect_err("a stalled download must fail");
    let Error::Download { attempts, .. } = &err else { panic!("expected Download, got {err:?}") };
    assert_eq!(*attempts, 3);
    assert_eq!(server.hits(PATH), 3);
    assert_cache_clean(&cache);
}

#[test]
fn server_stalling_before_the_headers_fails_within_seconds() {
    // An hour, as above: a stall timeout that is not applied hangs the test.
    let server = Server::start(vec![(PATH, Behaviour::StallBeforeHeaders(Duration::from_secs(3600)))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha256(b"whatever"), MAX_BYTES), &cache);
    config.stall_timeout = Duration::from_secs(1);
    config.attempts = 2;

    let err = provision(&config).expect_err("a server that never answers must fail the build");
    let Error::Download { attempts, .. } = &err else { panic!("expected Download, got {err:?}") };
    assert_eq!(*attempts, 2);
    assert_eq!(server.hits(PATH), 2);
    assert_cache_clean(&cache);
}

#[test]
fn unpinned_archive_fails_closed_with_the_computed_hash_until_the_user_pins_it() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), "", MAX_BYTES), &cache);

    let err = provision(&config).expect_err("nothing unpinned is trusted");
    let Error::Unpinned { computed, dist } = &err else { panic!("expected Unpinned, got {err:?}") };
    assert_eq!(computed, &sha);
    assert_eq!(dist, DIST);
    assert!(err.to_string().contains(&format!("ONNXRT_ARCHIVE_SHA256={sha}")), "{err}");
    assert_cache_clean(&cache);

    config.archive_sha256 = Some(sha.clone());
    let p = provision(&config).expect("the user's pin is accepted");
    assert_eq!(p.source, downloaded(&server.url(PATH)));
    assert_installed(&p, &cache, &sha);
    assert_eq!(server.hits(PATH), 2);
    assert_cache_holds_only(&cache, &sha);
}

#[test]
fn users_pin_contradicting_the_manifest_is_refused_without_a_request() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    config.archive_sha256 = Some(sha256(b"another file"));

    let err = provision(&config).expect_err("two different pins");
    let Error::PinConflict { pinned, .. } = &err else { panic!("expected PinConflict, got {err:?}") };
    assert_eq!(pinned, &sha);
    assert_eq!(server.total_hits(), 0);
    assert_cache_clean(&cache);
}

#[test]
fn offline_with_an_empty_cache_fails_without_a_request() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mut config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    config.offline = Some("ONNXRT_OFFLINE=1".into());

    let err = provision(&config).expect_err("offline and nothing cached");
    let Error::Offline { reason, file, .. } = &err else { panic!("expected Offline, got {err:?}") };
    assert_eq!(reason, "ONNXRT_OFFLINE=1");
    assert_eq!(file, FILE_NAME);
    assert_eq!(server.total_hits(), 0, "offline means no request at all");
    assert_cache_clean(&cache);

    // Once cached, offline builds work.
    config.offline = None;
    provision(&config).expect("online build");
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    let p = provision(&config).expect("offline build served by the cache");
    assert_eq!(cache_hit(&p.source), Some(cache.join(&sha)));
    assert_eq!(server.total_hits(), 1);
}

#[test]
fn mirror_serves_the_same_file_name() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let mirror_path = format!("/mirror/{FILE_NAME}");
    let server = Server::start(vec![(mirror_path.as_str(), Behaviour::Serve(archive))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    // The manifest URL is unreachable (port 9, discard); only the mirror may be asked.
    let mut config = config(manifest(&format!("http://127.0.0.1:9/x/{FILE_NAME}"), &sha, MAX_BYTES), &cache);
    config.mirror = Some(format!("{}/mirror/", server.base()));

    let p = provision(&config).expect("download from the mirror");
    assert_eq!(p.source, downloaded(&server.url(&mirror_path)));
    assert_eq!(server.hits(&mirror_path), 1);
    assert_cache_holds_only(&cache, &sha);
}

#[test]
fn local_archive_is_verified_installed_then_served_from_the_cache() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive.clone()))]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the local archive");
    let mut config = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &cache);
    config.archive = Some(file.clone());

    let first = provision(&config).expect("a good local archive provisions");
    assert_eq!(first.source, Source::Archive { path: file.clone() });
    assert_installed(&first, &cache, &sha);

    let second = provision(&config).expect("the same archive again");
    assert_eq!(cache_hit(&second.source), Some(cache.join(&sha)));
    assert_installed(&second, &cache, &sha);
    assert_eq!(server.total_hits(), 0, "a local archive needs no network");
    assert_cache_holds_only(&cache, &sha);

    // And a download of the same distribution is now a cache hit too.
    config.archive = None;
    let third = provision(&config).expect("cache hit");
    assert_eq!(cache_hit(&third.source), Some(cache.join(&sha)));
    assert_eq!(server.total_hits(), 0);
}

#[test]
fn local_archive_with_a_flipped_byte_is_a_hash_mismatch() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let mut flipped = archive;
    flipped[40] ^= 0x80;
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &flipped).expect("writing the local archive");
    let mut config = config(manifest("http://127.0.0.1:9/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);

    let err = provision(&config).expect_err("corrupt local archive");
    let Error::HashMismatch { expected, actual, .. } = &err else { panic!("expected HashMismatch, got {err:?}") };
    assert_eq!((expected, actual), (&sha, &sha256(&flipped)));
    assert_cache_clean(&cache);
}

#[test]
fn pack_is_deterministic_and_round_trips_through_onnxrt_archive() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the local archive");
    let mut config = config(manifest("http://127.0.0.1:9/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    let provisioned = provision(&config).expect("provisioning the synthetic archive");

    let out1 = tmp.path().join("packed-1.tgz");
    let out2 = tmp.path().join("packed-2.tgz");
    let sha1 = build_support::pack::pack(&provisioned, &out1).expect("first pack");
    let sha2 = build_support::pack::pack(&provisioned, &out2).expect("second pack");
    let bytes1 = std::fs::read(&out1).expect("reading the first pack");
    let bytes2 = std::fs::read(&out2).expect("reading the second pack");
    assert_eq!(sha1, sha2);
    assert!(bytes1 == bytes2, "pack is not deterministic");
    assert_eq!(sha1, sha256(&bytes1));
    assert!(!tmp.path().join("packed-1.tgz.partial").exists(), "pack left its temporary file");

    // The packed archive provisions like the original, into a fresh cache, pinned by the user.
    let cache2 = tmp.path().join("cache2");
    let mut config2 = common::config(manifest("http://127.0.0.1:9/x.tgz", "", MAX_BYTES), &cache2);
    config2.archive = Some(out1.clone());
    config2.archive_sha256 = Some(sha1.clone());
    let round = provision(&config2).expect("the packed archive provisions");
    assert_eq!(round.source, Source::Archive { path: out1 });
    assert_installed(&round, &cache2, &sha1);
    assert_cache_holds_only(&cache2, &sha1);
}

/// Every event a reporter hears, as text (the test asserts their order and values).
fn recording() -> (build_support::Reporter, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use build_support::download::Event;
    let heard = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&heard);
    let reporter = build_support::Reporter::new(move |event| {
        let line = match *event {
            Event::Started { attempt, total, .. } => format!("started {attempt} {total:?}"),
            Event::Received { bytes, total } => format!("received {bytes} {total:?}"),
            Event::Finished { bytes, .. } => format!("finished {bytes}"),
        };
        sink.lock().expect("not poisoned").push(line);
    });
    (reporter, heard)
}

#[test]
fn the_progress_reporter_hears_each_attempt_its_bytes_and_the_end() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let len = archive.len() as u64;
    let server = Server::start(vec![(PATH, Behaviour::Serve(archive.clone()))]);
    let tmp = tempdir();
    let mut cfg = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &tmp.path().join("cache"));
    let (reporter, heard) = recording();
    cfg.progress = Some(reporter);
    provision(&cfg).expect("a good archive provisions");
    let heard = heard.lock().expect("not poisoned").clone();
    assert_eq!(heard.first().map(String::as_str), Some(format!("started 1 Some({len})").as_str()), "{heard:?}");
    assert_eq!(heard.last().map(String::as_str), Some(format!("finished {len}").as_str()), "{heard:?}");
    let received: Vec<u64> =
        heard.iter().filter_map(|l| l.strip_prefix("received ")?.split(' ').next()?.parse().ok()).collect();
    assert!(received.windows(2).all(|w| w[0] < w[1]), "bytes only grow within an attempt: {received:?}");
    assert_eq!(received.last(), Some(&len), "{heard:?}");

    // A body cut short: every attempt starts again from zero, and none is reported finished.
    let sent = archive.len() / 2;
    let server = Server::start(vec![(PATH, Behaviour::Truncated { body: archive[..sent].to_vec(), announced: len })]);
    let tmp = tempdir();
    let mut cfg = config(manifest(&server.url(PATH), &sha, MAX_BYTES), &tmp.path().join("cache"));
    let (reporter, heard) = recording();
    cfg.progress = Some(reporter);
    provision(&cfg).expect_err("a truncated body must be refused");
    let heard = heard.lock().expect("not poisoned").clone();
    let starts: Vec<&String> = heard.iter().filter(|l| l.starts_with("started")).collect();
    assert_eq!(
        starts,
        [&format!("started 1 Some({len})"), &format!("started 2 Some({len})"), &format!("started 3 Some({len})")]
    );
    assert!(!heard.iter().any(|l| l.starts_with("finished")), "{heard:?}");
    let most = heard.iter().filter_map(|l| l.strip_prefix("received ")?.split(' ').next()?.parse::<u64>().ok()).max();
    assert!(most.is_some_and(|m| m <= sent as u64), "no more than was sent: {most:?}");
}
