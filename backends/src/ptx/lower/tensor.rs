//! Tensor memory and the tensor pipes: TMEM load/store messages (and the scale-factor layout),
//! MMA operand descriptors, tcgen05.mma and tcgen05.cp (wgmma: [`super::wgmma`]).

use super::access::*;
use super::*;
use crate::ptx::desc::{self, MmaKind};
use crate::ptx::smem::{operand_desc, Major, OperandDesc};

impl<'c, 'k> Lowerer<'c, 'k> {
    /// The enable-input-D predicates of an MMA's K steps: the first step's from `first` (the
    /// `use_acc` value), and an always-true one for the steps after it.
    pub(super) fn accumulate_preds(&mut self, first: Val, span: Span) -> LResult<(Reg, Reg)> {
        let p_first = match first {
            Val::Bool(b) => {
                let p = self.e.reg(RegClass::Pred);
                self.e.ins(format!("setp.ne.b32 {p}, {}, 0", b as i32));
                p
            }
            v => self.pred_of(&v, span)?,
        };
        let p_true = self.e.reg(RegClass::Pred);
        self.e.ins(format!("setp.eq.b32 {p_true}, 0, 0"));
        Ok((p_first, p_true))
    }

    /// Registers of each TMEM access of a 32x32b-shaped transfer: for the tile layout `ll`
    /// over the view `t`, every register's column relative to the warp's base column.
    pub(super) fn tmem_plan(
        &mut self,
        t: &TmemView,
        ll: &LinearLayout,
        span: Span,
        op: &str,
    ) -> LResult<(Reg, TmemCells, Option<u32>)> {
        // The layout must be tmem32x32b-shaped: for TMEM block M 128 the lanes and the two low
        // warp bits give rows 0..127 (`32x32b`); for block M 64 lanes 0..15 and the warps
        // give rows, lane 16 a column half (`16x32bx2`, its column offset returned).
        let n = *t.shape.last().unwrap_or(&1);
        let nb = n.trailing_zeros();
        let row = |b: u32| 1u32 << (nb + b);
        let bad = || {
            unsupported(
                op,
                span,
                "a tensor-memory access whose register layout is not tmem32x32b",
            )
        };
        if t.shape.len() != 2 || ll.lanes.len() != 5 || ll.warps.len() < 2 {
            return Err(bad());
        }
        let (half, wrow0) = match t.block[0] {
            128 => {
                if (0..5).any(|i| ll.lanes[i] != row(i as u32)) || !t.offsets[0].is_multiple_of(128) {
                    return Err(bad());
                }
                (None, 5)
            }
            64 => {
                // Lane 16 picks the message's second half: a column offset, or the next
                // 64-row block, which sits in the same lanes at later columns.
                let h = ll.lanes[4];
                if (0..4).any(|i| ll.lanes[i] != row(i as u32)) || h == 0 || !t.offsets[0].is_multiple_of(64)
                {
                    return Err(bad());
                }
                let (lane0, _, _) = tmem_cell(t, t.offsets[0], t.offsets[1]);
                let (lane_h, _, _) = tmem_cell(t, t.offsets[0] + (h >> nb), t.offsets[1] + (h & (n - 1)));
                if lane_h != lane0 {
                    return Err(bad());
                }
                (Some(h), 4)
            }
            _ => return Err(bad()),
        };
        if ll.warps[0] != row(wrow0) || ll.warps[1] != row(wrow0 + 1) {
            return Err(bad());
        }
        if !self.part.first_warp.is_multiple_of(4) {
            return Err(unsupported(
                op,
                span,
                "tensor-memory access from a partition that does not start on a warpgroup",
            ));
        }
        if t.dtype.bits() != 32 && !(t.dtype.bits() == 8 && t.scales) && t.dtype.bits() != 16 {
            return Err(unsupported(
                op,
                span,
                format!("tensor-memory access to {} elements", t.dtype),
            ));
        }
        let (_, c0, _) = tmem_cell(t, t.offsets[0], t.offsets[1]);
        // The column offset of the element at flat offset `b` (row and column bits) from the
        // region's first.
        let col_of = |b: u32| {
            let (_, c, _) = tmem_cell(t, t.offsets[0] + (b >> nb), t.offsets[1] + (b & (n - 1)));
            c - c0
        };
        let imm = half.map(col_of);
        // Thread part of the column: warp bits beyond the second (8 warps split N).
        let extra: Vec<u32> = ll.warps[2..].to_vec();
        let mut col_part = None;
        if !extra.is_empty() {
            let mut bases = vec![0u32, 0];
            for &b in &extra {
                if b >= row(0) {
                    return Err(unsupported(
                        op,
                        span,
                        "tensor-memory layouts with more than 4 warps along M",
                    ));
                }
                bases.push(col_of(b));
            }
            col_part = Some(self.thread_part(&[0, 0, 0, 0, 0], &bases));
        }
        // Per register: (column relative to the region's first column, register, bit shift).
        let mut cells = Vec::new();
        for r in 0..ll.num_regs() {
            let f = ll.reg_flat(r);
            let (m, nn) = (f >> nb, f & (n - 1));
            let (lane, c, sh) = tmem_cell(t, t.offsets[0] + m, t.offsets[1] + nn);
            if lane != 0 {
                return Err(bad());
            }
            cells.push((c, r, sh));
        }
        // Warp base address: the warp's lane quarter of the region, plus the column part.
        let a = self.tmem_warp_addr(t);
        if let Some(cp) = col_part {
            self.e.ins(format!("add.u32 {a}, {a}, {cp}"));
        }
        Ok((a, cells, imm))
    }

