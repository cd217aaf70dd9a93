//! The batcher's worker threads: gather requests into a batch, run it once, hand each caller its
//! row.
//!
//! Workers share the queue's receiving end behind a mutex that a worker holds only while it
//! gathers a batch (at most `max_delay`), never while the model runs: with two workers, one
//! gathers the next batch while the other runs, and runs never wait on each other.
//!
//! Each worker keeps its own buffers: per input one host tensor of `max_batch` samples, and per
//! batch a tensor over its first rows (`Value::first_rows_mut`: no copy, no data allocation); the
//! same for every output whose sample shape is fixed. Inputs and outputs are bound with an [`IoBinding`], so on
//! a CUDA session ORT copies the batch to the device once and the outputs back into these buffers.
//! With [`device_inputs`](super::BatcherBuilder::device_inputs) the worker makes that copy
//! itself, into device buffers of its own on a stream of its own, and binds the device rows.
//!
//! With [`hold_while_busy`](super::BatcherBuilder::hold_while_busy), a worker whose delay has
//! passed keeps its batch open while another worker's batch runs, copying each request's sample
//! into its buffer as it takes it, and closes when that run ends or the batch is full; runs then
//! take turns on the device, so a full batch waits, gathered and copied, for the run before it.

use std::collections::hash_map::{Entry, HashMap};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use onnxrt::{MemoryInfo, Outputs, Value};

use crate::batch::plan::Plan;
use crate::batch::queue::{Msg, Queue, Running};
use crate::batch::request::Request;
use crate::batch::sessions::Sessions;
use crate::batch::{RunBatch, Shape, Shutdown};
use crate::error::{Error, Result};

/// Sample-shape keys whose buffers a worker keeps (models with dynamic sample shapes).
const MAX_SHAPE_KEYS: usize = 8;

/// Where a worker's batch buffers live.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Placement {
    // Page-lock the host batch buffers (the sessions run on CUDA): copies to the device then run
    // at full speed instead of through a staging buffer.
    pub(crate) pin: bool,
    // Also keep device buffers on this CUDA device, copy each batch there and bind those.
    pub(crate) device_inputs: Option<i32>,
}

/// How a worker decides that its batch is complete.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Closing {
    pub(crate) max_batch: usize,
    pub(crate) max_delay: Duration,
    // After the delay, wait for other workers' runs to end (`BatcherBuilder::hold_while_busy`).
    pub(crate) hold_while_busy: bool,
}

pub(crate) struct Worker {
    pub(crate) sessions: Arc<Sessions>,
    placement: Placement,
    // The worker's stream for its copies to the device (made at its first batch).
    #[cfg(feature = "cuda")]
    stream: Option<onnxrt::CudaStream>,
    // Batch sizes whose CUDA graph has run on this worker's thread, so its runs only replay:
    // for those, the worker need not ask the graph (whose lock the other worker may hold for
    // its whole run) whether its next run captures.
    #[cfg(feature = "cuda")]
    replays: std::collections::HashSet<usize>,
    pub(crate) plan: Arc<Plan>,
    pub(crate) queue: Arc<Queue>,
    pub(crate) receiver: Arc<Mutex<Receiver<Msg>>>,
    pub(crate) max_batch: usize,
    pub(crate) max_delay: Duration,
    hold_while_busy: bool,
    // How many leading requests of the batch being formed have their samples in the input
    // buffers already (copied while the batch was held open; with device inputs, in the device
    // buffers too).
    staged: usize,
    // Row counts batches are padded to, ascending (`BatcherBuilder::pad_to_power_of_two`,
    // `pad_to_sizes`); `None`: each batch runs with as many rows as it has requests.
    sizes: Option<Arc<[usize]>>,
    // Threads that copy samples into the batch buffer (`BatcherBuilder::gather_threads`).
    gather_threads: usize,
    inputs: HashMap<Shape, InputBuffers>,
    outputs: Vec<Option<OutputBuffers>>,
    // Where batches run instead of on the sessions (`BatcherBuilder::run_batches_with`).
    run_batches: Option<RunBatch>,
}

/// Per input, the `max_batch`-sample allocation (page-locked for CUDA sessions when it can be);
/// a batch of `n` runs on its first `n` rows. With device inputs, per input the same in device
/// memory (empty otherwise).
struct InputBuffers {
    backings: Vec<Value<'static>>,
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    device: Vec<Value<'static>>,
}

