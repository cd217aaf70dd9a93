//! Custom operators written in Rust (`onnxrt::custom_op`), in models built here, on the real
//! runtime: results against values computed independently, attributes, type errors, panicking
//! and failing kernels, concurrent runs, and lifetimes (the session outliving builder and op).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Error, Session, Value};
use onnxrt_onnx_proto::{AttributeProto, NodeProto};
use onnxrt_tests::{builder, gate_op, proto};

const DOMAIN: &str = "ai.onnxrt.rust_test";

/// A model of one `DOMAIN::op` node (plus `extra` default-domain nodes), float inputs and outputs.
fn model(
    op_node: NodeProto,
    extra: Vec<NodeProto>,
    inputs: &[(&str, i32, &[i64])],
    outputs: &[(&str, i32, &[i64])],
) -> Vec<u8> {
    let mut nodes = vec![op_node];
    nodes.extend(extra);
    let infos =
        |list: &[(&str, i32, &[i64])]| list.iter().map(|(n, t, d)| proto::tensor_info(n, *t, d)).collect::<Vec<_>>();
    proto::model_with_opsets(8, &[("", 17), (DOMAIN, 1)], &nodes, &infos(inputs), &infos(outputs))
}

fn f32s(values: &[f32]) -> Value<'static> {
    Value::from_vec(&[values.len() as i64], values.to_vec()).expect("f32 input")
}

// ---- Affine: attributes of every type, two outputs, the second shaped by the kernel ----

/// `y = x * scale + offset + weights[i % len]`; `info = [label.len(), repeat...]` (i64).
struct Affine;

struct AffineKernel {
    scale: f32,
    offset: i64,
    label: String,
    weights: Vec<f32>,
    repeat: Vec<i64>,
}

impl CustomOp for Affine {
    type Kernel = AffineKernel;
    fn name(&self) -> &str {
        "Affine"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32), IoSpec::tensor(ElementType::I64)]
    }
    fn create_kernel(&self, info: &KernelInfo<'_>) -> OpResult<AffineKernel> {
        assert_eq!(info.op(), format!("{DOMAIN}::Affine"));
        assert_eq!((info.input_count()?, info.output_count()?), (1, 2));
        Ok(AffineKernel {
            scale: info.attribute_f32("scale")?,
            offset: info.attribute_i64("offset")?,
            label: info.attribute_string("label")?,
            weights: info.attribute_f32s("weights")?,
            repeat: info.attribute_i64s("repeat")?,
        })
    }
}

impl Kernel for AffineKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        let mut y = ctx.output::<f32>(0, x.shape())?;
        for (i, (y, &x)) in y.iter_mut().zip(x.iter()).enumerate() {
            *y = x * self.scale + self.offset as f32 + self.weights[i % self.weights.len()];
        }
        let mut info = ctx.output::<i64>(1, &[1 + self.repeat.len()])?;
        info[0] = self.label.len() as i64;
        for (slot, &r) in info.iter_mut().skip(1).zip(&self.repeat) {
            *slot = r;
        }
        Ok(())
    }
}

fn affine_model(input_type: i32) -> Vec<u8> {
    let attributes = [
        proto::float_attribute("scale", 1.5),
        proto::int_attribute("offset", -2),
        proto::string_attribute("label", "héllo"),
        proto::floats_attribute("weights", &[0.25, -0.5]),
        proto::ints_attribute("repeat", &[7, -8, 9]),
    ];
    // t = Affine(x); y = t * t (an ordinary ONNX node after ours).
    model(
        proto::domain_node(DOMAIN, "Affine", &["x"], &["t", "info"], &attributes),
        vec![proto::node("Mul", &["t", "t"], &["y"], &[])],
        &[("x", input_type, &[4])],
        &[("y", proto::FLOAT, &[4]), ("info", proto::INT64, &[4])],
    )
}

