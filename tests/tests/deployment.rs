//! Deployment features: saving the optimized model, initializers shared between
//! sessions, a shared pre-packed weights container, and external-data weights from memory — on
//! the real runtime, checked against the plain session's outputs.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Arc;

use ndarray::ArrayD;
use onnxrt::{Error, OptimizationLevel, PrepackedWeights, Session, SharedInitializers, Value};
use onnxrt_tests::{builder, mlp_input, model, read_f32_le, session, TempDir};

/// The logits of `session` for the fixed MLP input.
fn logits(session: &Session) -> ArrayD<f32> {
    let x = Value::from_array(mlp_input()).expect("input");
    let outputs = session.run(&[("x", &x)]).expect("mlp runs");
    outputs.get("logits").expect("logits").to_array::<f32>().expect("f32")
}

/// The MLP's weights as onnx wrote them to `mlp_external.data`: w1 [16,32], b1 [32], w2 [32,4],
/// b2 [4], raw little-endian f32, back to back.
fn mlp_weights() -> Vec<(&'static str, Value<'static>)> {
    let all = read_f32_le(&model("mlp_external.data"));
    assert_eq!(all.len(), 16 * 32 + 32 + 32 * 4 + 4, "mlp_external.data holds the four tensors");
    let mut rest = all.as_slice();
    let mut take = |name: &'static str, shape: &[i64]| {
        let n = shape.iter().product::<i64>() as usize;
        let (head, tail) = rest.split_at(n);
        rest = tail;
        (name, Value::from_vec(shape, head.to_vec()).expect("weight"))
    };
    vec![take("w1", &[16, 32]), take("b1", &[32]), take("w2", &[32, 4]), take("b2", &[4])]
}

