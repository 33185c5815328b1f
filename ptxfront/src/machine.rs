//! The PTX front end's machine: a kernel's warps as the agents of bwsim's hazard checker, with
//! its asynchronous instructions (mbarriers, proxy fences, bulk tensor copies and their
//! groups) run as the simulator's machine runs the `.tile` operations they stand for.
//!
//! Each warp of a CTA is one agent: a partition of [`bwsim_sim::check::hazards::CtaHb`], with
//! its own vector-clock component. A scheduler of the simulator ([`Scheduler`]; seeded, so a
//! seed is a schedule) picks which warp steps next. A warp's step runs each of its live lanes
//! with the executor of [`crate::exec`] until the lane stops at a warp collective (resolved at
//! once, as there), a CTA barrier, or an instruction only the machine runs
//! ([`AgentOp`]); the machine then runs the first agent instruction that can run (lanes of a
//! warp may stop at different ones) for the lanes stopped at it. The
//! shared-memory loads and stores the lanes made on the way are handed to the checker as the
//! warp's generic-proxy accesses.
//!
//! What each instruction is to the checker (docs/semantics.md, "The PTX front end"):
//! - `mbarrier.init` / `arrive[.expect_tx]` / `expect_tx`: the barrier state machine of
//!   [`bwsim_sim::mbarrier::Mbar`], and the checker's `bar_init` / `bar_update` releases by the
//!   warp; `mbarrier.try_wait.parity` / `test_wait.parity` that sees the phase acquires it (a
//!   wait that fails parks the warp at that wait until the barrier's phase moves, so a spin
//!   loop costs one step per phase); each wait asks the checker whether its parity aliases a
//!   phase the barrier has moved past ([`phase`]). A CTA in which no warp can step and nothing is in flight
//!   stops the run ([`stuck`]: a `tx-mismatch` or a `deadlock`).
//! - `fence.proxy.async`: the warp's proxy fence (`fence.async_shared` of `.tile`).
//! - `cp.async.bulk.tensor` load: an asynchronous operation issued by the warp; it lands after
//!   a latency the scheduler draws, as an async-proxy write of the box completing its bytes on
//!   the mbarrier (the TMA unit's component for that barrier).
//! - `cp.async.bulk.tensor` store: an asynchronous read of the box by the warp's store unit,
//!   then the global write; `cp.async.bulk.commit_group` closes the warp's open bulk group and
//!   `cp.async.bulk.wait_group[.read] N` waits until at most N committed groups are pending,
//!   observing the reads (`.read`) or the whole stores.
//! - `cp.async.{ca,cg}` (non-bulk, [`cp_async`]): a copy issued by the warp's lanes whose
//!   shared-memory writes land later, as writes of the warp's `cp.async` component;
//!   `cp.async.commit_group` / `wait_group` / `wait_all` and `cp.async.mbarrier.arrive` as the
//!   tile machine runs them.
//! - `wgmma.mma_async` ([`wgmma`]): each warp of the warpgroup computes its 16 rows of the
//!   accumulator when it issues the MMA (operands through their matrix descriptors or A's
//!   fragment registers, the simulator's MMA arithmetic), the reads of shared memory the
//!   warp's wgmma unit's; `wgmma.commit_group` / `wait_group` as the tile machine runs them.
//!   observing the reads (`.read`) or the whole stores. A TMA reduction
//!   (`cp.reduce.async.bulk.tensor`) is a store whose global write combines each element
//!   ([`crate::tensormap::reduce_into`]); `tile::gather4` / `tile::scatter4` are a load or a
//!   store of four rows by index ([`TensorMap::rows4`]).
//! - `bar.sync` / `barrier.sync`: the warps that take part join their clocks.
//! - `fence.mbarrier_init`: the checker's init fence of the warp; `prefetch.tensormap` has no
//!   effect.
//! - `tcgen05.*` ([`tcgen05`]): tensor memory, its allocation, and the CTA's tensor pipe, on
//!   which `tcgen05.mma` reads its operands through their matrix descriptors and
//!   `tcgen05.commit` arrives on an mbarrier, in issue order; `tcgen05.ld/st` are the warp's
//!   tensor-memory accesses.
//! - clusters ([`cluster`]): the CTAs of a cluster run together, each warp an agent of its
//!   CTA's checker; distributed shared memory, remote arrivals, the cluster barrier, multicast
//!   copies and commits, and cluster launch control.
//!
//! Global memory ([`global`]): each CTA's global loads, stores, atomics and memory-ordering
//! fences, checked when its cluster is done against those of the CTAs before it
//! (`global-race`; the CTAs of one cluster are not checked against each other). The bulk
//! tensor copies' global accesses are not checked.

use crate::exec::{complete_barriers, prepare, run_ctas, Arg, Cta, Launch, St, Stats, Thread};
use crate::parse::Space;
use crate::program::{AgentOp, MemRef, Op, Program, Val};
use crate::tensormap::{BoxElem, TensorMap};
use crate::Error;
use bwsim_isa::{Code, Diagnostic, Span};
use bwsim_sim::check::hazards::{Actor, CtaHb};
use bwsim_sim::check::hb::{Hazard, HazardKind, Kind, Proxy, Rec};
use bwsim_sim::mbarrier::Mbar;
use bwsim_sim::sched::{AgentRef, AsyncKind, RandomScheduler, Scheduler};
use std::collections::{BTreeMap, BTreeSet, HashMap};

mod cluster;
mod cp_async;
mod global;
mod phase;
mod stuck;
mod tcgen05;
mod tensormaps;
mod wgmma;

pub use tcgen05::{Desc, InstrDesc, OperandError};

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// The schedule's seed.
    pub seed: u64,
    /// Whether the hazard checker watches the run.
    pub check: bool,
}

/// One hazard the checker found: its code, the instruction of the access that revealed it
/// (the primary label) and of the access it conflicts with, and the rendered diagnostic
/// (spans into the PTX text).
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub code: Code,
    pub pc: usize,
    pub with: Vec<usize>,
    pub diagnostic: Diagnostic,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub stats: Stats,
    pub findings: Vec<Finding>,
}

/// Runs `p` over launch `l` on the machine; `bufs` are the global buffers the arguments and
/// tensor maps point into, read and written in place.
pub fn run(p: &Program, l: &Launch, bufs: &mut [Vec<u8>], opts: &Options) -> Result<Outcome, Error> {
    let (stats, findings) = run_to_stop(p, l, bufs, opts);
    Ok(Outcome {
        stats: stats?,
        findings,
    })
}

