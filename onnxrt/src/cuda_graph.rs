//! [`CudaGraph`]: a CUDA session that replays a captured CUDA graph, from safe code.
//!
//! Once ORT has captured a session's graph, its run only replays it: it reads and writes the
//! addresses of the capture run and looks at nothing the new run binds
//! (`CudaOptions::enable_cuda_graph`, which is `unsafe` for that reason). A `CudaGraph` keeps
//! that promise by construction: it owns the session (never handed out, so nothing else runs
//! it) and one device buffer per input and output, made with the session, bound on every run,
//! and freed only after the session. Callers fill the inputs with copies and read the outputs
//! with copies; they never get a buffer they could replace or free.

use std::ops::Range;
use std::path::Path;
use std::thread::ThreadId;

use crate::cuda_stream::CudaStream;
use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::providers::cuda::CudaOptions;
use crate::session::{Dim, Session, SessionBuilder, ValueInfo};
use crate::value::{Value, ValueKind};

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
    // Dropped first: fields drop in declaration order, and the session (which holds the
    // captured graph) must be gone before the buffers the graph reads and writes are freed.
    session: Session,
    inputs: Vec<Value<'static>>,
    outputs: Vec<Value<'static>>,
    rows: usize,
    // The threads this graph has run on: ORT's CUDA provider keeps its captured graphs per
    // thread, so the first run on each thread captures again (`run_captures`).
    ran_on: Vec<ThreadId>,
}

impl std::fmt::Debug for CudaGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraph").field("rows", &self.rows).finish_non_exhaustive()
    }
}

impl CudaGraph {
    /// Loads the model at `path` on CUDA with `cuda` (plus the graph), for runs of `rows` rows.
    /// See [`from_memory`](CudaGraph::from_memory).
    pub fn from_file(
        builder: SessionBuilder,
        cuda: CudaOptions,
        path: impl AsRef<Path>,
        rows: usize,
    ) -> Result<CudaGraph> {
        let device_id = check_builder(&builder, &cuda, rows)?;
        let session = builder.cuda(graph_options(cuda)).strict_gpu(true).commit_from_file(path)?;
        CudaGraph::around(session, device_id, rows)
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
    /// [`Error::InvalidArgument`] when `rows` is 0, when the builder already names a provider,
    /// or when an input or output is not a numeric tensor or has a free axis other than the
    /// first (a graph replays fixed shapes); what building a CUDA session returns otherwise
    /// (the model, the provider, a node without a CUDA kernel); CUDA's error when the device
    /// buffers cannot be allocated.
    pub fn from_memory(builder: SessionBuilder, cuda: CudaOptions, model: &[u8], rows: usize) -> Result<CudaGraph> {
        let device_id = check_builder(&builder, &cuda, rows)?;
        let session = builder.cuda(graph_options(cuda)).strict_gpu(true).commit_from_memory(model)?;
        CudaGraph::around(session, device_id, rows)
    }

    fn around(session: Session, device_id: i32, rows: usize) -> Result<CudaGraph> {
        let buffers = |infos: &[ValueInfo], what: &str| -> Result<Vec<Value<'static>>> {
            infos
                .iter()
                .map(|info| {
                    let (shape, element_type) = graph_shape(info, rows, what)?;
                    Ok(Value::zeros_cuda(&shape, element_type, device_id)?.with_name(info.name.as_str().into()))
                })
                .collect()
        };
        let inputs = buffers(session.inputs(), "input")?;
        let outputs = buffers(session.outputs(), "output")?;
        Ok(CudaGraph { session, inputs, outputs, rows, ran_on: Vec::new() })
    }

    /// The rows (batch size) every run has.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The model's inputs, in order (index `i` is [`input(i)`](CudaGraph::input)).
    pub fn inputs(&self) -> &[ValueInfo] {
        self.session.inputs()
    }

    /// The model's outputs, in order (index `i` is [`output(i)`](CudaGraph::output)).
    pub fn outputs(&self) -> &[ValueInfo] {
        self.session.outputs()
    }

    /// The device buffer of input `index`, to read (copy from it with [`Value::copy_rows_from`]).
    pub fn input(&self, index: usize) -> Result<&Value<'static>> {
        self.inputs.get(index).ok_or_else(|| no_such("input", index, self.inputs.len()))
    }

    /// The device buffer of output `index`, written by the last run. Copy it out with
    /// [`Value::copy_rows_from`] (host or device destination); the borrow ends before the next
    /// [`run`](CudaGraph::run).
    pub fn output(&self, index: usize) -> Result<&Value<'static>> {
        self.outputs.get(index).ok_or_else(|| no_such("output", index, self.outputs.len()))
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
        let count = self.inputs.len();
        let input = self.inputs.get_mut(index).ok_or_else(|| no_such("input", index, count))?;
        input.copy_rows_from(rows, source, stream)
    }

    /// Whether the next [`run`](CudaGraph::run) on the calling thread captures the graph rather
    /// than replays it: true until this graph has run on this thread. ORT's CUDA provider keeps
    /// its captured graphs per thread (seen with 1.30 on an H100), so each thread's first run
    /// captures anew.
    ///
    /// A capture fails if other CUDA work of the process runs meanwhile (the ORT sources read
    /// begin a capture in CUDA's global capture mode; "operation failed due to a previous error
    /// during capture" was seen on an H100 with a copy on another thread), and the run returns
    /// that error. Run a capturing run
    /// while nothing else uses CUDA, e.g. under an exclusive lock that every other CUDA user of
    /// the process shares (the serving batcher does this).
    pub fn run_captures(&self) -> bool {
        !self.ran_on.contains(&std::thread::current().id())
    }

    /// Runs the model on the input buffers into the output buffers: the first run on a thread
    /// captures the graph (ORT runs the model once or twice inside it; see
    /// [`run_captures`](CudaGraph::run_captures)), every later run on that thread replays it.
    /// Returns when the outputs are written.
    ///
    /// Corresponds to `OrtApi::RunWithBinding` on a session with `enable_cuda_graph`.
    pub fn run(&mut self) -> Result<()> {
        let mut binding = self.session.io_binding()?;
        for (info, value) in self.session.inputs().iter().zip(&self.inputs) {
            binding.bind_input(&info.name, value)?;
        }
        for (info, value) in self.session.outputs().iter().zip(self.outputs.iter_mut()) {
            binding.bind_output(&info.name, value)?;
        }
        binding.run(None)?;
        // Only a run that succeeded has captured: after a failed one the next run captures again.
        let thread = std::thread::current().id();
        if !self.ran_on.contains(&thread) {
            self.ran_on.push(thread);
        }
        Ok(())
    }
}

