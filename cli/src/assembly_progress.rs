//! Progress of assembling a registry distribution (`onnxrt fetch cpu-1.16.2-registry`), which
//! build-support does without a progress callback: each registry file is fetched with its
//! registry's client into `<cache>/registry-files/`, one after the other. A watcher thread looks
//! at that folder and prints one line per file on stderr once the file is there and its size has
//! settled: which step, which file from which package, its size and how long it took.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use build_support::Dist;

use crate::output;

/// How often the folder is looked at.
const POLL: Duration = Duration::from_millis(250);

/// A running watcher; [`Watcher::finish`] stops it and prints the steps not yet printed.
pub struct Watcher {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// One registry file of the distribution.
struct Step {
    line_prefix: String,
    path: PathBuf,
    /// Size seen at the last look, and since when it has not changed.
    seen: Option<(u64, Instant)>,
    printed: bool,
    /// The file was there before the assembly started (fetched by an earlier one).
    there_before: bool,
}

impl Step {
    fn line(&self, size: u64, started: Instant) -> String {
        let when = if self.there_before {
            "already downloaded, checked".to_owned()
        } else {
            format!("fetched after {:.1} s", started.elapsed().as_secs_f64())
        };
        format!("{}: {}, {when}", self.line_prefix, output::bytes(size))
    }
}

fn size_of(path: &Path) -> Option<u64> {
    std::fs::metadata(path).ok().filter(|m| m.is_file()).map(|m| m.len())
}

/// Announces the assembly of `dist` and starts watching `downloads` for its files.
pub fn start(dist: &Dist, downloads: &Path) -> Watcher {
    let total = dist.parts.len();
    eprintln!(
        "onnxrt: assembling `{}` from {total} registry file(s), each fetched with its registry's client and checked against its pinned sha256",
        dist.name
    );
    let mut steps: Vec<Step> = dist
        .parts
        .iter()
        .enumerate()
        .map(|(i, part)| Step {
            line_prefix: format!(
                "onnxrt: [{}/{total}] {} ({} package {} {})",
                i + 1,
                part.file,
                part.registry,
                part.package,
                part.version
            ),
            path: downloads.join(&part.file),
            seen: None,
            printed: false,
            there_before: downloads.join(&part.file).is_file(),
        })
        .collect();
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let thread = std::thread::spawn(move || {
        let started = Instant::now();
        loop {
            let finished = stop.load(Ordering::Acquire);
            // In order: a step is reported once the ones before it are.
            for step in steps.iter_mut().filter(|s| !s.printed) {
                let Some(size) = size_of(&step.path) else { break };
                let settled = match step.seen {
                    Some((before, since)) if before == size => since.elapsed() >= POLL * 3,
                    _ => {
                        step.seen = Some((size, Instant::now()));
                        false
                    }
                };
                if !(settled || finished) {
                    break;
                }
                eprintln!("{}", step.line(size, started));
                step.printed = true;
            }
            if finished {
                return;
            }
            std::thread::sleep(POLL);
        }
    });
    Watcher { done, thread: Some(thread) }
}

impl Watcher {
    /// Stops watching, after printing the steps whose files are there.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
