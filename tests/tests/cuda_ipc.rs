//! CUDA IPC device memory (`SharedDeviceMemory`, `MappedDeviceMemory`) across two real
//! processes, on the GPU machine (CI has no GPU): `--features gpu-tests`.
//!
//! ```text
//! cargo test -p onnxrt-tests --features gpu-tests --test cuda_ipc -- --test-threads 1
//! ```
//! The test process exports memory and runs this same binary again as the other process
//! (`ONNXRT_IPC_CHILD` names what the child does, `ONNXRT_IPC_HANDLE` carries the handle in hex);
//! the child's exit status and stderr say what it saw. Each attack is a safe-code program: bounds,
//! a handle mapped twice and dropped in either order, a length past the allocation, garbage and
//! one's own handles, threads copying at once, memory freed by its owner while mapped.
#![cfg(feature = "gpu-tests")]

use std::process::Command;

use onnxrt::providers::cuda::{CudaIpcHandle, MappedDeviceMemory, SharedDeviceMemory};
use onnxrt::Error;

const LEN: usize = 4096;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
}

/// The exporter's bytes: byte i is i * 7 + 3 (mod 256).
fn pattern() -> Vec<u8> {
    (0..LEN).map(|i| (i * 7 + 3) as u8).collect()
}

/// Runs this test binary as the child doing `role` on `handle`; its (success, stderr).
fn child(role: &str, handle: &CudaIpcHandle) -> (bool, String) {
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child_process_entry", "--nocapture", "--test-threads", "1"])
        .env("ONNXRT_IPC_CHILD", role)
        .env("ONNXRT_IPC_HANDLE", hex(handle.as_bytes()))
        .output()
        .expect("child runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.success(), text)
}

/// The other process: does nothing unless started by `child`.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var("ONNXRT_IPC_CHILD") else { return };
    let handle = CudaIpcHandle::from_bytes(&unhex(&std::env::var("ONNXRT_IPC_HANDLE").expect("handle"))).expect("64");
    match role.as_str() {
        "read-write" => {
            let memory = MappedDeviceMemory::open(&handle, 0, LEN).expect("maps");
            let mut seen = vec![0u8; LEN];
            memory.read(0, &mut seen).expect("reads");
            assert_eq!(seen, pattern(), "the exporter's bytes");
            memory.write(100, b"from the child").expect("writes");
            // Bounds: each refused, typed, before any copy.
            let mut one = [0u8; 1];
            assert!(matches!(memory.read(LEN, &mut one), Err(Error::InvalidArgument { .. })));
            assert!(matches!(memory.write(LEN - 1, &[1, 2]), Err(Error::InvalidArgument { .. })));
            assert!(matches!(memory.read(usize::MAX, &mut one), Err(Error::InvalidArgument { .. })));
        }
        "twice" => {
            // One handle opened twice: dropping either must leave the other working.
            for drop_first in [true, false] {
                let a = MappedDeviceMemory::open(&handle, 0, LEN).expect("first");
                let b = MappedDeviceMemory::open(&handle, 0, 16).expect("second");
                let (kept, gone) = if drop_first { (b, a) } else { (a, b) };
                drop(gone);
                let mut seen = [0u8; 16];
                kept.read(0, &mut seen).expect("the other mapping still reads");
                assert_eq!(seen[..], pattern()[..16]);
            }
            // Opened and dropped many times over: no mapping is left behind or closed twice.
            for _ in 0..200 {
                let m = MappedDeviceMemory::open(&handle, 0, LEN).expect("reopen");
                let mut seen = [0u8; 4];
                m.read(LEN - 4, &mut seen).expect("reads");
            }
        }
        "too-long" => {
            // The allocation is LEN bytes: asking for far more is refused with its length.
            match MappedDeviceMemory::open(&handle, 0, 1 << 30) {
                Err(Error::InvalidArgument { why, .. }) => assert!(why.contains("holds"), "{why}"),
                other => panic!("a mapping past the allocation: {other:?}"),
            }
            // And the refusal leaves no mapping half-made: a right-sized open works after it.
            MappedDeviceMemory::open(&handle, 0, LEN).expect("maps after the refusal");
        }
        "threads" => {
            let memory = MappedDeviceMemory::open(&handle, 0, LEN).expect("maps");
            std::thread::scope(|scope| {
                for t in 0..4usize {
                    let memory = &memory;
                    scope.spawn(move || {
                        for round in 0..100usize {
                            let at = 1024 + t * 256;
                            let bytes = vec![(t * 31 + round) as u8; 256];
                            memory.write(at, &bytes).expect("writes");
                            let mut back = vec![0u8; 256];
                            memory.read(at, &mut back).expect("reads");
                            assert_eq!(back, bytes, "thread {t} round {round}");
                        }
                    });
                }
            });
        }
        "after-free" => {
            // The exporter freed its memory before this process opened the handle.
            let opened = MappedDeviceMemory::open(&handle, 0, LEN);
            assert!(opened.is_err(), "a handle of freed memory must not map: {opened:?}");
            eprintln!("refused: {}", opened.err().map(|e| e.to_string()).unwrap_or_default());
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn another_process_maps_reads_and_writes_the_memory_within_its_bounds() {
    let memory = SharedDeviceMemory::new(0, LEN).expect("allocates");
    memory.write(0, &pattern()).expect("writes");
    let handle = memory.ipc_handle().expect("exports");
    let (ok, text) = child("read-write", &handle);
    assert!(ok, "child: {text}");
    let mut seen = [0u8; 14];
    memory.read(100, &mut seen).expect("reads");
    assert_eq!(&seen, b"from the child");
}

#[test]
fn a_handle_opened_twice_keeps_either_mapping_alive_until_its_own_drop() {
    let memory = SharedDeviceMemory::new(0, LEN).expect("allocates");
    memory.write(0, &pattern()).expect("writes");
    let (ok, text) = child("twice", &memory.ipc_handle().expect("exports"));
    assert!(ok, "child: {text}");
}

#[test]
fn a_length_past_the_allocation_is_refused() {
    let memory = SharedDeviceMemory::new(0, LEN).expect("allocates");
    let (ok, text) = child("too-long", &memory.ipc_handle().expect("exports"));
    assert!(ok, "child: {text}");
}

#[test]
fn threads_copy_through_one_mapping_at_once() {
    let memory = SharedDeviceMemory::new(0, LEN).expect("allocates");
    let (ok, text) = child("threads", &memory.ipc_handle().expect("exports"));
    assert!(ok, "child: {text}");
}

#[test]
fn a_handle_of_freed_memory_is_refused() {
    let memory = SharedDeviceMemory::new(0, LEN).expect("allocates");
    let handle = memory.ipc_handle().expect("exports");
    drop(memory);
    let (ok, text) = child("after-free", &handle);
    assert!(ok, "child: {text}");
}

#[test]
fn garbage_and_own_handles_are_refused_and_bounds_hold_in_the_exporter() {
    // 64 bytes that name nothing.
    let garbage = CudaIpcHandle::from_bytes(&[0x41; 64]).expect("64 bytes");
    assert!(MappedDeviceMemory::open(&garbage, 0, 16).is_err());
    // A handle of the wrong length.
    assert!(matches!(CudaIpcHandle::from_bytes(&[0; 63]), Err(Error::InvalidArgument { .. })));
    // CUDA maps only another process's memory.
    let memory = SharedDeviceMemory::new(0, LEN).expect("allocates");
    let own = MappedDeviceMemory::open(&memory.ipc_handle().expect("exports"), 0, LEN);
    assert!(own.is_err(), "one's own handle: {own:?}");
    // The exporter's bounds.
    let mut one = [0u8; 1];
    assert!(matches!(memory.read(LEN, &mut one), Err(Error::InvalidArgument { .. })));
    assert!(matches!(memory.write(usize::MAX, &[1]), Err(Error::InvalidArgument { .. })));
    assert!(matches!(SharedDeviceMemory::new(0, 0), Err(Error::InvalidArgument { .. })));
    assert!(SharedDeviceMemory::new(9999, 16).is_err(), "a device id CUDA does not have");
    // The handle's bytes never appear in its Debug form.
    assert_eq!(format!("{garbage:?}"), "CudaIpcHandle(64 bytes)");
}
