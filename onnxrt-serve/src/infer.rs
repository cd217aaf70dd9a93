//! One inference request, whatever protocol brought it: REST and gRPC decode theirs into a
//! [`Request`] and answer the [`Answer`] or the [`InferError`] that [`run`] returns, each
//! mapping the error to its own status once (`From`). Everything between (the model's checks,
//! batching, isolation, deadlines, the outputs asked for reaching the run) happens here and in
//! [`ServedModel::infer`].

use std::time::{Duration, Instant};

use onnxrt::Value;

use crate::repository::model::Phases;
use crate::repository::{InferError, ServedModel};

/// An output a request asks for.
#[derive(Debug, Clone, Default)]
pub struct WantedOutput {
    /// The model output's name.
    pub name: String,
    /// Answer it as raw bytes (REST's binary-tensor extension; gRPC always).
    pub binary: bool,
    /// The classification extension's class count (Triton's `classification`, KServe's
    /// `class_count`): nonzero answers the top classes as strings ([`crate::classification`]).
    pub class_count: u64,
}

/// A decoded inference request.
#[derive(Debug, Default)]
pub struct Request {
    /// The inputs by name.
    pub inputs: Vec<(String, Value<'static>)>,
    /// The outputs asked for (all, in model order, when empty).
    pub outputs: Vec<WantedOutput>,
    /// All outputs as raw bytes (REST's `binary_data_output`).
    pub all_binary: bool,
    /// The client's own time limit (its `timeout` parameter or gRPC deadline), if any.
    pub timeout: Option<Duration>,
    /// The sequence extension's `sequence_id`, when the request carries a nonzero one.
    pub sequence_id: Option<String>,
}

/// A request's outputs, in the order asked.
#[derive(Debug)]
pub struct Answer {
    /// Each output with whether it goes back as raw bytes.
    pub outputs: Vec<(String, Value<'static>, bool)>,
}

/// Runs `request` on `model`, answered before `deadline` (the sooner of the server's and the
/// client's limits: the server's `App::deadline`).
/// Where its time went goes into `phases` (the caller's [`crate::repository::model::Tally`]).
pub async fn run(
    model: &ServedModel,
    request: Request,
    deadline: Instant,
    phases: &mut Phases,
) -> Result<Answer, InferError> {
    if let Some(id) = &request.sequence_id {
        return Err(InferError::Invalid(format!(
            "`sequence_id` {id}: model `{}` is stateless and this server has no sequence batcher; a stateful client would \
             get answers that ignore its sequence, so the request is refused (send it without sequence parameters)",
            model.name
        )));
    }
    let wanted: Vec<String> = request.outputs.iter().map(|o| o.name.clone()).collect();
    let outputs = model.infer(request.inputs, &wanted, Some(deadline), phases).await?;
    let binary = |name: &str| request.all_binary || request.outputs.iter().any(|o| o.name == name && o.binary);
    let class_count = |name: &str| request.outputs.iter().find(|o| o.name == name).map_or(0, |o| o.class_count);
    let mut answer = Vec::with_capacity(outputs.len());
    for (name, value) in outputs {
        let value = match class_count(&name) {
            0 => value,
            count => {
                crate::classification::top_classes(&name, &value, count, &model.labels).map_err(InferError::Invalid)?
            }
        };
        let b = binary(&name);
        answer.push((name, value, b));
    }
    Ok(Answer { outputs: answer })
}
