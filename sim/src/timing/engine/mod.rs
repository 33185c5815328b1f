//! The discrete-event engine: SMs holding resident CTAs, each CTA's partitions executing the
//! lowered program, and the asynchronous units (TMA, tensor pipe) as bandwidth queues, over
//! time in SM cycles.
//!
//! **Agents run ahead.** A partition executes instructions in its own local time. Instructions
//! that touch only its frame (scalar `let`s, loops, branches) simply add their cost. Before an
//! instruction that touches shared state (a barrier, a unit's queue, the memory system) the
//! agent synchronises: if an event of the queue lies before its local time, it yields and is
//! resumed at that time; otherwise the global clock moves to its local time and it goes on.
//! So shared state is always changed in time order, and a partition costs one queue operation
//! per synchronising instruction at most.
//!
//! **Completion times are computed at issue.** A TMA load's completion is known when it is
//! issued (the memory system's queues are FIFO), so it becomes one `complete_tx` event; an MMA's
//! end is known from the tensor pipe's queue; a store group's read and write ends are stored with
//! the group, so `tma.store_wait` and `wgmma.wait` need no event at all.
//!
//! **Barriers** are the PTX state machine of [`crate::mbarrier`]; a phase completing wakes
//! every waiter whose parity now passes, `mbarrier_latency` later.
//!
//! `exec` executes one operation (its cost and the queues it joins); this module holds the
//! engine's state, the event loop and the stepping of agents, whose control flow (loops,
//! branches, fork/join, bindings) is [`crate::interp`]'s: the engine is its [`Effects`] handler
//! (time, unit queues, events, yielding to earlier events).
//!
//! **CTA scheduling.** CTAs are dispatched in linear order (x fastest) to SMs round-robin at
//! the start, up to the occupancy limit per SM; when a CTA retires, the next one starts on its
//! SM `cta_launch_cycles` later.
//!
//! **Clusters.** A launch with `cluster = [N]` runs N consecutive CTAs along x together
//! (ranks 0..N, as [`crate::machine`] does): they start at the same cycle, each on a different SM
//! of one GPC ([`Chip::gpcs`]), the least loaded SMs of the least loaded GPC that has N with a
//! free slot. Their slots are freed when the last of them retires, and the next cluster starts
//! `cta_launch_cycles` later on whichever GPC has room. Within a cluster, what one CTA does to
//! another acts on that CTA's state: remote arrivals and expects reach the peer's barrier
//! [`cost::DSMEM_EXTRA_LATENCY`] after their issue; a multicast TMA load is one read of the
//! memory system whose bytes land in every CTA of its mask at the same time; a `cta_group::2`
//! MMA, issued by the even CTA of its pair (ranks 2k, 2k + 1; a cluster holds size / 2 pairs),
//! occupies both SMs' tensor pipes (each CTA's 128 rows),
//! and its commit waits for both; the cluster barrier waits for every CTA's arrival.

mod exec;
mod queue;
use exec::synchronises;
use queue::{EvKind, Queue, RemoteAct};

use super::cost::{self, MmaKind};
use super::hollow;
use super::memsys::{Landing, MemSys, Port, Server, StoreDone};
use super::pipe::SharedPipe;
use super::trace::{Rec, TUnit, TWhat};
use super::TimingError;
use crate::chips::Chip;
use crate::eval::{self, EvalCtx};
use crate::interp::{self, Control, Effects, Flow, OpDone};
use crate::lower::{
    cluster_barrier, data_moves, fences, kept_rest, lop_group_waits, lop_views, lowered_apart, mbar_quiet,
    mbar_signals, CExpr, DescInfo, IKind, LOp, Program, WorkerSpec,
};
use crate::mbarrier::{self, Mbar, MbarFault};
use crate::trap::{CudaError, Fault, OpResult};
use crate::value::{Dims, SmemView, TmemView, Value};
use crate::views;
use bwsim_isa::ir::OpKind as K;
use bwsim_isa::Code;
use bwsim_isa::{DType, Span};
use std::collections::VecDeque;
use std::rc::Rc;

/// Work counters of a timing run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub flops: f64,
    pub mmas: u64,
    pub tma_loads: u64,
    pub tma_stores: u64,
    /// Global bytes the kernel reads and writes (TMA and generic), as requested.
    pub global_bytes: f64,
    pub ctas: u64,
    pub events: u64,
    pub instructions: u64,
    /// wgmmas timed as spilling (see [`Engine::with_spills`]).
    pub spilled_wgmmas: u64,
}

