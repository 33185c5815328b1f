//! Happens-before and shadow memory: the heart of the hazard checker.
//!
//! Every agent (each partition of each CTA, each CTA's TMA unit and tensor pipe) has a vector
//! clock ([`VClock`]). Synchronisation joins clocks (an mbarrier phase completion releases the
//! join of its arrivals to every wait that observes it; `bar.sync`, `store_wait`, `wgmma.wait`
//! and the in-order tensor pipe likewise). Every shared- or tensor-memory access is recorded in
//! a [`Shadow`] cell per 4-byte granule (a coarser granule can only add reports, never lose
//! one) with the accessing agent, its proxy, its clock and the op that made it; a new access is
//! checked against the cell with the proxy rule of DESIGN.md section 4:
//!
//! - conflicting accesses (at least one write) must be ordered by happens-before, else `race`
//!   (or `read-before-complete` / `write-while-in-flight` when one side is an async unit);
//! - generic write → async access, and generic read → async write, additionally need a
//!   `fence.async_shared` by the generic side after its access and before the release that
//!   orders them (for generic read → async write, a fence by the issuing partition after its
//!   acquire also counts, as seed 08 allows); else `missing-fence`;
//! - async write → generic read is ordered by the mbarrier wait alone; async → async needs only
//!   happens-before.
//!
//! This module knows nothing of the interpreter: the machine feeds it agents, clocks, fences
//! and accesses.

use std::sync::Arc;

/// Index of an agent within one run.
pub type AgentId = u16;

/// A vector clock over all agents of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VClock(pub Vec<u32>);

impl VClock {
    pub fn new(n: usize) -> VClock {
        VClock(vec![0; n])
    }
    pub fn get(&self, a: AgentId) -> u32 {
        self.0.get(a as usize).copied().unwrap_or(0)
    }
    pub fn tick(&mut self, a: AgentId) -> u32 {
        let i = a as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        self.0[i] += 1;
        self.0[i]
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

/// Which proxy made an access (PTX.md section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proxy {
    /// ld/st by threads.
    Generic,
    /// TMA, tcgen05.mma/cp operand reads, wgmma operand reads.
    Async,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
}

/// One recorded access.
#[derive(Clone, Debug)]
pub struct Access {
    pub agent: AgentId,
    /// The agent's own clock component at the access.
    pub time: u32,
    pub proxy: Proxy,
    pub kind: Kind,
    /// Index of the op in the run's op table (for spans in diagnostics).
    pub op: u32,
    /// For async accesses: the partition that issued the op and its clock at issue.
    pub issuer: Option<(AgentId, Arc<VClock>)>,
    /// For async accesses: the issuer's clock at its last `fence.async_shared` before the issue.
    pub issuer_fence: Option<Arc<VClock>>,
}

/// What a new access conflicts with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HazardKind {
    /// Unordered conflicting accesses.
    Race,
    /// Ordered, but the generic side never fenced before the release.
    MissingFence,
    /// A read of an async write (TMA destination, MMA accumulator) whose completion the reader
    /// has not observed.
    ReadBeforeComplete,
    /// A write to bytes an async op may still be reading.
    WriteWhileInFlight,
}

impl HazardKind {
    pub fn code(&self) -> &'static str {
        match self {
            HazardKind::Race => "race",
            HazardKind::MissingFence => "missing-fence",
            HazardKind::ReadBeforeComplete => "read-before-complete",
            HazardKind::WriteWhileInFlight => "write-while-in-flight",
        }
    }
}

/// A hazard between an earlier access and the current one.
#[derive(Clone, Debug)]
pub struct Hazard {
    pub kind: HazardKind,
    pub earlier: Access,
    pub later: Access,
    /// Byte address (or TMEM cell) of the first conflicting granule.
    pub addr: u32,
}

/// Per-agent facts the rule needs: fence times and whether the agent is an async unit.
#[derive(Clone, Debug, Default)]
pub struct AgentInfo {
    pub is_async_unit: bool,
    /// The agent's clock component at each `fence.async_shared` it executed, ascending.
    pub fences: Vec<u32>,
}

/// The state of one granule.
#[derive(Clone, Debug, Default)]
pub struct Cell {
    pub write: Option<Access>,
    /// Reads since the last write, at most one per agent (the latest).
    pub reads: Vec<Access>,
}

/// Shadow memory: one cell per 4-byte granule.
#[derive(Clone, Debug)]
pub struct Shadow {
    cells: Vec<Cell>,
}

/// Granule size in bytes.
pub const GRANULE: u32 = 4;

