//! [`CudaGraphs`]: one CUDA session that replays a captured CUDA graph per batch size, from safe
//! code.
//!
//! Once ORT has captured a graph, a run of it only replays it: it reads and writes the
//! addresses of the capture run and looks at nothing the new run binds
//! (`CudaOptions::enable_cuda_graph`, which is `unsafe` for that reason). ORT 1.18 and newer keep
//! several graphs per session, one per run config entry `gpu_graph_id` (a positive integer; -1
//! runs without a graph, 0 is ORT's default id). A `CudaGraphs` keeps the promise per graph by
//! construction: it owns the session (never handed out, so nothing else runs it), and per size
//! one device buffer per input and output and one graph id, made with the session, bound and
//! passed together on every run of that size, and freed only after the session. Callers fill
//! the inputs with copies and read the outputs with copies; they never get a buffer they could
//! replace or free. One session holds the weights once, where a session per size
//! ([`CudaGraph`](crate::CudaGraph)) holds them once per size.

use std::ops::Range;
use std::path::Path;
use std::thread::ThreadId;

use crate::api::api;
use crate::cuda_stream::CudaStream;
use crate::element::ElementType;
use crate::error::{Error, Result};
use crate::providers::cuda::CudaOptions;
use crate::run_options::RunOptions;
use crate::session::{Dim, Session, SessionBuilder, ValueInfo};
use crate::value::{Value, ValueKind};

/// The C API level (= ORT 1.x) whose CUDA provider keeps a graph per `gpu_graph_id`.
const SEVERAL_GRAPHS_SINCE: u32 = 18;

/// A CUDA session with a captured graph per batch size, and the device buffers each size's
/// runs bind.
///
/// ```no_run
/// use onnxrt::providers::cuda::CudaOptions;
/// use onnxrt::{CudaGraphs, CudaStream, Session, Value};
///
/// # fn main() -> onnxrt::Result<()> {
/// // One session (one copy of the weights) for batches of 1, 2, 4 and 8 rows.
/// let mut graphs = CudaGraphs::from_file(Session::builder(), CudaOptions::new(), "resnet50.onnx", &[1, 2, 4, 8])?;
/// let stream = CudaStream::new(0)?;
/// let batch = Value::from_vec(&[4, 3, 224, 224], vec![0.5f32; 4 * 3 * 224 * 224])?;
/// graphs.copy_input_rows_from(4, 0, 0..4, &batch, &stream)?;
/// graphs.run(4)?; // the first run of a size captures its graph; later runs replay it
/// let mut logits = Value::zeros(&[4, 1000], onnxrt::ElementType::F32)?;
/// logits.copy_rows_from(0..4, graphs.output(4, 0)?, &stream)?;
/// # Ok(()) }
/// ```
pub struct CudaGraphs {
    // Dropped first: fields drop in declaration order, and the session (which holds the
    // captured graphs) must be gone before the buffers the graphs read and write are freed.
    session: Session,
    sizes: Vec<usize>,
    // Per size, in the order of `sizes`.
    graphs: Vec<SizeGraph>,
}

/// One batch size's buffers, graph id and capture record.
struct SizeGraph {
    inputs: Vec<Value<'static>>,
    outputs: Vec<Value<'static>>,
    // `gpu_graph_id` set to this size's id; `None` for a session of one size, which runs ORT's
    // default graph (every runtime has that one).
    run_options: Option<RunOptions>,
    // The threads this size has run on: ORT's CUDA provider keeps its captured graphs per
    // thread, so the first run on each thread captures again (`run_captures`).
    ran_on: Vec<ThreadId>,
}

impl std::fmt::Debug for CudaGraphs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaGraphs").field("sizes", &self.sizes).finish_non_exhaustive()
    }
}

impl CudaGraphs {
    /// Loads the model at `path` on CUDA with `cuda` (plus the graphs), for runs of each of
    /// `sizes` rows. See [`from_memory`](CudaGraphs::from_memory).
    pub fn from_file(
        builder: SessionBuilder,
        cuda: CudaOptions,
        path: impl AsRef<Path>,
        sizes: &[usize],
    ) -> Result<CudaGraphs> {
        let device_id = check_request(&builder, &cuda, sizes)?;
        let session = builder.cuda(graph_options(cuda)).strict_gpu(true).commit_from_file(path)?;
        CudaGraphs::around(session, device_id, sizes)
    }

