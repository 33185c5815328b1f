//! The walk from a [`Checked`] kernel to PTX lines.
//!
//! - `mod.rs` (this file): values, the kernel skeleton (prologue, partitions,
//!   `warp_specialize`, epilogue), statements and control flow.
//! - `expr.rs`: scalar expressions and names.
//! - `tile.rs`: register tiles (elementwise math, layouts, conversions through shared
//!   memory).
//! - `ops.rs`: memory and asynchronous operations (TMA, mbarriers, fences, tcgen05, wgmma,
//!   shared/global/tensor memory access).
//!
//! **Values are immutable.** A name is bound to a value held in registers; reassigning a name
//! rebinds it. Where control flow merges (a `for` back edge, the end of an `if`), every outer
//! name the body assigns gets "phi" registers written by parallel copies, so loops need no
//! other bookkeeping. The one exception is wgmma, which accumulates in place into its
//! accumulator's registers when the statement reassigns that same name (`acc = wgmma a, b,
//! acc`), as the hardware instruction does.
//!
//! **Partitions.** Code outside `warp_specialize` runs on the default partition's warps;
//! "issue" operations (TMA, mbarrier init/expect/arrive, tcgen05.mma/cp/commit) are executed by
//! the partition's leader (one lane of its first warp, chosen with `elect.sync`), everything
//! else by all its threads. Three flags per partition decide where a partition barrier is
//! needed: after all-thread memory accesses and before the next issued operation (its issue
//! must follow every thread's access), after an issued operation that other threads must
//! observe (mbarrier init, bulk-store waits, allocations) before the next all-thread access,
//! and around a barrier that follows tensor-memory accesses (`tcgen05.fence::before/
//! after_thread_sync` bracket it, docs/semantics.md#completion-and-ordering).
//!
//! **warp_specialize.** Worker warps jump over the code before the region; at the region every
//! warp meets at `bar.sync 0`. The cluster barriers the default partition executes outside the
//! region are replayed on every other warp, before the region and after the workers' partitions
//! (`cluster`: `barrier.cluster` counts every thread of the cluster). The default partition's
//! leader first stores every scalar and
//! view the workers may read to backend slots in shared memory, and each partition reloads
//! them, and re-derives the thread ids, the parameters and the TMEM base, at its entry: nothing
//! computed before the fork stays live in a worker's small register budget. Each warpgroup with
//! a register budget takes its own path (`setmaxnreg`, then the partitions it holds), because
//! ptxas allocates registers per region of the control-flow graph, and the entry declares
//! `.minnctapersm 1` so that ptxas knows the count at entry.
//!
//! Submodules: `control` (loops, `if`, `warp_specialize`), `cluster` (cluster barriers and
//! their replay on worker warps), `expr` (expressions and views),
//! `tile` (register tiles, their math, reductions and layout conversions), `ops` (operation
//! dispatch) with `tma`, `tensor` and `memory` (each operation family's lowering).

mod access;
mod asm;
mod cluster;
mod control;
mod expr;
mod memory;
mod ops;
mod reduce;
mod tensor;
mod tile;
mod tma;
mod wgmma;

use super::emit::{Emitter, Origin, Reg, RegClass};
use super::linear_layout::LinearLayout;
use super::smem::Geom;
use super::{LowerError, ParamAbi, PtxModule, PTX_VERSION, PTX_VERSION_FP8X4};
use bwsim_isa::consts::{ConstEnv, ConstValue};
use bwsim_isa::ir::*;
use bwsim_isa::typeck::{AllocKind, Checked, SmemLayout, TileLayout, Ty, SMEM_CAPACITY};
use bwsim_isa::types::{DType, ScalarTy, Target};
use bwsim_isa::Span;
use std::collections::{BTreeSet, HashMap};

pub(super) type LResult<T> = Result<T, LowerError>;

/// A 32-bit shared-window address: `reg + off`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Addr {
    pub reg: Reg,
    pub off: i64,
}

impl Addr {
    /// The address as a memory operand: `[reg]`, or `[reg+off]`.
    pub fn operand(&self) -> String {
        if self.off == 0 {
            format!("[{}]", self.reg)
        } else {
            format!("[{}+{}]", self.reg, self.off)
        }
    }
}

/// A register tile.
#[derive(Clone, Debug)]
pub(super) struct Tile {
    pub dtype: DType,
    pub ll: LinearLayout,
    /// One register per register index of `ll`.
    pub regs: Vec<Reg>,
    /// A layout of the tile's rank that `ll` equals for this shape (kept through
    /// `expand_dims` of a slice), used to pick the layout of broadcasts.
    pub parent: Option<TileLayout>,
}

/// A view of shared memory.
#[derive(Clone, Debug)]
pub(super) struct SmemView {
    /// The region the base points at (dtype, logical shape, layout).
    pub geom: Geom,
    /// The view's shape and its offsets in the region (both of the region's rank).
    pub shape: Vec<u32>,
    pub offsets: Vec<u32>,
    pub base: Addr,
    /// Guaranteed alignment of `base` (bytes).
    pub align: u64,
    pub alloc: usize,
}

impl SmemView {
    /// A view of the whole region `base` points at: `shape` from offset 0.
    pub fn whole(
        dtype: DType,
        shape: Vec<u32>,
        layout: SmemLayout,
        base: Addr,
        align: u64,
        alloc: usize,
    ) -> SmemView {
        SmemView {
            geom: Geom {
                dtype,
                full: shape.clone(),
                layout,
            },
            offsets: vec![0; shape.len()],
            shape,
            base,
            align,
            alloc,
        }
    }
}

/// A view of tensor memory.
#[derive(Clone, Debug)]
pub(super) struct TmemView {
    pub dtype: DType,
    /// Logical shape of the region `base` points at, `[.., M, N]`.
    pub full: Vec<u32>,
    pub shape: Vec<u32>,
    pub offsets: Vec<u32>,
    pub block: [u32; 2],
    pub col_stride: u32,
    pub scales: bool,
    /// TMEM address (lane 0) of the region: `reg + dynamic + cols`.
    pub reg: Reg,
    pub dynamic: Option<Reg>,
    pub cols: u32,
}