/// Everything the engine measured.
pub struct EngineResult {
    pub cycles: f64,
    pub stats: Stats,
    pub mem: MemSys,
    /// Per-SM busy time of each unit, summed over SMs.
    pub tensor_busy: f64,
    pub tma_in_busy: f64,
    pub tma_out_busy: f64,
    pub smem_busy: f64,
    pub alu_busy: f64,
    pub rec: Option<Rec>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wait {
    None,
    Mbar {
        addr: u32,
        parity: u32,
    },
    Join,
    /// In `cluster.wait` (or `cluster.sync`) for the cluster barrier's phase to complete.
    Cluster,
}

#[derive(Clone, Debug)]
struct Agent {
    pc: u32,
    frame: Vec<Value>,
    t: f64,
    warps: u32,
    done: bool,
    wait: Wait,
    /// When the current wait began (for the trace); NaN when not waiting.
    wait_since: f64,
    children: Vec<u32>,
    parent: Option<u32>,
    stores: VecDeque<StoreDone>,
    wgmma: VecDeque<f64>,
    wg_free: f64,
    /// When the open `cp.async` group's copies have all landed.
    cp_open: f64,
    /// When each committed `cp.async` group lands, oldest first.
    cp_groups: VecDeque<f64>,
    /// The cluster barrier's phase this partition arrived in and has not waited for.
    cluster_gen: Option<u64>,
    /// A `cluster.sync` that arrived and blocked: executed again, it only waits.
    cluster_resume: bool,
}

impl Agent {
    fn new(pc: u32, frame: Vec<Value>, t: f64, warps: u32, parent: Option<u32>) -> Agent {
        Agent {
            pc,
            frame,
            t,
            warps,
            done: false,
            wait: Wait::None,
            wait_since: f64::NAN,
            children: Vec::new(),
            parent,
            stores: VecDeque::new(),
            wgmma: VecDeque::new(),
            wg_free: 0.0,
            cp_open: 0.0,
            cp_groups: VecDeque::new(),
            cluster_gen: None,
            cluster_resume: false,
        }
    }
}

#[derive(Clone, Debug)]
struct Bar {
    addr: u32,
    /// None once invalidated.
    state: Option<Mbar>,
    /// (agent, parity) blocked on this barrier.
    waiters: Vec<(u32, u32)>,
    /// The latest time anything contributed to the current phase, and when the last phase
    /// completed (see [`Engine::bar_update`]).
    latest: f64,
    flip: f64,
}

struct Cta {
    id: u32,
    /// Index within its cluster (0 without clusters).
    rank: u32,
    sm: u32,
    pid: [u32; 3],
    agents: Vec<Agent>,
    bars: Vec<Bar>,
    /// The in-order tensor pipe: when it can start the next operation, and when everything
    /// issued so far is complete.
    pipe_free: f64,
    pipe_done: f64,
    /// When the last tcgen05.cp ends (an MMA after it starts no earlier).
    cp_free: f64,
    live: u32,
    /// `clc.try_cancel` responses by shared address: canceled, program id x, y, z.
    clc: Vec<(u32, [u32; 4])>,
}

impl Cta {
    fn bar(&mut self, addr: u32) -> OpResult<&mut Bar> {
        match self.bars.iter_mut().position(|b| b.addr == addr) {
            Some(i) => Ok(&mut self.bars[i]),
            None => Err(crate::diagnostics::barrier_before_init(addr)),
        }
    }
}

/// A resident cluster: its SMs and its barrier (`cluster.arrive` / `cluster.wait`).
#[derive(Clone, Debug, Default)]
struct Cluster {
    /// The SM of each rank (launches with clusters).
    sms: Vec<u32>,
    /// CTAs not yet retired.
    live: u32,
    /// CTAs arrived in the current phase, the latest of their arrivals, the phases completed
    /// and when the last one completed (its latest arrival).
    arrived: u32,
    latest: f64,
    gen: u64,
    flip: f64,
    /// (CTA, agent) blocked in `cluster.wait`.
    waiters: Vec<(u32, u32)>,
}

struct Sm {
    tma_in: Port,
    tma_out: Port,
    lsu: Port,
    smem: Port,
    tmem: Port,
    alu: Server,
    /// wgmma (FIFO per SM).
    tensor: Server,
    /// tcgen05.mma (shared between the SM's CTAs, [`super::pipe`]).
    tc: SharedPipe,
}

/// Why a partition of the engine stops at an instruction (its [`Effects::Wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pause {
    /// Resume later at the agent's local time (something happens before it).
    Yield,
    /// Blocked until something wakes it (a barrier phase, its workers ending).
    Block,
}

/// The engine.
pub struct Engine<'p> {
    prog: &'p Program,
    chip: Chip,
    grid: [u32; 3],
    /// Element types of the launch's global tensors.
    dtypes: Vec<DType>,
    now: f64,
    heap: Queue,
    sms: Vec<Sm>,
    ctas: Vec<Option<Box<Cta>>>,
    next_cta: u32,
    total_ctas: u32,
    /// CTAs per cluster (1 without clusters) and the resident clusters by index.
    cluster_size: u32,
    clusters: std::collections::HashMap<u32, Cluster>,
    /// Resident CTAs per SM and the limit (launches with clusters), the GPCs' SMs.
    resident: Vec<u32>,
    ctas_per_sm: u32,
    gpcs: Vec<std::ops::Range<u32>>,
    mem: MemSys,
    stats: Stats,
    rec: Option<Rec>,
    /// Cost of evaluating each instruction's scalar expressions (precomputed).
    scalar_cost: Vec<f64>,
    end: f64,
    max_events: u64,
    /// How far (cycles) an agent may run ahead of the event queue before it yields.
    lookahead: f64,
    /// Per instruction: 0 not yet seen, 1 its expression is scalar, 2 it involves tiles.
    tile_pc: Vec<u8>,
    /// Per instruction: the operand shapes of its op, found on its first execution (view and
    /// tile shapes at one instruction are the type checker's, the same every time).
    shapes: Vec<Option<Shapes>>,
    /// Per instruction: what its tile copy moves ([`Engine::tile_messages`]), found on its
    /// first execution and kept while the view's shape stays the same.
    tile_msgs: Vec<Option<TileMsgs>>,
    /// `Some(L1 bytes left beside shared memory)` when the kernel's register tiles exceed
    /// 255 registers per thread (occupancy estimate): its wgmmas pay the chip's spill cost
    /// ([`cost::wgmma_spill`]) and run one at a time.
    spills: Option<u64>,
    /// The chip table as a partition of `i` passes over the schedulers sees it
    /// ([`cost::issue_scaled`] of [`cost::issue_slots`]), built once per pass count instead of
    /// once per operation.
    scaled: Vec<Option<Rc<Chip>>>,
    /// Per instruction: the ALU operations of its tile expression and the (hollow) value it
    /// evaluates to, kept after its first evaluation when [`hollow::shape_only`] says the
    /// value depends on nothing but the operands' types and shapes.
    tile_vals: Vec<Option<(u32, Value)>>,
}

/// What an op's operands look like, cached per instruction.
#[derive(Clone, Debug)]
enum Shapes {
    Mma {
        m: u32,
        n: u32,
        k: u32,
        kind: MmaKind,
        /// A in shared memory (SS); false: A in tensor memory (TS).
        a_smem: bool,
    },
    /// A wgmma and the (hollow) accumulator it returns.
    Wgmma {
        m: u32,
        n: u32,
        k: u32,
        kind: MmaKind,
        acc: Value,
    },
    /// Bytes an access moves.
    Bytes(u64),
    /// Bytes a load moves and the (hollow) tile it returns.
    Load { bytes: u64, value: Value },
}

fn fault(f: Fault, span: Span, agent: String, time: f64) -> TimingError {
    match f {
        Fault::Trap(e, reason) => TimingError::Op {
            code: e.code(),
            message: format!("{reason} (CUDA error: {})", e.message()),
            span,
            agent,
            time,
        },
        Fault::CodedTrap(code, e, reason) => TimingError::Op {
            code,
            message: format!("{reason} (CUDA error: {})", e.message()),
            span,
            agent,
            time,
        },
        Fault::Error { code, message, .. } => TimingError::Op {
            code,
            message,
            span,
            agent,
            time,
        },
    }
}