    /// Loads `model` on CUDA with `cuda` (plus the graphs) in one session, for runs of each of
    /// `sizes` rows: per size, an input or output whose first axis is free gets that many rows
    /// there; every other axis must be fixed. Every node must run on CUDA (the session is built
    /// with [`strict_gpu`](SessionBuilder::strict_gpu)). The first [`run`](CudaGraphs::run) of
    /// a size captures its graph, every later one replays it.
    ///
    /// `builder` carries the session's other settings (threads, optimization level, log id);
    /// give the CUDA options here, not to the builder.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `sizes` is empty, holds a 0 or a size twice, when the
    /// builder already names a provider, or when an input or output is not a numeric tensor or
    /// has a free axis other than the first (a graph replays fixed shapes);
    /// [`Error::NeedsNewerRuntime`] for more than one size before ONNX Runtime 1.18 (its CUDA
    /// provider keeps one graph per session; one size works on every runtime); what building a
    /// CUDA session returns otherwise (the model, the provider, a node without a CUDA kernel);
    /// CUDA's error when the device buffers cannot be allocated.
    pub fn from_memory(
        builder: SessionBuilder,
        cuda: CudaOptions,
        model: &[u8],
        sizes: &[usize],
    ) -> Result<CudaGraphs> {
        let device_id = check_request(&builder, &cuda, sizes)?;
        let session = builder.cuda(graph_options(cuda)).strict_gpu(true).commit_from_memory(model)?;
        CudaGraphs::around(session, device_id, sizes)
    }

