//! The CUDA devices this process can see, before any session: `CUDA_VISIBLE_DEVICES`, what
//! `nvidia-smi -L` lists (it ignores that variable), the device files, and the driver library
//! `libcuda.so.1` (found where the loader looks, and a complete library). The count CUDA will
//! report is the variable applied to `nvidia-smi`'s list the way CUDA applies it: indexes or
//! UUID prefixes, in order, up to the first entry that names no GPU; empty, `-1` or `NoDevFiles`
//! hide every GPU. (This crate has no `unsafe`, so it does not call the driver itself.)

use std::path::{Path, PathBuf};
use std::process::Command;

use super::elf::{self, Dynamic};
use super::gpu::Query;
use super::search::Searcher;
use super::{Row, Status};

/// The row's name.
pub const CHECK: &str = "cuda devices";

/// `CUDA_VISIBLE_DEVICES` as this process has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Visible {
    /// Not set: every GPU is visible.
    Unset,
    /// Set to the empty string (or `-1`, `NoDevFiles`): no GPU is visible.
    Hidden(String),
    /// A list of indexes or UUIDs.
    List(String),
}

impl Visible {
    /// Reads the variable.
    pub fn from_env() -> Visible {
        match std::env::var("CUDA_VISIBLE_DEVICES") {
            Err(_) => Visible::Unset,
            Ok(value) => Visible::parse(&value),
        }
    }

    /// Classifies a value of the variable.
    pub fn parse(value: &str) -> Visible {
        let trimmed = value.trim();
        if trimmed.is_empty() || trimmed == "-1" || trimmed.eq_ignore_ascii_case("NoDevFiles") {
            Visible::Hidden(value.to_owned())
        } else {
            Visible::List(value.to_owned())
        }
    }

    fn describe(&self) -> String {
        match self {
            Visible::Unset => "CUDA_VISIBLE_DEVICES is not set (every GPU is visible)".into(),
            Visible::Hidden(v) if v.trim().is_empty() => {
                "CUDA_VISIBLE_DEVICES is set but empty: CUDA shows this process no GPU".into()
            }
            Visible::Hidden(v) => format!("CUDA_VISIBLE_DEVICES={v}: CUDA shows this process no GPU"),
            Visible::List(v) => format!("CUDA_VISIBLE_DEVICES={v} (CUDA shows only these, renumbered from 0)"),
        }
    }

    /// How many of `uuids` (the GPUs `nvidia-smi -L` lists, in order) CUDA will show.
    pub fn count(&self, uuids: &[String]) -> usize {
        let list = match self {
            Visible::Unset => return uuids.len(),
            Visible::Hidden(_) => return 0,
            Visible::List(list) => list,
        };
        let mut taken: Vec<usize> = Vec::new();
        for entry in list.split(',').map(str::trim) {
            let index = match entry.parse::<usize>() {
                Ok(i) if i < uuids.len() => Some(i),
                Ok(_) => None,
                Err(_) => {
                    let matching: Vec<usize> =
                        (0..uuids.len()).filter(|&i| !entry.is_empty() && uuids[i].starts_with(entry)).collect();
                    (matching.len() == 1).then(|| matching[0])
                }
            };
            // CUDA stops at the first entry that names no GPU (or names one twice).
            match index {
                Some(i) if !taken.contains(&i) => taken.push(i),
                _ => break,
            }
        }
        taken.len()
    }
}

/// The driver library, as the loader would find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Driver {
    /// No `libcuda.so.1` where the loader looks.
    NotFound,
    /// Found but not a complete library.
    Damaged(PathBuf, String),
    /// Found, complete.
    Found(PathBuf),
}

/// Finds and checks the driver library (never loads it).
pub fn find_driver(searcher: &Searcher) -> Driver {
    let none = Dynamic::default();
    let Some(found) = searcher.resolve("libcuda.so.1", &none, Path::new("/")) else { return Driver::NotFound };
    match elf::check_complete(&found.path) {
        Ok(_) => Driver::Found(found.path),
        Err(why) => {
            let picked = searcher.picked(&found, &none, Path::new("/"));
            Driver::Damaged(found.path, format!("{why}; {picked}"))
        }
    }
}

/// The UUIDs `nvidia-smi -L` lists, in order (empty when it does not run).
pub fn smi_uuids() -> Vec<String> {
    let Ok(out) = Command::new("nvidia-smi").arg("-L").output() else { return Vec::new() };
    parse_smi_list(&String::from_utf8_lossy(&out.stdout))
}

