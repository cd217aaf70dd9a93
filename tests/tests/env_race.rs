//! The environment's log hook (docs/soundness.md §12), in its own test binary for the
//! process-wide environment: a log hook replaced on one thread while ORT logs through it on
//! another must never run on freed state (before the fix, an environment made while another was
//! dropped logged into the dropped one's freed logger).
//!
//! Threads (8 by default, `ONNXRT_ENV_RACE_THREADS`) race to commit the same environment (all
//! get the one the first made), then loop: install a hook of their own whose state is a
//! heap canary, make a session at verbose level (ORT logs through whichever hook is current), and
//! drop both the session and, by replacing it, the hook. A hook that runs on dropped state sees a
//! poisoned canary (or valgrind an invalid read). The threads stop once `ONNXRT_ENV_RACE_ENVS`
//! hooks (default 3,000) have been installed between them: the run is bounded by that count,
//! never by the clock. Under valgrind (CI): `ONNXRT_ENV_RACE_ENVS=20 ONNXRT_ENV_RACE_THREADS=2
//! bash tools/reliability/memcheck.sh env_race`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use onnxrt::{Environment, LogLevel, Session};
use onnxrt_tests::model;

const ALIVE: u64 = 0x0A11_7E57_CA4A_121E;

static POISONED: AtomicUsize = AtomicUsize::new(0);
static RECORDS: AtomicUsize = AtomicUsize::new(0);
/// Hooks installed by all threads; each thread stops when this reaches the target.
static INSTALLED: AtomicUsize = AtomicUsize::new(0);

/// Heap state of one hook: `ALIVE` until dropped, then poisoned before it is freed.
struct Canary(Box<u64>);

impl Drop for Canary {
    fn drop(&mut self) {
        *self.0 = 0;
    }
}

fn commit() -> Arc<Environment> {
    Environment::builder().name("race").log_level(LogLevel::Verbose).commit().expect("the same settings every time")
}

/// One thread's loop until `target` hooks exist in all; returns how many this thread installed.
fn churn(target: usize) -> usize {
    let env = commit();
    let path = model("add_f32.onnx");
    let mut installed = 0;
    while INSTALLED.fetch_add(1, Ordering::SeqCst) < target {
        let canary = Canary(Box::new(ALIVE));
        env.set_log_hook(move |_| {
            RECORDS.fetch_add(1, Ordering::Relaxed);
            if *canary.0 != ALIVE {
                POISONED.fetch_add(1, Ordering::SeqCst);
            }
        });
        installed += 1;
        let session = Session::builder()
            .environment(Arc::clone(&env))
            .intra_op_threads(1)
            .commit_from_file(&path)
            .expect("session in the process's environment");
        drop(session);
    }
    installed
}

#[test]
fn log_hooks_replaced_while_others_log_never_run_on_freed_state() {
    let target: usize = std::env::var("ONNXRT_ENV_RACE_ENVS").ok().and_then(|s| s.parse().ok()).unwrap_or(3_000).max(2);
    let count: usize = std::env::var("ONNXRT_ENV_RACE_THREADS").ok().and_then(|s| s.parse().ok()).unwrap_or(8);
    let threads: Vec<_> = (0..count.max(2)).map(|_| std::thread::spawn(move || churn(target))).collect();
    let mut installed = 0;
    for thread in threads {
        installed += thread.join().expect("a churn thread panicked");
    }
    let records = RECORDS.load(Ordering::SeqCst);
    println!("{installed} hooks installed (target {target}), {records} log records");
    assert_eq!(installed, target, "the threads installed {installed} hooks, not the {target} asked for");
    assert!(records > 0, "verbose logging produced no records; the hooks were never exercised");
    assert_eq!(POISONED.load(Ordering::SeqCst), 0, "a hook ran after it was replaced and dropped");

    // Every thread committed the same settings and got the one environment.
    let env = commit();
    assert!(Arc::ptr_eq(&env, &Environment::global().expect("global")));
    // The last hook installed is the one that logs: a session made now reaches it.
    let ids = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&ids);
    env.set_log_hook(move |record| seen.lock().expect("ids").push(record.log_id.clone()));
    let session = Session::builder().log_id("after-the-race").commit_from_file(model("add_f32.onnx")).expect("loads");
    drop(session);
    assert!(ids.lock().expect("ids").iter().any(|id| id == "after-the-race"), "the last hook saw nothing");
}
