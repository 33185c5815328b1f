//! Types and rules of operations: each `OpKind`'s operands, the target it needs, TMA
//! coordinates and box matches, MMA shapes, allocations.

use super::*;

impl<'k> Cx<'k> {
    pub(super) fn expect_smem(&mut self, e: &'k Expr, what: &str) -> Result<SmemTy, Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Smem(s) => Ok(s),
            other => Err(e_type(
                e.span,
                format!(
                    "{what} must be a shared-memory buffer, found {}",
                    other.describe()
                ),
                "not in shared memory",
            )),
        }
    }
    /// A cluster-launch-control response buffer: 16 bytes of shared memory (PTX: naturally
    /// aligned, which the allocation's 16-byte alignment gives).
    pub(super) fn clc_response(&mut self, e: &'k Expr) -> Result<(), Diagnostic> {
        let t = self.expect_smem(e, "the response buffer")?;
        let bits: u64 = t.shape.iter().map(|&d| d as u64).product::<u64>() * t.dtype.bits() as u64;
        if bits != 128 {
            return Err(e_type(
                e.span,
                format!(
                    "a cluster-launch-control response is 16 bytes, and this buffer holds {} bits",
                    bits
                ),
                "not 16 bytes",
            )
            .with_help("allocate `smem.alloc i64[2], plain` (Gluon: `gl.allocate_shared_memory(gl.int64, [2], ...)`)"));
        }
        Ok(())
    }
    pub(super) fn expect_tmem(&mut self, e: &'k Expr, what: &str) -> Result<TmemTy, Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Tmem(s) => Ok(s),
            other => Err(e_type(
                e.span,
                format!(
                    "{what} must be a tensor-memory buffer, found {}",
                    other.describe()
                ),
                "not in tensor memory",
            )),
        }
    }
    pub(super) fn expect_bar(&mut self, e: &'k Expr) -> Result<(), Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Mbar { count: None, .. } => Ok(()),
            Ty::Mbar { count: Some(_), .. } => Err(e_type(
                e.span,
                "expected one barrier, found a barrier array",
                "index it: `bars[i]`",
            )),
            other => Err(Diagnostic::error(
                Code::MbarType,
                format!("expected an mbarrier, found {}", other.describe()),
                e.span,
                "not a barrier",
            )
            .with_help("barriers come from `mbar.alloc N`, indexed as `bars[i]`")),
        }
    }
    pub(super) fn expect_scalar(&mut self, e: &'k Expr, what: &str) -> Result<(), Diagnostic> {
        let t = self.expr_inner(e)?;
        if t.is_scalar() {
            Ok(())
        } else {
            Err(e_type(
                e.span,
                format!("{what} must be a scalar, found {}", t.describe()),
                "not a scalar",
            ))
        }
    }
    pub(super) fn opt_scalar(&mut self, e: &'k Option<Expr>, what: &str) -> Result<(), Diagnostic> {
        match e {
            Some(e) => self.expect_scalar(e, what),
            None => Ok(()),
        }
    }
    /// `desc[coords]`: the descriptor and its coordinate expressions.
    pub(super) fn desc_coords(&mut self, e: &'k Expr) -> Result<(DescTy, &'k [IndexItem]), Diagnostic> {
        if let ExprKind::Index(base, items) = &e.kind {
            if let Ty::Desc(d) = self.expr_inner(base)? {
                return Ok((d, items));
            }
        }
        Err(e_type(
            e.span,
            "expected a tensor descriptor with coordinates, like `a_desc[x, y]`",
            "here",
        ))
    }

    /// `tma.make_desc PTR, OFFSET, [DIMS], [STRIDES], tensor_desc(...)`: the descriptor type,
    /// its element type the pointer's, one dimension per block dimension and one byte stride
    /// per outer dimension.
    fn make_desc(
        &mut self,
        ptr: &'k Expr,
        offset: &'k Expr,
        shape: &'k Expr,
        strides: &'k Expr,
        ty: &'k Expr,
    ) -> Result<Ty, Diagnostic> {
        let Ty::Desc(d) = self.param_ty(ty)? else {
            return Err(e_type(
                ty.span,
                "the descriptor's type is `tensor_desc(DTYPE[block], LAYOUT)`",
                "not a descriptor type",
            ));
        };
        match self.expr_inner(ptr)? {
            Ty::Ptr(p) if p == d.dtype => {}
            other => {
                return Err(e_type(
                    ptr.span,
                    format!(
                        "the descriptor's base must be a `ptr({})`, found {}",
                        d.dtype,
                        other.describe()
                    ),
                    "here",
                ))
            }
        }
        self.expect_scalar(offset, "the base's element offset")?;
        let rank = d.block.len();
        for (list, n, what) in [
            (shape, rank, "dimension"),
            (strides, rank.saturating_sub(1), "outer byte stride"),
        ] {
            let ExprKind::List(items) = &list.kind else {
                return Err(e_type(
                    list.span,
                    format!("expected a list of {n} values"),
                    "not a list",
                ));
            };
            if items.len() != n {
                return Err(e_type(
                    list.span,
                    format!(
                        "a descriptor of rank {rank} takes {n} values, found {}",
                        items.len()
                    ),
                    format!("one {what} each"),
                ));
            }
            for i in items {
                self.expect_scalar(i, what)?;
            }
        }
        // The tensor-map limits a descriptor parameter's type is held to.
        for diag in crate::rules::check_desc(&d, ty.span) {
            self.emit(diag);
        }
        Ok(Ty::Desc(d))
    }

    pub(super) fn new_alloc(
        &mut self,
        kind: AllocKind,
        size: u32,
        align: u32,
        manual: bool,
        op: &'k Op,
    ) -> usize {
        if let Some(&Some(i)) = at(&self.checked.alloc_of, op.id) {
            return i;
        }
        let here = self
            .stmt_stack
            .last()
            .and_then(|&s| at(&self.pre, s))
            .map(|p| p.0)
            .unwrap_or(0);
        let i = self.checked.allocs.len();
        self.checked.allocs.push(Alloc {
            kind,
            offset: 0,
            size,
            align,
            manual,
            span: op.span,
            live: (here, here),
        });
        if let Some(slot) = at_mut(&mut self.checked.alloc_of, op.id) {
            *slot = Some(i);
        }
        // An allocation inside a constant `if` belongs to the block around the `if`.
        let mut depth = self.stmt_stack.len().saturating_sub(1);
        for &t in self.transparent.iter().rev() {
            if t + 1 == depth {
                depth = t;
            }
        }
        self.alloc_depth.push(depth);
        i
    }

    pub(super) fn arch(&mut self, op: &Op, needs: Target, code: Code) {
        if self.checked.target != needs {
            let what = op.kind.name();
            self.emit(
                Diagnostic::error(
                    code,
                    format!("`{what}` is not available on {}", self.checked.target),
                    op.span,
                    format!("needs {needs}"),
                )
                .with_note(format!(
                    "ptxas rejects this instruction for .target {} (docs/semantics.md#faults)",
                    self.checked.target
                ))
                .with_help(if needs == Target::Sm100a {
                    "guard it with `if SM == 100 { ... }` or drop sm_90a from the kernel's targets"
                        .to_string()
                } else {
                    "Blackwell uses tcgen05.mma instead of wgmma: guard it with `if SM == 90 { ... }`"
                        .to_string()
                }),
            );
        }
    }

    /// The type of an op's value, recorded for the later stages ([`Checked::op_type`]).
    pub(super) fn op(&mut self, op: &'k Op) -> Option<Ty> {
        match self.op_inner(op) {
            Ok(t) => {
                if let (Some(t), Some(types)) = (&t, at_mut(&mut self.checked.op_types, op.id)) {
                    (types.get_or_insert_with(HashMap::new)).insert(self.iters.clone(), t.clone());
                }
                t
            }
            Err(d) => {
                self.emit(d);
                None
            }
        }
    }

    pub(super) fn op_inner(&mut self, op: &'k Op) -> Result<Option<Ty>, Diagnostic> {
        use OpKind::*;
        match &op.kind {
            SmemAlloc { ty, layout, align } => {
                let (dtype, shape) = self.shaped(ty)?;
                let layout = self.smem_layout(layout)?;
                crate::rules::check_linear_shape(op, &shape, &layout)?;
                let mut al = layout.alignment();
                if let Some(a) = align {
                    let v = self.checked.consts.dim(a)?;
                    if !v.is_power_of_two() || v < 16 {
                        return Err(e_type(a.span, "alignment must be a power of two >= 16", "here"));
                    }
                    al = al.max(v);
                }
                let size = smem_bytes(dtype, &shape, &layout);
                let id = self.new_alloc(
                    AllocKind::Smem {
                        dtype,
                        shape: shape.clone(),
                        layout: layout.clone(),
                    },
                    size,
                    al,
                    false,
                    op,
                );
                Ok(Some(Ty::Smem(SmemTy {
                    dtype,
                    shape,
                    layout,
                    alloc: id,
                })))
            }
            SmemReinterpret { src, ty, layout } => {
                let s = self.expect_smem(src, "the reinterpreted view")?;
                let (dtype, shape) = self.shaped(ty)?;
                let layout = self.smem_layout(layout)?;
                crate::rules::check_linear_shape(op, &shape, &layout)?;
                // A reinterpret may reach past its view (Gluon's STEALB epilogue spans two B
                // buffers) but never past the allocation; the simulator checks the exact bounds.
                let have = self.checked.allocs[s.alloc].size;
                let want = smem_bytes(dtype, &shape, &layout);
                if want > have {
                    return Err(Diagnostic::error(
                        Code::SmemReinterpret,
                        format!("reinterpret needs {want} bytes but the whole allocation has {have}"),
                        op.span,
                        "too large",
                    ));
                }
                Ok(Some(Ty::Smem(SmemTy {
                    dtype,
                    shape,
                    layout,
                    alloc: s.alloc,
                })))
            }
            MbarAlloc { count, offset } => {
                let n = self.checked.consts.dim(count)?;
                if n == 0 || n > 1024 {
                    return Err(e_type(count.span, "mbar.alloc takes 1..=1024 barriers", "here"));
                }
                let misalign = match offset {
                    Some(o) => self.checked.consts.dim(o)?,
                    None => 0,
                };
                let id = self.new_alloc(
                    AllocKind::Mbar { count: n, misalign },
                    (n * 8).saturating_add(misalign),
                    8,
                    false,
                    op,
                );
                Ok(Some(Ty::Mbar {
                    count: Some(n),
                    alloc: id,
                }))
            }
            TmemReinterpret {
                src,
                ty,
                block,
                col_stride,
            } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                let t = self.expect_tmem(src, "the reinterpreted view")?;
                let (dtype, shape) = self.shaped(ty)?;
                let (block, cs) = self.tmem_layout(op, &shape, block, col_stride)?;
                let new = TmemTy {
                    dtype,
                    shape,
                    block,
                    col_stride: cs,
                    scales: false,
                    alloc: t.alloc,
                };
                // The new view starts at the source view's first column and must end inside
                // the allocation; the simulator checks the exact columns.
                let have = match &self.checked.allocs[t.alloc].kind {
                    AllocKind::Tmem(a) => a.cols(),
                    _ => 0,
                };
                if new.cols() > have {
                    return Err(Diagnostic::error(
                        Code::TmemReinterpret,
                        format!(
                            "the reinterpreted view needs {} TMEM columns but the whole allocation has {have}",
                            new.cols()
                        ),
                        op.span,
                        "too large",
                    ));
                }
                Ok(Some(Ty::Tmem(new)))
            }
            TmemAlloc {
                ty,
                block,
                col_stride,
                scales,
                manual,
            } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                let (dtype, shape) = self.shaped(ty)?;
                let scales = match scales {
                    Some(s) => self.checked.consts.bool(s)?,
                    None => false,
                };
                // Scale factors sit where `scale_cell` puts them, whatever the block: a buffer
                // of 32 or 64 rows (B's factors for N = 32, 64) takes the 128-lane default.
                let (block, cs) = match (scales, block) {
                    (true, None) => ([128, shape.last().copied().unwrap_or(1)], 1),
                    _ => self.tmem_layout(op, &shape, block, col_stride)?,
                };
                let manual = match manual {
                    Some(m) => self.checked.consts.bool(m)?,
                    None => false,
                };
                if scales && dtype.bits() != 8 {
                    return Err(Diagnostic::error(
                        Code::TmemLayout,
                        format!("a `scales=true` buffer holds 8-bit scale factors, found {dtype}"),
                        op.span,
                        "here",
                    )
                    .with_help(
                        "allocate block-scaled MMA factors as `tmem.alloc ue8m0[M, K / 32], scales=true`",
                    ));
                }
                let tt = TmemTy {
                    dtype,
                    shape,
                    block,
                    col_stride: cs,
                    scales,
                    alloc: 0,
                };
                let cols = tt.cols();
                if manual && (!cols.is_power_of_two() || !(32..=TMEM_COLUMNS).contains(&cols)) {
                    return Err(Diagnostic::error(
                        Code::TmemAllocCols,
                        format!("tcgen05.alloc needs a power-of-two column count in 32..=512, this buffer has {cols}"),
                        op.span,
                        "invalid allocation",
                    )
                    .with_note("`ncols` is a power of two, 32..512 (docs/semantics.md#tensor-memory-and-tcgen05)"));
                }
                let id = self.new_alloc(AllocKind::Tmem(tt.clone()), cols, 1, manual, op);
                Ok(Some(Ty::Tmem(TmemTy { alloc: id, ..tt })))
            }
            TmemDealloc { buf } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                let t = self.expect_tmem(buf, "tmem.dealloc's operand")?;
                if !self.checked.allocs[t.alloc].manual {
                    return Err(Diagnostic::error(
                        Code::TmemDealloc,
                        "only `manual=true` allocations are freed by tmem.dealloc",
                        op.span,
                        "scoped allocation",
                    )
                    .with_label(
                        self.checked.allocs[t.alloc].span,
                        "allocated here without manual=true",
                    ));
                }
                Ok(None)
            }
            TmaLoad {
                src, dst, bar, pred, ..
            }
            | TmaGather { src, dst, bar, pred } => {
                let gather = matches!(op.kind, TmaGather { .. });
                if gather {
                    self.arch(op, Target::Sm100a, Code::ArchGather);
                }
                if let TmaLoad {
                    multicast, bar_cta, ..
                } = &op.kind
                {
                    self.opt_scalar(multicast, "multicast")?;
                    self.opt_scalar(bar_cta, "bar_cta")?;
                    if bar_cta.is_some() {
                        self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                    }
                }
                let (d, coords) = self.desc_coords(src)?;
                self.coords(&d, coords, gather, src)?;
                let s = self.expect_smem(dst, "the TMA destination")?;
                self.expect_bar(bar)?;
                self.opt_scalar(pred, "pred")?;
                self.tma_smem_match(&d, &s, gather, coords, dst, op.span)?;
                if gather {
                    self.gather_rules(op, &d, coords)?;
                }
                Ok(None)
            }
            TmaStore {
                dst,
                src,
                pred,
                reduce: Some(red),
            } => {
                let (d, coords) = self.desc_coords(dst)?;
                self.coords(&d, coords, false, dst)?;
                let s = self.expect_smem(src, "the TMA source")?;
                self.opt_scalar(pred, "pred")?;
                self.tma_smem_match(&d, &s, false, coords, src, op.span)?;
                let r = match &red.kind {
                    ExprKind::Name(n) => TmaReduceOp::from_name(n),
                    _ => None,
                };
                let Some(r) = r else {
                    return Err(e_type(
                        red.span,
                        format!("a TMA reduction is one of {}", TMA_REDUCE_OPS.join(", ")),
                        "not a TMA reduction",
                    ));
                };
                if !r.supports(d.dtype) {
                    return Err(e_type(
                        red.span,
                        format!(
                            "the PTX ISA has no `cp.reduce.async.bulk.tensor` `.{}` of {} elements",
                            r.name(),
                            d.dtype
                        ),
                        "here",
                    ));
                }
                Ok(None)
            }
            TmaStore { dst, src, pred, .. } | TmaScatter { dst, src, pred } => {
                let scatter = matches!(op.kind, TmaScatter { .. });
                if scatter {
                    self.arch(op, Target::Sm100a, Code::ArchGather);
                }
                let (d, coords) = self.desc_coords(dst)?;
                self.coords(&d, coords, scatter, dst)?;
                let s = self.expect_smem(src, "the TMA source")?;
                self.opt_scalar(pred, "pred")?;
                self.tma_smem_match(&d, &s, scatter, coords, src, op.span)?;
                if scatter {
                    self.gather_rules(op, &d, coords)?;
                }
                Ok(None)
            }
            TmaMakeDesc {
                ptr,
                offset,
                shape,
                strides,
                ty,
            } => self.make_desc(ptr, offset, shape, strides, ty).map(Some),
            TmaDescAcquire { desc } => match self.expr_inner(desc)? {
                Ty::Desc(_) => Ok(None),
                other => Err(e_type(
                    desc.span,
                    format!("expected a tensor descriptor, found {}", other.describe()),
                    "not a descriptor",
                )),
            },
            TmaStoreWait { pendings, full } => {
                let n = self.checked.consts.int(pendings)?;
                if n < 0 {
                    return Err(e_type(pendings.span, "store_wait count must be >= 0", "here"));
                }
                if let Some(f) = full {
                    self.checked.consts.bool(f)?;
                }
                Ok(None)
            }
            MbarInit { bar, count } => {
                self.expect_bar(bar)?;
                let c = self.checked.consts.int(count)?;
                if !(1..(1 << 20)).contains(&c) {
                    return Err(Diagnostic::error(
                        Code::MbarCount,
                        format!("mbarrier expected count must be in 1..2^20, found {c}"),
                        count.span,
                        "here",
                    )
                    .with_note("expected arrival count 1 .. 2^20 - 1 (docs/semantics.md#mbarrier)"));
                }
                Ok(None)
            }
            MbarExpect { bar, bytes, pred, .. }
            | MbarExpectTx { bar, bytes, pred }
            | MbarCompleteTx { bar, bytes, pred } => {
                self.expect_bar(bar)?;
                self.expect_scalar(bytes, "the byte count")?;
                self.opt_scalar(pred, "pred")?;
                if let MbarExpect { cta, .. } = &op.kind {
                    self.opt_scalar(cta, "cta")?;
                }
                Ok(None)
            }
            MbarArrive {
                bar,
                count,
                pred,
                cta,
            } => {
                self.expect_bar(bar)?;
                self.opt_scalar(count, "count")?;
                self.opt_scalar(pred, "pred")?;
                self.opt_scalar(cta, "cta")?;
                Ok(None)
            }
            MbarWait { bar, phase } => {
                self.expect_bar(bar)?;
                self.expect_scalar(phase, "the phase")?;
                Ok(None)
            }
            MbarTestWait { bar, phase } => {
                self.expect_bar(bar)?;
                self.expect_scalar(phase, "the phase")?;
                Ok(Some(Ty::Scalar(ScalarTy::I1)))
            }
            MbarInvalidate { bar } => {
                self.expect_bar(bar)?;
                Ok(None)
            }
            FenceAsyncShared {} | FenceMbarrierInit {} | BarSync {} | ClusterSync {} | ClusterWait {} => {
                Ok(None)
            }
            DeviceAssert { cond, msg } => {
                if !matches!(msg.kind, ExprKind::Str(_)) {
                    return Err(e_type(msg.span, "an assertion's message is a string", "here"));
                }
                match self.expr_inner(cond)? {
                    Ty::Tile(t) if t.dtype == DType::I1 => {}
                    Ty::Scalar(ScalarTy::I1) => {}
                    t => {
                        return Err(e_type(
                            cond.span,
                            format!(
                                "an assertion's condition is an i1 tile or scalar, found {}",
                                t.describe()
                            ),
                            "here",
                        ))
                    }
                }
                Ok(None)
            }
            ClusterArrive { relaxed } => {
                if let Some(r) = relaxed {
                    self.checked.consts.bool(r)?;
                }
                Ok(None)
            }
            // The probe's stand-in for a new operation's typing rule (`scripts/new-op-probe`).
            #[cfg(feature = "probe-op-isa")]
            ProbeOp {} => Ok(None),
            InlineAsm {
                asm,
                constraints,
                args,
                dtypes,
                pack,
                pure,
            } => self
                .inline_asm(op, asm, constraints, args, dtypes, pack, pure)
                .map(Some),
            Tcgen05FenceBefore {} | Tcgen05FenceAfter {} => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                Ok(None)
            }
            Tcgen05Mma { .. } | Tcgen05MmaScaled { .. } => {
                let m = op.kind.tcgen05_mma().expect("an MMA has MMA operands");
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                self.opt_scalar(m.use_acc, "use_acc")?;
                self.opt_scalar(m.pred, "pred")?;
                let cg = self.cta_group(m.cta_group)?;
                self.mma(op, m.a, m.b, m.acc, m.scales, cg)?;
                Ok(None)
            }
            Tcgen05Cp { src, dst } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                let s = self.expect_smem(src, "tcgen05.cp's source")?;
                let t = self.expect_tmem(dst, "tcgen05.cp's destination")?;
                crate::rules::check_tcgen05_cp(op, &s, &t)?;
                Ok(None)
            }
            ClcTryCancel {
                result,
                bar,
                multicast,
            } => {
                self.arch(op, Target::Sm100a, Code::ArchClc);
                self.clc_response(result)?;
                self.expect_bar(bar)?;
                self.opt_scalar(multicast, "multicast")?;
                Ok(None)
            }
            ClcQuery { result } => {
                self.arch(op, Target::Sm100a, Code::ArchClc);
                self.clc_response(result)?;
                Ok(Some(Ty::Tuple(vec![
                    Ty::Scalar(ScalarTy::I1),
                    Ty::Scalar(ScalarTy::I32),
                    Ty::Scalar(ScalarTy::I32),
                    Ty::Scalar(ScalarTy::I32),
                ])))
            }
            Tcgen05Commit {
                bar,
                pred,
                cta_group,
                multicast,
            } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                self.expect_bar(bar)?;
                self.opt_scalar(pred, "pred")?;
                self.opt_scalar(multicast, "multicast")?;
                self.cta_group(cta_group)?;
                Ok(None)
            }
            TmemLoad { src, layout } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                let t = self.expect_tmem(src, "tmem.load's source")?;
                let layout = match layout {
                    Some(l) => self.layout_arg(l)?,
                    None => TileLayout::Tmem32x32b,
                };
                crate::rules::check_tmem_access(op, &t, self.in_worker_warps())?;
                Ok(Some(Ty::Tile(TileTy {
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    layout: Some(layout),
                })))
            }
            TmemStore { dst, value } => {
                self.arch(op, Target::Sm100a, Code::ArchTcgen05);
                let t = self.expect_tmem(dst, "tmem.store's destination")?;
                let v = self.tile_arg(value, "the stored value")?;
                // Scale factors travel as raw bytes (Gluon carries ue8m0 factors as uint8 and
                // nvfp4's ue4m3 ones as float8e4nv): any 8-bit tile stores its bits into a
                // `scales=true` buffer.
                let bytes_as_scales = t.scales && v.dtype.bits() == 8;
                if v.shape != t.shape || (v.dtype != t.dtype && !bytes_as_scales) {
                    return Err(e_type(
                        op.span,
                        format!(
                            "storing tile<{}{:?}> into tmem<{}{:?}>",
                            v.dtype, v.shape, t.dtype, t.shape
                        ),
                        "shape or type mismatch",
                    ));
                }
                crate::rules::check_tmem_access(op, &t, self.in_worker_warps())?;
                Ok(None)
            }
            Wgmma { a, b, acc, use_acc } => {
                self.arch(op, Target::Sm90a, Code::ArchWgmma);
                self.opt_scalar(use_acc, "use_acc")?;
                let at = self.expr_inner(a)?;
                let bt = self.expect_smem(b, "wgmma's B operand")?;
                let acct = self.tile_arg(acc, "wgmma's accumulator")?;
                crate::rules::check_wgmma(op, &at, &bt, &acct, self.checked.num_warps)?;
                Ok(Some(Ty::Tile(acct)))
            }
            WgmmaWait { pendings } => {
                self.arch(op, Target::Sm90a, Code::ArchWgmma);
                self.checked.consts.int(pendings)?;
                Ok(None)
            }
            SmemLoad { src, layout, cta } => {
                let s = self.expect_smem(src, "smem.load's source")?;
                self.opt_scalar(cta, "cta")?;
                let layout = match layout {
                    Some(l) => Some(self.layout_arg(l)?),
                    None => None,
                };
                Ok(Some(Ty::Tile(TileTy {
                    dtype: s.dtype,
                    shape: s.shape,
                    layout,
                })))
            }
            SmemStore { dst, value, cta } => {
                let s = self.expect_smem(dst, "smem.store's destination")?;
                self.opt_scalar(cta, "cta")?;
                let v = self.tile_arg(value, "the stored value")?;
                if v.shape != s.shape || v.dtype != s.dtype {
                    return Err(e_type(
                        op.span,
                        format!(
                            "storing tile<{}{:?}> into smem<{}{:?}>",
                            v.dtype, v.shape, s.dtype, s.shape
                        ),
                        "shape or type mismatch",
                    )
                    .with_help(
                        "cast with `cast(x, DTYPE)` or take a view of the buffer with the tile's shape",
                    ));
                }
                Ok(None)
            }
            SmemGather { src, index, axis } => {
                let s = self.expect_smem(src, "smem.gather's source")?;
                let idx = self.smem_index_rules(&s, index, axis)?;
                Ok(Some(Ty::Tile(TileTy {
                    dtype: s.dtype,
                    shape: idx.shape,
                    layout: idx.layout,
                })))
            }
            SmemScatter {
                dst,
                index,
                value,
                axis,
            } => {
                let s = self.expect_smem(dst, "smem.scatter's destination")?;
                let idx = self.smem_index_rules(&s, index, axis)?;
                let v = self.tile_arg(value, "the scattered value")?;
                if v.shape != idx.shape || v.dtype != s.dtype {
                    return Err(e_type(
                        value.span,
                        format!(
                            "scattering tile<{}{:?}> by indices {:?} into smem<{}{:?}>",
                            v.dtype, v.shape, idx.shape, s.dtype, s.shape
                        ),
                        "the value has the indices' shape and the buffer's type",
                    ));
                }
                Ok(None)
            }
            SmemAtomic {
                op: kind,
                dst,
                index,
                value,
                axis,
                mask,
            } => {
                let ok = matches!(&kind.kind, ExprKind::Name(n) if ATOMIC_OPS.contains(&n.as_str()) && n != "cas" && n != "load");
                if !ok {
                    return Err(e_type(
                        kind.span,
                        format!(
                            "a shared-memory atomic is one of {}",
                            ATOMIC_OPS
                                .iter()
                                .filter(|n| **n != "cas" && **n != "load")
                                .copied()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        "not an atomic operation",
                    ));
                }
                let s = self.expect_smem(dst, "smem.atomic's destination")?;
                if !matches!(
                    s.dtype,
                    DType::F32 | DType::I32 | DType::U32 | DType::I64 | DType::U64
                ) {
                    return Err(e_type(
                        dst.span,
                        format!("shared-memory atomics on {} elements are not supported (f32, i32, u32, i64, u64)", s.dtype),
                        "here",
                    ));
                }
                let idx = self.smem_index_rules(&s, index, axis)?;
                let v = self.tile_arg(value, "the atomic's value")?;
                if v.shape != idx.shape || v.dtype != s.dtype {
                    return Err(e_type(
                        value.span,
                        format!(
                            "an atomic of tile<{}{:?}> by indices {:?} into smem<{}{:?}>",
                            v.dtype, v.shape, idx.shape, s.dtype, s.shape
                        ),
                        "the value has the indices' shape and the buffer's type",
                    ));
                }
                if let Some(m) = mask {
                    let mt = self.tile_arg(m, "the mask")?;
                    if mt.shape != idx.shape {
                        return Err(e_type(m.span, "the mask has the indices' shape", "here"));
                    }
                }
                Ok(Some(Ty::Tile(TileTy {
                    dtype: s.dtype,
                    shape: idx.shape,
                    layout: idx.layout,
                })))
            }
            GlobalLoad {
                ptr,
                offsets,
                mask,
                other,
            } => {
                let dt = match self.expr_inner(ptr)? {
                    Ty::Ptr(d) => d,
                    t => {
                        return Err(e_type(
                            ptr.span,
                            format!("global.load needs a ptr parameter, found {}", t.describe()),
                            "not a pointer",
                        ))
                    }
                };
                let mut off = match self.expr_inner(offsets)? {
                    Ty::Tile(t) if t.dtype.is_int() => t,
                    Ty::Scalar(s) if s != ScalarTy::F32 => TileTy {
                        dtype: DType::I32,
                        shape: vec![1],
                        layout: None,
                    },
                    t => {
                        return Err(e_type(
                            offsets.span,
                            format!("offsets must be an integer tile, found {}", t.describe()),
                            "here",
                        ))
                    }
                };
                if let Some(m) = mask {
                    self.expr_inner(m)?;
                }
                if let Some(o) = other {
                    self.expr_inner(o)?;
                }
                off.dtype = dt;
                Ok(Some(Ty::Tile(off)))
            }
            GlobalStore {
                ptr,
                offsets,
                value,
                mask,
            } => {
                let dt = match self.expr_inner(ptr)? {
                    Ty::Ptr(d) => d,
                    t => {
                        return Err(e_type(
                            ptr.span,
                            format!("global.store needs a ptr parameter, found {}", t.describe()),
                            "not a pointer",
                        ))
                    }
                };
                let off = self.tile_arg(offsets, "the offsets")?;
                let v = self.tile_arg(value, "the stored value")?;
                if v.dtype != dt {
                    return Err(e_type(
                        value.span,
                        format!("storing {} into ptr({dt})", v.dtype),
                        "element type mismatch",
                    )
                    .with_help(format!("cast first: `cast(x, {dt})`")));
                }
                if broadcast_shapes(&off.shape, &v.shape).is_none() {
                    return Err(e_type(
                        op.span,
                        "offsets and value shapes do not broadcast",
                        "here",
                    ));
                }
                if let Some(m) = mask {
                    self.expr_inner(m)?;
                }
                Ok(None)
            }
            CpAsync {
                dst,
                ptr,
                offsets,
                mask,
            } => {
                let s = self.expect_smem(dst, "cp.async's destination")?;
                let dt = match self.expr_inner(ptr)? {
                    Ty::Ptr(d) => d,
                    t => {
                        return Err(e_type(
                            ptr.span,
                            format!("cp.async needs a ptr parameter, found {}", t.describe()),
                            "not a pointer",
                        ))
                    }
                };
                if dt != s.dtype {
                    return Err(e_type(
                        op.span,
                        format!("copying ptr({dt}) elements into smem<{}>", s.dtype),
                        "element type mismatch",
                    ));
                }
                let off = self.tile_arg(offsets, "the offsets")?;
                if !off.dtype.is_int() || off.shape != s.shape {
                    return Err(e_type(
                        offsets.span,
                        format!(
                            "the offsets must be an integer tile of the destination's shape {:?}, found tile<{}{:?}>",
                            s.shape, off.dtype, off.shape
                        ),
                        "here",
                    ));
                }
                if let Some(m) = mask {
                    self.expr_inner(m)?;
                }
                Ok(None)
            }
            CpAsyncCommit {} => Ok(None),
            CpAsyncWait { pendings } => {
                self.checked.consts.int(pendings)?;
                Ok(None)
            }
            CpAsyncArrive { bar, noinc } => {
                self.expect_bar(bar)?;
                if let Some(f) = noinc {
                    self.checked.consts.bool(f)?;
                }
                Ok(None)
            }
            GlobalAtomic {
                op: kind,
                ptr,
                offsets,
                value,
                mask,
                compare,
                sem,
                scope,
            } => {
                let named = |e: &Option<Expr>, names: &[&str], what: &str| -> Result<(), Diagnostic> {
                    match e {
                        Some(e) if !matches!(&e.kind, ExprKind::Name(n) if names.contains(&n.as_str())) => {
                            Err(e_type(
                                e.span,
                                format!("{what} is one of {}", names.join(", ")),
                                "here",
                            ))
                        }
                        _ => Ok(()),
                    }
                };
                named(sem, &AtomicSem::ALL.map(AtomicSem::name), "an atomic's `sem=`")?;
                named(
                    scope,
                    &AtomicScope::ALL.map(AtomicScope::name),
                    "an atomic's `scope=`",
                )?;
                let ok = matches!(&kind.kind, ExprKind::Name(n) if ATOMIC_OPS.contains(&n.as_str()));
                if !ok {
                    return Err(e_type(
                        kind.span,
                        format!("an atomic operation is one of {}", ATOMIC_OPS.join(", ")),
                        "not an atomic operation",
                    ));
                }
                let dt = match self.expr_inner(ptr)? {
                    Ty::Ptr(d) => d,
                    t => {
                        return Err(e_type(
                            ptr.span,
                            format!("global.atomic needs a ptr parameter, found {}", t.describe()),
                            "not a pointer",
                        ))
                    }
                };
                if !matches!(dt, DType::F32 | DType::I32 | DType::U32 | DType::I64 | DType::U64) {
                    return Err(e_type(
                        ptr.span,
                        format!("atomics on {dt} elements are not supported (f32, i32, u32, i64, u64)"),
                        "here",
                    ));
                }
                let off = self.tile_arg(offsets, "the offsets")?;
                let vshape =
                    self.atomic_operand_shape(value, dt, |t| format!("an atomic of {t} on ptr({dt})"))?;
                if broadcast_shapes(&off.shape, &vshape).as_deref() != Some(off.shape.as_slice()) {
                    return Err(e_type(
                        op.span,
                        "the value does not broadcast to the offsets' shape",
                        "here",
                    ));
                }
                if let Some(m) = mask {
                    self.expr_inner(m)?;
                }
                // An atomic read orders like a load: relaxed or acquire, never the default
                // acq_rel (PTX `ld` has no release form).
                if matches!(&kind.kind, ExprKind::Name(n) if n == "load") {
                    let sem_ok = matches!(
                        sem.as_ref().map(|e| &e.kind),
                        Some(ExprKind::Name(n)) if n == "relaxed" || n == "acquire"
                    );
                    if !sem_ok {
                        let at = sem.as_ref().map(|e| e.span).unwrap_or(op.span);
                        return Err(e_type(
                            at,
                            "`global.atomic load` is a read: give it `sem=relaxed` or `sem=acquire`",
                            "here",
                        ));
                    }
                }
                let cas = matches!(&kind.kind, ExprKind::Name(n) if n == "cas");
                match (cas, compare) {
                    (true, None) => {
                        return Err(e_type(
                            op.span,
                            "`global.atomic cas` needs `compare=C`, the value to compare with",
                            "here",
                        ))
                    }
                    (false, Some(c)) => {
                        return Err(e_type(c.span, "only `cas` takes `compare=`", "here"));
                    }
                    (true, Some(c)) => {
                        if dt == DType::F32 {
                            return Err(e_type(
                                ptr.span,
                                "compare-and-swap on f32 elements is not supported (i32, u32, i64, u64)",
                                "here",
                            ));
                        }
                        let cshape = self.atomic_operand_shape(c, dt, |t| {
                            format!("a compare value of {t} for ptr({dt})")
                        })?;
                        if broadcast_shapes(&off.shape, &cshape).as_deref() != Some(off.shape.as_slice()) {
                            return Err(e_type(
                                c.span,
                                "the compare value does not broadcast to the offsets' shape",
                                "here",
                            ));
                        }
                    }
                    (false, None) => {}
                }
                Ok(Some(Ty::Tile(TileTy {
                    dtype: dt,
                    shape: off.shape,
                    layout: off.layout,
                })))
            }
        }
    }

    /// The shape of an element operand of `global.atomic` (a tile of the pointer's element
    /// type, or a scalar: `[]`); a tile of another type is an error worded by `mismatch`.
    /// The index tile of `smem.gather`, `smem.scatter` and `smem.atomic` on buffer `s` along
    /// the constant `axis`: an integer tile of the buffer's rank whose extents equal the
    /// buffer's in every other dimension.
    fn smem_index_rules(
        &mut self,
        s: &SmemTy,
        index: &'k Expr,
        axis: &'k Expr,
    ) -> Result<TileTy, Diagnostic> {
        let a = self.checked.consts.int(axis)?;
        if a < 0 || a as usize >= s.shape.len() {
            return Err(e_type(
                axis.span,
                format!("axis {a} of a rank-{} buffer", s.shape.len()),
                "out of range",
            ));
        }
        let idx = self.tile_arg(index, "the indices")?;
        let other_dims_match = idx.shape.len() == s.shape.len()
            && idx
                .shape
                .iter()
                .zip(&s.shape)
                .enumerate()
                .all(|(d, (x, y))| d == a as usize || x == y);
        if !idx.dtype.is_int() || !other_dims_match {
            return Err(e_type(
                index.span,
                format!(
                    "indices tile<{}{:?}> for smem<{}{:?}> along axis {a}",
                    idx.dtype, idx.shape, s.dtype, s.shape
                ),
                "integer indices with the buffer's extents in the other dimensions",
            ));
        }
        Ok(idx)
    }

    fn atomic_operand_shape(
        &mut self,
        e: &'k Expr,
        dt: DType,
        mismatch: impl FnOnce(DType) -> String,
    ) -> Result<Vec<u32>, Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Tile(t) if t.dtype != dt => Err(e_type(e.span, mismatch(t.dtype), "element type mismatch")
                .with_help(format!("cast first: `cast(x, {dt})`"))),
            Ty::Tile(t) => Ok(t.shape),
            _ => Ok(Vec::new()),
        }
    }

    pub(super) fn gather_rules(
        &mut self,
        op: &Op,
        d: &DescTy,
        coords: &'k [IndexItem],
    ) -> Result<(), Diagnostic> {
        if let Some(IndexItem::Expr(x)) = coords.first() {
            if let Ty::Tile(t) = self.expr_inner(x)? {
                crate::rules::check_gather(op, d, &t)?;
            }
        }
        Ok(())
    }

    pub(super) fn in_worker_warps(&self) -> u32 {
        if self.in_worker {
            self.checked.workers.last().map(|w| w.1).unwrap_or(1)
        } else {
            self.checked.num_warps
        }
    }

    pub(super) fn cta_group(&mut self, e: &Option<Expr>) -> Result<u32, Diagnostic> {
        match e {
            None => Ok(1),
            Some(e) => match self.checked.consts.int(e)? {
                1 => Ok(1),
                2 => Ok(2),
                v => Err(Diagnostic::error(
                    Code::MmaShape,
                    format!("cta_group must be 1 or 2, found {v}"),
                    e.span,
                    "here",
                )),
            },
        }
    }

    pub(super) fn coords(
        &mut self,
        d: &DescTy,
        coords: &'k [IndexItem],
        gather: bool,
        e: &Expr,
    ) -> Result<(), Diagnostic> {
        let mut n = 0;
        for c in coords {
            match c {
                IndexItem::Expr(x) => {
                    let t = self.expr_inner(x)?;
                    let ok = if gather && n == 0 {
                        matches!(&t, Ty::Tile(tt) if tt.dtype.is_int() && tt.shape.len() == 1)
                    } else {
                        t.is_int_scalar()
                    };
                    if !ok {
                        return Err(e_type(
                            x.span,
                            if gather && n == 0 {
                                format!(
                                    "gather/scatter row offsets must be a 1-D integer tile, found {}",
                                    t.describe()
                                )
                            } else {
                                format!("coordinates must be integer scalars, found {}", t.describe())
                            },
                            "here",
                        ));
                    }
                    n += 1;
                }
                _ => return Err(e_type(e.span, "TMA coordinates are plain expressions", "here")),
            }
        }
        let want = if gather { 2 } else { d.block.len() };
        if n != want {
            return Err(Diagnostic::error(
                Code::TmaRank,
                format!(
                    "descriptor of rank {} takes {want} coordinates, found {n}",
                    d.block.len()
                ),
                e.span,
                "wrong number of coordinates",
            ));
        }
        Ok(())
    }

    /// A TMA copy's shared buffer against its descriptor. What cannot run is an error that
    /// stops (`tma-smem`); an element type or a box the buffer does not match are errors the
    /// hardware still runs (`tma-dtype`, `tma-buffer-box`): reported here, and the simulation
    /// does what the hardware does ([`crate::verify::CONTINUES`]).
    pub(super) fn tma_smem_match(
        &mut self,
        d: &DescTy,
        s: &SmemTy,
        gather: bool,
        coords: &'k [IndexItem],
        e: &Expr,
        op_span: Span,
    ) -> Result<(), Diagnostic> {
        if gather {
            if s.dtype != d.dtype {
                return Err(Diagnostic::error(
                    Code::TmaSmem,
                    format!(
                        "shared buffer holds {} but the descriptor moves {}",
                        s.dtype, d.dtype
                    ),
                    e.span,
                    "element type mismatch",
                ));
            }
            let rows = match coords.first() {
                Some(IndexItem::Expr(x)) => match self.expr_inner(x)? {
                    Ty::Tile(t) => t.shape[0],
                    _ => 0,
                },
                _ => 0,
            };
            let want = vec![rows, d.block.last().copied().unwrap_or(0)];
            if s.shape != want {
                return Err(Diagnostic::error(Code::TmaSmem, format!("gather/scatter of {rows} rows of {} needs a shared buffer of shape {want:?}, found {:?}", want[1], s.shape), e.span, "shape mismatch"));
            }
        }
        if s.layout.swizzle() != d.layout.swizzle() {
            return Err(Diagnostic::error(
                Code::TmaSmem,
                format!(
                    "shared buffer layout {} differs from the descriptor's {}",
                    s.layout.describe(),
                    d.layout.describe()
                ),
                e.span,
                "layout mismatch",
            )
            .with_help(
                "allocate the buffer with the descriptor's layout, as Gluon does with `desc.layout`",
            ));
        }
        if gather {
            return Ok(());
        }
        if s.dtype != d.dtype {
            self.emit(
                Diagnostic::error(
                    Code::TmaDtype,
                    format!(
                        "shared buffer holds {} but the descriptor moves {}",
                        s.dtype, d.dtype
                    ),
                    op_span,
                    "the copy moves the descriptor's element type",
                )
                .with_label(e.span, format!("this buffer holds {}", s.dtype))
                .with_note(format!(
                    "the copy moves {} elements: the buffer's bytes are read or written as {} (the simulation goes on doing so)",
                    d.dtype, d.dtype
                ))
                .with_help("give the buffer the descriptor's element type, or convert in registers before the copy"),
            );
        }
        // A transposed (MN-major) buffer is stored with its last two dimensions swapped.
        let mut phys = s.shape.clone();
        if matches!(s.layout, SmemLayout::Nvmma { transposed: true, .. }) && phys.len() >= 2 {
            let n = phys.len();
            phys.swap(n - 1, n - 2);
        }
        let sw = d.layout.swizzle().bytes();
        match crate::tma::plan(&d.block, d.dtype, sw, &d.elem_strides, &phys) {
            Ok(p) => {
                if let Some(m) = &p.mismatch {
                    self.emit(
                        Diagnostic::error(
                            Code::TmaBufferBox,
                            format!(
                                "shared buffer of shape {:?} is copied in pieces of {:?}, but each message moves the descriptor's box {:?}",
                                s.shape, m.piece, m.moved
                            ),
                            op_span,
                            "each message moves one box",
                        )
                        .with_label(e.span, "this buffer")
                        .with_note(format!(
                            "one message per piece of the buffer (the buffer's shape clipped to 256 elements per dimension and to the {sw}-byte swizzle span), each moving one box of the descriptor (its block clipped the same way): {} message(s) of {} bytes (the simulation goes on doing so)",
                            p.messages(),
                            p.box_bytes(d.dtype)
                        ))
                        .with_help(format!(
                            "make the buffer {:?}, or a whole number of such boxes along dimensions where the box is clipped",
                            m.moved
                        )),
                    );
                }
                Ok(())
            }
            // A descriptor that breaks its own rules is reported at its parameter.
            Err(_) if !crate::rules::check_desc(d, e.span).is_empty() => Ok(()),
            Err(err) => {
                let why = match err {
                    crate::tma::PlanError::Rank => format!(
                        "a buffer of rank {} is not one box {:?} of the descriptor",
                        phys.len(),
                        p_box(d)
                    ),
                    crate::tma::PlanError::Partial { dim, size, piece } => format!(
                        "dimension {dim} of {size} elements is not a whole number of {piece}-element boxes"
                    ),
                    crate::tma::PlanError::Strided => format!(
                        "a descriptor with element strides copies one box {:?}",
                        d.box_shape()
                    ),
                };
                Err(Diagnostic::error(
                    Code::TmaSmem,
                    format!(
                        "shared buffer of shape {:?} cannot be copied through the descriptor: {why}",
                        s.shape
                    ),
                    e.span,
                    "shape mismatch",
                )
                .with_help("give the buffer the descriptor's block shape"))
            }
        }
    }

    pub(super) fn mma(
        &mut self,
        op: &Op,
        a: &'k Expr,
        b: &'k Expr,
        acc: &'k Expr,
        scales: Option<(&'k Expr, &'k Expr)>,
        cta_group: u32,
    ) -> Result<(), Diagnostic> {
        let at = self.expr_inner(a)?;
        let bt = self.expect_smem(b, "the MMA's B operand")?;
        let acct = self.expect_tmem(acc, "the MMA accumulator")?;
        let st = match scales {
            Some((x, y)) => Some((
                self.expect_tmem(x, "A's scale factors")?,
                self.expect_tmem(y, "B's scale factors")?,
            )),
            None => None,
        };
        crate::rules::check_tcgen05_mma(op, &at, &bt, &acct, st.as_ref(), cta_group)
    }

    /// A TMEM layout's `block=[M, N]` (default: the shape's last two dimensions, M at most 128)
    /// and `col_stride` (default 1), as `tmem.alloc` and `tmem.reinterpret` take them.
    pub(super) fn tmem_layout(
        &mut self,
        op: &Op,
        shape: &[u32],
        block: &Option<Expr>,
        col_stride: &Option<Expr>,
    ) -> Result<([u32; 2], u32), Diagnostic> {
        let block = match block {
            Some(b) => {
                let l = self.int_list(b)?;
                if l.len() != 2 {
                    return Err(e_type(b.span, "block is [M, N]", "here"));
                }
                [l[0], l[1]]
            }
            None => default_tmem_block(shape),
        };
        if block[0] != 64 && block[0] != 128 {
            return Err(Diagnostic::error(
                Code::TmemLayout,
                format!("TMEM block M must be 64 or 128, found {}", block[0]),
                op.span,
                "here",
            ));
        }
        let cs = match col_stride {
            Some(c) => self.checked.consts.dim(c)?,
            None => 1,
        };
        Ok((block, cs))
    }
}

/// A descriptor's hardware box, traversed (what one message moves).
fn p_box(d: &DescTy) -> Vec<u32> {
    crate::value_types::traversed_box(
        &crate::tma::hw_box(&d.block, d.dtype, d.layout.swizzle().bytes()),
        &d.elem_strides,
    )
}
