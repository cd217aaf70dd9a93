//! ORT's reports of failures inside the GPU stack, read from its message and turned into
//! [`Error::GpuLibrary`] with what to check.
//!
//! ORT reports a failed CUDA, cuDNN or cuBLAS call as text: `CUDNN failure 4000:
//! CUDNN_STATUS_INTERNAL_ERROR ; GPU=0 ; … file=…/conv.cc ; line=503 ; expr=…`, `CUBLAS failure
//! 3: CUBLAS_STATUS_ALLOC_FAILED …`, `CUDA failure 100: no CUDA-capable device is detected …`,
//! or `cuDNN is unavailable or disabled … dlopen failed for libcudnn.so…`. The family decides the
//! advice; the message is kept whole. Out-of-memory reports are [`Error::OutOfMemory`] and are
//! recognised before this (the status classifier asks it last).

use crate::error::Error;
use crate::ort_messages;

/// The part of the GPU stack a failure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GpuFamily {
    /// The CUDA runtime or driver (`cudaError*`, "CUDA failure N").
    Cuda,
    /// cuDNN (`CUDNN_STATUS_*`, "CUDNN failure N", "cuDNN is unavailable").
    Cudnn,
    /// cuBLAS / cuBLASLt (`CUBLAS_STATUS_*`, "CUBLAS failure N").
    Cublas,
}

impl std::fmt::Display for GpuFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GpuFamily::Cuda => "CUDA",
            GpuFamily::Cudnn => "cuDNN",
            GpuFamily::Cublas => "cuBLAS",
        })
    }
}

const DOCTOR: &str = "run `onnxrt doctor` first: it resolves every library the provider loads, in the loader's order, and names a missing, damaged or mismatched one";

/// The family of a GPU-stack failure in `message`, if it is one.
pub(crate) fn family_of(message: &str) -> Option<GpuFamily> {
    if ort_messages::CUDNN_FAILURE.matches(message) {
        Some(GpuFamily::Cudnn)
    } else if ort_messages::CUBLAS_FAILURE.matches(message) {
        Some(GpuFamily::Cublas)
    } else if ort_messages::CUDA_ERROR_NAME.matches(message) || ort_messages::CUDA_FAILURE.matches(message) {
        Some(GpuFamily::Cuda)
    } else {
        None
    }
}

/// What to check for a failure of `family` whose message is `message`.
fn fix_for(family: GpuFamily, message: &str) -> String {
    let specific = match family {
        GpuFamily::Cudnn if ort_messages::CUDNN_NOT_LOADED.matches(message) => {
            "cuDNN could not be loaded (the message names the file): install the cuDNN major version this runtime was built against (cuDNN 9 for the CUDA 12/13 builds, cuDNN 8 for 1.16.2's CUDA 11.8 build), complete, and put its folder first on the search path"
        }
        GpuFamily::Cudnn if ort_messages::CUDNN_SUBLIBRARY.matches(message) => {
            "cuDNN loads its kernel libraries only when first needed (cuDNN 9: libcudnn_engines_precompiled.so.9, libcudnn_engines_runtime_compiled.so.9, libcudnn_heuristic.so.9; cuDNN 8: libcudnn_cnn_infer.so.8, libcudnn_ops_infer.so.8): one of them is missing, damaged, or of another cuDNN release than libcudnn.so itself; reinstall cuDNN as one package"
        }
        GpuFamily::Cudnn => "check that cuDNN matches the runtime's build (major version and CUDA version) and that the GPU has memory left",
        GpuFamily::Cublas if ort_messages::CUBLAS_NOT_STARTED.matches(message) => {
            "cuBLAS could not start: usually the device is out of memory (other processes: nvidia-smi) or libcublas/libcublasLt are of another CUDA release than libcudart"
        }
        GpuFamily::Cublas => "check that libcublas and libcublasLt are of the CUDA release the runtime was built for, and that a truncated or foreign copy is not first on LD_LIBRARY_PATH",
        GpuFamily::Cuda if ort_messages::CUDA_NO_DEVICE.matches(message) => {
            "no GPU is visible to this process: check CUDA_VISIBLE_DEVICES (empty hides every GPU), nvidia-smi, and the container's GPU settings"
        }
        GpuFamily::Cuda if ort_messages::CUDA_DRIVER.matches(message) => {
            "the NVIDIA driver is older than the CUDA runtime the provider uses, or does not match the kernel module: update the driver (nvidia-smi shows the highest CUDA version it supports)"
        }
        GpuFamily::Cuda if ort_messages::CUDA_NO_KERNEL.matches(message) => {
            "the runtime has no kernels for this GPU's architecture: use an ONNX Runtime build for this GPU generation"
        }
        GpuFamily::Cuda => "check the driver (nvidia-smi), CUDA_VISIBLE_DEVICES, and that libcudart is of the CUDA release the runtime was built for",
    };
    format!("{DOCTOR}; then: {specific}")
}

/// `Some(Error::GpuLibrary)` when `message` reports a failure inside the GPU stack.
pub(crate) fn recognise(function: &'static str, message: &str) -> Option<Error> {
    let family = family_of(message)?;
    Some(Error::GpuLibrary { family, function, fix: fix_for(family, message), message: message.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_advice_from_the_messages_ort_writes() {
        // Messages as ORT 1.30 wrote them on the H200 with libraries hidden (docs/history/diagnostics-2026-12.md).
        let internal = "CUDNN failure 4000: CUDNN_STATUS_INTERNAL_ERROR ; GPU=0 ; hostname=h ; file=/onnxruntime_src/onnxruntime/core/providers/cuda/nn/conv.cc ; line=503 ; expr=cudnnFindConvolutionForwardAlgorithmEx(...)";
        let unavailable =
            "cuDNN is unavailable or disabled. dlopen failed for libcudnn.so: libcudnn.so.9: file too short";
        let cublas = "CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; file=cublas_handle.cc";
        let no_device =
            "CUDA failure 100: no CUDA-capable device is detected ; GPU=-1 ; expr=cudaGetDeviceCount(&num_devices)";
        let cases = [
            (internal, GpuFamily::Cudnn, "libcudnn_engines_precompiled.so.9"),
            (unavailable, GpuFamily::Cudnn, "could not be loaded"),
            (cublas, GpuFamily::Cublas, "out of memory"),
            (no_device, GpuFamily::Cuda, "CUDA_VISIBLE_DEVICES"),
        ];
        for (message, family, advice) in cases {
            match recognise("Run", message) {
                Some(Error::GpuLibrary { family: got, function, message: kept, fix }) => {
                    assert_eq!((got, function), (family, "Run"), "{message}");
                    assert_eq!(kept, message, "ORT's message is kept whole");
                    assert!(fix.starts_with("run `onnxrt doctor` first"), "{fix}");
                    assert!(fix.contains(advice), "{message}: {fix}");
                }
                other => panic!("{message}: {other:?}"),
            }
        }
        assert!(recognise("Run", "Non-zero status code returned while running Add node").is_none());
    }
}
