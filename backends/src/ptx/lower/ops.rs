//! Memory and asynchronous operations: allocation, TMA (tile, gather4, scatter4), mbarriers,
//! fences, tensor memory (alloc, tcgen05.ld/st), the tensor pipe (tcgen05.mma/cp/commit),
//! wgmma, and shared/global loads and stores.
//!
//! Who executes what (docs/semantics.md#execution-model): "issue" operations (TMA, mbarrier
//! init/expect/arrive, tcgen05.mma/cp/commit) run on the partition's elected leader thread under a
//! predicate; `.sync.aligned` operations (tcgen05.alloc/ld/st, wgmma) run on whole warps or
//! warpgroups; generic memory accesses run on every thread, each for the elements its registers
//! hold. gather4/scatter4 are issued by one lane of every warp that holds row offsets, as Triton
//! does, so bulk-group waits run on lane 0 of every warp of the partition.
//!
//! Operands the hardware faults on (a TMA box not 128-byte aligned, a misaligned mbarrier,
//! coordinates not 16-byte aligned) are emitted as written: the trap is the point of the
//! planted-fault cases of the differential harness (docs/semantics.md#faults).
//!
//! This module holds the dispatch of every operation ([`Lowerer::op`]) and the operand helpers;
//! `tma` lowers allocations and TMA copies, `tensor` tensor memory and the MMAs, `memory` the
//! generic shared and global accesses.

use super::access::*;
use super::*;

