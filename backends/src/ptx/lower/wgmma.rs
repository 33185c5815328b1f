//! Hopper's warpgroup MMA: `wgmma` as `wgmma.fence`, one `wgmma.mma_async` per 64-row block
//! and K step, `wgmma.commit_group`.
//!
//! The forms (PTX ISA, `wgmma.mma_async`): f16 into an f16 or f32 accumulator, bf16 and tf32
//! into f32, e4m3/e5m2 (mixed as well) into f16 or f32, s8/u8 (mixed as well) into s32. B is
//! always a shared-memory descriptor; A is a descriptor or, from a register tile, four 32-bit
//! registers per instruction in the fragment layout of [`crate::ptx::linear_layout::wgmma_a`].
//!
//! Registers shared with the asynchronous instruction may not be touched before the
//! `wgmma.wait_group` that retires it. An f16 accumulator is held in pairs (`.f16x2`), while a
//! register tile holds one element per register; an A fragment is packed from the tile. Both
//! need instructions after, or registers fixed until, the wait: such a wgmma waits for itself
//! (`wgmma.wait_group 0` after its commit) and then unpacks, so its packed registers are never
//! live across another instruction. The IR's own `wgmma.wait` then finds nothing pending.

use super::access::*;
use super::*;
use crate::ptx::desc;
use crate::ptx::linear_layout;
use crate::ptx::smem::OperandDesc;

/// Where a wgmma's A operand comes from.
enum AOperand {
    Smem(SmemView),
    /// The tile in the A fragment layout.
    Regs(Tile),
}

