//! Outputs with a fixed declared shape are handed to ORT preallocated and recycled between runs
//! (`onnxrt/src/session/output_pool.rs`). These tests pin what a caller must never notice: held
//! outputs keep their values while later runs reuse other buffers, outputs outlive the session,
//! an output whose real shape differs from its declaration is still returned, and threads each
//! get their own buffers. A run that fails for any other reason than an output's shape runs once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ndarray::{arr1, Array2};
use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Error, RunOptions, RunTerminator, Value};
use onnxrt_onnx_proto::tensor_shape_proto::{dimension, Dimension};
use onnxrt_onnx_proto::{type_proto, TensorShapeProto, TypeProto, ValueInfoProto};
use onnxrt_tests::{builder, proto, session};

fn add(session: &onnxrt::Session, a: f32, b: f32) -> onnxrt::Outputs {
    let a = Value::from_array(Array2::from_elem((2, 3), a)).expect("a");
    let b = Value::from_array(Array2::from_elem((2, 3), b)).expect("b");
    session.run([("a", &a), ("b", &b)]).expect("run")
}

fn sum_of(outputs: &onnxrt::Outputs) -> Vec<f32> {
    outputs.get("sum").expect("sum").view::<f32>().expect("view").iter().copied().collect()
}

fn data_address(outputs: &onnxrt::Outputs) -> usize {
    outputs.get("sum").expect("sum").view::<f32>().expect("view").as_ptr() as usize
}

#[test]
fn held_outputs_keep_their_values_and_dropped_ones_are_reused() {
    let session = session("add_f32.onnx");
    let probe = add(&session, 1.0, 1.0);
    assert_eq!(sum_of(&probe), [2.0; 6]);
    drop(probe);
    let first = add(&session, 1.0, 2.0);
    let second = add(&session, 10.0, 20.0);
    // Both alive at once: two buffers, each with its own run's result.
    assert_ne!(data_address(&first), data_address(&second));
    assert_eq!(sum_of(&first), [3.0; 6]);
    assert_eq!(sum_of(&second), [30.0; 6]);
    let recycled = data_address(&second);
    drop(second);
    let third = add(&session, 100.0, 200.0);
    // The buffer of the dropped output is the next run's (the steady state allocates nothing).
    assert_eq!(data_address(&third), recycled);
    assert_eq!(sum_of(&third), [300.0; 6]);
    assert_eq!(sum_of(&first), [3.0; 6]);
}

#[test]
fn outputs_outlive_their_session() {
    let session = session("add_f32.onnx");
    let _probe = add(&session, 0.0, 0.0);
    let kept = add(&session, 4.0, 5.0);
    drop(session);
    assert_eq!(
        kept.get("sum").expect("sum").view::<f32>().expect("view").iter().copied().collect::<Vec<_>>(),
        [9.0; 6]
    );
}

