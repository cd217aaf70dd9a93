//! Who hears about a download's progress: [`Reporter`], carried by [`crate::Config`]. `onnxrt
//! fetch` draws a progress bar with it; a build script logs a line per tenth of the archive.

use std::sync::{Arc, Mutex};

use crate::download::Event;

/// A shared callback for [`Event`]s (cheap to clone; `Config` stays `Clone` and `Debug`).
#[derive(Clone)]
pub struct Reporter(Arc<dyn Fn(&Event) + Send + Sync>);

impl Reporter {
    /// Wraps `callback`.
    pub fn new(callback: impl Fn(&Event) + Send + Sync + 'static) -> Reporter {
        Reporter(Arc::new(callback))
    }

    /// Tells the callback about `event`.
    pub fn report(&self, event: &Event) {
        (self.0)(event)
    }

    /// A plain log on stderr: the start, each further tenth received (or each 16 MiB when the size
    /// is unknown), and the end. In a build script this lands in cargo's log of the script
    /// (`target/*/build/onnxrt-sys-*/stderr`, shown with `cargo build -vv`).
    pub fn log(prefix: &'static str) -> Reporter {
        let logged = Mutex::new(0u64);
        Reporter::new(move |event| {
            let mut last = logged.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(line) = log_line(event, &mut last) {
                eprintln!("{prefix}: {line}");
            }
        })
    }
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reporter(..)")
    }
}

const MIB: f64 = 1024.0 * 1024.0;
const STEP_UNKNOWN: u64 = 16 << 20;

/// The log line for `event`, if it deserves one; `last` is the step last logged.
fn log_line(event: &Event, last: &mut u64) -> Option<String> {
    match *event {
        Event::Started { url, attempt, total } => {
            *last = 0;
            let size = total.map_or("size not announced".to_owned(), |t| format!("{:.1} MiB", t as f64 / MIB));
            Some(format!("downloading {} ({size}), attempt {attempt}", crate::config::shown_url(url)))
        }
        Event::Received { bytes, total } => {
            let step = match total {
                Some(total) if total > 0 => bytes.saturating_mul(10) / total,
                _ => bytes / STEP_UNKNOWN,
            };
            if step <= *last {
                return None;
            }
            *last = step;
            Some(match total {
                Some(total) if total > 0 => format!("{:.1} of {:.1} MiB", bytes as f64 / MIB, total as f64 / MIB),
                _ => format!("{:.1} MiB", bytes as f64 / MIB),
            })
        }
        Event::Finished { bytes, elapsed } => {
            Some(format!("{:.1} MiB received in {:.1} s", bytes as f64 / MIB, elapsed.as_secs_f64()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_log_has_one_line_per_tenth() {
        let mut last = 0;
        let total = Some(100 << 20);
        let start = log_line(&Event::Started { url: "https://a/x.tgz", attempt: 1, total }, &mut last);
        assert_eq!(start.as_deref(), Some("downloading https://a/x.tgz (100.0 MiB), attempt 1"));
        let lines: Vec<String> =
            (1..=100u64).filter_map(|mib| log_line(&Event::Received { bytes: mib << 20, total }, &mut last)).collect();
        assert_eq!(lines.len(), 10, "{lines:?}");
        assert_eq!(lines[0], "10.0 of 100.0 MiB");
        let end = log_line(&Event::Finished { bytes: 100 << 20, elapsed: Duration::from_millis(2500) }, &mut last);
        assert_eq!(end.as_deref(), Some("100.0 MiB received in 2.5 s"));
        // A new attempt starts the steps again; without a size, one line per 16 MiB.
        log_line(&Event::Started { url: "https://a/x.tgz", attempt: 2, total: None }, &mut last);
        let unknown =
            (1..=40u64).filter_map(|mib| log_line(&Event::Received { bytes: mib << 20, total: None }, &mut last));
        assert_eq!(unknown.collect::<Vec<_>>(), ["16.0 MiB", "32.0 MiB"]);
    }
}
