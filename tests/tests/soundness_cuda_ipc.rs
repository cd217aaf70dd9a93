//! The CUDA IPC types (`CudaIpcHandle`, `SharedDeviceMemory`, `MappedDeviceMemory`) attacked
//! from safe code where CUDA cannot load (CI): every call a typed error, no copy attempted, the
//! process-wide mapping registry left consistent by failed opens from many threads, and nothing
//! for valgrind to find (tools/dev.sh cuda-api runs it under memcheck). The same calls with a
//! GPU: tests/tests/cuda_ipc.rs and cuda_ipc_attacks.rs (gpu-tests).
#![cfg(feature = "cuda")]

use onnxrt::providers::cuda::{device_count, CudaIpcHandle, MappedDeviceMemory, SharedDeviceMemory};
use onnxrt::Error;

/// Whether this machine has a CUDA device (then the GPU tests cover these calls).
fn gpu_here() -> bool {
    device_count().is_ok_and(|n| n > 0)
}

#[test]
fn handles_of_every_wrong_length_are_typed_refusals_and_never_shown() {
    for len in [0usize, 1, 63, 65, 128, 1 << 20] {
        let bytes = vec![0x5a; len];
        assert!(matches!(CudaIpcHandle::from_bytes(&bytes), Err(Error::InvalidArgument { .. })), "{len} bytes");
    }
    let handle = CudaIpcHandle::from_bytes(&[0x5a; 64]).expect("64 bytes");
    assert_eq!(handle.as_bytes(), &[0x5a; 64]);
    let shown = format!("{handle:?}");
    assert_eq!(shown, "CudaIpcHandle(64 bytes)", "the bytes give access to memory: never shown");
}

#[test]
fn without_cuda_every_call_is_a_typed_error_before_any_copy() {
    if gpu_here() {
        eprintln!("a CUDA device is here: tests/tests/cuda_ipc.rs covers these calls");
        return;
    }
    let handle = CudaIpcHandle::from_bytes(&[7; 64]).expect("64 bytes");
    // Zero lengths are refused before CUDA is asked.
    assert!(matches!(SharedDeviceMemory::new(0, 0), Err(Error::InvalidArgument { .. })));
    assert!(matches!(MappedDeviceMemory::open(&handle, 0, 0), Err(Error::InvalidArgument { .. })));
    // Everything else needs libcudart: ProviderLoad, whatever the device or length.
    for (device, len) in [(0, 16), (-1, 16), (i32::MAX, 1), (i32::MIN, usize::MAX), (0, usize::MAX)] {
        let made = SharedDeviceMemory::new(device, len);
        assert!(matches!(made, Err(Error::ProviderLoad { .. })), "new({device}, {len}): {made:?}");
        let mapped = MappedDeviceMemory::open(&handle, device, len);
        assert!(matches!(mapped, Err(Error::ProviderLoad { .. })), "open({device}, {len}): {mapped:?}");
    }
}

#[test]
fn failed_opens_from_many_threads_leave_the_mapping_registry_usable() {
    if gpu_here() {
        return;
    }
    // Each failed open takes and lets go of the process-wide registry's lock; a panic or a lock
    // left held would hang or poison every later open. 8 threads x 200 opens, then one more.
    std::thread::scope(|scope| {
        for t in 0..8u8 {
            scope.spawn(move || {
                for n in 0..200u8 {
                    let handle = CudaIpcHandle::from_bytes(&[t ^ n; 64]).expect("64 bytes");
                    let len = usize::from(n) + 1;
                    assert!(MappedDeviceMemory::open(&handle, i32::from(t), len).is_err());
                }
            });
        }
    });
    let handle = CudaIpcHandle::from_bytes(&[1; 64]).expect("64 bytes");
    assert!(matches!(MappedDeviceMemory::open(&handle, 0, 8), Err(Error::ProviderLoad { .. })));
}
