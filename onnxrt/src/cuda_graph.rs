//! [`CudaGraph`]: a CUDA session that replays a captured CUDA graph for one batch size, from
//! safe code.
//!
//! It is a [`CudaGraphs`] of one size (that file says how the graph's promise is kept): runs
//! name no `gpu_graph_id`, so it works on every runtime. For several sizes, one `CudaGraphs`
//! session holds the weights once where a `CudaGraph` per size holds them once per size.

use std::ops::Range;
use std::path::Path;

use crate::cuda_graphs::CudaGraphs;
use crate::cuda_stream::CudaStream;
use crate::error::Result;
use crate::providers::cuda::CudaOptions;
use crate::session::{SessionBuilder, ValueInfo};
use crate::value::Value;

/// A session with a CUDA graph for one batch size, and the device buffers every run binds.
///
/// ```no_run
/// use onnxrt::providers::cuda::CudaOptions;
/// use onnxrt::{CudaGraph, CudaStream, Session, Value};
///
/// # fn main() -> onnxrt::Result<()> {
/// // Batch size 32: inputs and outputs whose first axis is free get 32 rows.
/// let mut graph = CudaGraph::from_file(Session::builder(), CudaOptions::new(), "resnet50.onnx", 32)?;
/// let stream = CudaStream::new(0)?;
/// let batch = Value::from_vec(&[32, 3, 224, 224], vec![0.5f32; 32 * 3 * 224 * 224])?;
/// graph.copy_input_rows_from(0, 0..32, &batch, &stream)?;
/// graph.run()?; // the first run captures the graph; later runs replay it
/// let mut logits = Value::zeros(&[32, 1000], onnxrt::ElementType::F32)?;
/// logits.copy_rows_from(0..32, graph.output(0)?, &stream)?;
/// # Ok(()) }
/// ```
pub struct CudaGraph {
    graphs: CudaGraphs,
    rows: usize,
}

impl std::fmt::Debug for CudaGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraph").field("rows", &self.rows).finish_non_exhaustive()
    }
}

impl CudaGraph {
    /// Loads the model at `path` on CUDA with `cuda` (plus the graph), for runs of `rows` rows.
    /// See [`from_memory`](CudaGraph::from_memory).
    pub fn from_file(builder: SessionBuilder, cuda: CudaOptions, path: impl AsRef<Path>, rows: usize) -> Result<Self> {
        Ok(CudaGraph { graphs: CudaGraphs::from_file(builder, cuda, path, &[rows])?, rows })
    }

    /// Loads `model` on CUDA with `cuda` (plus the graph), for runs of `rows` rows: an input or
    /// output whose first axis is free gets `rows` there; every other axis must be fixed. Every
    /// node must run on CUDA (the session is built with
    /// [`strict_gpu`](SessionBuilder::strict_gpu)). The first [`run`](CudaGraph::run) captures
    /// the graph, every later one replays it.
    ///
    /// `builder` carries the session's other settings (threads, optimization level, log id);
    /// give the CUDA options here, not to the builder.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) when `rows` is 0, when the
    /// builder already names a provider, or when an input or output is not a numeric tensor or
    /// has a free axis other than the first (a graph replays fixed shapes); what building a
    /// CUDA session returns otherwise (the model, the provider, a node without a CUDA kernel);
    /// CUDA's error when the device buffers cannot be allocated.
    pub fn from_memory(builder: SessionBuilder, cuda: CudaOptions, model: &[u8], rows: usize) -> Result<Self> {
        Ok(CudaGraph { graphs: CudaGraphs::from_memory(builder, cuda, model, &[rows])?, rows })
    }

    /// The rows (batch size) every run has.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The model's inputs, in order (index `i` is [`input(i)`](CudaGraph::input)).
    pub fn inputs(&self) -> &[ValueInfo] {
        self.graphs.inputs()
    }

    /// The model's outputs, in order (index `i` is [`output(i)`](CudaGraph::output)).
    pub fn outputs(&self) -> &[ValueInfo] {
        self.graphs.outputs()
    }

    /// The device buffer of input `index`, to read (copy from it with [`Value::copy_rows_from`]).
    pub fn input(&self, index: usize) -> Result<&Value<'static>> {
        self.graphs.input(self.rows, index)
    }

    /// The device buffer of output `index`, written by the last run. Copy it out with
    /// [`Value::copy_rows_from`] (host or device destination); the borrow ends before the next
    /// [`run`](CudaGraph::run).
    pub fn output(&self, index: usize) -> Result<&Value<'static>> {
        self.graphs.output(self.rows, index)
    }

    /// Copies rows `rows` of `source` into the same rows of input `index` on `stream`, and
    /// returns once the copy is done (see [`Value::copy_rows_from`]: same element type and row
    /// shape, rows inside both tensors). The other rows keep what they held.
    pub fn copy_input_rows_from(
        &mut self,
        index: usize,
        rows: Range<usize>,
        source: &Value<'_>,
        stream: &CudaStream,
    ) -> Result<()> {
        self.graphs.copy_input_rows_from(self.rows, index, rows, source, stream)
    }

    /// Whether the next [`run`](CudaGraph::run) on the calling thread captures the graph rather
    /// than replays it: true until this graph has run on this thread (ORT keeps captured graphs
    /// per thread). A capture fails if other CUDA work of the process runs meanwhile; see
    /// [`CudaGraphs::run_captures`].
    pub fn run_captures(&self) -> bool {
        // The graph's one size is always among its sizes.
        self.graphs.run_captures(self.rows).unwrap_or(true)
    }

    /// Runs the model on the input buffers into the output buffers: the first run on a thread
    /// captures the graph (ORT runs the model once or twice inside it; see
    /// [`run_captures`](CudaGraph::run_captures)), every later run on that thread replays it.
    /// Returns when the outputs are written.
    ///
    /// Corresponds to `OrtApi::RunWithBinding` on a session with `enable_cuda_graph`.
    pub fn run(&mut self) -> Result<()> {
        self.graphs.run(self.rows)
    }

    /// The graph as a [`CudaGraphs`] of its one size (same session, buffers and captures).
    pub fn into_graphs(self) -> CudaGraphs {
        self.graphs
    }
}

impl From<CudaGraph> for CudaGraphs {
    fn from(graph: CudaGraph) -> CudaGraphs {
        graph.into_graphs()
    }
}
