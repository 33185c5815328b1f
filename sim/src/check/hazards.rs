//! The hazard checker's bookkeeping for one CTA: which clock component belongs to which agent,
//! the clocks of partitions and asynchronous units, what every mbarrier releases, the shadow
//! memories, and the table of issued asynchronous operations. The machine calls one hook per
//! event ([`CtaHb::step`], [`CtaHb::bar_update`], [`CtaHb::acquire`], ...); the rule itself lives in
//! [`crate::check::hb`]. Hazards come back as [`Hazard`]s and are turned into diagnostics here
//! ([`CtaHb::describe`]), naming buffers and barriers through the program's allocation names.
//!
//! Agents (clock components), created on first use:
//! - each partition;
//! - the TMA unit's completions on each mbarrier: a TMA load or gather is a concurrent
//!   operation whose bytes become visible only through the barrier it completes on, so each
//!   barrier gets its own component (one shared TMA component would let a wait on one barrier
//!   "see" copies that completed on another);
//! - the TMA stores of each partition, their shared-memory reads (observed by that partition's
//!   `tma.store_wait`) and their global writes (observed by a `tma.store_wait` that waits for
//!   the writes, `full=true`) apart;
//! - the wgmma groups of each partition (observed by its `wgmma.wait`);
//! - the `cp.async` groups of each partition (observed by its `cp.async.wait`): a copy of
//!   group g writes at component time g, and a wait that retires groups up to g raises the
//!   partition's view of the component to g;
//! - the tensor pipe (in order: one component, whose clock accumulates every op it runs).
//!
//! `bar.sync` synchronises the warps of one partition, which the simulator runs as a single
//! agent: it adds no edge between agents (program order already orders the partition).
//!
//! This module knows clocks, barriers by address and instruction indices; it knows nothing of
//! values or of how the machine schedules.

use crate::check::global::{GAccess, GRec, Knows};
use crate::check::hb::{
    Access, AgentId, AgentInfo, Hazard, HazardKind, Issued, Kind, Proxy, Rec, Shadow, VClock, World,
    ASYNC_OP, NO_AGENT,
};
use crate::lower::{AllocPlace, IKind, Program};
use crate::memory::TMEM_LANES;
use bwsim_isa::{Diagnostic, Span};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Shared-memory granule in bytes.
pub const SMEM_GRANULE: u32 = 4;

/// What a clock component stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Comp {
    /// A partition (machine agent index).
    Part(u32),
    /// TMA loads and gathers completing on the mbarrier at this address.
    TmaBar(u32),
    /// The TMA stores of a partition, reading their shared-memory source (observed by its
    /// `tma.store_wait`).
    Store(u32),
    /// The TMA stores of a partition, writing global memory (observed by its `tma.store_wait`
    /// that waits for the writes, `full=true`). Taken to write in issue order: two stores of
    /// one partition to the same elements are not reported.
    StoreWrite(u32),
    /// The wgmma groups of a partition.
    Wgmma(u32),
    /// The `cp.async` groups of a partition.
    CpAsync(u32),
    /// The tensor pipe.
    Pipe,
    /// The accesses of another CTA of the cluster (`cta`, its rank `rank`) to this CTA's
    /// shared memory (`smem.load`/`smem.store ..., cta=R`) and its remote arrivals on this
    /// CTA's barriers, all its partitions as one agent in program order.
    Peer { cta: u32, rank: u32 },
    /// The `mbar.init`s of this CTA, in program order across its partitions: what another CTA
    /// must know before it acts on one of its barriers (released by a cluster barrier, or by a
    /// relaxed one after `fence.mbarrier_init`).
    Init,
    /// The tensor pipe of the leader `cta` (rank `rank`) of this CTA's pair, running its
    /// `cta_group::2` MMAs over this CTA's halves of the operands and of the accumulator.
    PeerPipe { cta: u32, rank: u32 },
}

/// Who performs a barrier action (the clock it releases).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Actor {
    /// A partition (machine agent index) at instruction `pc`.
    Part(usize, u32),
    /// The TMA piece being delivered ([`CtaHb::tma_piece`] set it).
    Tma,
    /// The tensor pipe, running the op it is on.
    Pipe,
    /// Peer CTA `cta` (a remote `mbar.arrive ..., cta=R` at instruction `pc`; [`CtaHb::peer_step`]
    /// set its clock).
    Peer { cta: u32, pc: u32 },
    /// The pair leader `cta`'s tensor pipe (the commit of its `cta_group::2` MMAs arriving
    /// here; [`CtaHb::peer_pipe_exec`] set its clock).
    PeerPipe { cta: u32 },
    /// Another CTA's asynchronous unit (a multicast commit, a TMA copy completing on this
    /// CTA's barrier) at instruction `pc`: it releases nothing of this CTA's own components;
    /// what it releases of its own CTA comes through [`CtaHb::bar_remote`].
    Remote { pc: u32 },
    /// The arrival of a `cp.async.arrive` (async op `op`, issued by a partition) once the
    /// partition's `cp.async` copies issued before it completed: it releases those copies'
    /// writes, the partition's [`Comp::CpAsync`] component up to `upto`, and nothing else of
    /// the partition (the PTX ISA gives this arrive-on no release semantics of its own).
    CpArrive { op: u32, upto: u32 },
}

/// How a partition or unit can arrive on a barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arriver {
    /// The partition (machine agent index) whose code does it (the issuer, for TMA and commits).
    pub agent: u32,
    /// The instruction.
    pub instr: u32,
}

/// The last completion of a phase: which event completed it, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Witness {
    pub agent: AgentId,
    pub time: u32,
    pub instr: u32,
}

/// Checker state of one mbarrier.
#[derive(Clone, Debug, Default)]
pub struct BarHb {
    /// Join of every release since `init`.
    running: VClock,
    /// `running` at the last phase completion: what a wait observing it acquires.
    completed: VClock,
    /// The events that completed the last two phases (oldest first).
    pub last: [Option<Witness>; 2],
    /// Every partition that arrived (or whose async op arrived) on it, and where.
    pub arrivers: Vec<Arriver>,
    /// Bytes expected and delivered in the current phase, and the instructions that did so.
    pub expected: i64,
    pub delivered: i64,
    pub expect_at: Vec<u32>,
    pub deliver_at: Vec<u32>,
    /// `expected` and `expect_at` of the last completed phase.
    pub prev_expected: i64,
    pub prev_expect_at: Vec<u32>,
    /// The [`Comp::Init`] event of its `mbar.init`.
    init_at: Option<(AgentId, u32)>,
    /// What releases by other CTAs of the cluster published of their own components (by
    /// CTA id), since `init` and at the last phase completion: a wait learns the latter as
    /// knowledge of those CTAs.
    running_remote: BTreeMap<u32, VClock>,
    completed_remote: BTreeMap<u32, VClock>,
}

#[derive(Clone, Debug, Default)]
struct PartHb {
    id: AgentId,
    clock: VClock,
    /// The clock at the last `fence.async_shared`.
    fence: Option<VClock>,
    /// What its last `fence.mbarrier_init` releases: the inits it knew of (the
    /// [`Comp::Init`] time), published by a relaxed cluster arrive after it.
    init_fence: Option<(AgentId, u32)>,
    /// The last few barrier phases it observed: barrier, wait instruction, what it acquired.
    acquires: VecDeque<(u32, u32, VClock)>,
    /// What it knows of other CTAs of the cluster, by CTA id: clocks over that CTA's
    /// components (learnt through cluster barriers and its own accesses to their memory).
    remote: BTreeMap<u32, VClock>,
}