/// A value bound to a name or produced by an expression.
#[derive(Clone, Debug)]
pub(super) enum Val {
    Int(i64),
    Bool(bool),
    Float(f64),
    Scalar(ScalarTy, Reg),
    Tile(Tile),
    Smem(SmemView),
    Tmem(TmemView),
    /// An mbarrier (count `None`) or an array of them.
    Mbar {
        base: Addr,
        count: Option<u32>,
    },
    /// A tensor-descriptor parameter (by IR name).
    Desc(String),
    /// A global pointer parameter: element type and 64-bit generic address.
    Ptr(DType, Reg),
    Tuple(Vec<Val>),
    /// A register layout named as a value (layout operands come from the checker).
    Layout,
    DType(DType),
}

impl Val {
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Val::Int(_) | Val::Bool(_) | Val::Float(_) => "a constant",
            Val::Scalar(..) => "a scalar",
            Val::Tile(_) => "a register tile",
            Val::Smem(_) => "a shared-memory view",
            Val::Tmem(_) => "a tensor-memory view",
            Val::Mbar { .. } => "an mbarrier",
            Val::Desc(_) => "a tensor descriptor",
            Val::Ptr(..) => "a pointer",
            Val::Tuple(_) => "a tuple",
            Val::Layout => "a layout",
            Val::DType(_) => "an element type",
        }
    }

    /// The element type and the two dimensions (rows, columns) of a matrix operand in shared
    /// memory, tensor memory or registers; `None` for any other value.
    pub(super) fn matrix(&self) -> Option<(DType, u32, u32)> {
        match self {
            Val::Smem(s) => Some((s.geom.dtype, s.shape[0], s.shape[1])),
            Val::Tmem(t) => Some((t.dtype, t.shape[0], t.shape[1])),
            Val::Tile(t) => Some((t.dtype, t.ll.shape[0], t.ll.shape[1])),
            _ => None,
        }
    }
}

/// The partition whose code is being emitted.
#[derive(Clone, Debug)]
pub(super) struct Part {
    pub index: usize,
    pub first_warp: u32,
    pub warps: u32,
    /// Named barrier of the partition (`bar.sync id, 32 * warps`).
    pub bar: u32,
    /// True on the partition's first thread.
    pub leader: Reg,
    /// Warp index within the partition.
    pub pwarp: Reg,
    /// All-thread memory accesses since the last partition barrier.
    pub all_dirty: bool,
    /// Issued operations others must observe since the last partition barrier.
    pub issue_dirty: bool,
    /// Tensor-memory accesses since the last partition barrier (the barrier is then bracketed
    /// by `tcgen05.fence::before/after_thread_sync`, docs/semantics.md#completion-and-ordering).
    pub tmem_dirty: bool,
}

impl Part {
    /// Every thread of the partition has passed a barrier: nothing is left to order.
    pub(super) fn synced(&mut self) {
        self.all_dirty = false;
        self.issue_dirty = false;
        self.tmem_dirty = false;
    }
}

/// Registers defined in the prologue (they dominate the whole kernel).
#[derive(Clone)]
pub(super) struct KernelRegs {
    pub tid: Reg,
    pub warp: Reg,
    pub lane: Reg,
    pub smem: Reg,
    pub tmem: Option<Reg>,
    /// Per IR parameter name.
    pub params: HashMap<String, Val>,
    /// Tensor-map generic addresses and shape registers per descriptor parameter.
    pub tmaps: HashMap<String, (Reg, Vec<Reg>)>,
}

/// Backend-private shared memory after the plan.
struct Reserved {
    /// Next free byte for slots.
    next: u32,
    /// Offset of the kernel-level TMEM address slot.
    tmem_slot: Option<u32>,
}

pub(super) struct Lowerer<'c, 'k> {
    pub ck: &'c Checked<'k>,
    pub consts: ConstEnv,
    pub e: Emitter,
    scopes: Vec<HashMap<String, Val>>,
    pub k: KernelRegs,
    pub part: Part,
    /// Scratch bytes each partition needs (index = partition index).
    pub scratch: Vec<u32>,
    reserved: Reserved,
    /// Nesting of control flow (warp_specialize must be at depth 0).
    depth: usize,
    /// How much of `depth` is `static_for` bodies (unrolled: no dynamic control flow).
    static_depth: usize,
    /// The iteration value of every `static_for` being unrolled, outermost first: where the
    /// checker's per-op facts are looked up ([`Checked::op_type`]).
    iters: Vec<i64>,
    ws_done: bool,
    /// The cluster barriers outside the `warp_specialize` region, replayed on worker warps.
    replay: cluster::Replay,
    /// The name a statement assigns, while lowering its right-hand side (for in-place wgmma).
    pub assign_target: Option<String>,
    /// While lowering an operation statement whose result is discarded (`global.atomic ...`
    /// without `let`): an atomic then needs no value for the copies of an element.
    pub result_discarded: bool,
    /// First TMEM column of each non-manual tensor-memory allocation (by allocation index).
    pub tmem_plan: HashMap<usize, u32>,
    /// Whether `setmaxnreg` was emitted (the entry then declares `.minnctapersm 1` so that
    /// ptxas knows the register count at entry and honours the reallocation).
    setmaxnreg: bool,
    /// The `cta_group` of each lowered tcgen05.mma (and of each `cta_group=2` commit), with
    /// a span: a kernel uses one (ptxas rejects a mix), and the allocation-management and
    /// commit instructions emitted with [`CTA_GROUP_PLACEHOLDER`] take it.
    pub cta_groups: Vec<(u32, Span)>,
    /// The first `tcgen05.cp` lowered (refused in a `cta_group::2` kernel).
    pub cp_span: Option<Span>,
    /// Whether the kernel uses cluster features (`cluster.sync`, CTA pairs): the entry is
    /// declared `.explicitcluster` and must be launched with a cluster dimension.
    pub uses_cluster: bool,
    /// Whether the kernel uses four-lane fp8 arithmetic (`add4`, ...): the module is then
    /// `.version 9.4`.
    pub uses_fp8x4: bool,
    /// Whether the kernel arrives on a peer CTA's mbarrier (`mbar.arrive`/`mbar.expect ..., cta=R`): its
    /// waits then acquire at cluster scope, so that they synchronise with the peer's
    /// `.release.cluster` arrival (a `.cta`-scope acquire, the default, is not morally strong
    /// with a release from another CTA; PTX ISA, "Memory Consistency Model").
    pub remote_arrivals: bool,
}

