//! Asynchronous completions: timed events of the TMA units (load pieces, store reads and
//! writes), the tensor pipe's in-order operations, and mbarrier actions and transaction
//! deliveries.

use super::*;

impl<'p, 's> Machine<'p, 's> {
    pub(super) fn fire(&mut self, ev: Ev) -> Result<(), Stop> {
        let s = ev.slot as usize;
        self.cta(s).events = self.cta(s).events.saturating_sub(1);
        match ev.kind {
            EvKind::TmaPiece { op, lo, hi } => self.fire_tma_piece(s, op, lo, hi),
            EvKind::StoreRead { op } => self.fire_store_read(s, op),
            EvKind::StoreWrite { op } => self.fire_store_write(s, op),
            EvKind::PipeDone => self.fire_pipe(s),
            EvKind::CpAsyncLand(land) => self.fire_cp_async(s, *land),
            EvKind::Clc(req) => self.fire_clc(s, *req),
            EvKind::WgmmaDone { agent, id } => {
                let c = self.cta(s);
                let cta_id = c.id;
                let ag = &mut c.agents[agent as usize];
                ag.wgmma_pending = ag.wgmma_pending.saturating_sub(1);
                self.ev_complete(cta_id, Unit::Agent(agent), "wgmma", id, Span::DUMMY);
                Ok(())
            }
        }
    }

    /// A `cp.async` lands: its elements are written to shared memory (and checked), and its
    /// group has one copy fewer in flight.
    fn fire_cp_async(&mut self, s: usize, land: CpLand) -> Result<(), Stop> {
        let cta_id = self.cta(s).id;
        if self.opts.check {
            let addrs: Vec<(u32, u32)> = land.writes.iter().map(|&(a, sh, _)| (a, sh)).collect();
            let h = self
                .hb(s)
                .and_then(|hb| hb.cp_async_land(land.hb, land.agent, land.time, &addrs, land.bits));
            self.hazard(s, h, false);
        }
        let c = self.cta(s);
        let mut r = Ok(());
        for &(addr, shift, b) in &land.writes {
            r = c.smem.write(addr, shift, land.bits, b);
            if r.is_err() {
                break;
            }
        }
        r.map_err(|f| self.fault_stop(f, land.span, cta_id, Unit::Agent(land.agent), "cp.async"))?;
        let ag = &mut self.cta(s).agents[land.agent as usize];
        if let Some(n) = ag.cp_pending.get_mut(&land.group) {
            *n -= 1;
            if *n == 0 {
                ag.cp_pending.remove(&land.group);
            }
        }
        ag.cp_inflight.remove(&land.seq);
        self.ev_complete(cta_id, Unit::Agent(land.agent), "cp.async", land.id, land.span);
        let a = land.agent as usize;
        self.cp_arrivals(s, a)
            .map_err(|f| self.fault_stop(f, land.span, cta_id, Unit::Agent(land.agent), "cp.async.arrive"))
    }

    /// The arrivals of partition `a`'s `cp.async.arrive`s whose earlier copies have all
    /// landed, in issue order (a later one waits for at least the copies an earlier one does).
    pub(super) fn cp_arrivals(&mut self, s: usize, a: usize) -> OpResult<()> {
        loop {
            let ag = &mut self.cta(s).agents[a];
            let Some(front) = ag.cp_arrives.front() else {
                return Ok(());
            };
            if ag.cp_inflight.range(..front.before).next().is_some() {
                return Ok(());
            }
            let Some(arr) = ag.cp_arrives.pop_front() else {
                return Ok(());
            };
            let who = Actor::CpArrive {
                op: arr.hb,
                upto: arr.upto,
            };
            self.bar_act(
                s,
                Unit::Agent(a as u32),
                arr.span,
                arr.addr,
                BarAct::Arrive(arr.count),
                Some(who),
            )?;
        }
    }

