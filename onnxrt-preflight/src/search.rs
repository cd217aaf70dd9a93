//! Where the dynamic loader would find a library a provider library needs, searched in ld.so's
//! order: the library's `RPATH` (only without a `RUNPATH`), `LD_LIBRARY_PATH`, its `RUNPATH`
//! (`$ORIGIN` expanded), `/etc/ld.so.cache` (as `ldconfig -p` lists it), then the default folders.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::elf::Dynamic;

/// The default folders of the x86-64 loader.
pub const DEFAULT_DIRS: &[&str] = &["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"];

/// The places the loader searches, read once.
#[derive(Debug, Clone, Default)]
pub struct Searcher {
    /// `LD_LIBRARY_PATH`, split.
    pub ld_library_path: Vec<PathBuf>,
    /// `(soname, path)` of the x86-64 entries of the loader cache.
    pub cache: Vec<(String, PathBuf)>,
    /// Whether the cache could be listed.
    pub cache_read: bool,
    /// The default folders.
    pub defaults: Vec<PathBuf>,
}

/// Where a library was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The path the loader would open.
    pub path: PathBuf,
    /// That path with symbolic links resolved (shows the full version, e.g. `libcudart.so.13.0.96`).
    pub real: PathBuf,
    /// Which search step found it (`LD_LIBRARY_PATH`, `RUNPATH`, `ld.so.cache`...).
    pub via: &'static str,
}

/// Whether the loader would try to open `path`: anything there but a folder (a library hidden by
/// a bind-mounted `/dev/null` is a character device, and the loader opens it and fails).
fn is_candidate(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_dir())
}

/// `$ORIGIN` and `${ORIGIN}` replaced by the folder of the library.
fn expand(entry: &str, origin: &Path) -> PathBuf {
    let origin = origin.display().to_string();
    PathBuf::from(entry.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin))
}

/// The x86-64 entries of `ldconfig -p` output.
pub fn parse_ldconfig(text: &str) -> Vec<(String, PathBuf)> {
    text.lines()
        .filter_map(|line| {
            let (left, path) = line.split_once(" => ")?;
            let (name, flags) = left.trim().split_once(" (")?;
            flags.contains("x86-64").then(|| (name.trim().to_owned(), PathBuf::from(path.trim())))
        })
        .collect()
}

/// `libcublasLt.so` for `libcublasLt.so.13`.
fn stem(name: &str) -> &str {
    name.find(".so").map_or(name, |i| &name[..i + 3])
}

impl Searcher {
    /// Reads `LD_LIBRARY_PATH` and the loader cache of this machine.
    pub fn from_env() -> Searcher {
        let ld_library_path = std::env::var("LD_LIBRARY_PATH")
            .unwrap_or_default()
            .split(':')
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        let listed = ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
            .iter()
            .find_map(|cmd| Command::new(cmd).arg("-p").output().ok().filter(|o| o.status.success()));
        Searcher {
            ld_library_path,
            cache: listed.as_ref().map(|o| parse_ldconfig(&String::from_utf8_lossy(&o.stdout))).unwrap_or_default(),
            cache_read: listed.is_some(),
            defaults: DEFAULT_DIRS.iter().map(PathBuf::from).collect(),
        }
    }

    /// The folders searched for the dependencies of `lib` (in `origin`), in order, with their step.
    fn folders(&self, lib: &Dynamic, origin: &Path) -> Vec<(&'static str, PathBuf)> {
        let mut out = Vec::new();
        if lib.runpath.is_empty() {
            out.extend(lib.rpath.iter().map(|e| ("RPATH", expand(e, origin))));
        }
        out.extend(self.ld_library_path.iter().map(|d| ("LD_LIBRARY_PATH", d.clone())));
        out.extend(lib.runpath.iter().map(|e| ("RUNPATH", expand(e, origin))));
        out
    }

    /// Where the loader would find `name`, a dependency of `lib` (which lives in `origin`).
    pub fn resolve(&self, name: &str, lib: &Dynamic, origin: &Path) -> Option<Found> {
        let found = |path: PathBuf, via| {
            let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            Found { path, real, via }
        };
        if name.contains('/') {
            let path = PathBuf::from(name);
            return is_candidate(&path).then(|| found(path, "its path"));
        }
        for (via, dir) in self.folders(lib, origin) {
            let candidate = dir.join(name);
            if is_candidate(&candidate) {
                return Some(found(candidate, via));
            }
        }
        if let Some((_, path)) = self.cache.iter().find(|(n, p)| n == name && is_candidate(p)) {
            return Some(found(path.clone(), "ld.so.cache"));
        }
        self.defaults.iter().map(|d| d.join(name)).find(|p| is_candidate(p)).map(|p| found(p, "default folders"))
    }

