//! `device_sim` runs end to end on a small configuration: one `SIM` line per (workers, delay, hold)
//! and one `OPEN` line per open-loop load after it, every answer its own caller's (the binary
//! checks each one), shares, batch sizes and latency order in range.

use std::process::Command;

fn field(line: &str, name: &str) -> f64 {
    let text = line.split_whitespace().find_map(|f| f.strip_prefix(&format!("{name}="))).expect(name);
    text.trim_end_matches('%').parse().expect("a number")
}

#[test]
fn device_sim_prints_a_line_per_configuration_with_sane_figures() {
    let output = Command::new(env!("CARGO_BIN_EXE_device_sim"))
        .args(["--callers", "16", "--requests", "400", "--workers", "1,2", "--max-delay-us", "0,500"])
        .args(["--turnaround-us", "200", "--fixed-us", "300", "--per-row-us", "50", "--max-batch", "8"])
        .args(["--pad-sizes", "1,2,4,8", "--open-loads", "0.5", "--open-threads", "32"])
        .output()
        .expect("device_sim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let closed: Vec<&str> = stdout.lines().filter(|l| l.starts_with("SIM ")).collect();
    assert_eq!(closed.len(), 8, "{stdout}");
    for line in closed {
        // On a loaded machine sleeps overshoot, so the share has a low floor; it cannot pass the best.
        assert!(field(line, "share") > 5.0 && field(line, "share") <= 105.0, "{line}");
        assert!((1.0..=8.0).contains(&field(line, "mean_batch")), "{line}");
    }
    let open: Vec<&str> = stdout.lines().filter(|l| l.starts_with("OPEN ")).collect();
    assert_eq!(open.len(), 8, "{stdout}");
    for line in open {
        // Half the best rate: the answers keep up with the schedule unless the machine stalls.
        assert!(field(line, "throughput") > 0.1 * field(line, "offered"), "{line}");
        let (p50, p99, max) = (field(line, "p50_ms"), field(line, "p99_ms"), field(line, "max_ms"));
        // Every request spends at least one device run (300 µs + 50 µs a row).
        assert!(0.3 <= p50 && p50 <= p99 && p99 <= max, "{line}");
        assert!((1.0..=8.0).contains(&field(line, "mean_batch")), "{line}");
    }
}

#[test]
fn device_sim_follows_a_measured_curve_and_refuses_a_falling_one() {
    let run = |curve: &str| {
        Command::new(env!("CARGO_BIN_EXE_device_sim"))
            .args(["--callers", "8", "--requests", "100", "--workers", "2", "--max-delay-us", "0", "--hold", "1"])
            .args(["--turnaround-us", "100", "--max-batch", "8", "--pad-sizes", "1,2,4,8", "--curve-ms", curve])
            .output()
            .expect("device_sim runs")
    };
    let output = run("1:0.2,4:0.5,8:1.0");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // The best rate is read off the curve's point at max_batch: 8 rows per 1.0 ms.
    assert!(stdout.contains("best 8000 rows/s at 8 rows (1.00 ms a batch)"), "{stdout}");
    let refused = run("1:0.2,8:1.0,4:0.5");
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stdout));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("rows must rise"));
}
