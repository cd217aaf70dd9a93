//! Which session runs a batch of a given size: the batcher's one session, or one session per
//! batch size ([`BatcherBuilder::session_per_batch_size`](super::BatcherBuilder::session_per_batch_size)).
//!
//! Why several: ORT's CUDA provider (measured with 1.30, cuDNN 9) keeps one prepared plan per
//! convolution, for the last input shape it saw. A run whose batch size differs from the previous
//! run's rebuilds the plan of every convolution: on an H200, ResNet-50 runs took 100–155 ms each
//! when the size changed on every run, against 2–18 ms at a steady size (`gpu_bench --mixed`,
//! `benches/src/bin/gpu_bench.rs`). A batcher under changing load changes sizes all the time; a session per size
//! sees one shape each and never rebuilds.

use std::sync::{Arc, Mutex};

use crate::batch::plan::Plan;
use crate::error::Result;
use onnxrt::Session;

/// Makes a new session of the batcher's model (same inputs and outputs).
pub(crate) type SessionFactory = Arc<dyn Fn() -> onnxrt::Result<Session> + Send + Sync>;

/// Makes the batcher's model into a CUDA graph for one batch size (`BatcherBuilder::cuda_graphs`).
#[cfg(feature = "cuda")]
pub(crate) type PerSizeFactory = Arc<dyn Fn(usize) -> onnxrt::Result<onnxrt::CudaGraph> + Send + Sync>;

/// Makes the batcher's model into one session of CUDA graphs for the sizes it is given
/// (`BatcherBuilder::cuda_graphs_in_one_session`).
#[cfg(feature = "cuda")]
pub(crate) type SizesFactory = Arc<dyn Fn(&[usize]) -> onnxrt::Result<onnxrt::CudaGraphs> + Send + Sync>;

/// Makes the batcher's model into CUDA graphs.
#[cfg(feature = "cuda")]
#[derive(Clone)]
pub(crate) enum GraphFactory {
    /// A session per batch size.
    PerSize(PerSizeFactory),
    /// One session for every padded size (a session per size before ORT 1.18).
    Sizes(SizesFactory),
}

/// The CUDA graphs a batch size runs on (its own session, or the one of every size), shared by
/// the workers (one runs it at a time: its buffers are filled, run and read under the lock).
#[cfg(feature = "cuda")]
pub(crate) type SharedGraph = Arc<Mutex<onnxrt::CudaGraphs>>;

/// The sessions batches run on.
pub(crate) struct Sessions {
    first: Session,
    // With a factory: per batch size (index = rows in the run), the session made for it.
    factory: Option<SessionFactory>,
    by_size: Mutex<Vec<Option<Session>>>,
    #[cfg(feature = "cuda")]
    graphs: Option<Graphs>,
    #[cfg(feature = "cuda")]
    on_cuda: bool,
}

/// Per batch size, its CUDA graph once made, or why the model could not have one (then that
/// size runs on its session, and the factory is not asked again).
#[cfg(feature = "cuda")]
struct Graphs {
    factory: GraphFactory,
    // The padded sizes, made in one session by a `GraphFactory::Sizes` where the runtime keeps
    // several graphs per session (ORT 1.18); older runtimes get a session per size.
    sizes: Vec<usize>,
    one_session: bool,
    by_size: Mutex<Vec<Option<std::result::Result<SharedGraph, String>>>>,
    // Workers that have not yet captured every size on their own thread (`capture_all`).
    capturing_workers: Mutex<usize>,
    captured: std::sync::Condvar,
}

