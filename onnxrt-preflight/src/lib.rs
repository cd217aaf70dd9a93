//! Will a library load? Answered from the files alone, before anything loads them.
//!
//! The dynamic loader maps a library's segments without checking that the file holds them, so a
//! truncated copy of `libcublasLt.so.13` first on `LD_LIBRARY_PATH` kills the process with SIGBUS
//! the moment ORT loads its CUDA provider: no error, no message. And cuDNN loads its kernel
//! libraries lazily, so a missing `libcudnn_engines_precompiled.so.9` shows only at the first
//! convolution, as `CUDNN_STATUS_INTERNAL_ERROR`. This crate resolves a library's dependencies
//! the way the loader would (its RPATH/RUNPATH, `LD_LIBRARY_PATH`, the loader cache, the system
//! folders), follows them to the end, adds the cuDNN libraries loaded with `dlopen` (the front
//! library of CUDA 12/13 builds, and cuDNN's sub-libraries), and checks each file as a
//! complete ELF library ([`elf::check_complete`]). It also reads which ORT release a provider
//! library was built for ([`release`]): ORT loads one of another release without a word. `onnxrt
//! doctor` and onnxrt's strict GPU sessions (`SessionBuilder::strict_gpu`) both use it.
//!
//! It reads files and runs `ldconfig -p`; it loads nothing and has no `unsafe` code.

#![forbid(unsafe_code)]

pub mod cudnn;
pub mod elf;
pub mod release;
pub mod search;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use search::Searcher;

/// The first file of a library's dependency closure that will not load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// No file of this name is anywhere the loader searches.
    Missing {
        /// The library asked for (`libcublasLt.so.13`).
        name: String,
        /// The library that needs it.
        needed_by: PathBuf,
        /// The places searched, in the loader's order.
        searched: String,
    },
    /// The file the loader would pick is not a complete library for this machine.
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong with it (truncated, emptied, another architecture…).
        why: String,
        /// Which search step picked it, and the whole order.
        picked: String,
    },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Missing { name, needed_by, searched } => {
                write!(f, "{name} (needed by {}) is not found; searched: {searched}", needed_by.display())
            }
            Problem::Damaged { path, why, picked } => write!(f, "{} will not load: {why} ({picked})", path.display()),
        }
    }
}

/// What a successful check covered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Closure {
    /// Every file checked, the library itself first, in the order they were reached.
    pub files: Vec<PathBuf>,
}

/// Checks `library` and every library it needs, transitively, as the loader would resolve them
/// here and now, plus cuDNN's sub-libraries when a `libcudnn.so.N` is among them.
///
/// # Errors
/// The first [`Problem`] met, in the loader's order.
pub fn check_closure(library: &Path, searcher: &Searcher) -> Result<Closure, Problem> {
    let damaged = |path: &Path, why: String, picked: String| Problem::Damaged { path: path.to_path_buf(), why, picked };
    let first =
        elf::read_dynamic(library).map_err(|why| damaged(library, why.to_string(), "the library asked for".into()))?;
    let mut files = vec![library.to_path_buf()];
    let mut seen: HashSet<String> = HashSet::new();
    let own_name = library.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut queue = vec![(library.to_path_buf(), own_name, first)];
    while let Some((parent, parent_name, dynamic)) = queue.pop() {
        let origin = parent.parent().unwrap_or(Path::new("/")).to_path_buf();
        // By the name it was asked for, as the loader (and cuDNN's own dlopen) goes by names.
        let lazily_loaded = cudnn::sub_libraries(&parent_name).iter().copied();
        let front = cudnn::front_loaded_at_run_time(&dynamic.needed);
        let names = dynamic.needed.iter().map(String::as_str).chain(front).chain(lazily_loaded);
        let mut reached = Vec::new();
        for name in names {
            if !seen.insert(name.to_owned()) {
                continue;
            }
            let Some(found) = searcher.resolve(name, &dynamic, &origin) else {
                return Err(Problem::Missing {
                    name: name.to_owned(),
                    needed_by: parent.clone(),
                    searched: searcher.searched(&dynamic, &origin),
                });
            };
            let child = elf::read_dynamic(&found.path)
                .map_err(|why| damaged(&found.path, why.to_string(), searcher.picked(&found, &dynamic, &origin)))?;
            files.push(found.path.clone());
            reached.push((found.path, name.to_owned(), child));
        }
        // Depth after breadth within one library, so the first problem is the loader's first.
        queue.extend(reached.into_iter().rev());
    }
    Ok(Closure { files })
}

