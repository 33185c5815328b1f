//! Allocations (shared and tensor memory) and TMA copies: tile loads and stores, gather4 and
//! scatter4, their boxes, coordinates and bulk groups.

use super::*;

impl<'c, 'k> Lowerer<'c, 'k> {
    pub(super) fn smem_alloc(&mut self, op: &Op) -> LResult<Val> {
        let name = op.kind.name();
        let alloc = self
            .ck
            .alloc_of(op)
            .ok_or_else(|| invalid(name, op.span, "no allocation planned for this buffer"))?
            .clone();
        let Ty::Smem(t) = self.op_type(op)? else {
            return Err(invalid(
                name,
                op.span,
                "the checker did not resolve a shared-memory buffer",
            ));
        };
        let (dtype, shape, layout) = (t.dtype, t.shape, t.layout);
        let align = 1024u64.min(1u64 << (alloc.offset as u64 | 1024).trailing_zeros());
        let base = Addr {
            reg: self.k.smem,
            off: alloc.offset as i64,
        };
        let alloc = self.ck.alloc_index(op).unwrap_or(0);
        Ok(Val::Smem(SmemView::whole(
            dtype, shape, layout, base, align, alloc,
        )))
    }

    pub(super) fn tmem_alloc(&mut self, op: &Op) -> LResult<Val> {
        let name = op.kind.name();
        let span = op.span;
        let alloc = self
            .ck
            .alloc_of(op)
            .ok_or_else(|| invalid(name, span, "no allocation planned for this buffer"))?
            .clone();
        let AllocKind::Tmem(tt) = &alloc.kind else {
            return Err(invalid(
                name,
                span,
                "the planned allocation is not in tensor memory",
            ));
        };
        let Ty::Tmem(ty) = self.op_type(op)? else {
            return Err(invalid(
                name,
                span,
                "the checker did not resolve a tensor-memory buffer",
            ));
        };
        let shape = ty.shape;
        let view = |reg: Reg, cols: u32| TmemView {
            dtype: tt.dtype,
            full: shape.clone(),
            shape: shape.clone(),
            offsets: vec![0; shape.len()],
            block: tt.block,
            col_stride: tt.col_stride,
            scales: tt.scales,
            reg,
            dynamic: None,
            cols,
        };
        if !alloc.manual {
            let reg = self
                .k
                .tmem
                .ok_or_else(|| invalid(name, span, "tensor memory was not allocated in the prologue"))?;
            let col = self
                .ck
                .alloc_index(op)
                .and_then(|i| self.tmem_plan.get(&i).copied())
                .ok_or_else(|| invalid(name, span, "no TMEM columns planned for this buffer"))?;
            return Ok(Val::Tmem(view(reg, col)));
        }
        if tt.scales {
            return Err(unsupported(
                name,
                span,
                "scale-factor buffers allocated with manual=true",
            ));
        }
        // A manual allocation: one warp of the partition allocates, everyone reads the address.
        let ncols = alloc.size;
        let slot = self.reserve_slot(4);
        let smem = self.k.smem;
        self.before_issue();
        let p = self.e.reg(RegClass::Pred);
        let skip = self.e.label("tmem_alloc");
        self.e.comment(format!(
            "tcgen05.alloc of {ncols} columns by the partition's first warp"
        ));
        self.e.ins(format!("setp.ne.u32 {p}, {}, 0", self.part.pwarp));
        self.e.ins(format!("@{p} bra {skip}"));
        self.e.ins(format!(
            "tcgen05.alloc.cta_group::{}.sync.aligned.shared::cta.b32 [{smem}+{slot}], {ncols}",
            super::CTA_GROUP_PLACEHOLDER
        ));
        self.e.place(&skip);
        self.part.issue_dirty = true;
        self.part.tmem_dirty = true;
        self.sync_after_issue();
        let t = self.e.reg(RegClass::B32);
        self.e.ins(format!("ld.shared.b32 {t}, [{smem}+{slot}]"));
        Ok(Val::Tmem(view(t, 0)))
    }