    /// The TMEM address of this warp's lane quarter of `t`'s region: region + (warp % 4) << 21
    /// (32 lanes << 16).
    fn tmem_warp_addr(&mut self, t: &TmemView) -> Reg {
        let base = self.tmem_region_addr(t);
        let wq = self.e.reg(RegClass::B32);
        self.e.ins(format!("and.b32 {wq}, {}, 3", self.k.warp));
        self.e.ins(format!("shl.b32 {wq}, {wq}, 21"));
        let a = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {a}, {base}, {wq}"));
        a
    }

    /// Runs of cells on consecutive columns, each a power of two long (at most 128), for
    /// 32-bit elements: (first column, registers).
    pub(super) fn column_runs(cells: &TmemCells) -> Vec<(u32, Vec<usize>)> {
        let mut sorted: Vec<(u32, usize)> = cells.iter().map(|&(c, r, _)| (c, r)).collect();
        sorted.sort();
        let mut runs: Vec<(u32, Vec<usize>)> = Vec::new();
        for (c, r) in sorted {
            match runs.last_mut() {
                Some((c0, rs)) if *c0 + rs.len() as u32 == c && rs.len() < 128 => rs.push(r),
                _ => runs.push((c, vec![r])),
            }
        }
        // Split runs into power-of-two pieces.
        let mut out = Vec::new();
        for (c0, rs) in runs {
            let mut i = 0;
            while i < rs.len() {
                let mut n = 1;
                while n * 2 <= rs.len() - i && n * 2 <= 128 {
                    n *= 2;
                }
                out.push((c0 + i as u32, rs[i..i + n].to_vec()));
                i += n;
            }
        }
        out
    }

    /// A `tcgen05.ld`/`st` of `t` in its native layout `native`, ordered after the earlier
    /// accesses: its [`Self::tmem_plan`], and the message shape with the immediate operand
    /// that `16x32bx2` takes.
    fn tmem_access(
        &mut self,
        t: &TmemView,
        native: &LinearLayout,
        span: Span,
        op: &str,
    ) -> LResult<(Reg, TmemCells, &'static str, Option<u32>)> {
        self.before_all_access();
        self.e.ins("tcgen05.fence::after_thread_sync");
        let (addr, cells, imm) = self.tmem_plan(t, native, span, op)?;
        Ok((
            addr,
            cells,
            if imm.is_some() { "16x32bx2" } else { "32x32b" },
            imm,
        ))
    }

