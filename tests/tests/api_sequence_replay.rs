//! Replays the committed corpus of the `api_sequence` fuzz target (`fuzz/corpus/api_sequence/`)
//! through the same interpreter (`fuzz/api_sequence/`), compiled here without AddressSanitizer:
//! every sequence of public API calls in it runs to the end with no crash, no unexpected panic
//! and no wrong checked result. The fuzzing itself (ASan, millions of calls) is
//! tools/reliability/fuzz.sh; this is its cheap replay in `cargo test`.

#[path = "../../fuzz/api_sequence/mod.rs"]
#[allow(dead_code)]
mod api_sequence;

use std::path::PathBuf;

#[test]
fn the_committed_api_sequence_corpus_replays_clean() {
    api_sequence::install_panic_filter();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/api_sequence");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).expect("the corpus folder").map(|e| e.expect("a corpus entry").path()).collect();
    files.sort();
    assert!(files.len() >= 20, "{} inputs in {}", files.len(), dir.display());
    for file in &files {
        api_sequence::run_input(&std::fs::read(file).expect("a corpus input"));
    }
    // The corpus is no pile of empty programs: on average each input makes dozens of calls.
    let calls = api_sequence::calls();
    println!("{} inputs, {calls} public API calls", files.len());
    assert!(calls >= 20 * files.len() as u64, "{calls} calls from {} inputs", files.len());
}
