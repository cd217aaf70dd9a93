//! Interleaved timing: warm up every variant, size a batch per variant to last about
//! `target`, then take `samples` rounds, each timing one batch of every variant in a rotated
//! order. A sample's figure is the batch time divided by the batch size (ns per run).

use std::time::{Duration, Instant};

/// Something to time: `run(n)` performs `n` runs.
pub struct Variant {
    /// Name in tables.
    pub name: String,
    run: Box<dyn FnMut(u64)>,
}

impl Variant {
    /// A variant named `name` whose closure performs the given number of runs.
    pub fn new(name: impl Into<String>, run: impl FnMut(u64) + 'static) -> Variant {
        Variant { name: name.into(), run: Box::new(run) }
    }

    /// Performs `n` runs.
    pub fn run(&mut self, n: u64) {
        (self.run)(n)
    }
}

impl std::fmt::Debug for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Variant({})", self.name)
    }
}

/// Nanoseconds per run of one variant.
#[derive(Debug, Clone)]
pub struct Stats {
    /// The variant's name.
    pub name: String,
    /// Median over samples.
    pub median_ns: f64,
    /// Fastest sample.
    pub min_ns: f64,
    /// 25th percentile.
    pub p25_ns: f64,
    /// 75th percentile.
    pub p75_ns: f64,
    /// Runs per sample.
    pub batch: u64,
    /// Samples taken.
    pub samples: usize,
}

fn time(variant: &mut Variant, n: u64) -> Duration {
    let start = Instant::now();
    variant.run(n);
    start.elapsed()
}

/// Times `variants` interleaved; returns their stats in the same order.
pub fn measure(variants: &mut [Variant], samples: usize, target: Duration) -> Vec<Stats> {
    // Warm-up (first runs allocate ORT's arena, fault in pages, fill caches), then calibrate.
    let mut batches = Vec::with_capacity(variants.len());
    for variant in variants.iter_mut() {
        variant.run(20);
        let mut n = 1u64;
        let per_run = loop {
            let took = time(variant, n);
            if took >= Duration::from_millis(20) || n >= 1 << 24 {
                break took.as_nanos() as f64 / n as f64;
            }
            n *= 2;
        };
        batches.push(((target.as_nanos() as f64 / per_run.max(1.0)) as u64).max(1));
    }
    let mut per_sample: Vec<Vec<f64>> = vec![Vec::with_capacity(samples); variants.len()];
    let count = variants.len();
    for s in 0..samples {
        for k in 0..count {
            let i = (s + k) % count;
            let took = time(&mut variants[i], batches[i]);
            per_sample[i].push(took.as_nanos() as f64 / batches[i] as f64);
        }
    }
    variants
        .iter()
        .zip(per_sample)
        .zip(batches)
        .map(|((variant, mut ns), batch)| {
            ns.sort_by(f64::total_cmp);
            let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize];
            Stats {
                name: variant.name.clone(),
                median_ns: at(0.5),
                min_ns: ns[0],
                p25_ns: at(0.25),
                p75_ns: at(0.75),
                batch,
                samples: ns.len(),
            }
        })
        .collect()
}

/// Prints the table and RESULT lines; ratios are to `raw C Run`, `raw C RunWithBinding` and
/// `raw C round trip`.
pub fn print_table(key: &str, title: &str, stats: &[Stats]) {
    let find = |name: &str| stats.iter().find(|s| s.name == name).map(|s| s.median_ns);
    let run = find("raw C Run");
    let binding = find("raw C RunWithBinding");
    let trip = find("raw C round trip");
    println!("### {title} (`{key}`)\n");
    println!(
        "| variant | median ns/run | p25–p75 | min | vs raw C Run | vs raw C RunWithBinding | vs raw C round trip |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for s in stats {
        let ratio = |base: Option<f64>| base.map_or("–".to_owned(), |b| format!("{:.3}×", s.median_ns / b));
        println!(
            "| {} | {:.0} | {:.0}–{:.0} | {:.0} | {} | {} | {} |",
            s.name,
            s.median_ns,
            s.p25_ns,
            s.p75_ns,
            s.min_ns,
            ratio(run),
            ratio(binding),
            ratio(trip)
        );
    }
    println!();
    for s in stats {
        println!(
            "RESULT case={key} variant={:?} median_ns={:.0} min_ns={:.0} p25_ns={:.0} p75_ns={:.0} batch={} samples={}",
            s.name, s.median_ns, s.min_ns, s.p25_ns, s.p75_ns, s.batch, s.samples
        );
    }
    println!();
}