/// How many observed phases a partition remembers for explaining an ordering.
const ACQUIRE_LOG: usize = 8;

/// A phase-aliasing finding: the waiter's knowledge lags the barrier by two or more phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aliasing {
    /// The barrier's phase number now.
    pub phase: u64,
    /// The events that completed the two phases the waiter has not seen.
    pub missed: [Option<Witness>; 2],
}

/// The checker state of one CTA.
#[derive(Clone, Debug)]
pub struct CtaHb {
    comps: Vec<Comp>,
    index: HashMap<Comp, AgentId>,
    agents: Vec<AgentInfo>,
    ops: Vec<Issued>,
    parts: Vec<PartHb>,
    /// Own-component counters of the unit agents (TMA per barrier, stores, wgmma).
    unit_time: Vec<u32>,
    pipe: VClock,
    /// The async op the pipe is running.
    pipe_op: u32,
    /// The clock, component and async op of the TMA piece being delivered.
    piece: Option<(VClock, AgentId, u32)>,
    bars: HashMap<u32, BarHb>,
    tmem_free: VClock,
    pub smem: Shadow,
    tmem: Shadow,
    /// Scratch: the granule of each element of a shared-memory access.
    granules: Vec<u32>,
    /// The clock of each peer CTA's agent ([`Comp::Peer`]) and the instruction of its last
    /// access, by the peer's CTA id.
    peers: BTreeMap<u32, (AgentId, VClock, u32)>,
    /// The clock of each pair leader's pipe ([`Comp::PeerPipe`]) and the op it runs, by the
    /// leader's CTA id.
    peer_pipes: BTreeMap<u32, (VClock, u32)>,
}

/// Who makes a global-memory access and what it knows ([`crate::check::global`]): a partition,
/// or the unit of an asynchronous operation with what its issuer knew at the issue.
#[derive(Clone, Debug)]
pub struct Accessor {
    pub agent: AgentId,
    /// The agent's own component at the access.
    pub time: u32,
    /// The instruction, or [`ASYNC_OP`] | the asynchronous op's index.
    pub op: u32,
    /// The instruction (that issued it).
    pub instr: u32,
    /// Its clock over this CTA's components.
    pub own: VClock,
    /// The issue clock of an operation of a concurrent unit (what alone orders it after
    /// another operation of that unit).
    pub issue: Option<VClock>,
    /// Who caused it and when (the issuer for an asynchronous operation).
    pub origin: (AgentId, u32),
    /// Its knowledge of other CTAs.
    pub remote: BTreeMap<u32, VClock>,
    /// What the agent stands for.
    pub comp: Comp,
}

impl Accessor {
    /// The access this agent of CTA `cta` makes.
    pub fn access(&self, cta: u32, kind: Kind, atomic: bool, proxy: Proxy) -> GAccess<'_> {
        GAccess {
            rec: GRec {
                cta,
                time: self.time,
                instr: self.instr,
                op: self.op,
                agent: self.agent,
                kind,
                atomic,
                proxy,
            },
            knows: Knows {
                own: &self.own,
                issue: self.issue.as_ref(),
                origin: self.origin,
                remote: &self.remote,
            },
        }
    }
}

fn tmem_granule(lane: u32, col: u32) -> usize {
    col as usize * TMEM_LANES as usize + lane as usize
}

impl CtaHb {
    /// State for a CTA with `smem_bytes` of shared memory, its default partition (agent 0)
    /// started.
    pub fn new(smem_bytes: usize) -> CtaHb {
        let mut hb = CtaHb {
            comps: Vec::new(),
            index: HashMap::new(),
            agents: Vec::new(),
            ops: Vec::new(),
            parts: Vec::new(),
            unit_time: Vec::new(),
            pipe: VClock::default(),
            pipe_op: 0,
            piece: None,
            bars: HashMap::new(),
            tmem_free: VClock::default(),
            smem: Shadow::new(smem_bytes.div_ceil(SMEM_GRANULE as usize)),
            tmem: Shadow::new(0),
            granules: Vec::new(),
            peers: BTreeMap::new(),
            peer_pipes: BTreeMap::new(),
        };
        let id = hb.comp(Comp::Part(0));
        let mut clock = VClock::default();
        clock.tick(id);
        hb.parts.push(PartHb {
            id,
            clock,
            ..PartHb::default()
        });
        hb
    }

    fn comp(&mut self, c: Comp) -> AgentId {
        if let Some(&id) = self.index.get(&c) {
            return id;
        }
        let id = self.comps.len() as AgentId;
        self.comps.push(c);
        self.index.insert(c, id);
        self.agents.push(AgentInfo {
            // Copies, stores and wgmma groups run side by side; partitions and the pipe in order.
            concurrent: !matches!(
                c,
                Comp::Part(_)
                    | Comp::Pipe
                    | Comp::Peer { .. }
                    | Comp::PeerPipe { .. }
                    | Comp::Init
                    | Comp::StoreWrite(_)
            ),
            ..AgentInfo::default()
        });
        self.unit_time.push(0);
        id
    }

    /// The record and access clock of async op `op` acting as unit `id` at the unit's time
    /// `t`: what the issuer knew at the issue, plus the unit's own step.
    fn unit_access(&self, id: AgentId, t: u32, op: u32, proxy: Proxy, kind: Kind) -> Option<(Rec, VClock)> {
        let mut clock = self.ops.get(op as usize)?.clock.clone();
        clock.raise(id, t);
        let rec = Rec {
            time: t,
            op: ASYNC_OP | op,
            agent: id,
            proxy,
            kind,
        };
        Some((rec, clock))
    }

    fn unit_tick(&mut self, c: Comp) -> (AgentId, u32) {
        let id = self.comp(c);
        self.unit_time[id as usize] += 1;
        (id, self.unit_time[id as usize])
    }

    /// A partition executes an operation: its own component advances.
    pub fn step(&mut self, a: usize) {
        if let Some(p) = self.parts.get_mut(a) {
            let id = p.id;
            p.clock.tick(id);
        }
    }

    /// `warp_specialize` starts worker `child` from `parent`: the worker knows what the parent
    /// knows, of this CTA and of the other CTAs of the cluster (a barrier's init released to
    /// the cluster before the fork is known to every partition).
    pub fn fork(&mut self, parent: usize, child: usize) {
        let id = self.comp(Comp::Part(child as u32));
        let (mut clock, remote) = self
            .parts
            .get(parent)
            .map(|p| (p.clock.clone(), p.remote.clone()))
            .unwrap_or_default();
        clock.tick(id);
        while self.parts.len() <= child {
            self.parts.push(PartHb::default());
        }
        self.parts[child] = PartHb {
            id,
            clock,
            remote,
            ..PartHb::default()
        };
        self.step(parent);
    }

    /// The default partition passes the join: it learns everything its workers did, of this
    /// CTA and of the other CTAs of the cluster.
    pub fn join(&mut self, parent: usize, children: &[u32]) {
        let mut acc = VClock::default();
        let mut remote: BTreeMap<u32, VClock> = BTreeMap::new();
        for &c in children {
            if let Some(p) = self.parts.get(c as usize) {
                acc.join(&p.clock);
                for (cta, v) in &p.remote {
                    remote.entry(*cta).or_default().join(v);
                }
            }
        }
        if let Some(p) = self.parts.get_mut(parent) {
            p.clock.join(&acc);
            for (cta, v) in remote {
                p.remote.entry(cta).or_default().join(&v);
            }
        }
    }

