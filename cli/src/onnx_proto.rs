//! A minimal reader of the ONNX protobuf (`ModelProto`), for what the runtime's API does not
//! tell: opset imports, IR version, the nodes per operator type (subgraphs of `If`/`Loop`/`Scan`
//! included), and the initializers' count and size. Only the fields named here are decoded;
//! everything else is skipped by its wire type.

use std::collections::BTreeMap;

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
}

/// Where and why the bytes are not a `ModelProto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Result<T> = std::result::Result<T, DecodeError>;

/// One field's value on the wire.
enum Wire<'a> {
    Varint(u64),
    Fixed64,
    Bytes(&'a [u8]),
    Fixed32,
}

/// Iterates over the `(field number, value)` pairs of one message.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

fn fields<'a>(buf: &'a [u8], what: &'static str) -> Fields<'a> {
    Fields { buf, pos: 0, what }
}

impl<'a> Fields<'a> {
    fn err(&self, why: &str) -> DecodeError {
        DecodeError(format!("{} at byte {}: {why}", self.what, self.pos))
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.buf.get(self.pos) else { return Err(self.err("truncated varint")) };
            self.pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.buf.len());
        let Some(end) = end else {
            return Err(
                self.err(&format!("a field of {n} bytes runs past the end ({} left)", self.buf.len() - self.pos))
            );
        };
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn field(&mut self) -> Result<(u64, Wire<'a>)> {
        let key = self.varint()?;
        let number = key >> 3;
        let value = match key & 7 {
            0 => Wire::Varint(self.varint()?),
            1 => {
                self.take(8)?;
                Wire::Fixed64
            }
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| self.err("length does not fit in memory"))?;
                Wire::Bytes(self.take(len)?)
            }
            5 => {
                self.take(4)?;
                Wire::Fixed32
            }
            other => return Err(self.err(&format!("wire type {other} is not used by ONNX (not an ONNX model?)"))),
        };
        if number == 0 {
            return Err(self.err("field number 0 (not an ONNX model?)"));
        }
        Ok((number, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, Wire<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() {
            return None;
        }
        let item = self.field();
        if item.is_err() {
            // Stop after the first error.
            self.pos = self.buf.len();
        }
        Some(item)
    }
}

fn bytes<'a>(what: &str, value: Wire<'a>) -> Result<&'a [u8]> {
    match value {
        Wire::Bytes(b) => Ok(b),
        _ => Err(DecodeError(format!("{what}: expected a length-delimited field"))),
    }
}

fn string(what: &str, value: Wire<'_>) -> Result<String> {
    Ok(String::from_utf8_lossy(bytes(what, value)?).into_owned())
}

fn varint(what: &str, value: Wire<'_>) -> Result<u64> {
    match value {
        Wire::Varint(v) => Ok(v),
        _ => Err(DecodeError(format!("{what}: expected a varint"))),
    }
}

/// Values of a repeated integer field, packed (one length-delimited run) or not (one per field).
fn push_ints(what: &'static str, value: Wire<'_>, out: &mut Vec<i64>) -> Result<()> {
    match value {
        Wire::Varint(v) => out.push(v as i64),
        Wire::Bytes(packed) => {
            let mut reader = Fields { buf: packed, pos: 0, what };
            while reader.pos < packed.len() {
                out.push(reader.varint()? as i64);
            }
        }
        _ => return Err(DecodeError(format!("{what}: expected integers"))),
    }
    Ok(())
}

/// Size in bytes of one element of ONNX data type `code`, in eighths of a byte (4-bit types).
fn element_bits(code: i64) -> Option<u64> {
    Some(match code {
        1 | 6 | 12 => 32,         // float, int32, uint32
        2 | 3 | 9 | 17..=20 => 8, // uint8, int8, bool, float8 variants
        4 | 5 | 10 | 16 => 16,    // uint16, int16, float16, bfloat16
        7 | 11 | 13 | 14 => 64,   // int64, double, uint64, complex64
        15 => 128,                // complex128
        21..=23 => 4,             // uint4, int4, float4e2m1
        _ => return None,         // string (8) and unknown codes
    })
}