    fn around(session: Session, device_id: i32, sizes: &[usize]) -> Result<CudaGraphs> {
        let buffers = |infos: &[ValueInfo], rows: usize, what: &str| -> Result<Vec<Value<'static>>> {
            infos
                .iter()
                .map(|info| {
                    let (shape, element_type) = graph_shape(info, rows, what)?;
                    Ok(Value::zeros_cuda(&shape, element_type, device_id)?.with_name(info.name.as_str().into()))
                })
                .collect()
        };
        let mut graphs = Vec::with_capacity(sizes.len());
        for (position, &rows) in sizes.iter().enumerate() {
            let run_options = match sizes.len() {
                1 => None,
                _ => {
                    let mut options = RunOptions::new()?;
                    options.config_entry("gpu_graph_id", &graph_id(position).to_string())?;
                    Some(options)
                }
            };
            graphs.push(SizeGraph {
                inputs: buffers(session.inputs(), rows, "input")?,
                outputs: buffers(session.outputs(), rows, "output")?,
                run_options,
                ran_on: Vec::new(),
            });
        }
        Ok(CudaGraphs { session, sizes: sizes.to_vec(), graphs })
    }

    /// The batch sizes (rows) this session runs, in the order given.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }

    /// The model's inputs, in order (index `i` is [`input(rows, i)`](CudaGraphs::input)).
    pub fn inputs(&self) -> &[ValueInfo] {
        self.session.inputs()
    }

    /// The model's outputs, in order (index `i` is [`output(rows, i)`](CudaGraphs::output)).
    pub fn outputs(&self) -> &[ValueInfo] {
        self.session.outputs()
    }

    /// The device buffer of input `index` of the runs of `rows` rows, to read (copy from it
    /// with [`Value::copy_rows_from`]).
    pub fn input(&self, rows: usize, index: usize) -> Result<&Value<'static>> {
        let inputs = &self.graph(rows)?.inputs;
        inputs.get(index).ok_or_else(|| no_such("input", index, inputs.len()))
    }

    /// The device buffer of output `index` of the runs of `rows` rows, written by the last run
    /// of that size. Copy it out with [`Value::copy_rows_from`] (host or device destination);
    /// the borrow ends before the next [`run`](CudaGraphs::run).
    pub fn output(&self, rows: usize, index: usize) -> Result<&Value<'static>> {
        let outputs = &self.graph(rows)?.outputs;
        outputs.get(index).ok_or_else(|| no_such("output", index, outputs.len()))
    }

    /// Copies rows `rows` of `source` into the same rows of input `index` of the runs of
    /// `graph_rows` rows on `stream`, and returns once the copy is done (see
    /// [`Value::copy_rows_from`]: same element type and row shape, rows inside both tensors).
    /// The other rows keep what they held.
    pub fn copy_input_rows_from(
        &mut self,
        graph_rows: usize,
        index: usize,
        rows: Range<usize>,
        source: &Value<'_>,
        stream: &CudaStream,
    ) -> Result<()> {
        let inputs = &mut self.graph_mut(graph_rows)?.inputs;
        let count = inputs.len();
        let input = inputs.get_mut(index).ok_or_else(|| no_such("input", index, count))?;
        input.copy_rows_from(rows, source, stream)
    }

    /// Whether the next [`run`](CudaGraphs::run) of `rows` rows on the calling thread captures
    /// that size's graph rather than replays it: true until that size has run on this thread.
    /// ORT's CUDA provider keeps its captured graphs per thread (seen with 1.30 on an H100), so
    /// each thread's first run of a size captures anew.
    ///
    /// A capture fails if other CUDA work of the process runs meanwhile (the ORT sources read
    /// begin a capture in CUDA's global capture mode; "operation failed due to a previous error
    /// during capture" was seen on an H100 with a copy on another thread), and the run returns
    /// that error. Run a capturing run while nothing else uses CUDA, e.g. under an exclusive
    /// lock that every other CUDA user of the process shares (the serving batcher does this).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size not among [`sizes`](CudaGraphs::sizes).
    pub fn run_captures(&self, rows: usize) -> Result<bool> {
        Ok(!self.graph(rows)?.ran_on.contains(&std::thread::current().id()))
    }

    /// Runs the model on the input buffers of `rows` rows into that size's output buffers: the
    /// first run of a size on a thread captures its graph (ORT runs the model once or twice
    /// inside it; see [`run_captures`](CudaGraphs::run_captures)), every later run of that size
    /// on that thread replays it. Returns when the outputs are written.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a size not among [`sizes`](CudaGraphs::sizes); ORT's errors.
    ///
    /// Corresponds to `OrtApi::RunWithBinding` on a session with `enable_cuda_graph`, with the
    /// run config entry `gpu_graph_id` when the session has several sizes.
    pub fn run(&mut self, rows: usize) -> Result<()> {
        let position = self.position(rows)?;
        let graph = &mut self.graphs[position];
        let mut binding = self.session.io_binding()?;
        for (info, value) in self.session.inputs().iter().zip(&graph.inputs) {
            binding.bind_input(&info.name, value)?;
        }
        for (info, value) in self.session.outputs().iter().zip(graph.outputs.iter_mut()) {
            binding.bind_output(&info.name, value)?;
        }
        binding.run(graph.run_options.as_ref())?;
        // Only a run that succeeded has captured: after a failed one the next run captures again.
        let thread = std::thread::current().id();
        if !graph.ran_on.contains(&thread) {
            graph.ran_on.push(thread);
        }
        Ok(())
    }

    fn position(&self, rows: usize) -> Result<usize> {
        self.sizes.iter().position(|&size| size == rows).ok_or_else(|| Error::InvalidArgument {
            what: format!("CudaGraphs runs of {rows} rows"),
            why: format!("the session has graphs for {:?} rows only", self.sizes),
        })
    }

    fn graph(&self, rows: usize) -> Result<&SizeGraph> {
        Ok(&self.graphs[self.position(rows)?])
    }

    fn graph_mut(&mut self, rows: usize) -> Result<&mut SizeGraph> {
        let position = self.position(rows)?;
        Ok(&mut self.graphs[position])
    }
}

/// The `gpu_graph_id` of the size at `position`: 1, 2, ... (ORT reserves 0 for its default
/// graph and -1 for runs without one).
fn graph_id(position: usize) -> usize {
    position + 1
}

