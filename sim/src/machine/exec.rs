//! Stepping agents: one instruction of an agent per step (the control flow is
//! [`crate::interp`]'s; this module is the functional machine's [`Effects`] of it), and the
//! execution of every lowered operation (`exec_op`).

use super::*;
use crate::taint::{self, set_undef};

impl<'p, 's> Machine<'p, 's> {
    pub(super) fn step(&mut self, s: usize, a: usize) -> Result<(), Stop> {
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
        self.cur_pc = pc;
        let mut fx = Fx {
            cx: self.cx(s),
            m: self,
            s,
            a,
            resumed,
        };
        let r = interp::step(&mut fx, pc, instr, &mut frame);
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
            Flow::Wait(b) => {
                let first = !resumed;
                ag.state = AState::Blocked(b);
                if first {
                    let what = match b {
                        Block::Mbar { addr, parity } => What::WaitBegin { bar: addr, parity },
                        Block::StoreWait { .. } => What::Blocked { on: "tma.store_wait" },
                        Block::WgmmaWait { .. } => What::Blocked { on: "wgmma.wait" },
                        Block::CpAsyncWait { .. } => What::Blocked { on: "cp.async.wait" },
                        Block::Join => What::Blocked { on: "join" },
                        Block::TmemAlloc { .. } => What::Blocked { on: "tmem.alloc" },
                        Block::ClusterSync { .. } => What::Blocked { on: "cluster.sync" },
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

    pub(super) fn cx(&mut self, s: usize) -> EvalCtx {
        EvalCtx {
            pid: self.cta(s).pid,
            grid: self.grid,
        }
    }

    /// Whether an optional predicate (a plain or a boxed operand) holds; none always does.
    pub(super) fn pred<E: std::borrow::Borrow<CExpr>>(
        &self,
        p: &Option<E>,
        frame: &[Value],
        cx: &EvalCtx,
    ) -> OpResult<bool> {
        match p {
            None => Ok(true),
            Some(e) => {
                let v = eval::eval(e.borrow(), frame, cx)?;
                v.as_bool()
                    .ok_or_else(|| Fault::unsupported(format!("pred must be a boolean, found {}", v.kind())))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn exec_op(
        &mut self,
        s: usize,
        a: usize,
        op: &LOp,
        name: &'static str,
        span: Span,
        frame: &[Value],
        cx: &EvalCtx,
        resumed: bool,
    ) -> OpResult<OpDone<Block>> {
        let prog = self.prog;
        let ev = |e: &CExpr| eval::eval(e, frame, cx);
        let cta_id = self.cta(s).id;
        let me = Unit::Agent(a as u32);
        match op {
            LOp::SmemAlloc { view } => Ok(OpDone::Value(Value::Smem(*view))),
            LOp::SmemReinterpret {
                src,
                dtype,
                shape,
                layout,
            } => {
                let v = smem_of(&ev(src)?)?;
                let n = views::smem_reinterpret(&v, *dtype, *layout, *shape)
                    .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
                let (start, bytes) = (n.base, views::buffer_bytes(*dtype, shape.as_slice(), *layout));
                if start as u64 + bytes > self.cta(s).smem.len() as u64 {
                    return Err(Fault::error(Code::SmemReinterpret, format!("reinterpret of {bytes} bytes at shared byte {start} runs past the end of shared memory")));
                }
                Ok(OpDone::Value(Value::Smem(n)))
            }
            LOp::MbarAlloc { addr, count } => Ok(OpDone::Value(Value::Mbar {
                addr: *addr,
                count: Some(*count),
            })),
            LOp::TmemReinterpret {
                src,
                dtype,
                shape,
                block,
                col_stride,
            } => {
                let v = tmem_of(&ev(src)?)?;
                let n = views::tmem_reinterpret(&v, *dtype, *shape, *block, *col_stride);
                let end = n.col as u64 + views::tmem_matrix_cols(&n);
                if end > bwsim_isa::typeck::TMEM_COLUMNS as u64 {
                    return Err(Fault::error(
                        Code::TmemReinterpret,
                        format!("the reinterpreted view ends at TMEM column {end}, past the 512 columns"),
                    ));
                }
                Ok(OpDone::Value(Value::Tmem(n)))
            }
            LOp::TmemAlloc { view, manual, cols } => {
                if !manual {
                    return Ok(OpDone::Value(Value::Tmem(*view)));
                }
                match self.cta(s).tmem.alloc(*cols, span) {
                    Some(col) => {
                        if let Some(hb) = self.hb(s) {
                            hb.tmem_alloc(a);
                        }
                        self.ev(cta_id, me, What::TmemAlloc { col, cols: *cols }, span);
                        Ok(OpDone::Value(Value::Tmem(TmemView { col, ..*view })))
                    }
                    None => Ok(OpDone::Wait(Block::TmemAlloc { cols: *cols })),
                }
            }
            LOp::Op(K::TmemDealloc { buf }) => {
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
                if let Some(hb) = c.hb.as_deref_mut() {
                    hb.tmem_dealloc(a, v.col, cols);
                }
                if busy {
                    self.diags.push(
                        Diagnostic::warning(Code::TmemDealloc, "tmem.dealloc while tcgen05 operations are still in flight", span, "freed here")
                            .with_help("wait for the tcgen05.commit barrier that covers the last MMA before freeing its accumulator"),
                    );
                }
                self.ev(cta_id, me, What::TmemDealloc { col: v.col, cols }, span);
                Ok(OpDone::Next)
            }
            LOp::TmaLoad {
                desc,
                coords,
                smem,
                bar,
                pred,
                gather,
                multicast,
                bar_cta,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpDone::Next);
                }
                let map = self.tma_desc(s, *desc, span)?;
                let d = map.as_deref().unwrap_or(&prog.descs[*desc as usize]);
                let dst = smem_of(&ev(smem)?)?;
                let baddr = bar_of(&ev(bar)?)?;
                let mask = match multicast {
                    Some(m) => Some(int_of(&ev(m)?, "the multicast mask")?),
                    None => None,
                };
                let bar_rank = match bar_cta {
                    Some(r) => Some(int_of(&ev(r)?, "the barrier's CTA rank")?),
                    None => None,
                };
                let (kind, pieces, addrs): (TmaKind, Vec<(u64, u64)>, _) = if *gather {
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
                        tma::box_addresses(&dst)?,
                    )
                } else {
                    let mut cs = Vec::with_capacity(coords.len());
                    for c in coords {
                        cs.push(s32(int_of(&ev(c)?, "a TMA coordinate")?, "a TMA coordinate")?);
                    }
                    let (msgs, addrs) = tma::tile_copy(d, &cs, &dst, false)?;
                    // The copy's box rows, message after message, land in up to 4 pieces.
                    let rows = msgs.total_rows().max(1);
                    let p = self.sched.pieces(rows.min(4) as u32).max(1) as u64;
                    let per = rows.div_ceil(p);
                    let pieces = (0..p)
                        .map(|i| (i * per, ((i + 1) * per).min(rows)))
                        .filter(|(lo, hi)| lo < hi)
                        .collect();
                    (TmaKind::Load { msgs }, pieces, addrs)
                };
                let id = self.new_id();
                let pc = self.cur_pc;
                let hbop = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
                let dests = self.tma_dests(s, a, baddr, hbop, (mask, bar_rank), (name, span))?;
                let opi = self.add_tma(
                    s,
                    TmaOp {
                        kind,
                        dests,
                        desc: *desc,
                        map: map.clone(),
                        addrs,
                        bar: baddr,
                        id,
                        span,
                        agent: a as u32,
                        name,
                        left: pieces.len() as u32,
                        hb: hbop,
                    },
                );
                self.counters.async_ops += 1;
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                self.ev(cta_id, Unit::Tma, What::Start { op: name, id }, span);
                for (lo, hi) in pieces {
                    let delay = self.sched.latency(AsyncKind::TmaLoad);
                    self.schedule(s, delay, EvKind::TmaPiece { op: opi, lo, hi });
                }
                Ok(OpDone::Next)
            }
            LOp::TmaStore {
                desc,
                coords,
                smem,
                pred,
                scatter,
                reduce,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpDone::Next);
                }
                let map = self.tma_desc(s, *desc, span)?;
                let d = map.as_deref().unwrap_or(&prog.descs[*desc as usize]);
                let src = smem_of(&ev(smem)?)?;
                let (kind, addrs) = if *scatter {
                    let xs = ints_of(&ev(&coords[0])?)?;
                    let col = s32(
                        int_of(&ev(&coords[1])?, "the scatter column")?,
                        "the scatter column",
                    )?;
                    tma::check_gather(d, &xs, col, &src, true)?;
                    (
                        TmaKind::Scatter {
                            xs,
                            col,
                            data: Default::default(),
                        },
                        tma::box_addresses(&src)?,
                    )
                } else {
                    let mut cs = Vec::with_capacity(coords.len());
                    for c in coords {
                        cs.push(s32(int_of(&ev(c)?, "a TMA coordinate")?, "a TMA coordinate")?);
                    }
                    let (msgs, addrs) = tma::tile_copy(d, &cs, &src, true)?;
                    (
                        TmaKind::Store {
                            msgs,
                            data: Default::default(),
                            reduce: *reduce,
                        },
                        addrs,
                    )
                };
                let id = self.new_id();
                let pc = self.cur_pc;
                let hbop = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
                let opi = self.add_tma(
                    s,
                    TmaOp {
                        kind,
                        dests: Vec::new(),
                        desc: *desc,
                        map: map.clone(),
                        addrs,
                        bar: 0,
                        id,
                        span,
                        agent: a as u32,
                        name,
                        left: 1,
                        hb: hbop,
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
                Ok(OpDone::Next)
            }
            LOp::TmaStoreWait { pendings, full } => {
                let pending = store_pending(&self.cta(s).agents[a], *full);
                if pending <= *pendings {
                    if let Some(hb) = self.hb(s) {
                        hb.store_wait(a, *full);
                    }
                    if resumed {
                        self.ev(cta_id, me, What::Resumed { on: "tma.store_wait" }, span);
                    }
                    Ok(OpDone::Next)
                } else {
                    Ok(OpDone::Wait(Block::StoreWait {
                        n: *pendings,
                        full: *full,
                    }))
                }
            }
            LOp::Op(K::MbarInit { bar, count }) => {
                let addr = bar_of(&ev(bar)?)?;
                let n = int_of(&ev(count)?, "the arrival count")?;
                let n = mbarrier::init_count(n).map_err(|m| Fault::error(Code::MbarCount, m))?;
                let c = self.cta(s);
                if let Some(BarState::Live(_, first)) = c.bars.get(&addr) {
                    let first = *first;
                    self.diags.push(diagnostics::barrier_reinit(addr, span, first));
                }
                let c = self.cta(s);
                c.bars.insert(addr, BarState::Live(Mbar::init(n), span));
                if let Some(hb) = c.hb.as_deref_mut() {
                    hb.bar_init(a, addr);
                }
                self.ev(cta_id, me, What::Init { bar: addr, count: n }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(
                K::MbarExpect { bar, bytes, pred, .. }
                | K::MbarExpectTx { bar, bytes, pred }
                | K::MbarCompleteTx { bar, bytes, pred },
            ) => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpDone::Next);
                }
                let addr = bar_of(&ev(bar)?)?;
                let n = int_of(&ev(bytes)?, "the byte count")?;
                let remote = match op {
                    LOp::Op(K::MbarExpect { cta: Some(r), .. }) => {
                        Some(self.cluster_peer(s, int_of(&ev(r)?, "the CTA rank")?, name)?)
                    }
                    _ => None,
                };
                match op {
                    LOp::Op(K::MbarExpect { .. }) if remote.is_some_and(|t| t != s) => {
                        let t = remote.unwrap_or(s);
                        let acts = [BarAct::ExpectTx(n), BarAct::Arrive(1)];
                        self.remote_bar_act((s, a, t), me, span, addr, &acts)?;
                    }
                    LOp::Op(K::MbarExpect { .. }) => {
                        self.bar_act(s, me, span, addr, BarAct::ExpectTx(n), None)?;
                        self.bar_act(s, me, span, addr, BarAct::Arrive(1), None)?;
                    }
                    LOp::Op(K::MbarExpectTx { .. }) => {
                        self.bar_act(s, me, span, addr, BarAct::ExpectTx(n), None)?
                    }
                    _ => self.bar_act(s, me, span, addr, BarAct::CompleteTx(n), None)?,
                }
                Ok(OpDone::Next)
            }
            LOp::Op(K::MbarArrive {
                bar,
                count,
                pred,
                cta,
            }) => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpDone::Next);
                }
                let addr = bar_of(&ev(bar)?)?;
                let n = interp::arrive_count(count.as_deref().map(ev).transpose()?.as_ref())?;
                let t = match cta {
                    Some(r) => self.cluster_peer(s, int_of(&ev(r)?, "the CTA rank")?, name)?,
                    None => s,
                };
                if t == s {
                    self.bar_act(s, me, span, addr, BarAct::Arrive(n), None)?;
                } else {
                    // A remote arrival releases at cluster scope
                    // (`mbarrier.arrive.release.cluster.shared::cluster`).
                    self.remote_bar_act((s, a, t), me, span, addr, &[BarAct::Arrive(n)])?;
                }
                Ok(OpDone::Next)
            }
            LOp::Op(K::MbarWait { bar, phase }) => {
                let addr = bar_of(&ev(bar)?)?;
                let parity = (int_of(&ev(phase)?, "the phase")? & 1) as u32;
                let b = *self.cta(s).bar(addr)?;
                if self.opts.check {
                    self.check_aliasing(s, a, addr, b.phase, parity);
                }
                if b.test_wait(parity) {
                    let pc = self.cur_pc;
                    if let Some(hb) = self.hb(s) {
                        hb.acquire(a, addr, pc);
                    }
                    self.ev(cta_id, me, What::WaitDone { bar: addr, parity }, span);
                    Ok(OpDone::Next)
                } else {
                    Ok(OpDone::Wait(Block::Mbar { addr, parity }))
                }
            }
            LOp::Op(K::MbarTestWait { bar, phase }) => {
                let addr = bar_of(&ev(bar)?)?;
                let parity = (int_of(&ev(phase)?, "the phase")? & 1) as u32;
                let b = *self.cta(s).bar(addr)?;
                let passed = b.test_wait(parity);
                if passed {
                    let pc = self.cur_pc;
                    if let Some(hb) = self.hb(s) {
                        hb.acquire(a, addr, pc);
                    }
                }
                Ok(OpDone::Value(Value::Bool(passed)))
            }
            LOp::ClcTryCancel {
                result,
                bar,
                multicast,
            } => {
                let v = smem_of(&ev(result)?)?;
                let addrs = views::view_addresses(&v)
                    .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
                let baddr = bar_of(&ev(bar)?)?;
                if let Some(seen) = self.cta(s).clc_failed {
                    self.diags.push(
                        Diagnostic::error(
                            Code::ClcMisuse,
                            "`clc.try_cancel` after this CTA read a response that cancelled nothing",
                            span,
                            "undefined behaviour (PTX: clusterlaunchcontrol.try_cancel)",
                        )
                        .with_label(seen, "the CTA learned here that no launch was left to cancel")
                        .with_help("stop asking once a response says nothing was cancelled: leave the loop"),
                    );
                }
                let id = self.new_id();
                let pc = self.cur_pc;
                let hbop = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
                let dests = self.clc_dests(s, a, baddr, hbop, *multicast, span)?;
                self.counters.async_ops += 1;
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                self.ev(cta_id, Unit::Tma, What::Start { op: name, id }, span);
                let delay = self.sched.latency(AsyncKind::TmaLoad);
                self.schedule(
                    s,
                    delay,
                    EvKind::Clc(Box::new(ClcReq {
                        addrs,
                        elem_bits: v.dtype.bits(),
                        bar: baddr,
                        id,
                        span,
                        name,
                        dests,
                    })),
                );
                Ok(OpDone::Next)
            }
            LOp::Op(K::ClcQuery { result }) => {
                let v = smem_of(&ev(result)?)?;
                let bits = self.read_smem_view(s, a, &v)?;
                let eb = v.dtype.bits();
                // The four little-endian words `fire_clc` wrote.
                let mut bytes = Vec::with_capacity(16);
                for b in &bits {
                    for k in 0..eb / 8 {
                        bytes.push((b >> (8 * k)) as u8);
                    }
                }
                let word = |i: usize| -> u32 {
                    let mut w = [0u8; 4];
                    for (k, x) in w.iter_mut().enumerate() {
                        *x = bytes.get(4 * i + k).copied().unwrap_or(0);
                    }
                    u32::from_le_bytes(w)
                };
                let canceled = word(0) & 1 == 1;
                if !canceled && self.cta(s).clc_failed.is_none() {
                    self.cta(s).clc_failed = Some(span);
                }
                Ok(OpDone::Value(eval::clc_query_value(
                    canceled,
                    [word(1), word(2), word(3)],
                )))
            }
            LOp::Op(K::MbarInvalidate { bar }) => {
                let addr = bar_of(&ev(bar)?)?;
                self.cta(s).bar(addr)?;
                self.cta(s).bars.insert(addr, BarState::Invalid(span));
                self.ev(cta_id, me, What::Invalidate { bar: addr }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(
                K::FenceAsyncShared {}
                | K::FenceMbarrierInit {}
                | K::Tcgen05FenceBefore {}
                | K::Tcgen05FenceAfter {},
            ) => {
                match op {
                    LOp::Op(K::FenceAsyncShared {}) => {
                        if let Some(hb) = self.hb(s) {
                            hb.fence(a);
                        }
                    }
                    LOp::Op(K::FenceMbarrierInit {}) => {
                        if let Some(hb) = self.hb(s) {
                            hb.init_fence(a);
                        }
                    }
                    _ => {}
                }
                self.ev(cta_id, me, What::Fence { op: name }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(K::ClusterSync {}) | LOp::Op(K::ClusterWait {}) => {
                if !resumed && matches!(op, LOp::Op(K::ClusterSync {})) {
                    self.cluster_arrive(s, a, true, name)?;
                    self.ev(cta_id, me, What::Fence { op: name }, span);
                }
                match self.cluster_try_wait(s, a, name)? {
                    None => {
                        if resumed {
                            self.ev(cta_id, me, What::Resumed { on: name }, span);
                        }
                        Ok(OpDone::Next)
                    }
                    Some(b) => Ok(OpDone::Wait(b)),
                }
            }
            LOp::Op(K::ClusterArrive { relaxed }) => {
                let relaxed = match relaxed {
                    Some(r) => ev(r)?.as_bool().unwrap_or(false),
                    None => false,
                };
                self.cluster_arrive(s, a, !relaxed, name)?;
                self.ev(cta_id, me, What::Fence { op: name }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(K::BarSync {}) => {
                self.ev(cta_id, me, What::Fence { op: name }, span);
                Ok(OpDone::Next)
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
                    return Ok(OpDone::Next);
                }
                let peer = if *cta_group == 2 {
                    Some(self.pair_peer(s, "tcgen05.mma")?)
                } else {
                    None
                };
                let a_op = match ev(av)? {
                    Value::Smem(v) => AOperand::Smem(v),
                    Value::Tmem(v) => AOperand::Tmem(v),
                    other => return Err(Fault::unsupported(format!("MMA A operand is {}", other.kind()))),
                };
                let bv = smem_of(&ev(b)?)?;
                let accv = tmem_of(&ev(acc)?)?;
                let sc = match scales.as_deref() {
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
                let kind = match peer {
                    None => PipeKind::Mma(m),
                    Some(peer) => {
                        if m.scales.is_some()
                            || !matches!(m.a, AOperand::Smem(_))
                            || accv.shape.as_slice().first() != Some(&128)
                        {
                            return Err(Fault::unsupported("the simulator models cta_group::2 MMAs with A in shared memory, no block scaling, and 128 accumulator rows per CTA (M = 256)"));
                        }
                        // The odd CTA's halves are checked in its own state, as the pair
                        // leader's accesses through its agent there.
                        let (sid, pc) = (self.cta(s).id, self.cur_pc);
                        let peer_hb = match self.peer_step(s, a, peer as usize) {
                            Some(_) => self.hb(peer as usize).map(|h| h.peer_issue(sid, pc)).unwrap_or(0),
                            None => 0,
                        };
                        PipeKind::MmaPair { op: m, peer, peer_hb }
                    }
                };
                self.pipe_push(s, a, kind, span, name);
                Ok(OpDone::Next)
            }
            LOp::Op(K::Tcgen05Cp { src, dst }) => {
                let sv = smem_of(&ev(src)?)?;
                let dv = tmem_of(&ev(dst)?)?;
                self.pipe_push(s, a, PipeKind::Cp { src: sv, dst: dv }, span, name);
                Ok(OpDone::Next)
            }
            LOp::Commit {
                bar,
                pred,
                cta_group,
                multicast,
            } => {
                if !self.pred(pred, frame, cx)? {
                    return Ok(OpDone::Next);
                }
                let targets = match multicast {
                    Some(m) => {
                        let mask = int_of(&ev(m)?, "the multicast mask")?;
                        if *cta_group == 2 {
                            self.pair_peer(s, "tcgen05.commit")?;
                        }
                        self.mask_slots(s, mask, name)?
                    }
                    None if *cta_group == 2 => vec![s, self.pair_peer(s, "tcgen05.commit")? as usize],
                    None => vec![s],
                };
                let addr = bar_of(&ev(bar)?)?;
                for &t in &targets {
                    self.cta(t).bar(addr)?;
                    self.check_init_visible((s, a, t), addr, "commits to", span);
                }
                let own = targets.contains(&s);
                let peers = targets.iter().filter(|&&t| t != s).map(|&t| t as u32).collect();
                self.pipe_push(
                    s,
                    a,
                    PipeKind::Commit {
                        bar: addr,
                        own,
                        peers,
                    },
                    span,
                    name,
                );
                Ok(OpDone::Next)
            }
            LOp::Op(K::TmemLoad { src, .. }) => {
                let v = tmem_of(&ev(src)?)?;
                let c = self.cta(s);
                let ag = &c.agents[a];
                let shape = v.shape.as_slice().to_vec();
                let n = v.shape.numel();
                let mut bits = Vec::with_capacity(n as usize);
                // Scale factors: every warp reads the copy in its own lane quarter; the tile
                // is the first warp's.
                let quarters = if v.scales {
                    vec![ag.first_warp % 4]
                } else {
                    vec![0]
                };
                for &cell in views::tmem_view_cells(&v, quarters[0]).iter() {
                    check_lane(ag, cell.lane, name)?;
                    bits.push(c.tmem.read(cell, v.dtype.bits())?);
                }
                if self.opts.check {
                    let cells = tmem_cells_in(&v, &quarters);
                    let pc = self.cur_pc;
                    self.check_tmem_init(s, pc, &cells);
                    let h = self
                        .hb(s)
                        .and_then(|hb| hb.generic_tmem(a, pc, Kind::Read, &cells));
                    self.hazard(s, h, true);
                }
                self.ev(cta_id, me, What::Exec { op: name }, span);
                Ok(OpDone::Value(Value::Tile(Arc::new(Tile {
                    dtype: v.dtype,
                    shape,
                    bits,
                }))))
            }
            LOp::Op(K::TmemStore { dst, value }) => {
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
                // Scale factors: each warp writes the copy in its own lane quarter
                // (docs/hardware/tmem-scales.md), so a warpgroup fills all four.
                let quarters = if v.scales {
                    partition_quarters(&c.agents[a])
                } else {
                    vec![0]
                };
                let cells: Vec<Arc<Vec<views::TmemCell>>> =
                    quarters.iter().map(|&q| views::tmem_view_cells(&v, q)).collect();
                for (lin, &value) in t.bits.iter().enumerate() {
                    for qc in &cells {
                        let cell = qc[lin];
                        check_lane(&c.agents[a], cell.lane, name)?;
                        c.tmem.write(cell, v.dtype.bits(), value)?;
                    }
                }
                if self.opts.check {
                    let cells = tmem_cells_in(&v, &quarters);
                    let pc = self.cur_pc;
                    let h = self
                        .hb(s)
                        .and_then(|hb| hb.generic_tmem(a, pc, Kind::Write, &cells));
                    self.hazard(s, h, true);
                }
                self.ev(cta_id, me, What::Exec { op: name }, span);
                Ok(OpDone::Next)
            }
            LOp::Op(K::Wgmma {
                a: av,
                b,
                acc,
                use_acc,
            }) => {
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
                let arith = self.opts.mma.wgmma;
                let r = mma::wgmma(&self.cta(s).smem, &a_op, &bv, &accv, ua, &arith)?;
                if self.opts.check {
                    let pc = self.cur_pc;
                    let a_addrs = match &a_op {
                        WgmmaA::Smem(v) => views::view_addresses(v).map(|x| (x, v.dtype.bits())),
                        WgmmaA::Regs(_) => None,
                    };
                    let b_addrs = views::view_addresses(&bv).map(|x| (x, bv.dtype.bits()));
                    let mut reads: Vec<(&[(u32, u32)], u32)> = Vec::new();
                    for (x, bits) in a_addrs.iter().chain(b_addrs.iter()) {
                        self.check_smem_init(s, pc, x);
                        reads.push((x.as_slice(), *bits));
                    }
                    let h = self.hb(s).and_then(|hb| hb.wgmma(a, pc, &reads));
                    self.hazard(s, h, false);
                }
                self.counters.mmas += 1;
                self.counters.async_ops += 1;
                self.cta(s).agents[a].wgmma_pending += 1;
                self.cta(s).agents[a].wgmma_issued += 1;
                let id = self.new_id();
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                let earliest = self.now + self.sched.latency(AsyncKind::Wgmma).max(1);
                let ag = &mut self.cta(s).agents[a];
                let done = earliest.max(ag.wgmma_last_done + 1);
                ag.wgmma_last_done = done;
                self.schedule(s, done - self.now, EvKind::WgmmaDone { agent: a as u32, id });
                Ok(OpDone::Value(Value::Tile(Arc::new(r))))
            }
            LOp::WgmmaWait { pendings } => {
                let ag = &self.cta(s).agents[a];
                if ag.wgmma_pending <= *pendings {
                    let retired = ag.wgmma_issued - ag.wgmma_pending;
                    if let Some(hb) = self.hb(s) {
                        hb.wgmma_wait(a, retired);
                    }
                    if resumed {
                        self.ev(cta_id, me, What::Resumed { on: "wgmma.wait" }, span);
                    }
                    Ok(OpDone::Next)
                } else {
                    Ok(OpDone::Wait(Block::WgmmaWait { n: *pendings }))
                }
            }
            LOp::Op(K::CpAsync {
                dst,
                ptr,
                offsets,
                mask,
            }) => {
                let v = smem_of(&ev(dst)?)?;
                let Value::Ptr(ti) = ev(ptr)? else {
                    return Err(Fault::unsupported("cp.async needs a pointer"));
                };
                let offs = ev(offsets)?;
                let maskv = mask.as_deref().map(ev).transpose()?;
                // The global reads happen at the issue (checked as the partition's reads); the
                // shared-memory writes land later, all at once.
                let mut seen = self.global_seen(ti);
                let data = global_load(
                    &self.global[ti as usize],
                    &offs,
                    maskv.as_ref(),
                    None,
                    seen.as_mut(),
                )?;
                if let Some(elems) = seen {
                    let elems = elems.into_iter().map(|e| (e, false)).collect();
                    self.global_part_access(s, a, ti, Kind::Read, None, elems);
                }
                let t = as_tile(&data)?;
                if t.shape != v.shape.as_slice() {
                    return Err(Fault::unsupported(format!(
                        "cp.async of {:?} elements into a {:?} view",
                        t.shape,
                        v.shape.as_slice()
                    )));
                }
                let addrs = views::view_addresses(&v)
                    .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
                let writes = addrs
                    .iter()
                    .zip(t.bits.iter())
                    .map(|(&(addr, shift), &b)| (addr, shift, eval::convert_bits(t.dtype, v.dtype, b)))
                    .collect();
                let pc = self.cur_pc;
                let hb = self.hb(s).map(|hb| hb.issue(a, pc)).unwrap_or(0);
                let ag = &mut self.cta(s).agents[a];
                let group = ag.cp_committed + 1;
                *ag.cp_pending.entry(group).or_insert(0) += 1;
                let (time, seq) = (ag.cp_splits + 1, ag.cp_seq);
                ag.cp_seq += 1;
                ag.cp_inflight.insert(seq);
                self.counters.async_ops += 1;
                let id = self.new_id();
                self.ev(cta_id, me, What::Issue { op: name, id }, span);
                let delay = self.sched.latency(AsyncKind::CpAsync).max(1);
                let land = CpLand {
                    agent: a as u32,
                    group,
                    time,
                    seq,
                    hb,
                    id,
                    bits: v.dtype.bits(),
                    writes,
                    span,
                };
                self.schedule(s, delay, EvKind::CpAsyncLand(Box::new(land)));
                Ok(OpDone::Next)
            }
            LOp::CpAsyncArrive { bar, noinc } => {
                let addr = bar_of(&ev(bar)?)?;
                let count = self.cta(s).agents[a].warps * 32;
                if !noinc {
                    self.bar_act(s, me, span, addr, BarAct::Increment(count), None)?;
                }
                let pc = self.cur_pc;
                let hb = self.hb(s).map(|hb| hb.issue(a, pc)).unwrap_or(0);
                let ag = &mut self.cta(s).agents[a];
                // The copies issued so far have the checker time `cp_splits + 1`; later ones
                // get a time of their own, which this arrival does not release.
                ag.cp_splits += 1;
                let arrive = CpArrive {
                    before: ag.cp_seq,
                    addr,
                    count,
                    hb,
                    upto: ag.cp_splits,
                    span,
                };
                ag.cp_arrives.push_back(arrive);
                self.ev(cta_id, me, What::Exec { op: name }, span);
                self.cp_arrivals(s, a)?;
                Ok(OpDone::Next)
            }
            LOp::Op(K::CpAsyncCommit {}) => {
                let ag = &mut self.cta(s).agents[a];
                ag.cp_committed += 1;
                ag.cp_splits += 1;
                let end = ag.cp_splits;
                ag.cp_group_end.push(end);
                self.ev(cta_id, me, What::Exec { op: name }, span);
                Ok(OpDone::Next)
            }
            LOp::CpAsyncWait { pendings } => {
                let ag = &self.cta(s).agents[a];
                let upto = ag.cp_committed.saturating_sub(*pendings);
                if ag.cp_pending.range(..=upto).next().is_none() {
                    let time = upto.checked_sub(1).map_or(0, |g| ag.cp_group_end[g as usize]);
                    if let Some(hb) = self.hb(s) {
                        hb.cp_async_wait(a, time);
                    }
                    if resumed {
                        self.ev(cta_id, me, What::Resumed { on: "cp.async.wait" }, span);
                    }
                    Ok(OpDone::Next)
                } else {
                    Ok(OpDone::Wait(Block::CpAsyncWait { n: *pendings, upto }))
                }
            }
            LOp::Op(K::SmemLoad { src, cta, .. }) => {
                let v = smem_of(&ev(src)?)?;
                let t = match cta {
                    Some(r) => self.cluster_peer(s, int_of(&ev(r)?, "the CTA rank")?, name)?,
                    None => s,
                };
                if t != s {
                    return self.peer_smem_load(s, a, t, &v);
                }
                let bits = self.read_smem_view(s, a, &v)?;
                Ok(OpDone::Value(Value::Tile(Arc::new(Tile {
                    dtype: v.dtype,
                    shape: v.shape.as_slice().to_vec(),
                    bits,
                }))))
            }
            LOp::Op(K::SmemStore { dst, value, cta }) => {
                let v = smem_of(&ev(dst)?)?;
                let t = as_tile(&ev(value)?)?;
                let shape = v.shape.as_slice().to_vec();
                let t = if t.shape != shape {
                    Arc::new(eval::broadcast_to(&t, &shape)?)
                } else {
                    t
                };
                let peer = match cta {
                    Some(r) => self.cluster_peer(s, int_of(&ev(r)?, "the CTA rank")?, name)?,
                    None => s,
                };
                let addrs = self.store_tile(s, a, peer, &v, &t, value)?;
                let eb = v.dtype.bits();
                if peer != s {
                    self.peer_smem_write(s, a, peer, &addrs, eb);
                    return Ok(OpDone::Next);
                }
                self.generic_smem_access(s, a, Kind::Write, &addrs, eb);
                Ok(OpDone::Next)
            }
            // The accesses of a shared buffer through an index tile: the buffer, the indices
            // and each element's address, then what each operation does there.
            LOp::Op(
                k @ (K::SmemGather {
                    src: buf,
                    index,
                    axis,
                }
                | K::SmemScatter {
                    dst: buf,
                    index,
                    axis,
                    ..
                }
                | K::SmemAtomic {
                    dst: buf,
                    index,
                    axis,
                    ..
                }),
            ) => {
                let v = smem_of(&ev(buf)?)?;
                let idx = as_tile(&ev(index)?)?;
                let ax = int_of(&ev(axis)?, "the axis")?;
                let all = smem_index_addrs(&v, &idx, ax, name)?;
                let eb = v.dtype.bits();
                match k {
                    K::SmemScatter { value, .. } => {
                        let t = as_tile(&ev(value)?)?;
                        // Element order: of several elements aimed at one address the last one
                        // stays (the hardware keeps one of them, which one unspecified).
                        self.cta(s).smem.write_elems(&all, eb, |lin| t.bits[lin])?;
                        if self.opts.check {
                            let c = self.cta(s);
                            let o = taint::origin(value, &c.agents[a].undef);
                            c.smem_undef.store(&all, eb.div_ceil(8), o);
                        }
                        self.generic_smem_access(s, a, Kind::Write, &all, eb);
                        Ok(OpDone::Next)
                    }
                    K::SmemAtomic {
                        op: kind,
                        value,
                        mask,
                        ..
                    } => {
                        let k = int_of(&ev(kind)?, "the atomic operation")?;
                        let op = usize::try_from(k)
                            .ok()
                            .and_then(|i| AtomicOp::ALL.get(i).copied())
                            .ok_or_else(|| Fault::unsupported("an unknown atomic operation"))?;
                        let t = as_tile(&ev(value)?)?;
                        let m = match mask {
                            Some(m) => Some(as_tile(&ev(m)?)?),
                            None => None,
                        };
                        let on = |i: usize| m.as_ref().is_none_or(|m| m.bits.get(i).is_some_and(|&b| b != 0));
                        let addrs: Vec<(u32, u32)> = all
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| on(*i))
                            .map(|(_, x)| *x)
                            .collect();
                        let mut old = vec![0u64; all.len()];
                        // One read-modify-write per element, in element order (the hardware's order
                        // among elements aimed at one address is unspecified; the final value is the
                        // same for every order of these commutative operations, `xchg` aside).
                        for (i, ad) in all.iter().enumerate() {
                            if !on(i) {
                                continue;
                            }
                            let mut cur = Vec::with_capacity(1);
                            self.cta(s)
                                .smem
                                .read_elems(std::slice::from_ref(ad), eb, &mut cur)?;
                            let cur = cur.first().copied().unwrap_or(0);
                            let new = global::atomic_combine(op, v.dtype, cur, t.bits[i], None)?;
                            self.cta(s)
                                .smem
                                .write_elems(std::slice::from_ref(ad), eb, |_| new)?;
                            old[i] = cur;
                        }
                        if self.opts.check {
                            let pc = self.cur_pc;
                            self.check_smem_init(s, pc, &addrs);
                            self.generic_smem_access(s, a, Kind::Write, &addrs, eb);
                        }
                        Ok(OpDone::Value(Value::Tile(Arc::new(Tile {
                            dtype: v.dtype,
                            shape: idx.shape.clone(),
                            bits: old,
                        }))))
                    }
                    _ => {
                        let mut bits = Vec::with_capacity(all.len());
                        self.cta(s).smem.read_elems(&all, eb, &mut bits)?;
                        if self.opts.check {
                            self.generic_smem_access(s, a, Kind::Read, &all, eb);
                        }
                        Ok(OpDone::Value(Value::Tile(Arc::new(Tile {
                            dtype: v.dtype,
                            shape: idx.shape.clone(),
                            bits,
                        }))))
                    }
                }
            }
            LOp::Op(K::GlobalLoad {
                ptr,
                offsets,
                mask,
                other,
            }) => {
                let Value::Ptr(ti) = ev(ptr)? else {
                    return Err(Fault::unsupported("global.load needs a pointer"));
                };
                let offs = ev(offsets)?;
                let maskv = mask.as_deref().map(ev).transpose()?;
                let otherv = other.as_deref().map(ev).transpose()?;
                let mut seen = self.global_seen(ti);
                let g = &self.global[ti as usize];
                let v = global_load(g, &offs, maskv.as_ref(), otherv.as_ref(), seen.as_mut())?;
                if let Some(elems) = seen {
                    let elems = elems.into_iter().map(|e| (e, false)).collect();
                    self.global_part_access(s, a, ti, Kind::Read, None, elems);
                }
                Ok(OpDone::Value(v))
            }
            LOp::Op(K::DeviceAssert { cond, msg }) => {
                // Every element must be true; the first false one (in element order) stops
                // the launch as the hardware's assertion trap does.
                let failed = match ev(cond)? {
                    Value::Bool(b) => (!b).then(String::new),
                    Value::Int(i) => (i == 0).then(String::new),
                    Value::Tile(t) => t.bits.iter().position(|&b| b & 1 == 0).map(|i| {
                        let mut idx = vec![0; t.shape.len()];
                        crate::value::unravel(i as u64, &t.shape, &mut idx);
                        format!(" at element {idx:?} of its shape {:?}", t.shape)
                    }),
                    _ => return Err(Fault::unsupported("device.assert needs an i1 tile or scalar")),
                };
                if let Some(at) = failed {
                    let m = match ev(msg)? {
                        Value::Int(i) => self
                            .prog
                            .assert_messages
                            .get(i as usize)
                            .cloned()
                            .unwrap_or_default(),
                        _ => String::new(),
                    };
                    return Err(Fault::CodedTrap(
                        Code::DeviceAssert,
                        CudaError::Assert,
                        format!("device assertion `{m}` failed{at}"),
                    ));
                }
                Ok(OpDone::Next)
            }
            LOp::Op(K::GlobalStore {
                ptr,
                offsets,
                value,
                mask,
            }) => {
                let Value::Ptr(ti) = ev(ptr)? else {
                    return Err(Fault::unsupported("global.store needs a pointer"));
                };
                let offs = ev(offsets)?;
                let val = ev(value)?;
                let maskv = mask.as_deref().map(ev).transpose()?;
                let mut seen = self.global_seen(ti).map(|_| Vec::new());
                global_store(
                    &mut self.global[ti as usize],
                    &offs,
                    &val,
                    maskv.as_ref(),
                    seen.as_mut(),
                )?;
                if let Some(elems) = seen {
                    self.global_part_access(s, a, ti, Kind::Write, None, elems);
                }
                Ok(OpDone::Next)
            }
            LOp::GlobalAtomic(at) => {
                let Value::Ptr(ti) = ev(&at.ptr)? else {
                    return Err(Fault::unsupported("global.atomic needs a pointer"));
                };
                let offs = ev(&at.offsets)?;
                let val = ev(&at.value)?;
                let maskv = at.mask.as_ref().map(ev).transpose()?;
                let cmpv = at.compare.as_ref().map(ev).transpose()?;
                let mut seen = self.global_seen(ti);
                let old = global_atomic(
                    &mut self.global[ti as usize],
                    at.op,
                    &offs,
                    &val,
                    maskv.as_ref(),
                    cmpv.as_ref(),
                    seen.as_mut(),
                )?;
                if let Some(elems) = seen {
                    let elems = elems.into_iter().map(|e| (e, false)).collect();
                    let order = (at.sem, at.scope);
                    // An atomic read (`load`) reads; every other atomic writes.
                    let kind = if at.op == AtomicOp::Load {
                        Kind::Read
                    } else {
                        Kind::Write
                    };
                    self.global_part_access(s, a, ti, kind, Some(order), elems);
                }
                Ok(OpDone::Value(old))
            }
            LOp::MakeDesc(m) => {
                self.make_tensormap(s, m, frame, cx, span)?;
                Ok(OpDone::Next)
            }
            LOp::DescAcquire { desc } => {
                self.acquire_tensormap(s, *desc);
                Ok(OpDone::Next)
            }
            // Lowered to LOp variants of their own (allocations, TMA copies, MMAs, waits,
            // atomics) or to an expression (`inline_asm`) by `crate::lower`.
            LOp::Op(other @ lowered_apart!()) => Err(Fault::unlowered(other)),
        }
    }

    pub(super) fn add_tma(&mut self, s: usize, op: TmaOp) -> u32 {
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

    pub(super) fn pipe_push(&mut self, s: usize, a: usize, kind: PipeKind, span: Span, name: &'static str) {
        let id = self.new_id();
        self.counters.async_ops += 1;
        let pc = self.cur_pc;
        let hb = self.hb(s).map(|h| h.issue(a, pc)).unwrap_or(0);
        let c = self.cta(s);
        let cta_id = c.id;
        c.pipe.push_back(PipeOp {
            kind,
            id,
            span,
            name,
            hb,
        });
        self.ev(cta_id, Unit::Agent(a as u32), What::Issue { op: name, id }, span);
        self.pipe_kick(s);
    }
}

/// The functional machine's [`Effects`]: values, hazards and undefined-value tracking of
/// partition `a` of CTA slot `s`.
struct Fx<'m, 'p, 's> {
    m: &'m mut Machine<'p, 's>,
    s: usize,
    a: usize,
    cx: EvalCtx,
    /// The partition resumes a blocked operation.
    resumed: bool,
}

impl Effects for Fx<'_, '_, '_> {
    type Wait = Block;

    fn eval(&mut self, _pc: u32, expr: &CExpr, frame: &[Value]) -> OpResult<Result<Value, Block>> {
        eval::eval(expr, frame, &self.cx).map(Ok)
    }

    fn op(&mut self, pc: u32, op: &LOp, name: &'static str, frame: &[Value]) -> OpResult<OpDone<Block>> {
        let span = self.m.prog.code[pc as usize].span;
        let (m, s, a) = (&mut *self.m, self.s, self.a);
        m.counters.ops += 1;
        if let Some(hb) = m.hb(s) {
            hb.step(a);
        }
        if m.opts.check {
            m.undef_now = None;
            m.undef_sinks(s, a, op);
        }
        m.exec_op(s, a, op, name, span, frame, &self.cx, self.resumed)
    }

    fn bound(&mut self, dsts: &[u32], from: Bound<'_>) {
        if !self.m.opts.check {
            return;
        }
        let o = match from {
            Bound::Expr(e) => taint::origin(e, &self.m.cta(self.s).agents[self.a].undef),
            Bound::Op => self.m.undef_now.take(),
        };
        set_undef(&mut self.m.cta(self.s).agents[self.a].undef, dsts, o);
    }

    fn scalar(&mut self, e: &CExpr, frame: &[Value]) -> OpResult<Value> {
        eval::eval(e, frame, &self.cx)
    }

    fn branch_on(&mut self, pc: u32, cond: &CExpr) {
        if self.m.opts.check {
            if let Some(o) = taint::origin(cond, &self.m.cta(self.s).agents[self.a].undef) {
                self.m.reached.add(o, Sink::Branch, pc);
            }
        }
    }

    fn spawn(&mut self, w: &WorkerSpec, frame: &[Value], span: Span) {
        let (m, s, a) = (&mut *self.m, self.s, self.a);
        let cta_id = m.cta(s).id;
        let c = m.cta(s);
        let idx = c.agents.len() as u32;
        let undef = c.agents[a].undef.clone();
        c.agents.push(Agent {
            pc: w.entry,
            frame: frame.to_vec(),
            undef,
            first_warp: w.first_warp,
            warps: w.warps,
            ..Agent::default()
        });
        c.agents[a].children.push(idx);
        if let Some(hb) = m.hb(s) {
            hb.fork(a, idx as usize);
        }
        m.ev(cta_id, Unit::Agent(idx), What::AgentStart, span);
    }

    fn join(&mut self) -> Option<Block> {
        let a = self.a;
        let c = self.m.cta(self.s);
        let done = c.agents[a]
            .children
            .iter()
            .all(|&ch| c.agents[ch as usize].state == AState::Done);
        if !done {
            return Some(Block::Join);
        }
        let children = c.agents[a].children.clone();
        if let Some(hb) = c.hb.as_deref_mut() {
            hb.join(a, &children);
        }
        None
    }

    fn end(&mut self, _span: Span) -> Option<Block> {
        None
    }
}

/// The shared-memory `(byte, shift)` of every element an indexed access (`smem.gather`,
/// `smem.scatter`, `smem.atomic`) of view `v` reaches: element `p` of `idx` (row-major) aims at
/// `v` at `p` with coordinate `axis` replaced by `idx[p]`. An index outside the view's extent
/// along `axis` is a trap (on the GPU it reaches another element or another buffer).
fn smem_index_addrs(v: &SmemView, idx: &Tile, axis: i64, name: &str) -> OpResult<Vec<(u32, u32)>> {
    let vshape = v.shape.as_slice().to_vec();
    let ax = usize::try_from(axis)
        .ok()
        .filter(|&x| x < vshape.len() && idx.shape.len() == vshape.len())
        .ok_or_else(|| Fault::unsupported(format!("{name}: axis {axis} of a rank-{} view", vshape.len())))?;
    let all = views::view_addresses(v)
        .ok_or_else(|| Fault::trap(CudaError::IllegalAddress, "shared address overflow"))?;
    let mut out = Vec::with_capacity(idx.numel());
    for lin in 0..idx.numel() {
        // Row-major coordinates of `lin` in the index tile, with the axis' replaced.
        let mut rem = lin;
        let mut coords = vec![0u64; vshape.len()];
        for d in (0..vshape.len()).rev() {
            let e = idx.shape[d] as usize;
            coords[d] = (rem % e) as u64;
            rem /= e;
        }
        let at = idx.i(lin);
        if at < 0 || at as u64 >= vshape[ax] as u64 {
            return Err(Fault::trap(
                CudaError::IllegalAddress,
                format!("{name}: index {at} outside 0..{} along axis {ax}", vshape[ax]),
            ));
        }
        coords[ax] = at as u64;
        let t = coords
            .iter()
            .zip(&vshape)
            .fold(0u64, |acc, (&c, &e)| acc * e as u64 + c);
        out.push(all[t as usize]);
    }
    Ok(out)
}
