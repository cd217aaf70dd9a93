//! Streaming HTTP download into a file: sha256 while streaming, a size cap, bounded time and
//! bounded retries. The caller decides what the hash must be; this only reports it.
//!
//! Time is bounded three ways, so that no server, however it misbehaves, holds a build long:
//! - nothing waits longer than the progress window (`ONNXRT_DOWNLOAD_TIMEOUT`) for the next
//!   bytes of the body, or for a whole response head (status line and headers; each redirect
//!   has its own);
//! - each progress window must bring [`MIN_PROGRESS`] bytes (or the rest of the body): a server
//!   that drips a byte every few seconds fails after one window, "too slow";
//! - a whole attempt ends at the deadline (`ONNXRT_DOWNLOAD_DEADLINE`), however it progresses:
//!   connecting, every redirect, the status line and headers, and the body.
//!
//! The network I/O of an attempt runs on a thread of its own, whose every socket operation is
//! bounded by the attempt's deadline (the HTTP client's per-request timeout); this thread
//! receives what it reads and enforces the progress window and the deadline, so a server that
//! sends one header line at a time cannot hold it either. A worker left behind by a failed
//! attempt holds only its socket and ends by that deadline at the latest.
//!
//! Transport: `https` only, unless plain http is allowed (`ONNXRT_ALLOW_HTTP=1`). Redirects are
//! followed here, not by the HTTP client, so each hop is checked: an https URL never leads to an
//! http one. The URL finally fetched is reported (official release URLs redirect to another host).
//!
//! Proxies: each request goes through the proxy the environment names for its URL
//! ([`crate::config::Proxies`]: `https_proxy`, `http_proxy`, `all_proxy`, `no_proxy`), chosen
//! again at each redirect; an https URL is tunnelled (`CONNECT`), so the proxy sees only
//! ciphertext. The proxy used is reported. Whatever a proxy sends is hashed and verified like
//! any other bytes: a proxy that alters them makes the download fail, nothing is installed.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::verify::HashingWriter;

/// Bytes each progress window must bring (unless less of the body is left).
pub const MIN_PROGRESS: u64 = 64 * 1024;

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 8;

/// What a finished download produced.
#[derive(Debug)]
pub struct Downloaded {
    /// Bytes received.
    pub bytes: u64,
    /// sha256 of those bytes.
    pub sha256: String,
    /// The URL the bytes came from, after redirects.
    pub final_url: String,
    /// The proxy the bytes came through (without its password) and the variable that named it.
    pub proxy: Option<String>,
}

/// What a download reports while it runs (see [`download_reporting`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// An attempt was answered and its body starts; an earlier attempt's bytes no longer count.
    Started {
        /// The URL answering, after redirects.
        url: &'a str,
        /// 1 for the first attempt.
        attempt: u32,
        /// The size the server announced (`Content-Length`), if it did.
        total: Option<u64>,
    },
    /// Bytes of this attempt's body written so far.
    Received {
        /// Bytes so far.
        bytes: u64,
        /// The announced size, if any.
        total: Option<u64>,
    },
    /// The whole body arrived and was written (not yet checked against the pin).
    Finished {
        /// Bytes in all.
        bytes: u64,
        /// How long the attempt took, from the request on.
        elapsed: Duration,
    },
}

/// Limits of one download.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Refuse bodies larger than this.
    pub max_bytes: u64,
    /// The progress window: the longest wait for one read, and the span in which
    /// [`MIN_PROGRESS`] bytes must arrive.
    pub stall_timeout: Duration,
    /// The longest one attempt may take in all.
    pub deadline: Duration,
    /// Attempts in all; only network errors, slow transfers and HTTP 5xx are retried.
    pub attempts: u32,
    /// Whether plain-http URLs are allowed.
    pub allow_http: bool,
    /// The proxies to go through.
    pub proxies: crate::config::Proxies,
}

