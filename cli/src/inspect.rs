//! `onnxrt inspect MODEL [--json]`: a model's inputs and outputs (with symbolic dimensions) and
//! metadata as the runtime sees them, plus opsets, operators and initializers from the protobuf.

use std::path::Path;

use onnxrt::{Dim, ModelMetadata, Session, ValueInfo, ValueKind};
use serde_json::{json, Value as Json};

use crate::error::{CliError, Result};
use crate::model_summary::{self, ModelSummary};
use crate::output::{self, Table};

/// What the runtime says about the model.
struct Loaded {
    inputs: Vec<ValueInfo>,
    outputs: Vec<ValueInfo>,
    metadata: ModelMetadata,
}

/// Everything `inspect` shows.
struct Inspection {
    file_bytes: u64,
    proto: ModelSummary,
    /// The runtime's view, or why it refused the model (the protobuf part is shown either way:
    /// the IR version and opsets are what a refused model needs looked at).
    runtime: std::result::Result<Loaded, onnxrt::Error>,
}

fn load(model: &Path) -> onnxrt::Result<Loaded> {
    // From the file, so that initializers in external data files are found beside it.
    let session = Session::builder().commit_from_file(model)?;
    Ok(Loaded { inputs: session.inputs().to_vec(), outputs: session.outputs().to_vec(), metadata: session.metadata()? })
}

