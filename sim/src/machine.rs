//! The interpreter: CTAs, their agents (partitions), TMA units and tensor pipes, driven by a
//! [`Scheduler`] over logical time.
//!
//! - An agent is a program counter and a frame ([`crate::lower`]). It executes one instruction
//!   per step; a blocking instruction (`mbar.wait`, `tma.store_wait`, `wgmma.wait`, the join at
//!   the end of `warp_specialize`, a `tcgen05.alloc` that cannot be satisfied) leaves the
//!   program counter where it is and is re-executed once its condition holds (hardware polls
//!   the same way, so a waiter that is scheduled late may find the barrier moved on).
//! - Issue ops (TMA, mbarrier expect/arrive, tcgen05.mma/cp/commit) execute once per partition.
//! - Asynchronous work becomes timed events: TMA pieces, store reads and writes, the tensor
//!   pipe's in-order operations, wgmma groups. Latencies and same-time orders come from the
//!   scheduler, so a seed fixes the whole run.
//! - When no agent can run and nothing is in flight, the run stops at once with a `deadlock`
//!   diagnostic naming every waiter and the state of what it waits on.
//!
//! CTAs run in groups of `ctas_in_flight` (a new one starts when one retires). The CTAs of a
//! cluster (along x) are admitted and retired together, so that `cluster.sync` and the pair
//! operations of `cta_group::2` (an MMA issued by the even CTA reading both CTAs' shared memory
//! and writing both tensor memories; a commit arriving on both CTAs' barrier) see their peer.
//! Other cross-CTA operations (multicast TMA, remote barriers) are not modelled.

use crate::eval::{self, as_tile, broadcast_shapes, BIndex, EvalCtx};
use crate::hazards::{Actor, CtaHb};
use crate::hb::{Hazard, Kind};
use crate::layout;
use crate::limits::{self, Guard};
use crate::lower::{AllocPlace, CExpr, FenceKind, IKind, Instr, LOp, Program, TxKind};
use crate::mbarrier::{Mbar, MbarFault};
use crate::memory::{Smem, Tmem};
use crate::sched::{AgentRef, AsyncKind, Scheduler};
use crate::tensor::{self, AOperand, MmaOp, WgmmaA};
use crate::tma;
use crate::trace::{Event, Trace, Unit, What};
use crate::trap::{CudaError, Fault, OpResult, Trap};
use crate::value::*;
use crate::waitfor::{self, Arrival, BarStateView, BarWait, WaitOn, Waiter};
use bwsim_isa::launch::HostTensor;
use bwsim_isa::limits::{Limit, Limits};
use bwsim_isa::{Diagnostic, Span};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

/// How a run is driven.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Seed of the default scheduler.
    pub seed: u64,
    /// Record the event trace.
    pub trace: bool,
    /// Resource limits (steps, wall time, trace events; defaults where unset). The launch
    /// section's `limit` lines apply under these. Deadlock detection never depends on them.
    pub limits: Limits,
    /// CTAs resident at once (at least 1).
    pub ctas_in_flight: u32,
    /// Run the hazard checker (happens-before, shadow memory, uninitialised reads, phase
    /// aliasing).
    pub check: bool,
    /// Where to publish live progress (steps, CTAs done), if anywhere.
    pub progress: Option<std::sync::Arc<crate::progress::Progress>>,
    /// The tensor cores' arithmetic per MMA family (default: measured on the H100 for wgmma,
    /// assumed the same for tcgen05; docs/hardware/wgmma-numerics.md).
    pub mma: crate::mma_numerics::MmaNumerics,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            seed: 0,
            trace: true,
            limits: Limits::default(),
            ctas_in_flight: 2,
            check: true,
            progress: None,
            mma: Default::default(),
        }
    }
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// Every CTA ran to its end.
    Completed,
    /// A hardware fault ([`RunResult::trap`]).
    Trapped,
    /// Every agent blocked with nothing in flight.
    Deadlock,
    /// A simulator diagnostic stopped the run (barrier misuse, unsupported construct, ...).
    Error,
    /// A resource limit stopped the run (steps, wall time, trace events); the diagnostic says
    /// which, where every agent was and how to raise it.
    LimitReached(Limit),
}

/// Work counters of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Agent steps (instructions executed).
    pub steps: u64,
    /// Operations executed (instructions that are IR operations).
    pub ops: u64,
    /// Asynchronous operations issued.
    pub async_ops: u64,
    /// Bytes delivered to shared memory by TMA loads and gathers.
    pub tma_bytes: u64,
    /// tcgen05.mma and wgmma operations executed.
    pub mmas: u64,
    /// CTAs run to completion.
    pub ctas: u64,
    /// Final logical time.
    pub time: u64,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Every global tensor after the run (in launch order).
    pub tensors: Vec<HostTensor>,
    pub outcome: Outcome,
    /// The fault that stopped the launch, if any.
    pub trap: Option<Trap>,
    /// Diagnostics (errors and warnings), the trap's included.
    pub diagnostics: Vec<Diagnostic>,
    pub trace: Trace,
    pub counters: Counters,
}

impl RunResult {
    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&HostTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
    /// Whether the run completed with no error diagnostic.
    pub fn ok(&self) -> bool {
        self.outcome == Outcome::Completed && !self.diagnostics.iter().any(|d| d.is_error())
    }
}

// ------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Block {
    Mbar {
        addr: u32,
        parity: u32,
    },
    StoreWait {
        n: u32,
        full: bool,
    },
    WgmmaWait {
        n: u32,
    },
    Join,
    TmemAlloc {
        cols: u32,
    },
    /// `cluster.sync`: waiting for generation `gen` of cluster `cluster` to complete.
    ClusterSync {
        cluster: u64,
        gen: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Default)]
enum AState {
    #[default]
    Ready,
    Blocked(Block),
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Group {
    id: u64,
    reads: u32,
    writes: u32,
}

/// How many bulk groups `tma.store_wait` counts as pending: every group from the oldest one
/// still reading (or, with `full`, still writing) to the newest. PTX `cp.async.bulk.wait_group
/// N` waits until "only N or fewer of the most recent bulk async-groups are pending and all the
/// prior bulk async-groups committed by the executing threads are complete": groups retire in
/// order, so a newer group that happens to finish first does not let the wait pass while an
/// older one still reads shared memory.
fn pending_groups(groups: &VecDeque<Group>, full: bool) -> u32 {
    groups
        .iter()
        .position(|g| g.reads > 0 || (full && g.writes > 0))
        .map_or(0, |i| (groups.len() - i) as u32)
}

#[derive(Debug, Default)]
struct Agent {
    pc: u32,
    frame: Vec<Value>,
    state: AState,
    first_warp: u32,
    warps: u32,
    groups: VecDeque<Group>,
    wgmma_pending: u32,
    /// wgmma groups issued so far.
    wgmma_issued: u32,
    /// When this partition's last wgmma group completes: groups complete in issue order
    /// (`wgmma.wait_group N` waits for all but the N most recent, PTX.md section 9).
    wgmma_last_done: u64,
    children: Vec<u32>,
}

#[derive(Clone, Debug)]
enum PipeKind {
    Mma(MmaOp),
    /// A `cta_group::2` MMA issued by the even CTA of a pair; `peer` is the odd CTA's slot.
    MmaPair {
        op: MmaOp,
        peer: u32,
    },
    Cp {
        src: SmemView,
        dst: TmemView,
    },
    /// `peer`: also arrive on the barrier at the same address in the pair's odd CTA.
    Commit {
        bar: u32,
        peer: Option<u32>,
    },
}

#[derive(Clone, Debug)]
struct PipeOp {
    kind: PipeKind,
    id: u64,
    span: Span,
    name: &'static str,
    /// The checker's async-op index.
    hb: u32,
}

#[derive(Clone, Debug)]
enum TmaKind {
    Load {
        coords: Vec<i64>,
    },
    Gather {
        xs: Vec<i64>,
        col: i64,
    },
    Store {
        coords: Vec<i64>,
        data: Vec<(u64, u64)>,
    },
    Scatter {
        xs: Vec<i64>,
        col: i64,
        data: Vec<(u64, u64)>,
    },
}

#[derive(Clone, Debug)]
struct TmaOp {
    kind: TmaKind,
    desc: u32,
    /// Shared-memory address of every box element, in box order.
    addrs: Arc<Vec<(u32, u32)>>,
    bar: u32,
    /// The barrier's phase when the copy was issued.
    phase: u64,
    id: u64,
    span: Span,
    agent: u32,
    name: &'static str,
    left: u32,
    /// The checker's async-op index.
    hb: u32,
}

#[derive(Clone, Debug)]
enum EvKind {
    /// Rows (tile load) or messages (gather) `lo..hi` land.
    TmaPiece {
        op: u32,
        lo: u64,
        hi: u64,
    },
    StoreRead {
        op: u32,
    },
    StoreWrite {
        op: u32,
    },
    PipeDone,
    WgmmaDone {
        agent: u32,
        id: u64,
    },
}

#[derive(Clone, Copy, Debug)]
enum BarState {
    Live(Mbar),
    Invalid,
}

struct Cta {
    id: u32,
    pid: [u32; 3],
    /// Cluster index and rank in it (cluster 0..: consecutive groups of `cluster[0]` CTAs).
    cluster: u64,
    rank: u32,
    smem: Smem,
    tmem: Tmem,
    bars: BTreeMap<u32, BarState>,
    agents: Vec<Agent>,
    pipe: VecDeque<PipeOp>,
    pipe_busy: bool,
    tma: Vec<Option<TmaOp>>,
    tma_free: Vec<u32>,
    events: u32,
    /// The hazard checker's state (when checking).
    hb: Option<Box<CtaHb>>,
}

enum Flow {
    Next,
    Jump(u32),
    Block(Block),
    Done,
}

enum Stop {
    Trap(Trap),
    Error(Diagnostic),
    Deadlock(Diagnostic),
    Limit(Limit),
}

struct Ev {
    slot: u32,
    kind: EvKind,
}

struct Machine<'p, 's> {
    prog: &'p Program,
    grid: [u32; 3],
    global: Vec<HostTensor>,
    slots: Vec<Option<Cta>>,
    next_cta: u64,
    total_ctas: u64,
    queue: BinaryHeap<Reverse<(u64, u64, u32)>>,
    evs: Vec<Option<Ev>>,
    ev_free: Vec<u32>,
    now: u64,
    next_id: u64,
    sched: &'s mut dyn Scheduler,
    opts: RunOptions,
    trace: Trace,
    diags: Vec<Diagnostic>,
    counters: Counters,
    runnable: Vec<AgentRef>,
    /// The instruction being executed (for the checker's access records).
    cur_pc: u32,
    /// Checker diagnostics already reported in this run (code and spans).
    reported: HashSet<(String, u32, u32)>,
    /// CTAs per cluster (1 without clusters).
    cluster_size: u32,
    /// `cluster.sync` state per live cluster: (arrivals of the current generation, generation).
    cluster_sync: BTreeMap<u64, (u32, u64)>,
    guard: Guard,
}

/// Run a lowered program over a grid.
pub fn execute(
    prog: &Program,
    grid: [u32; 3],
    inputs: Vec<HostTensor>,
    opts: &RunOptions,
    sched: &mut dyn Scheduler,
) -> RunResult {
    let mut names = vec!["default".to_string()];
    for i in &prog.code {
        if let IKind::Fork { workers } = &i.kind {
            names.extend(workers.iter().map(|w| format!("worker.{}", w.name)));
            break;
        }
    }
    let total_ctas = grid.iter().fold(1u64, |a, &g| a.saturating_mul(g as u64));
    let cluster_size = prog.cluster[0].max(1);
    if prog.cluster[1] > 1 || prog.cluster[2] > 1 || !grid[0].is_multiple_of(cluster_size) {
        let d = Diagnostic::error(
            "sim-unsupported",
            format!(
                "the simulator models clusters along x dividing the grid; this launch has cluster {:?} over grid {:?}",
                prog.cluster, grid
            ),
            Span::DUMMY,
            "",
        );
        return RunResult {
            tensors: inputs,
            outcome: Outcome::Error,
            trap: None,
            diagnostics: vec![d],
            trace: Trace::default(),
            counters: Counters::default(),
        };
    }
    // Whole clusters fit in the resident slots.
    let slots = opts.ctas_in_flight.max(1).div_ceil(cluster_size) * cluster_size;
    let mut m = Machine {
        prog,
        grid,
        global: inputs,
        slots: (0..slots).map(|_| None).collect(),
        next_cta: 0,
        total_ctas,
        queue: BinaryHeap::new(),
        evs: Vec::new(),
        ev_free: Vec::new(),
        now: 0,
        next_id: 0,
        sched,
        opts: opts.clone(),
        trace: Trace {
            agent_names: names,
            events: Vec::new(),
        },
        diags: Vec::new(),
        counters: Counters::default(),
        runnable: Vec::new(),
        cur_pc: 0,
        reported: HashSet::new(),
        cluster_size,
        cluster_sync: BTreeMap::new(),
        guard: Guard::start(&opts.limits),
    };
    let (outcome, trap) = match m.run_loop() {
        Ok(()) => (Outcome::Completed, None),
        Err(Stop::Trap(t)) => {
            m.diags.push(t.to_diagnostic());
            (Outcome::Trapped, Some(t))
        }
        Err(Stop::Error(d)) => {
            m.diags.push(d);
            (Outcome::Error, None)
        }
        Err(Stop::Deadlock(d)) => {
            m.diags.push(d);
            (Outcome::Deadlock, None)
        }
        Err(Stop::Limit(l)) => {
            if l == Limit::TraceEvents {
                m.trace.events.truncate(m.guard.trace_cap());
            }
            let at = m.where_now();
            m.diags.push(limits::limit_diagnostic(l, &m.guard, &at));
            (Outcome::LimitReached(l), None)
        }
    };
    m.counters.time = m.now;
    RunResult {
        tensors: m.global,
        outcome,
        trap,
        diagnostics: m.diags,
        trace: m.trace,
        counters: m.counters,
    }
}

fn smem_of(v: &Value) -> OpResult<SmemView> {
    match v {
        Value::Smem(s) => Ok(*s),
        other => Err(Fault::unsupported(format!(
            "expected a shared-memory view, found {}",
            other.kind()
        ))),
    }
}

fn tmem_of(v: &Value) -> OpResult<TmemView> {
    match v {
        Value::Tmem(s) => Ok(*s),
        other => Err(Fault::unsupported(format!(
            "expected a tensor-memory view, found {}",
            other.kind()
        ))),
    }
}

fn int_of(v: &Value, what: &str) -> OpResult<i64> {
    v.as_int()
        .ok_or_else(|| Fault::unsupported(format!("{what} must be an integer, found {}", v.kind())))
}

/// A barrier operand: its address, checked for the 8-byte alignment hardware requires.
fn bar_of(v: &Value) -> OpResult<u32> {
    match v {
        Value::Mbar { addr, count: None } => {
            if addr % 8 != 0 {
                return Err(Fault::trap(
                    CudaError::MisalignedAddress,
                    format!("mbarrier at shared byte {addr} is not 8-byte aligned"),
                ));
            }
            Ok(*addr)
        }
        other => Err(Fault::unsupported(format!(
            "expected one mbarrier, found {}",
            other.kind()
        ))),
    }
}

fn ints_of(v: &Value) -> OpResult<Vec<i64>> {
    match v {
        Value::Tile(t) => (0..t.numel()).map(|i| s32(t.i(i), "a row offset")).collect(),
        other => Ok(vec![s32(int_of(other, "row offsets")?, "a row offset")?]),
    }
}

/// A TMA coordinate or offset: a 32-bit signed operand. Hardware would use the low 32 bits of
/// a wider value; bwsim reports it instead of wrapping.
fn s32(v: i64, what: &str) -> OpResult<i64> {
    i32::try_from(v).map(i64::from).map_err(|_| {
        Fault::error(
            "operand-range",
            format!(
                "{what} of {v} does not fit the instruction's 32-bit signed operand (hardware would use {})",
                v as i32
            ),
        )
        .with_help("TMA coordinates and offsets are `.s32`: keep them within -2^31..2^31")
    })
}

impl Cta {
    fn bar(&mut self, addr: u32) -> OpResult<&mut Mbar> {
        match self.bars.get_mut(&addr) {
            Some(BarState::Live(m)) => Ok(m),
            Some(BarState::Invalid) => Err(Fault::error(
                "barrier-misuse",
                format!("mbarrier at shared byte {addr} used after mbar.invalidate"),
            )
            .with_help("re-initialise it with `mbar.init` before using it again")),
            None => Err(Fault::error(
                "barrier-misuse",
                format!("mbarrier at shared byte {addr} used before mbar.init"),
            )
            .with_help(
                "initialise every barrier with `mbar.init` before any arrive, expect, wait or TMA on it",
            )),
        }
    }
}

/// One mbarrier action.
#[derive(Clone, Copy, Debug)]
enum BarAct {
    Arrive(u32),
    ExpectTx(i64),
    CompleteTx(i64),
}

impl<'p, 's> Machine<'p, 's> {
    fn cta(&mut self, s: usize) -> &mut Cta {
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        self.slots[s].as_mut().expect("live CTA slot")
    }

