//! `onnxrt bundle --force` replaces only a folder that is a bundle (holds `bundle-manifest.json`),
//! and the bundle is built in a fresh folder of random name, never through a link.

mod common;

use std::path::Path;

use common::onnxrt_with;

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("listing a test folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn force_leaves_a_folder_that_is_not_a_bundle_alone() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let out = scratch.path().join("precious");
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("notes.txt"), "not a bundle\n").expect("write");
    let cli = env!("CARGO_BIN_EXE_onnxrt");
    let ran = onnxrt_with(&["bundle", cli, out.to_str().expect("utf-8"), "--force"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("not a bundle") && ran.stderr.contains("bundle-manifest.json"), "{}", ran.both());
    assert_eq!(names(&out), ["notes.txt"], "the folder was changed");
    assert_eq!(names(scratch.path()), ["precious"], "work left behind");

    // A bundle is replaced with --force, and nothing else is left beside it.
    let bundle = scratch.path().join("deploy");
    let ran = onnxrt_with(&["bundle", cli, bundle.to_str().expect("utf-8")]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    let ran = onnxrt_with(&["bundle", cli, bundle.to_str().expect("utf-8"), "--force"]);
    assert_eq!(ran.code, Some(0), "{}", ran.both());
    assert!(bundle.join("bundle-manifest.json").is_file());
    assert_eq!(names(scratch.path()), ["deploy", "precious"], "work left behind");
}

#[test]
fn an_out_dir_that_is_a_symlink_is_refused() {
    let scratch = tempfile::tempdir().expect("tempdir");
    let elsewhere = scratch.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let out = scratch.path().join("deploy");
    std::os::unix::fs::symlink(&elsewhere, &out).expect("planting the link");
    let cli = env!("CARGO_BIN_EXE_onnxrt");
    for force in [false, true] {
        let mut args = vec!["bundle", cli, out.to_str().expect("utf-8")];
        if force {
            args.push("--force");
        }
        let ran = onnxrt_with(&args);
        assert_eq!(ran.code, Some(1), "{}", ran.both());
        assert!(ran.stderr.contains("symbolic link"), "{}", ran.both());
        assert!(std::fs::symlink_metadata(&out).expect("the link").file_type().is_symlink());
        assert_eq!(names(&elsewhere), Vec::<String>::new(), "written through the link");
    }
}
