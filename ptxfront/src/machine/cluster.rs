//! Clusters on the PTX front end's machine: the CTAs of one cluster run together, each CTA's
//! warps agents of its own [`CtaHb`], and what one CTA does to another goes through the
//! checker's cluster hooks, as the tile machine's cluster side (`bwsim_sim::machine`) does it
//! (docs/semantics.md, "The PTX front end").
//!
//! The machine holds the state of one CTA at a time (its shared memory, threads, checker,
//! barriers, tensor memory); the others wait in [`Local`]s and [`Machine::switch`] exchanges
//! them. On top of that this module owns:
//! - distributed shared memory: `ld`/`st.shared::cluster` at an address `mapa` made
//!   ([`crate::exec::cluster_window`]); an access to another CTA's memory is its peer agent's
//!   ([`CtaHb::peer_step`], [`CtaHb::peer_smem`]), and a CTA that exits while a peer's access
//!   to its memory is not known to have happened before is a `cluster-exit` finding;
//! - remote mbarrier arrivals (`mbarrier.arrive[.expect_tx].shared::cluster` on another CTA's
//!   barrier): a release at cluster scope ([`CtaHb::bar_remote`]) by the peer agent, after a
//!   check that the barrier's init is visible to the arriving CTA (`barrier-misuse`);
//! - the cluster barrier (`barrier.cluster.arrive[.relaxed]` / `barrier.cluster.wait`): a
//!   phase completes once every thread of the cluster that has not exited arrived in it; an
//!   arrive releases what its warp knows of every CTA (a relaxed one only the inits a
//!   `fence.mbarrier_init` covered), a wait acquires what the phase released;
//! - multicast bulk tensor loads (`.multicast::cluster`): the box lands in every CTA the mask
//!   names, completing on each one's barrier at the same offset.

use super::{Flight, Machine, Work};
use crate::exec::{cluster_address, extend, Cta, St, Thread};
use crate::parse::Space;
use crate::program::{MemRef, Op};
use crate::Error;
use bwsim_isa::Code;
use bwsim_sim::check::hazards::{Actor, CtaHb};
use bwsim_sim::check::hb::{Kind, VClock};
use bwsim_sim::mbarrier::Mbar;
use std::collections::{BTreeMap, HashMap};

/// The state of a CTA of the cluster while the machine holds another's.
pub(super) struct Local {
    shared: Vec<u8>,
    ctaid: [u32; 3],
    log: Option<Vec<crate::exec::SharedAccess>>,
    glog: Option<Vec<crate::exec::GEvent>>,
    gwho: (usize, crate::atomic::Order),
    th: Vec<Thread>,
    hb: Option<CtaHb>,
    bars: HashMap<u32, Mbar>,
    parked: Vec<BTreeMap<usize, (u32, u64)>>,
    open_group: Vec<u64>,
    pending: Vec<BTreeMap<u64, u32>>,
    last_store: HashMap<u32, (usize, usize)>,
    tmem: super::tcgen05::Tmem,
    pipe_due: u64,
    carrived: Vec<Option<u64>>,
    cp: Vec<super::cp_async::CpWarp>,
    wg: Vec<super::wgmma::WgWarp>,
}

impl Local {
    /// A fresh CTA at `ctaid` of the launch `cta` runs (its threads at the first instruction,
    /// its shared memory zero), with the checker `hb`.
    pub(super) fn new(cta: &Cta<'_>, ctaid: [u32; 3], hb: Option<CtaHb>) -> Local {
        let th = cta.threads();
        let warps = th.len().div_ceil(32);
        Local {
            shared: vec![0; cta.shared.len()],
            ctaid,
            log: cta.log.as_ref().map(|_| Vec::new()),
            glog: cta.glog.as_ref().map(|_| Vec::new()),
            gwho: Default::default(),
            carrived: vec![None; th.len()],
            th,
            hb,
            bars: HashMap::new(),
            parked: vec![BTreeMap::new(); warps],
            open_group: vec![0; warps],
            pending: vec![BTreeMap::new(); warps],
            last_store: HashMap::new(),
            tmem: Default::default(),
            pipe_due: 0,
            cp: (0..warps).map(|_| Default::default()).collect(),
            wg: (0..warps).map(|_| Default::default()).collect(),
        }
    }
}