/// Whether any `mbar.arrive` or `mbar.expect` of `k` names a peer CTA (`cta=R`).
fn has_remote_arrivals(k: &Kernel) -> bool {
    let mut found = false;
    k.walk_stmts(&mut |s| {
        if let StmtKind::Op(op) = &s.kind {
            found |= matches!(
                op.kind,
                OpKind::MbarArrive { cta: Some(_), .. } | OpKind::MbarExpect { cta: Some(_), .. }
            );
        }
    });
    found
}

/// Stands for the kernel's `cta_group` (1 or 2) in instructions emitted before it is known
/// (TMEM allocation management, commits); replaced when the module is assembled.
pub(super) const CTA_GROUP_PLACEHOLDER: &str = "__CTA_GROUP__";

pub(super) fn unsupported(op: &str, span: Span, reason: impl std::fmt::Display) -> LowerError {
    LowerError::Unsupported {
        op: op.to_string(),
        span,
        reason: reason.to_string(),
    }
}

pub(super) fn invalid(op: &str, span: Span, reason: impl std::fmt::Display) -> LowerError {
    LowerError::Invalid {
        op: op.to_string(),
        span,
        reason: reason.to_string(),
    }
}

/// `op`'s operand at `span` is of the wrong kind: `what` it needed (`expected a register
/// tile`), and the kind it is.
pub(super) fn wrong_kind(op: &str, span: Span, what: &str, found: &Val) -> LowerError {
    invalid(op, span, format!("{what}, found {}", found.kind()))
}

/// Register class holding a scalar type.
pub(super) fn scalar_class(t: ScalarTy) -> RegClass {
    match t {
        ScalarTy::I1 => RegClass::Pred,
        ScalarTy::I32 => RegClass::B32,
        ScalarTy::I64 => RegClass::B64,
        ScalarTy::F32 => RegClass::F32,
    }
}

/// Register class holding one element of a tile.
pub(super) fn dtype_class(d: DType) -> Option<RegClass> {
    match d {
        DType::F32 | DType::TF32 => Some(RegClass::F32),
        DType::I32 | DType::U32 => Some(RegClass::B32),
        DType::I64 | DType::U64 => Some(RegClass::B64),
        DType::I1 => Some(RegClass::Pred),
        DType::F16
        | DType::BF16
        | DType::I16
        | DType::U16
        | DType::I8
        | DType::U8
        | DType::F8E4M3
        | DType::F8E5M2
        | DType::UE8M0
        | DType::UE4M3 => Some(RegClass::B16),
        DType::F4E2M1 => None,
    }
}

/// Layout of the warps: (first warp, warps) per partition, and the total warp count.
pub(super) fn warp_plan(ck: &Checked) -> (Vec<(u32, u32)>, u32) {
    let mut parts = vec![(0, ck.num_warps)];
    let mut next = ck.num_warps;
    for (_, w, _) in &ck.workers {
        if w % 4 == 0 {
            next = next.div_ceil(4) * 4;
        }
        parts.push((next, *w));
        next += w;
    }
    let total = if ck.workers.is_empty() {
        next
    } else {
        next.div_ceil(4) * 4
    };
    (parts, total)
}

/// Emit the registers every partition needs (thread, warp and lane index, the shared-memory
/// base, the kernel parameters). The prologue emits them once (and records the parameter
/// ABI); each `warp_specialize` partition emits them again at its entry so that nothing
/// computed before the fork stays live across a worker's small register budget.
fn emit_kernel_regs(
    e: &mut Emitter,
    ck: &Checked,
    mut abi: Option<&mut Vec<ParamAbi>>,
) -> Result<KernelRegs, LowerError> {
    let [tid, warp, lane, smem] = e.regs(RegClass::B32);
    e.ins(format!("mov.u32 {tid}, %tid.x"));
    e.ins(format!("shr.u32 {warp}, {tid}, 5"));
    e.ins(format!("and.b32 {lane}, {tid}, 31"));
    e.ins(format!("mov.u32 {smem}, smem"));
    let mut params = HashMap::new();
    let mut tmaps = HashMap::new();
    for p in &ck.params {
        let pname = format!("p_{}", p.name);
        match &p.ty {
            Ty::Scalar(s) => {
                let (ty, ld) = match s {
                    ScalarTy::I32 | ScalarTy::I1 => ("u32", "u32"),
                    ScalarTy::I64 => ("u64", "u64"),
                    ScalarTy::F32 => ("f32", "f32"),
                };
                let st = if *s == ScalarTy::I1 { ScalarTy::I32 } else { *s };
                let r = e.reg(scalar_class(st));
                e.ins(format!("ld.param.{ld} {r}, [{pname}]"));
                params.insert(p.name.clone(), Val::Scalar(st, r));
                if let Some(abi) = abi.as_deref_mut() {
                    abi.push(ParamAbi::Scalar {
                        ir_name: p.name.clone(),
                        ptx_name: pname,
                        ty,
                    });
                }
            }
            Ty::Ptr(d) => {
                let r = e.reg(RegClass::B64);
                e.ins(format!("ld.param.u64 {r}, [{pname}]"));
                e.ins(format!("cvta.to.global.u64 {r}, {r}"));
                params.insert(p.name.clone(), Val::Ptr(*d, r));
                if let Some(abi) = abi.as_deref_mut() {
                    abi.push(ParamAbi::Pointer {
                        ir_name: p.name.clone(),
                        ptx_name: pname,
                        dtype: *d,
                    });
                }
            }
            Ty::Desc(d) => {
                let r = e.reg(RegClass::B64);
                e.ins(format!("mov.b64 {r}, {pname}"));
                e.ins(format!("cvta.param.u64 {r}, {r}"));
                let span_b = d.layout.swizzle().bytes();
                let box_dims = bwsim_isa::tma::hw_box(&d.block, d.dtype, span_b);
                if let Some(abi) = abi.as_deref_mut() {
                    abi.push(ParamAbi::TensorMap {
                        ir_name: p.name.clone(),
                        ptx_name: pname.clone(),
                        dtype: d.dtype,
                        block: d.block.clone(),
                        box_dims,
                        swizzle_bytes: span_b,
                        elem_strides: (0..d.block.len())
                            .map(|k| d.elem_strides.get(k).copied().unwrap_or(1))
                            .collect(),
                        oob: d.oob.name(),
                    });
                }
                let mut shape_regs = Vec::new();
                for i in 0..d.block.len() {
                    let sname = format!("{pname}_shape{i}");
                    let sr = e.reg(RegClass::B32);
                    e.ins(format!("ld.param.u32 {sr}, [{sname}]"));
                    shape_regs.push(sr);
                    if let Some(abi) = abi.as_deref_mut() {
                        abi.push(ParamAbi::DescShape {
                            ir_name: p.name.clone(),
                            ptx_name: sname,
                            dim: i,
                        });
                    }
                }
                tmaps.insert(p.name.clone(), (r, shape_regs));
                params.insert(p.name.clone(), Val::Desc(p.name.clone()));
            }
            other => {
                return Err(invalid(
                    "param",
                    p.span,
                    format!("parameter of type {}", other.describe()),
                ))
            }
        }
    }
    Ok(KernelRegs {
        tid,
        warp,
        lane,
        smem,
        tmem: None,
        params,
        tmaps,
    })
}

