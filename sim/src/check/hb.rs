//! Happens-before and shadow memory: the heart of the hazard checker.
//!
//! Every agent of a CTA (each partition, the TMA unit's completions on each mbarrier, each
//! partition's TMA stores and wgmma groups, the in-order tensor pipe) has a component in a
//! vector clock ([`VClock`]). Synchronisation joins clocks: an mbarrier phase completion
//! releases the join of its arrivals to every wait that observes it; the fork and join of
//! `warp_specialize`, `tma.store_wait`, `wgmma.wait` and the in-order tensor pipe likewise.
//! Every shared- or tensor-memory access is recorded in a [`Shadow`] cell per granule (4 bytes
//! of shared memory, one 32-bit TMEM cell; a coarser granule can only add reports, never lose
//! one) as a compact [`Rec`]: agent, clock component, proxy, read or write, and the op that
//! made it. A new access is checked against the cell with the proxy rule
//! (docs/semantics.md#the-proxy-rule, docs/semantics.md#proxies-and-fences):
//!
//! - conflicting accesses (at least one write) must be ordered by happens-before, else `race`,
//!   or `read-before-complete` / `write-while-in-flight` when the logically first access is an
//!   asynchronous operation that had not been observed to complete;
//! - generic write → async access, and generic read → async write, additionally need a
//!   `fence.async_shared` on the happens-before path between them: by the generic side after
//!   its access and before the release that orders them, or by the issuing partition after its
//!   acquire and before the issue; else `missing-fence`;
//! - async write → generic read is ordered by the mbarrier wait alone; async → async and every
//!   tensor-memory pair ([`Proxy::Tensor`]) need only happens-before.
//!
//! An agent orders its own accesses (program order in a partition, issue order on the
//! tensor pipe), except a *concurrent* one ([`AgentInfo::concurrent`]): the copies of one
//! TMA barrier or of one partition's `cp.async` groups run side by side, so two of them are
//! ordered only when the later one's issuer had observed the earlier one's completion, and
//! an unordered write between them is `write-while-in-flight` whatever the two engines are.
//!
//! This module knows nothing of the interpreter: the machine feeds it agents, clocks, fences
//! and accesses ([`crate::check::hazards`] does the bookkeeping).

/// Index of an agent (a clock component) within one CTA.
pub type AgentId = u16;

/// No agent (an empty [`Rec`]).
pub const NO_AGENT: AgentId = AgentId::MAX;

/// Set in [`Rec::op`] when the access was made by an asynchronous operation: the rest is its
/// index in [`World::ops`]. Otherwise `op` is the index of the instruction in the program.
pub const ASYNC_OP: u32 = 1 << 31;

/// A vector clock over the agents of a CTA.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VClock(pub Vec<u32>);

impl VClock {
    pub fn new(n: usize) -> VClock {
        VClock(vec![0; n])
    }
    pub fn get(&self, a: AgentId) -> u32 {
        self.0.get(a as usize).copied().unwrap_or(0)
    }
    /// Advance `a`'s own component; returns the new time.
    pub fn tick(&mut self, a: AgentId) -> u32 {
        let i = a as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] += 1;
        self.0[i]
    }
    /// Raise component `a` to at least `t`.
    pub fn raise(&mut self, a: AgentId, t: u32) {
        let i = a as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] = self.0[i].max(t);
    }
    pub fn join(&mut self, o: &VClock) {
        if self.0.len() < o.0.len() {
            self.0.resize(o.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a = (*a).max(*b);
        }
    }
    /// Whether the event `(agent, time)` happens before (or is known to) this clock.
    pub fn knows(&self, agent: AgentId, time: u32) -> bool {
        self.get(agent) >= time
    }
}

/// Which proxy made an access (docs/semantics.md#proxies-and-fences).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proxy {
    /// ld/st of shared memory by threads.
    Generic,
    /// TMA, tcgen05.mma/cp operand reads, wgmma operand reads of shared memory.
    Async,
    /// Tensor-memory accesses (tcgen05.ld/st by warps, MMA and cp on the tensor pipe): ordered
    /// by happens-before alone.
    Tensor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

/// One recorded access (12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rec {
    /// The agent's own clock component at the access.
    pub time: u32,
    /// The instruction index, or [`ASYNC_OP`] | the asynchronous op's index.
    pub op: u32,
    pub agent: AgentId,
    pub proxy: Proxy,
    pub kind: Kind,
}

impl Rec {
    pub const EMPTY: Rec = Rec {
        time: 0,
        op: 0,
        agent: NO_AGENT,
        proxy: Proxy::Generic,
        kind: Kind::Read,
    };
    fn is_empty(&self) -> bool {
        self.agent == NO_AGENT
    }
    /// Whether an asynchronous operation made it.
    pub fn is_async(&self) -> bool {
        self.op & ASYNC_OP != 0
    }
    /// Index of the asynchronous operation, if it is one.
    pub fn async_index(&self) -> Option<usize> {
        self.is_async().then_some((self.op & !ASYNC_OP) as usize)
    }
}

