//! A cache that others can write, or that holds links planted by someone else, is refused, never
//! used silently: the cache root, `.tmp`, `.locks` and each entry must be owned
//! by the user running the build and not writable by group or others; an entry folder, a lock or
//! a temporary file that is a symlink is never followed. The tests run as root, so "another user"
//! is uid 65534 (nobody), set with chown; run as another user, the setups that need chown are
//! skipped (and say so), the others still run.

mod common;

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;

use build_support::{provision, Config};
use common::*;

const NOBODY: u32 = 65534;

fn chown(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).expect("chown in the test's own folder");
}

/// Whether this process may give files to another user (it runs as root).
fn can_chown(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(dir).is_ok_and(|m| m.uid() == 0)
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod in the test's own folder");
}

/// A configuration that installs the good archive from `ONNXRT_ARCHIVE` into `cache`.
fn from_archive(tmp: &Path, cache: &Path) -> (Config, String) {
    let archive = good_archive();
    let sha = sha256(&archive);
    let file = tmp.join(FILE_NAME);
    fs::write(&file, &archive).expect("writing the test archive");
    let mut config = config(manifest("https://unused.invalid/x.tgz", &sha, MAX_BYTES), cache);
    config.archive = Some(file);
    config.offline = Some("ONNXRT_OFFLINE=1".into());
    (config, sha)
}

/// Every path below `dir` (not following links), folders included, relative to it.
fn paths_below(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path.clone());
            }
            found.push(path.strip_prefix(dir).unwrap_or(&path).display().to_string());
        }
    }
    found.sort();
    found
}

#[test]
fn cache_parts_owned_or_writable_by_others_are_refused_with_the_fix() {
    // Each setup is one way a cache can be shared unsafely; each must be refused, naming the
    // folder and what to chmod/chown or which ONNXRT_CACHE_DIR to use, and nothing installed.
    type Setup = fn(&Path);
    let setups: [(&str, Setup, &str); 5] = [
        ("root owned by another user", |c| chown(c, NOBODY), "chown"),
        (
            "root at mode 1777 of another user",
            |c| {
                chmod(c, 0o1777);
                chown(c, NOBODY);
            },
            "chown",
        ),
        ("root writable by the group", |c| chmod(c, 0o775), "chmod go-w"),
        (
            "`.tmp` at 0777 of another user",
            |c| {
                fs::create_dir(c.join(".tmp")).expect("mkdir");
                chmod(&c.join(".tmp"), 0o777);
                chown(&c.join(".tmp"), NOBODY);
            },
            "chown",
        ),
        (
            "`.locks` at 0777",
            |c| {
                fs::create_dir(c.join(".locks")).expect("mkdir");
                chmod(&c.join(".locks"), 0o777);
            },
            "chmod go-w",
        ),
    ];
    let tmp = tempdir();
    let root = can_chown(tmp.path());
    let mut ran = 0;
    for (what, setup, fix) in setups {
        if fix == "chown" && !root {
            eprintln!("skipped (not root, cannot chown): {what}");
            continue;
        }
        ran += 1;
        let tmp = tempdir();
        let cache = tmp.path().join("cache");
        fs::create_dir(&cache).expect("mkdir cache");
        chmod(&cache, 0o755);
        setup(&cache);
        let (config, _sha) = from_archive(tmp.path(), &cache);
        let err = match provision(&config) {
            Ok(p) => panic!("{what}: the cache was used: {}", p.source),
            Err(err) => err,
        };
        let text = err.to_string();
        assert!(text.contains(fix) && text.contains("ONNXRT_CACHE_DIR"), "{what}: {text}");
        assert_eq!(cache_entries(&cache), Vec::<String>::new(), "{what}: something was installed");
    }
    assert!(ran >= 2, "the setups that need no chown always run");
}

#[test]
fn entry_folder_that_is_a_symlink_to_another_users_folder_is_refused() {
    // A complete, good entry made elsewhere (by "another user"), linked into our cache.
    let tmp = tempdir();
    let theirs = tmp.path().join("theirs");
    let (config, sha) = from_archive(tmp.path(), &theirs);
    provision(&config).expect("installing into the other cache");
    if can_chown(tmp.path()) {
        for path in paths_below(&theirs).iter().map(|p| theirs.join(p)).chain([theirs.clone()]) {
            chown(&path, NOBODY);
        }
    }
    let ours = tmp.path().join("ours");
    fs::create_dir(&ours).expect("mkdir");
    chmod(&ours, 0o755);
    symlink(theirs.join(&sha), ours.join(&sha)).expect("planting the entry link");
    let mut config = config.clone();
    config.cache_dir = ours.clone();
    config.archive = None;
    let err = match provision(&config) {
        Ok(p) => panic!("the linked entry was used: {}", p.source),
        Err(err) => err,
    };
    let text = err.to_string();
    assert!(text.contains("symbolic link") && text.contains(&ours.join(&sha).display().to_string()), "{text}");
}

#[test]
fn planted_symlinks_at_temp_names_are_not_followed() {
    // The temp names used to be `<key>-<pid>-<n>`: a symlink planted at every name this process
    // could use made the archive copy land outside the cache. Now names are random and files are
    // created with O_EXCL, so the links are never written through.
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(cache.join(".tmp")).expect("mkdir");
    fs::create_dir(&outside).expect("mkdir");
    chmod(&cache, 0o755);
    chmod(&cache.join(".tmp"), 0o755);
    let pid = std::process::id();
    for n in 0..256 {
        for key in [format!("{DIST}.archive"), format!("{DIST}.download")] {
            let victim = outside.join(format!("{key}-{n}"));
            symlink(&victim, cache.join(".tmp").join(format!("{key}-{pid}-{n}"))).expect("planting a link");
        }
    }
    let (config, sha) = from_archive(tmp.path(), &cache);
    let p = provision(&config).expect("the archive installs");
    assert_installed(&p, &cache, &sha);
    assert_eq!(paths_below(&outside), Vec::<String>::new(), "written through a planted link");
}

#[test]
fn planted_symlink_at_the_lock_file_is_refused_and_not_followed() {
    let tmp = tempdir();
    let cache = tmp.path().join("cache");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(cache.join(".locks")).expect("mkdir");
    fs::create_dir(&outside).expect("mkdir");
    chmod(&cache, 0o755);
    chmod(&cache.join(".locks"), 0o755);
    let lock = cache.join(".locks").join(format!("{DIST}.lock"));
    symlink(outside.join("created-through-the-lock"), &lock).expect("planting the lock link");
    let (config, _sha) = from_archive(tmp.path(), &cache);
    let result = provision(&config);
    assert_eq!(paths_below(&outside), Vec::<String>::new(), "a file was created through the lock link");
    let err = match result {
        Ok(p) => panic!("provisioned through a planted lock link: {}", p.source),
        Err(err) => err,
    };
    let text = err.to_string();
    assert!(text.contains("symbolic link") && text.contains(&lock.display().to_string()), "{text}");
}
