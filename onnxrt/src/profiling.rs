//! ORT's profile (`end_profiling`'s Chrome-trace JSON) as typed data: per-node kernel events, a
//! summary per node, op type and provider, and the placement report "which node ran where".
//!
//! Placement is read from profiling events rather than verbose logs: each kernel event names the
//! provider that actually executed it (`args.provider`), for the run that was measured, in a
//! documented, stable JSON format; the verbose log's placement lines are free text that changes
//! between releases and lists plans, not executions.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::session::{Session, SessionBuilder};
use crate::value::Value;

/// One kernel execution.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelEvent {
    /// Node name in the (optimized) graph.
    pub node: String,
    /// Operator type, e.g. `Conv`.
    pub op_type: String,
    /// Provider that ran it, e.g. `CUDAExecutionProvider`.
    pub provider: String,
    /// Duration in microseconds.
    pub duration_us: u64,
}

/// A parsed profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    /// Every kernel execution, in file order.
    pub kernels: Vec<KernelEvent>,
    /// Durations of `model_run` events (one per run), in microseconds.
    pub runs_us: Vec<u64>,
}

/// Count, total and mean time of a group of kernel executions.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stats {
    /// Executions.
    pub count: u64,
    /// Total microseconds.
    pub total_us: u64,
}

impl Stats {
    /// Mean microseconds per execution.
    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_us as f64 / self.count as f64
        }
    }

    fn add(&mut self, us: u64) {
        self.count += 1;
        self.total_us += us;
    }
}

/// Which provider ran which nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Provider → (node, op type) pairs it executed.
    pub by_provider: BTreeMap<String, Vec<(String, String)>>,
}

impl Placement {
    /// Nodes that ran on the CPU provider (empty when everything ran on the GPU).
    pub fn on_cpu(&self) -> Vec<(String, String)> {
        self.by_provider.get("CPUExecutionProvider").cloned().unwrap_or_default()
    }

    /// Whether any node ran on the CPU provider.
    pub fn anything_on_cpu(&self) -> bool {
        !self.on_cpu().is_empty()
    }
}

impl Profile {
    /// Reads the file `Session::end_profiling` returned.
    pub fn from_file(path: &Path) -> Result<Profile> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidArgument { what: format!("profile {}", path.display()), why: e.to_string() })?;
        Profile::parse(&text)
    }

    /// Parses ORT's profile JSON (an array of trace events).
    pub fn parse(json: &str) -> Result<Profile> {
        let bad = |why: String| Error::InvalidArgument { what: "ORT profile".into(), why };
        let events: Vec<serde_json::Value> = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        let mut profile = Profile::default();
        for event in &events {
            let text = |key: &str| event.get(key).and_then(serde_json::Value::as_str).unwrap_or_default();
            let duration_us = event.get("dur").and_then(serde_json::Value::as_u64).unwrap_or(0);
            match (text("cat"), text("name")) {
                ("Node", name) if name.ends_with("_kernel_time") => {
                    let args = event.get("args");
                    let arg = |key: &str| {
                        args.and_then(|a| a.get(key)).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned()
                    };
                    profile.kernels.push(KernelEvent {
                        node: name.trim_end_matches("_kernel_time").to_owned(),
                        op_type: arg("op_name"),
                        provider: arg("provider"),
                        duration_us,
                    });
                }
                ("Session", "model_run") => profile.runs_us.push(duration_us),
                _ => {}
            }
        }
        Ok(profile)
    }

    fn group(&self, key: impl Fn(&KernelEvent) -> String) -> BTreeMap<String, Stats> {
        let mut out: BTreeMap<String, Stats> = BTreeMap::new();
        for kernel in &self.kernels {
            out.entry(key(kernel)).or_default().add(kernel.duration_us);
        }
        out
    }

    /// Stats per node.
    pub fn by_node(&self) -> BTreeMap<String, Stats> {
        self.group(|k| k.node.clone())
    }

    /// Stats per op type.
    pub fn by_op_type(&self) -> BTreeMap<String, Stats> {
        self.group(|k| k.op_type.clone())
    }

    /// Stats per provider.
    pub fn by_provider(&self) -> BTreeMap<String, Stats> {
        self.group(|k| k.provider.clone())
    }

    /// Which provider ran which node (each node listed once per provider).
    pub fn placement(&self) -> Placement {
        let mut placement = Placement::default();
        for kernel in &self.kernels {
            let nodes = placement.by_provider.entry(kernel.provider.clone()).or_default();
            let entry = (kernel.node.clone(), kernel.op_type.clone());
            if !nodes.contains(&entry) {
                nodes.push(entry);
            }
        }
        placement
    }

    /// A printable summary: per provider, then per op type, sorted by total time.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let mut section = |title: &str, rows: BTreeMap<String, Stats>| {
            let mut rows: Vec<(String, Stats)> = rows.into_iter().collect();
            rows.sort_by_key(|row| std::cmp::Reverse(row.1.total_us));
            out.push_str(&format!("{title:<40} {:>8} {:>12} {:>10}\n", "count", "total_us", "mean_us"));
            for (name, stats) in rows {
                out.push_str(&format!(
                    "{name:<40} {:>8} {:>12} {:>10.1}\n",
                    stats.count,
                    stats.total_us,
                    stats.mean_us()
                ));
            }
            out.push('\n');
        };
        section("provider", self.by_provider());
        section("op type", self.by_op_type());
        out
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table())
    }
}

