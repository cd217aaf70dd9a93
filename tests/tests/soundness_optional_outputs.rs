//! "ORT wrote this buffer" is never inferred from "the value still points at our buffer": a
//! session preallocates only outputs every producing node must write (docs/soundness.md,
//! "Preallocated outputs"). The outside audit's program: with the output pool on, a custom
//! operator that leaves its optional output out handed the next caller the previous run's
//! output (`0 -> 42`), because ORT returns a preallocated buffer untouched. Runs under valgrind
//! in CI.

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Outputs, Session, Value, ValueKind};
use onnxrt_tests::{builder, proto};

const DOMAIN: &str = "ai.onnxrt.soundness";

/// `y = x`, and `z = x` only when `x[0]` is not 0: `z` is an optional output the kernel may skip.
struct MaybeCopy;
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
        vec![IoSpec::tensor(ElementType::F32), IoSpec::tensor(ElementType::F32).optional()]
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
fn session() -> Session {
    let model = proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &[proto::domain_node(DOMAIN, "MaybeCopy", &["x"], &["y", "z"], &[])],
        &[proto::tensor_info("x", proto::FLOAT, &[2])],
        &[proto::tensor_info("y", proto::FLOAT, &[2]), proto::tensor_info("z", proto::FLOAT, &[2])],
    );
    builder().custom_ops(OpDomain::new(DOMAIN).with(MaybeCopy)).commit_from_memory(&model).expect("session")
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
    let session = session();
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

/// The same operator with `z` required: every compute must make it, so the pool may lend it.
struct AlwaysCopy;

impl CustomOp for AlwaysCopy {
    type Kernel = MaybeCopyKernel;
    fn name(&self) -> &str {
        "MaybeCopy"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32), IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<MaybeCopyKernel> {
        Ok(MaybeCopyKernel)
    }
}

#[test]
fn a_required_output_left_unmade_fails_the_run_instead() {
    let model = proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &[proto::domain_node(DOMAIN, "MaybeCopy", &["x"], &["y", "z"], &[])],
        &[proto::tensor_info("x", proto::FLOAT, &[2])],
        &[proto::tensor_info("y", proto::FLOAT, &[2]), proto::tensor_info("z", proto::FLOAT, &[2])],
    );
    let session =
        builder().custom_ops(OpDomain::new(DOMAIN).with(AlwaysCopy)).commit_from_memory(&model).expect("session");
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