/// The CUDA work of every batcher in the process (copies, runs, allocations) holds this shared;
/// a run that captures a graph holds it alone: other CUDA work during a capture breaks it
/// (`CudaGraph::run_captures`), and the two workers of one batcher, or the batchers of two
/// models, would otherwise meet.
#[cfg(feature = "cuda")]
static CUDA_WORK: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A hold on the process's batcher CUDA work (`Sessions::cuda_work`): shared, or alone for a
/// capture.
#[cfg(feature = "cuda")]
pub(crate) enum CudaWork {
    // A batcher that runs on the CPU: nothing to hold.
    Free,
    Shared(#[allow(dead_code)] std::sync::RwLockReadGuard<'static, ()>),
    Alone(#[allow(dead_code)] std::sync::RwLockWriteGuard<'static, ()>),
}

impl Sessions {
    pub(crate) fn new(first: Session, factory: Option<SessionFactory>, max_batch: usize) -> Sessions {
        let by_size = if factory.is_some() { (0..=max_batch).map(|_| None).collect() } else { Vec::new() };
        Sessions {
            first,
            factory,
            by_size: Mutex::new(by_size),
            #[cfg(feature = "cuda")]
            graphs: None,
            #[cfg(feature = "cuda")]
            on_cuda: false,
        }
    }

    /// Batches of a size with a graph run on it (`BatcherBuilder::cuda_graphs`).
    #[cfg(feature = "cuda")]
    pub(crate) fn with_graphs(mut self, factory: GraphFactory, sizes: Vec<usize>, workers: usize) -> Sessions {
        let largest = sizes.iter().copied().max().unwrap_or(0);
        let one_session = onnxrt::runtime_info().is_ok_and(|runtime| runtime.api_level >= 18);
        self.graphs = Some(Graphs {
            factory,
            sizes,
            one_session,
            by_size: Mutex::new((0..=largest).map(|_| None).collect()),
            capturing_workers: Mutex::new(workers),
            captured: std::sync::Condvar::new(),
        });
        self
    }

    /// Makes the graph of every size in `sizes` and runs it once on the calling thread, so
    /// that thread's later runs replay (ORT captures per thread: a capture while requests flow
    /// would stall every other CUDA user of the batcher for two runs). A graph whose capture
    /// run fails is given up (`refuse_graph`). A worker calls it at its start, with `worker`;
    /// [`wait_for_worker_captures`](Sessions::wait_for_worker_captures) waits for all of them.
    #[cfg(feature = "cuda")]
    pub(crate) fn capture_all(&self, sizes: &[usize], worker: bool) {
        let Some(graphs) = &self.graphs else { return };
        // Counted down however this ends (a panic in a capture included), so no wait hangs.
        struct Done<'a>(Option<&'a Graphs>);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                if let Some(graphs) = self.0 {
                    let mut left = graphs.capturing_workers.lock().unwrap_or_else(|e| e.into_inner());
                    *left = left.saturating_sub(1);
                    graphs.captured.notify_all();
                }
            }
        }
        let _done = Done(worker.then_some(graphs));
        for &rows in sizes {
            let Some(graph) = self.graph_for(rows) else { continue };
            // Lock order, as in the workers: the CUDA work hold, then the graph; both are
            // released before `refuse_graph` takes the sizes' lock.
            let capture = graph.lock().unwrap_or_else(|e| e.into_inner()).run_captures(rows).unwrap_or(true);
            if !capture {
                continue;
            }
            let captured = {
                let _alone = self.cuda_work(true);
                let run = graph.lock().unwrap_or_else(|e| e.into_inner()).run(rows);
                run
            };
            if let Err(error) = captured {
                self.refuse_graph(rows, format!("its capture run failed: {error}"));
            }
        }
    }

    /// Returns once every worker has captured its graphs (at once without graphs).
    #[cfg(feature = "cuda")]
    pub(crate) fn wait_for_worker_captures(&self) {
        let Some(graphs) = &self.graphs else { return };
        let mut left = graphs.capturing_workers.lock().unwrap_or_else(|e| e.into_inner());
        while *left > 0 {
            left = graphs.captured.wait(left).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A hold on the process's batcher CUDA work ([`CUDA_WORK`]), alone when `capture` (the
    /// run about to start captures a graph), else shared; nothing for a batcher on the CPU.
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda_work(&self, capture: bool) -> CudaWork {
        if !self.on_cuda && self.graphs.is_none() {
            return CudaWork::Free;
        }
        if capture {
            CudaWork::Alone(CUDA_WORK.write().unwrap_or_else(|e| e.into_inner()))
        } else {
            CudaWork::Shared(CUDA_WORK.read().unwrap_or_else(|e| e.into_inner()))
        }
    }

    /// The batches run on CUDA (their CUDA work is held as [`cuda_work`](Sessions::cuda_work) says).
    #[cfg(feature = "cuda")]
    pub(crate) fn on_cuda(mut self, yes: bool) -> Sessions {
        self.on_cuda = yes;
        self
    }

    /// The CUDA graph for runs of `rows` rows, made at the first call for that size; `None`
    /// without graphs, or when the model cannot have one for this size (the reason is kept for
    /// [`graph_outcomes`](Sessions::graph_outcomes); the size then runs on its session, and the
    /// factory is not asked again).
    #[cfg(feature = "cuda")]
    pub(crate) fn graph_for(&self, rows: usize) -> Option<SharedGraph> {
        let graphs = self.graphs.as_ref()?;
        let mut by_size = graphs.by_size.lock().unwrap_or_else(|e| e.into_inner());
        if by_size.get(rows)?.is_none() {
            // Making a session allocates device memory: not during another thread's capture.
            let _shared = self.cuda_work(false);
            let shared = |made: onnxrt::Result<onnxrt::CudaGraphs>| match made {
                Ok(graphs) => Ok(Arc::new(Mutex::new(graphs))),
                Err(error) => Err(error.to_string()),
            };
            match &graphs.factory {
                GraphFactory::PerSize(factory) => by_size[rows] = Some(shared(factory(rows).map(Into::into))),
                GraphFactory::Sizes(factory) if graphs.one_session => {
                    // One session for every padded size, made at the first size asked for.
                    let made = shared(factory(&graphs.sizes));
                    for &size in &graphs.sizes {
                        if let Some(slot @ None) = by_size.get_mut(size) {
                            *slot = Some(made.clone());
                        }
                    }
                    if by_size[rows].is_none() {
                        by_size[rows] = Some(Err(format!("{rows} is not among the padded sizes {:?}", graphs.sizes)));
                    }
                }
                GraphFactory::Sizes(factory) => by_size[rows] = Some(shared(factory(&[rows]))),
            }
        }
        by_size[rows].as_ref().and_then(|made| made.as_ref().ok()).cloned()
    }

    /// How many CUDA graph sessions were made (a session shared by several sizes counts once).
    #[cfg(feature = "cuda")]
    pub(crate) fn graph_sessions(&self) -> usize {
        let Some(graphs) = &self.graphs else { return 0 };
        let by_size = graphs.by_size.lock().unwrap_or_else(|e| e.into_inner());
        let mut made: Vec<&SharedGraph> = Vec::new();
        for graph in by_size.iter().flatten().flatten() {
            if !made.iter().any(|seen| Arc::ptr_eq(seen, graph)) {
                made.push(graph);
            }
        }
        made.len()
    }

    /// Gives up the CUDA graph of runs of `rows` rows (its capture run failed): that size runs
    /// on its session from now on, and `why` is what [`graph_outcomes`](Sessions::graph_outcomes) says.
    #[cfg(feature = "cuda")]
    pub(crate) fn refuse_graph(&self, rows: usize, why: String) {
        if let Some(graphs) = &self.graphs {
            let mut by_size = graphs.by_size.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = by_size.get_mut(rows) {
                *slot = Some(Err(why));
            }
        }
    }

    /// Per batch size asked for so far, whether it got a CUDA graph, or why not.
    #[cfg(feature = "cuda")]
    pub(crate) fn graph_outcomes(&self) -> Vec<(usize, std::result::Result<(), String>)> {
        let Some(graphs) = &self.graphs else { return Vec::new() };
        let by_size = graphs.by_size.lock().unwrap_or_else(|e| e.into_inner());
        by_size
            .iter()
            .enumerate()
            .filter_map(|(rows, slot)| Some((rows, slot.as_ref()?.as_ref().map(|_| ()).map_err(Clone::clone))))
            .collect()
    }

    /// The session for runs of `rows` rows. Per size, the first size asked for gets the batcher's
    /// own session and each later size a new one from the factory (made under the lock: sizes
    /// are few, and [`Batcher::warm_up`](super::Batcher::warm_up) makes them before traffic).
    pub(crate) fn for_rows(&self, rows: usize, plan: &Plan) -> Result<Session> {
        let Some(factory) = &self.factory else { return Ok(self.first.clone()) };
        let mut by_size = self.by_size.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(session)) = by_size.get(rows) {
            return Ok(session.clone());
        }
        let first_unused = by_size.iter().all(Option::is_none);
        let session = if first_unused { self.first.clone() } else { factory()? };
        if !first_unused {
            check_same_model(plan, &session)?;
        }
        if let Some(slot) = by_size.get_mut(rows) {
            *slot = Some(session.clone());
        }
        Ok(session)
    }

    /// Sessions made so far (the batcher's own included).
    pub(crate) fn count(&self) -> usize {
        let by_size = self.by_size.lock().unwrap_or_else(|e| e.into_inner());
        if self.factory.is_some() {
            by_size.iter().flatten().count().max(1)
        } else {
            1
        }
    }
}

