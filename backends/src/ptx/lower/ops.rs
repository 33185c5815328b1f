//! Memory and asynchronous operations: allocation, TMA (tile, gather4, scatter4), mbarriers,
//! fences, tensor memory (alloc, tcgen05.ld/st), the tensor pipe (tcgen05.mma/cp/commit),
//! wgmma, and shared/global loads and stores.
//!
//! Who executes what (PTX.md section 1): "issue" operations (TMA, mbarrier init/expect/arrive,
//! tcgen05.mma/cp/commit) run on the partition's elected leader thread under a predicate;
//! `.sync.aligned` operations (tcgen05.alloc/ld/st, wgmma) run on whole warps or warpgroups;
//! generic memory accesses run on every thread, each for the elements its registers hold.
//! gather4/scatter4 are issued by one lane of every warp that holds row offsets, as Triton
//! does, so bulk-group waits run on lane 0 of every warp of the partition.
//!
//! Operands the hardware faults on (a TMA box not 128-byte aligned, a misaligned mbarrier,
//! coordinates not 16-byte aligned) are emitted as written: the trap is the point of the
//! planted-fault cases of the differential harness (PTX.md section 7).

use super::*;
use crate::ptx::desc::{self, MmaKind};
use crate::ptx::layout::xor_bits;
use crate::ptx::smem::{operand_desc, view_map, Major, OperandDesc};
use bwsim_isa::types::Swizzle;

/// Per register of a tile: (TMEM column relative to the warp's base address, register index,
/// bit shift inside the 32-bit cell).
type TmemCells = Vec<(u32, usize, u32)>;

/// PTX type of a load/store of one tile element.
fn ldst_ty(d: DType) -> Option<&'static str> {
    Some(match d.bits() {
        64 => "b64",
        32 => {
            if matches!(d, DType::F32 | DType::TF32) {
                "f32"
            } else {
                "b32"
            }
        }
        16 => "b16",
        8 => "u8",
        _ => return None,
    })
}

/// Operand-type name of a wgmma / descriptor type.
fn wgmma_ty(d: DType) -> Option<&'static str> {
    Some(match d {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::TF32 | DType::F32 => "tf32",
        DType::F8E4M3 => "e4m3",
        DType::F8E5M2 => "e5m2",
        _ => return None,
    })
}

/// Where an element of a TMEM view lives relative to the view's region address: (lane,
/// column), as the simulator places it (DESIGN.md section 4; Triton's `TensorMemoryLayout`).
fn tmem_cell(v: &TmemView, m: u32, n: u32) -> (u32, u32, u32) {
    let (mm, nn) = match v.full.len() {
        0 => (0u64, 1u64),
        1 => (0, v.full[0] as u64),
        r => (m as u64, v.full[r - 1] as u64),
    };
    let _ = mm;
    let bm = v.block[0].max(1) as u64;
    let bn = v.block[1].max(1) as u64;
    let eb = v.dtype.bits() as u64 * v.col_stride.max(1) as u64;
    let m = m as u64;
    let n = n as u64;
    let rr = m % bm;
    let lane = if bm == 64 { (rr / 16) * 32 + rr % 16 } else { rr };
    let bit = (m / bm) * nn.div_ceil(bn) * bn * eb + (n / bn) * bn * eb + (n % bn) * eb;
    (lane as u32, (bit / 32) as u32, (bit % 32) as u32)
}

