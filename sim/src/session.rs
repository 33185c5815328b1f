//! The prelude every way of running a kernel shares, written once: a parsed kernel is verified
//! for a target with the caller's constant overrides, its `launch { }` section resolved into a
//! launch plan (the caller's limits over the section's), its input tensors drawn for a seed
//! and, for the machine, lowered. [`run_source`](crate::run_source), `bwsim check`
//! ([`crate::check`]), the timing model ([`crate::timing`]) and the command line's `run`,
//! `time` and `gpu` start from a [`Session`].
//!
//! Each step fails with its own [`SetupError`] variant, which carries the diagnostics (with
//! their spans) that the step produced, so a caller can word one case its own way (the command
//! line adds a help line to [`SetupError::NoLaunch`]) and report the others unchanged.
//!
//! This module owns the order of the steps and their errors; it knows nothing of how a kernel
//! is run, checked or timed afterwards, nor of how errors are printed.

use crate::lower::{self, Program};
use bwsim_isa::consts::Override;
use bwsim_isa::ir::Kernel;
use bwsim_isa::launch::{self, HostTensor, LaunchPlan};
use bwsim_isa::limits::Limits;
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, verify_to_run, VerifyOptions};
use bwsim_isa::{Code, Diagnostic, Span, Target};

/// Which verifier errors stop a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Every error stops ([`verify`]): what the timing model needs.
    Strict,
    /// Errors whose hardware behaviour is defined (`verify::CONTINUES`) do not stop
    /// ([`verify_to_run`]); they stay among [`Session::diagnostics`] for the caller to report
    /// with the run's.
    ToRun,
}

/// Why a kernel could not be made ready, by step.
#[derive(Clone, Debug, thiserror::Error)]
pub enum SetupError {
    /// The `.tile` text does not parse.
    #[error("the kernel does not parse")]
    Parse(Vec<Diagnostic>),
    /// The verifier stopped (its diagnostics, warnings included).
    #[error("the kernel does not verify")]
    Verify(Vec<Diagnostic>),
    /// The kernel has no `launch { }` section; `span` is its name's.
    #[error("kernel has no `launch {{ }}` section")]
    NoLaunch { span: Span },
    /// The `launch { }` section does not resolve.
    #[error("the launch section does not resolve")]
    Launch(Vec<Diagnostic>),
    /// The inputs could not be drawn (the launch's tensors exceed the memory limit).
    #[error("the inputs could not be drawn")]
    Inputs(Box<Diagnostic>),
    /// Lowering failed.
    #[error("the kernel could not be lowered")]
    Lower(Vec<Diagnostic>),
}

impl SetupError {
    /// The error as diagnostics with spans: the step's own, or for
    /// [`SetupError::NoLaunch`] one `launch` error at the kernel's name.
    pub fn into_diagnostics(self) -> Vec<Diagnostic> {
        match self {
            SetupError::Parse(d) | SetupError::Verify(d) | SetupError::Launch(d) | SetupError::Lower(d) => d,
            SetupError::Inputs(d) => vec![*d],
            SetupError::NoLaunch { span } => vec![no_launch(span)],
        }
    }
}

/// The diagnostic of a kernel without a `launch { }` section, at its name's `span`.
pub fn no_launch(span: Span) -> Diagnostic {
    Diagnostic::error(Code::Launch, "kernel has no `launch { }` section", span, "here")
}

impl From<SetupError> for Vec<Diagnostic> {
    fn from(e: SetupError) -> Vec<Diagnostic> {
        e.into_diagnostics()
    }
}

/// Parse `.tile` text ([`SetupError::Parse`] when it does not).
pub fn parse(src: &str) -> Result<Kernel, SetupError> {
    bwsim_isa::parser::parse(src).map_err(SetupError::Parse)
}

/// A verified kernel with its resolved launch plan.
pub struct Session<'k> {
    pub checked: Checked<'k>,
    pub plan: LaunchPlan,
    /// The verifier's diagnostics: its warnings and, under [`Verify::ToRun`], the errors whose
    /// hardware behaviour is defined.
    pub diagnostics: Vec<Diagnostic>,
}

impl<'k> Session<'k> {
    /// Verify `kernel` for `target` (default: its first) with `overrides`, then resolve its
    /// `launch { }` section.
    pub fn new(
        kernel: &'k Kernel,
        target: Option<Target>,
        overrides: &[Override],
        mode: Verify,
    ) -> Result<Session<'k>, SetupError> {
        let vopts = VerifyOptions {
            target,
            overrides: overrides.to_vec(),
        };
        let (checked, diagnostics) = match mode {
            Verify::Strict => verify(kernel, &vopts),
            Verify::ToRun => verify_to_run(kernel, &vopts),
        };
        let Some(checked) = checked else {
            return Err(SetupError::Verify(diagnostics));
        };
        let Some(l) = &kernel.launch else {
            return Err(SetupError::NoLaunch {
                span: kernel.name.span,
            });
        };
        let plan = launch::resolve(&checked, l).map_err(SetupError::Launch)?;
        Ok(Session {
            checked,
            plan,
            diagnostics,
        })
    }

    /// The caller's `limits` over the launch section's (before [`Session::inputs`]: the
    /// memory limit decides whether the inputs may be drawn).
    pub fn with_limits(mut self, limits: Limits) -> Session<'k> {
        self.plan.limits = limits.or(self.plan.limits);
        self
    }

    /// The verifier's errors (those that did not stop it: [`Verify::ToRun`]'s).
    pub fn continuing_errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(|d| d.is_error())
    }

    /// The launch's input tensors, drawn for `seed` ([`launch::materialize`]).
    pub fn inputs(&self, seed: u64) -> Result<Vec<HostTensor>, SetupError> {
        launch::materialize(&self.plan, seed).map_err(|d| SetupError::Inputs(Box::new(d)))
    }

    /// The kernel lowered for this launch ([`lower::lower`]).
    pub fn lower(&self) -> Result<Program, SetupError> {
        lower::lower(&self.checked, &self.plan).map_err(SetupError::Lower)
    }
}
