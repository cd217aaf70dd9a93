//! Finding and loading the runtime library, without `LD_LIBRARY_PATH`.
//!
//! Search order (a failure lists every place tried and why):
//! 1. a path given in code ([`crate::init_from`]);
//! 2. `ONNXRT_DYLIB_PATH` (a file, or a folder holding `libonnxruntime.so*`);
//! 3. `<exe dir>/onnxruntime/lib` (a deployment bundle made by `onnxrt bundle`);
//! 4. the verified library recorded at build time ([`onnxrt_sys::BUILD_LIBRARY`]).
//!
//! No silent fallback: a place the user chose (1, 2) or a bundle that exists (3) but does not load
//! is an error, never quietly replaced by the next candidate; only places that do not exist are
//! skipped.
//!
//! The library recorded at build time (4) is loaded only if nobody else could have replaced it:
//! the file and every folder above it (as recorded, and as its links resolve) must be yours or
//! root's, the file writable by nobody else, and each folder writable by nobody else unless it is
//! sticky (`/tmp`) — ssh's `StrictModes`. Otherwise another user could rename the cache away and
//! plant a library in its place after the build; the load is refused, naming the folder. Paths
//! the user names (1, 2) and the bundle beside the executable (3) are not checked: the user chose
//! them, and whoever can write the executable's folder can replace the executable itself.
//!
//! With the `link` feature the runtime is linked instead and none of this runs.

use std::path::{Path, PathBuf};

use crate::error::{Error, LoadAttempt};

/// The library stays loaded for the life of the process: ORT does not support being unloaded
/// while any of its objects or threads exist, so it is never closed.
pub(crate) struct Loaded {
    pub(crate) base: *const onnxrt_sys::OrtApiBase,
    pub(crate) path: PathBuf,
}

/// Candidate paths in search order, each with where it came from.
pub(crate) fn candidates(explicit: Option<&Path>) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    if let Some(path) = explicit {
        out.push((GIVEN_IN_CODE.to_owned(), path.to_owned()));
    }
    if let Some(value) = std::env::var_os("ONNXRT_DYLIB_PATH").filter(|v| !v.is_empty()) {
        out.push(("ONNXRT_DYLIB_PATH".to_owned(), PathBuf::from(value)));
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        out.push(("the bundle beside the executable".to_owned(), dir.join("onnxruntime").join("lib")));
    }
    out.push((RECORDED.to_owned(), PathBuf::from(onnxrt_sys::BUILD_LIBRARY)));
    out
}

/// Places the user named (in code or in the environment): if they fail, nothing else is tried.
fn chosen_by_user(origin: &str) -> bool {
    origin == GIVEN_IN_CODE || origin == "ONNXRT_DYLIB_PATH"
}

const GIVEN_IN_CODE: &str = "given in code";

/// Resolves a folder to the library inside it.
fn library_in(path: &Path) -> Option<PathBuf> {
    if !path.is_dir() {
        return Some(path.to_owned());
    }
    let versioned = Path::new(onnxrt_sys::BUILD_LIBRARY).file_name().map(|f| path.join(f));
    let usual = [versioned, Some(path.join("libonnxruntime.so")), Some(path.join("libonnxruntime.so.1"))];
    usual.into_iter().flatten().find(|p| p.exists()).or_else(|| {
        // Any versioned runtime in the folder (e.g. a bundle of a newer release).
        std::fs::read_dir(path)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libonnxruntime.so.")))
    })
}

const RECORDED: &str = "recorded at build time";

/// Why another user could have replaced `file` (or could replace it before it is mapped), if so:
/// the file is theirs or writable by group or others, or a folder above it is theirs or
/// writable by group or others without the sticky bit.
pub(crate) fn replaceable(file: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    let real = match std::fs::canonicalize(file) {
        Ok(real) => real,
        Err(e) => return Some(format!("cannot be resolved ({e})")),
    };
    let theirs = |uid: u32| uid != me && uid != 0;
    for checked in [file, real.as_path()] {
        let meta = match std::fs::metadata(checked) {
            Ok(meta) => meta,
            Err(e) => return Some(format!("{} cannot be read ({e})", checked.display())),
        };
        let mode = meta.mode() & 0o7777;
        if theirs(meta.uid()) || mode & 0o022 != 0 {
            return Some(format!(
                "{} belongs to uid {} with mode {mode:o}: another user could have replaced it; \
                 rebuild with a cache only you can write (the default ~/.cache/onnxrt)",
                checked.display(),
                meta.uid()
            ));
        }
    }
    let folders = file.ancestors().skip(1).chain(real.ancestors().skip(1));
    for folder in folders.filter(|f| !f.as_os_str().is_empty()) {
        let meta = match std::fs::metadata(folder) {
            Ok(meta) => meta,
            Err(e) => return Some(format!("the folder {} cannot be read ({e})", folder.display())),
        };
        let mode = meta.mode() & 0o7777;
        if theirs(meta.uid()) || (mode & 0o022 != 0 && mode & 0o1000 == 0) {
            return Some(format!(
                "the folder {} (uid {}, mode {mode:o}) can be written by another user, who could have put \
                 another library in place of the verified one; refusing to load it. Rebuild with the cache in a \
                 folder only you can write (the default ~/.cache/onnxrt), or set ONNXRT_DYLIB_PATH to a library \
                 you trust",
                folder.display(),
                meta.uid()
            ));
        }
    }
    None
}

