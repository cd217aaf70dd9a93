//! What shared weights and saved models save: resident memory of several sessions of one model with and without shared
//! weights, and session start-up from the original model against ORT's saved optimized model.
//!
//! ```text
//! deploy_bench memory MODEL [SESSIONS]     one child process per configuration, RSS table
//! deploy_bench startup MODEL [ROUNDS]      start-up times, original vs saved, alternating
//! ```
//! MODEL takes input `input` [N,3,224,224] (benches/scripts/make_resnet50.py writes one).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use onnxrt::{OptimizationLevel, PrepackedWeights, Session, SessionBuilder, SharedInitializers, Value};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["memory", model] => memory_table(model, 4),
        ["memory", model, n] => memory_table(model, n.parse().expect("SESSIONS is a number")),
        ["child", model, mode, n, level] => child(model, mode, n.parse().expect("count"), level),
        ["startup", model] => startup(model, 5),
        ["startup", model, rounds] => startup(model, rounds.parse().expect("ROUNDS is a number")),
        _ => {
            eprintln!("usage: deploy_bench memory MODEL [SESSIONS] | startup MODEL [ROUNDS]");
            std::process::exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("deploy_bench: {e}");
        std::process::exit(1);
    }
}

/// Resident memory (VmRSS) of this process, in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn level(name: &str) -> OptimizationLevel {
    match name {
        "disabled" => OptimizationLevel::Disabled,
        "basic" => OptimizationLevel::Basic,
        "extended" => OptimizationLevel::Extended,
        _ => OptimizationLevel::All,
    }
}

/// Every initializer of the model, loaded once as a service would: from the raw weights and index
/// that `benches/scripts/make_resnet50.py` writes beside the model (`MODEL.weights`, `MODEL.weights.txt`).
fn shared_set(model: &str) -> onnxrt::Result<SharedInitializers> {
    let index = std::fs::read_to_string(format!("{model}.weights.txt"))
        .expect("MODEL.weights.txt (make_resnet50.py writes it)");
    let raw = std::fs::read(format!("{model}.weights")).expect("MODEL.weights");
    let mut set = SharedInitializers::new();
    let mut offset = 0;
    for line in index.lines() {
        let (name, dims) = line.split_once(' ').expect("`name dims` lines");
        let shape: Vec<i64> = dims.split(',').map(|d| d.parse().expect("a dimension")).collect();
        let n = shape.iter().product::<i64>() as usize;
        let data: Vec<f32> =
            raw[offset..offset + 4 * n].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        offset += 4 * n;
        set.add(name, Value::from_vec(&shape, data)?)?;
    }
    Ok(set)
}

/// One configuration in this (child) process: `n` sessions, one run each, then RSS.
fn child(model: &str, mode: &str, n: usize, level_name: &str) -> onnxrt::Result<()> {
    let base = rss_mib();
    let arena = !mode.contains("no-arena");
    let pattern = !mode.contains("no-pattern");
    let builder = || {
        SessionBuilder::new()
            .optimization_level(level(level_name))
            .intra_op_threads(1)
            .cpu_arena(arena)
            .memory_pattern(pattern)
    };
    let set = if mode.starts_with("plain") { None } else { Some(Arc::new(shared_set(model)?)) };
    let container = if mode.starts_with("shared+prepacked") { Some(Arc::new(PrepackedWeights::new()?)) } else { None };
    let after_weights = rss_mib();
    let mut sessions = Vec::new();
    for _ in 0..n {
        let mut b = builder();
        if let Some(set) = &set {
            b = b.shared_initializers(Arc::clone(set));
        }
        if let Some(c) = &container {
            b = b.prepacked_weights(Arc::clone(c));
        }
        sessions.push(b.commit_from_file(model)?);
    }
    let input = Value::from_vec(&[1, 3, 224, 224], vec![0.5f32; 3 * 224 * 224])?;
    for s in &sessions {
        s.run(&[("input", &input)])?;
    }
    let rss = rss_mib();
    // What of that is heap the allocator freed but kept (glibc returns it on request).
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's malloc_trim only releases free heap pages; no memory in use is touched.
    unsafe { malloc_trim(0) };
    println!("{:.1} {:.1} {:.1} {:.1}", base, after_weights, rss, rss_mib());
    Ok(())
}