impl<'c, 'k> Lowerer<'c, 'k> {
    /// Lower one operation; returns its value when it has one.
    pub fn op(&mut self, op: &Op) -> LResult<Option<Val>> {
        use OpKind::*;
        let span = op.span;
        let name = op.kind.name();
        match &op.kind {
            InlineAsm { args, .. } => self.inline_asm(op, args).map(Some),
            SmemAlloc { .. } => self.smem_alloc(op).map(Some),
            SmemReinterpret { src, .. } => {
                let v = self.smem_arg(src, name)?;
                let Ty::Smem(t) = self.op_type(op)? else {
                    return Err(unresolved(op, "a shared-memory view"));
                };
                let (dtype, shape, layout) = (t.dtype, t.shape.clone(), t.layout.clone());
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
                Ok(Some(Val::Smem(SmemView::whole(
                    dtype, shape, layout, base, align, v.alloc,
                ))))
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
            TmemAlloc { .. } => self.tmem_alloc(op).map(Some),
            TmemReinterpret { src, .. } => {
                let v = self.tmem_arg(src, name)?;
                let Ty::Tmem(tt) = self.op_type(op)? else {
                    return Err(unresolved(op, "a tensor-memory view"));
                };
                let (dtype, shape, block, col_stride) = (tt.dtype, tt.shape.clone(), tt.block, tt.col_stride);
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
            TmaLoad {
                src,
                dst,
                bar,
                pred,
                multicast,
                bar_cta,
            } => {
                self.tma_load(
                    src,
                    dst,
                    bar,
                    pred.as_ref(),
                    multicast.as_ref(),
                    bar_cta.as_ref(),
                    span,
                )?;
                Ok(None)
            }
            TmaStore {
                dst,
                src,
                pred,
                reduce,
            } => {
                let reduce = match reduce {
                    Some(r) => {
                        let op = match &r.kind {
                            ExprKind::Name(n) => bwsim_isa::value_types::TmaReduceOp::from_name(n),
                            _ => None,
                        };
                        Some(op.ok_or_else(|| invalid(name, r.span, "an unknown TMA reduction"))?)
                    }
                    None => None,
                };
                self.tma_store(dst, src, pred.as_ref(), reduce, span)?;
                Ok(None)
            }
            TmaStoreWait { pendings, full } => {
                let n = self.const_int(pendings, name)?;
                let full = self.const_flag(full.as_ref(), name)?;
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
            TmaMakeDesc { .. } | TmaDescAcquire { .. } => Err(unsupported(
                name,
                span,
                "tensor maps built on the device are not lowered to PTX yet: the kernel would need \
                 Triton's global scratch parameter, `tensormap.replace` on a shared-memory copy, \
                 `tensormap.cp_fenceproxy` and `fence.proxy.tensormap::generic.acquire` \
                 (docs/gluon.md, tensor maps built on the device)",
            )),
            MbarInit { bar, count } => {
                let a = self.bar_addr(bar, name)?;
                let c = self.const_int(count, name)?;
                self.before_issue();
                let p = self.part.leader;
                self.e.ins(format!("@{p} mbarrier.init.shared::cta.b64 {a}, {c}"));
                self.part.issue_dirty = true;
                Ok(None)
            }
            MbarExpect {
                bar,
                bytes,
                pred,
                cta: Some(rank),
            } => {
                let a = self.remote_bar(bar, rank, name)?;
                let b = self.expr(bytes)?;
                let b = self.scalar_operand(&b, ScalarTy::I32, bytes.span)?;
                let pr = self.opt_pred(pred.as_ref())?;
                self.before_issue();
                let p = self.issue_pred(pr);
                self.e.ins(format!(
                    "@{p} mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, {a}, {b}"
                ));
                Ok(None)
            }
            MbarExpect {
                bar,
                bytes,
                pred,
                cta: None,
            }
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
            MbarArrive {
                bar,
                count,
                pred,
                cta: Some(rank),
            } => {
                // A remote arrival: the barrier's address in CTA `rank` of the cluster
                // (`mapa`), then a release at cluster scope.
                let remote = self.remote_bar(bar, rank, name)?;
                let c = match count {
                    Some(c) => {
                        let v = self.expr(c)?;
                        let c = self.scalar_operand(&v, ScalarTy::I32, c.span)?;
                        Some(self.reg_operand(&c, RegClass::B32))
                    }
                    None => None,
                };
                let pr = self.opt_pred(pred.as_ref())?;
                self.before_issue();
                let p = self.issue_pred(pr);
                let c = c.map(|c| format!(", {c}")).unwrap_or_default();
                self.e.ins(format!(
                    "@{p} mbarrier.arrive.release.cluster.shared::cluster.b64 _, {remote}{c}"
                ));
                Ok(None)
            }
            MbarArrive {
                bar,
                count,
                pred,
                cta: None,
            } => {
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
            MbarWait { bar, phase } | MbarTestWait { bar, phase } => {
                let a = self.bar_addr(bar, name)?;
                let ph = self.expr(phase)?;
                let ph = self.parity_operand(&ph, phase.span)?;
                self.before_all_access();
                let p = self.e.reg(RegClass::Pred);
                // A peer's remote arrival releases at cluster scope: acquire at cluster scope.
                let sem = if self.remote_arrivals {
                    ".acquire.cluster"
                } else {
                    ""
                };
                if matches!(op.kind, MbarTestWait { .. }) {
                    self.e.ins(format!(
                        "mbarrier.test_wait.parity{sem}.shared::cta.b64 {p}, {a}, {ph}"
                    ));
                    Ok(Some(Val::Scalar(ScalarTy::I1, p)))
                } else {
                    // Spin until the phase completes.
                    let l = self.e.label("mbar_wait");
                    self.e.place(&l);
                    self.e.ins(format!(
                        "mbarrier.try_wait.parity{sem}.shared::cta.b64 {p}, {a}, {ph}"
                    ));
                    self.e.ins(format!("@!{p} bra {l}"));
                    Ok(None)
                }
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
            Tcgen05Mma { .. } | Tcgen05MmaScaled { .. } => {
                let m = op.kind.tcgen05_mma().expect("an MMA has MMA operands");
                self.tcgen05_mma(m, span)?;
                Ok(None)
            }
            Tcgen05Cp { src, dst } => {
                self.tcgen05_cp(src, dst, span)?;
                Ok(None)
            }
            ClcTryCancel {
                result,
                bar,
                multicast,
            } => {
                let r = self.smem_ref(result, name, span)?;
                let b = self.bar_addr(bar, name)?;
                let mc = self.const_flag(multicast.as_ref(), name)?;
                if mc {
                    self.uses_cluster = true;
                }
                self.before_issue();
                let p = self.issue_pred(None);
                self.e.ins(format!(
                    "@{p} clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes{}.b128 {r}, {b}",
                    if mc { ".multicast::cluster::all" } else { "" }
                ));
                Ok(None)
            }
            ClcQuery { result } => {
                // Every thread reads the 16-byte response and decodes it.
                let addr = self.smem_ref(result, name, span)?;
                let lo = self.e.reg(RegClass::B64);
                let hi = self.e.reg(RegClass::B64);
                let q = self.e.reg(RegClass::B128);
                let c = self.e.reg(RegClass::Pred);
                self.e.ins(format!("ld.shared.v2.b64 {{{lo}, {hi}}}, {addr}"));
                self.e.ins(format!("mov.b128 {q}, {{{lo}, {hi}}}"));
                self.e.ins(format!(
                    "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128 {c}, {q}"
                ));
                let mut out = vec![Val::Scalar(ScalarTy::I1, c)];
                for d in ["x", "y", "z"] {
                    let r = self.e.reg(RegClass::B32);
                    self.e.ins(format!(
                        "clusterlaunchcontrol.query_cancel.get_first_ctaid::{d}.b32.b128 {r}, {q}"
                    ));
                    out.push(Val::Scalar(ScalarTy::I32, r));
                }
                Ok(Some(Val::Tuple(out)))
            }
            Tcgen05Commit {
                bar,
                pred,
                cta_group,
                multicast: Some(mask),
            } => {
                let g = self.cta_group(cta_group.as_ref(), name, span)?;
                if g == 2 {
                    self.cta_groups.push((2, span));
                }
                let a = self.bar_addr(bar, name)?;
                let pr = self.opt_pred(pred.as_ref())?;
                let v = self.expr(mask)?;
                let r = self.scalar_reg(&v, ScalarTy::I32, mask.span)?;
                let h = self.e.reg(RegClass::B16);
                self.e.ins(format!("cvt.u16.u32 {h}, {r}"));
                self.uses_cluster = true;
                self.before_issue();
                let p = self.issue_pred(pr);
                let group = if g == 2 {
                    "2".to_string()
                } else {
                    super::CTA_GROUP_PLACEHOLDER.to_string()
                };
                self.e.ins(format!(
                    "@{p} tcgen05.commit.cta_group::{group}.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 {a}, {h}"
                ));
                Ok(None)
            }
            Tcgen05Commit {
                bar,
                pred,
                cta_group,
                multicast: None,
            } => {
                let g = self.cta_group(cta_group.as_ref(), name, span)?;
                let a = self.bar_addr(bar, name)?;
                let pr = self.opt_pred(pred.as_ref())?;
                if g == 2 {
                    // The pair's commit arrives on the barrier at the same offset in both CTAs
                    // of the issuing CTA's pair (cluster ranks 2r, 2r + 1).
                    self.cta_groups.push((2, span));
                    self.uses_cluster = true;
                    let h = self.pair_mask();
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
            TmemLoad { src, .. } => {
                let t = self.tmem_arg(src, name)?;
                let l = self.result_layout(op, name)?;
                self.tmem_load(&t, &l, span).map(|t| Some(Val::Tile(t)))
            }
            TmemStore { dst, value } => {
                let t = self.tmem_arg(dst, name)?;
                let v = self.tile_arg(value, name)?;
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
            SmemLoad { src, layout, cta } => {
                let v = self.smem_arg(src, name)?;
                let l = match layout {
                    Some(l) => self.layout_arg(l, name)?,
                    None => self.default_layout(&v.shape),
                };
                let peer = self.peer_rank(cta.as_ref())?;
                self.smem_load(&v, &l, span, peer).map(|t| Some(Val::Tile(t)))
            }
            SmemStore { dst, value, cta } => {
                let v = self.smem_arg(dst, name)?;
                let t = self.tile_arg(value, name)?;
                let peer = self.peer_rank(cta.as_ref())?;
                self.smem_store(&v, &t, span, peer)?;
                Ok(None)
            }
            SmemGather { src, index, axis } => {
                let v = self.smem_arg(src, name)?;
                let ax = self.const_int(axis, name)? as usize;
                self.smem_gather(&v, index, ax, span).map(|t| Some(Val::Tile(t)))
            }
            SmemScatter {
                dst,
                index,
                value,
                axis,
            } => {
                let v = self.smem_arg(dst, name)?;
                let ax = self.const_int(axis, name)? as usize;
                self.smem_scatter(&v, index, value, ax, span)?;
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
                let k = atomic_name(kind, name)?;
                let v = self.smem_arg(dst, name)?;
                let ax = self.const_int(axis, name)? as usize;
                self.smem_atomic(k, &v, index, value, ax, mask.as_ref(), span)
                    .map(|t| Some(Val::Tile(t)))
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
            CpAsync {
                dst,
                ptr,
                offsets,
                mask,
            } => {
                let v = self.smem_arg(dst, name)?;
                self.cp_async(&v, ptr, offsets, mask.as_ref(), span)?;
                Ok(None)
            }
            CpAsyncCommit {} => {
                self.e.ins("cp.async.commit_group");
                Ok(None)
            }
            CpAsyncArrive { bar, noinc } => {
                let a = self.bar_addr(bar, name)?;
                let noinc = self.const_flag(noinc.as_ref(), name)?;
                // Every thread: each arrives once its own earlier copies have landed.
                let n = if noinc { ".noinc" } else { "" };
                self.e
                    .ins(format!("cp.async.mbarrier.arrive{n}.shared::cta.b64 {a}"));
                Ok(None)
            }
            CpAsyncWait { pendings } => {
                let n = self.const_int(pendings, name)?;
                self.e.ins(format!("cp.async.wait_group {n}"));
                // The retired copies are visible to the threads that issued them: the next
                // all-thread access, which may read other threads' elements, synchronises first.
                self.part.issue_dirty = true;
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
                let k = atomic_name(kind, name)?;
                let word = |e: &Option<Expr>, default: &'static str| match e.as_ref().map(|e| &e.kind) {
                    Some(ExprKind::Name(n)) => Ok(n.clone()),
                    Some(_) => Err(invalid(name, span, "an atomic's `sem=` and `scope=` are names")),
                    None => Ok(default.to_string()),
                };
                let args = super::memory::AtomicArgs {
                    offsets,
                    value,
                    mask: mask.as_ref(),
                    compare: compare.as_ref(),
                    order: (word(sem, "acq_rel")?, word(scope, "gpu")?),
                };
                self.global_atomic(k, ptr, args, span).map(|t| Some(Val::Tile(t)))
            }
            DeviceAssert { cond, .. } => {
                // A false element traps (Triton calls `__assertfail`, which prints the
                // message and traps; PTX `trap` stops the launch the same way, without the
                // message). Every thread checks the elements it holds.
                match self.expr(cond)? {
                    Val::Tile(t) => {
                        for r in &t.regs {
                            self.e.ins(format!("@!{r} trap"));
                        }
                    }
                    v @ (Val::Scalar(..) | Val::Bool(_) | Val::Int(_)) => {
                        let p = self.scalar_reg(&v, ScalarTy::I1, span)?;
                        self.e.ins(format!("@!{p} trap"));
                    }
                    _ => {
                        return Err(invalid(
                            name,
                            span,
                            "an assertion's condition is an i1 tile or scalar",
                        ))
                    }
                }
                Ok(None)
            }
            BarSync {} => {
                self.part_barrier();
                Ok(None)
            }
            ClusterArrive { relaxed } => self.cluster_arrive(relaxed.as_ref(), name, span).map(|()| None),
            ClusterWait {} => self.cluster_wait(name, span).map(|()| None),
            ClusterSync {} => self.cluster_sync(name, span).map(|()| None),
        }
    }

    /// The 16-bit CTA mask of the issuing CTA's pair (cluster ranks 2r and 2r + 1), as
    /// `.multicast::cluster` takes it.
    fn pair_mask(&mut self) -> Reg {
        let [r, m] = self.e.regs(RegClass::B32);
        let h = self.e.reg(RegClass::B16);
        self.e.ins(format!("mov.u32 {r}, %cluster_ctarank"));
        self.e.ins(format!("and.b32 {r}, {r}, -2"));
        self.e.ins(format!("mov.b32 {m}, 3"));
        self.e.ins(format!("shl.b32 {m}, {m}, {r}"));
        self.e.ins(format!("cvt.u16.u32 {h}, {m}"));
        h
    }

    // ----- operand helpers -----

    /// The constant boolean flag `e` (a nonzero integer is true); false when absent.
    pub(super) fn const_flag(&mut self, e: Option<&Expr>, op: &str) -> LResult<bool> {
        match e {
            Some(f) => Ok(self.const_int(f, op)? != 0),
            None => Ok(false),
        }
    }

    /// The type the checker resolved for an op's value (its written type and layout).
    pub(super) fn op_type(&self, op: &Op) -> LResult<Ty> {
        (self.ck.op_type(op, &self.iters).cloned())
            .ok_or_else(|| invalid(op.kind.name(), op.span, "not resolved by the type checker"))
    }

    pub(super) fn smem_arg(&mut self, e: &Expr, op: &str) -> LResult<SmemView> {
        match self.expr(e)? {
            Val::Smem(v) => Ok(v),
            other => Err(wrong_kind(op, e.span, "expected a shared-memory view", &other)),
        }
    }

    pub(super) fn tmem_arg(&mut self, e: &Expr, op: &str) -> LResult<TmemView> {
        match self.expr(e)? {
            Val::Tmem(v) => Ok(v),
            other => Err(wrong_kind(op, e.span, "expected a tensor-memory view", &other)),
        }
    }

    /// `[addr]` of the first element of the shared-memory view `e`.
    fn smem_ref(&mut self, e: &Expr, op: &str, span: Span) -> LResult<String> {
        let v = self.smem_arg(e, op)?;
        let at = v
            .geom
            .logical_offset(&v.offsets)
            .map_err(|m| unsupported(op, span, m))?;
        let first = Addr {
            reg: v.base.reg,
            off: v.base.off + at as i64,
        };
        Ok(first.operand())
    }

    /// `[addr]` of one mbarrier.
    pub(super) fn bar_addr(&mut self, e: &Expr, op: &str) -> LResult<String> {
        match self.expr(e)? {
            Val::Mbar { base, count: None } => Ok(base.operand()),
            other => Err(wrong_kind(op, e.span, "expected one mbarrier", &other)),
        }
    }

    /// `[reg]`: the `shared::cluster` address of the barrier `bar` in CTA `rank` of the
    /// cluster (`mapa`); the kernel then runs as a cluster kernel.
    pub(super) fn remote_bar(&mut self, bar: &Expr, rank: &Expr, op: &str) -> LResult<String> {
        let base = match self.expr(bar)? {
            Val::Mbar { base, count: None } => base,
            other => return Err(wrong_kind(op, bar.span, "expected one mbarrier", &other)),
        };
        let rv = self.expr(rank)?;
        let rk = self.scalar_reg(&rv, ScalarTy::I32, rank.span)?;
        self.uses_cluster = true;
        let local = self.e.reg(RegClass::B32);
        let remote = self.e.reg(RegClass::B32);
        self.e.ins(format!("add.u32 {local}, {}, {}", base.reg, base.off));
        self.e
            .ins(format!("mapa.shared::cluster.u32 {remote}, {local}, {rk}"));
        Ok(format!("[{remote}]"))
    }

    /// The register holding a `cta=R` operand (a CTA rank of the cluster), if any; the kernel
    /// then runs as a cluster kernel.
    pub(super) fn peer_rank(&mut self, e: Option<&Expr>) -> LResult<Option<Reg>> {
        let Some(e) = e else { return Ok(None) };
        let v = self.expr(e)?;
        let r = self.scalar_reg(&v, ScalarTy::I32, e.span)?;
        self.uses_cluster = true;
        Ok(Some(r))
    }

    pub(super) fn opt_pred(&mut self, e: Option<&Expr>) -> LResult<Option<Reg>> {
        match e {
            None => Ok(None),
            Some(e) => {
                let v = self.expr(e)?;
                Ok(Some(self.pred_of(&v, e.span)?))
            }
        }
    }

    /// A parity operand: `0`/`1` or a register holding `phase & 1`.
    pub(super) fn parity_operand(&mut self, v: &Val, span: Span) -> LResult<String> {
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
    pub(super) fn reg_operand(&mut self, s: &str, class: RegClass) -> String {
        if s.starts_with('%') {
            return s.to_string();
        }
        let r = self.e.reg(class);
        self.mov(r, s);
        r.to_string()
    }

    /// True on lane 0 of every warp of the partition.
    pub(super) fn lane0_pred(&mut self) -> Reg {
        let p = self.e.reg(RegClass::Pred);
        self.e.ins(format!("setp.eq.u32 {p}, {}, 0", self.k.lane));
        p
    }

    /// The `cta_group` argument of a tcgen05 operation: 1 (the default) or 2.
    pub(super) fn cta_group(&mut self, e: Option<&Expr>, op: &str, span: Span) -> LResult<u32> {
        match e {
            None => Ok(1),
            Some(e) => match self.const_int(e, op)? {
                1 => Ok(1),
                2 => Ok(2),
                g => Err(invalid(op, span, format!("cta_group {g} (1 or 2)"))),
            },
        }
    }

    /// A register-layout operand, as the checker resolved it.
    pub(super) fn layout_arg(&self, e: &Expr, what: &str) -> LResult<TileLayout> {
        (self.ck.layout_of(e, &self.iters).cloned())
            .ok_or_else(|| invalid(what, e.span, "a layout the type checker did not resolve"))
    }

    /// The register layout of the tile an op produces, as the checker resolved it (its written
    /// layout, or the op's default: `tmem.load`'s is `tmem32x32b`).
    pub(super) fn result_layout(&self, op: &Op, what: &str) -> LResult<TileLayout> {
        match self.op_type(op)? {
            Ty::Tile(bwsim_isa::typeck::TileTy { layout: Some(l), .. }) => Ok(l),
            _ => Err(invalid(
                what,
                op.span,
                "a layout the type checker did not resolve",
            )),
        }
    }

    /// The layout of a tile loaded from shared memory without one (the checker leaves it
    /// open: `smem.load`'s type has no layout then, and the simulator needs none): 32 consecutive elements of the last dimension
    /// per warp, the warps along the first dimension, the rest in registers.
    pub(super) fn default_layout(&self, shape: &[u32]) -> TileLayout {
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
}

/// The error that the type checker left `op`'s type (`what`) unresolved.
fn unresolved(op: &Op, what: &str) -> LowerError {
    invalid(
        op.kind.name(),
        op.span,
        format!("the checker did not resolve {what}"),
    )
}

/// The name of an atomic operation (`add`, `cas`, ...), written as a name.
fn atomic_name<'e>(kind: &'e Expr, op: &str) -> LResult<&'e str> {
    match &kind.kind {
        ExprKind::Name(k) => Ok(k),
        _ => Err(invalid(op, kind.span, "an atomic operation is a name")),
    }
}
