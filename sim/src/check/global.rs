//! Global memory in the hazard checker: one shadow memory per launch, shared by every CTA, and
//! the synchronisation that atomics carry from one CTA to another.
//!
//! Every element of a *tracked* global tensor (one the program may write: the target of a
//! `global.store`, a `global.atomic`, a `tma.store` or a `tma.scatter`; a tensor nothing writes
//! cannot race) holds the index of a state ([`GlobalHb`] shares states between elements, as
//! [`crate::check::hb::Shadow`] does): the last plain write and the accesses since (reads and
//! atomic writes, at most one per CTA, agent and kind), each a compact [`GRec`]: the CTA, the
//! agent in that CTA's clock space ([`crate::check::hazards::CtaHb`]), the agent's own clock
//! component at the access, read or write, atomic or not, the proxy and the instruction.
//!
//! A new access conflicts with a recorded one when at least one writes and not both are
//! atomic; the pair is a `global-race` unless happens-before orders them:
//!
//! - the same CTA: the accessor's clock knows the recorded agent's time (program order within
//!   an agent that runs in order, such as a partition or the global writes of its TMA stores;
//!   for two operations of one concurrent unit, such as two TMA loads completing on one
//!   barrier, what the later one's issuer knew at the issue);
//! - different CTAs: the accessor's knowledge of the other CTA (`remote` views, learnt through
//!   cluster barriers, remote arrivals and the atomics below) knows the time.
//!
//! Atomics synchronise ([`Sem`], [`Scope`]): a release publishes the releasing partition's
//! clock (as knowledge of its CTA) and its views of other CTAs into the element's sync state;
//! later atomics continue the release sequence (the state accumulates), a plain write ends it;
//! an acquire joins what the element's sync state holds of releases whose scope and its own
//! both include the two CTAs. A plain store that leaves an element's bits as they were does not
//! conflict with the last write when another CTA made it with the same instruction (a layout
//! replicated over a cluster's CTAs stores each element from every CTA that holds it). This
//! module knows nothing of the machine: the machine computes
//! the elements an operation touches and what its agent knows, and applies what an acquire
//! learnt.

use crate::check::hazards::{comp_name, Comp};
use crate::check::hb::{AgentId, Kind, Proxy, VClock, ASYNC_OP, NO_AGENT};
use crate::lower::{IKind, LOp, Program, Slot};
use crate::value::Value;
use bwsim_isa::ir::OpKind as K;
use bwsim_isa::launch::HostTensor;
use bwsim_isa::{Code, Diagnostic, Span};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use bwsim_isa::typeck::{AtomicScope as Scope, AtomicSem as Sem};

/// Where a thread runs, for scope inclusion: its CTA id and its cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    pub cta: u32,
    pub cluster: u64,
}

/// Whether scope `s`, taken by a thread at `a`, includes a thread at `b` (PTX ISA, memory
/// consistency model, "scope").
fn includes(s: Scope, a: Place, b: Place) -> bool {
    match s {
        Scope::Cta => a.cta == b.cta,
        Scope::Cluster => a.cluster == b.cluster,
        Scope::Gpu | Scope::Sys => true,
    }
}

/// One recorded global access (20 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GRec {
    /// The CTA (its linear id) whose agent made it.
    pub cta: u32,
    /// The agent's own clock component at the access.
    pub time: u32,
    /// The instruction (that issued it, for an asynchronous operation): its span.
    pub instr: u32,
    /// The operation: the instruction index, or [`ASYNC_OP`] | the asynchronous op's index in
    /// its CTA's table (two records of one operation never conflict).
    pub op: u32,
    pub agent: AgentId,
    pub kind: Kind,
    pub atomic: bool,
    pub proxy: Proxy,
}

