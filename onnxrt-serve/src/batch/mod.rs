//! [`Batcher`]: dynamic batching for services that receive one sample per request.
//!
//! A model run on a batch of 64 costs far less than 64 runs of one (on a GPU, often little more
//! than one). A `Batcher` owns a [`Session`] and takes single-sample requests from any number of
//! threads ([`Batcher::run`], blocking) and async tasks ([`Batcher::run_async`], a future that
//! needs no particular executor). A worker thread gathers queued requests until it has
//! `max_batch` of them or the first has waited `max_delay` (default zero: whatever is queued
//! when the worker is free), runs the batch once, and hands each
//! caller its own row of every output, shaped as a run of that sample alone would return it
//! (a leading axis of 1). On the CPU the rows are bitwise equal to such a run for the models the
//! tests check (ORT's CPU kernels compute each sample of a batch the same way).
//!
//! What each request gets:
//! - **Checked alone.** Names, element types and the sample shape (the declared shape without
//!   its batch axis; a leading axis of 1 is accepted too) are checked on the caller's thread
//!   before the request is queued: a bad request gets its own typed error
//!   ([`Error::UnknownInput`](onnxrt::Error::UnknownInput), [`Error::ShapeMismatch`](onnxrt::Error::ShapeMismatch)...) and never reaches a batch.
//! - **Backpressure.** The queue holds `queue_capacity` requests; past that a request is refused
//!   with [`Error::QueueFull`] or waits for room, as [`RequestOptions::when_full`] says.
//! - **Deadlines and cancellation.** A request past its [`RequestOptions::deadline`] is not run
//!   (or, if its batch was running, its row is dropped) and its caller gets
//!   [`Error::DeadlineExpired`]. A dropped [`BatchFuture`] cancels its request only; the rest of
//!   its batch is untouched.
//! - **Shutdown.** [`Batcher::shutdown`] stops taking requests and either runs every queued one
//!   ([`Shutdown::Drain`], also what dropping the batcher does) or answers it
//!   [`Error::BatcherShutDown`] ([`Shutdown::Cancel`]). Every accepted request gets exactly one
//!   answer; [`BatcherStats`] counts them.
//!
//! Models whose sample shapes are free (e.g. `[batch, tokens]`) work too: a batch holds
//! consecutive requests of one sample shape, and a request of another shape starts the next one.
//!
//! No lock is shared by all requests on the way in or out: a request is queued on a bounded
//! channel and answered through a slot of its own; counters are atomics. The workers share the
//! queue's receiving end only while gathering, never while a model runs.
//!
//! Use it when many callers each hold one sample; for work that already comes in batches, call
//! [`Session::run`] directly. Models must have a free (dynamic) first axis on every input and
//! output ([`Error::NotBatchable`] otherwise), and each output one row per sample: a model that
//! reduces over the batch fails [`Batcher::warm_up`] and its batches with
//! [`Error::NotSplitAlongBatch`]; one whose sample shape changes with the batch size (`x·xᵀ`)
//! fails the warm-up, which compares the sizes it runs, with [`Error::SampleShapeChanges`] (so do
//! batches whose output is not the fixed sample shape declared; without a warm-up, an output
//! whose sample shape is free is not compared, and such a model mixes its callers' rows).
//! Batching assumes, as Triton's does, that each row of an output depends on its own sample
//! alone: a model that mixes the rows of a batch (`x + sum(x)` over the batch, a batch norm in
//! training mode) gives each caller results that depend on the other requests and on the padding
//! rows, and no shape check can tell.
//!
//! ```
//! # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
//! use std::sync::Arc;
//! use std::time::Duration;
//! use onnxrt_serve::batch::Batcher;
//! use onnxrt::{Session, Value};
//!
//! let session = Session::builder().commit_from_file(model)?;
//! let batcher = Arc::new(Batcher::builder(session).max_batch(16).max_delay(Duration::from_millis(2)).build()?);
//! let callers: Vec<_> = (0..8)
//!     .map(|i| {
//!         let batcher = Arc::clone(&batcher);
//!         std::thread::spawn(move || -> onnxrt_serve::Result<f32> {
//!             // One sample of `x: [batch, 16]`, without the batch axis.
//!             let x = Value::from_vec(&[16], vec![i as f32 / 8.0; 16])?;
//!             let outputs = batcher.run([("x", x)])?;
//!             // `logits` as a run of this sample alone returns it: [1, 4].
//!             Ok(outputs.get("logits")?.view::<f32>()?[[0, 0]])
//!         })
//!     })
//!     .collect();
//! for caller in callers {
//!     caller.join().expect("caller")?;
//! }
//! let stats = batcher.stats();
//! assert_eq!(stats.completed, 8);
//! # Ok::<(), onnxrt_serve::Error>(())
//! ```