/// The builder checks that need no runtime; returns the device the buffers go on.
fn check_builder(builder: &SessionBuilder, cuda: &CudaOptions, rows: usize) -> Result<i32> {
    if rows == 0 {
        return Err(Error::InvalidArgument {
            what: "a CudaGraph of 0 rows".into(),
            why: "a graph runs a fixed batch size of at least 1".into(),
        });
    }
    if builder.names_a_provider() {
        return Err(Error::InvalidArgument {
            what: "a CudaGraph from a SessionBuilder that already names a provider".into(),
            why: "give the CUDA options to CudaGraph itself; the graph session runs on CUDA alone".into(),
        });
    }
    cuda.device()
}

fn graph_options(cuda: CudaOptions) -> CudaOptions {
    // SAFETY: the session built with these options lives inside a `CudaGraph`, which never
    // hands it out. Its only runs are `CudaGraph::run`, which binds every input and output to
    // the graph's own device buffers (same addresses and shapes on every run). The buffers are
    // fields declared after the session, so they are freed after it, and `run` takes `&mut self`,
    // so nothing else writes them while a run is in progress (and `Value::copy_rows_from`
    // returns only when its copy is done).
    unsafe { cuda.enable_cuda_graph(true) }
}

/// The shape a graph buffer has for `info`: a free first axis becomes `rows`; every other axis
/// must be fixed, and the value a numeric tensor.
fn graph_shape(info: &ValueInfo, rows: usize, what: &str) -> Result<(Vec<i64>, ElementType)> {
    let refuse = |why: String| Error::InvalidArgument { what: format!("{what} `{}` of a CudaGraph", info.name), why };
    let element_type = match (info.kind, info.element_type) {
        (ValueKind::Tensor, Some(t)) if t.byte_size().is_ok() => t,
        _ => return Err(refuse("a graph binds numeric tensors only".into())),
    };
    let mut shape = Vec::with_capacity(info.shape.len());
    for (axis, dim) in info.shape.iter().enumerate() {
        shape.push(match dim {
            Dim::Fixed(n) => *n,
            Dim::Symbolic(_) | Dim::Unknown if axis == 0 => rows as i64,
            _ => {
                return Err(refuse(format!(
                    "its axis {axis} is free ({}); a graph replays fixed shapes, so only the first (batch) axis may be free",
                    info.shape_text()
                )))
            }
        });
    }
    Ok((shape, element_type))
}

fn no_such(what: &str, index: usize, count: usize) -> Error {
    Error::InvalidArgument { what: format!("CudaGraph {what} {index}"), why: format!("the model has {count} {what}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(shape: Vec<Dim>, element_type: Option<ElementType>, kind: ValueKind) -> ValueInfo {
        ValueInfo { name: "x".into(), kind, contains: None, element_type, shape }
    }

    #[test]
    fn a_free_first_axis_takes_the_rows_and_any_other_free_axis_is_refused() {
        let image = info(
            vec![Dim::Symbolic("N".into()), Dim::Fixed(3), Dim::Fixed(224), Dim::Fixed(224)],
            Some(ElementType::F32),
            ValueKind::Tensor,
        );
        assert_eq!(graph_shape(&image, 8, "input").expect("accepted"), (vec![8, 3, 224, 224], ElementType::F32));
        let fixed = info(vec![Dim::Fixed(1), Dim::Fixed(4)], Some(ElementType::F16), ValueKind::Tensor);
        assert_eq!(graph_shape(&fixed, 8, "input").expect("accepted").0, vec![1, 4]);
        let tokens = info(vec![Dim::Unknown, Dim::Symbolic("T".into())], Some(ElementType::I64), ValueKind::Tensor);
        let error = graph_shape(&tokens, 8, "input").expect_err("refused").to_string();
        assert!(error.contains("axis 1 is free"), "{error}");
        let text = info(vec![Dim::Unknown], Some(ElementType::String), ValueKind::Tensor);
        assert!(graph_shape(&text, 8, "output").expect_err("refused").to_string().contains("numeric tensors"));
        let sequence = info(vec![], Some(ElementType::F32), ValueKind::Sequence);
        assert!(graph_shape(&sequence, 8, "output").is_err());
    }

    #[test]
    fn the_builder_is_refused_before_any_runtime_call() {
        let zero = check_builder(&SessionBuilder::new(), &CudaOptions::new(), 0).expect_err("refused");
        assert!(zero.to_string().contains("0 rows"), "{zero}");
        let with_cuda = SessionBuilder::new().cuda(CudaOptions::new());
        let twice = check_builder(&with_cuda, &CudaOptions::new(), 4).expect_err("refused");
        assert!(twice.to_string().contains("already names a provider"), "{twice}");
        assert_eq!(check_builder(&SessionBuilder::new(), &CudaOptions::new().device_id(1), 4).expect("accepted"), 1);
    }
}