impl GRec {
    pub const EMPTY: GRec = GRec {
        cta: 0,
        time: 0,
        instr: 0,
        op: 0,
        agent: NO_AGENT,
        kind: Kind::Read,
        atomic: false,
        proxy: Proxy::Generic,
    };
    fn is_empty(&self) -> bool {
        self.agent == NO_AGENT
    }
    /// Whether an asynchronous operation (a TMA copy) made it.
    pub fn is_async(&self) -> bool {
        self.op & ASYNC_OP != 0
    }
    /// Whether `o` stands for the same agent and kind of access (a later one replaces it).
    fn same_slot(&self, o: &GRec) -> bool {
        self.cta == o.cta && self.agent == o.agent && self.kind == o.kind && self.atomic == o.atomic
    }
}

/// What the agent making an access knows: of its own CTA, and of the others.
#[derive(Clone, Copy, Debug)]
pub struct Knows<'a> {
    /// Its clock over its own CTA's components.
    pub own: &'a VClock,
    /// For an asynchronous operation's access (its agent is a concurrent unit): what its issuer
    /// knew at the issue, which alone orders it after another operation of the same unit;
    /// `None` for an agent that runs in order.
    pub issue: Option<&'a VClock>,
    /// Who caused the access and when: the issuer and its time for an asynchronous operation.
    pub origin: (AgentId, u32),
    /// Its knowledge of other CTAs' components, by CTA id.
    pub remote: &'a BTreeMap<u32, VClock>,
}

/// An access being checked: its record and what its agent knows.
#[derive(Clone, Copy, Debug)]
pub struct GAccess<'a> {
    pub rec: GRec,
    pub knows: Knows<'a>,
}

/// A race on global memory, its accesses in their logical order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GHazard {
    pub first: GRec,
    pub second: GRec,
    /// The launch tensor and the element (linear index) of the first conflict.
    pub tensor: u32,
    pub elem: u64,
}

/// Whether `prev` and the access `cur` race; `Some(swapped)` when they do, `swapped` when
/// `cur` is logically the first (an asynchronous write issued before `prev` happened).
fn pair(prev: &GRec, cur: &GAccess) -> Option<bool> {
    let c = &cur.rec;
    if prev.cta == c.cta && prev.op == c.op {
        return None;
    }
    if (prev.kind == Kind::Read && c.kind == Kind::Read) || (prev.atomic && c.atomic) {
        return None;
    }
    let k = &cur.knows;
    let ordered = if prev.cta != c.cta {
        k.remote
            .get(&prev.cta)
            .is_some_and(|v| v.knows(prev.agent, prev.time))
    } else if prev.agent == c.agent {
        k.issue.is_none_or(|i| i.knows(prev.agent, prev.time))
    } else {
        k.own.knows(prev.agent, prev.time)
    };
    if ordered {
        return None;
    }
    let (oa, ot) = k.origin;
    Some(prev.cta == c.cta && c.is_async() && prev.agent == oa && prev.time > ot)
}

/// What releases published into an element: one entry per releasing CTA and scope.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncState {
    entries: Vec<SyncEntry>,
}

/// A release (or the join of a CTA's releases of one scope): where it came from, its scope,
/// and the knowledge it carries, by CTA id.
#[derive(Clone, Debug, PartialEq)]
pub struct SyncEntry {
    pub from: Place,
    pub scope: Scope,
    pub views: Vec<(u32, VClock)>,
}

impl SyncState {
    fn with(&self, rel: &SyncEntry) -> SyncState {
        let mut s = self.clone();
        match s
            .entries
            .iter_mut()
            .find(|e| e.from.cta == rel.from.cta && e.scope == rel.scope)
        {
            Some(e) => {
                for (cta, v) in &rel.views {
                    match e.views.iter_mut().find(|(c, _)| c == cta) {
                        Some((_, w)) => w.join(v),
                        None => e.views.push((*cta, v.clone())),
                    }
                }
            }
            None => s.entries.push(rel.clone()),
        }
        s
    }

