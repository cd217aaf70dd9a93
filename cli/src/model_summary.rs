//! What `inspect` reports from the model's protobuf itself, for what the runtime's API does not
//! tell: opset imports, IR version, the nodes per operator type (subgraphs of `If`/`Loop`/`Scan`
//! included), and the initializers' count and size. The protobuf is decoded by the messages of
//! `onnxrt-onnx-proto` (generated from the official `onnx.proto`).

use std::collections::BTreeMap;

use onnxrt_onnx_proto::prost::bytes::Bytes;
use onnxrt_onnx_proto::tensor_proto::{DataLocation, DataType};
use onnxrt_onnx_proto::{GraphProto, Message, ModelProto, TensorProto};

/// What `inspect` reports from the protobuf itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelSummary {
    /// `ir_version`.
    pub ir_version: i64,
    /// `producer_name`.
    pub producer_name: String,
    /// `producer_version`.
    pub producer_version: String,
    /// Operator set imports as `(domain, version)`; `""` is the default ONNX domain.
    pub opsets: Vec<(String, i64)>,
    /// The main graph.
    pub graph: GraphSummary,
}

/// Counts over a graph and its subgraphs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphSummary {
    /// The graph's name.
    pub name: String,
    /// Nodes of the main graph.
    pub nodes: usize,
    /// Nodes inside subgraphs (attributes of control-flow nodes).
    pub subgraph_nodes: usize,
    /// Nodes per operator type, main graph and subgraphs; `domain.Op` outside the default domain.
    pub op_types: BTreeMap<String, usize>,
    /// Dense initializers of the main graph.
    pub initializers: usize,
    /// Their size in memory: elements × element size (strings: their bytes).
    pub initializer_bytes: u64,
    /// How many of them keep their data in an external file.
    pub external_initializers: usize,
    /// Sparse initializers of the main graph.
    pub sparse_initializers: usize,
    /// `Constant` nodes of the main graph holding a tensor (some exporters keep weights there
    /// rather than in initializers).
    pub constants: usize,
    /// Their tensors' size in memory.
    pub constant_bytes: u64,
    /// The main graph's nodes, in file order.
    pub node_list: Vec<Node>,
}

/// One node of the main graph, for `inspect --nodes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// Its name (often empty in exported models).
    pub name: String,
    /// Operator type, `domain.Op` outside the default domain.
    pub op_type: String,
    /// Input names; `""` for an optional input left out.
    pub inputs: Vec<String>,
    /// Output names.
    pub outputs: Vec<String>,
}

/// Why the bytes are not a `ModelProto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Size of one element of ONNX data type `code` in bits (4-bit types included); `None` for
/// strings and unknown codes.
fn element_bits(code: i32) -> Option<u64> {
    use DataType as T;
    // uint4, int4 and float4e2m1 came after the onnx release the messages are generated from.
    if (21..=23).contains(&code) {
        return Some(4);
    }
    Some(match T::try_from(code).ok()? {
        T::Float | T::Int32 | T::Uint32 => 32,
        T::Uint8 | T::Int8 | T::Bool => 8,
        T::Float8e4m3fn | T::Float8e4m3fnuz | T::Float8e5m2 | T::Float8e5m2fnuz => 8,
        T::Uint16 | T::Int16 | T::Float16 | T::Bfloat16 => 16,
        T::Int64 | T::Double | T::Uint64 | T::Complex64 => 64,
        T::Complex128 => 128,
        T::Undefined | T::String => return None,
    })
}

/// Bytes a tensor occupies in memory: from its dims and type, else what is stored.
fn tensor_size(t: &TensorProto) -> u64 {
    let data_type = t.data_type();
    if data_type == DataType::String as i32 {
        return t.string_data.iter().map(|s| s.len() as u64).sum();
    }
    let elements = t.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
    match (elements, element_bits(data_type)) {
        (Some(n), Some(bits)) => n.saturating_mul(bits).div_ceil(8),
        _ => {
            let stored = [t.float_data.len() * 4, t.int32_data.len() * 4, t.int64_data.len() * 8];
            let stored = stored.iter().sum::<usize>() + t.double_data.len() * 8 + t.uint64_data.len() * 8;
            t.raw_data().len() as u64 + stored as u64
        }
    }
}

/// Counts the nodes of `graph` into `summary`, subgraphs (attributes `g` and `graphs`) apart.
fn count_nodes(graph: &GraphProto, summary: &mut GraphSummary, depth: usize) -> Result<(), DecodeError> {
    for node in &graph.node {
        if depth == 0 {
            summary.nodes += 1;
        } else {
            summary.subgraph_nodes += 1;
        }
        let (op_type, domain) = (node.op_type(), node.domain());
        let key =
            if domain.is_empty() || domain == "ai.onnx" { op_type.to_owned() } else { format!("{domain}.{op_type}") };
        if depth == 0 {
            if key == "Constant" {
                if let Some(tensor) = node.attribute.iter().find_map(|a| a.t.as_ref()) {
                    summary.constants += 1;
                    summary.constant_bytes += tensor_size(tensor);
                }
            }
            summary.node_list.push(Node {
                name: node.name().to_owned(),
                op_type: key.clone(),
                inputs: node.input.clone(),
                outputs: node.output.clone(),
            });
        }
        *summary.op_types.entry(key).or_default() += 1;
        for attribute in &node.attribute {
            for subgraph in attribute.g.iter().chain(&attribute.graphs) {
                if depth >= 32 {
                    return Err(DecodeError("subgraphs nested more than 32 deep".into()));
                }
                count_nodes(subgraph, summary, depth + 1)?;
            }
        }
    }
    Ok(())
}

