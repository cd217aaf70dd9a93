//! `onnxrt doctor [--json] [--dist NAME] [--provider-dir DIR]`: one row per check of what the
//! field guides say goes wrong on GPU servers, each OK/WARN/FAIL/SKIP with the fix in the row.
//! Exit status 1 if any row is FAIL.
//!
//! Checks, in order: the machine's architecture; the GPU, driver and compute capability
//! (`nvidia-smi`) against the manifest entry's `driver_min` / `max_compute_capability`; the CUDA
//! devices this process can see (`CUDA_VISIBLE_DEVICES`, the driver's count); the runtime the
//! crate loads (version, path, how it was found, the search order) and its compiled-in
//! providers; the manifest entry compared with; each provider library beside the runtime
//! (readable? of the runtime's release? its `NEEDED` libraries, found where, each a complete
//! library? cuDNN's lazily loaded sub-libraries); CUDA versions on `LD_LIBRARY_PATH`; and test
//! sessions on an embedded model, on the CPU and, when the runtime has CUDA, on the GPU. No
//! library is loaded before its file was checked as complete (a truncated one kills the loader
//! with SIGBUS). A failing GPU session names the row that explains it.

mod cuda_env;
mod cudnn;
mod devices;
mod ep_devices;
pub use onnxrt_preflight::elf;
mod gpu;
mod providers;
mod release;
mod runtime;
pub use onnxrt_preflight::search;
pub mod session;

use std::path::PathBuf;

use serde_json::json;

use crate::error::{CliError, Result};
use crate::output::{self, Table};

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Fine.
    Ok,
    /// Works, but likely to bite (or cannot be fully checked).
    Warn,
    /// Will not work until fixed.
    Fail,
    /// Not applicable here.
    Skip,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        }
    }

    fn parse(text: &str) -> Option<Status> {
        [Status::Ok, Status::Warn, Status::Fail, Status::Skip].into_iter().find(|s| s.as_str() == text)
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// What was checked.
    pub check: String,
    /// The outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do, for WARN and FAIL.
    pub fix: Option<String>,
}

impl Row {
    /// A row without a fix.
    pub fn new(check: impl Into<String>, status: Status, detail: impl Into<String>) -> Row {
        Row { check: check.into(), status, detail: detail.into(), fix: None }
    }

    /// The same row with a fix.
    pub fn fix(mut self, fix: impl Into<String>) -> Row {
        self.fix = Some(fix.into());
        self
    }

    /// `{check, status, detail, fix}`.
    pub fn to_json(&self) -> serde_json::Value {
        json!({ "check": self.check, "status": self.status.as_str(), "detail": self.detail, "fix": self.fix })
    }

    /// Reads what [`Row::to_json`] wrote.
    pub fn from_json(value: &serde_json::Value) -> Option<Row> {
        Some(Row {
            check: value.get("check")?.as_str()?.to_owned(),
            status: Status::parse(value.get("status")?.as_str()?)?,
            detail: value.get("detail")?.as_str()?.to_owned(),
            fix: value.get("fix").and_then(|f| f.as_str()).map(str::to_owned),
        })
    }
}

/// Splits an error message whose last part is `\nFix: ...` into what happened and the fix.
pub fn split_fix(message: &str) -> (String, Option<String>) {
    match message.split_once("\nFix: ") {
        Some((what, fix)) => (what.to_owned(), Some(fix.to_owned())),
        None => (message.to_owned(), None),
    }
}

/// What `doctor` was asked.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Print JSON instead of the table.
    pub json: bool,
    /// The manifest entry to compare with.
    pub dist: Option<String>,
    /// Check the provider libraries in this folder instead of the runtime's.
    pub provider_dir: Option<PathBuf>,
}

/// The machine's architecture, as the kernel reports it.
fn machine_arch() -> String {
    if let Ok(arch) = std::fs::read_to_string("/proc/sys/kernel/arch") {
        return arch.trim().to_owned();
    }
    match std::process::Command::new("uname").arg("-m").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        _ => std::env::consts::ARCH.to_owned(),
    }
}