    /// Join into `into` what an acquire by a thread at `at` with scope `scope` learns.
    fn acquire(&self, at: Place, scope: Scope, into: &mut BTreeMap<u32, VClock>) {
        for e in &self.entries {
            if includes(e.scope, e.from, at) && includes(scope, at, e.from) {
                for (cta, v) in &e.views {
                    into.entry(*cta).or_default().join(v);
                }
            }
        }
    }
}

/// The state of one element: the last plain write, the accesses since (reads and atomic
/// writes, one per CTA, agent and kind) and what releases published there.
#[derive(Clone, Debug, PartialEq)]
struct GCell {
    w: GRec,
    since: Vec<GRec>,
    sync: Option<Arc<SyncState>>,
}

impl GCell {
    const EMPTY: GCell = GCell {
        w: GRec::EMPTY,
        since: Vec::new(),
        sync: None,
    };

    /// The first recorded access `cur` races with. `same_bits`: `cur` is a plain write that
    /// leaves the element's bits as they are, which does not conflict with the last write when
    /// another CTA made it with the same instruction (a layout replicated over the CTAs of a
    /// cluster stores each element from every CTA that holds it).
    fn check(&self, cur: &GAccess, same_bits: bool) -> Option<(GRec, bool)> {
        let c = &cur.rec;
        let replicated = same_bits && self.w.kind == Kind::Write && !self.w.atomic && self.w.instr == c.instr;
        let w = (!replicated).then_some(&self.w);
        w.into_iter()
            .chain(&self.since)
            .filter(|r| !r.is_empty())
            .find_map(|r| pair(r, cur).map(|s| (*r, s)))
    }

    /// The state after `rec` (not a plain write) and the release `rel`, if any.
    fn after(&self, rec: GRec, rel: Option<&SyncEntry>) -> GCell {
        let mut since = self.since.clone();
        match since.iter_mut().find(|r| r.same_slot(&rec)) {
            Some(r) => *r = rec,
            None => since.push(rec),
        }
        let sync = match rel {
            Some(rel) => Some(Arc::new(
                self.sync.as_deref().cloned().unwrap_or_default().with(rel),
            )),
            None => self.sync.clone(),
        };
        GCell {
            w: self.w,
            since,
            sync,
        }
    }
}

/// What an atomic does besides its accesses: the release it publishes and the acquire it makes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sync<'a> {
    pub release: Option<&'a SyncEntry>,
    /// The acquirer's place and scope.
    pub acquire: Option<(Place, Scope)>,
}

/// Elements per shadow page (pages are allocated on first access).
const PAGE: u64 = 1024;
/// Pages a thread keeps for its next runs ([`PAGE_POOL`]).
const POOL_PAGES: usize = 4096;

