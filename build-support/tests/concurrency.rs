//! Concurrent builds share one cache: threads and processes that provision the same
//! distribution at once must download it once, agree on one entry, and a build killed in the
//! middle of a download must not poison the cache for the next one.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Barrier;
use std::time::Duration;

use build_support::{provision, Source};
use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_onnxrt-dist");

#[test]
fn four_threads_on_a_fresh_cache_download_once() {
    let archive = good_archive();
    let sha = sha256(&archive);
    let path = format!("/{FILE_NAME}");
    let server =
        Server::start(vec![(path.as_str(), Behaviour::Slow { body: archive, delay: Duration::from_millis(300) })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let config = config(manifest(&server.url(&path), &sha, MAX_BYTES), &cache);

    let barrier = Barrier::new(4);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    provision(&config)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a provisioning thread panicked")).collect()
    });

    let mut downloads = 0;
    for result in results {
        let p = result.expect("every thread provisions");
        assert_installed(&p, &cache, &sha);
        match p.source {
            Source::Download { .. } => downloads += 1,
            Source::Cache { entry, .. } => assert_eq!(entry, cache.join(&sha)),
            other => panic!("unexpected source {other:?}"),
        }
    }
    assert_eq!(downloads, 1, "exactly one thread downloads, the others wait for it");
    assert_eq!(server.hits(&path), 1);
    assert_cache_holds_only(&cache, &sha);
}

/// `onnxrt-dist fetch UNPINNED_DIST` with nothing from the outer environment but what is given.
fn fetch(cache: &Path, mirror: &str, sha: &str) -> Child {
    Command::new(BIN)
        .args(["fetch", UNPINNED_DIST])
        .env_clear()
        .env("ONNXRT_CACHE_DIR", cache)
        .env("ONNXRT_MIRROR", mirror)
        .env("ONNXRT_ALLOW_HTTP", "1")
        .env("ONNXRT_ARCHIVE_SHA256", sha)
        .env("ONNXRT_DOWNLOAD_TIMEOUT", "10")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting onnxrt-dist")
}

/// Waits for `child` and collects its output. No time limit (a limit would fail the test on a
/// slow machine; a build that never ends hangs it instead).
fn wait(child: Child) -> Output {
    child.wait_with_output().expect("collecting the output of onnxrt-dist")
}

fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn four_processes_on_a_fresh_cache_download_once() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let path = format!("/{UNPINNED_FILE}");
    let server =
        Server::start(vec![(path.as_str(), Behaviour::Slow { body: archive, delay: Duration::from_millis(300) })]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");

    let children: Vec<Child> = (0..4).map(|_| fetch(&cache, &server.base(), &sha)).collect();
    let outputs: Vec<Output> = children.into_iter().map(wait).collect();

    let expected_lib = format!("{}\n", cache.join(&sha).join(UNPINNED_ROOT).join("lib").display());
    for output in &outputs {
        assert!(output.status.success(), "{}", describe(output));
        assert_eq!(String::from_utf8_lossy(&output.stdout), expected_lib, "{}", describe(output));
    }
    let downloaded = outputs.iter().filter(|o| String::from_utf8_lossy(&o.stderr).contains("a download of")).count();
    assert_eq!(downloaded, 1, "exactly one process downloads");
    assert_eq!(server.hits(&path), 1);
    assert_cache_holds_only(&cache, &sha);
}

#[test]
fn build_killed_mid_download_leaves_nothing_the_next_build_trips_on() {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let path = format!("/{UNPINNED_FILE}");
    let stalling = Server::start(vec![(
        path.as_str(),
        // An hour: the build is killed long before; it must not finish by itself first.
        Behaviour::StallInBody { body: archive.clone(), sent: archive.len() / 2, stall: Duration::from_secs(3600) },
    )]);
    let tmp = tempdir();
    let cache = tmp.path().join("cache");

    let mut child = fetch(&cache, &stalling.base(), &sha);
    // Kill it once its partial download exists (by state, not after a time: a slow machine only
    // takes longer to get there). If the build ended first, the assertions below say so.
    let partial =
        |cache: &Path| tmp_leftovers(cache).iter().any(|n| n.starts_with(&format!("{UNPINNED_DIST}.download-")));
    // Both: the work file is made before the request goes out, so it can exist before the
    // server has counted the request.
    while !(partial(&cache) && stalling.hits(&path) == 1) && child.try_wait().expect("polling onnxrt-dist").is_none() {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(stalling.hits(&path), 1, "the first build never reached the server");
    child.kill().expect("killing the first build");
    let killed = wait(child);
    assert!(!killed.status.success(), "the first build was not killed: {}", describe(&killed));
    let leftovers = tmp_leftovers(&cache);
    assert!(
        leftovers.iter().any(|n| n.starts_with(&format!("{UNPINNED_DIST}.download-"))),
        "the killed build left no partial download, so the sweep is not exercised: {leftovers:?}"
    );
    assert_eq!(cache_entries(&cache), Vec::<String>::new(), "a killed build published an entry");

    let good = Server::start(vec![(path.as_str(), Behaviour::Serve(archive))]);
    let output = wait(fetch(&cache, &good.base(), &sha));
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(good.hits(&path), 1);
    // The next build swept the dead build's partial download (and published one entry).
    assert_cache_holds_only(&cache, &sha);
}

/// A build killed while it extracts (a 256 MiB entry, so there is time to catch it) leaves only
/// its work folder in `.tmp`; the next build sweeps that, extracts again and publishes one entry.
#[test]
fn build_killed_mid_extraction_leaves_nothing_the_next_build_trips_on() {
    let mut entries = vec![
        (format!("{UNPINNED_ROOT}/"), Kind::Dir),
        (format!("{UNPINNED_ROOT}/padding.bin"), Kind::File(vec![0u8; 256 << 20])),
    ];
    entries.extend(unpinned_entries().into_iter().skip(1));
    let archive = tgz_owned(&entries);
    let sha = sha256(&archive);
    let tmp = tempdir();
    let file = tmp.path().join(UNPINNED_FILE);
    std::fs::write(&file, &archive).expect("writing the archive");
    let cache = tmp.path().join("cache");
    let build = || {
        Command::new(BIN)
            .args(["fetch", UNPINNED_DIST])
            .env_clear()
            .env("ONNXRT_CACHE_DIR", &cache)
            .env("ONNXRT_ARCHIVE", &file)
            .env("ONNXRT_ARCHIVE_SHA256", &sha)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting onnxrt-dist")
    };

    let mut child = build();
    // Wait until the padding is being written inside a work folder (or the build ended), then
    // kill the build: by state, not by time.
    let extracting = || {
        find_named(&cache.join(".tmp"), "padding.bin").iter().any(|p| std::fs::metadata(p).is_ok_and(|m| m.len() > 0))
    };
    while !extracting() && child.try_wait().expect("polling onnxrt-dist").is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(extracting(), "the build never started extracting");
    child.kill().expect("killing the first build");
    let killed = wait(child);
    assert!(!killed.status.success(), "the build finished before it was killed: {}", describe(&killed));
    assert!(!tmp_leftovers(&cache).is_empty(), "the killed build left no work folder, so the sweep is not exercised");
    assert_eq!(cache_entries(&cache), Vec::<String>::new(), "a killed build published an entry");

    let output = wait(build());
    assert!(output.status.success(), "{}", describe(&output));
    assert_cache_holds_only(&cache, &sha);
}