    fn ev(&mut self, cta: u32, unit: Unit, what: What, span: Span) {
        if self.opts.trace {
            self.trace.events.push(Event {
                time: self.now,
                cta,
                unit,
                what,
                span,
            });
        }
    }

    fn fault_stop(&mut self, f: Fault, span: Span, cta: u32, unit: Unit, op: &'static str) -> Stop {
        let (error, reason, code) =
            match f {
                Fault::CodedTrap(code, error, reason) => (error, reason, code),
                Fault::Trap(error, reason) => (error, reason, error.code()),
                Fault::Error { code, message, help } => {
                    let mut d = Diagnostic::error(code, message, span, format!("in `{op}`"))
                        .with_note(format!("{} at t={}", self.trace.unit_name(cta, unit), self.now));
                    if let Some(h) = help {
                        d = d.with_help(h);
                    }
                    return Stop::Error(d);
                }
            };
        self.ev(
            cta,
            unit,
            What::Trap {
                error: error.message(),
            },
            span,
        );
        Stop::Trap(Trap {
            error,
            reason,
            span,
            op,
            agent: self.trace.unit_name(cta, unit),
            time: self.now,
            code,
        })
    }

    fn schedule(&mut self, s: usize, delay: u64, kind: EvKind) {
        let tie = self.sched.tiebreak();
        let ev = Ev { slot: s as u32, kind };
        let idx = match self.ev_free.pop() {
            Some(i) => {
                self.evs[i as usize] = Some(ev);
                i
            }
            None => {
                self.evs.push(Some(ev));
                (self.evs.len() - 1) as u32
            }
        };
        self.queue.push(Reverse((self.now + delay.max(1), tie, idx)));
        self.cta(s).events += 1;
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    // ----- the hazard checker -----

    /// The checker state of CTA slot `s`, when checking.
    fn hb(&mut self, s: usize) -> Option<&mut CtaHb> {
        self.slots[s].as_mut()?.hb.as_deref_mut()
    }

    /// Record a checker diagnostic once per run (by code and spans).
    fn report(&mut self, d: Diagnostic) {
        const MAX_REPORTS: usize = 64;
        let second = d.labels.first().map(|l| l.span.start).unwrap_or(u32::MAX);
        if self.reported.len() < MAX_REPORTS
            && self
                .reported
                .insert((d.code.clone(), d.primary.span.start, second))
        {
            self.diags.push(d);
        }
    }

    /// Turn a hazard found in CTA slot `s` into a diagnostic.
    fn hazard(&mut self, s: usize, h: Option<Hazard>, tmem: bool) {
        let Some(h) = h else { return };
        let Some(c) = self.slots[s].as_ref() else { return };
        let Some(hb) = c.hb.as_deref() else { return };
        let cta = c.id;
        let trace = &self.trace;
        let name = |p: u32| trace.unit_name(cta, Unit::Agent(p));
        let d = hb.describe(&h, self.prog, &name, cta, tmem);
        self.report(d);
    }

    /// An uninitialised read by the op at instruction `pc`: `what` says which bytes.
    fn uninit(&mut self, pc: u32, what: String) {
        let Some(i) = self.prog.code.get(pc as usize) else {
            return;
        };
        let name = match &i.kind {
            IKind::Op { name, .. } => *name,
            _ => "this operation",
        };
        let d = Diagnostic::error(
            "uninit-read",
            format!("`{name}` reads {what} that nothing wrote in this launch"),
            i.span,
            "reads uninitialised memory",
        )
        .with_note("shared and tensor memory start with undefined contents in every launch")
        .with_help("write the buffer first (a TMA load waited on, an `smem.store`, an MMA with `use_acc=false`), or check which buffer or stage index this reads");
        self.report(d);
    }

    /// Check that shared-memory elements were written before a read.
    fn check_smem_init(&mut self, s: usize, pc: u32, addrs: &[(u32, u32)]) {
        if self.opts.check {
            let c = self.cta(s);
            if let Some(&(a, _)) = addrs.iter().find(|&&(a, _)| !c.smem.was_written(a)) {
                let w = match self.prog.smem_names(a).first() {
                    Some((n, off)) => format!("`{n}` (shared byte {a}, byte {off} of the buffer)"),
                    None => format!("shared byte {a}"),
                };
                self.uninit(pc, w);
            }
        }
    }

    /// Phase aliasing: partition `a` waits (at instruction `pc`) with `parity` on the barrier
    /// at `addr`, now in `phase`.
    fn check_aliasing_at(&mut self, s: usize, a: usize, pc: u32, addr: u32, phase: u64, parity: u32) {
        let Some(c) = self.slots[s].as_ref() else { return };
        let Some(hb) = c.hb.as_deref() else { return };
        let Some(al) = hb.aliasing(a, addr, phase, parity) else {
            return;
        };
        let prog = self.prog;
        let who = self.trace.unit_name(c.id, Unit::Agent(a as u32));
        let bar = prog.mbar_name(addr);
        let span = prog.code.get(pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
        let passes = (phase & 1) != parity as u64;
        let missed = al.missed.iter().flatten().count() as u64;
        let mut d = Diagnostic::error(
            "phase-aliasing",
            format!("phase aliasing on `{bar}`: this wait means a phase the barrier has already moved past"),
            span,
            format!("{who} waits for parity {parity} here"),
        );
        let mut by_instr: Vec<(u32, Vec<u64>)> = Vec::new();
        for (k, w) in al.missed.iter().flatten().enumerate() {
            let phase_k = phase - missed + k as u64;
            match by_instr.iter_mut().find(|(i, _)| *i == w.instr) {
                Some((_, v)) => v.push(phase_k),
                None => by_instr.push((w.instr, vec![phase_k])),
            }
        }
        for (instr, phases) in by_instr {
            let sp = prog
                .code
                .get(instr as usize)
                .map(|i| i.span)
                .unwrap_or(Span::DUMMY);
            let what = match phases.as_slice() {
                [p] => format!("completed phase {p} of `{bar}` (parity {})", p & 1),
                ps => format!(
                    "completed phases {} of `{bar}`",
                    ps.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(" and ")
                ),
            };
            d = d.with_label(sp, what);
        }
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        let meant = if missed == 2 {
            format!(
                "{who} cannot have observed the completion of phase {}: the phase it waits for and the one after it have both completed, and parity cannot tell them apart",
                phase - 2
            )
        } else {
            format!(
                "{who} knows of {} completion{} and waits with parity {parity}, which means phase {}{}, already complete; phase {} has completed since and parity now shows it",
                phase - 1,
                plural(phase - 1),
                phase as i64 - 2,
                if phase == 1 { " (the phase a fresh barrier counts as complete)" } else { "" },
                phase - 1
            )
        };
        d = d
            .with_note(format!(
                "`{bar}` has completed {phase} phase{} (the current phase has parity {}); {meant}",
                plural(phase),
                phase & 1,
            ))
            .with_note(format!(
                "in this schedule parity alone {} the wait (PTX.md section 5: parity is all the hardware keeps)",
                if passes { "passes" } else { "blocks" }
            ))
            .with_help("a producer must not get two phases ahead of a waiter: give every pipeline stage its own barrier, release each buffer on its own barrier, or make the producer wait for the consumer's release before completing this barrier again");
        self.report(d);
    }

    /// Phase aliasing for a wait being executed now.
    fn check_aliasing(&mut self, s: usize, a: usize, addr: u32, phase: u64, parity: u32) {
        let pc = self.cur_pc;
        self.check_aliasing_at(s, a, pc, addr, phase, parity);
    }

    /// Phase aliasing for the partitions blocked on the barrier at `addr`, which just moved to
    /// `phase` (a waiter that is not scheduled in time may miss a phase).
    fn check_blocked_aliasing(&mut self, s: usize, addr: u32, phase: u64) {
        let Some(c) = self.slots[s].as_ref() else { return };
        let waiters: Vec<(usize, u32, u32)> = c
            .agents
            .iter()
            .enumerate()
            .filter_map(|(i, ag)| match ag.state {
                AState::Blocked(Block::Mbar { addr: x, parity }) if x == addr => Some((i, ag.pc, parity)),
                _ => None,
            })
            .collect();
        for (i, pc, parity) in waiters {
            self.check_aliasing_at(s, i, pc, addr, phase, parity);
        }
    }

    /// Check that TMEM cells were written (since allocation) before a read.
    fn check_tmem_init(&mut self, s: usize, pc: u32, cells: &[(u32, u32)]) {
        let Some(hb) = self.hb(s) else { return };
        if let Some(&(lane, col)) = cells.iter().find(|&&(l, c)| !hb.tmem_written(l, c)) {
            self.uninit(pc, format!("tensor memory (lane {lane}, column {col})"));
        }
    }

    // ----- the main loop -----

    fn run_loop(&mut self) -> Result<(), Stop> {
        loop {
            self.retire()?;
            self.admit();
            if self.slots.iter().all(|s| s.is_none()) {
                return Ok(());
            }
            if let Some(l) = self.guard.check(self.counters.steps, self.trace.events.len()) {
                return Err(Stop::Limit(l));
            }
            while let Some(&Reverse((t, _, idx))) = self.queue.peek() {
                if t > self.now {
                    break;
                }
                self.queue.pop();
                let ev = self.evs[idx as usize].take();
                self.ev_free.push(idx);
                if let Some(ev) = ev {
                    self.fire(ev)?;
                }
            }
            self.collect_runnable();
            if !self.runnable.is_empty() {
                if let Some(&Reverse((t, _, _))) = self.queue.peek() {
                    if self.sched.stall() {
                        self.now = self.now.max(t);
                        continue;
                    }
                }
                let i = self.sched.pick(&self.runnable).min(self.runnable.len() - 1);
                let r = self.runnable[i];
                self.step(r.cta as usize, r.agent as usize)?;
                self.now += 1;
                self.counters.steps += 1;
                if self.counters.steps.is_multiple_of(4096) {
                    if let Some(p) = &self.opts.progress {
                        p.publish(self.counters.steps, self.counters.ctas, self.total_ctas);
                    }
                }
                continue;
            }
            if let Some(&Reverse((t, _, _))) = self.queue.peek() {
                self.now = self.now.max(t);
                continue;
            }
            let finished = self
                .slots
                .iter()
                .flatten()
                .all(|c| c.agents.iter().all(|a| a.state == AState::Done));
            if finished {
                continue;
            }
            return Err(Stop::Deadlock(self.deadlock()));
        }
    }

    fn admit(&mut self) {
        let cs = self.cluster_size as usize;
        for s in 0..self.slots.len() {
            if self.slots[s].is_some() || self.next_cta >= self.total_ctas {
                continue;
            }
            // The CTAs of a cluster enter together, rank r in slot group base + r.
            if s % cs != 0 || self.slots[s..s + cs].iter().any(|x| x.is_some()) {
                continue;
            }
            for r in 0..cs {
                self.admit_one(s + r);
            }
        }
    }

    /// Start CTA `next_cta` in slot `s`.
    fn admit_one(&mut self, s: usize) {
        let cs = self.cluster_size as usize;
        if self.next_cta >= self.total_ctas {
            return;
        }
        {
            let id = self.next_cta;
            self.next_cta += 1;
            let (gx, gy) = (self.grid[0].max(1) as u64, self.grid[1].max(1) as u64);
            let pid = [(id % gx) as u32, ((id / gx) % gy) as u32, (id / (gx * gy)) as u32];
            let mut tmem = Tmem::new();
            for t in self.prog.tmem.iter().filter(|t| !t.manual) {
                tmem.reserve(t.col, t.cols);
            }
            let mut frame = vec![Value::Unset; self.prog.nslots as usize];
            for (sl, v) in &self.prog.init {
                frame[*sl as usize] = v.clone();
            }
            let agent = Agent {
                frame,
                first_warp: 0,
                warps: self.prog.num_warps,
                ..Agent::default()
            };
            let smem = Smem::new(self.prog.smem_bytes);
            let hb = self.opts.check.then(|| Box::new(CtaHb::new(smem.len())));
            self.slots[s] = Some(Cta {
                id: id as u32,
                pid,
                smem,
                cluster: id / cs as u64,
                rank: (id % cs as u64) as u32,
                tmem,
                bars: BTreeMap::new(),
                agents: vec![agent],
                pipe: VecDeque::new(),
                pipe_busy: false,
                tma: Vec::new(),
                tma_free: Vec::new(),
                events: 0,
                hb,
            });
            self.ev(id as u32, Unit::Agent(0), What::AgentStart, Span::DUMMY);
        }
    }

    fn retire(&mut self) -> Result<(), Stop> {
        let cs = self.cluster_size as usize;
        let finished = |c: &Option<Cta>| match c {
            Some(c) => c.events == 0 && c.pipe.is_empty() && c.agents.iter().all(|a| a.state == AState::Done),
            None => true,
        };
        for s in 0..self.slots.len() {
            let group = s - s % cs;
            // A CTA leaves with its whole cluster: a peer may still read its shared memory.
            let done = self.slots[s].is_some() && self.slots[group..group + cs].iter().all(finished);
            if !done {
                continue;
            }
            if let Some(c) = &self.slots[s] {
                self.cluster_sync.remove(&c.cluster);
            }
            let Some(c) = self.slots[s].take() else { continue };
            self.counters.ctas += 1;
            for a in &c.tmem.manual {
                let d = Diagnostic::error(
                    "tmem-leak",
                    format!(
                        "CTA {} exits with TMEM columns {}..{} still allocated",
                        c.id,
                        a.col,
                        a.col + a.cols
                    ),
                    a.span,
                    "allocated here and never freed",
                )
                .with_note("every tcgen05.alloc must be freed before the kernel exits (PTX.md section 8)")
                .with_help("add `tmem.dealloc` for this buffer at the end of the kernel");
                if !self
                    .diags
                    .iter()
                    .any(|x| x.code == d.code && x.primary.span.start == d.primary.span.start)
                {
                    self.diags.push(d);
                }
            }
        }
        Ok(())
    }

    fn collect_runnable(&mut self) {
        self.runnable.clear();
        for (s, c) in self.slots.iter().enumerate() {
            let Some(c) = c else { continue };
            for (a, ag) in c.agents.iter().enumerate() {
                let ok = match ag.state {
                    AState::Ready => true,
                    AState::Done => false,
                    AState::Blocked(Block::ClusterSync { cluster, gen }) => {
                        self.cluster_sync.get(&cluster).is_none_or(|st| st.1 > gen)
                    }
                    AState::Blocked(b) => can_resume(c, ag, b),
                };
                if ok {
                    self.runnable.push(AgentRef {
                        cta: s as u32,
                        agent: a as u32,
                    });
                }
            }
        }
    }

    /// Where every live agent is (for the resource-limit diagnostic).
    fn where_now(&self) -> limits::Where {
        let mut agents = Vec::new();
        for c in self.slots.iter().flatten() {
            for (a, ag) in c.agents.iter().enumerate() {
                let how = match ag.state {
                    AState::Done => continue,
                    AState::Ready => "runnable",
                    AState::Blocked(_) => "blocked",
                };
                let instr = self.prog.code.get(ag.pc as usize);
                let span = instr.map_or(Span::DUMMY, |i| i.span);
                let who = self.trace.unit_name(c.id, Unit::Agent(a as u32));
                agents.push((span, format!("{who} is here ({how})")));
            }
        }
        limits::Where {
            steps: self.counters.steps,
            time: self.now,
            ctas_done: self.counters.ctas,
            ctas_total: self.total_ctas,
            agents,
        }
    }

    /// The `deadlock` diagnostic (with its wait-for graph), after reporting a `tx-mismatch`
    /// for every waited-on barrier whose transaction count cannot reach zero any more.
    fn deadlock(&mut self) -> Diagnostic {
        const PER_SLOT: u32 = 1 << 16;
        let prog = self.prog;
        let mut waiters = Vec::new();
        let mut names = HashMap::new();
        let mut mismatches = Vec::new();
        let sites = waitfor::arrive_sites(prog);
        for (si, c) in self.slots.iter().enumerate() {
            let Some(c) = c else { continue };
            let gid = |a: u32| si as u32 * PER_SLOT + a;
            for a in 0..c.agents.len() as u32 {
                names.insert(gid(a), self.trace.unit_name(c.id, Unit::Agent(a)));
            }
            for (a, ag) in c.agents.iter().enumerate() {
                let AState::Blocked(b) = ag.state else { continue };
                let span = prog
                    .code
                    .get(ag.pc as usize)
                    .map(|i| i.span)
                    .unwrap_or(Span::DUMMY);
                let on = match b {
                    Block::Mbar { addr, parity } => {
                        let state = match c.bars.get(&addr) {
                            Some(BarState::Live(m)) => Some(BarStateView {
                                phase: m.phase,
                                pending: m.pending,
                                expected: m.expected,
                                tx: m.tx,
                            }),
                            _ => None,
                        };
                        let hbar = c.hb.as_deref().and_then(|h| h.bar(addr));
                        let mut arrivals: Vec<Arrival> = prog
                            .allocs
                            .iter()
                            .find_map(|al| match al.place {
                                AllocPlace::Mbar { addr: a0, count }
                                    if addr >= a0 && addr < a0 + 8 * count =>
                                {
                                    sites.get(&a0)
                                }
                                _ => None,
                            })
                            .map(|v| v.iter().map(|&(p, op)| Arrival { agent: gid(p), op }).collect())
                            .unwrap_or_default();
                        for ar in hbar.map(|h| h.arrivers.as_slice()).unwrap_or_default() {
                            let x = Arrival {
                                agent: gid(ar.agent),
                                op: op_name(prog, ar.instr),
                            };
                            if !arrivals.contains(&x) {
                                arrivals.push(x);
                            }
                        }
                        let arrived =
                            c.hb.as_deref()
                                .map(|_| hbar.is_some_and(|h| !h.arrivers.is_empty()));
                        if let (Some(st), Some(hb)) = (state, hbar) {
                            if st.tx != 0 && !mismatches.iter().any(|(x, _): &(u32, _)| *x == addr) {
                                mismatches.push((addr, tx_mismatch(prog, &prog.mbar_name(addr), st.tx, hb)));
                            }
                        }
                        WaitOn::Mbar(BarWait {
                            addr: si as u32 * PER_SLOT * 16 + addr,
                            name: prog.mbar_name(addr),
                            parity,
                            state,
                            arrivals,
                            arrived,
                        })
                    }
                    Block::StoreWait { n, .. } => {
                        WaitOn::Other(format!("until at most {n} TMA store groups are pending"))
                    }
                    Block::WgmmaWait { n } => {
                        WaitOn::Other(format!("until at most {n} wgmma groups are pending"))
                    }
                    Block::Join => WaitOn::Join(ag.children.iter().map(|&ch| gid(ch)).collect()),
                    Block::TmemAlloc { cols } => WaitOn::Other(format!("for {cols} free TMEM columns")),
                    Block::ClusterSync { .. } => {
                        WaitOn::Other("in cluster.sync for the other CTAs of its cluster".to_string())
                    }
                };
                waiters.push(Waiter {
                    agent: gid(a as u32),
                    name: self.trace.unit_name(c.id, Unit::Agent(a as u32)),
                    span,
                    on,
                });
            }
        }
        for (_, d) in mismatches {
            self.report(d);
        }
        waitfor::diagnose(&waiters, &names)
    }

    // ----- asynchronous completions -----

    fn fire(&mut self, ev: Ev) -> Result<(), Stop> {
        let s = ev.slot as usize;
        self.cta(s).events = self.cta(s).events.saturating_sub(1);
        match ev.kind {
            EvKind::TmaPiece { op, lo, hi } => self.fire_tma_piece(s, op, lo, hi),
            EvKind::StoreRead { op } => self.fire_store_read(s, op),
            EvKind::StoreWrite { op } => self.fire_store_write(s, op),
            EvKind::PipeDone => self.fire_pipe(s),
            EvKind::WgmmaDone { agent, id } => {
                let c = self.cta(s);
                let cta_id = c.id;
                let ag = &mut c.agents[agent as usize];
                ag.wgmma_pending = ag.wgmma_pending.saturating_sub(1);
                self.ev(
                    cta_id,
                    Unit::Agent(agent),
                    What::Complete { op: "wgmma", id },
                    Span::DUMMY,
                );
                Ok(())
            }
        }
    }

    fn tma_op(&mut self, s: usize, op: u32) -> TmaOp {
        // Cannot fail: a TMA op is freed only after its last event fired.
        self.cta(s).tma[op as usize].clone().expect("live TMA op")
    }

    fn fire_tma_piece(&mut self, s: usize, opi: u32, lo: u64, hi: u64) -> Result<(), Stop> {
        let op = self.tma_op(s, opi);
        let prog = self.prog;
        let desc = &prog.descs[op.desc as usize];
        let cta_id = self.cta(s).id;
        if self.opts.check {
            let inner = desc.block.last().copied().unwrap_or(1) as u64;
            let (e0, e1) = match &op.kind {
                TmaKind::Gather { xs, .. } => (lo * 4 * inner, (hi * 4).min(xs.len() as u64) * inner),
                _ => (lo * inner, hi * inner),
            };
            let n = op.addrs.len() as u64;
            let range = (e0.min(n) as usize)..(e1.min(n) as usize);
            let bits = desc.dtype.bits();
            let h = self
                .hb(s)
                .and_then(|hb| hb.tma_piece(op.hb, op.bar, &op.addrs[range], bits));
            self.hazard(s, h, false);
        }
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        let slot = self.slots[s].as_mut().expect("live CTA slot");
        let g = &self.global[desc.tensor as usize];
        let r = match &op.kind {
            TmaKind::Load { coords } => tma::load_rows(desc, coords, g, &mut slot.smem, &op.addrs, lo..hi),
            TmaKind::Gather { xs, col } => {
                tma::gather_msgs(desc, xs, *col, g, &mut slot.smem, &op.addrs, lo..hi)
            }
            _ => Ok(0),
        };
        let bytes = r.map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tma, op.name))?;
        self.counters.tma_bytes += bytes;
        self.ev(
            cta_id,
            Unit::Tma,
            What::Piece {
                op: op.name,
                id: op.id,
                bytes,
            },
            op.span,
        );
        self.deliver_tx(s, op.span, op.bar, bytes, op.phase)
            .map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tma, op.name))?;
        let left = {
            // Cannot fail: a TMA op is freed only after its last event fired.
            let o = self.cta(s).tma[opi as usize].as_mut().expect("live TMA op");
            o.left -= 1;
            o.left
        };
        if left == 0 {
            self.ev(
                cta_id,
                Unit::Tma,
                What::Complete {
                    op: op.name,
                    id: op.id,
                },
                op.span,
            );
            let c = self.cta(s);
            c.tma[opi as usize] = None;
            c.tma_free.push(opi);
        }
        Ok(())
    }

    fn fire_store_read(&mut self, s: usize, opi: u32) -> Result<(), Stop> {
        let op = self.tma_op(s, opi);
        let prog = self.prog;
        let desc = &prog.descs[op.desc as usize];
        let cta_id = self.cta(s).id;
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        let slot = self.slots[s].as_ref().expect("live CTA slot");
        let mut read = Vec::new();
        let r = match &op.kind {
            TmaKind::Store { coords, .. } => tma::store_read(desc, coords, &slot.smem, &op.addrs, &mut read),
            TmaKind::Scatter { xs, col, .. } => {
                tma::scatter_read(desc, xs, *col, &slot.smem, &op.addrs, &mut read)
            }
            _ => Ok(Vec::new()),
        };
        let data = r.map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tma, op.name))?;
        if self.opts.check {
            let pc = self.hb(s).map(|h| h.op_instr(op.hb)).unwrap_or(0);
            self.check_smem_init(s, pc, &read);
            let bits = desc.dtype.bits();
            let h = self
                .hb(s)
                .and_then(|hb| hb.tma_store_read(op.hb, op.agent, &op.addrs, bits));
            self.hazard(s, h, false);
        }
        let c = self.cta(s);
        if let Some(o) = c.tma[opi as usize].as_mut() {
            match &mut o.kind {
                TmaKind::Store { data: d, .. } | TmaKind::Scatter { data: d, .. } => *d = data,
                _ => {}
            }
        }
        if let Some(g) = c.agents[op.agent as usize]
            .groups
            .iter_mut()
            .find(|g| g.id == op.id)
        {
            g.reads = g.reads.saturating_sub(1);
        }
        let delay = self.sched.latency(AsyncKind::TmaStoreWrite);
        self.schedule(s, delay, EvKind::StoreWrite { op: opi });
        Ok(())
    }

    fn fire_store_write(&mut self, s: usize, opi: u32) -> Result<(), Stop> {
        let op = self.tma_op(s, opi);
        let prog = self.prog;
        let desc = &prog.descs[op.desc as usize];
        if let TmaKind::Store { data, .. } | TmaKind::Scatter { data, .. } = &op.kind {
            tma::global_write(&mut self.global[desc.tensor as usize], data);
        }
        let cta_id = self.cta(s).id;
        self.ev(
            cta_id,
            Unit::Tma,
            What::Complete {
                op: op.name,
                id: op.id,
            },
            op.span,
        );
        let c = self.cta(s);
        let ag = &mut c.agents[op.agent as usize];
        if let Some(g) = ag.groups.iter_mut().find(|g| g.id == op.id) {
            g.writes = g.writes.saturating_sub(1);
        }
        // Bulk groups retire in commit order (`wait_group N` waits for every group but the N
        // most recent, docs/hardware/bulk-group-order.md): a finished group leaves only once
        // every older one has.
        while ag.groups.front().is_some_and(|g| g.reads == 0 && g.writes == 0) {
            ag.groups.pop_front();
        }
        c.tma[opi as usize] = None;
        c.tma_free.push(opi);
        Ok(())
    }

    fn pipe_kick(&mut self, s: usize) {
        let c = self.cta(s);
        if c.pipe_busy {
            return;
        }
        let Some(front) = c.pipe.front() else { return };
        let (kind, id, span, name) = (
            match front.kind {
                PipeKind::Mma(_) | PipeKind::MmaPair { .. } => AsyncKind::Mma,
                PipeKind::Cp { .. } => AsyncKind::Cp,
                PipeKind::Commit { .. } => AsyncKind::Commit,
            },
            front.id,
            front.span,
            front.name,
        );
        c.pipe_busy = true;
        let cta_id = c.id;
        let delay = self.sched.latency(kind);
        self.schedule(s, delay, EvKind::PipeDone);
        self.ev(cta_id, Unit::Tc, What::Start { op: name, id }, span);
    }

    fn fire_pipe(&mut self, s: usize) -> Result<(), Stop> {
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        let c = self.slots[s].as_mut().expect("live CTA slot");
        c.pipe_busy = false;
        let Some(op) = c.pipe.pop_front() else {
            return Ok(());
        };
        let cta_id = c.id;
        if self.opts.check {
            self.check_pipe_op(s, &op);
        }
        let c = self.slots[s].as_mut().expect("live CTA slot");
        let r = match &op.kind {
            PipeKind::Mma(m) => {
                self.counters.mmas += 1;
                tensor::mma(&c.smem, &mut c.tmem, m, &self.opts.mma.tcgen05)
            }
            PipeKind::MmaPair { op: m, peer } => {
                self.counters.mmas += 1;
                let peer = *peer as usize;
                // The leader's slot precedes its peer's (same slot group, rank order).
                let (lo, hi) = self.slots.split_at_mut(peer);
                match (lo[s].as_mut(), hi[0].as_mut()) {
                    (Some(l), Some(p)) => tensor::mma_pair(
                        [&l.smem, &p.smem],
                        [&mut l.tmem, &mut p.tmem],
                        m,
                        &self.opts.mma.tcgen05,
                    ),
                    _ => Err(Fault::unsupported(
                        "the peer CTA of a cta_group::2 MMA is not resident",
                    )),
                }
            }
            PipeKind::Cp { src, dst } => tensor::cp(&c.smem, &mut c.tmem, src, dst),
            PipeKind::Commit { .. } => Ok(()),
        };
        r.map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tc, op.name))?;
        self.ev(
            cta_id,
            Unit::Tc,
            What::Complete {
                op: op.name,
                id: op.id,
            },
            op.span,
        );
        if let PipeKind::Commit { bar, peer } = op.kind {
            self.bar_act(s, Unit::Tc, op.span, bar, BarAct::Arrive(1))
                .map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tc, op.name))?;
            if let Some(p) = peer {
                let pid = self.cta(p as usize).id;
                self.bar_act(p as usize, Unit::Tc, op.span, bar, BarAct::Arrive(1))
                    .map_err(|f| self.fault_stop(f, op.span, pid, Unit::Tc, op.name))?;
            }
        }
        self.pipe_kick(s);
        Ok(())
    }

    /// The checker's view of a tensor-pipe op about to run: its operand reads and its writes.
    fn check_pipe_op(&mut self, s: usize, op: &PipeOp) {
        let Some(hb) = self.hb(s) else { return };
        hb.pipe_exec(op.hb);
        let pc = hb.op_instr(op.hb);
        let smem_read = |m: &mut Self, v: &SmemView| {
            if let Some(addrs) = layout::view_addresses(v) {
                m.check_smem_init(s, pc, &addrs);
                let h = m
                    .hb(s)
                    .and_then(|hb| hb.pipe_smem(op.hb, Kind::Read, &addrs, v.dtype.bits()));
                m.hazard(s, h, false);
            }
        };
        let tmem = |m: &mut Self, v: &TmemView, kind: Kind| {
            let cells = tmem_cells(v);
            if kind == Kind::Read {
                m.check_tmem_init(s, pc, &cells);
            }
            let h = m.hb(s).and_then(|hb| hb.pipe_tmem(op.hb, kind, &cells));
            m.hazard(s, h, true);
        };
        match &op.kind {
            // A pair MMA is shadowed in the issuing CTA only: the checker's state is per CTA,
            // and the peer's half of the operands is at the same offsets.
            PipeKind::Mma(m) | PipeKind::MmaPair { op: m, .. } => {
                match &m.a {
                    AOperand::Smem(v) => smem_read(self, v),
                    AOperand::Tmem(v) => tmem(self, v, Kind::Read),
                }
                smem_read(self, &m.b);
                if let Some((sa, sb)) = &m.scales {
                    tmem(self, sa, Kind::Read);
                    tmem(self, sb, Kind::Read);
                }
                if m.use_acc {
                    tmem(self, &m.acc, Kind::Read);
                }
                tmem(self, &m.acc, Kind::Write);
            }
            PipeKind::Cp { src, dst } => {
                smem_read(self, src);
                tmem(self, dst, Kind::Write);
            }
            PipeKind::Commit { .. } => {}
        }
        // The pair's odd CTA receives its half of the accumulator: record that write in its own
        // shadow state (so its reads after the commit's phase are initialised and ordered).
        // Hazards against it are reported in the issuing CTA only.
        if let PipeKind::MmaPair { op: m, peer } = &op.kind {
            let cells = tmem_cells(&m.acc);
            if let Some(hb) = self.hb(*peer as usize) {
                let _ = hb.pipe_tmem(op.hb, Kind::Write, &cells);
            }
        }
    }

    /// Apply an action to a barrier, tracing arrivals, tx changes and phase flips.
    fn bar_act(&mut self, s: usize, unit: Unit, span: Span, addr: u32, act: BarAct) -> OpResult<()> {
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        let c = self.slots[s].as_mut().expect("live CTA slot");
        let cta_id = c.id;
        let b = c.bar(addr)?;
        let flipped = match act {
            BarAct::Arrive(n) => b.arrive(n),
            BarAct::ExpectTx(n) => b.expect_tx(n),
            BarAct::CompleteTx(n) => b.complete_tx(n),
        }
        .map_err(|e| match e {
            MbarFault::Underflow { .. } => {
                Fault::CodedTrap("over-arrival", CudaError::LaunchFailure, e.reason())
            }
            MbarFault::TxRange { .. } => Fault::trap(CudaError::LaunchFailure, e.reason()),
        })?;
        let b = *b;
        if let Some(hb) = c.hb.as_deref_mut() {
            let who = match unit {
                Unit::Agent(a) => Actor::Part(a as usize, self.cur_pc),
                Unit::Tma => Actor::Tma,
                Unit::Tc => Actor::Pipe,
            };
            let (arrival, bytes) = match act {
                BarAct::Arrive(_) => (true, 0),
                BarAct::ExpectTx(n) => (false, n),
                BarAct::CompleteTx(n) => (false, -n),
            };
            hb.bar_update(addr, who, arrival, bytes, flipped);
        }
        if flipped && self.opts.check {
            self.check_blocked_aliasing(s, addr, b.phase);
        }
        if self.opts.trace {
            let what = match act {
                BarAct::Arrive(n) => What::Arrive {
                    bar: addr,
                    count: n,
                    pending: if flipped { 0 } else { b.pending },
                },
                BarAct::ExpectTx(n) => What::ExpectTx {
                    bar: addr,
                    bytes: n,
                    tx: b.tx,
                },
                BarAct::CompleteTx(n) => What::CompleteTx {
                    bar: addr,
                    bytes: n,
                    tx: b.tx,
                },
            };
            self.ev(cta_id, unit, what, span);
            if flipped {
                self.ev(
                    cta_id,
                    unit,
                    What::PhaseFlip {
                        bar: addr,
                        phase: b.phase,
                    },
                    span,
                );
            }
        }
        Ok(())
    }

    /// TMA bytes reach the barrier in 16-byte granules [PTX.md §3, H100]: when a delivery
    /// would carry a phase whose arrivals are all in past tx = 0, the phase completes at that
    /// point and the surplus counts against the next phase (its tx-count goes negative).
    /// Bytes that land in a later phase than the one current when the copy was issued mean
    /// the `expect` was short: a `tx-mismatch` diagnostic.
    fn deliver_tx(&mut self, s: usize, span: Span, addr: u32, bytes: u64, issue_phase: u64) -> OpResult<()> {
        let mut left = bytes as i64;
        while left > 0 {
            let b = *self.cta(s).bar(addr)?;
            if b.phase > issue_phase {
                let prog = self.prog;
                let bar = prog.mbar_name(addr);
                let mut d = Diagnostic::error(
                    "tx-mismatch",
                    format!("`{bar}` completed its phase before this copy's bytes had all landed: {left} bytes overshoot the expect"),
                    span,
                    format!("delivers {left} bytes to `{bar}` after the phase it was issued in completed"),
                );
                if let Some(h) = self.hb(s).and_then(|h| h.bar(addr)) {
                    for pc in &h.prev_expect_at {
                        let sp = prog.code.get(*pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
                        d = d.with_label(sp, format!("the phase expected {} bytes in all", h.prev_expected));
                    }
                }
                let d = d
                    .with_note("the phase completed early (waiters may read bytes that have not landed) and the surplus drives the next phase's tx-count negative (PTX.md section 3)")
                    .with_help("expect exactly the bytes the copies deliver: the full box, out-of-bounds part included (`desc.nbytes`)");
                self.report(d);
            }
            let chunk = if b.pending == 0 && b.tx > 0 && b.tx < left && b.tx % 16 == 0 {
                b.tx
            } else {
                left
            };
            self.bar_act(s, Unit::Tma, span, addr, BarAct::CompleteTx(chunk))?;
            left -= chunk;
        }
        Ok(())
    }

    // ----- stepping agents -----

    fn step(&mut self, s: usize, a: usize) -> Result<(), Stop> {
        let prog = self.prog;
        let (pc, resumed, cta_id) = {
            let c = self.cta(s);
            let ag = &c.agents[a];
            (ag.pc, matches!(ag.state, AState::Blocked(_)), c.id)
        };
        let Some(instr) = prog.code.get(pc as usize) else {
            self.cta(s).agents[a].state = AState::Done;
            return Ok(());
        };
        let mut frame = std::mem::take(&mut self.cta(s).agents[a].frame);
        self.cur_pc = pc;
        let r = self.exec(s, a, instr, &mut frame, resumed);
        let name = match &instr.kind {
            IKind::Op { name, .. } => *name,
            _ => "statement",
        };
        self.cta(s).agents[a].frame = frame;
        let flow = match r {
            Ok(f) => f,
            Err(f) => return Err(self.fault_stop(f, instr.span, cta_id, Unit::Agent(a as u32), name)),
        };
        let ag = &mut self.cta(s).agents[a];
        match flow {
            Flow::Next => {
                ag.pc = pc + 1;
                ag.state = AState::Ready;
            }
            Flow::Jump(t) => {
                ag.pc = t;
                ag.state = AState::Ready;
            }
            Flow::Block(b) => {
                let first = !resumed;
                ag.state = AState::Blocked(b);
                if first {
                    let what = match b {
                        Block::Mbar { addr, parity } => What::WaitBegin { bar: addr, parity },
                        Block::StoreWait { .. } => What::Blocked { on: "tma.store_wait" },
                        Block::WgmmaWait { .. } => What::Blocked { on: "wgmma.wait" },
                        Block::Join => What::Blocked { on: "join" },
                        Block::TmemAlloc { .. } => What::Blocked { on: "tmem.alloc" },
                        Block::ClusterSync { .. } => What::Blocked { on: "cluster.sync" },
                    };
                    self.ev(cta_id, Unit::Agent(a as u32), what, instr.span);
                }
            }
            Flow::Done => {
                ag.state = AState::Done;
                self.ev(cta_id, Unit::Agent(a as u32), What::AgentEnd, instr.span);
            }
        }
        Ok(())
    }

    fn cx(&mut self, s: usize) -> EvalCtx {
        EvalCtx {
            pid: self.cta(s).pid,
            grid: self.grid,
        }
    }

    fn exec(
        &mut self,
        s: usize,
        a: usize,
        instr: &Instr,
        frame: &mut [Value],
        resumed: bool,
    ) -> OpResult<Flow> {
        let cx = self.cx(s);
        match &instr.kind {
            IKind::Eval { dsts, expr } => {
                let v = eval::eval(expr, frame, &cx)?;
                bind(frame, dsts, v)?;
                Ok(Flow::Next)
            }
            IKind::Op { op, name, dsts } => {
                self.counters.ops += 1;
                if let Some(hb) = self.hb(s) {
                    hb.step(a);
                }
                match self.exec_op(s, a, op, name, instr.span, frame, &cx, resumed)? {
                    OpFlow::Value(v) => {
                        bind(frame, dsts, v)?;
                        Ok(Flow::Next)
                    }
                    OpFlow::Next => Ok(Flow::Next),
                    OpFlow::Block(b) => Ok(Flow::Block(b)),
                }
            }
            IKind::Jump(t) => Ok(Flow::Jump(*t)),
            IKind::BranchIfNot { cond, target } => {
                let c = eval::eval(cond, frame, &cx)?;
                let b = c
                    .as_bool()
                    .ok_or_else(|| Fault::unsupported(format!("`if` condition is {}", c.kind())))?;
                Ok(if b { Flow::Next } else { Flow::Jump(*target) })
            }
            IKind::LoopInit {
                ctr,
                end,
                step,
                start_e,
                end_e,
                step_e,
            } => {
                let st = int_of(&eval::eval(step_e, frame, &cx)?, "loop step")?;
                if st == 0 {
                    return Err(Fault::error("sim-error", "`for` loop with step 0 never ends"));
                }
                frame[*ctr as usize] = Value::Int(int_of(&eval::eval(start_e, frame, &cx)?, "loop start")?);
                frame[*end as usize] = Value::Int(int_of(&eval::eval(end_e, frame, &cx)?, "loop end")?);
                frame[*step as usize] = Value::Int(st);
                Ok(Flow::Next)
            }
            IKind::LoopTest {
                ctr,
                end,
                step,
                var,
                exit,
            } => {
                let c = frame[*ctr as usize].as_int().unwrap_or(0);
                let e = frame[*end as usize].as_int().unwrap_or(0);
                let st = frame[*step as usize].as_int().unwrap_or(1);
                if crate::lower::loop_continues(c, e, st) {
                    frame[*var as usize] = Value::Int(c);
                    Ok(Flow::Next)
                } else {
                    Ok(Flow::Jump(*exit))
                }
            }
            IKind::LoopNext { ctr, step, head } => {
                let c = frame[*ctr as usize].as_int().unwrap_or(0);
                let st = frame[*step as usize].as_int().unwrap_or(1);
                frame[*ctr as usize] = Value::Int(crate::lower::loop_next(c, st));
                Ok(Flow::Jump(*head))
            }
            IKind::Fork { workers } => {
                let cta_id = self.cta(s).id;
                for w in workers {
                    let c = self.cta(s);
                    let idx = c.agents.len() as u32;
                    c.agents.push(Agent {
                        pc: w.entry,
                        frame: frame.to_vec(),
                        first_warp: w.first_warp,
                        warps: w.warps,
                        ..Agent::default()
                    });
                    c.agents[a].children.push(idx);
                    if let Some(hb) = self.hb(s) {
                        hb.fork(a, idx as usize);
                    }
                    self.ev(cta_id, Unit::Agent(idx), What::AgentStart, instr.span);
                }
                Ok(Flow::Next)
            }
            IKind::Join => {
                let c = self.cta(s);
                let done = c.agents[a]
                    .children
                    .iter()
                    .all(|&ch| c.agents[ch as usize].state == AState::Done);
                if done {
                    let children = c.agents[a].children.clone();
                    if let Some(hb) = c.hb.as_deref_mut() {
                        hb.join(a, &children);
                    }
                }
                Ok(if done {
                    Flow::Next
                } else {
                    Flow::Block(Block::Join)
                })
            }
            IKind::EndPartition | IKind::Exit => Ok(Flow::Done),
        }
    }

    fn pred(&self, p: &Option<CExpr>, frame: &[Value], cx: &EvalCtx) -> OpResult<bool> {
        match p {
            None => Ok(true),
            Some(e) => {
                let v = eval::eval(e, frame, cx)?;
                v.as_bool()
                    .ok_or_else(|| Fault::unsupported(format!("pred must be a boolean, found {}", v.kind())))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn exec_op(
        &mut self,
        s: usize,
        a: usize,
        op: &LOp,
        name: &'static str,
        span: Span,
        frame: &[Value],
        cx: &EvalCtx,
        resumed: bool,
    ) -> OpResult<OpFlow> {
        let prog = self.prog;
        let ev = |e: &CExpr| eval::eval(e, frame, cx);
        let cta_id = self.cta(s).id;
        let me = Unit::Agent(a as u32);
        match op {
            LOp::SmemAlloc { view } => Ok(OpFlow::Value(Value::Smem(*view))),
            LOp::SmemReinterpret {
                src,
                dtype,
                shape,
                layout,
            } => {
                let v = smem_of(&ev(src)?)?;
                let start = layout::view_start(&v)
                    .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
                let bytes = layout::buffer_bytes(*dtype, shape.as_slice(), *layout);
                if start as u64 + bytes > self.cta(s).smem.len() as u64 {
                    return Err(Fault::error("smem-reinterpret", format!("reinterpret of {bytes} bytes at shared byte {start} runs past the end of shared memory")));
                }
                Ok(OpFlow::Value(Value::Smem(SmemView {
                    base: start,
                    dtype: *dtype,
                    layout: *layout,
                    root: *shape,
                    origin: Dims::zeros(shape.len()),
                    dropped: 0,
                    shape: *shape,
                    alloc: v.alloc,
                })))
            }
            LOp::MbarAlloc { addr, count } => Ok(OpFlow::Value(Value::Mbar {
                addr: *addr,
                count: Some(*count),
            })),
            LOp::TmemAlloc { view, manual, cols } => {
                if !manual {
                    return Ok(OpFlow::Value(Value::Tmem(*view)));
                }
                match self.cta(s).tmem.alloc(*cols, span) {
                    Some(col) => {
                        if let Some(hb) = self.hb(s) {
                            hb.tmem_alloc(a);
                        }
                        self.ev(cta_id, me, What::TmemAlloc { col, cols: *cols }, span);
                        Ok(OpFlow::Value(Value::Tmem(TmemView { col, ..*view })))
                    }
                    None => Ok(OpFlow::Block(Block::TmemAlloc { cols: *cols })),
                }
            }
            LOp::TmemDealloc { buf } => {
                let v = tmem_of(&ev(buf)?)?;
                let c = self.cta(s);
                let cols = c
                    .tmem
                    .manual
                    .iter()
                    .find(|m| m.col == v.col)
                    .map(|m| m.cols)
                    .unwrap_or(0);
                let busy = !c.pipe.is_empty();
                c.tmem.dealloc(v.col, cols)?;
                if let Some(hb) = c.hb.as_deref_mut() {
                    hb.tmem_dealloc(a, v.col, cols);
                }
                if busy {
                    self.diags.push(
                        Diagnostic::warning("tmem-dealloc", "tmem.dealloc while tcgen05 operations are still in flight", span, "freed here")
                            .with_help("wait for the tcgen05.commit barrier that covers the last MMA before freeing its accumulator"),
                    );
                }
                self.ev(cta_id, me, What::TmemDealloc { col: v.col, cols }, span);
                Ok(OpFlow::Next)
            }
            LOp::TmaLoad {
                desc,
                coords,
                smem,
                bar,
                pred,
                gather,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpFlow::Next);
                }
                let d = &prog.descs[*desc as usize];
                let dst = smem_of(&ev(smem)?)?;
                let baddr = bar_of(&ev(bar)?)?;
                let phase = self.cta(s).bar(baddr)?.phase;
                let (kind, pieces): (TmaKind, Vec<(u64, u64)>) = if *gather {
                    let xs = ints_of(&ev(&coords[0])?)?;
                    let col = s32(
                        int_of(&ev(&coords[1])?, "the gather column")?,
                        "the gather column",
                    )?;
                    tma::check_gather(d, &xs, col, &dst, false)?;
                    let msgs = (xs.len() as u64).div_ceil(4);
                    (
                        TmaKind::Gather { xs, col },
                        (0..msgs).map(|m| (m, m + 1)).collect(),
                    )
                } else {
                    let mut cs = Vec::with_capacity(coords.len());
                    for c in coords {
                        cs.push(s32(int_of(&ev(c)?, "a TMA coordinate")?, "a TMA coordinate")?);
                    }
                    tma::check_tile(d, &cs, &dst, false)?;
                    let rows = tma::rows(d).max(1);
                    let p = self.sched.pieces(rows.min(4) as u32).max(1) as u64;
                    let per = rows.div_ceil(p);
                    let pieces = (0..p)
                        .map(|i| (i * per, ((i + 1) * per).min(rows)))
                        .filter(|(lo, hi)| lo < hi)
                        .collect();
                    (TmaKind::Load { coords: cs }, pieces)
                };
                let id = self.new_id();
                let addrs = Arc::new(tma::box_addresses(&dst)?);
                let pc = self.cur_pc;
                let hbop = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
                let opi = self.add_tma(
                    s,
                    TmaOp {
                        kind,
                        desc: *desc,
                        addrs,
                        bar: baddr,
                        phase,
                        id,
                        span,
                        agent: a as u32,
                        name,
                        left: pieces.len() as u32,
                        hb: hbop,
                    },
                );
                self.counters.async_ops += 1;
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                self.ev(cta_id, Unit::Tma, What::Start { op: name, id }, span);
                for (lo, hi) in pieces {
                    let delay = self.sched.latency(AsyncKind::TmaLoad);
                    self.schedule(s, delay, EvKind::TmaPiece { op: opi, lo, hi });
                }
                Ok(OpFlow::Next)
            }
            LOp::TmaStore {
                desc,
                coords,
                smem,
                pred,
                scatter,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpFlow::Next);
                }
                let d = &prog.descs[*desc as usize];
                let src = smem_of(&ev(smem)?)?;
                let kind = if *scatter {
                    let xs = ints_of(&ev(&coords[0])?)?;
                    let col = s32(
                        int_of(&ev(&coords[1])?, "the scatter column")?,
                        "the scatter column",
                    )?;
                    tma::check_gather(d, &xs, col, &src, true)?;
                    TmaKind::Scatter {
                        xs,
                        col,
                        data: Vec::new(),
                    }
                } else {
                    let mut cs = Vec::with_capacity(coords.len());
                    for c in coords {
                        cs.push(s32(int_of(&ev(c)?, "a TMA coordinate")?, "a TMA coordinate")?);
                    }
                    tma::check_tile(d, &cs, &src, true)?;
                    TmaKind::Store {
                        coords: cs,
                        data: Vec::new(),
                    }
                };
                let id = self.new_id();
                let addrs = Arc::new(tma::box_addresses(&src)?);
                let pc = self.cur_pc;
                let hbop = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
                let opi = self.add_tma(
                    s,
                    TmaOp {
                        kind,
                        desc: *desc,
                        addrs,
                        bar: 0,
                        phase: 0,
                        id,
                        span,
                        agent: a as u32,
                        name,
                        left: 1,
                        hb: hbop,
                    },
                );
                self.cta(s).agents[a].groups.push_back(Group {
                    id,
                    reads: 1,
                    writes: 1,
                });
                self.counters.async_ops += 1;
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                self.ev(cta_id, Unit::Tma, What::Start { op: name, id }, span);
                let delay = self.sched.latency(AsyncKind::TmaStoreRead);
                self.schedule(s, delay, EvKind::StoreRead { op: opi });
                Ok(OpFlow::Next)
            }
            LOp::TmaStoreWait { pendings, full } => {
                let pending = store_pending(&self.cta(s).agents[a], *full);
                if pending <= *pendings {
                    if let Some(hb) = self.hb(s) {
                        hb.store_wait(a);
                    }
                    if resumed {
                        self.ev(cta_id, me, What::Resumed { on: "tma.store_wait" }, span);
                    }
                    Ok(OpFlow::Next)
                } else {
                    Ok(OpFlow::Block(Block::StoreWait {
                        n: *pendings,
                        full: *full,
                    }))
                }
            }
            LOp::MbarInit { bar, count } => {
                let addr = bar_of(&ev(bar)?)?;
                let n = int_of(&ev(count)?, "the arrival count")?;
                if !(1..(1 << 20)).contains(&n) {
                    return Err(Fault::error(
                        "mbar-count",
                        format!("mbarrier expected count must be in 1..2^20, found {n}"),
                    ));
                }
                let c = self.cta(s);
                c.bars.insert(addr, BarState::Live(Mbar::init(n as u32)));
                if let Some(hb) = c.hb.as_deref_mut() {
                    hb.bar_init(addr);
                }
                self.ev(
                    cta_id,
                    me,
                    What::Init {
                        bar: addr,
                        count: n as u32,
                    },
                    span,
                );
                Ok(OpFlow::Next)
            }
            LOp::MbarTx {
                bar,
                bytes,
                pred,
                kind,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpFlow::Next);
                }
                let addr = bar_of(&ev(bar)?)?;
                let n = int_of(&ev(bytes)?, "the byte count")?;
                match kind {
                    TxKind::Expect => {
                        self.bar_act(s, me, span, addr, BarAct::ExpectTx(n))?;
                        self.bar_act(s, me, span, addr, BarAct::Arrive(1))?;
                    }
                    TxKind::ExpectTx => self.bar_act(s, me, span, addr, BarAct::ExpectTx(n))?,
                    TxKind::CompleteTx => self.bar_act(s, me, span, addr, BarAct::CompleteTx(n))?,
                }
                Ok(OpFlow::Next)
            }
            LOp::MbarArrive { bar, count, pred } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpFlow::Next);
                }
                let addr = bar_of(&ev(bar)?)?;
                let n = match count {
                    Some(c) => int_of(&ev(c)?, "the arrival count")?,
                    None => 1,
                };
                let n = u32::try_from(n).map_err(|_| {
                    Fault::trap(
                        CudaError::LaunchFailure,
                        format!("mbarrier arrive with count {n}"),
                    )
                })?;
                self.bar_act(s, me, span, addr, BarAct::Arrive(n))?;
                Ok(OpFlow::Next)
            }
            LOp::MbarWait { bar, phase } => {
                let addr = bar_of(&ev(bar)?)?;
                let parity = (int_of(&ev(phase)?, "the phase")? & 1) as u32;
                let b = *self.cta(s).bar(addr)?;
                if self.opts.check {
                    self.check_aliasing(s, a, addr, b.phase, parity);
                }
                if b.test_wait(parity) {
                    let pc = self.cur_pc;
                    if let Some(hb) = self.hb(s) {
                        hb.acquire(a, addr, pc);
                    }
                    self.ev(cta_id, me, What::WaitDone { bar: addr, parity }, span);
                    Ok(OpFlow::Next)
                } else {
                    Ok(OpFlow::Block(Block::Mbar { addr, parity }))
                }
            }
            LOp::MbarTestWait { bar, phase } => {
                let addr = bar_of(&ev(bar)?)?;
                let parity = (int_of(&ev(phase)?, "the phase")? & 1) as u32;
                let b = *self.cta(s).bar(addr)?;
                let passed = b.test_wait(parity);
                if passed {
                    let pc = self.cur_pc;
                    if let Some(hb) = self.hb(s) {
                        hb.acquire(a, addr, pc);
                    }
                }
                Ok(OpFlow::Value(Value::Bool(passed)))
            }
            LOp::MbarInvalidate { bar } => {
                let addr = bar_of(&ev(bar)?)?;
                self.cta(s).bar(addr)?;
                self.cta(s).bars.insert(addr, BarState::Invalid);
                self.ev(cta_id, me, What::Invalidate { bar: addr }, span);
                Ok(OpFlow::Next)
            }
            LOp::Fence { kind } => {
                if *kind == FenceKind::AsyncShared {
                    if let Some(hb) = self.hb(s) {
                        hb.fence(a);
                    }
                }
                self.ev(cta_id, me, What::Fence { op: name }, span);
                Ok(OpFlow::Next)
            }
            LOp::ClusterSync => {
                if resumed {
                    self.ev(cta_id, me, What::Resumed { on: "cluster.sync" }, span);
                    return Ok(OpFlow::Next);
                }
                let (cluster, size) = (self.cta(s).cluster, self.cluster_size);
                let st = self.cluster_sync.entry(cluster).or_insert((0, 0));
                let gen = st.1;
                st.0 += 1;
                if st.0 >= size {
                    *st = (0, gen + 1);
                }
                self.ev(cta_id, me, What::Fence { op: name }, span);
                if self.cluster_sync.get(&cluster).is_some_and(|st| st.1 > gen) {
                    Ok(OpFlow::Next)
                } else {
                    Ok(OpFlow::Block(Block::ClusterSync { cluster, gen }))
                }
            }
            LOp::BarSync => {
                self.ev(cta_id, me, What::Fence { op: name }, span);
                Ok(OpFlow::Next)
            }
            LOp::Mma {
                a: av,
                b,
                acc,
                scales,
                use_acc,
                pred,
                cta_group,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpFlow::Next);
                }
                let peer = if *cta_group == 2 {
                    Some(self.pair_peer(s, "tcgen05.mma")?)
                } else {
                    None
                };
                let a_op = match ev(av)? {
                    Value::Smem(v) => AOperand::Smem(v),
                    Value::Tmem(v) => AOperand::Tmem(v),
                    other => return Err(Fault::unsupported(format!("MMA A operand is {}", other.kind()))),
                };
                let bv = smem_of(&ev(b)?)?;
                let accv = tmem_of(&ev(acc)?)?;
                let sc = match scales {
                    Some((x, y)) => Some((tmem_of(&ev(x)?)?, tmem_of(&ev(y)?)?)),
                    None => None,
                };
                let ua = match use_acc {
                    Some(e) => ev(e)?.as_bool().unwrap_or(true),
                    None => true,
                };
                let m = MmaOp {
                    a: a_op,
                    b: bv,
                    acc: accv,
                    scales: sc,
                    use_acc: ua,
                };
                let kind = match peer {
                    None => PipeKind::Mma(m),
                    Some(peer) => {
                        if m.scales.is_some()
                            || !matches!(m.a, AOperand::Smem(_))
                            || accv.shape.as_slice().first() != Some(&128)
                        {
                            return Err(Fault::unsupported("the simulator models cta_group::2 MMAs with A in shared memory, no block scaling, and 128 accumulator rows per CTA (M = 256)"));
                        }
                        PipeKind::MmaPair { op: m, peer }
                    }
                };
                self.pipe_push(s, a, kind, span, name);
                Ok(OpFlow::Next)
            }
            LOp::Cp { src, dst } => {
                let sv = smem_of(&ev(src)?)?;
                let dv = tmem_of(&ev(dst)?)?;
                self.pipe_push(s, a, PipeKind::Cp { src: sv, dst: dv }, span, name);
                Ok(OpFlow::Next)
            }
            LOp::Commit { bar, pred, cta_group } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpFlow::Next);
                }
                let peer = if *cta_group == 2 {
                    Some(self.pair_peer(s, "tcgen05.commit")?)
                } else {
                    None
                };
                let addr = bar_of(&ev(bar)?)?;
                self.cta(s).bar(addr)?;
                self.pipe_push(s, a, PipeKind::Commit { bar: addr, peer }, span, name);
                Ok(OpFlow::Next)
            }
            LOp::TmemLoad { src } => {
                let v = tmem_of(&ev(src)?)?;
                let c = self.cta(s);
                let ag = &c.agents[a];
                let shape = v.shape.as_slice().to_vec();
                let n = v.shape.numel();
                let mut idx = vec![0u32; shape.len()];
                let mut bits = Vec::with_capacity(n as usize);
                // Scale factors: every warp reads the copy in its own lane quarter; the tile
                // is the first warp's.
                let quarters = if v.scales {
                    vec![ag.first_warp % 4]
                } else {
                    vec![0]
                };
                for lin in 0..n {
                    unravel(lin, &shape, &mut idx);
                    let cell = layout::tmem_element_in(&v, &idx, quarters[0]);
                    check_lane(ag, cell.lane, name)?;
                    bits.push(c.tmem.read(cell, v.dtype.bits())?);
                }
                if self.opts.check {
                    let cells = tmem_cells_in(&v, &quarters);
                    let pc = self.cur_pc;
                    self.check_tmem_init(s, pc, &cells);
                    let h = self
                        .hb(s)
                        .and_then(|hb| hb.generic_tmem(a, pc, Kind::Read, &cells));
                    self.hazard(s, h, true);
                }
                self.ev(cta_id, me, What::Exec { op: name }, span);
                Ok(OpFlow::Value(Value::Tile(Arc::new(Tile {
                    dtype: v.dtype,
                    shape,
                    bits,
                }))))
            }
            LOp::TmemStore { dst, value } => {
                let v = tmem_of(&ev(dst)?)?;
                let t = as_tile(&ev(value)?)?;
                let c = self.cta(s);
                let shape = v.shape.as_slice().to_vec();
                if t.shape != shape {
                    return Err(Fault::unsupported(format!(
                        "tmem.store of a {:?} tile into a {:?} view",
                        t.shape, shape
                    )));
                }
                let mut idx = vec![0u32; shape.len()];
                // Scale factors: each warp writes the copy in its own lane quarter
                // (docs/hardware/tmem-scales.md), so a warpgroup fills all four.
                let quarters = if v.scales {
                    partition_quarters(&c.agents[a])
                } else {
                    vec![0]
                };
                for lin in 0..v.shape.numel() {
                    unravel(lin, &shape, &mut idx);
                    for &q in &quarters {
                        let cell = layout::tmem_element_in(&v, &idx, q);
                        check_lane(&c.agents[a], cell.lane, name)?;
                        c.tmem.write(cell, v.dtype.bits(), t.bits[lin as usize])?;
                    }
                }
                if self.opts.check {
                    let cells = tmem_cells_in(&v, &quarters);
                    let pc = self.cur_pc;
                    let h = self
                        .hb(s)
                        .and_then(|hb| hb.generic_tmem(a, pc, Kind::Write, &cells));
                    self.hazard(s, h, true);
                }
                self.ev(cta_id, me, What::Exec { op: name }, span);
                Ok(OpFlow::Next)
            }
            LOp::Wgmma {
                a: av,
                b,
                acc,
                use_acc,
            } => {
                let aval = ev(av)?;
                let a_op = match &aval {
                    Value::Smem(v) => WgmmaA::Smem(*v),
                    Value::Tile(t) => WgmmaA::Regs(t),
                    other => return Err(Fault::unsupported(format!("wgmma A operand is {}", other.kind()))),
                };
                let bv = smem_of(&ev(b)?)?;
                let accv = as_tile(&ev(acc)?)?;
                let ua = match use_acc {
                    Some(e) => ev(e)?.as_bool().unwrap_or(true),
                    None => true,
                };
                let arith = self.opts.mma.wgmma;
                let r = tensor::wgmma(&self.cta(s).smem, &a_op, &bv, &accv, ua, &arith)?;
                if self.opts.check {
                    let pc = self.cur_pc;
                    let a_addrs = match &a_op {
                        WgmmaA::Smem(v) => layout::view_addresses(v).map(|x| (x, v.dtype.bits())),
                        WgmmaA::Regs(_) => None,
                    };
                    let b_addrs = layout::view_addresses(&bv).map(|x| (x, bv.dtype.bits()));
                    let mut reads: Vec<(&[(u32, u32)], u32)> = Vec::new();
                    for (x, bits) in a_addrs.iter().chain(b_addrs.iter()) {
                        self.check_smem_init(s, pc, x);
                        reads.push((x.as_slice(), *bits));
                    }
                    let h = self.hb(s).and_then(|hb| hb.wgmma(a, pc, &reads));
                    self.hazard(s, h, false);
                }
                self.counters.mmas += 1;
                self.counters.async_ops += 1;
                self.cta(s).agents[a].wgmma_pending += 1;
                self.cta(s).agents[a].wgmma_issued += 1;
                let id = self.new_id();
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                let earliest = self.now + self.sched.latency(AsyncKind::Wgmma).max(1);
                let ag = &mut self.cta(s).agents[a];
                let done = earliest.max(ag.wgmma_last_done + 1);
                ag.wgmma_last_done = done;
                self.schedule(s, done - self.now, EvKind::WgmmaDone { agent: a as u32, id });
                Ok(OpFlow::Value(Value::Tile(Arc::new(r))))
            }
            LOp::WgmmaWait { pendings } => {
                let ag = &self.cta(s).agents[a];
                if ag.wgmma_pending <= *pendings {
                    let retired = ag.wgmma_issued - ag.wgmma_pending;
                    if let Some(hb) = self.hb(s) {
                        hb.wgmma_wait(a, retired);
                    }
                    if resumed {
                        self.ev(cta_id, me, What::Resumed { on: "wgmma.wait" }, span);
                    }
                    Ok(OpFlow::Next)
                } else {
                    Ok(OpFlow::Block(Block::WgmmaWait { n: *pendings }))
                }
            }
            LOp::SmemLoad { src } => {
                let v = smem_of(&ev(src)?)?;
                let c = self.cta(s);
                let shape = v.shape.as_slice().to_vec();
                let addrs = layout::view_addresses(&v)
                    .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
                let eb = v.dtype.bits();
                let mut bits = Vec::with_capacity(addrs.len());
                for &(addr, shift) in &addrs {
                    bits.push(c.smem.read(addr, shift, eb)?);
                }
                if self.opts.check {
                    let pc = self.cur_pc;
                    self.check_smem_init(s, pc, &addrs);
                    let h = self
                        .hb(s)
                        .and_then(|hb| hb.generic_smem(a, pc, Kind::Read, &addrs, eb));
                    self.hazard(s, h, false);
                }
                Ok(OpFlow::Value(Value::Tile(Arc::new(Tile {
                    dtype: v.dtype,
                    shape,
                    bits,
                }))))
            }
            LOp::SmemStore { dst, value } => {
                let v = smem_of(&ev(dst)?)?;
                let t = as_tile(&ev(value)?)?;
                let shape = v.shape.as_slice().to_vec();
                let t = if t.shape != shape {
                    Arc::new(eval::broadcast_to(&t, &shape)?)
                } else {
                    t
                };
                let c = self.cta(s);
                let addrs = layout::view_addresses(&v)
                    .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
                let eb = v.dtype.bits();
                for (lin, &(addr, shift)) in addrs.iter().enumerate() {
                    let b = eval::convert_bits(t.dtype, v.dtype, t.bits[lin]);
                    c.smem.write(addr, shift, eb, b)?;
                }
                let pc = self.cur_pc;
                let h = self
                    .hb(s)
                    .and_then(|hb| hb.generic_smem(a, pc, Kind::Write, &addrs, eb));
                self.hazard(s, h, false);
                Ok(OpFlow::Next)
            }
            LOp::GlobalLoad {
                ptr,
                offsets,
                mask,
                other,
            } => {
                let Value::Ptr(ti) = ev(ptr)? else {
                    return Err(Fault::unsupported("global.load needs a pointer"));
                };
                let offs = ev(offsets)?;
                let maskv = match mask {
                    Some(m) => Some(ev(m)?),
                    None => None,
                };
                let otherv = match other {
                    Some(o) => Some(ev(o)?),
                    None => None,
                };
                let g = &self.global[ti as usize];
                Ok(OpFlow::Value(global_load(
                    g,
                    &offs,
                    maskv.as_ref(),
                    otherv.as_ref(),
                )?))
            }
            LOp::GlobalStore {
                ptr,
                offsets,
                value,
                mask,
            } => {
                let Value::Ptr(ti) = ev(ptr)? else {
                    return Err(Fault::unsupported("global.store needs a pointer"));
                };
                let offs = ev(offsets)?;
                let val = ev(value)?;
                let maskv = match mask {
                    Some(m) => Some(ev(m)?),
                    None => None,
                };
                global_store(&mut self.global[ti as usize], &offs, &val, maskv.as_ref())?;
                Ok(OpFlow::Next)
            }
        }
    }

    /// The slot of the odd CTA of the pair whose even CTA (in slot `s`) issues a `cta_group::2`
    /// operation.
    fn pair_peer(&mut self, s: usize, op: &str) -> OpResult<u32> {
        if self.cluster_size != 2 {
            return Err(Fault::error(
                "cta-pair",
                format!(
                    "{op} with cta_group=2 needs a cluster of 2 CTAs, the launch has {}",
                    self.cluster_size
                ),
            )
            .with_help("add `cluster = [2]` to the launch section"));
        }
        if self.cta(s).rank != 0 {
            return Err(Fault::unsupported(format!(
                "{op} with cta_group=2 issued by the odd CTA of its pair; the simulator models the pair's operations issued by the even CTA, as CUTLASS does"
            )));
        }
        Ok(s as u32 + 1)
    }

    fn add_tma(&mut self, s: usize, op: TmaOp) -> u32 {
        let c = self.cta(s);
        match c.tma_free.pop() {
            Some(i) => {
                c.tma[i as usize] = Some(op);
                i
            }
            None => {
                c.tma.push(Some(op));
                (c.tma.len() - 1) as u32
            }
        }
    }

    fn pipe_push(&mut self, s: usize, a: usize, kind: PipeKind, span: Span, name: &'static str) {
        let id = self.new_id();
        self.counters.async_ops += 1;
        let pc = self.cur_pc;
        let hb = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
        let c = self.cta(s);
        let cta_id = c.id;
        c.pipe.push_back(PipeOp {
            kind,
            id,
            span,
            name,
            hb,
        });
        self.ev(cta_id, Unit::Agent(a as u32), What::Issue { op: name, id }, span);
        self.pipe_kick(s);
    }
}

