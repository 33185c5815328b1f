//! The hazard checker's hooks in the functional machine: turning hazards into diagnostics,
//! the global-memory shadow's accesses, uninitialised reads of shared and tensor memory, phase
//! aliasing of mbarrier waits, and the cluster-exit check.

use super::*;

impl<'p, 's> Machine<'p, 's> {
    /// The checker state of CTA slot `s`, when checking.
    pub(super) fn hb(&mut self, s: usize) -> Option<&mut CtaHb> {
        self.slots[s].as_mut()?.hb.as_deref_mut()
    }

    /// Record a checker diagnostic once per run (by code and spans).
    pub(super) fn report(&mut self, d: Diagnostic) {
        const MAX_REPORTS: usize = 64;
        let second = d.labels.first().map(|l| l.span.start).unwrap_or(u32::MAX);
        if self.reported.len() < MAX_REPORTS && self.reported.insert((d.code, d.primary.span.start, second)) {
            self.diags.push(d);
        }
    }

    /// Turn a hazard found in CTA slot `s` into a diagnostic.
    pub(super) fn hazard(&mut self, s: usize, h: Option<Hazard>, tmem: bool) {
        let Some(h) = h else { return };
        let Some(c) = self.slots[s].as_ref() else { return };
        let Some(hb) = c.hb.as_deref() else { return };
        let (cta, rank) = (c.id, c.rank);
        let trace = &self.trace;
        let name = |p: u32| trace.unit_name(cta, Unit::Agent(p));
        let mut d = hb.describe(&h, self.prog, &name, cta, tmem);
        if hb.involves_peer(&h) {
            d = d.with_note(format!(
                "the memory is CTA {cta}'s (rank {rank} of its cluster); another CTA's access to it (distributed shared memory, a multicast copy, a pair MMA) is ordered only by a release/acquire cluster barrier (`cluster.arrive` + `cluster.wait`), or by an arrival of that CTA on a barrier this CTA waits on (a remote `mbar.arrive ..., cta=R`, a multicast or pair `tcgen05.commit`)"
            ));
        }
        self.report(d);
    }

    /// A buffer for the element offsets an access of tensor `t` touches, when the checker
    /// shadows that tensor.
    pub(super) fn global_seen(&self, t: u32) -> Option<Vec<u64>> {
        self.global_hb
            .as_ref()
            .is_some_and(|g| g.tracked(t))
            .then(Vec::new)
    }

    /// Partition `a` of CTA slot `s` accesses elements `elems` of tensor `t` (an atomic when
    /// `order` gives its semantics and scope): checked and recorded in the global shadow; an
    /// acquiring atomic teaches the partition what the releases it observes published.
    pub(super) fn global_part_access(
        &mut self,
        s: usize,
        a: usize,
        t: u32,
        kind: Kind,
        order: Option<(Sem, Scope)>,
        elems: Vec<(u64, bool)>,
    ) {
        let pc = self.cur_pc;
        let Some(acc) = self.hb(s).and_then(|h| h.part_accessor(a, pc)) else {
            return;
        };
        let c = self.cta(s);
        let at = Place {
            cta: c.id,
            cluster: c.cluster,
        };
        let release = order
            .filter(|(sem, _)| sem.releases())
            .map(|(_, scope)| SyncEntry {
                from: at,
                scope,
                views: std::iter::once((at.cta, acc.own.clone()))
                    .chain(acc.remote.iter().map(|(k, v)| (*k, v.clone())))
                    .collect(),
            });
        let sync = Sync {
            release: release.as_ref(),
            acquire: order
                .filter(|(sem, _)| sem.acquires())
                .map(|(_, scope)| (at, scope)),
        };
        let learnt = self.global_access(s, t, &acc, (kind, order.is_some(), Proxy::Generic), elems, sync);
        if !learnt.is_empty() {
            if let Some(hb) = self.hb(s) {
                hb.acquire_global(a, at.cta, &learnt);
            }
        }
    }