fn int_of(v: &Value, what: &str) -> OpResult<i64> {
    v.as_int()
        .ok_or_else(|| Fault::unsupported(format!("{what} must be an integer, found {}", v.kind())))
}

fn bool_of(v: &Value, what: &str) -> OpResult<bool> {
    v.as_bool()
        .ok_or_else(|| Fault::unsupported(format!("{what} must be a boolean, found {}", v.kind())))
}

/// The fault of an operand that is not the kind of value the operation takes.
fn expected(what: &str, found: &Value) -> Fault {
    Fault::unsupported(format!("expected {what}, found {}", found.kind()))
}

fn smem_of(v: Value) -> OpResult<SmemView> {
    match v {
        Value::Smem(s) => Ok(s),
        other => Err(expected("a shared-memory buffer", &other)),
    }
}

fn tmem_of(v: Value) -> OpResult<TmemView> {
    match v {
        Value::Tmem(s) => Ok(s),
        other => Err(expected("a tensor-memory buffer", &other)),
    }
}

fn bar_of(v: Value) -> OpResult<u32> {
    match v {
        Value::Mbar { addr, count: None } => Ok(addr),
        Value::Mbar { addr, count: Some(1) } => Ok(addr),
        other => Err(expected("one mbarrier", &other)),
    }
}

fn tile_of(v: &Value) -> OpResult<(DType, Vec<u32>)> {
    match v {
        Value::Tile(t) => Ok((t.dtype, t.shape.clone())),
        other => Err(expected("a tile", other)),
    }
}

fn last2(s: &[u32]) -> (u32, u32) {
    match s {
        [.., a, b] => (*a, *b),
        [b] => (1, *b),
        [] => (1, 1),
    }
}

fn numel(s: &[u32]) -> u64 {
    s.iter().map(|&d| d as u64).product()
}

/// What a tile copy through a descriptor moves, as the engine counts it: a pure function of
/// the descriptor (fixed per instruction) and the view's physical shape.
#[derive(Clone, Debug)]
struct TileMsgs {
    /// The view's shape and whether it is stored transposed: the key it was found for.
    shape: Dims,
    transposed: bool,
    bytes: u64,
    /// The region of the tensor one copy covers: the traversed box times the messages.
    region: Vec<u32>,
    messages: u64,
}

impl TileMsgs {
    fn of(d: &DescInfo, v: &SmemView) -> OpResult<TileMsgs> {
        let plan = crate::tma::plan_of(d, v)?;
        Ok(TileMsgs {
            shape: v.shape,
            transposed: v.layout.transposed(),
            bytes: plan.bytes(d.dtype),
            region: (plan.boxd.iter().zip(&plan.grid))
                .map(|(&b, &g)| b.saturating_mul(g))
                .collect(),
            messages: plan.messages(),
        })
    }
}

/// The L2 identity of a TMA box: tensor, coordinates and box shape.
fn box_key(tensor: u32, coords: &[i64], block: &[u32]) -> u64 {
    // FNV-1a over the words; collisions between distinct boxes are astronomically unlikely.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: u64| {
        h ^= x;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    };
    mix(tensor as u64);
    for &c in coords {
        mix(c as u64);
    }
    for &b in block {
        mix(b as u64 | 1 << 40);
    }
    h
}