/// An asynchronous operation as issued: who issued it, when, and what the issuer knew.
#[derive(Clone, Debug)]
pub struct Issued {
    /// Index of the issuing instruction in the program.
    pub instr: u32,
    pub issuer: AgentId,
    /// The issuer's own component at the issue.
    pub time: u32,
    /// The issuer's clock at the issue.
    pub clock: VClock,
    /// The issuer's clock at its last `fence.async_shared` before the issue.
    pub fence: Option<VClock>,
    /// What the issuer knew of other CTAs at the issue, by CTA id (what orders the op's
    /// global-memory accesses after theirs, [`crate::check::global`]).
    pub remote: std::collections::BTreeMap<u32, VClock>,
}

/// Per-agent facts the rule needs.
#[derive(Clone, Debug, Default)]
pub struct AgentInfo {
    /// The agent's own component at each `fence.async_shared` it executed, ascending.
    pub fences: Vec<u32>,
    /// The agent's accesses are made by operations that run concurrently with one another
    /// (the TMA copies completing on one barrier, one partition's `cp.async` groups): two of
    /// them are ordered only when the later one was issued after the earlier was observed to
    /// complete, not by the agent's own order as a partition's or the in-order tensor pipe's
    /// are.
    pub concurrent: bool,
}

/// What the checks of one CTA share.
#[derive(Clone, Copy, Debug)]
pub struct World<'a> {
    pub agents: &'a [AgentInfo],
    pub ops: &'a [Issued],
}

/// The access being checked: its record and the clock of whoever makes it (for an
/// asynchronous operation, the issue clock joined with the unit's own component).
#[derive(Clone, Copy, Debug)]
pub struct Access<'a> {
    pub rec: Rec,
    pub clock: &'a VClock,
}

/// What a new access conflicts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HazardKind {
    /// Unordered conflicting accesses.
    Race,
    /// Ordered, but the generic side never fenced before the release.
    MissingFence,
    /// A read of an async write (TMA destination, MMA accumulator) whose completion the reader
    /// has not observed.
    ReadBeforeComplete,
    /// A write to bytes an async op may still be reading (or writing).
    WriteWhileInFlight,
}

impl HazardKind {
    pub fn code(&self) -> bwsim_isa::Code {
        use bwsim_isa::Code;
        match self {
            HazardKind::Race => Code::Race,
            HazardKind::MissingFence => Code::MissingFence,
            HazardKind::ReadBeforeComplete => Code::ReadBeforeComplete,
            HazardKind::WriteWhileInFlight => Code::WriteWhileInFlight,
        }
    }
}

/// A hazard between two accesses, in their logical order: `first` is the access the program
/// meant to come first (an asynchronous operation issued earlier counts as first even when its
/// data moved later).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hazard {
    pub kind: HazardKind,
    pub first: Rec,
    pub second: Rec,
    /// Granule index of the first conflict.
    pub granule: u32,
}

/// Whether the generic access `g` is properly fenced before the async access `a` that is
/// ordered after it (docs/semantics.md#proxies-and-fences).
fn fenced(g: &Rec, a: &Access, w: World) -> bool {
    // A fence by the generic side after its access that the async side's clock covers.
    if let Some(info) = w.agents.get(g.agent as usize) {
        let i = info.fences.partition_point(|&f| f <= g.time);
        if info.fences.get(i).is_some_and(|&f| a.clock.knows(g.agent, f)) {
            return true;
        }
    }
    // Or a fence by the issuer after it learned of the access: the PTX memory model asks for a
    // proxy fence on the causality path between the two, not for one by the generic side.
    // Gluon tutorial 08 fences on the issuing side after its wait (generic read → async
    // write); Triton's compiler fences a worker partition's TMA store of a buffer written
    // before `warp_specialize` there (generic write → async read). A cp.async writes through
    // the generic proxy on behalf of its partition, which fences after its `cp.async.wait`.
    a.rec
        .async_index()
        .and_then(|i| w.ops.get(i))
        .and_then(|op| op.fence.as_ref())
        .is_some_and(|f| f.knows(g.agent, g.time))
}

/// Who caused an access and when: the issuer for asynchronous operations.
fn origin(r: &Rec, w: World) -> (AgentId, u32) {
    match r.async_index().and_then(|i| w.ops.get(i)) {
        Some(op) => (op.issuer, op.time),
        None => (r.agent, r.time),
    }
}

/// Whether `prev` needs no check against `cur` because their agent orders them: the same
/// operation, or one agent that runs its accesses in order (a partition, the tensor pipe).
#[inline]
fn own_order(prev: &Rec, cur: &Rec, w: World) -> bool {
    prev.agent == cur.agent
        && (prev.op == cur.op || !w.agents.get(prev.agent as usize).is_some_and(|a| a.concurrent))
}