impl<'c, 'k> Lowerer<'c, 'k> {
    /// Lower one operation; returns its value when it has one.
    pub fn op(&mut self, op: &Op) -> LResult<Option<Val>> {
        use OpKind::*;
        let span = op.span;
        let name = op.kind.name();
        match &op.kind {
            SmemAlloc { ty, layout, .. } => self.smem_alloc(op, ty, layout).map(Some),
            SmemReinterpret { src, ty, layout } => {
                let v = match self.expr(src)? {
                    Val::Smem(v) => v,
                    other => {
                        return Err(invalid(
                            name,
                            src.span,
                            format!("expected a shared-memory view, found {}", other.kind()),
                        ))
                    }
                };
                let (dtype, shape) = self.shaped(ty)?;
                let layout = self.smem_layout_arg(layout)?;
                // The reinterpreted view starts at the first byte of the source view.
                let start = v
                    .geom
                    .logical_offset(&v.offsets)
                    .map_err(|m| unsupported(name, span, m))?;
                if v.geom
                    .full
                    .iter()
                    .zip(&v.offsets)
                    .zip(&v.shape)
                    .any(|((f, o), s)| *o != 0 && s != f)
                    && start % 16 != 0
                {
                    return Err(unsupported(
                        name,
                        span,
                        "reinterpreting a view that does not start on a 16-byte boundary",
                    ));
                }
                let base = Addr {
                    reg: v.base.reg,
                    off: v.base.off + start as i64,
                };
                let align = super::expr::align_of(v.align, start);
                Ok(Some(Val::Smem(SmemView {
                    geom: Geom {
                        dtype,
                        full: shape.clone(),
                        layout,
                    },
                    offsets: vec![0; shape.len()],
                    shape,
                    base,
                    align,
                    alloc: v.alloc,
                })))
            }
            MbarAlloc { count, .. } => {
                let alloc = self
                    .ck
                    .alloc_of(op)
                    .ok_or_else(|| invalid(name, span, "no allocation planned for this barrier array"))?;
                let n = self.const_int(count, name)? as u32;
                Ok(Some(Val::Mbar {
                    base: Addr {
                        reg: self.k.smem,
                        off: alloc.offset as i64,
                    },
                    count: Some(n),
                }))
            }
            TmemAlloc { ty, .. } => self.tmem_alloc(op, ty).map(Some),
            TmemReinterpret {
                src,
                ty,
                block,
                col_stride,
            } => {
                let v = self.tmem_arg(src, name)?;
                let (dtype, shape) = self.shaped(ty)?;
                // The view starts at the source's first element: lane 0 and a whole column.
                let r = v.offsets.len();
                let (m0, n0) = match r {
                    0 => (0, 0),
                    1 => (0, v.offsets[0]),
                    _ => (v.offsets[r - 2], v.offsets[r - 1]),
                };
                let (lane, col, shift) = tmem_cell(&v, m0, n0);
                if lane != 0 || shift != 0 || v.offsets[..r.saturating_sub(2)].iter().any(|&o| o != 0) {
                    return Err(unsupported(
                        name,
                        span,
                        "a reinterpret of a view that does not start at lane 0 of a whole column",
                    ));
                }
                let s = shape.as_slice();
                let block = match block {
                    Some(b) => match self.list(b, name)?.as_slice() {
                        [m, n] => [*m, *n],
                        _ => return Err(invalid(name, b.span, "block is [M, N]")),
                    },
                    None => [
                        if s.len() >= 2 {
                            s[s.len() - 2].min(128)
                        } else {
                            128
                        },
                        s.last().copied().unwrap_or(1),
                    ],
                };
                let col_stride = match col_stride {
                    Some(c) => u32::try_from(self.const_int(c, name)?).unwrap_or(1),
                    None => 1,
                };
                Ok(Some(Val::Tmem(TmemView {
                    dtype,
                    full: shape.clone(),
                    offsets: vec![0; shape.len()],
                    shape,
                    block,
                    col_stride,
                    scales: false,
                    reg: v.reg,
                    dynamic: v.dynamic,
                    cols: v.cols + col,
                })))
            }
            TmemDealloc { buf } => {
                let t = self.tmem_arg(buf, name)?;
                self.tmem_dealloc(&t, span)?;
                Ok(None)
            }
            TmaLoad { src, dst, bar, pred } => {
                self.tma_load(src, dst, bar, pred.as_ref(), span)?;
                Ok(None)
            }
            TmaStore { dst, src, pred } => {
                self.tma_store(dst, src, pred.as_ref(), span)?;
                Ok(None)
            }
            TmaStoreWait { pendings, full } => {
                let n = self.const_int(pendings, name)?;
                let full = match full {
                    Some(f) => self.const_int(f, name)? != 0,
                    None => false,
                };
                // Bulk groups belong to the thread that committed them: the leader (tile
                // stores) and lane 0 of each warp (scatter4). A thread with none returns at once.
                let l0 = self.lane0_pred();
                let p = self.e.reg(RegClass::Pred);
                self.e.ins(format!("or.pred {p}, {l0}, {}", self.part.leader));
                let w = if full {
                    "cp.async.bulk.wait_group"
                } else {
                    "cp.async.bulk.wait_group.read"
                };
                self.e.ins(format!("@{p} {w} {n}"));
                self.part.issue_dirty = true;
                Ok(None)
            }
            TmaGather { src, dst, bar, pred } => {
                self.gather_scatter(true, src, dst, Some(bar), pred.as_ref(), span)?;
                Ok(None)
            }
            TmaScatter { dst, src, pred } => {
                self.gather_scatter(false, dst, src, None, pred.as_ref(), span)?;
                Ok(None)
            }
            MbarInit { bar, count } => {
                let a = self.bar_addr(bar, name)?;
                let c = self.const_int(count, name)?;
                self.before_issue();
                let p = self.part.leader;
                self.e.ins(format!("@{p} mbarrier.init.shared::cta.b64 {a}, {c}"));
                self.part.issue_dirty = true;
                Ok(None)
            }
            MbarExpect { bar, bytes, pred }
            | MbarExpectTx { bar, bytes, pred }
            | MbarCompleteTx { bar, bytes, pred } => {
                let a = self.bar_addr(bar, name)?;
                let b = self.expr(bytes)?;
                let b = self.scalar_operand(&b, ScalarTy::I32, bytes.span)?;
                let pr = self.opt_pred(pred.as_ref())?;
                self.before_issue();
                let p = self.issue_pred(pr);
                let ins = match &op.kind {
                    MbarExpect { .. } => format!("mbarrier.arrive.expect_tx.shared::cta.b64 _, {a}, {b}"),
                    MbarExpectTx { .. } => format!("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 {a}, {b}"),
                    _ => format!("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 {a}, {b}"),
                };
                self.e.ins(format!("@{p} {ins}"));
                Ok(None)
            }
            MbarArrive { bar, count, pred } => {
                let a = self.bar_addr(bar, name)?;
                let c = match count {
                    Some(c) => {
                        let v = self.expr(c)?;
                        Some(self.scalar_operand(&v, ScalarTy::I32, c.span)?)
                    }
                    None => None,
                };
                let pr = self.opt_pred(pred.as_ref())?;
                self.before_issue();
                let p = self.issue_pred(pr);
                match c {
                    Some(c) => {
                        let c = self.reg_operand(&c, RegClass::B32);
                        self.e
                            .ins(format!("@{p} mbarrier.arrive.shared::cta.b64 _, {a}, {c}"))
                    }
                    None => self.e.ins(format!("@{p} mbarrier.arrive.shared::cta.b64 _, {a}")),
                }
                Ok(None)
            }
            MbarWait { bar, phase } => {
                let a = self.bar_addr(bar, name)?;
                let ph = self.expr(phase)?;
                let ph = self.parity_operand(&ph, phase.span)?;
                self.before_all_access();
                let p = self.e.reg(RegClass::Pred);
                let l = self.e.label("mbar_wait");
                self.e.place(&l);
                self.e
                    .ins(format!("mbarrier.try_wait.parity.shared::cta.b64 {p}, {a}, {ph}"));
                self.e.ins(format!("@!{p} bra {l}"));
                Ok(None)
            }
            MbarTestWait { bar, phase } => {
                let a = self.bar_addr(bar, name)?;
                let ph = self.expr(phase)?;
                let ph = self.parity_operand(&ph, phase.span)?;
                self.before_all_access();
                let p = self.e.reg(RegClass::Pred);
                self.e.ins(format!(
                    "mbarrier.test_wait.parity.shared::cta.b64 {p}, {a}, {ph}"
                ));
                Ok(Some(Val::Scalar(ScalarTy::I1, p)))
            }
            MbarInvalidate { bar } => {
                let a = self.bar_addr(bar, name)?;
                // Every thread of the partition must be done waiting on it.
                self.part.all_dirty = true;
                self.before_issue();
                let p = self.part.leader;
                self.e.ins(format!("@{p} mbarrier.inval.shared::cta.b64 {a}"));
                self.part.issue_dirty = true;
                Ok(None)
            }
            FenceAsyncShared {} => {
                self.e.ins("fence.proxy.async.shared::cta");
                Ok(None)
            }
            FenceMbarrierInit {} => {
                let p = self.part.leader;
                self.e.ins(format!("@{p} fence.mbarrier_init.release.cluster"));
                Ok(None)
            }
            Tcgen05FenceBefore {} => {
                self.e.ins("tcgen05.fence::before_thread_sync");
                Ok(None)
            }
            Tcgen05FenceAfter {} => {
                self.e.ins("tcgen05.fence::after_thread_sync");
                Ok(None)
            }
            Tcgen05Mma {
                a,
                b,
                acc,
                use_acc,
                pred,
                cta_group,
            } => {
                self.tcgen05_mma(
                    a,
                    b,
                    acc,
                    None,
                    use_acc.as_ref(),
                    pred.as_ref(),
                    cta_group.as_ref(),
                    span,
                )?;
                Ok(None)
            }
            Tcgen05MmaScaled {
                a,
                b,
                acc,
                a_scale,
                b_scale,
                use_acc,
                pred,
                cta_group,
            } => {
                self.tcgen05_mma(
                    a,
                    b,
                    acc,
                    Some((a_scale, b_scale)),
                    use_acc.as_ref(),
                    pred.as_ref(),
                    cta_group.as_ref(),
                    span,
                )?;
                Ok(None)
            }
            Tcgen05Cp { src, dst } => {
                self.tcgen05_cp(src, dst, span)?;
                Ok(None)
            }
            Tcgen05Commit { bar, pred, cta_group } => {
                let g = self.cta_group(cta_group.as_ref(), name, span)?;
                let a = self.bar_addr(bar, name)?;
                let pr = self.opt_pred(pred.as_ref())?;
                if g == 2 {
                    // The pair's commit arrives on the barrier at the same offset in both CTAs
                    // of the issuing CTA's pair (cluster ranks 2r, 2r + 1).
                    self.cta_groups.push((2, span));
                    self.uses_cluster = true;
                    let r = self.e.reg(RegClass::B32);
                    let m = self.e.reg(RegClass::B32);
                    let h = self.e.reg(RegClass::B16);
                    self.e.ins(format!("mov.u32 {r}, %cluster_ctarank"));
                    self.e.ins(format!("and.b32 {r}, {r}, -2"));
                    self.e.ins(format!("mov.b32 {m}, 3"));
                    self.e.ins(format!("shl.b32 {m}, {m}, {r}"));
                    self.e.ins(format!("cvt.u16.u32 {h}, {m}"));
                    self.before_issue();
                    let p = self.issue_pred(pr);
                    self.e.ins(format!(
                        "@{p} tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 {a}, {h}"
                    ));
                } else {
                    self.before_issue();
                    let p = self.issue_pred(pr);
                    self.e.ins(format!(
                        "@{p} tcgen05.commit.cta_group::{}.mbarrier::arrive::one.shared::cluster.b64 {a}",
                        super::CTA_GROUP_PLACEHOLDER
                    ));
                }
                Ok(None)
            }
            TmemLoad { src, layout } => {
                let t = self.tmem_arg(src, name)?;
                let l = match layout {
                    Some(l) => self.layout_arg_pub(l, name)?,
                    None => TileLayout::Tmem32x32b,
                };
                self.tmem_load(&t, &l, span).map(|t| Some(Val::Tile(t)))
            }
            TmemStore { dst, value } => {
                let t = self.tmem_arg(dst, name)?;
                let v = match self.expr(value)? {
                    Val::Tile(v) => v,
                    other => {
                        return Err(invalid(
                            name,
                            value.span,
                            format!("expected a register tile, found {}", other.kind()),
                        ))
                    }
                };
                self.tmem_store(&t, &v, span)?;
                Ok(None)
            }
            Wgmma { a, b, acc, use_acc } => self
                .wgmma(a, b, acc, use_acc.as_ref(), span)
                .map(|t| Some(Val::Tile(t))),
            WgmmaWait { pendings } => {
                let n = self.const_int(pendings, name)?;
                self.e.ins(format!("wgmma.wait_group.sync.aligned {n}"));
                // Another warpgroup of the partition may still be reading shared memory
                // through its own wgmmas: the next generic access synchronises first.
                if self.part.warps > 4 {
                    self.part.issue_dirty = true;
                }
                Ok(None)
            }
            SmemLoad { src, layout } => {
                let v = self.smem_arg(src, name)?;
                let l = match layout {
                    Some(l) => self.layout_arg_pub(l, name)?,
                    None => self.default_layout(&v.shape),
                };
                self.smem_load(&v, &l, span).map(|t| Some(Val::Tile(t)))
            }
            SmemStore { dst, value } => {
                let v = self.smem_arg(dst, name)?;
                let t = match self.expr(value)? {
                    Val::Tile(t) => t,
                    other => {
                        return Err(invalid(
                            name,
                            value.span,
                            format!("expected a register tile, found {}", other.kind()),
                        ))
                    }
                };
                self.smem_store(&v, &t, span)?;
                Ok(None)
            }
            GlobalLoad {
                ptr,
                offsets,
                mask,
                other,
            } => self
                .global_load(ptr, offsets, mask.as_ref(), other.as_ref(), span)
                .map(|t| Some(Val::Tile(t))),
            GlobalStore {
                ptr,
                offsets,
                value,
                mask,
            } => {
                self.global_store(ptr, offsets, value, mask.as_ref(), span)?;
                Ok(None)
            }
            BarSync {} => {
                self.part_barrier();
                Ok(None)
            }
            ClusterSync {} => {
                // Every thread of every CTA of the cluster arrives (barrier.cluster counts
                // threads): only a kernel whose code runs on all its warps can lower it.
                if !self.ck.workers.is_empty() {
                    return Err(unsupported(
                        name,
                        span,
                        "cluster.sync in a kernel with warp_specialize partitions (every thread of the cluster must arrive)",
                    ));
                }
                self.uses_cluster = true;
                let tm = self.part.tmem_dirty && self.target() == Target::Sm100a;
                if tm {
                    self.e.ins("tcgen05.fence::before_thread_sync");
                }
                self.e.ins("barrier.cluster.arrive.release");
                self.e.ins("barrier.cluster.wait.acquire");
                if tm {
                    self.e.ins("tcgen05.fence::after_thread_sync");
                }
                // It synchronises the whole CTA too.
                self.part.all_dirty = false;
                self.part.issue_dirty = false;
                self.part.tmem_dirty = false;
                Ok(None)
            }
        }
    }

