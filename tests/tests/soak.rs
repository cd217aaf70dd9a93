//! Soak tests: many concurrent runs on one session stay bit-identical, and creating and dropping
//! sessions and values in a loop (error paths included) does not grow the process's resident
//! memory.
//!
//! Memory is read from `VmRSS` in `/proc/self/status` after a warm-up (ORT and the allocator reach
//! their steady state: kernel registries, arenas, thread-local caches) and again at the end. The
//! bound is deliberately generous (30 MB); the figures printed are what docs/testing.md reports.
//! The tests take a lock so that one test's allocations never show in another's figures.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

use ndarray::Array2;
use onnxrt::{Session, Value};
use onnxrt_tests::{builder, mlp_input, model, session};

/// Growth allowed between the warm-up and the end of a loop, in kB.
const RSS_BOUND_KB: i64 = 30 * 1024;

/// Serializes the tests of this file (RSS is per process).
fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The process's resident set size in kB (`VmRSS` of `/proc/self/status`).
fn rss_kb() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).expect("VmRSS in kB")
}

fn mlp_bits(session: &Session, x: &Value<'_>) -> Vec<u32> {
    let outputs = session.run(&[("x", x)]).expect("mlp runs");
    outputs[0].view::<f32>().expect("f32 logits").iter().map(|v| v.to_bits()).collect()
}

fn report(what: &str, iterations: usize, warm_at: usize, warm: i64, end: i64, started: Instant) {
    println!(
        "SOAK {what}: {iterations} iterations in {:.1} s; VmRSS {warm} kB after {warm_at}, {end} kB at the end: growth {} kB",
        started.elapsed().as_secs_f64(),
        end - warm
    );
    assert!(end - warm < RSS_BOUND_KB, "{what}: VmRSS grew by {} kB (bound {RSS_BOUND_KB} kB)", end - warm);
}

#[test]
fn eight_threads_times_1000_runs_are_bit_identical() {
    const THREADS: usize = 8;
    const RUNS: usize = 1000;
    let _serial = exclusive();
    let session = Arc::new(session("mlp.onnx"));
    let x = Arc::new(Value::from_array(mlp_input()).expect("x"));
    // The reference: one thread, before any concurrency.
    let reference = Arc::new(mlp_bits(&session, &x));
    assert_eq!(reference.len(), 8, "batch 2 × 4 logits");

    let started = Instant::now();
    let start = Arc::new(Barrier::new(THREADS));
    let mismatches = Arc::new(AtomicUsize::new(0));
    let runs = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (session, x, reference) = (Arc::clone(&session), Arc::clone(&x), Arc::clone(&reference));
            let (start, mismatches, runs) = (Arc::clone(&start), Arc::clone(&mismatches), Arc::clone(&runs));
            thread::spawn(move || {
                start.wait();
                for run in 0..RUNS {
                    // Odd threads build their own input each time; even threads share one.
                    let bits = if t % 2 == 0 {
                        mlp_bits(&session, &x)
                    } else {
                        mlp_bits(&session, &Value::from_array(mlp_input()).expect("x"))
                    };
                    if bits != *reference {
                        mismatches.fetch_add(1, Ordering::Relaxed);
                        eprintln!("thread {t}, run {run}: {bits:08x?} differs from {reference:08x?}");
                    }
                    runs.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("a worker thread panicked");
    }
    let (runs, mismatches) = (runs.load(Ordering::Relaxed), mismatches.load(Ordering::Relaxed));
    println!(
        "SOAK threads: {THREADS} threads × {RUNS} runs = {runs} runs in {:.1} s, {mismatches} outputs differ from the single-threaded reference",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(runs, THREADS * RUNS);
    assert_eq!(mismatches, 0);
}

#[test]
fn creating_running_and_dropping_sessions_does_not_leak() {
    const ITERATIONS: usize = 300;
    const WARM_UP: usize = 50;
    let _serial = exclusive();
    let path = model("mlp.onnx");
    let x = Value::from_array(mlp_input()).expect("x");
    let reference = mlp_bits(&session("mlp.onnx"), &x);
    let bytes = std::fs::read(&path).expect("mlp.onnx");
    let truncated = std::fs::read(model("bad_truncated.onnx")).expect("bad_truncated.onnx");
    let wrong = Value::from_vec(&[2, 15], vec![0.0f32; 30]).expect("wrong shape");
    let started = Instant::now();
    let mut warm = 0;
    for i in 1..=ITERATIONS {
        // From the file and from memory in turn.
        let s = if i % 2 == 0 {
            builder().commit_from_file(&path).expect("mlp.onnx loads")
        } else {
            builder().commit_from_memory(&bytes).expect("mlp.onnx loads from memory")
        };
        assert_eq!(mlp_bits(&s, &x), reference, "iteration {i}");
        // The error paths too: a model ORT refuses, an input refused in Rust, an ORT status
        // from a run (a binding with nothing bound).
        assert!(builder().commit_from_memory(&truncated).is_err());
        assert!(s.run(&[("x", &wrong)]).is_err());
        assert!(s.io_binding().expect("binding").run(None).is_err());
        drop(s);
        if i == WARM_UP {
            warm = rss_kb();
        }
    }
    report("sessions", ITERATIONS, WARM_UP, warm, rss_kb(), started);
}

#[test]
fn creating_and_dropping_values_does_not_leak() {
    const ITERATIONS: usize = 100_000;
    const WARM_UP: usize = 10_000;
    let _serial = exclusive();
    let backing = Array2::<f32>::from_elem((4, 16), 0.5);
    let started = Instant::now();
    let mut warm = 0;
    for i in 1..=ITERATIONS {
        // Every constructor, and a read, in turn.
        match i % 5 {
            0 => {
                let v = Value::from_vec(&[2, 16], vec![i as f32; 32]).expect("from_vec");
                assert_eq!(v.view::<f32>().expect("view")[[1, 15]], i as f32);
            }
            1 => {
                let v = Value::from_array(mlp_input()).expect("from_array");
                assert_eq!(v.tensor_info().expect("info").shape, [2, 16]);
            }
            2 => {
                let v = Value::from_view(backing.view()).expect("from_view");
                assert_eq!(v.to_array::<f32>().expect("to_array").len(), 64);
            }
            3 => {
                let v = Value::from_strings(&[3], &["alpha", "beta", "a somewhat longer string, past SSO"])
                    .expect("from_strings");
                assert_eq!(v.strings().expect("strings").len(), 3);
            }
            _ => {
                let members = vec![
                    Value::from_vec(&[2], vec![1i64, 2]).expect("member"),
                    Value::from_vec(&[1], vec![3i64]).expect("member"),
                ];
                let seq = Value::sequence(members).expect("sequence");
                assert_eq!(seq.sequence_items().expect("items").len(), 2);
            }
        }
        // Refused constructions free what they made.
        if i % 100 == 0 {
            assert!(Value::from_strings(&[2], &["fine", "n\0l"]).is_err());
            assert!(
                Value::sequence(vec![Value::scalar(1.0f32).expect("f32"), Value::scalar(1u8).expect("u8")]).is_err()
            );
        }
        if i == WARM_UP {
            warm = rss_kb();
        }
    }
    report("values", ITERATIONS, WARM_UP, warm, rss_kb(), started);
}