    /// `fence.async_shared` by partition `a`.
    pub fn fence(&mut self, a: usize) {
        let Some(p) = self.parts.get_mut(a) else { return };
        let t = p.clock.get(p.id);
        p.fence = Some(p.clock.clone());
        let info = &mut self.agents[p.id as usize];
        if info.fences.last() != Some(&t) {
            info.fences.push(t);
        }
    }

    /// Partition `a` issues an asynchronous operation at instruction `instr`; returns its
    /// index for the access hooks.
    pub fn issue(&mut self, a: usize, instr: u32) -> u32 {
        let Some(p) = self.parts.get(a) else { return 0 };
        self.ops.push(Issued {
            instr,
            issuer: p.id,
            time: p.clock.get(p.id),
            clock: p.clock.clone(),
            fence: p.fence.clone(),
            remote: p.remote.clone(),
        });
        (self.ops.len() - 1) as u32
    }

    /// The instruction that issued async op `op`.
    pub fn op_instr(&self, op: u32) -> u32 {
        self.ops.get(op as usize).map(|o| o.instr).unwrap_or(0)
    }

    // ----- shared and tensor memory -----

    /// Check and record an access over shared-memory elements (`(byte, bit shift)` of each,
    /// `bits` wide).
    fn smem_access(&mut self, addrs: &[(u32, u32)], bits: u32, rec: Rec, clock: &VClock) -> Option<Hazard> {
        let w = World {
            agents: &self.agents,
            ops: &self.ops,
        };
        let acc = Access { rec, clock };
        let mut last = usize::MAX;
        // Elements that each lie within one granule (every naturally aligned element of 32
        // bits or fewer): one granule per element, without the inner ranges.
        let within = addrs.iter().fold(true, |all, &(addr, shift)| {
            all & ((addr % SMEM_GRANULE) * 8 + shift + bits <= SMEM_GRANULE * 8)
        });
        if within {
            // The scratch vector is taken out of `self` while it fills, so that the loops
            // below keep its pointer and length in registers.
            let mut granules = std::mem::take(&mut self.granules);
            granules.clear();
            if bits >= SMEM_GRANULE * 8 {
                granules.extend(addrs.iter().map(|&(addr, _)| addr / SMEM_GRANULE));
            } else {
                // Narrower elements share granules: one entry per run of them, so that a
                // granule window holds each granule once.
                granules.reserve(addrs.len());
                let mut last = u32::MAX;
                for &(addr, _) in addrs {
                    let g = addr / SMEM_GRANULE;
                    if g != last {
                        granules.push(g);
                        last = g;
                    }
                }
            }
            let h = self.smem.access_granules(&granules, &acc, w);
            self.granules = granules;
            return h;
        }
        let granules = addrs.iter().flat_map(|&(addr, shift)| {
            let nbytes = (shift + bits).div_ceil(8).max(1);
            let g0 = (addr / SMEM_GRANULE) as usize;
            let g1 = ((addr + nbytes - 1) / SMEM_GRANULE) as usize;
            g0..g1 + 1
        });
        let granules = granules.filter(move |&g| std::mem::replace(&mut last, g) != g);
        self.smem.access_all(granules, &acc, w)
    }

    fn tmem_access(&mut self, cells: &[(u32, u32)], rec: Rec, clock: &VClock) -> Option<Hazard> {
        let need = cells
            .iter()
            .map(|&(l, c)| tmem_granule(l, c) + 1)
            .max()
            .unwrap_or(0);
        if need > self.tmem.len() {
            // Grow to whole 32-column granules.
            let cols = (need.div_ceil(TMEM_LANES as usize)).div_ceil(32) * 32;
            self.tmem.grow(cols * TMEM_LANES as usize);
        }
        let w = World {
            agents: &self.agents,
            ops: &self.ops,
        };
        let acc = Access { rec, clock };
        let mut last = usize::MAX;
        let granules = cells
            .iter()
            .map(|&(lane, col)| tmem_granule(lane, col))
            .filter(move |&g| std::mem::replace(&mut last, g) != g);
        self.tmem.access_all(granules, &acc, w)
    }

    /// Whether TMEM cell `(lane, col)` was written since it was allocated.
    pub fn tmem_written(&self, lane: u32, col: u32) -> bool {
        self.tmem.written(tmem_granule(lane, col))
    }

    fn part_rec(&self, a: usize, instr: u32, proxy: Proxy, kind: Kind) -> Option<(Rec, VClock)> {
        let p = self.parts.get(a)?;
        Some((
            Rec {
                time: p.clock.get(p.id),
                op: instr,
                agent: p.id,
                proxy,
                kind,
            },
            p.clock.clone(),
        ))
    }

    /// `smem.load` / `smem.store` by partition `a`.
    pub fn generic_smem(
        &mut self,
        a: usize,
        instr: u32,
        kind: Kind,
        addrs: &[(u32, u32)],
        bits: u32,
    ) -> Option<Hazard> {
        let (rec, clock) = self.part_rec(a, instr, Proxy::Generic, kind)?;
        self.smem_access(addrs, bits, rec, &clock)
    }

    /// `tmem.load` / `tmem.store` by partition `a` over cells `(lane, col)`.
    pub fn generic_tmem(&mut self, a: usize, instr: u32, kind: Kind, cells: &[(u32, u32)]) -> Option<Hazard> {
        let (rec, clock) = self.part_rec(a, instr, Proxy::Tensor, kind)?;
        self.tmem_access(cells, rec, &clock)
    }

    /// A piece of TMA load (or gather) `op` lands on behalf of barrier `bar`: its writes are
    /// checked, and its clock is what the following `complete_tx` releases.
    pub fn tma_piece(&mut self, op: u32, bar: u32, addrs: &[(u32, u32)], bits: u32) -> Option<Hazard> {
        self.bar_unit_write(op, bar, addrs, bits, Proxy::Async)
    }

    /// A write of async op `op` that completes bytes on barrier `bar` (a TMA piece, a CLC
    /// response) as proxy `proxy`; its clock is what the following `complete_tx` releases.
    fn bar_unit_write(
        &mut self,
        op: u32,
        bar: u32,
        addrs: &[(u32, u32)],
        bits: u32,
        proxy: Proxy,
    ) -> Option<Hazard> {
        let (id, t) = self.unit_tick(Comp::TmaBar(bar));
        let (rec, clock) = self.unit_access(id, t, op, proxy, Kind::Write)?;
        let h = self.smem_access(addrs, bits, rec, &clock);
        self.piece = Some((clock, id, op));
        h
    }

    /// The response of `clc.try_cancel` `op` lands on behalf of barrier `bar`, like a TMA load
    /// piece but checked as a generic-proxy write: NVIDIA's CUDA Programming Guide
    /// (cluster launch control, "thread block cancellation steps") and Triton's Gluon tutorial
    /// 12 both read the response and issue the next `try_cancel` into the same bytes with no
    /// proxy fence between them, so bwsim does not require one (a read before the response's
    /// barrier completed is still `read-before-complete`, an unordered write still a race).
    pub fn clc_response(&mut self, op: u32, bar: u32, addrs: &[(u32, u32)], bits: u32) -> Option<Hazard> {
        self.bar_unit_write(op, bar, addrs, bits, Proxy::Generic)
    }