mod builder;
mod future;
mod plan;
mod queue;
mod request;
mod sessions;
mod stats;
mod worker;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use smallvec::SmallVec;

use crate::error::{Error, Result};
use future::Phase;
use onnxrt::{AsyncInput, HeldValue, Outputs, Session, Value};
use plan::Plan;
use queue::Queue;
use request::{Reply, Request, Slot};
use sessions::Sessions;
use stats::Outcome;

#[cfg(feature = "server")] // the repository shows the sizes a batcher pads to
pub(crate) use builder::padded_sizes;
use builder::Settings;
pub use builder::{BatcherBuilder, RunBatch};
pub use future::BatchFuture;

pub use stats::{BatcherStats, ErrorCounts, HistogramSnapshot};

/// A shape on the stack (rank up to 6 without allocating).
pub(crate) type Shape = SmallVec<[i64; 6]>;

/// What a request does when the queue is full.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WhenFull {
    /// Fail at once with [`Error::QueueFull`] (shed load; the default).
    #[default]
    Reject,
    /// Wait for room: [`Batcher::run`] blocks, [`Batcher::run_async`]'s future waits. The
    /// deadline, if any, still applies.
    Wait,
}

/// Per-request settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestOptions {
    /// After this instant the request is not run (or its result is dropped) and its caller gets
    /// [`Error::DeadlineExpired`]. [`Batcher::run`] returns at the deadline; a
    /// [`BatchFuture`] resolves when the worker reaches the request, at the latest when the batch
    /// running at the deadline ends (for a sharp async timeout wrap it in your runtime's timeout:
    /// dropping it cancels the request).
    pub deadline: Option<Instant>,
    /// What to do when the queue is full.
    pub when_full: WhenFull,
}

impl RequestOptions {
    /// Options with a deadline `timeout` from now.
    pub fn timeout(timeout: Duration) -> RequestOptions {
        RequestOptions { deadline: Instant::now().checked_add(timeout), ..RequestOptions::default() }
    }
}

/// How [`Batcher::shutdown`] treats requests still queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Run them (in batches, without waiting for `max_delay`), then stop.
    Drain,
    /// Answer them [`Error::BatcherShutDown`] without running them, then stop.
    Cancel,
}

/// A dynamic batcher over one [`Session`]: see the [module docs](self).
///
/// `Send + Sync`; share it with `Arc`. Dropping it shuts it down with [`Shutdown::Drain`].
pub struct Batcher {
    queue: Arc<Queue>,
    plan: Arc<Plan>,
    session: Session,
    sessions: Arc<Sessions>,
    settings: Settings,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("session", &self.session)
            .field("queue_capacity", &self.queue.capacity)
            .field("queue_depth", &self.queue.counters.queue_depth.load(Ordering::Relaxed))
            .finish()
    }
}

impl Batcher {
    /// Settings for a batcher over `session` (a CPU or CUDA session; the batcher keeps a clone).
    pub fn builder(session: Session) -> BatcherBuilder {
        BatcherBuilder::new(session)
    }