thread_local! {
    /// Pages of finished runs, reused by the next run on the thread (a schedule after a
    /// schedule): zeroing a page is cheaper than faulting in fresh memory for every run.
    static PAGE_POOL: std::cell::RefCell<Vec<Box<[u32]>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// An empty page (every element in the empty state).
fn new_page() -> Box<[u32]> {
    match PAGE_POOL.with(|p| p.borrow_mut().pop()) {
        Some(mut page) => {
            page.fill(0);
            page
        }
        None => vec![0u32; PAGE as usize].into_boxed_slice(),
    }
}

impl Drop for GlobalHb {
    fn drop(&mut self) {
        PAGE_POOL.with(|p| {
            let mut pool = p.borrow_mut();
            for page in self.pages.iter_mut().flatten().filter_map(Option::take) {
                if pool.len() >= POOL_PAGES {
                    break;
                }
                pool.push(page);
            }
        });
    }
}
/// The fewest states kept before unused ones are dropped.
const MIN_COMPACT: usize = 4096;

/// The global shadow memory of one launch.
#[derive(Clone, Debug)]
pub struct GlobalHb {
    /// Per launch tensor: whether the program may write it (only those are shadowed).
    tracked: Vec<bool>,
    /// Per tensor, pages of element states (0: nothing recorded).
    pages: Vec<Vec<Option<Box<[u32]>>>>,
    states: Vec<GCell>,
    compact_at: usize,
    /// What each agent that made a record stands for, by (CTA, agent), for naming.
    comps: HashMap<(u32, AgentId), Comp>,
}

/// Old state (and whether the write keeps the element's bits) → new state of the elements one
/// access moved (a small cache, oldest replaced).
struct Moves {
    pairs: [(u64, u32); 8],
    next: usize,
}

impl Moves {
    fn get(&self, id: u64) -> Option<u32> {
        self.pairs.iter().find(|p| p.0 == id).map(|p| p.1)
    }
    fn put(&mut self, id: u64, to: u32) {
        self.pairs[self.next] = (id, to);
        self.next = (self.next + 1) % self.pairs.len();
    }
}

impl GlobalHb {
    /// The shadow of a launch of `prog` over `ntensors` tensors.
    pub fn new(prog: &Program, ntensors: usize) -> GlobalHb {
        GlobalHb {
            tracked: written_tensors(prog, ntensors),
            pages: vec![Vec::new(); ntensors],
            states: vec![GCell::EMPTY],
            compact_at: MIN_COMPACT,
            comps: HashMap::new(),
        }
    }

    /// Whether accesses of tensor `t` are checked (the program may write it).
    #[inline]
    pub fn tracked(&self, t: u32) -> bool {
        self.tracked.get(t as usize).copied().unwrap_or(false)
    }

    /// Remember what agent `agent` of CTA `cta` stands for (for naming it in a report).
    pub fn name_agent(&mut self, cta: u32, agent: AgentId, comp: Comp) {
        self.comps.entry((cta, agent)).or_insert(comp);
    }

    /// What agent `agent` of CTA `cta` stands for.
    pub fn comp(&self, cta: u32, agent: AgentId) -> Option<&Comp> {
        self.comps.get(&(cta, agent))
    }

    fn get(&self, t: usize, e: u64) -> u32 {
        self.pages[t]
            .get((e / PAGE) as usize)
            .and_then(|p| p.as_ref())
            .map_or(0, |p| p[(e % PAGE) as usize])
    }

    fn set(&mut self, t: usize, e: u64, id: u32) {
        let pages = &mut self.pages[t];
        let pi = (e / PAGE) as usize;
        if pages.len() <= pi {
            pages.resize(pi + 1, None);
        }
        let page = pages[pi].get_or_insert_with(new_page);
        page[(e % PAGE) as usize] = id;
    }

    /// Drop the states no element holds (renumbering the rest) once there are many.
    fn compact(&mut self) {
        if self.states.len() < self.compact_at {
            return;
        }
        let mut remap = vec![u32::MAX; self.states.len()];
        remap[0] = 0;
        let mut kept = vec![GCell::EMPTY];
        for page in self.pages.iter_mut().flatten().flatten() {
            for id in page.iter_mut() {
                let r = &mut remap[*id as usize];
                if *r == u32::MAX {
                    *r = kept.len() as u32;
                    kept.push(std::mem::replace(&mut self.states[*id as usize], GCell::EMPTY));
                }
                *id = *r;
            }
        }
        self.compact_at = (2 * kept.len()).max(MIN_COMPACT);
        self.states = kept;
    }

    /// Check the access `cur` of elements `elems` of tensor `t` and record it in each (each
    /// element with whether a plain write leaves its bits as they were). The first race is
    /// returned; the knowledge an acquire learnt is joined into `acquired` (by CTA id). An
    /// untracked tensor is neither checked nor recorded.
    pub fn access(
        &mut self,
        t: u32,
        elems: impl IntoIterator<Item = (u64, bool)>,
        cur: &GAccess,
        sync: Sync,
        acquired: &mut BTreeMap<u32, VClock>,
    ) -> Option<GHazard> {
        if !self.tracked(t) {
            return None;
        }
        self.compact();
        let ti = t as usize;
        let plain_write = cur.rec.kind == Kind::Write && !cur.rec.atomic;
        let mut found = None;
        let mut moves = Moves {
            pairs: [(u64::MAX, 0); 8],
            next: 0,
        };
        let mut written: Option<u32> = None;
        for (e, same_bits) in elems {
            let id = self.get(ti, e);
            let same_bits = same_bits && plain_write;
            let key = (id as u64) << 1 | same_bits as u64;
            if let Some(to) = moves.get(key) {
                self.set(ti, e, to);
                continue;
            }
            let cell = &self.states[id as usize];
            if found.is_none() {
                if let Some((prev, swapped)) = cell.check(cur, same_bits) {
                    let (first, second) = if swapped { (cur.rec, prev) } else { (prev, cur.rec) };
                    found = Some(GHazard {
                        first,
                        second,
                        tensor: t,
                        elem: e,
                    });
                }
            }
            if let (Some((at, scope)), Some(s)) = (sync.acquire, &cell.sync) {
                s.acquire(at, scope, acquired);
            }
            let to = if plain_write {
                *written.get_or_insert_with(|| {
                    self.states.push(GCell {
                        w: cur.rec,
                        since: Vec::new(),
                        sync: None,
                    });
                    (self.states.len() - 1) as u32
                })
            } else {
                let next = cell.after(cur.rec, sync.release);
                self.states.push(next);
                (self.states.len() - 1) as u32
            };
            moves.put(key, to);
            self.set(ti, e, to);
        }
        found
    }
}

impl GlobalHb {
    /// A race as a diagnostic: both spans, both agents with their CTAs, the tensor and the
    /// element. `part_name(cta, p)` names partition `p` of CTA `cta`; `cluster` is the CTAs per
    /// cluster (ranks are named when it is more than 1).
    pub fn describe(
        &self,
        h: &GHazard,
        prog: &Program,
        tensor: &HostTensor,
        part_name: &dyn Fn(u32, u32) -> String,
        cluster: u32,
    ) -> Diagnostic {
        let span = |r: &GRec| prog.code.get(r.instr as usize).map_or(Span::DUMMY, |i| i.span);
        let opname = |r: &GRec| match prog.code.get(r.instr as usize).map(|i| &i.kind) {
            Some(IKind::Op { name, .. }) => *name,
            _ => "an operation",
        };
        let who = |r: &GRec| {
            let pn = |p: u32| part_name(r.cta, p);
            comp_name(self.comp(r.cta, r.agent), r.agent, prog, &pn, r.cta)
        };
        let verb = |r: &GRec| match (r.kind, r.atomic) {
            (Kind::Read, false) => "reads",
            (Kind::Read, true) => "atomically reads",
            (Kind::Write, false) => "writes",
            (Kind::Write, true) => "atomically updates",
        };
        let cta = |c: u32| {
            if cluster > 1 {
                format!("CTA {c} (rank {} of its cluster)", c % cluster)
            } else {
                format!("CTA {c}")
            }
        };
        let name = &tensor.name;
        let what = format!("global tensor `{name}`");
        let (f, s) = (&h.first, &h.second);
        let (fo, so) = (opname(f), opname(s));
        let same = f.cta == s.cta;
        let tma_store = |n: &str| n.starts_with("tma.store") || n.starts_with("tma.scatter");
        let title = match (same && f.is_async(), f.kind, s.kind) {
            (true, Kind::Write, Kind::Read) => {
                format!("`{so}` reads {what} before the `{fo}` that writes it has completed")
            }
            (true, _, Kind::Write) => format!(
                "`{so}` writes {what} while the `{fo}` may still be {} it",
                if f.kind == Kind::Write {
                    "writing"
                } else {
                    "reading"
                }
            ),
            _ if same => format!("data race on {what}: `{fo}` and `{so}` are not ordered by happens-before"),
            _ => format!(
                "data race on {what} between {} and {}: `{fo}` and `{so}` are not ordered by happens-before",
                cta(f.cta),
                cta(s.cta)
            ),
        };
        let help = if same && f.is_async() && tma_store(fo) {
            format!(
                "wait for the store's global writes with `tma.store_wait 0, full=true` (Gluon: `tma.store_wait(0)` without `read_only`) before the `{so}`"
            )
        } else if same && f.is_async() {
            format!("wait on the mbarrier the `{fo}` completes on before the `{so}`")
        } else if same {
            format!("order the two accesses (an mbarrier arrive after the `{fo}` and a wait on it before the `{so}`, or the join of `warp_specialize`)")
        } else {
            format!(
                "make both accesses atomic (`global.atomic`), give each CTA elements of its own, or order them: after the `{fo}` its CTA sets a flag with a releasing atomic (`global.atomic`, acq_rel or release), and {} reads that flag with an acquiring atomic until it sees the value before the `{so}`",
                cta(s.cta)
            )
        };
        let index = unravel_index(h.elem, &tensor.shape);
        let note = if same {
            format!("neither access happens before the other within {}: no mbarrier phase, fork/join or `tma.store_wait` (with `full=true` for a store's global writes) orders them", cta(f.cta))
        } else {
            format!(
                "nothing orders {}'s access before {}'s: CTAs of a launch are ordered only by release/acquire atomics on global memory (scopes that include both), or within a cluster by its barrier and remote arrivals; launch order orders nothing",
                cta(f.cta),
                cta(s.cta)
            )
        };
        Diagnostic::error(
            Code::GlobalRace,
            title,
            span(s),
            format!("{} {what} in {} ({})", verb(s), who(s), cta(s.cta)),
        )
        .with_label(
            span(f),
            format!("{} {what} in {} ({})", verb(f), who(f), cta(f.cta)),
        )
        .with_note(format!(
            "first conflict at element {} of `{name}` (index {index:?} of its shape {:?})",
            h.elem, tensor.shape
        ))
        .with_note(note)
        .with_help(help)
    }
}

/// The multi-index of linear element `e` of a row-major tensor of shape `shape`.
fn unravel_index(mut e: u64, shape: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        let d = d.max(1);
        idx[i] = e % d;
        e /= d;
    }
    idx
}

