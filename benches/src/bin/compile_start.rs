//! `compile_start MODEL... [--rounds N]`: a compiled model's session start against the
//! original's, side by side in one process. Each model is compiled once for the builder's
//! providers (`compile::ModelCompiler`, EPContext embedded), then N rounds each build a session
//! from the original file and from the compiled file, in alternating order; prints the median
//! and fastest start of each. ORT 1.22+ (`ONNXRT_DIST=cpu-1.32.0-registry`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use onnxrt::compile::ModelCompiler;
use onnxrt::Session;

fn start_ms(model: &Path) -> f64 {
    let started = Instant::now();
    let session = Session::builder().commit_from_file(model).expect("session");
    let ms = started.elapsed().as_secs_f64() * 1e3;
    drop(session);
    ms
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 30usize;
    if let Some(i) = args.iter().position(|a| a == "--rounds") {
        rounds = args.get(i + 1).and_then(|n| n.parse().ok()).expect("--rounds N");
        args.drain(i..i + 2);
    }
    if args.is_empty() {
        eprintln!("usage: compile_start MODEL... [--rounds N]");
        std::process::exit(2);
    }
    let info = onnxrt::runtime_info().expect("runtime");
    println!("ONNX Runtime {}, {rounds} rounds, CPU provider", info.version);
    println!("| model | size | compiled size | start, original (median / min ms) | start, compiled (median / min ms) | compiled / original |");
    println!("|---|---:|---:|---:|---:|---:|");
    let dir = std::env::temp_dir().join(format!("onnxrt-compile-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for model in &args {
        let model = PathBuf::from(model);
        let name = model.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let compiled = dir.join(format!("{name}.compiled.onnx"));
        ModelCompiler::new(Session::builder())
            .input_file(&model)
            .embed_context(true)
            .compile_to_file(&compiled)
            .expect("compile");
        // Warm both (page cache, ORT's one-time setup); a compiled model ORT cannot load is a row.
        start_ms(&model);
        if let Err(e) = Session::builder().commit_from_file(&compiled) {
            let first = e.to_string().lines().next().unwrap_or_default().to_owned();
            println!(
                "| {name} | {} | {} | — | the compiled model does not load: {first} | — |",
                size(&model),
                size(&compiled)
            );
            continue;
        }
        let (mut original, mut ready) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            if round % 2 == 0 {
                original.push(start_ms(&model));
                ready.push(start_ms(&compiled));
            } else {
                ready.push(start_ms(&compiled));
                original.push(start_ms(&model));
            }
        }
        let (o_min, r_min) =
            (original.iter().copied().fold(f64::MAX, f64::min), ready.iter().copied().fold(f64::MAX, f64::min));
        let (o, r) = (median(original), median(ready));
        println!(
            "| {name} | {} | {} | {o:.2} / {o_min:.2} | {r:.2} / {r_min:.2} | {:.2} |",
            size(&model),
            size(&compiled),
            r / o
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
