//! The Open Inference Protocol over gRPC (`inference.GRPCInferenceService`), on the same models
//! and checks as REST. Inputs come as raw bytes (`raw_input_contents`, what tritonclient sends)
//! or typed `contents`; outputs go back as raw bytes (`raw_output_contents`). A request's deadline
//! is the sooner of its gRPC deadline, its `timeout` parameter (µs) and the server's timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::infer::{self, WantedOutput};
use crate::oip::grpc::grpc_inference_service_server::GrpcInferenceService;
use crate::oip::grpc::infer_parameter::ParameterChoice;
use crate::oip::grpc::model_infer_request::InferInputTensor;
use crate::oip::grpc::model_infer_response::InferOutputTensor;
use crate::oip::grpc::model_metadata_response::TensorMetadata;
use crate::oip::grpc::repository_index_response::ModelIndex;
use crate::oip::grpc::*;
use crate::oip::messages::{EXTENSIONS, PLATFORM};
use crate::oip::tensor;
use crate::repository::{ControlError, FindError, InferError, ServedModel};
use crate::shared_memory::{self, Place};
use onnxrt::Value;
use tonic::{Request, Response, Status};

use crate::server::app::App;

pub struct Service {
    pub app: Arc<App>,
}

impl Service {
    fn find(&self, name: &str, version: &str) -> Result<Arc<ServedModel>, Status> {
        self.app.repository.find(name, Some(version)).map_err(|e| GrpcRefusal::from(e).0)
    }
}

/// A failure as a gRPC status: the one place gRPC maps them.
struct GrpcRefusal(Status);

impl From<InferError> for GrpcRefusal {
    fn from(error: InferError) -> GrpcRefusal {
        let message = error.to_string();
        GrpcRefusal(match error {
            InferError::Invalid(_) => Status::invalid_argument(message),
            InferError::Overloaded(_) | InferError::ShuttingDown => Status::unavailable(message),
            InferError::Timeout(_) => Status::deadline_exceeded(message),
            InferError::Failed(_) => Status::internal(message),
        })
    }
}

impl From<FindError> for GrpcRefusal {
    fn from(error: FindError) -> GrpcRefusal {
        GrpcRefusal(match error {
            FindError::Unknown(why) => Status::not_found(why),
            FindError::Unavailable(why) => Status::unavailable(why),
        })
    }
}

/// One access line for a finished call, as REST writes one per request: `rpc` is the method,
/// `model` the model it named ("" for server-wide calls). Internal errors are logged at `error`.
fn log_access(rpc: &'static str, id: &str, peer: &str, model: &str, started: Instant, status: Result<(), &Status>) {
    let micros = started.elapsed().as_micros() as u64;
    match status {
        Ok(()) => tracing::info!(target: "access", id, peer, method = "grpc", rpc, model, status = "OK", micros),
        Err(status) if status.code() == tonic::Code::Internal => tracing::error!(
            target: "access", id, peer, method = "grpc", rpc, model, status = ?status.code(), micros, error = status.message()
        ),
        Err(status) => tracing::info!(
            target: "access", id, peer, method = "grpc", rpc, model, status = ?status.code(), micros, error = status.message()
        ),
    }
}

/// The caller's address, for the access line.
fn peer_of<T>(request: &Request<T>) -> String {
    request.remote_addr().map(|a| a.to_string()).unwrap_or_default()
}