/// One fixed-shape output: the `max_batch`-sample allocation (page-locked for CUDA sessions when
/// it can be), written by ORT in its first rows.
struct OutputBuffers {
    backing: Value<'static>,
}

/// What the worker took from the queue.
enum Next {
    Request(Request),
    // A shutdown began: read its mode from the queue.
    Stop,
    // Another worker's run ended.
    Wake,
    // Nothing within the wait (or, draining, nothing left).
    Empty,
    // Every sender is gone.
    Closed,
}

impl Worker {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        sessions: Arc<Sessions>,
        placement: Placement,
        plan: Arc<Plan>,
        queue: Arc<Queue>,
        receiver: Arc<Mutex<Receiver<Msg>>>,
        closing: Closing,
        sizes: Option<Arc<[usize]>>,
        gather_threads: usize,
        run_batches: Option<RunBatch>,
    ) -> Worker {
        let outputs = (0..plan.outputs.len()).map(|_| None).collect();
        Worker {
            sessions,
            placement,
            #[cfg(feature = "cuda")]
            stream: None,
            #[cfg(feature = "cuda")]
            replays: std::collections::HashSet::new(),
            plan,
            queue,
            receiver,
            max_batch: closing.max_batch,
            max_delay: closing.max_delay,
            hold_while_busy: closing.hold_while_busy,
            staged: 0,
            sizes,
            gather_threads,
            inputs: HashMap::new(),
            outputs,
            run_batches,
        }
    }

    /// Runs until shut down (or every sender is gone).
    pub(crate) fn run(mut self) {
        // With CUDA graphs: capture every size on this thread before taking requests (none
        // where batches do not run on the device: then only counted as done).
        #[cfg(feature = "cuda")]
        {
            let sizes = match (&self.sizes, self.placement.device_inputs) {
                (Some(sizes), Some(_)) => sizes.to_vec(),
                _ => Vec::new(),
            };
            self.sessions.capture_all(&sizes, true);
        }
        let mut carry: Option<Request> = None;
        let mut draining = false;
        loop {
            let receiver = Arc::clone(&self.receiver);
            let receiver = receiver.lock().unwrap_or_else(|e| e.into_inner());
            // A shutdown is seen here by every worker (only the one holding the receiver can be
            // blocked in it, and the shutdown's message wakes that one).
            match self.queue.stop_mode() {
                Some(Shutdown::Cancel) => {
                    drop(carry);
                    return cancel_all(&receiver, &self.queue);
                }
                Some(Shutdown::Drain) => draining = true,
                None => {}
            }
            let first = match carry.take() {
                Some(request) => request,
                None => match self.next(&receiver, draining, None) {
                    Next::Request(request) => request,
                    Next::Stop | Next::Wake => continue,
                    Next::Empty | Next::Closed => return,
                },
            };
            let Some(first) = self.live(first) else { continue };
            // Triton's rule: the delay counts from the first request's arrival, so a request that
            // waited behind a running batch does not wait again.
            let until = first.enqueued + self.max_delay;
            let mut batch = vec![first];
            self.staged = 0;
            self.stage(&batch);
            while batch.len() < self.max_batch {
                let mut wait =
                    if draining { Some(Duration::ZERO) } else { Some(until.saturating_duration_since(Instant::now())) };
                if wait == Some(Duration::ZERO) && !draining && self.hold_while_busy && self.queue.hold_for_running() {
                    // Until a request comes or the other run ends (its `Msg::Wake`).
                    wait = None;
                }
                match self.next(&receiver, draining, wait) {
                    Next::Request(request) => {
                        let Some(request) = self.live(request) else { continue };
                        if request.key != batch[0].key {
                            carry = Some(request);
                            break;
                        }
                        batch.push(request);
                        self.stage(&batch);
                    }
                    Next::Wake => {}
                    Next::Stop => match self.queue.stop_mode() {
                        Some(Shutdown::Cancel) => {
                            // Dropping them answers BatcherShutDown.
                            drop((batch, carry));
                            return cancel_all(&receiver, &self.queue);
                        }
                        _ => draining = true,
                    },
                    Next::Empty | Next::Closed => break,
                }
            }
            if self.hold_while_busy {
                self.queue.stop_holding();
            }
            // Counted as running before another worker can look.
            let running = self.queue.run_started();
            // Let another worker gather the next batch while this one runs.
            drop(receiver);
            // A panic (a bug: every request was checked when queued) answers this batch's
            // callers as its requests drop and leaves the worker serving the next batch.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run_batch(batch, running)));
            if ran.is_err() {
                self.staged = 0;
            }
        }
    }

    /// The next message: waits `wait` (`None`: until one comes; zero or draining: not at all).
    fn next(&self, receiver: &Receiver<Msg>, draining: bool, wait: Option<Duration>) -> Next {
        let message = match wait {
            _ if draining => receiver.try_recv().map_err(|e| matches!(e, TryRecvError::Disconnected)),
            None => receiver.recv().map_err(|_| true),
            Some(Duration::ZERO) => receiver.try_recv().map_err(|e| matches!(e, TryRecvError::Disconnected)),
            Some(wait) => receiver.recv_timeout(wait).map_err(|e| matches!(e, RecvTimeoutError::Disconnected)),
        };
        match message {
            Ok(Msg::Request(request)) => {
                self.queue.taken();
                Next::Request(request)
            }
            Ok(Msg::Stop) => Next::Stop,
            Ok(Msg::Wake) => Next::Wake,
            Err(true) => Next::Closed,
            Err(false) => Next::Empty,
        }
    }

    /// The request, unless its caller gave up or its deadline passed (then it is answered here).
    fn live(&self, request: Request) -> Option<Request> {
        let now = Instant::now();
        if request.reply.is_abandoned() {
            let Request { reply, .. } = request;
            reply.send(Err(Error::BatcherShutDown));
            None
        } else if request.expired(now) {
            let error = request.deadline_error(now);
            request.reply.send(Err(error));
            None
        } else {
            Some(request)
        }
    }

    /// With `hold_while_busy`: copies the sample of the batch's newest request into its row of
    /// the input buffers (and, with device inputs, on into the device buffers, while another
    /// batch runs), so that little is left to gather and copy when the batch closes. Stops
    /// staging this batch on any error (the gather at the close meets it again and reports it).
    fn stage(&mut self, batch: &[Request]) {
        let row = batch.len() - 1;
        if !self.hold_while_busy || self.staged != row {
            return;
        }
        // Not during another worker's graph capture.
        #[cfg(feature = "cuda")]
        let sessions = Arc::clone(&self.sessions);
        #[cfg(feature = "cuda")]
        let _cuda = sessions.cuda_work(false);
        #[cfg(feature = "cuda")]
        if self.ensure_stream().is_err() {
            return;
        }
        let made = buffers_for(&mut self.inputs, &self.plan, &batch[0], self.max_batch, self.placement);
        let Ok(inputs) = made else { return };
        let request = &batch[row];
        for (index, backing) in inputs.backings.iter_mut().enumerate() {
            let (Ok(rows), Ok(sample)) = (backing.host_bytes_mut(), request.values[index].value().host_bytes()) else {
                return;
            };
            let size = sample.len();
            // A sample that is not one row of the buffer is not staged (the gather refuses it).
            if size.checked_mul(self.max_batch) != Some(rows.len()) {
                return;
            }
            match rows.get_mut(row * size..(row + 1) * size) {
                Some(dst) => dst.copy_from_slice(sample),
                None => return,
            }
        }
        #[cfg(feature = "cuda")]
        if let Some(stream) = &self.stream {
            for (device, host) in inputs.device.iter_mut().zip(&inputs.backings) {
                if device.copy_rows_from(row..row + 1, host, stream).is_err() {
                    return;
                }
            }
        }
        self.staged = row + 1;
    }

    /// With device inputs, the worker's stream for its copies (made at first use).
    #[cfg(feature = "cuda")]
    fn ensure_stream(&mut self) -> Result<()> {
        if let (Some(device), None) = (self.placement.device_inputs, &self.stream) {
            self.stream = Some(onnxrt::CudaStream::new(device)?);
        }
        Ok(())
    }

    fn run_batch(&mut self, batch: Vec<Request>, running: Running) {
        let formed = batch.len();
        let batch: Vec<Request> = batch.into_iter().filter_map(|r| self.live(r)).collect();
        if batch.len() != formed {
            // Rows moved up: the staged samples are no longer in their requests' rows.
            self.staged = 0;
        }
        if batch.is_empty() {
            return;
        }
        let started = Instant::now();
        let counters = Arc::clone(&self.queue.counters);
        for request in &batch {
            counters.queue_time.observe(started.saturating_duration_since(request.enqueued));
        }
        counters.batch(batch.len());
        let rows = self.execute(&batch, running);
        let labels: Vec<Arc<str>> = self.plan.outputs.iter().map(|o| Arc::clone(&o.label)).collect();
        let now = Instant::now();
        // Recorded before anyone is answered, so a caller that reads the counters after its
        // answer sees its batch.
        counters.batch_ran(batch.len(), now.saturating_duration_since(started));
        match rows {
            Ok(rows) => {
                for (request, row) in batch.into_iter().zip(rows) {
                    let answer = if request.expired(now) {
                        Err(request.deadline_error(now))
                    } else {
                        Ok(labels.iter().cloned().zip(row).collect::<Outputs>())
                    };
                    request.reply.send(answer);
                }
            }
            Err(error) => {
                for request in batch {
                    request.reply.send(Err(error.clone()));
                }
            }
        }
    }

    /// One batched run; per request, its row of every output. `running` ends with the model run.
    fn execute(&mut self, batch: &[Request], running: Running) -> Result<Vec<Vec<Value<'static>>>> {
        // `n` requests run as `m` rows: the padding rows repeat the last request's sample.
        let n = batch.len();
        let m = self.sizes.as_ref().and_then(|sizes| sizes.iter().copied().find(|&k| k >= n)).unwrap_or(n);
        // With CUDA graphs: this size's graph (made at its first batch), and a hold on the
        // batcher's CUDA work for the whole batch, alone when this thread's run will capture.
        #[cfg(feature = "cuda")]
        let graph = self.placement.device_inputs.and_then(|_| self.sessions.graph_for(m));
        #[cfg(feature = "cuda")]
        let capture = graph.as_ref().is_some_and(|g| {
            !self.replays.contains(&m) && g.lock().unwrap_or_else(|e| e.into_inner()).run_captures(m).unwrap_or(true)
        });
        #[cfg(feature = "cuda")]
        let sessions = Arc::clone(&self.sessions);
        #[cfg(feature = "cuda")]
        let _cuda = sessions.cuda_work(capture);
        // Rows whose samples were copied while the batch was held open (with device inputs, on
        // to the device too).
        let staged = std::mem::take(&mut self.staged).min(n);
        #[cfg(feature = "cuda")]
        self.ensure_stream()?;
        let gather_threads = self.gather_threads;
        let inputs = buffers_for(&mut self.inputs, &self.plan, &batch[0], self.max_batch, self.placement)?;
        let mut values = rows_of(&mut inputs.backings, m)?;
        let gather_started = Instant::now();
        for (index, value) in values.iter_mut().enumerate() {
            let rows = value.host_bytes_mut()?;
            let row = rows.len() / m;
            let padded = batch.iter().chain(std::iter::repeat(&batch[n - 1])).take(m).skip(staged);
            let rows = &mut rows[staged * row..];
            let threads = gather_threads_for(rows.len(), gather_threads);
            if threads == 1 {
                for (request, dst) in padded.zip(rows.chunks_exact_mut(row.max(1))) {
                    dst.copy_from_slice(sample_bytes(request, index, dst.len())?);
                }
            } else {
                let sources = padded.map(|request| sample_bytes(request, index, row)).collect::<Result<Vec<_>>>()?;
                copy_rows_on_threads(&sources, rows.chunks_exact_mut(row.max(1)).collect(), threads);
            }
        }
        // With device inputs: one copy per input of the rows not staged yet (padding included)
        // from the page-locked rows to the device rows.
        #[cfg(feature = "cuda")]
        if let Some(stream) = &self.stream {
            drop(values);
            for (device, host) in inputs.device.iter_mut().zip(&inputs.backings) {
                device.copy_rows_from(staged..m, host, stream)?;
            }
            values = rows_of(&mut inputs.device, m)?;
        }
        self.queue.counters.gather_time.observe(gather_started.elapsed());
        if let Some(run) = &self.run_batches {
            // Elsewhere (a worker process): no output buffers of this process to bind.
            let model_started = Instant::now();
            let named: Vec<(&str, &Value<'_>)> =
                self.plan.inputs.iter().map(|input| input.name.as_str()).zip(values.iter()).collect();
            let outputs = {
                let _device = self.queue.device_turn(self.hold_while_busy);
                run(&named)?
            };
            drop(running);
            self.queue.counters.model_time.observe(model_started.elapsed());
            return split_rows(&self.plan, &outputs, m, n);
        }
        for (index, output) in self.plan.outputs.iter().enumerate() {
            if let (Some(sample), None) = (&output.fixed_sample, &self.outputs[index]) {
                self.outputs[index] =
                    Some(OutputBuffers::new(output.element_type, sample, self.max_batch, self.placement.pin)?);
            }
        }
        let mut fixed: Vec<Option<Value<'_>>> = Vec::with_capacity(self.outputs.len());
        for buffers in self.outputs.iter_mut() {
            fixed.push(match buffers {
                Some(buffers) => Some(buffers.of_size(m)?),
                None => None,
            });
        }
        #[cfg(feature = "cuda")]
        if let Some(stream) = &self.stream {
            if fixed.iter().all(Option::is_some) {
                if let Some(graph) = &graph {
                    let fixed: Vec<Value<'_>> = fixed.into_iter().flatten().collect();
                    let graph = GraphRun { graph, rows: m, stream, queue: &self.queue, hold: self.hold_while_busy };
                    let answer = graph.run(&self.plan, &values, fixed, running, n);
                    if answer.is_ok() {
                        // ORT keeps the captured graph for this thread: later runs replay it.
                        self.replays.insert(m);
                    }
                    return answer;
                }
            }
        }
        let model_started = Instant::now();
        let session = self.sessions.for_rows(m, &self.plan)?;
        let mut binding = session.io_binding()?;
        for (plan, value) in self.plan.inputs.iter().zip(values.iter()) {
            binding.bind_input(&plan.name, value)?;
        }
        let host = MemoryInfo::cpu()?;
        for (plan, value) in self.plan.outputs.iter().zip(fixed.iter_mut()) {
            match value {
                Some(value) => binding.bind_output(&plan.label, value)?,
                None => binding.bind_output_to_device(&plan.label, &host)?,
            }
        }
        let ran = {
            let _device = self.queue.device_turn(self.hold_while_busy);
            binding.run(None)
        };
        let mut unallocated;
        let outputs = match ran {
            Ok(()) => binding.outputs()?,
            // ORT refused a preallocated output: the run's shape is not `m` rows of its declared
            // sample (a model that flattens the batch into a [m] output). Only then, run again
            // with ORT allocating every output, so that the split below says which output and
            // how instead of passing on ORT's text.
            Err(onnxrt::Error::Ort { message, .. }) if onnxrt::ort_messages::OUTPUT_SHAPE_REFUSED.matches(&message) => {
                unallocated = session.io_binding()?;
                for (plan, value) in self.plan.inputs.iter().zip(values.iter()) {
                    unallocated.bind_input(&plan.name, value)?;
                }
                for plan in &self.plan.outputs {
                    unallocated.bind_output_to_device(&plan.label, &host)?;
                }
                let _device = self.queue.device_turn(self.hold_while_busy);
                unallocated.run(None)?;
                unallocated.outputs()?
            }
            Err(error) => return Err(error.into()),
        };
        // The device is free for the next batch (a worker holding one open closes it now).
        drop(running);
        self.queue.counters.model_time.observe(model_started.elapsed());
        split_rows(&self.plan, &outputs, m, n)
    }
}

