//! Runs/s of a compute-bound model from a tokio service: `spawn_blocking(run)` against
//! `run_async`, with ORT's default intra-op threads and with `SessionBuilder::async_threads()`
//! (the reason for `async_threads`). `cargo run -p onnxrt-benches --bin async_throughput [steps] [secs]`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use onnxrt::{Environment, Session, SessionBuilder, Value};

const TASKS: usize = 64;

fn measure(name: &str, builder: SessionBuilder, asynchronous: bool, steps: i64, secs: u64) {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/slow_loop.onnx");
    let environment = Environment::global().expect("environment");
    let session = builder.environment(environment).commit_from_file(model).expect("session");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_time().build().expect("runtime");
    let done = Arc::new(AtomicUsize::new(0));
    let until = Instant::now() + Duration::from_secs(secs);
    let started = Instant::now();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..TASKS {
            let (session, done) = (session.clone(), Arc::clone(&done));
            tasks.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let iters = Value::scalar(steps).expect("iters");
                    if asynchronous {
                        session.run_async([("iters", iters)], &[]).expect("starts").await.expect("runs");
                    } else {
                        let s = session.clone();
                        tokio::task::spawn_blocking(move || s.run(&[("iters", &iters)]))
                            .await
                            .expect("task")
                            .expect("runs");
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
    });
    let runs = done.load(Ordering::Relaxed);
    println!("{name:<44} {:>8.1} runs/s", runs as f64 / started.elapsed().as_secs_f64());
}

fn main() {
    let mut args = std::env::args().skip(1);
    let steps: i64 = args.next().map_or(50, |s| s.parse().expect("steps"));
    let secs: u64 = args.next().map_or(5, |s| s.parse().expect("seconds"));
    println!("slow_loop.onnx, {steps} steps a run, {TASKS} tasks, {secs} s each");
    measure("spawn_blocking(run), default threads", Session::builder(), false, steps, secs);
    measure("run_async, default threads", Session::builder(), true, steps, secs);
    measure("run_async, async_threads()", Session::builder().async_threads(), true, steps, secs);
    measure("spawn_blocking(run), async_threads()", Session::builder().async_threads(), false, steps, secs);
}
