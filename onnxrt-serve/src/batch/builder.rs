//! The batcher's settings: [`BatcherBuilder`] (what a user sets) and the settings a built batcher
//! keeps (the padded batch sizes).

use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use onnxrt::{Session, Value};

use super::plan::Plan;
use super::queue::Queue;
use super::sessions::{SessionFactory, Sessions};
use super::stats::Counters;
use super::{worker, Batcher, Shutdown};
use crate::error::Result;

/// Runs one gathered batch elsewhere than on the batcher's session
/// ([`BatcherBuilder::run_batches_with`]): the inputs by name, each with the batch's rows;
/// returns every model output, in model order, its first axis the batch's rows.
pub type RunBatch = Arc<dyn Fn(&[(&str, &Value<'_>)]) -> Result<Vec<Value<'static>>> + Send + Sync>;

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
    run_batches: Option<RunBatch>,
    // The CUDA device whose memory each worker copies its batches to (`device_inputs`).
    device_inputs: Option<i32>,
    hold_while_busy: bool,
    #[cfg(feature = "cuda")]
    graph_factory: Option<super::sessions::GraphFactory>,
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
            .field("run_batches_with", &self.run_batches.is_some())
            .field("device_inputs", &self.device_inputs)
            .field("hold_while_busy", &self.hold_while_busy)
            .finish_non_exhaustive()
    }
}

impl BatcherBuilder {
    pub(super) fn new(session: Session) -> BatcherBuilder {
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
            run_batches: None,
            device_inputs: None,
            hold_while_busy: false,
            #[cfg(feature = "cuda")]
            graph_factory: None,
        }
    }

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

    /// The most requests waiting (default 1024); more are refused or wait ([`WhenFull`](super::WhenFull)).
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

    /// With several [`workers`](Self::workers): once its delay has passed, a worker keeps its
    /// batch open while another worker's batch runs, and closes it when that run ends or the
    /// batch is full (default off). It copies each request's sample into the batch buffer as
    /// it takes it (with `device_inputs` (with the `cuda` feature), on to the device buffer too,
    /// beside the other worker's run), so little is left to copy at the close. Model runs take turns: a batch that
    /// filled up while another ran is gathered (and, with `device_inputs` (with the `cuda` feature),
    /// copied to the device) and then waits for that run to end.
    ///
    /// Without it, a free worker closes its batch at once with whatever is queued, usually a
    /// few requests, because the worker before it just took the rest: on one device the two
    /// batches then split what one run could carry, and their runs slow each other down. With
    /// it, a batch holds what arrives during one run (up to `max_batch`), at the price of up to
    /// one run's wait for the first request of a batch. Measured in
    /// `benches/src/bin/device_sim.rs` and on the GPU (`tools/gpu/run.sh serve`). A shutdown ends the
    /// wait.
    pub fn hold_while_busy(mut self, hold: bool) -> Self {
        self.hold_while_busy = hold;
        self
    }

    /// For a CUDA session on device `device_id`: each worker keeps, besides its page-locked
    /// batch buffers, one buffer per input in that device's memory. A gathered batch is copied
    /// there with one copy on the worker's own CUDA stream (which waits for nothing but itself,
    /// so it runs beside another worker's model run; with [`hold_while_busy`](Self::hold_while_busy)
    /// each sample is copied as it is taken, and the close copies only the rest and the padding), and the device rows are what the run is
    /// bound to: ORT copies nothing to the device inside the run. Off by default; on a session
    /// without the CUDA provider it is ignored. An allocation or copy that fails fails its batch
    /// with CUDA's error.
    #[cfg(feature = "cuda")]
    pub fn device_inputs(mut self, device_id: i32) -> Self {
        self.device_inputs = Some(device_id);
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

    /// Runs each batch with `run` instead of on the batcher's session: the batcher still checks,
    /// queues and gathers the requests (its session gives the model's inputs and outputs) and
    /// splits what `run` returns (every model output, in model order, batch axis first) among
    /// them. For runs in another process: onnxrt-serve's isolation runs batches in a worker
    /// process, so a runtime that crashes on a batch costs that batch, not the server.
    /// [`Batcher::warm_up`] runs through it too. Not with
    /// [`session_per_batch_size`](Self::session_per_batch_size), `device_inputs` or
    /// `cuda_graphs`, which run on sessions of this process ([`build`](Self::build) refuses them).
    pub fn run_batches_with(
        mut self,
        run: impl Fn(&[(&str, &Value<'_>)]) -> Result<Vec<Value<'static>>> + Send + Sync + 'static,
    ) -> Self {
        self.run_batches = Some(Arc::new(run));
        self
    }

    /// Runs each padded batch size as a CUDA graph made by `factory` for that many rows
    /// (usually [`onnxrt::CudaGraph::from_file`] with the batcher's model and CUDA options). A
    /// replayed graph launches the whole model at once instead of kernel by kernel, which saves
    /// most for small batches.
    ///
    /// ORT keeps captured graphs per thread, and a capture fails if other CUDA work runs
    /// meanwhile. So each worker, when it starts, makes (once for all workers) and captures
    /// every size's graph on its own thread before it takes a request, one capture at a time
    /// with the batcher's other CUDA work held off; [`Batcher::warm_up`] waits for that.
    ///
    /// The worker copies its batch (already on the device: needs
    /// `device_inputs` (with the `cuda` feature)) into the graph's input buffers, runs it, and
    /// copies the outputs to its page-locked buffers; the workers share one graph per size and
    /// take turns on it. Needs padded sizes ([`pad_to_power_of_two`](Self::pad_to_power_of_two)
    /// or [`pad_to_sizes`](Self::pad_to_sizes)): each size holds a session, its weights and its
    /// buffers on the device ([`cuda_graphs_in_one_session`](Self::cuda_graphs_in_one_session)
    /// holds the weights once). A size whose graph cannot be made (a node without a CUDA kernel,
    /// a free axis other than the batch axis) or whose capture run fails at warm-up runs
    /// without one, and [`Batcher::cuda_graphs`] says why.
    #[cfg(feature = "cuda")]
    pub fn cuda_graphs(
        mut self,
        factory: impl Fn(usize) -> onnxrt::Result<onnxrt::CudaGraph> + Send + Sync + 'static,
    ) -> Self {
        self.graph_factory = Some(super::sessions::GraphFactory::PerSize(Arc::new(factory)));
        self
    }

    /// [`cuda_graphs`](Self::cuda_graphs) with one session for every padded size: `factory`
    /// (usually [`onnxrt::CudaGraphs::from_file`]) is called once with every size, so the
    /// device holds the weights once, and the workers take turns on that session. On a runtime
    /// older than ONNX Runtime 1.18, whose CUDA provider keeps one graph per session, it is
    /// called once per size with that size alone (a session per size, as `cuda_graphs`).
    /// [`Batcher::cuda_graph_sessions`] counts the sessions made.
    #[cfg(feature = "cuda")]
    pub fn cuda_graphs_in_one_session(
        mut self,
        factory: impl Fn(&[usize]) -> onnxrt::Result<onnxrt::CudaGraphs> + Send + Sync + 'static,
    ) -> Self {
        self.graph_factory = Some(super::sessions::GraphFactory::Sizes(Arc::new(factory)));
        self
    }

    /// Checks the model and starts the workers.
    ///
    /// # Errors
    /// [`Error::NotBatchable`](crate::Error::NotBatchable) when an input or output has no free first axis or is not a
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
        // Made up front: counters per batch size, queue places, threads. Past these a build
        // would abort the process on allocation instead of answering.
        for (what, value, most) in [
            ("max_batch", self.max_batch, 1 << 16),
            ("queue_capacity", self.queue_capacity, 1 << 24),
            ("workers", self.workers, 1 << 12),
        ] {
            if value > most {
                return Err(onnxrt::Error::InvalidArgument {
                    what: format!("Batcher {what} {value}"),
                    why: format!("it must be at most {most}"),
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
        #[cfg(feature = "cuda")]
        if self.graph_factory.is_some() {
            let missing = if self.device_inputs.is_none() {
                Some("device_inputs (the graph's inputs are filled from the worker's device buffers)")
            } else if !self.pad_to_power_of_two && self.pad_to_sizes.is_none() {
                Some("padded sizes (pad_to_power_of_two or pad_to_sizes: one graph per size)")
            } else {
                None
            };
            if let Some(missing) = missing {
                return Err(onnxrt::Error::InvalidArgument {
                    what: "Batcher cuda_graphs".into(),
                    why: format!("it needs {missing}"),
                }
                .into());
            }
        }
        if self.run_batches.is_some() {
            #[cfg(feature = "cuda")]
            let graphs = self.graph_factory.is_some();
            #[cfg(not(feature = "cuda"))]
            let graphs = false;
            let on_sessions = [
                ("session_per_batch_size", self.session_factory.is_some()),
                ("device_inputs", self.device_inputs.is_some()),
                ("cuda_graphs", graphs),
            ];
            if let Some((what, _)) = on_sessions.iter().find(|(_, set)| *set) {
                return Err(onnxrt::Error::InvalidArgument {
                    what: format!("Batcher run_batches_with and {what}"),
                    why: format!(
                        "{what} runs batches on sessions of this process; run_batches_with runs them elsewhere"
                    ),
                }
                .into());
            }
        }
        let plan = Arc::new(Plan::new(&self.session)?);
        let counters = Arc::new(Counters::new(self.max_batch));
        let (sender, receiver) = sync_channel(self.queue_capacity);
        let queue = Arc::new(Queue::new(sender, self.queue_capacity, counters));
        let receiver = Arc::new(Mutex::new(receiver));
        let pin = cfg!(feature = "cuda") && self.session.providers().contains(&"CUDAExecutionProvider");
        let mut settings = Settings::new(self.max_batch, self.pad_to_power_of_two, self.pad_to_sizes.as_deref());
        let sessions = Sessions::new(self.session.clone(), self.session_factory.clone(), self.max_batch);
        #[cfg(feature = "cuda")]
        let sessions = match &self.graph_factory {
            Some(factory) => sessions.with_graphs(factory.clone(), settings.run_sizes(), self.workers),
            None => sessions,
        }
        .on_cuda(pin);
        let sessions = Arc::new(sessions);
        let device_inputs = self.device_inputs.filter(|_| pin);
        let mut handles = Vec::with_capacity(self.workers);
        settings.run_batches = self.run_batches.clone().map(Elsewhere);
        for index in 0..self.workers {
            let worker = worker::Worker::new(
                Arc::clone(&sessions),
                worker::Placement { pin, device_inputs },
                Arc::clone(&plan),
                Arc::clone(&queue),
                Arc::clone(&receiver),
                worker::Closing {
                    max_batch: self.max_batch,
                    max_delay: self.max_delay,
                    hold_while_busy: self.hold_while_busy,
                },
                settings.sizes.clone(),
                self.gather_threads,
                self.run_batches.clone(),
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
pub(super) struct Settings {
    pub(super) max_batch: usize,
    // The row counts batches are padded to, ascending, ending at `max_batch`; `None`: unpadded.
    pub(super) sizes: Option<Arc<[usize]>>,
    // Where batches run instead of on the sessions (`BatcherBuilder::run_batches_with`).
    pub(super) run_batches: Option<Elsewhere>,
}

/// A [`RunBatch`], shown by `Debug` as set.
#[derive(Clone)]
pub(super) struct Elsewhere(pub(super) RunBatch);

impl std::fmt::Debug for Elsewhere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("run_batches_with(..)")
    }
}

impl Settings {
    fn new(max_batch: usize, pad_to_power_of_two: bool, pad_to_sizes: Option<&[usize]>) -> Settings {
        let sizes = padded_sizes(max_batch, pad_to_power_of_two, pad_to_sizes).map(Into::into);
        Settings { max_batch, sizes, run_batches: None }
    }

    /// Every number of rows a batch can run with.
    pub(super) fn run_sizes(&self) -> Vec<usize> {
        match &self.sizes {
            Some(sizes) => sizes.to_vec(),
            None => (1..=self.max_batch).collect(),
        }
    }
}

/// The row counts batches are padded to, ascending and ending at `max_batch`: `pad_to_sizes`
/// (those below `max_batch`) or, with `pad_to_power_of_two`, the powers of two below it; `None`
/// when unpadded.
pub(crate) fn padded_sizes(
    max_batch: usize,
    pad_to_power_of_two: bool,
    pad_to_sizes: Option<&[usize]>,
) -> Option<Vec<usize>> {
    let mut sizes: Vec<usize> = match pad_to_sizes {
        Some(sizes) => sizes.iter().copied().filter(|&n| n < max_batch).collect(),
        None if pad_to_power_of_two => {
            (0..usize::BITS).map(|bit| 1usize << bit).take_while(|&n| n < max_batch).collect()
        }
        None => return None,
    };
    sizes.push(max_batch);
    sizes.sort_unstable();
    sizes.dedup();
    Some(sizes)
}
