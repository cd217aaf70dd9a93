//! Streaming HTTP download into a file: sha256 while streaming, a size cap, a stall timeout and
//! bounded retries. The caller decides what the hash must be; this only reports it.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::verify::HashingWriter;

/// What a finished download produced.
#[derive(Debug)]
pub struct Downloaded {
    /// Bytes received.
    pub bytes: u64,
    /// sha256 of those bytes.
    pub sha256: String,
}

/// Limits of one download.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Refuse bodies larger than this.
    pub max_bytes: u64,
    /// Fail an attempt that receives nothing for this long.
    pub stall_timeout: Duration,
    /// Attempts in all; only network errors and HTTP 5xx are retried.
    pub attempts: u32,
}

/// Downloads `url` into `dest` (created or truncated). On error `dest` is removed.
pub fn download(url: &str, dest: &Path, limits: Limits) -> Result<Downloaded> {
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        .timeout_read(limits.stall_timeout)
        .timeout_write(limits.stall_timeout)
        .build();
    let mut last_error = None;
    for attempt in 1..=limits.attempts.max(1) {
        match attempt_once(&agent, url, dest, limits) {
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
    Err(match last_error {
        // A body that keeps ending early is reported as what it is.
        Some(error @ Error::Truncated { .. }) => error,
        // A transport failure already carries its own cause; keep it, with the attempt count.
        Some(Error::Download { why, .. }) => {
            Error::Download { url: url.to_owned(), attempts: limits.attempts.max(1), why }
        }
        Some(error) => {
            Error::Download { url: url.to_owned(), attempts: limits.attempts.max(1), why: error.to_string() }
        }
        None => Error::Download { url: url.to_owned(), attempts: 0, why: "no attempt was made".into() },
    })
}

enum Retry {
    /// Transient: try again.
    Yes(Error),
    /// Final.
    No(Error),
}

fn attempt_once(agent: &ureq::Agent, url: &str, dest: &Path, limits: Limits) -> Result<Downloaded, Retry> {
    let response = match agent.get(url).call() {
        Ok(response) => response,
        Err(ureq::Error::Status(status, _)) if status >= 500 => {
            return Err(Retry::Yes(Error::HttpStatus { url: url.to_owned(), status }))
        }
        Err(ureq::Error::Status(status, _)) => {
            return Err(Retry::No(Error::HttpStatus { url: url.to_owned(), status }))
        }
        Err(ureq::Error::Transport(t)) => {
            return Err(Retry::Yes(Error::Download { url: url.to_owned(), attempts: 1, why: t.to_string() }))
        }
    };
    let announced: Option<u64> = response.header("Content-Length").and_then(|v| v.trim().parse().ok());
    if let Some(len) = announced {
        if len > limits.max_bytes {
            return Err(Retry::No(Error::TooLarge { what: url.to_owned(), cap: limits.max_bytes }));
        }
    }
    let file = File::create(dest).map_err(|e| Retry::No(Error::io(format!("creating {}", dest.display()))(e)))?;
    let mut sink = HashingWriter::new(BufWriter::new(file));
    // Read one byte past the cap so an over-long body is detected rather than silently cut.
    let mut body = response.into_reader().take(limits.max_bytes + 1);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
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
        if sink.written() > limits.max_bytes {
            return Err(Retry::No(Error::TooLarge { what: url.to_owned(), cap: limits.max_bytes }));
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
    Ok(Downloaded { bytes, sha256 })
}
