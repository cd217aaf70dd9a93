//! Provisioning in a hostile or careless environment: folders, settings and files that another
//! account can plant or a user can get wrong, each refused or survived, through `onnxrt-dist` or
//! the library (the labels H1-L4 name the test functions below).
//!
//! - H1: a cache below a folder others can write (no sticky bit) is refused;
//! - H2: a relative `ONNXRT_LIB_DIR` / `ONNXRT_INCLUDE_DIR` is refused;
//! - H3: a file the build writes into `OUT_DIR` replaces a planted link, never writes through it;
//! - H4: a control character in a path or URL that reaches a `cargo:` line is refused;
//! - H5: the user and password of an `ONNXRT_MIRROR` URL are never printed or recorded;
//! - H6: a download deadline too large for the clock is refused, not a panic;
//! - H7: `onnxrt-dist` with a closed stderr does not panic;
//! - H8: an empty folder planted in an entry is damage;
//! - L1: an https:// proxy is refused saying that only http:// proxies are supported;
//! - L2: upper-case `HTTP_PROXY` is ignored, as curl ignores it;
//! - L3: `onnxrt-dist pack` refuses an output inside the cache;
//! - L4: `.tmp` or `.locks` a link is refused on a warm entry too.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use build_support::{provision, Error, Source};
use common::*;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `onnxrt-dist ARGS` in `cwd` with only `env`, the test-only distribution delivered as a local
/// archive (`ONNXRT_ARCHIVE`) with its pin. Returns the output and the archive's sha256.
fn dist_with_archive(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> (Output, String) {
    let archive = tgz_owned(&unpinned_entries());
    let sha = sha256(&archive);
    let file = cwd.join(UNPINNED_FILE);
    std::fs::write(&file, &archive).expect("writing the archive");
    let output = Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("ONNXRT_ARCHIVE", &file)
        .env("ONNXRT_ARCHIVE_SHA256", &sha)
        .envs(env.iter().copied())
        .output()
        .expect("running onnxrt-dist");
    (output, sha)
}

/// `onnxrt-dist fetch` of the test-only distribution from the local archive.
fn fetch(cwd: &Path, env: &[(&str, &str)]) -> (Output, String) {
    dist_with_archive(cwd, &["fetch", UNPINNED_DIST], env)
}

/// `onnxrt-dist fetch` of the test-only distribution with no archive: it downloads.
fn fetch_downloading(cwd: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
        .args(["fetch", UNPINNED_DIST])
        .current_dir(cwd)
        .env_clear()
        .env("ONNXRT_ARCHIVE_SHA256", "0".repeat(64))
        .envs(env.iter().copied())
        .output()
        .expect("running onnxrt-dist")
}

/// A loopback port nobody listens on (bound, then released).
fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a port");
    listener.local_addr().expect("its address").port()
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn h1_a_cache_below_a_folder_others_can_write_is_refused_unless_it_is_sticky() {
    let tmp = tempdir();
    let public = tmp.path().join("pub");
    std::fs::create_dir(&public).expect("creating pub");
    let cache = public.join("cache");
    let env = [("ONNXRT_CACHE_DIR", text(&cache))];

    // The control: under a folder only we can write, the cache is made and used.
    let (made, _) = fetch(tmp.path(), &env);
    assert!(made.status.success(), "{}", stderr(&made));

    // Anyone can write pub, which is not sticky: they could rename the cache away and plant one.
    set_mode(&public, 0o777);
    let (refused, _) = fetch(tmp.path(), &env);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let message = stderr(&refused);
    assert!(message.contains(text(&public)) && message.contains("not sticky"), "{message}");
    assert!(message.contains("renamed away"), "{message}");

    // A fresh cache there is refused as well (nothing is created in it).
    let fresh = public.join("fresh");
    let (refused, _) = fetch(tmp.path(), &[("ONNXRT_CACHE_DIR", text(&fresh))]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));

    // Group-writable, likewise; sticky (as /tmp is), fine.
    set_mode(&public, 0o775);
    let (refused, _) = fetch(tmp.path(), &env);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    set_mode(&public, 0o1777);
    let (sticky, _) = fetch(tmp.path(), &env);
    assert!(sticky.status.success(), "{}", stderr(&sticky));
}