/// Downloads `url` into `dest`, an open file (truncated first; emptied again on error). The
/// caller reads the bytes back from that same file, so what was hashed is what it uses.
pub fn download(url: &str, dest: &mut File, limits: Limits) -> Result<Downloaded> {
    download_reporting(url, dest, limits, &|_| {})
}

/// [`download`], telling `progress` what happens: each attempt's start (with the size the server
/// announced), the bytes received after each read, and the end of a complete body. The bytes
/// reported are the ones hashed; whether they match the pin is decided by the caller afterwards.
pub fn download_reporting(url: &str, dest: &mut File, limits: Limits, progress: &dyn Fn(&Event)) -> Result<Downloaded> {
    check_scheme(url, None, limits.allow_http)?;
    let mut last_error = None;
    for attempt in 1..=limits.attempts.max(1) {
        match attempt_once(url, dest, &limits, attempt, progress) {
            Ok(done) => return Ok(done),
            Err(Retry::No(error)) => {
                let _ = dest.set_len(0);
                return Err(error);
            }
            Err(Retry::Yes(error)) => {
                let _ = dest.set_len(0);
                last_error = Some(error);
                if attempt < limits.attempts {
                    // Short, growing pauses: a flaky proxy gets a moment, a build is not held long.
                    std::thread::sleep(Duration::from_millis(250 * u64::from(attempt)));
                }
            }
        }
    }
    let attempts = limits.attempts.max(1);
    Err(match last_error {
        // A body that keeps ending early is reported as what it is.
        Some(error @ Error::Truncated { .. }) => error,
        // A transport failure already carries its own cause; keep it, with the attempt count.
        Some(Error::Download { why, .. }) => Error::Download { url: url.to_owned(), attempts, why },
        // The status alone: the advice is the Download error's (printing both repeated it).
        Some(Error::HttpStatus { url: answered, status }) => {
            Error::Download { url: url.to_owned(), attempts, why: format!("{answered} answered HTTP {status}") }
        }
        Some(error) => Error::Download { url: url.to_owned(), attempts, why: error.to_string() },
        None => Error::Download { url: url.to_owned(), attempts: 0, why: "no attempt was made".into() },
    })
}

/// Refuses plain http unless allowed, and any https -> http step.
fn check_scheme(url: &str, from: Option<&str>, allow_http: bool) -> Result<()> {
    let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase()).unwrap_or_default();
    let from_https = from.is_some_and(|f| f.to_ascii_lowercase().starts_with("https://"));
    let why = match scheme.as_str() {
        "https" => return Ok(()),
        "http" if from_https => "an https URL redirected to plain http; refusing to downgrade",
        "http" if allow_http => return Ok(()),
        "http" => "plain http can be read and altered on the way; use https, or set ONNXRT_ALLOW_HTTP=1 for a mirror on a network you trust",
        _ => "only https (and, with ONNXRT_ALLOW_HTTP=1, http) URLs are fetched",
    };
    Err(Error::Insecure { url: url.to_owned(), from: from.map(str::to_owned), why })
}

/// `location` of a redirect answered by `base`, as an absolute URL.
fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("https", base));
    let host = rest.split('/').next().unwrap_or(rest);
    if let Some(path) = location.strip_prefix("//") {
        return format!("{scheme}://{path}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{host}{location}");
    }
    let folder = base.rsplit_once('/').map_or(base, |(folder, _)| folder);
    format!("{folder}/{location}")
}

