//! Helpers shared by the simulator's integration tests: run `.tile` text with constant
//! overrides, read tensors back, and compare against references written in the tests.
#![allow(dead_code)]

use bwsim_isa::consts::Override;
use bwsim_isa::launch::{HostTensor, LaunchPlan};
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, SourceFile, Target};
use bwsim_sim::check;
use bwsim_sim::explore::{ExploreOptions, Finding};
use bwsim_sim::{run_source_with, RunOptions, RunResult};

/// `NAME=VALUE` pairs as the constant overrides the front end takes.
pub fn overrides<V: ToString>(consts: &[(&str, V)]) -> Vec<Override> {
    consts
        .iter()
        .map(|(n, v)| Override {
            name: n.to_string(),
            value: v.to_string(),
        })
        .collect()
}

/// Run `.tile` source with `NAME=VALUE` overrides; panics with rendered diagnostics when the
/// kernel does not parse, verify or launch.
pub fn run_opts(src: &str, consts: &[(&str, &str)], target: Option<Target>, opts: &RunOptions) -> RunResult {
    match run_source_with(src, &overrides(consts), target, opts) {
        Ok(r) => r,
        Err(d) => panic!(
            "kernel does not run:\n{}",
            diag::render(&d, &SourceFile::new("test.tile", src))
        ),
    }
}

/// [`run_seed`] with seed 1.
pub fn run(src: &str, consts: &[(&str, &str)]) -> RunResult {
    run_seed(src, consts, 1)
}

/// Runs the default launch of `src` with the schedule of `seed`.
pub fn run_seed(src: &str, consts: &[(&str, &str)], seed: u64) -> RunResult {
    run_opts(
        src,
        consts,
        None,
        &RunOptions {
            seed,
            ..RunOptions::default()
        },
    )
}

/// Times `.tile` source with `NAME=VALUE` overrides; panics with rendered diagnostics when the
/// kernel does not time.
pub fn time_with(
    src: &str,
    consts: &[(&str, i64)],
    opts: &bwsim_sim::timing::TimeOptions,
) -> bwsim_sim::timing::Timing {
    match bwsim_sim::timing::time_source(src, &overrides(consts), opts) {
        Ok(t) => t,
        Err(d) => panic!(
            "kernel does not time:\n{}",
            diag::render(&d, &SourceFile::new("test.tile", src))
        ),
    }
}

/// Asserts that `.tile` source parses but does not verify, with a diagnostic whose message
/// contains `says`; the verifier's diagnostics.
#[track_caller]
pub fn rejected(src: &str, says: &str) -> Vec<bwsim_isa::Diagnostic> {
    let k = bwsim_isa::parser::parse(src).expect("parses");
    let (c, d) = verify(&k, &VerifyOptions::default());
    assert!(c.is_none(), "verifies: {src}");
    assert!(d.iter().any(|d| d.message.contains(says)), "no `{says}` in {d:?}");
    d
}

/// The cycles [`time_with`] predicts.
pub fn cycles_with(src: &str, consts: &[(&str, i64)], opts: &bwsim_sim::timing::TimeOptions) -> f64 {
    time_with(src, consts, opts).report.cycles
}

/// Rendered diagnostics of a run (for assertion messages).
pub fn rendered(src: &str, r: &RunResult) -> String {
    diag::render(&r.diagnostics, &SourceFile::new("test.tile", src))
}

/// [`run`], asserting that the run completed without error diagnostics.
#[track_caller]
pub fn run_ok(src: &str, consts: &[(&str, &str)]) -> RunResult {
    let r = run(src, consts);
    assert_ok(src, &r);
    r
}

/// Assert the run completed without error diagnostics.
#[track_caller]
pub fn assert_ok(src: &str, r: &RunResult) {
    assert!(
        r.ok(),
        "run did not complete cleanly ({:?}):\n{}",
        r.outcome,
        rendered(src, r)
    );
}

pub fn tensor<'a>(r: &'a RunResult, name: &str) -> &'a HostTensor {
    r.tensor(name).unwrap_or_else(|| panic!("no tensor `{name}`"))
}

/// Every element as f64.
pub fn values(t: &HostTensor) -> Vec<f64> {
    (0..t.numel()).map(|i| t.get(i)).collect()
}

/// Every element's bits.
pub fn bits(t: &HostTensor) -> Vec<u64> {
    (0..t.numel()).map(|i| t.get_bits(i)).collect()
}

/// 1-based (line, column) of the first occurrence of `needle` in `src`.
pub fn line_col_of(src: &str, needle: &str) -> (usize, usize) {
    let off = src
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in source"));
    SourceFile::new("t", src).line_col(off)
}

/// `src` parsed, verified with `consts` (on the kernel's first target) and its launch resolved,
/// handed to `f`; panics with the rendered diagnostics when a step fails.
pub fn with_checked<T>(src: &str, consts: &[(&str, &str)], f: impl FnOnce(&Checked, &LaunchPlan) -> T) -> T {
    let k = bwsim_isa::parser::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}"));
    let (checked, d) = verify(
        &k,
        &VerifyOptions {
            target: None,
            overrides: overrides(consts),
        },
    );
    let checked =
        checked.unwrap_or_else(|| panic!("verify: {}", diag::render(&d, &SourceFile::new("t", src))));
    let plan =
        bwsim_isa::launch::resolve(&checked, k.launch.as_ref().expect("launch")).expect("launch resolves");
    f(&checked, &plan)
}