/// A batch's run on its size's CUDA graph (`BatcherBuilder::cuda_graphs`).
#[cfg(feature = "cuda")]
struct GraphRun<'a> {
    graph: &'a crate::batch::sessions::SharedGraph,
    // The batch's padded size: which of the graph session's sizes runs.
    rows: usize,
    stream: &'a onnxrt::CudaStream,
    queue: &'a Queue,
    // Take the device lock for the run (`hold_while_busy`).
    hold: bool,
}

#[cfg(feature = "cuda")]
impl GraphRun<'_> {
    /// Copies the batch's device rows into the graph's inputs, replays it, and copies its
    /// outputs into `host` (the worker's page-locked output rows); per request, its rows.
    fn run(
        self,
        plan: &Plan,
        device_rows: &[Value<'_>],
        mut host: Vec<Value<'_>>,
        running: Running,
        n: usize,
    ) -> Result<Vec<Vec<Value<'static>>>> {
        let model_started = Instant::now();
        // Held until the outputs are copied out: the other worker may run this size next. A
        // wait here is a wait for the other worker's run, counted in `device_wait`.
        let graph_wait = Instant::now();
        let mut graph = self.graph.lock().unwrap_or_else(|e| e.into_inner());
        let graph_wait = graph_wait.elapsed();
        let m = self.rows;
        for (input, rows) in plan.inputs.iter().zip(device_rows) {
            let index = graph_index(graph.inputs(), &input.name)?;
            graph.copy_input_rows_from(m, index, 0..m, rows, self.stream)?;
        }
        {
            let _device = self.queue.device_turn_after(self.hold, graph_wait);
            graph.run(m)?;
        }
        drop(running);
        for (output, rows) in plan.outputs.iter().zip(host.iter_mut()) {
            let index = graph_index(graph.outputs(), &output.label)?;
            rows.copy_rows_from(0..m, graph.output(m, index)?, self.stream)?;
        }
        drop(graph);
        self.queue.counters.graph_runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.queue.counters.model_time.observe(model_started.elapsed());
        split_rows(plan, &host, m, n)
    }
}