    // ----- operand helpers -----

    fn shaped(&mut self, ty: &Expr) -> LResult<(DType, Vec<u32>)> {
        if let ExprKind::Index(base, items) = &ty.kind {
            if let Some(Val::DType(d)) = base.as_name().and_then(|n| {
                if let Some(ConstValue::DType(d)) = self.consts.get(n) {
                    Some(Val::DType(d))
                } else {
                    DType::from_name(n).map(Val::DType)
                }
            }) {
                let mut dims = Vec::new();
                for it in items {
                    let IndexItem::Expr(x) = it else {
                        return Err(invalid("type", ty.span, "a shaped type takes dimensions"));
                    };
                    let v = self.const_int(x, "type")?;
                    dims.push(
                        u32::try_from(v).map_err(|_| invalid("type", x.span, "dimension out of range"))?,
                    );
                }
                return Ok((d, dims));
            }
        }
        Err(invalid(
            "type",
            ty.span,
            "expected a shaped type like `f16[128, 64]`",
        ))
    }

    fn smem_layout_arg(&mut self, e: &Expr) -> LResult<SmemLayout> {
        let bad = || invalid("layout", e.span, "expected a shared-memory layout");
        match &e.kind {
            ExprKind::Name(n) if n == "plain" => Ok(SmemLayout::Plain),
            ExprKind::Call(f, args) if f == "nvmma" => {
                let mut swizzle = Swizzle::None;
                let mut transposed = false;
                for a in args {
                    match a.key.as_ref().map(|k| k.name.as_str()) {
                        None => {
                            let b = self.const_int(&a.value, "nvmma")?;
                            swizzle = Swizzle::from_bytes(b).ok_or_else(bad)?;
                        }
                        Some("transposed") => transposed = self.const_int(&a.value, "nvmma")? != 0,
                        Some(_) => return Err(bad()),
                    }
                }
                Ok(SmemLayout::Nvmma { swizzle, transposed })
            }
            ExprKind::Call(f, args) if f == "swizzled" && args.len() == 3 => {
                let v: Vec<u32> = args
                    .iter()
                    .map(|a| self.const_int(&a.value, "swizzled").map(|x| x as u32))
                    .collect::<LResult<_>>()?;
                Ok(SmemLayout::Swizzled {
                    vec: v[0],
                    per_phase: v[1],
                    max_phase: v[2],
                })
            }
            _ => Err(bad()),
        }
    }

