//! Every `ONNXRT_*` variable, read in one place.
//!
//! | variable | effect |
//! |---|---|
//! | `ONNXRT_LIB_DIR` | use an installed runtime (its `lib` folder); bytes not verified, version checked; absolute (compiled in) |
//! | `ONNXRT_INCLUDE_DIR` | headers for `ONNXRT_LIB_DIR` (default: `../include` beside it); absolute |
//! | `ONNXRT_ARCHIVE` | a local copy of the archive (air-gapped delivery), verified like a download |
//! | `ONNXRT_ARCHIVE_SHA256` | your pin for a distribution the manifest leaves unpinned |
//! | `ONNXRT_CACHE_DIR` | cache folder (default `$XDG_CACHE_HOME/onnxrt` or `~/.cache/onnxrt`); must be absolute (a relative one is refused: the build script runs in the package's folder, the program later elsewhere), and a relative `XDG_CACHE_HOME` is ignored, as the XDG specification says |
//! | `ONNXRT_MIRROR` | base URL that serves the same file names as the official release |
//! | `ONNXRT_OFFLINE=1` (or `CARGO_NET_OFFLINE=true`) | never download |
//! | `ONNXRT_DIST` | which manifest entry (default: the manifest's `default`) |
//! | `ONNXRT_DOWNLOAD_TIMEOUT` | seconds of too little progress before a download attempt fails (default 60): waiting this long for the next bytes of the body or for a whole response head fails, and so does an attempt that receives less than 64 KiB (or the rest of the body) in any such window |
//! | `ONNXRT_DOWNLOAD_DEADLINE` | seconds one download attempt may take in all, however it progresses: connecting, redirects, headers and body (default 1800). A download makes at most 3 attempts, so it ends within 3 × this plus under a second of pauses: 90 minutes by default |
//! | `https_proxy`/`HTTPS_PROXY`, `http_proxy`, `all_proxy`/`ALL_PROXY`, `no_proxy`/`NO_PROXY` | the proxy of downloads, as curl reads them (lower case first, no upper-case `HTTP_PROXY`; http:// proxies only; see [`Proxies`]); the build log names the proxy used. The bytes are verified against the pin as always, so a proxy can make a download fail, never supply other bytes |
//! | `ONNXRT_ALLOW_HTTP=1` | allow plain-http URLs (mirrors on a trusted network, tests); https is required otherwise, and an https URL never redirects to http |
//! | `ONNXRT_VERIFY=1` | re-hash every file of the cache entry on every build (default: sizes every build, hashes when a build first uses the entry or a file's mtime changed) |
//!
//! A control character in any of these is refused: paths and URLs reach `cargo:` lines.
//!
//! ORT's own `ORT_*` variables (used by the `ort` crate) are deliberately not read: a shell set up
//! for another crate must not silently redirect this build.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::manifest::Manifest;

/// Everything that decides where the runtime comes from.
#[derive(Debug, Clone)]
pub struct Config {
    /// The pinned distributions.
    pub manifest: Manifest,
    /// Name of the distribution to provide.
    pub dist: String,
    /// An existing install's library folder.
    pub lib_dir: Option<PathBuf>,
    /// Headers for `lib_dir`.
    pub include_dir: Option<PathBuf>,
    /// A local archive to verify and install.
    pub archive: Option<PathBuf>,
    /// The user's pin for an unpinned distribution.
    pub archive_sha256: Option<String>,
    /// The cache folder.
    pub cache_dir: PathBuf,
    /// Base URL replacing the manifest URL's folder.
    pub mirror: Option<String>,
    /// Why downloads are forbidden, if they are.
    pub offline: Option<String>,
    /// The progress window of a download: no read may wait longer, and each window must bring
    /// [`crate::download::MIN_PROGRESS`] bytes (or the rest of the body).
    pub stall_timeout: Duration,
    /// The longest one download attempt may take.
    pub deadline: Duration,
    /// Whether plain-http URLs are allowed.
    pub allow_http: bool,
    /// Re-hash the cache entry's files on every run.
    pub verify: bool,
    /// Folder where a build remembers that it hashed a cache entry (the build script's OUT_DIR).
    pub stamp_dir: Option<PathBuf>,
    /// Attempts per download (network errors and 5xx are retried, nothing else).
    pub attempts: u32,
    /// The proxies of downloads (none unless read from the environment).
    pub proxies: Proxies,
    /// Names of the variables read, for `cargo:rerun-if-env-changed`.
    pub vars_read: Vec<&'static str>,
    /// Told about a download's progress (`None`: nobody). In a build script [`Config::from_env`]
    /// sets a log on stderr; `onnxrt fetch` sets its progress bar.
    pub progress: Option<crate::Reporter>,
    /// Test-only: see [`Hooks`].
    #[doc(hidden)]
    pub hooks: Hooks,
}

