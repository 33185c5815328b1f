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
//! CTAs run in groups of `ctas_in_flight` (a new one starts when one retires). Clusters are
//! launched as independent CTAs: cross-CTA operations (cta_group::2, multicast) are reported as
//! `sim-unsupported`.

use crate::eval::{self, as_tile, broadcast_shapes, BIndex, EvalCtx};
use crate::layout;
use crate::limits::{self, Guard};
use crate::lower::{CExpr, IKind, Instr, LOp, Program, TxKind};
use crate::mbarrier::Mbar;
use crate::memory::{Smem, Tmem};
use crate::sched::{AgentRef, AsyncKind, Scheduler};
use crate::tensor::{self, AOperand, MmaOp, WgmmaA};
use crate::tma;
use crate::trace::{Event, Trace, Unit, What};
use crate::trap::{CudaError, Fault, OpResult, Trap};
use crate::value::*;
use bwsim_isa::launch::HostTensor;
use bwsim_isa::limits::{Limit, Limits};
use bwsim_isa::{Diagnostic, Span};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
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
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            seed: 0,
            trace: true,
            limits: Limits::default(),
            ctas_in_flight: 2,
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
    Mbar { addr: u32, parity: u32 },
    StoreWait { n: u32, full: bool },
    WgmmaWait { n: u32 },
    Join,
    TmemAlloc { cols: u32 },
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

#[derive(Debug, Default)]
struct Agent {
    pc: u32,
    frame: Vec<Value>,
    state: AState,
    first_warp: u32,
    warps: u32,
    groups: VecDeque<Group>,
    wgmma_pending: u32,
    children: Vec<u32>,
}

#[derive(Clone, Debug)]
enum PipeKind {
    Mma(MmaOp),
    Cp { src: SmemView, dst: TmemView },
    Commit { bar: u32 },
}