    fn smem_arg(&mut self, e: &Expr, op: &str) -> LResult<SmemView> {
        match self.expr(e)? {
            Val::Smem(v) => Ok(v),
            other => Err(invalid(
                op,
                e.span,
                format!("expected a shared-memory view, found {}", other.kind()),
            )),
        }
    }

    fn tmem_arg(&mut self, e: &Expr, op: &str) -> LResult<TmemView> {
        match self.expr(e)? {
            Val::Tmem(v) => Ok(v),
            other => Err(invalid(
                op,
                e.span,
                format!("expected a tensor-memory view, found {}", other.kind()),
            )),
        }
    }

    /// `[addr]` of one mbarrier.
    fn bar_addr(&mut self, e: &Expr, op: &str) -> LResult<String> {
        match self.expr(e)? {
            Val::Mbar { base, count: None } => Ok(if base.off == 0 {
                format!("[{}]", base.reg)
            } else {
                format!("[{}+{}]", base.reg, base.off)
            }),
            other => Err(invalid(
                op,
                e.span,
                format!("expected one mbarrier, found {}", other.kind()),
            )),
        }
    }

    fn opt_pred(&mut self, e: Option<&Expr>) -> LResult<Option<Reg>> {
        match e {
            None => Ok(None),
            Some(e) => {
                let v = self.expr(e)?;
                Ok(Some(self.pred_of(&v, e.span)?))
            }
        }
    }

    /// A parity operand: `0`/`1` or a register holding `phase & 1`.
    fn parity_operand(&mut self, v: &Val, span: Span) -> LResult<String> {
        match v {
            Val::Int(i) => Ok((i & 1).to_string()),
            Val::Bool(b) => Ok((*b as i64).to_string()),
            _ => {
                let r = self.scalar_reg(v, ScalarTy::I32, span)?;
                let d = self.e.reg(RegClass::B32);
                self.e.ins(format!("and.b32 {d}, {r}, 1"));
                Ok(d.to_string())
            }
        }
    }

    /// A register for an operand that must be one (immediates are moved).
    fn reg_operand(&mut self, s: &str, class: RegClass) -> String {
        if s.starts_with('%') {
            return s.to_string();
        }
        let r = self.e.reg(class);
        self.mov(r, s);
        r.to_string()
    }

    /// True on lane 0 of every warp of the partition.
    fn lane0_pred(&mut self) -> Reg {
        let p = self.e.reg(RegClass::Pred);
        self.e.ins(format!("setp.eq.u32 {p}, {}, 0", self.k.lane));
        p
    }

    /// The `cta_group` argument of a tcgen05 operation: 1 (the default) or 2.
    fn cta_group(&mut self, e: Option<&Expr>, op: &str, span: Span) -> LResult<u32> {
        match e {
            None => Ok(1),
            Some(e) => match self.const_int(e, op)? {
                1 => Ok(1),
                2 => Ok(2),
                g => Err(invalid(op, span, format!("cta_group {g} (1 or 2)"))),
            },
        }
    }

    pub fn layout_arg_pub(&mut self, e: &Expr, what: &str) -> LResult<TileLayout> {
        match self.expr(e) {
            Ok(Val::Layout(l)) => Ok(l),
            Ok(other) => Err(invalid(
                what,
                e.span,
                format!("expected a layout, found {}", other.kind()),
            )),
            Err(err) => Err(err),
        }
    }

    /// The layout of a tile loaded without one: 32 consecutive elements of the last dimension
    /// per warp, the warps along the first dimension, the rest in registers.
    fn default_layout(&self, shape: &[u32]) -> TileLayout {
        let r = shape.len();
        let mut tpw = vec![1; r];
        let mut wpc = vec![1; r];
        tpw[r - 1] = 32;
        wpc[0] = self.part.warps;
        TileLayout::Blocked {
            spt: vec![1; r],
            tpw,
            wpc,
            order: (0..r as u32).rev().collect(),
        }
    }

    // ----- allocation -----

    fn smem_alloc(&mut self, op: &Op, ty: &Expr, layout: &Expr) -> LResult<Val> {
        let name = op.kind.name();
        let alloc = self
            .ck
            .alloc_of(op)
            .ok_or_else(|| invalid(name, op.span, "no allocation planned for this buffer"))?
            .clone();
        let (dtype, shape) = self.shaped(ty)?;
        let layout = self.smem_layout_arg(layout)?;
        let align = 1024u64.min(1u64 << (alloc.offset as u64 | 1024).trailing_zeros());
        Ok(Val::Smem(SmemView {
            geom: Geom {
                dtype,
                full: shape.clone(),
                layout,
            },
            offsets: vec![0; shape.len()],
            shape,
            base: Addr {
                reg: self.k.smem,
                off: alloc.offset as i64,
            },
            align,
            alloc: self.ck.alloc_index(op).unwrap_or(0),
        }))
    }