/// Where `name` is among a graph's inputs or outputs (the batcher's model and the graph's are
/// the same file, but the order is not assumed).
#[cfg(feature = "cuda")]
fn graph_index(infos: &[onnxrt::ValueInfo], name: &str) -> Result<usize> {
    infos.iter().position(|info| info.name == name).ok_or_else(|| {
        onnxrt::Error::InvalidArgument {
            what: format!("the CUDA graph for `{name}`"),
            why: "the graph's model has no such input or output; the cuda_graphs factory must load the batcher's model"
                .into(),
        }
        .into()
    })
}

/// Each of the first `n` rows of every output (`m` rows each), as a value of its own shaped as
/// a run of that sample alone would return it.
fn split_rows(plan: &Plan, outputs: &[Value<'_>], m: usize, n: usize) -> Result<Vec<Vec<Value<'static>>>> {
    let mut rows: Vec<Vec<Value<'static>>> = (0..n).map(|_| Vec::with_capacity(outputs.len())).collect();
    for (plan, output) in plan.outputs.iter().zip(outputs) {
        let shape = output.tensor_info()?.shape;
        plan.check_rows(&shape, m)?;
        let bytes = output.host_bytes()?;
        let row = bytes.len() / m;
        let mut row_shape = shape;
        row_shape[0] = 1;
        for (i, caller) in rows.iter_mut().enumerate() {
            caller.push(Value::from_bytes(&row_shape, plan.element_type, &bytes[i * row..(i + 1) * row])?);
        }
    }
    Ok(rows)
}

impl InputBuffers {
    fn new(plan: &Plan, like: &Request, max_batch: usize, placement: Placement) -> Result<InputBuffers> {
        let shapes: Vec<(Shape, onnxrt::ElementType)> = plan
            .inputs
            .iter()
            .enumerate()
            .map(|(index, input)| (batch_shape(max_batch, like.sample_shape(index)), input.element_type))
            .collect();
        let backings = shapes
            .iter()
            .map(|(shape, element_type)| host_buffer(shape, *element_type, placement.pin))
            .collect::<Result<Vec<_>>>()?;
        let device = match placement.device_inputs {
            #[cfg(feature = "cuda")]
            Some(device) => shapes
                .iter()
                .map(|(shape, element_type)| Ok(Value::zeros_cuda(shape, *element_type, device)?))
                .collect::<Result<Vec<_>>>()?,
            _ => Vec::new(),
        };
        Ok(InputBuffers { backings, device })
    }
}

/// The input buffers for requests shaped like `like`, made on first use (at most
/// `MAX_SHAPE_KEYS` shapes kept).
fn buffers_for<'a>(
    inputs: &'a mut HashMap<Shape, InputBuffers>,
    plan: &Plan,
    like: &Request,
    max_batch: usize,
    placement: Placement,
) -> Result<&'a mut InputBuffers> {
    if !inputs.contains_key(&like.key) && inputs.len() >= MAX_SHAPE_KEYS {
        inputs.clear();
    }
    Ok(match inputs.entry(like.key.clone()) {
        Entry::Occupied(entry) => entry.into_mut(),
        Entry::Vacant(entry) => entry.insert(InputBuffers::new(plan, like, max_batch, placement)?),
    })
}

