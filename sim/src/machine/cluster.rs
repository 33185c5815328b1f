//! The machine's cluster side: which slots a cluster rank, a pair or a multicast mask names,
//! where a TMA load lands, another CTA's shared memory and barriers acted on (distributed shared
//! memory, remote arrivals and expects), the split cluster barrier, and the checker's view of all
//! of it (a peer's agent, releases across CTAs, init visibility).

use super::*;
use crate::taint;

/// Whether the CTA of cluster rank `rank` may issue the `cta_group::2` operation `op` in a
/// cluster of `cluster_size` CTAs: the cluster holds whole pairs (ranks `2k, 2k + 1`) and the
/// issuer is a pair's even CTA (docs/semantics.md#clusters-and-cta-pairs). The functional
/// machine and the timing engine apply the same rule.
pub(crate) fn check_pair_issuer(cluster_size: u32, rank: u32, op: &str) -> OpResult<()> {
    if !cluster_size.is_multiple_of(2) {
        return Err(Fault::error(
            Code::CtaPair,
            format!(
                "{op} with cta_group=2 needs clusters of an even number of CTAs (pairs of ranks 2k, 2k + 1), the launch has {cluster_size}"
            ),
        )
        .with_help("add `cluster = [2]` (or 4, 8, 16) to the launch section"));
    }
    if !rank.is_multiple_of(2) {
        return Err(Fault::unsupported(format!(
            "{op} with cta_group=2 issued by the odd CTA of its pair; the simulator models the pair's operations issued by the even CTA, as CUTLASS does"
        )));
    }
    Ok(())
}

/// Whether `rank` names a CTA of a cluster of `cluster_size` (`op` names the operation): a rank
/// outside the cluster is the illegal address it is on hardware.
pub(crate) fn check_cluster_rank(cluster_size: u32, rank: i64, op: &str) -> OpResult<()> {
    if !(0..i64::from(cluster_size)).contains(&rank) {
        return Err(Fault::trap(
            CudaError::IllegalAddress,
            format!("{op} names CTA rank {rank} of a cluster of {cluster_size}"),
        ));
    }
    Ok(())
}

/// Whether the multicast mask `mask` names CTAs of a cluster of `cluster_size` only, and at
/// least one (`op` names the operation).
pub(crate) fn check_cluster_mask(cluster_size: u32, mask: i64, op: &str) -> OpResult<()> {
    if mask <= 0 || mask >= 1i64 << cluster_size {
        return Err(Fault::trap(
            CudaError::IllegalAddress,
            format!(
                "{op} with the CTA mask {mask:#x}, which names no CTA or one outside the cluster of {cluster_size}"
            ),
        ));
    }
    Ok(())
}

impl<'p, 's> Machine<'p, 's> {
    /// The slot of the odd CTA of the pair whose even CTA (in slot `s`) issues a `cta_group::2`
    /// operation: the pairs of a cluster are its ranks `(2k, 2k + 1)`, so a cluster of any even
    /// size holds `size / 2` of them, and the peer of rank `2k` is rank `2k + 1`, in the next
    /// slot (docs/semantics.md#clusters-and-cta-pairs).
    pub(super) fn pair_peer(&mut self, s: usize, op: &str) -> OpResult<u32> {
        check_pair_issuer(self.cluster_size, self.cta(s).rank, op)?;
        Ok(s as u32 + 1)
    }

    /// The slot of the CTA of rank `rank` in the cluster of the CTA in slot `s` (its cluster's
    /// CTAs are resident together, rank r in slot group base + r).
    pub(super) fn cluster_peer(&mut self, s: usize, rank: i64, op: &str) -> OpResult<usize> {
        check_cluster_rank(self.cluster_size, rank, op)?;
        let own = self.cta(s).rank as usize;
        Ok(s - own + rank as usize)
    }

