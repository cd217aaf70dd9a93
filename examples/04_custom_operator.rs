//! An operator written in Rust, used by a model: `Clip01` (clamp to [0, 1]) in the domain
//! `example.clip`, then an ordinary `Mul`. The model is built here with the ONNX messages of
//! `onnxrt-onnx-proto`. `cargo run -p onnxrt-examples --example 04_custom_operator`.

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::{ElementType, Session, Value};
use onnxrt_onnx_proto::{
    tensor_proto, tensor_shape_proto, type_proto, GraphProto, Message, ModelProto, NodeProto, OperatorSetIdProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

struct Clip01;
struct Clip01Kernel;

impl CustomOp for Clip01 {
    type Kernel = Clip01Kernel;
    fn name(&self) -> &str {
        "Clip01"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![IoSpec::tensor(ElementType::F32)]
    }
    fn create_kernel(&self, _info: &KernelInfo<'_>) -> OpResult<Clip01Kernel> {
        Ok(Clip01Kernel)
    }
}

impl Kernel for Clip01Kernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        let mut y = ctx.output::<f32>(0, x.shape())?;
        y.iter_mut().zip(x.iter()).for_each(|(y, &x)| *y = x.clamp(0.0, 1.0));
        // An error or a panic here becomes onnxrt::Error::CustomOp for the caller of `run`.
        Ok(())
    }
}

/// `y = Clip01(x) * x`, x and y float [4].
fn model() -> Vec<u8> {
    let float4 = |name: &str| {
        let dim = tensor_shape_proto::Dimension {
            value: Some(tensor_shape_proto::dimension::Value::DimValue(4)),
            denotation: None,
        };
        let tensor = type_proto::Tensor {
            elem_type: Some(tensor_proto::DataType::Float as i32),
            shape: Some(TensorShapeProto { dim: vec![dim] }),
        };
        let r#type = TypeProto { value: Some(type_proto::Value::TensorType(tensor)), denotation: None };
        ValueInfoProto { name: Some(name.into()), r#type: Some(r#type), doc_string: None }
    };
    let node = |domain: &str, op: &str, inputs: &[&str], output: &str| NodeProto {
        input: inputs.iter().map(|i| i.to_string()).collect(),
        output: vec![output.into()],
        op_type: Some(op.into()),
        domain: (!domain.is_empty()).then(|| domain.into()),
        ..Default::default()
    };
    let opset = |domain: &str, version| OperatorSetIdProto { domain: Some(domain.into()), version: Some(version) };
    let graph = GraphProto {
        name: Some("clip_then_mul".into()),
        node: vec![node("example.clip", "Clip01", &["x"], "c"), node("", "Mul", &["c", "x"], "y")],
        input: vec![float4("x")],
        output: vec![float4("y")],
        ..Default::default()
    };
    let model = ModelProto {
        ir_version: Some(8),
        opset_import: vec![opset("", 17), opset("example.clip", 1)],
        graph: Some(graph),
        ..Default::default()
    };
    model.encode_to_vec()
}

fn main() -> onnxrt::Result<()> {
    let session =
        Session::builder().custom_ops(OpDomain::new("example.clip").with(Clip01)).commit_from_memory(&model())?;
    let x = Value::from_vec(&[4], vec![-1.0f32, 0.25, 0.5, 3.0])?;
    let outputs = session.run(&[("x", &x)])?;
    let y: Vec<f32> = outputs.get("y")?.view::<f32>()?.iter().copied().collect();
    assert_eq!(y, [-0.0, 0.0625, 0.25, 3.0]);
    println!("y = {y:?}");
    Ok(())
}