    /// TMA store (or scatter) `op`, issued by partition `issuer`, reads its source.
    pub fn tma_store_read(
        &mut self,
        op: u32,
        issuer: u32,
        addrs: &[(u32, u32)],
        bits: u32,
    ) -> Option<Hazard> {
        let (id, t) = self.unit_tick(Comp::Store(issuer));
        let (rec, clock) = self.unit_access(id, t, op, Proxy::Async, Kind::Read)?;
        self.smem_access(addrs, bits, rec, &clock)
    }

    /// `tma.store_wait` passed in partition `a`: it learns every store read that has
    /// completed, and with `full` (it waited for the writes) every global write.
    pub fn store_wait(&mut self, a: usize, full: bool) {
        let comps = [
            Some(Comp::Store(a as u32)),
            full.then_some(Comp::StoreWrite(a as u32)),
        ];
        for c in comps.into_iter().flatten() {
            let Some(&id) = self.index.get(&c) else {
                continue;
            };
            let t = self.unit_time[id as usize];
            if let Some(p) = self.parts.get_mut(a) {
                p.clock.raise(id, t);
            }
        }
    }

    // ----- global memory -----

    /// Partition `a` at instruction `instr` as the agent of a global access.
    pub fn part_accessor(&self, a: usize, instr: u32) -> Option<Accessor> {
        let p = self.parts.get(a)?;
        let time = p.clock.get(p.id);
        Some(Accessor {
            agent: p.id,
            time,
            op: instr,
            instr,
            own: p.clock.clone(),
            issue: None,
            origin: (p.id, time),
            remote: p.remote.clone(),
            comp: Comp::Part(a as u32),
        })
    }

    /// The agent of async op `op` acting as unit `id` at the unit's time `t`.
    fn unit_accessor(&self, id: AgentId, t: u32, op: u32) -> Option<Accessor> {
        let o = self.ops.get(op as usize)?;
        let mut own = o.clock.clone();
        own.raise(id, t);
        Some(Accessor {
            agent: id,
            time: t,
            op: ASYNC_OP | op,
            instr: o.instr,
            own,
            issue: self.agents[id as usize].concurrent.then(|| o.clock.clone()),
            origin: (o.issuer, o.time),
            remote: o.remote.clone(),
            comp: *self.comps.get(id as usize)?,
        })
    }

    /// TMA store (or scatter) `op`, issued by partition `issuer`, writes global memory: one
    /// more event of the partition's store-write unit.
    pub fn store_write(&mut self, op: u32, issuer: u32) -> Option<Accessor> {
        let (id, t) = self.unit_tick(Comp::StoreWrite(issuer));
        self.unit_accessor(id, t, op)
    }

    /// The TMA load piece just delivered ([`Self::tma_piece`]) as the agent of its global reads.
    pub fn piece_accessor(&self) -> Option<Accessor> {
        let (clock, id, op) = self.piece.as_ref()?;
        self.unit_accessor(*id, clock.get(*id), *op)
    }

    /// Partition `a` learns what a global acquire found (by CTA id; `own` is this CTA's id).
    pub fn acquire_global(&mut self, a: usize, own: u32, learnt: &BTreeMap<u32, VClock>) {
        let Some(p) = self.parts.get_mut(a) else { return };
        for (cta, c) in learnt {
            if *cta == own {
                p.clock.join(c);
            } else {
                p.remote.entry(*cta).or_default().join(c);
            }
        }
    }

    /// Partition `a` issues a wgmma (group number `group`, counting from 1) reading the
    /// shared-memory operands `reads` (each a list of element addresses with its width).
    pub fn wgmma(&mut self, a: usize, instr: u32, reads: &[(&[(u32, u32)], u32)]) -> Option<Hazard> {
        let op = self.issue(a, instr);
        let (id, t) = self.unit_tick(Comp::Wgmma(a as u32));
        let (rec, clock) = self.unit_access(id, t, op, Proxy::Async, Kind::Read)?;
        let mut found = None;
        for (addrs, bits) in reads {
            let h = self.smem_access(addrs, *bits, rec, &clock);
            found = found.or(h);
        }
        found
    }

    /// A `cp.async` of partition `a`'s group `group` (counting from 1), issued as async op
    /// `op`, lands its elements: the writes are checked at the component time `group`, with
    /// what the partition knew at the issue. cp.async is a generic-proxy access (no proxy
    /// fence orders it), only its completion is asynchronous.
    pub fn cp_async_land(
        &mut self,
        op: u32,
        a: u32,
        group: u32,
        addrs: &[(u32, u32)],
        bits: u32,
    ) -> Option<Hazard> {
        let id = self.comp(Comp::CpAsync(a));
        let (rec, clock) = self.unit_access(id, group, op, Proxy::Generic, Kind::Write)?;
        self.smem_access(addrs, bits, rec, &clock)
    }

    /// `cp.async.wait` passed in partition `a` with its groups up to `retired` complete.
    pub fn cp_async_wait(&mut self, a: usize, retired: u32) {
        let id = self.comp(Comp::CpAsync(a as u32));
        if let Some(p) = self.parts.get_mut(a) {
            p.clock.raise(id, retired);
        }
    }

    /// `wgmma.wait` passed in partition `a` with `retired` of its wgmma groups complete.
    pub fn wgmma_wait(&mut self, a: usize, retired: u32) {
        let Some(&id) = self.index.get(&Comp::Wgmma(a as u32)) else {
            return;
        };
        if let Some(p) = self.parts.get_mut(a) {
            p.clock.raise(id, retired);
        }
    }

    /// The tensor pipe starts running async op `op` (in issue order): it learns what the
    /// issuer knew at the issue.
    pub fn pipe_exec(&mut self, op: u32) {
        let id = self.comp(Comp::Pipe);
        if let Some(o) = self.ops.get(op as usize) {
            self.pipe.join(&o.clock);
        }
        self.pipe_op = op;
        self.pipe.tick(id);
    }

    fn pipe_rec(&self, op: u32, proxy: Proxy, kind: Kind) -> Rec {
        let id = self.index.get(&Comp::Pipe).copied().unwrap_or(0);
        Rec {
            time: self.pipe.get(id),
            op: ASYNC_OP | op,
            agent: id,
            proxy,
            kind,
        }
    }

    /// The running pipe op `op` reads shared memory (an MMA operand, a tcgen05.cp source).
    pub fn pipe_smem(&mut self, op: u32, kind: Kind, addrs: &[(u32, u32)], bits: u32) -> Option<Hazard> {
        let rec = self.pipe_rec(op, Proxy::Async, kind);
        let clock = self.pipe.clone();
        self.smem_access(addrs, bits, rec, &clock)
    }

    /// The running pipe op `op` accesses tensor memory.
    pub fn pipe_tmem(&mut self, op: u32, kind: Kind, cells: &[(u32, u32)]) -> Option<Hazard> {
        let rec = self.pipe_rec(op, Proxy::Tensor, kind);
        let clock = self.pipe.clone();
        self.tmem_access(cells, rec, &clock)
    }

    /// `tcgen05.alloc` succeeded in partition `a`: it learns every earlier dealloc.
    pub fn tmem_alloc(&mut self, a: usize) {
        if let Some(p) = self.parts.get_mut(a) {
            p.clock.join(&self.tmem_free);
        }
    }