/// Tensors of `n` samples over each of `backings`.
fn rows_of<'a>(backings: &'a mut [Value<'static>], n: usize) -> Result<Vec<Value<'a>>> {
    Ok(backings.iter_mut().map(|backing| backing.first_rows_mut(n)).collect::<onnxrt::Result<Vec<_>>>()?)
}

impl OutputBuffers {
    /// Page-locked when `pin` (a CUDA session), so ORT's copy of the outputs from the device
    /// needs no staging buffer.
    fn new(element_type: onnxrt::ElementType, sample: &[i64], max_batch: usize, pin: bool) -> Result<OutputBuffers> {
        let backing = host_buffer(&batch_shape(max_batch, sample), element_type, pin)?;
        Ok(OutputBuffers { backing })
    }

    /// A tensor of `n` samples over the allocation.
    fn of_size(&mut self, n: usize) -> Result<Value<'_>> {
        Ok(self.backing.first_rows_mut(n)?)
    }
}

/// How many of `threads` copy a batch of `bytes`: at least 4 MiB each, so small batches stay on
/// the worker's thread (and its copy loop allocates nothing).
fn gather_threads_for(bytes: usize, threads: usize) -> usize {
    const MIN_BYTES_PER_THREAD: usize = 4 << 20;
    threads.min(bytes / MIN_BYTES_PER_THREAD).max(1)
}

