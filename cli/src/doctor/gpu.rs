//! The GPU and its driver, from `nvidia-smi`, compared with what the distribution's CUDA needs:
//! the driver version (`driver_min`) and the compute capability (`max_compute_capability`: a GPU
//! newer than the CUDA build knows fails with "no kernel image is available for execution on the
//! device").

use std::process::Command;

use crate::dists::{Dist, Manifest};

use super::{Row, Status};

/// One GPU as `nvidia-smi` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// e.g. `NVIDIA H200`.
    pub name: String,
    /// e.g. `570.86.15`.
    pub driver: String,
    /// e.g. `9.0`; absent with drivers too old to report it.
    pub compute_cap: Option<String>,
}

/// What asking `nvidia-smi` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// No `nvidia-smi`: no NVIDIA driver installed (or not on PATH).
    NotFound(String),
    /// `nvidia-smi` ran and failed (driver not loaded, version mismatch...).
    Failed(String),
    /// The GPUs found.
    Gpus(Vec<Gpu>),
}

/// Parses `nvidia-smi --query-gpu=name,driver_version[,compute_cap] --format=csv,noheader`.
pub fn parse(csv: &str) -> Vec<Gpu> {
    csv.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let (name, driver) = (fields.first()?, fields.get(1)?);
            let compute_cap = fields.get(2).filter(|c| !c.is_empty() && !c.contains("N/A")).map(|c| (*c).to_owned());
            Some(Gpu { name: (*name).to_owned(), driver: (*driver).to_owned(), compute_cap })
        })
        .collect()
}

/// Asks `nvidia-smi` (from PATH).
pub fn query() -> Query {
    let run = |fields: &str| {
        Command::new("nvidia-smi").arg(format!("--query-gpu={fields}")).arg("--format=csv,noheader").output()
    };
    let output = match run("name,driver_version,compute_cap") {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let module = std::path::Path::new("/proc/driver/nvidia/version").exists();
            return Query::NotFound(if module {
                "nvidia-smi is not on PATH, although the NVIDIA kernel driver is loaded".into()
            } else {
                "nvidia-smi is not on PATH and no NVIDIA kernel driver is loaded (/proc/driver/nvidia is absent)".into()
            });
        }
        Err(e) => return Query::Failed(format!("nvidia-smi could not run: {e}")),
    };
    // Drivers older than 510 do not know `compute_cap`: ask again without it.
    let output = if !output.status.success() && String::from_utf8_lossy(&output.stdout).contains("compute_cap") {
        match run("name,driver_version") {
            Ok(output) => output,
            Err(e) => return Query::Failed(format!("nvidia-smi could not run: {e}")),
        }
    } else {
        output
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let said = format!("{} {}", stdout.trim(), String::from_utf8_lossy(&output.stderr).trim());
        return Query::Failed(format!("nvidia-smi failed ({}): {}", output.status, said.trim()));
    }
    let gpus = parse(&stdout);
    if gpus.is_empty() {
        return Query::Failed(format!("nvidia-smi listed no GPU: {:?}", stdout.trim()));
    }
    Query::Gpus(gpus)
}

/// Dotted numeric versions compared part by part (`580.65.06` > `570.86.15`, `12.0` < `12.1`).
pub fn version_less(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.trim().parse().unwrap_or(0)).collect() };
    let (a, b) = (parts(a), parts(b));
    for i in 0..a.len().max(b.len()) {
        let (x, y) = (a.get(i).copied().unwrap_or(0), b.get(i).copied().unwrap_or(0));
        if x != y {
            return x < y;
        }
    }
    false
}

/// A manifest distribution whose CUDA knows compute capability `cap`, to suggest.
fn dist_for_cap<'m>(manifest: Option<&'m Manifest>, cap: &str) -> Option<&'m Dist> {
    manifest?.dists.iter().find(|d| d.requires.as_ref().is_some_and(|r| !version_less(r.max_compute_capability, cap)))
}

