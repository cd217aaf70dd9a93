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
//! output ([`Error::NotBatchable`] otherwise).
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

mod future;
mod plan;
mod queue;
mod request;
mod sessions;
mod stats;
mod worker;

use std::sync::atomic::Ordering;
use std::sync::mpsc::sync_channel;
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
use sessions::{SessionFactory, Sessions};
use stats::{Counters, Outcome};

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

/// Settings for a [`Batcher`]; see [`Batcher::builder`].
#[derive(Clone)]
#[must_use]
pub struct BatcherBuilder {
    session: Session,
    max_batch: usize,
    max_delay: Duration,
    queue_capacity: usize,
    workers: usize,
    pad_to_power_of_two: bool,
    pad_to_sizes: Option<Vec<usize>>,
    gather_threads: usize,
    session_factory: Option<SessionFactory>,
}

impl std::fmt::Debug for BatcherBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatcherBuilder")
            .field("session", &self.session)
            .field("max_batch", &self.max_batch)
            .field("max_delay", &self.max_delay)
            .field("queue_capacity", &self.queue_capacity)
            .field("workers", &self.workers)
            .field("pad_to_power_of_two", &self.pad_to_power_of_two)
            .field("pad_to_sizes", &self.pad_to_sizes)
            .field("gather_threads", &self.gather_threads)
            .field("session_per_batch_size", &self.session_factory.is_some())
            .finish()
    }
}

impl BatcherBuilder {
    /// The most requests in one run (default 32).
    pub fn max_batch(mut self, max_batch: usize) -> Self {
        self.max_batch = max_batch;
        self
    }

    /// How long the first request of a batch waits for others (default zero, as Triton's
    /// `max_queue_delay_microseconds`). With zero a free worker runs whatever is queued at once:
    /// one caller sees about a plain run's latency, and under load batches still grow, because
    /// requests queue up while a batch runs. A delay trades latency for fuller batches when
    /// requests arrive faster than one per run but slower than a batch per run.
    pub fn max_delay(mut self, max_delay: Duration) -> Self {
        self.max_delay = max_delay;
        self
    }

    /// The most requests waiting (default 1024); more are refused or wait ([`WhenFull`]).
    pub fn queue_capacity(mut self, queue_capacity: usize) -> Self {
        self.queue_capacity = queue_capacity;
        self
    }

    /// Worker threads (default 1). With 2, one gathers the next batch while the other's runs
    /// (useful on a GPU, where the host work of a batch can overlap the previous run); each
    /// keeps its own buffers.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Runs each batch padded to the next power of two (capped at `max_batch`), the extra rows a
    /// copy of the last request's and their outputs dropped (default off).
    ///
    /// For GPU sessions: ORT's CUDA provider tunes each convolution (cuDNN's algorithm search)
    /// the first time it sees an input shape, which for ResNet-50 on an H200 costs about 0.7 s
    /// per new batch size. Unpadded, every batch size from 1 to `max_batch` is new once, and under
    /// changing load the server stalls on them; padded, only `log2(max_batch) + 1` sizes exist.
    /// Call [`Batcher::warm_up`] before taking traffic (Triton's model warm-up) so none is tuned
    /// on a caller's time, and on CUDA add
    /// [`session_per_batch_size`](Self::session_per_batch_size): one session alternating between
    /// sizes rebuilds its convolution plans on every change. On the CPU padding only costs
    /// compute: leave it off.
    pub fn pad_to_power_of_two(mut self, pad: bool) -> Self {
        self.pad_to_power_of_two = pad;
        self
    }

    /// Runs each batch padded to the smallest of `sizes` that holds it (`max_batch` is added as
    /// the largest), like [`pad_to_power_of_two`](Self::pad_to_power_of_two) with steps of your
    /// choice: finer steps waste fewer padding rows at the price of more shapes (and, with
    /// [`session_per_batch_size`](Self::session_per_batch_size), more sessions). E.g. `[1, 2, 4,
    /// 8, 16, 32, 64, 96]` with `max_batch(128)`: a batch of 70 runs as 96 rows, not 128.
    /// Overrides `pad_to_power_of_two`. A size of 0 is refused by [`build`](Self::build).
    pub fn pad_to_sizes(mut self, sizes: &[usize]) -> Self {
        self.pad_to_sizes = Some(sizes.to_vec());
        self
    }