#[derive(Default)]
struct Tensor {
    dims: Vec<i64>,
    data_type: i64,
    string_bytes: u64,
    stored_bytes: u64,
    external: bool,
}

fn decode_tensor(buf: &[u8]) -> Result<Tensor> {
    let mut t = Tensor::default();
    for field in fields(buf, "TensorProto") {
        let (number, value) = field?;
        match number {
            1 => push_ints("TensorProto.dims", value, &mut t.dims)?,
            2 => t.data_type = varint("TensorProto.data_type", value)? as i64,
            6 => {
                let s = bytes("TensorProto.string_data", value)?;
                t.string_bytes += s.len() as u64;
            }
            // raw_data and the packed typed fields: what is stored, a fallback for unknown types.
            4 | 5 | 7 | 9 | 10 | 11 => {
                t.stored_bytes += match value {
                    Wire::Bytes(b) => b.len() as u64,
                    Wire::Fixed32 => 4,
                    Wire::Varint(_) | Wire::Fixed64 => 8,
                }
            }
            14 => t.external = varint("TensorProto.data_location", value)? == 1,
            _ => {}
        }
    }
    Ok(t)
}

impl Tensor {
    /// Bytes the tensor occupies in memory.
    fn size(&self) -> u64 {
        if self.data_type == 8 {
            return self.string_bytes;
        }
        let elements = self.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
        match (elements, element_bits(self.data_type)) {
            (Some(n), Some(bits)) => n.saturating_mul(bits).div_ceil(8),
            _ => self.stored_bytes,
        }
    }
}

fn decode_node(buf: &[u8], graph: &mut GraphSummary, depth: usize) -> Result<()> {
    let mut op_type = String::new();
    let mut domain = String::new();
    for field in fields(buf, "NodeProto") {
        let (number, value) = field?;
        match number {
            4 => op_type = string("NodeProto.op_type", value)?,
            7 => domain = string("NodeProto.domain", value)?,
            5 => decode_attribute(bytes("NodeProto.attribute", value)?, graph, depth)?,
            _ => {}
        }
    }
    let key = if domain.is_empty() || domain == "ai.onnx" { op_type } else { format!("{domain}.{op_type}") };
    *graph.op_types.entry(key).or_default() += 1;
    Ok(())
}

/// Subgraphs hide in attributes `g` (6) and `graphs` (11).
fn decode_attribute(buf: &[u8], graph: &mut GraphSummary, depth: usize) -> Result<()> {
    for field in fields(buf, "AttributeProto") {
        let (number, value) = field?;
        if number == 6 || number == 11 {
            if depth >= 32 {
                return Err(DecodeError("subgraphs nested more than 32 deep".into()));
            }
            let before = graph.nodes;
            decode_graph(bytes("AttributeProto.g", value)?, graph, depth + 1)?;
            // Nodes of a subgraph are counted apart from the main graph's.
            graph.subgraph_nodes += graph.nodes - before;
            graph.nodes = before;
        }
    }
    Ok(())
}

fn decode_graph(buf: &[u8], graph: &mut GraphSummary, depth: usize) -> Result<()> {
    for field in fields(buf, "GraphProto") {
        let (number, value) = field?;
        match number {
            1 => {
                decode_node(bytes("GraphProto.node", value)?, graph, depth)?;
                graph.nodes += 1;
            }
            2 if depth == 0 => graph.name = string("GraphProto.name", value)?,
            5 if depth == 0 => {
                let tensor = decode_tensor(bytes("GraphProto.initializer", value)?)?;
                graph.initializers += 1;
                graph.initializer_bytes += tensor.size();
                graph.external_initializers += usize::from(tensor.external);
            }
            15 if depth == 0 => {
                bytes("GraphProto.sparse_initializer", value)?;
                graph.sparse_initializers += 1;
            }
            _ => {}
        }
    }
    Ok(())
}

fn decode_opset(buf: &[u8]) -> Result<(String, i64)> {
    let mut domain = String::new();
    let mut version = 0;
    for field in fields(buf, "OperatorSetIdProto") {
        let (number, value) = field?;
        match number {
            1 => domain = string("OperatorSetIdProto.domain", value)?,
            2 => version = varint("OperatorSetIdProto.version", value)? as i64,
            _ => {}
        }
    }
    Ok((domain, version))
}

