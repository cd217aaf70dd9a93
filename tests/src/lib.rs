//! Shared helpers of the integration tests: where the committed models are, one environment kept
//! alive for the whole test binary, scratch folders, pseudo-random inputs and float comparison.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use ndarray::{Array2, ArrayD};
use onnxrt::ep_device::DevicePolicy;
use onnxrt::{Environment, Error, Session, SessionBuilder};

pub mod gate_op;
pub mod proto;

/// The folder holding the committed test models (`tests/data/models`), or `ONNXRT_TEST_MODELS`
/// where set: test binaries built here run on the GPU machine from another checkout path.
pub fn models_dir() -> PathBuf {
    match std::env::var_os("ONNXRT_TEST_MODELS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("data").join("models"),
    }
}

/// The path of a committed test model or data file, e.g. `model("add_f32.onnx")`.
///
/// # Panics
/// If the file does not exist (the models are committed; regenerate them with
/// `python3 tests/data/gen_models.py`).
pub fn model(name: &str) -> PathBuf {
    let path = models_dir().join(name);
    assert!(path.is_file(), "test model {} is missing; run `python3 tests/data/gen_models.py`", path.display());
    path
}

/// The process's environment, created once and kept alive for the whole test binary, so tests
/// running in parallel never release and re-create ORT's environment.
///
/// # Panics
/// If the runtime cannot be loaded or the environment cannot be created.
pub fn env() -> Arc<Environment> {
    static ENV: OnceLock<Arc<Environment>> = OnceLock::new();
    Arc::clone(ENV.get_or_init(|| Environment::global().expect("the ONNX Runtime environment should be created")))
}

/// The minor version of the loaded runtime (ORT 1.x): tests whose expectation is ORT's own
/// behaviour (its words, its error codes, what a build lists) branch on it instead of skipping.
/// CI runs them on 1.16.2 and on the newest pinned runtime (tools/dev.sh).
///
/// # Panics
/// If the runtime cannot be loaded or its version is not `1.x.y`.
pub fn ort_minor() -> u32 {
    let version = onnxrt::runtime_info().expect("the runtime loads").version;
    let mut parts = version.split('.');
    match (parts.next(), parts.next().and_then(|m| m.parse().ok())) {
        (Some("1"), Some(minor)) => minor,
        _ => panic!("ONNX Runtime {version} is not 1.x.y"),
    }
}

/// A session builder in the shared environment, with two intra-op threads: the caller of
/// `Session::run` plus one pool worker, which `Session::run_async` needs (with one thread it
/// fails with `Error::AsyncNeedsThreadPool`). The test machine has two cores and the harness
/// runs tests in parallel, so no more.
pub fn builder() -> SessionBuilder {
    Session::builder().environment(env()).intra_op_threads(2)
}

/// A session of a committed model with [`builder`]'s settings.
///
/// # Panics
/// If the session cannot be created.
pub fn session(name: &str) -> Session {
    let path = model(name);
    builder().commit_from_file(&path).unwrap_or_else(|e| panic!("session for {} should load: {e}", path.display()))
}

/// Where discovery lists no GPU device: a session of the model at `path` that requires one
/// (`DevicePolicy::RequireGpu`) is refused with `Error::NoGpuDevice`, whose reason names
/// `/sys/class/drm` (what ORT's Linux discovery reads), instead of running on the CPU.
///
/// # Panics
/// If the session is made, fails with another error, or its reason does not name `/sys/class/drm`.
pub fn assert_require_gpu_refused(path: &Path) {
    let error = Session::builder()
        .device_policy(DevicePolicy::RequireGpu)
        .commit_from_file(path)
        .expect_err("no GPU device listed: refused, not run on the CPU");
    println!("RequireGpu: {error}");
    let Error::NoGpuDevice { why, .. } = &error else { panic!("expected NoGpuDevice, got {error:?}") };
    assert!(why.contains("/sys/class/drm"), "{error}");
}

/// The input `mlp_expected.bin` was computed for: `arange(32).reshape(2, 16) / 32` as f32.
pub fn mlp_input() -> Array2<f32> {
    Array2::from_shape_fn((2, 16), |(r, c)| (r * 16 + c) as f32 / 32.0)
}

/// Reads a file of raw little-endian f32 values (like `mlp_expected.bin`).
///
/// # Panics
/// If the file cannot be read or its length is not a multiple of 4.
pub fn read_f32_le(path: &Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert_eq!(bytes.len() % 4, 0, "{} is not a whole number of f32s", path.display());
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

/// Whether `got` is within `atol + rtol * |expected|` of `expected` (numpy's `isclose`); NaN
/// equals NaN, and infinities must match exactly.
pub fn close(got: f64, expected: f64, rtol: f64, atol: f64) -> bool {
    if got.is_nan() || expected.is_nan() {
        return got.is_nan() && expected.is_nan();
    }
    if got.is_infinite() || expected.is_infinite() {
        return got == expected;
    }
    (got - expected).abs() <= atol + rtol * expected.abs()
}

/// Deterministic pseudo-random floats in [-1, 1): test inputs that differ per `seed`.
pub fn noise(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The largest absolute difference between two arrays of one shape.
///
/// # Panics
/// If the shapes differ.
pub fn max_abs_diff(a: &ArrayD<f32>, b: &ArrayD<f32>) -> f32 {
    assert_eq!(a.shape(), b.shape());
    a.iter().zip(b.iter()).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// A scratch folder under the system temp dir, removed (with its contents) when dropped.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    /// Creates a new, empty, uniquely named folder.
    ///
    /// # Panics
    /// If the folder cannot be created.
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("onnxrt-tests-{label}-{}-{n}", std::process::id()));
        // A leftover from a crashed run with the same pid would only hold stale files.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir { path }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::close;

    #[test]
    fn close_follows_numpy_isclose() {
        assert!(close(1.0, 1.0005, 1e-3, 0.0));
        assert!(!close(1.0, 1.01, 1e-3, 1e-5));
        assert!(close(f64::NAN, f64::NAN, 0.0, 0.0));
        assert!(!close(0.0, f64::NAN, 1.0, 1.0));
        assert!(close(f64::INFINITY, f64::INFINITY, 0.0, 0.0));
        assert!(!close(f64::INFINITY, f64::NEG_INFINITY, 1.0, 1.0));
        assert!(!close(1e300, f64::INFINITY, 1.0, 1.0));
    }
}