/// The `grpc-timeout` header: digits and a unit (H, M, S, m, u, n).
fn grpc_timeout(metadata: &tonic::metadata::MetadataMap) -> Option<Duration> {
    let text = metadata.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = text.split_at(text.len().checked_sub(1)?);
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// A value from an input's typed `contents`.
fn value_from_contents(input: &InferInputTensor) -> Result<Value<'static>, String> {
    let name = &input.name;
    let contents = input.contents.clone().unwrap_or_default();
    let mut bytes = Vec::new();
    let narrow = |what: &str| format!("input `{name}`: an element does not fit {what}");
    match input.datatype.as_str() {
        "BYTES" => {
            for element in &contents.bytes_contents {
                let length = u32::try_from(element.len()).map_err(|_| narrow("a 4 GiB element"))?;
                bytes.extend(length.to_le_bytes());
                bytes.extend(element);
            }
        }
        "BOOL" => bytes.extend(contents.bool_contents.iter().map(|&b| u8::from(b))),
        "INT8" => {
            for &x in &contents.int_contents {
                bytes.extend(i8::try_from(x).map_err(|_| narrow("INT8"))?.to_le_bytes())
            }
        }
        "INT16" => {
            for &x in &contents.int_contents {
                bytes.extend(i16::try_from(x).map_err(|_| narrow("INT16"))?.to_le_bytes())
            }
        }
        "INT32" => contents.int_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "INT64" => contents.int64_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "UINT8" => {
            for &x in &contents.uint_contents {
                bytes.extend(u8::try_from(x).map_err(|_| narrow("UINT8"))?.to_le_bytes())
            }
        }
        "UINT16" => {
            for &x in &contents.uint_contents {
                bytes.extend(u16::try_from(x).map_err(|_| narrow("UINT16"))?.to_le_bytes())
            }
        }
        "UINT32" => contents.uint_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "UINT64" => contents.uint64_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "FP32" => contents.fp32_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "FP64" => contents.fp64_contents.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        "FP16" | "BF16" => {
            return Err(format!(
                "input `{name}`: {} has no typed contents field; send it in raw_input_contents",
                input.datatype
            ))
        }
        other => {
            tensor::element_type(name, other)?;
        }
    }
    tensor::value_from_raw(name, &input.datatype, &input.shape, &bytes)
}

#[tonic::async_trait]
impl GrpcInferenceService for Service {
    async fn server_live(&self, request: Request<ServerLiveRequest>) -> Result<Response<ServerLiveResponse>, Status> {
        let id = self.app.new_request_id();
        log_access("ServerLive", &id, &peer_of(&request), "", Instant::now(), Ok(()));
        Ok(Response::new(ServerLiveResponse { live: true }))
    }

    async fn server_ready(
        &self,
        request: Request<ServerReadyRequest>,
    ) -> Result<Response<ServerReadyResponse>, Status> {
        let id = self.app.new_request_id();
        log_access("ServerReady", &id, &peer_of(&request), "", Instant::now(), Ok(()));
        Ok(Response::new(ServerReadyResponse { ready: self.app.is_ready() }))
    }