/// Copies each source row into its destination row, `threads` scoped threads sharing the rows.
/// Input `index` of `request` as the bytes of one row of `row` bytes. The batcher checked every
/// sample against the model's sample shape when it was queued (on the value it holds); a sample of
/// another size still fails the batch with an error rather than panicking the worker.
fn sample_bytes(request: &Request, index: usize, row: usize) -> Result<&[u8]> {
    let bytes = request.values[index].value().host_bytes()?;
    if bytes.len() != row {
        return Err(onnxrt::Error::InvalidArgument {
            what: format!("a queued sample of input {index}"),
            why: format!("it holds {} bytes where a row of the batch holds {row}", bytes.len()),
        }
        .into());
    }
    Ok(bytes)
}

fn copy_rows_on_threads(sources: &[&[u8]], mut destinations: Vec<&mut [u8]>, threads: usize) {
    let per_thread = sources.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (sources, destinations) in sources.chunks(per_thread).zip(destinations.chunks_mut(per_thread)) {
            scope.spawn(move || {
                for (source, destination) in sources.iter().zip(destinations.iter_mut()) {
                    destination.copy_from_slice(source);
                }
            });
        }
    });
}

/// A zeroed host allocation, page-locked when `pin` (a CUDA session) and CUDA allows it; one
/// that cannot be pinned stays pageable (slower copies, same results).
fn host_buffer(shape: &[i64], element_type: onnxrt::ElementType, pin: bool) -> Result<Value<'static>> {
    #[cfg(feature = "cuda")]
    if pin {
        if let Ok(value) = Value::zeros_pinned(shape, element_type) {
            return Ok(value);
        }
    }
    #[cfg(not(feature = "cuda"))]
    let _ = pin;
    Ok(Value::zeros(shape, element_type)?)
}