    /// Threads that copy the requests' samples into a batch's input buffer (default 1). Large
    /// batches of large samples (128 images of 600 KB: 77 MB) take milliseconds to gather on one
    /// thread; with more, each copies a share (at least 4 MiB each, so small batches stay on the
    /// worker's thread). `BatcherStats::gather_time` shows whether it matters.
    pub fn gather_threads(mut self, threads: usize) -> Self {
        self.gather_threads = threads.max(1);
        self
    }

    /// Runs each batch size on a session of its own, made by `factory` the first time that
    /// size runs (the batcher's own session serves the first size). For CUDA sessions.
    ///
    /// ORT's CUDA provider keeps, per convolution, a plan for the last input shape it saw; a run
    /// whose batch size differs from the previous one rebuilds all of them. Measured with ORT
    /// 1.30 on an H200: ResNet-50 runs took 100–155 ms each when the batch size changed on
    /// every run, against 2–18 ms at a steady size, so a batcher under varying load ran at a
    /// fraction of the GPU's speed. With a session per size each sees a single shape.
    ///
    /// Use it with [`pad_to_power_of_two`](Self::pad_to_power_of_two) (`log2(max_batch) + 1`
    /// sessions, not `max_batch`), and call [`Batcher::warm_up`] before taking traffic so every
    /// session is made and tuned. Each session holds its own copy of the weights on the device
    /// (ResNet-50 fp32: about 100 MB each). The factory must load the same model; a session with
    /// other inputs or outputs fails that batch with [`Error::InvalidArgument`](onnxrt::Error::InvalidArgument).
    ///
    /// ```no_run
    /// # fn main() -> onnxrt_serve::Result<()> {
    /// use onnxrt_serve::batch::Batcher;
    /// use onnxrt::Session;
    ///
    /// // On a GPU: Session::builder().cuda(CudaOptions::new()) (feature `cuda`).
    /// let load = || Session::builder().commit_from_file("resnet50.onnx");
    /// let batcher = Batcher::builder(load()?)
    ///     .max_batch(128)
    ///     .workers(2)
    ///     .pad_to_power_of_two(true)
    ///     .session_per_batch_size(load)
    ///     .build()?;
    /// batcher.warm_up()?; // 8 sessions, each tuned for its batch size
    /// # Ok(()) }
    /// ```
    pub fn session_per_batch_size(
        mut self,
        factory: impl Fn() -> onnxrt::Result<Session> + Send + Sync + 'static,
    ) -> Self {
        self.session_factory = Some(Arc::new(factory));
        self
    }

    /// Checks the model and starts the workers.
    ///
    /// # Errors
    /// [`Error::NotBatchable`] when an input or output has no free first axis or is not a
    /// numeric tensor; [`Error::InvalidArgument`](onnxrt::Error::InvalidArgument) for a zero `max_batch`, `queue_capacity` or
    /// `workers`, or when a thread cannot be started.
    pub fn build(self) -> Result<Batcher> {
        for (what, value) in
            [("max_batch", self.max_batch), ("queue_capacity", self.queue_capacity), ("workers", self.workers)]
        {
            if value == 0 {
                return Err(onnxrt::Error::InvalidArgument {
                    what: format!("Batcher {what} 0"),
                    why: "it must be at least 1".into(),
                }
                .into());
            }
        }
        if self.pad_to_sizes.as_ref().is_some_and(|sizes| sizes.contains(&0)) {
            return Err(onnxrt::Error::InvalidArgument {
                what: "Batcher pad_to_sizes with a size of 0".into(),
                why: "every run size must be at least 1".into(),
            }
            .into());
        }
        let plan = Arc::new(Plan::new(&self.session)?);
        let counters = Arc::new(Counters::new(self.max_batch));
        let (sender, receiver) = sync_channel(self.queue_capacity);
        let queue = Arc::new(Queue::new(sender, self.queue_capacity, counters));
        let receiver = Arc::new(Mutex::new(receiver));
        let sessions = Arc::new(Sessions::new(self.session.clone(), self.session_factory.clone(), self.max_batch));
        let pin = cfg!(feature = "cuda") && self.session.providers().contains(&"CUDAExecutionProvider");
        let mut handles = Vec::with_capacity(self.workers);
        let settings = Settings::new(self.max_batch, self.pad_to_power_of_two, self.pad_to_sizes.as_deref());
        for index in 0..self.workers {
            let worker = worker::Worker::new(
                Arc::clone(&sessions),
                pin,
                Arc::clone(&plan),
                Arc::clone(&queue),
                Arc::clone(&receiver),
                self.max_batch,
                self.max_delay,
                settings.sizes.clone(),
                self.gather_threads,
            );
            let spawned =
                std::thread::Builder::new().name(format!("onnxrt-batcher-{index}")).spawn(move || worker.run());
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    let started = Batcher {
                        queue,
                        plan,
                        session: self.session,
                        sessions,
                        settings,
                        workers: Mutex::new(handles),
                    };
                    started.shutdown(Shutdown::Cancel);
                    return Err(onnxrt::Error::InvalidArgument {
                        what: "starting a batcher worker thread".into(),
                        why: e.to_string(),
                    }
                    .into());
                }
            }
        }
        Ok(Batcher { queue, plan, session: self.session, sessions, settings, workers: Mutex::new(handles) })
    }
}

