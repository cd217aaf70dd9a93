//! `onnxrt-dist`: provisioning from the command line, with the build's own code and variables.
//!
//! ```text
//! onnxrt-dist fetch [DIST]            resolve like the build (env, cache, download); print the lib dir
//! onnxrt-dist assemble DIST [DIR]     assemble a registry distribution (DIR keeps the registry files)
//! onnxrt-dist pack DIST OUT.tgz       pack a provisioned distribution as an archive; print its sha256
//! onnxrt-dist env [DIST]              print ONNXRT_LIB_DIR/ONNXRT_INCLUDE_DIR lines for a shell
//! onnxrt-dist pinned [DIST]           exit 0 if the distribution can be verified (manifest or user pin)
//! onnxrt-dist verify [DIST]           re-hash every file of the cache entry against its record, and
//!                                     the record against the manifest's file pins where it has them
//!                                     (a damaged entry is replaced where the build could replace it)
//! onnxrt-dist verify [DIST] --archive FILE
//!                                     re-derive the entry's files from FILE (verified against the
//!                                     pin) and compare; for entries pinned only by their archive
//! onnxrt-dist reachable [DIST]        exit 0 if its URL (or ONNXRT_MIRROR) answers a HEAD within 10 s
//! ```
//! Exit status: 0 done, 1 provisioning failed (the message says what to do), 2 usage.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use build_support::{assemble, provision, Config, Provisioned};

/// `println!` that never panics: a closed stdout (`| head`) ends the output, not the program.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `eprintln!` that never panics: a closed stderr (`2>&1 >/dev/null | head`) loses the message,
/// nothing else.
macro_rules! say_err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match words.as_slice() {
        ["fetch"] => config(None).and_then(|c| provision(&c)).map(report),
        ["fetch", dist] => config(Some(dist)).and_then(|c| provision(&c)).map(report),
        ["assemble", dist] => config(Some(dist)).and_then(|c| {
            let downloads = c.cache_dir.join(assemble::DOWNLOADS);
            assemble::assemble(&c, &downloads).and_then(|p| report_assembled(&c, p))
        }),
        ["assemble", dist, dir] => config(Some(dist))
            .and_then(|c| assemble::assemble(&c, &PathBuf::from(dir)).and_then(|p| report_assembled(&c, p))),
        ["pack", dist, out] => config(Some(dist)).and_then(|c| {
            let out = PathBuf::from(out);
            // Checked before and after provisioning (which may create the cache).
            build_support::pack::refuse_inside(&out, &c.cache_dir, "the cache, where entries are verified")?;
            let p = provision(&c)?;
            build_support::pack::refuse_inside(&out, &c.cache_dir, "the cache, where entries are verified")?;
            let sha = build_support::pack::pack(&p, &out)?;
            let out = out.display();
            say!("{sha}  {out}");
            Ok(())
        }),
        ["verify"] => config(None).and_then(verify).map(report),
        ["verify", dist] => config(Some(dist)).and_then(verify).map(report),
        ["verify", "--archive", file] => config(None).and_then(|c| against(&c, file)).map(report),
        ["verify", dist, "--archive", file] | ["verify", "--archive", file, dist] => {
            config(Some(dist)).and_then(|c| against(&c, file)).map(report)
        }
        ["pinned"] => config(None).and_then(pinned),
        ["pinned", dist] => config(Some(dist)).and_then(pinned),
        ["reachable"] => config(None).and_then(reachable),
        ["reachable", dist] => config(Some(dist)).and_then(reachable),
        ["env"] => config(None).and_then(|c| provision(&c)).map(shell_env),
        ["env", dist] => config(Some(dist)).and_then(|c| provision(&c)).map(shell_env),
        _ => {
            say_err!("usage: onnxrt-dist fetch [DIST] | assemble DIST [DIR] | pack DIST OUT.tgz | env [DIST] | pinned [DIST] | verify [DIST] [--archive FILE] | reachable [DIST]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            say_err!("onnxrt-dist: {error}");
            if let Some(config) = config(words.get(1).copied()).ok().filter(|_| build_support::advice::applies(&error))
            {
                say_err!("{}", build_support::advice::choosing(&config));
            }
            ExitCode::from(1)
        }
    }
}