/// The client for one request to `url`: through the proxy the environment names for it, if any
/// (returned as shown in the log). Reads and writes are bounded by each request's deadline
/// (`Request::timeout`, which makes ureq ignore a read timeout); the progress window is enforced
/// by the waiting side.
fn agent_for(url: &str, limits: &Limits) -> Result<(ureq::Agent, Option<String>), Retry> {
    let mut builder = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30).min(limits.stall_timeout.max(Duration::from_secs(5))))
        .redirects(0);
    let mut shown = None;
    if let Some((proxy, var)) = limits.proxies.for_url(url) {
        let parsed = ureq::Proxy::new(proxy).map_err(|e| {
            Retry::No(Error::Download { url: url.to_owned(), attempts: 1, why: format!("the proxy {var}: {e}") })
        })?;
        builder = builder.proxy(parsed);
        shown = Some(format!("{} (from {var})", crate::config::shown_proxy(proxy)));
    }
    Ok((builder.build(), shown))
}

/// GETs `url`, following redirects one checked hop at a time, each request bounded by
/// `deadline`; `hop` is told of each redirect answered. Also returns the proxy of the last hop.
fn get(
    url: &str,
    limits: &Limits,
    deadline: Instant,
    hop: &dyn Fn(),
) -> Result<(ureq::Response, String, Option<String>), Retry> {
    let mut current = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let (agent, proxy) = agent_for(&current, limits)?;
        let via = |why: String| match &proxy {
            Some(p) => format!("{why} (through the proxy {p})"),
            None => why,
        };
        let response = match agent.get(&current).timeout(left).call() {
            Ok(response) => response,
            Err(ureq::Error::Status(status, _)) if status >= 500 => {
                return Err(Retry::Yes(Error::HttpStatus { url: current, status }))
            }
            Err(ureq::Error::Status(status, _)) => return Err(Retry::No(Error::HttpStatus { url: current, status })),
            Err(ureq::Error::Transport(t)) => {
                return Err(Retry::Yes(Error::Download { url: current, attempts: 1, why: via(t.to_string()) }))
            }
        };
        if !(300..400).contains(&response.status()) {
            return Ok((response, current, proxy));
        }
        let Some(location) = response.header("Location") else {
            return Err(Retry::No(Error::HttpStatus { url: current, status: response.status() }));
        };
        let next = resolve(&current, location.trim());
        check_scheme(&next, Some(&current), limits.allow_http).map_err(Retry::No)?;
        current = next;
        hop();
    }
    Err(Retry::No(Error::Download {
        url: url.to_owned(),
        attempts: 1,
        why: format!("more than {MAX_REDIRECTS} redirects"),
    }))
}

enum Retry {
    /// Transient: try again.
    Yes(Error),
    /// Final.
    No(Error),
}

/// What the network thread of an attempt tells the waiting side.
enum Message {
    /// A redirect was answered; the next response head has a progress window of its own.
    Redirected,
    /// The final response head: the URL answering, the proxy it came through, the announced size.
    Head { final_url: String, proxy: Option<String>, announced: Option<u64> },
    /// Bytes of the body, in order.
    Chunk(Vec<u8>),
    /// The body ended.
    End,
    /// The request failed before the body.
    Failed(Retry),
    /// A read of the body failed.
    ReadError(std::io::Error),
}

/// The network side of one attempt: requests, follows redirects, reads the body in chunks and
/// sends everything to `send`; stops as soon as nobody listens.
fn network(url: String, limits: Limits, deadline: Instant, send: SyncSender<Message>) {
    let hop = || {
        let _ = send.send(Message::Redirected);
    };
    let (response, final_url, proxy) = match get(&url, &limits, deadline, &hop) {
        Ok(answered) => answered,
        Err(failure) => {
            let _ = send.send(Message::Failed(failure));
            return;
        }
    };
    let announced: Option<u64> = response.header("Content-Length").and_then(|v| v.trim().parse().ok());
    if send.send(Message::Head { final_url, proxy, announced }).is_err() {
        return;
    }
    // Read one byte past the cap so an over-long body is detected rather than silently cut.
    let mut body = response.into_reader().take(limits.max_bytes + 1);
    loop {
        let mut buf = vec![0u8; 1 << 16];
        let message = match body.read(&mut buf) {
            Ok(0) => Message::End,
            Ok(n) => {
                buf.truncate(n);
                Message::Chunk(buf)
            }
            Err(e) => Message::ReadError(e),
        };
        let last = !matches!(message, Message::Chunk(_));
        if send.send(message).is_err() || last {
            return;
        }
    }
}

