//! The only code that prints `cargo:` lines. build.rs calls these; nothing else writes to stdout.
//! A failure is printed once, on stderr ([`failure`]): cargo shows that under its error.

use std::path::Path;

use crate::{Config, Provisioned, Source};

/// Prints what makes cargo re-run the build script.
pub fn rerun_lines(config: &Config) {
    for var in &config.vars_read {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // A changed archive file must re-run the build (the cache is keyed by hash, so this is cheap).
    if let Some(archive) = &config.archive {
        println!("cargo:rerun-if-changed={}", archive.display());
    }
}

/// Prints the build-log line naming the source, and the `links` metadata.
pub fn provisioned(p: &Provisioned) {
    let line = format!("onnxrt-sys: ONNX Runtime {} (`{}`) from {}", p.ort_version, p.dist, p.source);
    println!("{line}");
    // Cargo shows warnings in the console: say so when bytes were fetched or taken from outside the cache.
    if !matches!(p.source, Source::Cache { .. }) {
        println!("cargo:warning={line}");
    }
    for note in &p.notes {
        println!("cargo:warning=onnxrt-sys: {note}");
    }
    // A change to the library (a damaged or replaced cache file) must rerun this script, which
    // checks the entry against its record. Installed files carry an old fixed mtime, so the
    // install itself does not count as a change.
    println!("cargo:rerun-if-changed={}", p.library.display());
    // Read by dependents' build scripts as DEP_ONNXRUNTIME_LIB_DIR (the rpath helper below).
    println!("cargo:lib_dir={}", p.lib_dir.display());
    // Read by dependents that compile C against the same headers, as DEP_ONNXRUNTIME_INCLUDE_DIR.
    println!("cargo:include_dir={}", p.include_dir.display());
    // Read by dependents that gate on the runtime version, as DEP_ONNXRUNTIME_VERSION.
    println!("cargo:version={}", p.ort_version);
    // Read by `onnxrt` (DEP_ONNXRUNTIME_LIBRARY) to record where the verified library lives.
    println!("cargo:library={}", p.library.display());
    // Compiled into onnxrt-sys as the last place its loader looks.
    println!("cargo:rustc-env=ONNXRT_BUILD_LIBRARY={}", p.library.display());
    println!("cargo:rustc-env=ONNXRT_BUILD_VERSION={}", p.ort_version);
    println!("cargo:rustc-env=ONNXRT_BUILD_SOURCE={}", p.source);
    println!("cargo:rustc-env=ONNXRT_BUILD_DIST={}", p.dist);
}

/// A documentation-only build (docs.rs sets `DOCS_RS`): no runtime is provided, so the values
/// compiled into onnxrt-sys say so instead of naming a library.
pub fn documentation_only() {
    println!("cargo:rustc-env=ONNXRT_BUILD_LIBRARY=");
    println!("cargo:rustc-env=ONNXRT_BUILD_VERSION=");
    println!("cargo:rustc-env=ONNXRT_BUILD_DIST=");
    println!("cargo:rustc-env=ONNXRT_BUILD_SOURCE=none (a documentation-only build: DOCS_RS was set)");
}

/// Link mode: a NEEDED entry on the runtime and an rpath to its folder for this package's targets.
pub fn link(p: &Provisioned) {
    println!("cargo:rustc-link-search=native={}", p.lib_dir.display());
    let file = p.library.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    // Link the exact versioned file, so no unversioned symlink is needed and the NEEDED entry is its SONAME.
    println!("cargo:rustc-link-lib=dylib:+verbatim={file}");
    rpath(&p.lib_dir);
    // Read by dependents (DEP_ONNXRUNTIME_LINKED) to know they must add the rpath too.
    println!("cargo:linked=1");
}

/// For a downstream build.rs in link mode: bake the runtime's folder into this package's binaries.
///
/// Cargo passes a dependency's link arguments to nobody, so each package that builds a binary
/// and links the runtime calls this from its own build.rs (it needs `onnxrt-sys` as a direct
/// dependency to see `DEP_ONNXRUNTIME_*`):
///
/// ```no_run
/// // build.rs
/// // fn main() {
///     build_support::emit::rpath_for_dependent();
/// // }
/// ```
pub fn rpath_for_dependent() {
    println!("cargo:rerun-if-env-changed=DEP_ONNXRUNTIME_LIB_DIR");
    println!("cargo:rerun-if-env-changed=DEP_ONNXRUNTIME_LINKED");
    let linked = std::env::var("DEP_ONNXRUNTIME_LINKED").is_ok_and(|v| v == "1");
    if let (true, Ok(dir)) = (linked, std::env::var("DEP_ONNXRUNTIME_LIB_DIR")) {
        rpath(Path::new(&dir));
    }
}

fn rpath(dir: &Path) {
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
}

/// Prints a provisioning failure once, on stderr, then the caller exits non-zero. With the
/// configuration, a failure to get the distribution also says how to choose another one.
///
/// Stderr only: cargo prints a failing build script's stdout and stderr under its "failed to run
/// custom build command" error, and shows `cargo:warning` lines as well, so the same text on
/// stdout (a dump of `cargo:` lines) or as warnings would appear two or three times.
pub fn failure(error: &crate::Error, config: Option<&Config>) {
    let advice = config.filter(|_| crate::advice::applies(error)).map(crate::advice::choosing);
    let text = match advice {
        Some(advice) => format!("{error}\n{advice}"),
        None => error.to_string(),
    };
    eprintln!("error: onnxrt-sys could not provide ONNX Runtime:\n{text}");
}
