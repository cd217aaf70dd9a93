//! Every CUDA operation the crate issues names its stream, and nothing it queues is still running
//! when it hands memory out (docs/soundness.md §11). The hole (read from the code by the
//! outside audit): `Value::zeros_cuda` zeroed with `cudaMemset`, queued on the legacy default
//! stream and not waited for, while `CudaStream` copies (and ORT's compute stream) are
//! non-blocking streams that do not wait for that stream. A copy right after `zeros_cuda` could
//! then run first and be wiped by the late zeroing, or read what the memory's previous owner left.
//!
//! The tests touch the *last* row of a large tensor (8 GiB by default), by a copy or by a Slice
//! that ORT runs on its own compute stream: a zeroing still running reaches it last, so work
//! queued at once gets there first. (The first rows are zeroed within microseconds, before any
//! copy can be queued: a test of row 0 cannot fail.) What a late zeroing did is read only after
//! the whole device is idle, and the previous owner's data is written on the legacy stream after
//! its own zeroing: a test that reads back on the copy's own stream at once sees its row before
//! the zeroing lands, and a previous owner filled on that stream has its pattern wiped by its own
//! late zeroing, so neither could fail (the first versions of these tests did exactly that, and
//! passed on the old code on an H100, while `tools/gpu/legacy_stream_race.py`, the same CUDA calls
//! with the device waited for before reading, lost the row in 20 of 20 rounds). As written now,
//! on an H100 (2026-12-07, `tools/gpu/run.sh plugins`, two passes): the copy test lost the row in
//! 20 of 20 rounds on a build with the old zeroing and in 0 of 20 with the fix; the recycled-memory
//! test read no stale row on either build (that window did not open there).
//!
//! GPU only, run by hand on the GPU machine (CI has no GPU):
//! ```text
//! cargo test -p onnxrt-tests --features gpu-tests --test soundness_cuda_ordering -- --test-threads 1 --nocapture
//! ```
//! with `ONNXRT_DYLIB_PATH` at the GPU runtime (see tests/tests/gpu.rs and the GPU README).
#![cfg(feature = "gpu-tests")]

use onnxrt::{CudaStream, ElementType, Value};

/// Rows of 1 KiB of f32: 8 GiB by default (`ONNXRT_ORDERING_GIB`), so that a zeroing left
/// running takes milliseconds, far longer than the host code between it and the next copy.
const ROW: i64 = 256;
const ROUNDS: usize = 20;

fn rows() -> i64 {
    let gib: i64 = std::env::var("ONNXRT_ORDERING_GIB").ok().and_then(|v| v.parse().ok()).unwrap_or(8);
    gib << 20
}

fn last() -> std::ops::Range<usize> {
    let rows = rows() as usize;
    (rows - 1)..rows
}

/// Page-locked host memory the shape of the device tensor, its last row filled with `fill`.
fn pinned_with_last_row(fill: f32) -> Value<'static> {
    let mut value = Value::zeros_pinned(&[rows(), ROW], ElementType::F32).expect("pinned");
    last_row(&mut value).fill(fill);
    value
}

fn last_row<'v>(value: &'v mut Value<'_>) -> &'v mut [f32] {
    let all = value.view_mut::<f32>().expect("f32").into_slice().expect("contiguous");
    let start = all.len() - ROW as usize;
    &mut all[start..]
}

/// Waits for all work on device 0, the legacy default stream's included: `copy_from_host` copies
/// with `cudaMemcpy` and then synchronizes the device.
fn wait_for_the_device() {
    let mut probe = Value::zeros_cuda(&[1], ElementType::F32, 0).expect("device");
    probe.copy_from_host(&[0.0f32]).expect("a device-wide wait");
}

/// The previous owner's data: a pattern in the last row of a tensor the device's size, written
/// with `copy_from_host` (the legacy stream, after that tensor's own zeroing, and waited for).
fn previous_owner(pattern: &[f32]) {
    let mut previous = Value::zeros_cuda(&[rows(), ROW], ElementType::F32, 0).expect("device");
    previous.copy_from_host(pattern).expect("the previous owner's data");
}