    /// The slots of the CTAs whose bit is set in the multicast mask `mask` of the cluster of
    /// slot `s`, in rank order.
    pub(super) fn mask_slots(&mut self, s: usize, mask: i64, op: &str) -> OpResult<Vec<usize>> {
        let cs = self.cluster_size;
        check_cluster_mask(cs, mask, op)?;
        let base = s - self.cta(s).rank as usize;
        Ok((0..cs as usize)
            .filter(|r| mask >> r & 1 == 1)
            .map(|r| base + r)
            .collect())
    }

    /// Where a TMA load issued by partition `a` of slot `s` lands and completes its bytes:
    /// `bar` is the barrier's address, `hb` the checker's op in the issuing CTA; `mask` a
    /// multicast mask, `bar_rank` the `bar_cta` rank (a CTA of the issuing CTA's pair). With
    /// both, each destination's bytes complete on the barrier of the CTA at `bar_rank`'s place
    /// in the destination's own pair (the `.cta_group::2` multicast form: the barrier operand's
    /// peer bit picks the even or odd CTA of every destination pair). Each barrier's phase is
    /// the one it is in now.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tma_dests(
        &mut self,
        s: usize,
        a: usize,
        bar: u32,
        hb: u32,
        (mask, bar_rank): (Option<i64>, Option<i64>),
        (op, span): (&str, Span),
    ) -> OpResult<Vec<TmaDest>> {
        let own = TmaDest {
            slot: s as u32,
            hb,
            bar_slot: s as u32,
            phase: 0,
        };
        let base = s - self.cta(s).rank as usize;
        // The place in a pair (0: even, 1: odd) whose barrier the bytes complete on.
        let pair_bit = match bar_rank {
            Some(r) => {
                self.cluster_peer(s, r, op)?;
                if !self.cluster_size.is_multiple_of(2) || r / 2 != i64::from(self.cta(s).rank) / 2 {
                    return Err(Fault::trap(
                        CudaError::IllegalAddress,
                        format!("{op} completes on the barrier of CTA rank {r}, which is not in this CTA's pair (`bar_cta` is the `.cta_group::2` form: the barrier is in this CTA or its pair peer)"),
                    ));
                }
                Some((r & 1) as usize)
            }
            None => None,
        };
        // The slot whose barrier receives the bytes that land in slot `t`.
        let bar_of = |t: usize| match pair_bit {
            Some(b) => base + ((t - base) & !1 | b),
            None => t,
        };
        let Some(mask) = mask else {
            let t = bar_of(s);
            let phase = self.cta(t).bar(bar)?.phase;
            if t != s {
                self.check_init_visible((s, a, t), bar, "completes its bytes on", span);
            }
            return Ok(vec![TmaDest {
                bar_slot: t as u32,
                phase,
                ..own
            }]);
        };
        let slots = self.mask_slots(s, mask, op)?;
        self.multicast_dests((s, a, bar), &slots, own, bar_of, "multicasts onto", span)
    }

    /// The destinations `slots` of a multicast by partition `a` of slot `s` onto the barrier at
    /// address `bar`: `own` for slot `s` itself; in every other CTA, a write issued there by
    /// this CTA's agent. The bytes landing in slot `t` complete on the barrier of slot
    /// `bar_of(t)` (`t` itself, or the CTA of `t`'s pair a `bar_cta` names) in the phase it is
    /// in now, once that barrier's init is visible to this CTA (`what` naming the act).
    fn multicast_dests(
        &mut self,
        (s, a, bar): (usize, usize, u32),
        slots: &[usize],
        own: TmaDest,
        bar_of: impl Fn(usize) -> usize,
        what: &str,
        span: Span,
    ) -> OpResult<Vec<TmaDest>> {
        let (sid, pc) = (self.cta(s).id, self.cur_pc);
        let mut dests = Vec::new();
        for &t in slots {
            let bt = bar_of(t);
            let phase = self.cta(bt).bar(bar)?.phase;
            if bt != s {
                let what = if bt == t {
                    what
                } else {
                    "completes multicast bytes on"
                };
                self.check_init_visible((s, a, bt), bar, what, span);
            }
            let hb = if t == s {
                own.hb
            } else {
                match self.peer_step(s, a, t) {
                    Some(_) => self.hb(t).map(|h| h.peer_issue(sid, pc)).unwrap_or(0),
                    None => 0,
                }
            };
            dests.push(TmaDest {
                slot: t as u32,
                hb,
                bar_slot: bt as u32,
                phase,
            });
        }
        Ok(dests)
    }

    /// Where a `clc.try_cancel` issued by partition `a` of slot `s` (checker op `hb` there)
    /// lands: this CTA, or with `multicast` every CTA of its cluster, each response a write
    /// issued in that CTA by this CTA's agent, completing on its barrier at `bar` in the phase
    /// that barrier is in now.
    pub(super) fn clc_dests(
        &mut self,
        s: usize,
        a: usize,
        bar: u32,
        hb: u32,
        multicast: bool,
        span: Span,
    ) -> OpResult<Vec<TmaDest>> {
        let phase = self.cta(s).bar(bar)?.phase;
        let own = TmaDest {
            slot: s as u32,
            hb,
            bar_slot: s as u32,
            phase,
        };
        if !multicast || self.cluster_size <= 1 {
            return Ok(vec![own]);
        }
        let all = (1i64 << self.cluster_size) - 1;
        let slots = self.mask_slots(s, all, "clc.try_cancel")?;
        self.multicast_dests(
            (s, a, bar),
            &slots,
            own,
            |t| t,
            "multicasts a response onto",
            span,
        )
    }

    /// `barrier-misuse` when partition `a` of slot `s` acts on the barrier at `addr` of the CTA
    /// in slot `t` (`what`, at `span`) without knowing of that barrier's init: its init was not
    /// released to the cluster first (a cluster barrier after the inits).
    pub(super) fn check_init_visible(
        &mut self,
        (s, a, t): (usize, usize, usize),
        addr: u32,
        what: &str,
        span: Span,
    ) {
        if !self.opts.check || s == t {
            return;
        }
        let tid = self.cta(t).id;
        let trank = self.cta(t).rank;
        let view = self.hb(s).map(|h| h.remote_view(a, tid)).unwrap_or_default();
        if self.hb(t).is_some_and(|h| h.init_visible(addr, &view)) {
            return;
        }
        let bar = self.prog.mbar_name(addr);
        let d = Diagnostic::error(
            Code::BarrierMisuse,
            format!("{what} `{bar}` of CTA {tid} (rank {trank} of the cluster) before that barrier's initialisation is visible to this CTA"),
            span,
            format!("acts on CTA {tid}'s `{bar}`"),
        )
        .with_note("another CTA's `mbar.init` is ordered before this CTA's use of the barrier only by a cluster barrier after the init (a relaxed one suffices after `fence.mbarrier_init`); without it the arrival or the bytes may reach the barrier before it is initialised (docs/semantics.md#clusters-and-cta-pairs)")
        .with_help("after the inits: `fence.mbarrier_init`, then `cluster.arrive relaxed=true` and `cluster.wait` in every CTA, before any CTA uses another's barrier");
        self.report(d);
    }

    /// What partition `a` of slot `s` publishes with a release at cluster scope onto another
    /// CTA's barrier: its own clock and what it knows of other CTAs.
    pub(super) fn release_views(&self, s: usize, a: usize) -> Vec<(u32, VClock)> {
        let Some(c) = self.slots[s].as_ref() else {
            return Vec::new();
        };
        let Some(hb) = c.hb.as_deref() else {
            return Vec::new();
        };
        let mut v = vec![(c.id, hb.part_clock(a))];
        v.extend(hb.remote_views(a));
        v
    }

    /// A remote barrier action (`mbar.arrive`/`mbar.expect ..., cta=R`) by partition `a` of
    /// slot `s` on the barrier at `addr` of the CTA in slot `t`: a release at cluster scope.
    pub(super) fn remote_bar_act(
        &mut self,
        (s, a, t): (usize, usize, usize),
        me: Unit,
        span: Span,
        addr: u32,
        acts: &[BarAct],
    ) -> OpResult<()> {
        let cta_id = self.cta(s).id;
        self.check_init_visible((s, a, t), addr, "arrives on", span);
        let who = self.peer_step(s, a, t).map(|pc| Actor::Peer { cta: cta_id, pc });
        if self.opts.check {
            let views = self.release_views(s, a);
            if let Some(hb) = self.hb(t) {
                hb.bar_remote(addr, &views);
            }
        }
        for act in acts {
            self.bar_act(t, me, span, addr, *act, who)?;
        }
        Ok(())
    }

    /// The checker's side of partition `a` of slot `s` acting on the CTA in slot `t`: the
    /// peer agent of `t` learns what `a` knows of `t`, and `a` learns its own act. Returns
    /// the instruction (when checking).
    pub(super) fn peer_step(&mut self, s: usize, a: usize, t: usize) -> Option<u32> {
        if !self.opts.check {
            return None;
        }
        let pc = self.cur_pc;
        let (sid, rank) = (self.cta(s).id, self.cta(s).rank);
        let tid = self.cta(t).id;
        let view = self.hb(s)?.remote_view(a, tid);
        let (id, time) = self.hb(t)?.peer_step(sid, rank, &view, pc);
        let mut own = VClock::default();
        own.raise(id, time);
        self.hb(s)?.learn_remote(a, tid, &own);
        Some(pc)
    }

    /// `smem.load VIEW, cta=R` of the CTA in slot `t` by partition `a` of slot `s`.
    pub(super) fn peer_smem_load(
        &mut self,
        s: usize,
        a: usize,
        t: usize,
        v: &SmemView,
    ) -> OpResult<OpDone<Block>> {
        let shape = v.shape.as_slice().to_vec();
        let (addrs, bits) = self.smem_view_elems(t, v)?;
        if self.opts.check {
            let eb = v.dtype.bits();
            let pc = self.cur_pc;
            self.check_smem_init(t, pc, &addrs);
            let sid = self.cta(s).id;
            let h = self.peer_step(s, a, t).and_then(|_| {
                self.hb(t)
                    .and_then(|hb| hb.peer_smem(sid, pc, Kind::Read, &addrs, eb))
            });
            self.hazard(t, h, false);
        }
        Ok(OpDone::Value(Value::Tile(Arc::new(Tile {
            dtype: v.dtype,
            shape,
            bits,
        }))))
    }

    /// `smem.store VIEW, VALUE, cta=R` into the CTA in slot `t` by partition `a` of slot `s`.
    /// Writes `tile` (converted to the view's type) into view `v` of the shared memory of slot
    /// `t`, for partition `a` of slot `s` (`t` is `s`, or a peer of its cluster); with the
    /// checker on, the stored elements take the definedness of `value`. Returns the view's
    /// addresses.
    pub(super) fn store_tile(
        &mut self,
        s: usize,
        a: usize,
        t: usize,
        v: &SmemView,
        tile: &Tile,
        value: &CExpr,
    ) -> OpResult<Arc<Vec<(u32, u32)>>> {
        let addrs = views::view_addresses(v)
            .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
        let eb = v.dtype.bits();
        let c = self.cta(t);
        if tile.dtype == v.dtype {
            c.smem.write_elems(&addrs, eb, |lin| tile.bits[lin])?;
        } else {
            c.smem.write_elems(&addrs, eb, |lin| {
                eval::convert_bits(tile.dtype, v.dtype, tile.bits[lin])
            })?;
        }
        if self.opts.check {
            // Undefined values stored stay undefined in shared memory.
            let o = taint::origin(value, &self.cta(s).agents[a].undef);
            self.cta(t).smem_undef.store(&addrs, eb.div_ceil(8), o);
        }
        Ok(addrs)
    }

    /// The checker's record of partition `a` of slot `s` writing `addrs` (elements of `eb` bits)
    /// of the shared memory of its cluster peer `t`.
    pub(super) fn peer_smem_write(&mut self, s: usize, a: usize, t: usize, addrs: &[(u32, u32)], eb: u32) {
        if self.opts.check {
            let pc = self.cur_pc;
            let sid = self.cta(s).id;
            let h = self.peer_step(s, a, t).and_then(|_| {
                self.hb(t)
                    .and_then(|hb| hb.peer_smem(sid, pc, Kind::Write, addrs, eb))
            });
            self.hazard(t, h, false);
        }
    }

    /// `cluster.arrive` (or the arrive half of `cluster.sync`) by partition `a` of slot `s`;
    /// with `release`, what it knows of every CTA of the cluster joins the phase's release.
    /// Returns the phase it arrived in.
    pub(super) fn cluster_arrive(&mut self, s: usize, a: usize, release: bool, op: &str) -> OpResult<u64> {
        let c = self.cta(s);
        if c.agents.iter().filter(|x| x.state != AState::Done).count() > 1 {
            return Err(Fault::unsupported(format!(
                "{op} inside warp_specialize partitions; the simulator models the cluster barrier arrived on by each CTA's one running partition"
            )));
        }
        if c.agents[a].cluster_arrived.is_some() {
            return Err(Fault::trap(
                CudaError::LaunchFailure,
                format!("{op} by a partition that arrived on the cluster barrier and has not waited (each `cluster.arrive` is followed by a `cluster.wait`)"),
            ));
        }
        let (cluster, cta_id) = (c.cluster, c.id);
        let size = self.cluster_size;
        let st = self.cluster_sync.entry(cluster).or_insert((0, 0));
        let gen = st.1;
        st.0 += 1;
        let done = st.0 >= size;
        if done {
            *st = (0, gen + 1);
        }
        if self.opts.check {
            let mut rel: Vec<(u32, VClock)> = Vec::new();
            if let Some(hb) = self.slots[s].as_ref().and_then(|c| c.hb.as_deref()) {
                if release {
                    rel.push((cta_id, hb.part_clock(a)));
                    rel.extend(hb.remote_views(a));
                } else {
                    // A relaxed arrive after `fence.mbarrier_init` still publishes the inits.
                    rel.push((cta_id, hb.relaxed_release(a)));
                }
            }
            let ch = self.cluster_hb.entry(cluster).or_default();
            for (t, c) in rel {
                ch.running.entry(t).or_default().join(&c);
            }
            if done {
                ch.completed = (gen, std::mem::take(&mut ch.running));
            }
        }
        self.cta(s).agents[a].cluster_arrived = Some(gen);
        Ok(gen)
    }

    /// `cluster.wait` by partition `a` of slot `s`: the block while the phase it arrived in is
    /// incomplete, else `None` after acquiring what the phase released.
    pub(super) fn cluster_try_wait(&mut self, s: usize, a: usize, op: &str) -> OpResult<Option<Block>> {
        let c = self.cta(s);
        let Some(gen) = c.agents[a].cluster_arrived else {
            return Err(Fault::trap(
                CudaError::LaunchFailure,
                format!("{op} by a partition that has not arrived on the cluster barrier (`cluster.arrive` comes first)"),
            ));
        };
        let (cluster, cta_id) = (c.cluster, c.id);
        if self.cluster_sync.get(&cluster).is_none_or(|st| st.1 <= gen) {
            return Ok(Some(Block::ClusterSync { cluster, gen }));
        }
        self.cta(s).agents[a].cluster_arrived = None;
        if self.opts.check {
            let got = self
                .cluster_hb
                .get(&cluster)
                .filter(|ch| ch.completed.0 == gen)
                .map(|ch| ch.completed.1.clone())
                .unwrap_or_default();
            if let Some(hb) = self.hb(s) {
                for (t, clock) in &got {
                    if *t == cta_id {
                        hb.acquire_clock(a, clock);
                    } else {
                        hb.learn_remote(a, *t, clock);
                    }
                }
            }
        }
        Ok(None)
    }
}