    fn tmem_alloc(&mut self, op: &Op, ty: &Expr) -> LResult<Val> {
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
        let (_, shape) = self.shaped(ty)?;
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

    fn tmem_dealloc(&mut self, t: &TmemView, span: Span) -> LResult<()> {
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
    fn sync_after_issue(&mut self) {
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
    fn desc_coords<'e>(&mut self, e: &'e Expr, op: &str) -> LResult<(String, &'e [IndexItem])> {
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

    fn coord_regs(&mut self, items: &[IndexItem], op: &str, span: Span) -> LResult<Vec<String>> {
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

    /// The TMA box of a descriptor parameter (IR order) and how many span-wide messages cover
    /// its block.
    fn tma_box(&self, dname: &str, span: Span) -> LResult<(bwsim_isa::typeck::DescTy, Vec<u32>, u32)> {
        let d = self.desc_ty(dname, span)?;
        let sw = d.layout.swizzle().bytes();
        let mut bx = d.block.clone();
        let mut nmsg = 1;
        if let Some(last) = bx.last_mut() {
            let bytes = *last as u64 * d.dtype.bits() as u64 / 8;
            if sw > 0 && bytes > sw as u64 {
                let per = sw * 8 / d.dtype.bits();
                nmsg = last.div_ceil(per);
                *last = per;
            }
        }
        Ok((d, bx, nmsg))
    }

    /// Logical (unswizzled) shared address register of a view's first element, plus a
    /// constant.
    fn smem_start(&mut self, v: &SmemView, span: Span, op: &str) -> LResult<(Reg, i64)> {
        let off = v
            .geom
            .logical_offset(&v.offsets)
            .map_err(|m| unsupported(op, span, m))?;
        Ok((v.base.reg, v.base.off + off as i64))
    }

    fn tma_load(
        &mut self,
        src: &Expr,
        dst: &Expr,
        bar: &Expr,
        pred: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
        let op = "tma.load";
        self.tma_tile_copy(src, dst, Some(bar), pred, span, op, |m| {
            format!(
                "@{} cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [{}+{}], [{}, {{{}}}], {}",
                m.pred, m.rank, m.sreg, m.smem_off, m.tmap, m.coords, m.bar
            )
        })?;
        Ok(())
    }

    fn tma_store(&mut self, dst: &Expr, src: &Expr, pred: Option<&Expr>, span: Span) -> LResult<()> {
        let op = "tma.store";
        let p = self.tma_tile_copy(dst, src, None, pred, span, op, |m| {
            format!(
                "@{} cp.async.bulk.tensor.{}d.global.shared::cta.tile.bulk_group [{}, {{{}}}], [{}+{}]",
                m.pred, m.rank, m.tmap, m.coords, m.sreg, m.smem_off
            )
        })?;
        self.e.ins(format!("@{p} cp.async.bulk.commit_group"));
        Ok(())
    }

    /// One TMA tile copy between the descriptor `desc` (with its coordinates) and the shared
    /// view `smem`, issued by the partition's leader as span-wide messages: message `j` starts
    /// `j` boxes further along the innermost coordinate and `j` span images further in shared
    /// memory. `ins` formats one message's instruction. Returns the issue predicate.
    #[allow(clippy::too_many_arguments)]
    fn tma_tile_copy(
        &mut self,
        desc: &Expr,
        smem: &Expr,
        bar: Option<&Expr>,
        pred: Option<&Expr>,
        span: Span,
        op: &str,
        ins: impl Fn(&TmaMsg) -> String,
    ) -> LResult<Reg> {
        let (dname, items) = self.desc_coords(desc, op)?;
        let coords = self.coord_regs(items, op, span)?;
        let v = self.smem_arg(smem, op)?;
        let bar = match bar {
            Some(b) => self.bar_addr(b, op)?,
            None => String::new(),
        };
        let pr = self.opt_pred(pred)?;
        let (d, bx, nmsg) = self.tma_box(&dname, span)?;
        let (sreg, soff) = self.smem_start(&v, span, op)?;
        let tmap = self
            .k
            .tmaps
            .get(&dname)
            .map(|t| t.0)
            .ok_or_else(|| invalid(op, span, "unknown descriptor"))?;
        let rank = d.block.len();
        let block_bytes = self.msg_stride(&d, nmsg, span, op)?;
        self.before_issue();
        let p = self.issue_pred(pr);
        for j in 0..nmsg {
            let mut cs: Vec<String> = coords.iter().rev().cloned().collect();
            if j > 0 {
                let c = self.e.reg(RegClass::B32);
                self.e
                    .ins(format!("add.s32 {c}, {}, {}", cs[0], j * bx[rank - 1]));
                cs[0] = c.to_string();
            }
            let msg = TmaMsg {
                pred: p.to_string(),
                rank,
                tmap: tmap.to_string(),
                coords: cs.join(", "),
                sreg: sreg.to_string(),
                smem_off: soff + (j as u64 * block_bytes) as i64,
                bar: bar.clone(),
            };
            self.e.ins(ins(&msg));
        }
        Ok(p)
    }

    /// Bytes between the shared-memory images of consecutive span-wide messages of one copy.
    fn msg_stride(&self, d: &bwsim_isa::typeck::DescTy, nmsg: u32, span: Span, op: &str) -> LResult<u64> {
        if nmsg <= 1 {
            return Ok(0);
        }
        let rank = d.block.len();
        let outer: u64 = d.block[..rank.saturating_sub(2)]
            .iter()
            .map(|&x| x as u64)
            .product();
        if outer > 1 {
            return Err(unsupported(
                op,
                span,
                "a box wider than the swizzle span with more than two non-unit dimensions",
            ));
        }
        let rows = if rank >= 2 { d.block[rank - 2] as u64 } else { 1 };
        let sw = d.layout.swizzle().bytes() as u64;
        Ok(rows * sw)
    }

    /// gather4 (`gather` true) or scatter4: the row offsets tile is held by the partition's
    /// warps in groups of four consecutive registers; lane 0 of each warp issues the messages
    /// for the rows it holds (PTX.md section 4).
    fn gather_scatter(
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
    fn gather_layout(&self, shape: &[u32], span: Span) -> LResult<LinearLayout> {
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

    /// Registers of each TMEM access of a 32x32b-shaped transfer: for the tile layout `ll`
    /// over the view `t`, every register's column relative to the warp's base column.
    fn tmem_plan(
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
                let h = ll.lanes[4];
                if (0..4).any(|i| ll.lanes[i] != row(i as u32))
                    || h == 0
                    || h >= row(0)
                    || !t.offsets[0].is_multiple_of(64)
                {
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
        let col_of = |b: u32| {
            let (_, c, _) = tmem_cell(t, t.offsets[0], t.offsets[1] + b);
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
        // Warp base address: region + lane quarter (warp % 4) << 21 (32 lanes << 16) + column part.
        let base = self.tmem_region_addr(t);
        let wq = self.e.reg(RegClass::B32);
        self.e.ins(format!("and.b32 {wq}, {}, 3", self.k.warp));
        self.e.ins(format!("shl.b32 {wq}, {wq}, 21"));
        let a = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {a}, {base}, {wq}"));
        if let Some(cp) = col_part {
            self.e.ins(format!("add.u32 {a}, {a}, {cp}"));
        }
        Ok((a, cells, imm))
    }

    /// Runs of cells on consecutive columns, each a power of two long (at most 128), for
    /// 32-bit elements: (first column, registers).
    fn column_runs(cells: &TmemCells) -> Vec<(u32, Vec<usize>)> {
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

    fn tmem_load(&mut self, t: &TmemView, l: &TileLayout, span: Span) -> LResult<Tile> {
        let op = "tmem.load";
        if t.scales {
            return Err(unsupported(op, span, "loads from a scale-factor buffer"));
        }
        let native = self.layout_for(&TileLayout::Tmem32x32b, &t.shape, span)?;
        self.before_all_access();
        self.e.ins("tcgen05.fence::after_thread_sync");
        let (addr, cells, imm) = self.tmem_plan(t, &native, span, op)?;
        let (shape, ld_imm, _) = match imm {
            None => ("32x32b", String::new(), String::new()),
            Some(i) => ("16x32bx2", format!(", {i}"), format!("{i}, ")),
        };
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
            let mut by_col: std::collections::BTreeMap<u32, Vec<(usize, u32)>> = Default::default();
            for &(c, r, sh) in &cells {
                by_col.entry(c).or_default().push((r, sh));
            }
            let bits = t.dtype.bits();
            for (c, elems) in by_col {
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

    fn tmem_store(&mut self, t: &TmemView, v: &Tile, span: Span) -> LResult<()> {
        let op = "tmem.store";
        if t.scales {
            return self.scales_store(t, v, span);
        }
        let native = self.layout_for(&TileLayout::Tmem32x32b, &t.shape, span)?;
        let v = self.in_layout(v, &native, span)?;
        self.before_all_access();
        self.e.ins("tcgen05.fence::after_thread_sync");
        let (addr, cells, imm) = self.tmem_plan(t, &native, span, op)?;
        let (shape, _, st_imm) = match imm {
            None => ("32x32b", String::new(), String::new()),
            Some(i) => ("16x32bx2", format!(", {i}"), format!("{i}, ")),
        };
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
            let mut by_col: std::collections::BTreeMap<u32, Vec<(usize, u32)>> = Default::default();
            for &(c, r, sh) in &cells {
                by_col.entry(c).or_default().push((r, sh));
            }
            for (c, elems) in by_col {
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
    fn scales_store(&mut self, t: &TmemView, v: &Tile, span: Span) -> LResult<()> {
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
        let base = self.tmem_region_addr(t);
        let wq = self.e.reg(RegClass::B32);
        self.e.ins(format!("and.b32 {wq}, {}, 3", self.k.warp));
        self.e.ins(format!("shl.b32 {wq}, {wq}, 21"));
        let addr = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {addr}, {base}, {wq}"));
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
    fn desc_reg(&mut self, sreg: Reg, off: i64, fixed: u64) -> Reg {
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
    fn mma_operand(
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

    #[allow(clippy::too_many_arguments)]
    fn tcgen05_mma(
        &mut self,
        a: &Expr,
        b: &Expr,
        acc: &Expr,
        scales: Option<(&Expr, &Expr)>,
        use_acc: Option<&Expr>,
        pred: Option<&Expr>,
        cta_group: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
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
            // A CTA pair's MMA (PTX.md section 8, cta_group::2): each CTA names its own halves,
            // A [M/2, K] and B [K, N/2] at the same shared offsets in both CTAs, and its
            // [M/2, N] accumulator rows at the same TMEM address; the instruction is M x N.
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
            Val::Smem(s) => (s.geom.dtype, s.shape[0], s.shape[1]),
            Val::Tmem(t) => (t.dtype, t.shape[0], t.shape[1]),
            other => {
                return Err(invalid(
                    op,
                    a.span,
                    format!("A must be in shared or tensor memory, found {}", other.kind()),
                ))
            }
        };
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
        let idesc = match &sv {
            None => desc::tcgen05_idesc(kind, a_dtype, bv.geom.dtype, cv.dtype, a_major, b_major, mi, ni),
            Some((sa, _)) => desc::tcgen05_idesc_block_scaled(
                kind,
                a_dtype,
                bv.geom.dtype,
                sa.dtype,
                a_major,
                b_major,
                m,
                n,
                0,
                0,
            ),
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
                    let d = desc::tcgen05_idesc_block_scaled(
                        kind,
                        a_dtype,
                        bv.geom.dtype,
                        sa.dtype,
                        a_major,
                        b_major,
                        m,
                        n,
                        id,
                        id,
                    )
                    .map_err(|e| unsupported(op, span, e.0))?;
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
        // Descriptors per K step.
        let mut descs = Vec::new();
        for ks in 0..k / kstep {
            let bd = self.mma_operand(&bv, 0, ks * kstep, false, span, op)?;
            let bfix = desc::tcgen05_smem_desc(0, bd.lbo, bd.sbo, bd.swizzle, 0)
                .map_err(|e| unsupported(op, span, e.0))?;
            let (bs, bo) = (bv.base.reg, bv.base.off + bd.start as i64);
            let ad = match &av {
                Val::Smem(s) => {
                    let adesc = self.mma_operand(s, 0, ks * kstep, true, span, op)?;
                    let afix = desc::tcgen05_smem_desc(0, adesc.lbo, adesc.sbo, adesc.swizzle, 0)
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

    fn tcgen05_cp(&mut self, src: &Expr, dst: &Expr, span: Span) -> LResult<()> {
        let op = "tcgen05.cp";
        self.cp_span.get_or_insert(span);
        let s = self.smem_arg(src, op)?;
        let t = self.tmem_arg(dst, op)?;
        if t.scales {
            return Err(unsupported(op, span, "tcgen05.cp into a scale-factor buffer"));
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
                let fix = desc::tcgen05_smem_desc(0, od.lbo, od.sbo, od.swizzle, 0)
                    .map_err(|e| unsupported(op, span, e.0))?;
                let (lane, col, _) = tmem_cell(&t, t.offsets[0] + mb * 128, t.offsets[1] + c);
                plan.push((s.base.off + od.start as i64, fix, (lane << 16) + col));
            }
        }
        let base = self.tmem_region_addr(&t);
        self.before_issue();
        let p = self.part.leader;
        self.e.ins("tcgen05.fence::after_thread_sync");
        for (off, fix, cell) in plan {
            let dr = self.desc_reg(s.base.reg, off, fix);
            let a = self.e.reg(RegClass::B32);
            self.e.ins(format!("add.u32 {a}, {base}, {cell}"));
            self.e
                .ins(format!("@{p} tcgen05.cp.cta_group::1.128x256b [{a}], {dr}"));
        }
        Ok(())
    }

    // ----- wgmma -----

    #[allow(clippy::needless_range_loop)] // blocks index the accumulator and the descriptors alike
    fn wgmma(&mut self, a: &Expr, b: &Expr, acc: &Expr, use_acc: Option<&Expr>, span: Span) -> LResult<Tile> {
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

    // ----- shared memory -----

    /// Address operands (`[reg+imm]`) of every register of a tile of layout `ll` over a view.
    fn smem_addrs(&mut self, v: &SmemView, ll: &LinearLayout, span: Span, op: &str) -> LResult<Vec<String>> {
        if ll.shape != v.shape {
            return Err(invalid(
                op,
                span,
                format!("tile shape {:?} differs from the view's {:?}", ll.shape, v.shape),
            ));
        }
        let period = v.geom.layout.swizzle().period() as u64;
        if !matches!(v.geom.layout.swizzle(), Swizzle::None) && v.align < period {
            return Err(unsupported(
                op,
                span,
                format!(
                    "a swizzled view aligned to {} bytes (its pattern repeats every {period})",
                    v.align
                ),
            ));
        }
        let map = view_map(&v.geom, &v.offsets, &v.shape).map_err(|m| unsupported(op, span, m))?;
        let lin = |f: u32| xor_bits(&map.bases, f);
        let lanes: Vec<u32> = ll.lanes.iter().map(|&b| lin(b)).collect();
        let warps: Vec<u32> = ll.warps.iter().map(|&b| lin(b)).collect();
        let tmask = lanes.iter().chain(&warps).fold(0, |a, &b| a | b);
        let toff = self.thread_part(&lanes, &warps);
        let t = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {t}, {}, {toff}", v.base.reg));
        let mut out = Vec::new();
        for r in 0..ll.num_regs() {
            let ro = map.origin ^ lin(ll.reg_flat(r));
            if ro & tmask == 0 {
                out.push(format!("[{t}+{}]", ro as i64 + v.base.off));
            } else {
                let x = self.e.reg(RegClass::B32);
                self.e.ins(format!("xor.b32 {x}, {toff}, {ro}"));
                self.e.ins(format!("add.u32 {x}, {x}, {}", v.base.reg));
                out.push(format!("[{x}+{}]", v.base.off));
            }
        }
        Ok(out)
    }

    /// True on the threads that hold the first copy of each element (lane and warp bits with
    /// a zero basis are zero), or `None` when no thread holds a copy.
    fn unique_pred(&mut self, ll: &LinearLayout) -> Option<Reg> {
        let mut lane_mask = 0u32;
        for (i, &b) in ll.lanes.iter().enumerate() {
            if b == 0 {
                lane_mask |= 1 << i;
            }
        }
        let mut warp_mask = 0u32;
        for (i, &b) in ll.warps.iter().enumerate() {
            if b == 0 {
                warp_mask |= 1 << i;
            }
        }
        if lane_mask == 0 && warp_mask == 0 {
            return None;
        }
        let t = self.e.reg(RegClass::B32);
        let p = self.e.reg(RegClass::Pred);
        self.e.ins(format!("and.b32 {t}, {}, {lane_mask}", self.k.lane));
        self.e.ins(format!("setp.eq.u32 {p}, {t}, 0"));
        if warp_mask != 0 {
            let w = self.e.reg(RegClass::B32);
            let q = self.e.reg(RegClass::Pred);
            self.e
                .ins(format!("and.b32 {w}, {}, {warp_mask}", self.part.pwarp));
            self.e.ins(format!("setp.eq.and.u32 {q}, {w}, 0, {p}"));
            return Some(q);
        }
        Some(p)
    }

    fn smem_load(&mut self, v: &SmemView, l: &TileLayout, span: Span) -> LResult<Tile> {
        let op = "smem.load";
        let ty = ldst_ty(v.geom.dtype)
            .ok_or_else(|| unsupported(op, span, format!("loads of {} elements", v.geom.dtype)))?;
        let ll = self.layout_for(l, &v.shape, span)?;
        self.before_all_access();
        let addrs = self.smem_addrs(v, &ll, span, op)?;
        let out = self.fresh_tile(v.geom.dtype, ll, Some(l.clone()), span)?;
        for (r, a) in out.regs.iter().zip(addrs) {
            self.e.ins(format!("ld.shared.{ty} {r}, {a}"));
        }
        self.part.all_dirty = true;
        Ok(out)
    }

    fn smem_store(&mut self, v: &SmemView, t: &Tile, span: Span) -> LResult<()> {
        let op = "smem.store";
        let ty = ldst_ty(v.geom.dtype)
            .ok_or_else(|| unsupported(op, span, format!("stores of {} elements", v.geom.dtype)))?;
        let t = if t.dtype != v.geom.dtype {
            self.cast_tile(t, v.geom.dtype, span)?
        } else {
            t.clone()
        };
        self.before_all_access();
        let addrs = self.smem_addrs(v, &t.ll, span, op)?;
        let p = self.unique_pred(&t.ll);
        for (r, a) in t.regs.iter().zip(addrs) {
            self.e.ins_if(p, format!("st.shared.{ty} {a}, {r}"));
        }
        self.part.all_dirty = true;
        Ok(())
    }

    // ----- global memory -----

    fn ptr_arg(&mut self, e: &Expr, op: &str) -> LResult<(DType, Reg)> {
        match self.expr(e)? {
            Val::Ptr(d, r) => Ok((d, r)),
            other => Err(invalid(
                op,
                e.span,
                format!("expected a pointer parameter, found {}", other.kind()),
            )),
        }
    }

    /// Offsets (and more tiles) in one common layout; scalars broadcast.
    fn global_tiles(&mut self, vals: &[Val], span: Span) -> LResult<(Vec<Option<Tile>>, LinearLayout)> {
        let refs: Vec<&Val> = vals.iter().collect();
        if !vals.iter().any(|v| matches!(v, Val::Tile(_))) {
            // A scalar offset: a one-element tile held by every thread.
            let ll = LinearLayout {
                shape: vec![1],
                regs: vec![],
                lanes: vec![0; 5],
                warps: vec![0; self.part.warps.trailing_zeros() as usize],
            };
            let mut out = Vec::new();
            for v in vals {
                out.push(match v {
                    Val::Tile(_) => None,
                    _ => None,
                });
            }
            return Ok((out, ll));
        }
        let (ts, ll, _) = self.align_tiles_pub(&refs, span)?;
        Ok((ts, ll))
    }

    fn global_addr(&mut self, base: Reg, off: &str, es: u32) -> Reg {
        let a = self.e.reg(RegClass::B64);
        let o = self.reg_operand(off, RegClass::B32);
        self.e.ins(format!("mad.wide.s32 {a}, {o}, {es}, {base}"));
        a
    }

    fn global_load(
        &mut self,
        ptr: &Expr,
        offsets: &Expr,
        mask: Option<&Expr>,
        other: Option<&Expr>,
        span: Span,
    ) -> LResult<Tile> {
        let op = "global.load";
        let (dt, base) = self.ptr_arg(ptr, op)?;
        let ty = ldst_ty(dt).ok_or_else(|| unsupported(op, span, format!("loads of {dt} elements")))?;
        let mut vals = vec![self.expr(offsets)?];
        if let Some(m) = mask {
            vals.push(self.expr(m)?);
        }
        let (ts, ll) = self.global_tiles(&vals, span)?;
        let n = ll.num_regs();
        let off_ops: Vec<String> = match &ts[0] {
            Some(t) => {
                let t = if t.dtype != DType::I32 {
                    self.cast_tile(t, DType::I32, span)?
                } else {
                    t.clone()
                };
                t.regs.iter().map(|r| r.to_string()).collect()
            }
            None => vec![self.scalar_operand(&vals[0], ScalarTy::I32, span)?; n],
        };
        let mask_ops: Option<Vec<String>> = match mask {
            None => None,
            Some(_) => Some(match &ts[1] {
                Some(t) => {
                    let t = if t.dtype != DType::I1 {
                        self.cast_tile(t, DType::I1, span)?
                    } else {
                        t.clone()
                    };
                    t.regs.iter().map(|r| r.to_string()).collect()
                }
                None => vec![self.pred_of(&vals[1], span)?.to_string(); n],
            }),
        };
        let other_op = match other {
            Some(o) => {
                let v = self.expr(o)?;
                Some(self.elem_operand(&v, dt, span)?)
            }
            None => None,
        };
        let out = self.fresh_tile(dt, ll, None, span)?;
        let es = dt.bytes();
        for r in 0..n {
            let a = self.global_addr(base, &off_ops[r], es);
            let d = out.regs[r];
            match &mask_ops {
                None => self.e.ins(format!("ld.global.{ty} {d}, [{a}]")),
                Some(ms) => {
                    let fill = other_op.clone().unwrap_or_else(|| "0".into());
                    let fill = if d.class == RegClass::F32 && fill == "0" {
                        "0f00000000".to_string()
                    } else {
                        fill
                    };
                    self.mov(d, &fill);
                    self.e.ins(format!("@{} ld.global.{ty} {d}, [{a}]", ms[r]));
                }
            }
        }
        Ok(out)
    }

    fn global_store(
        &mut self,
        ptr: &Expr,
        offsets: &Expr,
        value: &Expr,
        mask: Option<&Expr>,
        span: Span,
    ) -> LResult<()> {
        let op = "global.store";
        let (dt, base) = self.ptr_arg(ptr, op)?;
        let ty = ldst_ty(dt).ok_or_else(|| unsupported(op, span, format!("stores of {dt} elements")))?;
        let mut vals = vec![self.expr(offsets)?, self.expr(value)?];
        if let Some(m) = mask {
            vals.push(self.expr(m)?);
        }
        let (ts, ll) = self.global_tiles(&vals, span)?;
        let n = ll.num_regs();
        let off_ops: Vec<String> = match &ts[0] {
            Some(t) => {
                let t = if t.dtype != DType::I32 {
                    self.cast_tile(t, DType::I32, span)?
                } else {
                    t.clone()
                };
                t.regs.iter().map(|r| r.to_string()).collect()
            }
            None => vec![self.scalar_operand(&vals[0], ScalarTy::I32, span)?; n],
        };
        let val_ops: Vec<String> = match &ts[1] {
            Some(t) => {
                let t = if t.dtype != dt {
                    self.cast_tile(t, dt, span)?
                } else {
                    t.clone()
                };
                t.regs.iter().map(|r| r.to_string()).collect()
            }
            None => {
                let o = self.elem_operand(&vals[1], dt, span)?;
                vec![o; n]
            }
        };
        let mask_ops: Option<Vec<String>> = match mask {
            None => None,
            Some(_) => Some(match &ts[2] {
                Some(t) => {
                    let t = if t.dtype != DType::I1 {
                        self.cast_tile(t, DType::I1, span)?
                    } else {
                        t.clone()
                    };
                    t.regs.iter().map(|r| r.to_string()).collect()
                }
                None => vec![self.pred_of(&vals[2], span)?.to_string(); n],
            }),
        };
        let uniq = self.unique_pred(&ll);
        for r in 0..n {
            let a = self.global_addr(base, &off_ops[r], dt.bytes());
            let mut p = uniq.map(|p| p.to_string());
            if let Some(ms) = &mask_ops {
                p = Some(match p {
                    None => ms[r].clone(),
                    Some(u) => {
                        let q = self.e.reg(RegClass::Pred);
                        self.e.ins(format!("and.pred {q}, {u}, {}", ms[r]));
                        q.to_string()
                    }
                });
            }
            let v = self.reg_operand(&val_ops[r], dtype_class(dt).unwrap_or(RegClass::B32));
            match p {
                Some(p) => self.e.ins(format!("@{p} st.global.{ty} [{a}], {v}")),
                None => self.e.ins(format!("st.global.{ty} [{a}], {v}")),
            }
        }
        Ok(())
    }
}

/// One span-wide message of a TMA tile copy, for its instruction's format.
struct TmaMsg {
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