/// Runs `inspect`.
pub fn run(model: &Path, as_json: bool, nodes: bool) -> Result<()> {
    let bytes = std::fs::read(model).map_err(CliError::io("cannot read model", model))?;
    let file_bytes = bytes.len() as u64;
    let proto = model_summary::decode(bytes.into()).map_err(|e| {
        CliError::Failed(format!(
            "{} is not a readable ONNX model: {e}. The file is truncated or is not an ONNX model; export it again",
            model.display()
        ))
    })?;
    let inspection = Inspection { file_bytes, proto, runtime: load(model) };
    if as_json {
        let mut json = to_json(model, &inspection);
        if nodes {
            json["nodes"]["list"] = nodes_json(&inspection.proto.graph.node_list);
        }
        output::print_json(&json)?;
    } else {
        let mut text = to_text(model, &inspection);
        if nodes {
            text.push_str(&nodes_text(&inspection.proto.graph.node_list));
        }
        output::out(&text)?;
    }
    match inspection.runtime {
        Ok(_) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// `f32`, or the kind for values that are not tensors.
pub fn type_name(info: &ValueInfo) -> String {
    match (info.kind, info.element_type) {
        (ValueKind::Tensor, Some(element)) => element.to_string(),
        (ValueKind::Tensor, None) => "tensor".into(),
        (ValueKind::Sequence, Some(element)) => format!("sequence<{element}>"),
        (ValueKind::Sequence, None) => "sequence".into(),
        (ValueKind::Map, _) => "map".into(),
        (ValueKind::Optional, element) => match (info.contains, element) {
            (Some(ValueKind::Sequence), Some(element)) => format!("optional<sequence<{element}>>"),
            (_, Some(element)) => format!("optional<{element}>"),
            _ => "optional".into(),
        },
        (ValueKind::SparseTensor, _) => "sparse tensor".into(),
        (other, _) => format!("{other:?}").to_lowercase(),
    }
}

fn shape_json(info: &ValueInfo) -> Json {
    if info.kind != ValueKind::Tensor && !(info.kind == ValueKind::Optional && info.contains == Some(ValueKind::Tensor))
    {
        return Json::Null;
    }
    info.shape
        .iter()
        .map(|d| match d {
            Dim::Fixed(n) => json!(n),
            Dim::Symbolic(name) => json!(name),
            Dim::Unknown => Json::Null,
        })
        .collect()
}

fn shape_text(info: &ValueInfo) -> String {
    if info.kind == ValueKind::Tensor {
        info.shape_text()
    } else {
        "-".into()
    }
}

/// ORT reports a model without `model_version` as `i64::MAX`.
fn model_version(m: &ModelMetadata) -> Option<i64> {
    (m.version != i64::MAX).then_some(m.version)
}

fn opset_name(domain: &str) -> &str {
    if domain.is_empty() {
        "ai.onnx"
    } else {
        domain
    }
}

fn to_json(model: &Path, i: &Inspection) -> Json {
    let values = |list: &[ValueInfo]| -> Json {
        list.iter().map(|v| json!({ "name": v.name, "type": type_name(v), "shape": shape_json(v) })).collect()
    };
    let g = &i.proto.graph;
    let (inputs, outputs, metadata, error) = match &i.runtime {
        Ok(loaded) => {
            let m = &loaded.metadata;
            let metadata = json!({
                "producer": m.producer,
                "producer_version": i.proto.producer_version,
                "graph_name": m.graph_name,
                "domain": m.domain,
                "description": m.description,
                "graph_description": m.graph_description,
                "version": model_version(m),
                "custom": m.custom,
            });
            (values(&loaded.inputs), values(&loaded.outputs), metadata, Json::Null)
        }
        Err(e) => (Json::Null, Json::Null, Json::Null, json!(e.to_string())),
    };
    json!({
        "path": model.display().to_string(),
        "file_bytes": i.file_bytes,
        "ir_version": i.proto.ir_version,
        "producer": i.proto.producer_name,
        "opsets": i.proto.opsets.iter().map(|(d, v)| json!({ "domain": opset_name(d), "version": v })).collect::<Json>(),
        "inputs": inputs,
        "outputs": outputs,
        "metadata": metadata,
        "runtime_error": error,
        "nodes": { "total": g.nodes, "in_subgraphs": g.subgraph_nodes, "by_op_type": g.op_types },
        "initializers": {
            "count": g.initializers,
            "bytes": g.initializer_bytes,
            "external": g.external_initializers,
            "sparse": g.sparse_initializers,
            "constant_nodes": g.constants,
            "constant_bytes": g.constant_bytes,
        },
    })
}

fn nodes_json(nodes: &[model_summary::Node]) -> Json {
    nodes
        .iter()
        .map(|n| json!({ "name": n.name, "op_type": n.op_type, "inputs": n.inputs, "outputs": n.outputs }))
        .collect()
}

/// `--nodes`: the main graph's nodes in file order (subgraphs are counted above, not listed).
fn nodes_text(nodes: &[model_summary::Node]) -> String {
    let mut table = Table::new(&["#", "NAME", "OP", "INPUTS", "OUTPUTS"]);
    for (i, n) in nodes.iter().enumerate() {
        let name = if n.name.is_empty() { "(unnamed)".to_owned() } else { n.name.clone() };
        // An optional input left out is an empty name; shown as `-` so positions stay readable.
        let inputs: Vec<&str> = n.inputs.iter().map(|s| if s.is_empty() { "-" } else { s.as_str() }).collect();
        table.row([i.to_string(), name, n.op_type.clone(), inputs.join(", "), n.outputs.join(", ")]);
    }
    format!("\nNODE LIST ({})\n{}", nodes.len(), table.render())
}

/// The initializers line: count and size, and where else weights are (external files, sparse,
/// `Constant` nodes).
fn initializers_text(g: &model_summary::GraphSummary) -> String {
    let mut text = if g.initializers == 0 {
        "none".to_owned()
    } else {
        format!("{} ({} bytes, {})", g.initializers, g.initializer_bytes, output::bytes(g.initializer_bytes))
    };
    if g.external_initializers > 0 {
        text.push_str(&format!(", {} with external data", g.external_initializers));
    }
    if g.sparse_initializers > 0 {
        text.push_str(&format!(", {} sparse", g.sparse_initializers));
    }
    if g.constants > 0 {
        text.push_str(&format!(
            "; {} Constant node(s) hold {} more ({} bytes)",
            g.constants,
            output::bytes(g.constant_bytes),
            g.constant_bytes
        ));
    }
    text
}

fn to_text(model: &Path, i: &Inspection) -> String {
    let g = &i.proto.graph;
    let mut producer = i.proto.producer_name.clone();
    if !i.proto.producer_version.is_empty() {
        producer = format!("{producer} {}", i.proto.producer_version);
    }
    let opsets: Vec<String> = i.proto.opsets.iter().map(|(d, v)| format!("{} {v}", opset_name(d))).collect();
    let mut pairs = vec![
        ("model", format!("{} ({})", model.display(), output::bytes(i.file_bytes))),
        ("producer", if producer.is_empty() { "(not set)".into() } else { producer }),
    ];
    if let Ok(loaded) = &i.runtime {
        let m = &loaded.metadata;
        pairs.push(("graph", m.graph_name.clone()));
        pairs.push(("domain", m.domain.clone()));
        pairs.push(("version", model_version(m).map_or_else(|| "(not set)".to_owned(), |v| v.to_string())));
    } else {
        pairs.push(("graph", g.name.clone()));
    }
    pairs.push(("ir version", i.proto.ir_version.to_string()));
    pairs.push(("opsets", opsets.join(", ")));
    if let Ok(loaded) = &i.runtime {
        let m = &loaded.metadata;
        if !m.description.is_empty() {
            pairs.push(("description", m.description.clone()));
        }
        if !m.graph_description.is_empty() {
            pairs.push(("graph doc", m.graph_description.clone()));
        }
        let custom: Vec<String> = m.custom.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !custom.is_empty() {
            pairs.push(("custom", custom.join(", ")));
        }
    }
    let mut out = output::key_values(&pairs);
    match &i.runtime {
        Ok(loaded) => {
            for (title, list) in [("INPUTS", &loaded.inputs), ("OUTPUTS", &loaded.outputs)] {
                let mut table = Table::new(&["NAME", "TYPE", "SHAPE"]);
                for v in list {
                    table.row([v.name.clone(), type_name(v), shape_text(v)]);
                }
                out.push_str(&format!("\n{title} ({})\n", list.len()));
                out.push_str(&table.render());
            }
        }
        Err(_) => out.push_str("\nINPUTS, OUTPUTS  unknown: ONNX Runtime did not load the model (the error follows)\n"),
    }
    let subgraphs = if g.subgraph_nodes > 0 { format!(" + {} in subgraphs", g.subgraph_nodes) } else { String::new() };
    out.push_str(&format!("\nNODES ({}{subgraphs})\n", g.nodes));
    let mut ops = Table::new(&["OP", "COUNT"]);
    let mut counts: Vec<(&String, &usize)> = g.op_types.iter().collect();
    counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (op, n) in counts {
        ops.row([op.clone(), n.to_string()]);
    }
    out.push_str(&ops.render());
    out.push_str(&format!("\nINITIALIZERS  {}\n", initializers_text(g)));
    out
}
