//! Element-type codes are sized in one place (`ElementType::byte_size`), which refuses what the
//! crate cannot size: no `Unknown` code reaches an allocation, a zeroing, a copy or a view
//! (docs/soundness.md §6). The outside audit's program: `Value::zeros` of an
//! `Unknown(1)` tensor came back as an f32 tensor of which nothing was zeroed (its size read as 0),
//! read back through a sequence (valgrind: uninitialised reads). Runs under valgrind in CI.

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Error, Value};
use onnxrt_tests::{builder, proto};

/// Codes the crate does not know: 1 is f32's own code smuggled past the enum, 21 and 22 are the
/// 4-bit integers (ORT 1.20 and later report them so), 40 is no type at all.
const UNKNOWN: [u32; 4] = [1, 21, 22, 40];

fn refused(result: onnxrt::Result<Value<'static>>, what: &str) -> Error {
    let error = result.expect_err(what);
    assert_eq!(error.variant(), "InvalidArgument", "{what}: {error}");
    error
}

#[test]
fn zeros_of_an_unknown_code_is_refused_before_anything_is_allocated() {
    for code in UNKNOWN {
        let error = refused(Value::zeros(&[1024], ElementType::Unknown(code)), "zeros of an unknown code");
        assert!(error.to_string().contains(&format!("#{code}")), "{error}");
        refused(Value::zeros(&[0], ElementType::Unknown(code)), "even empty");
        refused(Value::from_bytes(&[4], ElementType::Unknown(code), &[0; 16]), "from_bytes");
        assert!(ElementType::Unknown(code).byte_size().is_err());
    }
}

#[test]
fn the_audit_program_reads_only_zeros() {
    // Before: Ok, and reading the tensor back (here as a sequence's member, as the audit did)
    // gave memory nobody wrote. Now the allocation is refused, and the typed zeros read as zeros.
    refused(Value::zeros(&[1024], ElementType::Unknown(1)), "the audit's Unknown(1)");
    let zeros = Value::zeros(&[1024], ElementType::F32).expect("f32 zeros");
    let sequence = Value::sequence(vec![zeros]).expect("a sequence of one");
    for item in sequence.sequence_items().expect("members") {
        assert!(item.view::<f32>().expect("f32").iter().all(|&x| x == 0.0));
    }
}

#[test]
fn every_known_fixed_size_type_is_sized_and_zeroed() {
    let fixed = [
        (ElementType::F32, 4),
        (ElementType::U8, 1),
        (ElementType::I8, 1),
        (ElementType::U16, 2),
        (ElementType::I16, 2),
        (ElementType::I32, 4),
        (ElementType::I64, 8),
        (ElementType::Bool, 1),
        (ElementType::F16, 2),
        (ElementType::F64, 8),
        (ElementType::U32, 4),
        (ElementType::U64, 8),
        (ElementType::BF16, 2),
        (ElementType::F8E4M3Fn, 1),
        (ElementType::F8E4M3Fnuz, 1),
        (ElementType::F8E5M2, 1),
        (ElementType::F8E5M2Fnuz, 1),
    ];
    for (element_type, size) in fixed {
        assert_eq!(element_type.byte_size().expect("sized"), size, "{element_type}");
        let value = Value::zeros(&[3, 5], element_type).expect("zeros");
        let bytes = value.host_bytes().expect("bytes");
        assert_eq!(bytes.len(), 15 * size, "{element_type}");
        assert!(bytes.iter().all(|&b| b == 0), "{element_type}");
    }
    assert!(ElementType::String.byte_size().is_err(), "strings have no byte size");
    // Strings are ORT's objects: zeros makes empty strings.
    let strings = Value::zeros(&[2], ElementType::String).expect("string zeros");
    assert_eq!(strings.strings().expect("strings"), ["", ""]);
}

/// A Rust operator declaring an output of an unknown element type.
struct Unsized;
struct UnsizedKernel;

impl CustomOp for Unsized {
    type Kernel = UnsizedKernel;
    fn name(&self) -> &str {
        "Unsized"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::Unknown(21))]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<UnsizedKernel> {
        Ok(UnsizedKernel)
    }
}

impl Kernel for UnsizedKernel {
    fn compute(&self, _ctx: &KernelContext<'_>) -> OpResult {
        Ok(())
    }
}

#[test]
fn an_operator_declaring_an_unknown_element_type_is_refused_when_the_session_is_made() {
    const DOMAIN: &str = "ai.onnxrt.soundness";
    let model = proto::model_with_opsets(
        8,
        &[("", 17), (DOMAIN, 1)],
        &[proto::domain_node(DOMAIN, "Unsized", &["x"], &["y"], &[])],
        &[proto::tensor_info("x", proto::FLOAT, &[2])],
        &[proto::tensor_info("y", proto::FLOAT, &[2])],
    );
    let error = builder()
        .custom_ops(OpDomain::new(DOMAIN).with(Unsized))
        .commit_from_memory(&model)
        .expect_err("an output of element type #21");
    assert_eq!(error.variant(), "InvalidArgument", "{error}");
    assert!(error.to_string().contains("#21"), "{error}");
}