    pub(super) fn tmem_load(&mut self, t: &TmemView, l: &TileLayout, span: Span) -> LResult<Tile> {
        let op = "tmem.load";
        if t.scales {
            return Err(unsupported(op, span, "loads from a scale-factor buffer"));
        }
        let native = self.tmem_native(t, span)?;
        let (addr, cells, shape, imm) = self.tmem_access(t, &native, span, op)?;
        let ld_imm = imm.map_or(String::new(), |i| format!(", {i}"));
        let out = self.fresh_tile(t.dtype, native.clone(), Some(TileLayout::Tmem32x32b), span)?;
        if t.dtype.bits() == 32 {
            for (c, rs) in Self::column_runs(&cells) {
                // Runs of at most 32 registers, each deferred until first read.
                for (ci, chunk) in rs.chunks(32).enumerate() {
                    let c = c + 32 * ci as u32;
                    let regs: Vec<Reg> = chunk.iter().map(|&r| out.regs[r]).collect();
                    let list = regs.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(", ");
                    let a = self.e.reg(RegClass::B32);
                    self.e.ins(format!("add.u32 {a}, {addr}, {c}"));
                    self.e.defer_load(
                        regs,
                        vec![format!(
                            "tcgen05.ld.sync.aligned.{shape}.x{}.b32 {{{list}}}, [{a}]{ld_imm}",
                            chunk.len()
                        )],
                    );
                }
            }
        } else {
            // Packed 8/16-bit elements: load each 32-bit cell once, extract the elements.
            let bits = t.dtype.bits();
            for (c, elems) in by_column(&cells) {
                let a = self.e.reg(RegClass::B32);
                self.e.ins(format!("add.u32 {a}, {addr}, {c}"));
                let w = self.e.reg(RegClass::B32);
                self.e.ins(format!(
                    "tcgen05.ld.sync.aligned.{shape}.x1.b32 {{{w}}}, [{a}]{ld_imm}"
                ));
                self.e.ins("tcgen05.wait::ld.sync.aligned");
                for (r, sh) in elems {
                    let x = self.e.reg(RegClass::B32);
                    self.e.ins(format!("bfe.u32 {x}, {w}, {sh}, {bits}"));
                    self.e.ins(format!("cvt.u16.u32 {}, {x}", out.regs[r]));
                }
            }
        }
        self.part.all_dirty = true;
        self.part.tmem_dirty = true;
        let want = self.layout_for(l, &t.shape, span)?;
        let mut res = self.in_layout(&out, &want, span)?;
        res.parent = Some(l.clone());
        Ok(res)
    }

    /// The register layout a TMEM message moves `t` in: `tmem32x32b`'s for the tile's shape,
    /// except a 128-row tile of 64-row blocks, whose second block sits in the same lanes as
    /// the first at later columns: lanes 0..15 and the warps give rows 0..63, lane 16 the
    /// second block (a `16x32bx2` message whose immediate is that block's column offset).
    fn tmem_native(&mut self, t: &TmemView, span: Span) -> LResult<LinearLayout> {
        let mut native = self.layout_for(&TileLayout::Tmem32x32b, &t.shape, span)?;
        if t.block[0] == 64
            && t.shape.len() == 2
            && t.shape[0] == 128
            && native.lanes.len() == 5
            && native.warps.len() >= 2
        {
            let n = t.shape[1];
            let row = |k: u32| n << k;
            if native.lanes[..5] == [row(0), row(1), row(2), row(3), row(4)]
                && native.warps[..2] == [row(5), row(6)]
            {
                native.lanes[4] = row(6);
                native.warps[0] = row(4);
                native.warps[1] = row(5);
            }
        }
        Ok(native)
    }

    pub(super) fn tmem_store(&mut self, t: &TmemView, v: &Tile, span: Span) -> LResult<()> {
        let op = "tmem.store";
        if t.scales {
            return self.scales_store(t, v, span);
        }
        let native = self.tmem_native(t, span)?;
        let v = self.in_layout(v, &native, span)?;
        let (addr, cells, shape, imm) = self.tmem_access(t, &native, span, op)?;
        let st_imm = imm.map_or(String::new(), |i| format!("{i}, "));
        if t.dtype.bits() == 32 {
            for (c, rs) in Self::column_runs(&cells) {
                let a = self.e.reg(RegClass::B32);
                self.e.ins(format!("add.u32 {a}, {addr}, {c}"));
                let tmp: Vec<String> = rs.iter().map(|&r| v.regs[r].to_string()).collect();
                self.e.ins(format!(
                    "tcgen05.st.sync.aligned.{shape}.x{}.b32 [{a}], {st_imm}{{{}}}",
                    rs.len(),
                    tmp.join(", ")
                ));
            }
        } else {
            for (c, elems) in by_column(&cells) {
                let w = self.e.reg(RegClass::B32);
                self.e.ins(format!("mov.b32 {w}, 0"));
                for (r, sh) in elems {
                    let x = self.e.reg(RegClass::B32);
                    self.e.ins(format!("cvt.u32.u16 {x}, {}", v.regs[r]));
                    if t.dtype.bits() == 8 {
                        self.e.ins(format!("and.b32 {x}, {x}, 255"));
                    }
                    self.e.ins(format!("shl.b32 {x}, {x}, {sh}"));
                    self.e.ins(format!("or.b32 {w}, {w}, {x}"));
                }
                let a = self.e.reg(RegClass::B32);
                self.e.ins(format!("add.u32 {a}, {addr}, {c}"));
                self.e.ins(format!(
                    "tcgen05.st.sync.aligned.{shape}.x1.b32 [{a}], {st_imm}{{{w}}}"
                ));
            }
        }
        self.e.ins("tcgen05.wait::st.sync.aligned");
        self.part.all_dirty = true;
        self.part.tmem_dirty = true;
        Ok(())
    }

