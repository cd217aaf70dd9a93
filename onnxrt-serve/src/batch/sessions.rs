//! Which session runs a batch of a given size: the batcher's one session, or one session per
//! batch size ([`BatcherBuilder::session_per_batch_size`](super::BatcherBuilder::session_per_batch_size)).
//!
//! Why several: ORT's CUDA provider (measured with 1.30, cuDNN 9) keeps one prepared plan per
//! convolution, for the last input shape it saw. A run whose batch size differs from the previous
//! run's rebuilds the plan of every convolution: on an H200, ResNet-50 runs took 100–155 ms each
//! when the size changed on every run, against 2–18 ms at a steady size (`gpu_bench --mixed`,
//! BENCHMARKS.md). A batcher under changing load changes sizes all the time; a session per size
//! sees one shape each and never rebuilds.

use std::sync::{Arc, Mutex};

use crate::batch::plan::Plan;
use crate::error::Result;
use onnxrt::Session;

/// Makes a new session of the batcher's model (same inputs and outputs).
pub(crate) type SessionFactory = Arc<dyn Fn() -> onnxrt::Result<Session> + Send + Sync>;

/// The sessions batches run on.
pub(crate) struct Sessions {
    first: Session,
    // With a factory: per batch size (index = rows in the run), the session made for it.
    factory: Option<SessionFactory>,
    by_size: Mutex<Vec<Option<Session>>>,
}

impl Sessions {
    pub(crate) fn new(first: Session, factory: Option<SessionFactory>, max_batch: usize) -> Sessions {
        let by_size = if factory.is_some() { (0..=max_batch).map(|_| None).collect() } else { Vec::new() };
        Sessions { first, factory, by_size: Mutex::new(by_size) }
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
