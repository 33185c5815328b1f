//! Hopper's warpgroup MMA: `wgmma` as `wgmma.fence`, one `wgmma.mma_async` per 64-row block
//! and K step (descriptors of A and B in shared memory), `wgmma.commit_group`.

use super::ops::*;
use super::*;
use crate::ptx::desc;
use crate::ptx::smem::OperandDesc;

impl<'c, 'k> Lowerer<'c, 'k> {
    #[allow(clippy::needless_range_loop)] // blocks index the accumulator and the descriptors alike
    pub(super) fn wgmma(
        &mut self,
        a: &Expr,
        b: &Expr,
        acc: &Expr,
        use_acc: Option<&Expr>,
        span: Span,
    ) -> LResult<Tile> {
        let op = "wgmma";
        let av = self
            .smem_arg(a, op)
            .map_err(|_| unsupported(op, a.span, "wgmma with A in registers"))?;
        let bv = self.smem_arg(b, op)?;
        let accv = match self.expr(acc)? {
            Val::Tile(t) => t,
            other => {
                return Err(invalid(
                    op,
                    acc.span,
                    format!("the accumulator must be a register tile, found {}", other.kind()),
                ))
            }
        };
        let (m, k) = (av.shape[0], av.shape[1]);
        let n = bv.shape[1];
        let dt = av.geom.dtype;
        let ty = wgmma_ty(dt).ok_or_else(|| unsupported(op, span, format!("wgmma on {dt}")))?;
        let kstep = 256 / dt.bits();
        // The accumulator in the fragment layout.
        let wl = TileLayout::Wgmma {
            warps: [self.part.warps, 1],
            n,
        };
        let frag = self.layout_for(&wl, &[m, n], span)?;
        let in_place = match (&self.assign_target, acc.as_name()) {
            (Some(t), Some(nm)) => t == nm && accv.ll == frag,
            _ => false,
        };
        let out = if in_place {
            accv.clone()
        } else {
            let c = self.in_layout(&accv, &frag, span)?;
            self.copy_tile(&c)
        };
        let wgs = self.part.warps / 4;
        let regs_per = (n / 2) as usize;
        let blocks = out.regs.len() / regs_per;
        let a_major_t = matches!(av.geom.layout, SmemLayout::Nvmma { transposed: true, .. });
        let b_trans = !matches!(bv.geom.layout, SmemLayout::Nvmma { transposed: true, .. });
        if !matches!(dt, DType::F16 | DType::BF16) && (a_major_t || b_trans) {
            return Err(unsupported(
                op,
                span,
                format!("MN-major {dt} operands (wgmma takes them K-major only)"),
            ));
        }
        // Descriptor offsets of A per (warpgroup, block, k step), B per k step.
        let mut a_offs = vec![];
        for blk in 0..blocks as u32 {
            let mut per_wg = vec![];
            for g in 0..wgs {
                let row0 = 64 * (g + wgs * blk);
                let mut ks = vec![];
                for kk in 0..k / kstep {
                    let d = self.mma_operand(&av, row0, kk * kstep, true, span, op)?;
                    ks.push(d);
                }
                per_wg.push(ks);
            }
            a_offs.push(per_wg);
        }
        let mut b_offs = vec![];
        for kk in 0..k / kstep {
            b_offs.push(self.mma_operand(&bv, 0, kk * kstep, false, span, op)?);
        }
        let first = match use_acc {
            None => Val::Bool(true),
            Some(e) => self.expr(e)?,
        };
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
        // Warpgroup index within the partition.
        let wg = self.e.reg(RegClass::B32);
        self.e.ins(format!("shr.u32 {wg}, {}, 2", self.part.pwarp));
        self.before_all_access();
        self.e.ins("wgmma.fence.sync.aligned");
        for blk in 0..blocks {
            let dregs: Vec<String> = out.regs[blk * regs_per..(blk + 1) * regs_per]
                .iter()
                .map(|r| r.to_string())
                .collect();
            for kk in 0..(k / kstep) as usize {
                let ad: Vec<&OperandDesc> = (0..wgs as usize).map(|g| &a_offs[blk][g][kk]).collect();
                let a0 = ad[0];
                let afix = desc::wgmma_desc(0, a0.lbo, a0.sbo, a0.swizzle, 0)
                    .map_err(|e| unsupported(op, span, e.0))?;
                let aoff = if wgs > 1 {
                    // start(g) = start(0) + g * delta; the descriptors of the warpgroups differ
                    // only in their start address.
                    let delta = ad[1].start as i64 - a0.start as i64;
                    for (g, d) in ad.iter().enumerate() {
                        if d.start as i64 != a0.start as i64 + g as i64 * delta
                            || d.lbo != a0.lbo
                            || d.sbo != a0.sbo
                        {
                            return Err(unsupported(
                                op,
                                span,
                                "warpgroups whose A rows are not evenly spaced in shared memory",
                            ));
                        }
                    }
                    let r = self.e.reg(RegClass::B32);
                    self.e
                        .ins(format!("mad.lo.u32 {r}, {wg}, {delta}, {}", av.base.reg));
                    (r, av.base.off + a0.start as i64)
                } else {
                    (av.base.reg, av.base.off + a0.start as i64)
                };
                let adr = self.desc_reg(aoff.0, aoff.1, afix);
                let bd = &b_offs[kk];
                let bfix = desc::wgmma_desc(0, bd.lbo, bd.sbo, bd.swizzle, 0)
                    .map_err(|e| unsupported(op, span, e.0))?;
                let bdr = self.desc_reg(bv.base.reg, bv.base.off + bd.start as i64, bfix);
                let en = if kk == 0 { p_first } else { p_true };
                let tail = if matches!(dt, DType::F16 | DType::BF16) {
                    format!(", 1, 1, {}, {}", a_major_t as u32, b_trans as u32)
                } else {
                    ", 1, 1".to_string()
                };
                self.e.ins(format!(
                    "wgmma.mma_async.sync.aligned.m64n{n}k{kstep}.f32.{ty}.{ty} {{{}}}, {adr}, {bdr}, {en}{tail}",
                    dregs.join(", ")
                ));
            }
        }
        self.e.ins("wgmma.commit_group.sync.aligned");
        self.part.all_dirty = true;
        Ok(out)
    }
}