/// The GPU and driver rows.
pub fn rows(query: &Query, dist: Option<&Dist>, manifest: Option<&Manifest>) -> Vec<Row> {
    let requires = dist.and_then(|d| d.requires.as_ref());
    let name = dist.map(|d| d.name).unwrap_or("the runtime");
    match query {
        Query::NotFound(why) | Query::Failed(why) => {
            let detail = format!("no NVIDIA GPU/driver found: {why}");
            let row = match requires {
                Some(r) => Row::new("gpu", Status::Warn, format!("{detail}; `{name}` runs on the GPU only with one"))
                    .fix(format!(
                        "install the NVIDIA driver {} or newer (CUDA {}) and check with `nvidia-smi`; without a GPU, use a CPU build (ONNXRT_DIST=cpu-1.16.2-registry)",
                        r.driver_min, r.cuda
                    )),
                None => Row::new("gpu", Status::Skip, format!("{detail} (not needed: the runtime checked is CPU-only)")),
            };
            vec![row]
        }
        Query::Gpus(gpus) => {
            let mut rows = Vec::new();
            for (i, gpu) in gpus.iter().enumerate() {
                let cap = gpu.compute_cap.as_deref();
                let mut row = Row::new(
                    format!("gpu {i}"),
                    Status::Ok,
                    format!("{}, compute capability {}", gpu.name, cap.unwrap_or("unknown (driver too old to say)")),
                );
                if let (Some(r), Some(cap)) = (requires, cap) {
                    if version_less(r.max_compute_capability, cap) {
                        let better = dist_for_cap(manifest, cap)
                            .map(|d| format!("use a runtime built for a newer CUDA (ONNXRT_DIST={})", d.name))
                            .unwrap_or_else(|| "use an ONNX Runtime built with a CUDA that supports this GPU".into());
                        row = Row::new(
                            format!("gpu {i}"),
                            Status::Fail,
                            format!(
                                "{} has compute capability {cap}, newer than CUDA {} of `{name}` supports (up to {}): kernels fail with \"no kernel image is available for execution on the device\"",
                                gpu.name, r.cuda, r.max_compute_capability
                            ),
                        )
                        .fix(better);
                    } else {
                        row.detail.push_str(&format!(" (CUDA {} supports up to {})", r.cuda, r.max_compute_capability));
                    }
                }
                rows.push(row);
            }
            // One driver for all GPUs.
            let driver = &gpus[0].driver;
            rows.push(match requires {
                Some(r) if version_less(driver, r.driver_min) => Row::new(
                    "driver",
                    Status::Fail,
                    format!(
                        "NVIDIA driver {driver} is older than {} that CUDA {} of `{name}` needs (CUDA fails with \"CUDA driver version is insufficient for CUDA runtime version\")",
                        r.driver_min, r.cuda
                    ),
                )
                .fix(format!(
                    "upgrade the NVIDIA driver to {} or newer, or use a runtime built for an older CUDA",
                    r.driver_min
                )),
                Some(r) => Row::new(
                    "driver",
                    Status::Ok,
                    format!("NVIDIA driver {driver} (CUDA {} needs {} or newer)", r.cuda, r.driver_min),
                ),
                None => Row::new("driver", Status::Ok, format!("NVIDIA driver {driver}")),
            });
            rows
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_versions() {
        let gpus = parse("NVIDIA H200, 570.86.15, 9.0\nTesla T4, 535.54.03, [N/A]\n");
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].compute_cap.as_deref(), Some("9.0"));
        assert_eq!(gpus[1].compute_cap, None);
        assert!(version_less("570.86.15", "580.65.06"));
        assert!(!version_less("580.65.06", "580.65.06"));
        assert!(version_less("9.0", "12.0"));
        assert!(version_less("12.0", "12.1"));
        assert!(!version_less("12.0", "9.0"));
    }

    #[test]
    fn a_gpu_newer_than_the_cuda_build_and_an_old_driver_fail() {
        let manifest = Manifest::builtin();
        let dist = manifest.dist("gpu-1.16.2").expect("dist");
        let q =
            Query::Gpus(vec![Gpu { name: "B200".into(), driver: "515.0".into(), compute_cap: Some("10.0".into()) }]);
        let rows = rows(&q, Some(dist), Some(&manifest));
        assert_eq!(rows[0].status, Status::Fail);
        assert!(rows[0].detail.contains("no kernel image"), "{:?}", rows[0]);
        assert!(rows[0].fix.as_deref().unwrap_or("").contains("gpu-cuda13-1.30.0"), "{:?}", rows[0]);
        assert_eq!(rows[1].status, Status::Fail);
        let none = rows_for_none(&manifest);
        assert_eq!(none.status, Status::Warn);
    }

    fn rows_for_none(manifest: &Manifest) -> Row {
        let dist = manifest.dist("gpu-1.16.2").expect("dist");
        rows(&Query::NotFound("nvidia-smi is not on PATH".into()), Some(dist), Some(manifest)).remove(0)
    }
}
