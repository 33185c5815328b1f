//! The functional machine: CTAs, their agents (partitions), TMA units and tensor pipes, driven
//! by a [`Scheduler`] over logical time.
//!
//! - An agent is a program counter and a frame ([`crate::lower`]). It executes one instruction
//!   per step; its control flow is [`crate::interp`]'s (this machine is one [`Effects`] handler
//!   of it, the timing engine the other). A blocking instruction (`mbar.wait`,
//!   `tma.store_wait`, `wgmma.wait`, the join at the end of `warp_specialize`, a
//!   `tcgen05.alloc` that cannot be satisfied) leaves the program counter where it is and is
//!   re-executed once its condition holds (hardware polls the same way, so a waiter that is
//!   scheduled late may find the barrier moved on).
//! - Issue ops (TMA, mbarrier expect/arrive, tcgen05.mma/cp/commit) execute once per partition.
//! - Asynchronous work becomes timed events: TMA pieces, store reads and writes, the tensor
//!   pipe's in-order operations, wgmma groups. Latencies and same-time orders come from the
//!   scheduler, so a seed fixes the whole run.
//! - When no agent can run and nothing is in flight, the run stops at once with a `deadlock`
//!   diagnostic naming every waiter and the state of what it waits on.
//!
//! CTAs run in groups of `ctas_in_flight` (a new one starts when one retires). The CTAs of a
//! cluster (along x) are admitted and retired together, so that the cluster barrier
//! (`cluster.sync`, `cluster.arrive`/`cluster.wait`), distributed shared memory (`smem.load`/
//! `smem.store ..., cta=R`), remote arrivals (`mbar.arrive ..., cta=R`) and the pair operations
//! of `cta_group::2` (each pair of ranks 2k, 2k + 1: an MMA issued by the even CTA reading both
//! CTAs' shared memory and writing both tensor memories; a commit arriving on both CTAs'
//! barrier) see their peers, and multicast TMA loads land in every CTA of their mask
//! (`cluster.rs` says where).
//!
//! This module holds the machine's state and the main loop; `checks` holds the hazard checker's
//! hooks, `deadlock` what is reported when a run cannot go on; `asyncs` fires the asynchronous completions, `exec` steps agents and executes operations,
//! `cluster` is what one CTA does to another (peer memory and barriers, multicast destinations,
//! the cluster barrier), `global` reads and writes global memory for the warps.

mod asyncs;
mod checks;
mod cluster;
mod deadlock;
mod exec;
mod global;
mod sinks;
mod tensormaps;

use bwsim_isa::Code;
pub(crate) use cluster::{check_cluster_mask, check_cluster_rank, check_pair_issuer};
use global::*;

