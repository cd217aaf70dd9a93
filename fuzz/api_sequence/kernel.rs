//! The Rust custom operator behind `custom_scale.onnx` (`ai.onnxrt.example::Scale`, `y = x *
//! factor`), whose kernel does what the sequence says: computes, fails, panics, writes part of its
//! output, asks for the wrong type first, writes nothing...

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use onnxrt::custom_op::{CustomOp, IoSpec, Kernel, KernelContext, KernelInfo, OpDomain, OpResult};
use onnxrt::ElementType;

use crate::api_sequence::{count, known_holes, Intentional};

/// What a kernel does on its next `compute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compute {
    /// `y = x * factor`: the only modes whose output is checked.
    Correct,
    /// Asks about its inputs and outputs first, then computes.
    QueriesThenCorrect,
    Fails,
    Panics,
    /// Writes the first half of `y`, returns `Ok`.
    WritesHalf,
    /// `output::<f64>` (refused: `y` is f32), then `output::<f32>`, then `Ok`.
    WrongTypeFirst,
    /// Never asks for `y`, returns `Ok`.
    NoOutput,
    /// Makes `y` one element longer than `x`.
    WrongShape,
    /// Reads `x` as f64 (refused) and returns that error.
    WrongInputType,
    /// Asks for `y` twice.
    OutputTwice,
    /// Returns an error whose `Display` panics (only with `known_holes()`).
    DisplayPanics,
}

impl Compute {
    pub fn from_byte(b: u8) -> Compute {
        const ALL: [Compute; 11] = [
            Compute::Correct,
            Compute::QueriesThenCorrect,
            Compute::Fails,
            Compute::Panics,
            Compute::WritesHalf,
            Compute::WrongTypeFirst,
            Compute::NoOutput,
            Compute::WrongShape,
            Compute::WrongInputType,
            Compute::OutputTwice,
            Compute::DisplayPanics,
        ];
        match ALL[usize::from(b) % ALL.len()] {
            Compute::DisplayPanics if !known_holes() => Compute::Fails,
            mode => mode,
        }
    }

    /// Whether a successful run's `y` must be `x * factor`.
    pub fn checked(self) -> bool {
        matches!(self, Compute::Correct | Compute::QueriesThenCorrect)
    }
}

/// The mode every kernel of the sequence reads, set before each run.
#[derive(Clone, Default)]
pub struct Mode(Arc<AtomicU8>);

impl Mode {
    pub fn set(&self, mode: Compute) {
        self.0.store(mode as u8, Ordering::Relaxed);
    }

    fn get(&self) -> u8 {
        self.0.load(Ordering::Relaxed)
    }
}

/// How `create_kernel` ends, fixed for one session: 0 and above 2 make a kernel.
pub fn domain(mode: &Mode, create: u8, any_type: bool) -> OpDomain {
    count(1);
    OpDomain::new("ai.onnxrt.example").with(Scale { mode: mode.clone(), create, any_type })
}

struct Scale {
    mode: Mode,
    create: u8,
    /// Declares input and output as `IoSpec::any()` instead of f32.
    any_type: bool,
}

struct ScaleKernel {
    mode: Mode,
    factor: f32,
}

impl CustomOp for Scale {
    type Kernel = ScaleKernel;
    fn name(&self) -> &str {
        "Scale"
    }
    fn inputs(&self) -> Vec<IoSpec> {
        vec![if self.any_type { IoSpec::any() } else { IoSpec::tensor(ElementType::F32) }]
    }
    fn outputs(&self) -> Vec<IoSpec> {
        vec![if self.any_type { IoSpec::any() } else { IoSpec::tensor(ElementType::F32) }]
    }
    fn create_kernel(&self, info: &KernelInfo<'_>) -> OpResult<ScaleKernel> {
        let factor = info.attribute_f32("factor");
        let _ = (info.input_count(), info.output_count(), info.attribute_i64("factor"), info.attribute_string("x"));
        match self.create {
            1 => Err("create_kernel fails on purpose".into()),
            2 => std::panic::panic_any(Intentional),
            _ => Ok(ScaleKernel { mode: self.mode.clone(), factor: factor? }),
        }
    }
}

/// An error whose `Display` panics.
#[derive(Debug)]
struct PanickyError;

impl fmt::Display for PanickyError {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        std::panic::panic_any(Intentional)
    }
}

impl std::error::Error for PanickyError {}

impl ScaleKernel {
    fn correct(&self, ctx: &KernelContext<'_>) -> OpResult {
        let x = ctx.input::<f32>(0)?;
        let mut y = ctx.output::<f32>(0, x.shape())?;
        y.zip_mut_with(&x, |y, &x| *y = x * self.factor);
        Ok(())
    }
}

impl Kernel for ScaleKernel {
    fn compute(&self, ctx: &KernelContext<'_>) -> OpResult {
        let mode = Compute::from_byte(self.mode.get());
        match mode {
            Compute::Correct => self.correct(ctx),
            Compute::QueriesThenCorrect => {
                let _ = (ctx.op(), ctx.input_count()?, ctx.output_count()?, ctx.input_info(0)?, ctx.input_info(3));
                let _ = (ctx.optional_input::<f32>(0)?, ctx.optional_input::<i64>(0), ctx.input::<f32>(7));
                self.correct(ctx)
            }
            Compute::Fails => Err(format!("kernel fails on purpose ({:?})", ctx.op()).into()),
            Compute::Panics => std::panic::panic_any(Intentional),
            Compute::WritesHalf => {
                let x = ctx.input::<f32>(0)?;
                let mut y = ctx.output::<f32>(0, x.shape())?;
                let half = y.len() / 2;
                y.iter_mut().take(half).for_each(|y| *y = 1.0);
                Ok(())
            }
            Compute::WrongTypeFirst => {
                let x = ctx.input::<f32>(0)?;
                let _ = ctx.output::<f64>(0, x.shape());
                if let Ok(mut y) = ctx.output::<f32>(0, x.shape()) {
                    y.fill(3.0);
                }
                Ok(())
            }
            Compute::NoOutput => Ok(()),
            Compute::WrongShape => {
                let n = ctx.input::<f32>(0)?.len();
                ctx.output::<f32>(0, &[n + 1])?.fill(4.0);
                Ok(())
            }
            Compute::WrongInputType => Err(ctx.input::<f64>(0).err().map_or("read".into(), Into::into)),
            Compute::OutputTwice => {
                let x = ctx.input::<f32>(0)?;
                drop(ctx.output::<f32>(0, x.shape())?);
                ctx.output::<f32>(0, x.shape())?.fill(5.0);
                Ok(())
            }
            Compute::DisplayPanics => Err(Box::new(PanickyError)),
        }
    }
}