/// Decodes what [`ModelSummary`] holds from a serialized `ModelProto`.
///
/// # Errors
/// [`DecodeError`] naming the message and byte offset where the bytes stop making sense
/// (a truncated file, or not an ONNX model at all), or a model without a graph.
pub fn decode(buf: &[u8]) -> Result<ModelSummary> {
    let mut summary = ModelSummary::default();
    let mut graph = None;
    for field in fields(buf, "ModelProto") {
        let (number, value) = field?;
        match number {
            1 => summary.ir_version = varint("ModelProto.ir_version", value)? as i64,
            2 => summary.producer_name = string("ModelProto.producer_name", value)?,
            3 => summary.producer_version = string("ModelProto.producer_version", value)?,
            7 => graph = Some(bytes("ModelProto.graph", value)?),
            8 => summary.opsets.push(decode_opset(bytes("ModelProto.opset_import", value)?)?),
            _ => {}
        }
    }
    let graph = graph.ok_or_else(|| DecodeError("ModelProto has no graph (not an ONNX model?)".into()))?;
    decode_graph(graph, &mut summary.graph, 0)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint_bytes(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn len_field(number: u64, payload: &[u8], out: &mut Vec<u8>) {
        varint_bytes(number << 3 | 2, out);
        varint_bytes(payload.len() as u64, out);
        out.extend_from_slice(payload);
    }

    fn varint_field(number: u64, v: u64, out: &mut Vec<u8>) {
        varint_bytes(number << 3, out);
        varint_bytes(v, out);
    }

    fn node(op: &str, domain: &str) -> Vec<u8> {
        let mut n = Vec::new();
        len_field(4, op.as_bytes(), &mut n);
        if !domain.is_empty() {
            len_field(7, domain.as_bytes(), &mut n);
        }
        n
    }

    #[test]
    fn nodes_subgraphs_initializers_and_opsets_are_counted() {
        // An `If` node whose then_branch (attribute g) holds a Relu.
        let mut sub = Vec::new();
        len_field(1, &node("Relu", ""), &mut sub);
        let mut attr = Vec::new();
        len_field(1, b"then_branch", &mut attr);
        len_field(6, &sub, &mut attr);
        let mut if_node = node("If", "");
        len_field(5, &attr, &mut if_node);
        // A float initializer [2, 3] with packed dims and raw data, and an fp16 one [5] unpacked.
        let mut t1 = Vec::new();
        len_field(1, &[2, 3], &mut t1);
        varint_field(2, 1, &mut t1);
        len_field(9, &[0u8; 24], &mut t1);
        let mut t2 = Vec::new();
        varint_field(1, 5, &mut t2);
        varint_field(2, 10, &mut t2);
        let mut graph = Vec::new();
        len_field(1, &if_node, &mut graph);
        len_field(1, &node("FusedConv", "com.microsoft"), &mut graph);
        len_field(2, b"g", &mut graph);
        len_field(5, &t1, &mut graph);
        len_field(5, &t2, &mut graph);
        let mut opset = Vec::new();
        varint_field(2, 17, &mut opset);
        let mut model = Vec::new();
        varint_field(1, 8, &mut model);
        len_field(2, b"me", &mut model);
        len_field(7, &graph, &mut model);
        len_field(8, &opset, &mut model);
        let s = decode(&model).expect("decodes");
        assert_eq!(s.ir_version, 8);
        assert_eq!(s.opsets, [(String::new(), 17)]);
        assert_eq!(s.graph.name, "g");
        assert_eq!(s.graph.nodes, 2);
        assert_eq!(s.graph.subgraph_nodes, 1);
        assert_eq!(s.graph.op_types.get("com.microsoft.FusedConv"), Some(&1));
        assert_eq!(s.graph.op_types.get("Relu"), Some(&1));
        assert_eq!(s.graph.initializers, 2);
        assert_eq!(s.graph.initializer_bytes, 24 + 10);
        // Cut anywhere inside, it is an error, not a panic.
        for cut in 1..model.len() {
            let _ = decode(&model[..cut]);
        }
        assert!(decode(&model[..model.len() - 3]).is_err());
    }
}
