//! `Allocator::stats` (C API 23) on the real runtime: on ORT >= 1.23 a session's CPU arena reports
//! its use, which grows when a tensor is made from it; on 1.16.2 it is refused with
//! `Error::NeedsNewerRuntime`.

use onnxrt::{Error, MemoryInfo, Session};
use onnxrt_tests::model;

#[test]
fn a_cpu_arena_reports_its_use() {
    let session = Session::builder().cpu_arena(true).commit_from_file(model("mlp.onnx")).expect("session");
    let allocator = session.allocator(&MemoryInfo::cpu().expect("cpu info")).expect("allocator");
    let before = allocator.stats();
    if onnxrt::runtime_info().expect("runtime").api_level < 23 {
        assert!(matches!(before, Err(Error::NeedsNewerRuntime { needs: 23, .. })), "{before:?}");
        return;
    }
    let before = before.expect("stats");
    let tensor = allocator.tensor::<f32>(&[256, 256]).expect("tensor");
    let after = allocator.stats().expect("stats");
    let number = |stats: &std::collections::BTreeMap<String, String>, key: &str| -> u64 {
        stats.get(key).unwrap_or_else(|| panic!("no {key} in {stats:?}")).parse().expect("a number")
    };
    assert!(number(&after, "NumAllocs") > number(&before, "NumAllocs"), "{before:?} -> {after:?}");
    assert!(number(&after, "InUse") >= number(&before, "InUse") + 256 * 256 * 4, "{before:?} -> {after:?}");
    drop(tensor);
}

/// An allocator without statistics (the CPU allocator without its arena) reports none: an empty
/// map on ORT 1.32, as the docs say.
#[test]
fn an_allocator_without_an_arena_reports_no_statistics() {
    let session = Session::builder().cpu_arena(false).commit_from_file(model("mlp.onnx")).expect("session");
    let allocator = session.allocator(&MemoryInfo::cpu().expect("cpu info")).expect("allocator");
    let stats = allocator.stats();
    if onnxrt::runtime_info().expect("runtime").api_level < 23 {
        assert!(matches!(stats, Err(Error::NeedsNewerRuntime { needs: 23, .. })), "{stats:?}");
        return;
    }
    assert!(stats.expect("stats").is_empty());
}