impl<'p> Engine<'p> {
    /// An engine for `prog` launched on `grid` with `ctas_per_sm` resident CTAs per SM.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        prog: &'p Program,
        grid: [u32; 3],
        dtypes: Vec<DType>,
        chip: &Chip,
        ctas_per_sm: u32,
        rec: Option<Rec>,
        hbm_bin: Option<f64>,
        max_events: u64,
        lookahead: f64,
    ) -> Engine<'p> {
        let total = (grid[0] as u64 * grid[1] as u64 * grid[2] as u64).min(u32::MAX as u64) as u32;
        let sms = (0..chip.sms)
            .map(|_| Sm {
                tma_in: Port::new(chip.tma_bytes_per_cycle_sm),
                tma_out: Port::new(chip.tma_bytes_per_cycle_sm),
                lsu: Port::new(chip.tma_bytes_per_cycle_sm),
                smem: Port::new(chip.smem_bytes_per_cycle),
                tmem: Port::new(chip.tmem_bytes_per_cycle),
                alu: Server::default(),
                tensor: Server::default(),
                tc: SharedPipe::default(),
            })
            .collect();
        let mut mem = MemSys::new(chip);
        if let Some(b) = hbm_bin {
            mem = mem.with_timeline(b);
        }
        let scalar_cost = prog
            .code
            .iter()
            .map(|i| {
                let n = match &i.kind {
                    IKind::Eval { expr, .. } => hollow::scalar_ops(expr),
                    IKind::BranchIfNot { cond, .. } => hollow::scalar_ops(cond),
                    IKind::LoopInit {
                        start_e,
                        end_e,
                        step_e,
                        ..
                    } => hollow::scalar_ops(start_e) + hollow::scalar_ops(end_e) + hollow::scalar_ops(step_e),
                    _ => 0,
                };
                cost::scalar_cycles(chip, n)
            })
            .collect();
        let mut e = Engine {
            prog,
            chip: *chip,
            grid,
            dtypes,
            now: 0.0,
            heap: Queue::default(),
            sms,
            ctas: (0..total).map(|_| None).collect(),
            next_cta: 0,
            total_ctas: total,
            cluster_size: prog.cluster[0].max(1),
            clusters: std::collections::HashMap::new(),
            resident: vec![0; chip.sms as usize],
            ctas_per_sm,
            gpcs: chip.gpcs(),
            mem,
            stats: Stats::default(),
            rec,
            scalar_cost,
            end: 0.0,
            max_events,
            lookahead,
            tile_pc: vec![0; prog.code.len()],
            shapes: vec![None; prog.code.len()],
            tile_msgs: vec![None; prog.code.len()],
            spills: None,
            scaled: Vec::new(),
            tile_vals: vec![None; prog.code.len()],
        };
        if e.cluster_size > 1 {
            e.launch_clusters();
        } else {
            for _ in 0..ctas_per_sm {
                for sm in 0..chip.sms {
                    e.launch(sm);
                }
            }
        }
        e
    }

    fn push(&mut self, t: f64, kind: EvKind) {
        self.heap.push(t, kind);
    }

    /// Issue slots per instruction of agent `a` of CTA `c`: [`cost::issue_slots`] of the
    /// partition's warps, which all run its instruction stream. (Co-resident CTAs' warps share
    /// the schedulers too; the model does not count them.)
    fn slots(&mut self, c: u32, a: u32) -> f64 {
        let warps = self.cta(c).agents[a as usize].warps;
        cost::issue_slots(&self.chip, warps)
    }

    /// The chip table as agent `a` of CTA `c` sees it: issue costs scaled by its issue slots
    /// ([`cost::issue_scaled`]), cached per pass count ([`cost::issue_passes`]), which sets the
    /// slots for the engine's chip.
    fn scaled_chip(&mut self, c: u32, a: u32) -> Rc<Chip> {
        let warps = self.cta(c).agents[a as usize].warps;
        let i = cost::issue_passes(warps) as usize;
        if self.scaled.len() <= i {
            self.scaled.resize(i + 1, None);
        }
        let chip = &self.chip;
        self.scaled[i]
            .get_or_insert_with(|| Rc::new(cost::issue_scaled(chip, cost::issue_slots(chip, warps))))
            .clone()
    }

    fn cta(&mut self, c: u32) -> &mut Cta {
        self.ctas[c as usize]
            .as_deref_mut()
            .unwrap_or_else(|| unreachable!("CTA {c} is not resident"))
    }

    /// The CTA of rank `rank` in the cluster of CTA `c` (`op` names the operation): a rank
    /// outside the cluster, or a CTA that has exited, is the illegal address it is on hardware.
    fn cluster_peer(&mut self, c: u32, rank: i64, op: &str) -> OpResult<u32> {
        crate::machine::check_cluster_rank(self.cluster_size, rank, op)?;
        let t = c - self.cta(c).rank + rank as u32;
        if self.ctas.get(t as usize).is_none_or(|x| x.is_none()) {
            return Err(Fault::trap(
                CudaError::IllegalAddress,
                format!("{op} acts on CTA rank {rank} of its cluster, which has exited"),
            ));
        }
        Ok(t)
    }

    /// The CTAs whose rank's bit is set in the multicast mask `mask` of CTA `c`'s cluster, in
    /// rank order.
    fn cluster_mask(&mut self, c: u32, mask: i64, op: &str) -> OpResult<Vec<u32>> {
        let cs = self.cluster_size;
        crate::machine::check_cluster_mask(cs, mask, op)?;
        (0..cs as i64)
            .filter(|r| mask >> r & 1 == 1)
            .map(|r| self.cluster_peer(c, r, op))
            .collect()
    }

    /// The odd CTA of the pair whose even CTA `c` issues a `cta_group::2` operation `op` (the
    /// functional simulator's rules: clusters of an even size, pairs of ranks `2k, 2k + 1`,
    /// issued by the even CTA).
    fn pair_peer(&mut self, c: u32, op: &str) -> OpResult<u32> {
        let rank = self.cta(c).rank;
        crate::machine::check_pair_issuer(self.cluster_size, rank, op)?;
        self.cluster_peer(c, i64::from(rank) + 1, op)
    }

    /// For an operation of `cta_group` 2 issued by CTA `c`, the odd CTA of its pair
    /// ([`Self::pair_peer`]); none for `cta_group::1`.
    fn group_peer(&mut self, c: u32, cta_group: u32, op: &str) -> OpResult<Option<u32>> {
        if cta_group == 2 {
            self.pair_peer(c, op).map(Some)
        } else {
            Ok(None)
        }
    }

    /// `cluster.arrive` (or the arrive half of `cluster.sync`) by agent `a` of CTA `c` at `t`:
    /// one arrival of the CTA on its cluster's barrier. The phase completes with the cluster's
    /// last arrival, stamped with the latest of them, and wakes the CTAs waiting.
    fn cluster_arrive(&mut self, c: u32, a: u32, t: f64, op: &str) -> OpResult<()> {
        let cta = self.cta(c);
        if cta.live > 1 {
            return Err(Fault::unsupported(format!(
                "{op} inside warp_specialize partitions; the simulator models the cluster barrier arrived on by each CTA's one running partition"
            )));
        }
        if cta.agents[a as usize].cluster_gen.is_some() {
            return Err(Fault::trap(
                CudaError::LaunchFailure,
                format!("{op} by a partition that arrived on the cluster barrier and has not waited (each `cluster.arrive` is followed by a `cluster.wait`)"),
            ));
        }
        let cs = self.cluster_size;
        let cl = self.clusters.entry(c / cs).or_default();
        let gen = cl.gen;
        cl.arrived += 1;
        cl.latest = cl.latest.max(t);
        let mut woken = Vec::new();
        if cl.arrived >= cs {
            cl.gen += 1;
            cl.flip = cl.latest;
            cl.arrived = 0;
            cl.latest = 0.0;
            woken = std::mem::take(&mut cl.waiters);
        }
        let flip = cl.flip;
        self.cta(c).agents[a as usize].cluster_gen = Some(gen);
        for (wc, wa) in woken {
            if let Some(w) = self.ctas[wc as usize].as_deref_mut() {
                w.agents[wa as usize].wait = Wait::None;
                self.push(flip, EvKind::Run { cta: wc, agent: wa });
            }
        }
        Ok(())
    }

    /// `cluster.wait` by agent `a` of CTA `c`: `Some(when)` the phase it arrived in completed
    /// (its latest arrival), or `None` after queueing the agent as a waiter.
    fn cluster_try_wait(&mut self, c: u32, a: u32, op: &str) -> OpResult<Option<f64>> {
        let Some(gen) = self.cta(c).agents[a as usize].cluster_gen else {
            return Err(Fault::trap(
                CudaError::LaunchFailure,
                format!("{op} by a partition that has not arrived on the cluster barrier (`cluster.arrive` comes first)"),
            ));
        };
        let cs = self.cluster_size;
        let cl = self.clusters.entry(c / cs).or_default();
        if cl.gen > gen {
            let flip = cl.flip;
            self.cta(c).agents[a as usize].cluster_gen = None;
            return Ok(Some(flip));
        }
        cl.waiters.push((c, a));
        self.cta(c).agents[a as usize].wait = Wait::Cluster;
        Ok(None)
    }

    fn recording(&self, sm: u32) -> bool {
        self.rec.as_ref().is_some_and(|r| r.wants(sm))
    }

    fn record(&mut self, t: f64, c: u32, unit: TUnit, what: TWhat, span: Span) {
        let sm = self.cta(c).sm;
        if let Some(r) = &mut self.rec {
            if r.wants(sm) {
                r.push(t, sm, c, unit, what, span);
            }
        }
    }

    /// A tensor-pipe operation of CTA `c` (M x N x K; zeros for copies) for the trace.
    #[allow(clippy::too_many_arguments)]
    fn record_tc(
        &mut self,
        t: f64,
        c: u32,
        op: &'static str,
        [m, n, k]: [u32; 3],
        start: f64,
        end: f64,
        span: Span,
    ) {
        self.record(
            t,
            c,
            TUnit::Tc,
            TWhat::Mma {
                op,
                m,
                n,
                k,
                start,
                end,
            },
            span,
        );
    }

    /// Start the next CTA of the grid on `sm` now.
    fn launch(&mut self, sm: u32) {
        if self.next_cta >= self.total_ctas {
            return;
        }
        let id = self.next_cta;
        self.next_cta += 1;
        self.launch_cta(id, sm);
    }

    /// The SMs, in index order, that the next cluster would take: in the GPC whose least
    /// loaded `cluster_size` SMs with a free slot hold the fewest CTAs (the first such GPC on a
    /// tie), those SMs; `None` when no GPC has that many SMs with a free slot.
    fn place_cluster(&self) -> Option<Vec<u32>> {
        let cs = self.cluster_size as usize;
        let mut best: Option<(u32, Vec<u32>)> = None;
        for g in &self.gpcs {
            let mut free: Vec<u32> = g
                .clone()
                .filter(|&sm| self.resident[sm as usize] < self.ctas_per_sm)
                .collect();
            if free.len() < cs {
                continue;
            }
            free.sort_by_key(|&sm| (self.resident[sm as usize], sm));
            free.truncate(cs);
            let load: u32 = free.iter().map(|&sm| self.resident[sm as usize]).sum();
            if best.as_ref().is_none_or(|b| load < b.0) {
                best = Some((load, free));
            }
        }
        best.map(|(_, mut sms)| {
            sms.sort_unstable();
            sms
        })
    }

    /// Start the next clusters of the grid now, as many as the free slots hold.
    fn launch_clusters(&mut self) {
        let cs = self.cluster_size;
        while self.next_cta < self.total_ctas {
            let Some(sms) = self.place_cluster() else {
                return;
            };
            let first = self.next_cta;
            let n = cs.min(self.total_ctas - first);
            self.next_cta = first + n;
            for &sm in &sms[..n as usize] {
                self.resident[sm as usize] += 1;
            }
            self.clusters.insert(
                first / cs,
                Cluster {
                    sms: sms.clone(),
                    live: n,
                    ..Cluster::default()
                },
            );
            for r in 0..n {
                self.launch_cta(first + r, sms[r as usize]);
            }
        }
    }

    /// Start CTA `id` of the grid on `sm` now.
    fn launch_cta(&mut self, id: u32, sm: u32) {
        let [gx, gy, _] = self.grid;
        let pid = [id % gx, (id / gx) % gy, id / (gx * gy)];
        let mut frame = vec![Value::Unset; self.prog.nslots as usize];
        for (s, v) in &self.prog.init {
            frame[*s as usize] = v.clone();
        }
        let agent = Agent::new(0, frame, self.now, self.prog.num_warps, None);
        self.ctas[id as usize] = Some(Box::new(Cta {
            id,
            rank: id % self.cluster_size,
            sm,
            pid,
            agents: vec![agent],
            bars: Vec::new(),
            pipe_free: 0.0,
            pipe_done: 0.0,
            cp_free: 0.0,
            live: 1,
            clc: Vec::new(),
        }));
        self.record(self.now, id, TUnit::Cta, TWhat::CtaStart, Span::default());
        self.push(self.now, EvKind::Run { cta: id, agent: 0 });
    }

    /// Run to the end; the kernel's cycles and counters.
    /// Time the wgmmas as spilling (see [`crate::chips::Chip::wgmma_spill_cycles`]), with
    /// `l1_left` bytes of L1 beside each SM's shared memory to hold the swap.
    pub fn with_spills(mut self, l1_left: Option<u64>) -> Engine<'p> {
        self.spills = l1_left;
        self
    }

    pub fn run(mut self) -> Result<EngineResult, TimingError> {
        while let Some((t, kind)) = self.heap.pop() {
            self.stats.events += 1;
            if self.stats.events > self.max_events {
                return Err(TimingError::EventLimit(self.max_events));
            }
            self.now = t;
            match kind {
                EvKind::Run { cta, agent } => self.run_agent(cta, agent)?,
                // A CTA may exit with a TMA load or a commit still in flight (the tutorial's
                // persistent pipelined kernel issues one last, unneeded prologue load): its
                // completion has nobody left to tell.
                EvKind::Tx { cta, .. }
                | EvKind::Arrive { cta, .. }
                | EvKind::Remote { cta, .. }
                | EvKind::Clc { cta, .. }
                    if self.ctas[cta as usize].is_none() => {}
                EvKind::Clc {
                    cta,
                    bar,
                    addr,
                    multicast,
                } => {
                    let t = self.now;
                    // The next cluster of the grid not yet launched is cancelled (launches go in
                    // grid order), its first CTA's program id the response, as the functional
                    // machine does.
                    let resp = if self.next_cta < self.total_ctas {
                        let id = self.next_cta;
                        self.next_cta = id.saturating_add(self.cluster_size).min(self.total_ctas);
                        let [gx, gy, _] = self.grid;
                        [1, id % gx, (id / gx) % gy, id / (gx * gy)]
                    } else {
                        [0; 4]
                    };
                    let cs = self.cluster_size;
                    let targets: Vec<u32> = if multicast {
                        let base = cta - cta % cs;
                        (base..base + cs)
                            .filter(|&x| self.ctas.get(x as usize).is_some_and(|c| c.is_some()))
                            .collect()
                    } else {
                        vec![cta]
                    };
                    for x in targets {
                        let c = self.cta(x);
                        c.clc.retain(|(a, _)| *a != addr);
                        c.clc.push((addr, resp));
                        if let Err(f) = self.bar_update(x, bar, t, |m| m.complete_tx(16)) {
                            return Err(fault(f, Span::default(), format!("cta{cta}.clc"), t));
                        }
                    }
                }
                EvKind::Remote { cta, from, bar, act } => {
                    let t = self.now;
                    if let Err(f) = self.apply_bar_act(cta, bar, t, act) {
                        return Err(fault(
                            f,
                            Span::default(),
                            format!("cta{from} (on a barrier of cta{cta})"),
                            t,
                        ));
                    }
                }
                EvKind::LaunchClusters => self.launch_clusters(),
                EvKind::Tx {
                    cta,
                    bar,
                    bytes,
                    landing,
                } => {
                    let t = self.now;
                    // Later requests shared the L2 with this one: it lands later.
                    if let Some(due) = landing.and_then(|l| self.mem.landing(t, &l)) {
                        let kind = EvKind::Tx {
                            cta,
                            bar,
                            bytes,
                            landing,
                        };
                        self.push(due.max(t), kind);
                    } else if let Err(f) = self.bar_update(cta, bar, t, |m| m.complete_tx(bytes)) {
                        return Err(fault(f, Span::default(), format!("cta{cta}.tma"), t));
                    }
                }
                EvKind::Arrive { cta, bar, count } => {
                    let t = self.now;
                    if let Err(f) = self.bar_update(cta, bar, t, |m| m.arrive(count)) {
                        return Err(fault(f, Span::default(), format!("cta{cta}.tc"), t));
                    }
                }
                EvKind::Commit {
                    cta,
                    sm,
                    bar,
                    target,
                    floor,
                    pair,
                    dests,
                } => {
                    let t = self.now;
                    // Not done while a stream it covers (this CTA's, and for a pair commit the
                    // pair's work on the peer's SM) has not been served its target.
                    let mut due = None::<f64>;
                    for (s, tgt) in std::iter::once((sm, target)).chain(pair) {
                        let pipe = &mut self.sms[s as usize].tc;
                        pipe.advance(t);
                        if !pipe.done(cta, tgt) {
                            let d = pipe.when_served(cta, tgt);
                            due = Some(due.map_or(d, |x: f64| x.max(d)));
                        }
                    }
                    if let Some(due) = due {
                        // Another CTA's work arrived since the prediction: predict again.
                        self.push(due, kind);
                    } else {
                        let at = floor.max(t + self.chip.mma_latency) + self.chip.commit_latency;
                        let base = cta - cta % self.cluster_size;
                        for r in (0..self.cluster_size).filter(|r| dests >> r & 1 == 1) {
                            let x = base + r;
                            // An arrival on another CTA's barrier crosses the cluster's network.
                            let lat = if x == cta { 0.0 } else { cost::DSMEM_EXTRA_LATENCY };
                            self.push(
                                at + lat,
                                EvKind::Arrive {
                                    cta: x,
                                    bar,
                                    count: 1,
                                },
                            );
                        }
                    }
                }
                EvKind::Launch { sm } => self.launch(sm),
            }
        }
        // Anything still resident is blocked forever.
        let mut waiters = Vec::new();
        for c in self.ctas.iter().flatten() {
            for (i, a) in c.agents.iter().enumerate() {
                if !a.done {
                    let on = match a.wait {
                        Wait::Mbar { addr, parity } => {
                            let st = c
                                .bars
                                .iter()
                                .find(|b| b.addr == addr)
                                .and_then(|b| b.state)
                                .map(|m| {
                                    format!(
                                        " (phase {}, {} arrivals pending, tx {})",
                                        m.phase, m.pending, m.tx
                                    )
                                })
                                .unwrap_or_default();
                            format!("mbar.wait on the barrier at shared byte {addr}, parity {parity}{st}")
                        }
                        Wait::Join => "the end of warp_specialize".to_string(),
                        Wait::Cluster => "cluster.wait for the other CTAs of its cluster".to_string(),
                        Wait::None => "nothing (runnable)".to_string(),
                    };
                    let span = self
                        .prog
                        .code
                        .get(a.pc as usize)
                        .map(|i| i.span)
                        .unwrap_or_default();
                    waiters.push((self.agent_name(c.id, i as u32), span, on));
                }
            }
        }
        if !waiters.is_empty() {
            return Err(TimingError::Deadlock {
                time: self.now,
                waiters,
            });
        }
        let sum = |f: &dyn Fn(&Sm) -> f64| self.sms.iter().map(f).sum::<f64>();
        Ok(EngineResult {
            cycles: self.end.max(self.now),
            tensor_busy: sum(&|s| s.tensor.busy + s.tc.busy),
            tma_in_busy: sum(&|s| s.tma_in.server.busy),
            tma_out_busy: sum(&|s| s.tma_out.server.busy),
            smem_busy: sum(&|s| s.smem.server.busy),
            alu_busy: sum(&|s| s.alu.busy),
            stats: self.stats,
            mem: self.mem,
            rec: self.rec,
        })
    }

    fn agent_name(&self, c: u32, a: u32) -> String {
        let part = self
            .rec
            .as_ref()
            .and_then(|r| r.names.get(a as usize).cloned())
            .unwrap_or_else(|| {
                if a == 0 {
                    "default".into()
                } else {
                    format!("worker{a}")
                }
            });
        format!("cta{c}.{part}")
    }

    /// `act` on the barrier at `addr` of CTA `c` at time `t`.
    fn apply_bar_act(&mut self, c: u32, addr: u32, t: f64, act: RemoteAct) -> OpResult<()> {
        match act {
            RemoteAct::Arrive(n) => self.bar_update(c, addr, t, |m| m.arrive(n)),
            RemoteAct::Expect(n) => self.bar_update(c, addr, t, |m| {
                let a = m.expect_tx(n)?;
                let b = m.arrive(1)?;
                Ok(a || b)
            }),
        }
    }

    /// `act` by CTA `c` at `t0` on the barrier at `addr` of CTA `target`: at once on its own
    /// barrier, DSMEM_EXTRA_LATENCY later on another CTA's.
    fn bar_act(&mut self, c: u32, target: u32, addr: u32, t0: f64, act: RemoteAct) -> OpResult<()> {
        if target == c {
            return self.apply_bar_act(c, addr, t0, act);
        }
        self.push(
            t0 + cost::DSMEM_EXTRA_LATENCY,
            EvKind::Remote {
                cta: target,
                from: c,
                bar: addr,
                act,
            },
        );
        Ok(())
    }

    /// Apply `f` to the barrier at `addr` at time `t`. A phase that completes is stamped with
    /// the latest contribution to it (agents may run up to the lookahead ahead of the event
    /// queue, so the op that completes a phase is not always the last one in time), and wakes
    /// every waiter whose parity now passes `mbarrier_latency` later.
    fn bar_update(
        &mut self,
        c: u32,
        addr: u32,
        t: f64,
        f: impl FnOnce(&mut Mbar) -> Result<bool, MbarFault>,
    ) -> OpResult<()> {
        let wake_after = self.chip.mbarrier_latency;
        let cta = self.cta(c);
        let b = cta.bar(addr)?;
        let Some(m) = &mut b.state else {
            return Err(crate::diagnostics::barrier_after_invalidate(addr));
        };
        let flipped = f(m).map_err(|e| Fault::trap(CudaError::LaunchFailure, e.reason()))?;
        b.latest = b.latest.max(t);
        if !flipped {
            return Ok(());
        }
        let m = *m;
        let at = b.latest;
        b.flip = at;
        let mut woken = Vec::new();
        b.waiters.retain(|&(a, parity)| {
            if m.test_wait(parity) {
                woken.push(a);
                false
            } else {
                true
            }
        });
        for &a in &woken {
            cta.agents[a as usize].wait = Wait::None;
        }
        self.record(
            at,
            c,
            TUnit::Bars,
            TWhat::Phase {
                bar: addr,
                phase: m.phase,
            },
            Span::default(),
        );
        for a in woken {
            self.push(at + wake_after, EvKind::Run { cta: c, agent: a });
        }
        Ok(())
    }

    /// Whether an agent at local time `t` may touch shared state now: no event lies more than
    /// the lookahead before `t`.
    fn sync(&self, t: f64) -> bool {
        match self.heap.peek_time() {
            None => true,
            Some(e) => e + self.lookahead >= t,
        }
    }

    fn run_agent(&mut self, c: u32, a: u32) -> Result<(), TimingError> {
        let now = self.now;
        let (mut frame, mut pc, mut t, pid) = {
            let Some(cta) = self.ctas[c as usize].as_deref_mut() else {
                return Ok(());
            };
            let ag = &mut cta.agents[a as usize];
            if ag.done {
                return Ok(());
            }
            (std::mem::take(&mut ag.frame), ag.pc, ag.t.max(now), cta.pid)
        };
        let cx = EvalCtx { pid, grid: self.grid };
        let result = loop {
            self.stats.instructions += 1;
            match self.step(c, a, pc, &mut t, &mut frame, &cx) {
                Ok(Flow::Next) => pc += 1,
                Ok(Flow::Jump(to)) => pc = to,
                Ok(Flow::Wait(Pause::Yield)) => {
                    self.push(t, EvKind::Run { cta: c, agent: a });
                    break Ok(());
                }
                Ok(Flow::Wait(Pause::Block)) | Ok(Flow::Done) => break Ok(()),
                Err(f) => {
                    let span = self
                        .prog
                        .code
                        .get(pc as usize)
                        .map(|i| i.span)
                        .unwrap_or_default();
                    break Err(fault(f, span, self.agent_name(c, a), t));
                }
            }
        };
        if let Some(cta) = self.ctas[c as usize].as_deref_mut() {
            let ag = &mut cta.agents[a as usize];
            ag.frame = frame;
            ag.pc = pc;
            ag.t = t;
        }
        result
    }

    /// Execute the instruction at `pc` for agent `a` of CTA `c` at local time `t`.
    fn step(
        &mut self,
        c: u32,
        a: u32,
        pc: u32,
        t: &mut f64,
        frame: &mut [Value],
        cx: &EvalCtx,
    ) -> OpResult<Flow<Pause>> {
        let prog = self.prog;
        let Some(instr) = prog.code.get(pc as usize) else {
            return Err(Fault::error(Code::SimError, "program counter past the end"));
        };
        interp::step(&mut Fx { e: self, c, a, t, cx }, pc, instr, frame)
    }

    /// A tile copy of view `v` at coordinates `cs` ([`crate::tma::plan_of`]) by the instruction
    /// at `pc`: its bytes, its L2 key (the region of the tensor it moves) and its number of
    /// messages. The memory system sees the copy as one request; each message takes an issue
    /// slot. The plan is made once per instruction and view shape.
    fn tile_messages(
        &mut self,
        pc: u32,
        d: &DescInfo,
        cs: &[i64],
        v: &SmemView,
    ) -> OpResult<(u64, Option<u64>, u64)> {
        let slot = &mut self.tile_msgs[pc as usize];
        let m = match slot {
            Some(m) if m.shape == v.shape && m.transposed == v.layout.transposed() => m,
            _ => slot.insert(TileMsgs::of(d, v)?),
        };
        Ok((m.bytes, Some(box_key(d.tensor, cs, &m.region)), m.messages))
    }

    fn finish_agent(&mut self, c: u32, a: u32, t: f64, span: Span) {
        self.record(t, c, TUnit::Agent(a), TWhat::AgentEnd, span);
        let cta = self.cta(c);
        cta.agents[a as usize].done = true;
        cta.live -= 1;
        // Async work the partition leaves behind still counts toward the kernel's end.
        let ag = &cta.agents[a as usize];
        let tail = ag
            .stores
            .iter()
            .map(|s| s.write)
            .chain(ag.wgmma.iter().copied())
            .fold(t, f64::max);
        let tail = tail.max(cta.pipe_done.min(f64::MAX));
        let parent = cta.agents[a as usize].parent;
        let mut wake_parent = None;
        if let Some(p) = parent {
            let pa = &cta.agents[p as usize];
            if pa.wait == Wait::Join && pa.children.iter().all(|&ch| cta.agents[ch as usize].done) {
                wake_parent = Some(p);
            }
        }
        let retire = cta.live == 0;
        let sm = cta.sm;
        self.end = self.end.max(tail);
        if let Some(p) = wake_parent {
            self.cta(c).agents[p as usize].wait = Wait::None;
            self.push(t, EvKind::Run { cta: c, agent: p });
        }
        if retire {
            self.sms[sm as usize].tc.retire(c);
            self.record(t, c, TUnit::Cta, TWhat::CtaEnd, span);
            self.ctas[c as usize] = None;
            self.stats.ctas += 1;
            let cs = self.cluster_size;
            if cs == 1 {
                self.clusters.remove(&c);
                if self.next_cta < self.total_ctas {
                    self.push(t + self.chip.cta_launch_cycles, EvKind::Launch { sm });
                }
                return;
            }
            // A cluster's slots are freed when its last CTA retires.
            let Some(cl) = self.clusters.get_mut(&(c / cs)) else {
                return;
            };
            cl.live = cl.live.saturating_sub(1);
            if cl.live > 0 {
                return;
            }
            let sms = std::mem::take(&mut cl.sms);
            self.clusters.remove(&(c / cs));
            let base = c - c % cs;
            for &s in &sms {
                self.resident[s as usize] = self.resident[s as usize].saturating_sub(1);
                // The pair's streams on the peer's SM go too, once drained.
                for x in base..base + cs {
                    self.sms[s as usize].tc.retire(x);
                }
            }
            if self.next_cta < self.total_ctas {
                self.push(t + self.chip.cta_launch_cycles, EvKind::LaunchClusters);
            }
        }
    }
}