use crate::check::global::{GlobalHb, Place, Scope, Sem, Sync, SyncEntry};
use crate::check::hazards::{Accessor, Actor, CtaHb};
use crate::check::hb::{Hazard, Kind, Proxy, VClock};
use crate::diagnostics;
use crate::eval::{self, as_tile, broadcast_shapes, BIndex, EvalCtx};
use crate::interp::{self, Bound, Effects, Flow, OpDone};
use crate::limits::{self, Guard};
use crate::lower::{
    cluster_barrier, fences, lop_group_waits, lop_views, lowered_apart, mbar_quiet, AllocPlace, CExpr,
    DescInfo, IKind, LOp, Program, WorkerSpec,
};
use crate::mbarrier::{self, Mbar, MbarFault};
use crate::memory::{Smem, Tmem};
use crate::mma::{self, AOperand, MmaOp, WgmmaA};
use crate::sched::{AgentRef, AsyncKind, Scheduler};
use crate::taint::{Reached, Sink, SlotTaint, SmemTaint};
use crate::tma;
use crate::trace::{Event, Trace, Unit, What};
use crate::trap::{CudaError, Fault, OpResult, Trap};
use crate::value::*;
use crate::views;
use crate::waitfor::{self, Arrival, BarStateView, BarWait, WaitOn, Waiter};
use bwsim_isa::ir::OpKind as K;
use bwsim_isa::launch::HostTensor;
use bwsim_isa::limits::{Limit, Limits};
use bwsim_isa::typeck::AtomicOp;
use bwsim_isa::{Diagnostic, Span};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
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
    /// How tcgen05 MMAs are computed (a memo shared across runs, threads per MMA); never
    /// changes a result.
    pub mma_exec: crate::mma::MmaExec,
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
            mma_exec: Default::default(),
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
    /// CTAs whose launch a `clc.try_cancel` cancelled (they never run; their work is the
    /// canceller's).
    #[serde(skip_serializing_if = "is_zero")]
    pub ctas_canceled: u64,
    /// Final logical time.
    pub time: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
    /// `cp.async.wait`: until the partition's groups up to `upto` have landed.
    CpAsyncWait {
        n: u32,
        upto: u32,
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
    /// (`wgmma.wait_group N` waits for all but the N most recent, docs/semantics.md#wgmma).
    wgmma_last_done: u64,
    /// `cp.async` groups committed so far (the open group is `cp_committed + 1`).
    cp_committed: u32,
    /// Copies not yet landed, by group.
    cp_pending: BTreeMap<u32, u32>,
    /// The checker's time of this partition's copies ([`crate::check::hazards::Comp::CpAsync`]):
    /// `cp_splits + 1`, where `cp_splits` counts the commits and `cp.async.arrive`s so far, so
    /// that an arrival releases exactly the copies issued before it.
    cp_splits: u32,
    /// The checker's time of the last copies of each committed group (group `g` at `g - 1`).
    cp_group_end: Vec<u32>,
    /// Copies issued so far (a copy's sequence number is the count before it) and those not
    /// yet landed.
    cp_seq: u64,
    cp_inflight: BTreeSet<u64>,
    /// `cp.async.arrive`s waiting for their copies, in issue order.
    cp_arrives: VecDeque<CpArrive>,
    children: Vec<u32>,
    /// The cluster-barrier phase this partition arrived in (`cluster.arrive`) and has not
    /// waited for yet.
    cluster_arrived: Option<u64>,
    /// Frame slots holding values computed from undefined bytes, with their origin
    /// ([`crate::taint`]; empty unless checking).
    undef: SlotTaint,
}

/// What the releases of a cluster barrier's phase publish, per CTA id: the join of the
/// arriving partitions' knowledge of that CTA's components (its own partitions' clocks, and
/// what peers knew of it). `completed` is the last completed phase's, with its number.
#[derive(Clone, Debug, Default)]
struct ClusterHb {
    running: BTreeMap<u32, VClock>,
    completed: (u64, BTreeMap<u32, VClock>),
}

#[derive(Clone, Debug)]
enum PipeKind {
    Mma(MmaOp),
    /// A `cta_group::2` MMA issued by the even CTA of a pair; `peer` is the odd CTA's slot,
    /// `peer_hb` the checker's op index in the odd CTA (its halves are checked there).
    MmaPair {
        op: MmaOp,
        peer: u32,
        peer_hb: u32,
    },
    Cp {
        src: SmemView,
        dst: TmemView,
    },
    /// `own`: arrive on the barrier in the issuing CTA; `peers`: also on the barrier at the
    /// same address in these CTAs' slots (the pair's odd CTA, a multicast mask).
    Commit {
        bar: u32,
        own: bool,
        peers: Vec<u32>,
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
        msgs: tma::Msgs,
    },
    Gather {
        xs: Vec<i64>,
        col: i64,
    },
    Store {
        msgs: tma::Msgs,
        data: tma::StoreData,
        /// A reducing store: each element combined into global memory when it lands.
        reduce: Option<bwsim_isa::value_types::TmaReduceOp>,
    },
    Scatter {
        xs: Vec<i64>,
        col: i64,
        data: tma::StoreData,
    },
}