#[test]
fn h2_relative_lib_and_include_folders_are_refused() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    for (env, var) in [
        (vec![("ONNXRT_LIB_DIR", "lib")], "ONNXRT_LIB_DIR"),
        (vec![("ONNXRT_LIB_DIR", text(tmp.path())), ("ONNXRT_INCLUDE_DIR", "include")], "ONNXRT_INCLUDE_DIR"),
    ] {
        let mut env = env;
        env.push(("ONNXRT_CACHE_DIR", text(&cache)));
        let (refused, _) = fetch(tmp.path(), &env);
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        let message = stderr(&refused);
        assert!(message.contains(var) && message.contains("relative path"), "{message}");
    }
}

#[test]
fn h3_a_file_written_into_out_dir_replaces_a_planted_link() {
    let tmp = tempdir();
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).expect("OUT_DIR");
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"someone else's file\n").expect("writing the victim");
    std::os::unix::fs::symlink(&victim, out_dir.join("bindings.rs")).expect("planting a link");

    build_support::replace_file(&out_dir, "bindings.rs", b"// bindings\n").expect("writing bindings.rs");
    assert_eq!(std::fs::read(&victim).expect("victim"), b"someone else's file\n", "written through the link");
    let written = out_dir.join("bindings.rs");
    assert!(std::fs::symlink_metadata(&written).expect("bindings.rs").is_file(), "a file of its own");
    assert_eq!(std::fs::read(&written).expect("bindings.rs"), b"// bindings\n");
    let left: Vec<_> = std::fs::read_dir(&out_dir).expect("OUT_DIR").flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "no temporary file is left: {left:?}");
}

#[test]
fn h4_a_control_character_in_a_path_or_url_is_refused() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let injected = format!("{}\ncargo:rustc-link-arg=-Wl,-rpath,/tmp/evil", text(&cache));
    let mirror = "https://mirror.example/\ncargo:rustc-env=X=1";
    let tab = format!("{}\tx", text(&cache));
    for (var, value) in [("ONNXRT_CACHE_DIR", injected.as_str()), ("ONNXRT_CACHE_DIR", tab.as_str())] {
        let (refused, _) = fetch(tmp.path(), &[(var, value)]);
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        let message = stderr(&refused);
        assert!(message.contains(var) && message.contains("control character"), "{message}");
        assert!(!message.lines().any(|l| l.starts_with("cargo:")), "{message}");
    }
    let (refused, _) = fetch(tmp.path(), &[("ONNXRT_CACHE_DIR", text(&cache)), ("ONNXRT_MIRROR", mirror)]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("ONNXRT_MIRROR"), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("control character"), "{}", stderr(&refused));
}

#[test]
fn h5_the_mirror_credentials_are_never_printed_or_recorded() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mirror = format!("http://user:secretpw@127.0.0.1:{}/ort/", refused_port());
    let failed = fetch_downloading(
        tmp.path(),
        &[("ONNXRT_CACHE_DIR", text(&cache)), ("ONNXRT_MIRROR", &mirror), ("ONNXRT_ALLOW_HTTP", "1")],
    );
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    let message = stderr(&failed);
    assert!(message.contains("http://***@127.0.0.1:"), "{message}");
    assert!(!message.contains("secretpw") && !message.contains("user:"), "{message}");

    // What the build records (ONNXRT_BUILD_SOURCE) and logs is the source's text.
    let source = Source::Download {
        url: "https://user:secretpw@mirror.example/ort/x.tgz".into(),
        final_url: "https://user:secretpw@files.example/x.tgz".into(),
    };
    let shown = source.to_string();
    assert!(!shown.contains("secretpw") && shown.contains("https://***@files.example/x.tgz"), "{shown}");
    let insecure =
        Error::Insecure { url: "http://a:pw1@b/x".into(), from: Some("https://c:pw2@d/x".into()), why: "downgrade" };
    assert!(!insecure.to_string().contains("pw1") && !insecure.to_string().contains("pw2"), "{insecure}");
}