fn arch_row() -> Row {
    let arch = machine_arch();
    if arch == "x86_64" {
        Row::new("architecture", Status::Ok, "x86_64")
    } else {
        Row::new(
            "architecture",
            Status::Fail,
            format!("{arch}: the distributions in vendor-manifest.toml are built for x86_64 only"),
        )
        .fix("run on an x86_64 Linux machine, or bring an ONNX Runtime built for this architecture (ONNXRT_LIB_DIR)")
    }
}

/// Runs every check.
///
/// # Errors
/// A `--dist` the manifest does not have, or an unreadable built-in manifest.
pub fn checks(options: &Options) -> Result<Vec<Row>> {
    let manifest = crate::dists::Manifest::builtin();
    let facts = runtime::Facts::load();
    let own_dir = options.provider_dir.is_none();
    let (dist, manifest_row) = runtime::select_dist(&manifest, options.dist.as_deref(), &facts, own_dir)?;
    let gpus = gpu::query();
    let gpu_found = matches!(gpus, gpu::Query::Gpus(_));
    let searcher = search::Searcher::from_env();
    let mut rows = vec![arch_row()];
    rows.extend(gpu::rows(&gpus, dist.as_ref(), Some(&manifest)));
    rows.push(devices::this_machine(&gpus, &searcher));
    rows.extend(runtime::rows(&facts));
    rows.push(manifest_row);
    let dir = match (&options.provider_dir, &facts.info) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Ok(info)) => info.library.parent().map(|p| p.to_path_buf()),
        (None, Err(_)) => None,
    };
    match dir {
        Some(dir) => rows.extend(providers::rows(&providers::Inputs {
            dir: &dir,
            own_dir,
            compiled: &facts.providers,
            dist: dist.as_ref(),
            searcher: &searcher,
            runtime: facts.info.as_ref().ok().map(|i| (i.version.as_str(), i.library.as_path())),
        })),
        None => rows.push(Row::new(
            "provider libraries",
            Status::Skip,
            "the runtime did not load, so there is no folder to check (or pass --provider-dir)",
        )),
    }
    rows.push(cuda_env::row(&searcher.ld_library_path, dist.as_ref()));
    rows.push(ep_devices::row(&facts, gpu_found));
    rows.push(session::cpu_row(&facts));
    rows.push(session::gpu_row(&facts, gpu_found));
    explain_gpu_session(&mut rows);
    Ok(rows)
}

/// Points a failed GPU session at the row above that explains it: the first FAIL, else the first
/// WARN about the GPU stack. When every row above is fine, says what was checked and what to try.
fn explain_gpu_session(rows: &mut [Row]) {
    let Some(at) = rows.iter().position(|r| r.check == session::GPU_CHECK && r.status == Status::Fail) else {
        return;
    };
    let (above, rest) = rows.split_at_mut(at);
    let session = &mut rest[0];
    let failed = above.iter().find(|r| r.status == Status::Fail);
    let warned = || above.iter().find(|r| r.status == Status::Warn && r.check != "manifest");
    // The error's own fix, unless it only says to run the doctor (this is the doctor) or repeats
    // the fix of the row that explains it.
    let explaining = failed.or_else(warned).and_then(|r| r.fix.clone());
    let own = session.fix.take().filter(|f| !f.starts_with("run `onnxrt doctor`") && Some(f) != explaining.as_ref());
    let own = own.map(|f| format!("; the error's own hint: {f}")).unwrap_or_default();
    session.fix = Some(match (failed, warned()) {
        (Some(row), _) => format!(
            "the `{}` row above explains this: {}{own}",
            row.check,
            row.fix.as_deref().unwrap_or("fix what it names first")
        ),
        (None, Some(row)) => format!(
            "the `{}` row above (WARN) may explain this: {}{own}",
            row.check,
            row.fix.as_deref().unwrap_or("fix what it names first")
        ),
        (None, None) => {
            session.detail.push_str(
                " (every row above is OK: the GPU and driver, the CUDA devices, the runtime, each provider library and the libraries it needs (found, complete ELF files), cuDNN's sub-libraries and LD_LIBRARY_PATH)",
            );
            format!(
                "nothing checked above explains it: try `env -u LD_LIBRARY_PATH onnxrt doctor` (a clean loader path), CUDA_VISIBLE_DEVICES=0, and a model run with `onnxrt run MODEL --provider cuda --strict`; ORT's message above is what to report{own}"
            )
        }
    });
}