    async fn model_ready(&self, request: Request<ModelReadyRequest>) -> Result<Response<ModelReadyResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let request = request.into_inner();
        // An unknown model is not ready, as REST's 404 reads to its clients (and as Triton answers).
        let ready = self
            .app
            .repository
            .find(&request.name, Some(&request.version))
            .is_ok_and(|model| model.is_ready() && self.app.is_ready());
        log_access("ModelReady", &id, &peer, &request.name, started, Ok(()));
        Ok(Response::new(ModelReadyResponse { ready }))
    }

    async fn server_metadata(
        &self,
        request: Request<ServerMetadataRequest>,
    ) -> Result<Response<ServerMetadataResponse>, Status> {
        let id = self.app.new_request_id();
        log_access("ServerMetadata", &id, &peer_of(&request), "", Instant::now(), Ok(()));
        Ok(Response::new(ServerMetadataResponse {
            name: "onnxrt-serve".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            extensions: EXTENSIONS.iter().map(|&e| e.to_owned()).collect(),
        }))
    }

    async fn model_metadata(
        &self,
        request: Request<ModelMetadataRequest>,
    ) -> Result<Response<ModelMetadataResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let request = request.into_inner();
        let found = self.find(&request.name, &request.version);
        log_access("ModelMetadata", &id, &peer, &request.name, started, found.as_ref().map(|_| ()));
        let model = found?;
        let metadata = model.metadata();
        let tensors = |list: Vec<crate::oip::messages::TensorMetadata>| {
            list.into_iter()
                .map(|t| TensorMetadata { name: t.name, datatype: t.datatype.into(), shape: t.shape })
                .collect()
        };
        Ok(Response::new(ModelMetadataResponse {
            name: metadata.name,
            versions: metadata.versions,
            platform: PLATFORM.into(),
            inputs: tensors(metadata.inputs),
            outputs: tensors(metadata.outputs),
        }))
    }

    async fn repository_index(
        &self,
        request: Request<RepositoryIndexRequest>,
    ) -> Result<Response<RepositoryIndexResponse>, Status> {
        let id = self.app.new_request_id();
        log_access("RepositoryIndex", &id, &peer_of(&request), "", Instant::now(), Ok(()));
        let only_ready = request.into_inner().ready;
        let models = self
            .app
            .repository
            .index()
            .into_iter()
            .filter(|m| !only_ready || m.ready)
            .map(|m| ModelIndex {
                name: m.name,
                version: m.version,
                state: if m.ready { "READY" } else { "UNAVAILABLE" }.into(),
                reason: m.reason,
            })
            .collect();
        Ok(Response::new(RepositoryIndexResponse { models }))
    }

    async fn repository_model_load(
        &self,
        request: Request<RepositoryModelLoadRequest>,
    ) -> Result<Response<RepositoryModelLoadResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let request = request.into_inner();
        let result = match request.parameters.keys().find(|k| *k == "config" || k.starts_with("file:")) {
            Some(key) => Err(Status::invalid_argument(format!(
                "load parameter `{key}` is not supported: put the model and its config.json in the repository"
            ))),
            None => self.control(request.model_name.clone(), true).await,
        };
        log_access("RepositoryModelLoad", &id, &peer, &request.model_name, started, result.as_ref().map(|_| ()));
        result.map(|()| Response::new(RepositoryModelLoadResponse {}))
    }

    async fn repository_model_unload(
        &self,
        request: Request<RepositoryModelUnloadRequest>,
    ) -> Result<Response<RepositoryModelUnloadResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let request = request.into_inner();
        let result = self.control(request.model_name.clone(), false).await;
        log_access("RepositoryModelUnload", &id, &peer, &request.model_name, started, result.as_ref().map(|_| ()));
        result.map(|()| Response::new(RepositoryModelUnloadResponse {}))
    }

    async fn model_config(
        &self,
        request: Request<ModelConfigRequest>,
    ) -> Result<Response<ModelConfigResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let request = request.into_inner();
        let found = self.find(&request.name, &request.version);
        log_access("ModelConfig", &id, &peer, &request.name, started, found.as_ref().map(|_| ()));
        let model = found?;
        let config = crate::server::triton::config_message(&model);
        Ok(Response::new(ModelConfigResponse { config: Some(config) }))
    }

    async fn model_statistics(
        &self,
        request: Request<ModelStatisticsRequest>,
    ) -> Result<Response<ModelStatisticsResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let request = request.into_inner();
        // No name: every model served.
        let models = if request.name.is_empty() {
            Ok(self.app.repository.models())
        } else {
            self.find(&request.name, &request.version).map(|m| vec![m])
        };
        log_access("ModelStatistics", &id, &peer, &request.name, started, models.as_ref().map(|_| ()));
        let models = models?;
        Ok(Response::new(crate::server::triton::statistics_message(&models)))
    }

    async fn system_shared_memory_status(
        &self,
        request: Request<SystemSharedMemoryStatusRequest>,
    ) -> Result<Response<SystemSharedMemoryStatusResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let name = request.into_inner().name;
        let status = self.app.regions.status((!name.is_empty()).then_some(name.as_str()));
        let status = status.map_err(|e| Status::not_found(e.to_string()));
        log_access("SystemSharedMemoryStatus", &id, &peer, "", started, status.as_ref().map(|_| ()));
        let regions = status?
            .into_iter()
            .map(|r| {
                let entry = system_shared_memory_status_response::RegionStatus {
                    name: r.name.clone(),
                    key: r.key,
                    offset: r.offset,
                    byte_size: r.byte_size,
                };
                (r.name, entry)
            })
            .collect();
        Ok(Response::new(SystemSharedMemoryStatusResponse { regions }))
    }

    async fn system_shared_memory_register(
        &self,
        request: Request<SystemSharedMemoryRegisterRequest>,
    ) -> Result<Response<SystemSharedMemoryRegisterResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let r = request.into_inner();
        let done = self.app.regions.register(&r.name, &r.key, r.offset, r.byte_size);
        let done = done.map_err(|e| Status::invalid_argument(e.to_string()));
        log_access("SystemSharedMemoryRegister", &id, &peer, "", started, done.as_ref().map(|_| ()));
        done.map(|()| Response::new(SystemSharedMemoryRegisterResponse {}))
    }

    async fn system_shared_memory_unregister(
        &self,
        request: Request<SystemSharedMemoryUnregisterRequest>,
    ) -> Result<Response<SystemSharedMemoryUnregisterResponse>, Status> {
        let (started, id, peer) = (Instant::now(), self.app.new_request_id(), peer_of(&request));
        let name = request.into_inner().name;
        self.app.regions.unregister((!name.is_empty()).then_some(name.as_str()));
        log_access("SystemSharedMemoryUnregister", &id, &peer, "", started, Ok(()));
        Ok(Response::new(SystemSharedMemoryUnregisterResponse {}))
    }

    async fn model_infer(&self, request: Request<ModelInferRequest>) -> Result<Response<ModelInferResponse>, Status> {
        let started = Instant::now();
        let peer = peer_of(&request);
        let asked = grpc_timeout(request.metadata());
        let request = request.into_inner();
        let id = if request.id.is_empty() { self.app.new_request_id() } else { request.id.clone() };
        let model_name = request.model_name.clone();
        let result = self.infer(request, asked).await;
        log_access("ModelInfer", &id, &peer, &model_name, started, result.as_ref().map(|_| ()));
        result.map(Response::new)
    }
}

