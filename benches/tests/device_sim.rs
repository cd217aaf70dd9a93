//! `device_sim` runs end to end on a small configuration: one `SIM` line per (workers, delay, hold),
//! every answer its own caller's (the binary checks each one), shares and batch sizes in range.

use std::process::Command;

#[test]
fn device_sim_prints_a_line_per_configuration_with_sane_figures() {
    let output = Command::new(env!("CARGO_BIN_EXE_device_sim"))
        .args(["--callers", "16", "--requests", "400", "--workers", "1,2", "--max-delay-us", "0,500"])
        .args(["--turnaround-us", "200", "--fixed-us", "300", "--per-row-us", "50", "--max-batch", "8"])
        .args(["--pad-sizes", "1,2,4,8"])
        .output()
        .expect("device_sim runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("SIM ")).collect();
    assert_eq!(lines.len(), 8, "{stdout}");
    for line in lines {
        let field = |name: &str| -> f64 {
            let text = line.split_whitespace().find_map(|f| f.strip_prefix(&format!("{name}="))).expect(name);
            text.trim_end_matches('%').parse().expect("a number")
        };
        // On a loaded machine sleeps overshoot, so the share has a low floor; it cannot pass the best.
        assert!(field("share") > 5.0 && field("share") <= 105.0, "{line}");
        assert!((1.0..=8.0).contains(&field("mean_batch")), "{line}");
    }
}