/// The cluster barrier's state.
#[derive(Default)]
pub(super) struct ClusterBar {
    /// The phase the next arrivals arrive in.
    phase: u64,
    /// What the arrivals of the running phase released, by CTA id.
    running: BTreeMap<u32, VClock>,
    /// The last completed phase and what it released.
    completed: (u64, BTreeMap<u32, VClock>),
}

impl Machine<'_, '_> {
    /// Makes the CTA of rank `r` the one the machine holds.
    pub(super) fn switch(&mut self, r: usize) {
        if r == self.rank {
            return;
        }
        let Some(mut l) = self.away.get_mut(r).and_then(Option::take) else {
            return;
        };
        std::mem::swap(&mut self.cta.shared, &mut l.shared);
        std::mem::swap(&mut self.cta.ctaid, &mut l.ctaid);
        std::mem::swap(&mut self.cta.log, &mut l.log);
        std::mem::swap(&mut self.cta.glog, &mut l.glog);
        std::mem::swap(&mut self.cta.gwho, &mut l.gwho);
        std::mem::swap(&mut self.th, &mut l.th);
        std::mem::swap(&mut self.hb, &mut l.hb);
        std::mem::swap(&mut self.bars, &mut l.bars);
        std::mem::swap(&mut self.parked, &mut l.parked);
        std::mem::swap(&mut self.open_group, &mut l.open_group);
        std::mem::swap(&mut self.pending, &mut l.pending);
        std::mem::swap(&mut self.last_store, &mut l.last_store);
        std::mem::swap(&mut self.tmem, &mut l.tmem);
        std::mem::swap(&mut self.pipe_due, &mut l.pipe_due);
        std::mem::swap(&mut self.carrived, &mut l.carrived);
        std::mem::swap(&mut self.cp, &mut l.cp);
        std::mem::swap(&mut self.wg, &mut l.wg);
        self.away[self.rank] = Some(l);
        self.rank = r;
    }

    /// The cluster's size in CTAs.
    fn cluster_size(&self) -> usize {
        self.away.len()
    }

    /// The end of a cluster whose threads have all exited: `cluster-exit` for every CTA whose
    /// shared memory a peer accessed at a time its exit is not known to follow.
    pub(super) fn finish(&mut self) -> Result<(), Error> {
        for r in 0..self.cluster_size() {
            self.switch(r);
            let Some(hb) = &self.hb else { continue };
            let owner = self.ids[r];
            for (peer, prank, pc) in hb.peers_unordered_at_exit() {
                let pc = pc as usize;
                let name = self.cta.p.ins.get(pc).map_or("an access", |i| i.opcode.as_str());
                let diagnostic =
                    bwsim_sim::diagnostics::cluster_exit(name, self.span(pc), peer, prank, owner, r as u32);
                if !self
                    .findings
                    .iter()
                    .any(|f| f.code == Code::ClusterExit && f.pc == pc)
                {
                    self.findings.push(super::Finding {
                        code: Code::ClusterExit,
                        pc,
                        with: Vec::new(),
                        diagnostic,
                    });
                }
            }
        }
        Ok(())
    }

    /// The rank and shared byte offset of the `.shared::cluster` address thread `t` names with
    /// `m` (the executing CTA's own for a `.shared::cta` address), checked against the cluster
    /// and the target's shared memory (`bytes` long).
    pub(super) fn cluster_target(
        &self,
        t: usize,
        m: &MemRef,
        bytes: u64,
        pc: usize,
    ) -> Result<(usize, u64), Error> {
        let (_, a) = self.cta.address(&self.th[t], Some(Space::Shared), m, pc)?;
        let (rank, off) = cluster_address(a);
        let rank = rank as usize;
        if rank >= self.cluster_size() {
            return Err(self.rt(
                pc,
                format!(
                    "the `.shared::cluster` address {a:#x} names CTA rank {rank} of a cluster of {}",
                    self.cluster_size()
                ),
            ));
        }
        if off + bytes > self.cta.shared.len() as u64 {
            return Err(self.rt(
                pc,
                format!(
                    "the `.shared::cluster` address {a:#x} reaches past the {} bytes of CTA rank {rank}'s shared memory",
                    self.cta.shared.len()
                ),
            ));
        }
        Ok((rank, off))
    }

