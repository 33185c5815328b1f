//! The hazard checker and `bwsim check` as a library.
//!
//! - [`hb`]: happens-before (vector clocks), the shadow memory of shared and tensor memory, and
//!   the proxy-fence rule: which pairs of accesses are hazards.
//! - [`hazards`]: the per-CTA bookkeeping the machine feeds (agents, asynchronous units,
//!   barriers) and the hazard diagnostics.
//! - [`fix`]: verified fix suggestions for a finding (`bwsim check --fix`).
//! - [`global`]: the shadow of global memory, shared by the CTAs of a launch, and the
//!   synchronisation atomics carry between CTAs; the `global-race` diagnostic.
//! - This module, the driver (below).
//!
//! The driver: a kernel is prepared once (parsed, verified, lowered, its inputs
//! drawn) and then run under many schedules of the [`PctScheduler`] with the hazard checker on;
//! [`Prepared::explore`] spreads the seeds over threads ([`crate::explore`]) and keeps each
//! distinct diagnostic once, with the smallest seed that shows it, so the result is the same
//! whatever the number of threads. [`Prepared::run`] replays one seed exactly.
//!
//! Inputs are drawn once (data seed 0): the schedule seed varies only the schedule. A kernel
//! with verifier errors whose hardware behaviour is defined (`verify::CONTINUES`) is still
//! prepared: every schedule reports them together with its own findings.

pub mod exhaustive;
pub mod fix;
pub mod global;
pub mod hazards;
pub mod hb;
pub mod shrink;

use crate::explore::{explore, explore_until, Exploration, ExploreOptions, Finding};
use crate::lower::Program;
use crate::machine::{self, RunOptions, RunResult};
use crate::pct::PctScheduler;
use crate::sched::RandomScheduler;
use crate::session::{Session, Verify};
use bwsim_isa::consts::Override;
use bwsim_isa::ir::Kernel;
use bwsim_isa::launch::HostTensor;
use bwsim_isa::limits::Limits;
use bwsim_isa::{Code, Diagnostic, Stage, Target};

/// A kernel ready to run under many schedules.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub prog: Program,
    pub grid: [u32; 3],
    pub inputs: Vec<HostTensor>,
    /// Steps of a reference run (where the PCT change points fall).
    pub expected_steps: u64,
    /// Step limit of each run.
    pub max_steps: u64,
    /// The launch section's limits (wall time, trace events; steps as `max_steps` says).
    pub limits: Limits,
    /// MMA results shared by the schedules (they run the same data).
    pub mma_memo: std::sync::Arc<crate::mma::MmaMemo>,
    /// The verifier's errors whose hardware behaviour is defined (`verify::CONTINUES`): the
    /// kernel runs doing what the hardware does, and every schedule reports them first.
    pub static_diags: Vec<Diagnostic>,
}

/// Parse, verify, launch and lower `.tile` source for checking. Errors are the parse, verify,
/// launch or lowering diagnostics.
pub fn prepare(
    src: &str,
    overrides: &[Override],
    target: Option<Target>,
) -> Result<Prepared, Vec<Diagnostic>> {
    let kernel = crate::session::parse(src)?;
    prepare_kernel(&kernel, overrides, target, Limits::default())
}

/// [`prepare`] for a parsed kernel (from `.tile` text or imported TTGIR), with the caller's
/// `limits` over the launch section's.
pub fn prepare_kernel(
    kernel: &Kernel,
    overrides: &[Override],
    target: Option<Target>,
    limits: Limits,
) -> Result<Prepared, Vec<Diagnostic>> {
    let s = Session::new(kernel, target, overrides, Verify::ToRun)?.with_limits(limits);
    let static_diags: Vec<Diagnostic> = s.continuing_errors().cloned().collect();
    let inputs = s.inputs(0)?;
    let prog = s.lower()?;
    let plan = s.plan;
    let mut p = Prepared {
        prog,
        grid: plan.grid,
        inputs,
        expected_steps: 0,
        max_steps: plan.limits.steps_or_default(),
        limits: plan.limits,
        mma_memo: Default::default(),
        static_diags,
    };
    p.calibrate();
    Ok(p)
}

impl Prepared {
    /// Check the kernel on these inputs (the caller's data, in the launch's tensor order)
    /// instead of the drawn ones; the run length the schedules are measured against is
    /// taken again.
    pub fn set_inputs(&mut self, inputs: Vec<HostTensor>) {
        self.inputs = inputs;
        self.calibrate();
    }

    /// A reference run without the checker tells how long a run is: where the PCT change
    /// points fall and how many steps a schedule may take.
    fn calibrate(&mut self) {
        let limit = self.limits.steps_or_default();
        let opts = RunOptions {
            trace: false,
            check: false,
            limits: self.limits,
            mma_exec: crate::mma::MmaExec {
                memo: Some(self.mma_memo.clone()),
                threads: 1,
                ahead: false,
            },
            ..RunOptions::default()
        };
        let r = machine::execute(
            &self.prog,
            self.grid,
            self.inputs.clone(),
            &opts,
            &mut RandomScheduler::new(0),
        );
        self.expected_steps = r.counters.steps.max(1);
        // A schedule may take longer than the reference; a run 100 times longer is spinning.
        self.max_steps = r
            .counters
            .steps
            .saturating_mul(100)
            .clamp(100_000.min(limit), limit);
    }