/// `y = Neg(x)` with `x: [n]` but `y` declared `[3]`: ORT only warns when `y` comes out longer.
fn declared_shorter_than_real() -> Vec<u8> {
    let dim = Dimension { value: Some(dimension::Value::DimParam("n".into())), denotation: None };
    let tensor = type_proto::Tensor { elem_type: Some(proto::FLOAT), shape: Some(TensorShapeProto { dim: vec![dim] }) };
    let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
    let x = ValueInfoProto { name: Some("x".into()), r#type: Some(ty), doc_string: None };
    let y = proto::tensor_info("y", proto::FLOAT, &[3]);
    proto::model(8, 17, &[proto::node("Neg", &["x"], &["y"], &[])], &[x], &[y])
}

#[test]
fn an_output_longer_than_declared_is_still_returned() {
    let session = builder().commit_from_memory(&declared_shorter_than_real()).expect("session");
    let neg = |values: Vec<f32>| -> Vec<f32> {
        let x = Value::from_array(arr1(&values)).expect("x");
        let outputs = session.run([("x", &x)]).expect("run");
        outputs.get("y").expect("y").view::<f32>().expect("view").iter().copied().collect()
    };
    // The probe and a run with the preallocated [3] output.
    assert_eq!(neg(vec![1.0, 2.0, 3.0]), [-1.0, -2.0, -3.0]);
    assert_eq!(neg(vec![4.0, 5.0, 6.0]), [-4.0, -5.0, -6.0]);
    // ORT refuses the [3] tensor for a [4] result; the run is repeated without preallocation.
    assert_eq!(neg(vec![1.0, 2.0, 3.0, 4.0]), [-1.0, -2.0, -3.0, -4.0]);
    assert_eq!(neg(vec![7.0, 8.0, 9.0]), [-7.0, -8.0, -9.0]);
    assert_eq!(neg(vec![1.0; 5]), [-1.0; 5]);
}

#[test]
fn threads_get_their_own_buffers() {
    let session = Arc::new(session("add_f32.onnx"));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let session = Arc::clone(&session);
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..500 {
                    let (a, b) = (t as f32, i as f32);
                    let outputs = add(&session, a, b);
                    assert_eq!(outputs.get("sum").expect("sum").view::<f32>().expect("view")[[0, 0]], a + b);
                    // Keep a few alive so buffers are held, recycled and made new in turn.
                    held.push((a + b, outputs));
                    if held.len() > 3 {
                        let (expected, old) = held.remove(0);
                        assert!(old
                            .get("sum")
                            .expect("sum")
                            .view::<f32>()
                            .expect("view")
                            .iter()
                            .all(|&v| v == expected));
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("thread");
    }
}

// ---- failures other than a shape mismatch run once ----

const DOMAIN: &str = "ai.onnxrt.pool_test";

/// `y = x + 1`, counting its computes; `x[0] == 0` terminates the run (through the terminator
/// the test hands it), `x[0] < 0` fails.
struct Step {
    computes: Arc<AtomicUsize>,
    terminator: Arc<Mutex<Option<RunTerminator>>>,
}

impl CustomOp for Step {
    type Kernel = Step;
    fn name(&self) -> &str {
        "Step"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _: &KernelInfo<'_>) -> OpResult<Step> {
        Ok(Step { computes: Arc::clone(&self.computes), terminator: Arc::clone(&self.terminator) })
    }
}

impl Kernel for Step {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        self.computes.fetch_add(1, Ordering::SeqCst);
        let x = ctx.input::<f32>(0)?;
        if x[0] < 0.0 {
            return Err("refused a negative input".into());
        }
        if x[0] == 0.0 {
            if let Some(terminator) = self.terminator.lock().expect("lock").as_ref() {
                terminator.terminate()?;
            }
        }
        ctx.output::<f32>(0, x.shape())?.zip_mut_with(&x, |y, &x| *y = x + 1.0);
        Ok(())
    }
}

/// `y = Neg(Step(x))`, `x: [n]`, `y` declared `[3]` (ORT only warns when it is longer). ORT looks
/// at the terminate flag before `Neg`, after `Step` has set it.
struct Stepped {
    session: onnxrt::Session,
    computes: Arc<AtomicUsize>,
    terminator: Arc<Mutex<Option<RunTerminator>>>,
}

fn stepped() -> Stepped {
    let (computes, terminator) = (Arc::new(AtomicUsize::new(0)), Arc::new(Mutex::new(None)));
    let op = Step { computes: Arc::clone(&computes), terminator: Arc::clone(&terminator) };
    let dim = Dimension { value: Some(dimension::Value::DimParam("n".into())), denotation: None };
    let tensor = type_proto::Tensor { elem_type: Some(proto::FLOAT), shape: Some(TensorShapeProto { dim: vec![dim] }) };
    let ty = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
    let x = ValueInfoProto { name: Some("x".into()), r#type: Some(ty), doc_string: None };
    let nodes = [proto::domain_node(DOMAIN, "Step", &["x"], &["t"], &[]), proto::node("Neg", &["t"], &["y"], &[])];
    let y = proto::tensor_info("y", proto::FLOAT, &[3]);
    let model = proto::model_with_opsets(8, &[("", 17), (DOMAIN, 1)], &nodes, &[x], &[y]);
    let session = builder().custom_ops(OpDomain::new(DOMAIN).with(op)).commit_from_memory(&model).expect("session");
    Stepped { session, computes, terminator }
}

impl Stepped {
    fn run(&self, x: &[f32], options: Option<&RunOptions>) -> onnxrt::Result<Vec<f32>> {
        let x = Value::from_vec(&[x.len() as i64], x.to_vec()).expect("x");
        let outputs = self.session.run_with([("x", &x)], &[], options)?;
        let y = outputs.get("y")?.view::<f32>()?.iter().copied().collect();
        Ok(y)
    }

    fn computes(&self) -> usize {
        self.computes.load(Ordering::SeqCst)
    }

    /// Runs on 4 elements and counts the kernel's computes: 2 while outputs are preallocated
    /// (ORT refuses the `[3]` tensor, the run is repeated without it, which switches
    /// preallocation off), 1 otherwise.
    fn computes_of_a_longer_run(&self) -> usize {
        let before = self.computes();
        assert_eq!(self.run(&[1.0, 2.0, 3.0, 4.0], None).expect("run"), [-2.0, -3.0, -4.0, -5.0]);
        self.computes() - before
    }

    /// The probe run, after which outputs are preallocated.
    fn probe(&self) {
        assert_eq!(self.run(&[1.0, 2.0, 3.0], None).expect("probe"), [-2.0, -3.0, -4.0]);
    }
}

#[test]
fn the_shape_retry_runs_twice_once() {
    let stepped = stepped();
    stepped.probe();
    assert_eq!(stepped.computes_of_a_longer_run(), 2, "preallocated: refused, then repeated without");
    assert_eq!(stepped.computes_of_a_longer_run(), 1, "preallocation is off for good");
}

#[test]
fn a_terminated_run_with_preallocated_outputs_runs_once_and_keeps_preallocation() {
    let stepped = stepped();
    stepped.probe();
    let options = RunOptions::new().expect("run options");
    *stepped.terminator.lock().expect("lock") = Some(options.terminator());
    let before = stepped.computes();
    let error = stepped.run(&[0.0, 1.0, 2.0], Some(&options)).expect_err("terminated");
    assert!(matches!(error, Error::Terminated { .. }), "{error}");
    assert_eq!(stepped.computes() - before, 1, "the terminated run ran once");
    assert_eq!(stepped.computes_of_a_longer_run(), 2, "outputs are still preallocated");
}

#[test]
fn a_failing_custom_op_with_preallocated_outputs_runs_once_and_keeps_preallocation() {
    let stepped = stepped();
    stepped.probe();
    let before = stepped.computes();
    let error = stepped.run(&[-1.0, 1.0, 2.0], None).expect_err("refused");
    assert!(matches!(&error, Error::CustomOp { message, .. } if message.contains("negative")), "{error}");
    assert_eq!(stepped.computes() - before, 1, "the failed run ran once");
    assert_eq!(stepped.computes_of_a_longer_run(), 2, "outputs are still preallocated");
}