/// The PTX type of a wgmma accumulator.
fn acc_ty(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::I32 => "s32",
        _ => return None,
    })
}

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
        let a_val = self.expr(a)?;
        let bv = self.smem_arg(b, op)?;
        let accv = match self.expr(acc)? {
            Val::Tile(t) => t,
            other => {
                return Err(wrong_kind(
                    op,
                    acc.span,
                    "the accumulator must be a register tile",
                    &other,
                ))
            }
        };
        let (a_dt, m, k) = match &a_val {
            Val::Smem(_) | Val::Tile(_) => a_val.matrix(),
            _ => None,
        }
        .ok_or_else(|| wrong_kind(op, a.span, "A must be in shared memory or registers", &a_val))?;
        let n = bv.shape[1];
        let b_dt = bv.geom.dtype;
        let ty_of = |d: DType| wgmma_ty(d).ok_or_else(|| unsupported(op, span, format!("wgmma on {d}")));
        let (aty, bty) = (ty_of(a_dt)?, ty_of(b_dt)?);
        let dty = acc_ty(accv.dtype)
            .ok_or_else(|| unsupported(op, span, format!("a wgmma accumulator of {}", accv.dtype)))?;
        let kstep = 256 / a_dt.bits();
        let sixteen = matches!(a_dt, DType::F16 | DType::BF16);
        let int = accv.dtype == DType::I32;
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
        let ksteps = (k / kstep) as usize;
        let av = match a_val {
            Val::Smem(v) => AOperand::Smem(v),
            Val::Tile(t) => {
                let fl = linear_layout::wgmma_a(a_dt.bits(), &[m, k], self.part.warps.trailing_zeros())
                    .map_err(|e| unsupported(op, a.span, e))?;
                AOperand::Regs(self.in_layout(&t, &fl, a.span)?)
            }
            _ => unreachable!("A was matched above"),
        };
        let a_major_t = matches!(
            &av,
            AOperand::Smem(v) if matches!(v.geom.layout, SmemLayout::Nvmma { transposed: true, .. })
        );
        let b_trans = !matches!(bv.geom.layout, SmemLayout::Nvmma { transposed: true, .. });
        if !sixteen && (a_major_t || b_trans) {
            return Err(unsupported(
                op,
                span,
                format!("MN-major {a_dt} operands (wgmma takes them K-major only)"),
            ));
        }
        // Descriptor offsets of A per (block, warpgroup, k step), B per k step.
        let mut a_offs = vec![];
        if let AOperand::Smem(v) = &av {
            for blk in 0..blocks as u32 {
                let mut per_wg = vec![];
                for g in 0..wgs {
                    let row0 = 64 * (g + wgs * blk);
                    let mut ks = vec![];
                    for kk in 0..k / kstep {
                        ks.push(self.mma_operand(v, row0, kk * kstep, true, span, op)?);
                    }
                    per_wg.push(ks);
                }
                a_offs.push(per_wg);
            }
        }
        let mut b_offs = vec![];
        for kk in 0..k / kstep {
            b_offs.push(self.mma_operand(&bv, 0, kk * kstep, false, span, op)?);
        }
        let first = match use_acc {
            None => Val::Bool(true),
            Some(e) => self.expr(e)?,
        };
        let (p_first, p_true) = self.accumulate_preds(first, span)?;
        // Warpgroup index within the partition.
        let wg = self.e.reg(RegClass::B32);
        self.e.ins(format!("shr.u32 {wg}, {}, 2", self.part.pwarp));
        // The A fragments, four 32-bit registers per (block, k step).
        let a_packed: Vec<Vec<Reg>> = match &av {
            AOperand::Regs(t) => {
                let per = (kstep / 2) as usize;
                (0..blocks * ksteps)
                    .map(|i| self.pack_a(&t.regs[i * per..(i + 1) * per], a_dt.bits()))
                    .collect()
            }
            AOperand::Smem(_) => Vec::new(),
        };
        // The accumulator as the instruction's registers: f16 in pairs.
        let d_regs: Vec<Reg> = if out.dtype == DType::F16 {
            out.regs
                .chunks(2)
                .map(|p| {
                    let r = self.e.reg(RegClass::B32);
                    self.e.ins(format!("mov.b32 {r}, {{{}, {}}}", p[0], p[1]));
                    r
                })
                .collect()
        } else {
            out.regs.clone()
        };
        let d_per = d_regs.len() / blocks.max(1);
        self.before_all_access();
        self.e.ins("wgmma.fence.sync.aligned");
        for blk in 0..blocks {
            let dregs: Vec<String> = d_regs[blk * d_per..(blk + 1) * d_per]
                .iter()
                .map(|r| r.to_string())
                .collect();
            for kk in 0..ksteps {
                let a_op = match &av {
                    AOperand::Regs(_) => {
                        let r: Vec<String> = a_packed[blk * ksteps + kk]
                            .iter()
                            .map(|r| r.to_string())
                            .collect();
                        format!("{{{}}}", r.join(", "))
                    }
                    AOperand::Smem(v) => {
                        let ad: Vec<&OperandDesc> = (0..wgs as usize).map(|g| &a_offs[blk][g][kk]).collect();
                        self.wgmma_a_desc(v, &ad, wg, span)?.to_string()
                    }
                };
                let bd = &b_offs[kk];
                let bfix = desc::smem_desc(desc::SmemDescKind::Wgmma, 0, bd.lbo, bd.sbo, bd.swizzle, 0)
                    .map_err(|e| unsupported(op, span, e.0))?;
                let bdr = self.desc_reg(bv.base.reg, bv.base.off + bd.start as i64, bfix);
                let en = if kk == 0 { p_first } else { p_true };
                // Operands after scale-d: imm-scale-a and imm-scale-b (floats), the transpose
                // immediates of 16-bit types (imm-trans-a only when A is a descriptor).
                let tail = match (&av, sixteen, int) {
                    (_, _, true) => String::new(),
                    (AOperand::Smem(_), true, _) => {
                        format!(", 1, 1, {}, {}", a_major_t as u32, b_trans as u32)
                    }
                    (AOperand::Regs(_), true, _) => format!(", 1, 1, {}", b_trans as u32),
                    (_, false, _) => ", 1, 1".to_string(),
                };
                self.e.ins(format!(
                    "wgmma.mma_async.sync.aligned.m64n{n}k{kstep}.{dty}.{aty}.{bty} {{{}}}, {a_op}, {bdr}, {en}{tail}",
                    dregs.join(", ")
                ));
            }
        }
        self.e.ins("wgmma.commit_group.sync.aligned");
        if out.dtype == DType::F16 || matches!(av, AOperand::Regs(_)) {
            // Packed registers: retired here, then unpacked (module doc).
            self.e.ins("wgmma.wait_group.sync.aligned 0");
            if out.dtype == DType::F16 {
                for (p, pair) in d_regs.iter().zip(out.regs.chunks(2)) {
                    self.e.ins(format!("mov.b32 {{{}, {}}}, {p}", pair[0], pair[1]));
                }
            }
        }
        self.part.all_dirty = true;
        Ok(out)
    }

    /// The A descriptor of one instruction for the warpgroups' descriptors `ad` (which differ
    /// only in their start address, evenly spaced: the warpgroup `wg` adds its multiple).
    fn wgmma_a_desc(&mut self, v: &SmemView, ad: &[&OperandDesc], wg: Reg, span: Span) -> LResult<Reg> {
        let op = "wgmma";
        let a0 = ad[0];
        let afix = desc::smem_desc(desc::SmemDescKind::Wgmma, 0, a0.lbo, a0.sbo, a0.swizzle, 0)
            .map_err(|e| unsupported(op, span, e.0))?;
        let aoff = if ad.len() > 1 {
            let delta = ad[1].start as i64 - a0.start as i64;
            for (g, d) in ad.iter().enumerate() {
                if d.start as i64 != a0.start as i64 + g as i64 * delta || d.lbo != a0.lbo || d.sbo != a0.sbo
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
                .ins(format!("mad.lo.u32 {r}, {wg}, {delta}, {}", v.base.reg));
            (r, v.base.off + a0.start as i64)
        } else {
            (v.base.reg, v.base.off + a0.start as i64)
        };
        Ok(self.desc_reg(aoff.0, aoff.1, afix))
    }

    /// One instruction's A fragment (`elems` of `bits` bits, one per register) as four 32-bit
    /// registers, the first element in the low bits (8-bit elements sit in the low byte of
    /// their 16-bit registers).
    fn pack_a(&mut self, elems: &[Reg], bits: u32) -> Vec<Reg> {
        let per = (32 / bits) as usize;
        elems
            .chunks(per)
            .map(|e| {
                let r = self.e.reg(RegClass::B32);
                match bits {
                    32 => self.e.ins(format!("mov.b32 {r}, {}", e[0])),
                    16 => self.e.ins(format!("mov.b32 {r}, {{{}, {}}}", e[0], e[1])),
                    _ => {
                        // Bytes 0 and 2 of {e0, e1} and of {e2, e3}.
                        let (x, y) = (self.e.reg(RegClass::B32), self.e.reg(RegClass::B32));
                        self.e.ins(format!("mov.b32 {x}, {{{}, {}}}", e[0], e[1]));
                        self.e.ins(format!("mov.b32 {y}, {{{}, {}}}", e[2], e[3]));
                        self.e.ins(format!("prmt.b32 {r}, {x}, {y}, 0x6420"));
                    }
                }
                r
            })
            .collect()
    }
}
