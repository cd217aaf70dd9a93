//! Test sessions on a tiny embedded model (`add_f32`: `sum = a + b`): one on the CPU, and one on
//! CUDA with strict GPU placement when the runtime has CUDA. The CUDA session runs in a child
//! process (`onnxrt __doctor-gpu-session`), so a driver or library that aborts the process
//! becomes a FAIL row instead of killing the doctor.

use std::process::Command;
use std::time::{Duration, Instant};

use onnxrt::{SessionBuilder, Value};

use super::runtime::Facts;
use super::{split_fix, Row, Status};

/// `add_f32.onnx`: inputs `a`, `b` f32 [2, 3], output `sum`. A copy of the workspace's
/// `tests/data/models/add_f32.onnx` kept inside this crate, so the published crate builds (a test
/// keeps the two identical).
pub const ADD_F32: &[u8] = include_bytes!("add_f32.onnx");

/// The name of the GPU session row.
pub const GPU_CHECK: &str = "gpu session";

/// The hidden subcommand that runs the CUDA session.
pub const CHILD_COMMAND: &str = "__doctor-gpu-session";

/// Runs `add_f32` once and checks the sum; returns the registered providers and the run time.
fn run_add(builder: SessionBuilder) -> Result<(Vec<&'static str>, Duration), onnxrt::Error> {
    let session = builder.commit_from_memory(ADD_F32)?;
    let a: Vec<f32> = (1..=6).map(|i| i as f32).collect();
    let b: Vec<f32> = a.iter().map(|x| x * 10.0).collect();
    let expected: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    let (va, vb) = (Value::from_vec(&[2, 3], a)?, Value::from_vec(&[2, 3], b)?);
    let started = Instant::now();
    let outputs = session.run(&[("a", &va), ("b", &vb)])?;
    let took = started.elapsed();
    let sum: Vec<f32> = outputs.get("sum")?.view::<f32>()?.iter().copied().collect();
    if sum != expected {
        return Err(onnxrt::Error::InvalidArgument {
            what: "the add_f32 test model".into(),
            why: format!("returned {sum:?} instead of {expected:?}: the runtime computes wrong results"),
        });
    }
    Ok((session.providers().to_vec(), took))
}

/// The CPU session row.
pub fn cpu_row(facts: &Facts) -> Row {
    if facts.info.is_err() {
        return Row::new("cpu session", Status::Skip, "the runtime did not load (see the runtime row)");
    }
    match run_add(onnxrt::Session::builder()) {
        Ok((providers, took)) => Row::new(
            "cpu session",
            Status::Ok,
            format!("add_f32 ran on {providers:?} in {}, result correct", crate::output::millis(took)),
        ),
        Err(e) => {
            let (detail, fix) = split_fix(&e.to_string());
            Row::new("cpu session", Status::Fail, detail).fix(fix.unwrap_or_else(|| "check the runtime row".into()))
        }
    }
}