impl Shadow {
    pub fn new(bytes: u32) -> Shadow {
        Shadow { cells: vec![Cell::default(); bytes.div_ceil(GRANULE) as usize] }
    }
    /// Whether any access ever wrote the granule of `addr`.
    pub fn written(&self, addr: u32) -> bool {
        self.cells.get((addr / GRANULE) as usize).is_some_and(|c| c.write.is_some())
    }
    /// Record `acc` over bytes `addr..addr+len` made by an agent whose clock is `vc`; return the
    /// first hazard found (at most one per call, to keep reports readable).
    pub fn access(&mut self, addr: u32, len: u32, acc: &Access, vc: &VClock, agents: &[AgentInfo]) -> Option<Hazard> {
        let first = (addr / GRANULE) as usize;
        let last = (addr.saturating_add(len.max(1)) - 1) / GRANULE;
        let mut found = None;
        for g in first..=(last as usize).min(self.cells.len().saturating_sub(1)) {
            let cell = &mut self.cells[g];
            if found.is_none() {
                found = check(cell, acc, vc, agents).map(|(kind, earlier)| Hazard { kind, earlier, later: acc.clone(), addr: g as u32 * GRANULE });
            }
            match acc.kind {
                Kind::Write => {
                    cell.write = Some(acc.clone());
                    cell.reads.clear();
                }
                Kind::Read => {
                    if let Some(r) = cell.reads.iter_mut().find(|r| r.agent == acc.agent) {
                        *r = acc.clone();
                    } else {
                        cell.reads.push(acc.clone());
                    }
                }
            }
        }
        found
    }
}

/// Whether the generic access `g` is properly fenced before the async access `a` that is
/// ordered after it (PTX.md section 6).
fn fenced(g: &Access, a: &Access, vc: &VClock, agents: &[AgentInfo]) -> bool {
    // A fence by the generic side after its access that the async side's clock covers.
    let by_generic_side = agents.get(g.agent as usize).is_some_and(|info| {
        let i = info.fences.partition_point(|&f| f < g.time);
        info.fences.get(i).is_some_and(|&f| vc.knows(g.agent, f) || a.issuer.as_ref().is_some_and(|(_, ic)| ic.knows(g.agent, f)))
    });
    if by_generic_side {
        return true;
    }
    // Generic read → async write: a fence by the issuer after it learned of the read.
    g.kind == Kind::Read && a.kind == Kind::Write && a.issuer_fence.as_ref().is_some_and(|f| f.knows(g.agent, g.time))
}

/// Check the new access `acc` (clock `vc`) against one earlier access.
fn pair(prev: &Access, acc: &Access, vc: &VClock, agents: &[AgentInfo]) -> Option<HazardKind> {
    if prev.agent == acc.agent && prev.proxy == acc.proxy {
        return None; // program order (or the unit's own order)
    }
    if prev.kind == Kind::Read && acc.kind == Kind::Read {
        return None;
    }
    let ordered = vc.knows(prev.agent, prev.time) || acc.issuer.as_ref().is_some_and(|(_, ic)| ic.knows(prev.agent, prev.time));
    let prev_async = agents.get(prev.agent as usize).is_some_and(|i| i.is_async_unit);
    if !ordered {
        return Some(match (prev.kind, acc.kind, prev_async) {
            (Kind::Write, Kind::Read, true) => HazardKind::ReadBeforeComplete,
            (Kind::Read, Kind::Write, true) => HazardKind::WriteWhileInFlight,
            (Kind::Write, Kind::Write, true) => HazardKind::WriteWhileInFlight,
            _ => HazardKind::Race,
        });
    }
    // Ordered: the proxy rule.
    match (prev.proxy, acc.proxy) {
        (Proxy::Generic, Proxy::Async) if !fenced(prev, acc, vc, agents) => Some(HazardKind::MissingFence),
        _ => None,
    }
}