fn config(dist: Option<&str>) -> build_support::Result<Config> {
    let mut config = Config::from_env()?;
    if let Some(dist) = dist {
        config.manifest.dist(dist)?;
        dist.clone_into(&mut config.dist);
    }
    Ok(config)
}

/// Whether a build of this distribution can verify what it fetches.
fn pinned(config: Config) -> build_support::Result<()> {
    let dist = config.manifest.dist(&config.dist)?;
    let pinned = dist.kind == build_support::DistKind::Registry
        || dist.pinned_sha256().is_some()
        || config.archive_sha256.is_some();
    say!("{}: {}", dist.name, if pinned { "pinned" } else { "not pinned" });
    if pinned {
        Ok(())
    } else {
        Err(build_support::Error::Unpinned { dist: dist.name.clone(), computed: "(not fetched yet)".into() })
    }
}

/// Provisions with every cache file re-hashed, whatever the build last checked.
fn verify(mut config: Config) -> build_support::Result<Provisioned> {
    config.verify = true;
    provision(&config)
}

/// Compares the cache entry with the files of the archive it was installed from.
fn against(config: &Config, archive: &str) -> build_support::Result<Provisioned> {
    build_support::rederive::verify_against_archive(config, &PathBuf::from(archive))
}

/// A quick look (one HEAD, short timeouts) before committing to a download that could hang on a
/// machine whose firewall drops packets instead of refusing them. Archive distributions only.
fn reachable(config: Config) -> build_support::Result<()> {
    let dist = config.manifest.dist(&config.dist)?;
    let url = build_support::url(&config, dist);
    if dist.kind == build_support::DistKind::Registry || url.is_empty() {
        say!("{}: assembled from package registries, nothing to probe", dist.name);
        return Ok(());
    }
    let quick = Duration::from_secs(10);
    let mut builder = ureq::AgentBuilder::new().timeout_connect(quick).timeout(quick);
    // Through the same proxy a download would use.
    if let Some(proxy) = config.proxies.for_url(&url).and_then(|(p, _)| ureq::Proxy::new(p).ok()) {
        builder = builder.proxy(proxy);
    }
    let agent = builder.build();
    match agent.head(&url).call() {
        Ok(response) => {
            say!("{}: HTTP {}", build_support::config::shown_url(&url), response.status());
            Ok(())
        }
        Err(ureq::Error::Status(status, _)) => Err(build_support::Error::HttpStatus { url, status }),
        Err(error) => Err(build_support::Error::Download { url, attempts: 1, why: error.to_string() }),
    }
}

fn report(p: Provisioned) {
    for note in &p.notes {
        say_err!("onnxrt-dist: {note}");
    }
    say_err!("onnxrt-dist: ONNX Runtime {} (`{}`) from {}", p.ort_version, p.dist, p.source);
    say!("{}", p.lib_dir.display());
}

/// As [`report`], but a plugin bundle is named as one (the runtimes it loads into), with its
/// library and the environment its device needs (`plugin_setup`).
fn report_assembled(config: &Config, p: Provisioned) -> build_support::Result<()> {
    let dist = config.manifest.dist(&p.dist)?;
    if !dist.plugin {
        report(p);
        return Ok(());
    }
    for note in &p.notes {
        say_err!("onnxrt-dist: {note}");
    }
    say_err!(
        "onnxrt-dist: plugin bundle `{}` (a plugin provider for ONNX Runtime >= {}, not a runtime) from {}",
        p.dist,
        dist.ort_version,
        p.source
    );
    let root = build_support::plugin_setup::bundle_root(dist, &p.library);
    say_err!("onnxrt-dist: register {} (Environment::register_pinned_provider_library)", p.library.display());
    let environment = build_support::plugin_setup::environment(&config.cache_dir, dist, &root)?;
    if !environment.is_empty() {
        say_err!("onnxrt-dist: for its library and device, set in the program's environment before it starts:");
        for (name, value) in &environment {
            say_err!("export {name}={value}");
        }
    }
    say!("{}", p.lib_dir.display());
    Ok(())
}

fn shell_env(p: Provisioned) {
    say!("export ONNXRT_LIB_DIR={}", p.lib_dir.display());
    say!("export ONNXRT_INCLUDE_DIR={}", p.include_dir.display());
}