fn too_slow(url: &str, why: String) -> Retry {
    Retry::Yes(Error::Download { url: url.to_owned(), attempts: 1, why: format!("the transfer was too slow: {why}") })
}

fn attempt_once(
    url: &str,
    dest: &mut File,
    limits: &Limits,
    attempt: u32,
    progress: &dyn Fn(&Event),
) -> Result<Downloaded, Retry> {
    let started = Instant::now();
    // A deadline too far for the clock is the longest one accepted (no overflow panic).
    let deadline = started
        .checked_add(limits.deadline)
        .unwrap_or_else(|| started + Duration::from_secs(crate::config::MAX_SECONDS));
    let io_error = |what: &str| {
        let context = format!("{what} the download's work file");
        move |e| Retry::No(Error::io(context)(e))
    };
    dest.set_len(0).map_err(io_error("emptying"))?;
    dest.seek(SeekFrom::Start(0)).map_err(io_error("rewinding"))?;
    let (send, messages) = mpsc::sync_channel(4);
    let (worker_limits, worker_url) = (limits.clone(), url.to_owned());
    std::thread::Builder::new()
        .name("onnxrt-download".into())
        .spawn(move || network(worker_url, worker_limits, deadline, send))
        .map_err(|e| Retry::No(Error::io("starting the download thread")(e)))?;
    let window_secs = limits.stall_timeout.as_secs();
    // The next message, within the progress window and the deadline.
    let next = |waiting_for: &str| -> Result<Message, Retry> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Retry::Yes(past_deadline(url, limits)));
        }
        match messages.recv_timeout(limits.stall_timeout.min(left)) {
            Ok(message) => Ok(message),
            Err(RecvTimeoutError::Timeout) if Instant::now() >= deadline => Err(Retry::Yes(past_deadline(url, limits))),
            Err(RecvTimeoutError::Timeout) => {
                Err(too_slow(url, format!("{waiting_for} for {window_secs} s (ONNXRT_DOWNLOAD_TIMEOUT)")))
            }
            Err(RecvTimeoutError::Disconnected) => Err(Retry::Yes(Error::Download {
                url: url.to_owned(),
                attempts: 1,
                why: "the download thread ended unexpectedly".into(),
            })),
        }
    };
    let (final_url, proxy, announced) = loop {
        match next("no complete response (status line and headers) arrived")? {
            Message::Redirected => continue,
            Message::Head { final_url, proxy, announced } => break (final_url, proxy, announced),
            Message::Failed(_) if Instant::now() >= deadline => return Err(Retry::Yes(past_deadline(url, limits))),
            Message::Failed(failure) => return Err(failure),
            _ => {
                return Err(Retry::Yes(Error::Download { url: url.to_owned(), attempts: 1, why: "no response".into() }))
            }
        }
    };
    if let Some(len) = announced {
        if len > limits.max_bytes {
            return Err(Retry::No(Error::TooLarge { what: url.to_owned(), cap: limits.max_bytes }));
        }
    }
    progress(&Event::Started { url: &final_url, attempt, total: announced });
    let mut sink = HashingWriter::new(BufWriter::new(&mut *dest));
    let mut window = (Instant::now(), 0u64);
    loop {
        let chunk = match next("nothing arrived")? {
            Message::Chunk(chunk) => chunk,
            Message::End => break,
            Message::ReadError(_) if Instant::now() >= deadline => return Err(Retry::Yes(past_deadline(url, limits))),
            Message::ReadError(e)
                if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) =>
            {
                return Err(too_slow(url, format!("nothing arrived for {window_secs} s (ONNXRT_DOWNLOAD_TIMEOUT)")));
            }
            Message::ReadError(e) => {
                // A body cut short of its Content-Length surfaces here as an I/O error.
                if let Some(expected) = announced {
                    if sink.written() < expected && e.kind() == std::io::ErrorKind::UnexpectedEof {
                        let got = sink.written();
                        return Err(Retry::Yes(Error::Truncated { url: url.to_owned(), got, expected }));
                    }
                }
                return Err(Retry::Yes(Error::io(format!("reading the body of {url}"))(e)));
            }
            _ => return Err(Retry::Yes(Error::Download { url: url.to_owned(), attempts: 1, why: "no body".into() })),
        };
        sink.write_all(&chunk).map_err(io_error("writing"))?;
        progress(&Event::Received { bytes: sink.written(), total: announced });
        if sink.written() > limits.max_bytes {
            return Err(Retry::No(Error::TooLarge { what: url.to_owned(), cap: limits.max_bytes }));
        }
        if Instant::now() >= deadline {
            return Err(Retry::Yes(past_deadline(url, limits)));
        }
        if window.0.elapsed() >= limits.stall_timeout {
            let got = sink.written() - window.1;
            let left = announced.map_or(u64::MAX, |len| len.saturating_sub(window.1));
            if got < MIN_PROGRESS.min(left) {
                return Err(too_slow(
                    url,
                    format!(
                        "{got} bytes in {:.0} s, at least {} needed per {window_secs} s (ONNXRT_DOWNLOAD_TIMEOUT)",
                        window.0.elapsed().as_secs_f64(),
                        MIN_PROGRESS.min(left),
                    ),
                ));
            }
            window = (Instant::now(), sink.written());
        }
    }
    let bytes = sink.written();
    if let Some(expected) = announced {
        if bytes != expected {
            return Err(Retry::No(Error::Truncated { url: url.to_owned(), got: bytes, expected }));
        }
    }
    let (writer, sha256) = sink.finish();
    writer.into_inner().map_err(|e| io_error("writing")(e.into_error()))?;
    dest.sync_all().map_err(io_error("syncing"))?;
    progress(&Event::Finished { bytes, elapsed: started.elapsed() });
    Ok(Downloaded { bytes, sha256, final_url, proxy })
}