/// The GPU session row: what this runtime and machine can do on CUDA.
pub fn gpu_row(facts: &Facts, gpu_found: bool) -> Row {
    const CHECK: &str = "gpu session";
    if facts.info.is_err() {
        return Row::new(CHECK, Status::Skip, "the runtime did not load (see the runtime row)");
    }
    if !facts.has_cuda() {
        let version = facts.info.as_ref().map(|i| i.version.clone()).unwrap_or_default();
        let detail = format!(
            "GPU: not available in this runtime: ONNX Runtime {version} is a CPU-only build (providers: {:?})",
            facts.providers
        );
        let fix = "for the GPU, use a GPU build of ONNX Runtime: ONNXRT_DIST=gpu-1.16.2 (CUDA 11.8) or gpu-cuda13-1.30.0 (CUDA 13) and rebuild, or point ONNXRT_DYLIB_PATH at a GPU build's libonnxruntime.so";
        // Only worth a warning when there is a GPU the runtime cannot use.
        return if gpu_found {
            Row::new(CHECK, Status::Warn, detail).fix(fix)
        } else {
            Row::new(CHECK, Status::Skip, detail)
        };
    }
    if !cfg!(feature = "cuda") {
        return Row::new(CHECK, Status::Skip, "this onnxrt command was built without the `cuda` feature")
            .fix("reinstall it with the default features: cargo install --path cli");
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Row::new(CHECK, Status::Skip, format!("cannot find this executable to run the test: {e}")),
    };
    let output = match Command::new(exe).arg(CHILD_COMMAND).output() {
        Ok(output) => output,
        Err(e) => return Row::new(CHECK, Status::Skip, format!("cannot start the test session process: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let parsed = serde_json::from_str::<serde_json::Value>(stdout.trim()).ok().and_then(|v| Row::from_json(&v));
    match parsed {
        Some(row) => row,
        None => {
            use std::os::unix::process::ExitStatusExt;
            let how = match output.status.signal() {
                Some(signal) => format!("was killed by signal {}", signal_name(signal)),
                None => format!("ended with {}", output.status),
            };
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last: Vec<&str> = stderr.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
            Row::new(CHECK, Status::Fail, format!("the CUDA test session {how}: {}", last.join(" | ")))
        }
    }
}

/// The child process: builds a strict CUDA session and prints its row as JSON.
pub fn child() {
    let row = cuda_row();
    // The parent reads this; if it went away there is nobody to tell.
    let _ = crate::output::outln(&row.to_json().to_string());
}

/// ORT's message without the C++ function signatures its CUDA checks print
/// (`std::conditional_t<THRW, void, common::Status> onnxruntime::CudaCall(...) [with ...]`),
/// which say nothing to a user and bury the CUDA error after them.
pub fn shorten_ort_message(message: &str) -> String {
    let mut text = message.to_owned();
    while let Some(with) = text.find(" [with ") {
        // The signature starts after the `file.cc:LINE ` that precedes it.
        let head = &text[..with];
        let after_file = head.rfind(".cc:").and_then(|i| head[i..].find(' ').map(|j| i + j + 1));
        let Some(start) = after_file.or_else(|| head.find("std::")) else { break };
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in text[with + 1..].char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(with + 1 + i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        if start >= end {
            break;
        }
        text.replace_range(start..end, "…");
    }
    text
}

/// A signal number with its name, for the common crashes.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS: a library file shorter than its headers say, i.e. truncated)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        _ => "",
    };
    format!("{signal}{name}")
}

#[cfg(feature = "cuda")]
fn cuda_row() -> Row {
    const CHECK: &str = "gpu session";
    let builder = onnxrt::Session::builder().cuda(onnxrt::providers::cuda::CudaOptions::new()).strict_gpu(true);
    match run_add(builder) {
        Ok((providers, took)) => Row::new(
            CHECK,
            Status::Ok,
            format!(
                "add_f32 ran with strict GPU placement on {providers:?} in {} (includes CUDA start-up), result correct",
                crate::output::millis(took)
            ),
        ),
        Err(e) => {
            let (detail, fix) = split_fix(&e.to_string());
            let mut row = Row::new(CHECK, Status::Fail, shorten_ort_message(&detail));
            row.fix = fix;
            row
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_row() -> Row {
    Row::new("gpu session", Status::Skip, "this onnxrt command was built without the `cuda` feature")
}

#[cfg(test)]
mod tests {
    #[test]
    fn c_plus_plus_signatures_are_dropped_from_ort_messages() {
        let raw = "ONNX Runtime CreateSession failed (Fail): /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:154 std::conditional_t<THRW, void, onnxruntime::common::Status> onnxruntime::CudaCall(ERRTYPE, const char*, const char*, SUCCTYPE, const char*, const char*, int) [with ERRTYPE = cudaError; bool THRW = true; SUCCTYPE = cudaError; std::conditional_t<THRW, void, onnxruntime::common::Status> = void] CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; expr=cudaSetDevice(info_.device_id);";
        let short = super::shorten_ort_message(raw);
        assert_eq!(
            short,
            "ONNX Runtime CreateSession failed (Fail): /onnxruntime_src/onnxruntime/core/providers/cuda/cuda_call.cc:154 … CUDA failure 100: no CUDA-capable device is detected ; GPU=0 ; expr=cudaSetDevice(info_.device_id);"
        );
        assert_eq!(super::shorten_ort_message("plain [message]"), "plain [message]");
    }

    #[test]
    fn the_embedded_model_is_the_workspace_model() {
        // Absent in a published crate; inside the workspace the copy must not drift.
        let workspace = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/add_f32.onnx");
        if let Ok(bytes) = std::fs::read(workspace) {
            assert_eq!(bytes, super::ADD_F32, "copy tests/data/models/add_f32.onnx into cli/src/doctor/");
        }
    }
}