fn bits(a: &ArrayD<f32>) -> Vec<u32> {
    a.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn the_saved_optimized_model_loads_and_gives_the_same_bits() {
    let dir = TempDir::new("saved-model");
    let saved = dir.path().join("mlp.optimized.onnx");
    let original = builder().save_optimized_model(&saved).commit_from_file(model("mlp.onnx")).expect("session");
    assert!(saved.is_file(), "the optimized model was not written");
    // Nothing else is left in the folder (the temporary name was renamed).
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let reloaded =
        builder().optimization_level(OptimizationLevel::Disabled).commit_from_file(&saved).expect("saved model loads");
    assert_eq!(bits(&logits(&original)), bits(&logits(&reloaded)));
    assert_eq!(reloaded.inputs()[0].name, "x");
}

#[test]
fn saving_to_a_missing_folder_is_a_typed_error_and_writes_nothing() {
    let dir = TempDir::new("saved-model-missing");
    let target = dir.path().join("no/such/folder/m.onnx");
    match builder().save_optimized_model(&target).commit_from_file(model("mlp.onnx")) {
        Err(Error::ModelFile { path, message }) => {
            assert_eq!(path, target);
            assert!(message.contains("does not exist"), "{message}");
        }
        other => panic!("expected ModelFile, got {other:?}"),
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_failed_session_leaves_no_saved_file_behind() {
    let dir = TempDir::new("saved-model-failed");
    let target = dir.path().join("m.onnx");
    let truncated = std::fs::read(model("bad_truncated.onnx")).unwrap();
    let result = builder().save_optimized_model(&target).commit_from_memory(&truncated);
    assert!(result.is_err());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "a partial file was left");
}

#[test]
fn shared_initializers_are_used_by_every_session_built_with_them() {
    let plain = logits(&session("mlp.onnx"));
    let mut set = SharedInitializers::new();
    for (name, value) in mlp_weights() {
        set.add(name, value).expect("add");
    }
    let set = Arc::new(set);
    let a = builder().shared_initializers(Arc::clone(&set)).commit_from_file(model("mlp.onnx")).expect("a");
    let b = builder().shared_initializers(Arc::clone(&set)).commit_from_file(model("mlp.onnx")).expect("b");
    drop(set); // the sessions keep it alive
    assert_eq!(bits(&logits(&a)), bits(&plain));
    assert_eq!(bits(&logits(&b)), bits(&plain));

    // The shared copy really replaces the model's: zero weights give the bias alone.
    let mut zeros = SharedInitializers::new();
    zeros.add("w2", Value::from_vec(&[32, 4], vec![0f32; 128]).unwrap()).unwrap();
    let zeroed = builder().shared_initializers(Arc::new(zeros)).commit_from_file(model("mlp.onnx")).expect("zeroed");
    let out = logits(&zeroed);
    let b2 = &mlp_weights()[3].1;
    let b2 = b2.view::<f32>().unwrap();
    for row in out.rows() {
        assert_eq!(row.to_vec(), b2.iter().copied().collect::<Vec<f32>>());
    }
}

#[test]
fn a_shared_initializer_of_the_wrong_shape_or_a_duplicate_is_refused() {
    let mut set = SharedInitializers::new();
    set.add("w1", Value::from_vec(&[2, 2], vec![0f32; 4]).unwrap()).unwrap();
    let built = builder().shared_initializers(Arc::new(set)).commit_from_file(model("mlp.onnx"));
    let err = match built {
        Err(e) => e,
        Ok(s) => {
            let x = Value::from_array(mlp_input()).unwrap();
            s.run(&[("x", &x)]).map(|_| ()).expect_err("run with a wrong-shaped weight")
        }
    };
    // ORT 1.16 does not check a shared initializer's shape against the model's when the
    // session is made; the kernel refuses it at run time (never a silent wrong result).
    println!("wrong shape: {err}");
    assert!(matches!(err, Error::Ort { .. }), "{err:?}");
    let mut set = SharedInitializers::new();
    set.add("w1", Value::from_vec(&[1], vec![0f32]).unwrap()).unwrap();
    match set.add("w1", Value::from_vec(&[1], vec![0f32]).unwrap()) {
        Err(Error::InvalidArgument { why, .. }) => assert!(why.contains("twice"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn sessions_sharing_a_prepacked_container_agree_with_a_plain_one() {
    let plain = logits(&session("mlp.onnx"));
    let mut set = SharedInitializers::new();
    for (name, value) in mlp_weights() {
        set.add(name, value).expect("add");
    }
    let set = Arc::new(set);
    let container = Arc::new(PrepackedWeights::new().expect("container"));
    let sessions: Vec<Session> = (0..3)
        .map(|_| {
            builder()
                .shared_initializers(Arc::clone(&set))
                .prepacked_weights(Arc::clone(&container))
                .commit_from_file(model("mlp.onnx"))
                .expect("session")
        })
        .collect();
    drop((set, container));
    let from_memory = builder()
        .prepacked_weights(Arc::new(PrepackedWeights::new().unwrap()))
        .commit_from_memory(&std::fs::read(model("mlp.onnx")).unwrap())
        .expect("from memory");
    for s in sessions.iter().chain([&from_memory]) {
        assert_eq!(bits(&logits(s)), bits(&plain));
    }
    // Runs on several threads at once, the container shared.
    std::thread::scope(|scope| {
        for s in &sessions {
            scope.spawn(|| {
                for _ in 0..20 {
                    assert_eq!(bits(&logits(s)), bits(&plain));
                }
            });
        }
    });
}

#[test]
fn external_data_from_memory_gives_the_same_bits_as_the_file() {
    let plain = logits(&session("mlp.onnx"));
    // From the file: ORT reads mlp_external.data beside it.
    let from_file = session("mlp_external.onnx");
    assert_eq!(bits(&logits(&from_file)), bits(&plain));
    // From memory: the model bytes and the weights as tensors, no data file involved.
    let bytes = std::fs::read(model("mlp_external.onnx")).unwrap();
    let weights = mlp_weights();
    let named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();
    let from_memory = builder().commit_from_memory_with_external_data(&bytes, &named).expect("session");
    drop(weights); // ORT copied them
    assert_eq!(bits(&logits(&from_memory)), bits(&plain));
}

#[test]
fn external_data_from_memory_refuses_missing_wrong_and_duplicate_tensors() {
    let bytes = std::fs::read(model("mlp_external.onnx")).unwrap();
    let weights = mlp_weights();
    let named: Vec<(&str, &Value)> = weights.iter().map(|(n, v)| (*n, v)).collect();

    // One tensor missing: ORT looks for the data file relative to no folder and fails.
    let err = builder().commit_from_memory_with_external_data(&bytes, &named[..3]).expect_err("b2 missing");
    println!("missing: {err}");
    assert!(matches!(err, Error::Ort { .. } | Error::ModelFile { .. } | Error::NotOnnxModel { .. }), "{err:?}");

    // The wrong shape for w1.
    let wrong = Value::from_vec(&[32, 16], vec![0f32; 512]).unwrap();
    let mut bad: Vec<(&str, &Value)> = named.clone();
    bad[0] = ("w1", &wrong);
    let err = builder().commit_from_memory_with_external_data(&bytes, &bad).expect_err("wrong shape");
    // ORT 1.16 does not check a shared initializer's shape against the model's when the
    // session is made; the kernel refuses it at run time (never a silent wrong result).
    println!("wrong shape: {err}");
    assert!(matches!(err, Error::Ort { .. }), "{err:?}");

    // A name the model has no external initializer for.
    let extra = Value::from_vec(&[1], vec![0f32]).unwrap();
    let mut unknown = named.clone();
    unknown.push(("not_in_model", &extra));
    let err = builder().commit_from_memory_with_external_data(&bytes, &unknown).expect_err("unknown name");
    println!("unknown: {err}");
    assert!(err.to_string().contains("not_in_model"), "{err}");
    assert!(err.to_string().contains("not an initializer of the model"), "{err}");

    // The same name twice: refused before ORT sees it.
    let mut twice = named.clone();
    twice.push(named[0]);
    match builder().commit_from_memory_with_external_data(&bytes, &twice) {
        Err(Error::InvalidArgument { what, why }) => {
            assert!(what.contains("w1"), "{what}");
            assert!(why.contains("twice"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}