    /// `tmem.store` into a scale-factor buffer, in the hardware's layout
    /// (docs/hardware/tmem-scales.md): thread `l` of every warp writes rows `l`, `l + 32`, ...
    /// into its lane quarter, one 32-bit cell per 32-row chunk holding the row's K blocks as
    /// bytes; all four quarters get the same data, as Triton writes it.
    pub(super) fn scales_store(&mut self, t: &TmemView, v: &Tile, span: Span) -> LResult<()> {
        let op = "tmem.store";
        if t.full.len() != 2 || t.shape != t.full || t.offsets.iter().any(|&o| o != 0) {
            return Err(unsupported(op, span, "stores into part of a scale-factor buffer"));
        }
        if !self.part.warps.is_multiple_of(4) || !self.part.first_warp.is_multiple_of(4) {
            return Err(unsupported(
                op,
                span,
                "scale factors stored by a partition that is not whole warpgroups",
            ));
        }
        let (m, nk) = (t.full[0], t.full[1]);
        let bits = t.dtype.bits();
        if !m.is_power_of_two() || m < 32 || !nk.is_power_of_two() || bits != 8 {
            return Err(unsupported(
                op,
                span,
                format!("a {m} x {nk} {} scale-factor buffer", t.dtype),
            ));
        }
        let (mb, kb) = (m.trailing_zeros(), nk.trailing_zeros());
        let row = |b: u32| 1u32 << (kb + b);
        let mut regs: Vec<u32> = (0..kb).map(|b| 1 << b).collect();
        regs.extend((5..mb).map(row));
        let ll = LinearLayout {
            shape: vec![m, nk],
            regs,
            lanes: (0..5).map(row).collect(),
            warps: vec![0; self.part.warps.trailing_zeros() as usize],
        };
        let v = self.in_layout(v, &ll, span)?;
        self.before_all_access();
        self.e.ins("tcgen05.fence::after_thread_sync");
        // Cells of the hardware's placement (bwsim_isa::typeck::scale_cell): each thread holds
        // rows `lane + 32 i`, whose lane within the quarter is its own.
        let mut cells: std::collections::BTreeMap<u32, Vec<(usize, u32)>> = Default::default();
        for r in 0..ll.num_regs() {
            let f = ll.reg_flat(r);
            let (row, k) = (f >> kb, f & (nk - 1));
            let (_, col, shift) = bwsim_isa::typeck::scale_cell(m, row, k, bits);
            cells.entry(col).or_default().push((r, shift));
        }
        let addr = self.tmem_warp_addr(t);
        for (col, elems) in cells {
            let w = self.e.reg(RegClass::B32);
            self.e.ins(format!("mov.b32 {w}, 0"));
            for (r, sh) in elems {
                let x = self.e.reg(RegClass::B32);
                self.e.ins(format!("cvt.u32.u16 {x}, {}", v.regs[r]));
                self.e.ins(format!("and.b32 {x}, {x}, 255"));
                self.e.ins(format!("shl.b32 {x}, {x}, {sh}"));
                self.e.ins(format!("or.b32 {w}, {w}, {x}"));
            }
            let a = self.e.reg(RegClass::B32);
            self.e.ins(format!("add.u32 {a}, {addr}, {col}"));
            self.e
                .ins(format!("tcgen05.st.sync.aligned.32x32b.x1.b32 [{a}], {{{w}}}"));
        }
        self.e.ins("tcgen05.wait::st.sync.aligned");
        self.part.all_dirty = true;
        self.part.tmem_dirty = true;
        Ok(())
    }

    // ----- tensor pipe -----

    /// A 64-bit register holding a shared-memory descriptor whose start address is
    /// `sreg + off` (the address field added at run time).
    pub(super) fn desc_reg(&mut self, sreg: Reg, off: i64, fixed: u64) -> Reg {
        let a = self.e.reg(RegClass::B32);
        if off != 0 {
            self.e.ins(format!("add.u32 {a}, {sreg}, {off}"));
            self.e.ins(format!("shr.u32 {a}, {a}, 4"));
        } else {
            self.e.ins(format!("shr.u32 {a}, {sreg}, 4"));
        }
        self.e.ins(format!("and.b32 {a}, {a}, 16383"));
        let d = self.e.reg(RegClass::B64);
        self.e.ins(format!("cvt.u64.u32 {d}, {a}"));
        self.e.ins(format!("or.b64 {d}, {d}, {fixed}"));
        d
    }