fn memory_table(model: &str, n: usize) -> onnxrt::Result<()> {
    let me = std::env::current_exe().expect("own path");
    println!("model {model}; RSS in MiB after creating the sessions and one batch-1 run each (1 intra-op thread)");
    println!("(`vs 1`: against one session of the same level and mode)");
    println!("(`trimmed`: after glibc's malloc_trim(0), i.e. without heap that was freed but kept)");
    println!(
        "{:<10} {:<40} {:>8} {:>10} {:>12} {:>8} {:>10} {:>8}",
        "level", "mode", "sessions", "RSS", "per session", "vs 1", "trimmed", "vs 1"
    );
    for level_name in ["all", "extended"] {
        let mut one = None;
        let modes = [
            "plain",
            "shared",
            "shared+prepacked",
            "shared+prepacked, no-arena",
            "shared+prepacked, no-arena, no-pattern",
        ];
        for (mode, count) in modes.iter().flat_map(|m| [(*m, 1), (*m, n)]) {
            let out = Command::new(&me)
                .args(["child", model, mode, &count.to_string(), level_name])
                .output()
                .expect("child runs");
            if !out.status.success() {
                println!(
                    "{level_name:<10} {mode:<40} {count:>8} failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                continue;
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let fields: Vec<f64> = text.split_whitespace().filter_map(|f| f.parse().ok()).collect();
            let rss = fields.get(2).copied().unwrap_or(0.0);
            let trimmed = fields.get(3).copied().unwrap_or(0.0);
            if count == 1 {
                one = Some((rss, trimmed));
            }
            let ratio = one.map_or(String::from("-"), |(one, _)| format!("{:.2}x", rss / one));
            let ratio_trimmed = one.map_or(String::from("-"), |(_, one)| format!("{:.2}x", trimmed / one));
            println!(
                "{level_name:<10} {mode:<40} {count:>8} {rss:>10.1} {:>12.1} {ratio:>8} {trimmed:>10.1} {ratio_trimmed:>8}",
                rss / count as f64
            );
        }
    }
    Ok(())
}

/// A way to make the session whose start-up is timed.
type MakeSession<'a> = dyn Fn() -> onnxrt::Result<Session> + 'a;

fn startup(model: &str, rounds: usize) -> onnxrt::Result<()> {
    let dir = std::env::temp_dir().join(format!("deploy-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let saved = dir.join("optimized.onnx");
    // Saved at Extended (portable across CPUs) and at All (this machine's layout).
    let saved_all = dir.join("optimized_all.onnx");
    SessionBuilder::new()
        .optimization_level(OptimizationLevel::Extended)
        .save_optimized_model(&saved)
        .commit_from_file(model)?;
    SessionBuilder::new()
        .optimization_level(OptimizationLevel::All)
        .save_optimized_model(&saved_all)
        .commit_from_file(model)?;
    let time = |build: &dyn Fn() -> onnxrt::Result<Session>| -> onnxrt::Result<Duration> {
        let start = Instant::now();
        let session = build()?;
        let took = start.elapsed();
        drop(session);
        Ok(took)
    };
    let cases: [(&str, Box<MakeSession>); 4] = [
        ("original, level All", Box::new(|| SessionBuilder::new().commit_from_file(model))),
        (
            "saved (Extended), level Disabled",
            Box::new(|| SessionBuilder::new().optimization_level(OptimizationLevel::Disabled).commit_from_file(&saved)),
        ),
        ("saved (Extended), level All", Box::new(|| SessionBuilder::new().commit_from_file(&saved))),
        (
            "saved (All), level Disabled",
            Box::new(|| {
                SessionBuilder::new().optimization_level(OptimizationLevel::Disabled).commit_from_file(&saved_all)
            }),
        ),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (i, (_, build)) in cases.iter().enumerate() {
            times[i].push(time(build.as_ref())?);
        }
    }
    println!("model {model}; session start-up, {rounds} alternating rounds (median, min, max in ms)");
    let median_of = |t: &mut Vec<Duration>| {
        t.sort();
        t[t.len() / 2]
    };
    let base = median_of(&mut times[0].clone());
    for ((label, _), t) in cases.iter().zip(times.iter_mut()) {
        let median = median_of(t);
        println!(
            "{label:<34} {:>8.1} {:>8.1} {:>8.1}  {:.2}x",
            median.as_secs_f64() * 1e3,
            t[0].as_secs_f64() * 1e3,
            t[t.len() - 1].as_secs_f64() * 1e3,
            median.as_secs_f64() / base.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