#[derive(Clone, Debug)]
struct TmaOp {
    kind: TmaKind,
    /// Where the data lands and whose barrier its bytes complete on: the issuing CTA alone or
    /// every CTA of a multicast mask, each on its own barrier or (`bar_cta`) on its pair
    /// leader's.
    dests: Vec<TmaDest>,
    desc: u32,
    /// The CTA's tensor map when `desc` was built on the device (read at the issue).
    map: Option<Arc<DescInfo>>,
    /// Shared-memory address of every element moved: each message's box in box order, one
    /// message after another (gather/scatter: the rows in order).
    addrs: Arc<Vec<(u32, u32)>>,
    bar: u32,
    id: u64,
    span: Span,
    agent: u32,
    name: &'static str,
    left: u32,
    /// The checker's async-op index.
    hb: u32,
}

impl TmaOp {
    /// The descriptor the copy reads: the CTA's tensor map, or the program's parameter.
    fn desc_info<'a>(&'a self, prog: &'a Program) -> &'a DescInfo {
        self.map.as_deref().unwrap_or(&prog.descs[self.desc as usize])
    }
}

/// One destination of a TMA load.
#[derive(Clone, Copy, Debug)]
struct TmaDest {
    /// The slot whose shared memory receives the box.
    slot: u32,
    /// The checker's op index in that slot's CTA.
    hb: u32,
    /// The slot whose barrier the bytes complete on, and that barrier's phase at the issue.
    bar_slot: u32,
    phase: u64,
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
    CpAsyncLand(Box<CpLand>),
    /// A `clc.try_cancel` response lands.
    Clc(Box<ClcReq>),
}

/// One `clc.try_cancel` in flight: where its 16-byte response goes and what it completes.
#[derive(Clone, Debug)]
struct ClcReq {
    /// Shared-memory (address, bit shift) of each element of the response view.
    addrs: Arc<Vec<(u32, u32)>>,
    elem_bits: u32,
    bar: u32,
    id: u64,
    span: Span,
    name: &'static str,
    /// Where the response lands: the issuer's CTA, or with `multicast=true` every CTA of its
    /// cluster (same shared address, each CTA's barrier at the same offset), each with the
    /// checker's op index in that CTA and its barrier's phase at the issue.
    dests: Vec<TmaDest>,
}

/// One `cp.async` landing: the elements (shared address, bit shift, bits) it writes.
/// A `cp.async.arrive` whose arrivals wait for the copies issued before it.
#[derive(Clone, Debug)]
struct CpArrive {
    /// The copies with a sequence number below this one must have landed.
    before: u64,
    addr: u32,
    /// One arrival per thread of the partition.
    count: u32,
    /// The checker's async-op index and the copies' time it releases.
    hb: u32,
    upto: u32,
    span: Span,
}

#[derive(Clone, Debug)]
struct CpLand {
    agent: u32,
    group: u32,
    /// The copy's checker time and sequence number ([`Agent::cp_splits`], [`Agent::cp_seq`]).
    time: u32,
    seq: u64,
    /// The checker's async-op index.
    hb: u32,
    id: u64,
    bits: u32,
    writes: Vec<(u32, u32, u64)>,
    span: Span,
}

