//! What the clients saw while measuring, and the summary line printed at the end.

use std::collections::BTreeMap;
use std::time::Duration;

/// Latencies of the answered requests and the failed ones counted by kind.
#[derive(Default)]
pub struct Tally {
    pub latencies: Vec<Duration>,
    /// Failures by kind: `HTTP 503`, `connection`.
    pub errors: BTreeMap<String, u64>,
    pub first_error: Option<String>,
}

/// How one request ended.
pub enum Outcome {
    Answered(Duration),
    /// The kind (counted) and the message (the first one is printed).
    Failed {
        kind: String,
        message: String,
    },
}

impl Tally {
    pub fn record(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Answered(latency) => self.latencies.push(latency),
            Outcome::Failed { kind, message } => {
                *self.errors.entry(kind).or_default() += 1;
                self.first_error.get_or_insert(message);
            }
        }
    }

    pub fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        for (kind, count) in other.errors {
            *self.errors.entry(kind).or_default() += count;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Prints the errors (stderr) and the `RESULT` line (stdout): `label` comes first (e.g.
    /// `mode=closed concurrency=8`), then the counts, throughput and latency quantiles.
    pub fn report(mut self, label: &str, seconds: f64) {
        self.latencies.sort();
        let quantile = |q: f64| -> f64 {
            if self.latencies.is_empty() {
                return f64::NAN;
            }
            let index = ((self.latencies.len() as f64 * q).ceil() as usize).clamp(1, self.latencies.len()) - 1;
            self.latencies[index].as_secs_f64() * 1e3
        };
        if let Some(error) = &self.first_error {
            eprintln!("first error: {error}");
        }
        if !self.errors.is_empty() {
            let kinds: Vec<String> = self.errors.iter().map(|(kind, n)| format!("{kind}: {n}")).collect();
            eprintln!("errors by kind: {}", kinds.join(", "));
        }
        let ok = self.latencies.len();
        let max = self.latencies.last().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
        println!(
            "RESULT {label} requests={ok} errors={} seconds={seconds:.2} throughput={:.1} p50_ms={:.3} p90_ms={:.3} p99_ms={:.3} max_ms={max:.3}",
            self.error_count(),
            ok as f64 / seconds.max(1e-9),
            quantile(0.50),
            quantile(0.90),
            quantile(0.99),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_by_kind_and_the_first_message_kept() {
        let mut tally = Tally::default();
        tally.record(Outcome::Answered(Duration::from_millis(3)));
        tally.record(Outcome::Failed { kind: "HTTP 503".into(), message: "first".into() });
        let mut other = Tally::default();
        other.record(Outcome::Failed { kind: "HTTP 503".into(), message: "second".into() });
        other.record(Outcome::Failed { kind: "connection".into(), message: "third".into() });
        tally.merge(other);
        assert_eq!(tally.error_count(), 3);
        assert_eq!(tally.errors["HTTP 503"], 2);
        assert_eq!(tally.first_error.as_deref(), Some("first"));
        assert_eq!(tally.latencies.len(), 1);
    }
}