    /// `tmem.dealloc` of columns `col..col + cols` by partition `a`: the cells are forgotten
    /// (a new allocation starts uninitialised) and the release is recorded.
    pub fn tmem_dealloc(&mut self, a: usize, col: u32, cols: u32) {
        if let Some(p) = self.parts.get(a) {
            self.tmem_free.join(&p.clock);
        }
        let lo = tmem_granule(0, col);
        let hi = tmem_granule(0, col.saturating_add(cols));
        self.tmem.clear(lo..hi);
    }

    // ----- mbarriers -----

    /// `mbar.init` by partition `a`: a fresh barrier state (what earlier phases released is
    /// forgotten), its init one more event of [`Comp::Init`], which the partition knows.
    pub fn bar_init(&mut self, a: usize, addr: u32) {
        let (id, t) = self.unit_tick(Comp::Init);
        if let Some(p) = self.parts.get_mut(a) {
            p.clock.raise(id, t);
        }
        self.bars.insert(
            addr,
            BarHb {
                init_at: Some((id, t)),
                ..BarHb::default()
            },
        );
    }

    /// `fence.mbarrier_init` by partition `a`: the inits it knows of become what a relaxed
    /// cluster arrive after it releases.
    pub fn init_fence(&mut self, a: usize) {
        let Some(&id) = self.index.get(&Comp::Init) else {
            return;
        };
        if let Some(p) = self.parts.get_mut(a) {
            p.init_fence = Some((id, p.clock.get(id)));
        }
    }

    /// What a relaxed cluster arrive by partition `a` releases of this CTA: the inits its last
    /// `fence.mbarrier_init` covered (PTX ISA: the fence is a release of the inits at cluster
    /// scope, which the arrive then carries), else nothing.
    pub fn relaxed_release(&self, a: usize) -> VClock {
        let mut c = VClock::default();
        if let Some((id, t)) = self.parts.get(a).and_then(|p| p.init_fence) {
            c.raise(id, t);
        }
        c
    }

    /// Whether the init of the barrier at `addr` is known to `view` (another CTA's knowledge of
    /// this one). A barrier never initialised counts as known: using it is another fault.
    pub fn init_visible(&self, addr: u32, view: &VClock) -> bool {
        match self.bars.get(&addr).and_then(|b| b.init_at) {
            Some((id, t)) => view.knows(id, t),
            None => true,
        }
    }

    /// The checker state of a barrier.
    pub fn bar(&self, addr: u32) -> Option<&BarHb> {
        self.bars.get(&addr)
    }

    fn actor(&self, who: Actor) -> Option<(VClock, Witness, u32)> {
        match who {
            Actor::Part(a, pc) => {
                let p = self.parts.get(a)?;
                Some((
                    p.clock.clone(),
                    Witness {
                        agent: p.id,
                        time: p.clock.get(p.id),
                        instr: pc,
                    },
                    a as u32,
                ))
            }
            Actor::Tma => {
                let (clock, id, op) = self.piece.as_ref()?;
                let o = self.ops.get(*op as usize)?;
                Some((
                    clock.clone(),
                    Witness {
                        agent: *id,
                        time: clock.get(*id),
                        instr: o.instr,
                    },
                    // A copy another CTA issued (a multicast) has no partition here.
                    self.part_of(o.issuer).unwrap_or(u32::MAX),
                ))
            }
            Actor::PeerPipe { cta } => {
                let (clock, op) = self.peer_pipes.get(&cta)?;
                let id = self.peer_pipe_id(cta)?;
                Some((
                    clock.clone(),
                    Witness {
                        agent: id,
                        time: clock.get(id),
                        instr: self.op_instr(*op),
                    },
                    u32::MAX,
                ))
            }
            Actor::Remote { pc } => Some((
                VClock::default(),
                Witness {
                    agent: NO_AGENT,
                    time: 0,
                    instr: pc,
                },
                u32::MAX,
            )),
            Actor::Peer { cta, pc } => {
                let (id, clock, _) = self.peers.get(&cta)?;
                let id = *id;
                Some((
                    clock.clone(),
                    Witness {
                        agent: id,
                        time: clock.get(id),
                        instr: pc,
                    },
                    u32::MAX,
                ))
            }
            Actor::CpArrive { op, upto } => {
                let o = self.ops.get(op as usize)?;
                let part = self.part_of(o.issuer)?;
                let mut clock = VClock::default();
                let id = match self.index.get(&Comp::CpAsync(part)) {
                    Some(&id) => {
                        clock.raise(id, upto);
                        id
                    }
                    None => NO_AGENT,
                };
                Some((
                    clock,
                    Witness {
                        agent: id,
                        time: upto,
                        instr: o.instr,
                    },
                    part,
                ))
            }
            Actor::Pipe => {
                let id = *self.index.get(&Comp::Pipe)?;
                let o = self.ops.get(self.pipe_op as usize)?;
                Some((
                    self.pipe.clone(),
                    Witness {
                        agent: id,
                        time: self.pipe.get(id),
                        instr: o.instr,
                    },
                    self.part_of(o.issuer).unwrap_or(0),
                ))
            }
        }
    }

    /// A barrier action by `who`: an arrival, an expect or a complete_tx of `bytes` (signed:
    /// expects positive, deliveries negative), and whether it completed the phase.
    pub fn bar_update(&mut self, addr: u32, who: Actor, arrival: bool, bytes: i64, flipped: bool) {
        let Some((clock, witness, part)) = self.actor(who) else {
            return;
        };
        let b = self.bars.entry(addr).or_default();
        b.running.join(&clock);
        let arr = Arriver {
            agent: part,
            instr: witness.instr,
        };
        if (arrival || bytes < 0) && part != u32::MAX && !b.arrivers.contains(&arr) {
            b.arrivers.push(arr);
        }
        if bytes > 0 {
            b.expected += bytes;
            if !b.expect_at.contains(&witness.instr) {
                b.expect_at.push(witness.instr);
            }
        } else if bytes < 0 {
            b.delivered -= bytes;
            if !b.deliver_at.contains(&witness.instr) {
                b.deliver_at.push(witness.instr);
            }
        }
        if flipped {
            b.completed = b.running.clone();
            b.completed_remote = b.running_remote.clone();
            b.last = [b.last[1], Some(witness)];
            b.prev_expected = std::mem::take(&mut b.expected);
            b.prev_expect_at = std::mem::take(&mut b.expect_at);
            b.delivered = 0;
            b.deliver_at.clear();
        }
    }

    /// Partition `a` observed a completed phase of the barrier (a wait or test_wait passed).
    pub fn acquire(&mut self, a: usize, addr: u32, pc: u32) {
        let Some(b) = self.bars.get(&addr) else { return };
        if let Some(p) = self.parts.get_mut(a) {
            p.clock.join(&b.completed);
            for (cta, c) in &b.completed_remote {
                p.remote.entry(*cta).or_default().join(c);
            }
            if p.acquires.len() == ACQUIRE_LOG {
                p.acquires.pop_front();
            }
            p.acquires.push_back((addr, pc, b.completed.clone()));
        }
    }