    pub(super) fn tmem_dealloc(&mut self, t: &TmemView, span: Span) -> LResult<()> {
        let tt = bwsim_isa::typeck::TmemTy {
            dtype: t.dtype,
            shape: t.full.clone(),
            block: t.block,
            col_stride: t.col_stride,
            scales: t.scales,
            alloc: 0,
        };
        let ncols = tt.cols();
        if !ncols.is_power_of_two() || !(32..=512).contains(&ncols) {
            return Err(invalid(
                "tmem.dealloc",
                span,
                format!("{ncols} columns is not a tcgen05 allocation size"),
            ));
        }
        let addr = self.tmem_region_addr(t);
        // Every thread must be done with the buffer.
        self.part.all_dirty = true;
        self.part.tmem_dirty = true;
        self.before_issue();
        let p = self.e.reg(RegClass::Pred);
        let skip = self.e.label("tmem_dealloc");
        self.e.ins(format!("setp.ne.u32 {p}, {}, 0", self.part.pwarp));
        self.e.ins(format!("@{p} bra {skip}"));
        self.e.ins("tcgen05.fence::after_thread_sync");
        self.e.ins(format!(
            "tcgen05.dealloc.cta_group::{}.sync.aligned.b32 {addr}, {ncols}",
            super::CTA_GROUP_PLACEHOLDER
        ));
        self.e.place(&skip);
        Ok(())
    }

    /// Make every thread of the partition observe what its issuing warp/thread just did.
    pub(super) fn sync_after_issue(&mut self) {
        if self.part.warps > 1 {
            self.part_barrier();
        } else {
            self.e.ins("bar.warp.sync -1");
            self.part.issue_dirty = false;
            self.part.all_dirty = false;
        }
    }

    // ----- TMA -----