#[test]
fn h6_a_deadline_too_large_for_the_clock_is_refused_not_a_panic() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let mirror = format!("http://127.0.0.1:{}/ort/", refused_port());
    for var in ["ONNXRT_DOWNLOAD_DEADLINE", "ONNXRT_DOWNLOAD_TIMEOUT"] {
        let output = fetch_downloading(
            tmp.path(),
            &[
                ("ONNXRT_CACHE_DIR", text(&cache)),
                ("ONNXRT_MIRROR", &mirror),
                ("ONNXRT_ALLOW_HTTP", "1"),
                (var, "9223372036854775807"),
            ],
        );
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert!(stderr(&output).contains(var) && !stderr(&output).contains("panicked"), "{}", stderr(&output));
    }

    // The library itself, given such a deadline, ends in an error, not a panic.
    let limits = build_support::download::Limits {
        max_bytes: 1000,
        stall_timeout: std::time::Duration::from_secs(5),
        deadline: std::time::Duration::MAX,
        attempts: 1,
        allow_http: true,
        proxies: Default::default(),
    };
    let mut file = tempfile::tempfile().expect("a work file");
    let url = format!("http://127.0.0.1:{}/x.tgz", refused_port());
    assert!(build_support::download::download(&url, &mut file, limits).is_err());
}

#[test]
fn h7_onnxrt_dist_with_a_closed_stderr_does_not_panic() {
    for args in [&[][..], &["pinned", "no-such-distribution"][..]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_onnxrt-dist"))
            .args(args)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("running onnxrt-dist");
        // The reading end closed before anything is written: every write to stderr is EPIPE.
        drop(child.stderr.take());
        let status = child.wait().expect("waiting");
        assert!(matches!(status.code(), Some(1 | 2)), "{args:?}: {status} (101 is a panic)");
    }
}

#[test]
fn h8_an_empty_folder_planted_in_an_entry_is_damage() {
    let tmp = tempdir();
    let archive = good_archive();
    let sha = sha256(&archive);
    let cache = tmp.path().join("cache");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    provision(&config).expect("the pinned archive installs");
    let mut offline = config.clone();
    offline.archive = None;
    offline.offline = Some("ONNXRT_OFFLINE=1".into());
    provision(&offline).expect("the control: the untouched entry is used");

    let entry = cache.join(&sha);
    for planted in [PathBuf::from("extra"), Path::new(ROOT).join("include/sys"), Path::new(ROOT).join("lib/.d")] {
        std::fs::create_dir(entry.join(&planted)).expect("planting a folder");
        match provision(&offline).expect_err("an empty planted folder is damage") {
            Error::DamagedEntry { file, why, .. } => {
                assert!(Path::new(&file) == planted && why.contains("folder"), "{file}: {why}")
            }
            other => panic!("expected a damaged entry, got {other}"),
        }
        std::fs::remove_dir(entry.join(&planted)).expect("removing it");
    }
    provision(&offline).expect("the entry is whole again");
}

#[test]
fn l1_an_https_proxy_is_refused_saying_only_http_proxies_are_supported() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    for var in ["https_proxy", "HTTPS_PROXY", "all_proxy"] {
        let (refused, _) =
            fetch(tmp.path(), &[("ONNXRT_CACHE_DIR", text(&cache)), (var, "https://u:pw@proxy.example:3128")]);
        assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
        let message = stderr(&refused);
        assert!(message.contains(var) && message.contains("only http:// proxies are supported"), "{message}");
        assert!(!message.contains(":pw@"), "{message}");
    }
}

