//! `onnxrt fetch [DIST] [--offline]`: provisions a distribution exactly as the build does
//! (`build_support::provision` with the same `ONNXRT_*` variables), showing the download's
//! progress on stderr from build-support's progress callback: an indicatif bar on a terminal,
//! otherwise a plain line a second (a CI log keeps the rate and ETA without control codes).
//! The bytes shown are the ones build-support hashes and verifies.
//!
//! A registry-assembled distribution (`cpu-1.16.2-registry`, `gpu-cuda13-1.30.0-wheel`) that is not
//! in the cache yet is assembled by `provision` itself (npm, pip, apt-get), unless offline.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use build_support::download::Event;
use build_support::{advice, provision, Config, DistKind, Reporter};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::assembly_progress;
use crate::error::{CliError, Result};
use crate::output;

/// Runs `fetch`.
pub fn run(dist: Option<&str>, offline: bool) -> Result<()> {
    let mut config = Config::from_env()?;
    let named = dist.is_some();
    if let Some(dist) = dist {
        config.manifest.dist(dist)?;
        dist.clone_into(&mut config.dist);
    }
    if offline {
        config.offline = Some("--offline".into());
    }
    let dist = config.manifest.dist(&config.dist)?.clone();
    let shown = Arc::new(Mutex::new(Shown {
        file_name: dist.file_name(),
        url: build_support::config::shown_url(&build_support::url(&config, &dist)),
        bar: std::io::stderr().is_terminal().then(ProgressBar::hidden),
        attempt: None,
    }));
    let sink = Arc::clone(&shown);
    config.progress = Some(Reporter::new(move |event| lock(&sink).on(event)));
    // A registry distribution that `provision` is about to assemble gets a line per file.
    let assembles = dist.kind == DistKind::Registry
        && config.lib_dir.is_none()
        && config.archive.is_none()
        && config.offline.is_none()
        && !advice::cached(&config).contains(&dist.name);
    let watcher =
        assembles.then(|| assembly_progress::start(&dist, &config.cache_dir.join(build_support::assemble::DOWNLOADS)));
    let result = provision(&config);
    if let Some(watcher) = watcher {
        watcher.finish();
    }
    lock(&shown).finish(result.is_ok());
    let provisioned = match result {
        Ok(provisioned) => provisioned,
        Err(error) if advice::applies(&error) => {
            return Err(CliError::Failed(format!("{error}\n{}", choosing(&config, named))))
        }
        Err(error) => return Err(error.into()),
    };
    eprintln!("onnxrt: ONNX Runtime {} (`{}`) from {}", provisioned.ort_version, provisioned.dist, provisioned.source);
    output::outln(&provisioned.lib_dir.display().to_string())?;
    Ok(())
}

/// What to do after a distribution could not be provisioned, worded for this command (build-support's
/// own paragraph is written for a cargo build). `named`: the distribution was given on the
/// command line, so it is not "the default".
fn choosing(config: &Config, named: bool) -> String {
    let known: Vec<&str> = config.manifest.dists.iter().filter(|d| !d.test_only).map(|d| d.name.as_str()).collect();
    let cached = advice::cached(config);
    let held = if cached.is_empty() { "none of them".to_owned() } else { cached.join(", ") };
    let why = match (named, config.dist == config.manifest.default) {
        (true, _) => "",
        (false, true) => " (the default: neither a DIST argument nor ONNXRT_DIST was given)",
        (false, false) => " (from ONNXRT_DIST)",
    };
    let fallback = "cpu-1.16.2-registry";
    let registry = if config.dist == fallback {
        String::new()
    } else {
        format!(
            "\nWhere the release assets are unreachable but package registries are not, `onnxrt fetch {fallback}` \
             assembles ONNX Runtime 1.16.2 (CPU) from npm and Debian packages (it needs npm and apt-get)."
        )
    };
    format!(
        "`{}`{why} could not be provisioned. Fetch another one with `onnxrt fetch DIST` (known: {}).\n\
         The cache {} already holds: {held}.{registry}\n\
         A program built with the onnxrt crate takes the distribution named by ONNXRT_DIST at build time \
         (to keep it for a project: `[env] ONNXRT_DIST = \"NAME\"` in its .cargo/config.toml).",
        config.dist,
        known.join(", "),
        config.cache_dir.display()
    )
}

fn lock(shown: &Mutex<Shown>) -> std::sync::MutexGuard<'_, Shown> {
    shown.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What the user sees of the download.
struct Shown {
    file_name: String,
    url: String,
    /// The bar, on a terminal only.
    bar: Option<ProgressBar>,
    /// The current attempt: when it started, bytes received, the announced size, the last line.
    attempt: Option<Attempt>,
}

struct Attempt {
    since: Instant,
    bytes: u64,
    total: Option<u64>,
    printed: Instant,
    finished: Option<Duration>,
}

impl Shown {
    fn on(&mut self, event: &Event) {
        match *event {
            Event::Started { attempt, total, .. } => {
                if attempt == 1 {
                    eprintln!("onnxrt: downloading {} from {}", self.file_name, self.url);
                }
                let now = Instant::now();
                self.attempt = Some(Attempt { since: now, bytes: 0, total, printed: now, finished: None });
                if let Some(bar) = &self.bar {
                    start_bar(bar, total);
                }
            }
            Event::Received { bytes, .. } => {
                let Some(attempt) = &mut self.attempt else { return };
                attempt.bytes = bytes;
                if let Some(bar) = &self.bar {
                    bar.set_position(bytes);
                } else if attempt.printed.elapsed() >= Duration::from_secs(1) {
                    let line = progress_line(bytes, attempt.total.unwrap_or(0), attempt.since.elapsed());
                    eprintln!("onnxrt: {}: {line}", self.file_name);
                    attempt.printed = Instant::now();
                }
            }
            Event::Finished { bytes, elapsed } => {
                if let Some(attempt) = &mut self.attempt {
                    attempt.bytes = bytes;
                    attempt.finished = Some(elapsed);
                }
            }
        }
    }

    /// Ends the display once provisioning returned; `verified`: it succeeded.
    fn finish(&mut self, verified: bool) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        let Some(attempt) = &self.attempt else { return };
        let secs = attempt.finished.unwrap_or_else(|| attempt.since.elapsed()).as_secs_f64();
        let what = if verified { "downloaded" } else { "received before the failure" };
        eprintln!("onnxrt: {}: {} {what} in {secs:.1} s", self.file_name, output::bytes(attempt.bytes));
    }
}

/// Shows `bar` on stderr for a new attempt: bytes, percentage, rate and ETA when the size is
/// known, else bytes and rate. (The file name is on the line above, so the bar fits 80 columns.)
fn start_bar(bar: &ProgressBar, total: Option<u64>) {
    let template = match total {
        Some(_) => {
            "onnxrt: [{bar:20}] {binary_bytes}/{binary_total_bytes} ({percent}%), {binary_bytes_per_sec}, ETA {eta}"
        }
        None => "onnxrt: {binary_bytes}, {binary_bytes_per_sec}, ETA unknown (no Content-Length)",
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_length(total.unwrap_or(0));
    bar.set_position(0);
    bar.reset_elapsed();
    bar.reset_eta();
    bar.set_draw_target(ProgressDrawTarget::stderr());
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