    /// Fields of one MMA operand at element `(mn0, k0)` of a view (A: rows M; B: rows K).
    pub(super) fn mma_operand(
        &mut self,
        v: &SmemView,
        mn0: u32,
        k0: u32,
        is_a: bool,
        span: Span,
        op: &str,
    ) -> LResult<OperandDesc> {
        if v.geom.full.len() != 2 {
            return Err(unsupported(
                op,
                span,
                "MMA operands must be 2-D shared-memory views",
            ));
        }
        let (r0, c0) = (v.offsets[0], v.offsets[1]);
        let (mn, k) = if is_a {
            (r0 + mn0, c0 + k0)
        } else {
            (c0 + mn0, r0 + k0)
        };
        let d = operand_desc(&v.geom, mn, k, is_a).map_err(|m| unsupported(op, span, m))?;
        let period = d.swizzle.period() as u64;
        if v.align < period.min(1024) {
            return Err(unsupported(
                op,
                span,
                format!(
                    "an MMA operand buffer aligned to {} bytes (its swizzle needs {period})",
                    v.align
                ),
            ));
        }
        Ok(d)
    }

    /// `tcgen05.mma` and `tcgen05.mma_scaled`.
    pub(super) fn tcgen05_mma(&mut self, m: MmaOperands, span: Span) -> LResult<()> {
        let MmaOperands {
            a, b, acc, scales, ..
        } = m;
        let (use_acc, pred, cta_group) = (m.use_acc.as_ref(), m.pred.as_ref(), m.cta_group.as_ref());
        let op = if scales.is_some() {
            "tcgen05.mma_scaled"
        } else {
            "tcgen05.mma"
        };
        let group = self.cta_group(cta_group, op, span)?;
        self.cta_groups.push((group, span));
        let av = self.expr(a)?;
        let bv = self.smem_arg(b, op)?;
        let cv = self.tmem_arg(acc, op)?;
        let sv = match scales {
            Some((x, y)) => Some((self.tmem_arg(x, op)?, self.tmem_arg(y, op)?)),
            None => None,
        };
        if group == 2 {
            // A CTA pair's MMA (docs/semantics.md#clusters-and-cta-pairs, cta_group::2): each CTA
            // names its own halves, A [M/2, K] and B [K, N/2] at the same shared offsets in both
            // CTAs, and its [M/2, N] accumulator rows at the same TMEM address; the instruction is
            // M x N.
            self.uses_cluster = true;
            if sv.is_some() {
                return Err(unsupported(op, span, "block-scaled CTA-pair (cta_group::2) MMAs"));
            }
            if !matches!(av, Val::Smem(_)) || cv.shape.len() != 2 || cv.shape[0] != 128 {
                return Err(unsupported(
                    op,
                    span,
                    "CTA-pair MMAs other than A in shared memory and 128 accumulator rows per CTA (M = 256)",
                ));
            }
        }
        let (a_dtype, m, k) = match &av {
            Val::Smem(_) | Val::Tmem(_) => av.matrix(),
            _ => None,
        }
        .ok_or_else(|| wrong_kind(op, a.span, "A must be in shared or tensor memory", &av))?;
        let n = bv.shape[1];
        // The instruction's shape: a pair's M and N are twice this CTA's halves.
        let (mi, ni) = if group == 2 { (2 * m, 2 * n) } else { (m, n) };
        if group == 2 && cv.shape[1] != ni {
            return Err(invalid(
                op,
                span,
                format!("a CTA-pair accumulator of {} columns for N = {ni}", cv.shape[1]),
            ));
        }
        let kind = MmaKind::select(a_dtype, bv.geom.dtype, sv.as_ref().map(|s| s.0.dtype))
            .map_err(|e| unsupported(op, span, e.0))?;
        let kstep = kind.k_per_instr();
        if k % kstep != 0 {
            return Err(invalid(op, span, format!("K = {k} is not a multiple of {kstep}")));
        }
        let a_major = match &av {
            Val::Smem(s) => {
                if matches!(s.geom.layout, SmemLayout::Nvmma { transposed: true, .. }) {
                    Major::MN
                } else {
                    Major::K
                }
            }
            _ => Major::K,
        };
        let b_major = if matches!(bv.geom.layout, SmemLayout::Nvmma { transposed: true, .. }) {
            Major::K
        } else {
            Major::MN
        };
        // A block-scaled kind's descriptor, with scale-factor id `id` for both A and B.
        let scaled_idesc = |scale: DType, id| {
            desc::tcgen05_idesc_block_scaled(
                kind,
                a_dtype,
                bv.geom.dtype,
                scale,
                a_major,
                b_major,
                m,
                n,
                id,
                id,
            )
        };
        let idesc = match &sv {
            None => desc::tcgen05_idesc(kind, a_dtype, bv.geom.dtype, cv.dtype, a_major, b_major, mi, ni),
            Some((sa, _)) => scaled_idesc(sa.dtype, 0),
        }
        .map_err(|e| unsupported(op, span, e.0))?;
        // Enable-input-D of the first instruction.
        let first = match use_acc {
            None => Val::Bool(true),
            Some(e) => self.expr(e)?,
        };
        let pr = self.opt_pred(pred)?;
        let d_addr = self.tmem_region_addr(&cv);
        let (d_lane, d_col, _) = tmem_cell(&cv, cv.offsets[0], cv.offsets[1]);
        let d = self.e.reg(RegClass::B32);
        self.e
            .ins(format!("add.u32 {d}, {d_addr}, {}", (d_lane << 16) + d_col));
        // Block scaling: the scale-factor buffers (docs/hardware/tmem-scales.md) hold the K
        // blocks of a row as bytes of one cell; each K step reads `bpi` of them, chosen by the
        // scale-factor ids of the instruction descriptor (bits 30:29 for A, 5:4 for B).
        let mut per_step: Vec<(String, Option<(Reg, Reg)>)> = Vec::new();
        let ksteps = k / kstep;
        match &sv {
            None => {
                let ir = self.e.reg(RegClass::B32);
                self.e.ins(format!("mov.b32 {ir}, {idesc:#x}"));
                per_step.extend((0..ksteps).map(|_| (ir.to_string(), None)));
            }
            Some((sa, sb)) => {
                let sblock = if sa.dtype == DType::UE4M3 { 16 } else { 32 };
                let bpi = kstep / sblock;
                for t in [sa, sb] {
                    if !t.scales
                        || t.full.len() != 2
                        || t.offsets.iter().any(|&o| o != 0)
                        || t.shape != t.full
                    {
                        return Err(unsupported(
                            op,
                            span,
                            "scale factors must be a whole `scales=true` TMEM buffer",
                        ));
                    }
                }
                let base_a = self.tmem_region_addr(sa);
                let base_b = self.tmem_region_addr(sb);
                // A scale buffer covering more K than this MMA is indexed by the absolute K of
                // A's view (the simulator's rule: an MMA over a K slice uses that slice's
                // factors).
                let koff = if sa.full[1] * sblock > k {
                    match &av {
                        Val::Smem(v) => v.offsets[1],
                        Val::Tmem(v) => v.offsets[1],
                        _ => 0,
                    }
                } else {
                    0
                };
                if koff % sblock != 0 {
                    return Err(unsupported(
                        op,
                        span,
                        "an MMA whose K slice starts inside a scale block",
                    ));
                }
                for ks in 0..ksteps {
                    // The step's first K block: its cell (row 0's column) and byte, the
                    // scale-factor id (docs/hardware/tmem-scales.md).
                    let first = (koff + ks * kstep) / sblock;
                    let _ = bpi;
                    let cell =
                        |t: &TmemView| bwsim_isa::typeck::scale_cell(t.full[0], 0, first, t.dtype.bits());
                    let ((_, col_a, shift), (_, col_b, _)) = (cell(sa), cell(sb));
                    let id = shift / 8;
                    let d = scaled_idesc(sa.dtype, id).map_err(|e| unsupported(op, span, e.0))?;
                    let ir = self.e.reg(RegClass::B32);
                    self.e.ins(format!("mov.b32 {ir}, {d:#x}"));
                    let (ra, rb) = (self.e.reg(RegClass::B32), self.e.reg(RegClass::B32));
                    self.e.ins(format!("add.u32 {ra}, {base_a}, {col_a}"));
                    self.e.ins(format!("add.u32 {rb}, {base_b}, {col_b}"));
                    per_step.push((ir.to_string(), Some((ra, rb))));
                }
            }
        }
        let _ = idesc;
        let (p_first, p_true) = self.accumulate_preds(first, span)?;
        // Descriptors per K step.
        let mut descs = Vec::new();
        for ks in 0..k / kstep {
            let bd = self.mma_operand(&bv, 0, ks * kstep, false, span, op)?;
            let bfix = desc::smem_desc(desc::SmemDescKind::Tcgen05, 0, bd.lbo, bd.sbo, bd.swizzle, 0)
                .map_err(|e| unsupported(op, span, e.0))?;
            let (bs, bo) = (bv.base.reg, bv.base.off + bd.start as i64);
            let ad = match &av {
                Val::Smem(s) => {
                    let adesc = self.mma_operand(s, 0, ks * kstep, true, span, op)?;
                    let afix = desc::smem_desc(
                        desc::SmemDescKind::Tcgen05,
                        0,
                        adesc.lbo,
                        adesc.sbo,
                        adesc.swizzle,
                        0,
                    )
                    .map_err(|e| unsupported(op, span, e.0))?;
                    Some((s.base.reg, s.base.off + adesc.start as i64, afix))
                }
                _ => None,
            };
            descs.push((ad, (bs, bo, bfix)));
        }
        self.before_issue();
        let p = self.issue_pred(pr);
        self.e.ins("tcgen05.fence::after_thread_sync");
        for (ks, (ad, (bs, bo, bfix))) in descs.into_iter().enumerate() {
            let bdr = self.desc_reg(bs, bo, bfix);
            let a_op = match (ad, &av) {
                (Some((s, o, f)), _) => self.desc_reg(s, o, f).to_string(),
                (None, Val::Tmem(t)) => {
                    // A in TMEM: columns advance by K step (32-bit cells of packed elements).
                    let base = self.tmem_region_addr(t);
                    let (_, c, _) = tmem_cell(t, t.offsets[0], t.offsets[1] + ks as u32 * kstep);
                    let r = self.e.reg(RegClass::B32);
                    self.e.ins(format!("add.u32 {r}, {base}, {c}"));
                    format!("[{r}]")
                }
                _ => return Err(invalid(op, span, "A operand")),
            };
            let en = if ks == 0 { p_first } else { p_true };
            let q = kind.qualifier();
            let (ir, scale_regs) = &per_step[ks];
            match scale_regs {
                None => self.e.ins(format!(
                    "@{p} tcgen05.mma.cta_group::{group}{q} [{d}], {a_op}, {bdr}, {ir}, {en}"
                )),
                Some((sa, sb)) => self.e.ins(format!(
                    "@{p} tcgen05.mma.cta_group::{group}{q} [{d}], {a_op}, {bdr}, {ir}, [{sa}], [{sb}], {en}"
                )),
            }
        }
        Ok(())
    }