    /// How the access `first` came to happen before partition `issuer`'s later operation: the
    /// barrier that carried it, the release by `first`'s partition and the acquiring wait.
    fn chain(&self, first: &Rec, issuer: AgentId) -> Option<(u32, Option<u32>, u32)> {
        let p = self.parts.get(self.part_of(issuer)? as usize)?;
        let (addr, wait, _) = p
            .acquires
            .iter()
            .find(|(_, _, c)| c.knows(first.agent, first.time))?;
        let from = self.part_of(first.agent);
        let release = self
            .bars
            .get(addr)
            .and_then(|b| b.arrivers.iter().find(|ar| Some(ar.agent) == from))
            .map(|ar| ar.instr);
        Some((*addr, release, *wait))
    }

    /// Whether partition `a`, waiting with `parity` on the barrier now in phase `phase`, waits
    /// for a phase two or more completions behind the barrier.
    ///
    /// With `L` the number of completions the waiter can know of (happens-before: it knows
    /// the event that completed the phase), the phase it means is the next one, `L`, when the
    /// parity is `L`'s, and the last one it knows, `L - 1`, otherwise (a fresh barrier's
    /// parity-1 wait means phase -1). The wait aliases when the barrier has completed that
    /// phase and the one after it: parity then shows the later one.
    pub fn aliasing(&self, a: usize, addr: u32, phase: u64, parity: u32) -> Option<Aliasing> {
        if phase == 0 {
            return None;
        }
        let b = self.bars.get(&addr)?;
        let p = self.parts.get(a)?;
        let knows = |w: &Option<Witness>| w.is_some_and(|w| p.clock.knows(w.agent, w.time));
        if knows(&b.last[1]) {
            return None;
        }
        let knows_prev = phase == 1 || knows(&b.last[0]);
        if knows_prev && (phase & 1) != parity as u64 {
            return None;
        }
        Some(Aliasing {
            phase,
            missed: if knows_prev { [None, b.last[1]] } else { b.last },
        })
    }

    // ----- clusters -----

    /// Partition `a`'s clock: what a release by it (a `cluster.arrive`) publishes of this CTA.
    pub fn part_clock(&self, a: usize) -> VClock {
        self.parts.get(a).map(|p| p.clock.clone()).unwrap_or_default()
    }

    /// What partition `a` knows of CTA `cta`'s components.
    pub fn remote_view(&self, a: usize, cta: u32) -> VClock {
        self.parts
            .get(a)
            .and_then(|p| p.remote.get(&cta).cloned())
            .unwrap_or_default()
    }

    /// Every CTA partition `a` knows something of, with what it knows.
    pub fn remote_views(&self, a: usize) -> Vec<(u32, VClock)> {
        self.parts
            .get(a)
            .map(|p| p.remote.iter().map(|(k, v)| (*k, v.clone())).collect())
            .unwrap_or_default()
    }

    /// Partition `a` acquires `clock` over this CTA's components (a `cluster.wait`).
    pub fn acquire_clock(&mut self, a: usize, clock: &VClock) {
        if let Some(p) = self.parts.get_mut(a) {
            p.clock.join(clock);
        }
    }

    /// Partition `a` learns `clock` over CTA `cta`'s components.
    pub fn learn_remote(&mut self, a: usize, cta: u32, clock: &VClock) {
        if let Some(p) = self.parts.get_mut(a) {
            p.remote.entry(cta).or_default().join(clock);
        }
    }

    /// Peer CTA `cta` (rank `rank`), whose issuing partition knows `view` of this CTA, acts
    /// on this CTA at instruction `pc`: its agent learns `view` and advances. Returns the
    /// agent and its new time (what the issuer then knows of its own act).
    pub fn peer_step(&mut self, cta: u32, rank: u32, view: &VClock, pc: u32) -> (AgentId, u32) {
        let id = self.comp(Comp::Peer { cta, rank });
        let (_, clock, last) = self
            .peers
            .entry(cta)
            .or_insert_with(|| (id, VClock::default(), pc));
        clock.join(view);
        let t = clock.tick(id);
        *last = pc;
        (id, t)
    }

    /// A peer's `smem.load`/`smem.store` of this CTA's shared memory, after [`Self::peer_step`].
    pub fn peer_smem(
        &mut self,
        cta: u32,
        pc: u32,
        kind: Kind,
        addrs: &[(u32, u32)],
        bits: u32,
    ) -> Option<Hazard> {
        let (id, clock, _) = self.peers.get(&cta)?;
        let (id, clock) = (*id, clock.clone());
        let rec = Rec {
            time: clock.get(id),
            op: pc,
            agent: id,
            proxy: Proxy::Generic,
            kind,
        };
        self.smem_access(addrs, bits, rec, &clock)
    }

    /// The peers whose last access to this CTA's memory is not known to have happened before
    /// this CTA's exit (the join of its partitions' final clocks): `(peer CTA, rank,
    /// instruction of its last access)`.
    pub fn peers_unordered_at_exit(&self) -> Vec<(u32, u32, u32)> {
        let mut exit = VClock::default();
        for p in &self.parts {
            exit.join(&p.clock);
        }
        self.comps
            .iter()
            .enumerate()
            .filter_map(|(id, c)| match c {
                Comp::Peer { cta, rank } => {
                    let (_, clock, last) = self.peers.get(cta)?;
                    let id = id as AgentId;
                    (!exit.knows(id, clock.get(id))).then_some((*cta, *rank, *last))
                }
                _ => None,
            })
            .collect()
    }

    /// A release by another CTA on barrier `addr` (a remote arrival, a multicast commit or a
    /// TMA copy of that CTA completing here) publishes `views`: clocks over the components of
    /// the CTAs they name. Call it before the [`Self::bar_update`] of the same action.
    pub fn bar_remote(&mut self, addr: u32, views: &[(u32, VClock)]) {
        let b = self.bars.entry(addr).or_default();
        for (cta, c) in views {
            b.running_remote.entry(*cta).or_default().join(c);
        }
    }

    /// The tensor pipe's clock: what a commit it runs releases of this CTA.
    pub fn pipe_clock(&self) -> VClock {
        self.pipe.clone()
    }

    /// The clock of the TMA piece just delivered: what its completion releases of this CTA.
    pub fn piece_clock(&self) -> VClock {
        self.piece.as_ref().map(|p| p.0.clone()).unwrap_or_default()
    }

    /// Peer CTA `cta`, after [`Self::peer_step`], issues an asynchronous operation acting on
    /// this CTA (a multicast copy landing here, a pair MMA over this CTA's halves) at
    /// instruction `pc`: its op index here, ordered after what the peer's agent knows.
    pub fn peer_issue(&mut self, cta: u32, pc: u32) -> u32 {
        let Some((id, clock, _)) = self.peers.get(&cta) else {
            return 0;
        };
        self.ops.push(Issued {
            instr: pc,
            issuer: *id,
            time: clock.get(*id),
            clock: clock.clone(),
            fence: None,
            remote: BTreeMap::new(),
        });
        (self.ops.len() - 1) as u32
    }

    /// Whether the pair leader `cta`'s pipe has run a pair MMA over this CTA's halves.
    pub fn has_peer_pipe(&self, cta: u32) -> bool {
        self.peer_pipes.contains_key(&cta)
    }

    /// The clock of the pair leader `cta`'s pipe in this CTA: what a commit of that pipe
    /// releases of this CTA (its pair MMAs' accesses here and what their issues knew of it).
    pub fn peer_pipe_clock(&self, cta: u32) -> Option<VClock> {
        self.peer_pipes.get(&cta).map(|(c, _)| c.clone())
    }

