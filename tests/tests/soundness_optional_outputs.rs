//! "ORT wrote this buffer" is never inferred from "the value still points at our buffer": a
//! session preallocates only outputs every producing node must write (docs/soundness.md §8). The
//! outside audit's program: with the output pool on, a custom
//! operator that leaves its optional output out handed the next caller the previous run's
//! output (`0 -> 42`), because ORT returns a preallocated buffer untouched. Runs under valgrind
//! in CI.

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Outputs, Session, Value, ValueKind};
use onnxrt_tests::{builder, proto};

const DOMAIN: &str = "ai.onnxrt.soundness";

/// `y = x`, and `z = x` only when `x[0]` is not 0. With `z_optional`, `z` is an optional output
/// the kernel may skip; without it, every compute must make `z`, so the pool may lend it.
struct MaybeCopy {
    z_optional: bool,
}
struct MaybeCopyKernel;

impl CustomOp for MaybeCopy {
    type Kernel = MaybeCopyKernel;
    fn name(&self) -> &str {
        "MaybeCopy"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        let z = IoSpec::tensor(ElementType::F32);
        vec![IoSpec::tensor(ElementType::F32), if self.z_optional { z.optional() } else { z }]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<MaybeCopyKernel> {
        Ok(MaybeCopyKernel)
    }
}

impl Kernel for MaybeCopyKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        let mut y = ctx.output::<f32>(0, x.shape())?;
        y.assign(&x);
        if x[[0]] != 0.0 {
            let mut z = ctx.output::<f32>(1, x.shape())?;
            z.assign(&x);
        }
        Ok(())
    }
}

/// One `MaybeCopy` node; `y` and `z` are graph outputs of a fixed shape (what the pool preallocates).
fn session(z_optional: bool) -> Session {
    let model = proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &[proto::domain_node(DOMAIN, "MaybeCopy", &["x"], &["y", "z"], &[])],
        &[proto::tensor_info("x", proto::FLOAT, &[2])],
        &[proto::tensor_info("y", proto::FLOAT, &[2]), proto::tensor_info("z", proto::FLOAT, &[2])],
    );
    builder()
        .custom_ops(OpDomain::new(DOMAIN).with(MaybeCopy { z_optional }))
        .commit_from_memory(&model)
        .expect("session")
}

fn run(session: &Session, first: f32) -> onnxrt::Result<Outputs> {
    let x = Value::from_vec(&[2], vec![first, 1.0f32]).expect("x");
    session.run(&[("x", &x)])
}

fn z_of(outputs: &Outputs) -> Option<Vec<f32>> {
    let z = outputs.get("z").ok()?;
    Some(z.view::<f32>().ok()?.iter().copied().collect())
}

#[test]
fn a_skipped_optional_output_never_holds_an_earlier_runs_data() {
    let session = session(true);
    // The probe run, then a run that writes `z` = 42 and gives its buffers back.
    drop(run(&session, 5.0).expect("probe"));
    let written = run(&session, 42.0).expect("z written");
    assert_eq!(z_of(&written), Some(vec![42.0, 1.0]));
    drop(written);
    // The kernel skips `z` now. Before: `z` came back holding 42 (the buffer the previous run
    // wrote and the pool lent again). Whatever the run answers, it is never 42.
    for _ in 0..4 {
        let skipped = run(&session, 0.0);
        let z = skipped.as_ref().ok().and_then(z_of);
        assert_ne!(z, Some(vec![42.0, 1.0]), "another run's `z` came back: {skipped:?}");
        assert_ne!(z, Some(vec![5.0, 1.0]), "another run's `z` came back: {skipped:?}");
        // What ORT answers without preallocation: the run succeeds, `y` is written, and `z` is an
        // absent value (kind Optional, no tensor), holding no data of any run.
        let skipped = skipped.expect("the run without `z`");
        assert_eq!(skipped.get("y").expect("y").view::<f32>().expect("f32").as_slice(), Some(&[0.0f32, 1.0][..]));
        assert_eq!(skipped.get("z").expect("z").kind().expect("kind"), ValueKind::Optional);
        assert_eq!(z, None, "a skipped output reads as no data");
        let again = run(&session, 42.0).expect("z written");
        assert_eq!(z_of(&again), Some(vec![42.0, 1.0]));
    }
}

#[test]
fn a_required_output_left_unmade_fails_the_run_instead() {
    let session = session(false);
    drop(run(&session, 5.0).expect("probe"));
    let written = run(&session, 42.0).expect("z written");
    assert_eq!(z_of(&written), Some(vec![42.0, 1.0]));
    drop(written);
    for _ in 0..4 {
        let error = run(&session, 0.0).expect_err("a required output not made");
        assert_eq!(error.variant(), "CustomOp", "{error}");
        assert_eq!(z_of(&run(&session, 7.0).expect("z written")), Some(vec![7.0, 1.0]));
    }
}

/// `y = MatMulInteger(uint8(xᵀ), uint8(x))` for `x` of shape `[n, 3]`: `y` is `[3, 3]` whatever
/// `n`, so the pool preallocates it. With `n = 0` (an empty inner axis) ORT's kernel makes `y` but
/// never writes it (1.16.2 and 1.32.0; found by the outside audit of this round), so a recycled
/// buffer came back holding the previous run's product. The right answer is all zeros.
fn empty_product_session() -> Session {
    let model = proto::model_with_opsets(
        8,
        &[("", 17)],
        &[
            proto::node("Transpose", &["x"], &["xt"], &[]),
            proto::node("Cast", &["xt"], &["a"], &[proto::int_attribute("to", proto::UINT8 as i64)]),
            proto::node("Cast", &["x"], &["b"], &[proto::int_attribute("to", proto::UINT8 as i64)]),
            proto::node("MatMulInteger", &["a", "b"], &["y"], &[]),
        ],
        &[proto::batched_tensor_info("x", proto::FLOAT, &[3])],
        &[proto::tensor_info("y", proto::INT32, &[3, 3])],
    );
    builder().commit_from_memory(&model).expect("session")
}

fn product(session: &Session, rows: usize, start: f32) -> Vec<i32> {
    let x = Value::from_vec(&[rows as i64, 3], (0..rows * 3).map(|i| start + i as f32).collect()).expect("x");
    let outputs = session.run(&[("x", &x)]).expect("run");
    let y = outputs.get("y").expect("y").view::<i32>().expect("i32").iter().copied().collect();
    y
}

#[test]
fn an_output_a_builtin_kernel_leaves_unwritten_is_zeros_not_the_previous_run() {
    let session = empty_product_session();
    // The probe run, then runs on pooled buffers that write real products and give them back.
    for round in 0..4 {
        let written = product(&session, 2, 2.0 + round as f32);
        assert!(written.iter().any(|&v| v != 0), "a product of non-zero rows: {written:?}");
        let empty = product(&session, 0, 0.0);
        assert_eq!(
            empty,
            vec![0; 9],
            "round {round}: an empty product returned {empty:?} (the run before: {written:?})"
        );
    }
}