    pub(super) fn tcgen05_cp(&mut self, src: &Expr, dst: &Expr, span: Span) -> LResult<()> {
        let op = "tcgen05.cp";
        self.cp_span.get_or_insert(span);
        let s = self.smem_arg(src, op)?;
        let t = self.tmem_arg(dst, op)?;
        if t.scales {
            return self.tcgen05_cp_scales(&s, &t, span);
        }
        if s.shape.len() != 2 || t.shape.len() != 2 || s.shape != t.shape {
            return Err(unsupported(
                op,
                span,
                "tcgen05.cp of anything but a 2-D buffer into a TMEM buffer of the same shape",
            ));
        }
        if s.geom.dtype.bits() != 32 || t.block[0] != 128 {
            return Err(unsupported(
                op,
                span,
                "tcgen05.cp of non-32-bit elements or into TMEM blocks of M 64",
            ));
        }
        let (m, n) = (s.shape[0], s.shape[1]);
        if m % 128 != 0 || n % 8 != 0 {
            return Err(unsupported(
                op,
                span,
                "tcgen05.cp of a buffer that is not a multiple of 128 x 8 elements",
            ));
        }
        // One 128x256b copy per 128 rows x 8 columns (32 bytes): the source is read like a
        // K-major MMA operand whose K is the column.
        let mut plan = Vec::new();
        for mb in 0..m / 128 {
            for c in (0..n).step_by(8) {
                let od = self.mma_operand(&s, mb * 128, c, true, span, op)?;
                let fix = desc::smem_desc(desc::SmemDescKind::Tcgen05, 0, od.lbo, od.sbo, od.swizzle, 0)
                    .map_err(|e| unsupported(op, span, e.0))?;
                let (lane, col, _) = tmem_cell(&t, t.offsets[0] + mb * 128, t.offsets[1] + c);
                plan.push((s.base.off + od.start as i64, fix, (lane << 16) + col));
            }
        }
        self.issue_cp(&s, &t, "128x256b", plan);
        Ok(())
    }

