//! [`GpuPool`]: one session per GPU, requests spread over them.
//!
//! Servers with several GPUs pin one session per device (`device_id`) and send each request to the
//! least busy one. ORT sessions are thread-safe, so one pool serves any number of threads; each
//! request runs on the session of the device with the fewest runs in flight.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use onnxrt::providers::cuda::CudaOptions;
use onnxrt::{Outputs, Session, SessionBuilder, SessionInput};

use crate::error::Result;

/// One session per CUDA device, sharing the work.
#[derive(Debug)]
pub struct GpuPool {
    members: Vec<Member>,
    next: AtomicUsize,
}

#[derive(Debug)]
struct Member {
    device: i32,
    session: Session,
    busy: AtomicUsize,
}

/// Decrements a member's busy count when a run ends, even by error.
struct Busy<'a>(&'a AtomicUsize);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl GpuPool {
    /// Loads `model` once per device in `devices`. `configure` adjusts each device's builder (the
    /// CUDA provider for that device is added after it, so its options come first in priority).
    ///
    /// **Shared weights.** Give every member the same [`SharedInitializers`](onnxrt::SharedInitializers)
    /// (and [`PrepackedWeights`](onnxrt::PrepackedWeights)) in `configure`: the host keeps one
    /// copy of the weights for all devices instead of one per session (each GPU still holds its
    /// own device copy).
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use onnxrt::{providers::cuda::CudaOptions, SharedInitializers, Value};
    /// use onnxrt_serve::pool::GpuPool;
    /// let mut weights = SharedInitializers::new();
    /// weights.add("fc.weight", Value::from_vec(&[1000, 2048], vec![0f32; 1000 * 2048])?)?;
    /// let weights = Arc::new(weights);
    /// let pool = GpuPool::all_devices(
    ///     "resnet50.onnx",
    ///     |builder, _device| builder.shared_initializers(Arc::clone(&weights)),
    ///     |_device| CudaOptions::new(),
    /// )?;
    /// # drop(pool);
    /// # Ok::<(), onnxrt_serve::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](onnxrt::Error::InvalidArgument) for an empty device list, a repeated device or a device that
    /// does not exist; any session-creation error, naming nothing half-built (all or nothing).
    pub fn new(
        model: impl AsRef<Path>,
        devices: &[i32],
        configure: impl Fn(SessionBuilder, i32) -> SessionBuilder,
        cuda: impl Fn(i32) -> CudaOptions,
    ) -> Result<GpuPool> {
        if devices.is_empty() {
            return Err(onnxrt::Error::InvalidArgument {
                what: "GpuPool devices".into(),
                why: "give at least one device id".into(),
            }
            .into());
        }
        for (i, device) in devices.iter().enumerate() {
            if devices[..i].contains(device) {
                return Err(onnxrt::Error::InvalidArgument {
                    what: format!("GpuPool device {device}"),
                    why: "listed twice; one session per device".into(),
                }
                .into());
            }
        }
        let members = devices
            .iter()
            .map(|&device| {
                let builder = configure(Session::builder(), device).cuda(cuda(device).device_id(device));
                Ok(Member { device, session: builder.commit_from_file(model.as_ref())?, busy: AtomicUsize::new(0) })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(GpuPool { members, next: AtomicUsize::new(0) })
    }

    /// A pool over every CUDA device of the machine.
    pub fn all_devices(
        model: impl AsRef<Path>,
        configure: impl Fn(SessionBuilder, i32) -> SessionBuilder,
        cuda: impl Fn(i32) -> CudaOptions,
    ) -> Result<GpuPool> {
        let count = onnxrt::providers::cuda::device_count()?;
        let devices: Vec<i32> = (0..count).collect();
        GpuPool::new(model, &devices, configure, cuda)
    }

    /// The device ids, in pool order.
    pub fn devices(&self) -> Vec<i32> {
        self.members.iter().map(|m| m.device).collect()
    }

    /// The session of `device`.
    pub fn session(&self, device: i32) -> Option<&Session> {
        self.members.iter().find(|m| m.device == device).map(|m| &m.session)
    }

    /// Runs on the least busy device (ties rotate) and returns which device ran it. Takes inputs
    /// in any form [`Session::run`] does.
    pub fn run<'v, 'd: 'v, I>(&self, inputs: I) -> Result<(i32, Outputs)>
    where
        I: IntoIterator,
        I::Item: SessionInput<'v, 'd>,
    {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.members.len();
        let member = (0..n)
            .map(|k| &self.members[(start + k) % n])
            .min_by_key(|m| m.busy.load(Ordering::Acquire))
            .unwrap_or(&self.members[0]);
        member.busy.fetch_add(1, Ordering::AcqRel);
        let _busy = Busy(&member.busy);
        let outputs = member.session.run(inputs)?;
        Ok((member.device, outputs))
    }
}