/// Runs `model` once with `inputs` under profiling and reports where each node ran: the one-call
/// answer to "did anything run on the CPU?". The profile file is written under `scratch` and
/// removed afterwards.
pub fn placement(
    builder: SessionBuilder,
    model: &Path,
    inputs: &[(&str, &Value<'_>)],
    scratch: &Path,
) -> Result<(Placement, Profile)> {
    let prefix: PathBuf = scratch.join(format!("onnxrt-placement-{}", std::process::id()));
    let session: Session = builder.profiling(&prefix).commit_from_file(model)?;
    session.run(inputs)?;
    let file = session.end_profiling()?;
    let profile = Profile::from_file(&file);
    let _ = std::fs::remove_file(&file);
    let profile = profile?;
    Ok((profile.placement(), profile))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"[
      {"cat":"Session","pid":1,"tid":1,"dur":120,"ts":1,"ph":"X","name":"model_run","args":{}},
      {"cat":"Node","pid":1,"tid":1,"dur":30,"ts":2,"ph":"X","name":"gemm1_kernel_time","args":{"op_name":"Gemm","provider":"CUDAExecutionProvider"}},
      {"cat":"Node","pid":1,"tid":1,"dur":10,"ts":3,"ph":"X","name":"gemm1_fence_before","args":{"op_name":"Gemm"}},
      {"cat":"Node","pid":1,"tid":1,"dur":50,"ts":4,"ph":"X","name":"norm_kernel_time","args":{"op_name":"StringNormalizer","provider":"CPUExecutionProvider"}},
      {"cat":"Node","pid":1,"tid":1,"dur":20,"ts":5,"ph":"X","name":"gemm2_kernel_time","args":{"op_name":"Gemm","provider":"CUDAExecutionProvider"}}
    ]"#;

    #[test]
    fn kernel_events_group_by_op_and_provider() {
        let profile = Profile::parse(SAMPLE).expect("sample parses");
        assert_eq!(profile.kernels.len(), 3);
        assert_eq!(profile.runs_us, vec![120]);
        let ops = profile.by_op_type();
        assert_eq!(ops["Gemm"], Stats { count: 2, total_us: 50 });
        assert_eq!(ops["Gemm"].mean_us(), 25.0);
        let placement = profile.placement();
        assert!(placement.anything_on_cpu());
        assert_eq!(placement.on_cpu(), vec![("norm".to_owned(), "StringNormalizer".to_owned())]);
        assert!(profile.table().contains("CUDAExecutionProvider"));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Profile::parse("{not json").is_err());
        assert!(Profile::parse("{}").is_err());
    }
}