    /// `tcgen05.cp` of block-scale factors: one `32x128b.warpx4` copy per 128 rows x 4 K blocks
    /// (512 bytes), which puts smem row `i`'s 16 bytes into lane `i` of every lane quarter,
    /// 4 bytes a column: the factor placement of docs/hardware/tmem-scales.md when the chunk
    /// holds row `32 j + i`, K block `c` at byte `16 i + 4 j + c` (tutorial 11's packed-block
    /// layout, what Triton 3.6 lowers its `tcgen05_copy` of such a view to). Any other source
    /// layout is refused.
    fn tcgen05_cp_scales(&mut self, s: &SmemView, t: &TmemView, span: Span) -> LResult<()> {
        let op = "tcgen05.cp";
        if t.full.len() != 2 || t.shape != t.full || t.offsets.iter().any(|&o| o != 0) {
            return Err(unsupported(op, span, "copies into part of a scale-factor buffer"));
        }
        let (rows, nk) = (t.full[0], t.full[1]);
        if s.shape != t.shape || s.geom.dtype.bits() != 8 || rows % 128 != 0 || nk % 4 != 0 {
            return Err(unsupported(
                op,
                span,
                format!(
                    "a {rows} x {nk} scale-factor copy (needs 8-bit factors in whole blocks of 128 rows x 4 K blocks)"
                ),
            ));
        }
        let at = |r: u32, c: u32| -> Result<u64, crate::ptx::linear_layout::LayoutError> {
            let mut idx = s.offsets.clone();
            let n = idx.len();
            if n < 2 {
                return Err("a scale-factor source of rank below 2".into());
            }
            idx[n - 2] += r;
            idx[n - 1] += c;
            s.geom.logical_offset(&idx)
        };
        let mut plan = Vec::new();
        for mb in 0..rows / 128 {
            for kc in 0..nk / 4 {
                let start = at(mb * 128, kc * 4).map_err(|m| unsupported(op, span, m))?;
                for i in 0..32 {
                    for j in 0..4 {
                        for c in 0..4 {
                            let got = at(mb * 128 + 32 * j + i, kc * 4 + c)
                                .map_err(|m| unsupported(op, span, m))?;
                            if got != start + (16 * i + 4 * j + c) as u64 {
                                return Err(unsupported(
                                    op,
                                    span,
                                    format!(
                                        "scale factors in layout {}: tcgen05.cp needs each 128-row x 4-block chunk as 512 contiguous bytes, row 32j + i and block c at byte 16i + 4j + c (the packed-block view)",
                                        s.geom.layout.describe()
                                    ),
                                ));
                            }
                        }
                    }
                }
                if (s.base.off + start as i64) % 16 != 0 {
                    return Err(unsupported(
                        op,
                        span,
                        "a scale-factor chunk not aligned to 16 bytes",
                    ));
                }
                let (_, col, _) = bwsim_isa::typeck::scale_cell(rows, mb * 128, kc * 4, 8);
                // Triton sets the matrix base offset of a chunk from its address bits 7-9.
                let base_offset = (((s.base.off + start as i64) >> 7) & 7) as u32;
                let fix = desc::smem_desc(
                    desc::SmemDescKind::Tcgen05,
                    0,
                    0,
                    0,
                    bwsim_isa::types::Swizzle::None,
                    base_offset,
                )
                .map_err(|e| unsupported(op, span, e.0))?;
                plan.push((s.base.off + start as i64, fix, col));
            }
        }
        self.issue_cp(s, t, "32x128b.warpx4", plan);
        Ok(())
    }

