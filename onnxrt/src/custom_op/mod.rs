//! Custom operators written in Rust: a node type ONNX does not define, computed by your code on
//! the CPU, inside an ordinary [`Session`](crate::Session).
//!
//! Implement [`CustomOp`] (the operator's name, its inputs and outputs, how to make a kernel for
//! one node from the node's attributes) and [`Kernel`] (the computation), put the operators of one
//! ONNX domain in an [`OpDomain`], and hand it to [`SessionBuilder::custom_ops`](crate::SessionBuilder::custom_ops). The model names
//! the operator as `domain::Name` in a node and imports the domain in its `opset_import`.
//!
//! Use this for a missing operator or a fused post-processing step that must live inside the
//! graph; for operators already in a compiled shared library, use
//! [`SessionBuilder::custom_op_library`](crate::SessionBuilder::custom_op_library) instead (an
//! `unsafe` call: nothing can check the library's code).
//!
//! ```
//! use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
//! use onnxrt::{ElementType, Session, Value};
//!
//! /// `y = x * factor`, the factor read from the node's `factor` attribute.
//! struct Scale;
//! struct ScaleKernel { factor: f32 }
//!
//! impl CustomOp for Scale {
//!     type Kernel = ScaleKernel;
//!     fn name(&self) -> &str { "Scale" }
//!     fn inputs(&self) -> Vec<IoSpec> { vec![IoSpec::tensor(ElementType::F32)] }
//!     fn outputs(&self) -> Vec<IoSpec> { vec![IoSpec::tensor(ElementType::F32)] }
//!     fn create_kernel(&self, info: &KernelInfo<'_>) -> OpResult<ScaleKernel> {
//!         Ok(ScaleKernel { factor: info.attribute_f32("factor")? })
//!     }
//! }
//!
//! impl Kernel for ScaleKernel {
//!     fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
//!         let x = ctx.input::<f32>(0)?;
//!         let mut y = ctx.output::<f32>(0, x.shape())?;
//!         y.zip_mut_with(&x, |y, &x| *y = x * self.factor);
//!         Ok(())
//!     }
//! }
//!
//! // One node `ai.onnxrt.example::Scale(x) -> y` with `factor = 2.5`; x and y float [N].
//! let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/models/custom_scale.onnx");
//! let domain = OpDomain::new("ai.onnxrt.example").with(Scale);
//! let session = Session::builder().custom_ops(domain).commit_from_file(model)?;
//! let x = Value::from_vec(&[3], vec![1.0f32, 2.0, -4.0])?;
//! let outputs = session.run(&[("x", &x)])?;
//! assert_eq!(outputs[0].view::<f32>()?.as_slice(), Some(&[2.5f32, 5.0, -10.0][..]));
//! # Ok::<(), onnxrt::Error>(())
//! ```
//!
//! **Errors and panics.** A kernel that returns `Err`, or panics, while being created or while
//! computing fails that session creation or that run with [`Error::CustomOp`](crate::Error::CustomOp),
//! which names the operator and carries the message (a panic's message too). Panics are caught
//! at the boundary and never unwind into ONNX Runtime; the session stays usable for the next run
//! (the kernel itself is not reset: a kernel with interior state must keep it consistent). So
//! are panics while the error is formatted (its `Display`) or dropped, when the kernel is
//! dropped, and when a panic's payload is dropped: none of them aborts the process. A kernel
//! that returns `Ok` without having made every required output (say its one
//! [`output`](KernelContext::output) call failed and it ignored the error) fails the run with
//! `Error::CustomOp` naming the output: a run never returns an output nobody wrote.
//!
//! **Element types.** Inputs and outputs declare their element type ([`IoSpec`]); ONNX Runtime
//! checks the model against them when the session is made. A model that feeds a declared-`f32`
//! input another type fails there with an [`Error::Ort`](crate::Error::Ort) in ORT's words
//! (1.16.2: `Node () output arg (y) type inference failed`; 1.30: `Type 'tensor(int64)' of input
//! parameter (x) of operator (Scale) in node () is invalid`). Inside the kernel, reading or
//! writing a tensor as another type than it holds is an error, never a reinterpretation.
//!
//! **Threads.** ONNX Runtime creates one kernel per node and calls [`Kernel::compute`] on it from
//! whichever thread runs the session, from several threads at once when several runs are in
//! flight (concurrent [`Session::run`](crate::Session::run) calls, `run_async`); kernels are
//! destroyed on the thread that releases the session. Hence `Kernel: Send + Sync` and a `&self`
//! compute: state a kernel changes while computing needs a `Mutex` or atomics. The operator
//! itself is read at session creation, on any thread, and shared by every session built with
//! its domain: `CustomOp: Send + Sync`.
//!
//! **Lifetimes.** ONNX Runtime keeps pointers to the operator descriptions and calls back into
//! them until the last session using them is released. Each [`Session`](crate::Session) holds its
//! domains (reference-counted) and releases them after itself, so dropping the [`OpDomain`] or
//! the builder early is fine.
//!
//! # What a CUDA kernel would need (not built)
//! This module computes on the CPU only: ONNX Runtime places the node on its CPU provider and
//! hands over host tensors. A GPU kernel would need three more things, none of them exposed yet:
//! the operator would have to report the provider type string `"CUDAExecutionProvider"` from
//! `OrtCustomOp::GetExecutionProviderType` (here always null, meaning CPU), so the node is
//! assigned to CUDA; its compute would launch work on ORT's stream, read with
//! `OrtApi::KernelContext_GetGPUComputeStream`, rather than on the default stream (or it races
//! with ORT's own kernels); and its inputs and outputs would be device pointers, not
//! `ndarray` views: the views here read host memory and [`KernelContext::input`] refuses a
//! tensor that is not in CPU-readable memory.

