//! CUDA versions on `LD_LIBRARY_PATH`: with folders of two CUDA majors on it, the loader takes
//! each library from the first folder that has it, and a provider can end up with a mix (the
//! seeds' "works on one machine, CUBLAS_STATUS_NOT_INITIALIZED on the next").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::dists::Dist;

use super::{Row, Status};

/// CUDA majors a folder belongs to: `libcudart.so.N*` inside it, or `cuda-N[.x]` in its path.
pub fn majors_of(dir: &Path) -> Vec<u32> {
    let mut majors = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(version) = name.strip_prefix("libcudart.so.") {
                if let Some(major) = version.split('.').next().and_then(|m| m.parse().ok()) {
                    majors.push(major);
                }
            }
        }
    }
    for part in dir.components() {
        let part = part.as_os_str().to_string_lossy();
        if let Some(version) = part.strip_prefix("cuda-") {
            if let Some(major) = version.split('.').next().and_then(|m| m.parse().ok()) {
                majors.push(major);
            }
        }
    }
    majors.sort_unstable();
    majors.dedup();
    majors
}

/// The `LD_LIBRARY_PATH` row, for the given folders.
pub fn row(ld_library_path: &[PathBuf], dist: Option<&Dist>) -> Row {
    const CHECK: &str = "cuda on LD_LIBRARY_PATH";
    if ld_library_path.is_empty() {
        return Row::new(
            CHECK,
            Status::Ok,
            "LD_LIBRARY_PATH is not set (the loader uses RUNPATH, ld.so.cache and the system folders)",
        );
    }
    let mut by_major: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for dir in ld_library_path {
        for major in majors_of(dir) {
            let dirs = by_major.entry(major).or_default();
            let shown = dir.display().to_string();
            if !dirs.contains(&shown) {
                dirs.push(shown);
            }
        }
    }
    let wanted = dist.and_then(|d| d.requires.as_ref()).map(|r| r.cuda);
    let wanted_major: Option<u32> = wanted.and_then(|c| c.split('.').next()?.parse().ok());
    let listing =
        by_major.iter().map(|(m, dirs)| format!("CUDA {m} ({})", dirs.join(", "))).collect::<Vec<_>>().join("; ");
    let keep = match &wanted {
        Some(cuda) => {
            format!("keep only the folders of CUDA {cuda} (what the runtime was built for) on LD_LIBRARY_PATH")
        }
        None => "keep the folders of one CUDA version on LD_LIBRARY_PATH".to_owned(),
    };
    match by_major.len() {
        0 => Row::new(CHECK, Status::Ok, "no CUDA folders on LD_LIBRARY_PATH"),
        1 => {
            let (&major, _) = by_major.iter().next().unwrap_or((&0, &Vec::new()));
            match (wanted_major, &wanted) {
                (Some(w), Some(cuda)) if w != major => Row::new(
                    CHECK,
                    Status::Warn,
                    format!("LD_LIBRARY_PATH has {listing}, but the runtime needs CUDA {cuda}"),
                )
                .fix(format!("put the CUDA {cuda} libraries' folder on LD_LIBRARY_PATH instead")),
                _ => Row::new(CHECK, Status::Ok, listing),
            }
        }
        _ => Row::new(
            CHECK,
            Status::Warn,
            format!(
                "several CUDA versions on LD_LIBRARY_PATH: {listing}; the loader takes each library from the first folder that has it, so versions can mix"
            ),
        )
        .fix(keep),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cuda_majors_warn_one_is_fine() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("x"), dir.path().join("cuda-12.4/lib64"));
        std::fs::create_dir_all(&a).expect("mkdir");
        std::fs::create_dir_all(&b).expect("mkdir");
        std::fs::write(a.join("libcudart.so.11.0"), b"").expect("write");
        assert_eq!(majors_of(&a), [11]);
        assert_eq!(majors_of(&b), [12]);
        let warn = row(&[a.clone(), b.clone()], None);
        assert_eq!(warn.status, Status::Warn);
        assert!(warn.detail.contains("CUDA 11") && warn.detail.contains("CUDA 12"), "{warn:?}");
        assert_eq!(row(&[b], None).status, Status::Ok);
        assert_eq!(row(&[], None).status, Status::Ok);
    }
}
