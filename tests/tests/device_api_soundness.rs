//! Safe code that tries to break the C API 22+ surface (devices, the selection callback, the
//! Compile API, placement as data, shared allocators, captured graphs), run under valgrind in CI (tools/reliability/memcheck.sh
//! device_api_soundness): every attempt must end in a typed error or a correct result, with no
//! invalid read or write, no uninitialised memory and no leak. On 1.16.2 each is refused with
//! `Error::NeedsNewerRuntime` before anything reaches ORT. Bounded by counts.

use std::sync::Arc;

use onnxrt::compile::ModelCompiler;
use onnxrt::ep_device::{DevicePolicy, DeviceSelector, EpDevice};
use onnxrt::{Environment, Error, Session, Value};
use onnxrt_tests::{mlp_input, model};

fn level() -> u32 {
    onnxrt::runtime_info().expect("runtime").api_level
}

fn logits(session: &Session) -> Vec<f32> {
    let x = Value::from_array(mlp_input()).expect("input");
    let out = session.run(&[("x", &x)]).expect("run");
    out.get("logits").expect("logits").to_array::<f32>().expect("f32").iter().copied().collect()
}

#[test]
fn devices_outlive_everything_they_came_from() {
    let env = Environment::global().expect("env");
    let Ok(devices) = env.ep_devices() else {
        assert!(level() < 22);
        return;
    };
    drop(env);
    // A device copied out before the environment handle was dropped, used by a builder that
    // looks up the (never released) OrtEnv again: still listed, still works.
    let reference = logits(&Session::builder().commit_from_file(model("mlp.onnx")).expect("session"));
    for _ in 0..3 {
        let session = Session::builder()
            .providers_for_devices(&devices, &[])
            .commit_from_file(model("mlp.onnx"))
            .expect("session");
        assert_eq!(logits(&session), reference);
    }
}

#[test]
fn a_forged_device_is_refused_not_dereferenced() {
    if level() < 22 {
        return;
    }
    let env = Environment::global().expect("env");
    let real = env.ep_devices().expect("devices");
    // Safe code can clone and edit every public field; the address inside stays ORT's, so ORT is
    // handed only what it listed. An empty list is ORT's own error.
    let mut edited: Vec<EpDevice> = real.clone();
    edited[0].provider = "NoSuchExecutionProvider".into();
    edited[0].provider_options.insert("key".into(), "value".into());
    let session = Session::builder().providers_for_devices(&edited, &[]).commit_from_file(model("mlp.onnx"));
    assert!(session.is_ok(), "the device is ORT's CPU device whatever the copy says: {session:?}");
    let empty = Session::builder().providers_for_devices(&[], &[]).commit_from_file(model("mlp.onnx"));
    assert!(matches!(empty, Err(Error::Ort { .. })), "{empty:?}");
    let nul = Session::builder().providers_for_devices(&real, &[("a\0b", "c")]).commit_from_file(model("mlp.onnx"));
    assert!(matches!(nul, Err(Error::InteriorNul { .. })), "{nul:?}");
}

#[test]
fn provider_options_given_by_device_pass_the_providers_allow_list() {
    if level() < 22 {
        return;
    }
    let env = Environment::global().expect("environment");
    let cpu: Vec<EpDevice> =
        env.ep_devices().expect("devices").into_iter().filter(|d| d.provider == "CPUExecutionProvider").collect();
    // The CPU provider has no table: it takes no key from safe code.
    let refused =
        Session::builder().providers_for_devices(&cpu, &[("any_key", "1")]).commit_from_file(model("mlp.onnx"));
    match refused {
        Err(Error::KeyRefused { ref key, ref why, .. }) => {
            assert_eq!(key, "any_key");
            assert!(why.contains("providers_for_devices_unchecked"), "names the unsafe way: {why}");
        }
        other => panic!("an unchecked key reached ORT: {other:?}"),
    }
    // The table is chosen by the provider ORT lists for the device, not by the copy's field,
    // which safe code may edit: a CPU device renamed CUDA does not get CUDA's plain keys.
    let mut renamed = cpu.clone();
    renamed[0].provider = "CUDAExecutionProvider".into();
    let spoofed =
        Session::builder().providers_for_devices(&renamed, &[("device_id", "0")]).commit_from_file(model("mlp.onnx"));
    assert!(matches!(spoofed, Err(Error::KeyRefused { .. })), "{spoofed:?}");
    // No options: as before.
    Session::builder().providers_for_devices(&cpu, &[]).commit_from_file(model("mlp.onnx")).expect("no options");
}

#[test]
fn selectors_that_misbehave_fail_cleanly() {
    if level() < 22 {
        let refused = Session::builder().device_selector(|_| vec![0]).commit_from_file(model("mlp.onnx"));
        assert!(matches!(refused, Err(Error::NeedsNewerRuntime { .. })), "{refused:?}");
        return;
    }
    let big = Arc::new(vec![7u8; 1 << 16]);
    let held = Arc::clone(&big);
    let cases: Vec<Box<DeviceSelector>> = vec![
        Box::new(|_| Vec::new()),
        Box::new(|d| vec![0; d.len() + 1]),
        Box::new(|_| vec![usize::MAX]),
        // A payload that is no string (a payload whose Drop panics too is ffi_guard's own unit
        // test: it leaks its second payload by design, which valgrind would report here).
        Box::new(|_| std::panic::panic_any(42u32)),
        Box::new(move |_| {
            assert_eq!(held.len(), 1 << 16);
            vec![0]
        }),
    ];
    for (i, case) in cases.into_iter().enumerate() {
        let case: Arc<DeviceSelector> = Arc::from(case);
        let result = Session::builder().device_selector(move |d| case(d)).commit_from_file(model("mlp.onnx"));
        match i {
            // Choosing nothing, or the CPU device twice: ORT decides; either way no crash.
            0 | 1 => drop(result),
            2 | 3 => assert!(result.is_err(), "case {i}: {result:?}"),
            _ => assert_eq!(logits(&result.expect("the last selector picks the CPU")).len(), 8),
        }
    }
    // The closure (and what it captured) is freed with the session.
    assert_eq!(Arc::strong_count(&big), 1);
    // A policy after all that still works.
    let session = Session::builder().device_policy(DevicePolicy::MaxEfficiency).commit_from_file(model("mlp.onnx"));
    assert!(session.is_ok(), "{session:?}");
}

