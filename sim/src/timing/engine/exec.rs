//! Executing one lowered operation in the timing engine: its cost, the unit queues it joins
//! (TMA, tensor pipe, memory system) and the events it schedules.

use super::*;
use bwsim_isa::Code;

impl<'p> Engine<'p> {
    /// A global read of `bytes` on SM `sm`'s load/store path (generic loads, cp.async),
    /// issued at `t0` with the chip's global latency: when it returns.
    fn lsu_global_load(&mut self, sm: usize, t0: f64, bytes: u64) -> f64 {
        let lat = self.chip.global_latency;
        let mut port = self.sms[sm].lsu;
        let end = self.mem.load(t0, None, bytes, &mut port, Some((lat, lat))).at;
        self.sms[sm].lsu = port;
        self.stats.global_bytes += bytes as f64;
        end
    }

    /// A shared-memory access of `bytes` on SM `sm` issued at `t0` (`remote`: another CTA's
    /// shared memory of the cluster): when it completes.
    fn smem_access_end(&mut self, chip: &Chip, sm: usize, t0: f64, bytes: u64, remote: bool) -> f64 {
        let (lat, _) = if remote {
            cost::dsmem_access(chip, bytes)
        } else {
            cost::smem_access(chip, bytes)
        };
        self.sms[sm].smem.send(t0, bytes as f64).max(t0 + lat)
    }

    /// The element type, shape and bytes of a global access (`what`) through `ptr` at
    /// `offsets`.
    fn global_access(&self, what: &str, ptr: Value, offsets: Value) -> OpResult<(DType, Vec<u32>, u64)> {
        let Value::Ptr(ti) = ptr else {
            return Err(Fault::unsupported(format!("{what} needs a pointer")));
        };
        let dt = self.dtypes.get(ti as usize).copied().unwrap_or(DType::F32);
        let shape = match offsets {
            Value::Tile(tl) => tl.shape.clone(),
            _ => Vec::new(),
        };
        let bytes = numel(&shape) * dt.bits() as u64 / 8;
        Ok((dt, shape, bytes))
    }

