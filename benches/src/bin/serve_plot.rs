//! The latency–throughput plot of tools/serve/bench-cpu.sh: per model one SVG with two panels, p50 and
//! p99 latency against offered load, one line per server. Every open-loop run is a dot; the line
//! goes through the mean of the repeats of each run (same rate, or same share of the server's own
//! maximum). A run that answered less than 95 % of its offered rate (the server fell behind) is
//! drawn hollow; the closed-loop maxima of each server are short marks on the x axis.
//!
//! ```sh
//! cargo run --release -p onnxrt-benches --bin serve_plot -- RESULTS.txt OUT_DIR
//! ```
//! RESULTS.txt holds one `key=value` line per loadgen run (`server=`, `run=`, `mode=`, `rate=`,
//! `throughput=`, `p50_ms=`, `p99_ms=`, and `model=` where there are several models); writes
//! `OUT_DIR/latency-MODEL.svg` per model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

/// Below this share of the offered rate answered, an open-loop run was past the server's capacity
/// (the same threshold as tools/serve/bench_summary.py).
const SATURATED: f64 = 0.95;

/// One open-loop run of one server.
struct Point {
    run: String,
    rate: f64,
    p50_ms: f64,
    p99_ms: f64,
    kept_up: bool,
}

/// What one server showed for one model: its open-loop runs and its closed-loop maxima.
#[derive(Default)]
struct Series {
    points: Vec<Point>,
    maxima: Vec<f64>,
}

/// model -> server (in the order first seen) -> series.
type Results = BTreeMap<String, Vec<(String, Series)>>;

fn parse(text: &str) -> Result<Results, String> {
    let mut results = Results::new();
    for (number, line) in text.lines().enumerate() {
        let fields: BTreeMap<&str, &str> = line.split_whitespace().filter_map(|part| part.split_once('=')).collect();
        let Some(server) = fields.get("server") else { continue };
        let model = fields.get("model").copied().unwrap_or("model").to_string();
        let number_of = |key: &str| -> Result<Option<f64>, String> {
            fields
                .get(key)
                .map(|v| v.parse::<f64>().map_err(|e| format!("line {}: {key}={v}: {e}", number + 1)))
                .transpose()
        };
        let servers = results.entry(model).or_default();
        let index = match servers.iter().position(|(name, _)| name == server) {
            Some(index) => index,
            None => {
                servers.push((server.to_string(), Series::default()));
                servers.len() - 1
            }
        };
        let series = &mut servers[index].1;
        let (Some(throughput), Some(p50_ms), Some(p99_ms)) =
            (number_of("throughput")?, number_of("p50_ms")?, number_of("p99_ms")?)
        else {
            continue; // a server that did not start, or a run that printed no result
        };
        match fields.get("mode") {
            Some(&"open") => {
                let rate =
                    number_of("rate")?.ok_or_else(|| format!("line {}: an open-loop run without rate=", number + 1))?;
                let run = fields.get("run").copied().unwrap_or_default().to_string();
                series.points.push(Point { run, rate, p50_ms, p99_ms, kept_up: throughput >= SATURATED * rate });
            }
            Some(&"closed") => series.maxima.push(throughput),
            _ => {}
        }
    }
    for servers in results.values_mut() {
        for (_, series) in servers.iter_mut() {
            series.points.sort_by(|a, b| a.rate.total_cmp(&b.rate));
        }
    }
    Ok(results)
}