/// Which launch tensors the program may write: those a `tma.store`/`tma.scatter` descriptor
/// names, and those a `global.store`/`global.atomic` pointer names. A pointer the lowering does
/// not pin to one parameter (a slot that is assigned again) makes every tensor count.
pub fn written_tensors(prog: &Program, ntensors: usize) -> Vec<bool> {
    let mut out = vec![false; ntensors];
    let params: HashMap<Slot, u32> = prog
        .init
        .iter()
        .filter_map(|(s, v)| match v {
            Value::Ptr(t) => Some((*s, *t)),
            _ => None,
        })
        .collect();
    let mut assigned = std::collections::HashSet::new();
    for i in &prog.code {
        match &i.kind {
            IKind::Eval { dsts, .. } | IKind::Op { dsts, .. } => assigned.extend(dsts.iter().copied()),
            IKind::LoopInit { ctr, end, step, .. } => assigned.extend([*ctr, *end, *step]),
            IKind::LoopTest { var, .. } => {
                assigned.insert(*var);
            }
            _ => {}
        }
    }
    let mut all = false;
    let mut mark = |t: Option<u32>, out: &mut Vec<bool>| match t {
        Some(t) => {
            if let Some(w) = out.get_mut(t as usize) {
                *w = true;
            }
        }
        None => all = true,
    };
    let pinned = |p: &crate::lower::CExpr| match p {
        crate::lower::CExpr::Slot(s) if !assigned.contains(s) => params.get(s).copied(),
        crate::lower::CExpr::Const(Value::Ptr(t)) => Some(*t),
        _ => None,
    };
    for i in &prog.code {
        let IKind::Op { op, .. } = &i.kind else { continue };
        match op {
            LOp::TmaStore { desc, .. } => mark(
                (prog.descs.get(*desc as usize))
                    .filter(|d| !d.device)
                    .map(|d| d.tensor),
                &mut out,
            ),
            LOp::Op(K::GlobalStore { ptr, .. }) => mark(pinned(ptr), &mut out),
            LOp::GlobalAtomic(at) => mark(pinned(&at.ptr), &mut out),
            _ => {}
        }
    }
    if all {
        out.fill(true);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(cta: u32, agent: AgentId, time: u32, kind: Kind, atomic: bool, op: u32) -> GRec {
        GRec {
            cta,
            time,
            instr: op,
            op,
            agent,
            kind,
            atomic,
            proxy: Proxy::Generic,
        }
    }

    fn shadow() -> GlobalHb {
        GlobalHb {
            tracked: vec![true, false],
            pages: vec![Vec::new(); 2],
            states: vec![GCell::EMPTY],
            compact_at: MIN_COMPACT,
            comps: HashMap::new(),
        }
    }

    /// `go` without clocks of other CTAs or synchronisation: the hazard, if any.
    fn plain(g: &mut GlobalHb, t: u32, elems: std::ops::Range<u64>, r: GRec, own: &[u32]) -> Option<GHazard> {
        go(g, t, elems, r, own, &[], Sync::default()).0
    }

    /// `go` on element 0 at time 0 with no clocks of other CTAs.
    fn at0(g: &mut GlobalHb, r: GRec, own: &[u32], sync: Sync) -> (Option<GHazard>, BTreeMap<u32, VClock>) {
        go(g, 0, 0..1, r, own, &[], sync)
    }

    fn go(
        g: &mut GlobalHb,
        t: u32,
        elems: std::ops::Range<u64>,
        r: GRec,
        own: &[u32],
        remote: &[(u32, &[u32])],
        sync: Sync,
    ) -> (Option<GHazard>, BTreeMap<u32, VClock>) {
        let own = VClock(own.to_vec());
        let remote: BTreeMap<u32, VClock> = remote.iter().map(|(c, v)| (*c, VClock(v.to_vec()))).collect();
        let cur = GAccess {
            rec: r,
            knows: Knows {
                own: &own,
                issue: None,
                origin: (r.agent, r.time),
                remote: &remote,
            },
        };
        let mut acq = BTreeMap::new();
        let h = g.access(t, elems.map(|e| (e, false)), &cur, sync, &mut acq);
        (h, acq)
    }

    #[test]
    fn plain_writes_of_two_ctas_race_unless_one_knows_the_other() {
        let mut g = shadow();
        assert!(plain(&mut g, 0, 0..64, rec(0, 0, 3, Kind::Write, false, 1), &[3]).is_none());
        // CTA 1 writes element 5..7 knowing nothing of CTA 0.
        let h = plain(&mut g, 0, 5..7, rec(1, 0, 2, Kind::Write, false, 1), &[2]);
        let h = h.expect("race");
        assert_eq!((h.first.cta, h.second.cta, h.elem), (0, 1, 5));
        // CTA 2 knows CTA 0's agent 0 up to time 3: ordered.
        let r = rec(2, 0, 1, Kind::Write, false, 1);
        assert!(go(&mut g, 0, 10..12, r, &[1], &[(0, &[3])], Sync::default())
            .0
            .is_none());
        // Disjoint elements never conflict; an untracked tensor is not recorded.
        assert!(plain(&mut g, 0, 64..80, rec(3, 0, 1, Kind::Write, false, 1), &[1]).is_none());
        plain(&mut g, 1, 0..4, rec(0, 0, 9, Kind::Write, false, 1), &[9]);
        assert!(plain(&mut g, 1, 0..4, rec(1, 0, 9, Kind::Write, false, 1), &[9]).is_none());
    }

    #[test]
    fn atomics_do_not_race_with_each_other_but_do_with_plain_accesses() {
        let mut g = shadow();
        let at = |cta, t| rec(cta, 0, t, Kind::Write, true, 7);
        assert!(go(&mut g, 0, 0..1, at(0, 1), &[1], &[], Sync::default())
            .0
            .is_none());
        assert!(go(&mut g, 0, 0..1, at(1, 1), &[1], &[], Sync::default())
            .0
            .is_none());
        // A plain read by CTA 2 that knows CTA 1 but not CTA 0's atomic: a race with CTA 0.
        let h = go(
            &mut g,
            0,
            0..1,
            rec(2, 0, 1, Kind::Read, false, 3),
            &[1],
            &[(1, &[1])],
            Sync::default(),
        )
        .0;
        assert_eq!(h.map(|h| h.first.cta), Some(0));
    }

    #[test]
    fn a_release_atomic_hands_knowledge_to_an_acquire_of_another_cta() {
        let mut g = shadow();
        let p0 = Place { cta: 0, cluster: 0 };
        let p1 = Place { cta: 1, cluster: 1 };
        let rel = |scope| SyncEntry {
            from: p0,
            scope,
            views: vec![(0, VClock(vec![5])), (7, VClock(vec![2]))],
        };
        let gpu = rel(Scope::Gpu);
        let sync = Sync {
            release: Some(&gpu),
            acquire: Some((p0, Scope::Gpu)),
        };
        at0(&mut g, rec(0, 0, 5, Kind::Write, true, 1), &[5], sync);
        let acq = Sync {
            release: None,
            acquire: Some((p1, Scope::Gpu)),
        };
        let (_, learnt) = at0(&mut g, rec(1, 0, 1, Kind::Write, true, 1), &[1], acq);
        assert_eq!(learnt.get(&0), Some(&VClock(vec![5])));
        assert_eq!(learnt.get(&7), Some(&VClock(vec![2])));
        // A CTA-scope release does not synchronise with another CTA; nor does a CTA-scope
        // acquire; both do within the CTA.
        let mut g = shadow();
        let cta = rel(Scope::Cta);
        let sync = Sync {
            release: Some(&cta),
            acquire: None,
        };
        at0(&mut g, rec(0, 0, 5, Kind::Write, true, 1), &[5], sync);
        let (_, learnt) = at0(&mut g, rec(1, 0, 1, Kind::Write, true, 1), &[1], acq);
        assert!(learnt.is_empty());
        let own = Sync {
            release: None,
            acquire: Some((p0, Scope::Cta)),
        };
        let (_, learnt) = at0(&mut g, rec(0, 1, 1, Kind::Write, true, 2), &[0, 1], own);
        assert_eq!(learnt.get(&0), Some(&VClock(vec![5])));
        // A plain write ends the release sequence.
        at0(
            &mut g,
            rec(0, 0, 9, Kind::Write, false, 3),
            &[9, 1],
            Sync::default(),
        );
        let (_, learnt) = at0(&mut g, rec(0, 1, 2, Kind::Write, true, 2), &[9, 2], own);
        assert!(learnt.is_empty());
    }

    #[test]
    fn an_async_write_issued_before_a_read_of_its_issuer_is_logically_first() {
        let mut g = shadow();
        // Partition 0 of CTA 0 reads at its time 4; the TMA store (unit agent 2) it issued at
        // time 3 writes afterwards, with the issue clock [3, 0, 0].
        plain(&mut g, 0, 0..4, rec(0, 0, 4, Kind::Read, false, 10), &[4]);
        let issue = VClock(vec![3, 0, 0]);
        let own = VClock(vec![3, 0, 1]);
        let remote = BTreeMap::new();
        let r = GRec {
            op: ASYNC_OP,
            ..rec(0, 2, 1, Kind::Write, false, 9)
        };
        let cur = GAccess {
            rec: r,
            knows: Knows {
                own: &own,
                issue: Some(&issue),
                origin: (0, 3),
                remote: &remote,
            },
        };
        let h = g
            .access(
                0,
                (0..4).map(|e| (e, false)),
                &cur,
                Sync::default(),
                &mut BTreeMap::new(),
            )
            .expect("race");
        assert!(h.first.is_async() && h.second.kind == Kind::Read);
    }
}