#[test]
fn a_rust_operator_computes_inside_a_real_graph_with_its_attributes() {
    let session = builder()
        .custom_ops(OpDomain::new(DOMAIN).with(Affine))
        .commit_from_memory(&affine_model(proto::FLOAT))
        .expect("session with the Rust op");
    let x = [1.0f32, -2.0, 0.5, 10.0];
    let outputs = session.run(&[("x", &f32s(&x))]).expect("run");
    // Computed here without the kernel: (x * 1.5 - 2 + w)^2 with w cycling 0.25, -0.5.
    let expected: Vec<f32> = x
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let t = v * 1.5 - 2.0 + [0.25, -0.5][i % 2];
            t * t
        })
        .collect();
    let y: Vec<f32> = outputs.get("y").expect("y").view::<f32>().expect("f32").iter().copied().collect();
    assert_eq!(y, expected);
    let info: Vec<i64> = outputs.get("info").expect("info").view::<i64>().expect("i64").iter().copied().collect();
    assert_eq!(info, ["héllo".len() as i64, 7, -8, 9]);
}

#[test]
fn a_model_feeding_the_wrong_element_type_is_refused_at_session_creation() {
    let err = builder()
        .custom_ops(OpDomain::new(DOMAIN).with(Affine))
        .commit_from_memory(&affine_model(proto::INT64))
        .expect_err("i64 into an f32 input");
    // Before any kernel exists: ORT 1.16.2 while inferring the node's output types ("Node ()
    // output arg (t) type inference failed"); 1.30 names the type ("Type 'tensor(int64)' of
    // input parameter (x) of operator (Affine) ... is invalid").
    assert!(
        matches!(&err, Error::Ort { function: "CreateSessionFromArray", message, .. }
            if message.contains("output arg (t) type inference failed") || message.contains("'tensor(int64)' of input parameter (x)")),
        "{err:?}"
    );
}

#[test]
fn a_missing_attribute_fails_session_creation_naming_op_and_attribute() {
    let bytes = model(
        proto::domain_node(DOMAIN, "Affine", &["x"], &["y", "info"], &[proto::float_attribute("scale", 1.0)]),
        vec![],
        &[("x", proto::FLOAT, &[4])],
        &[("y", proto::FLOAT, &[4]), ("info", proto::INT64, &[4])],
    );
    let err =
        builder().custom_ops(OpDomain::new(DOMAIN).with(Affine)).commit_from_memory(&bytes).expect_err("no `offset`");
    match &err {
        Error::CustomOp { op, panicked: false, message, .. } => {
            assert_eq!(op, &format!("{DOMAIN}::Affine"));
            assert!(message.contains("attribute `offset`"), "{message}");
        }
        other => panic!("expected Error::CustomOp, got {other:?}"),
    }
}

// ---- Misbehave: a kernel that panics, fails or misuses its context when told to ----

/// Copies x to y, except: x[0] == 1 panics, 2 returns an error, 3 makes y twice, 4 writes y as
/// i64, 5 reads x as i64; a node with `panic_at_creation = 1` panics while its kernel is made.
struct Misbehave;

struct MisbehaveKernel;

impl CustomOp for Misbehave {
    type Kernel = MisbehaveKernel;
    fn name(&self) -> &str {
        "Misbehave"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, info: &KernelInfo<'_>) -> OpResult<MisbehaveKernel> {
        if info.attribute_i64("panic_at_creation").unwrap_or(0) == 1 {
            panic!("kernel creation exploded");
        }
        Ok(MisbehaveKernel)
    }
}

impl Kernel for MisbehaveKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        match x[0] as i32 {
            1 => panic!("asked to panic on {}", x[0]),
            2 => return Err(format!("refusing input {}", x[0]).into()),
            3 => {
                let _first = ctx.output::<f32>(0, x.shape())?;
                ctx.output::<f32>(0, x.shape())?;
            }
            4 => {
                ctx.output::<i64>(0, x.shape())?;
            }
            5 => {
                ctx.input::<i64>(0)?;
            }
            _ => ctx.output::<f32>(0, x.shape())?.assign(&x),
        }
        Ok(())
    }
}

fn misbehave_model(attributes: &[AttributeProto]) -> Vec<u8> {
    model(
        proto::domain_node(DOMAIN, "Misbehave", &["x"], &["y"], attributes),
        vec![],
        &[("x", proto::FLOAT, &[2])],
        &[("y", proto::FLOAT, &[2])],
    )
}

fn misbehave_session() -> Session {
    builder()
        .custom_ops(OpDomain::new(DOMAIN).with(Misbehave))
        .commit_from_memory(&misbehave_model(&[]))
        .expect("session")
}