/// What the batcher needs to know of its settings after it is built.
#[derive(Debug, Clone)]
struct Settings {
    max_batch: usize,
    // The row counts batches are padded to, ascending, ending at `max_batch`; `None`: unpadded.
    sizes: Option<Arc<[usize]>>,
}

impl Settings {
    fn new(max_batch: usize, pad_to_power_of_two: bool, pad_to_sizes: Option<&[usize]>) -> Settings {
        let mut sizes: Vec<usize> = match pad_to_sizes {
            Some(sizes) => sizes.iter().copied().filter(|&n| n < max_batch).collect(),
            None if pad_to_power_of_two => {
                (0..usize::BITS).map(|bit| 1usize << bit).take_while(|&n| n < max_batch).collect()
            }
            None => return Settings { max_batch, sizes: None },
        };
        sizes.push(max_batch);
        sizes.sort_unstable();
        sizes.dedup();
        Settings { max_batch, sizes: Some(sizes.into()) }
    }

    /// Every number of rows a batch can run with.
    fn run_sizes(&self) -> Vec<usize> {
        match &self.sizes {
            Some(sizes) => sizes.to_vec(),
            None => (1..=self.max_batch).collect(),
        }
    }
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
        BatcherBuilder {
            session,
            max_batch: 32,
            max_delay: Duration::ZERO,
            queue_capacity: 1024,
            workers: 1,
            pad_to_power_of_two: false,
            pad_to_sizes: None,
            gather_threads: 1,
            session_factory: None,
        }
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
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](onnxrt::Error::InvalidArgument) when an input's sample shape is not fixed (there is no shape to
    /// warm up with); the run's error otherwise.
    pub fn warm_up(&self) -> Result<Vec<usize>> {
        let sizes = self.settings.run_sizes();
        for &rows in &sizes {
            let session = self.sessions.for_rows(rows, &self.plan)?;
            let mut values = Vec::with_capacity(self.plan.inputs.len());
            for input in &self.plan.inputs {
                let fixed = |dim: &onnxrt::Dim| match dim {
                    onnxrt::Dim::Fixed(n) => Some(*n),
                    _ => None,
                };
                let sample: Shape = input.sample.iter().map(fixed).collect::<Option<_>>().ok_or_else(|| {
                    onnxrt::Error::InvalidArgument {
                        what: format!("warming up a batcher for input `{}`", input.name),
                        why: "its sample shape has a free axis, so there is no shape to warm up with".into(),
                    }
                })?;
                let value = Value::zeros(&worker::batch_shape(rows, &sample), input.element_type)?;
                values.push((input.name.as_str(), value));
            }
            drop(session.run(values.iter().map(|(name, value)| (*name, value)))?);
        }
        Ok(sizes)
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
            let index = self.plan.input_index(input.name())?;
            if slots[index].is_some() {
                return Err(onnxrt::Error::DuplicateInput { name: input.name().to_owned() }.into());
            }
            let sample = self.plan.check_value(index, input.value())?;
            slots[index] = Some((input.into_held(), sample));
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