/// [`run`], with the findings made before the run stopped, if it stopped (a stuck CTA's
/// `deadlock`, a trap): the tile machine's run reports both.
pub fn run_to_stop(
    p: &Program,
    l: &Launch,
    bufs: &mut [Vec<u8>],
    opts: &Options,
) -> (Result<Stats, Error>, Vec<Finding>) {
    let mut findings = Vec::new();
    let stats = (|| {
        let params = prepare(p, l, bufs)?;
        for a in &l.args {
            if let Arg::TensorMap(t) = a {
                t.validate()
                    .map_err(|e| Error::Launch(format!("tensor map: {e}")))?;
            }
        }
        let mut sched = RandomScheduler::new(opts.seed);
        let ctas: usize = l.grid.iter().map(|&g| g as usize).product();
        let mut global = global::GlobalCheck::new(ctas);
        let mut clc = cluster::Clc::new(l);
        run_ctas(p, l, &params, bufs, opts.check, |mut cta, members| {
            if ctas == 1 {
                // No other CTA to race with.
                cta.glog = None;
            }
            if !clc.start(members[0]) {
                // A `clusterlaunchcontrol.try_cancel` cancelled this cluster's launch.
                return Ok(());
            }
            let mut m = Machine::new(cta, members, opts.check, &mut sched);
            m.clc = std::mem::take(&mut clc);
            let r = m.run();
            clc = std::mem::take(&mut m.clc);
            if r.is_ok() {
                // Each CTA's global events, checked against the CTAs of the clusters before.
                for rank in 0..members.len() {
                    m.switch(rank);
                    if let Some(events) = m.cta.glog.take() {
                        let [x, y, z] = m.cta.ctaid;
                        let id = (x + l.grid[0] * (y + l.grid[1] * z)) as usize;
                        global.cta(p, id, &events, &mut m.findings);
                    }
                }
            }
            findings.append(&mut m.findings);
            r
        })
    })();
    (stats, findings)
}

/// One checked schedule (`seed`) on a copy of `bufs`: its findings, ending with the finding
/// that stopped it where the kernel stopped (a `deadlock` where no warp can go on, a failed
/// `device-assert`, an `unspecified-result` lane), as the tile machine's check reports them;
/// an error for any other stop.
pub fn check_seed(p: &Program, l: &Launch, bufs: &[Vec<u8>], seed: u64) -> Result<Vec<Finding>, Error> {
    let mut b = bufs.to_vec();
    let (r, mut findings) = run_to_stop(p, l, &mut b, &Options { seed, check: true });
    match r {
        Ok(_) => Ok(findings),
        Err(Error::Stuck(f) | Error::Trap(f)) => {
            findings.push(*f);
            Ok(findings)
        }
        Err(e @ Error::Unspecified { pc, .. }) => {
            // A lane whose result no public source states is the schedule's finding, as the
            // tile machine's check reports it.
            let diagnostic = Diagnostic::error(
                Code::UnspecifiedResult,
                e.to_string(),
                e.span(),
                "the run stopped here",
            );
            findings.push(Finding {
                code: Code::UnspecifiedResult,
                pc,
                with: Vec::new(),
                diagnostic,
            });
            Ok(findings)
        }
        Err(e) => Err(e),
    }
}

/// Runs `schedules` schedules (seeds 0, 1, ...) with the checker, each on a fresh copy of
/// `bufs` ([`check_seed`]), and returns each distinct finding once (by code and instructions), in the order
/// they were first found.
pub fn check(p: &Program, l: &Launch, bufs: &[Vec<u8>], schedules: u64) -> Result<Vec<Finding>, Error> {
    check_jobs(p, l, bufs, schedules, 1)
}

/// One schedule's findings, or why it stopped.
type Seeded = Result<Vec<Finding>, Error>;