/// The report as a table; each fix on its own line under its row.
pub fn render(rows: &[Row]) -> String {
    let mut table = Table::new(&["STATUS", "CHECK", "DETAIL"]);
    for row in rows {
        let flat = |text: &str| text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" ");
        let fix = row.fix.as_deref().map(|f| format!("fix: {}", flat(f)));
        table.row_with_note([row.status.as_str().to_owned(), row.check.clone(), flat(&row.detail)], fix);
    }
    table.render()
}

/// Runs `doctor`.
pub fn run(options: &Options) -> Result<()> {
    let rows = checks(options)?;
    let printed = if options.json {
        output::print_json(&serde_json::Value::Array(rows.iter().map(Row::to_json).collect()))
    } else {
        output::out(&render(&rows))
    };
    // A reader that went away loses the rows, not the verdict: failed checks still exit 1.
    let failed: Vec<&str> = rows.iter().filter(|r| r.status == Status::Fail).map(|r| r.check.as_str()).collect();
    if failed.is_empty() {
        printed
    } else {
        Err(CliError::Failed(format!(
            "doctor: {} check(s) failed ({}); each FAIL row says what to do",
            failed.len(),
            failed.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip_through_json_and_fixes_split() {
        let row = Row::new("gpu session", Status::Fail, "boom").fix("do this");
        assert_eq!(Row::from_json(&row.to_json()), Some(row));
        let (what, fix) = split_fix("libonnxruntime.so could not be loaded\nFix: set ONNXRT_DYLIB_PATH");
        assert_eq!(
            (what.as_str(), fix.as_deref()),
            ("libonnxruntime.so could not be loaded", Some("set ONNXRT_DYLIB_PATH"))
        );
        let text = render(&[Row::new("a", Status::Ok, "fine"), Row::new("b", Status::Warn, "hm\n  more").fix("x")]);
        assert!(text.contains("WARN    b      hm more\n"), "{text}");
        assert!(text.contains("fix: x"), "{text}");
    }

    #[test]
    fn a_failed_gpu_session_names_the_row_that_explains_it_or_says_none_does() {
        let session = || Row::new(session::GPU_CHECK, Status::Fail, "CUDA failure 100").fix("run `onnxrt doctor`");
        let mut rows = vec![
            Row::new("gpu 0", Status::Ok, "H200"),
            Row::new("cuda devices", Status::Fail, "0 visible").fix("unset CUDA_VISIBLE_DEVICES"),
            session(),
        ];
        explain_gpu_session(&mut rows);
        let fix = rows[2].fix.as_deref().unwrap_or_default();
        assert!(fix.starts_with("the `cuda devices` row above explains this: unset"), "{fix}");
        assert!(!fix.contains("onnxrt doctor"), "{fix}");
        let mut rows = vec![Row::new("gpu 0", Status::Ok, "H200"), session()];
        explain_gpu_session(&mut rows);
        assert!(rows[1].detail.contains("every row above is OK"), "{:?}", rows[1]);
        assert!(
            rows[1].fix.as_deref().unwrap_or_default().starts_with("nothing checked above explains it"),
            "{:?}",
            rows[1]
        );
    }
}