#[test]
fn l2_upper_case_http_proxy_is_ignored_as_curl_ignores_it() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    // A value every proxy variable refuses: read, it fails the build; ignored, nothing happens.
    let (control, _) = fetch(tmp.path(), &[("ONNXRT_CACHE_DIR", text(&cache)), ("http_proxy", "socks5://p:1080")]);
    assert_eq!(control.status.code(), Some(1), "the lower-case variable is read: {}", stderr(&control));
    let (ignored, _) = fetch(tmp.path(), &[("ONNXRT_CACHE_DIR", text(&cache)), ("HTTP_PROXY", "socks5://p:1080")]);
    assert!(ignored.status.success(), "HTTP_PROXY is ignored: {}", stderr(&ignored));
}

#[test]
fn l3_pack_refuses_an_output_inside_the_cache() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let env = [("ONNXRT_CACHE_DIR", text(&cache))];
    let (made, sha) = fetch(tmp.path(), &env);
    assert!(made.status.success(), "{}", stderr(&made));
    let entry = cache.join(&sha);
    for out in [entry.join(UNPINNED_ROOT).join("lib/x.tgz"), entry.join("x.tgz"), cache.join("x.tgz")] {
        let (refused, _) = dist_with_archive(tmp.path(), &["pack", UNPINNED_DIST, text(&out)], &env);
        assert_eq!(refused.status.code(), Some(1), "{}: {}", out.display(), stderr(&refused));
        assert!(stderr(&refused).contains("inside"), "{}", stderr(&refused));
        assert!(!out.exists(), "{} was written", out.display());
    }
    // The control: outside the cache it packs, and a link planted where the old code put its
    // work file (`x.tgz.partial`) is not written through.
    let out = tmp.path().join("x.tgz");
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"someone else's file\n").expect("writing the victim");
    std::os::unix::fs::symlink(&victim, out.with_extension("tgz.partial")).expect("planting a link");
    let (packed, _) = dist_with_archive(tmp.path(), &["pack", UNPINNED_DIST, text(&out)], &env);
    assert!(packed.status.success() && out.is_file(), "{}", stderr(&packed));
    assert_eq!(std::fs::read(&victim).expect("victim"), b"someone else's file\n", "written through the link");
}

#[test]
fn l4_a_link_at_tmp_or_locks_is_refused_on_a_warm_entry() {
    // As a build script meets it: its stamp in OUT_DIR says the entry was hashed, so a warm
    // build checks sizes only and takes no lock.
    let tmp = tempdir();
    let archive = good_archive();
    let sha = sha256(&archive);
    let cache = tmp.path().join("cache");
    let out_dir = tmp.path().join("out");
    std::fs::create_dir(&out_dir).expect("OUT_DIR");
    let file = tmp.path().join(FILE_NAME);
    std::fs::write(&file, &archive).expect("writing the archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), &cache);
    config.archive = Some(file);
    config.stamp_dir = Some(out_dir);
    provision(&config).expect("the pinned archive installs");
    config.archive = None;
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    provision(&config).expect("the control: a warm build");

    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("another folder");
    for private in [".tmp", ".locks"] {
        let path = cache.join(private);
        let aside = tmp.path().join("aside");
        std::fs::rename(&path, &aside).expect("moving it aside");
        std::os::unix::fs::symlink(&elsewhere, &path).expect("planting a link");
        match provision(&config).expect_err("a link at .tmp or .locks") {
            Error::UnsafeCache { path: refused, why, .. } => {
                assert!(refused == path && why.contains("symbolic link"), "{}: {why}", refused.display())
            }
            other => panic!("{private}: expected an unsafe cache, got {other}"),
        }
        std::fs::remove_file(&path).expect("removing the link");
        std::fs::rename(&aside, &path).expect("putting it back");
    }
    provision(&config).expect("a warm build again");
}