pub(super) fn lower(ck: &Checked) -> Result<PtxModule, LowerError> {
    let kspan = ck.kernel.name.span;
    let (plan, total_warps) = warp_plan(ck);
    let threads = total_warps * 32;
    if threads > 1024 {
        return Err(invalid(
            "kernel",
            kspan,
            format!("{total_warps} warps exceed the 32 warps of a CTA"),
        ));
    }
    let mut e = Emitter::new();
    e.set_origin(Some(Origin {
        op: "kernel".into(),
        span: kspan,
    }));
    let mut abi = Vec::new();
    let KernelRegs {
        tid,
        warp,
        lane,
        smem,
        params,
        tmaps,
        ..
    } = emit_kernel_regs(&mut e, ck, Some(&mut abi))?;

    // Backend-private shared memory after the plan.
    let mut reserved = Reserved {
        next: ck.smem_bytes.div_ceil(16) * 16,
        tmem_slot: None,
    };

    // Kernel-level TMEM (the non-manual allocations), allocated by warp 0. The backend lays
    // the buffers out itself: scale-factor buffers take the hardware's shape (see
    // `tmem_hw_cols`), the rest the type checker's column counts.
    let mut tmem = None;
    let mut tmem_plan = HashMap::new();
    let mut tmem_cols = 0u32;
    for (i, a) in ck.allocs.iter().enumerate() {
        if let AllocKind::Tmem(tt) = &a.kind {
            if !a.manual {
                tmem_plan.insert(i, tmem_cols);
                tmem_cols += tmem_hw_cols(tt);
            }
        }
    }
    if tmem_cols > 0 {
        let ncols = tmem_cols.max(32).next_power_of_two();
        if ncols > 512 {
            return Err(invalid(
                "tmem.alloc",
                kspan,
                format!("{tmem_cols} TMEM columns needed"),
            ));
        }
        let slot = reserved.next;
        reserved.next += 16;
        reserved.tmem_slot = Some(slot);
        let has_manual = ck.allocs.iter().any(|a| a.manual);
        let p = e.reg(RegClass::Pred);
        let skip = e.label("tmem_alloc_done");
        e.comment(format!(
            "allocate {ncols} TMEM columns for the kernel's scoped tensor-memory buffers"
        ));
        e.ins(format!("setp.ne.u32 {p}, {warp}, 0"));
        e.ins(format!("@{p} bra {skip}"));
        e.ins(format!(
            "tcgen05.alloc.cta_group::{CTA_GROUP_PLACEHOLDER}.sync.aligned.shared::cta.b32 [{smem}+{slot}], {ncols}"
        ));
        if !has_manual {
            e.ins(format!(
                "tcgen05.relinquish_alloc_permit.cta_group::{CTA_GROUP_PLACEHOLDER}.sync.aligned"
            ));
        }
        e.place(&skip);
        e.ins("tcgen05.fence::before_thread_sync");
        e.ins("bar.sync 0");
        e.ins("tcgen05.fence::after_thread_sync");
        let t = e.reg(RegClass::B32);
        e.ins(format!("ld.shared.b32 {t}, [{smem}+{slot}]"));
        tmem = Some((t, ncols));
    }

    let leader = elect_leader(&mut e, warp, 0);
    let end_label = e.label("kernel_end");
    let part = Part {
        index: 0,
        first_warp: 0,
        warps: plan[0].1,
        bar: 1,
        leader,
        pwarp: warp,
        all_dirty: false,
        issue_dirty: false,
        tmem_dirty: false,
    };
    let k = KernelRegs {
        tid,
        warp,
        lane,
        smem,
        tmem: tmem.map(|t| t.0),
        params,
        tmaps,
    };
    let mut lw = Lowerer {
        ck,
        consts: ck.consts.clone(),
        e,
        scopes: vec![HashMap::new()],
        k,
        part,
        scratch: vec![0; plan.len()],
        reserved,
        depth: 0,
        static_depth: 0,
        iters: Vec::new(),
        ws_done: false,
        replay: cluster::Replay::default(),
        assign_target: None,
        result_discarded: false,
        tmem_plan,
        setmaxnreg: false,
        cta_groups: Vec::new(),
        cp_span: None,
        uses_cluster: false,
        uses_fp8x4: false,
        remote_arrivals: has_remote_arrivals(ck.kernel),
    };
    if !ck.workers.is_empty() {
        // Worker warps skip the code before warp_specialize (replaying its cluster barriers).
        let p = lw.e.reg(RegClass::Pred);
        lw.e.ins(format!("setp.ge.u32 {p}, {warp}, {}", ck.num_warps));
        lw.e.ins(format!("@{p} bra {}", cluster::WORKERS_BEFORE));
    }
    lw.block_in_place(&ck.kernel.body)?;
    if !ck.workers.is_empty() && !lw.ws_done {
        return Err(invalid(
            "warp_specialize",
            kspan,
            "workers were declared but no warp_specialize region was lowered",
        ));
    }
    if lw.ws_done {
        // The other warps' replay of the cluster barriers after the region.
        lw.place_workers_after(&end_label);
    }

    // One cta_group per kernel (ptxas: "uses single CTA(.cta_group::1) and CTA pair
    // granularity(.cta_group::2) and that is not allowed").
    let cta_group = match lw.cta_groups.iter().find(|(g, _)| *g != lw.cta_groups[0].0) {
        Some((_, span)) => {
            return Err(unsupported(
                "tcgen05.mma",
                *span,
                "a kernel whose tcgen05 operations mix cta_group 1 and 2 (ptxas rejects it: every tcgen05 instruction of a kernel takes the same cta_group)",
            ))
        }
        None => lw.cta_groups.first().map(|g| g.0).unwrap_or(1),
    };
    if cta_group == 2 {
        if let Some(span) = lw.cp_span {
            return Err(unsupported(
                "tcgen05.cp",
                span,
                "tcgen05.cp in a kernel of CTA-pair (cta_group::2) MMAs",
            ));
        }
    }
    let uses_cluster = lw.uses_cluster || cta_group == 2;

    // Epilogue: free kernel-level TMEM once every warp is done with it.
    let setmaxnreg = lw.setmaxnreg;
    let mut e = lw.e;
    e.set_origin(Some(Origin {
        op: "kernel".into(),
        span: kspan,
    }));
    e.place(&end_label);
    if let (Some((_, ncols)), Some(slot)) = (tmem, lw.reserved.tmem_slot) {
        // Fresh registers: nothing from the prologue stays live through the partitions.
        let (tid, warp, sm, t) = (
            e.reg(RegClass::B32),
            e.reg(RegClass::B32),
            e.reg(RegClass::B32),
            e.reg(RegClass::B32),
        );
        let p = e.reg(RegClass::Pred);
        let skip = e.label("tmem_dealloc_done");
        e.ins("tcgen05.fence::before_thread_sync");
        if cta_group == 2 {
            // The peer CTA must be done with its accesses to this CTA's tensor memory (the
            // pair's MMAs) before the pair deallocates (PTX ISA, tcgen05 issue granularity).
            e.ins("barrier.cluster.arrive.release");
            e.ins("barrier.cluster.wait.acquire");
        } else {
            e.ins("bar.sync 0");
        }
        e.ins(format!("mov.u32 {tid}, %tid.x"));
        e.ins(format!("shr.u32 {warp}, {tid}, 5"));
        e.ins(format!("mov.u32 {sm}, smem"));
        e.ins(format!("ld.shared.b32 {t}, [{sm}+{slot}]"));
        e.ins(format!("setp.ne.u32 {p}, {warp}, 0"));
        e.ins(format!("@{p} bra {skip}"));
        e.ins("tcgen05.fence::after_thread_sync");
        e.ins(format!(
            "tcgen05.dealloc.cta_group::{cta_group}.sync.aligned.b32 {t}, {ncols}"
        ));
        e.place(&skip);
    }
    e.ins("ret");

    // Scratch areas, one per partition, after the private slots.
    let mut scratch_off = Vec::new();
    let mut top = lw.reserved.next.div_ceil(128) * 128;
    for &s in &lw.scratch {
        scratch_off.push(top);
        top += s.div_ceil(128) * 128;
    }
    if top > SMEM_CAPACITY {
        return Err(invalid(
            "kernel",
            kspan,
            format!(
                "needs {top} bytes of shared memory with the backend's slots and layout-conversion scratch ({} in the plan); a CTA has {SMEM_CAPACITY}",
                ck.smem_bytes
            ),
        ));
    }

    // Assemble the module.
    let name = ck.kernel.name.name.clone();
    let mut out: Vec<(String, Option<Origin>)> = Vec::new();
    let mut push = |s: String| out.push((s, None));
    push(format!("// bwsim PTX backend: kernel `{name}` for {}", ck.target));
    push(format!(
        "// launch: blockDim = ({threads}, 1, 1), dynamic shared memory = {top} bytes"
    ));
    push(format!(
        ".version {}",
        if lw.uses_fp8x4 {
            PTX_VERSION_FP8X4
        } else {
            PTX_VERSION
        }
    ));
    push(format!(".target {}", ck.target.name()));
    push(".address_size 64".into());
    push(String::new());
    push(".extern .shared .align 1024 .b8 smem[];".into());
    push(String::new());
    push(format!(".visible .entry {name}("));
    let n = abi.len();
    for (i, a) in abi.iter().enumerate() {
        let decl = match a {
            ParamAbi::Scalar { ty, .. } => format!(".param .{ty} {}", a.ptx_name()),
            ParamAbi::Pointer { .. } => format!(".param .u64 {}", a.ptx_name()),
            ParamAbi::TensorMap { .. } => format!(".param .align 64 .b8 {}[128]", a.ptx_name()),
            ParamAbi::DescShape { .. } => format!(".param .u32 {}", a.ptx_name()),
        };
        push(format!("\t{decl}{}", if i + 1 < n { "," } else { "" }));
    }
    push(")".into());
    push(format!(".maxntid {threads}, 1, 1"));
    if setmaxnreg {
        push(".minnctapersm 1".into());
    }
    if uses_cluster {
        // The launch gives the cluster shape (the launch section's `cluster`, passed as
        // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION); a launch without one fails instead of
        // running a CTA pair's code on lone CTAs.
        push(".explicitcluster".into());
    }
    push("{".into());
    for d in e.declarations() {
        push(d);
    }
    for (l, o) in e.into_lines() {
        let mut l = l;
        if l.contains("__SCRATCH") {
            for (i, off) in scratch_off.iter().enumerate() {
                l = l.replace(&format!("__SCRATCH{i}__"), &off.to_string());
            }
        }
        if l.contains(CTA_GROUP_PLACEHOLDER) {
            l = l.replace(CTA_GROUP_PLACEHOLDER, &cta_group.to_string());
        }
        out.push((l, o));
    }
    out.push(("}".into(), None));
    let mut text = String::new();
    let mut origins = Vec::with_capacity(out.len());
    for (l, o) in out {
        text.push_str(&l);
        text.push('\n');
        origins.push(o);
    }
    Ok(PtxModule {
        text,
        entry: name,
        target: ck.target,
        block_dim: [threads, 1, 1],
        explicit_cluster: uses_cluster,
        dynamic_smem_bytes: top,
        params: abi,
        line_origins: origins,
    })
}