impl Service {
    /// Loads (`load`) or unloads model `name` on a blocking thread.
    async fn control(&self, name: String, load: bool) -> Result<(), Status> {
        let app = Arc::clone(&self.app);
        let done = tokio::task::spawn_blocking(move || {
            if load {
                app.repository.load_model(&name)
            } else {
                app.repository.unload_model(&name)
            }
        })
        .await
        .map_err(|e| Status::internal(format!("the load task ended: {e}")))?;
        done.map_err(|error| match error {
            ControlError::Unknown(why) => Status::not_found(why),
            ControlError::NotAllowed(why) | ControlError::Failed(why) => Status::invalid_argument(why),
        })
    }

    async fn infer(&self, request: ModelInferRequest, asked: Option<Duration>) -> Result<ModelInferResponse, Status> {
        let model = self.find(&request.model_name, &request.model_version)?;
        let raw = &request.raw_input_contents;
        let mut places = Vec::with_capacity(request.inputs.len());
        for input in &request.inputs {
            places.push(place_in(&input.name, &input.parameters)?);
        }
        // Inputs in shared memory have no raw contents: one entry per other input, in order.
        let sent = places.iter().filter(|p| p.is_none()).count();
        if !raw.is_empty() && raw.len() != sent {
            return Err(Status::invalid_argument(format!(
                "raw_input_contents has {} entries for {sent} inputs not in shared memory; send one per input, in order",
                raw.len()
            )));
        }
        let mut raw = raw.iter();
        let mut inputs = Vec::with_capacity(request.inputs.len());
        for (input, place) in request.inputs.iter().zip(places) {
            let value = match place {
                Some(place) => {
                    let limit = self.app.limits.max_body_bytes;
                    let bytes = self
                        .app
                        .regions
                        .read(&input.name, &place, limit)
                        .map_err(|e| Status::invalid_argument(e.to_string()))?;
                    tensor::value_from_raw(&input.name, &input.datatype, &input.shape, &bytes)
                }
                None => match raw.next() {
                    Some(bytes) => tensor::value_from_raw(&input.name, &input.datatype, &input.shape, bytes),
                    None => value_from_contents(input),
                },
            }
            .map_err(Status::invalid_argument)?;
            inputs.push((input.name.clone(), value));
        }
        let parameter_timeout = match request.parameters.get("timeout").and_then(|p| p.parameter_choice.as_ref()) {
            None => None,
            // 0 is "none of its own", as for REST.
            Some(ParameterChoice::Int64Param(0) | ParameterChoice::Uint64Param(0)) => None,
            Some(ParameterChoice::Int64Param(micros)) if *micros > 0 => Some(Duration::from_micros(*micros as u64)),
            Some(ParameterChoice::Uint64Param(micros)) => Some(Duration::from_micros(*micros)),
            Some(other) => {
                return Err(Status::invalid_argument(format!(
                    "parameter `timeout` must be a whole number of microseconds, got {other:?}"
                )))
            }
        };
        let timeout = match (asked, parameter_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut outputs = Vec::with_capacity(request.outputs.len());
        let mut output_places = std::collections::HashMap::new();
        for output in &request.outputs {
            if let Some(place) = place_in(&output.name, &output.parameters)? {
                output_places.insert(output.name.clone(), place);
            }
            let class_count = match output.parameters.get("classification").and_then(|p| p.parameter_choice.as_ref()) {
                None => 0,
                Some(ParameterChoice::Int64Param(n)) => u64::try_from(*n).unwrap_or(0),
                Some(ParameterChoice::Uint64Param(n)) => *n,
                Some(other) => {
                    return Err(Status::invalid_argument(format!(
                        "output `{}`: `classification` must be a whole number, got {other:?}",
                        output.name
                    )))
                }
            };
            outputs.push(WantedOutput { name: output.name.clone(), binary: true, class_count });
        }
        let sequence_id = ["sequence_id", "sequence_start", "sequence_end"].iter().find_map(|key| {
            let named = match request.parameters.get(*key).and_then(|p| p.parameter_choice.as_ref())? {
                ParameterChoice::Int64Param(n) => (*n != 0).then(|| n.to_string()),
                ParameterChoice::Uint64Param(n) => (*n != 0).then(|| n.to_string()),
                ParameterChoice::StringParam(s) => (!s.is_empty()).then(|| format!("{s:?}")),
                ParameterChoice::BoolParam(b) => b.then(|| "true".to_owned()),
                _ => None,
            };
            named.map(|v| format!("({key} {v})"))
        });
        let decoded = infer::Request { inputs, outputs, all_binary: true, timeout, sequence_id };
        let deadline = self.app.deadline(decoded.timeout);
        let answer = infer::run(&model, decoded, deadline).await.map_err(|e| GrpcRefusal::from(e).0)?;
        let outputs = answer.outputs;
        let mut described = Vec::with_capacity(outputs.len());
        let mut raw_outputs = Vec::with_capacity(outputs.len());
        for (name, value, _) in &outputs {
            let (datatype, shape) = tensor::datatype_and_shape(name, value).map_err(Status::internal)?;
            let bytes = tensor::raw_of(name, value).map_err(Status::internal)?;
            let mut parameters = std::collections::HashMap::new();
            if let Some(place) = output_places.get(name) {
                self.app.regions.write(name, place, &bytes).map_err(|e| Status::invalid_argument(e.to_string()))?;
                let parameter = |choice| InferParameter { parameter_choice: Some(choice) };
                parameters.insert(
                    "shared_memory_region".into(),
                    parameter(ParameterChoice::StringParam(place.region.clone())),
                );
                parameters.insert(
                    "shared_memory_byte_size".into(),
                    parameter(ParameterChoice::Int64Param(bytes.len() as i64)),
                );
                // An empty entry keeps raw_output_contents aligned with `outputs`.
                raw_outputs.push(Vec::new());
            } else {
                raw_outputs.push(bytes);
            }
            described.push(InferOutputTensor {
                name: name.clone(),
                datatype: datatype.into(),
                shape,
                parameters,
                contents: None,
            });
        }
        Ok(ModelInferResponse {
            model_name: model.name.clone(),
            model_version: model.version.clone(),
            id: request.id,
            parameters: Default::default(),
            outputs: described,
            raw_output_contents: raw_outputs,
        })
    }
}

/// The `shared_memory_*` parameters of a tensor: where its bytes are, if in a region.
fn place_in(
    tensor: &str,
    parameters: &std::collections::HashMap<String, InferParameter>,
) -> Result<Option<Place>, Status> {
    let choice = |key: &str| parameters.get(key).and_then(|p| p.parameter_choice.as_ref());
    let region = match choice("shared_memory_region") {
        None => None,
        Some(ParameterChoice::StringParam(region)) => Some(region.clone()),
        Some(other) => {
            return Err(Status::invalid_argument(format!(
                "`{tensor}`: shared_memory_region must be a string, got {other:?}"
            )))
        }
    };
    let number = |key: &str| {
        choice(key).map(|c| match c {
            ParameterChoice::Int64Param(n) => u64::try_from(*n).ok(),
            ParameterChoice::Uint64Param(n) => Some(*n),
            _ => None,
        })
    };
    shared_memory::place_of(tensor, region, number("shared_memory_byte_size"), number("shared_memory_offset"))
        .map_err(Status::invalid_argument)
}
