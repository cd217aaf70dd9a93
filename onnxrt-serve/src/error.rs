//! [`Error`]: what the serving layer adds to [`onnxrt::Error`].

/// A serving error: one of the batcher's own, or an onnxrt error (bad input, a failed run...).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A [`Batcher`](crate::batch::Batcher) cannot batch this model: `name` does not have a free
    /// first (batch) axis, or is not a numeric tensor.
    #[error("cannot batch this model: `{name}` {why}\nFix: export the model with a dynamic first axis (e.g. `dynamic_axes={{\"{name}\": {{0: \"batch\"}}}}`), or run it with Session::run")]
    NotBatchable {
        /// The input or output.
        name: String,
        /// What is wrong with it.
        why: String,
    },

    /// A batched run's output `name` does not keep one row per sample: its first axis is not the
    /// batch's size (a model that reduces over the batch or reshapes it), so the batcher cannot
    /// give each request its row. Such a model must run unbatched.
    #[error("output `{name}` is not split along the batch axis: a batch of {rows} gave shape {shape:?}, whose first axis is not {rows}, so the batcher cannot give each request its row; batching must be off for this model")]
    NotSplitAlongBatch {
        /// The output.
        name: String,
        /// The batch's size (rows run).
        rows: usize,
        /// The output's shape in that run.
        shape: Vec<i64>,
    },

    /// A batched run's output `name` has a first axis of the batch's size, but its sample shape
    /// (the shape without that axis) is not one sample's: it changed with the batch size (a model
    /// that multiplies the batch with itself, `x·xᵀ`), or it is not the fixed one the model
    /// declares. Its rows are not per sample, so such a model must run unbatched.
    #[error("output `{name}`'s sample shape {}: {expected:?} {}, {sample:?} at {rows} {}; its rows are not per sample, so batching must be off for this model",
        if expected_rows.is_some() { "changes with the batch size" } else { "is not the declared one" },
        expected_rows.map_or_else(|| "as declared".to_owned(), |n| format!("at {n} {}", if n == 1 { "row" } else { "rows" })),
        if *rows == 1 { "row" } else { "rows" })]
    SampleShapeChanges {
        /// The output.
        name: String,
        /// Its sample shape in a run of `expected_rows` rows, or as declared (`None`).
        expected: Vec<i64>,
        /// The rows of the run that gave `expected`; `None`: `expected` is the declared shape.
        expected_rows: Option<usize>,
        /// Its sample shape in the run of `rows` rows.
        sample: Vec<i64>,
        /// The batch's size in that run.
        rows: usize,
    },

    /// The batcher's queue holds `capacity` requests already (the request was not queued).
    #[error("the batcher's queue is full ({capacity} requests waiting); retry later, shed load, or submit with WhenFull::Wait")]
    QueueFull {
        /// The queue's capacity.
        capacity: usize,
    },

    /// The request's deadline passed before its result was ready (it was not run, or its result
    /// was discarded).
    #[error("the request's deadline passed after {waited:?} in the batcher; it was not answered in time")]
    DeadlineExpired {
        /// Time from submission until the batcher gave up on it.
        waited: std::time::Duration,
    },

    /// A batch run by the runner given to
    /// [`BatcherBuilder::run_batches_with`](crate::batch::BatcherBuilder::run_batches_with) (a
    /// worker process, for one) failed, for every request of the batch.
    #[error("{why}")]
    BatchRun {
        /// Why, as the runner says.
        why: String,
        /// Whether the inputs were refused (the requests' fault) rather than the run failing.
        refused: bool,
    },

    /// The batcher was shut down before (or without) running the request.
    #[error("the batcher is shut down; the request was not run")]
    BatcherShutDown,

    /// An error of onnxrt: the request's inputs (checked as [`Session::run`](onnxrt::Session::run)
    /// checks them), the batch's run, a session that could not be made. Shown as onnxrt shows it.
    #[error(transparent)]
    Onnxrt(#[from] onnxrt::Error),
}

/// `Result<T, onnxrt_serve::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
