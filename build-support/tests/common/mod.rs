//! Helpers shared by the integration tests of build-support: a deliberately hostile HTTP server
//! on 127.0.0.1, builders for good and hostile `.tgz` archives, a one-entry test manifest, and
//! checks of what the cache folder holds afterwards.
//!
//! Everything here is bounded: the server stops by itself when dropped (and after
//! [`SERVER_LIFETIME`] or [`MAX_CONNECTIONS`] at the latest), every stall sleeps in short slices
//! that watch the stop flag, and every socket has read/write timeouts.
#![allow(dead_code)] // each test file uses its own subset

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use build_support::{Config, Manifest, Provisioned};

// ------------------------------------------------------------------------------------------------
// The HTTP server

/// Longest a test server lives, whatever happens.
pub const SERVER_LIFETIME: Duration = Duration::from_secs(120);
/// Most connections a test server accepts.
pub const MAX_CONNECTIONS: usize = 64;

/// What the server does for one path.
#[derive(Clone, Debug)]
pub enum Behaviour {
    /// 200 with these bytes and their exact `Content-Length`.
    Serve(Vec<u8>),
    /// 200, but sleeps `delay` between the headers and the body (so concurrent clients overlap).
    Slow { body: Vec<u8>, delay: Duration },
    /// This status with a short text body.
    Status(u16),
    /// `Content-Length: announced`, then only `body` (shorter), then the connection is closed.
    Truncated { body: Vec<u8>, announced: u64 },
    /// 200 without `Content-Length`: the body ends when the connection closes.
    Unannounced(Vec<u8>),
    /// Sleeps `stall` before sending anything, then closes.
    StallBeforeHeaders(Duration),
    /// Headers with the full `Content-Length`, the first `sent` bytes, a stall of `stall`, then close.
    StallInBody { body: Vec<u8>, sent: usize, stall: Duration },
    /// 503 for the first `failures` requests, then 200 with `body`.
    Flaky { failures: usize, body: Vec<u8> },
    /// Headers with the full `Content-Length`, then `chunk` bytes of `body` every `every`.
    Drip { body: Vec<u8>, chunk: usize, every: Duration },
    /// `302 Found` to this location.
    Redirect(String),
}

struct Route {
    behaviour: Behaviour,
    hits: Arc<AtomicUsize>,
}