    fn peer_pipe_id(&self, cta: u32) -> Option<AgentId> {
        self.comps
            .iter()
            .position(|c| matches!(c, Comp::PeerPipe { cta: x, .. } if *x == cta))
            .map(|i| i as AgentId)
    }

    /// The pair leader `cta` (rank `rank`)'s tensor pipe starts pair op `op` (a
    /// [`Self::peer_issue`] index): in order, it learns what the issue knew.
    pub fn peer_pipe_exec(&mut self, cta: u32, rank: u32, op: u32) {
        let id = self.comp(Comp::PeerPipe { cta, rank });
        let issue = self.ops.get(op as usize).map(|o| o.clock.clone());
        let (clock, cur) = self.peer_pipes.entry(cta).or_default();
        if let Some(c) = issue {
            clock.join(&c);
        }
        *cur = op;
        clock.tick(id);
    }

    fn peer_pipe_rec(&self, cta: u32, proxy: Proxy, kind: Kind) -> Option<(Rec, VClock)> {
        let id = self.peer_pipe_id(cta)?;
        let (clock, op) = self.peer_pipes.get(&cta)?;
        Some((
            Rec {
                time: clock.get(id),
                op: ASYNC_OP | op,
                agent: id,
                proxy,
                kind,
            },
            clock.clone(),
        ))
    }

    /// The pair leader `cta`'s running MMA reads this CTA's half of an operand.
    pub fn peer_pipe_smem(
        &mut self,
        cta: u32,
        kind: Kind,
        addrs: &[(u32, u32)],
        bits: u32,
    ) -> Option<Hazard> {
        let (rec, clock) = self.peer_pipe_rec(cta, Proxy::Async, kind)?;
        self.smem_access(addrs, bits, rec, &clock)
    }

    /// The pair leader `cta`'s running MMA accesses this CTA's half of the accumulator.
    pub fn peer_pipe_tmem(&mut self, cta: u32, kind: Kind, cells: &[(u32, u32)]) -> Option<Hazard> {
        let (rec, clock) = self.peer_pipe_rec(cta, Proxy::Tensor, kind)?;
        self.tmem_access(cells, rec, &clock)
    }

    // ----- naming -----

    /// Whether a hazard involves an access by another CTA of the cluster.
    pub fn involves_peer(&self, h: &Hazard) -> bool {
        [h.first.agent, h.second.agent].iter().any(|&id| {
            matches!(
                self.comps.get(id as usize),
                Some(Comp::Peer { .. } | Comp::PeerPipe { .. })
            )
        })
    }

    /// The machine agent index of a partition component.
    pub fn part_of(&self, id: AgentId) -> Option<u32> {
        match self.comps.get(id as usize) {
            Some(Comp::Part(p)) => Some(*p),
            _ => None,
        }
    }

    /// A component in words: `cta0.default`, `cta0.tma (loads completing on ready[1])`, ...
    pub fn agent_name(
        &self,
        id: AgentId,
        prog: &Program,
        part_name: &dyn Fn(u32) -> String,
        cta: u32,
    ) -> String {
        comp_name(self.comps.get(id as usize), id, prog, part_name, cta)
    }

    /// The instruction index behind an access record.
    pub fn rec_instr(&self, r: &Rec) -> u32 {
        match r.async_index() {
            Some(i) => self.op_instr(i as u32),
            None => r.op,
        }
    }