#[derive(Clone, Debug)]
struct PipeOp {
    kind: PipeKind,
    id: u64,
    span: Span,
    name: &'static str,
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
    smem: Smem,
    tmem: Tmem,
    bars: BTreeMap<u32, BarState>,
    agents: Vec<Agent>,
    pipe: VecDeque<PipeOp>,
    pipe_busy: bool,
    tma: Vec<Option<TmaOp>>,
    tma_free: Vec<u32>,
    events: u32,
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
    let mut m = Machine {
        prog,
        grid,
        global: inputs,
        slots: (0..opts.ctas_in_flight.max(1)).map(|_| None).collect(),
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
        match f {
            Fault::Trap(error, reason) => {
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
                })
            }
            Fault::Error { code, message, help } => {
                let mut d = Diagnostic::error(code, message, span, format!("in `{op}`")).with_note(format!(
                    "{} at t={}",
                    self.trace.unit_name(cta, unit),
                    self.now
                ));
                if let Some(h) = help {
                    d = d.with_help(h);
                }
                Stop::Error(d)
            }
        }
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
                let i = self.sched.pick(&self.runnable).min(self.runnable.len() - 1);
                let r = self.runnable[i];
                self.step(r.cta as usize, r.agent as usize)?;
                self.now += 1;
                self.counters.steps += 1;
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
        for s in 0..self.slots.len() {
            if self.slots[s].is_some() || self.next_cta >= self.total_ctas {
                continue;
            }
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
            self.slots[s] = Some(Cta {
                id: id as u32,
                pid,
                smem: Smem::new(self.prog.smem_bytes),
                tmem,
                bars: BTreeMap::new(),
                agents: vec![agent],
                pipe: VecDeque::new(),
                pipe_busy: false,
                tma: Vec::new(),
                tma_free: Vec::new(),
                events: 0,
            });
            self.ev(id as u32, Unit::Agent(0), What::AgentStart, Span::DUMMY);
        }
    }

    fn retire(&mut self) -> Result<(), Stop> {
        for s in 0..self.slots.len() {
            let done = match &self.slots[s] {
                Some(c) => {
                    c.events == 0 && c.pipe.is_empty() && c.agents.iter().all(|a| a.state == AState::Done)
                }
                None => false,
            };
            if !done {
                continue;
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

    fn deadlock(&mut self) -> Diagnostic {
        let mut lines: Vec<(Span, String)> = Vec::new();
        for c in self.slots.iter().flatten() {
            for (a, ag) in c.agents.iter().enumerate() {
                let AState::Blocked(b) = ag.state else { continue };
                let span = self
                    .prog
                    .code
                    .get(ag.pc as usize)
                    .map(|i| i.span)
                    .unwrap_or(Span::DUMMY);
                let who = self.trace.unit_name(c.id, Unit::Agent(a as u32));
                let what = match b {
                    Block::Mbar { addr, parity } => match c.bars.get(&addr) {
                        Some(BarState::Live(m)) => format!(
                            "{who} waits for parity {parity} of the mbarrier at shared byte {addr}: its phase is {} (parity {}), {} of {} arrivals pending, tx-count {}",
                            m.phase,
                            m.phase & 1,
                            m.pending,
                            m.expected,
                            m.tx
                        ),
                        _ => format!("{who} waits on the mbarrier at shared byte {addr}, which is not initialised"),
                    },
                    Block::StoreWait { n, .. } => format!("{who} waits until at most {n} TMA store groups are pending"),
                    Block::WgmmaWait { n } => format!("{who} waits until at most {n} wgmma groups are pending"),
                    Block::Join => format!("{who} waits for its worker partitions to finish"),
                    Block::TmemAlloc { cols } => format!("{who} waits for {cols} free TMEM columns"),
                };
                lines.push((span, what));
            }
        }
        let (first_span, first) = lines.first().cloned().unwrap_or((Span::DUMMY, "no agent".into()));
        let mut d = Diagnostic::error(
            "deadlock",
            "deadlock: every agent is blocked and nothing is in flight",
            first_span,
            first.clone(),
        );
        for (sp, l) in lines.iter().skip(1) {
            d = d.with_label(*sp, l.clone());
        }
        for (_, l) in &lines {
            d = d.with_note(l.clone());
        }
        d.with_help("check that every wait's parity matches the phase its producer completes, and that expect bytes equal the bytes delivered")
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
            EvKind::WgmmaDone { agent } => {
                let ag = &mut self.cta(s).agents[agent as usize];
                ag.wgmma_pending = ag.wgmma_pending.saturating_sub(1);
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
        let r = match &op.kind {
            TmaKind::Store { coords, .. } => tma::store_read(desc, coords, &slot.smem, &op.addrs),
            TmaKind::Scatter { xs, col, .. } => tma::scatter_read(desc, xs, *col, &slot.smem, &op.addrs),
            _ => Ok(Vec::new()),
        };
        let data = r.map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tma, op.name))?;
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
        ag.groups.retain(|g| g.reads > 0 || g.writes > 0);
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
                PipeKind::Mma(_) => AsyncKind::Mma,
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
        let r = match &op.kind {
            PipeKind::Mma(m) => {
                self.counters.mmas += 1;
                tensor::mma(&c.smem, &mut c.tmem, m)
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
        if let PipeKind::Commit { bar } = op.kind {
            self.bar_act(s, Unit::Tc, op.span, bar, BarAct::Arrive(1))
                .map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tc, op.name))?;
        }
        self.pipe_kick(s);
        Ok(())
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
        .map_err(|e| Fault::trap(CudaError::LaunchFailure, e.reason()))?;
        let b = *b;
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
                let d = Diagnostic::error(
                    "tx-mismatch",
                    format!("a TMA copy delivered {left} bytes after the mbarrier phase it was issued in had completed"),
                    span,
                    "this copy's bytes overshoot the phase's expect",
                )
                .with_note("the phase completed early (waiters may read bytes that have not landed) and the surplus drives the next phase's tx-count negative (PTX.md section 3)")
                .with_help("expect exactly the bytes the copies deliver: the full box, out-of-bounds part included");
                if !self
                    .diags
                    .iter()
                    .any(|x| x.code == d.code && x.primary.span.start == span.start)
                {
                    self.diags.push(d);
                }
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
                if (st > 0 && c < e) || (st < 0 && c > e) {
                    frame[*var as usize] = Value::Int(c);
                    Ok(Flow::Next)
                } else {
                    Ok(Flow::Jump(*exit))
                }
            }
            IKind::LoopNext { ctr, step, head } => {
                let c = frame[*ctr as usize].as_int().unwrap_or(0);
                let st = frame[*step as usize].as_int().unwrap_or(1);
                // Saturating: a counter that would pass i64's range has passed the loop's end.
                frame[*ctr as usize] = Value::Int(c.saturating_add(st));
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
                let ag = &self.cta(s).agents[a];
                let pending = ag
                    .groups
                    .iter()
                    .filter(|g| {
                        if *full {
                            g.reads > 0 || g.writes > 0
                        } else {
                            g.reads > 0
                        }
                    })
                    .count() as u32;
                if pending <= *pendings {
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
                self.cta(s)
                    .bars
                    .insert(addr, BarState::Live(Mbar::init(n as u32)));
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
                if b.test_wait(parity) {
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
                Ok(OpFlow::Value(Value::Bool(b.test_wait(parity))))
            }
            LOp::MbarInvalidate { bar } => {
                let addr = bar_of(&ev(bar)?)?;
                self.cta(s).bar(addr)?;
                self.cta(s).bars.insert(addr, BarState::Invalid);
                self.ev(cta_id, me, What::Invalidate { bar: addr }, span);
                Ok(OpFlow::Next)
            }
            LOp::Fence | LOp::BarSync => {
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
                if *cta_group != 1 {
                    return Err(Fault::unsupported("tcgen05.mma with cta_group::2 (an MMA across a CTA pair) is not modelled by the simulator"));
                }
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
                self.pipe_push(s, a, PipeKind::Mma(m), span, name);
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
                if *cta_group != 1 {
                    return Err(Fault::unsupported(
                        "tcgen05.commit with cta_group::2 is not modelled by the simulator",
                    ));
                }
                let addr = bar_of(&ev(bar)?)?;
                self.cta(s).bar(addr)?;
                self.pipe_push(s, a, PipeKind::Commit { bar: addr }, span, name);
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
                for lin in 0..n {
                    unravel(lin, &shape, &mut idx);
                    let cell = layout::tmem_element(&v, &idx);
                    check_lane(ag, cell.lane, name)?;
                    bits.push(c.tmem.read(cell, v.dtype.bits())?);
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
                for lin in 0..v.shape.numel() {
                    unravel(lin, &shape, &mut idx);
                    let cell = layout::tmem_element(&v, &idx);
                    check_lane(&c.agents[a], cell.lane, name)?;
                    c.tmem.write(cell, v.dtype.bits(), t.bits[lin as usize])?;
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
                let r = tensor::wgmma(&self.cta(s).smem, &a_op, &bv, &accv, ua)?;
                self.counters.mmas += 1;
                self.counters.async_ops += 1;
                self.cta(s).agents[a].wgmma_pending += 1;
                let id = self.new_id();
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                let delay = self.sched.latency(AsyncKind::Wgmma);
                self.schedule(s, delay, EvKind::WgmmaDone { agent: a as u32 });
                Ok(OpFlow::Value(Value::Tile(Arc::new(r))))
            }
            LOp::WgmmaWait { pendings } => {
                if self.cta(s).agents[a].wgmma_pending <= *pendings {
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
                for (addr, shift) in addrs {
                    bits.push(c.smem.read(addr, shift, eb)?);
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
                for (lin, (addr, shift)) in addrs.into_iter().enumerate() {
                    let b = eval::convert_bits(t.dtype, v.dtype, t.bits[lin]);
                    c.smem.write(addr, shift, eb, b)?;
                }
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
        let c = self.cta(s);
        let cta_id = c.id;
        c.pipe.push_back(PipeOp { kind, id, span, name });
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
        Block::StoreWait { n, full } => {
            ag.groups
                .iter()
                .filter(|g| {
                    if full {
                        g.reads > 0 || g.writes > 0
                    } else {
                        g.reads > 0
                    }
                })
                .count() as u32
                <= n
        }
        Block::WgmmaWait { n } => ag.wgmma_pending <= n,
        Block::Join => ag
            .children
            .iter()
            .all(|&ch| c.agents[ch as usize].state == AState::Done),
        Block::TmemAlloc { cols } => c.tmem.can_alloc(cols),
    }
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