/// `GPU 0: NVIDIA H200 (UUID: GPU-…)` lines → the UUIDs.
pub fn parse_smi_list(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("GPU "))
        .filter_map(|l| l.split("UUID: ").nth(1).map(|u| u.trim_end_matches(')').trim().to_owned()))
        .collect()
}

/// The device files CUDA opens that are missing or not openable for reading and writing.
fn device_file_problems(listed: usize) -> Vec<String> {
    let mut files = vec!["/dev/nvidiactl".to_owned(), "/dev/nvidia-uvm".to_owned()];
    files.extend((0..listed).map(|i| format!("/dev/nvidia{i}")));
    files
        .into_iter()
        .filter_map(|f| match std::fs::OpenOptions::new().read(true).write(true).open(&f) {
            Ok(_) => None,
            Err(e) => Some(format!("{f}: {e}")),
        })
        .collect()
}

/// What the row is made from.
pub struct Facts<'a> {
    /// `CUDA_VISIBLE_DEVICES`.
    pub visible: &'a Visible,
    /// `nvidia-smi --query-gpu`'s answer.
    pub smi: &'a Query,
    /// `nvidia-smi -L`'s UUIDs (one per GPU, when it ran).
    pub uuids: &'a [String],
    /// The driver library.
    pub driver: &'a Driver,
    /// Device files missing or not openable.
    pub device_files: &'a [String],
}

/// Gathers the facts of this machine and process and makes the row.
pub fn this_machine(smi: &Query, searcher: &Searcher) -> Row {
    let listed = match smi {
        Query::Gpus(gpus) => gpus.len(),
        _ => 0,
    };
    let uuids = if listed > 0 { smi_uuids() } else { Vec::new() };
    let device_files = if listed > 0 { device_file_problems(listed) } else { Vec::new() };
    row(&Facts {
        visible: &Visible::from_env(),
        smi,
        uuids: &uuids,
        driver: &find_driver(searcher),
        device_files: &device_files,
    })
}

/// The row.
pub fn row(facts: &Facts<'_>) -> Row {
    let (visible, smi, driver) = (facts.visible, facts.smi, facts.driver);
    let listed = match smi {
        Query::Gpus(gpus) => gpus.len(),
        _ => 0,
    };
    let smi_text = match smi {
        Query::Gpus(gpus) => {
            let names: Vec<String> = gpus.iter().enumerate().map(|(i, g)| format!("{i}: {}", g.name)).collect();
            format!("nvidia-smi lists {listed} GPU(s) ({})", names.join(", "))
        }
        Query::NotFound(why) | Query::Failed(why) => format!("nvidia-smi lists none ({why})"),
    };
    let driver_text = match driver {
        Driver::NotFound => "no CUDA driver library (libcuda.so.1) where the loader looks".to_owned(),
        Driver::Damaged(path, why) => format!("the driver library {} is damaged: {why}", path.display()),
        Driver::Found(path) => format!("driver library {} (complete)", path.display()),
    };
    let detail = format!("{}; {smi_text}; {driver_text}", visible.describe());
    if let Driver::Damaged(path, _) = driver {
        return Row::new(CHECK, Status::Fail, detail).fix(format!(
            "reinstall the NVIDIA driver's user-space libraries (libcuda.so.1 must match the kernel driver); {} cannot be loaded",
            path.display()
        ));
    }
    if listed == 0 {
        // No GPU on this machine: say it, and flag a setting that would hide one anyway.
        let detail = format!("no GPU on this machine: {detail}");
        return match visible {
            Visible::Hidden(_) => Row::new(CHECK, Status::Warn, detail).fix(
                "unset CUDA_VISIBLE_DEVICES (or set it to 0): set empty it hides every GPU, even on a machine that has one",
            ),
            _ => Row::new(CHECK, Status::Skip, detail),
        };
    }
    // With a GPU, CUDA needs its driver library and its device files.
    if *driver == Driver::NotFound {
        return Row::new(CHECK, Status::Fail, format!("CUDA cannot start: {detail}")).fix(
            "install the NVIDIA driver's user-space libraries (libcuda.so.1, same version as the kernel driver `nvidia-smi` reports), or in a container run it with the NVIDIA container runtime (--gpus all)",
        );
    }
    if !facts.device_files.is_empty() {
        return Row::new(
            CHECK,
            Status::Fail,
            format!("CUDA cannot open its device files ({}): {detail}", facts.device_files.join("; ")),
        )
        .fix("let this user open /dev/nvidia* (the `video` group on many systems), or in a container pass the GPUs in (--gpus all)");
    }
    // Without UUIDs (an old nvidia-smi) the indexes still count.
    let uuids: Vec<String> = if facts.uuids.len() == listed {
        facts.uuids.to_vec()
    } else {
        (0..listed).map(|i| format!("GPU-unknown-{i}")).collect()
    };
    let visible_count = visible.count(&uuids);
    match visible {
        _ if visible_count > 0 => Row::new(
            CHECK,
            Status::Ok,
            format!("{visible_count} CUDA device(s) visible to this process: {detail}"),
        ),
        Visible::Hidden(v) if v.trim().is_empty() => {
            Row::new(CHECK, Status::Fail, format!("0 CUDA devices visible to this process: {detail}"))
                .fix("CUDA_VISIBLE_DEVICES is empty: unset it or set it to 0 (or to the GPUs of `nvidia-smi -L` this process should use)")
        }
        Visible::Hidden(v) | Visible::List(v) => Row::new(
            CHECK,
            Status::Fail,
            format!("0 CUDA devices visible to this process: {detail}"),
        )
        .fix(format!(
            "CUDA_VISIBLE_DEVICES={v} names no GPU of this machine: unset it, or set it to indexes 0..{} or UUIDs from `nvidia-smi -L` (CUDA stops at the first entry that names no GPU)",
            listed - 1
        )),
        Visible::Unset => Row::new(CHECK, Status::Ok, detail),
    }
}

