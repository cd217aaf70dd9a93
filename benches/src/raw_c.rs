//! The C baseline, `c/raw_run.c` compiled by build.rs, called through its four functions.

use std::ffi::{c_char, c_int, c_long, CString};
use std::path::Path;

use crate::Case;

#[repr(C)]
struct RawBench {
    _opaque: [u8; 0],
}

extern "C" {
    fn raw_open(
        library: *const c_char,
        model: *const c_char,
        n_in: usize,
        in_names: *const *const c_char,
        in_shape: *const i64,
        in_rank: usize,
        n_out: usize,
        out_names: *const *const c_char,
        out_shape: *const i64,
        out_rank: usize,
        err: *mut c_char,
        err_len: usize,
    ) -> *mut RawBench;
    fn raw_loop(b: *mut RawBench, iters: c_long, binding: c_int, err: *mut c_char, err_len: usize) -> c_int;
    fn raw_roundtrip(b: *mut RawBench, iters: c_long, err: *mut c_char, err_len: usize) -> c_int;
    fn raw_bound_output0(b: *const RawBench) -> f32;
    fn raw_close(b: *mut RawBench);
}

/// One session opened by the C code, with its inputs (and bound outputs) made once.
#[derive(Debug)]
pub struct RawC {
    raw: *mut RawBench,
    // The C side keeps pointers to these names.
    _names: Vec<CString>,
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| format!("NUL in {}", path.display()))
}

fn message(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

impl RawC {
    /// Opens `library` from C and makes a session on `case`'s model.
    pub fn open(library: &Path, case: &Case) -> Result<RawC, String> {
        let library = c_path(library)?;
        let model = c_path(&case.model)?;
        let mut names: Vec<CString> =
            case.inputs.iter().map(|n| CString::new(*n).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        names.push(CString::new(case.output).map_err(|e| e.to_string())?);
        let pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let n_in = case.inputs.len();
        let mut err = vec![0u8; 1024];
        // SAFETY: every pointer is to a live NUL-terminated string or a live slice of the length
        // given; `err` has `err.len()` bytes. The C side keeps the name pointers, which `_names`
        // keeps alive for as long as the handle.
        let raw = unsafe {
            raw_open(
                library.as_ptr(),
                model.as_ptr(),
                n_in,
                pointers.as_ptr(),
                case.in_shape.as_ptr(),
                case.in_shape.len(),
                1,
                pointers[n_in..].as_ptr(),
                case.out_shape.as_ptr(),
                case.out_shape.len(),
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        if raw.is_null() {
            return Err(format!("raw_run.c: {}", message(&err)));
        }
        Ok(RawC { raw, _names: names })
    }

    /// `n` runs: `Run` + `ReleaseValue` of the outputs, or `RunWithBinding` when `binding`.
    ///
    /// # Panics
    /// If ORT reports an error.
    pub fn run(&mut self, n: u64, binding: bool) {
        let mut err = [0u8; 512];
        // SAFETY: `self.raw` is the live handle from raw_open; `err` has the length given.
        let failed =
            unsafe { raw_loop(self.raw, n as c_long, c_int::from(binding), err.as_mut_ptr().cast(), err.len()) };
        assert_eq!(failed, 0, "raw_run.c: {}", message(&err));
    }

    /// `n` whole round trips: wrap the input buffers (`CreateTensorWithDataAsOrtValue`), `Run`,
    /// `GetTensorMutableData` of output 0 and read one element, `ReleaseValue` outputs and inputs.
    ///
    /// # Panics
    /// If ORT reports an error.
    pub fn round_trip(&mut self, n: u64) {
        let mut err = [0u8; 512];
        // SAFETY: `self.raw` is the live handle from raw_open; `err` has the length given.
        let failed = unsafe { raw_roundtrip(self.raw, n as c_long, err.as_mut_ptr().cast(), err.len()) };
        assert_eq!(failed, 0, "raw_run.c: {}", message(&err));
    }

    /// First element of the bound output (after a binding run).
    pub fn bound_output0(&self) -> f32 {
        // SAFETY: `self.raw` is live; the function only reads it.
        unsafe { raw_bound_output0(self.raw) }
    }
}

impl Drop for RawC {
    fn drop(&mut self) {
        // SAFETY: released once; nothing uses the handle afterwards.
        unsafe { raw_close(self.raw) }
    }
}