/// One hue per server family (onnxrt-serve red, Triton blue, MLServer green, others grey-brown),
/// dark for batching off and light for on, so that the pairs read at a glance.
fn colour(server: &str) -> RGBColor {
    let batching = server.ends_with("-on");
    match (server.split('-').next().unwrap_or_default(), batching) {
        ("serve", false) => RGBColor(0xc0, 0x10, 0x10),
        ("serve", true) => RGBColor(0xff, 0x8c, 0x1a),
        ("triton", false) => RGBColor(0x10, 0x40, 0xa0),
        ("triton", true) => RGBColor(0x30, 0xb0, 0xe0),
        ("mlserver", false) => RGBColor(0x1a, 0x80, 0x1a),
        ("mlserver", true) => RGBColor(0x80, 0xc8, 0x40),
        (_, _) => RGBColor(0x8c, 0x56, 0x4b),
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// The line of one server: per run name the mean rate and the mean latency of its repeats, by rate.
fn means(points: &[Point], latency: fn(&Point) -> f64) -> Vec<(f64, f64)> {
    let mut runs: BTreeMap<&str, (f64, f64, f64)> = BTreeMap::new();
    for p in points {
        let sums = runs.entry(p.run.as_str()).or_default();
        *sums = (sums.0 + p.rate, sums.1 + latency(p), sums.2 + 1.0);
    }
    let mut line: Vec<(f64, f64)> = runs.values().map(|(rate, latency, n)| (rate / n, latency / n)).collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    line
}

/// One panel: `latency` picks p50 or p99 from a point.
fn panel(area: &Area, title: &str, servers: &[(String, Series)], latency: fn(&Point) -> f64) -> Result<(), String> {
    let points = || servers.iter().flat_map(|(_, s)| s.points.iter());
    let max_rate = servers
        .iter()
        .flat_map(|(_, s)| s.points.iter().map(|p| p.rate).chain(s.maxima.iter().copied()))
        .fold(1.0_f64, f64::max);
    let (low, high) = points().map(latency).fold((f64::INFINITY, 0.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !low.is_finite() {
        return Err(format!("{title}: no open-loop runs"));
    }
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..max_rate * 1.05, (low * 0.8..high * 1.25).log_scale().base(2.0))
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("offered load (requests/s, open loop)")
        .y_desc("latency (ms, log scale)")
        .y_label_formatter(&|v| if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v}") })
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(|e| e.to_string())?;
    for (server, series) in servers {
        let colour = colour(server);
        chart
            .draw_series(LineSeries::new(means(&series.points, latency), colour.stroke_width(2)))
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(series.points.iter().map(|p| {
                let style = if p.kept_up { colour.filled() } else { colour.stroke_width(2) };
                Circle::new((p.rate, latency(p)), 4, style)
            }))
            .map_err(|e| e.to_string())?;
        // The closed-loop maxima: a short tick just above the x axis.
        chart
            .draw_series(
                series
                    .maxima
                    .iter()
                    .map(|&m| PathElement::new([(m, low * 0.8), (m, low * 0.9)], colour.stroke_width(3))),
            )
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn plot(model: &str, servers: &[(String, Series)], path: &Path) -> Result<(), String> {
    let root = SVGBackend::new(path, (1200, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (title, body) = root.split_vertically(64);
    let legend = title
        .titled(
            &format!(
                "{model}: latency against offered load (hollow: fell behind; ticks on the x axis: closed-loop maxima)"
            ),
            ("sans-serif", 18),
        )
        .map_err(|e| e.to_string())?;
    // One legend for both panels, in a row under the title.
    for (index, (server, _)) in servers.iter().enumerate() {
        let colour = colour(server);
        let x = 70 + 160 * index as i32;
        legend.draw(&PathElement::new([(x, 14), (x + 24, 14)], colour.stroke_width(3))).map_err(|e| e.to_string())?;
        legend.draw(&Text::new(server.as_str(), (x + 30, 7), ("sans-serif", 14))).map_err(|e| e.to_string())?;
    }
    let (left, right) = body.split_horizontally(600);
    panel(&left, "p50", servers, |p| p.p50_ms)?;
    panel(&right, "p99", servers, |p| p.p99_ms)?;
    root.present().map_err(|e| e.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [results, out] = args.as_slice() else {
        eprintln!("usage: serve_plot RESULTS.txt OUT_DIR");
        std::process::exit(2);
    };
    let run = || -> Result<(), String> {
        let text = std::fs::read_to_string(results).map_err(|e| format!("{results}: {e}"))?;
        let parsed = parse(&text)?;
        if parsed.is_empty() {
            return Err(format!("{results}: no runs"));
        }
        for (model, servers) in &parsed {
            let path = PathBuf::from(out).join(format!("latency-{model}.svg"));
            plot(model, servers, &path)?;
            println!("{}", path.display());
        }
        Ok(())
    };
    if let Err(error) = run() {
        eprintln!("serve_plot: {error}");
        std::process::exit(1);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test
mod tests {
    use super::*;

    const RESULTS: &str = "\
repeat=1 server=serve-off model=cls run=closed8 load1=1.0 mode=closed concurrency=8 requests=100 errors=0 seconds=1 throughput=200.0 p50_ms=30 p90_ms=40 p99_ms=50 max_ms=60
repeat=1 server=serve-off model=cls run=open80 load1=1.0 mode=open rate=160.0 requests=100 errors=0 seconds=1 throughput=159.0 p50_ms=8 p90_ms=9 p99_ms=20 max_ms=30
repeat=1 server=serve-off model=cls run=open50 load1=1.0 mode=open rate=100.0 requests=100 errors=0 seconds=1 throughput=100.0 p50_ms=6 p90_ms=7 p99_ms=10 max_ms=12
repeat=2 server=serve-off model=cls run=open50 load1=1.0 mode=open rate=90.0 requests=100 errors=0 seconds=1 throughput=90.0 p50_ms=4 p90_ms=7 p99_ms=30 max_ms=40
repeat=1 server=triton-on model=cls run=open50 load1=1.0 mode=open rate=60.0 requests=100 errors=0 seconds=1 throughput=50.0 p50_ms=300 p90_ms=400 p99_ms=900 max_ms=990
repeat=1 server=mlserver-off model=cls run=none error=did-not-start
repeat=1 server=serve-off model=det run=open50 load1=1.0 mode=open rate=2.0 requests=10 errors=0 seconds=5 throughput=2.0 p50_ms=400 p90_ms=410 p99_ms=420 max_ms=430
date: 2026-12-07T06:04:35Z
";

    #[test]
    fn runs_are_grouped_by_model_and_server_in_the_order_seen() {
        let results = parse(RESULTS).unwrap();
        assert_eq!(results.keys().collect::<Vec<_>>(), ["cls", "det"]);
        let cls = &results["cls"];
        let names: Vec<&str> = cls.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["serve-off", "triton-on", "mlserver-off"]);
        let serve = &cls[0].1;
        assert_eq!(serve.maxima, [200.0]);
        let rates: Vec<f64> = serve.points.iter().map(|p| p.rate).collect();
        assert_eq!(rates, [90.0, 100.0, 160.0], "sorted by rate");
        assert!(serve.points.iter().all(|p| p.kept_up), "159 of 160 req/s is within 95 %");
        assert!(!cls[1].1.points[0].kept_up, "50 of 60 req/s fell behind");
        assert!(cls[2].1.points.is_empty() && cls[2].1.maxima.is_empty(), "a server that did not start has no runs");
    }

    #[test]
    fn the_line_goes_through_the_mean_of_each_runs_repeats() {
        let results = parse(RESULTS).unwrap();
        let serve = &results["cls"][0].1;
        assert_eq!(means(&serve.points, |p| p.p99_ms), [(95.0, 20.0), (160.0, 20.0)]);
        assert_eq!(means(&serve.points, |p| p.p50_ms), [(95.0, 5.0), (160.0, 8.0)]);
    }

    #[test]
    fn a_bad_number_is_refused_with_its_line_and_key() {
        let error = parse("server=serve-off mode=open rate=10 throughput=ten p50_ms=1 p99_ms=2\n").err().unwrap();
        assert!(error.starts_with("line 1: throughput=ten"), "{error}");
        let error = parse("server=serve-off mode=open throughput=10 p50_ms=1 p99_ms=2\n").err().unwrap();
        assert!(error.contains("without rate="), "{error}");
    }

    #[test]
    fn the_svg_has_every_server_and_every_open_run_in_both_panels() {
        let dir = std::env::temp_dir().join(format!("serve_plot_test_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let results = parse(RESULTS).unwrap();
        let path = dir.join("latency-cls.svg");
        plot("cls", &results["cls"], &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        for name in ["serve-off", "triton-on", "mlserver-off", "p50", "p99"] {
            assert!(svg.contains(&format!("\n{name}\n")), "{name} missing");
        }
        // 4 open runs, each a dot in both panels; the one that fell behind hollow in both.
        assert_eq!(svg.matches("<circle").count(), 8);
        let hollow = svg
            .split("<circle")
            .skip(1)
            .filter(|c| c.split('>').next().unwrap_or_default().contains("fill=\"none\""))
            .count();
        assert_eq!(hollow, 2);
    }
}