#[derive(Clone, Copy, Debug)]
enum BarState {
    /// Initialised by the `mbar.init` at this span.
    Live(Mbar, Span),
    /// Invalidated by the `mbar.invalidate` at this span.
    Invalid(Span),
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
    /// Whether the CTA has read a `clc.try_cancel` response that cancelled nothing (PTX: a
    /// later `try_cancel` is undefined behaviour).
    clc_failed: Option<Span>,
    /// Shared-memory bytes holding undefined values stored there ([`crate::taint`]).
    smem_undef: SmemTaint,
    /// The CTA's tensor maps of the descriptors built on the device, by descriptor index.
    tensormaps: Vec<Option<tensormaps::TensorMap>>,
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
    reported: HashSet<(Code, u32, u32)>,
    /// Set while an operation reads undefined bytes: the origin its result carries.
    undef_now: Option<u32>,
    /// Where the undefined bytes of each `uninit-read` went ([`crate::taint`]).
    reached: Reached,
    /// CTAs per cluster (1 without clusters).
    cluster_size: u32,
    /// `cluster.sync` state per live cluster: (arrivals of the current generation, generation).
    cluster_sync: BTreeMap<u64, (u32, u64)>,
    /// The checker's cluster-barrier state per live cluster (when checking).
    cluster_hb: BTreeMap<u64, ClusterHb>,
    /// The checker's shadow of global memory, shared by every CTA (when checking).
    global_hb: Option<GlobalHb>,
    guard: Guard,
    /// MMAs being computed ahead on other threads, by CTA slot and pipe-op id
    /// ([`crate::mma::MmaExec::ahead`]).
    ahead: HashMap<(usize, u64), crate::mma::AheadMma>,
    /// The thread computing them, started by the first.
    ahead_worker: Option<crate::mma::AheadWorker>,
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
            Code::SimUnsupported,
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
    let global_hb = opts.check.then(|| GlobalHb::new(prog, inputs.len()));
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
        undef_now: None,
        reached: Reached::default(),
        cluster_size,
        cluster_sync: BTreeMap::new(),
        cluster_hb: BTreeMap::new(),
        global_hb,
        guard: Guard::start(&opts.limits),
        ahead: HashMap::new(),
        ahead_worker: None,
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
    if m.opts.check {
        m.reached.annotate(&mut m.diags, prog);
    }
    RunResult {
        tensors: m.global,
        outcome,
        trap,
        diagnostics: m.diags,
        trace: m.trace,
        counters: m.counters,
    }
}

/// The fault of an operand that is not `what` (it is `other`).
fn expected(what: &str, other: &Value) -> Fault {
    Fault::unsupported(format!("expected {what}, found {}", other.kind()))
}

/// The `(byte, bit shift)` of every element of a shared view ([`views::view_addresses`]).
type ViewAddrs = Arc<Vec<(u32, u32)>>;

fn smem_of(v: &Value) -> OpResult<SmemView> {
    match v {
        Value::Smem(s) => Ok(*s),
        other => Err(expected("a shared-memory view", other)),
    }
}

fn tmem_of(v: &Value) -> OpResult<TmemView> {
    match v {
        Value::Tmem(s) => Ok(*s),
        other => Err(expected("a tensor-memory view", other)),
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
        other => Err(expected("one mbarrier", other)),
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
            Code::OperandRange,
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
            Some(BarState::Live(m, _)) => Ok(m),
            Some(BarState::Invalid(at)) => {
                Err(diagnostics::barrier_after_invalidate(addr).with_label(*at, "invalidated here"))
            }
            None => Err(diagnostics::barrier_before_init(addr)),
        }
    }
}

/// One mbarrier action.
#[derive(Clone, Copy, Debug)]
enum BarAct {
    Arrive(u32),
    /// Add to the pending arrivals (`cp.async.arrive` without `noinc`).
    Increment(u32),
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

    /// Record that async operation `op` (issue number `id`) completed on `unit`.
    fn ev_complete(&mut self, cta: u32, unit: Unit, op: &'static str, id: u64, span: Span) {
        self.ev(cta, unit, What::Complete { op, id }, span);
    }