fn past_deadline(url: &str, limits: &Limits) -> Error {
    let why = format!(
        "the transfer was too slow: not finished within the {} s deadline (ONNXRT_DOWNLOAD_DEADLINE)",
        limits.deadline.as_secs()
    );
    Error::Download { url: url.to_owned(), attempts: 1, why }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_never_leads_to_http_and_http_needs_the_opt_in() {
        assert!(check_scheme("https://a/x.tgz", None, false).is_ok());
        assert!(check_scheme("http://a/x.tgz", None, false).is_err());
        assert!(check_scheme("http://a/x.tgz", None, true).is_ok());
        // Even with plain http allowed, an https URL never redirects to it.
        assert!(check_scheme("http://b/x.tgz", Some("https://a/x.tgz"), true).is_err());
        assert!(check_scheme("https://b/x.tgz", Some("http://a/x.tgz"), false).is_ok());
        assert!(check_scheme("ftp://a/x.tgz", None, true).is_err());
        assert!(check_scheme("file:///etc/passwd", None, true).is_err());
    }

    #[test]
    fn redirect_locations_resolve_against_the_current_url() {
        let base = "https://releases.example/o/r/download/v1.16.2/x.tgz";
        assert_eq!(resolve(base, "https://objects.example/abc?sig=1"), "https://objects.example/abc?sig=1");
        assert_eq!(resolve(base, "/other/y.tgz"), "https://releases.example/other/y.tgz");
        assert_eq!(resolve(base, "//cdn.example/z"), "https://cdn.example/z");
        assert_eq!(resolve(base, "y.tgz"), "https://releases.example/o/r/download/v1.16.2/y.tgz");
    }
}