/// Test-only callbacks that make races deterministic (the regression tests of a file swapped
/// between its hash and its use). Never set outside tests; nothing in the crate sets them.
#[doc(hidden)]
#[derive(Clone, Default)]
pub struct Hooks {
    /// Called with the path of a file whose sha256 was just checked, before anything reads it again.
    pub verified: Option<PathHook>,
}

/// A test-only callback given a path.
#[doc(hidden)]
pub type PathHook = Arc<dyn Fn(&Path) + Send + Sync>;

impl Hooks {
    /// Runs [`Hooks::verified`], if set.
    pub(crate) fn verified(&self, path: &Path) {
        if let Some(hook) = &self.verified {
            hook(path)
        }
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.verified.is_some() { "Hooks(verified)" } else { "Hooks(none)" })
    }
}

struct EnvReader {
    read: Vec<&'static str>,
}

impl EnvReader {
    /// The single place that reads the environment; it remembers what it read.
    fn var(&mut self, name: &'static str) -> Option<String> {
        self.read.push(name);
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    /// [`EnvReader::var`], refusing control characters: paths and URLs read here reach `cargo:`
    /// lines (and logs), where a newline would start a directive of its own.
    fn value(&mut self, name: &'static str) -> Result<Option<String>> {
        match self.var(name) {
            Some(value) if value.chars().any(char::is_control) => Err(Error::BadVariable {
                var: name,
                why: "holds a control character (a newline, tab, escape...), which would end the `cargo:` line it is printed on and start another directive; remove it".into(),
                value: value.escape_debug().to_string(),
            }),
            other => Ok(other),
        }
    }

    /// An absolute path from `name`: a relative one is refused, because the path is compiled into
    /// the binary (or its rpath) and would be resolved against whatever folder the program runs in.
    fn absolute(&mut self, name: &'static str) -> Result<Option<PathBuf>> {
        match self.value(name)? {
            Some(value) if !Path::new(&value).is_absolute() => Err(Error::BadVariable {
                var: name,
                value,
                why: "is a relative path; it would be compiled in as given and resolved against the folder the \
                      program later runs in (cargo runs the build script in the package's own folder), so give an absolute path"
                    .into(),
            }),
            other => Ok(other.map(PathBuf::from)),
        }
    }
}

impl Config {
    /// Reads the configuration from the environment and the built-in manifest.
    pub fn from_env() -> Result<Config> {
        Config::from_env_with(Manifest::builtin()?)
    }