/// Refuses a factory's session whose inputs or outputs differ from the batcher's model.
fn check_same_model(plan: &Plan, session: &Session) -> Result<()> {
    let other = Plan::new(session)?;
    let same = plan.inputs.len() == other.inputs.len()
        && plan.outputs.len() == other.outputs.len()
        && plan
            .inputs
            .iter()
            .zip(&other.inputs)
            .all(|(a, b)| a.name == b.name && a.element_type == b.element_type && a.sample == b.sample)
        && plan.outputs.iter().zip(&other.outputs).all(|(a, b)| a.label == b.label && a.element_type == b.element_type);
    if same {
        Ok(())
    } else {
        Err(onnxrt::Error::InvalidArgument {
            what: "a session from the batcher's session_per_batch_size factory".into(),
            why: "its inputs or outputs differ from the batcher's session; the factory must load the same model".into(),
        }
        .into())
    }
}

#[cfg(all(test, feature = "cuda"))]
mod tests {
    use super::*;

    fn sessions(workers: usize, factory: GraphFactory) -> Arc<Sessions> {
        let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
        let session = Session::builder().commit_from_file(model).expect("session");
        Arc::new(Sessions::new(session, None, 4).with_graphs(factory, vec![1, 2, 4], workers).on_cuda(false))
    }