    /// Run schedule `seed` with the hazard checker (and the event trace when `trace`).
    pub fn run(&self, seed: u64, trace: bool) -> RunResult {
        self.run_on(self.inputs.clone(), seed, trace)
    }

    /// The diagnostics of schedule `seed`, on the thread's spare buffers ([`Self::on_spare`]).
    fn diagnostics(&self, seed: u64) -> Vec<Diagnostic> {
        self.on_spare(|tensors| self.run_on(tensors, seed, false))
    }

    /// The diagnostics of a checked run under the caller's scheduler, on the thread's spare
    /// buffers ([`Self::on_spare`]): what a search that runs many schedules needs.
    pub fn diagnostics_with(&self, sched: &mut dyn crate::sched::Scheduler) -> Vec<Diagnostic> {
        self.on_spare(|tensors| self.execute_with(tensors, 0, sched, false))
    }

    /// The diagnostics of `run` on the launch's tensors, copied into the buffers the thread's
    /// previous run left (same contents as a fresh copy, without fresh pages for every run).
    fn on_spare(&self, run: impl FnOnce(Vec<HostTensor>) -> RunResult) -> Vec<Diagnostic> {
        thread_local! {
            static SPARE: std::cell::RefCell<Vec<HostTensor>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut tensors = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
        tensors.clone_from(&self.inputs);
        let r = run(tensors);
        SPARE.with(|s| *s.borrow_mut() = r.tensors);
        r.diagnostics
    }

    /// A run with the hazard checker under the caller's scheduler (a replay, a recorder).
    pub fn run_with(&self, sched: &mut dyn crate::sched::Scheduler, trace: bool) -> RunResult {
        self.execute_with(self.inputs.clone(), 0, sched, trace)
    }

    /// A checked run of `inputs` under `sched` (with the options of schedule `seed`), the
    /// verifier's continuing errors first.
    fn execute_with(
        &self,
        inputs: Vec<HostTensor>,
        seed: u64,
        sched: &mut dyn crate::sched::Scheduler,
        trace: bool,
    ) -> RunResult {
        let mut r = machine::execute(
            &self.prog,
            self.grid,
            inputs,
            &self.check_options(seed, trace),
            sched,
        );
        if !self.static_diags.is_empty() {
            r.diagnostics.splice(0..0, self.static_diags.iter().cloned());
        }
        r
    }

    /// The options of a checked run of schedule `seed`.
    fn check_options(&self, seed: u64, trace: bool) -> RunOptions {
        RunOptions {
            seed,
            trace,
            check: true,
            limits: Limits {
                steps: Some(self.max_steps),
                ..self.limits
            },
            mma_exec: crate::mma::MmaExec {
                memo: Some(self.mma_memo.clone()),
                threads: 1,
                ahead: false,
            },
            ..RunOptions::default()
        }
    }

    fn run_on(&self, inputs: Vec<HostTensor>, seed: u64, trace: bool) -> RunResult {
        let mut sched = PctScheduler::new(seed, self.expected_steps);
        self.execute_with(inputs, seed, &mut sched, trace)
    }

    /// Run `opts.schedules` seeds on `opts.jobs` threads; `progress(done, total)` after each.
    pub fn explore<P: Fn(u64, u64) + Sync>(&self, opts: &ExploreOptions, progress: P) -> Exploration {
        explore(opts, |seed| self.diagnostics(seed), progress)
    }

    /// [`Prepared::explore`] that stops handing out seeds once `cancel` is set
    /// ([`explore_until`]).
    pub fn explore_until<P: Fn(u64, u64) + Sync>(
        &self,
        opts: &ExploreOptions,
        cancel: &std::sync::atomic::AtomicBool,
        progress: P,
    ) -> Exploration {
        explore_until(opts, cancel, |seed| self.diagnostics(seed), progress)
    }
}

/// The replay hint of a finding: `bwsim check FILE --seed N`.
pub fn replay_command(file: &str, seed: u64) -> String {
    format!("bwsim check {file} --seed {seed}")
}

/// A finding's diagnostic with the replay note, and how often it showed when `schedules` is
/// given (what `bwsim check` prints).
pub fn annotate(f: &Finding, file: &str, schedules: Option<u64>) -> Diagnostic {
    let count = match schedules {
        Some(n) => format!(" ({} of {n} schedules)", f.count),
        None => String::new(),
    };
    f.diagnostic.clone().with_note(format!(
        "first seen with schedule seed {}{count}; replay: {}",
        f.seed,
        replay_command(file, f.seed)
    ))
}

/// The checker's diagnostic codes (docs/semantics.md#what-the-checker-models), from the one table
/// ([`bwsim_isa::codes`]): a `tests/fail` kernel expects one of them.
pub fn codes() -> impl Iterator<Item = Code> {
    Code::of_stage(Stage::Check)
}