/// Check the new access `cur` against one earlier access `prev`.
fn pair(prev: &Rec, cur: &Access, w: World) -> Option<(HazardKind, bool)> {
    if own_order(prev, &cur.rec, w) {
        return None; // program order, or the unit's own order
    }
    if prev.kind == Kind::Read && cur.rec.kind == Kind::Read {
        return None;
    }
    // Two operations of one concurrent unit: `cur`'s clock includes the unit's own component
    // (raised past `prev`'s), so only what its issuer knew at the issue orders them.
    let knows = if prev.agent == cur.rec.agent {
        cur.rec
            .async_index()
            .and_then(|i| w.ops.get(i))
            .is_some_and(|op| op.clock.knows(prev.agent, prev.time))
    } else {
        cur.clock.knows(prev.agent, prev.time)
    };
    if knows {
        // Ordered: the proxy rule.
        return match (prev.proxy, cur.rec.proxy) {
            (Proxy::Generic, Proxy::Async) if !fenced(prev, cur, w) => {
                Some((HazardKind::MissingFence, false))
            }
            _ => None,
        };
    }
    // Unordered. Was the current access's op issued before the earlier access happened (an
    // asynchronous op whose data moved late)? Then it is the logically first one.
    let (oa, ot) = origin(&cur.rec, w);
    let swapped = match prev.async_index().and_then(|i| w.ops.get(i)) {
        Some(op) => op.clock.knows(oa, ot),
        None => prev.agent == oa && prev.time > ot,
    };
    let (first, second) = if swapped {
        (&cur.rec, prev)
    } else {
        (prev, &cur.rec)
    };
    let kind = match (first.is_async(), first.kind, second.kind) {
        (true, Kind::Write, Kind::Read) => HazardKind::ReadBeforeComplete,
        (true, _, Kind::Write) => HazardKind::WriteWhileInFlight,
        _ => HazardKind::Race,
    };
    Some((kind, swapped))
}

/// Earlier accesses already checked against the current one (a small cache, oldest replaced).
#[derive(Clone, Copy, Debug)]
struct Clean {
    recs: [Rec; 4],
    next: usize,
}

impl Default for Clean {
    fn default() -> Clean {
        Clean {
            recs: [Rec::EMPTY; 4],
            next: 0,
        }
    }
}

impl Clean {
    #[inline]
    fn contains(&self, r: &Rec) -> bool {
        self.recs.contains(r)
    }
    #[inline]
    fn insert(&mut self, r: Rec) {
        self.recs[self.next] = r;
        self.next = (self.next + 1) % self.recs.len();
    }
}

/// The state of one granule: the last write and the reads since, at most one per agent, in
/// the order their agents first read.
#[derive(Clone, Debug, PartialEq)]
struct Cell {
    w: Rec,
    r: Vec<Rec>,
}

impl Cell {
    const EMPTY: Cell = Cell {
        w: Rec::EMPTY,
        r: Vec::new(),
    };

    /// The first of this state's records that `cur` conflicts with (the write, then the reads
    /// when `cur` writes), with the conflict; records found clean are remembered in `clean`.
    fn check(&self, cur: &Access, w: World, clean: &mut Clean) -> Option<((HazardKind, bool), Rec)> {
        let mut check = |r: &Rec| {
            if r.is_empty() || own_order(r, &cur.rec, w) || clean.contains(r) {
                return None;
            }
            let k = pair(r, cur, w);
            if k.is_none() {
                clean.insert(*r);
            }
            k.map(|k| (k, *r))
        };
        let hit = check(&self.w);
        if hit.is_none() && cur.rec.kind == Kind::Write {
            return self.r.iter().find_map(&mut check);
        }
        hit
    }

    /// This state after the read `rec`: its reader's earlier read replaced, or `rec` added.
    fn with_read(&self, rec: Rec) -> Cell {
        let mut cell = self.clone();
        match cell.r.iter_mut().find(|r| r.agent == rec.agent) {
            Some(r) => *r = rec,
            None => cell.r.push(rec),
        }
        cell
    }
}

/// What one sequence of accesses ([`Shadow::access_all`]) remembers between its granules:
/// the states already found clean for the access, and the states it made.
struct Seq {
    clean: Clean,
    /// States whose check found nothing (a granule in one of them needs no check).
    clean_states: [u32; 2],
    /// The state every granule a write reaches is left in.
    written: Option<u32>,
    /// The last state a read moved a granule from, and the state it moved it to.
    read_from: u32,
    read_to: u32,
}

impl Seq {
    fn new() -> Seq {
        Seq {
            clean: Clean::default(),
            clean_states: [NO_STATE; 2],
            written: None,
            read_from: NO_STATE,
            read_to: NO_STATE,
        }
    }

    /// The state a granule in state `id` moves to without a check, when that is known: the
    /// state needs no check (a hazard was already found, or it was found clean) and this
    /// sequence already made its successor.
    #[inline]
    fn next(&self, id: u32, found: bool, kind: Kind) -> Option<u32> {
        if !(found || self.clean_states.contains(&id)) {
            return None;
        }
        match kind {
            Kind::Write => self.written,
            Kind::Read => (id == self.read_from).then_some(self.read_to),
        }
    }
}

/// The state a granule starts in (nothing recorded).
const EMPTY_STATE: u32 = 0;
/// No state.
const NO_STATE: u32 = u32::MAX;

/// Shadow memory: the state of every granule. Granules share states: an access moves every
/// granule that was in one state into one new state (a TMA box, an MMA operand or a tile
/// store makes one state for the whole buffer), so a granule holds the index of its state
/// and a check is made once per distinct state an access meets, not once per granule.
/// States no granule holds any more are dropped once they outnumber the live ones.
#[derive(Clone, Debug)]
pub struct Shadow {
    ids: Vec<u32>,
    states: Vec<Cell>,
    /// [`Shadow::states`]' length at which the unused states are dropped.
    compact_at: usize,
}

/// Granules [`Shadow::access_granules`] moves at once: 128 bytes of shared memory, a row of
/// the 128-byte swizzle (whose 16-byte chunks it permutes).
const WINDOW: usize = 32;

