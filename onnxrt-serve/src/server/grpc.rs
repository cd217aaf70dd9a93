//! The Open Inference Protocol over gRPC (`inference.GRPCInferenceService`), on the same models
//! and checks as REST. Inputs come as raw bytes (`raw_input_contents`, what tritonclient sends)
//! or typed `contents` (or lie in shared memory); outputs go back as raw bytes
//! (`raw_output_contents`) or into a shared-memory region ([`grpc_body`]). A request's deadline
//! is the sooner of its gRPC deadline, its `timeout` parameter (µs) and the server's timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::infer;
use crate::oip::grpc::grpc_inference_service_server::GrpcInferenceService;
use crate::oip::grpc::model_metadata_response::TensorMetadata;
use crate::oip::grpc::repository_index_response::ModelIndex;
use crate::oip::grpc::*;
use crate::oip::grpc_body;
use crate::oip::messages::PLATFORM;
use crate::repository::model::Tally;
use crate::repository::{ControlError, FindError, InferError, ServedModel};
use crate::shared_memory::{Kind, RegionError, RegionMemory, Regions};
use tonic::{Request, Response, Status};

use crate::server::app::App;

pub struct Service {
    pub app: Arc<App>,
}

impl Service {
    fn find(&self, name: &str, version: &str) -> Result<Arc<ServedModel>, Status> {
        self.app.repository.find(name, Some(version)).map_err(|e| GrpcRefusal::from(e).0)
    }

    /// One shared-memory RPC from `peer`: `call` on the regions, its refusal as `refusal`
    /// (NOT_FOUND for status, INVALID_ARGUMENT otherwise), and its access line.
    fn regions_rpc<T>(
        &self,
        rpc: &'static str,
        peer: &str,
        refusal: fn(String) -> Status,
        call: impl FnOnce(&Regions) -> Result<T, RegionError>,
    ) -> Result<T, Status> {
        let (started, id) = (Instant::now(), self.app.new_request_id());
        let done = call(&self.app.regions).map_err(|e| refusal(e.to_string()));
        log_access(rpc, &id, peer, "", started, done.as_ref().map(|_| ()));
        done
    }
}