    /// A `clc.try_cancel` response lands: the launch of the next cluster that has not started
    /// is cancelled (CTAs start in grid order, so that is the one `admit` would start next),
    /// its first program id written as the response, or a response that cancelled nothing
    /// once every cluster has started; then 16 bytes complete on the barrier.
    ///
    /// The response's 16 bytes are opaque on hardware; bwsim writes four little-endian words:
    /// 1 if a launch was cancelled (else 0), then that launch's program id x, y, z.
    fn fire_clc(&mut self, s: usize, req: ClcReq) -> Result<(), Stop> {
        let cta_id = self.cta(s).id;
        let cs = self.cluster_size as u64;
        let words: [u32; 4] = if self.next_cta < self.total_ctas {
            let first = self.next_cta;
            self.next_cta += cs;
            self.counters.ctas_canceled += cs.min(self.total_ctas - first);
            let (gx, gy) = (self.grid[0].max(1) as u64, self.grid[1].max(1) as u64);
            [
                1,
                (first % gx) as u32,
                ((first / gx) % gy) as u32,
                (first / (gx * gy)) as u32,
            ]
        } else {
            [0; 4]
        };
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let eb = req.elem_bits as usize;
        for d in &req.dests {
            let t = d.slot as usize;
            // A multicast destination whose cluster left (it cannot: clusters leave together).
            if self.slots[t].is_none() {
                continue;
            }
            if self.opts.check {
                let h = self
                    .hb(t)
                    .and_then(|hb| hb.clc_response(d.hb, req.bar, &req.addrs, req.elem_bits));
                self.hazard(t, h, false);
            }
            let c = self.cta(t);
            let mut r = Ok(());
            for (i, &(addr, shift)) in req.addrs.iter().enumerate() {
                let mut v = 0u64;
                for b in 0..eb / 8 {
                    let byte = bytes.get(i * eb / 8 + b).copied().unwrap_or(0);
                    v |= (byte as u64) << (8 * b);
                }
                r = c.smem.write(addr, shift, req.elem_bits, v);
                if r.is_err() {
                    break;
                }
            }
            r.map_err(|f| self.fault_stop(f, req.span, cta_id, Unit::Tma, req.name))?;
            self.deliver_tx(t, req.span, req.bar, 16, d.phase, None)
                .map_err(|f| self.fault_stop(f, req.span, cta_id, Unit::Tma, req.name))?;
        }
        self.ev_complete(cta_id, Unit::Tma, req.name, req.id, req.span);
        Ok(())
    }

    pub(super) fn tma_op(&mut self, s: usize, op: u32) -> TmaOp {
        // Cannot fail: a TMA op is freed only after its last event fired.
        self.cta(s).tma[op as usize].clone().expect("live TMA op")
    }