/// TMEM columns a buffer occupies on hardware: the type checker's count, which for
/// scale-factor buffers (`scales=true`) is the hardware's placement (row `m` in lane `m % 32`
/// of every lane quarter, column `m / 32` per group of four K blocks;
/// [`bwsim_isa::typeck::scale_cell`], docs/hardware/tmem-scales.md).
pub(super) fn tmem_hw_cols(tt: &bwsim_isa::typeck::TmemTy) -> u32 {
    tt.cols()
}

/// Point the registers of a value at their replacements.
pub(super) fn remap_val(v: &mut Val, map: &HashMap<Reg, Reg>) {
    let m = |r: &mut Reg| {
        if let Some(n) = map.get(r) {
            *r = *n;
        }
    };
    match v {
        Val::Scalar(_, r) | Val::Ptr(_, r) => m(r),
        Val::Tile(t) => t.regs.iter_mut().for_each(m),
        Val::Smem(s) => m(&mut s.base.reg),
        Val::Tmem(t) => {
            m(&mut t.reg);
            if let Some(d) = t.dynamic.as_mut() {
                m(d);
            }
        }
        Val::Mbar { base, .. } => m(&mut base.reg),
        Val::Tuple(vs) => vs.iter_mut().for_each(|x| remap_val(x, map)),
        Val::Int(_) | Val::Bool(_) | Val::Float(_) | Val::Desc(_) | Val::Layout | Val::DType(_) => {}
    }
}