    /// Reads the configuration from the environment, with a given manifest.
    pub fn from_env_with(manifest: Manifest) -> Result<Config> {
        let mut env = EnvReader { read: Vec::new() };
        let dist = env.var("ONNXRT_DIST").unwrap_or_else(|| manifest.default.clone());
        manifest.dist(&dist)?;
        let archive_sha256 = match env.var("ONNXRT_ARCHIVE_SHA256") {
            Some(v) if crate::manifest::is_sha256(&v.to_ascii_lowercase()) => Some(v.to_ascii_lowercase()),
            Some(v) => {
                return Err(Error::BadVariable {
                    var: "ONNXRT_ARCHIVE_SHA256",
                    value: v,
                    why: "expected 64 hex digits".into(),
                })
            }
            None => None,
        };
        let offline = match (env.var("ONNXRT_OFFLINE"), env.var("CARGO_NET_OFFLINE")) {
            (Some(v), _) if v != "0" => Some(format!("ONNXRT_OFFLINE={v}")),
            (_, Some(v)) if v == "true" || v == "1" => Some(format!("CARGO_NET_OFFLINE={v}")),
            _ => None,
        };
        let stall_timeout = seconds(&mut env, "ONNXRT_DOWNLOAD_TIMEOUT", 60)?;
        let deadline = seconds(&mut env, "ONNXRT_DOWNLOAD_DEADLINE", 1800)?;
        let allow_http = flag(&mut env, "ONNXRT_ALLOW_HTTP");
        let verify = flag(&mut env, "ONNXRT_VERIFY");
        let cache_dir = cache_dir(&mut env)?;
        let proxies = Proxies::from_env(&mut env)?;
        // Compiled in (rpath, the recorded library, the include path): absolute only.
        let lib_dir = env.absolute("ONNXRT_LIB_DIR")?;
        let include_dir = env.absolute("ONNXRT_INCLUDE_DIR")?;
        // Copied into the cache, so a relative path (against the package's folder) is harmless;
        // it still reaches a `cargo:rerun-if-changed` line.
        let archive = env.value("ONNXRT_ARCHIVE")?.map(PathBuf::from);
        let mirror = env.value("ONNXRT_MIRROR")?;
        Ok(Config {
            lib_dir,
            include_dir,
            archive,
            mirror,
            manifest,
            dist,
            archive_sha256,
            cache_dir,
            offline,
            stall_timeout,
            deadline,
            allow_http,
            verify,
            // Set by cargo for build scripts only; not a user setting, so not a rerun trigger.
            stamp_dir: std::env::var_os("OUT_DIR").map(PathBuf::from),
            attempts: 3,
            proxies,
            vars_read: env.read,
            progress: std::env::var_os("OUT_DIR").map(|_| crate::Reporter::log("onnxrt-sys build")),
            hooks: Hooks::default(),
        })
    }

    /// A configuration that reads nothing from the environment (for tests and tools).
    pub fn new(manifest: Manifest, dist: &str, cache_dir: PathBuf) -> Result<Config> {
        manifest.dist(dist)?;
        Ok(Config {
            manifest,
            dist: dist.to_owned(),
            lib_dir: None,
            include_dir: None,
            archive: None,
            archive_sha256: None,
            cache_dir,
            mirror: None,
            offline: None,
            stall_timeout: Duration::from_secs(60),
            deadline: Duration::from_secs(1800),
            allow_http: false,
            verify: false,
            stamp_dir: None,
            attempts: 3,
            proxies: Proxies::default(),
            vars_read: Vec::new(),
            progress: None,
            hooks: Hooks::default(),
        })
    }
}

/// The cache folder: `ONNXRT_CACHE_DIR`, else `$XDG_CACHE_HOME/onnxrt`, else `~/.cache/onnxrt`.
/// Only an absolute path is accepted: the folder is compiled into the binary, whose loader would
/// resolve a relative one against whatever folder the program later runs in. A relative
/// `ONNXRT_CACHE_DIR` or `HOME` is refused; a relative `XDG_CACHE_HOME` is ignored (the XDG
/// specification says to), so the default under `HOME` is used.
fn cache_dir(env: &mut EnvReader) -> Result<PathBuf> {
    let relative = |var: &'static str, value: String| Error::BadVariable {
        var,
        value,
        why: "is a relative path; the cache's folder is compiled into the binary, and cargo runs the build script \
              in the package's own folder, so give an absolute path"
            .into(),
    };
    if let Some(dir) = env.value("ONNXRT_CACHE_DIR")? {
        return if Path::new(&dir).is_absolute() {
            Ok(PathBuf::from(dir))
        } else {
            Err(relative("ONNXRT_CACHE_DIR", dir))
        };
    }
    if let Some(xdg) = env.value("XDG_CACHE_HOME")?.filter(|x| Path::new(x).is_absolute()) {
        return Ok(PathBuf::from(xdg).join("onnxrt"));
    }
    match env.value("HOME")? {
        Some(home) if Path::new(&home).is_absolute() => Ok(PathBuf::from(home).join(".cache").join("onnxrt")),
        Some(home) => Err(relative("HOME", home)),
        None => Err(Error::BadVariable {
            var: "HOME",
            value: String::new(),
            why: "unset, so there is no default cache; set ONNXRT_CACHE_DIR".into(),
        }),
    }
}