fn copies(session: &Session, x: [f32; 2]) {
    let outputs = session.run(&[("x", &f32s(&x))]).expect("a good run");
    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&x[..]));
}

#[test]
fn a_panic_in_compute_becomes_a_typed_error_and_the_session_stays_usable() {
    let session = misbehave_session();
    copies(&session, [15.0, 16.0]);
    let err = session.run(&[("x", &f32s(&[1.0, 0.0]))]).expect_err("panics");
    match &err {
        Error::CustomOp { op, panicked: true, message, function } => {
            assert_eq!(op, &format!("{DOMAIN}::Misbehave"));
            assert_eq!(message, "asked to panic on 1");
            assert_eq!(*function, "Run");
        }
        other => panic!("expected a caught panic, got {other:?}"),
    }
    assert!(err.to_string().contains("panicked: asked to panic on 1"), "{err}");
    copies(&session, [7.0, 8.0]);
}

#[test]
fn an_error_from_compute_becomes_a_typed_error() {
    let session = misbehave_session();
    let err = session.run(&[("x", &f32s(&[2.0, 0.0]))]).expect_err("fails");
    assert!(
        matches!(&err, Error::CustomOp { panicked: false, message, .. } if message == "refusing input 2"),
        "{err:?}"
    );
    copies(&session, [9.0, 10.0]);
}

#[test]
fn misusing_the_context_is_an_error_not_undefined_behaviour() {
    let session = misbehave_session();
    let twice = session.run(&[("x", &f32s(&[3.0, 0.0]))]).expect_err("output made twice");
    assert!(matches!(&twice, Error::CustomOp { message, .. } if message.contains("already made")), "{twice:?}");
    let wrong = session.run(&[("x", &f32s(&[4.0, 0.0]))]).expect_err("f32 output written as i64");
    assert!(
        matches!(&wrong, Error::CustomOp { message, .. } if message.contains("expects f32 elements but got i64")),
        "{wrong:?}"
    );
    let read = session.run(&[("x", &f32s(&[5.0, 0.0]))]).expect_err("f32 input read as i64");
    assert!(
        matches!(&read, Error::CustomOp { message, .. } if message.contains("read as i64: it holds f32 elements")),
        "{read:?}"
    );
    copies(&session, [11.0, 12.0]);
}

#[test]
fn a_panic_while_making_the_kernel_fails_session_creation() {
    let err = builder()
        .custom_ops(OpDomain::new(DOMAIN).with(Misbehave))
        .commit_from_memory(&misbehave_model(&[proto::int_attribute("panic_at_creation", 1)]))
        .expect_err("creation panics");
    assert!(
        matches!(&err, Error::CustomOp { panicked: true, message, .. } if message == "kernel creation exploded"),
        "{err:?}"
    );
}

// ---- Sum: variadic and optional inputs ----

/// `y = sum(x...)`, optionally times `gain` (an optional first input of shape [1]).
struct Sum;

struct SumKernel;

impl CustomOp for Sum {
    type Kernel = SumKernel;
    fn name(&self) -> &str {
        "Sum"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32).optional(), IoSpec::tensor(ElementType::F32).variadic(1)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<SumKernel> {
        Ok(SumKernel)
    }
}

impl Kernel for SumKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let gain = ctx.optional_input::<f32>(0)?.map_or(1.0, |g| g[0]);
        let first = ctx.input::<f32>(1)?;
        let mut y = ctx.output::<f32>(0, first.shape())?;
        for index in 1..ctx.input_count()? {
            y += &ctx.input::<f32>(index)?;
        }
        y.mapv_inplace(|v| v * gain);
        Ok(())
    }
}