/// The leader of a partition whose first warp is `first`: one lane of that warp, chosen with
/// `elect.sync` as Triton and CUTLASS do (docs/semantics.md#execution-model). Emitted where the
/// warp is converged (the partition's entry).
pub(super) fn elect_leader(e: &mut Emitter, warp: Reg, first: u32) -> Reg {
    let [w, el, leader] = e.regs(RegClass::Pred);
    e.ins(format!("setp.eq.u32 {w}, {warp}, {first}"));
    e.ins(format!("elect.sync _|{el}, -1"));
    e.ins(format!("and.pred {leader}, {w}, {el}"));
    leader
}

/// Names assigned (not `let`) anywhere in a block, nested blocks included.
pub(super) fn assigned_names(b: &Block, out: &mut BTreeSet<String>) {
    walk_block(b, &mut |s| {
        if let StmtKind::Assign { names, .. } = &s.kind {
            for n in names {
                out.insert(n.name.clone());
            }
        }
    });
}

impl<'c, 'k> Lowerer<'c, 'k> {
    pub fn target(&self) -> Target {
        self.ck.target
    }

    /// Store every register an outer-scope value holds (other than the kernel registers, which
    /// each partition re-derives) to a backend slot; returns (register, slot offset).
    pub(super) fn capture_outer_values(&mut self) -> Vec<(Reg, u32)> {
        let kernel: std::collections::HashSet<Reg> = [
            Some(self.k.tid),
            Some(self.k.warp),
            Some(self.k.lane),
            Some(self.k.smem),
            self.k.tmem,
        ]
        .into_iter()
        .flatten()
        .chain(self.k.params.values().filter_map(|v| match v {
            Val::Scalar(_, r) | Val::Ptr(_, r) => Some(*r),
            _ => None,
        }))
        .chain(
            self.k
                .tmaps
                .values()
                .flat_map(|(r, s)| std::iter::once(*r).chain(s.iter().copied())),
        )
        .collect();
        let mut regs: Vec<Reg> = Vec::new();
        let push = |r: Reg, regs: &mut Vec<Reg>| {
            if !kernel.contains(&r) && !regs.contains(&r) {
                regs.push(r);
            }
        };
        fn walk(v: &Val, f: &mut dyn FnMut(Reg)) {
            match v {
                Val::Scalar(_, r) | Val::Ptr(_, r) => f(*r),
                Val::Smem(s) => f(s.base.reg),
                Val::Tmem(t) => {
                    f(t.reg);
                    if let Some(d) = t.dynamic {
                        f(d);
                    }
                }
                Val::Mbar { base, .. } => f(base.reg),
                Val::Tuple(vs) => vs.iter().for_each(|x| walk(x, f)),
                // Register tiles never cross into a worker (verifier rule `ws-tile-capture`).
                _ => {}
            }
        }
        for scope in &self.scopes {
            let mut names: Vec<&String> = scope.keys().collect();
            names.sort();
            for n in names {
                walk(&scope[n], &mut |r| push(r, &mut regs));
            }
        }
        if regs.is_empty() {
            return Vec::new();
        }
        self.e.comment(format!(
            "warp_specialize: {} value(s) of the default partition captured for the workers",
            regs.len()
        ));
        let smem = self.k.smem;
        let p = self.part.leader;
        let mut out = Vec::new();
        for r in regs {
            let slot = self.reserve_slot(if r.class == RegClass::B128 { 16 } else { 8 });
            let a = format!("[{smem}+{slot}]");
            // A predicate travels as a `u32` 0 or 1.
            let (v, ty) = match r.class {
                RegClass::Pred => {
                    let t = self.e.reg(RegClass::B32);
                    self.e.ins(format!("selp.u32 {t}, 1, 0, {r}"));
                    (t, ".u32")
                }
                c => (r, c.decl_type()),
            };
            self.e.ins(format!("@{p} st.shared{ty} {a}, {v}"));
            out.push((r, slot));
        }
        out
    }

    /// Re-emit the kernel registers at a partition entry and point every visible value at
    /// the new ones (see [`emit_kernel_regs`]).
    pub(super) fn fresh_kernel_regs(&mut self, captures: &[(Reg, u32)]) -> LResult<()> {
        let mut k = emit_kernel_regs(&mut self.e, self.ck, None)?;
        if let (Some(slot), Some(_)) = (self.reserved.tmem_slot, self.k.tmem) {
            let t = self.e.reg(RegClass::B32);
            self.e.ins(format!("ld.shared.b32 {t}, [{}+{slot}]", k.smem));
            k.tmem = Some(t);
        }
        let mut map: HashMap<Reg, Reg> = HashMap::new();
        // Values the default partition computed before the fork, read back from shared memory.
        for &(r, slot) in captures {
            let n = self.e.reg(r.class);
            let a = format!("[{}+{slot}]", k.smem);
            let pred = r.class == RegClass::Pred;
            let (v, ty) = if pred {
                (self.e.reg(RegClass::B32), ".u32")
            } else {
                (n, r.class.decl_type())
            };
            self.e.ins(format!("ld.shared{ty} {v}, {a}"));
            if pred {
                self.e.ins(format!("setp.ne.u32 {n}, {v}, 0"));
            }
            map.insert(r, n);
        }
        let old = std::mem::replace(&mut self.k, k);
        map.insert(old.tid, self.k.tid);
        map.insert(old.warp, self.k.warp);
        map.insert(old.lane, self.k.lane);
        map.insert(old.smem, self.k.smem);
        if let (Some(a), Some(b)) = (old.tmem, self.k.tmem) {
            map.insert(a, b);
        }
        for (n, v) in &old.params {
            match (v, self.k.params.get(n)) {
                (Val::Scalar(_, a), Some(Val::Scalar(_, b))) | (Val::Ptr(_, a), Some(Val::Ptr(_, b))) => {
                    map.insert(*a, *b);
                }
                _ => {}
            }
        }
        for (n, (r, shapes)) in &old.tmaps {
            if let Some((r2, s2)) = self.k.tmaps.get(n) {
                map.insert(*r, *r2);
                for (a, b) in shapes.iter().zip(s2) {
                    map.insert(*a, *b);
                }
            }
        }
        for scope in &mut self.scopes {
            for v in scope.values_mut() {
                remap_val(v, &map);
            }
        }
        Ok(())
    }

