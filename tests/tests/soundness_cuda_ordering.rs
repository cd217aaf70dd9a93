//! Every CUDA operation the crate issues names its stream, and nothing it queues is still running
//! when it hands memory out (docs/soundness.md, "CUDA work"). The hole (read from the code by the
//! outside audit): `Value::zeros_cuda` zeroed with `cudaMemset`, queued on the legacy default
//! stream and not waited for, while `CudaStream` copies (and ORT's compute stream) are
//! non-blocking streams that do not wait for that stream. A copy right after `zeros_cuda` could
//! then run first and be wiped by the late zeroing, or read what the memory's previous owner left.
//!
//! GPU only, run by hand on the GPU machine (CI has no GPU):
//! ```text
//! cargo test -p onnxrt-tests --features gpu-tests --test soundness_cuda_ordering -- --test-threads 1 --nocapture
//! ```
//! with `ONNXRT_DYLIB_PATH` at the GPU runtime (see tests/tests/gpu.rs and the GPU README).
#![cfg(feature = "gpu-tests")]

use onnxrt::{CudaStream, ElementType, Value};

/// 64 MiB of f32: large enough that a memset takes long enough to lose a race.
const LEN: i64 = 16 << 20;
const ROUNDS: usize = 20;

fn host(fill: f32) -> Value<'static> {
    Value::from_vec(&[LEN], vec![fill; LEN as usize]).expect("host tensor")
}

fn count_not(value: &Value<'_>, expected: f32) -> usize {
    value.view::<f32>().expect("f32").iter().filter(|&&x| x != expected).count()
}

#[test]
fn a_copy_right_after_zeros_cuda_is_not_wiped_by_a_late_zeroing() {
    let stream = CudaStream::new(0).expect("stream");
    let ones = host(1.0);
    let mut wiped = Vec::new();
    for round in 0..ROUNDS {
        let mut device = Value::zeros_cuda(&[LEN], ElementType::F32, 0).expect("device zeros");
        // At once, on a non-blocking stream of our own.
        device.copy_from(&ones, &stream).expect("host to device");
        let mut back = Value::zeros_pinned(&[LEN], ElementType::F32).expect("pinned");
        back.copy_from(&device, &stream).expect("device to host");
        let bad = count_not(&back, 1.0);
        if bad > 0 {
            wiped.push((round, bad));
        }
    }
    println!("rounds with copied elements wiped: {wiped:?} of {ROUNDS}");
    assert!(wiped.is_empty(), "a late zeroing wiped copied elements: (round, elements) {wiped:?}");
}

#[test]
fn zeros_cuda_reads_as_zeros_at_once_even_over_recycled_memory() {
    let stream = CudaStream::new(0).expect("stream");
    let pattern = host(f32::from_bits(0x7f7f_7f7f));
    let mut stale = Vec::new();
    for round in 0..ROUNDS {
        // Memory left full of a pattern and freed: CUDA's allocator hands it out again.
        let mut previous = Value::zeros_cuda(&[LEN], ElementType::F32, 0).expect("device");
        previous.copy_from(&pattern, &stream).expect("fill");
        drop(previous);
        let device = Value::zeros_cuda(&[LEN], ElementType::F32, 0).expect("device zeros");
        let mut back = Value::zeros_pinned(&[LEN], ElementType::F32).expect("pinned");
        back.copy_from(&device, &stream).expect("device to host, at once");
        let bad = count_not(&back, 0.0);
        if bad > 0 {
            stale.push((round, bad));
        }
    }
    println!("rounds reading non-zero \"zeros\": {stale:?} of {ROUNDS}");
    assert!(stale.is_empty(), "zeros_cuda read as non-zero right after it returned: (round, elements) {stale:?}");
}

#[test]
fn a_small_copy_right_after_zeroing_a_large_tensor_is_not_wiped() {
    // The race at its widest: zeroing 1 GiB takes far longer than copying one 1 KiB row from
    // pinned memory, so a zeroing left running would land after the row on every round.
    const ROWS: i64 = 1 << 20;
    const ROW: i64 = 256;
    let stream = CudaStream::new(0).expect("stream");
    let mut row = Value::zeros_pinned(&[1, ROW], ElementType::F32).expect("pinned row");
    row.view_mut::<f32>().expect("f32").fill(1.0);
    let mut wiped = Vec::new();
    for round in 0..ROUNDS {
        let mut device = Value::zeros_cuda(&[ROWS, ROW], ElementType::F32, 0).expect("device zeros");
        device.copy_rows_from(0..1, &row, &stream).expect("one row to the device");
        let mut back = Value::zeros_pinned(&[1, ROW], ElementType::F32).expect("pinned");
        back.copy_rows_from(0..1, &device, &stream).expect("the row back");
        let bad = count_not(&back, 1.0);
        if bad > 0 {
            wiped.push((round, bad));
        }
    }
    println!("rounds with the copied row wiped: {wiped:?} of {ROUNDS}");
    assert!(wiped.is_empty(), "a late zeroing wiped the copied row: (round, elements) {wiped:?}");
}