#[test]
fn variadic_and_optional_inputs() {
    let sum_model = |inputs: &[&str], graph_inputs: &[(&str, i32, &[i64])]| {
        model(
            proto::domain_node(DOMAIN, "Sum", inputs, &["y"], &[]),
            vec![],
            graph_inputs,
            &[("y", proto::FLOAT, &[2])],
        )
    };
    let domain = OpDomain::new(DOMAIN).with(Sum);
    let three = builder()
        .custom_ops(domain.clone())
        .commit_from_memory(&sum_model(
            &["", "a", "b", "c"],
            &[("a", proto::FLOAT, &[2]), ("b", proto::FLOAT, &[2]), ("c", proto::FLOAT, &[2])],
        ))
        .expect("three values, no gain");
    let (a, b, c) = (f32s(&[1.0, 2.0]), f32s(&[10.0, 20.0]), f32s(&[100.0, 200.0]));
    let outputs = three.run(&[("a", &a), ("b", &b), ("c", &c)]).expect("run");
    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&[111.0f32, 222.0][..]));

    let gained = builder()
        .custom_ops(domain)
        .commit_from_memory(&sum_model(&["g", "a"], &[("g", proto::FLOAT, &[1]), ("a", proto::FLOAT, &[2])]))
        .expect("one value with a gain");
    let outputs = gained.run(&[("g", &f32s(&[3.0])), ("a", &a)]).expect("run");
    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&[3.0f32, 6.0][..]));
}

// ---- threads and lifetimes ----

/// `y = x + 1`, counting computes and drops.
struct Counted {
    computes: Arc<AtomicUsize>,
    dropped: Arc<Mutex<Vec<&'static str>>>,
}

struct CountedKernel {
    computes: Arc<AtomicUsize>,
    dropped: Arc<Mutex<Vec<&'static str>>>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.dropped.lock().expect("lock").push("op");
    }
}

impl Drop for CountedKernel {
    fn drop(&mut self) {
        self.dropped.lock().expect("lock").push("kernel");
    }
}

impl CustomOp for Counted {
    type Kernel = CountedKernel;
    fn name(&self) -> &str {
        "AddOne"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _: &KernelInfo<'_>) -> OpResult<CountedKernel> {
        Ok(CountedKernel { computes: Arc::clone(&self.computes), dropped: Arc::clone(&self.dropped) })
    }
}

impl Kernel for CountedKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        ctx.output::<f32>(0, x.shape())?.zip_mut_with(&x, |y, &x| *y = x + 1.0);
        self.computes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn add_one_model() -> Vec<u8> {
    model(
        proto::domain_node(DOMAIN, "AddOne", &["x"], &["y"], &[]),
        vec![],
        &[("x", proto::FLOAT, &[3])],
        &[("y", proto::FLOAT, &[3])],
    )
}

#[test]
fn concurrent_runs_from_several_threads() {
    let computes = Arc::new(AtomicUsize::new(0));
    let op = Counted { computes: Arc::clone(&computes), dropped: Arc::default() };
    let session =
        builder().custom_ops(OpDomain::new(DOMAIN).with(op)).commit_from_memory(&add_one_model()).expect("session");
    let (threads, runs) = (4, 50);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let session = &session;
            scope.spawn(move || {
                for r in 0..runs {
                    let base = (t * 1000 + r) as f32;
                    let outputs = session.run(&[("x", &f32s(&[base, base + 0.5, -base]))]).expect("run");
                    let y = outputs[0].view::<f32>().expect("f32");
                    assert_eq!(y.as_slice(), Some(&[base + 1.0, base + 1.5, 1.0 - base][..]), "thread {t} run {r}");
                }
            });
        }
    });
    assert_eq!(computes.load(Ordering::SeqCst), threads * runs);
}

#[test]
fn the_session_keeps_its_operators_alive_after_builder_and_domain_are_dropped() {
    let computes = Arc::new(AtomicUsize::new(0));
    let dropped: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let op = Counted { computes: Arc::clone(&computes), dropped: Arc::clone(&dropped) };
    let session = {
        let domain = OpDomain::new(DOMAIN).with(op);
        let builder = builder().custom_ops(domain.clone());
        let session = builder.clone().commit_from_memory(&add_one_model()).expect("session");
        drop(builder);
        drop(domain);
        session
    };
    assert!(dropped.lock().expect("lock").is_empty(), "nothing may be dropped while the session lives");
    let outputs = session.run(&[("x", &f32s(&[1.0, 2.0, 3.0]))]).expect("run after the op value is gone");
    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&[2.0f32, 3.0, 4.0][..]));
    drop(outputs);
    drop(session);
    // ORT destroys the kernel when the session is released, then the session drops the op.
    assert_eq!(*dropped.lock().expect("lock"), ["kernel", "op"]);
    assert_eq!(computes.load(Ordering::SeqCst), 1);
}