pub(crate) fn batch_shape(n: usize, sample: &[i64]) -> Shape {
    let mut shape = Shape::with_capacity(sample.len() + 1);
    shape.push(n as i64);
    shape.extend_from_slice(sample);
    shape
}

/// `Shutdown::Cancel`: every queued request is dropped, which answers it BatcherShutDown.
fn cancel_all(receiver: &Receiver<Msg>, queue: &Queue) {
    while let Ok(message) = receiver.try_recv() {
        if let Msg::Request(request) = message {
            queue.taken();
            drop(request);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::request::Reply;
    use crate::batch::stats::Counters;
    use onnxrt::AsyncInput;

    #[test]
    fn a_sample_that_is_not_one_row_fails_the_batch_instead_of_panicking() {
        let value = Value::from_vec(&[3], vec![1.0f32, 2.0, 3.0]).expect("sample");
        let (reply, _slot) = Reply::new(Arc::new(Counters::new(4)));
        let request = Request {
            values: vec![("x", value).into_held()],
            key: Shape::new(),
            enqueued: Instant::now(),
            deadline: None,
            reply,
        };
        assert_eq!(sample_bytes(&request, 0, 12).expect("one row").len(), 12);
        for row in [0, 8, 16] {
            let error = sample_bytes(&request, 0, row).expect_err("not one row");
            assert!(
                error.to_string().contains(&format!("holds 12 bytes where a row of the batch holds {row}")),
                "{error}"
            );
        }
    }
}
