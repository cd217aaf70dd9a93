//! Streaming HTTP download into a file: sha256 while streaming, a size cap, bounded time and
//! bounded retries. The caller decides what the hash must be; this only reports it.
//!
//! Time is bounded three ways, so that no server, however it misbehaves, holds a build long:
//! - no single read waits longer than the progress window (`ONNXRT_DOWNLOAD_TIMEOUT`);
//! - each progress window must bring [`MIN_PROGRESS`] bytes (or the rest of the body): a server
//!   that drips a byte every few seconds fails after one window, "too slow";
//! - a whole attempt ends at the deadline (`ONNXRT_DOWNLOAD_DEADLINE`), however it progresses
//!   (checked after each read of the body; the status line and headers are bounded by the read
//!   timeout and by the HTTP client's cap on header size).
//!
//! Transport: `https` only, unless plain http is allowed (`ONNXRT_ALLOW_HTTP=1`). Redirects are
//! followed here, not by the HTTP client, so each hop is checked: an https URL never leads to an
//! http one. The URL finally fetched is reported (official release URLs redirect to another host).

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
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
#[derive(Debug, Clone, Copy)]
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
}

/// Downloads `url` into `dest` (created or truncated). On error `dest` is removed.
pub fn download(url: &str, dest: &Path, limits: Limits) -> Result<Downloaded> {
    download_reporting(url, dest, limits, &|_| {})
}

/// [`download`], telling `progress` what happens: each attempt's start (with the size the server
/// announced), the bytes received after each read, and the end of a complete body. The bytes
/// reported are the ones hashed; whether they match the pin is decided by the caller afterwards.
pub fn download_reporting(url: &str, dest: &Path, limits: Limits, progress: &dyn Fn(&Event)) -> Result<Downloaded> {
    check_scheme(url, None, limits.allow_http)?;
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30).min(limits.stall_timeout.max(Duration::from_secs(5))))
        .timeout_read(limits.stall_timeout)
        .timeout_write(limits.stall_timeout)
        // Not `.timeout(deadline)`: ureq then lets every read wait until the deadline, ignoring
        // `timeout_read`; the deadline is checked here, after each read of the body.
        .redirects(0)
        .build();
    let mut last_error = None;
    for attempt in 1..=limits.attempts.max(1) {
        match attempt_once(&agent, url, dest, limits, attempt, progress) {
            Ok(done) => return Ok(done),
            Err(Retry::No(error)) => {
                let _ = std::fs::remove_file(dest);
                return Err(error);
            }
            Err(Retry::Yes(error)) => {
                let _ = std::fs::remove_file(dest);
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

/// GETs `url`, following redirects one checked hop at a time.
fn get(agent: &ureq::Agent, url: &str, limits: Limits) -> Result<(ureq::Response, String), Retry> {
    let mut current = url.to_owned();
    for _ in 0..=MAX_REDIRECTS {
        let response = match agent.get(&current).call() {
            Ok(response) => response,
            Err(ureq::Error::Status(status, _)) if status >= 500 => {
                return Err(Retry::Yes(Error::HttpStatus { url: current, status }))
            }
            Err(ureq::Error::Status(status, _)) => return Err(Retry::No(Error::HttpStatus { url: current, status })),
            Err(ureq::Error::Transport(t)) => {
                return Err(Retry::Yes(Error::Download { url: current, attempts: 1, why: t.to_string() }))
            }
        };
        if !(300..400).contains(&response.status()) {
            return Ok((response, current));
        }
        let Some(location) = response.header("Location") else {
            return Err(Retry::No(Error::HttpStatus { url: current, status: response.status() }));
        };
        let next = resolve(&current, location.trim());
        check_scheme(&next, Some(&current), limits.allow_http).map_err(Retry::No)?;
        current = next;
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

fn attempt_once(
    agent: &ureq::Agent,
    url: &str,
    dest: &Path,
    limits: Limits,
    attempt: u32,
    progress: &dyn Fn(&Event),
) -> Result<Downloaded, Retry> {
    let started = Instant::now();
    let (response, final_url) = get(agent, url, limits)?;
    let announced: Option<u64> = response.header("Content-Length").and_then(|v| v.trim().parse().ok());
    if let Some(len) = announced {
        if len > limits.max_bytes {
            return Err(Retry::No(Error::TooLarge { what: url.to_owned(), cap: limits.max_bytes }));
        }
    }
    progress(&Event::Started { url: &final_url, attempt, total: announced });
    let file = File::create(dest).map_err(|e| Retry::No(Error::io(format!("creating {}", dest.display()))(e)))?;
    let mut sink = HashingWriter::new(BufWriter::new(file));
    // Read one byte past the cap so an over-long body is detected rather than silently cut.
    let mut body = response.into_reader().take(limits.max_bytes + 1);
    let mut buf = vec![0u8; 1 << 16];
    let mut window = (Instant::now(), 0u64);
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) if started.elapsed() >= limits.deadline => return Err(Retry::Yes(past_deadline(url, limits))),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {
                let why = format!(
                    "the transfer was too slow: nothing arrived for {} s (ONNXRT_DOWNLOAD_TIMEOUT)",
                    limits.stall_timeout.as_secs()
                );
                return Err(Retry::Yes(Error::Download { url: url.to_owned(), attempts: 1, why }));
            }
            Err(e) => {
                // A body cut short of its Content-Length surfaces here as an I/O error.
                if let Some(expected) = announced {
                    if sink.written() < expected && e.kind() == std::io::ErrorKind::UnexpectedEof {
                        let got = sink.written();
                        return Err(Retry::Yes(Error::Truncated { url: url.to_owned(), got, expected }));
                    }
                }
                return Err(Retry::Yes(Error::io(format!("reading the body of {url}"))(e)));
            }
        };
        sink.write_all(&buf[..n]).map_err(|e| Retry::No(Error::io(format!("writing {}", dest.display()))(e)))?;
        progress(&Event::Received { bytes: sink.written(), total: announced });
        if sink.written() > limits.max_bytes {
            return Err(Retry::No(Error::TooLarge { what: url.to_owned(), cap: limits.max_bytes }));
        }
        if started.elapsed() >= limits.deadline {
            return Err(Retry::Yes(past_deadline(url, limits)));
        }
        if window.0.elapsed() >= limits.stall_timeout {
            let got = sink.written() - window.1;
            let left = announced.map_or(u64::MAX, |len| len.saturating_sub(window.1));
            if got < MIN_PROGRESS.min(left) {
                let why = format!(
                    "the transfer was too slow: {got} bytes in {:.0} s, at least {} needed per {} s (ONNXRT_DOWNLOAD_TIMEOUT)",
                    window.0.elapsed().as_secs_f64(),
                    MIN_PROGRESS.min(left),
                    limits.stall_timeout.as_secs()
                );
                return Err(Retry::Yes(Error::Download { url: url.to_owned(), attempts: 1, why }));
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
    let file =
        writer.into_inner().map_err(|e| Retry::No(Error::io(format!("writing {}", dest.display()))(e.into_error())))?;
    file.sync_all().map_err(|e| Retry::No(Error::io(format!("syncing {}", dest.display()))(e)))?;
    progress(&Event::Finished { bytes, elapsed: started.elapsed() });
    Ok(Downloaded { bytes, sha256, final_url })
}

fn past_deadline(url: &str, limits: Limits) -> Error {
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