/// `check_closure` for the library at `path`, remembered per path for the life of the process
/// once it passed (a failure is checked again next time: the user may have fixed it).
///
/// # Errors
/// As [`check_closure`].
pub fn check_closure_once(path: &Path) -> Result<(), Problem> {
    static PASSED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let passed = |list: &Vec<PathBuf>| list.iter().any(|p| p == path);
    if PASSED.lock().map(|l| passed(&l)).unwrap_or(false) {
        return Ok(());
    }
    check_closure(path, &Searcher::from_env())?;
    if let Ok(mut list) = PASSED.lock() {
        list.push(path.to_path_buf());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder holding a copy of this test binary under `name`, cut to `keep` bytes if given.
    fn library_copy(dir: &Path, name: &str, keep: Option<usize>) -> PathBuf {
        let mut bytes = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        if let Some(keep) = keep {
            bytes.truncate(keep);
        }
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    #[test]
    fn this_executable_and_everything_it_needs_load() {
        let exe = std::env::current_exe().expect("exe");
        let closure = check_closure(&exe, &Searcher::from_env()).expect("the test binary's libraries load");
        assert!(closure.files.len() >= 2, "{closure:?}");
        assert!(closure.files.iter().any(|f| f.to_string_lossy().contains("libc.so")), "{closure:?}");
    }

    #[test]
    fn a_truncated_dependency_first_on_the_search_path_is_named_with_the_step_that_picked_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        // The test binary needs libc.so.6; a truncated "libc.so.6" first on LD_LIBRARY_PATH wins.
        library_copy(dir.path(), "libc.so.6", Some(4096));
        let searcher = Searcher { ld_library_path: vec![dir.path().to_path_buf()], ..Searcher::from_env() };
        let exe = std::env::current_exe().expect("exe");
        match check_closure(&exe, &searcher) {
            Err(Problem::Damaged { path, why, picked }) => {
                assert_eq!(path, dir.path().join("libc.so.6"));
                assert!(why.contains("truncated"), "{why}");
                assert!(picked.contains("LD_LIBRARY_PATH entry 1 of 1"), "{picked}");
            }
            other => panic!("expected the truncated libc copy, got {other:?}"),
        }
    }

    #[test]
    fn a_library_that_is_not_there_is_missing_and_the_search_is_listed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = std::env::current_exe().expect("exe");
        // With no loader cache and no folders at all, libc.so.6 cannot be found.
        let searcher = Searcher { ld_library_path: vec![dir.path().to_path_buf()], ..Searcher::default() };
        match check_closure(&exe, &searcher) {
            Err(Problem::Missing { name, needed_by, searched }) => {
                assert!(name.starts_with("lib"), "{name}");
                assert_eq!(needed_by, exe);
                assert!(searched.contains("LD_LIBRARY_PATH"), "{searched}");
            }
            other => panic!("expected a missing library, got {other:?}"),
        }
    }

    #[test]
    fn an_emptied_library_is_damaged_not_loaded() {
        let dir = tempfile::tempdir().expect("tempdir");
        let empty = library_copy(dir.path(), "libempty.so", Some(0));
        match check_closure(&empty, &Searcher::default()) {
            Err(Problem::Damaged { path, why, .. }) => {
                assert_eq!(path, empty);
                assert!(why.contains("too short"), "{why}");
            }
            other => panic!("expected damage, got {other:?}"),
        }
    }
}