/// A request's region name: empty means every region.
fn named(name: &str) -> Option<&str> {
    (!name.is_empty()).then_some(name)
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
            extensions: crate::shared_memory::extensions(&self.app.regions).into_iter().map(str::to_owned).collect(),
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
        let peer = peer_of(&request);
        let name = request.into_inner().name;
        let status = self.regions_rpc("SystemSharedMemoryStatus", &peer, Status::not_found, |regions| {
            regions.status(Kind::System, named(&name))
        });
        let regions = status?
            .into_iter()
            .filter_map(|r| match r.memory {
                RegionMemory::System { key, offset } => {
                    let entry = system_shared_memory_status_response::RegionStatus {
                        name: r.name.clone(),
                        key,
                        offset,
                        byte_size: r.byte_size,
                    };
                    Some((r.name, entry))
                }
                RegionMemory::Cuda { .. } => None,
            })
            .collect();
        Ok(Response::new(SystemSharedMemoryStatusResponse { regions }))
    }

    async fn system_shared_memory_register(
        &self,
        request: Request<SystemSharedMemoryRegisterRequest>,
    ) -> Result<Response<SystemSharedMemoryRegisterResponse>, Status> {
        let peer = peer_of(&request);
        let r = request.into_inner();
        self.regions_rpc("SystemSharedMemoryRegister", &peer, Status::invalid_argument, |regions| {
            regions.register(&r.name, &r.key, r.offset, r.byte_size)
        })?;
        Ok(Response::new(SystemSharedMemoryRegisterResponse {}))
    }

    async fn system_shared_memory_unregister(
        &self,
        request: Request<SystemSharedMemoryUnregisterRequest>,
    ) -> Result<Response<SystemSharedMemoryUnregisterResponse>, Status> {
        let peer = peer_of(&request);
        let name = request.into_inner().name;
        self.regions_rpc("SystemSharedMemoryUnregister", &peer, Status::invalid_argument, |regions| {
            regions.unregister(Kind::System, named(&name))
        })?;
        Ok(Response::new(SystemSharedMemoryUnregisterResponse {}))
    }

    async fn cuda_shared_memory_status(
        &self,
        request: Request<CudaSharedMemoryStatusRequest>,
    ) -> Result<Response<CudaSharedMemoryStatusResponse>, Status> {
        let peer = peer_of(&request);
        let name = request.into_inner().name;
        let status = self.regions_rpc("CudaSharedMemoryStatus", &peer, Status::not_found, |regions| {
            regions.status(Kind::Cuda, named(&name))
        });
        let regions = status?
            .into_iter()
            .filter_map(|r| match r.memory {
                RegionMemory::Cuda { device_id } => {
                    let entry = cuda_shared_memory_status_response::RegionStatus {
                        name: r.name.clone(),
                        device_id: device_id.max(0) as u64,
                        byte_size: r.byte_size,
                    };
                    Some((r.name, entry))
                }
                RegionMemory::System { .. } => None,
            })
            .collect();
        Ok(Response::new(CudaSharedMemoryStatusResponse { regions }))
    }

    async fn cuda_shared_memory_register(
        &self,
        request: Request<CudaSharedMemoryRegisterRequest>,
    ) -> Result<Response<CudaSharedMemoryRegisterResponse>, Status> {
        let peer = peer_of(&request);
        let r = request.into_inner();
        self.regions_rpc("CudaSharedMemoryRegister", &peer, Status::invalid_argument, |regions| {
            regions.register_cuda(&r.name, &r.raw_handle, r.device_id, r.byte_size)
        })?;
        Ok(Response::new(CudaSharedMemoryRegisterResponse {}))
    }

    async fn cuda_shared_memory_unregister(
        &self,
        request: Request<CudaSharedMemoryUnregisterRequest>,
    ) -> Result<Response<CudaSharedMemoryUnregisterResponse>, Status> {
        let peer = peer_of(&request);
        let name = request.into_inner().name;
        self.regions_rpc("CudaSharedMemoryUnregister", &peer, Status::invalid_argument, |regions| {
            regions.unregister(Kind::Cuda, named(&name))
        })?;
        Ok(Response::new(CudaSharedMemoryUnregisterResponse {}))
    }

    async fn model_infer(&self, request: Request<ModelInferRequest>) -> Result<Response<ModelInferResponse>, Status> {
        let started = Instant::now();
        let peer = peer_of(&request);
        let asked = grpc_timeout(request.metadata());
        let request = request.into_inner();
        let id = if request.id.is_empty() { self.app.new_request_id() } else { request.id.clone() };
        let model_name = request.model_name.clone();
        let abandoned = {
            let (id, peer, model) = (id.clone(), peer.clone(), model_name.clone());
            crate::server::access::OnDrop::new(move || {
                let micros = started.elapsed().as_micros() as u64;
                let error = "the client cancelled the call or its deadline passed before the answer";
                tracing::info!(target: "access", id, peer, method = "grpc", rpc = "ModelInfer", model, status = "Cancelled", micros, error);
            })
        };
        let result = self.infer(request, asked).await;
        abandoned.disarm();
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
        // Counted once it is answered; a refusal from here on counts as a failure.
        let mut tally = Tally::start(&model.stats);
        let limit = self.app.limits.max_body_bytes;
        let decoded = grpc_body::decode(&request, asked, &self.app.regions, limit).map_err(Status::invalid_argument)?;
        let grpc_body::Decoded { request: decoded, places } = decoded;
        let deadline = self.app.deadline(decoded.timeout);
        let answer =
            infer::run(&model, decoded, deadline, &mut tally.phases).await.map_err(|e| GrpcRefusal::from(e).0)?;
        let shared = &places;
        let encoded = grpc_body::encode(&model, request.id, &answer, shared).map_err(|e| GrpcRefusal::from(e).0)?;
        tally.answered();
        Ok(encoded)
    }
}