#[cfg(test)]
mod tests {
    use super::super::gpu::Gpu;
    use super::*;

    fn h200() -> Query {
        Query::Gpus(vec![Gpu { name: "NVIDIA H200".into(), driver: "580.159".into(), compute_cap: Some("9.0".into()) }])
    }

    fn facts<'a>(visible: &'a Visible, smi: &'a Query, uuids: &'a [String], driver: &'a Driver) -> Facts<'a> {
        Facts { visible, smi, uuids, driver, device_files: &[] }
    }

    #[test]
    fn cuda_visible_devices_is_applied_the_way_cuda_applies_it() {
        let uuids = vec!["GPU-aaaa-1".to_owned(), "GPU-bbbb-2".to_owned()];
        assert_eq!(Visible::Unset.count(&uuids), 2);
        assert_eq!(Visible::parse("").count(&uuids), 0);
        assert_eq!(Visible::parse("-1").count(&uuids), 0);
        assert_eq!(Visible::parse("1").count(&uuids), 1);
        assert_eq!(Visible::parse("0,5,1").count(&uuids), 1, "stops at the first entry that names no GPU");
        assert_eq!(Visible::parse("GPU-bbbb,0").count(&uuids), 2);
        assert_eq!(Visible::parse("GPU-").count(&uuids), 0, "an ambiguous prefix names no GPU");
        let listed = parse_smi_list("GPU 0: NVIDIA H200 (UUID: GPU-1234-abcd)\n");
        assert_eq!(listed, ["GPU-1234-abcd"]);
    }

    #[test]
    fn an_empty_cuda_visible_devices_with_a_gpu_fails_with_the_fix() {
        let uuids = vec!["GPU-1".to_owned()];
        let driver = Driver::Found("/usr/lib/x86_64-linux-gnu/libcuda.so.1".into());
        let (empty, smi) = (Visible::parse(""), h200());
        let hidden = row(&facts(&empty, &smi, &uuids, &driver));
        assert_eq!(hidden.status, Status::Fail, "{hidden:?}");
        assert!(hidden.fix.as_deref().unwrap_or("").contains("unset it or set it to 0"), "{hidden:?}");
        assert!(hidden.detail.contains("nvidia-smi lists 1 GPU(s)"), "{hidden:?}");
        let fine = row(&facts(&Visible::Unset, &smi, &uuids, &driver));
        assert_eq!(fine.status, Status::Ok, "{fine:?}");
        assert!(fine.detail.starts_with("1 CUDA device(s) visible"), "{fine:?}");
        let three = Visible::parse("3");
        let wrong = row(&facts(&three, &smi, &uuids, &driver));
        assert_eq!(wrong.status, Status::Fail);
        assert!(wrong.fix.as_deref().unwrap_or("").contains("indexes 0..0"), "{wrong:?}");
        let no_driver = row(&facts(&Visible::Unset, &smi, &uuids, &Driver::NotFound));
        assert_eq!(no_driver.status, Status::Fail, "{no_driver:?}");
        let no_gpu = Query::NotFound("nvidia-smi is not on PATH".into());
        let none = row(&facts(&Visible::Unset, &no_gpu, &[], &Driver::NotFound));
        assert_eq!(none.status, Status::Skip);
        assert!(none.detail.starts_with("no GPU on this machine"), "{none:?}");
    }
}