    #[test]
    fn the_wait_for_worker_captures_ends_however_each_worker_ends() {
        // Size 2's factory panics in the first worker that asks: that worker's count still goes
        // down, and the sizes' lock it held is taken again by the other worker.
        let panicked = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&panicked);
        let factory = GraphFactory::PerSize(Arc::new(move |rows| {
            if rows == 2 && !flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                panic!("a factory that panics");
            }
            Err(onnxrt::Error::InvalidArgument { what: format!("{rows} rows"), why: "no CUDA here".into() })
        }));
        let sessions = sessions(3, factory);
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let sessions = Arc::clone(&sessions);
                std::thread::spawn(move || sessions.capture_all(&[1, 2, 4], true))
            })
            .collect();
        sessions.wait_for_worker_captures();
        let ended: Vec<bool> = workers.into_iter().map(|worker| worker.join().is_ok()).collect();
        assert_eq!(ended.iter().filter(|ok| !**ok).count(), 1, "one worker panicked: {ended:?}");
        let outcomes = sessions.graph_outcomes();
        assert_eq!(outcomes.iter().map(|(rows, _)| *rows).collect::<Vec<_>>(), [1, 2, 4], "{outcomes:?}");
        assert!(outcomes.iter().all(|(_, outcome)| outcome.as_ref().is_err_and(|why| why.contains("no CUDA here"))));
    }

    #[test]
    fn without_graphs_nothing_is_waited_for_or_held() {
        let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/mlp.onnx");
        let session = Session::builder().commit_from_file(model).expect("session");
        let sessions = Sessions::new(session, None, 4).on_cuda(false);
        sessions.wait_for_worker_captures();
        sessions.capture_all(&[1, 2], true);
        assert!(matches!(sessions.cuda_work(true), CudaWork::Free));
        assert!(sessions.graph_for(1).is_none() && sessions.graph_outcomes().is_empty());
    }
}