/// A one-purpose HTTP/1.1 server (`Connection: close`, a thread per connection) on 127.0.0.1.
pub struct Server {
    addr: SocketAddr,
    hits: HashMap<String, Arc<AtomicUsize>>,
    unknown: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Server {
    /// Starts a server answering each `(path, behaviour)`; any other path gets 404.
    pub fn start(routes: Vec<(&str, Behaviour)>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding a test server on 127.0.0.1");
        let addr = listener.local_addr().expect("address of the test server");
        listener.set_nonblocking(true).expect("making the test listener non-blocking");
        let mut table = HashMap::new();
        let mut hits = HashMap::new();
        for (path, behaviour) in routes {
            let counter = Arc::new(AtomicUsize::new(0));
            hits.insert(path.to_owned(), counter.clone());
            table.insert(path.to_owned(), Route { behaviour, hits: counter });
        }
        let table = Arc::new(table);
        let unknown = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = {
            let (table, unknown, stop, workers) = (table.clone(), unknown.clone(), stop.clone(), workers.clone());
            std::thread::spawn(move || accept_loop(listener, table, unknown, stop, workers))
        };
        Server { addr, hits, unknown, stop, accept: Some(accept), workers }
    }

    /// The server's address on 127.0.0.1.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>` (a mirror base).
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// Requests received for `path` so far.
    pub fn hits(&self, path: &str) -> usize {
        self.hits.get(path).map_or(0, |h| h.load(Ordering::SeqCst))
    }

    /// Requests received for any path, known or not.
    pub fn total_hits(&self) -> usize {
        self.hits.values().map(|h| h.load(Ordering::SeqCst)).sum::<usize>() + self.unknown.load(Ordering::SeqCst)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let workers = match self.workers.lock() {
            Ok(mut w) => std::mem::take(&mut *w),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        for worker in workers {
            let _ = worker.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    table: Arc<HashMap<String, Route>>,
    unknown: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    workers: Arc<Mutex<Vec<JoinHandle<()>>>>,
) {
    let started = Instant::now();
    let mut accepted = 0;
    while !stop.load(Ordering::SeqCst) && started.elapsed() < SERVER_LIFETIME && accepted < MAX_CONNECTIONS {
        match listener.accept() {
            Ok((stream, _)) => {
                accepted += 1;
                let (table, unknown, stop) = (table.clone(), unknown.clone(), stop.clone());
                let worker = std::thread::spawn(move || handle(stream, &table, &unknown, &stop));
                if let Ok(mut w) = workers.lock() {
                    w.push(worker);
                }
            }
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// Sleeps `total`, in slices, returning early once the server is stopping.
fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let deadline = Instant::now() + total;
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(20)));
    }
}

/// Reads the request head (at most 8 KiB) and returns the path of its request line.
fn read_request_path(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > 8192 {
            return None;
        }
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.lines().next()?.split_whitespace().nth(1)?;
    Some(target.split('?').next().unwrap_or(target).to_owned())
}

fn head(status: u16, length: Option<u64>) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut text =
        format!("HTTP/1.1 {status} {reason}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n");
    if let Some(length) = length {
        text.push_str(&format!("Content-Length: {length}\r\n"));
    }
    text.push_str("\r\n");
    text.into_bytes()
}

fn handle(mut stream: TcpStream, table: &HashMap<String, Route>, unknown: &AtomicUsize, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let Some(path) = read_request_path(&mut stream) else {
        return;
    };
    let Some(route) = table.get(&path) else {
        unknown.fetch_add(1, Ordering::SeqCst);
        let _ = stream.write_all(&head(404, Some(10)));
        let _ = stream.write_all(b"not found\n");
        let _ = stream.shutdown(Shutdown::Write);
        return;
    };
    let seen_before = route.hits.fetch_add(1, Ordering::SeqCst);
    // Write errors mean the client went away: nothing to do but close.
    let _ = respond(&mut stream, &route.behaviour, seen_before, stop);
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
}

fn respond(
    stream: &mut TcpStream,
    behaviour: &Behaviour,
    seen_before: usize,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    match behaviour {
        Behaviour::Serve(body) => {
            stream.write_all(&head(200, Some(body.len() as u64)))?;
            stream.write_all(body)
        }
        Behaviour::Slow { body, delay } => {
            stream.write_all(&head(200, Some(body.len() as u64)))?;
            stream.flush()?;
            sleep_unless_stopped(*delay, stop);
            stream.write_all(body)
        }
        Behaviour::Status(status) => {
            let body = format!("status {status}\n");
            stream.write_all(&head(*status, Some(body.len() as u64)))?;
            stream.write_all(body.as_bytes())
        }
        Behaviour::Truncated { body, announced } => {
            stream.write_all(&head(200, Some(*announced)))?;
            stream.write_all(body)
        }
        Behaviour::Unannounced(body) => {
            stream.write_all(&head(200, None))?;
            stream.write_all(body)
        }
        Behaviour::StallBeforeHeaders(stall) => {
            sleep_unless_stopped(*stall, stop);
            Ok(())
        }
        Behaviour::StallInBody { body, sent, stall } => {
            stream.write_all(&head(200, Some(body.len() as u64)))?;
            stream.write_all(&body[..(*sent).min(body.len())])?;
            stream.flush()?;
            sleep_unless_stopped(*stall, stop);
            Ok(())
        }
        Behaviour::Drip { body, chunk, every } => {
            stream.write_all(&head(200, Some(body.len() as u64)))?;
            for piece in body.chunks((*chunk).max(1)) {
                stream.write_all(piece)?;
                stream.flush()?;
                sleep_unless_stopped(*every, stop);
                if stop.load(Ordering::SeqCst) {
                    break;
                }
            }
            Ok(())
        }
        Behaviour::Redirect(location) => stream.write_all(
            format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        ),
        Behaviour::Flaky { failures, body } => {
            if seen_before < *failures {
                respond(stream, &Behaviour::Status(503), seen_before, stop)
            } else {
                respond(stream, &Behaviour::Serve(body.clone()), seen_before, stop)
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Archives

/// The top-level folder of the synthetic archive (that of the official CPU 1.16.2 release).
pub const ROOT: &str = "onnxruntime-linux-x64-1.16.2";
/// File name the official CPU 1.16.2 release and a mirror serve it under.
pub const FILE_NAME: &str = "onnxruntime-linux-x64-1.16.2.tgz";
/// Bytes of the stand-in runtime library.
pub const LIB_BYTES: &[u8] = b"\x7fELF stand-in for libonnxruntime.so.1.16.2 (never loaded)\n";
/// Bytes of the stand-in C API header.
pub const HEADER_BYTES: &[u8] = b"/* stand-in for onnxruntime_c_api.h */\n#define ORT_API_VERSION 16\n";

/// One tar entry, written with a raw header so that hostile names survive.
#[derive(Clone, Debug)]
pub enum Kind {
    /// A folder.
    Dir,
    /// A regular file with these bytes.
    File(Vec<u8>),
    /// A regular file whose header claims `size` bytes while the archive holds none.
    LyingFile { size: u64 },
    /// A symbolic link to this target.
    Symlink(String),
    /// A hard link to this target.
    HardLink(String),
    /// A character device (1, 3: /dev/null).
    CharDevice,
    /// A named pipe.
    Fifo,
}

/// A gzip'd tar of `entries`, in order, with fixed owner, mode and time (deterministic bytes).
/// Names and link targets are written byte for byte into the header: `tar::Builder` would refuse
/// `..` and absolute paths, which is exactly what the hostile archives need.
pub fn tgz(entries: &[(&str, Kind)]) -> Vec<u8> {
    let gz = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    for (name, kind) in entries {
        let (entry_type, size, link, data): (tar::EntryType, u64, Option<&str>, &[u8]) = match kind {
            Kind::Dir => (tar::EntryType::Directory, 0, None, &[]),
            Kind::File(bytes) => (tar::EntryType::Regular, bytes.len() as u64, None, bytes),
            Kind::LyingFile { size } => (tar::EntryType::Regular, *size, None, &[]),
            Kind::Symlink(target) => (tar::EntryType::Symlink, 0, Some(target), &[]),
            Kind::HardLink(target) => (tar::EntryType::Link, 0, Some(target), &[]),
            Kind::CharDevice => (tar::EntryType::Char, 0, None, &[]),
            Kind::Fifo => (tar::EntryType::Fifo, 0, None, &[]),
        };
        let mut header = tar::Header::new_gnu();
        {
            let old = header.as_old_mut();
            assert!(name.len() < old.name.len(), "test entry name too long for a raw header: {name}");
            old.name = [0; 100];
            old.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some(link) = link {
                assert!(link.len() < old.linkname.len(), "test link target too long for a raw header: {link}");
                old.linkname = [0; 100];
                old.linkname[..link.len()].copy_from_slice(link.as_bytes());
            }
        }
        header.set_entry_type(entry_type);
        header.set_size(size);
        header.set_mode(match kind {
            Kind::Dir => 0o755,
            Kind::Symlink(_) => 0o777,
            _ => 0o644,
        });
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        if let Kind::CharDevice = kind {
            header.set_device_major(1).expect("device numbers in a GNU header");
            header.set_device_minor(3).expect("device numbers in a GNU header");
        }
        header.set_cksum();
        builder.append(&header, data).expect("appending to an in-memory tar");
    }
    let gz = builder.into_inner().expect("finishing an in-memory tar");
    gz.finish().expect("finishing an in-memory gzip stream")
}

/// The entries of a good archive: the layout of the official CPU release, in miniature.
pub fn good_entries() -> Vec<(String, Kind)> {
    vec![
        (format!("{ROOT}/"), Kind::Dir),
        (format!("{ROOT}/lib/"), Kind::Dir),
        (format!("{ROOT}/lib/libonnxruntime.so.1.16.2"), Kind::File(LIB_BYTES.to_vec())),
        (format!("{ROOT}/lib/libonnxruntime.so"), Kind::Symlink("libonnxruntime.so.1.16.2".into())),
        (format!("{ROOT}/include/"), Kind::Dir),
        (format!("{ROOT}/include/onnxruntime_c_api.h"), Kind::File(HEADER_BYTES.to_vec())),
    ]
}

/// The test-only archive distribution of the builtin manifest (`test_only = true`, which the
/// manifest never lets carry a pin): tests that run the `onnxrt-dist` tool (which reads the
/// builtin manifest) with their own `ONNXRT_ARCHIVE_SHA256` use it, since a user's pin that
/// contradicts the manifest's is refused. It used to be `cpu-1.32.0`, whose future pin would
/// have stopped these tests at their first step.
pub const UNPINNED_DIST: &str = "test-unpinned";
/// Its top-level folder.
pub const UNPINNED_ROOT: &str = "onnxruntime-linux-x64-1.32.0";
/// Its file name.
pub const UNPINNED_FILE: &str = "onnxruntime-linux-x64-1.32.0.tgz";
/// Its runtime library, below the root.
pub const UNPINNED_LIBRARY: &str = "lib/libonnxruntime.so.1.32.0";

/// The entries of a miniature archive with the layout of [`UNPINNED_DIST`].
pub fn unpinned_entries() -> Vec<(String, Kind)> {
    let mut entries = vec![
        (format!("{UNPINNED_ROOT}/"), Kind::Dir),
        (format!("{UNPINNED_ROOT}/lib/"), Kind::Dir),
        (format!("{UNPINNED_ROOT}/{UNPINNED_LIBRARY}"), Kind::File(LIB_BYTES.to_vec())),
    ];
    entries.push((format!("{UNPINNED_ROOT}/include/"), Kind::Dir));
    entries.push((format!("{UNPINNED_ROOT}/include/onnxruntime_c_api.h"), Kind::File(HEADER_BYTES.to_vec())));
    entries
}

/// A `.tgz` of owned entries.
pub fn tgz_owned(entries: &[(String, Kind)]) -> Vec<u8> {
    let borrowed: Vec<(&str, Kind)> = entries.iter().map(|(n, k)| (n.as_str(), k.clone())).collect();
    tgz(&borrowed)
}

/// A good archive.
pub fn good_archive() -> Vec<u8> {
    tgz_owned(&good_entries())
}

/// sha256 of bytes, lowercase hex (the crate's own function, checked by its unit tests).
pub fn sha256(bytes: &[u8]) -> String {
    build_support::verify::sha256_bytes(bytes)
}

// ------------------------------------------------------------------------------------------------
// Manifest and configuration

/// Name of the one distribution of [`manifest`].
pub const DIST: &str = "cpu-test";
/// A size cap comfortably above the synthetic archives.
pub const MAX_BYTES: u64 = 10_000_000;

/// A manifest with one archive distribution of root [`ROOT`] at `url`, pinned to `sha256` (empty:
/// unpinned), capped at `max_bytes`.
pub fn manifest(url: &str, sha256: &str, max_bytes: u64) -> Manifest {
    manifest_with(url, sha256, max_bytes, "")
}

/// [`manifest`] with `extra` lines appended to its one distribution (e.g. `unpacked_bytes = 10`).
pub fn manifest_with(url: &str, sha256: &str, max_bytes: u64, extra: &str) -> Manifest {
    let text = format!(
        r#"schema = 1
default = "{DIST}"

[[dist]]
name = "{DIST}"
description = "synthetic archive served by the test server"
ort_version = "1.16.2"
api_version = 16
target = "x86_64-unknown-linux-gnu"
kind = "archive"
url = "{url}"
sha256 = "{sha256}"
max_bytes = {max_bytes}
root = "{ROOT}"
library = "lib/libonnxruntime.so.1.16.2"
providers = []
headers = ["include/onnxruntime_c_api.h"]
{extra}
"#
    );
    Manifest::parse(&text).expect("the test manifest parses")
}

/// A `.tgz` of owned entries whose deflate data is stored, not compressed: each file's bytes
/// appear as they are in the archive, so one can be altered without breaking the deflate stream.
pub fn stored_tgz(entries: &[(String, Kind)]) -> Vec<u8> {
    use std::io::Read as _;
    // Re-pack the tar inside `tgz_owned`'s output with compression level 0.
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(tgz_owned(entries).as_slice())
        .read_to_end(&mut tar)
        .expect("inflating a test archive");
    let mut gz = flate2::GzBuilder::new().mtime(0).write(Vec::new(), flate2::Compression::none());
    gz.write_all(&tar).expect("gzip into memory");
    gz.finish().expect("gzip into memory")
}

/// Where `needle` first occurs in `haystack`.
pub fn find_bytes(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A configuration for [`DIST`] that reads nothing from the environment; plain http is allowed,
/// as the test servers speak nothing else.
pub fn config(manifest: Manifest, cache_dir: &Path) -> Config {
    let mut config = Config::new(manifest, DIST, cache_dir.to_owned()).expect("a configuration for the test dist");
    config.allow_http = true;
    config
}

/// The source of a download that was not redirected.
pub fn downloaded(url: &str) -> build_support::Source {
    build_support::Source::Download { url: url.to_owned(), final_url: url.to_owned() }
}

/// The entry folder of a cache-hit source, whatever was checked.
pub fn cache_hit(source: &build_support::Source) -> Option<PathBuf> {
    match source {
        build_support::Source::Cache { entry, .. } => Some(entry.clone()),
        _ => None,
    }
}

/// A fresh temporary folder.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("creating a temporary folder")
}

// ------------------------------------------------------------------------------------------------
// Checks

fn names(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut names: Vec<String> =
                entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            names
        }
        Err(_) => Vec::new(),
    }
}

/// The complete and incomplete entries of a cache: everything at its top but `.locks` and `.tmp`.
pub fn cache_entries(cache: &Path) -> Vec<String> {
    names(cache).into_iter().filter(|n| n != ".locks" && n != ".tmp").collect()
}

/// Work left in the cache's `.tmp` folder.
pub fn tmp_leftovers(cache: &Path) -> Vec<String> {
    names(&cache.join(".tmp"))
}

/// `.locks` holds lock files only (they are kept on purpose: creating one per build would race).
fn assert_locks_are_lock_files(cache: &Path) {
    for name in names(&cache.join(".locks")) {
        let path = cache.join(".locks").join(&name);
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        assert!(is_file && name.ends_with(".lock"), "unexpected {} in the cache's .locks", path.display());
    }
}

/// The cache holds no entry and no leftover work: at most a `.tmp` folder that is empty and a
/// `.locks` folder of lock files.
pub fn assert_cache_clean(cache: &Path) {
    assert_eq!(cache_entries(cache), Vec::<String>::new(), "entries in the cache {}", cache.display());
    assert_eq!(tmp_leftovers(cache), Vec::<String>::new(), "leftover work in {}/.tmp", cache.display());
    assert_locks_are_lock_files(cache);
}

/// The cache holds exactly the complete entry `sha256` and no leftover work.
pub fn assert_cache_holds_only(cache: &Path, sha256: &str) {
    assert_eq!(cache_entries(cache), vec![sha256.to_owned()], "entries in the cache {}", cache.display());
    let marker = cache.join(sha256).join(build_support::cache::COMPLETE_MARKER);
    assert!(marker.is_file(), "{} is missing", marker.display());
    assert_eq!(tmp_leftovers(cache), Vec::<String>::new(), "leftover work in {}/.tmp", cache.display());
    assert_locks_are_lock_files(cache);
}

/// The provisioned runtime is the synthetic archive's, installed as the entry `sha256` of `cache`.
pub fn assert_installed(p: &Provisioned, cache: &Path, sha256: &str) {
    let root = cache.join(sha256).join(ROOT);
    assert_eq!(p.library, root.join("lib/libonnxruntime.so.1.16.2"));
    assert_eq!(p.lib_dir, root.join("lib"));
    assert_eq!(p.include_dir, root.join("include"));
    assert_eq!(std::fs::read(&p.library).expect("reading the installed library"), LIB_BYTES);
    let link = p.lib_dir.join("libonnxruntime.so");
    assert_eq!(
        std::fs::read_link(&link).expect("the unversioned name is a symlink"),
        PathBuf::from("libonnxruntime.so.1.16.2")
    );
    assert_eq!(std::fs::read(&link).expect("reading through the symlink"), LIB_BYTES);
    let header = p.include_dir.join("onnxruntime_c_api.h");
    assert_eq!(std::fs::read(&header).expect("reading the installed header"), HEADER_BYTES);
    let marker = cache.join(sha256).join(build_support::cache::COMPLETE_MARKER);
    assert!(marker.is_file(), "{} is missing", marker.display());
}

/// Every path under `dir` (not following symlinks) whose file name is `name`.
pub fn find_named(dir: &Path, name: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    // Bounded: test folders hold a few thousand paths at most.
    let mut budget = 100_000usize;
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            budget = budget.saturating_sub(1);
            assert!(budget > 0, "too many files under {}", dir.display());
            let path = entry.path();
            if entry.file_name() == name {
                found.push(path.clone());
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    found
}