#[test]
fn compiling_repeatedly_to_bytes_and_files_leaks_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let input = std::fs::read(model("mlp.onnx")).expect("model");
    for i in 0..3 {
        let bytes =
            ModelCompiler::new(Session::builder()).input_bytes(input.clone()).embed_context(true).compile_to_bytes();
        let file = dir.path().join(format!("c{i}.onnx"));
        let to_file = ModelCompiler::new(Session::builder()).input_file(model("mlp.onnx")).compile_to_file(&file);
        if level() < 22 {
            assert!(matches!(bytes, Err(Error::NeedsNewerRuntime { .. })), "{bytes:?}");
            assert!(matches!(to_file, Err(Error::NeedsNewerRuntime { .. })), "{to_file:?}");
            continue;
        }
        let session = Session::builder().commit_from_memory(&bytes.expect("bytes")).expect("loads");
        assert_eq!(logits(&session).len(), 8);
        to_file.expect("file");
        // A compiler that also carries a selector: the closure lives through CompileModel.
        let selected = ModelCompiler::new(Session::builder().device_selector(|d| (0..d.len().min(1)).collect()))
            .input_file(model("mlp.onnx"))
            .compile_to_bytes();
        assert!(selected.is_ok(), "{selected:?}");
    }
}

#[test]
fn placement_outlives_its_session() {
    let session = Session::builder().record_placement(true).commit_from_file(model("mlp.onnx")).expect("session");
    let clone = session.clone();
    drop(session);
    match clone.placement() {
        Ok(placement) => {
            drop(clone);
            assert!(placement.anything_on_cpu());
        }
        Err(e) => assert!(matches!(e, Error::NeedsNewerRuntime { needs: 24, .. }), "{e:?}"),
    }
}

#[test]
fn shared_allocator_tensors_outlive_the_sessions_that_used_them() {
    let env = Environment::global().expect("env");
    let cpu = onnxrt::MemoryInfo::cpu().expect("cpu");
    let Ok(shared) = env.shared_allocator(&cpu) else {
        assert!(level() < 23);
        return;
    };
    let shared = shared.expect("the CPU has a shared allocator");
    let reference = logits(&Session::builder().commit_from_file(model("mlp.onnx")).expect("session"));
    let mut kept = Vec::new();
    for round in 0..10 {
        // A session on the environment's allocators comes and goes; tensors of the shared
        // allocator made around it stay valid and read back what was written.
        let session = Session::builder()
            .config_entry("session.use_env_allocators", "1")
            .commit_from_file(model("mlp.onnx"))
            .expect("session");
        let mut x = shared.tensor::<f32>(&[2, 16]).expect("tensor");
        x.view_mut::<f32>().expect("writable").assign(&mlp_input().into_dyn());
        let out = session.run(&[("x", &x)]).expect("run");
        let got: Vec<f32> =
            out.get("logits").expect("logits").to_array::<f32>().expect("f32").iter().copied().collect();
        assert_eq!(got, reference, "round {round}");
        drop(out);
        drop(session);
        kept.push(x);
    }
    for x in &kept {
        assert_eq!(
            x.view::<f32>().expect("view").iter().copied().collect::<Vec<_>>(),
            mlp_input().iter().copied().collect::<Vec<_>>()
        );
    }
    // Zero-sized and refused shapes.
    assert!(shared.tensor::<f32>(&[0, 16]).is_ok());
    assert!(shared.tensor::<f32>(&[-1, 16]).is_err());
    assert!(shared.tensor::<f32>(&[i64::MAX, i64::MAX]).is_err());
}

#[test]
fn a_captured_graph_is_never_released_under_a_run() {
    let mut session = Session::builder().commit_from_file(model("mlp.onnx")).expect("session");
    if level() < 27 {
        assert!(matches!(session.release_captured_graph(0), Err(Error::NeedsNewerRuntime { needs: 27, .. })));
        return;
    }
    // Clones running on other threads: refused while one exists (the worker's clone may be gone
    // already when the call comes: then it is allowed), never anything else.
    let reference = logits(&session);
    for _ in 0..3 {
        let clone = session.clone();
        let kept = session.clone();
        let worker = std::thread::spawn(move || logits(&clone));
        let refused = session.release_captured_graph(0);
        assert!(matches!(refused, Err(Error::BadSetting { .. })), "a clone is alive: {refused:?}");
        assert_eq!(worker.join().expect("worker"), reference);
        drop(kept);
        session.release_captured_graph(0).expect("the last handle, nothing in flight");
        assert_eq!(logits(&session), reference);
    }
}
