//! bwsim's functional simulator: runs a verified tile kernel over a grid of CTAs,
//! deterministically for a seed.
//!
//! Modules, each with one job:
//! - [`lower`]: the checked IR to a flat, slot-resolved program per kernel (unrolled
//!   `static_for`, decided constant `if`s, `warp_specialize` as fork/join).
//! - [`machine`]: CTAs, agents (partitions), the TMA unit, the in-order tensor pipe, timed
//!   asynchronous events, traps and deadlock detection.
//! - [`sched`]: the [`Scheduler`] trait (which agent steps, latencies, completion order) and
//!   its seeded default.
//! - [`eval`]: expressions and tile math; [`value`]: runtime values.
//! - [`views`]: views of shared and tensor memory and the element → byte / TMEM cell
//!   placement through them (the placement itself is `bwsim_isa::placement`).
//! - [`memory`]: shared and tensor memory of a CTA; [`mbarrier`]: the PTX mbarrier state
//!   machine; [`tma`]: TMA data movement and fault rules; [`mma`]: MMA operands and
//!   accumulators, [`mma_numerics`]: the tensor cores' measured floating-point arithmetic,
//!   [`mma_narrow`]: the same for narrow operands, many columns at once.
//! - [`limits`]: enforcement of a run's resource limits (steps, wall time, trace events).
//! - [`trace`]: the event trace (compact text and Chrome JSON); [`trap`]: faults as the user
//!   sees them.
//! - [`timing`]: the cycle-approximate timing model (its own discrete-event engine over the
//!   same lowered program) and [`chips`]: the chip tables it reads.
//! - The hazard checker, [`check`]: [`check::hb`] (vector clocks, shadow memory and the proxy-fence rule),
//!   [`check::hazards`] (its per-CTA bookkeeping, fed by the machine, and hazard diagnostics),
//!   [`diagnostics`] (the checker's other diagnostics: uninitialised reads, phase aliasing,
//!   transaction mismatches, leaked TMEM, mbarrier misuse),
//!   [`waitfor`] (the wait-for graph of a deadlock), [`pct`] (the exploration scheduler),
//!   [`explore`] (many seeds in parallel, each distinct finding once) and the driver in
//!   [`check`] (a kernel prepared once and run or explored: `bwsim check`).
//!
//! - [`session`]: the prelude every entry point shares (verify, resolve the launch, draw the
//!   inputs, lower), with its errors by step.
//!
//! Entry points: [`run`] (a checked kernel with its launch plan and inputs) and
//! [`run_source`] (`.tile` text, for tests and tools).

// The interpreter's error paths (`Stop`, `Fault`) carry whole diagnostics by value: they are
// cold (one per run), so their size costs nothing measurable, and boxing them would only add
// noise to every `?`. The lowered-op enums are likewise built once per kernel.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

pub mod check;
pub mod chips;
pub mod diagnostics;
pub mod eval;
pub mod explore;
pub mod interp;
pub mod limits;
pub mod lower;
pub mod machine;
pub mod mbarrier;
pub mod memory;
pub mod mma;
pub mod mma_narrow;
pub mod mma_numerics;
pub mod pct;
pub mod progress;
pub mod sched;
pub mod session;
pub mod taint;
pub mod tensormap_rules;
pub mod timing;
pub mod tma;
pub mod trace;
pub mod trap;
pub mod value;
pub mod views;
pub mod waitfor;

pub use bwsim_isa::limits::{Limit, Limits};
pub use machine::{Counters, Outcome, RunOptions, RunResult};
pub use progress::Progress;
pub use sched::{AgentRef, AsyncKind, Latencies, RandomScheduler, Scheduler};
pub use session::{Session, SetupError};
pub use trace::{Event, Trace, Unit, What};
pub use trap::{CudaError, Trap};

use bwsim_isa::consts::Override;
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::typeck::Checked;
use bwsim_isa::{Diagnostic, Target};

/// Run a verified kernel with the default seeded scheduler (`opts.seed`).
pub fn run(checked: &Checked, plan: &LaunchPlan, inputs: Vec<HostTensor>, opts: &RunOptions) -> RunResult {
    let mut sched = RandomScheduler::new(opts.seed);
    run_with(checked, plan, inputs, opts, &mut sched)
}

/// Run a verified kernel with a caller-provided scheduler.
pub fn run_with(
    checked: &Checked,
    plan: &LaunchPlan,
    inputs: Vec<HostTensor>,
    opts: &RunOptions,
    sched: &mut dyn Scheduler,
) -> RunResult {
    // The caller's limits over the launch section's.
    let opts = &RunOptions {
        limits: opts.limits.or(plan.limits),
        ..opts.clone()
    };
    match lower::lower(checked, plan) {
        Ok(prog) => machine::execute(&prog, plan.grid, inputs, opts, sched),
        Err(diags) => RunResult {
            tensors: inputs,
            outcome: Outcome::Error,
            trap: None,
            diagnostics: diags,
            trace: Trace::default(),
            counters: Counters::default(),
        },
    }
}

/// Parse, verify, launch (with the kernel's `launch { }` section, inputs drawn for `seed`) and
/// run `.tile` source with scheduler seed `seed`. Errors are the parse, verify or launch
/// diagnostics; verifier errors whose hardware behaviour is defined (`verify::CONTINUES`) do
/// not stop the run and lead its diagnostics.
pub fn run_source(src: &str, overrides: &[Override], seed: u64) -> Result<RunResult, Vec<Diagnostic>> {
    run_source_with(
        src,
        overrides,
        None,
        &RunOptions {
            seed,
            ..RunOptions::default()
        },
    )
}

/// [`run_source`] with a target and run options.
pub fn run_source_with(
    src: &str,
    overrides: &[Override],
    target: Option<Target>,
    opts: &RunOptions,
) -> Result<RunResult, Vec<Diagnostic>> {
    let kernel = session::parse(src)?;
    let s = Session::new(&kernel, target, overrides, session::Verify::ToRun)?.with_limits(opts.limits);
    let inputs = s.inputs(opts.seed)?;
    let mut r = run(&s.checked, &s.plan, inputs, opts);
    // Verifier errors whose hardware behaviour is defined come first among the findings.
    r.diagnostics.splice(0..0, s.continuing_errors().cloned());
    Ok(r)
}