    /// Check and record the access `(kind, atomic, proxy)` of agent `acc` of CTA slot `s` over
    /// elements `elems` of tensor `t`; a race becomes a `global-race` diagnostic. Returns what
    /// an acquire learnt, by CTA id.
    pub(super) fn global_access(
        &mut self,
        s: usize,
        t: u32,
        acc: &Accessor,
        (kind, atomic, proxy): (Kind, bool, Proxy),
        elems: impl IntoIterator<Item = (u64, bool)>,
        sync: Sync,
    ) -> BTreeMap<u32, VClock> {
        let mut learnt = BTreeMap::new();
        let Some(cta) = self.slots[s].as_ref().map(|c| c.id) else {
            return learnt;
        };
        let Some(g) = self.global_hb.as_mut() else {
            return learnt;
        };
        g.name_agent(cta, acc.agent, acc.comp);
        let h = g.access(t, elems, &acc.access(cta, kind, atomic, proxy), sync, &mut learnt);
        if let (Some(h), Some(g)) = (h, self.global_hb.as_ref()) {
            let trace = &self.trace;
            let name = |c: u32, p: u32| trace.unit_name(c, Unit::Agent(p));
            if let Some(tensor) = self.global.get(h.tensor as usize) {
                let d = g.describe(&h, self.prog, tensor, &name, self.cluster_size);
                self.report(d);
            }
        }
        learnt
    }

    /// An uninitialised read by the op at instruction `pc`: `what` says which bytes.
    pub(super) fn uninit(&mut self, pc: u32, what: String) {
        let Some(i) = self.prog.code.get(pc as usize) else {
            return;
        };
        let name = match &i.kind {
            IKind::Op { name, .. } => *name,
            _ => "this operation",
        };
        let d = diagnostics::uninit_read(name, &what, i.span);
        self.report(d);
        // The read's result is undefined; an MMA or a TMA store reads the bytes as an operand
        // or copies them to global memory itself.
        self.undef_now = Some(pc);
        match &i.kind {
            IKind::Op {
                op: LOp::Mma { .. } | LOp::Op(K::Wgmma { .. }),
                ..
            } => self.reached.add(pc, Sink::MmaOperand, pc),
            IKind::Op {
                op: LOp::TmaStore { .. },
                ..
            } => self.reached.add(pc, Sink::GlobalStore, pc),
            _ => {}
        }
    }

    /// `cluster-exit`: the CTA in slot `s`, whose cluster is leaving, against every peer
    /// access to its shared memory that its exit is not known to follow.
    pub(super) fn check_cluster_exit(&mut self, s: usize) {
        let Some(c) = self.slots[s].as_ref() else { return };
        let Some(hb) = c.hb.as_deref() else { return };
        let (owner, owner_rank) = (c.id, c.rank);
        for (peer, rank, pc) in hb.peers_unordered_at_exit() {
            let Some(i) = self.prog.code.get(pc as usize) else {
                continue;
            };
            let name = match &i.kind {
                IKind::Op { name, .. } => *name,
                _ => "an access",
            };
            let d = diagnostics::cluster_exit(name, i.span, peer, rank, owner, owner_rank);
            self.report(d);
        }
    }

    /// The checker's record of a generic-proxy access `kind` by partition `a` of slot `s` to
    /// the shared elements `addrs` (`eb` bits each) at the current instruction, and the hazard it
    /// finds; a read also checks that the elements were written.
    pub(super) fn generic_smem_access(
        &mut self,
        s: usize,
        a: usize,
        kind: Kind,
        addrs: &[(u32, u32)],
        eb: u32,
    ) {
        let pc = self.cur_pc;
        if kind == Kind::Read {
            self.check_smem_init(s, pc, addrs);
        }
        let h = self.hb(s).and_then(|hb| hb.generic_smem(a, pc, kind, addrs, eb));
        self.hazard(s, h, false);
    }

