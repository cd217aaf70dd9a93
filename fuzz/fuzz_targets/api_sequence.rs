//! Sequences of public API calls (sessions with options, values of every kind, runs, bindings,
//! async runs, custom ops that fail in every way, drops in any order) on the CPU runtime: each
//! call returns `Ok` or `Err`; no crash, no sanitizer report, no wrong checked result. The
//! interpreter is `fuzz/api_sequence/` (shared with the corpus replay in the tests crate).
//!
//! Prints the inputs run and public API calls made, every 2^k inputs from 1024 on, and at exit.
#![no_main]

#[path = "../api_sequence/mod.rs"]
mod api_sequence;

use std::sync::Once;

use libfuzzer_sys::fuzz_target;

fn report() {
    eprintln!(
        "api_sequence: {} inputs, {} API calls; known issue-25 holes seen: item 1 {}, item 3 {}",
        api_sequence::programs(),
        api_sequence::calls(),
        api_sequence::KNOWN_ITEM_1.load(std::sync::atomic::Ordering::Relaxed),
        api_sequence::KNOWN_ITEM_3.load(std::sync::atomic::Ordering::Relaxed),
    );
}

extern "C" fn report_at_exit() {
    report();
}

extern "C" {
    fn atexit(f: extern "C" fn()) -> i32;
}

fuzz_target!(|data: &[u8]| {
    static START: Once = Once::new();
    START.call_once(|| {
        api_sequence::install_panic_filter();
        // SAFETY: registers a plain function with no captured state; libFuzzer exits through exit().
        unsafe { atexit(report_at_exit) };
    });
    api_sequence::run_input(data);
    let n = api_sequence::programs();
    if n >= 1024 && n.is_power_of_two() {
        report();
    }
});
