//! The bindings checked in as `src/bindings.rs` (used where libclang cannot be loaded) are exactly
//! what bindgen generates from the headers of the distribution they were made from. This build
//! generated its own into OUT_DIR when libclang was there; the two must be byte-identical.
//! `ONNXRT_REQUIRE_BINDGEN=1` (set by `tools/dev.sh test`) makes a build without libclang fail here
//! instead of skipping. The comparison runs on a build of `cpu-1.32.0-registry` (tools/dev.sh's
//! `newest` stage); other distributions' headers declare other C API versions, so their builds use
//! the checked-in copy.

use std::path::Path;

/// The distribution whose headers `src/bindings.rs` was generated from.
const HEADERS_OF: &str = "cpu-1.32.0-registry";

#[test]
fn checked_in_bindings_equal_a_fresh_bindgen_run() {
    let required = std::env::var_os("ONNXRT_REQUIRE_BINDGEN").is_some_and(|v| v == "1");
    if onnxrt_sys::BINDINGS == "checked-in" {
        assert!(!required, "ONNXRT_REQUIRE_BINDGEN=1, but this build found no libclang: install libclang");
        eprintln!("skipped: no libclang, bindings `{}` for `{}`", onnxrt_sys::BINDINGS, onnxrt_sys::BUILD_DIST);
        return;
    }
    if onnxrt_sys::BUILD_DIST != HEADERS_OF {
        eprintln!(
            "skipped: bindings `{}` for `{}`; the comparison needs a build with ONNXRT_DIST={HEADERS_OF}",
            onnxrt_sys::BINDINGS,
            onnxrt_sys::BUILD_DIST
        );
        return;
    }
    assert_eq!(onnxrt_sys::BINDINGS, "bindgen", "the {HEADERS_OF} headers must go through bindgen");
    let fresh_path = Path::new(env!("OUT_DIR")).join("bindings.rs");
    let checked_in_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bindings.rs");
    let fresh = std::fs::read_to_string(&fresh_path).expect("reading the generated bindings");
    let checked_in = std::fs::read_to_string(&checked_in_path).expect("reading the checked-in bindings");
    if fresh != checked_in {
        let line = fresh
            .lines()
            .zip(checked_in.lines())
            .position(|(a, b)| a != b)
            .map_or(fresh.lines().count().min(checked_in.lines().count()) + 1, |i| i + 1);
        panic!(
            "src/bindings.rs differs from bindgen's output (first at line {line}); if the change is \
             intended: cp {} {}",
            fresh_path.display(),
            checked_in_path.display()
        );
    }
}
