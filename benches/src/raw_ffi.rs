//! The raw C API loop written in Rust against `onnxrt_sys`: no validation, no `Result`s in the
//! loop beyond the status check, no allocation. The same calls as `c/raw_run.c`.

use std::ffi::{c_char, CStr, CString};
use std::path::Path;

use onnxrt_sys::{OrtApi, OrtApiBase, OrtIoBinding, OrtSession, OrtStatus, OrtValue};

use crate::Case;

/// One session made through the raw table, its inputs made once, a binding with a
/// preallocated output bound once.
#[derive(Debug)]
pub struct RawFfi {
    api: &'static OrtApi,
    session: *mut OrtSession,
    binding: *mut OrtIoBinding,
    in_names: Vec<*const c_char>,
    in_values: Vec<*const OrtValue>,
    out_names: Vec<*const c_char>,
    outputs: Vec<*mut OrtValue>,
    // Memory ORT reads through the values above (never freed: a benchmark keeps it to its end).
    _names: Vec<CString>,
    _data: Vec<Vec<f32>>,
}

/// Turns a status into a message, releasing it.
///
/// # Safety
/// `status` is null or a status just returned by `api` and not yet released.
unsafe fn check(api: &OrtApi, what: &str, status: *mut OrtStatus) -> Result<(), String> {
    if status.is_null() {
        return Ok(());
    }
    // SAFETY: a live status (caller's contract); the message is read before it is released.
    let text = unsafe {
        let text = CStr::from_ptr(api.GetErrorMessage.expect("GetErrorMessage")(status)).to_string_lossy().into_owned();
        api.ReleaseStatus.expect("ReleaseStatus")(status);
        text
    };
    Err(format!("{what}: {text}"))
}

macro_rules! call {
    ($api:expr, $f:ident($($arg:expr),* $(,)?)) => {
        // SAFETY: (every use) the arguments are live objects made through this table, valid
        // out-pointers, or NUL-terminated strings and slices that outlive the call.
        unsafe { check($api, stringify!($f), $api.$f.expect(stringify!($f))($($arg),*)) }
    };
}

impl RawFfi {
    /// Opens `library`, asks for API 16, and makes a session on `case` with the benchmark options.
    pub fn open(library: &Path, case: &Case) -> Result<RawFfi, String> {
        // SAFETY: loading the ONNX Runtime library runs its initialisers, which have no
        // preconditions; onnxrt already has the same file open, so this is the same instance.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|e| e.to_string())?;
        let lib: &'static libloading::Library = Box::leak(Box::new(lib));
        // SAFETY: OrtGetApiBase has this signature in every ORT release.
        let get_base = unsafe { lib.get::<unsafe extern "C" fn() -> *const OrtApiBase>(b"OrtGetApiBase\0") }
            .map_err(|e| e.to_string())?;
        // SAFETY: returns a pointer to a static table inside the library, which is never unloaded.
        let base = unsafe { &*get_base() };
        // SAFETY: GetApi takes any version and returns null for those it does not serve.
        let api = unsafe { base.GetApi.ok_or("GetApi")?(onnxrt_sys::API_VERSION) };
        // SAFETY: non-null tables are static data of the (leaked, never unloaded) library.
        let api: &'static OrtApi = unsafe { api.as_ref() }.ok_or("GetApi(16) returned NULL")?;

        let mut env = std::ptr::null_mut();
        call!(api, CreateEnv(onnxrt_sys::ORT_LOGGING_LEVEL_WARNING, c"raw_ffi".as_ptr(), &mut env))?;
        let mut options = std::ptr::null_mut();
        call!(api, CreateSessionOptions(&mut options))?;
        call!(api, SetIntraOpNumThreads(options, 1))?;
        call!(api, SetSessionExecutionMode(options, onnxrt_sys::ORT_SEQUENTIAL))?;
        call!(api, SetSessionGraphOptimizationLevel(options, onnxrt_sys::ORT_ENABLE_ALL))?;
        let model = CString::new(case.model.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
        let mut session = std::ptr::null_mut();
        call!(api, CreateSession(env, model.as_ptr(), options, &mut session))?;
        let mut memory = std::ptr::null_mut();
        call!(api, CreateCpuMemoryInfo(onnxrt_sys::OrtArenaAllocator, onnxrt_sys::OrtMemTypeDefault, &mut memory))?;

        let mut names: Vec<CString> = case.inputs.iter().map(|n| CString::new(*n).expect("name")).collect();
        names.push(CString::new(case.output).expect("name"));
        let mut data: Vec<Vec<f32>> = case.inputs.iter().map(|_| vec![1.0f32; case.in_len()]).collect();
        data.push(vec![0.0f32; case.out_len()]);
        let mut values = Vec::with_capacity(data.len());
        for (i, buffer) in data.iter_mut().enumerate() {
            let shape = if i < case.inputs.len() { case.in_shape } else { case.out_shape };
            let mut value = std::ptr::null_mut();
            call!(
                api,
                CreateTensorWithDataAsOrtValue(
                    memory,
                    buffer.as_mut_ptr().cast(),
                    std::mem::size_of_val(&buffer[..]),
                    shape.as_ptr(),
                    shape.len(),
                    onnxrt_sys::ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                    &mut value
                )
            )?;
            values.push(value);
        }
        let mut binding = std::ptr::null_mut();
        call!(api, CreateIoBinding(session, &mut binding))?;
        let n_in = case.inputs.len();
        for i in 0..n_in {
            call!(api, BindInput(binding, names[i].as_ptr(), values[i]))?;
        }
        call!(api, BindOutput(binding, names[n_in].as_ptr(), values[n_in]))?;
        Ok(RawFfi {
            api,
            session,
            binding,
            in_names: names[..n_in].iter().map(|n| n.as_ptr()).collect(),
            in_values: values[..n_in].iter().map(|&v| v.cast_const()).collect(),
            out_names: vec![names[n_in].as_ptr()],
            outputs: vec![std::ptr::null_mut()],
            _names: names,
            _data: data,
        })
    }

    /// `n` runs: `Run` + `ReleaseValue` of the outputs, or `RunWithBinding` when `binding`.
    ///
    /// # Panics
    /// If ORT reports an error.
    pub fn run(&mut self, n: u64, binding: bool) {
        let api = self.api;
        let run = api.Run.expect("Run");
        let run_with_binding = api.RunWithBinding.expect("RunWithBinding");
        let release = api.ReleaseValue.expect("ReleaseValue");
        for _ in 0..n {
            if binding {
                // SAFETY: session and binding are live; everything bound lives in `self`.
                let status = unsafe { run_with_binding(self.session, std::ptr::null(), self.binding) };
                // SAFETY: a status just returned.
                unsafe { check(api, "RunWithBinding", status) }.expect("RunWithBinding");
                continue;
            }
            self.outputs.iter_mut().for_each(|o| *o = std::ptr::null_mut());
            // SAFETY: the name and value arrays have the lengths passed and live in `self`; ORT
            // fills `outputs` with new values, released right below.
            let status = unsafe {
                run(
                    self.session,
                    std::ptr::null(),
                    self.in_names.as_ptr(),
                    self.in_values.as_ptr(),
                    self.in_values.len(),
                    self.out_names.as_ptr(),
                    self.out_names.len(),
                    self.outputs.as_mut_ptr(),
                )
            };
            for &output in &self.outputs {
                if !output.is_null() {
                    // SAFETY: a value ORT just handed us, released once.
                    unsafe { release(output) };
                }
            }
            // SAFETY: a status just returned.
            unsafe { check(api, "Run", status) }.expect("Run");
        }
    }
}