    pub(super) fn fire_tma_piece(&mut self, s: usize, opi: u32, lo: u64, hi: u64) -> Result<(), Stop> {
        let op = self.tma_op(s, opi);
        let prog = self.prog;
        let desc = op.desc_info(prog);
        let cta_id = self.cta(s).id;
        if self.opts.check {
            let (e0, e1) = match &op.kind {
                TmaKind::Gather { xs, .. } => {
                    let inner = desc.block.last().copied().unwrap_or(1) as u64;
                    (lo * 4 * inner, (hi * 4).min(xs.len() as u64) * inner)
                }
                TmaKind::Load { msgs } => {
                    let inner = msgs.boxd.last().copied().unwrap_or(1) as u64;
                    (lo * inner, hi * inner)
                }
                _ => (0, 0),
            };
            let n = op.addrs.len() as u64;
            let range = (e0.min(n) as usize)..(e1.min(n) as usize);
            let bits = desc.dtype.bits();
            for (i, d) in op.dests.iter().enumerate() {
                let t = d.slot as usize;
                let h = self
                    .hb(t)
                    .and_then(|hb| hb.tma_piece(d.hb, op.bar, &op.addrs[range.clone()], bits));
                self.hazard(t, h, false);
                // The piece reads global memory once (a multicast too): as the first
                // destination's copy.
                let tracked = self.global_hb.as_ref().is_some_and(|g| g.tracked(desc.tensor));
                if i == 0 && tracked {
                    let mut ranges = Vec::new();
                    match &op.kind {
                        TmaKind::Load { msgs } => tma::load_ranges(desc, msgs, lo..hi, &mut ranges),
                        TmaKind::Gather { xs, col } => {
                            tma::gather_ranges(desc, xs, *col, lo..hi, &mut ranges)
                        }
                        _ => {}
                    }
                    if let Some(acc) = self.hb(t).and_then(|hb| hb.piece_accessor()) {
                        self.tma_global_access(t, desc.tensor, &acc, (Kind::Read, false), ranges);
                    }
                }
            }
        }
        let mut read_once = false;
        for d in &op.dests {
            let (t, bt) = (d.slot as usize, d.bar_slot as usize);
            // A multicast destination whose cluster left (it cannot: clusters leave together).
            let Some(slot) = self.slots[t].as_mut() else {
                continue;
            };
            let g = &self.global[desc.tensor as usize];
            let r = match &op.kind {
                TmaKind::Load { msgs } => tma::load_msgs(desc, msgs, g, &mut slot.smem, &op.addrs, lo..hi),
                TmaKind::Gather { xs, col } => {
                    tma::gather_msgs(desc, xs, *col, g, &mut slot.smem, &op.addrs, lo..hi)
                }
                _ => Ok(0),
            };
            let bytes = r.map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tma, op.name))?;
            // A multicast reads global memory once.
            if !std::mem::replace(&mut read_once, true) {
                self.counters.tma_bytes += bytes;
            }
            let dst_id = self.cta(t).id;
            self.ev(
                dst_id,
                Unit::Tma,
                What::Piece {
                    op: op.name,
                    id: op.id,
                    bytes,
                },
                op.span,
            );
            let who = if bt != t {
                // The bytes complete on the pair leader's barrier: what the copy wrote here is
                // published to its waiters as knowledge of this CTA.
                if self.opts.check {
                    let view = self.hb(t).map(|h| h.piece_clock()).unwrap_or_default();
                    if let Some(hb) = self.hb(bt) {
                        hb.bar_remote(op.bar, &[(dst_id, view)]);
                    }
                }
                let pc = self.hb(s).map(|h| h.op_instr(op.hb)).unwrap_or(0);
                Some(Actor::Remote { pc })
            } else {
                None
            };
            self.deliver_tx(bt, op.span, op.bar, bytes, d.phase, who)
                .map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tma, op.name))?;
        }
        let left = {
            // Cannot fail: a TMA op is freed only after its last event fired.
            let o = self.cta(s).tma[opi as usize].as_mut().expect("live TMA op");
            o.left -= 1;
            o.left
        };
        if left == 0 {
            self.ev_complete(cta_id, Unit::Tma, op.name, op.id, op.span);
            let c = self.cta(s);
            c.tma[opi as usize] = None;
            c.tma_free.push(opi);
        }
        Ok(())
    }

    /// A TMA transfer's access, through the async proxy, of the elements `ranges` of global
    /// tensor `tensor` (`kind` and whether atomic), for slot `s`'s checker.
    fn tma_global_access(
        &mut self,
        s: usize,
        tensor: u32,
        acc: &Accessor,
        (kind, atomic): (Kind, bool),
        ranges: Vec<std::ops::Range<u64>>,
    ) {
        let elems = ranges.into_iter().flatten().map(|e| (e, false));
        self.global_access(
            s,
            tensor,
            acc,
            (kind, atomic, Proxy::Async),
            elems,
            Sync::default(),
        );
    }

    pub(super) fn fire_store_read(&mut self, s: usize, opi: u32) -> Result<(), Stop> {
        let op = self.tma_op(s, opi);
        let prog = self.prog;
        let desc = op.desc_info(prog);
        let cta_id = self.cta(s).id;
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        let slot = self.slots[s].as_ref().expect("live CTA slot");
        let mut read = Vec::new();
        let r = match &op.kind {
            TmaKind::Store { msgs, .. } => tma::store_msgs(desc, msgs, &slot.smem, &op.addrs, &mut read),
            TmaKind::Scatter { xs, col, .. } => {
                tma::scatter_read(desc, xs, *col, &slot.smem, &op.addrs, &mut read)
            }
            _ => Ok(tma::StoreData::default()),
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

    pub(super) fn fire_store_write(&mut self, s: usize, opi: u32) -> Result<(), Stop> {
        // The store's last event: the op leaves its slot here (its data is not copied).
        // Cannot fail: a TMA op is freed only after its last event fired.
        let op = self.cta(s).tma[opi as usize].take().expect("live TMA op");
        let prog = self.prog;
        let desc = op.desc_info(prog);
        if let TmaKind::Store { data, .. } | TmaKind::Scatter { data, .. } = &op.kind {
            let g = &self.global[desc.tensor as usize];
            if self.global_hb.as_ref().is_some_and(|gh| gh.tracked(desc.tensor)) {
                let mut ranges = Vec::new();
                data.elem_ranges(desc.dtype.bits(), g.numel(), &mut ranges);
                if let Some(acc) = self.hb(s).and_then(|hb| hb.store_write(op.hb, op.agent)) {
                    // A reducing store is an atomic write of each element it reaches.
                    let atomic = matches!(op.kind, TmaKind::Store { reduce: Some(_), .. });
                    self.tma_global_access(s, desc.tensor, &acc, (Kind::Write, atomic), ranges);
                }
            }
        }
        match &op.kind {
            TmaKind::Store {
                data,
                reduce: Some(r),
                ..
            } => tma::global_reduce(&mut self.global[desc.tensor as usize], data, *r, desc.dtype),
            TmaKind::Store { data, .. } | TmaKind::Scatter { data, .. } => {
                tma::global_write(&mut self.global[desc.tensor as usize], data)
            }
            _ => {}
        }
        let cta_id = self.cta(s).id;
        self.ev_complete(cta_id, Unit::Tma, op.name, op.id, op.span);
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
        c.tma_free.push(opi);
        Ok(())
    }

    pub(super) fn pipe_kick(&mut self, s: usize) {
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
        if self.opts.mma_exec.ahead && self.opts.mma_exec.memo.is_none() {
            // Cannot fail: `s` is the live slot just read.
            let c = self.slots[s].as_ref().expect("live CTA slot");
            if let Some(PipeKind::Mma(m)) = c.pipe.front().map(|f| &f.kind) {
                let worker = self.ahead_worker.get_or_insert_with(mma::AheadWorker::new);
                let (arith, threads) = (&self.opts.mma.tcgen05, self.opts.mma_exec.threads);
                if let Some(a) = worker.start(&c.smem, &c.tmem, m, arith, threads) {
                    self.ahead.insert((s, id), a);
                }
            }
        }
        let delay = self.sched.latency(kind);
        self.schedule(s, delay, EvKind::PipeDone);
        self.ev(cta_id, Unit::Tc, What::Start { op: name, id }, span);
    }

    pub(super) fn fire_pipe(&mut self, s: usize) -> Result<(), Stop> {
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
                let ahead = self.ahead.remove(&(s, op.id));
                mma::mma(
                    &c.smem,
                    &mut c.tmem,
                    m,
                    &self.opts.mma.tcgen05,
                    &self.opts.mma_exec,
                    ahead,
                )
            }
            PipeKind::MmaPair { op: m, peer, .. } => {
                self.counters.mmas += 1;
                let peer = *peer as usize;
                // The leader's slot precedes its peer's (same slot group, rank order).
                let (lo, hi) = self.slots.split_at_mut(peer);
                match (lo[s].as_mut(), hi[0].as_mut()) {
                    (Some(l), Some(p)) => mma::mma_pair(
                        [&l.smem, &p.smem],
                        [&mut l.tmem, &mut p.tmem],
                        m,
                        &self.opts.mma.tcgen05,
                        &self.opts.mma_exec,
                    ),
                    _ => Err(Fault::unsupported(
                        "the peer CTA of a cta_group::2 MMA is not resident",
                    )),
                }
            }
            PipeKind::Cp { src, dst } => mma::cp(&c.smem, &mut c.tmem, src, dst),
            PipeKind::Commit { .. } => Ok(()),
        };
        r.map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tc, op.name))?;
        self.ev_complete(cta_id, Unit::Tc, op.name, op.id, op.span);
        if let PipeKind::Commit { bar, own, peers } = &op.kind {
            // An arrival on a barrier invalidated while it was in flight names the commit.
            let late = |f: Fault| match f {
                Fault::Error {
                    code: Code::BarrierMisuse,
                    label: Some((at, l)),
                    ..
                } => diagnostics::arrival_after_invalidate(*bar, "this `tcgen05.commit`").with_label(at, l),
                f => f,
            };
            if *own {
                self.bar_act(s, Unit::Tc, op.span, *bar, BarAct::Arrive(1), None)
                    .map_err(late)
                    .map_err(|f| self.fault_stop(f, op.span, cta_id, Unit::Tc, op.name))?;
            }
            let pc = self.hb(s).map(|h| h.op_instr(op.hb)).unwrap_or(0);
            let mut views = vec![(cta_id, self.hb(s).map(|h| h.pipe_clock()).unwrap_or_default())];
            // A pair leader's pipe also ran in its pair peer (the next slot): the arrival
            // publishes that part too, so that a CTA of another pair that hears of the commit
            // knows the pair MMAs are done with the peer's halves (and what their issue knew of
            // the peer: the copies that landed there).
            let pair_peer = self.slots.get(s + 1).and_then(|x| x.as_ref()).and_then(|c| {
                let hb = c.hb.as_deref()?;
                Some((c.id, hb.peer_pipe_clock(cta_id)?))
            });
            if let Some(v) = pair_peer {
                views.push(v);
            }
            for &p in peers {
                let p = p as usize;
                let Some(c) = self.slots[p].as_mut() else { continue };
                let pid = c.id;
                // The arrival publishes what this CTA's pipe has run; in a pair peer it also
                // releases the pair MMAs' accesses to the peer's own memory.
                let who = c.hb.as_deref_mut().map(|hb| {
                    let others: Vec<(u32, VClock)> =
                        views.iter().filter(|(id, _)| *id != pid).cloned().collect();
                    hb.bar_remote(*bar, &others);
                    if hb.has_peer_pipe(cta_id) {
                        Actor::PeerPipe { cta: cta_id }
                    } else {
                        Actor::Remote { pc }
                    }
                });
                self.bar_act(p, Unit::Tc, op.span, *bar, BarAct::Arrive(1), who)
                    .map_err(late)
                    .map_err(|f| self.fault_stop(f, op.span, pid, Unit::Tc, op.name))?;
            }
        }
        self.pipe_kick(s);
        Ok(())
    }

    /// The checker's view of a tensor-pipe op about to run: its operand reads and its writes.
    pub(super) fn check_pipe_op(&mut self, s: usize, op: &PipeOp) {
        let Some(hb) = self.hb(s) else { return };
        hb.pipe_exec(op.hb);
        let pc = hb.op_instr(op.hb);
        let smem_read = |m: &mut Self, v: &SmemView| {
            if let Some(addrs) = views::view_addresses(v) {
                m.check_smem_init(s, pc, &addrs);
                let h = m
                    .hb(s)
                    .and_then(|hb| hb.pipe_smem(op.hb, Kind::Read, &addrs, v.dtype.bits()));
                m.hazard(s, h, false);
            }
        };
        let tmem = |m: &mut Self, v: &TmemView, kind: Kind| {
            let cells = views::tmem_view_copies(v);
            if kind == Kind::Read {
                m.check_tmem_init(s, pc, &cells);
            }
            let h = m.hb(s).and_then(|hb| hb.pipe_tmem(op.hb, kind, &cells));
            m.hazard(s, h, true);
        };
        match &op.kind {
            // A pair MMA reads and writes this CTA's halves here, the peer's halves (at the same
            // offsets) in the peer's state below.
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
        // The pair's odd CTA: the leader's pipe reads its halves of A and B and reads and
        // writes its half of the accumulator, checked in its own state.
        if let PipeKind::MmaPair { op: m, peer, peer_hb } = &op.kind {
            let t = *peer as usize;
            let (sid, rank) = (self.cta(s).id, self.cta(s).rank);
            if let Some(hb) = self.hb(t) {
                hb.peer_pipe_exec(sid, rank, *peer_hb);
            }
            let mut smem: Vec<&SmemView> = vec![&m.b];
            if let AOperand::Smem(v) = &m.a {
                smem.insert(0, v);
            }
            for v in smem {
                if let Some(addrs) = views::view_addresses(v) {
                    self.check_smem_init(t, pc, &addrs);
                    let h = self
                        .hb(t)
                        .and_then(|hb| hb.peer_pipe_smem(sid, Kind::Read, &addrs, v.dtype.bits()));
                    self.hazard(t, h, false);
                }
            }
            let cells = views::tmem_view_copies(&m.acc);
            if m.use_acc {
                self.check_tmem_init(t, pc, &cells);
                let h = self
                    .hb(t)
                    .and_then(|hb| hb.peer_pipe_tmem(sid, Kind::Read, &cells));
                self.hazard(t, h, true);
            }
            let h = self
                .hb(t)
                .and_then(|hb| hb.peer_pipe_tmem(sid, Kind::Write, &cells));
            self.hazard(t, h, true);
        }
    }

    /// Apply an action to a barrier, tracing arrivals, tx changes and phase flips; released by
    /// `who` where that is not the actor `unit` names (a peer CTA's remote arrival).
    pub(super) fn bar_act(
        &mut self,
        s: usize,
        unit: Unit,
        span: Span,
        addr: u32,
        act: BarAct,
        who: Option<Actor>,
    ) -> OpResult<()> {
        // Cannot fail: `s` names a live slot (events, steps and pipe work only exist for resident CTAs, which retire once none is left).
        let c = self.slots[s].as_mut().expect("live CTA slot");
        let cta_id = c.id;
        let b = c.bar(addr)?;
        let flipped = match act {
            BarAct::Arrive(n) => b.arrive(n),
            BarAct::Increment(n) => b.increment(n).map(|()| false),
            BarAct::ExpectTx(n) => b.expect_tx(n),
            BarAct::CompleteTx(n) => b.complete_tx(n),
        }
        .map_err(|e| match e {
            MbarFault::Underflow { .. } => {
                Fault::CodedTrap(Code::OverArrival, CudaError::LaunchFailure, e.reason())
            }
            MbarFault::TxRange { .. } | MbarFault::PendingRange { .. } => {
                Fault::trap(CudaError::LaunchFailure, e.reason())
            }
        })?;
        let b = *b;
        // An increment releases nothing: the arrivals that follow it do.
        if let (Some(hb), false) = (c.hb.as_deref_mut(), matches!(act, BarAct::Increment(_))) {
            let who = who.unwrap_or(match unit {
                Unit::Agent(a) => Actor::Part(a as usize, self.cur_pc),
                Unit::Tma => Actor::Tma,
                Unit::Tc => Actor::Pipe,
            });
            let (arrival, bytes) = match act {
                BarAct::Arrive(_) => (true, 0),
                BarAct::Increment(_) => (false, 0),
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
                BarAct::Increment(n) => What::Increment {
                    bar: addr,
                    count: n,
                    pending: b.pending,
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

    /// TMA bytes reach the barrier in 16-byte granules [docs/semantics.md#transaction-bytes]: when
    /// a delivery would carry a phase whose arrivals are all in past tx = 0, the phase completes at
    /// that point and the surplus counts against the next phase (its tx-count goes negative). Bytes
    /// that land in a later phase than the one current when the copy was issued mean the `expect`
    /// was short: a `tx-mismatch` diagnostic. `who` releases the bytes when they are not this
    /// CTA's own (a copy of another CTA completing here).
    pub(super) fn deliver_tx(
        &mut self,
        s: usize,
        span: Span,
        addr: u32,
        bytes: u64,
        issue_phase: u64,
        who: Option<Actor>,
    ) -> OpResult<()> {
        let mut left = bytes as i64;
        while left > 0 {
            let b = *self.cta(s).bar(addr)?;
            if b.phase > issue_phase {
                let prog = self.prog;
                let bar = prog.mbar_name(addr);
                let mut d = Diagnostic::error(
                    Code::TxMismatch,
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
                    .with_note("the phase completed early (waiters may read bytes that have not landed) and the surplus drives the next phase's tx-count negative (docs/semantics.md#transaction-bytes)")
                    .with_help("expect exactly the bytes the copies deliver: the full box, out-of-bounds part included (`desc.nbytes`)");
                self.report(d);
            }
            let chunk = if b.pending == 0 && b.tx > 0 && b.tx < left && b.tx % 16 == 0 {
                b.tx
            } else {
                left
            };
            self.bar_act(s, Unit::Tma, span, addr, BarAct::CompleteTx(chunk), who)?;
            left -= chunk;
        }
        Ok(())
    }
}