#[test]
fn a_session_dropped_during_an_async_run_releases_its_operators_after_the_run() {
    let dropped: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let op = Counted { computes: Arc::default(), dropped: Arc::clone(&dropped) };
    // `x -> gate_op::Gate -> g -> AddOne -> y`: the run is held in the Gate node until the test
    // opens it, so "the session is dropped while its run is in flight" does not depend on speed.
    let (gate_domain, gate) = gate_op::domain();
    let gated = proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1), (gate_op::DOMAIN, 1)],
        &[
            proto::domain_node(gate_op::DOMAIN, "Gate", &["x"], &["g"], &[]),
            proto::domain_node(DOMAIN, "AddOne", &["g"], &["y"], &[]),
        ],
        &[proto::tensor_info("x", proto::FLOAT, &[3])],
        &[proto::tensor_info("y", proto::FLOAT, &[3])],
    );
    let session = builder()
        .custom_ops(OpDomain::new(DOMAIN).with(op))
        .custom_ops(gate_domain)
        .commit_from_memory(&gated)
        .expect("session");
    let run = session.run_async([("x", f32s(&[1.0, 2.0, 3.0]))], &["y"]).expect("started");
    gate.wait_entered(1);
    drop(session); // the release moves to a thread that waits for the run
    assert!(dropped.lock().expect("lock").is_empty(), "the run is held in its first node");
    gate.open();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let outputs = runtime.block_on(run).expect("the run ends normally");
    assert_eq!(outputs.get("y").expect("y").view::<f32>().expect("f32").as_slice(), Some(&[2.0f32, 3.0, 4.0][..]));
    // The release thread runs after the run's callback; no time limit (a release that never
    // came would hang here).
    while dropped.lock().expect("lock").len() < 2 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(*dropped.lock().expect("lock"), ["kernel", "op"]);
}

#[test]
fn invalid_names_fail_at_commit() {
    let err =
        builder().custom_ops(OpDomain::new("bad\0domain").with(Affine)).commit_from_memory(&affine_model(proto::FLOAT));
    assert!(matches!(err, Err(Error::InteriorNul { .. })), "{err:?}");
}

/// ORT adds a custom op domain to ONNX's process-wide table of domain versions while it creates
/// the session, checking for it and then adding it with no lock between: two sessions created at
/// once with a domain new to the process failed, one of them with "Trying to add a domain to
/// DomainToVersion map, but the domain is already exist" (seen on ORT 1.32 in CI, 2026-12-05,
/// between two tests of this file). The crate now lets such creations take turns. 40 rounds, each
/// with a domain no session has used: 4 threads released by a barrier create a session with it.
#[test]
fn sessions_with_a_new_custom_domain_can_be_created_from_several_threads_at_once() {
    let (rounds, threads) = (40, 4);
    for round in 0..rounds {
        let domain = format!("ai.onnxrt.race{round}");
        let bytes = proto::model_with_opsets(
            8,
            &[("", 17), (domain.as_str(), 1)],
            &[proto::domain_node(&domain, "AddOne", &["x"], &["y"], &[])],
            &[proto::tensor_info("x", proto::FLOAT, &[3])],
            &[proto::tensor_info("y", proto::FLOAT, &[3])],
        );
        let start = std::sync::Barrier::new(threads);
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let (domain, bytes, start) = (&domain, &bytes, &start);
                scope.spawn(move || {
                    let op = Counted { computes: Arc::default(), dropped: Arc::default() };
                    let builder = builder().custom_ops(OpDomain::new(domain).with(op));
                    start.wait();
                    let session = builder.commit_from_memory(bytes).unwrap_or_else(|e| {
                        panic!("round {round}, thread {thread}: {e}");
                    });
                    let outputs = session.run(&[("x", &f32s(&[1.0, 2.0, 3.0]))]).expect("run");
                    assert_eq!(outputs[0].view::<f32>().expect("f32").as_slice(), Some(&[2.0f32, 3.0, 4.0][..]));
                });
            }
        });
    }
}