    /// Issue planned `tcgen05.cp`s of `shape` from the leader thread: per entry, the source's
    /// descriptor (offset from `s`'s base register, fixed descriptor bits) and the destination
    /// cell (TMEM address relative to `t`'s region).
    fn issue_cp(&mut self, s: &SmemView, t: &TmemView, shape: &str, plan: Vec<(i64, u64, u32)>) {
        let base = self.tmem_region_addr(t);
        self.before_issue();
        let p = self.part.leader;
        self.e.ins("tcgen05.fence::after_thread_sync");
        for (off, fix, cell) in plan {
            let dr = self.desc_reg(s.base.reg, off, fix);
            let a = self.e.reg(RegClass::B32);
            self.e.ins(format!("add.u32 {a}, {base}, {cell}"));
            self.e
                .ins(format!("@{p} tcgen05.cp.cta_group::1.{shape} [{a}], {dr}"));
        }
    }

    // ----- shared memory -----
}

/// The cells of a plan grouped by column: each column's (register, bit shift) pairs, for
/// elements narrower than the 32-bit cell.
fn by_column(cells: &TmemCells) -> std::collections::BTreeMap<u32, Vec<(usize, u32)>> {
    let mut by_col: std::collections::BTreeMap<u32, Vec<(usize, u32)>> = Default::default();
    for &(c, r, sh) in cells {
        by_col.entry(c).or_default().push((r, sh));
    }
    by_col
}