    /// A hazard as a diagnostic: both spans, both agents, the memory, a help line.
    pub fn describe(
        &self,
        h: &Hazard,
        prog: &Program,
        part_name: &dyn Fn(u32) -> String,
        cta: u32,
        tmem: bool,
    ) -> Diagnostic {
        let instr = |r: &Rec| self.rec_instr(r);
        let span = |r: &Rec| {
            prog.code
                .get(instr(r) as usize)
                .map(|i| i.span)
                .unwrap_or(Span::DUMMY)
        };
        let opname = |r: &Rec| match prog.code.get(instr(r) as usize).map(|i| &i.kind) {
            Some(IKind::Op { name, .. }) => *name,
            _ => "an operation",
        };
        let who = |r: &Rec| {
            let n = self.agent_name(r.agent, prog, part_name, cta);
            match r.async_index().and_then(|i| self.ops.get(i)) {
                Some(o) => format!(
                    "{n}, issued by {}",
                    self.agent_name(o.issuer, prog, part_name, cta)
                ),
                None => n,
            }
        };
        // Who had to know: the partition itself, or the one that issued the asynchronous op.
        let observer = |r: &Rec| match r.async_index().and_then(|i| self.ops.get(i)) {
            Some(o) => format!(
                "{}, which issued the `{}`,",
                self.agent_name(o.issuer, prog, part_name, cta),
                opname(r)
            ),
            None => self.agent_name(r.agent, prog, part_name, cta),
        };
        let verb = |r: &Rec| match r.kind {
            Kind::Read => "reads",
            Kind::Write => "writes",
        };
        let proxy = |r: &Rec| match r.proxy {
            Proxy::Generic => " (generic proxy)",
            Proxy::Async => " (async proxy)",
            Proxy::Tensor => "",
        };
        let (what, place) = if tmem {
            let lane = h.granule % TMEM_LANES;
            let col = h.granule / TMEM_LANES;
            let name = prog.allocs.iter().find_map(|a| match a.place {
                AllocPlace::Tmem {
                    col: c0,
                    cols,
                    manual: false,
                } if col >= c0 && col < c0 + cols => Some(a.name.clone()),
                _ => None,
            });
            (
                match &name {
                    Some(n) => format!("tensor memory `{n}`"),
                    None => "tensor memory".to_string(),
                },
                format!("first conflict at TMEM lane {lane}, column {col}"),
            )
        } else {
            let byte = h.granule * SMEM_GRANULE;
            let names = prog.smem_names(byte);
            match names.first() {
                Some((n, off)) => (
                    format!("`{n}`"),
                    format!("first conflict at shared byte {byte} (byte {off} of `{n}`)"),
                ),
                None => (
                    "shared memory".to_string(),
                    format!("first conflict at shared byte {byte}"),
                ),
            }
        };
        let (f, s) = (&h.first, &h.second);
        let (fo, so) = (opname(f), opname(s));
        let issuer = |r: &Rec| {
            r.async_index()
                .and_then(|i| self.ops.get(i))
                .map(|o| o.issuer)
                .unwrap_or(r.agent)
        };
        let same_side = issuer(f) == issuer(s);
        let (title, help) = match h.kind {
            HazardKind::Race => (
                format!("data race on {what}: `{fo}` and `{so}` are not ordered by happens-before"),
                format!(
                    "order the two accesses: make one side arrive on an mbarrier after its access{} and the other wait on it before `{so}`",
                    if s.proxy == Proxy::Async || f.proxy == Proxy::Async {
                        " (with `fence.async_shared` before the arrive, as one side is asynchronous)"
                    } else {
                        ""
                    }
                ),
            ),
            HazardKind::MissingFence => (
                match f.kind {
                    Kind::Write => format!(
                        "missing `fence.async_shared`: `{so}` (async proxy) reads {what} written by `{fo}` (generic proxy)"
                    ),
                    Kind::Read => format!(
                        "missing `fence.async_shared`: `{so}` (async proxy) overwrites {what} that `{fo}` (generic proxy) read"
                    ),
                },
                match (f.kind, same_side) {
                    (_, true) => format!("add `fence.async_shared` between the `{fo}` and the `{so}`"),
                    (Kind::Write, false) => format!("add `fence.async_shared` after the `{fo}`, before the `mbar.arrive` that hands the buffer to the `{so}`"),
                    (Kind::Read, false) => format!("add `fence.async_shared` after the `{fo}`, before the `mbar.arrive` that hands the buffer back to the `{so}`"),
                },
            ),
            HazardKind::ReadBeforeComplete => (
                format!("`{so}` reads {what} before the `{fo}` that writes it has completed"),
                match prog.code.get(instr(f) as usize).map(|i| &i.kind) {
                    Some(IKind::Op { name, .. }) if name.starts_with("tcgen05") => format!(
                        "wait on the mbarrier of a `tcgen05.commit` issued after the `{fo}` before the `{so}`"
                    ),
                    Some(IKind::Op { name: "cp.async", .. }) => format!(
                        "commit the `{fo}` with `cp.async.commit` and retire its group with `cp.async.wait` before the `{so}`"
                    ),
                    _ => format!("wait on the mbarrier that counts the `{fo}`'s bytes (in the phase it completes) before the `{so}`"),
                },
            ),
            // Two operations of one kind (two copies into one buffer): "an earlier" one.
            HazardKind::WriteWhileInFlight if fo == so => (
                format!(
                    "`{so}` overwrites {what} while an earlier `{fo}` may still be {} it",
                    if f.kind == Kind::Write { "writing" } else { "reading" }
                ),
                match fo {
                    "cp.async" => "retire the earlier `cp.async`'s group with `cp.async.wait` before issuing this one".to_string(),
                    n if n.starts_with("tma.store") || n.starts_with("tma.scatter") => format!(
                        "wait with `tma.store_wait` until the earlier `{fo}` has read its source before this one"
                    ),
                    _ => format!("wait for the earlier `{fo}` to complete (its mbarrier phase) before issuing this one"),
                },
            ),
            HazardKind::WriteWhileInFlight => (
                format!("`{so}` overwrites {what} while `{fo}` may still be accessing it"),
                match opname(f) {
                    n if n.starts_with("tma.store") || n.starts_with("tma.scatter") => format!(
                        "wait with `tma.store_wait` until the `{fo}` has read its source before the `{so}`"
                    ),
                    "wgmma" => format!("retire the `wgmma` with `wgmma.wait` before the `{so}`"),
                    "cp.async" => format!("retire the `cp.async`'s group with `cp.async.wait` before the `{so}`"),
                    n if n.starts_with("tcgen05") => format!(
                        "commit the `{fo}` with `tcgen05.commit` and wait on that barrier before the `{so}`"
                    ),
                    _ => format!("wait for the `{fo}` to complete (its mbarrier phase) before the `{so}`"),
                },
            ),
        };
        // An access issued from another CTA (a multicast copy or response landing here): that
        // CTA must learn that this one is done with the bytes, which only a cluster-scope
        // release from this CTA and its acquire by the issuer can tell it.
        let help = match (h.kind, self.comps.get(issuer(s) as usize)) {
            (HazardKind::WriteWhileInFlight, Some(Comp::Peer { rank, .. })) => format!(
                "the `{so}` comes from the CTA of rank {rank}, which had not learned that this CTA was done with {what}: hand it back first with a cluster barrier whose arrive releases (`cluster.arrive`, not `.relaxed`; Gluon `cluster.barrier()`) or a remote `mbar.arrive` (cta=) after this CTA's last use, waited on by the issuer"
            ),
            _ => help,
        };
        let mut d = Diagnostic::error(
            h.kind.code(),
            title,
            span(s),
            format!("{} {what}{} in {}", verb(s), proxy(s), who(s)),
        )
        .with_label(span(f), format!("{} {what}{} in {}", verb(f), proxy(f), who(f)));
        if !same_side && matches!(h.kind, HazardKind::MissingFence) {
            if let Some((bar, release, wait)) = self.chain(f, issuer(s)) {
                let bar = prog.mbar_name(bar);
                let sp = |pc: u32| prog.code.get(pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
                if let Some(r) = release {
                    d = d.with_label(
                        sp(r),
                        format!("releases `{bar}` with no `fence.async_shared` since the `{fo}`"),
                    );
                }
                d = d
                    .with_label(
                        sp(wait),
                        format!("acquires `{bar}`: this orders the `{so}` after the `{fo}`"),
                    )
                    .with_note(format!(
                        "happens-before chain: `{fo}` -> `{}` on `{bar}` -> `mbar.wait` on `{bar}` -> `{so}`",
                        release
                            .map(|r| opname(&Rec { op: r, ..*f }))
                            .unwrap_or("an arrival")
                    ));
            }
        }
        d = d.with_note(place);
        d = match h.kind {
            HazardKind::Race => d.with_note("neither access happens before the other: no mbarrier phase, fork/join, store_wait or wgmma.wait orders them"),
            HazardKind::MissingFence => d.with_note(
                "the accesses are ordered by happens-before, but shared memory accessed through the generic and the async proxy also needs a proxy fence between them: by the generic side after its access and before the release, or by the issuing side after its acquire (docs/semantics.md#proxies-and-fences)",
            ),
            HazardKind::ReadBeforeComplete => d.with_note(format!(
                "{} had not observed the completion of the `{fo}`",
                observer(s)
            )),
            HazardKind::WriteWhileInFlight => d.with_note(format!(
                "{} had not observed that the {}`{fo}` finished with these bytes{}",
                observer(s),
                if fo == so { "earlier " } else { "" },
                if fo == so && f.is_async() && s.is_async() {
                    " (asynchronous copies run side by side: issue order does not order them)"
                } else {
                    ""
                }
            )),
        };
        d.with_help(help)
    }
}

/// A component of CTA `cta` in words: `cta0.default`, `cta0.tma (loads completing on
/// ready[1])`, ... (`part_name` names a partition by its machine agent index).
pub fn comp_name(
    c: Option<&Comp>,
    id: AgentId,
    prog: &Program,
    part_name: &dyn Fn(u32) -> String,
    cta: u32,
) -> String {
    match c {
        Some(Comp::Part(p)) => part_name(*p),
        Some(Comp::TmaBar(b)) => format!("cta{cta}.tma (copies completing on `{}`)", prog.mbar_name(*b)),
        Some(Comp::Store(p)) => format!("cta{cta}.tma (stores of {})", part_name(*p)),
        Some(Comp::StoreWrite(p)) => {
            format!("cta{cta}.tma (global writes of the stores of {})", part_name(*p))
        }
        Some(Comp::Wgmma(p)) => format!("the wgmma groups of {}", part_name(*p)),
        Some(Comp::CpAsync(p)) => format!("the cp.async groups of {}", part_name(*p)),
        Some(Comp::Pipe) => format!("cta{cta}.tc (the tensor pipe)"),
        Some(Comp::Peer { cta: p, rank }) => {
            format!("cta{p} (rank {rank} of the cluster, acting on this CTA's memory)")
        }
        Some(Comp::Init) => format!("cta{cta}'s barrier initialisation"),
        Some(Comp::PeerPipe { cta: p, rank }) => {
            format!("cta{p}.tc (the tensor pipe of the pair's leader, rank {rank} of the cluster)")
        }
        None => format!("cta{cta}.agent{id}"),
    }
}