/// The proxies of downloads, read as curl reads them: `https_proxy` for https URLs, `http_proxy`
/// for http ones, `all_proxy` for either when that is unset (each in lower case first, then upper
/// case, except `HTTP_PROXY`, which curl ignores too), none for a host that `no_proxy` names (`*` for all; a name matches
/// itself and its subdomains, a leading dot is ignored, a `:port` suffix is ignored; an IP
/// address matches only itself, CIDR ranges are not read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Proxies {
    /// For https URLs: the proxy and the variable it came from.
    pub https: Option<(String, &'static str)>,
    /// For http URLs.
    pub http: Option<(String, &'static str)>,
    /// For either, where the scheme's own is unset.
    pub all: Option<(String, &'static str)>,
    /// Hosts reached directly.
    pub no_proxy: Vec<String>,
}

impl Proxies {
    fn from_env(env: &mut EnvReader) -> Result<Proxies> {
        // `upper` is `None` for `http_proxy`: curl ignores `HTTP_PROXY`, which a CGI program
        // receives from a request's `Proxy:` header ("httpoxy"), and so does this.
        let mut one = |lower: &'static str, upper: Option<&'static str>| -> Result<Option<(String, &'static str)>> {
            let found = match env.value(lower)? {
                Some(v) => Some((v, lower)),
                None => match upper {
                    Some(upper) => env.value(upper)?.map(|v| (v, upper)),
                    None => None,
                },
            };
            if let Some((value, var)) = found.clone() {
                let lower_value = value.to_ascii_lowercase();
                if lower_value.starts_with("socks") {
                    let why = "is a SOCKS proxy, which downloads here cannot use; name an HTTP proxy".into();
                    return Err(Error::BadVariable { var, value: shown_url(&value), why });
                }
                if lower_value.starts_with("https://") {
                    let why = "is an https:// proxy (TLS to the proxy itself), which downloads here cannot use: only \
                               http:// proxies are supported (an https download still goes through one as a CONNECT tunnel, \
                               so the archive's bytes stay encrypted end to end); write the proxy as http://host:port"
                        .into();
                    return Err(Error::BadVariable { var, value: shown_url(&value), why });
                }
                if let Err(e) = ureq::Proxy::new(&value) {
                    let why = format!("is not a proxy URL: {e}");
                    return Err(Error::BadVariable { var, value: shown_url(&value), why });
                }
            }
            Ok(found)
        };
        let https = one("https_proxy", Some("HTTPS_PROXY"))?;
        let http = one("http_proxy", None)?;
        let all = one("all_proxy", Some("ALL_PROXY"))?;
        let no_proxy = env
            .value("no_proxy")?
            .or(env.value("NO_PROXY")?)
            .map(|v| {
                v.split([',', ' ', '\t'])
                    .map(|h| h.trim().trim_start_matches('.').to_ascii_lowercase())
                    .filter(|h| !h.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Ok(Proxies { https, http, all, no_proxy })
    }

    /// The proxy for `url` and the variable that named it, or `None` to connect directly.
    pub fn for_url(&self, url: &str) -> Option<&(String, &'static str)> {
        let (scheme, rest) = url.split_once("://")?;
        let own = match scheme.to_ascii_lowercase().as_str() {
            "https" => self.https.as_ref(),
            "http" => self.http.as_ref(),
            _ => None,
        };
        let proxy = own.or(self.all.as_ref())?;
        let host = host_of(rest);
        let bypassed = self.no_proxy.iter().any(|entry| {
            let entry = strip_port(entry);
            entry == "*" || host == entry || host.ends_with(&format!(".{entry}"))
        });
        (!bypassed).then_some(proxy)
    }
}

/// The host of `authority/path...`, lower case, without user, port or IPv6 brackets.
fn host_of(rest: &str) -> String {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    strip_port(host_port).to_ascii_lowercase()
}

/// `host` without a `:port` suffix and without IPv6 brackets.
fn strip_port(host: &str) -> &str {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.split(']').next().unwrap_or(inner);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

/// A proxy URL as the log shows it: without a password.
pub fn shown_proxy(proxy: &str) -> String {
    match proxy.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('@') {
            Some((_, host)) => format!("{scheme}://***@{host}"),
            None => proxy.to_owned(),
        },
        None => match proxy.split_once('@') {
            Some((_, host)) => format!("***@{host}"),
            None => proxy.to_owned(),
        },
    }
}

/// A URL as logs, errors and the recorded build source show it: without its user and password
/// (`https://***@host/...`), as [`shown_proxy`] shows a proxy. Also masks every URL inside a
/// longer text (an HTTP client's error message quotes the URL it failed on).
pub fn shown_url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        out.push_str(&rest[..at + 3]);
        rest = &rest[at + 3..];
        let end = rest.find(|c: char| "/?#\"'<>()[]".contains(c) || c.is_whitespace()).unwrap_or(rest.len());
        // `[` starts an IPv6 host: the authority runs on to the path.
        let end = if rest[..end].is_empty() { rest.find(['/', '?', '#']).unwrap_or(rest.len()) } else { end };
        match rest[..end].rfind('@') {
            Some(user_end) => {
                out.push_str("***");
                out.push_str(&rest[user_end..end]);
            }
            None => out.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The most seconds `ONNXRT_DOWNLOAD_TIMEOUT` and `ONNXRT_DOWNLOAD_DEADLINE` accept: a week, far
/// beyond any download, and far below what would overflow a clock (`Instant + Duration`).
pub const MAX_SECONDS: u64 = 7 * 24 * 3600;

/// A whole number of seconds, from 1 to [`MAX_SECONDS`], from `var`, else `default`.
fn seconds(env: &mut EnvReader, var: &'static str, default: u64) -> Result<Duration> {
    match env.value(var)? {
        Some(v) => match v.parse::<u64>() {
            Ok(n) if (1..=MAX_SECONDS).contains(&n) => Ok(Duration::from_secs(n)),
            _ => Err(Error::BadVariable {
                var,
                value: v,
                why: format!("expected a whole number of seconds from 1 to {MAX_SECONDS} (a week)"),
            }),
        },
        None => Ok(Duration::from_secs(default)),
    }
}

/// Whether `var` is set to something other than `0`.
fn flag(env: &mut EnvReader, var: &'static str) -> bool {
    env.var(var).is_some_and(|v| v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(no_proxy: &[&str]) -> Proxies {
        Proxies {
            https: Some(("http://proxy.example:3128".into(), "https_proxy")),
            http: None,
            all: Some(("http://all.example:1080".into(), "ALL_PROXY")),
            no_proxy: no_proxy.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    #[test]
    fn the_proxy_follows_the_scheme_then_all_proxy_and_no_proxy_bypasses() {
        let p = proxies(&["internal.example", "10.0.0.1", "mirror.example:8443"]);
        assert_eq!(p.for_url("https://github.com/x.tgz").map(|x| x.1), Some("https_proxy"));
        assert_eq!(p.for_url("http://mirror.local/x.tgz").map(|x| x.1), Some("ALL_PROXY"));
        assert_eq!(p.for_url("https://files.internal.example/x.tgz"), None);
        assert_eq!(p.for_url("https://internal.example:443/x.tgz"), None);
        assert_eq!(p.for_url("https://user@10.0.0.1/x.tgz"), None);
        assert_eq!(p.for_url("https://mirror.example/x.tgz"), None);
        assert!(p.for_url("https://notinternal.example/x.tgz").is_some());
        assert_eq!(proxies(&["*"]).for_url("https://github.com/x.tgz"), None);
        assert_eq!(Proxies::default().for_url("https://github.com/x.tgz"), None);
        assert_eq!(shown_proxy("http://user:secret@proxy:3128"), "http://***@proxy:3128");
        assert_eq!(shown_url("http://user:pw@host:81/a/b@c?x=@"), "http://***@host:81/a/b@c?x=@");
        assert_eq!(shown_url("https://host/a@b"), "https://host/a@b");
        assert_eq!(shown_url("/tmp/a@b/x.tgz"), "/tmp/a@b/x.tgz");
        assert_eq!(
            shown_url("http://u:p@h:1/x: Connection Failed (via http://v:q@proxy:3128)"),
            "http://***@h:1/x: Connection Failed (via http://***@proxy:3128)"
        );
    }
}