    /// The checker's side of warp `w` of this CTA acting on the CTA of rank `r` at `pc`,
    /// called while the machine holds CTA `r`: its peer agent learns `view` (what the warp
    /// knew of CTA `r`); returns what the warp then knows of its own act.
    fn peer_act(&mut self, me: usize, view: &VClock, pc: usize) -> Option<VClock> {
        let (sid, srank) = (self.ids[me], me as u32);
        let hb = self.hb.as_mut()?;
        let (id, time) = hb.peer_step(sid, srank, view, pc as u32);
        let mut own = VClock::default();
        own.raise(id, time);
        Some(own)
    }

    /// What warp `w` knows of the CTA of rank `r` (for its peer agent there).
    fn view_of(&self, w: usize, r: usize) -> VClock {
        self.hb
            .as_ref()
            .map(|hb| hb.remote_view(w, self.ids[r]))
            .unwrap_or_default()
    }

    /// `ld`/`st.shared::cluster` (`op`) at `pc` by the lanes `group` of warp `w`.
    pub(super) fn dsmem(&mut self, w: usize, pc: usize, op: &Op, group: &[usize]) -> Result<(), Error> {
        let (access, store) = match op {
            Op::Ld { access, .. } => (access, false),
            Op::St { access, .. } => (access, true),
            _ => return Err(self.rt(pc, "internal: not a distributed shared-memory access".into())),
        };
        let n = match op {
            Op::Ld { dsts, .. } => dsts.len(),
            Op::St { srcs, .. } => srcs.len(),
            _ => 0,
        } as u64;
        let bytes = access.bytes;
        let me = self.rank;
        for &t in group {
            let (r, off) = self.cluster_target(t, &access.at, n * bytes as u64, pc)?;
            if r == me {
                self.dsmem_local(t, pc, op, off)?;
                continue;
            }
            let view = self.view_of(w, r);
            let vals = match op {
                Op::St { srcs, .. } => srcs
                    .iter()
                    .map(|v| self.value(t, *v, pc))
                    .collect::<Result<Vec<_>, _>>()?,
                _ => Vec::new(),
            };
            self.switch(r);
            let mut loaded = Vec::new();
            for e in 0..n {
                let a = off + e * bytes as u64;
                let b = self.cta.bytes_at(Space::Shared, a, bytes, pc)?;
                if store {
                    let v = vals.get(e as usize).copied().unwrap_or(0);
                    for (i, x) in b.iter_mut().enumerate() {
                        *x = if i < 8 { (v >> (8 * i)) as u8 } else { 0 };
                    }
                } else {
                    loaded.push(
                        b.iter()
                            .take(8)
                            .enumerate()
                            .fold(0u64, |v, (i, x)| v | (*x as u64) << (8 * i)),
                    );
                }
            }
            let learnt = self.peer_act(me, &view, pc);
            if let Some(hb) = &mut self.hb {
                let addrs: Vec<(u32, u32)> = (0..n).map(|e| ((off + e * bytes as u64) as u32, 0)).collect();
                let kind = if store { Kind::Write } else { Kind::Read };
                if let Some(h) = hb.peer_smem(self.ids[me], pc as u32, kind, &addrs, bytes * 8) {
                    self.report(&h);
                }
            }
            let rid = self.ids[r];
            self.switch(me);
            if let (Some(own), Some(hb)) = (learnt, &mut self.hb) {
                hb.learn_remote(w, rid, &own);
            }
            if let Op::Ld { dsts, signed, .. } = op {
                for (d, raw) in dsts.iter().zip(loaded) {
                    if let Some(d) = d {
                        self.cta.write(&mut self.th[t], *d, extend(raw, bytes, *signed));
                    }
                }
            }
        }
        // The lanes' accesses to this CTA's own memory, to the checker as the warp's.
        self.record_generic(w);
        Ok(())
    }

