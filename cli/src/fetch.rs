//! `onnxrt fetch [DIST] [--offline]`: provisions a distribution exactly as the build does
//! (`build_support::provision` with the same `ONNXRT_*` variables), with a progress line on stderr
//! while it downloads.
//!
//! Progress without touching build-support's download code: `provision` streams into the cache
//! file `.tmp/<dist>.download-<pid>-<n>`, so a thread watches that file grow (bytes, rate) and
//! learns the total from one `HEAD` request, for the percentage and the ETA. The bytes that count
//! are still only the ones build-support hashes and verifies.
//!
//! A registry-assembled distribution (`cpu-1.16.2-registry`, `gpu-cuda13-1.30.0-wheel`) that is not
//! in the cache yet is assembled by `provision` itself (npm, pip, apt-get), unless offline.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use build_support::{advice, provision, Config};

use crate::error::{CliError, Result};
use crate::output;

/// Runs `fetch`.
pub fn run(dist: Option<&str>, offline: bool) -> Result<()> {
    let mut config = Config::from_env()?;
    if let Some(dist) = dist {
        config.manifest.dist(dist)?;
        dist.clone_into(&mut config.dist);
    }
    if offline {
        config.offline = Some("--offline".into());
    }
    let dist = config.manifest.dist(&config.dist)?.clone();
    let progress = Progress::start(&config, &dist);
    let result = provision(&config);
    progress.finish(result.is_ok());
    let provisioned = match result {
        Ok(provisioned) => provisioned,
        Err(error) if advice::applies(&error) => {
            return Err(CliError::Failed(format!("{error}\n{}", advice::choosing(&config))))
        }
        Err(error) => return Err(error.into()),
    };
    eprintln!("onnxrt: ONNX Runtime {} (`{}`) from {}", provisioned.ort_version, provisioned.dist, provisioned.source);
    println!("{}", provisioned.lib_dir.display());
    Ok(())
}

/// The thread that shows download progress.
struct Progress {
    stop: Arc<AtomicBool>,
    succeeded: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    fn start(config: &Config, dist: &build_support::Dist) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let succeeded = Arc::new(AtomicBool::new(false));
        let watch = Watch {
            tmp: config.cache_dir.join(".tmp"),
            prefix: format!("{}.download-{}-", dist.name, std::process::id()),
            url: build_support::url(config, dist),
            file_name: dist.file_name(),
            tty: std::io::stderr().is_terminal(),
        };
        let (flag, ok) = (Arc::clone(&stop), Arc::clone(&succeeded));
        let thread =
            std::thread::Builder::new().name("fetch-progress".into()).spawn(move || watch.run(&flag, &ok)).ok();
        Progress { stop, succeeded, thread }
    }

    /// Stops the watcher; `succeeded`: the download (if any) completed and was verified.
    fn finish(mut self, succeeded: bool) {
        self.succeeded.store(succeeded, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Watch {
    tmp: PathBuf,
    prefix: String,
    url: String,
    file_name: String,
    tty: bool,
}

/// The size of the download, learned from a `HEAD` request (0: unknown yet or not announced).
fn learn_total(url: String, total: Arc<AtomicU64>) {
    std::thread::spawn(move || {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
        if let Ok(response) = agent.head(&url).call() {
            if let Some(len) = response.header("Content-Length").and_then(|v| v.trim().parse().ok()) {
                total.store(len, Ordering::Relaxed);
            }
        }
    });
}

/// The growing download file of this process, if there is one.
fn download_file(tmp: &Path, prefix: &str) -> Option<PathBuf> {
    std::fs::read_dir(tmp)
        .ok()?
        .flatten()
        .find(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(prefix)))
        .map(|e| e.path())
}

/// `12.3 MiB of 180.2 MiB (6%), 4.1 MiB/s, ETA 41 s`
pub fn progress_line(done: u64, total: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(0.001);
    let rate = done as f64 / secs;
    let mut line = output::bytes(done);
    if total > 0 {
        let percent = (done as f64 / total as f64 * 100.0).min(100.0);
        line.push_str(&format!(" of {} ({percent:.0}%)", output::bytes(total)));
    }
    line.push_str(&format!(", {}/s", output::bytes(rate as u64)));
    if total > 0 && rate > 0.0 {
        let left = total.saturating_sub(done) as f64 / rate;
        line.push_str(&format!(", ETA {}", output::eta(left.ceil() as u64)));
    } else if total == 0 {
        line.push_str(", ETA unknown (no Content-Length)");
    }
    line
}

impl Watch {
    fn run(&self, stop: &AtomicBool, succeeded: &AtomicBool) {
        let total = Arc::new(AtomicU64::new(0));
        let mut started: Option<(Instant, PathBuf)> = None;
        let mut last = 0u64;
        let mut grew_at = Instant::now();
        let mut last_print = Instant::now();
        let print = |text: String| {
            let mut err = std::io::stderr().lock();
            if self.tty {
                let _ = write!(err, "\r\x1b[2K{text}");
            } else {
                let _ = writeln!(err, "{text}");
            }
            let _ = err.flush();
        };
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            if started.is_none() {
                if let Some(file) = download_file(&self.tmp, &self.prefix) {
                    learn_total(self.url.clone(), Arc::clone(&total));
                    eprintln!("onnxrt: downloading {} from {}", self.file_name, self.url);
                    started = Some((Instant::now(), file));
                }
            }
            let Some((since, file)) = &started else { continue };
            let Ok(meta) = std::fs::metadata(file) else { continue };
            let size = meta.len();
            if size < last {
                // The file was truncated for another attempt: the rate starts again.
                started = Some((Instant::now(), file.clone()));
                last = size;
                continue;
            }
            if size > last {
                grew_at = Instant::now();
            }
            last = size;
            let every = if self.tty { Duration::from_millis(200) } else { Duration::from_secs(1) };
            if last_print.elapsed() >= every {
                let line = progress_line(size, total.load(Ordering::Relaxed), since.elapsed());
                print(format!("onnxrt: {}: {line}", self.file_name));
                last_print = Instant::now();
            }
        }
        if let Some((since, _)) = started {
            let secs = grew_at.saturating_duration_since(since).as_secs_f64();
            // The file is gone by now; a verified download has exactly the announced length.
            let total = total.load(Ordering::Relaxed);
            let (size, what) = match succeeded.load(Ordering::Relaxed) {
                true if total > 0 => (total, "downloaded"),
                true => (last, "downloaded"),
                false => (last, "received before the failure"),
            };
            let done = format!("onnxrt: {}: {} {what} in {secs:.1} s", self.file_name, output::bytes(size));
            print(done);
            if self.tty {
                eprintln!();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines_have_bytes_rate_and_eta() {
        let line = progress_line(10 * 1024 * 1024, 100 * 1024 * 1024, Duration::from_secs(5));
        assert_eq!(line, "10.0 MiB of 100.0 MiB (10%), 2.0 MiB/s, ETA 45 s");
        assert!(progress_line(1024, 0, Duration::from_secs(1)).contains("ETA unknown"));
    }
}