/// The fewest states kept before unused ones are dropped.
const MIN_COMPACT: usize = 4096;

impl Shadow {
    pub fn new(granules: usize) -> Shadow {
        Shadow {
            ids: vec![EMPTY_STATE; granules],
            states: vec![Cell::EMPTY],
            compact_at: MIN_COMPACT,
        }
    }
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    /// Grow to `granules` cells (the new ones empty).
    pub fn grow(&mut self, granules: usize) {
        if granules > self.ids.len() {
            self.ids.resize(granules, EMPTY_STATE);
        }
    }
    /// Whether any access ever wrote granule `g`.
    pub fn written(&self, g: usize) -> bool {
        self.ids
            .get(g)
            .is_some_and(|&id| !self.states[id as usize].w.is_empty())
    }
    /// Forget granules `range` (freed tensor memory).
    pub fn clear(&mut self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.ids.len());
        self.ids[range.start.min(end)..end].fill(EMPTY_STATE);
    }

    /// Drop the states no granule holds (renumbering the rest) once there are many.
    fn compact(&mut self) {
        if self.states.len() < self.compact_at {
            return;
        }
        let mut remap = vec![NO_STATE; self.states.len()];
        remap[EMPTY_STATE as usize] = EMPTY_STATE;
        let mut kept = vec![Cell::EMPTY];
        for id in self.ids.iter_mut() {
            let r = &mut remap[*id as usize];
            if *r == NO_STATE {
                *r = kept.len() as u32;
                kept.push(std::mem::replace(&mut self.states[*id as usize], Cell::EMPTY));
            }
            *id = *r;
        }
        self.compact_at = (2 * kept.len()).max(MIN_COMPACT);
        self.states = kept;
    }

    /// Check `cur` against granules `granules`, in order, and record it in each. The first
    /// hazard is returned (one report per operation keeps the output readable); the
    /// records are made in every granule. A granule outside the shadow is skipped.
    pub fn access_all(
        &mut self,
        granules: impl IntoIterator<Item = usize>,
        cur: &Access,
        w: World,
    ) -> Option<Hazard> {
        self.compact();
        let mut found = None;
        let mut seq = Seq::new();
        for g in granules {
            self.step(g, cur, w, &mut found, &mut seq);
        }
        found
    }

    /// [`Shadow::access_all`] over granules `gs` in order, a granule equal to the one before
    /// skipped. A window of 32 granules that are an aligned run `lo..lo + 32` in some
    /// order, all in one state that needs no check and whose new state is known, is moved
    /// at once: every granule of it would take the same step, in whatever order (a
    /// swizzled buffer visits its granules in permuted 16-byte chunks).
    pub fn access_granules(&mut self, gs: &[u32], cur: &Access, w: World) -> Option<Hazard> {
        self.compact();
        let mut found = None;
        let mut seq = Seq::new();
        let mut last = u32::MAX;
        for win in gs.chunks(WINDOW) {
            if let Some((lo, hi)) = self.window_run(win, last) {
                let first = self.ids[lo];
                if let Some(next) = seq.next(first, found.is_some(), cur.rec.kind) {
                    let ids = &mut self.ids[lo..hi];
                    if ids.iter().all(|&id| id == first) {
                        ids.fill(next);
                        last = win[win.len() - 1];
                        continue;
                    }
                }
            }
            for &g in win {
                if g != last {
                    self.step(g as usize, cur, w, &mut found, &mut seq);
                }
                last = g;
            }
        }
        found
    }

    /// The aligned block of [`WINDOW`] shadow granules `lo..hi` when `win` holds each of them
    /// once (in any order) and does not start with `last`.
    #[inline]
    fn window_run(&self, win: &[u32], last: u32) -> Option<(usize, usize)> {
        const BLOCK: u32 = !(WINDOW as u32 - 1);
        let first = *win.first()?;
        let lo = first & BLOCK;
        let hi = lo as usize + WINDOW;
        if win.len() != WINDOW || first == last || hi > self.ids.len() {
            return None;
        }
        // One pass without early exits: every granule in the block, each bit of it set once.
        let (inside, seen) = win.iter().fold((true, 0u32), |(inside, seen), &g| {
            (inside & (g & BLOCK == lo), seen | 1 << (g & !BLOCK))
        });
        (inside && seen == u32::MAX).then_some((lo as usize, hi))
    }

    /// One granule of [`Shadow::access_all`]: the common case inline (a granule that needs no
    /// check and whose new state is known), the rest in [`Shadow::access`].
    #[inline]
    fn step(&mut self, g: usize, cur: &Access, w: World, found: &mut Option<Hazard>, seq: &mut Seq) {
        let Some(&id) = self.ids.get(g) else { return };
        match seq.next(id, found.is_some(), cur.rec.kind) {
            Some(next) => self.ids[g] = next,
            None => self.access(g, cur, w, found, seq),
        }
    }

    /// Check `cur` against granule `g` and record it there ([`Shadow::access_all`]).
    #[inline(never)]
    fn access(&mut self, g: usize, cur: &Access, w: World, found: &mut Option<Hazard>, seq: &mut Seq) {
        let Some(&id) = self.ids.get(g) else { return };
        // The check depends only on the granule's records and `cur`: a state already found
        // clean for `cur` is clean again.
        if found.is_none() && !seq.clean_states.contains(&id) {
            match self.states[id as usize].check(cur, w, &mut seq.clean) {
                Some(((kind, swapped), prev)) => {
                    let (first, second) = if swapped { (cur.rec, prev) } else { (prev, cur.rec) };
                    *found = Some(Hazard {
                        kind,
                        first,
                        second,
                        granule: g as u32,
                    });
                }
                None => seq.clean_states = [id, seq.clean_states[0]],
            }
        }
        let rec = cur.rec;
        let next = match rec.kind {
            Kind::Write => *seq.written.get_or_insert_with(|| {
                self.states.push(Cell {
                    w: rec,
                    r: Vec::new(),
                });
                (self.states.len() - 1) as u32
            }),
            Kind::Read if id == seq.read_from => seq.read_to,
            Kind::Read => {
                let cell = self.states[id as usize].with_read(rec);
                self.states.push(cell);
                seq.read_from = id;
                seq.read_to = (self.states.len() - 1) as u32;
                seq.read_to
            }
        };
        self.ids[g] = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P0: AgentId = 0; // a partition
    const P1: AgentId = 1; // another partition
    const TMA: AgentId = 2; // an async unit

    fn agents(fences0: Vec<u32>) -> Vec<AgentInfo> {
        vec![
            AgentInfo {
                fences: fences0,
                ..AgentInfo::default()
            },
            AgentInfo::default(),
            AgentInfo::default(),
        ]
    }
    fn rec(agent: AgentId, time: u32, proxy: Proxy, kind: Kind) -> Rec {
        Rec {
            time,
            op: 0,
            agent,
            proxy,
            kind,
        }
    }
    /// A generic-proxy write (`gw`) or read (`gr`) by `agent` at its `time`.
    fn gw(agent: AgentId, time: u32) -> Rec {
        rec(agent, time, Proxy::Generic, Kind::Write)
    }
    fn gr(agent: AgentId, time: u32) -> Rec {
        rec(agent, time, Proxy::Generic, Kind::Read)
    }
    /// A tensor-proxy write (`tw`) or read (`tr`) by `agent` at its `time`.
    fn tw(agent: AgentId, time: u32) -> Rec {
        rec(agent, time, Proxy::Tensor, Kind::Write)
    }
    fn tr(agent: AgentId, time: u32) -> Rec {
        rec(agent, time, Proxy::Tensor, Kind::Read)
    }
    /// An MMA's access (the tensor proxy) of async op `op` by unit `agent`.
    fn mma_rec(agent: AgentId, time: u32, kind: Kind, op: u32) -> Rec {
        Rec {
            proxy: Proxy::Tensor,
            ..async_rec(agent, time, kind, op)
        }
    }
    fn vc(v: &[u32]) -> VClock {
        VClock(v.to_vec())
    }
    fn issued(issuer: AgentId, clock: &[u32], fence: Option<&[u32]>) -> Issued {
        Issued {
            instr: 0,
            issuer,
            time: clock[issuer as usize],
            clock: vc(clock),
            fence: fence.map(vc),
            remote: Default::default(),
        }
    }
    /// Check `r` (clock `c`) over granules `gs`; the first hazard's kind.
    /// Records access `r` with access clock `c` over granules `gs` in the world `(agents, ops)`.
    /// In a shadow of `granules` granules, P0 accesses granule 0 with `first` at clock `c`,
    /// then the MMA P0 issued at its time 1 (op 0) lands, accessing it as `kind` at clock
    /// `at`: the hazard the MMA meets, if any.
    fn then_the_mma_lands(granules: usize, first: Rec, c: &[u32], kind: Kind, at: &[u32]) -> Option<Hazard> {
        let ops = [issued(P0, &[1, 0, 0], None)];
        let mut s = Shadow::new(granules);
        let ag = agents(vec![]);
        go(&mut s, 0..1, first, c, (&ag, &ops));
        go(&mut s, 0..1, mma_rec(TMA, 1, kind, 0), at, (&ag, &ops))
    }

    fn go(
        s: &mut Shadow,
        gs: std::ops::Range<usize>,
        r: Rec,
        c: &[u32],
        (agents, ops): (&[AgentInfo], &[Issued]),
    ) -> Option<Hazard> {
        let w = World { agents, ops };
        s.access_all(
            gs,
            &Access {
                rec: r,
                clock: &vc(c),
            },
            w,
        )
    }
    fn async_rec(agent: AgentId, time: u32, kind: Kind, op: u32) -> Rec {
        Rec {
            op: ASYNC_OP | op,
            ..rec(agent, time, Proxy::Async, kind)
        }
    }

    #[test]
    fn generic_store_then_tma_store_needs_the_writers_fence() {
        // P0 writes at its time 1, issues a TMA store at time 2; the TMA reads with P0's clock.
        let ops = [issued(P0, &[2, 0, 0], None)];
        let tma = async_rec(TMA, 1, Kind::Read, 0);
        let mut s = Shadow::new(16);
        let ag = agents(vec![]);
        assert!(go(&mut s, 0..4, gw(P0, 1), &[1, 0, 0], (&ag, &ops)).is_none());
        let h = go(&mut s, 0..4, tma, &[2, 0, 1], (&ag, &ops)).expect("hazard");
        assert_eq!(h.kind, HazardKind::MissingFence);
        assert_eq!((h.first.agent, h.second.agent), (P0, TMA));
        // With a fence by P0 at its time 2 (after the write, before the issue): clean.
        let mut s = Shadow::new(16);
        let ag = agents(vec![2]);
        go(&mut s, 0..4, gw(P0, 1), &[1, 0, 0], (&ag, &ops));
        assert!(go(&mut s, 0..4, tma, &[2, 0, 1], (&ag, &ops)).is_none());
        // A fence before the write does not count.
        let mut s = Shadow::new(16);
        let ag = agents(vec![1]);
        go(&mut s, 0..4, gw(P0, 1), &[1, 0, 0], (&ag, &ops));
        assert!(go(&mut s, 0..4, tma, &[2, 0, 1], (&ag, &ops)).is_some());
    }

    #[test]
    fn generic_read_then_tma_load_accepts_a_fence_on_either_side() {
        let read = gr(P0, 3);
        // Issued by P1, which learned of P0's read (clock [3, 5, 0]) but neither fenced.
        let ops = [issued(P1, &[3, 5, 0], None)];
        let tma_w = async_rec(TMA, 1, Kind::Write, 0);
        let mut s = Shadow::new(16);
        go(&mut s, 0..1, read, &[3, 0, 0], (&agents(vec![]), &ops));
        let h = go(&mut s, 0..1, tma_w, &[3, 5, 1], (&agents(vec![]), &ops));
        assert_eq!(h.map(|h| h.kind), Some(HazardKind::MissingFence));
        // The reader fenced at its time 4 and released at 4: clean.
        let ops2 = [issued(P1, &[4, 5, 0], None)];
        let mut s = Shadow::new(16);
        go(&mut s, 0..1, read, &[3, 0, 0], (&agents(vec![4]), &ops2));
        assert!(go(&mut s, 0..1, tma_w, &[4, 5, 1], (&agents(vec![4]), &ops2)).is_none());
        // The issuer fenced after its wait (its fence clock knows the read): clean (seed 08).
        let ops3 = [issued(P1, &[3, 5, 0], Some(&[3, 4, 0]))];
        let mut s = Shadow::new(16);
        go(&mut s, 0..1, read, &[3, 0, 0], (&agents(vec![]), &ops3));
        assert!(go(&mut s, 0..1, tma_w, &[3, 5, 1], (&agents(vec![]), &ops3)).is_none());
    }

    #[test]
    fn generic_store_then_tma_store_accepts_the_issuers_fence_after_its_acquire() {
        // P0 writes at its time 1; P1 learns of it (its clock [1, 5, 0]) and issues a TMA
        // store of the buffer.
        let write = gw(P0, 1);
        let tma = async_rec(TMA, 1, Kind::Read, 0);
        // No fence on either side: missing-fence.
        let ops = [issued(P1, &[1, 5, 0], None)];
        let mut s = Shadow::new(16);
        go(&mut s, 0..1, write, &[1, 0, 0], (&agents(vec![]), &ops));
        let h = go(&mut s, 0..1, tma, &[1, 5, 1], (&agents(vec![]), &ops));
        assert_eq!(h.map(|h| h.kind), Some(HazardKind::MissingFence));
        // P1 fenced after it learned of the write (what Triton's compiler does in a worker
        // partition that TMA-stores a buffer written before `warp_specialize`): clean.
        let ops = [issued(P1, &[1, 5, 0], Some(&[1, 4, 0]))];
        let mut s = Shadow::new(16);
        go(&mut s, 0..1, write, &[1, 0, 0], (&agents(vec![]), &ops));
        assert!(go(&mut s, 0..1, tma, &[1, 5, 1], (&agents(vec![]), &ops)).is_none());
        // P1's fence before it learned of the write does not count.
        let ops = [issued(P1, &[1, 5, 0], Some(&[0, 3, 0]))];
        let mut s = Shadow::new(16);
        go(&mut s, 0..1, write, &[1, 0, 0], (&agents(vec![]), &ops));
        let h = go(&mut s, 0..1, tma, &[1, 5, 1], (&agents(vec![]), &ops));
        assert_eq!(h.map(|h| h.kind), Some(HazardKind::MissingFence));
    }

    #[test]
    fn async_write_then_generic_read_needs_only_the_wait() {
        let ops = [issued(P1, &[0, 1, 0], None)];
        let mut s = Shadow::new(16);
        let ag = agents(vec![]);
        let load = async_rec(TMA, 1, Kind::Write, 0);
        go(&mut s, 2..4, load, &[0, 1, 1], (&ag, &ops));
        // P0 observed the phase that counted the bytes: its clock knows TMA time 1.
        assert!(go(&mut s, 2..4, gr(P0, 2), &[2, 1, 1], (&ag, &ops)).is_none());
        // P1 (the issuer) did not wait: read-before-complete.
        let h = go(&mut s, 3..4, gr(P1, 2), &[0, 2, 0], (&ag, &ops)).expect("hazard");
        assert_eq!(h.kind, HazardKind::ReadBeforeComplete);
        assert_eq!(h.granule, 3);
    }

    #[test]
    fn an_async_write_that_lands_after_a_read_its_issuer_made_later_is_read_before_complete() {
        // P0 issues an MMA (time 1) that writes a cell, then reads the cell at time 2 before
        // the MMA has executed; the MMA's write lands afterwards.
        let h = then_the_mma_lands(4, tr(P0, 2), &[2, 0, 0], Kind::Write, &[1, 0, 1]).expect("hazard");
        assert_eq!(h.kind, HazardKind::ReadBeforeComplete);
        assert_eq!(
            (h.first.agent, h.second.agent),
            (TMA, P0),
            "the MMA is logically first"
        );
    }

    #[test]
    fn unordered_generic_writes_race_and_async_reads_in_flight_block_writes() {
        let ops = [issued(P1, &[0, 1, 0], None), issued(P0, &[3, 0, 0], None)];
        let mut s = Shadow::new(16);
        let ag = agents(vec![]);
        go(&mut s, 0..1, gw(P0, 1), &[1, 0, 0], (&ag, &ops));
        let h = go(&mut s, 0..1, gw(P1, 1), &[0, 1, 0], (&ag, &ops)).expect("race");
        assert_eq!(h.kind, HazardKind::Race);
        // A shadow with an async read (op 0, by the TMA unit) in flight.
        let read_in_flight = || {
            let mut s = Shadow::new(16);
            let read = async_rec(TMA, 1, Kind::Read, 0);
            go(&mut s, 0..1, read, &[0, 1, 1], (&ag, &ops));
            s
        };
        // An async read issued by P1, then P0 writes without knowing of it.
        let mut s = read_in_flight();
        let h = go(&mut s, 0..1, gw(P0, 1), &[1, 0, 0], (&ag, &ops)).expect("in flight");
        assert_eq!(h.kind, HazardKind::WriteWhileInFlight);
        // An async write (op 1, issued by P0 at time 3) lands after an async read (op 0) whose
        // issue it does not know: write-while-in-flight. Had op 1 been issued first, the read
        // would be logically second: read-before-complete.
        let mut s = read_in_flight();
        let write = async_rec(TMA + 1, 1, Kind::Write, 1);
        let h = go(&mut s, 0..1, write, &[3, 0, 0, 1], (&ag, &ops)).expect("hazard");
        assert_eq!(h.kind, HazardKind::WriteWhileInFlight);
    }

    #[test]
    fn writes_of_one_concurrent_unit_are_ordered_only_through_their_issue() {
        // Agent 2 is a concurrent unit (the copies of one TMA barrier, or one partition's
        // cp.async groups); P0 issues copy 0 at its time 1 and copy 1 at its time 2.
        let mut ag = agents(vec![]);
        ag[TMA as usize].concurrent = true;
        let ops = [issued(P0, &[1, 0, 0], None), issued(P0, &[2, 0, 0], None)];
        let copy = |t, op| async_rec(TMA, t, Kind::Write, op);
        let mut s = Shadow::new(4);
        assert!(go(&mut s, 0..2, copy(1, 0), &[1, 0, 1], (&ag, &ops)).is_none());
        // Copy 1 lands over copy 0's bytes; its issuer never observed copy 0 complete (the
        // unit's own component in its access clock is not knowledge of the issuer).
        let h = go(&mut s, 1..2, copy(2, 1), &[2, 0, 2], (&ag, &ops)).expect("in flight");
        assert_eq!(h.kind, HazardKind::WriteWhileInFlight);
        assert_eq!((h.first.op, h.second.op), (ASYNC_OP, ASYNC_OP | 1));
        // The same copies landing in the other order: copy 0 is still the logically first.
        let mut s = Shadow::new(4);
        go(&mut s, 0..1, copy(1, 1), &[2, 0, 1], (&ag, &ops));
        let h = go(&mut s, 0..1, copy(2, 0), &[1, 0, 2], (&ag, &ops)).expect("in flight");
        assert_eq!(h.kind, HazardKind::WriteWhileInFlight);
        assert_eq!((h.first.op, h.second.op), (ASYNC_OP, ASYNC_OP | 1));
        // Issued after its issuer observed copy 0 (its issue clock knows the unit's times 1
        // and 2, both pieces of copy 0): ordered. Two pieces of one copy never conflict.
        let ops = [issued(P0, &[1, 0, 0], None), issued(P0, &[2, 0, 2], None)];
        let mut s = Shadow::new(4);
        go(&mut s, 0..2, copy(1, 0), &[1, 0, 1], (&ag, &ops));
        assert!(go(&mut s, 1..2, copy(2, 0), &[1, 0, 2], (&ag, &ops)).is_none());
        assert!(go(&mut s, 0..2, copy(3, 1), &[2, 0, 3], (&ag, &ops)).is_none());
        // An agent that runs in order (a partition, the tensor pipe) orders its own accesses.
        let ag = agents(vec![]);
        let mut s = Shadow::new(4);
        go(&mut s, 0..1, copy(1, 0), &[1, 0, 1], (&ag, &ops));
        assert!(go(&mut s, 0..1, copy(2, 1), &[2, 0, 2], (&ag, &ops)).is_none());
    }

    #[test]
    fn many_readers_are_all_checked_by_the_next_write() {
        let ag = vec![AgentInfo::default(); 5];
        let ops = [];
        let mut s = Shadow::new(1);
        // Readers 0..4 at time 1; a write by agent 4 that knows readers 0..3 only.
        for a in 0..4 {
            let mut c = vec![0; 5];
            c[a as usize] = 1;
            go(&mut s, 0..1, gr(a, 1), &c, (&ag, &ops));
        }
        let h = go(&mut s, 0..1, gw(4, 1), &[1, 1, 1, 0, 1], (&ag, &ops)).expect("race with reader 3");
        assert_eq!(h.first.agent, 3);
        // After the write, the cell holds only the write.
        assert!(s.written(0));
        let h = go(&mut s, 0..1, gw(0, 2), &[2, 0, 0, 0, 0], (&ag, &ops)).expect("race with the write");
        assert_eq!(h.first.agent, 4);
        s.clear(0..1);
        assert!(!s.written(0));
    }

    #[test]
    fn tensor_memory_pairs_need_no_fence() {
        assert!(then_the_mma_lands(1, tw(P0, 1), &[1, 0, 0], Kind::Read, &[2, 0, 1]).is_none());
    }

    #[test]
    fn clocks_join_tick_and_raise() {
        let mut a = VClock::new(3);
        a.tick(1);
        let mut b = VClock(vec![2, 0, 5]);
        b.join(&a);
        assert_eq!(b, VClock(vec![2, 1, 5]));
        assert!(b.knows(2, 5) && !b.knows(2, 6));
        b.raise(4, 7);
        assert_eq!(b, VClock(vec![2, 1, 5, 0, 7]));
        assert!(b.knows(3, 0) && !b.knows(9, 1));
    }

    /// One access of [`windows_walk_like_single_granules`]: who, how, and over which granules
    /// (a span cut in chunks taken in a shuffled order, some granules listed twice).
    #[derive(Clone, Debug)]
    struct Step {
        agent: AgentId,
        write: bool,
        proxy: u8,
        op: Option<u32>,
        clock: Vec<u32>,
        start: usize,
        len: usize,
        chunk: usize,
        order: Vec<usize>,
        twice: Vec<usize>,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        (
            (0..4u16, any::<bool>(), 0..3u8, proptest::option::of(0..3u32)),
            proptest::collection::vec(0..6u32, 4),
            (0..140usize, 1..100usize, 1..6usize),
            proptest::collection::vec(any::<usize>(), 100),
            proptest::collection::vec(any::<usize>(), 0..3),
        )
            .prop_map(
                |((agent, write, proxy, op), clock, (start, len, chunk), order, twice)| Step {
                    agent,
                    write,
                    proxy,
                    op,
                    clock,
                    start,
                    len,
                    chunk,
                    order,
                    twice,
                },
            )
    }

    proptest::proptest! {
        /// [`Shadow::access_granules`] finds the same first hazard as [`Shadow::access_all`]
        /// over the same granules one by one (repeats of the granule before skipped, as
        /// callers do), and leaves every granule with the same records.
        #[test]
        fn windows_walk_like_single_granules(steps in proptest::collection::vec(step(), 1..40)) {
            let ag = vec![
                AgentInfo {
                    fences: vec![1, 3],
                    ..AgentInfo::default()
                },
                AgentInfo {
                    fences: vec![2],
                    ..AgentInfo::default()
                },
                AgentInfo::default(),
                AgentInfo {
                    fences: vec![4],
                    ..AgentInfo::default()
                },
            ];
            let ops = [
                issued(0, &[2, 1, 0, 0], Some(&[1, 1, 0, 0])),
                issued(1, &[0, 3, 0, 1], None),
                issued(3, &[1, 0, 2, 4], Some(&[1, 0, 2, 3])),
            ];
            let w = World { agents: &ag, ops: &ops };
            let (mut single, mut windows) = (Shadow::new(160), Shadow::new(160));
            for (i, st) in steps.iter().enumerate() {
                let rec = Rec {
                    time: st.clock[st.agent as usize],
                    op: st.op.map(|o| ASYNC_OP | o).unwrap_or(i as u32),
                    agent: st.agent,
                    proxy: [Proxy::Generic, Proxy::Async, Proxy::Tensor][st.proxy as usize],
                    kind: if st.write { Kind::Write } else { Kind::Read },
                };
                let clock = VClock(st.clock.clone());
                let cur = Access { rec, clock: &clock };
                // The span's chunks in a shuffled order, some granules twice (the shadow ends
                // at 160).
                let span: Vec<usize> = (st.start..st.start + st.len).collect();
                let mut chunks: Vec<&[usize]> = span.chunks(st.chunk).collect();
                for k in (1..chunks.len()).rev() {
                    chunks.swap(k, st.order[k] % (k + 1));
                }
                let mut gs: Vec<usize> = chunks.concat();
                for &t in &st.twice {
                    let g = gs[t % gs.len()];
                    gs.insert(t % (gs.len() + 1), g);
                }
                let mut once = gs.clone();
                once.dedup();
                let want = single.access_all(once, &cur, w);
                let gs: Vec<u32> = gs.iter().map(|&g| g as u32).collect();
                let got = windows.access_granules(&gs, &cur, w);
                proptest::prop_assert_eq!(got, want, "step {}", i);
                for g in 0..160 {
                    let (a, b) = (
                        &single.states[single.ids[g] as usize],
                        &windows.states[windows.ids[g] as usize],
                    );
                    proptest::prop_assert_eq!(a, b, "granule {} after step {}", g, i);
                }
            }
        }
    }
}