    /// A lane's `ld`/`st.shared::cluster` of its own CTA's shared memory at byte `off`: the
    /// `.shared::cta` access it is.
    fn dsmem_local(&mut self, t: usize, pc: usize, op: &Op, off: u64) -> Result<(), Error> {
        match op {
            Op::Ld { access, signed, dsts } => {
                let bytes = access.bytes;
                for (e, d) in dsts.iter().enumerate() {
                    let raw = self
                        .cta
                        .load(Space::Shared, off + e as u64 * bytes as u64, bytes, pc)?;
                    if let Some(d) = d {
                        self.cta.write(&mut self.th[t], *d, extend(raw, bytes, *signed));
                    }
                }
            }
            Op::St { access, srcs } => {
                let bytes = access.bytes;
                for (e, s) in srcs.iter().enumerate() {
                    let v = self.value(t, *s, pc)?;
                    self.cta
                        .store(Space::Shared, off + e as u64 * bytes as u64, bytes, v, pc)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `mbarrier.arrive[.expect_tx]` / `mbarrier.expect_tx` of thread `t` (warp `w`, at `pc`)
    /// on the barrier at `bar` when it is another CTA's: `Some(rank)` of that CTA after acting
    /// on it (`tx` the bytes expected, `arrive` whether it arrives), `None` when the barrier is
    /// this CTA's own (the caller acts on it).
    pub(super) fn remote_arrive(
        &mut self,
        (w, t, pc): (usize, usize, usize),
        bar: &MemRef,
        tx: Option<i64>,
        arrive: bool,
    ) -> Result<Option<usize>, Error> {
        let (r, off) = self.cluster_target(t, bar, 8, pc)?;
        let me = self.rank;
        if r == me {
            return Ok(None);
        }
        let a = off as u32;
        let view = self.view_of(w, r);
        let mut views = vec![(
            self.ids[me],
            self.hb.as_ref().map(|h| h.part_clock(w)).unwrap_or_default(),
        )];
        if let Some(hb) = &self.hb {
            views.extend(hb.remote_views(w));
        }
        self.switch(r);
        let visible = self.hb.as_ref().is_none_or(|hb| hb.init_visible(a, &view));
        let learnt = self.peer_act(me, &view, pc);
        let result = self.remote_bar_ops(a, pc, me, &views, tx, arrive);
        let rid = self.ids[r];
        self.switch(me);
        result?;
        if !visible {
            self.init_not_visible(pc, (r, a), "an arrival on", "the arrival");
        }
        if let (Some(own), Some(hb)) = (learnt, &mut self.hb) {
            hb.learn_remote(w, rid, &own);
        }
        Ok(Some(r))
    }

    /// `barrier-misuse`: the operation at `pc` (`what` it does, `who` names it) acts on the
    /// barrier at shared byte `a` of the CTA of rank `r` before that barrier's init is visible
    /// to this CTA (released to the cluster by a cluster barrier after the init).
    fn init_not_visible(&mut self, pc: usize, (r, a): (usize, u32), what: &str, who: &str) {
        self.barrier_error(
            Code::BarrierMisuse,
            pc,
            format!("{what} the mbarrier at shared byte {a} of CTA rank {r} before that barrier's initialisation is visible to this CTA"),
            "acts on another CTA's barrier here",
            who,
            "after the inits: `fence.mbarrier_init.release.cluster`, then `barrier.cluster.arrive.relaxed` and `barrier.cluster.wait` in every CTA, before any CTA uses another's barrier",
        );
    }

    /// The barrier actions of a remote arrival by CTA rank `from` on this CTA's barrier `a`.
    fn remote_bar_ops(
        &mut self,
        a: u32,
        pc: usize,
        from: usize,
        views: &[(u32, VClock)],
        tx: Option<i64>,
        arrive: bool,
    ) -> Result<(), Error> {
        let who = Actor::Peer {
            cta: self.ids[from],
            pc: pc as u32,
        };
        if let Some(hb) = &mut self.hb {
            hb.bar_remote(a, views);
        }
        if let Some(bytes) = tx {
            let r = self.bar_mut(a, pc)?.expect_tx(bytes);
            let flipped = r.map_err(|f| self.fault(pc, f))?;
            if let Some(hb) = &mut self.hb {
                hb.bar_update(a, who, false, bytes, flipped);
            }
        }
        if arrive {
            let r = self.bar_mut(a, pc)?.arrive(1);
            let flipped = r.map_err(|f| self.fault(pc, f))?;
            if let Some(hb) = &mut self.hb {
                hb.bar_update(a, who, true, 0, flipped);
            }
        }
        Ok(())
    }

    /// `barrier.cluster.arrive` by the lanes `group` of warp `w` at `pc`.
    pub(super) fn cluster_arrive(
        &mut self,
        w: usize,
        pc: usize,
        relaxed: bool,
        group: &[usize],
    ) -> Result<(), Error> {
        let phase = self.cbar.phase;
        for &t in group {
            if self.carrived[t].is_some() {
                return Err(self.rt(
                    pc,
                    "`barrier.cluster.arrive` by a thread that arrived on the cluster barrier and has not waited (each arrive is followed by a `barrier.cluster.wait`)".into(),
                ));
            }
            self.carrived[t] = Some(phase);
        }
        let id = self.ids[self.rank];
        if let Some(hb) = &self.hb {
            let mut rel = Vec::new();
            if relaxed {
                // A relaxed arrive after `fence.mbarrier_init` still publishes the inits.
                rel.push((id, hb.relaxed_release(w)));
            } else {
                rel.push((id, hb.part_clock(w)));
                rel.extend(hb.remote_views(w));
            }
            for (c, clock) in rel {
                self.cbar.running.entry(c).or_default().join(&clock);
            }
        }
        Ok(())
    }

    /// Whether the lanes of warp `w` at the `barrier.cluster.wait` at `pc` may pass: the phase
    /// each arrived in has completed.
    pub(super) fn cluster_waited(&self, w: usize, pc: usize) -> bool {
        self.lanes(w)
            .filter(|&t| self.th[t].st == St::Agent && self.th[t].pc == pc)
            .all(|t| self.carrived[t].is_none_or(|g| g < self.cbar.phase))
    }

    /// `barrier.cluster.wait` by the lanes `group` of warp `w` at `pc`: whether they pass (the
    /// phase they arrived in has completed), acquiring what it released.
    pub(super) fn cluster_wait(&mut self, w: usize, pc: usize, group: &[usize]) -> Result<bool, Error> {
        let mut gen = None;
        for &t in group {
            let Some(g) = self.carrived[t] else {
                return Err(self.rt(
                    pc,
                    "`barrier.cluster.wait` by a thread that has not arrived on the cluster barrier (`barrier.cluster.arrive` comes first)".into(),
                ));
            };
            if g >= self.cbar.phase {
                return Ok(false);
            }
            gen = Some(g);
        }
        for &t in group {
            self.carrived[t] = None;
        }
        let id = self.ids[self.rank];
        if let (Some(g), Some(hb)) = (gen, &mut self.hb) {
            if self.cbar.completed.0 == g {
                for (c, clock) in &self.cbar.completed.1 {
                    if *c == id {
                        hb.acquire_clock(w, clock);
                    } else {
                        hb.learn_remote(w, *c, clock);
                    }
                }
            }
        }
        Ok(true)
    }

    /// Completes the cluster barrier's phase once every thread of the cluster that has not
    /// exited arrived in it (and one did).
    pub(super) fn release_cluster(&mut self) {
        let phase = self.cbar.phase;
        let mut any = false;
        for r in 0..self.cluster_size() {
            self.switch(r);
            for (t, th) in self.th.iter().enumerate() {
                match self.carrived[t] {
                    Some(g) if g == phase => any = true,
                    _ if th.st == St::Done => {}
                    _ => return,
                }
            }
        }
        if any {
            self.cbar.completed = (phase, std::mem::take(&mut self.cbar.running));
            self.cbar.phase += 1;
        }
    }

    /// The destinations of a bulk tensor load whose multicast mask is `mask` (`None`: this
    /// CTA alone), by rank.
    pub(super) fn multicast_ranks(&self, mask: Option<u64>, pc: usize) -> Result<Vec<usize>, Error> {
        let n = self.cluster_size();
        match mask {
            None => Ok(vec![self.rank]),
            Some(m) if m != 0 && m >> n == 0 => Ok((0..n).filter(|r| m >> r & 1 == 1).collect()),
            Some(m) => Err(self.rt(
                pc,
                format!("a multicast with the CTA mask {m:#x}, which names no CTA or one outside the cluster of {n}"),
            )),
        }
    }

    /// Warp `w` of this CTA acts, at `pc`, in the CTA of rank `r` (another CTA): `inside` runs
    /// while the machine holds CTA `r`, after this CTA's peer agent there stepped with what the
    /// warp knew of it; the warp then learns that step.
    pub(super) fn in_peer<T>(
        &mut self,
        w: usize,
        r: usize,
        pc: usize,
        inside: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let me = self.rank;
        let view = self.view_of(w, r);
        self.switch(r);
        let learnt = self.peer_act(me, &view, pc);
        let out = inside(self);
        let rid = self.ids[r];
        self.switch(me);
        if let (Some(own), Some(hb)) = (learnt, &mut self.hb) {
            hb.learn_remote(w, rid, &own);
        }
        out
    }

    /// The phase of the barrier at offset `bar` of the CTA of rank `r`, and whether its init is
    /// visible to warp `w` of this CTA (always for this CTA's own barrier).
    fn bar_seen(&mut self, w: usize, r: usize, bar: u32) -> (u64, bool) {
        let me = self.rank;
        let view = self.view_of(w, r);
        self.switch(r);
        let phase = self.bars.get(&bar).map_or(0, |m| m.phase);
        let visible = r == me || self.hb.as_ref().is_none_or(|hb| hb.init_visible(bar, &view));
        self.switch(me);
        (phase, visible)
    }

    /// Puts the load or response `work` of a multicast issued by warp `w` of this CTA in flight to the CTA
    /// of rank `r` (another CTA: its async write issued there by this CTA's peer agent), its
    /// bytes completing on the barrier of its `bar_cta` (a load's; a response's is CTA `r`'s).
    pub(super) fn multicast_to(&mut self, w: usize, r: usize, pc: usize, mut work: Work) {
        let me = self.rank;
        if r != me {
            let sid = self.ids[me];
            let op = self.in_peer(w, r, pc, |m| {
                m.hb.as_mut().map_or(0, |hb| hb.peer_issue(sid, pc as u32))
            });
            if let Work::Load { op: o, .. } | Work::Clc { op: o, .. } = &mut work {
                *o = op;
            }
        }
        let bar = match &work {
            Work::Load { bar, bar_cta, .. } => Some((*bar_cta, *bar)),
            Work::Clc { bar, .. } => Some((r, *bar)),
            _ => None,
        };
        if let Some((b_cta, b)) = bar {
            let (now, visible) = self.bar_seen(w, b_cta, b);
            if let Work::Load { phase, .. } = &mut work {
                *phase = now;
            }
            if !visible {
                self.init_not_visible(pc, (b_cta, b), "a copy completing its bytes on", "the copy");
            }
        }
        let due = self.now + self.sched.latency(bwsim_sim::sched::AsyncKind::TmaLoad);
        let tie = self.sched.tiebreak();
        self.flights.push(Flight {
            due,
            tie,
            cta: r,
            work,
        });
    }

    /// A bulk tensor load issued at `pc` that landed in this CTA completes `bytes` on the
    /// barrier at offset `bar` of the CTA of rank `bar_cta`, whose phase was `phase` at the
    /// issue. On another CTA's barrier (a `.cta_group::2` copy onto its pair's), what the copy
    /// wrote here is published to that barrier's waiters as knowledge of this CTA, and the
    /// bytes are another CTA's unit's ([`Actor::Remote`]).
    pub(super) fn load_completes(
        &mut self,
        (bar, bar_cta, phase, pc): (u32, usize, u64, usize),
        bytes: i64,
    ) -> Result<(), Error> {
        let here = self.rank;
        let who = if bar_cta == here {
            Actor::Tma
        } else {
            let view = [(
                self.ids[here],
                self.hb.as_ref().map(|h| h.piece_clock()).unwrap_or_default(),
            )];
            self.switch(bar_cta);
            if let Some(hb) = &mut self.hb {
                hb.bar_remote(bar, &view);
            }
            Actor::Remote { pc: pc as u32 }
        };
        if self.bars.get(&bar).is_some_and(|m| m.phase > phase) {
            self.overshoot(pc, bar, bytes);
        }
        let r = self.unit_delivers((bar, pc), who, Some(bytes));
        self.switch(here);
        r
    }

    /// The barrier offset and the CTAs (by rank) of a multicast `tcgen05.commit` of thread `t`
    /// whose barrier operand is `bar` and CTA mask `mask`.
    pub(super) fn multicast_commit_target(
        &self,
        t: usize,
        bar: &MemRef,
        mask: crate::program::Val,
        pc: usize,
    ) -> Result<(u32, Option<Vec<usize>>), Error> {
        let (_, off) = self.cluster_target(t, bar, 8, pc)?;
        let m = self.value(t, mask, pc)? & 0xffff;
        Ok((off as u32, Some(self.multicast_ranks(Some(m), pc)?)))
    }

    /// A multicast `tcgen05.commit` issued at `pc` completes: one arrival on the barrier at
    /// offset `bar` of each CTA of `ranks`, published as what this CTA's tensor pipe has run
    /// (in another CTA, an arrival by this CTA's unit, [`Actor::Remote`]). A pair leader's pipe
    /// also ran in the odd CTA of its pair (pair MMAs): the arrival publishes that part too,
    /// and in the odd CTA it is the arrival of that pipe ([`Actor::PeerPipe`]).
    pub(super) fn commit_multicast(&mut self, pc: usize, bar: u32, ranks: &[usize]) -> Result<(), Error> {
        let me = self.rank;
        let sid = self.ids[me];
        let mut views = vec![(sid, self.hb.as_ref().map(|h| h.pipe_clock()).unwrap_or_default())];
        if me.is_multiple_of(2) && me + 1 < self.cluster_size() {
            self.switch(me + 1);
            if let Some(c) = self.hb.as_ref().and_then(|hb| hb.peer_pipe_clock(sid)) {
                views.push((self.ids[me + 1], c));
            }
            self.switch(me);
        }
        for &r in ranks {
            self.switch(r);
            let who = if r == me {
                Actor::Pipe
            } else {
                let rid = self.ids[r];
                let others: Vec<(u32, VClock)> = views.iter().filter(|(id, _)| *id != rid).cloned().collect();
                match &mut self.hb {
                    Some(hb) => {
                        hb.bar_remote(bar, &others);
                        if hb.has_peer_pipe(sid) {
                            Actor::PeerPipe { cta: sid }
                        } else {
                            Actor::Remote { pc: pc as u32 }
                        }
                    }
                    None => Actor::Remote { pc: pc as u32 },
                }
            };
            self.unit_delivers((bar, pc), who, None)?;
        }
        self.switch(me);
        Ok(())
    }

    /// `clusterlaunchcontrol.try_cancel` at `pc` by the lanes `group` of warp `w`: the launch
    /// of the next cluster that has not started is cancelled now (clusters start in grid
    /// order, one after the other), and the response ([`crate::exec::clc_encode`]) lands
    /// after a latency at `dst` of this CTA, or of every CTA of the cluster with `multicast`,
    /// completing 16 bytes on the barrier at `bar` there.
    pub(super) fn clc_try_cancel(
        &mut self,
        w: usize,
        pc: usize,
        (dst, bar, multicast): (&MemRef, &MemRef, bool),
        group: &[usize],
    ) -> Result<(), Error> {
        for &t in group {
            let d = self.shared_addr(t, dst, pc)?;
            let b = self.shared_addr(t, bar, pc)?;
            if d as usize + 16 > self.cta.shared.len() {
                return Err(self.rt(
                    pc,
                    format!("the 16-byte response at shared byte {d} reaches past the CTA's shared memory"),
                ));
            }
            let response = crate::exec::clc_encode(self.clc.cancel());
            let op = self.hb.as_mut().map_or(0, |hb| hb.issue(w, pc as u32));
            let ranks: Vec<usize> = if multicast {
                (0..self.cluster_size()).collect()
            } else {
                vec![self.rank]
            };
            for r in ranks {
                let work = Work::Clc {
                    op,
                    bar: b,
                    pc,
                    dst: d,
                    response,
                };
                self.multicast_to(w, r, pc, work);
            }
        }
        Ok(())
    }

    /// A `clusterlaunchcontrol.try_cancel` response (checker op `op`, issued at `pc`) lands at
    /// shared byte `dst`, then completes 16 bytes on the barrier at `bar`.
    pub(super) fn land_clc(
        &mut self,
        op: u32,
        (bar, pc, dst): (u32, usize, u32),
        response: u64,
    ) -> Result<(), Error> {
        if let Some(hb) = &mut self.hb {
            let addrs: Vec<(u32, u32)> = (0..4).map(|k| (dst + 4 * k, 0)).collect();
            if let Some(h) = hb.clc_response(op, bar, &addrs, 32) {
                self.report(&h);
            }
        }
        let d = dst as usize;
        self.cta.shared[d..d + 8].copy_from_slice(&response.to_le_bytes());
        self.cta.shared[d + 8..d + 16].fill(0);
        for k in 0..4 {
            let g = (dst + 4 * k) / bwsim_sim::check::hazards::SMEM_GRANULE;
            self.last_store.remove(&g);
        }
        self.unit_delivers((bar, pc), Actor::Tma, Some(16))
    }
}

/// Cluster launch control across a launch: clusters start in grid order, one after the other;
/// a cancel takes the next cluster that has not started.
#[derive(Default)]
pub(super) struct Clc {
    /// Clusters started or cancelled (the first `started` in grid order).
    started: u64,
    /// The launch's clusters.
    total: u64,
    /// The launch's grid and cluster shapes.
    grid: [u32; 3],
    cluster: [u32; 3],
}

impl Clc {
    pub(super) fn new(l: &crate::exec::Launch) -> Clc {
        let c = l.cluster.map(|x| x.max(1));
        Clc {
            started: 0,
            total: (0..3).map(|i| l.grid[i].div_ceil(c[i]) as u64).product(),
            grid: l.grid,
            cluster: c,
        }
    }

    /// The index in grid order of the cluster whose first CTA is `ctaid`.
    fn index(&self, ctaid: [u32; 3]) -> u64 {
        let n = [0, 1, 2].map(|i| self.grid[i].div_ceil(self.cluster[i]) as u64);
        let c = [0, 1, 2].map(|i| (ctaid[i] / self.cluster[i]) as u64);
        c[0] + n[0] * (c[1] + n[1] * c[2])
    }

    /// The cluster whose first CTA is `ctaid` starts, unless it was cancelled (`false`).
    pub(super) fn start(&mut self, ctaid: [u32; 3]) -> bool {
        let k = self.index(ctaid);
        if k < self.started {
            return false;
        }
        self.started = k + 1;
        true
    }

    /// Cancels the next cluster that has not started: its first CTA id, or `None` once every
    /// cluster has started.
    fn cancel(&mut self) -> Option<[u32; 3]> {
        if self.started >= self.total {
            return None;
        }
        let k = self.started;
        self.started += 1;
        let n = [0, 1, 2].map(|i| self.grid[i].div_ceil(self.cluster[i]) as u64);
        let c = [k % n[0], (k / n[0]) % n[1], k / (n[0] * n[1])];
        Some([0, 1, 2].map(|i| c[i] as u32 * self.cluster[i]))
    }
}