/// Decodes a serialized `ModelProto` and summarizes it. Tensor data is shared with `buf`, not
/// copied, so a model of hundreds of megabytes costs its file once.
///
/// # Errors
/// [`DecodeError`] saying where the bytes stop making sense (a truncated file, or not an ONNX
/// model at all), or a model without a graph.
pub fn decode(buf: Bytes) -> Result<ModelSummary, DecodeError> {
    let model = ModelProto::decode(buf).map_err(|e| DecodeError(e.to_string()))?;
    let graph =
        model.graph.as_ref().ok_or_else(|| DecodeError("ModelProto has no graph (not an ONNX model?)".into()))?;
    let mut summary = ModelSummary {
        ir_version: model.ir_version(),
        producer_name: model.producer_name().to_owned(),
        producer_version: model.producer_version().to_owned(),
        opsets: model.opset_import.iter().map(|o| (o.domain().to_owned(), o.version())).collect(),
        graph: GraphSummary { name: graph.name().to_owned(), ..GraphSummary::default() },
    };
    let g = &mut summary.graph;
    count_nodes(graph, g, 0)?;
    g.initializers = graph.initializer.len();
    g.initializer_bytes = graph.initializer.iter().map(tensor_size).sum();
    g.external_initializers = graph.initializer.iter().filter(|t| t.data_location() == DataLocation::External).count();
    g.sparse_initializers = graph.sparse_initializer.len();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use onnxrt_onnx_proto::{AttributeProto, NodeProto, OperatorSetIdProto};

    use super::*;

    fn node(op: &str, domain: &str, attribute: Vec<AttributeProto>) -> NodeProto {
        let domain = (!domain.is_empty()).then(|| domain.to_owned());
        NodeProto { op_type: Some(op.into()), domain, attribute, ..Default::default() }
    }

    #[test]
    fn nodes_subgraphs_initializers_and_opsets_are_counted() {
        // An `If` node whose then_branch (attribute g) holds a Relu.
        let then_branch = GraphProto { node: vec![node("Relu", "", vec![])], ..Default::default() };
        let attribute = AttributeProto { name: Some("then_branch".into()), g: Some(then_branch), ..Default::default() };
        // A float initializer [2, 3] with raw data, an fp16 one [5] without data, and an external one.
        let t1 = TensorProto {
            dims: vec![2, 3],
            data_type: Some(DataType::Float as i32),
            raw_data: Some(vec![0u8; 24].into()),
            ..Default::default()
        };
        let t2 = TensorProto { dims: vec![5], data_type: Some(DataType::Float16 as i32), ..Default::default() };
        let t3 = TensorProto {
            dims: vec![1],
            data_type: Some(DataType::Int64 as i32),
            data_location: Some(DataLocation::External as i32),
            ..Default::default()
        };
        let graph = GraphProto {
            node: vec![node("If", "", vec![attribute]), node("FusedConv", "com.microsoft", vec![])],
            name: Some("g".into()),
            initializer: vec![t1, t2, t3],
            ..Default::default()
        };
        let model = ModelProto {
            ir_version: Some(8),
            producer_name: Some("me".into()),
            graph: Some(graph),
            opset_import: vec![OperatorSetIdProto { domain: None, version: Some(17) }],
            ..Default::default()
        }
        .encode_to_vec();
        let s = decode(model.clone().into()).expect("decodes");
        assert_eq!(s.ir_version, 8);
        assert_eq!(s.producer_name, "me");
        assert_eq!(s.opsets, [(String::new(), 17)]);
        assert_eq!(s.graph.name, "g");
        assert_eq!(s.graph.nodes, 2);
        assert_eq!(s.graph.subgraph_nodes, 1);
        assert_eq!(s.graph.op_types.get("com.microsoft.FusedConv"), Some(&1));
        assert_eq!(s.graph.op_types.get("Relu"), Some(&1));
        assert_eq!(s.graph.initializers, 3);
        assert_eq!(s.graph.initializer_bytes, 24 + 10 + 8);
        assert_eq!(s.graph.external_initializers, 1);
        // Cut anywhere inside, it is an error or a shorter model, never a panic.
        for cut in 1..model.len() {
            let _ = decode(Bytes::copy_from_slice(&model[..cut]));
        }
        assert!(decode(Bytes::copy_from_slice(&model[..model.len() - 3])).is_err());
    }

    #[test]
    fn subgraphs_nested_too_deep_are_an_error() {
        let mut graph = GraphProto { node: vec![node("Relu", "", vec![])], ..Default::default() };
        for _ in 0..40 {
            let attribute = AttributeProto { g: Some(graph), ..Default::default() };
            graph = GraphProto { node: vec![node("If", "", vec![attribute])], ..Default::default() };
        }
        let model = ModelProto { graph: Some(graph), ..Default::default() }.encode_to_vec();
        let err = decode(model.into()).expect_err("too deep");
        assert!(err.0.contains("32 deep") || err.0.contains("recursion"), "{err}");
    }

    #[test]
    fn bytes_that_are_no_model_are_an_error() {
        assert!(decode(Bytes::from_static(b"hello, this is text")).is_err());
        assert!(decode(Bytes::new()).expect_err("empty").0.contains("no graph"));
    }
}
