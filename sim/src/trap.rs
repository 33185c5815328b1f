//! Faults: what stops a simulated launch, as the user would see it.
//!
//! A [`Trap`] is a hardware fault (docs/semantics.md#faults): the CUDA error string the user gets
//! from the runtime plus the reason the hardware does not give, the op's span and the agent that
//! issued it. Internally, operations return [`Fault`]s without location; the machine attaches the
//! span and agent. Diagnostics that are not hardware traps (barrier misuse, unsupported constructs)
//! stop the run as [`Fault::Error`] and end up in `RunResult::diagnostics`.

use bwsim_isa::{Code, Diagnostic, Span};
use serde::Serialize;
use std::fmt;

/// The CUDA error a fault surfaces as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum CudaError {
    /// `cudaErrorIllegalInstruction`.
    IllegalInstruction,
    /// `cudaErrorMisalignedAddress`.
    MisalignedAddress,
    /// `cudaErrorIllegalAddress`.
    IllegalAddress,
    /// `cudaErrorLaunchFailure`.
    LaunchFailure,
    /// `cudaErrorAssert`: a device-side assertion failed.
    Assert,
}

impl CudaError {
    /// The text `cudaGetErrorString` returns.
    pub fn message(self) -> &'static str {
        match self {
            CudaError::IllegalInstruction => "an illegal instruction was encountered",
            CudaError::MisalignedAddress => "misaligned address",
            CudaError::IllegalAddress => "an illegal memory access was encountered",
            CudaError::LaunchFailure => "unspecified launch failure",
            CudaError::Assert => "device-side assert triggered",
        }
    }
    /// Stable diagnostic code.
    pub fn code(self) -> Code {
        match self {
            CudaError::IllegalInstruction => Code::IllegalInstruction,
            CudaError::MisalignedAddress => Code::MisalignedAddress,
            CudaError::IllegalAddress => Code::IllegalAddress,
            CudaError::LaunchFailure => Code::LaunchFailure,
            CudaError::Assert => Code::DeviceAssert,
        }
    }
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// A hardware fault that stopped the launch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trap {
    pub error: CudaError,
    /// Why, in words the hardware does not give.
    pub reason: String,
    /// The operation that faulted.
    pub span: Span,
    /// The `.tile` name of that operation (`tma.load`, ...).
    pub op: &'static str,
    /// Agent that issued it (`cta0.worker.load`).
    pub agent: String,
    /// Logical time of the fault.
    pub time: u64,
    /// The diagnostic code: [`CudaError::code`], or a more precise one (`over-arrival`).
    pub code: Code,
}

impl Trap {
    /// The trap as a diagnostic (code from [`CudaError::code`]).
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(
            self.code,
            format!("{} (CUDA error: {})", self.reason, self.error.message()),
            self.span,
            format!("`{}` faults here", self.op),
        )
        .with_note(format!("issued by {} at t={}", self.agent, self.time))
        .with_note("after a fault the CUDA context is unusable; the whole launch fails");
        match self.code {
            Code::OverArrival => d.with_help(
                "arrive at most as many times per phase as `mbar.init` expects: initialise the barrier with the number of arrivals each phase gets, or wait for the phase to complete before arriving again",
            ),
            _ => d,
        }
    }
}

impl fmt::Display for Trap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({} in {})",
            self.error.message(),
            self.reason,
            self.op,
            self.agent
        )
    }
}

/// What an operation can fail with, before the machine adds location.
#[derive(Clone, Debug)]
pub enum Fault {
    /// A hardware trap.
    Trap(CudaError, String),
    /// A hardware trap reported under a more precise code than the CUDA error's
    /// (`over-arrival` for an arrival underflow).
    CodedTrap(Code, CudaError, String),
    /// A simulator diagnostic that stops the run (`barrier-misuse`, `sim-unsupported`, ...).
    Error {
        code: Code,
        message: String,
        help: Option<String>,
        /// A second place the diagnostic names (where a barrier was invalidated, ...).
        label: Option<(Span, String)>,
    },
}

impl Fault {
    pub fn trap(e: CudaError, reason: impl Into<String>) -> Fault {
        Fault::Trap(e, reason.into())
    }
    pub fn error(code: Code, message: impl Into<String>) -> Fault {
        Fault::Error {
            code,
            message: message.into(),
            help: None,
            label: None,
        }
    }
    pub fn with_help(mut self, h: impl Into<String>) -> Fault {
        if let Fault::Error { help, .. } = &mut self {
            *help = Some(h.into());
        }
        self
    }
    /// Name a second place in the diagnostic (a trap has only its own).
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Fault {
        if let Fault::Error { label, .. } = &mut self {
            *label = Some((span, message.into()));
        }
        self
    }
    /// An internal inconsistency that a verified kernel should not reach.
    pub fn unsupported(message: impl Into<String>) -> Fault {
        Fault::error(Code::SimUnsupported, message)
    }

    /// An operation inside `LOp::Op` that `crate::lower` lowers to an `LOp` variant of its own
    /// (`crate::lower::lowered_apart!()`): an internal error, which no lowered program reaches.
    pub fn unlowered<E>(op: &bwsim_isa::ir::OpKind<E>) -> Fault {
        Fault::unsupported(format!("unlowered `{}`", op.name()))
    }
}

/// Result of an operation.
pub type OpResult<T> = Result<T, Fault>;
