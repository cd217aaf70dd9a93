//! What Triton's clients read besides the protocol's core: a model's configuration (REST
//! `/v2/models/NAME/config`, gRPC `ModelConfig`) and the statistics extension (REST
//! `/v2/models[/NAME[/versions/V]]/stats`, gRPC `ModelStatistics`), in Triton's shapes, built here
//! once for both adapters. `max_batch_size` is 0: the shapes include the batch axis, so clients
//! (perf_analyzer) send the shapes they are given whole, and each request is one inference.

use crate::oip::grpc;
use crate::repository::stats::{Statistics, Timed};
use crate::repository::ServedModel;
use serde_json::{json, Value as Json};

/// Triton's name of a protocol datatype (`FP32` -> `TYPE_FP32`; `BYTES` is `TYPE_STRING`).
fn data_type(datatype: &str) -> String {
    if datatype == "BYTES" {
        "TYPE_STRING".to_owned()
    } else {
        format!("TYPE_{datatype}")
    }
}

/// The configuration as REST answers it.
pub fn config_json(model: &ServedModel) -> Json {
    let metadata = model.metadata();
    let tensors = |list: &[crate::oip::messages::TensorMetadata]| -> Vec<Json> {
        list.iter().map(|t| json!({ "name": t.name, "data_type": data_type(t.datatype), "dims": t.shape })).collect()
    };
    let mut config = json!({
        "name": metadata.name,
        "platform": metadata.platform,
        "backend": "onnxruntime",
        "max_batch_size": 0,
        "input": tensors(&metadata.inputs),
        "output": tensors(&metadata.outputs),
    });
    if model.batcher().is_some() {
        config["dynamic_batching"] = json!({
            "max_queue_delay_microseconds": model.settings.max_delay_us,
            "preferred_batch_size": model.settings.padded_sizes(),
        });
    }
    if let Some(accelerators) = accelerators(model) {
        config["optimization"] = json!({ "execution_accelerators": accelerators });
    }
    config
}

/// The model's provider and its settings in Triton's shape (`optimization.execution_accelerators`,
/// where Triton's ONNX Runtime backend reads `tensorrt` and `openvino`); none on the CPU.
fn accelerators(model: &ServedModel) -> Option<Json> {
    if model.settings.provider_setup == crate::provider::ProviderSetup::Cpu {
        return None;
    }
    let mut parameters: serde_json::Map<String, Json> =
        model.settings.provider_setup.options().into_iter().map(|(k, v)| (k, Json::String(v))).collect();
    // What the session in this process got, best first (none when runs are in worker processes).
    if let Some(session) = model.session() {
        parameters.insert("session_providers".into(), Json::String(session.providers().join(",")));
    }
    let on_host = ["openvino", "dnnl", "xnnpack"].iter().any(|p| model.settings.provider.eq_ignore_ascii_case(p));
    let kind = if on_host { "cpu_execution_accelerator" } else { "gpu_execution_accelerator" };
    Some(json!({ kind: [{ "name": model.settings.provider, "parameters": parameters }] }))
}

/// The configuration as gRPC answers it.
pub fn config_message(model: &ServedModel) -> grpc::ModelConfig {
    let metadata = model.metadata();
    let kind =
        |datatype: &str| grpc::DataType::from_str_name(&data_type(datatype)).unwrap_or(grpc::DataType::TypeInvalid);
    grpc::ModelConfig {
        name: metadata.name,
        platform: metadata.platform.to_owned(),
        backend: "onnxruntime".to_owned(),
        max_batch_size: 0,
        input: metadata
            .inputs
            .iter()
            .map(|t| grpc::ModelInput {
                name: t.name.clone(),
                data_type: kind(t.datatype).into(),
                dims: t.shape.clone(),
            })
            .collect(),
        output: metadata
            .outputs
            .iter()
            .map(|t| grpc::ModelOutput {
                name: t.name.clone(),
                data_type: kind(t.datatype).into(),
                dims: t.shape.clone(),
            })
            .collect(),
        dynamic_batching: model.batcher().map(|_| grpc::ModelDynamicBatching {
            preferred_batch_size: model
                .settings
                .padded_sizes()
                .iter()
                .map(|&n| i32::try_from(n).unwrap_or(i32::MAX))
                .collect(),
            max_queue_delay_microseconds: model.settings.max_delay_us,
        }),
    }
}

/// A model's statistics now.
pub fn statistics(model: &ServedModel) -> Statistics {
    model.stats.snapshot(model.batcher().map(|b| b.stats()).as_ref())
}

/// `{"model_stats": [...]}` as REST answers it.
pub fn statistics_json(models: &[std::sync::Arc<ServedModel>]) -> Json {
    let timed = |t: Timed| json!({ "count": t.count, "ns": t.ns });
    let stats: Vec<Json> = models
        .iter()
        .map(|model| {
            let s = statistics(model);
            json!({
                "name": model.name,
                "version": model.version,
                "last_inference": s.last_inference_ms,
                "inference_count": s.inference_count,
                "execution_count": s.execution_count,
                "inference_stats": {
                    "success": timed(s.success),
                    "fail": timed(s.fail),
                    "queue": timed(s.queue),
                    "compute_input": timed(s.compute_input),
                    "compute_infer": timed(s.compute_infer),
                    "compute_output": timed(s.compute_output),
                    "cache_hit": timed(Timed::default()),
                    "cache_miss": timed(Timed::default()),
                },
                "batch_stats": s.batches.iter().map(|&(size, runs)| json!({
                    "batch_size": size,
                    "compute_input": timed(Timed { count: runs.count, ns: 0 }),
                    "compute_infer": timed(runs),
                    "compute_output": timed(Timed { count: runs.count, ns: 0 }),
                })).collect::<Vec<_>>(),
                "memory_usage": [],
            })
        })
        .collect();
    json!({ "model_stats": stats })
}

/// The statistics as gRPC answers them.
pub fn statistics_message(models: &[std::sync::Arc<ServedModel>]) -> grpc::ModelStatisticsResponse {
    let timed = |t: Timed| Some(grpc::StatisticDuration { count: t.count, ns: t.ns });
    let model_stats = models
        .iter()
        .map(|model| {
            let s = statistics(model);
            grpc::ModelStatistics {
                name: model.name.clone(),
                version: model.version.clone(),
                last_inference: s.last_inference_ms,
                inference_count: s.inference_count,
                execution_count: s.execution_count,
                inference_stats: Some(grpc::InferStatistics {
                    success: timed(s.success),
                    fail: timed(s.fail),
                    queue: timed(s.queue),
                    compute_input: timed(s.compute_input),
                    compute_infer: timed(s.compute_infer),
                    compute_output: timed(s.compute_output),
                    cache_hit: timed(Timed::default()),
                    cache_miss: timed(Timed::default()),
                }),
                batch_stats: s
                    .batches
                    .iter()
                    .map(|&(size, runs)| grpc::InferBatchStatistics {
                        batch_size: size,
                        compute_input: timed(Timed { count: runs.count, ns: 0 }),
                        compute_infer: timed(runs),
                        compute_output: timed(Timed { count: runs.count, ns: 0 }),
                    })
                    .collect(),
            }
        })
        .collect();
    grpc::ModelStatisticsResponse { model_stats }
}