    /// The descriptor name and coordinate expressions of `desc[c0, c1, ...]`.
    pub(super) fn desc_coords<'e>(&mut self, e: &'e Expr, op: &str) -> LResult<(String, &'e [IndexItem])> {
        if let ExprKind::Index(base, items) = &e.kind {
            if let Val::Desc(n) = self.expr(base)? {
                return Ok((n, items));
            }
        }
        Err(invalid(
            op,
            e.span,
            "expected a tensor descriptor with coordinates, like `a_desc[x, y]`",
        ))
    }

    pub(super) fn coord_regs(&mut self, items: &[IndexItem], op: &str, span: Span) -> LResult<Vec<String>> {
        let mut out = Vec::new();
        for it in items {
            let IndexItem::Expr(x) = it else {
                return Err(invalid(op, span, "coordinates are scalar expressions"));
            };
            let v = self.expr(x)?;
            let o = self.scalar_operand(&v, ScalarTy::I32, x.span)?;
            out.push(self.reg_operand(&o, RegClass::B32));
        }
        Ok(out)
    }

    /// The TMA box of a descriptor parameter (IR order: the block clipped as
    /// [`bwsim_isa::tma::hw_box`] says) and how many span-wide boxes cover its block's inner
    /// dimension (gather4/scatter4 issue that many messages per four rows).
    pub(super) fn tma_box(
        &self,
        dname: &str,
        span: Span,
    ) -> LResult<(bwsim_isa::typeck::DescTy, Vec<u32>, u32)> {
        let d = self.desc_ty(dname, span)?;
        let bx = bwsim_isa::tma::hw_box(&d.block, d.dtype, d.layout.swizzle().bytes());
        let nmsg = match (d.block.last(), bx.last()) {
            (Some(&b), Some(&x)) if x > 0 => b.div_ceil(x),
            _ => 1,
        };
        Ok((d, bx, nmsg))
    }

    /// Logical (unswizzled) shared address register of a view's first element, plus a
    /// constant.
    pub(super) fn smem_start(&mut self, v: &SmemView, span: Span, op: &str) -> LResult<(Reg, i64)> {
        let off = v
            .geom
            .logical_offset(&v.offsets)
            .map_err(|m| unsupported(op, span, m))?;
        Ok((v.base.reg, v.base.off + off as i64))
    }

    /// `tma.load`: with `multicast=MASK` every message is `.multicast::cluster` with the
    /// mask as its 16-bit `ctaMask`; with `bar_cta=R` it is the `.cta_group::2` form whose
    /// barrier is the one at the same offset in CTA R (`mapa`). With both, the barrier
    /// address's CTA (the even or odd one of this pair) picks that CTA in every destination's
    /// pair, as Triton 3.9 emits it for a multicast onto a pair barrier.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tma_load(
        &mut self,
        src: &Expr,
        dst: &Expr,
        bar: &Expr,
        pred: Option<&Expr>,
        multicast: Option<&Expr>,
        bar_cta: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
        let op = "tma.load";
        let group = if bar_cta.is_some() { ".cta_group::2" } else { "" };
        let mask = match multicast {
            Some(m) => {
                let v = self.expr(m)?;
                let r = self.scalar_reg(&v, ScalarTy::I32, m.span)?;
                let h = self.e.reg(RegClass::B16);
                self.e.ins(format!("cvt.u16.u32 {h}, {r}"));
                self.uses_cluster = true;
                Some(h)
            }
            None => None,
        };
        let (mc, mask) = match &mask {
            Some(h) => (".multicast::cluster", format!(", {h}")),
            None => ("", String::new()),
        };
        self.tma_tile_copy(src, dst, Some((bar, bar_cta)), pred, span, op, |m| {
            format!(
                "@{} cp.async.bulk.tensor.{}d{group}.shared::cluster.global.tile.mbarrier::complete_tx::bytes{mc} [{}+{}], [{}, {{{}}}], {}{mask}",
                m.pred, m.rank, m.sreg, m.smem_off, m.tmap, m.coords, m.bar
            )
        })
        .map(|_| ())
    }

    /// `tma.store`: `cp.async.bulk.tensor` per message, or with `reduce=OP`
    /// `cp.reduce.async.bulk.tensor` with `.OP` (the element type is the tensor map's), both
    /// joining one bulk group.
    pub(super) fn tma_store(
        &mut self,
        dst: &Expr,
        src: &Expr,
        pred: Option<&Expr>,
        reduce: Option<bwsim_isa::value_types::TmaReduceOp>,
        span: Span,
    ) -> LResult<()> {
        let op = "tma.store";
        let p = self.tma_tile_copy(dst, src, None, pred, span, op, |m| match reduce {
            Some(r) => format!(
                "@{} cp.reduce.async.bulk.tensor.{}d.global.shared::cta.{}.tile.bulk_group [{}, {{{}}}], [{}+{}]",
                m.pred,
                m.rank,
                r.name(),
                m.tmap,
                m.coords,
                m.sreg,
                m.smem_off
            ),
            None => format!(
                "@{} cp.async.bulk.tensor.{}d.global.shared::cta.tile.bulk_group [{}, {{{}}}], [{}+{}]",
                m.pred, m.rank, m.tmap, m.coords, m.sreg, m.smem_off
            ),
        })?;
        self.e.ins(format!("@{p} cp.async.bulk.commit_group"));
        Ok(())
    }

    /// One TMA tile copy between the descriptor `desc` (with its coordinates) and the shared
    /// view `smem`, issued by the partition's leader as the messages of
    /// [`bwsim_isa::tma::plan`] (docs/hardware/tma-messages.md): message `k` at the
    /// coordinates `coords + k * piece` and at the view's element `k * piece`, each moving one
    /// box of the tensor map. `ins` formats one message's instruction. Returns the issue
    /// predicate.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn tma_tile_copy(
        &mut self,
        desc: &Expr,
        smem: &Expr,
        bar: Option<(&Expr, Option<&Expr>)>,
        pred: Option<&Expr>,
        span: Span,
        op: &str,
        ins: impl Fn(&TmaMsg) -> String,
    ) -> LResult<Reg> {
        let (dname, items) = self.desc_coords(desc, op)?;
        let coords = self.coord_regs(items, op, span)?;
        let v = self.smem_arg(smem, op)?;
        // The barrier: this CTA's, or (`bar_cta`) the one at its offset in a peer CTA.
        let bar = match bar {
            Some((b, Some(rank))) => self.remote_bar(b, rank, op)?,
            Some((b, None)) => self.bar_addr(b, op)?,
            None => String::new(),
        };
        let pr = self.opt_pred(pred)?;
        let d = self.desc_ty(&dname, span)?;
        let transposed = matches!(v.geom.layout, SmemLayout::Nvmma { transposed: true, .. });
        let mut phys = v.shape.clone();
        let r = phys.len();
        if transposed && r >= 2 {
            phys.swap(r - 1, r - 2);
        }
        let plan = bwsim_isa::tma::plan(
            &d.block,
            d.dtype,
            d.layout.swizzle().bytes(),
            &d.elem_strides,
            &phys,
        )
        .map_err(|e| {
            invalid(
                op,
                span,
                format!("the shared view cannot be copied through `{dname}`: {e:?}"),
            )
        })?;
        // A view of another element type in one message is what the hardware runs for it
        // (the descriptor's box from the view's first byte, `tma-dtype`); pieces that are not
        // the box, or several messages over another element type, are not lowered.
        if plan.mismatch.is_some() || (v.geom.dtype != d.dtype && plan.messages() > 1) {
            return Err(invalid(
                op,
                span,
                "the shared view is not whole boxes of the descriptor (the verifier reports it)",
            ));
        }
        let (sreg, soff) = self.smem_start(&v, span, op)?;
        let tmap = self
            .k
            .tmaps
            .get(&dname)
            .map(|t| t.0)
            .ok_or_else(|| invalid(op, span, "unknown descriptor"))?;
        let rank = d.block.len();
        let n = plan.messages();
        // Each message's offset from the view's start, and its coordinates' offsets.
        let mut msgs = Vec::with_capacity(n as usize);
        for m in 0..n {
            if n == 1 {
                msgs.push((0i64, vec![0u32; rank]));
                continue;
            }
            let o = plan.origin(m);
            let mut lo = o.clone();
            if transposed && r >= 2 {
                lo.swap(r - 1, r - 2);
            }
            let idx: Vec<u32> = v.offsets.iter().zip(&lo).map(|(a, b)| a + b).collect();
            let off = v
                .geom
                .logical_offset(&idx)
                .map_err(|e| unsupported(op, span, e))?;
            msgs.push((v.base.off + off as i64, o));
        }
        self.before_issue();
        let p = self.issue_pred(pr);
        for (smem_off, o) in msgs {
            // Coordinates innermost first.
            let mut cs = Vec::with_capacity(rank);
            for (k, c) in coords.iter().enumerate().rev() {
                let add = o.get(k).copied().unwrap_or(0);
                if add == 0 {
                    cs.push(c.clone());
                } else {
                    let t = self.e.reg(RegClass::B32);
                    self.e.ins(format!("add.s32 {t}, {c}, {add}"));
                    cs.push(t.to_string());
                }
            }
            let msg = TmaMsg {
                pred: p.to_string(),
                rank,
                tmap: tmap.to_string(),
                coords: cs.join(", "),
                sreg: sreg.to_string(),
                smem_off: if n == 1 { soff } else { smem_off },
                bar: bar.clone(),
            };
            self.e.ins(ins(&msg));
        }
        Ok(p)
    }

    /// gather4 (`gather` true) or scatter4: the row offsets tile is held by the partition's
    /// warps in groups of four consecutive registers; lane 0 of each warp issues the messages
    /// for the rows it holds (docs/semantics.md#gather4-and-scatter4).
    pub(super) fn gather_scatter(
        &mut self,
        gather: bool,
        de: &Expr,
        se: &Expr,
        bar: Option<&Expr>,
        pred: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
        let op = if gather { "tma.gather" } else { "tma.scatter" };
        let (dname, items) = self.desc_coords(de, op)?;
        let [IndexItem::Expr(xe), IndexItem::Expr(ye)] = items else {
            return Err(invalid(
                op,
                span,
                "gather/scatter coordinates are `[x_offsets, y]`",
            ));
        };
        let xv = self.expr(xe)?;
        let Val::Tile(xt) = xv else {
            return Err(invalid(op, xe.span, "the row offsets must be an i32 tile"));
        };
        let yv = self.expr(ye)?;
        let y = self.scalar_operand(&yv, ScalarTy::I32, ye.span)?;
        let y = self.reg_operand(&y, RegClass::B32);
        let v = self.smem_arg(se, op)?;
        let a = match bar {
            Some(b) => Some(self.bar_addr(b, op)?),
            None => None,
        };
        let pr = self.opt_pred(pred)?;
        let (d, bx, nmsg) = self.tma_box(&dname, span)?;
        if v.geom.full.len() != 2 || v.offsets.iter().any(|&o| o != 0) {
            return Err(unsupported(
                op,
                span,
                "gather/scatter through a sliced shared-memory view",
            ));
        }
        let rows = v.shape[0];
        let sw = d.layout.swizzle().bytes() as u64;
        // Offsets layout: registers 0 and 1 select elements +1, +2; no lane holds a distinct
        // offset; warps hold disjoint groups (or copies, which stay silent).
        let xt = if xt.dtype != DType::I32 && xt.dtype != DType::U32 {
            self.cast_tile(&xt, DType::I32, span)?
        } else {
            xt
        };
        let ok = xt.ll.regs.len() >= 2
            && xt.ll.regs[0] == 1
            && xt.ll.regs[1] == 2
            && xt.ll.lanes.iter().all(|&b| b == 0)
            && xt.ll.warps.iter().all(|&b| b & 3 == 0);
        let xt = if ok {
            xt
        } else {
            let ll = self.gather_layout(&xt.ll.shape, span)?;
            self.in_layout(&xt, &ll, span)?
        };
        let ll = xt.ll.clone();
        // Byte distance between consecutive rows and between column blocks.
        let row_bytes = v
            .geom
            .logical_offset(&[1, 0])
            .map_err(|m| unsupported(op, span, m))?;
        let colblk = if nmsg > 1 { rows as u64 * sw } else { 0 };
        // Several warps issue: every thread's earlier shared-memory accesses (and everything
        // the leader issued, e.g. the barrier's init) must be ordered before any warp's
        // message, as `before_issue` does for single-thread issue.
        if self.part.all_dirty || self.part.issue_dirty {
            self.sync_after_issue();
        }
        let tmap = self
            .k
            .tmaps
            .get(&dname)
            .map(|t| t.0)
            .ok_or_else(|| invalid(op, span, "unknown descriptor"))?;
        // Issuing thread: lane 0 of each warp whose warp bits with a zero basis are zero.
        let mut issue = self.lane0_pred();
        for (i, &b) in ll.warps.iter().enumerate() {
            if b == 0 {
                let t = self.e.reg(RegClass::B32);
                let q = self.e.reg(RegClass::Pred);
                self.e.ins(format!("bfe.u32 {t}, {}, {i}, 1", self.part.pwarp));
                self.e.ins(format!("setp.eq.and.u32 {q}, {t}, 0, {issue}"));
                issue = q;
            }
        }
        if let Some(pr) = pr {
            let q = self.e.reg(RegClass::Pred);
            self.e.ins(format!("and.pred {q}, {issue}, {pr}"));
            issue = q;
        }
        // This warp's first row (the thread part of the row index).
        let wrow = self.thread_part(&ll.lanes.clone(), &ll.warps.clone());
        let sbase = self.e.reg(RegClass::B32);
        self.e
            .ins(format!("mad.lo.u32 {sbase}, {wrow}, {row_bytes}, {}", v.base.reg));
        let base_off = v.base.off;
        for g in 0..ll.num_regs() / 4 {
            let r0 = 4 * g;
            let row_static = ll.reg_flat(r0) as u64;
            if row_static & 3 != 0 {
                return Err(invalid(
                    op,
                    span,
                    "row offsets are not in groups of four consecutive rows",
                ));
            }
            let rs: Vec<Reg> = (0..4).map(|k| xt.regs[r0 + k]).collect();
            for j in 0..nmsg {
                let col = if j == 0 {
                    y.clone()
                } else {
                    let c = self.e.reg(RegClass::B32);
                    self.e.ins(format!("add.s32 {c}, {y}, {}", j * bx[1]));
                    c.to_string()
                };
                let off = base_off + (row_static * row_bytes + j as u64 * colblk) as i64;
                let list = format!("{col}, {}, {}, {}, {}", rs[0], rs[1], rs[2], rs[3]);
                if let Some(a) = &a {
                    self.e.ins(format!(
                        "@{issue} cp.async.bulk.tensor.2d.shared::cluster.global.tile::gather4.mbarrier::complete_tx::bytes [{sbase}+{off}], [{tmap}, {{{list}}}], {a}"
                    ));
                } else {
                    self.e.ins(format!("@{issue} cp.async.bulk.tensor.2d.global.shared::cta.tile::scatter4.bulk_group [{tmap}, {{{list}}}], [{sbase}+{off}]"));
                }
            }
        }
        if !gather {
            self.e.ins(format!("@{issue} cp.async.bulk.commit_group"));
        }
        let _ = rows;
        Ok(())
    }

    /// The canonical row-offset layout of gather4/scatter4 (Gluon's
    /// `SliceLayout(0, BlockedLayout([1, 4], [32, 1], [1, num_warps], [1, 0]))`).
    pub(super) fn gather_layout(&self, shape: &[u32], span: Span) -> LResult<LinearLayout> {
        let l = TileLayout::Slice {
            dim: 0,
            parent: Box::new(TileLayout::Blocked {
                spt: vec![1, 4],
                tpw: vec![32, 1],
                wpc: vec![1, self.part.warps],
                order: vec![1, 0],
            }),
        };
        self.layout_for(&l, shape, span)
    }

    // ----- tensor memory -----
}

/// One span-wide message of a TMA tile copy, for its instruction's format.
pub(super) struct TmaMsg {
    pred: String,
    rank: usize,
    tmap: String,
    /// Coordinates, innermost first, comma-separated.
    coords: String,
    sreg: String,
    smem_off: i64,
    /// The mbarrier operand (loads only).
    bar: String,
}