/// The input tensors a run started from (drawn from the launch spec for `seed`, independent of
/// the simulator).
pub fn inputs(src: &str, consts: &[(&str, &str)], seed: u64) -> Vec<HostTensor> {
    with_checked(src, consts, |_, plan| {
        bwsim_isa::launch::materialize(plan, seed).expect("within the memory limit")
    })
}

/// Largest |got - want| / (atol + rtol * |want|) over all elements (<= 1 passes).
pub fn worst(got: &[f64], want: &[f64], atol: f64, rtol: f64) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / (atol + rtol * w.abs()))
        .fold(0.0, f64::max)
}

/// Run `.tile` source (its launch inputs drawn for seed 1) under a caller-provided scheduler.
pub fn run_sched(src: &str, consts: &[(&str, &str)], sched: &mut dyn bwsim_sim::Scheduler) -> RunResult {
    with_checked(src, consts, |checked, plan| {
        let inputs = bwsim_isa::launch::materialize(plan, 1).expect("within the memory limit");
        bwsim_sim::run_with(checked, plan, inputs, &RunOptions::default(), sched)
    })
}

/// The hazard checker's findings over `schedules` schedules of `src` with `consts` (seeds from
/// 0, two jobs, every schedule explored); panics with the rendered diagnostics when the kernel
/// does not run.
pub fn explore(src: &str, consts: &[(&str, &str)], schedules: u64) -> Vec<Finding> {
    let p = check::prepare(src, &overrides(consts), None).unwrap_or_else(|d| {
        panic!(
            "does not run:\n{}",
            diag::render(&d, &SourceFile::new("t.tile", src))
        )
    });
    p.explore(
        &ExploreOptions {
            first_seed: 0,
            schedules,
            jobs: 2,
            stop_on_first_error: false,
        },
        |_, _| {},
    )
    .findings
}

/// A scheduler whose choices are scripted: always the first runnable agent, one piece per TMA
/// copy, and per-kind latencies taken from queues (10 once a queue runs dry).
#[derive(Default)]
pub struct Scripted {
    pub latencies: std::collections::HashMap<bwsim_sim::AsyncKind, std::collections::VecDeque<u64>>,
}

impl Scripted {
    pub fn with(mut self, kind: bwsim_sim::AsyncKind, lat: &[u64]) -> Scripted {
        self.latencies
            .entry(kind)
            .or_default()
            .extend(lat.iter().copied());
        self
    }
}

impl bwsim_sim::Scheduler for Scripted {
    fn pick(&mut self, _runnable: &[bwsim_sim::AgentRef]) -> usize {
        0
    }
    fn latency(&mut self, kind: bwsim_sim::AsyncKind) -> u64 {
        self.latencies
            .get_mut(&kind)
            .and_then(|q| q.pop_front())
            .unwrap_or(10)
    }
    fn pieces(&mut self, _max: u32) -> u32 {
        1
    }
    fn tiebreak(&mut self) -> u64 {
        0
    }
}

/// When the run first resumed an agent blocked on `on` (`tma.store_wait`, `wgmma.wait`, ...).
pub fn resumed_at(r: &RunResult, on: &str) -> Option<u64> {
    r.trace
        .events
        .iter()
        .find(|e| matches!(e.what, bwsim_sim::What::Resumed { on: o } if o == on))
        .map(|e| e.time)
}

/// When CTA `cta` first recorded a trace event that `what` accepts.
pub fn cta_event_at(r: &RunResult, cta: u32, what: impl Fn(&bwsim_sim::What) -> bool) -> Option<u64> {
    r.trace
        .events
        .iter()
        .find(|e| e.cta == cta && what(&e.what))
        .map(|e| e.time)
}

/// `base` with every issue cost and the CTA launch gap at zero, so that hand computations
/// only involve the latencies and bandwidths a test is about. Strict time order.
pub fn quiet(base: &bwsim_sim::chips::Chip) -> bwsim_sim::timing::TimeOptions {
    let mut o = bwsim_sim::timing::TimeOptions::new(&bwsim_sim::chips::Chip {
        scalar_op_cycles: 0.0,
        branch_cycles: 0.0,
        mbarrier_op_cycles: 0.0,
        fence_async_cycles: 0.0,
        tcgen05_fence_cycles: 0.0,
        tma_issue_cycles: 0.0,
        mma_issue_cycles: 0.0,
        bar_sync_cycles: 0.0,
        cta_launch_cycles: 0.0,
        ..*base
    });
    o.lookahead_cycles = 0.0;
    o
}

/// The Blackwell figures the timing suites' hand computations were written against (the
/// chip table's estimates before its calibration), so that they test the cost rules, not the
/// table; no tcgen05 issue back-pressure unless a test sets it.
pub const B200_HAND: bwsim_sim::chips::Chip = bwsim_sim::chips::Chip {
    clock_mhz: 1856.0,
    l2_bytes_per_cycle: 10_650.0,
    hbm_bytes_per_s: 6.9e12,
    tma_l2_latency: 550.0,
    tma_hbm_latency: 840.0,
    tma_bytes_per_cycle_sm: 128.0,
    mma_latency: 64.0,
    commit_latency: 16.0,
    kernel_overhead_us: 0.0,
    tcgen05_queue_instrs: 0.0,
    ..bwsim_sim::chips::B200
};