/// The engine's [`Effects`]: time, unit queues and events of agent `a` of CTA `c`, whose local
/// time is `t`.
struct Fx<'e, 'p> {
    e: &'e mut Engine<'p>,
    c: u32,
    a: u32,
    t: &'e mut f64,
    cx: &'e EvalCtx,
}

impl Effects for Fx<'_, '_> {
    type Wait = Pause;

    #[inline(always)]
    fn eval(&mut self, pc: u32, expr: &CExpr, frame: &[Value]) -> OpResult<Result<Value, Pause>> {
        let (e, c, a, cx) = (&mut *self.e, self.c, self.a, self.cx);
        let t = &mut *self.t;
        // A slot keeps one type (the type checker's), so whether an instruction involves
        // tiles is decided once.
        let tiles = match e.tile_pc[pc as usize] {
            0 => {
                let k = hollow::touches_tile(expr, frame);
                e.tile_pc[pc as usize] = if k { 2 } else { 1 };
                k
            }
            k => k == 2,
        };
        if !tiles {
            let v = match hollow::quick(expr, frame, cx) {
                Some(q) => q.value(),
                None => eval::eval(expr, frame, cx)?,
            };
            *t += e.scalar_cost[pc as usize] * e.slots(c, a);
            return Ok(Ok(v));
        }
        let cached = e.tile_vals[pc as usize].clone();
        let ops = match &cached {
            Some((ops, _)) => *ops,
            None => hollow::alu_ops(expr),
        };
        if ops > 0 && !e.sync(*t) {
            return Ok(Err(Pause::Yield));
        }
        let v = match cached {
            Some((_, v)) => v,
            None => {
                let v = hollow::eval(expr, frame, cx)?;
                if hollow::shape_only(expr) && hollow::is_tiles(&v) {
                    e.tile_vals[pc as usize] = Some((ops, v.clone()));
                }
                v
            }
        };
        if ops > 0 {
            let (n, bits) = match &v {
                Value::Tile(tl) => (numel(&tl.shape), tl.dtype.bits()),
                Value::Tuple(parts) => parts
                    .iter()
                    .map(|p| match p {
                        Value::Tile(tl) => (numel(&tl.shape), tl.dtype.bits()),
                        _ => (0, 32),
                    })
                    .fold((0, 32), |acc, x| (acc.0 + x.0, x.1)),
                _ => (0, 32),
            };
            let warps = e.cta(c).agents[a as usize].warps;
            let (own, sm_cycles) = cost::tile_alu_cycles(&e.chip, n, bits, ops, warps);
            let sm = e.cta(c).sm as usize;
            let end = e.sms[sm].alu.reserve(*t, sm_cycles).max(*t + own);
            let span = e.prog.code[pc as usize].span;
            e.record(*t, c, TUnit::Agent(a), TWhat::Op { op: "tile math", end }, span);
            *t = end;
        }
        Ok(Ok(v))
    }