    // ----- scopes -----

    pub fn lookup_var(&self, name: &str) -> Option<&Val> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    pub(super) fn declare(&mut self, name: &str, v: Val) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), v);
        }
    }

    /// Rebind an existing name in the scope that declares it.
    pub(super) fn rebind(&mut self, name: &str, v: Val) -> bool {
        for s in self.scopes.iter_mut().rev() {
            if let Some(slot) = s.get_mut(name) {
                *slot = v;
                return true;
            }
        }
        false
    }

    // ----- barriers -----

    /// `bar.sync` of the current partition.
    pub fn part_barrier(&mut self) {
        let n = self.part.warps * 32;
        let tm = self.part.tmem_dirty && self.target() == Target::Sm100a;
        if tm {
            self.e.ins("tcgen05.fence::before_thread_sync");
        }
        if self.part.index == 0 && self.ck.workers.is_empty() {
            self.e.ins("bar.sync 0");
        } else {
            self.e.ins(format!("bar.sync {}, {n}", self.part.bar));
        }
        if tm {
            self.e.ins("tcgen05.fence::after_thread_sync");
        }
        self.part.synced();
    }

    /// Before an operation issued by the partition's first thread.
    pub fn before_issue(&mut self) {
        if self.part.all_dirty {
            if self.part.warps > 1 {
                self.part_barrier();
            } else {
                self.e.ins("bar.warp.sync -1");
                self.part.all_dirty = false;
            }
        }
    }

    /// Reserve `bytes` of backend-private shared memory (after the plan); returns the offset.
    pub fn reserve_slot(&mut self, bytes: u32) -> u32 {
        let off = self.reserved.next.div_ceil(bytes.max(4)) * bytes.max(4);
        self.reserved.next = off + bytes;
        off
    }

    /// Before an all-thread access that must observe earlier issued operations.
    pub fn before_all_access(&mut self) {
        if self.part.warps > 1 && self.part.issue_dirty {
            self.part_barrier();
        }
        if self.part.warps == 1 && self.part.issue_dirty {
            self.e.ins("bar.warp.sync -1");
            self.part.issue_dirty = false;
        }
    }

    /// The predicate of an issue operation: the leader, and `pred` when given.
    pub fn issue_pred(&mut self, pred: Option<Reg>) -> Reg {
        match pred {
            None => self.part.leader,
            Some(p) => {
                let q = self.e.reg(RegClass::Pred);
                self.e.ins(format!("and.pred {q}, {}, {p}", self.part.leader));
                q
            }
        }
    }

    // ----- statements -----

    pub(super) fn origin_of(s: &Stmt) -> Origin {
        let op = match &s.kind {
            StmtKind::Let {
                value: Rhs::Op(op), ..
            }
            | StmtKind::Assign {
                value: Rhs::Op(op), ..
            }
            | StmtKind::Op(op) => op.kind.name().to_string(),
            StmtKind::Let { names, .. } => format!(
                "let {}",
                names
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            StmtKind::Assign { names, .. } => {
                names
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
                    + " ="
            }
            StmtKind::For(ForLoop { unrolled: true, .. }) => "static_for".into(),
            StmtKind::For(_) => "for".into(),
            StmtKind::If { .. } => "if".into(),
            StmtKind::While { .. } => "while".into(),
            StmtKind::WarpSpecialize { .. } => "warp_specialize".into(),
            StmtKind::StaticAssert { .. } => "static_assert".into(),
        };
        Origin { op, span: s.span }
    }

    pub(super) fn block(&mut self, b: &Block) -> LResult<()> {
        self.scopes.push(HashMap::new());
        let r = self.block_in_place(b);
        self.scopes.pop();
        r
    }

    /// A one-line PTX comment naming the statement, so that the PTX reads against the
    /// `.tile` source.
    pub(super) fn stmt_comment(s: &Stmt) -> Option<String> {
        use bwsim_isa::printer::{for_header, print_expr, print_op};
        let names = |ns: &[Ident]| ns.iter().map(|n| n.name.as_str()).collect::<Vec<_>>().join(", ");
        let rhs = |r: &Rhs| match r {
            Rhs::Expr(e) => print_expr(e),
            Rhs::Op(o) => print_op(o),
        };
        let text = match &s.kind {
            StmtKind::Let { names: ns, value } => format!("let {} = {}", names(ns), rhs(value)),
            StmtKind::Assign { names: ns, value } => format!("{} = {}", names(ns), rhs(value)),
            StmtKind::Op(o) => print_op(o),
            StmtKind::For(lp) => for_header(lp),
            StmtKind::If { cond, .. } => format!("if {}", print_expr(cond)),
            StmtKind::While { cond, .. } => format!("while {}", print_expr(cond)),
            StmtKind::WarpSpecialize { .. } | StmtKind::StaticAssert { .. } => return None,
        };
        // One line: long expressions are cut.
        let mut t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if t.chars().count() > 100 {
            t = t.chars().take(97).collect::<String>() + "...";
        }
        Some(t)
    }

    /// The statements of a block in the current scope (kernel body, constant `if` branches).
    pub(super) fn block_in_place(&mut self, b: &Block) -> LResult<()> {
        for s in &b.stmts {
            let prev = self.e.set_origin(Some(Self::origin_of(s)));
            if let Some(c) = Self::stmt_comment(s) {
                self.e.comment(c);
            }
            let r = self.stmt(s);
            self.e.set_origin(prev);
            r?;
        }
        Ok(())
    }

    pub(super) fn stmt(&mut self, s: &Stmt) -> LResult<()> {
        match &s.kind {
            StmtKind::Let { names, value } => {
                let v = self.rhs(value, None)?;
                let vals = self.destructure(names, v, s.span)?;
                for (n, v) in names.iter().zip(vals) {
                    let bare = matches!(value, Rhs::Expr(e) if e.as_name().is_some());
                    let v = self.materialize(v, bare, s.span)?;
                    self.declare(&n.name, v);
                }
                Ok(())
            }
            StmtKind::Assign { names, value } => {
                let target = if names.len() == 1 {
                    Some(names[0].name.clone())
                } else {
                    None
                };
                let v = self.rhs(value, target)?;
                let vals = self.destructure(names, v, s.span)?;
                for (n, v) in names.iter().zip(vals) {
                    let old = self
                        .lookup_var(&n.name)
                        .cloned()
                        .ok_or_else(|| invalid("=", n.span, format!("`{}` is not a variable", n.name)))?;
                    let v = self.coerce_like(&old, v, s.span)?;
                    self.rebind(&n.name, v);
                }
                Ok(())
            }
            StmtKind::Op(op) => {
                self.result_discarded = true;
                let r = self.op(op);
                self.result_discarded = false;
                r.map(|_| ())
            }
            StmtKind::For(lp) if lp.unrolled => {
                let range = self.static_range(&lp.start, &lp.end, lp.step.as_ref(), s.span)?;
                self.static_for(&lp.var, range, &lp.body)
            }
            StmtKind::For(lp) => {
                self.dynamic_for(&lp.var, &lp.start, &lp.end, lp.step.as_ref(), &lp.body, s.span)
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                if let Some(c) = self.try_const(cond)? {
                    let taken = match c {
                        Val::Bool(b) => b,
                        Val::Int(i) => i != 0,
                        _ => return Err(invalid("if", cond.span, "constant condition is not a boolean")),
                    };
                    if taken {
                        self.block_in_place(then_body)
                    } else if let Some(e) = else_body {
                        self.block_in_place(e)
                    } else {
                        Ok(())
                    }
                } else {
                    self.dynamic_if(cond, then_body, else_body.as_ref(), s.span)
                }
            }
            StmtKind::While { cond, body } => self.dynamic_while(cond, body, s.span),
            StmtKind::WarpSpecialize { default, workers } => self.warp_specialize(default, workers, s.span),
            StmtKind::StaticAssert { .. } => Ok(()),
        }
    }

    pub(super) fn rhs(&mut self, r: &Rhs, target: Option<String>) -> LResult<Val> {
        match r {
            Rhs::Expr(e) => self.expr(e),
            Rhs::Op(op) => {
                let prev = std::mem::replace(&mut self.assign_target, target);
                let v = self.op(op);
                self.assign_target = prev;
                v?.ok_or_else(|| invalid(op.kind.name(), op.span, "produces no value"))
            }
        }
    }

    pub(super) fn destructure(&self, names: &[Ident], v: Val, span: Span) -> LResult<Vec<Val>> {
        if names.len() == 1 {
            return Ok(vec![v]);
        }
        match v {
            Val::Tuple(vs) if vs.len() == names.len() => Ok(vs),
            other => Err(invalid(
                "let",
                span,
                format!("{} names bound to {}", names.len(), other.kind()),
            )),
        }
    }

    /// What a `let` binds: constants and scalars get registers of their own (so that a later
    /// assignment can rebind them in loops); a tile named bare (`let c = acc`) is copied so
    /// that an in-place wgmma on `acc` cannot change `c`.
    pub(super) fn materialize(&mut self, v: Val, bare: bool, span: Span) -> LResult<Val> {
        match v {
            Val::Int(_) | Val::Bool(_) | Val::Float(_) | Val::Scalar(..) => {
                let t = self.scalar_ty_arg(&v, "let", span)?;
                let op = self.scalar_operand(&v, t, span)?;
                let r = self.e.reg(scalar_class(t));
                self.mov(r, &op);
                Ok(Val::Scalar(t, r))
            }
            Val::Tile(t) if bare => Ok(Val::Tile(self.copy_tile(&t))),
            other => Ok(other),
        }
    }

    /// Convert an assigned value to the type of the name's current value.
    pub(super) fn coerce_like(&mut self, old: &Val, v: Val, span: Span) -> LResult<Val> {
        match old {
            Val::Scalar(t, _) => {
                let op = self.scalar_operand(&v, *t, span)?;
                match (&v, &op) {
                    (Val::Scalar(vt, r), _) if vt == t => Ok(Val::Scalar(*t, *r)),
                    _ => {
                        let r = self.e.reg(scalar_class(*t));
                        self.mov(r, &op);
                        Ok(Val::Scalar(*t, r))
                    }
                }
            }
            Val::Tile(ot) => match v {
                Val::Tile(nt) => {
                    if nt.ll == ot.ll {
                        Ok(Val::Tile(nt))
                    } else {
                        let c = self.convert(&nt, &ot.ll, span)?;
                        Ok(Val::Tile(c))
                    }
                }
                other => Err(invalid(
                    "=",
                    span,
                    format!("assigning {} to a tile", other.kind()),
                )),
            },
            _ => Ok(v),
        }
    }

    /// `mov` of an operand into a register of the same class.
    pub fn mov(&mut self, dst: Reg, src: &str) {
        if dst.to_string() == src {
            return;
        }
        let ty = match dst.class {
            RegClass::Pred => {
                match src {
                    "1" | "true" => self.e.ins(format!("setp.eq.u32 {dst}, 0, 0")),
                    "0" | "false" => self.e.ins(format!("setp.ne.u32 {dst}, 0, 0")),
                    _ => self.e.ins(format!("mov.pred {dst}, {src}")),
                }
                return;
            }
            RegClass::B16 => "b16",
            RegClass::B32 => "b32",
            RegClass::F32 => "f32",
            RegClass::B64 => "b64",
            RegClass::B128 => "b128",
        };
        self.e.ins(format!("mov.{ty} {dst}, {src}"));
    }
}