/// [`check`] on `jobs` threads (thread `j` runs seeds `j`, `j + jobs`, ...): the same
/// findings in the same order.
pub fn check_jobs(
    p: &Program,
    l: &Launch,
    bufs: &[Vec<u8>],
    schedules: u64,
    jobs: usize,
) -> Result<Vec<Finding>, Error> {
    let n = schedules.max(1);
    let jobs = (jobs.max(1) as u64).min(n);
    let one = |seed: u64| check_seed(p, l, bufs, seed);
    let mut by_seed: Vec<Option<Seeded>> = (0..n).map(|_| None).collect();
    if jobs == 1 {
        for seed in 0..n {
            let r = one(seed);
            let stop = r.is_err();
            by_seed[seed as usize] = Some(r);
            if stop {
                break;
            }
        }
    } else {
        let parts: Vec<Vec<(u64, Seeded)>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..jobs)
                .map(|j| {
                    s.spawn(move || {
                        (j..n)
                            .step_by(jobs as usize)
                            .map(|seed| (seed, one(seed)))
                            .collect()
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        for (seed, r) in parts.into_iter().flatten() {
            by_seed[seed as usize] = Some(r);
        }
    }
    let mut out: Vec<Finding> = Vec::new();
    for r in by_seed.into_iter().flatten() {
        for f in r? {
            if !out
                .iter()
                .any(|g| g.code == f.code && g.pc == f.pc && g.with == f.with)
            {
                out.push(f);
            }
        }
    }
    Ok(out)
}

/// The source file and line of instruction `pc` (its `.loc`), the file named as the PTX's
/// `.file` directive names it.
pub fn source_line(p: &Program, pc: usize) -> Option<(String, u32)> {
    let l = p.ins.get(pc)?.loc?;
    Some((p.files.get(&l.file)?.clone(), l.line))
}

/// An asynchronous operation in flight, in the CTA of cluster rank `cta`.
struct Flight {
    due: u64,
    tie: u64,
    cta: usize,
    work: Work,
}

enum Work {
    /// A bulk tensor load landing in shared memory and completing its bytes on `bar` of the
    /// CTA of rank `bar_cta` (its own, or a `.cta_group::2` load's pair CTA).
    Load {
        op: u32,
        bar: u32,
        bar_cta: usize,
        /// The barrier's phase when the copy was issued.
        phase: u64,
        pc: usize,
        map: usize,
        elems: Vec<BoxElem>,
    },
    /// A bulk tensor store (a reduction where `reduce` says) of warp `warp`'s bulk group
    /// `group`.
    Store {
        op: u32,
        warp: usize,
        group: u64,
        map: usize,
        elems: Vec<BoxElem>,
        reduce: Option<bwsim_isa::value_types::TmaReduceOp>,
    },
    /// The 16-byte response of a `clusterlaunchcontrol.try_cancel` issued at `pc`, landing at
    /// shared byte `dst` and completing on the barrier at `bar` ([`cluster`]).
    Clc {
        op: u32,
        bar: u32,
        pc: usize,
        dst: u32,
        response: u64,
    },
    /// Work for the tensor pipe, issued at `pc` ([`tcgen05`]).
    Pipe {
        op: u32,
        pc: usize,
        work: tcgen05::PipeWork,
    },
    /// A warp's non-bulk `cp.async` copies landing ([`cp_async`]).
    Cp(cp_async::Landing),
    /// An MMA of warp `warp`'s completing ([`wgmma`]).
    Wg { warp: usize },
}

/// The machine of one cluster (of one CTA without clusters): the fields from `cta` to
/// `carrived` are the state of the CTA whose rank is `rank`, the others' wait in `away`
/// ([`cluster`]).
struct Machine<'a, 's> {
    cta: Cta<'a>,
    th: Vec<Thread>,
    /// The cluster rank of the CTA whose state the machine holds now.
    rank: usize,
    /// The state of the cluster's other CTAs, by rank (`None` at `rank`).
    away: Vec<Option<cluster::Local>>,
    /// The checker's id of each CTA of the cluster, by rank (its linear index in the grid).
    ids: Vec<u32>,
    /// The cluster barrier: its phase, and what the arrivals of that phase released.
    cbar: cluster::ClusterBar,
    /// Per thread of this CTA: the cluster barrier phase it arrived in and has not waited for.
    carrived: Vec<Option<u64>>,
    /// Which clusters have started or been cancelled (cluster launch control).
    clc: cluster::Clc,
    warps: usize,
    sched: &'s mut dyn Scheduler,
    hb: Option<CtaHb>,
    bars: HashMap<u32, Mbar>,
    /// Each warp's waits parked after they failed: the wait's pc, to the barrier and the phase
    /// it saw. A warp whose lanes wait at two places (an elected lane at one barrier, the
    /// others at the next) parks both, so that neither keeps it runnable.
    parked: Vec<BTreeMap<usize, (u32, u64)>>,
    flights: Vec<Flight>,
    now: u64,
    /// Per warp: the open bulk group's number, and the stores pending by group.
    open_group: Vec<u64>,
    pending: Vec<BTreeMap<u64, u32>>,
    findings: Vec<Finding>,
    /// The instruction of the last recorded generic store to each shared granule (4 bytes, the
    /// checker's), and its warp (what tells a replicated store, [`Machine::record_generic`]).
    last_store: HashMap<u32, (usize, usize)>,
    /// Tensor memory.
    tmem: tcgen05::Tmem,
    /// When the last operation issued to the tensor pipe runs (the pipe runs them in order).
    pipe_due: u64,
    /// The tensor core's arithmetic.
    arith: bwsim_sim::mma_numerics::Arith,
    /// Each warp's non-bulk `cp.async` groups and arrivals.
    cp: Vec<cp_async::CpWarp>,
    /// Tensor maps built on the device.
    dmaps: tensormaps::DeviceMaps,
    /// Each warp's wgmma groups, and the warpgroup MMA's arithmetic.
    wg: Vec<wgmma::WgWarp>,
    wg_arith: bwsim_sim::mma_numerics::Arith,
}

impl<'a, 's> Machine<'a, 's> {
    /// The machine of the cluster whose CTAs are `members` (by rank), `cta` that of rank 0.
    fn new(cta: Cta<'a>, members: &[[u32; 3]], check: bool, sched: &'s mut dyn Scheduler) -> Machine<'a, 's> {
        let th = cta.threads();
        let warps = th.len().div_ceil(32);
        let new_hb = || {
            check.then(|| {
                let mut hb = CtaHb::new(cta.shared.len());
                for w in 1..warps {
                    hb.fork(0, w);
                }
                hb
            })
        };
        let hb = new_hb();
        let away = (0..members.len())
            .map(|r| (r > 0).then(|| cluster::Local::new(&cta, members[r], new_hb())))
            .collect();
        let g = cta.l.grid;
        let ids = members
            .iter()
            .map(|c| c[0] + g[0] * (c[1] + g[1] * c[2]))
            .collect();
        cta.stats.threads += (th.len() * members.len()) as u64;
        cta.stats.ctas += members.len() as u64;
        Machine {
            cta,
            carrived: vec![None; th.len()],
            th,
            rank: 0,
            away,
            ids,
            cbar: cluster::ClusterBar::default(),
            clc: cluster::Clc::default(),
            warps,
            sched,
            hb,
            bars: HashMap::new(),
            parked: vec![BTreeMap::new(); warps],
            flights: Vec::new(),
            now: 0,
            open_group: vec![0; warps],
            pending: vec![BTreeMap::new(); warps],
            findings: Vec::new(),
            last_store: HashMap::new(),
            tmem: tcgen05::Tmem::default(),
            pipe_due: 0,
            arith: bwsim_sim::mma_numerics::MmaNumerics::default().tcgen05,
            cp: (0..warps).map(|_| cp_async::CpWarp::default()).collect(),
            wg: (0..warps).map(|_| wgmma::WgWarp::default()).collect(),
            wg_arith: bwsim_sim::mma_numerics::MmaNumerics::default().wgmma,
            dmaps: tensormaps::DeviceMaps::default(),
        }
    }

    fn lanes(&self, w: usize) -> std::ops::Range<usize> {
        w * 32..(w * 32 + 32).min(self.th.len())
    }

    fn rt(&self, pc: usize, m: String) -> Error {
        self.cta.rt(pc, m)
    }

    fn run(&mut self) -> Result<(), Error> {
        let n = self.away.len();
        loop {
            for r in 0..n {
                self.switch(r);
                self.release_barriers();
            }
            self.release_cluster();
            let due = self.now;
            while let Some(i) = self.next_flight(Some(due)) {
                let f = self.flights.swap_remove(i);
                self.switch(f.cta);
                self.land(f)?;
            }
            let mut runnable: Vec<(usize, usize)> = Vec::new();
            for r in 0..n {
                self.switch(r);
                runnable.extend((0..self.warps).filter(|&w| self.runnable(w)).map(|w| (r, w)));
            }
            if runnable.is_empty() {
                if let Some(i) = self.next_flight(None) {
                    let f = self.flights.swap_remove(i);
                    self.now = self.now.max(f.due);
                    self.switch(f.cta);
                    self.land(f)?;
                    continue;
                }
                let Some(r) = (0..n).find(|&r| {
                    self.switch(r);
                    self.th.iter().any(|t| t.st != St::Done)
                }) else {
                    return self.finish();
                };
                self.switch(r);
                return Err(self.stuck());
            }
            let refs: Vec<AgentRef> = runnable
                .iter()
                .map(|&(r, w)| AgentRef {
                    cta: r as u32,
                    agent: w as u32,
                })
                .collect();
            let (r, w) = runnable[self.sched.pick(&refs).min(runnable.len() - 1)];
            self.switch(r);
            self.now += 1;
            self.warp_step(w)?;
        }
    }

    /// The flight to land next: the earliest (ties by the drawn tie-breaker), among those due
    /// by `by` if given.
    fn next_flight(&self, by: Option<u64>) -> Option<usize> {
        self.flights
            .iter()
            .enumerate()
            .filter(|(_, f)| by.is_none_or(|t| f.due <= t))
            .min_by_key(|(_, f)| (f.due, f.tie))
            .map(|(i, _)| i)
    }

    /// Whether some lane of warp `w` stopped at an agent instruction.
    fn at_agent(&self, w: usize) -> bool {
        self.lanes(w).any(|t| self.th[t].st == St::Agent)
    }

    /// The first (lowest pc) agent instruction warp `w`'s lanes stopped at that can run now:
    /// not a wait parked on an unmoved barrier, nor a bulk wait with groups pending. Lanes of
    /// one warp can stop at different ones (an elected lane still issuing copies while the
    /// others wait at the next iteration's barrier).
    fn ready_pc(&self, w: usize) -> Option<usize> {
        let pcs: BTreeSet<usize> = self
            .lanes(w)
            .filter(|&t| self.th[t].st == St::Agent)
            .map(|t| self.th[t].pc)
            .collect();
        pcs.into_iter().find(|&pc| match self.cta.p.ins[pc].op {
            Op::Agent(AgentOp::BulkWait { n, .. }) => self.bulk_done(w, n),
            Op::Agent(AgentOp::MbarWait { .. }) => !self.is_parked(w, pc),
            Op::Agent(AgentOp::CpAsync(ref c)) => self.cp_ready(w, c),
            Op::Agent(AgentOp::Wgmma(ref c)) => self.wg_ready(w, c),
            Op::Agent(AgentOp::ClusterWait) => self.cluster_waited(w, pc),
            _ => true,
        })
    }

    fn runnable(&self, w: usize) -> bool {
        let mut lanes = self.lanes(w);
        if lanes.clone().any(|t| self.th[t].st == St::Run) {
            return true;
        }
        if self.at_agent(w) {
            return self.ready_pc(w).is_some();
        }
        // At a collective, or done, or at a CTA barrier.
        lanes.any(|t| self.th[t].st == St::Sync(None))
    }

    /// Whether warp `w`'s wait at `pc` failed on a barrier whose phase has not moved since.
    fn is_parked(&self, w: usize, pc: usize) -> bool {
        self.parked[w]
            .get(&pc)
            .is_some_and(|&(bar, phase)| self.bars.get(&bar).is_some_and(|b| b.phase == phase))
    }

    /// Whether warp `w`'s committed bulk groups but the `n` most recent are complete.
    fn bulk_done(&self, w: usize, n: u64) -> bool {
        let upto = self.open_group[w].saturating_sub(n);
        self.pending[w].range(..upto).all(|(_, &c)| c == 0)
    }

    /// CTA barriers whose threads have all arrived release them; the warps that took part
    /// learn what each other knew.
    fn release_barriers(&mut self) {
        for at in complete_barriers(&self.th) {
            let warps: BTreeSet<usize> = at.iter().map(|t| t / 32).collect();
            if let Some(hb) = &mut self.hb {
                let mut join = bwsim_sim::check::hb::VClock::default();
                for &w in &warps {
                    hb.step(w);
                    join.join(&hb.part_clock(w));
                }
                for &w in &warps {
                    hb.acquire_clock(w, &join);
                }
            }
            for &t in &at {
                self.th[t].pc += 1;
                self.th[t].st = St::Run;
            }
            self.cta.stats.barriers += 1;
        }
    }

    /// One step of warp `w`: its lanes run to their next stop, then the agent instruction
    /// the first of them stopped at runs.
    fn warp_step(&mut self, w: usize) -> Result<(), Error> {
        let lanes = self.lanes(w);
        loop {
            for t in lanes.clone() {
                while self.th[t].st == St::Run {
                    self.cta.step(&mut self.th[t], t)?;
                }
            }
            let Some(first) = lanes.clone().find(|&t| self.th[t].st == St::Sync(None)) else {
                break;
            };
            if self.at_agent(w) {
                // Lanes that stopped at an agent instruction first (an elected lane's
                // `mbarrier.init`) run it before the others' collective can gather them.
                break;
            }
            let pc = self.th[first].pc;
            self.cta.collective(&mut self.th, lanes.clone(), pc)?;
        }
        self.record_generic(w);
        let Some(pc) = self.ready_pc(w) else {
            // No agent instruction, or each waits (a wait back at a barrier that has not moved
            // since it failed, a bulk wait with groups pending).
            return Ok(());
        };
        let group: Vec<usize> = lanes
            .filter(|&t| self.th[t].st == St::Agent && self.th[t].pc == pc)
            .collect();
        let Op::Agent(op) = self.cta.p.ins[pc].op.clone() else {
            return Err(self.rt(pc, "internal: not an agent instruction".into()));
        };
        if let Some(hb) = &mut self.hb {
            hb.step(w);
        }
        let advance = self.agent(w, pc, &op, &group)?;
        if advance {
            for t in group {
                self.th[t].pc += 1;
                self.th[t].st = St::Run;
            }
        }
        Ok(())
    }

    /// The shared-memory accesses warp `w`'s lanes made, to the checker.
    ///
    /// A replicated store is left out: one that writes the bytes the memory already holds,
    /// where another warp made the last recorded store to that granule. Compilers emit these where a
    /// register layout holds an element in several warps (Triton's `stmatrix` of a layout
    /// replicated across warp pairs), each warp storing the same value; no access can observe
    /// whether it happened, and the tile program the PTX was compiled from has one store of
    /// the element.
    fn record_generic(&mut self, w: usize) {
        let Some(log) = self.cta.log.as_mut() else {
            return;
        };
        let log = std::mem::take(log);
        let Some(hb) = &mut self.hb else { return };
        if log.is_empty() {
            return;
        }
        hb.step(w);
        let mut kept = Vec::with_capacity(log.len());
        for a in &log {
            let g = a.addr / bwsim_sim::check::hazards::SMEM_GRANULE;
            if !a.write && self.tmem.slots.contains(&g) {
                // A read of a tensor-memory allocation's address ([`tcgen05`]).
                continue;
            }
            if a.write {
                self.tmem.slots.remove(&g);
                let replica = a.silent && self.last_store.get(&g).is_some_and(|&(_, by)| by != w);
                if replica {
                    continue;
                }
                self.last_store.insert(g, (a.pc, w));
            }
            kept.push(a);
        }
        let kind = |a: &crate::exec::SharedAccess| if a.write { Kind::Write } else { Kind::Read };
        let mut found = Vec::new();
        match access_groups(&kept) {
            // One access per instruction (and width) of the step, as the tile machine makes
            // one per operation: the granules it writes share one shadow state.
            Some(groups) => {
                for (i, addrs) in groups {
                    let a = kept[i];
                    if let Some(h) = hb.generic_smem(w, a.pc as u32, kind(a), &addrs, a.bytes * 8) {
                        found.push(h);
                    }
                }
            }
            None => {
                for a in kept {
                    if let Some(h) = hb.generic_smem(w, a.pc as u32, kind(a), &[(a.addr, 0)], a.bytes * 8) {
                        found.push(h);
                    }
                }
            }
        }
        for h in found {
            self.report(&h);
        }
    }

    fn shared_addr(&self, t: usize, m: &MemRef, pc: usize) -> Result<u32, Error> {
        let (sp, a) = self.cta.address(&self.th[t], Some(Space::Shared), m, pc)?;
        let a = if sp == Space::Shared && a >= crate::exec::SHARED_WINDOW {
            a - crate::exec::SHARED_WINDOW
        } else {
            a
        };
        let a = self.cta.shared_offset(a);
        if a >= self.cta.shared.len() as u64 {
            return Err(self.rt(
                pc,
                format!(
                    "the shared address {a:#x} is outside the CTA's {} bytes of shared memory",
                    self.cta.shared.len()
                ),
            ));
        }
        Ok(a as u32)
    }

    fn value(&self, t: usize, v: Val, pc: usize) -> Result<u64, Error> {
        self.cta.read(&self.th[t], v, pc)
    }

    fn bar_mut(&mut self, bar: u32, pc: usize) -> Result<&mut Mbar, Error> {
        if !self.bars.contains_key(&bar) {
            return Err(self.rt(
                pc,
                format!("the mbarrier at shared byte {bar} is used without `mbarrier.init`"),
            ));
        }
        self.bars.get_mut(&bar).ok_or_else(|| Error::Runtime {
            message: "internal: mbarrier vanished".into(),
            span: Span::DUMMY,
        })
    }

    /// The error of a barrier fault at `pc`: an arrival underflow is the `over-arrival` trap
    /// the tile machine reports (a launch failure on the GPU), the others stop the run.
    fn fault(&self, pc: usize, f: bwsim_sim::mbarrier::MbarFault) -> Error {
        match f {
            bwsim_sim::mbarrier::MbarFault::Underflow { .. } => self.cta.trap(
                pc,
                Code::OverArrival,
                f.reason(),
                "arrives where no arrival is pending",
            ),
            _ => self.rt(pc, f.reason()),
        }
    }

    /// The tensor map a copy names (the address of a tensor-map parameter).
    fn tensor_map(&self, t: usize, m: &MemRef, pc: usize) -> Result<usize, Error> {
        let a = self
            .cta
            .base_addr(&self.th[t], &m.base, pc)?
            .wrapping_add(m.offset as u64);
        let (sp, off) = self.cta.locate(None, &m.base, a);
        let params = self.cta.params;
        let idx = (sp == Space::Param && off + 8 <= params.len() as u64).then(|| {
            let o = off as usize;
            u64::from_le_bytes(params[o..o + 8].try_into().unwrap_or([0xff; 8])) as usize
        });
        match idx.and_then(|k| self.cta.l.args.get(k).map(|a| (k, a))) {
            Some((k, Arg::TensorMap(_))) => Ok(k),
            _ if sp == Space::Global && self.device_map_index(a).is_some() => {
                Ok(self.device_map_index(a).unwrap_or_default())
            }
            _ => Err(self.rt(
                pc,
                format!("the copy names {a:#x}, which is not a tensor-map parameter of the launch"),
            )),
        }
    }

    fn map(&self, k: usize) -> Option<&TensorMap> {
        match self.cta.l.args.get(k) {
            Some(Arg::TensorMap(t)) => Some(t),
            _ => self.device_map_of(k).map(|(m, _)| m),
        }
    }

    /// Runs agent instruction `op` at `pc` for the lanes `group` of warp `w`; returns whether
    /// they move past it.
    fn agent(&mut self, w: usize, pc: usize, op: &AgentOp, group: &[usize]) -> Result<bool, Error> {
        match op {
            AgentOp::MbarInit { bar, count } => {
                for &t in group {
                    let a = self.shared_addr(t, bar, pc)?;
                    let n = self.value(t, *count, pc)? as i64;
                    let n = bwsim_sim::mbarrier::init_count(n).map_err(|e| self.rt(pc, e))?;
                    if self.bars.insert(a, Mbar::init(n)).is_some() {
                        self.reinit(pc, a);
                    }
                    if let Some(hb) = &mut self.hb {
                        hb.bar_init(w, a);
                    }
                }
            }
            AgentOp::MbarInval { bar } => {
                for &t in group {
                    let a = self.shared_addr(t, bar, pc)?;
                    self.bars.remove(&a);
                }
            }
            AgentOp::MbarArrive {
                bar,
                tx,
                arrive,
                state,
            } => {
                for &t in group {
                    let bytes = match tx {
                        Some(v) => Some(self.value(t, *v, pc)? as u32 as i64),
                        None => None,
                    };
                    if self.remote_arrive((w, t, pc), bar, bytes, *arrive)?.is_some() {
                        continue;
                    }
                    let a = self.shared_addr(t, bar, pc)?;
                    if let Some(bytes) = bytes {
                        let r = self.bar_mut(a, pc)?.expect_tx(bytes);
                        let flipped = r.map_err(|f| self.fault(pc, f))?;
                        if let Some(hb) = &mut self.hb {
                            hb.bar_update(a, Actor::Part(w, pc as u32), false, bytes, flipped);
                        }
                    }
                    if *arrive {
                        let phase = self.bar_mut(a, pc)?.phase;
                        let r = self.bar_mut(a, pc)?.arrive(1);
                        let flipped = r.map_err(|f| self.fault(pc, f))?;
                        if let Some(hb) = &mut self.hb {
                            hb.bar_update(a, Actor::Part(w, pc as u32), true, 0, flipped);
                        }
                        if let Some(s) = state {
                            self.cta.write(&mut self.th[t], *s, phase);
                        }
                    }
                }
            }
            AgentOp::MbarWait { p, bar, parity } => {
                for &t in group {
                    let a = self.shared_addr(t, bar, pc)?;
                    let par = self.value(t, *parity, pc)? as u32;
                    let (ok, phase) = {
                        let b = self.bar_mut(a, pc)?;
                        (b.test_wait(par), b.phase)
                    };
                    self.check_aliasing(w, pc, a, phase, par & 1);
                    self.cta.write(&mut self.th[t], *p, ok as u64);
                    if ok {
                        if let Some(hb) = &mut self.hb {
                            hb.acquire(w, a, pc as u32);
                        }
                        self.parked[w].remove(&pc);
                    } else {
                        self.parked[w].insert(pc, (a, phase));
                    }
                }
            }
            AgentOp::FenceProxyAsync => {
                if let Some(hb) = &mut self.hb {
                    hb.fence(w);
                }
            }
            AgentOp::TmaLoad {
                dst,
                tmap,
                coords,
                bar,
                gather4,
                multicast,
                pair,
            } => {
                for &t in group {
                    self.device_map(t, tmap, pc)?;
                    let (k, elems) = self.tma_box(t, tmap, dst, coords, *gather4, pc)?;
                    // A pair copy's barrier is in the pair's CTA its peer bit names, in each
                    // destination's pair.
                    let (b, pair_bit) = match pair {
                        true => self.pair_barrier(t, bar, pc).map(|(r, b)| (b, Some(r & 1)))?,
                        false => (self.shared_addr(t, bar, pc)?, None),
                    };
                    let mask = multicast.map(|m| self.value(t, m, pc)).transpose()?;
                    let op = self.hb.as_mut().map_or(0, |hb| hb.issue(w, pc as u32));
                    for r in self.multicast_ranks(mask, pc)? {
                        let work = Work::Load {
                            op,
                            bar: b,
                            bar_cta: pair_bit.map_or(r, |p| r & !1 | p),
                            // The issuing CTA's phase; a multicast's other CTAs take theirs.
                            phase: self.bars.get(&b).map_or(0, |m| m.phase),
                            pc,
                            map: k,
                            elems: elems.clone(),
                        };
                        self.multicast_to(w, r, pc, work);
                    }
                }
            }
            AgentOp::TmaStore {
                tmap,
                coords,
                src,
                scatter4,
                reduce,
            } => {
                for &t in group {
                    self.device_map(t, tmap, pc)?;
                    let (k, elems) = self.tma_box(t, tmap, src, coords, *scatter4, pc)?;
                    let op = self.hb.as_mut().map_or(0, |hb| hb.issue(w, pc as u32));
                    let group = self.open_group[w];
                    *self.pending[w].entry(group).or_default() += 1;
                    let work = Work::Store {
                        op,
                        warp: w,
                        group,
                        map: k,
                        elems,
                        reduce: *reduce,
                    };
                    self.launch(AsyncKind::TmaStoreRead, work);
                }
            }
            AgentOp::FenceMbarInit
            | AgentOp::TmemAlloc { .. }
            | AgentOp::TmemDealloc { .. }
            | AgentOp::TmemRelinquish
            | AgentOp::Mma { .. }
            | AgentOp::Commit { .. }
            | AgentOp::TmemCp { .. }
            | AgentOp::TmemLd { .. }
            | AgentOp::TmemSt { .. } => self.tcgen05(w, pc, op, group)?,
            AgentOp::CpAsync(c) => return self.cp_async(w, pc, c, group),
            AgentOp::Tensormap(op) => self.tensormap_op(pc, op, group)?,
            AgentOp::Wgmma(c) => return self.wgmma(w, pc, c, group),
            AgentOp::Dsmem(op) => self.dsmem(w, pc, op, group)?,
            AgentOp::ClusterArrive { relaxed } => self.cluster_arrive(w, pc, *relaxed, group)?,
            AgentOp::ClcTryCancel { dst, bar, multicast } => {
                self.clc_try_cancel(w, pc, (dst, bar, *multicast), group)?
            }
            AgentOp::ClusterWait => {
                if !self.cluster_wait(w, pc, group)? {
                    return Ok(false);
                }
            }
            AgentOp::BulkCommit => self.open_group[w] += 1,
            AgentOp::BulkWait { n, read } => {
                if !self.bulk_done(w, *n) {
                    return Ok(false);
                }
                if let Some(hb) = &mut self.hb {
                    hb.store_wait(w, !read);
                }
            }
        }
        Ok(true)
    }

    /// The box a bulk tensor copy of thread `t` moves: the tensor map `tmap` names (its index)
    /// and the box's elements at the coordinates `coords` (`rows4`: a gather4's or scatter4's
    /// column and four rows, [`TensorMap::rows4`]), at the shared address `smem` names, checked
    /// to lie in shared memory and in the map's buffer.
    fn tma_box(
        &self,
        t: usize,
        tmap: &MemRef,
        smem: &MemRef,
        coords: &[Val],
        rows4: bool,
        pc: usize,
    ) -> Result<(usize, Vec<BoxElem>), Error> {
        let k = self.tensor_map(t, tmap, pc)?;
        let s = self.shared_addr(t, smem, pc)?;
        let cs = coords
            .iter()
            .map(|c| self.value(t, *c, pc).map(|v| v as u32 as i32 as i64))
            .collect::<Result<Vec<_>, _>>()?;
        let elems = match self.map(k) {
            Some(m) if rows4 => {
                let scatter = matches!(self.cta.p.ins[pc].op, Op::Agent(AgentOp::TmaStore { .. }));
                m.rows4(&cs, s, scatter).map_err(|e| self.rt(pc, e))?
            }
            Some(m) => m.elements(&cs, s),
            None => Vec::new(),
        };
        // A device-built map starts inside its buffer.
        let mut elems = elems;
        if let Some(&(_, base)) = self.device_map_of(k) {
            elems
                .iter_mut()
                .filter_map(|e| e.global.as_mut())
                .for_each(|g| *g += base);
        }
        self.in_bounds(&elems, k, pc)?;
        Ok((k, elems))
    }

    /// Puts `work` in flight: it lands the latency of `kind` from now.
    fn launch(&mut self, kind: AsyncKind, work: Work) {
        let due = self.now + self.sched.latency(kind);
        let tie = self.sched.tiebreak();
        self.flights.push(Flight {
            due,
            tie,
            cta: self.rank,
            work,
        });
    }

    /// Checks that a box's shared bytes lie in the CTA's shared memory and its global bytes in
    /// the tensor map's buffer.
    fn in_bounds(&self, elems: &[BoxElem], k: usize, pc: usize) -> Result<(), Error> {
        let Some(m) = self.map(k) else { return Ok(()) };
        let eb = m.elem_bytes as u64;
        let smem = self.cta.shared.len() as u64;
        let glob = self.cta.bufs.get(m.buffer).map_or(0, |b| b.len() as u64);
        for e in elems {
            if e.smem as u64 + eb > smem {
                return Err(self.rt(
                    pc,
                    format!("the box reaches shared byte {}, past the CTA's {smem}", e.smem),
                ));
            }
            if e.global.is_some_and(|g| g + eb > glob) {
                return Err(self.rt(
                    pc,
                    format!(
                        "the tensor map reaches past the {glob} bytes of buffer {}",
                        m.buffer
                    ),
                ));
            }
        }
        Ok(())
    }

    /// An asynchronous operation completes.
    fn land(&mut self, f: Flight) -> Result<(), Error> {
        match f.work {
            Work::Load {
                op,
                bar,
                bar_cta,
                phase,
                pc,
                map,
                elems,
            } => {
                let Some(m) = self.map(map) else { return Ok(()) };
                // Every element of the box counts, those outside the tensor too.
                let (eb, buf) = (m.elem_bytes as usize, m.buffer);
                let bytes = (elems.len() * eb) as i64;
                for e in &elems {
                    let s = e.smem as usize;
                    match e.global {
                        Some(g) => {
                            let g = g as usize;
                            let (src, dst) =
                                (&self.cta.bufs[buf][g..g + eb], &mut self.cta.shared[s..s + eb]);
                            dst.copy_from_slice(src);
                        }
                        None => self.cta.shared[s..s + eb].fill(0),
                    }
                }
                if let Some(hb) = &mut self.hb {
                    let addrs: Vec<(u32, u32)> = elems.iter().map(|e| (e.smem, 0)).collect();
                    if let Some(h) = hb.tma_piece(op, bar, &addrs, eb as u32 * 8) {
                        self.report(&h);
                    }
                }
                for e in &elems {
                    let g = e.smem / bwsim_sim::check::hazards::SMEM_GRANULE;
                    self.last_store.remove(&g);
                    self.tmem.slots.remove(&g);
                }
                self.load_completes((bar, bar_cta, phase, pc), bytes)?;
            }
            Work::Store {
                op,
                warp,
                group,
                map,
                elems,
                reduce,
                ..
            } => {
                let Some(m) = self.map(map) else { return Ok(()) };
                let (eb, buf, dtype) = (m.elem_bytes as usize, m.buffer, m.dtype);
                if let Some(hb) = &mut self.hb {
                    let addrs: Vec<(u32, u32)> = elems.iter().map(|e| (e.smem, 0)).collect();
                    if let Some(h) = hb.tma_store_read(op, warp as u32, &addrs, eb as u32 * 8) {
                        self.report(&h);
                    }
                }
                for e in &elems {
                    if let Some(g) = e.global {
                        let (s, g) = (e.smem as usize, g as usize);
                        let (src, dst) = (&self.cta.shared[s..s + eb], &mut self.cta.bufs[buf][g..g + eb]);
                        match reduce {
                            Some(r) => crate::tensormap::reduce_into(dst, src, r, dtype),
                            None => dst.copy_from_slice(src),
                        }
                    }
                }
                if let Some(c) = self.pending[warp].get_mut(&group) {
                    *c = c.saturating_sub(1);
                }
            }
            Work::Pipe { op, pc, work } => self.land_pipe(op, pc, work)?,
            Work::Cp(l) => self.land_cp(l)?,
            Work::Wg { warp } => self.land_wg(warp),
            Work::Clc {
                op,
                bar,
                pc,
                dst,
                response,
            } => self.land_clc(op, (bar, pc, dst), response)?,
        }
        Ok(())
    }

    /// An asynchronous unit (`who`) acts on the barrier at shared byte `bar` for the operation
    /// issued at `pc`: completes `bytes` of its transaction count, or arrives once (`None`).
    /// A barrier invalidated (or never initialised) while the operation was in flight is
    /// `barrier-misuse`: the operation's effect lands, its completion has nowhere to go.
    fn unit_delivers(
        &mut self,
        (bar, pc): (u32, usize),
        who: Actor,
        bytes: Option<i64>,
    ) -> Result<(), Error> {
        if !self.bars.contains_key(&bar) {
            self.misuse(pc, bar);
            return Ok(());
        }
        let b = self.bar_mut(bar, pc)?;
        let r = match bytes {
            Some(n) => b.complete_tx(n),
            None => b.arrive(1),
        };
        let flipped = r.map_err(|e| self.fault(pc, e))?;
        if let Some(hb) = &mut self.hb {
            hb.bar_update(bar, who, bytes.is_none(), -bytes.unwrap_or(0), flipped);
        }
        Ok(())
    }

    /// A copy at `pc` completing on the barrier at shared byte `bar`, which is not initialised.
    fn misuse(&mut self, pc: usize, bar: u32) {
        self.barrier_error(
            Code::BarrierMisuse,
            pc,
            format!("a copy completes on the mbarrier at shared byte {bar}, which is not initialised"),
            "issued here; when its bytes landed, the barrier had been invalidated (or never initialised)",
            "the copy",
            "wait for the copy's phase of the barrier before `mbarrier.inval`",
        );
    }

    /// `mbarrier.init` at `pc` of the barrier at shared byte `bar`, still initialised (no
    /// `mbarrier.inval` since its last init).
    fn reinit(&mut self, pc: usize, bar: u32) {
        self.barrier_error(
            Code::BarrierReinit,
            pc,
            format!("`mbarrier.init` of the mbarrier at shared byte {bar}, which is still initialised"),
            "initialised again here, with no `mbarrier.inval` since its last init",
            "the init",
            "invalidate the barrier (`mbarrier.inval`) before initialising it again",
        );
    }

    /// Records an error about a barrier at the instruction `pc` (once per code and instruction,
    /// and only while checking): `what` names the instruction in the note that places it.
    fn barrier_error(&mut self, code: Code, pc: usize, message: String, label: &str, what: &str, help: &str) {
        if self.hb.is_none() || self.findings.iter().any(|f| f.code == code && f.pc == pc) {
            return;
        }
        let p = self.cta.p;
        let span = p.ins.get(pc).map_or(Span::DUMMY, |i| i.span);
        let d = Diagnostic::error(code, message, span, label)
            .with_note(format!("{what} is at {}", p.place(pc)))
            .with_help(help);
        self.findings.push(Finding {
            code,
            pc,
            with: Vec::new(),
            diagnostic: d,
        });
    }

    /// Turns a hazard into a finding (once per code and pair of instructions).
    fn report(&mut self, h: &Hazard) {
        let Some(hb) = &self.hb else { return };
        let (fi, si) = (hb.rec_instr(&h.first) as usize, hb.rec_instr(&h.second) as usize);
        let code = h.kind.code();
        if self
            .findings
            .iter()
            .any(|f| f.code == code && f.pc == si && f.with == [fi])
        {
            return;
        }
        let p = self.cta.p;
        let span = |pc: usize| p.ins.get(pc).map_or(Span::DUMMY, |i| i.span);
        let name = |pc: usize| {
            p.ins.get(pc).map_or("an instruction".to_string(), |i| {
                p.src[i.span.range()]
                    .split_whitespace()
                    .find(|t| !t.starts_with('@'))
                    .unwrap_or("")
                    .to_string()
            })
        };
        let who = |r: &Rec| match hb.part_of(r.agent) {
            Some(w) if !r.is_async() => format!("warp {w}"),
            _ => format!(
                "the asynchronous unit running the operation issued at {}",
                p.place(hb.rec_instr(r) as usize)
            ),
        };
        let proxy = |r: &Rec| match r.proxy {
            Proxy::Generic => "generic proxy",
            Proxy::Async => "async proxy",
            Proxy::Tensor => "tensor memory",
        };
        let verb = |r: &Rec| match r.kind {
            Kind::Read => "reads",
            Kind::Write => "writes",
        };
        let (fo, so) = (name(fi), name(si));
        // Tensor-memory granules are cells, numbered column-major over the 128 lanes.
        let place = if h.first.proxy == Proxy::Tensor && h.second.proxy == Proxy::Tensor {
            format!(
                "tensor-memory lane {}, column {}",
                h.granule % 128,
                h.granule / 128
            )
        } else {
            format!(
                "shared byte {}",
                h.granule * bwsim_sim::check::hazards::SMEM_GRANULE
            )
        };
        let (title, help) = match h.kind {
            HazardKind::Race => (
                format!("data race on shared memory: `{fo}` and `{so}` are not ordered by happens-before"),
                "order the two accesses with an mbarrier (arrive after the one, wait before the other) or a CTA barrier".to_string(),
            ),
            HazardKind::MissingFence => (
                format!("missing `fence.proxy.async`: `{so}` ({}) and `{fo}` ({}) touch the same shared memory", proxy(&h.second), proxy(&h.first)),
                format!("add `fence.proxy.async.shared::cta` after the `{fo}`, before whatever hands the bytes to the `{so}`"),
            ),
            HazardKind::ReadBeforeComplete => (
                format!("`{so}` reads shared memory before the `{fo}` that writes it has completed"),
                format!("wait on the mbarrier that counts the `{fo}`'s bytes (`mbarrier.try_wait.parity`) before the `{so}`"),
            ),
            HazardKind::WriteWhileInFlight => (
                format!("`{so}` overwrites shared memory while `{fo}` may still be accessing it"),
                format!("wait for the `{fo}` to complete before the `{so}`"),
            ),
        };
        // The source line (`.loc`) of an instruction, as a label's tail.
        let src = |pc: usize| source_line(p, pc).map_or(String::new(), |(f, l)| format!(", at {f}:{l}"));
        // An access `r` of the instruction at `pc`, in words.
        let access = |r: &Rec, pc: usize| format!("{} ({}) in {}{}", verb(r), proxy(r), who(r), src(pc));
        let d = Diagnostic::error(code, title, span(si), access(&h.second, si))
            .with_label(span(fi), access(&h.first, fi))
            .with_note(format!(
                "first conflict at {place}; the second access is at {}, the first at {}",
                p.place(si),
                p.place(fi)
            ))
            .with_help(help);
        self.findings.push(Finding {
            code,
            pc: si,
            with: vec![fi],
            diagnostic: d,
        });
    }
}

/// One group of [`access_groups`]: the index of its first access, and the addresses of all.
type AccessGroup = (usize, Vec<(u32, u32)>);

/// A warp step's shared-memory accesses grouped by instruction, kind and width (each group
/// the index of its first access and the addresses of all of them, in the order of their
/// first accesses), when no shared granule is touched by two groups: then the order in which
/// the groups are recorded cannot change what any granule's shadow holds. `None` otherwise
/// (the accesses are recorded one by one, in the order the lanes made them).
fn access_groups(log: &[&crate::exec::SharedAccess]) -> Option<Vec<AccessGroup>> {
    let mut groups: Vec<AccessGroup> = Vec::new();
    let mut index: HashMap<(usize, bool, u32), usize> = HashMap::new();
    let mut owner: HashMap<u32, usize> = HashMap::new();
    for (i, a) in log.iter().enumerate() {
        let gi = *index.entry((a.pc, a.write, a.bytes)).or_insert_with(|| {
            groups.push((i, Vec::new()));
            groups.len() - 1
        });
        let granule = bwsim_sim::check::hazards::SMEM_GRANULE;
        for g in a.addr / granule..=(a.addr + a.bytes.max(1) - 1) / granule {
            if *owner.entry(g).or_insert(gi) != gi {
                return None;
            }
        }
        groups[gi].1.push((a.addr, 0));
    }
    Some(groups)
}