mod callbacks;
mod context;
mod domain;
mod info;

pub use context::KernelContext;
pub use domain::OpDomain;
pub(crate) use domain::{register, Registered};
pub use info::KernelInfo;

use std::ffi::CString;
use std::sync::Arc;

use onnxrt_sys::OrtCustomOp;

use crate::element::ElementType;

/// What a kernel returns: any error type (`?` works on [`crate::Error`], `String` and `&str`
/// convert with `.into()`). Its `Display` text becomes the message of the run's error.
pub type OpResult<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// An operator: its name, inputs and outputs, and how to make a kernel for one node.
///
/// `Send + Sync`: ONNX Runtime reads the operator at session creation on any thread, and one
/// [`OpDomain`] may serve several sessions at once.
pub trait CustomOp: Send + Sync + 'static {
    /// The kernel made for each node of this operator.
    type Kernel: Kernel;

    /// The operator's name as the model's nodes write it (`op_type`), without the domain.
    /// Read once, when the operator is added to an [`OpDomain`].
    fn name(&self) -> &str;

    /// The inputs, in order. Read once, when the operator is added to an [`OpDomain`].
    fn inputs(&self) -> Vec<IoSpec>;

    /// The outputs, in order. Read once, when the operator is added to an [`OpDomain`].
    fn outputs(&self) -> Vec<IoSpec>;

    /// Makes the kernel for one node, reading its attributes from `info`. Runs during session
    /// creation; an error or a panic here fails it with [`crate::Error::CustomOp`].
    fn create_kernel(&self, info: &KernelInfo<'_>) -> OpResult<Self::Kernel>;
}

/// The computation of one node.
///
/// `Send + Sync`: ONNX Runtime calls `compute` from several threads at once when runs of the
/// session overlap, and destroys the kernel on whichever thread releases the session.
pub trait Kernel: Send + Sync + 'static {
    /// Reads the inputs from `ctx` and writes every required output. An error or a panic fails
    /// the run with [`crate::Error::CustomOp`]; so does returning `Ok` with a required output
    /// not made.
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult;
}

/// Whether an input or output must be there, may be left out, or repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// Exactly one value (the default).
    Required,
    /// Zero or one value: the node may leave it out (an empty name).
    Optional,
    /// The last input or output only: `min` or more values of one element type.
    Variadic {
        /// The fewest values a node must give.
        min: usize,
    },
}

/// One input or output of a [`CustomOp`]: its element type and [`Arity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoSpec {
    pub(crate) element: Option<ElementType>,
    pub(crate) arity: Arity,
}

impl IoSpec {
    /// A required tensor of one element type. ONNX Runtime refuses, at session creation, a model
    /// that feeds the node another type.
    pub fn tensor(element: ElementType) -> IoSpec {
        IoSpec { element: Some(element), arity: Arity::Required }
    }

    /// A required tensor of any element type (the kernel reads it with
    /// [`KernelContext::input_info`] first). ONNX Runtime allows an output of any type only when
    /// exactly one input is of any type: the output then takes that input's type.
    pub fn any() -> IoSpec {
        IoSpec { element: None, arity: Arity::Required }
    }

    /// The same, but the node may leave it out.
    pub fn optional(self) -> IoSpec {
        IoSpec { arity: Arity::Optional, ..self }
    }

    /// The same, repeated `min` or more times (the last input or output only).
    pub fn variadic(self, min: usize) -> IoSpec {
        IoSpec { arity: Arity::Variadic { min }, ..self }
    }
}

/// A [`CustomOp`] with its kernel type erased, so one domain holds operators of several types.
pub(crate) trait ErasedOp: Send + Sync {
    fn create(&self, info: &KernelInfo<'_>) -> OpResult<Box<dyn Kernel>>;
}

impl<T: CustomOp> ErasedOp for T {
    fn create(&self, info: &KernelInfo<'_>) -> OpResult<Box<dyn Kernel>> {
        Ok(Box::new(self.create_kernel(info)?))
    }
}

/// One operator as ORT sees it. `raw` comes first in a `repr(C)` struct: ORT hands `&raw` back
/// to every callback, which reads the entry around it (see `callbacks::entry`). It lives here,
/// below `domain` (which makes entries) and `callbacks` (which reads them).
#[repr(C)]
pub(crate) struct OpEntry {
    pub(crate) raw: OrtCustomOp,
    /// `domain::Name`, for messages.
    pub(crate) label: Arc<str>,
    pub(crate) name: CString,
    pub(crate) inputs: Vec<IoSpec>,
    pub(crate) outputs: Vec<IoSpec>,
    pub(crate) op: Box<dyn ErasedOp>,
}