    /// The elements of the shared view `v` in slot `s`, read by partition `a` through the
    /// generic proxy (and checked as such a read).
    pub(super) fn read_smem_view(&mut self, s: usize, a: usize, v: &SmemView) -> OpResult<Vec<u64>> {
        let (addrs, bits) = self.smem_view_elems(s, v)?;
        if self.opts.check {
            self.generic_smem_access(s, a, Kind::Read, &addrs, v.dtype.bits());
        }
        Ok(bits)
    }

    /// The shared addresses of the view `v` and its elements in slot `t`'s shared memory
    /// (unchecked: the caller records the access).
    pub(super) fn smem_view_elems(&mut self, t: usize, v: &SmemView) -> OpResult<(ViewAddrs, Vec<u64>)> {
        let addrs = views::view_addresses(v)
            .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
        let mut bits = Vec::with_capacity(addrs.len());
        self.cta(t).smem.read_elems(&addrs, v.dtype.bits(), &mut bits)?;
        Ok((addrs, bits))
    }

    /// Check that shared-memory elements were written before a read.
    pub(super) fn check_smem_init(&mut self, s: usize, pc: u32, addrs: &[(u32, u32)]) {
        if self.opts.check {
            let c = self.cta(s);
            let stored = c.smem_undef.origin(addrs, 1);
            if let Some(a) = c.smem.first_unwritten(addrs) {
                let w = match self.prog.smem_names(a).first() {
                    Some((n, off)) => format!("`{n}` (shared byte {a}, byte {off} of the buffer)"),
                    None => format!("shared byte {a}"),
                };
                self.uninit(pc, w);
            } else if let Some(o) = stored {
                // Bytes an undefined value was stored to: no new warning, the origin's.
                self.undef_now = Some(o);
                if let Some(IKind::Op { op, .. }) = self.prog.code.get(pc as usize).map(|i| &i.kind) {
                    match op {
                        LOp::Mma { .. } | LOp::Op(K::Wgmma { .. }) => {
                            self.reached.add(o, Sink::MmaOperand, pc)
                        }
                        LOp::TmaStore { .. } => self.reached.add(o, Sink::GlobalStore, pc),
                        _ => {}
                    }
                }
            }
        }
    }

    /// Phase aliasing: partition `a` waits (at instruction `pc`) with `parity` on the barrier
    /// at `addr`, now in `phase`.
    pub(super) fn check_aliasing_at(
        &mut self,
        s: usize,
        a: usize,
        pc: u32,
        addr: u32,
        phase: u64,
        parity: u32,
    ) {
        let Some(c) = self.slots[s].as_ref() else { return };
        let Some(hb) = c.hb.as_deref() else { return };
        let Some(al) = hb.aliasing(a, addr, phase, parity) else {
            return;
        };
        let prog = self.prog;
        let who = self.trace.unit_name(c.id, Unit::Agent(a as u32));
        let bar = prog.mbar_name(addr);
        let span = prog.code.get(pc as usize).map(|i| i.span).unwrap_or(Span::DUMMY);
        let d = diagnostics::phase_aliasing(
            |i| prog.code.get(i as usize).map_or(Span::DUMMY, |c| c.span),
            &al,
            &who,
            &bar,
            span,
            phase,
            parity,
        );
        self.report(d);
    }

    /// Phase aliasing for a wait being executed now.
    pub(super) fn check_aliasing(&mut self, s: usize, a: usize, addr: u32, phase: u64, parity: u32) {
        let pc = self.cur_pc;
        self.check_aliasing_at(s, a, pc, addr, phase, parity);
    }

    /// Phase aliasing for the partitions blocked on the barrier at `addr`, which just moved to
    /// `phase` (a waiter that is not scheduled in time may miss a phase).
    pub(super) fn check_blocked_aliasing(&mut self, s: usize, addr: u32, phase: u64) {
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
    pub(super) fn check_tmem_init(&mut self, s: usize, pc: u32, cells: &[(u32, u32)]) {
        let Some(hb) = self.hb(s) else { return };
        if let Some(&(lane, col)) = cells.iter().find(|&&(l, c)| !hb.tmem_written(l, c)) {
            self.uninit(pc, format!("tensor memory (lane {lane}, column {col})"));
        }
    }
}