fn host_pattern() -> Vec<f32> {
    let mut data = vec![0.0f32; (rows() * ROW) as usize];
    let start = data.len() - ROW as usize;
    data[start..].fill(f32::from_bits(0x7f7f_7f7f));
    data
}

fn count_not(row: &[f32], expected: f32) -> usize {
    row.iter().filter(|&&x| x != expected).count()
}

#[test]
fn a_row_copied_right_after_zeros_cuda_is_not_wiped_by_a_late_zeroing() {
    let stream = CudaStream::new(0).expect("stream");
    let ones = pinned_with_last_row(1.0);
    let mut back = pinned_with_last_row(-1.0);
    let mut wiped = Vec::new();
    for round in 0..ROUNDS {
        last_row(&mut back).fill(-1.0);
        let mut device = Value::zeros_cuda(&[rows(), ROW], ElementType::F32, 0).expect("device zeros");
        // At once, on a non-blocking stream of our own.
        device.copy_rows_from(last(), &ones, &stream).expect("the last row to the device");
        wait_for_the_device();
        back.copy_rows_from(last(), &device, &stream).expect("the last row back");
        let bad = count_not(last_row(&mut back), 1.0);
        if bad > 0 {
            wiped.push((round, bad));
        }
    }
    println!("rounds with the copied row wiped: {wiped:?} of {ROUNDS}");
    assert!(wiped.is_empty(), "a late zeroing wiped the copied row: (round, elements) {wiped:?}");
}

#[test]
fn zeros_cuda_reads_as_zeros_at_once_even_over_recycled_memory() {
    let stream = CudaStream::new(0).expect("stream");
    let pattern = host_pattern();
    let mut back = pinned_with_last_row(-1.0);
    let mut stale = Vec::new();
    for round in 0..ROUNDS {
        last_row(&mut back).fill(-1.0);
        // Freed with the pattern in place: CUDA's allocator hands the same block out again.
        previous_owner(&pattern);
        let device = Value::zeros_cuda(&[rows(), ROW], ElementType::F32, 0).expect("device zeros");
        back.copy_rows_from(last(), &device, &stream).expect("the last row back, at once");
        let bad = count_not(last_row(&mut back), 0.0);
        if bad > 0 {
            stale.push((round, bad));
        }
    }
    println!("rounds reading non-zero \"zeros\": {stale:?} of {ROUNDS}");
    assert!(stale.is_empty(), "zeros_cuda read as non-zero right after it returned: (round, elements) {stale:?}");
}

#[test]
fn an_ort_cuda_run_right_after_zeros_cuda_reads_zeros_not_the_previous_owners_data() {
    use onnxrt::providers::cuda::CudaOptions;
    use onnxrt::Session;
    // ORT's compute stream is non-blocking too: a kernel queued at once on it (here a Slice of the
    // last row, the row a late zeroing reaches last) must read zeros.
    let session = Session::builder()
        .cuda(CudaOptions::new().device_id(0))
        .strict_gpu(true)
        .commit_from_file(onnxrt_tests::model("last_row.onnx"))
        .expect("CUDA session");
    let pattern = host_pattern();
    let mut stale = Vec::new();
    for round in 0..ROUNDS {
        previous_owner(&pattern);
        let device = Value::zeros_cuda(&[rows(), ROW], ElementType::F32, 0).expect("device zeros");
        let outputs = session.run(&[("x", &device)]).expect("the last row, on ORT's stream");
        let row = outputs.get("y").expect("y").to_array::<f32>().expect("f32");
        let bad = row.iter().filter(|&&x| x != 0.0).count();
        if bad > 0 {
            stale.push((round, bad));
        }
    }
    println!("rounds where ORT read non-zero \"zeros\": {stale:?} of {ROUNDS}");
    assert!(stale.is_empty(), "an ORT run right after zeros_cuda read the previous owner's data: {stale:?}");
}