    /// How the loader came to `found`, for a damaged-file message: the step and folder that
    /// picked it, then the whole order (an earlier folder wins, so the fix is often to reorder).
    pub fn picked(&self, found: &Found, lib: &Dynamic, origin: &Path) -> String {
        let folder = found.path.parent().map(|p| p.display().to_string()).unwrap_or_default();
        let step = match found.via {
            "LD_LIBRARY_PATH" => {
                let position = self.ld_library_path.iter().position(|d| Some(d.as_path()) == found.path.parent());
                match position {
                    Some(i) => format!("LD_LIBRARY_PATH entry {} of {} ({folder})", i + 1, self.ld_library_path.len()),
                    None => format!("LD_LIBRARY_PATH ({folder})"),
                }
            }
            via => format!("{via} ({folder})"),
        };
        format!("picked by {step}; the loader's order: {}", self.searched(lib, origin))
    }

    /// Other versions of `name` in the same places (`libcublasLt.so.12` when `.so.13` is missing).
    pub fn other_versions(&self, name: &str, lib: &Dynamic, origin: &Path) -> Vec<PathBuf> {
        let stem = stem(name);
        let matches = |file: &str| file != name && (file == stem || file.starts_with(&format!("{stem}.")));
        let mut out: Vec<PathBuf> = Vec::new();
        let dirs = self.folders(lib, origin).into_iter().map(|(_, d)| d).chain(self.defaults.iter().cloned());
        for dir in dirs {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            out.extend(entries.flatten().filter(|e| e.file_name().to_str().is_some_and(matches)).map(|e| e.path()));
        }
        out.extend(self.cache.iter().filter(|(n, _)| matches(n)).map(|(_, p)| p.clone()));
        out.sort();
        out.dedup();
        out
    }

    /// The places searched, in words, for a "not found" message.
    pub fn searched(&self, lib: &Dynamic, origin: &Path) -> String {
        let mut parts = Vec::new();
        if lib.runpath.is_empty() && !lib.rpath.is_empty() {
            parts.push(format!("RPATH {:?}", lib.rpath));
        }
        if self.ld_library_path.is_empty() {
            parts.push("LD_LIBRARY_PATH (not set)".to_owned());
        } else {
            let dirs: Vec<String> = self.ld_library_path.iter().map(|d| d.display().to_string()).collect();
            parts.push(format!("LD_LIBRARY_PATH {}", dirs.join(":")));
        }
        if lib.runpath.is_empty() {
            parts.push("RUNPATH (none)".to_owned());
        } else {
            let dirs: Vec<String> = lib.runpath.iter().map(|e| expand(e, origin).display().to_string()).collect();
            parts.push(format!("RUNPATH {}", dirs.join(":")));
        }
        parts.push(if self.cache_read { "ld.so.cache".into() } else { "ld.so.cache (ldconfig -p unavailable)".into() });
        parts.push(DEFAULT_DIRS.join(", "));
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldconfig_output_keeps_x86_64_entries() {
        let text = "3 libs found in cache `/etc/ld.so.cache'\n\
                    \tlibz.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libz.so.1\n\
                    \tlibz.so.1 (libc6) => /lib/i386-linux-gnu/libz.so.1\n\
                    \tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda-12/lib64/libcudart.so.12\n";
        let entries = parse_ldconfig(text);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1], ("libcudart.so.12".into(), PathBuf::from("/usr/local/cuda-12/lib64/libcudart.so.12")));
    }

    #[test]
    fn search_order_origin_and_other_versions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b, origin) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("lib"));
        for d in [&a, &b, &origin] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(b.join("libfoo.so.2"), b"").expect("write");
        std::fs::write(origin.join("libfoo.so.2"), b"").expect("write");
        std::fs::write(a.join("libfoo.so.1"), b"").expect("write");
        let searcher = Searcher { ld_library_path: vec![a.clone(), b.clone()], ..Searcher::default() };
        let lib = Dynamic { runpath: vec!["$ORIGIN".into()], ..Dynamic::default() };
        let found = searcher.resolve("libfoo.so.2", &lib, &origin).expect("found");
        assert_eq!((found.path, found.via), (b.join("libfoo.so.2"), "LD_LIBRARY_PATH"));
        let alone = Searcher::default();
        let found = alone.resolve("libfoo.so.2", &lib, &origin).expect("found via RUNPATH");
        assert_eq!(found.via, "RUNPATH");
        assert_eq!(searcher.resolve("libfoo.so.3", &lib, &origin), None);
        let others = searcher.other_versions("libfoo.so.3", &lib, &origin);
        assert!(others.contains(&a.join("libfoo.so.1")) && others.contains(&b.join("libfoo.so.2")), "{others:?}");
        assert!(searcher.searched(&lib, &origin).contains("RUNPATH"));
    }
}
