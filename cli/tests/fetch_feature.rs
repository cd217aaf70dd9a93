//! Built without the `fetch` feature (the default), `onnxrt fetch` and `onnxrt bundle --dist`
//! say how to get it, after checking the distribution's name.
#![cfg(not(feature = "fetch"))]

mod common;

use common::onnxrt_with;

#[test]
fn provisioning_without_the_feature_says_how_to_install_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    for args in [
        vec!["fetch", "cpu-1.16.2-registry"],
        vec!["bundle", "/bin/true", out.to_str().expect("utf-8"), "--dist", "cpu-1.16.2"],
    ] {
        let ran = onnxrt_with(&args);
        assert_eq!(ran.code, Some(1), "{args:?}: {}", ran.both());
        assert!(ran.stderr.contains("cargo install onnxrt-cli --features fetch"), "{args:?}: {}", ran.both());
    }
    assert!(!out.exists());
    let ran = onnxrt_with(&["fetch", "nonsense"]);
    assert_eq!(ran.code, Some(1), "{}", ran.both());
    assert!(ran.stderr.contains("no distribution named `nonsense`"), "{}", ran.both());
}