/// The checks of the sizes and the builder (no runtime needed), then, for several sizes, the
/// runtime's version; returns the device the buffers go on.
fn check_request(builder: &SessionBuilder, cuda: &CudaOptions, sizes: &[usize]) -> Result<i32> {
    check_sizes(sizes)?;
    let device_id = check_builder(builder, cuda)?;
    if sizes.len() > 1 {
        api()?.needs(SEVERAL_GRAPHS_SINCE, "CudaGraphs of several sizes in one session (run config gpu_graph_id)")?;
    }
    Ok(device_id)
}

/// Refuses no sizes, a 0, and a size listed twice.
fn check_sizes(sizes: &[usize]) -> Result<()> {
    let refuse = |what: String, why: &str| Err(Error::InvalidArgument { what, why: why.into() });
    if sizes.is_empty() {
        return refuse("CudaGraphs of no sizes".into(), "give at least one batch size (rows) to run");
    }
    if sizes.contains(&0) {
        let among = if sizes.len() > 1 { format!(" (sizes {sizes:?})") } else { String::new() };
        return refuse(format!("a CudaGraph of 0 rows{among}"), "a graph runs a fixed batch size of at least 1");
    }
    if let Some((i, size)) = sizes.iter().enumerate().find(|(i, size)| sizes[..*i].contains(size)) {
        return refuse(
            format!("CudaGraphs sizes {sizes:?}, with {size} listed twice (at {i})"),
            "each size gets one graph and its own buffers: list it once",
        );
    }
    Ok(())
}

/// Refuses a builder that already names a provider; returns the device of `cuda`.
fn check_builder(builder: &SessionBuilder, cuda: &CudaOptions) -> Result<i32> {
    if builder.names_a_provider() {
        return Err(Error::InvalidArgument {
            what: "a CudaGraph from a SessionBuilder that already names a provider".into(),
            why: "give the CUDA options to CudaGraph itself; the graph session runs on CUDA alone".into(),
        });
    }
    cuda.device()
}

fn graph_options(cuda: CudaOptions) -> CudaOptions {
    // SAFETY: the session built with these options lives inside a `CudaGraphs` (a `CudaGraph`
    // wraps one), which never hands it out. Its only runs are `CudaGraphs::run(rows)`, which
    // binds every input and output to the buffers of size `rows` and passes that size's own
    // `gpu_graph_id` (none with one size: ORT's default graph, the session's only one). The ids
    // are fixed when the session is made and differ per size, so each graph id is only ever run
    // with its own buffers (same addresses and shapes on every run), and a graph ORT captured or
    // replays for an id reads and writes the buffers it was captured with. The buffers are fields
    // declared after the session, so they are freed after it; `run` takes `&mut self`, so no two
    // graphs run at once (they may share ORT's scratch memory) and nothing else writes a size's
    // buffers while a run is in progress (`Value::copy_rows_from` returns when its copy is done).
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
    fn the_sizes_and_the_builder_are_refused_before_any_runtime_call() {
        let none = check_sizes(&[]).expect_err("refused");
        assert!(none.to_string().contains("no sizes"), "{none}");
        let zero = check_sizes(&[1, 0, 4]).expect_err("refused");
        assert!(zero.to_string().contains("0 rows"), "{zero}");
        let twice = check_sizes(&[1, 2, 4, 2]).expect_err("refused");
        assert!(twice.to_string().contains("2 listed twice (at 3)"), "{twice}");
        check_sizes(&[8, 1, 4, 2]).expect("any order");
        let with_cuda = SessionBuilder::new().cuda(CudaOptions::new());
        let named = check_builder(&with_cuda, &CudaOptions::new()).expect_err("refused");
        assert!(named.to_string().contains("already names a provider"), "{named}");
        assert_eq!(check_builder(&SessionBuilder::new(), &CudaOptions::new().device_id(1)).expect("accepted"), 1);
        // Ids are positive and differ per size: 0 is ORT's default graph and -1 runs without one.
        assert_eq!((0..4).map(graph_id).collect::<Vec<_>>(), [1, 2, 3, 4]);
    }
}