    fn fault_stop(&mut self, f: Fault, span: Span, cta: u32, unit: Unit, op: &'static str) -> Stop {
        let (error, reason, code) =
            match f {
                Fault::CodedTrap(code, error, reason) => (error, reason, code),
                Fault::Trap(error, reason) => (error, reason, error.code()),
                Fault::Error {
                    code,
                    message,
                    help,
                    label,
                } => {
                    let mut d = Diagnostic::error(code, message, span, format!("in `{op}`"))
                        .with_note(format!("{} at t={}", self.trace.unit_name(cta, unit), self.now));
                    if let Some((at, what)) = label {
                        d = d.with_label(at, what);
                    }
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
                let visible: Vec<bool> = if self.sched.wants_visibility() {
                    self.runnable.iter().map(|r| self.visible_next(*r)).collect()
                } else {
                    Vec::new()
                };
                if let Some(&Reverse((t, _, _))) = self.queue.peek() {
                    if self.sched.stall_among(&self.runnable, &visible) {
                        self.now = self.now.max(t);
                        continue;
                    }
                }
                self.sched.at_time(self.now);
                let i = if self.sched.wants_visibility() {
                    self.sched.pick_among(&self.runnable, &visible)
                } else {
                    self.sched.pick(&self.runnable)
                };
                let i = i.min(self.runnable.len() - 1);
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
                clc_failed: None,
                smem_undef: SmemTaint::default(),
                tensormaps: Vec::new(),
            });
            self.sched.admitted(s as u32, id as u32);
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
                self.cluster_hb.remove(&c.cluster);
            }
            self.check_cluster_exit(s);
            let Some(c) = self.slots[s].take() else { continue };
            self.counters.ctas += 1;
            for a in &c.tmem.manual {
                let d = diagnostics::tmem_leak(c.id, a.col, a.cols, a.span);
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

    /// Whether agent `r`'s next step can be observed by another agent: a wait that completes,
    /// an operation (memory, barriers, asynchronous work), the start or end of partitions.
    /// Evaluations, jumps and loop bookkeeping touch only the agent's own registers.
    fn visible_next(&self, r: AgentRef) -> bool {
        let Some(c) = self.slots[r.cta as usize].as_ref() else {
            return true;
        };
        let ag = &c.agents[r.agent as usize];
        if !matches!(ag.state, AState::Ready) {
            return true;
        }
        !matches!(
            self.prog.code.get(ag.pc as usize).map(|i| &i.kind),
            Some(
                IKind::Eval { .. }
                    | IKind::Jump(_)
                    | IKind::BranchIfNot { .. }
                    | IKind::LoopInit { .. }
                    | IKind::LoopTest { .. }
                    | IKind::LoopNext { .. }
            )
        )
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
}

fn can_resume(c: &Cta, ag: &Agent, b: Block) -> bool {
    match b {
        Block::Mbar { addr, parity } => match c.bars.get(&addr) {
            Some(BarState::Live(m, _)) => m.test_wait(parity),
            _ => true,
        },
        Block::StoreWait { n, full } => store_pending(ag, full) <= n,
        Block::WgmmaWait { n } => ag.wgmma_pending <= n,
        Block::CpAsyncWait { upto, .. } => ag.cp_pending.range(..=upto).next().is_none(),
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

/// Bulk groups a `tma.store_wait` still waits for: groups retire oldest first, so every group
/// from the oldest one still pending (reading, or also writing when `full`) counts
/// (docs/hardware/bulk-group-order.md).
fn store_pending(ag: &Agent, full: bool) -> u32 {
    pending_groups(&ag.groups, full)
}

/// The TMEM cells `(lane, column)` of a view's copies in `quarters` (scale-factor views have
/// one in each quarter, other views one in all), consecutive duplicates of packed elements
/// removed.
fn tmem_cells_in(v: &TmemView, quarters: &[u32]) -> std::sync::Arc<Vec<(u32, u32)>> {
    let mask = quarters
        .iter()
        .filter(|&&q| q < 4)
        .fold(0u8, |m, &q| m | (1 << q));
    views::tmem_view_lane_cols(v, mask)
}

/// The lane quarters a partition's warps reach (warp w reaches quarter w % 4).
fn partition_quarters(ag: &Agent) -> Vec<u32> {
    let mut q: Vec<u32> = (0..ag.warps.min(4)).map(|w| (ag.first_warp + w) % 4).collect();
    q.sort_unstable();
    q.dedup();
    q
}

/// A partition's warps reach the TMEM lanes of their quarter only
/// (docs/semantics.md#tensor-memory).
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