enum OpFlow {
    Value(Value),
    Next,
    Block(Block),
}

fn can_resume(c: &Cta, ag: &Agent, b: Block) -> bool {
    match b {
        Block::Mbar { addr, parity } => match c.bars.get(&addr) {
            Some(BarState::Live(m)) => m.test_wait(parity),
            _ => true,
        },
        Block::StoreWait { n, full } => store_pending(ag, full) <= n,
        Block::WgmmaWait { n } => ag.wgmma_pending <= n,
        Block::Join => ag
            .children
            .iter()
            .all(|&ch| c.agents[ch as usize].state == AState::Done),
        Block::TmemAlloc { cols } => c.tmem.can_alloc(cols),
        // Decided by the machine, which holds the cluster's state.
        Block::ClusterSync { .. } => false,
    }
}

/// The `.tile` name of the operation at instruction `pc`.
fn op_name(prog: &Program, pc: u32) -> &'static str {
    match prog.code.get(pc as usize).map(|i| &i.kind) {
        Some(IKind::Op { name, .. }) => name,
        _ => "an operation",
    }
}

/// The `tx-mismatch` of a barrier that will never complete its phase: `tx` is its transaction
/// count (expected minus delivered bytes).
fn tx_mismatch(prog: &Program, bar: &str, tx: i64, hb: &crate::hazards::BarHb) -> Diagnostic {
    let span = |pc: &u32| prog.code.get(*pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
    let expects: Vec<Span> = hb.expect_at.iter().map(span).collect();
    let delivers: Vec<Span> = hb.deliver_at.iter().map(span).collect();
    let mut d = if tx < 0 {
        let primary = delivers.first().copied().unwrap_or(Span::DUMMY);
        let mut d = Diagnostic::error(
            "tx-mismatch",
            format!(
                "`{bar}` received {} bytes more than its phase expects: the phase can never complete",
                -tx
            ),
            primary,
            format!("delivers bytes to `{bar}`"),
        );
        for s in delivers.iter().skip(1) {
            d = d.with_label(*s, "delivers bytes too");
        }
        for s in &expects {
            d = d.with_label(*s, format!("expects bytes on `{bar}`"));
        }
        d.with_help(if expects.is_empty() {
            format!("add `mbar.expect {bar}, BYTES` (BYTES: everything the copies deliver, e.g. `desc.nbytes` per copy) before the copies, in the phase they complete")
        } else {
            "expect exactly the bytes the copies deliver: the full box of each, out-of-bounds part included".to_string()
        })
    } else {
        let primary = expects.first().copied().unwrap_or(Span::DUMMY);
        let mut d = Diagnostic::error(
            "tx-mismatch",
            format!("`{bar}` still expects {tx} bytes that no copy in flight will deliver: the phase can never complete"),
            primary,
            format!("expects bytes on `{bar}`"),
        );
        for s in &delivers {
            d = d.with_label(*s, format!("delivers bytes to `{bar}`"));
        }
        d.with_help(
            "expect only the bytes that the copies issued on this barrier deliver (`desc.nbytes` per copy)",
        )
    };
    d = d.with_note(format!(
        "in the current phase: {} bytes expected, {} bytes delivered (PTX.md section 3: the phase completes only when the transaction count returns to zero)",
        hb.expected, hb.delivered
    ));
    d
}

/// Bulk groups a `tma.store_wait` still waits for: groups retire oldest first, so every group
/// from the oldest one still pending (reading, or also writing when `full`) counts
/// (docs/hardware/bulk-group-order.md).
fn store_pending(ag: &Agent, full: bool) -> u32 {
    pending_groups(&ag.groups, full)
}

/// The TMEM cells `(lane, column)` of every element of a view (consecutive duplicates of
/// packed elements removed); a scale-factor view's copies in all four lane quarters (what the
/// tensor pipe reads and `tcgen05.cp` writes).
fn tmem_cells(v: &TmemView) -> Vec<(u32, u32)> {
    if v.scales {
        tmem_cells_in(v, &[0, 1, 2, 3])
    } else {
        tmem_cells_in(v, &[0])
    }
}

/// [`tmem_cells`] restricted to the copies in `quarters` (scale-factor views only; other
/// views have one copy).
fn tmem_cells_in(v: &TmemView, quarters: &[u32]) -> Vec<(u32, u32)> {
    let shape = v.shape.as_slice();
    let n = v.shape.numel();
    let mut idx = vec![0u32; shape.len()];
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(n as usize * quarters.len());
    for &q in quarters {
        for lin in 0..n {
            unravel(lin, shape, &mut idx);
            let c = layout::tmem_element_in(v, &idx, q);
            if out.last() != Some(&(c.lane, c.col)) {
                out.push((c.lane, c.col));
            }
        }
    }
    out
}

/// The lane quarters a partition's warps reach (warp w reaches quarter w % 4).
fn partition_quarters(ag: &Agent) -> Vec<u32> {
    let mut q: Vec<u32> = (0..ag.warps.min(4)).map(|w| (ag.first_warp + w) % 4).collect();
    q.sort_unstable();
    q.dedup();
    q
}

/// A partition's warps reach the TMEM lanes of their quarter only (PTX.md section 8).
fn check_lane(ag: &Agent, lane: u32, op: &str) -> OpResult<()> {
    let q = lane / 32;
    if (0..ag.warps.min(4)).any(|w| (ag.first_warp + w) % 4 == q) {
        return Ok(());
    }
    Err(Fault::trap(
        CudaError::IllegalInstruction,
        format!(
            "{op} touches TMEM lane {lane}, but this partition's warps {}..{} may access only lanes {} (warp w reaches lanes 32*(w%4)..32*(w%4)+31)",
            ag.first_warp,
            ag.first_warp + ag.warps.saturating_sub(1),
            (0..ag.warps.min(4)).map(|w| format!("{}..{}", 32 * ((ag.first_warp + w) % 4), 32 * ((ag.first_warp + w) % 4) + 31)).collect::<Vec<_>>().join(", ")
        ),
    ))
}

fn bind(frame: &mut [Value], dsts: &[u32], v: Value) -> OpResult<()> {
    match dsts {
        [] => Ok(()),
        [d] => {
            frame[*d as usize] = v;
            Ok(())
        }
        many => match v {
            Value::Tuple(parts) if parts.len() == many.len() => {
                for (d, p) in many.iter().zip(parts.iter()) {
                    frame[*d as usize] = p.clone();
                }
                Ok(())
            }
            other => Err(Fault::unsupported(format!(
                "{} names bound to {}",
                many.len(),
                other.kind()
            ))),
        },
    }
}

fn shape_of(v: &Value) -> Vec<u32> {
    match v {
        Value::Tile(t) => t.shape.clone(),
        _ => vec![1],
    }
}

fn elem_i(v: &Value, i: usize) -> i64 {
    match v {
        Value::Tile(t) => t.i(i),
        other => other.as_int().unwrap_or(0),
    }
}

fn elem_bits(v: &Value, i: usize, dtype: bwsim_isa::DType) -> OpResult<u64> {
    match v {
        Value::Tile(t) => Ok(eval::convert_bits(t.dtype, dtype, t.bits[i])),
        other => eval::scalar_bits(dtype, other),
    }
}

fn oob(g: &HostTensor, off: i64, what: &str) -> Fault {
    Fault::trap(
        CudaError::IllegalAddress,
        format!(
            "{what} at element offset {off} of tensor `{}`, which has {} elements",
            g.name,
            g.numel()
        ),
    )
}

fn global_load(g: &HostTensor, offs: &Value, mask: Option<&Value>, other: Option<&Value>) -> OpResult<Value> {
    let os = shape_of(offs);
    let shape = match mask {
        Some(m) => broadcast_shapes(&os, &shape_of(m))
            .ok_or_else(|| Fault::unsupported("mask does not broadcast with the offsets"))?,
        None => os.clone(),
    };
    let (bo, bm) = (
        BIndex::new(&os, &shape),
        mask.map(|m| BIndex::new(&shape_of(m), &shape)),
    );
    let bother = other.map(|o| BIndex::new(&shape_of(o), &shape));
    let n: u64 = shape.iter().map(|&x| x as u64).product();
    let mut bits = Vec::with_capacity(n as usize);
    for lin in 0..n {
        let on = match (mask, &bm) {
            (Some(m), Some(b)) => elem_i(m, b.at(lin)) != 0,
            _ => true,
        };
        if !on {
            bits.push(match (other, &bother) {
                (Some(o), Some(b)) => elem_bits(o, b.at(lin), g.dtype)?,
                _ => 0,
            });
            continue;
        }
        let off = elem_i(offs, bo.at(lin));
        if off < 0 || off as u64 >= g.numel() {
            return Err(oob(g, off, "global.load"));
        }
        bits.push(g.get_bits(off as u64));
    }
    Ok(Value::Tile(Arc::new(Tile {
        dtype: g.dtype,
        shape,
        bits,
    })))
}

fn global_store(g: &mut HostTensor, offs: &Value, val: &Value, mask: Option<&Value>) -> OpResult<()> {
    let os = shape_of(offs);
    let vs = shape_of(val);
    let mut shape =
        broadcast_shapes(&os, &vs).ok_or_else(|| Fault::unsupported("offsets and value do not broadcast"))?;
    if let Some(m) = mask {
        shape = broadcast_shapes(&shape, &shape_of(m))
            .ok_or_else(|| Fault::unsupported("mask does not broadcast"))?;
    }
    let (bo, bv) = (BIndex::new(&os, &shape), BIndex::new(&vs, &shape));
    let bm = mask.map(|m| BIndex::new(&shape_of(m), &shape));
    let n: u64 = shape.iter().map(|&x| x as u64).product();
    for lin in 0..n {
        if let (Some(m), Some(b)) = (mask, &bm) {
            if elem_i(m, b.at(lin)) == 0 {
                continue;
            }
        }
        let off = elem_i(offs, bo.at(lin));
        if off < 0 || off as u64 >= g.numel() {
            return Err(oob(g, off, "global.store"));
        }
        let b = elem_bits(val, bv.at(lin), g.dtype)?;
        g.set_bits(off as u64, b);
    }
    Ok(())
}

#[cfg(test)]
mod store_group_tests {
    use super::*;

    fn g(id: u64, reads: u32, writes: u32) -> Group {
        Group { id, reads, writes }
    }

    #[test]
    fn store_wait_counts_from_the_oldest_unfinished_group() {
        // The newer group finished reading first: the older one still reads, so both count.
        let q: VecDeque<Group> = [g(1, 1, 1), g(2, 0, 1)].into_iter().collect();
        assert_eq!(pending_groups(&q, false), 2);
        assert_eq!(pending_groups(&q, true), 2);
        // A finished newer group still counts while it is queued behind an older one.
        let q: VecDeque<Group> = [g(1, 1, 1), g(2, 0, 0)].into_iter().collect();
        assert_eq!(pending_groups(&q, false), 2);
        // In order: only the newest still reads.
        let q: VecDeque<Group> = [g(1, 0, 1), g(2, 1, 1)].into_iter().collect();
        assert_eq!(pending_groups(&q, false), 1);
        assert_eq!(pending_groups(&q, true), 2);
        let q: VecDeque<Group> = [g(1, 0, 1), g(2, 0, 1)].into_iter().collect();
        assert_eq!(pending_groups(&q, false), 0);
        assert_eq!(pending_groups(&q, true), 2);
        assert_eq!(pending_groups(&VecDeque::new(), true), 0);
    }
}