fn check(cell: &Cell, acc: &Access, vc: &VClock, agents: &[AgentInfo]) -> Option<(HazardKind, Access)> {
    if let Some(w) = &cell.write {
        if let Some(k) = pair(w, acc, vc, agents) {
            return Some((k, w.clone()));
        }
    }
    if acc.kind == Kind::Write {
        for r in &cell.reads {
            if let Some(k) = pair(r, acc, vc, agents) {
                return Some((k, r.clone()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const P0: AgentId = 0; // a partition
    const P1: AgentId = 1; // another partition
    const TMA: AgentId = 2;

    fn agents(fences0: Vec<u32>) -> Vec<AgentInfo> {
        vec![
            AgentInfo { is_async_unit: false, fences: fences0 },
            AgentInfo { is_async_unit: false, fences: vec![] },
            AgentInfo { is_async_unit: true, fences: vec![] },
        ]
    }
    fn acc(agent: AgentId, time: u32, proxy: Proxy, kind: Kind) -> Access {
        Access { agent, time, proxy, kind, op: 0, issuer: None, issuer_fence: None }
    }
    fn vc(v: &[u32]) -> VClock {
        VClock(v.to_vec())
    }

    #[test]
    fn generic_store_then_tma_store_needs_the_writers_fence() {
        // P0 writes at its time 1, issues a TMA store at time 2; the TMA reads with P0's clock.
        let mut s = Shadow::new(64);
        let ag = agents(vec![]);
        assert!(s.access(0, 16, &acc(P0, 1, Proxy::Generic, Kind::Write), &vc(&[1, 0, 0]), &ag).is_none());
        let tma = Access { issuer: Some((P0, Arc::new(vc(&[2, 0, 0])))), ..acc(TMA, 1, Proxy::Async, Kind::Read) };
        let h = s.access(0, 16, &tma, &vc(&[2, 0, 1]), &ag).expect("hazard");
        assert_eq!(h.kind, HazardKind::MissingFence);
        // With a fence by P0 at its time 2 (after the write, before the issue): clean.
        let mut s = Shadow::new(64);
        let ag = agents(vec![2]);
        s.access(0, 16, &acc(P0, 1, Proxy::Generic, Kind::Write), &vc(&[1, 0, 0]), &ag);
        assert!(s.access(0, 16, &tma, &vc(&[2, 0, 1]), &ag).is_none());
    }

    #[test]
    fn generic_read_then_tma_load_accepts_a_fence_on_either_side() {
        let read = acc(P0, 3, Proxy::Generic, Kind::Read);
        // Issued by P1, which learned of P0's read (clock [3, 5, 0]) but neither fenced.
        let tma_w = Access { issuer: Some((P1, Arc::new(vc(&[3, 5, 0])))), ..acc(TMA, 1, Proxy::Async, Kind::Write) };
        let mut s = Shadow::new(64);
        s.access(0, 4, &read, &vc(&[3, 0, 0]), &agents(vec![]));
        assert_eq!(s.access(0, 4, &tma_w, &vc(&[3, 5, 1]), &agents(vec![])).map(|h| h.kind), Some(HazardKind::MissingFence));
        // The reader fenced at its time 4 and released at 4: clean.
        let mut s = Shadow::new(64);
        let tma_w2 = Access { issuer: Some((P1, Arc::new(vc(&[4, 5, 0])))), ..tma_w.clone() };
        s.access(0, 4, &read, &vc(&[3, 0, 0]), &agents(vec![4]));
        assert!(s.access(0, 4, &tma_w2, &vc(&[4, 5, 1]), &agents(vec![4])).is_none());
        // The issuer fenced after its wait (its fence clock knows the read): clean (seed 08).
        let mut s = Shadow::new(64);
        let tma_w3 = Access { issuer_fence: Some(Arc::new(vc(&[3, 4, 0]))), ..tma_w };
        s.access(0, 4, &read, &vc(&[3, 0, 0]), &agents(vec![]));
        assert!(s.access(0, 4, &tma_w3, &vc(&[3, 5, 1]), &agents(vec![])).is_none());
    }

    #[test]
    fn async_write_then_generic_read_needs_only_the_wait() {
        let mut s = Shadow::new(64);
        let ag = agents(vec![]);
        s.access(8, 8, &acc(TMA, 1, Proxy::Async, Kind::Write), &vc(&[0, 0, 1]), &ag);
        // P0 observed the phase that counted the bytes: its clock knows TMA time 1.
        assert!(s.access(8, 8, &acc(P0, 2, Proxy::Generic, Kind::Read), &vc(&[2, 0, 1]), &ag).is_none());
        // P1 did not: read-before-complete.
        let h = s.access(12, 4, &acc(P1, 1, Proxy::Generic, Kind::Read), &vc(&[0, 1, 0]), &ag).expect("hazard");
        assert_eq!(h.kind, HazardKind::ReadBeforeComplete);
        assert_eq!(h.addr, 12);
    }

    #[test]
    fn unordered_generic_writes_race_and_async_reads_in_flight_block_writes() {
        let mut s = Shadow::new(64);
        let ag = agents(vec![]);
        s.access(0, 4, &acc(P0, 1, Proxy::Generic, Kind::Write), &vc(&[1, 0, 0]), &ag);
        let h = s.access(0, 4, &acc(P1, 1, Proxy::Generic, Kind::Write), &vc(&[0, 1, 0]), &ag).expect("race");
        assert_eq!(h.kind, HazardKind::Race);
        let mut s = Shadow::new(64);
        s.access(0, 4, &acc(TMA, 1, Proxy::Async, Kind::Read), &vc(&[0, 0, 1]), &ag);
        let h = s.access(0, 4, &acc(P0, 1, Proxy::Generic, Kind::Write), &vc(&[1, 0, 0]), &ag).expect("in flight");
        assert_eq!(h.kind, HazardKind::WriteWhileInFlight);
    }

    #[test]
    fn clocks_join_and_tick() {
        let mut a = VClock::new(3);
        a.tick(1);
        let mut b = VClock(vec![2, 0, 5]);
        b.join(&a);
        assert_eq!(b, VClock(vec![2, 1, 5]));
        assert!(b.knows(2, 5) && !b.knows(2, 6));
    }
}