    /// The bytes, L2 key and messages of a TMA copy through descriptor `desc` by the
    /// instruction at `pc`: a gather4 or scatter4 moves whole rows, one message per four and
    /// no key; a tile copy is [`Engine::tile_messages`].
    fn tma_extent(&mut self, pc: u32, desc: u32, copy: TmaCopy) -> OpResult<(u64, Option<u64>, u64)> {
        let d = &self.prog.descs[desc as usize];
        match copy {
            TmaCopy::Rows(xs) => {
                let rows = numel(&xs);
                let cols = d.block.last().copied().unwrap_or(1) as u64;
                let elt = d.dtype.bits() as u64;
                Ok((rows * cols * elt / 8, None, rows.div_ceil(4).max(1)))
            }
            TmaCopy::Tile(cs, v) => self.tile_messages(pc, d, &cs, &v),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_op(
        &mut self,
        c: u32,
        a: u32,
        pc: u32,
        op: &LOp,
        name: &'static str,
        span: Span,
        t: &mut f64,
        frame: &[Value],
        cx: &EvalCtx,
    ) -> OpResult<OpDone<Pause>> {
        let ev = |e: &CExpr| hollow::eval(e, frame, cx);
        let evs = |e: &CExpr| match hollow::quick(e, frame, cx) {
            Some(q) => Ok(q.value()),
            None => eval::eval(e, frame, cx),
        };
        let pred = |p: Option<&CExpr>| -> OpResult<bool> {
            match p {
                None => Ok(true),
                Some(e) => bool_of(&evs(e)?, "pred"),
            }
        };
        let warps = self.cta(c).agents[a as usize].warps;
        // Issue costs as this partition's scheduler sees them (cost::issue_scaled).
        let chip = self.scaled_chip(c, a);
        let chip: &Chip = &chip;
        // A TMA copy, an mbarrier expect or a tcgen05.commit is issued by one thread; in a
        // partition of several warps the compiled code may meet at CTA barriers before it
        // (chips.rs issue_barriers: Triton puts a bar.sync before each).
        if warps > 1 && single_thread_issue(op) {
            *t += chip.issue_barriers * chip.bar_sync_cycles;
        }
        let t0 = *t;
        let sm = self.cta(c).sm as usize;
        let me = TUnit::Agent(a);
        // An operation whose predicate `p` is false only takes its issue slot.
        macro_rules! skip_if_predicated_off {
            ($p:expr) => {
                if !pred($p)? {
                    *t += chip.scalar_op_cycles;
                    return Ok(OpDone::Next);
                }
            };
        }
        // The coordinates of a TMA tile copy.
        let tma_coords = |coords: &[CExpr]| -> OpResult<Vec<i64>> {
            coords
                .iter()
                .map(|e| Ok(int_of(&evs(e)?, "a TMA coordinate")? as i32 as i64))
                .collect()
        };
        match op {
            LOp::SmemAlloc { view } => Ok(OpDone::Value(Value::Smem(*view))),
            LOp::SmemReinterpret {
                src,
                dtype,
                shape: sh,
                layout: lay,
            } => {
                let v = smem_of(evs(src)?)?;
                let n = views::smem_reinterpret(&v, *dtype, *lay, *sh)
                    .ok_or_else(|| Fault::error(Code::SimError, "shared address overflow"))?;
                Ok(OpDone::Value(Value::Smem(n)))
            }
            LOp::MbarAlloc { addr, count } => Ok(OpDone::Value(Value::Mbar {
                addr: *addr,
                count: Some(*count),
            })),
            LOp::TmemAlloc { view, .. } => Ok(OpDone::Value(Value::Tmem(*view))),
            LOp::TmemReinterpret {
                src,
                dtype,
                shape: sh,
                block,
                col_stride,
            } => {
                let v = tmem_of(evs(src)?)?;
                Ok(OpDone::Value(Value::Tmem(views::tmem_reinterpret(
                    &v,
                    *dtype,
                    *sh,
                    *block,
                    *col_stride,
                ))))
            }
            LOp::Op(K::TmemDealloc { .. }) => Ok(OpDone::Next),
            LOp::ClcTryCancel {
                result,
                bar,
                multicast,
            } => {
                let v = smem_of(evs(result)?)?;
                let addr = views::view_start(&v).unwrap_or(0);
                let baddr = bar_of(evs(bar)?)?;
                self.cta(c).bar(baddr)?;
                // The response's latency is not measured on Blackwell: an on-chip round trip
                // like a TMA load that hits in the L2 (an estimate).
                self.push(
                    t0 + chip.tma_l2_latency,
                    EvKind::Clc {
                        cta: c,
                        bar: baddr,
                        addr,
                        multicast: *multicast,
                    },
                );
                *t = t0 + chip.tma_issue_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(K::ClcQuery { result }) => {
                let v = smem_of(evs(result)?)?;
                let addr = views::view_start(&v).unwrap_or(0);
                let w = self
                    .cta(c)
                    .clc
                    .iter()
                    .find(|(a, _)| *a == addr)
                    .map_or([0; 4], |x| x.1);
                *t = t0 + chip.smem_latency + 4.0 * chip.scalar_op_cycles;
                Ok(OpDone::Value(eval::clc_query_value(
                    w[0] == 1,
                    [w[1], w[2], w[3]],
                )))
            }
            LOp::TmaLoad {
                desc,
                coords,
                smem,
                bar,
                pred: p,
                gather,
                multicast,
                bar_cta,
            } => {
                skip_if_predicated_off!(p.as_ref());
                let baddr = bar_of(evs(bar)?)?;
                // The CTAs whose barrier at `baddr` the bytes complete on, one per destination:
                // every CTA of a multicast mask (the bytes land in each at the same offsets),
                // else this CTA; with `bar_cta`, the CTA at that rank's place in each
                // destination's pair instead (the `.cta_group::2` form).
                let pair_bit = match bar_cta {
                    Some(r) => {
                        let r = int_of(&evs(r)?, "the barrier's CTA rank")?;
                        let own = self.cta(c).rank as i64;
                        self.cluster_peer(c, r, name)?;
                        if !self.cluster_size.is_multiple_of(2) || r / 2 != own / 2 {
                            return Err(Fault::trap(
                                CudaError::IllegalAddress,
                                format!("{name} completes on the barrier of CTA rank {r}, which is not in this CTA's pair (`bar_cta` is the `.cta_group::2` form: the barrier is in this CTA or its pair peer)"),
                            ));
                        }
                        Some((r & 1) as u32)
                    }
                    None => None,
                };
                let landing_ctas = match multicast {
                    Some(m) => {
                        let mask = int_of(&evs(m)?, "the multicast mask")?;
                        self.cluster_mask(c, mask, name)?
                    }
                    None => vec![c],
                };
                let base = c - self.cta(c).rank;
                let dests: Vec<u32> = landing_ctas
                    .into_iter()
                    .map(|x| match pair_bit {
                        Some(b) => base + ((x - base) & !1 | b),
                        None => x,
                    })
                    .collect();
                // gather4: one message per four rows, each a request of its own; the load
                // lands with the last. A tile copy is one request, one issue slot per message
                // (its boxes, docs/hardware/tma-messages.md).
                let copy = if *gather {
                    TmaCopy::Rows(tile_of(&ev(&coords[0])?)?.1)
                } else {
                    TmaCopy::Tile(tma_coords(coords)?, smem_of(evs(smem)?)?)
                };
                let (bytes, key, msgs) = self.tma_extent(pc, *desc, copy)?;
                for &x in &dests {
                    self.cta(x).bar(baddr)?;
                }
                // One read of the memory system, through the issuing SM's port, whatever the
                // number of destinations: a multicast's bytes land in every CTA of its mask at
                // the same time (no public figure gives a cost per extra destination;
                // docs/timing.md).
                let mut port = self.sms[sm].tma_in;
                let requests = if *gather { msgs } else { 1 };
                let mut landing: Option<Landing> = None;
                for _ in 0..requests {
                    let b = bytes / requests;
                    let l = self.mem.load(t0, key, b, &mut port, None);
                    if landing.is_none_or(|w| l.at > w.at) {
                        landing = Some(l);
                    }
                }
                let done = landing.map_or(t0, |l| l.at);
                self.sms[sm].tma_in = port;
                self.stats.tma_loads += 1;
                self.stats.global_bytes += bytes as f64;
                for x in dests {
                    self.push(
                        done,
                        EvKind::Tx {
                            cta: x,
                            bar: baddr,
                            bytes: bytes as i64,
                            landing,
                        },
                    );
                }
                *t = t0 + chip.tma_issue_cycles * msgs as f64;
                if self.recording(sm as u32) {
                    let hit = key.is_some() && done < t0 + chip.tma_hbm_latency - 0.5;
                    self.record(
                        t0,
                        c,
                        TUnit::Tma,
                        TWhat::TmaLoad {
                            op: name,
                            bytes,
                            done,
                            hit,
                        },
                        span,
                    );
                }
                Ok(OpDone::Next)
            }
            // A reducing store (`reduce`) costs what a store of its bytes does: the L2 applies
            // the reduction where the line lives (`red` at the L2 slice), so the bytes travel
            // once, as a store's; not calibrated separately.
            LOp::TmaStore {
                desc,
                coords,
                smem,
                pred: p,
                scatter,
                reduce: _,
            } => {
                skip_if_predicated_off!(p.as_ref());
                let copy = if *scatter {
                    TmaCopy::Rows(tile_of(&ev(&coords[0])?)?.1)
                } else {
                    TmaCopy::Tile(tma_coords(coords)?, smem_of(evs(smem)?)?)
                };
                let (bytes, key, msgs) = self.tma_extent(pc, *desc, copy)?;
                let mut port = self.sms[sm].tma_out;
                let done = self.mem.store(t0, key, bytes, &mut port, None);
                self.sms[sm].tma_out = port;
                self.stats.tma_stores += 1;
                self.stats.global_bytes += bytes as f64;
                self.cta(c).agents[a as usize].stores.push_back(done);
                *t = t0 + chip.tma_issue_cycles * msgs as f64;
                self.record(
                    t0,
                    c,
                    TUnit::Tma,
                    TWhat::TmaStore {
                        op: name,
                        bytes,
                        read: done.read,
                        write: done.write,
                    },
                    span,
                );
                Ok(OpDone::Next)
            }
            LOp::TmaStoreWait { pendings, full } => {
                let ag = &mut self.cta(c).agents[a as usize];
                let mut times: Vec<f64> = ag
                    .stores
                    .iter()
                    .map(|s| if *full { s.write } else { s.read })
                    .filter(|&x| x > t0)
                    .collect();
                let mut ready = t0;
                if times.len() > *pendings as usize {
                    times.sort_by(f64::total_cmp);
                    ready = times[times.len() - 1 - *pendings as usize];
                }
                // Retire groups that are complete by then.
                ag.stores.retain(|s| s.write > ready || s.read > ready);
                *t = ready.max(t0) + chip.scalar_op_cycles;
                if ready > t0 {
                    self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                }
                Ok(OpDone::Next)
            }
            LOp::Op(K::MbarInit { bar, count }) => {
                let addr = bar_of(evs(bar)?)?;
                let n = int_of(&evs(count)?, "the arrival count")?;
                let n = mbarrier::init_count(n).map_err(|m| Fault::error(Code::MbarCount, m))?;
                let cta = self.cta(c);
                let m = Mbar::init(n);
                match cta.bars.iter_mut().find(|b| b.addr == addr) {
                    Some(b) => {
                        b.state = Some(m);
                        b.waiters.clear();
                    }
                    None => cta.bars.push(Bar {
                        addr,
                        state: Some(m),
                        waiters: Vec::new(),
                        latest: t0,
                        flip: 0.0,
                    }),
                }
                *t += chip.mbarrier_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(
                K::MbarExpect {
                    bar,
                    bytes,
                    pred: p,
                    cta: None,
                }
                | K::MbarExpectTx { bar, bytes, pred: p }
                | K::MbarCompleteTx { bar, bytes, pred: p },
            ) => {
                skip_if_predicated_off!(p.as_deref());
                let addr = bar_of(evs(bar)?)?;
                let n = int_of(&evs(bytes)?, "the byte count")?;
                match op {
                    LOp::Op(K::MbarExpect { .. }) => self.bar_update(c, addr, t0, |m| {
                        let a = m.expect_tx(n)?;
                        let b = m.arrive(1)?;
                        Ok(a || b)
                    })?,
                    LOp::Op(K::MbarExpectTx { .. }) => self.bar_update(c, addr, t0, |m| m.expect_tx(n))?,
                    _ => self.bar_update(c, addr, t0, |m| m.complete_tx(n))?,
                }
                *t += chip.mbarrier_op_cycles;
                Ok(OpDone::Next)
            }
            // `cta=R` naming another CTA of the cluster: the arrival reaches that CTA's barrier
            // DSMEM_EXTRA_LATENCY after its issue (the issuing thread goes on).
            LOp::Op(K::MbarArrive {
                bar,
                count,
                pred: p,
                cta,
            }) => {
                skip_if_predicated_off!(p.as_deref());
                let addr = bar_of(evs(bar)?)?;
                let n = interp::arrive_count(count.as_deref().map(evs).transpose()?.as_ref())?;
                let target = match cta {
                    Some(r) => self.cluster_peer(c, int_of(&evs(r)?, "the CTA rank")?, name)?,
                    None => c,
                };
                self.bar_act(c, target, addr, t0, RemoteAct::Arrive(n))?;
                *t += chip.mbarrier_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(K::MbarWait { bar, phase }) => {
                let addr = bar_of(evs(bar)?)?;
                let parity = (int_of(&evs(phase)?, "the phase")? & 1) as u32;
                let since = self.cta(c).agents[a as usize].wait_since;
                let b = self.cta(c).bar(addr)?;
                let Some(m) = b.state else {
                    return Err(crate::diagnostics::barrier_after_invalidate(addr));
                };
                if m.test_wait(parity) {
                    // A phase stamped later than this agent's clock (an agent ahead of the queue
                    // completed it) is seen no earlier than it completed.
                    let seen = t0.max(b.flip);
                    if !since.is_nan() {
                        self.cta(c).agents[a as usize].wait_since = f64::NAN;
                        self.record(seen, c, me, TWhat::Waited { op: name, since }, span);
                    }
                    *t = seen + chip.mbarrier_op_cycles;
                    Ok(OpDone::Next)
                } else {
                    b.waiters.push((a, parity));
                    let ag = &mut self.cta(c).agents[a as usize];
                    ag.wait = Wait::Mbar { addr, parity };
                    if ag.wait_since.is_nan() {
                        ag.wait_since = t0;
                    }
                    Ok(OpDone::Wait(Pause::Block))
                }
            }
            LOp::Op(K::MbarTestWait { bar, phase }) => {
                let addr = bar_of(evs(bar)?)?;
                let parity = (int_of(&evs(phase)?, "the phase")? & 1) as u32;
                let b = self.cta(c).bar(addr)?;
                let Some(m) = b.state else {
                    return Err(crate::diagnostics::barrier_after_invalidate(addr));
                };
                *t += chip.mbarrier_op_cycles;
                Ok(OpDone::Value(Value::Bool(m.test_wait(parity))))
            }
            LOp::Op(K::MbarInvalidate { bar }) => {
                let addr = bar_of(evs(bar)?)?;
                self.cta(c).bar(addr)?.state = None;
                *t += chip.mbarrier_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(K::Tcgen05FenceBefore {} | K::Tcgen05FenceAfter {}) => {
                *t += chip.tcgen05_fence_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(K::FenceAsyncShared {} | K::FenceMbarrierInit {}) => {
                *t += chip.fence_async_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(K::BarSync {}) => {
                *t += chip.bar_sync_cycles;
                Ok(OpDone::Next)
            }
            // The cluster barrier: each CTA's arrival is stamped when issued; the wait ends a
            // CTA barrier plus the cross-SM cost (cost::CLUSTER_BARRIER_EXTRA_CYCLES) after the
            // later of its own time and the phase's last arrival. `cluster.sync` arrives and
            // waits; blocked, it is executed again and only waits.
            LOp::Op(K::ClusterSync {}) | LOp::Op(K::ClusterWait {}) => {
                if matches!(op, LOp::Op(K::ClusterSync {})) {
                    let ag = &mut self.cta(c).agents[a as usize];
                    if ag.cluster_resume {
                        ag.cluster_resume = false;
                    } else {
                        self.cluster_arrive(c, a, t0, name)?;
                    }
                }
                match self.cluster_try_wait(c, a, name)? {
                    Some(flip) => {
                        *t = t0.max(flip) + chip.bar_sync_cycles + cost::CLUSTER_BARRIER_EXTRA_CYCLES;
                        if flip > t0 {
                            self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                        }
                        Ok(OpDone::Next)
                    }
                    None => {
                        if matches!(op, LOp::Op(K::ClusterSync {})) {
                            self.cta(c).agents[a as usize].cluster_resume = true;
                        }
                        Ok(OpDone::Wait(Pause::Block))
                    }
                }
            }
            LOp::Op(K::ClusterArrive { .. }) => {
                self.cluster_arrive(c, a, t0, name)?;
                *t += chip.scalar_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::Mma {
                a: av,
                b,
                acc,
                pred: p,
                cta_group,
                ..
            } => {
                skip_if_predicated_off!(p.as_ref());
                // A pair MMA (cta_group::2, issued by the even CTA): each CTA of the pair holds
                // 128 rows of A and of the accumulator (the pair's M = 256 split) and half of B;
                // each SM's tensor pipe computes its CTA's rows over the whole N.
                let peer = self.group_peer(c, *cta_group, "tcgen05.mma")?;
                let (m, n, k, kind, a_smem) = match &self.shapes[pc as usize] {
                    Some(Shapes::Mma {
                        m,
                        n,
                        k,
                        kind,
                        a_smem,
                    }) => (*m, *n, *k, *kind, *a_smem),
                    _ => {
                        let (ashape, adt, a_smem) = match evs(av)? {
                            Value::Smem(v) => (v.shape, v.dtype, true),
                            Value::Tmem(v) => (v.shape, v.dtype, false),
                            other => {
                                return Err(Fault::unsupported(format!("MMA A operand is {}", other.kind())))
                            }
                        };
                        let bv = smem_of(evs(b)?)?;
                        let accv = tmem_of(evs(acc)?)?;
                        let (m, k) = last2(ashape.as_slice());
                        let (_, n) = last2(bv.shape.as_slice());
                        let (am, an) = last2(accv.shape.as_slice());
                        let (m, n) = (m.max(am), n.max(an));
                        let kind = MmaKind::of(adt);
                        self.shapes[pc as usize] = Some(Shapes::Mma {
                            m,
                            n,
                            k,
                            kind,
                            a_smem,
                        });
                        (m, n, k, kind, a_smem)
                    }
                };
                let dur = cost::tcgen05_mma_cycles_operands(chip, m, n, k, kind, a_smem);
                let issue = t0 + chip.mma_issue_cycles * cost::mma_instrs(m, k, kind, false) as f64;
                // In order within the CTA (after a tcgen05.cp), shared with the SM's other
                // CTAs instruction by instruction (super::pipe).
                let issue = issue.max(self.cta(c).cp_free);
                let psm = peer.map(|p| self.cta(p).sm as usize);
                let pipe = &mut self.sms[sm].tc;
                let before = pipe.issued(c);
                let mut start = pipe.when_served(c, before).max(issue);
                let target = pipe.issue(issue, c, dur);
                let mut end = pipe.when_served(c, target);
                // The issuing thread goes on once all but the issue queue's depth of the CTA's
                // instructions have started (chips.rs tcgen05_queue_instrs).
                let instrs = cost::mma_instrs(m, k, kind, false).max(1) as f64;
                let release = if chip.tcgen05_queue_instrs > 0.0 {
                    pipe.when_served(c, target - chip.tcgen05_queue_instrs * dur / instrs)
                } else {
                    issue
                };
                // The pair's half on the peer's SM: the same work, in this CTA's stream there
                // (so that this CTA's pair commit covers it, and the peer's own MMAs share the
                // pipe with it).
                if let Some(psm) = psm {
                    let pp = &mut self.sms[psm].tc;
                    let before = pp.issued(c);
                    start = start.max(pp.when_served(c, before).max(issue));
                    let ptarget = pp.issue(issue, c, dur);
                    end = end.max(pp.when_served(c, ptarget));
                }
                let cta = self.cta(c);
                cta.pipe_free = end;
                cta.pipe_done = cta.pipe_done.max(end + chip.mma_latency);
                let rows = if peer.is_some() { 2 * m } else { m };
                self.stats.flops += cost::flops(rows, n, k);
                self.stats.mmas += 1;
                *t = issue.max(release);
                self.record_tc(t0, c, name, [rows, n, k], start, end, span);
                Ok(OpDone::Next)
            }
            LOp::Op(K::Tcgen05Cp { src, dst }) => {
                let sv = smem_of(evs(src)?)?;
                let _ = tmem_of(evs(dst)?)?;
                let bytes = sv.shape.numel() * sv.dtype.bits() as u64 / 8;
                let dur = cost::tcgen05_cp_cycles(chip, bytes);
                let issue = t0 + chip.mma_issue_cycles;
                let cta = self.cta(c);
                let start = issue.max(cta.pipe_free);
                let end = start + dur;
                cta.pipe_free = end;
                cta.cp_free = end;
                cta.pipe_done = cta.pipe_done.max(end);
                *t = issue;
                self.record_tc(t0, c, name, [0, 0, 0], start, end, span);
                Ok(OpDone::Next)
            }
            // On another CTA's barrier: the expect and its arrival reach it
            // DSMEM_EXTRA_LATENCY after the issue.
            LOp::Op(K::MbarExpect {
                bar,
                bytes,
                pred: p,
                cta: Some(r),
            }) => {
                skip_if_predicated_off!(p.as_deref());
                let addr = bar_of(evs(bar)?)?;
                let n = int_of(&evs(bytes)?, "the byte count")?;
                let target = self.cluster_peer(c, int_of(&evs(r)?, "the CTA rank")?, name)?;
                self.bar_act(c, target, addr, t0, RemoteAct::Expect(n))?;
                *t += chip.mbarrier_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::Commit {
                bar,
                pred: p,
                cta_group,
                multicast,
            } => {
                skip_if_predicated_off!(p.as_ref());
                // The CTAs whose barrier at `bar` the arrival lands on: a multicast mask's, or
                // for a pair commit both CTAs of the pair, else this CTA's.
                let peer = self.group_peer(c, *cta_group, "tcgen05.commit")?;
                let targets = match (multicast, peer) {
                    (Some(m), _) => {
                        let mask = int_of(&evs(m)?, "the multicast mask")?;
                        self.cluster_mask(c, mask, name)?
                    }
                    (None, Some(p)) => vec![c, p],
                    (None, None) => vec![c],
                };
                let addr = bar_of(evs(bar)?)?;
                let base = c - self.cta(c).rank;
                let mut dests = 0u32;
                for &x in &targets {
                    self.cta(x).bar(addr)?;
                    dests |= 1 << (x - base);
                }
                let issue = t0 + chip.mma_issue_cycles;
                // Due when the pipe has served every MMA this CTA issued so far (a pair
                // commit: on both SMs of the pair); re-checked then, since other CTAs' MMAs
                // arriving meanwhile slow this one's.
                let pipe = &mut self.sms[sm].tc;
                let target = pipe.issued(c);
                let mut due = pipe.when_served(c, target).max(issue);
                let pair = match peer {
                    Some(p) => {
                        let psm = self.cta(p).sm;
                        let pp = &mut self.sms[psm as usize].tc;
                        let ptarget = pp.issued(c);
                        due = due.max(pp.when_served(c, ptarget));
                        Some((psm, ptarget))
                    }
                    None => None,
                };
                let floor = issue.max(self.cta(c).pipe_done);
                let at = floor + chip.commit_latency;
                self.push(
                    due,
                    EvKind::Commit {
                        cta: c,
                        sm: sm as u32,
                        bar: addr,
                        target,
                        floor,
                        pair,
                        dests,
                    },
                );
                *t = issue;
                self.record(t0, c, TUnit::Tc, TWhat::Commit { op: name, arrive: at }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(K::TmemLoad { src, .. }) => {
                let (bytes, value) = match &self.shapes[pc as usize] {
                    Some(Shapes::Load { bytes, value }) => (*bytes, value.clone()),
                    _ => {
                        let v = tmem_of(evs(src)?)?;
                        let shape = v.shape.as_slice().to_vec();
                        let bytes = numel(&shape) * v.dtype.bits().max(32) as u64 / 8;
                        let value = hollow::hollow(v.dtype, shape);
                        self.shapes[pc as usize] = Some(Shapes::Load {
                            bytes,
                            value: value.clone(),
                        });
                        (bytes, value)
                    }
                };
                let shape: &[u32] = match &value {
                    Value::Tile(tl) => &tl.shape,
                    _ => &[],
                };
                let (rows, cols) = tmem_rows_cols(shape, bytes);
                let (lat, dur) = cost::tmem_access_shaped(chip, rows, cols, warps, false);
                let end = self.sms[sm].tmem.server.reserve(t0, dur).max(t0 + lat);
                *t = end;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                Ok(OpDone::Value(value))
            }
            LOp::Op(K::TmemStore { dst, .. }) => {
                let v = tmem_of(evs(dst)?)?;
                let bytes = v.shape.numel() * v.dtype.bits().max(32) as u64 / 8;
                let (rows, cols) = tmem_rows_cols(v.shape.as_slice(), bytes);
                let (lat, dur) = cost::tmem_access_shaped(chip, rows, cols, warps, true);
                let end = self.sms[sm].tmem.server.reserve(t0, dur).max(t0 + lat);
                *t = end;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(K::Wgmma { a: av, b, acc, .. }) => {
                let (m, n, k, kind, accv) = match &self.shapes[pc as usize] {
                    Some(Shapes::Wgmma { m, n, k, kind, acc }) => (*m, *n, *k, *kind, acc.clone()),
                    _ => {
                        let (ashape, adt) = match ev(av)? {
                            Value::Smem(v) => (v.shape.as_slice().to_vec(), v.dtype),
                            Value::Tile(tl) => (tl.shape.clone(), tl.dtype),
                            other => {
                                return Err(Fault::unsupported(format!(
                                    "wgmma A operand is {}",
                                    other.kind()
                                )))
                            }
                        };
                        let bv = smem_of(evs(b)?)?;
                        let (accdt, accshape) = tile_of(&ev(acc)?)?;
                        let (m, k) = last2(&ashape);
                        let (_, n) = last2(bv.shape.as_slice());
                        let kind = MmaKind::of(adt);
                        let accv = hollow::hollow(accdt, accshape);
                        self.shapes[pc as usize] = Some(Shapes::Wgmma {
                            m,
                            n,
                            k,
                            kind,
                            acc: accv.clone(),
                        });
                        (m, n, k, kind, accv)
                    }
                };
                let dur = cost::wgmma_cycles(chip, m, n, k, kind);
                let per = self.chip.mma_issue_cycles;
                let spills = self.spills;
                let cta = self.cta(c);
                let ag = &cta.agents[a as usize];
                let groups = (ag.warps / 4).max(1);
                let instrs = cost::mma_instrs(m, k, kind, true).div_ceil(groups);
                // Each warpgroup issues its own wgmma instructions: not scaled by the
                // partition's issue slots.
                let mut issue = t0 + per * instrs as f64;
                let start = (t0 + per).max(ag.wg_free).max(self.sms[sm].tensor.free);
                let mut end = self.sms[sm].tensor.reserve(start, dur);
                if let Some(l1_left) = spills {
                    // ptxas swaps the accumulator's 64-row blocks through local memory
                    // around their instructions and waits for each: the warpgroup is held
                    // until the last completes. The L1 left beside shared memory holds
                    // the swapped block of every resident CTA, or the reloads miss.
                    let acc_bytes = match &accv {
                        Value::Tile(tl) => (tl.dtype.bits() / 8).max(1) as u64,
                        _ => 4,
                    };
                    let swap = 64 * n as u64 * acc_bytes * self.ctas_per_sm as u64;
                    end += cost::wgmma_spill(chip, (m / 64).div_ceil(groups), swap, l1_left);
                    self.stats.spilled_wgmmas += 1;
                    issue = issue.max(end + chip.mma_latency);
                }
                if chip.wgmma_queue_instrs > 0.0 {
                    // The warps stall issuing until all but the queue's depth of the
                    // statement's instructions have started (chips.rs wgmma_queue_instrs).
                    let total = cost::mma_instrs(m, k, kind, true).max(1) as f64;
                    issue = issue.max(end - chip.wgmma_queue_instrs * dur / total);
                }
                let ag = &mut self.cta(c).agents[a as usize];
                ag.wg_free = end;
                ag.wgmma.push_back(end + chip.mma_latency);
                self.stats.flops += cost::flops(m, n, k);
                self.stats.mmas += 1;
                *t = issue;
                self.record_tc(t0, c, name, [m, n, k], end - dur, end, span);
                Ok(OpDone::Value(accv))
            }
            LOp::WgmmaWait { pendings } => {
                let ag = &mut self.cta(c).agents[a as usize];
                let mut times: Vec<f64> = ag.wgmma.iter().copied().filter(|&x| x > t0).collect();
                let mut ready = t0;
                if times.len() > *pendings as usize {
                    times.sort_by(f64::total_cmp);
                    ready = times[times.len() - 1 - *pendings as usize];
                }
                ag.wgmma.retain(|&x| x > ready);
                *t = ready.max(t0) + chip.scalar_op_cycles;
                if ready > t0 {
                    self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                }
                Ok(OpDone::Next)
            }
            LOp::Op(K::SmemLoad { src, cta, .. }) => {
                let (bytes, value) = match &self.shapes[pc as usize] {
                    Some(Shapes::Load { bytes, value }) => (*bytes, value.clone()),
                    _ => {
                        let v = smem_of(evs(src)?)?;
                        let shape = v.shape.as_slice().to_vec();
                        let bytes = numel(&shape) * v.dtype.bits() as u64 / 8;
                        let value = hollow::hollow(v.dtype, shape);
                        self.shapes[pc as usize] = Some(Shapes::Load {
                            bytes,
                            value: value.clone(),
                        });
                        (bytes, value)
                    }
                };
                let end = self.smem_access_end(chip, sm, t0, bytes, cta.is_some());
                *t = end;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                Ok(OpDone::Value(value))
            }
            LOp::Op(K::SmemStore { dst, cta, .. }) => {
                let bytes = match &self.shapes[pc as usize] {
                    Some(Shapes::Bytes(b)) => *b,
                    _ => {
                        let v = smem_of(evs(dst)?)?;
                        let b = v.shape.numel() * v.dtype.bits() as u64 / 8;
                        self.shapes[pc as usize] = Some(Shapes::Bytes(b));
                        b
                    }
                };
                let end = self.smem_access_end(chip, sm, t0, bytes, cta.is_some());
                *t = end;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                Ok(OpDone::Next)
            }
            // Indexed shared-memory accesses: one element per index, charged as a dense access
            // of their bytes (bank conflicts of colliding indices are not modelled); an atomic
            // reads and writes each element, twice the bytes.
            LOp::Op(K::SmemGather { src: buf, index, .. })
            | LOp::Op(K::SmemScatter { dst: buf, index, .. })
            | LOp::Op(K::SmemAtomic { dst: buf, index, .. }) => {
                let v = smem_of(evs(buf)?)?;
                let shape = match ev(index)? {
                    Value::Tile(tl) => tl.shape.clone(),
                    _ => Vec::new(),
                };
                let rmw = matches!(op, LOp::Op(K::SmemAtomic { .. }));
                let bytes = numel(&shape) * v.dtype.bits() as u64 / 8 * if rmw { 2 } else { 1 };
                let end = self.smem_access_end(chip, sm, t0, bytes, false);
                *t = end;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                if matches!(op, LOp::Op(K::SmemScatter { .. })) {
                    Ok(OpDone::Next)
                } else {
                    Ok(OpDone::Value(hollow::hollow(v.dtype, shape)))
                }
            }
            LOp::Op(K::GlobalLoad { ptr, offsets, .. }) => {
                let (dt, shape, bytes) = self.global_access("global.load", evs(ptr)?, ev(offsets)?)?;
                let end = self.lsu_global_load(sm, t0, bytes);
                *t = end;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                Ok(OpDone::Value(hollow::hollow(dt, shape)))
            }
            LOp::Op(K::CpAsync { ptr, offsets, .. }) => {
                // The global read of a load on the LSU path; the thread moves on after the
                // issue and the bytes land in shared memory when the load returns.
                let (_, _, bytes) = self.global_access("cp.async", evs(ptr)?, ev(offsets)?)?;
                let end = self.lsu_global_load(sm, t0, bytes);
                let ag = &mut self.cta(c).agents[a as usize];
                ag.cp_open = ag.cp_open.max(end);
                *t = t0 + chip.scalar_op_cycles;
                self.record(t0, c, me, TWhat::Op { op: name, end }, span);
                Ok(OpDone::Next)
            }
            // An assertion costs its compare and branch; whether it holds is the functional
            // machine's business (the timing model runs kernels that complete).
            LOp::Op(K::DeviceAssert { .. }) => {
                *t = t0 + chip.scalar_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::CpAsyncArrive { bar, noinc } => {
                // Every thread arrives once the copies it issued so far have landed (the open
                // group's and every committed group's); without `noinc` each first adds its
                // arrival to the pending count.
                let addr = bar_of(evs(bar)?)?;
                let ag = &self.cta(c).agents[a as usize];
                let count = ag.warps * 32;
                let done = ag.cp_groups.iter().fold(ag.cp_open, |m, &x| m.max(x)).max(t0);
                if !noinc {
                    self.bar_update(c, addr, t0, |m| m.increment(count).map(|()| false))?;
                }
                self.push(
                    done,
                    EvKind::Arrive {
                        cta: c,
                        bar: addr,
                        count,
                    },
                );
                *t = t0 + chip.mbarrier_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::Op(K::CpAsyncCommit {}) => {
                let ag = &mut self.cta(c).agents[a as usize];
                let done = ag.cp_open.max(t0);
                ag.cp_groups.push_back(done);
                ag.cp_open = 0.0;
                *t = t0 + chip.scalar_op_cycles;
                Ok(OpDone::Next)
            }
            LOp::CpAsyncWait { pendings } => {
                // Every group but the `pendings` newest must have landed.
                let ag = &mut self.cta(c).agents[a as usize];
                let mut ready = t0;
                while ag.cp_groups.len() > *pendings as usize {
                    if let Some(x) = ag.cp_groups.pop_front() {
                        ready = ready.max(x);
                    }
                }
                *t = ready + chip.scalar_op_cycles;
                if ready > t0 {
                    self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                }
                Ok(OpDone::Next)
            }
            LOp::GlobalAtomic(at) => {
                // A read-modify-write at L2: the round trip of a load, the bytes both ways.
                let (dt, shape, bytes) =
                    self.global_access("global.atomic", evs(&at.ptr)?, ev(&at.offsets)?)?;
                *t = t0 + chip.global_latency + chip.scalar_op_cycles;
                self.stats.global_bytes += 2.0 * bytes as f64;
                self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                Ok(OpDone::Value(hollow::hollow(dt, shape)))
            }
            LOp::Op(K::GlobalStore { ptr, offsets, .. }) => {
                let (_, _, bytes) = self.global_access("global.store", evs(ptr)?, ev(offsets)?)?;
                let mut port = self.sms[sm].lsu;
                let done = self
                    .mem
                    .store(t0, None, bytes, &mut port, Some(chip.global_latency));
                self.sms[sm].lsu = port;
                self.stats.global_bytes += bytes as f64;
                // The warps issue the stores; the writes drain asynchronously.
                *t = done.read.max(t0 + chip.scalar_op_cycles);
                self.end = self.end.max(done.write);
                self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                Ok(OpDone::Next)
            }
            LOp::MakeDesc(_) => {
                // One warp writes the 128-byte map and releases it at GPU scope: a global
                // write's round trip.
                *t = t0 + chip.global_latency + chip.scalar_op_cycles;
                self.record(t0, c, me, TWhat::Op { op: name, end: *t }, span);
                Ok(OpDone::Next)
            }
            LOp::DescAcquire { .. } => {
                *t = t0 + chip.scalar_op_cycles;
                Ok(OpDone::Next)
            }
            // Lowered to LOp variants of their own (allocations, TMA copies, MMAs, waits,
            // atomics) or to an expression (`inline_asm`) by `crate::lower`.
            LOp::Op(other @ lowered_apart!()) => Err(Fault::unlowered(other)),
        }
    }
}

/// What a TMA copy moves: the rows whose indices a gather4 or scatter4 takes (the shape of its
/// row-index tile), or a tile at coordinates into or out of a shared-memory view.
enum TmaCopy {
    Rows(Vec<u32>),
    Tile(Vec<i64>, SmemView),
}

/// A TMEM tile's lanes (every dimension but the last) and 32-bit words per lane, from its
/// shape and size (cost::tmem_access_shaped).
fn tmem_rows_cols(shape: &[u32], bytes: u64) -> (u64, u64) {
    let rows = match shape.split_last() {
        Some((_, lead)) if !lead.is_empty() => lead.iter().map(|&d| d as u64).product::<u64>(),
        _ => 1,
    }
    .max(1);
    (rows, (bytes / 4).div_ceil(rows))
}

/// Operations one thread issues for its partition: TMA copies, mbarrier transaction-count
/// expects, tcgen05 commits (see [`Engine::exec_op`]).
fn single_thread_issue(op: &LOp) -> bool {
    match op {
        LOp::TmaLoad { .. }
        | LOp::TmaStore { .. }
        | LOp::Commit { .. }
        | LOp::MakeDesc(_)
        | LOp::DescAcquire { .. }
        | LOp::Op(K::MbarExpect { .. } | K::MbarExpectTx { .. }) => true,
        lop_views!()
        | lop_group_waits!()
        | LOp::ClcTryCancel { .. }
        | LOp::CpAsyncArrive { .. }
        | LOp::Mma { .. }
        | LOp::GlobalAtomic(_)
        | LOp::Op(
            K::MbarCompleteTx { .. }
            | K::MbarArrive { .. }
            | mbar_quiet!()
            | fences!()
            | data_moves!()
            | cluster_barrier!()
            | kept_rest!()
            | lowered_apart!(),
        ) => false,
    }
}

/// Whether an op changes or reads state shared with other agents (and so must run in time
/// order). Only a yes is always safe (the engine orders the op with the other agents'), so
/// every operation is named.
pub(super) fn synchronises(op: &LOp) -> bool {
    match op {
        lop_views!()
        | lop_group_waits!()
        | LOp::Op(
            fences!() | K::TmemDealloc { .. } | K::CpAsyncCommit {} | K::BarSync {} | K::DeviceAssert { .. },
        ) => false,
        LOp::TmaLoad { .. }
        | LOp::TmaStore { .. }
        | LOp::ClcTryCancel { .. }
        | LOp::Mma { .. }
        | LOp::Commit { .. }
        | LOp::CpAsyncArrive { .. }
        | LOp::GlobalAtomic(_)
        | LOp::MakeDesc(_)
        | LOp::DescAcquire { .. }
        | LOp::Op(
            mbar_signals!()
            | mbar_quiet!()
            | data_moves!()
            | cluster_barrier!()
            | K::ClcQuery { .. }
            | lowered_apart!(),
        ) => true,
    }
}