/// Loads the first candidate that works.
#[cfg(not(feature = "link"))]
pub(crate) fn load(explicit: Option<&Path>) -> Result<Loaded, Error> {
    load_first(candidates(explicit))
}

/// Loads the first of `candidates` that works (see the search order above).
#[cfg(not(feature = "link"))]
fn load_first(candidates: Vec<(String, PathBuf)>) -> Result<Loaded, Error> {
    let mut tried = Vec::new();
    for (origin, path) in candidates {
        let Some(file) = library_in(&path) else {
            tried.push(LoadAttempt { origin: origin.clone(), path, why: "folder holds no libonnxruntime.so*".into() });
            if chosen_by_user(&origin) {
                break;
            }
            continue;
        };
        if !file.exists() {
            tried.push(LoadAttempt { origin: origin.clone(), path: file, why: "no such file".into() });
            if chosen_by_user(&origin) {
                break;
            }
            continue;
        }
        if origin == RECORDED {
            if let Some(why) = replaceable(&file) {
                tried.push(LoadAttempt { origin, path: file, why });
                break;
            }
        }
        // SAFETY: loading runs the library's initialisers; ONNX Runtime's only set up static
        // tables. The handle is leaked below, so symbols taken from it stay valid forever.
        let library = match unsafe { libloading::Library::new(&file) } {
            Ok(library) => library,
            Err(e) => {
                // It exists but does not load (unreadable, wrong architecture, missing deps): say so.
                tried.push(LoadAttempt { origin, path: file, why: e.to_string() });
                break;
            }
        };
        // SAFETY: every ORT release exports `OrtGetApiBase` with this signature.
        let symbol =
            unsafe { library.get::<unsafe extern "C" fn() -> *const onnxrt_sys::OrtApiBase>(b"OrtGetApiBase\0") };
        let get_base = match symbol {
            Ok(symbol) => *symbol,
            Err(e) => {
                tried.push(LoadAttempt { origin, path: file, why: format!("not an ONNX Runtime library: {e}") });
                break;
            }
        };
        std::mem::forget(library);
        // SAFETY: the library stays loaded (forgotten above); the function takes no arguments
        // and returns a pointer to a static struct.
        let base = unsafe { get_base() };
        if base.is_null() {
            tried.push(LoadAttempt { origin, path: file, why: "OrtGetApiBase returned null".into() });
            break;
        }
        return Ok(Loaded { base, path: file });
    }
    Err(Error::RuntimeNotFound { tried })
}

/// Link mode: the dynamic loader already mapped the runtime (NEEDED + rpath).
#[cfg(feature = "link")]
pub(crate) fn load(_explicit: Option<&Path>) -> Result<Loaded, Error> {
    // SAFETY: the linked ORT exports this function; it returns a pointer to a static struct.
    let base = unsafe { onnxrt_sys::OrtGetApiBase() };
    if base.is_null() {
        return Err(Error::RuntimeNotFound {
            tried: vec![LoadAttempt {
                origin: "linked".into(),
                path: PathBuf::from(onnxrt_sys::BUILD_LIBRARY),
                why: "OrtGetApiBase returned null".into(),
            }],
        });
    }
    Ok(Loaded { base, path: PathBuf::from(onnxrt_sys::BUILD_LIBRARY) })
}

#[cfg(all(test, not(feature = "link")))]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    use super::{load_first, RECORDED};
    use crate::error::Error;

    /// A copy of the verified runtime at `folder/lib/<name>`, as a planted cache would hold it.
    fn copy_of_the_runtime(folder: &Path) -> PathBuf {
        let built = Path::new(onnxrt_sys::BUILD_LIBRARY);
        let lib = folder.join("cache").join("entry").join("lib");
        std::fs::create_dir_all(&lib).expect("creating the cache folders");
        let file = lib.join(built.file_name().expect("a file name"));
        std::fs::copy(built, &file).expect("copying the runtime");
        file
    }

    fn recorded(file: &Path) -> Vec<(String, PathBuf)> {
        vec![(RECORDED.to_owned(), file.to_owned())]
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    /// The fourth review's hole 1: a cache below a folder anyone can write (no sticky bit) is
    /// one another user can rename away and replace; the recorded library there is refused.
    #[test]
    fn the_recorded_library_below_a_folder_others_can_write_is_refused() {
        let tmp = tempfile::tempdir().expect("a temporary folder");
        let public = tmp.path().join("pub");
        std::fs::create_dir(&public).expect("creating pub");
        let file = copy_of_the_runtime(&public);

        // The control: the same copy under folders only we can write loads.
        load_first(recorded(&file)).expect("the copy under private folders loads");

        set_mode(&public, 0o777);
        match load_first(recorded(&file)) {
            Err(Error::RuntimeNotFound { tried }) => {
                let why = &tried.last().expect("one attempt").why;
                assert!(why.contains(&format!("the folder {}", public.display())), "{why}");
                assert!(why.contains("another user"), "{why}");
            }
            Err(other) => panic!("expected RuntimeNotFound, got {other}"),
            Ok(_) => panic!("the library below a folder anyone can write was loaded"),
        }

        // Sticky, as /tmp is: nobody can rename what another user owns there.
        set_mode(&public, 0o1777);
        load_first(recorded(&file)).expect("a sticky folder anyone can write is fine");

        // The library file itself writable by the group.
        set_mode(&public, 0o755);
        set_mode(&file, 0o664);
        assert!(load_first(recorded(&file)).is_err(), "a group-writable library is refused");
    }
}