    #[inline(always)]
    fn op(&mut self, pc: u32, op: &LOp, name: &'static str, frame: &[Value]) -> OpResult<OpDone<Pause>> {
        if synchronises(op) && !self.e.sync(*self.t) {
            return Ok(OpDone::Wait(Pause::Yield));
        }
        let span = self.e.prog.code[pc as usize].span;
        (self.e).exec_op(self.c, self.a, pc, op, name, span, self.t, frame, self.cx)
    }

    #[inline(always)]
    fn scalar(&mut self, e: &CExpr, frame: &[Value]) -> OpResult<Value> {
        hollow::eval(e, frame, self.cx)
    }

    #[inline(always)]
    fn control(&mut self, pc: u32, k: Control) {
        let e = &mut *self.e;
        let per_slot = match k {
            Control::Branch => e.scalar_cost[pc as usize] + e.chip.branch_cycles,
            Control::LoopInit => e.scalar_cost[pc as usize],
            Control::LoopTest => e.chip.branch_cycles,
            Control::LoopNext => e.chip.scalar_op_cycles,
        };
        *self.t += per_slot * e.slots(self.c, self.a);
    }

    fn spawn(&mut self, w: &WorkerSpec, frame: &[Value], span: Span) {
        let (e, c, a, t0) = (&mut *self.e, self.c, self.a, *self.t);
        let cta = e.cta(c);
        let idx = cta.agents.len() as u32;
        cta.agents
            .push(Agent::new(w.entry, frame.to_vec(), t0, w.warps, Some(a)));
        cta.agents[a as usize].children.push(idx);
        cta.live += 1;
        if let Some(r) = &mut e.rec {
            r.name_agent(idx, &w.name);
        }
        // A worker's start is recorded at the fork.
        e.record(t0, c, TUnit::Agent(idx), TWhat::AgentStart, span);
        e.push(t0, EvKind::Run { cta: c, agent: idx });
    }

    fn join(&mut self) -> Option<Pause> {
        let a = self.a as usize;
        let cta = self.e.cta(self.c);
        if cta.agents[a]
            .children
            .iter()
            .all(|&ch| cta.agents[ch as usize].done)
        {
            return None;
        }
        cta.agents[a].wait = Wait::Join;
        Some(Pause::Block)
    }

    fn end(&mut self, span: Span) -> Option<Pause> {
        if !self.e.sync(*self.t) {
            return Some(Pause::Yield);
        }
        self.e.finish_agent(self.c, self.a, *self.t, span);
        None
    }
}
