//! Heap allocations on the Rust side per run, counted by a global allocator (a count, not a
//! timing, so it is asserted): a steady-state `IoBinding::run` (inputs and a preallocated output
//! bound once) makes none, and neither does `Session::run` (up to 8 inputs and 4 outputs), with
//! borrowed or owned input pairs (`cargo test -p onnxrt-benches --test alloc_count -- --nocapture`).
//!
//! ORT's own C++ allocations (its arena, its output tensors) do not go through Rust's allocator
//! and are not counted. Counts are per thread, so tests running beside these are not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use onnxrt_benches::{bound, cases, inputs, round_trip_once, session};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    // try_with: the allocator may be called while this thread's locals are being torn down.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: every method forwards to the system allocator unchanged; counting touches only a
// const-initialised thread-local Cell, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (alloc, alloc_zeroed, realloc) this thread makes inside `f`.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

const RUNS: u64 = 100;

#[test]
fn steady_state_io_binding_run_allocates_nothing() {
    for case in cases() {
        let mut binding = bound(&case).expect("bind");
        // Warm-up: first runs may initialise lazily (the API table is loaded already by `bound`).
        for _ in 0..3 {
            binding.run(None).expect("run");
        }
        let count = allocations_in(|| {
            for _ in 0..RUNS {
                binding.run(None).expect("run");
            }
        });
        println!("{}: IoBinding::run: {count} Rust heap allocations in {RUNS} runs", case.key);
        assert_eq!(count, 0, "{}: IoBinding::run allocated {count} times in {RUNS} runs", case.key);
    }
}

#[test]
fn session_run_allocates_nothing() {
    for case in cases() {
        let session = session(&case).expect("session");
        let values = inputs(&case).expect("inputs");
        let feeds: Vec<(&str, &onnxrt::Value<'_>)> = case.inputs.iter().copied().zip(values.iter()).collect();
        // The same inputs as owned names and values, passed by reference.
        let owned: Vec<(String, onnxrt::Value<'static>)> =
            case.inputs.iter().map(|name| name.to_string()).zip(inputs(&case).expect("inputs")).collect();
        for _ in 0..3 {
            drop(session.run(&feeds).expect("run"));
            drop(session.run(&owned).expect("run"));
        }
        for (form, feed) in [("&[(&str, &Value)]", 0), ("&Vec<(String, Value)>", 1)] {
            let count = allocations_in(|| {
                for _ in 0..RUNS {
                    let outputs = if feed == 0 { session.run(&feeds) } else { session.run(&owned) }.expect("run");
                    std::hint::black_box(&outputs);
                }
            });
            println!(
                "{}: Session::run({form}, {} input(s), 1 output): {} Rust heap allocations per run ({count} in {RUNS} runs)",
                case.key,
                case.inputs.len(),
                count as f64 / RUNS as f64
            );
            assert_eq!(count, 0, "{}: Session::run({form}) allocated {count} times in {RUNS} runs", case.key);
        }
    }
}

#[test]
fn round_trip_allocates_nothing() {
    for case in cases() {
        let session = session(&case).expect("session");
        let buffers: Vec<Vec<f32>> = case.inputs.iter().map(|_| vec![1.0f32; case.in_len()]).collect();
        let dims: Vec<usize> = case.in_shape.iter().map(|&d| d as usize).collect();
        let views: Vec<ndarray::ArrayViewD<'_, f32>> = buffers
            .iter()
            .map(|b| ndarray::ArrayViewD::from_shape(ndarray::IxDyn(&dims), b.as_slice()).expect("view"))
            .collect();
        // The output really is computed from the wrapped buffers (all ones).
        let first = round_trip_once(&session, case.inputs, &views, case.output).expect("round trip");
        let expected = match case.key {
            "add1" | "add1mb" => 2.0,
            "mul1" => 1.0, // 1 * W[0][0]
            "sigmoid" => 1.0 / (1.0 + (-1.0f32).exp()),
            _ => first, // the MLP's weights are the model's
        };
        assert!((first - expected).abs() < 1e-6, "{}: first output element {first}, expected {expected}", case.key);
        for _ in 0..3 {
            round_trip_once(&session, case.inputs, &views, case.output).expect("round trip");
        }
        let count = allocations_in(|| {
            for _ in 0..RUNS {
                round_trip_once(&session, case.inputs, &views, case.output).expect("round trip");
            }
        });
        println!(
            "{}: from_view + run + get + view + drop: {count} Rust heap allocations in {RUNS} round trips",
            case.key
        );
        assert_eq!(count, 0, "{}: the round trip allocated {count} times in {RUNS} runs", case.key);
    }
}

#[test]
fn counting_allocator_counts() {
    let count = allocations_in(|| {
        std::hint::black_box(vec![1u8; 10]);
    });
    assert_eq!(count, 1, "the counter sees this thread's allocations");
}