    /// Runs one sample in the next batch and waits for its outputs. Same as
    /// [`run_with`](Batcher::run_with) with default options (no deadline, refuse when full).
    ///
    /// # Errors
    /// See [`run_with`](Batcher::run_with).
    pub fn run<I>(&self, inputs: I) -> Result<Outputs>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        self.run_with(inputs, RequestOptions::default())
    }

    /// Runs one sample in the next batch and waits for its outputs (every model output, in
    /// model order, each with a leading axis of 1).
    ///
    /// Inputs are `(name, Value<'static>)` or `(name, Arc<Value<'static>>)`, one sample each,
    /// in host memory.
    ///
    /// # Errors
    /// Before queueing: the input errors of [`Session::run`] (checked against the sample shape),
    /// [`Error::QueueFull`], [`Error::BatcherShutDown`]. After: [`Error::DeadlineExpired`],
    /// [`Error::BatcherShutDown`] (a [`Shutdown::Cancel`]), or the batch's run error.
    pub fn run_with<I>(&self, inputs: I, options: RequestOptions) -> Result<Outputs>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        let (request, slot) = self.prepare(inputs, options)?;
        let enqueued = request.enqueued;
        self.enqueue_blocking(request, options)?;
        match slot.wait(options.deadline) {
            Some(answer) => answer,
            None => slot
                .abandon(Outcome::Deadline)
                .unwrap_or_else(|| Err(Error::DeadlineExpired { waited: enqueued.elapsed() })),
        }
    }

    /// Queues one sample and returns a future of its outputs (what [`run`](Batcher::run)
    /// returns). The future is `Send + 'static` and needs no particular executor; dropping it
    /// cancels the request.
    ///
    /// # Errors
    /// Input errors, [`Error::QueueFull`] and [`Error::BatcherShutDown`] at once; the rest
    /// through the future.
    pub fn run_async<I>(&self, inputs: I) -> Result<BatchFuture>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        self.run_async_with(inputs, RequestOptions::default())
    }

    /// [`run_async`](Batcher::run_async) with a deadline or [`WhenFull::Wait`] (the future
    /// then waits for room in the queue).
    ///
    /// ```
    /// # let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use onnxrt_serve::batch::{Batcher, RequestOptions, WhenFull};
    /// use onnxrt::{Session, Value};
    ///
    /// let batcher = Batcher::builder(Session::builder().commit_from_file(model)?).build()?;
    /// let options = RequestOptions { when_full: WhenFull::Wait, ..RequestOptions::timeout(Duration::from_secs(5)) };
    /// let x = Value::from_vec(&[16], vec![0.5f32; 16])?;
    /// let outputs = batcher.run_async_with([("x", x)], options)?.await?;
    /// assert_eq!(outputs.get("logits")?.tensor_info()?.shape, [1, 4]);
    /// # Ok::<(), onnxrt_serve::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`run_async`](Batcher::run_async).
    pub fn run_async_with<I>(&self, inputs: I, options: RequestOptions) -> Result<BatchFuture>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        let (request, slot) = self.prepare(inputs, options)?;
        let queue = Arc::clone(&self.queue);
        let phase = match options.when_full {
            WhenFull::Reject => {
                self.queue.enqueue_or_refuse(request)?;
                Phase::Queued(slot)
            }
            WhenFull::Wait => {
                self.queue.counters.submitted.fetch_add(1, Ordering::Relaxed);
                Phase::WaitingForRoom(Some(request), slot)
            }
        };
        Ok(BatchFuture::new(queue, phase))
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> BatcherStats {
        self.queue.counters.snapshot()
    }

    /// Requests queued now, not yet in a batch.
    pub fn queue_depth(&self) -> usize {
        self.queue.counters.queue_depth.load(Ordering::Relaxed)
    }

    /// The queue's capacity.
    pub fn queue_capacity(&self) -> usize {
        self.queue.capacity
    }

    /// The session it runs.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Runs a batch of zeros of every size the batcher can run (each power of two up to
    /// `max_batch` when padded, else every size from 1), on the session that size runs on, so
    /// sessions are made and per-shape tuning (cuDNN's algorithm search) is done before real
    /// requests arrive (Triton's model warm-up). Runs on the caller's thread; returns the sizes run.
    /// With `cuda_graphs` (the `cuda` feature) it first waits until every worker has
    /// made and captured each size's graph on its own thread (which they do when they start);
    /// sizes with a graph are not run again here.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](onnxrt::Error::InvalidArgument) when an input's sample shape is not fixed (there is no shape to
    /// warm up with); [`Error::BatcherShutDown`] after [`shutdown`](Batcher::shutdown), as
    /// [`run`](Batcher::run); [`Error::NotSplitAlongBatch`] when an output's first axis is not
    /// the size run, [`Error::SampleShapeChanges`] when its sample shape changes with the size
    /// (with a single padded size above 1, a run of one row on the batcher's session is compared
    /// too) or is not the declared one: the model cannot be batched; the run's error otherwise.
    pub fn warm_up(&self) -> Result<Vec<usize>> {
        self.warm_up_with(&[])
    }

    /// [`warm_up`](Self::warm_up), with the sample shapes (without the batch axis) of inputs
    /// whose declared sample has free axes, e.g. `[("x", vec![3, 48, 192])]`: a model with free
    /// axes (an image of any width) is warmed up at every batch size for the shape given.
    ///
    /// # Errors
    /// As [`warm_up`](Self::warm_up), for an input neither declared fixed nor given here;
    /// [`Error::InvalidArgument`](onnxrt::Error::InvalidArgument), before any run, for a shape
    /// that does not fit its input's sample (rank, fixed axes).
    pub fn warm_up_with(&self, samples: &[(&str, &[i64])]) -> Result<Vec<usize>> {
        let sample_shapes = self.warm_up_samples(samples)?;
        let sizes = self.settings.run_sizes();
        self.warm_up_sizes(&sizes, &sample_shapes)?;
        Ok(sizes)
    }

    /// Whether each output keeps one row per sample, at the sample shapes given (as
    /// [`warm_up_with`](Self::warm_up_with)), from runs of one row and of two (one where
    /// `max_batch` is 1) on the batcher's own session: for a model whose samples have free axes,
    /// where warming up every size costs start time and memory (padded sizes may be thousands of
    /// rows), yet a model whose rows mix (`x·xᵀ`) must not be served. Returns the rows run.
    ///
    /// # Errors
    /// As [`warm_up_with`](Self::warm_up_with).
    pub fn check_rows_with(&self, samples: &[(&str, &[i64])]) -> Result<Vec<usize>> {
        let sample_shapes = self.warm_up_samples(samples)?;
        let rows: Vec<usize> = [1, 2].into_iter().filter(|&rows| rows <= self.settings.max_batch).collect();
        let mut first = vec![None; self.plan.outputs.len()];
        for &rows in &rows {
            #[cfg(feature = "cuda")]
            let _shared = self.sessions.cuda_work(false);
            self.warm_up_run(&self.session, rows, &sample_shapes, &mut first)?;
        }
        Ok(rows)
    }

    /// Each input's sample shape for a warm-up: declared where fixed, else given in `samples`,
    /// each checked against its input before any run.
    fn warm_up_samples(&self, samples: &[(&str, &[i64])]) -> Result<Vec<Shape>> {
        // Nothing runs after a shutdown, warm-ups included (they would make sessions for sizes
        // no worker will run).
        if self.is_shut_down() {
            return Err(Error::BatcherShutDown);
        }
        for (index, (name, shape)) in samples.iter().enumerate() {
            let refuse = |why: String| onnxrt::Error::InvalidArgument { what: format!("warm-up sample `{name}`"), why };
            let Some(input) = self.plan.inputs.iter().find(|i| i.name == *name) else {
                let names: Vec<&str> = self.plan.inputs.iter().map(|i| i.name.as_str()).collect();
                return Err(refuse(format!("the model has no such input (inputs: {names:?})")).into());
            };
            if samples[..index].iter().any(|(earlier, _)| earlier == name) {
                return Err(refuse("given twice".into()).into());
            }
            if let Some(declared) = input.fixed_sample().filter(|declared| declared.as_slice() != *shape) {
                return Err(
                    refuse(format!("the input's sample shape is fixed at {declared:?}; {shape:?} differs")).into()
                );
            }
            // Before any run (a wrong rank failed only in the first one: outside probe).
            if !input.fits_sample(shape) {
                return Err(refuse(format!(
                    "{shape:?} does not fit the input's sample shape {} (its declared shape without the batch axis: \
                     same rank, fixed axes as they are, no negative size)",
                    input.sample_text()
                ))
                .into());
            }
        }
        // Each input's sample shape, once for every size: declared, or else given.
        self.plan
            .inputs
            .iter()
            .map(|input| {
                let given = samples.iter().find(|(name, _)| *name == input.name).map(|(_, shape)| Shape::from(*shape));
                input.fixed_sample().or(given).ok_or_else(|| onnxrt::Error::InvalidArgument {
                    what: format!("warming up a batcher for input `{}`", input.name),
                    why: "its sample shape has a free axis, so there is no shape to warm up with".into(),
                })
            })
            .collect::<std::result::Result<Vec<Shape>, _>>()
            .map_err(Error::from)
    }

    /// A warm-up run of each of `sizes` (ascending) on the session it runs on, comparing the
    /// outputs' sample shapes across them.
    fn warm_up_sizes(&self, sizes: &[usize], sample_shapes: &[Shape]) -> Result<()> {
        // Each worker makes and captures every CUDA graph on its own thread when it starts
        // (ORT keeps them per thread); sizes whose graph could not be made or captured are
        // known once they are done, and warm up their sessions below.
        #[cfg(feature = "cuda")]
        self.sessions.wait_for_worker_captures();
        // Per output, the sample shape (without the batch axis) of the first size run: every
        // other size must give the same, or the rows are not per sample (`x·xᵀ` is [n, n]).
        let mut first: Vec<Option<(usize, Shape)>> = vec![None; self.plan.outputs.len()];
        for &rows in sizes {
            // A size with a CUDA graph runs on it alone, and the workers have captured it.
            #[cfg(feature = "cuda")]
            if self.sessions.graph_for(rows).is_some() {
                continue;
            }
            // Making the session and running it: not beside another batcher's capture.
            #[cfg(feature = "cuda")]
            let _shared = self.sessions.cuda_work(false);
            let session = self.sessions.for_rows(rows, &self.plan)?;
            self.warm_up_run(&session, rows, sample_shapes, &mut first)?;
        }
        // A single size above 1 has no other to compare with: one row on the batcher's own
        // session too (a single size of 1 needs none: every batch is then a run of one sample).
        if let [rows] = sizes[..] {
            if rows > 1 {
                #[cfg(feature = "cuda")]
                let _shared = self.sessions.cuda_work(false);
                self.warm_up_run(&self.session, 1, sample_shapes, &mut first)?;
            }
        }
        Ok(())
    }

    /// One warm-up run of `rows` rows of zeros on `session` (or the runner elsewhere). An output
    /// that does not keep a row per sample (a model that reduces over the batch), or whose sample
    /// shape differs from the one `first` holds from another size, is said now, rather than
    /// failing or mixing batched requests after the model is ready.
    fn warm_up_run(
        &self,
        session: &Session,
        rows: usize,
        sample_shapes: &[Shape],
        first: &mut [Option<(usize, Shape)>],
    ) -> Result<()> {
        let mut values = Vec::with_capacity(self.plan.inputs.len());
        for (input, sample) in self.plan.inputs.iter().zip(sample_shapes) {
            let value = Value::zeros(&worker::batch_shape(rows, sample), input.element_type)?;
            values.push((input.name.as_str(), value));
        }
        let outputs = match &self.settings.run_batches {
            Some(elsewhere) => (elsewhere.0)(&values.iter().map(|(name, value)| (*name, value)).collect::<Vec<_>>())?,
            None => session.run(values.iter().map(|(name, value)| (*name, value)))?.into_values(),
        };
        for ((output, value), first) in self.plan.outputs.iter().zip(&outputs).zip(first.iter_mut()) {
            let shape = value.tensor_info()?.shape;
            output.check_rows(&shape, rows)?;
            let sample = Shape::from_slice(&shape[1..]);
            match first {
                Some((before, expected)) if *expected != sample => {
                    return Err(output.sample_changes(expected, Some(*before), &shape, rows));
                }
                Some(_) => {}
                None => *first = Some((rows, sample)),
            }
        }
        Ok(())
    }

    /// With [`cuda_graphs`](BatcherBuilder::cuda_graphs): returns once every worker has made
    /// and captured its graphs (they start when the batcher is built); at once without. Until
    /// then, run nothing else on the device: CUDA refuses a capture when other CUDA work of the
    /// process runs meanwhile, and that size then runs without a graph.
    #[cfg(feature = "cuda")]
    pub fn wait_for_cuda_graphs(&self) {
        self.sessions.wait_for_worker_captures();
    }

    /// Per batch size tried so far with [`cuda_graphs`](BatcherBuilder::cuda_graphs), whether
    /// it runs as a CUDA graph (`Ok`) or why it cannot (`Err`: that size runs on its session).
    /// Empty without graphs; after [`warm_up`](Batcher::warm_up), every padded size is listed.
    #[cfg(feature = "cuda")]
    pub fn cuda_graphs(&self) -> Vec<(usize, std::result::Result<(), String>)> {
        self.sessions.graph_outcomes()
    }

    /// How many CUDA graph sessions were made so far ([`cuda_graphs`](BatcherBuilder::cuda_graphs):
    /// one per size; [`cuda_graphs_in_one_session`](BatcherBuilder::cuda_graphs_in_one_session):
    /// one for every size, on ONNX Runtime 1.18 and newer).
    #[cfg(feature = "cuda")]
    pub fn cuda_graph_sessions(&self) -> usize {
        self.sessions.graph_sessions()
    }

    /// How many sessions batches run on so far (1 unless
    /// [`session_per_batch_size`](BatcherBuilder::session_per_batch_size)).
    pub fn session_count(&self) -> usize {
        self.sessions.count()
    }

    /// Whether [`shutdown`](Batcher::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.queue.is_closed()
    }

    /// Stops taking requests, settles every queued one as `mode` says, and returns when the
    /// workers have exited (a batch already running finishes and is answered). Later requests
    /// get [`Error::BatcherShutDown`]. Calling it again waits for the same end.
    pub fn shutdown(&self, mode: Shutdown) {
        let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        self.queue.close(mode);
        for handle in workers.drain(..) {
            let _ = handle.join();
        }
    }

    /// Checks a request against the model and builds it (counting refusals).
    fn prepare<I>(&self, inputs: I, options: RequestOptions) -> Result<(Request, Arc<Slot>)>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        let checked = self.check(inputs);
        let values = checked.inspect_err(|_| {
            self.queue.counters.invalid.fetch_add(1, Ordering::Relaxed);
        })?;
        let mut key = Shape::new();
        let mut held = Vec::with_capacity(values.len());
        for (value, sample) in values {
            key.push(sample.len() as i64);
            key.extend_from_slice(&sample);
            held.push(value);
        }
        let (reply, slot) = Reply::new(Arc::clone(&self.queue.counters));
        let request = Request { values: held, key, enqueued: Instant::now(), deadline: options.deadline, reply };
        Ok((request, slot))
    }

    /// The inputs in model order with their sample shapes.
    fn check<I>(&self, inputs: I) -> Result<Vec<(HeldValue, Shape)>>
    where
        I: IntoIterator,
        I::Item: AsyncInput,
    {
        let mut slots: SmallVec<[Option<(HeldValue, Shape)>; 4]> = (0..self.plan.inputs.len()).map(|_| None).collect();
        for input in inputs {
            let index = self.session.input_index(input.name())?;
            if slots[index].is_some() {
                return Err(onnxrt::Error::DuplicateInput { name: input.name().to_owned() }.into());
            }
            // Ownership first: the value checked is the value queued (and gathered by the worker).
            let held = input.into_held();
            let sample = self.plan.check_value(index, held.value())?;
            slots[index] = Some((held, sample));
        }
        slots.into_iter().enumerate().map(|(index, slot)| slot.ok_or_else(|| self.plan.missing(index))).collect()
    }

    /// Queues a request for a blocking caller (waiting for room if asked to).
    fn enqueue_blocking(&self, request: Request, options: RequestOptions) -> Result<()> {
        match options.when_full {
            WhenFull::Reject => self.queue.enqueue_or_refuse(request),
            WhenFull::Wait => {
                self.queue.counters.submitted.fetch_add(1, Ordering::Relaxed);
                self.queue.enqueue_waiting(request, options.deadline)
            }
        }
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        self.shutdown(Shutdown::Drain);
    }
}
