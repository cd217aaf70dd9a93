//! The one error type of provisioning. Every message ends with what to do about it.

use std::path::PathBuf;

use crate::config::shown_url;

/// Why a distribution could not be provided.
// The fields are named for what they hold and shown in the message; documenting each again adds nothing.
#[allow(missing_docs)]
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The manifest could not be read or is inconsistent.
    #[error("vendor-manifest.toml: {0}")]
    Manifest(String),

    /// `ONNXRT_DIST` (or the manifest default) names no distribution.
    #[error(
        "no distribution named `{name}` in vendor-manifest.toml; known: {known:?}. Set ONNXRT_DIST to one of them"
    )]
    UnknownDist { name: String, known: Vec<String> },

    /// An environment variable holds a value we cannot use.
    #[error("{var}={value:?}: {why}")]
    BadVariable { var: &'static str, value: String, why: String },

    /// The manifest has no sha256 for this source and the user gave none: fail closed.
    #[error(
        "`{dist}` has no pinned sha256, so its bytes cannot be trusted (nothing was installed).\n\
         The file that was fetched hashes to:\n    {computed}\n\
         If you trust that file (compare it with the publisher's checksum), pin it with\n    \
         export ONNXRT_ARCHIVE_SHA256={computed}\n\
         or write it as `sha256` of `{dist}` in vendor-manifest.toml"
    )]
    Unpinned { dist: String, computed: String },

    /// The bytes do not match the pinned hash; `note` says what became of the file and what to do.
    #[error("sha256 mismatch for {}: expected {expected}, got {actual}. {note}", shown_url(what))]
    HashMismatch { what: String, expected: String, actual: String, note: String },

    /// The file is not the pinned size; nothing was installed from it.
    #[error(
        "size mismatch for {}: the pin says {expected} bytes, got {actual}. Nothing was installed from it; \
         it is truncated, padded or not the pinned release. Fetch it again, or check ONNXRT_MIRROR / ONNXRT_ARCHIVE",
        shown_url(what)
    )]
    SizeMismatch { what: String, expected: u64, actual: u64 },

    /// `ONNXRT_ARCHIVE_SHA256` disagrees with the manifest's pin.
    #[error("ONNXRT_ARCHIVE_SHA256={given} contradicts the manifest's pin {pinned} for `{dist}`; unset it or fix the manifest")]
    PinConflict { dist: String, given: String, pinned: String },

    /// The download failed after the allowed retries.
    #[error("downloading {} failed after {attempts} attempt(s): {}. Check the network or proxy, set ONNXRT_MIRROR to a reachable copy, or deliver the archive by hand with ONNXRT_ARCHIVE=/path/to/file", shown_url(url), shown_url(why))]
    Download { url: String, attempts: u32, why: String },

    /// The server answered with an HTTP error.
    #[error("{} answered HTTP {status}. Check the URL (ONNXRT_MIRROR?) or deliver the archive with ONNXRT_ARCHIVE=/path/to/file", shown_url(url))]
    HttpStatus { url: String, status: u16 },

    /// The body ended before the announced length.
    #[error(
        "{}: the body ended after {got} of {expected} bytes (truncated download); nothing was installed, try again",
        shown_url(url)
    )]
    Truncated { url: String, got: u64, expected: u64 },

    /// The body is larger than the manifest allows.
    #[error(
        "{} is larger than the {cap}-byte cap of the manifest; refusing it (wrong file or hostile server)",
        shown_url(what)
    )]
    TooLarge { what: String, cap: u64 },

    /// A URL (or a redirect to it) that would fetch without https.
    #[error("refusing to fetch {}{}: {why}", shown_url(url), from.as_ref().map(|f| format!(" (redirected from {})", shown_url(f))).unwrap_or_default())]
    Insecure { url: String, from: Option<String>, why: &'static str },

    /// A cache entry no longer holds what was installed, and the build cannot reinstall it.
    #[error("the cache entry {entry} is damaged: {file} {why}. Nothing in it was used. {remedy}")]
    DamagedEntry { entry: PathBuf, file: String, why: String, remedy: String },

    /// What an archive or the registry files unpacked to is not what the manifest pins.
    #[error(
        "`{dist}`: {file} {why}. Nothing was installed. The archive or registry files unpacked to other files \
         than vendor-manifest.toml pins: fetch them again (delete the cache's registry-files folder), \
         or correct the manifest's `files`"
    )]
    NotAsPinned { dist: String, file: String, why: String },

    /// `onnxrt-dist verify --archive` found no entry to compare the archive with.
    #[error(
        "`{dist}` has no complete entry {entry} to verify against {archive}; install it from that archive with \
         ONNXRT_ARCHIVE={archive} onnxrt-dist fetch {dist}"
    )]
    NoEntry { dist: String, entry: PathBuf, archive: PathBuf },
    /// A folder or file of the cache that someone else could have planted or can change.
    #[error("refusing the cache: {path} {why}. Nothing in the cache was used. {fix}")]
    UnsafeCache { path: PathBuf, why: String, fix: String },

    /// Nothing in the cache and downloads are forbidden.
    #[error(
        "offline ({reason}) and `{dist}` is not in the cache {cache}. Either allow the download (unset ONNXRT_OFFLINE / CARGO_NET_OFFLINE), \
         deliver the archive with ONNXRT_ARCHIVE=/path/to/{file}, or point ONNXRT_LIB_DIR at an installed runtime"
    )]
    Offline { dist: String, reason: String, cache: PathBuf, file: String },

    /// A registry-assembled distribution has not been assembled yet.
    #[error(
        "`{dist}` is assembled from package registries and is not in the cache {cache}, and downloads are off ({reason}). \
         Allow them (the build then assembles it itself with npm, pip or apt-get), or run `onnxrt fetch {dist}` \
         (the onnxrt-cli crate) on a connected machine and copy its cache folder here"
    )]
    NotAssembled { dist: String, cache: PathBuf, reason: String },

    /// The archive contains an entry we refuse to extract.
    #[error("refusing archive entry `{entry}`: {why}. The archive is malformed or hostile; nothing was installed")]
    UnsafeEntry { entry: String, why: &'static str },

    /// The archive is not a gzip'd tar or is damaged (`what`: "the archive" or the entry).
    #[error("cannot read {what}: {why}; nothing was installed")]
    Corrupt { what: String, why: String },

    /// After extraction an expected file is missing.
    #[error("the distribution `{dist}` lacks {missing} (looked in {root}); the archive is not the one the manifest describes")]
    MissingFile { dist: String, missing: String, root: PathBuf },

    /// `ONNXRT_LIB_DIR` does not contain a runtime.
    #[error(
        "ONNXRT_LIB_DIR={dir} holds no libonnxruntime.so*; point it at the `lib` folder of an ONNX Runtime install"
    )]
    NoLibrary { dir: PathBuf },

    /// No C API header where one was expected.
    #[error("no onnxruntime_c_api.h in {tried:?}; set ONNXRT_INCLUDE_DIR to the folder that holds it")]
    NoHeaders { tried: Vec<PathBuf> },

    /// The runtime could not be loaded to read its version.
    #[error("cannot load {path} to check its version: {why}")]
    Probe { path: PathBuf, why: String },

    /// The runtime is older than the C API this crate needs.
    #[error("{path} is ONNX Runtime {found}, older than {required} (C API {api}); use ONNX Runtime 1.16 or newer")]
    TooOld { path: PathBuf, found: String, required: String, api: u32 },

    /// An output file (`onnxrt-dist pack`) would be written inside the cache or the folder packed.
    #[error(
        "refusing to write {out}: it is inside {inside}, {what}; write it to a folder outside (nothing was written)"
    )]
    OutputInside { out: PathBuf, inside: PathBuf, what: &'static str },

    /// A registry client (npm, pip, apt-get) failed.
    #[error("`{command}` failed: {why}")]
    Tool { command: String, why: String },

    /// An I/O error, with what we were doing.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let context = context.into();
        move |source| Error::Io { context, source }
    }
}

/// The same text as `Display`, so a `main` or build script returning `Result<_, Error>` prints
/// the message and its fix rather than the variant's fields.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// Shorthand used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn debug_is_the_message() {
        let err = Error::UnknownDist { name: "gpu-9".into(), known: vec!["cpu-1.16.2-registry".into()] };
        assert_eq!(format!("{err:?}"), err.to_string());
        assert!(format!("{err:?}").contains("Set ONNXRT_DIST"), "{err:?}");
    }
}
