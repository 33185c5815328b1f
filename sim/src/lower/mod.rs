//! Lowering a checked kernel to the interpreter's program: one flat instruction list in which
//! every name is resolved to a frame slot, constants are folded, `static_for` is unrolled,
//! constant `if`s are decided, dynamic loops and `if`s become jumps, and `warp_specialize`
//! becomes a fork of worker agents plus a join.
//!
//! An agent is then just a program counter and a frame of values, which makes blocking and
//! resuming trivial (the continuation is the program counter) and keeps the per-step cost free
//! of string lookups. This module knows the IR and the static plans of [`Checked`]; it knows
//! nothing of memories or scheduling.

use crate::value::{Dims, Layout, SmemView, TmemView, Value};
use bwsim_isa::builtins::{MathFn, ReduceOp};
use bwsim_isa::consts::{is_const_call, ConstEnv, ConstValue};
use bwsim_isa::ir::*;
use bwsim_isa::launch::{ArgValue, LaunchPlan};
use bwsim_isa::typeck::{AllocKind, AtomicOp, AtomicScope, AtomicSem, Checked, Ty};
use bwsim_isa::types::{DType, OobFill, ScalarTy};
use bwsim_isa::value_types::TmaReduceOp;
use bwsim_isa::Code;
use bwsim_isa::{Diagnostic, Span};
use std::collections::HashMap;

mod expr;

/// A frame slot.
pub type Slot = u32;

/// Built-in functions evaluated at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    Min,
    Max,
    Cdiv,
    Select,
    Abs,
    Fma,
    /// Four-lane fp8 arithmetic (`add4`, ..., the result's element type):
    /// [`bwsim_isa::packed_arith::lane`] per element.
    Packed(bwsim_isa::packed_arith::PackedOp, DType),
    /// A math function on float elements (`exp2`, `sqrt`, ...).
    Math(MathFn),
}

/// One item of `x[...]`.
#[derive(Clone, Debug)]
pub enum IItem {
    Expr(CExpr),
    /// Constant bounds; `None` is the start (0) or the extent.
    Slice(Option<i64>, Option<i64>),
    NewAxis,
}

/// A lowered expression.
#[derive(Clone, Debug)]
pub enum CExpr {
    /// A folded constant (scalars only).
    Const(Value),
    Slot(Slot),
    ProgramId(u8),
    NumPrograms(u8),
    Unary(UnOp, Box<CExpr>),
    Binary(BinOp, Box<CExpr>, Box<CExpr>),
    Call(Builtin, Vec<CExpr>),
    Arange {
        start: i64,
        end: i64,
    },
    Full {
        shape: Vec<u32>,
        value: Box<CExpr>,
        dtype: DType,
    },
    Cast(Box<CExpr>, DType),
    ExpandDims(Box<CExpr>, u32),
    Broadcast(Box<CExpr>, Vec<u32>),
    Reshape(Box<CExpr>, Vec<u32>),
    Permute(Box<CExpr>, Vec<u32>),
    Split(Box<CExpr>),
    Join(Box<CExpr>, Box<CExpr>),
    /// An inclusive scan of one axis (`cumsum`, `cummax`, ...).
    /// An inclusive scan along an axis; `true`: from the end (`reverse=true`).
    Scan(ReduceOp, Box<CExpr>, u32, bool),
    /// A reduction of one axis (`sum`, `reduce_max`, `argmax`, ...).
    Reduce(ReduceOp, Box<CExpr>, u32),
    /// `x[items]` on a tile (`:`/`None`), a shared or tensor-memory view, or a barrier array.
    Index(Box<CExpr>, Vec<IItem>),
    /// `buf.shape[i]` of a tile or view.
    ShapeOf(Box<CExpr>, u32),
    /// `inline_asm`: the type checker's snippet run on every pack group of its arguments.
    InlineAsm(std::sync::Arc<bwsim_isa::inline_ptx::Program>, Vec<CExpr>),
}

/// Defines, for each `name = Variant {..} | ...;` row, a pattern macro `name!()` that matches
/// those variants of the enum `a::b::Enum`, and makes it usable in the crate. A dispatch that
/// names a class in an arm names each of its variants, and stays exhaustive: a new row of
/// [`OpKind`] is then a compile error (E0004) at every dispatch that must learn it
/// (`scripts/new-op-probe`).
macro_rules! pattern_classes {
    ($a:ident::$b:ident::$enum:ident: $($(#[$doc:meta])* $name:ident = $($variant:ident $fields:tt)|+;)*) => {
        $(
            $(#[$doc])*
            macro_rules! $name {
                () => {
                    $($a::$b::$enum::$variant $fields)|+
                };
            }
            pub(crate) use $name;
        )*
    };
}

pattern_classes! { bwsim_isa::ir::OpKind:
    /// The operations [`Lowerer::op`] never leaves in [`LOp::Op`]: those lowered to an
    /// [`LOp`] variant of their own (allocations, reinterpretations, TMA copies and their
    /// waits, MMAs and commits, wgmma and cp.async waits, atomics, `clc.try_cancel`) and
    /// `inline_asm` (an expression, [`CExpr::InlineAsm`]), named by a dispatch over
    /// [`LOp::Op`] in one arm.
    lowered_apart = InlineAsm { .. } | SmemAlloc { .. } | SmemReinterpret { .. }
        | TmemReinterpret { .. } | MbarAlloc { .. } | TmemAlloc { .. } | TmaLoad { .. }
        | TmaGather { .. } | TmaStore { .. } | TmaScatter { .. } | TmaStoreWait { .. }
        | ClcTryCancel { .. } | Tcgen05Mma { .. } | Tcgen05MmaScaled { .. }
        | Tcgen05Commit { .. } | WgmmaWait { .. } | CpAsyncWait { .. } | CpAsyncArrive { .. }
        | GlobalAtomic { .. } | TmaMakeDesc { .. } | TmaDescAcquire { .. };

    // The others, which [`Lowerer::op`] keeps in [`LOp::Op`], in the classes that the
    // simulator's dispatches treat alike.

    /// The mbarrier operations that arrive on or complete bytes on their barrier
    /// ([`LOp::signalled_barrier`]).
    mbar_signals = MbarExpect { .. } | MbarExpectTx { .. } | MbarCompleteTx { .. } | MbarArrive { .. };
    /// The other mbarrier operations: initialising, waiting on, invalidating a barrier.
    mbar_quiet = MbarInit { .. } | MbarWait { .. } | MbarTestWait { .. } | MbarInvalidate { .. };
    /// The fences (no operand).
    fences = FenceAsyncShared {} | FenceMbarrierInit {} | Tcgen05FenceBefore {} | Tcgen05FenceAfter {};
    /// The operations that move data between registers and shared, tensor and global memory
    /// (`wgmma` reads shared memory and accumulates in registers).
    data_moves = Tcgen05Cp { .. } | TmemLoad { .. } | TmemStore { .. } | Wgmma { .. }
        | SmemLoad { .. } | SmemStore { .. } | GlobalLoad { .. } | GlobalStore { .. } | CpAsync { .. }
        | SmemGather { .. } | SmemScatter { .. } | SmemAtomic { .. };
    /// The cluster barrier (`cluster.sync` and its split arrive and wait).
    cluster_barrier = ClusterSync {} | ClusterArrive { .. } | ClusterWait {};
    /// The rest of the operations kept in [`LOp::Op`], each a class of its own: freeing tensor
    /// memory, committing a cp.async group, decoding a `clc.try_cancel` response, `bar.sync`
    /// and `device.assert`.
    kept_rest = TmemDealloc { .. } | CpAsyncCommit {} | ClcQuery { .. } | BarSync {} | DeviceAssert { .. };
}

pattern_classes! { crate::lower::LOp:
    /// The lowered operations that make a view or a barrier and access nothing: allocations
    /// and reinterpretations.
    lop_views = SmemAlloc { .. } | SmemReinterpret { .. } | TmemReinterpret { .. } | MbarAlloc { .. }
        | TmemAlloc { .. };
    /// The lowered operations that wait for a count of pending asynchronous groups (TMA
    /// stores, wgmma, cp.async).
    lop_group_waits = TmaStoreWait { .. } | WgmmaWait { .. } | CpAsyncWait { .. };
}

/// A lowered operation. An operation whose operands are all values keeps the IR's shape
/// ([`LOp::Op`]: the same [`OpKind`] over lowered expressions); the others carry what the
/// checker and the static plan resolved (a planned view, a checked type, a TMA descriptor, a
/// constant count).
#[derive(Clone, Debug)]
pub enum LOp {
    /// An operation lowered operand for operand (`mbar.wait`, `global.load`, `wgmma`, ...).
    /// Operands that are not values (`tmem.load`'s and `smem.load`'s `layout`) are left out.
    /// Boxed operands keep this variant small: [`OpKind`] has room for its widest operation
    /// (eight operands), which never lowers here.
    Op(OpKind<Box<CExpr>>),
    SmemAlloc {
        view: SmemView,
    },
    /// `tmem.reinterpret`: the source view's columns with another type and TMEM layout.
    TmemReinterpret {
        src: CExpr,
        dtype: DType,
        shape: Dims,
        block: [u32; 2],
        col_stride: u32,
    },
    SmemReinterpret {
        src: CExpr,
        dtype: DType,
        shape: Dims,
        layout: Layout,
    },
    MbarAlloc {
        addr: u32,
        count: u32,
    },
    /// `view.col` is the planned column for scoped allocations; manual ones get theirs at run time.
    TmemAlloc {
        view: TmemView,
        manual: bool,
        cols: u32,
    },
    /// `tma.load` and `tma.gather` (`gather`): the descriptor parameter's index and coordinates.
    TmaLoad {
        desc: u32,
        coords: Vec<CExpr>,
        smem: CExpr,
        bar: CExpr,
        pred: Option<CExpr>,
        gather: bool,
        /// `multicast=MASK`: the CTAs of the cluster the box lands in.
        multicast: Option<CExpr>,
        /// `bar_cta=R`: the rank of the CTA whose barrier the bytes complete on.
        bar_cta: Option<CExpr>,
    },
    /// `tma.store` and `tma.scatter` (`scatter`); `reduce`: a reducing store
    /// (`cp.reduce.async.bulk.tensor`), each element combined into global memory.
    TmaStore {
        desc: u32,
        coords: Vec<CExpr>,
        smem: CExpr,
        pred: Option<CExpr>,
        scatter: bool,
        reduce: Option<TmaReduceOp>,
    },
    TmaStoreWait {
        pendings: u32,
        full: bool,
    },
    /// `clc.try_cancel`: the 16-byte response view and its barrier.
    ClcTryCancel {
        result: CExpr,
        bar: CExpr,
        multicast: bool,
    },
    /// `tcgen05.mma` and `tcgen05.mma_scaled` (`scales`: the A and B scale factors).
    Mma {
        a: CExpr,
        b: CExpr,
        acc: CExpr,
        scales: Option<Box<(CExpr, CExpr)>>,
        use_acc: Option<CExpr>,
        pred: Option<CExpr>,
        cta_group: u32,
    },
    /// `tcgen05.commit`.
    Commit {
        bar: CExpr,
        pred: Option<CExpr>,
        cta_group: u32,
        /// `multicast=MASK`: the CTAs whose barrier receives the arrival.
        multicast: Option<CExpr>,
    },
    WgmmaWait {
        pendings: u32,
    },
    CpAsyncWait {
        pendings: u32,
    },
    /// `cp.async.arrive`: the barrier and whether its threads' arrivals come without the
    /// pending-count increment (`noinc`).
    CpAsyncArrive {
        bar: CExpr,
        noinc: bool,
    },
    /// `global.atomic`, its operation resolved.
    GlobalAtomic(Box<AtomicAccess>),
    /// `tma.make_desc`: the CTA's tensor map of descriptor `desc`, built from values.
    MakeDesc(Box<MakeDesc>),
    /// `tma.desc_acquire`: the tensormap-proxy acquire of descriptor `desc`'s map.
    DescAcquire {
        desc: u32,
    },
}

/// A lowered `tma.make_desc`: the descriptor it builds (its index in [`Program::descs`],
/// whose entry holds what the type fixes) and the values that place it in global memory.
#[derive(Clone, Debug)]
pub struct MakeDesc {
    pub desc: u32,
    pub ptr: CExpr,
    /// Element offset of the base from `ptr`.
    pub offset: CExpr,
    /// Dimensions, outermost first.
    pub shape: Vec<CExpr>,
    /// Byte strides of the outer dimensions, outermost first.
    pub strides: Vec<CExpr>,
}

impl LOp {
    /// The barrier operand this operation arrives on or completes bytes on, now or when its
    /// asynchronous work ends (what `crate::waitfor` lists as a wait's possible signallers).
    pub fn signalled_barrier(&self) -> Option<&CExpr> {
        use OpKind as K;
        match self {
            LOp::Op(
                K::MbarExpect { bar, .. }
                | K::MbarExpectTx { bar, .. }
                | K::MbarCompleteTx { bar, .. }
                | K::MbarArrive { bar, .. },
            ) => Some(bar),
            LOp::Commit { bar, .. }
            | LOp::TmaLoad { bar, .. }
            | LOp::ClcTryCancel { bar, .. }
            | LOp::CpAsyncArrive { bar, .. } => Some(bar),
            lop_views!()
            | lop_group_waits!()
            | LOp::TmaStore { .. }
            | LOp::Mma { .. }
            | LOp::GlobalAtomic(_)
            | LOp::MakeDesc(_)
            | LOp::DescAcquire { .. }
            | LOp::Op(
                mbar_quiet!()
                | fences!()
                | data_moves!()
                | cluster_barrier!()
                | kept_rest!()
                | lowered_apart!(),
            ) => None,
        }
    }
}

/// A lowered `global.atomic`: the operation (resolved from its name) and its value operands;
/// `compare` is `cas`'s compare value.
#[derive(Clone, Debug)]
pub struct AtomicAccess {
    pub op: AtomicOp,
    pub ptr: CExpr,
    pub offsets: CExpr,
    pub value: CExpr,
    pub mask: Option<CExpr>,
    pub compare: Option<CExpr>,
    /// Its memory ordering (`acq_rel` and `gpu` unless `sem=`/`scope=` say otherwise).
    pub sem: AtomicSem,
    pub scope: AtomicScope,
}

/// A worker partition spawned by [`IKind::Fork`].
#[derive(Clone, Debug)]
pub struct WorkerSpec {
    pub name: String,
    pub warps: u32,
    /// Warp index (within the CTA) of the partition's first warp.
    pub first_warp: u32,
    pub entry: u32,
}

/// An instruction.
#[derive(Clone, Debug)]
pub enum IKind {
    /// Evaluate and bind (a tuple destructures into several slots).
    Eval {
        dsts: Vec<Slot>,
        expr: CExpr,
    },
    /// An operation; `name` is its `.tile` name.
    Op {
        op: LOp,
        name: &'static str,
        dsts: Vec<Slot>,
    },
    Jump(u32),
    BranchIfNot {
        cond: CExpr,
        target: u32,
    },
    /// Enter a dynamic `for`: evaluate the bounds once.
    LoopInit {
        ctr: Slot,
        end: Slot,
        step: Slot,
        start_e: CExpr,
        end_e: CExpr,
        step_e: CExpr,
    },
    /// Exit when the counter is past the end; else bind the loop variable.
    LoopTest {
        ctr: Slot,
        end: Slot,
        step: Slot,
        var: Slot,
        exit: u32,
    },
    /// Advance the counter and jump back to the test.
    LoopNext {
        ctr: Slot,
        step: Slot,
        head: u32,
    },
    /// Start the worker partitions of `warp_specialize`.
    Fork {
        workers: Vec<WorkerSpec>,
    },
    /// The default partition waits for every worker to finish.
    Join,
    /// A worker partition ends.
    EndPartition,
    /// The kernel body ends.
    Exit,
}

/// Whether a `for` loop whose counter is at `ctr` runs another iteration (`LoopTest`): the
/// counter has not reached `end` in the direction of `step` (a zero step never runs).
pub fn loop_continues(ctr: i64, end: i64, step: i64) -> bool {
    (step > 0 && ctr < end) || (step < 0 && ctr > end)
}

/// The counter after one iteration (`LoopNext`). Saturating: a counter that would pass i64's
/// range has passed the loop's end, so the loop stops instead of wrapping around.
pub fn loop_next(ctr: i64, step: i64) -> i64 {
    ctr.saturating_add(step)
}

#[derive(Clone, Debug)]
pub struct Instr {
    pub kind: IKind,
    pub span: Span,
}

/// A TMA descriptor parameter resolved against its launch tensor.
#[derive(Clone, Debug)]
pub struct DescInfo {
    pub name: String,
    pub dtype: DType,
    pub block: Vec<u32>,
    pub layout: Layout,
    pub oob: OobFill,
    /// Index of the global tensor.
    pub tensor: u32,
    /// The tensor's shape (row-major strides).
    pub shape: Vec<u64>,
    /// `elementStrides`, outermost first (all 1 by default).
    pub elem_strides: Vec<u32>,
    /// Element offset of the descriptor's base in the tensor (0 for a parameter).
    pub base: u64,
    /// Element strides of the dimensions, outermost first; empty: the tensor's row-major
    /// strides from `shape` (a parameter's).
    pub strides: Vec<u64>,
    /// Built on the device (`tma.make_desc`): `tensor`, `shape`, `base` and `strides` are the
    /// CTA's, set when it runs the `tma.make_desc`; this entry holds the rest.
    pub device: bool,
}

impl DescInfo {
    /// The box a copy moves (see [`bwsim_isa::typeck::DescTy::box_shape`]).
    pub fn box_shape(&self) -> Vec<u32> {
        bwsim_isa::typeck::traversed_box(&self.block, &self.elem_strides)
    }
    pub fn nbytes(&self) -> u64 {
        (self.box_shape().iter())
            .fold(1u64, |a, &d| a.saturating_mul(d as u64))
            .saturating_mul(self.dtype.bits() as u64)
            / 8
    }
    /// Element stride of dimension `k` (1 for the innermost: it has no effect).
    pub fn stride(&self, k: usize) -> u32 {
        if k + 1 == self.block.len() {
            1
        } else {
            self.elem_strides.get(k).copied().unwrap_or(1).max(1)
        }
    }
}

/// A scoped (non-manual) or manual TMEM allocation of the plan.
#[derive(Clone, Debug)]
pub struct TmemPlan {
    pub col: u32,
    pub cols: u32,
    pub manual: bool,
    pub span: Span,
}

/// Where a named allocation (`let NAME = smem.alloc / mbar.alloc / tmem.alloc ...`) lives,
/// for diagnostics that name buffers and barriers instead of addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocPlace {
    /// Shared-memory bytes `start..start + bytes`; a buffer array (rank 3 or more, Gluon's
    /// `[NUM_BUFFERS, ...]`) has `slot` bytes per leading index.
    Smem {
        start: u32,
        bytes: u32,
        slot: Option<u32>,
    },
    /// `count` mbarriers of 8 bytes from `addr`.
    Mbar { addr: u32, count: u32 },
    /// Tensor-memory columns of a scoped allocation (manual ones are placed at run time).
    Tmem { col: u32, cols: u32, manual: bool },
}

/// A named allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocName {
    pub name: String,
    pub place: AllocPlace,
}

/// The lowered kernel.
#[derive(Clone, Debug)]
pub struct Program {
    pub code: Vec<Instr>,
    pub nslots: u32,
    /// Slots holding parameters, set when a CTA starts.
    pub init: Vec<(Slot, Value)>,
    pub descs: Vec<DescInfo>,
    /// Warps of the default partition.
    pub num_warps: u32,
    /// Shared-memory bytes of the static plan.
    pub smem_bytes: u32,
    /// TMEM allocations of the static plan.
    pub tmem: Vec<TmemPlan>,
    /// Names of the allocations bound by `let`, in program order.
    /// Names of the allocations bound by `let`, in program order.
    pub allocs: Vec<AllocName>,
    /// Cluster shape of the launch (CTAs of a cluster are co-resident).
    pub cluster: [u32; 3],
    /// The messages of the `device.assert`s, by the index their lowered `msg` operand holds.
    pub assert_messages: Vec<String>,
}

impl Program {
    /// `name[i]` of the mbarrier at shared byte `addr` (or the address when unnamed).
    pub fn mbar_name(&self, addr: u32) -> String {
        for a in &self.allocs {
            if let AllocPlace::Mbar { addr: start, count } = a.place {
                if addr >= start && addr < start + 8 * count {
                    return if count == 1 {
                        format!("{}[0]", a.name)
                    } else {
                        format!("{}[{}]", a.name, (addr - start) / 8)
                    };
                }
            }
        }
        format!("the mbarrier at shared byte {addr}")
    }
    /// The names of the shared-memory buffers covering byte `addr` (`bufs[1]` for a slot of a
    /// buffer array), with the offset into each.
    pub fn smem_names(&self, addr: u32) -> Vec<(String, u32)> {
        self.allocs
            .iter()
            .filter_map(|a| match a.place {
                AllocPlace::Smem { start, bytes, slot } if addr >= start && addr - start < bytes => {
                    let off = addr - start;
                    Some(match slot.filter(|&s| s > 0) {
                        Some(s) => (format!("{}[{}]", a.name, off / s), off % s),
                        None => (a.name.clone(), off),
                    })
                }
                _ => None,
            })
            .collect()
    }
}

#[derive(Clone, Debug)]
enum Binding {
    Slot(Slot),
    Const(ConstValue),
    Desc(u32),
}

struct Lower<'a, 'k> {
    checked: &'a Checked<'k>,
    env: ConstEnv,
    scopes: Vec<HashMap<String, Binding>>,
    code: Vec<Instr>,
    nslots: u32,
    descs: Vec<DescInfo>,
    next_warp: u32,
    allocs: Vec<AllocName>,
    /// The iteration value of every `static_for` being unrolled, outermost first: where the
    /// checker's per-op facts are looked up ([`Checked::op_type`]).
    iters: Vec<i64>,
    /// The launch's cluster shape (`cluster_rank()`, `cluster_size()`).
    cluster: [u32; 3],
    /// `device.assert` messages ([`Program::assert_messages`]).
    assert_messages: Vec<String>,
}

fn unsupported(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error(
        Code::SimUnsupported,
        msg,
        span,
        "the simulator does not model this",
    )
}

/// An op the checker has no type for (lowering runs on checked kernels only).
fn unchecked(op: &Op) -> Diagnostic {
    Diagnostic::error(
        Code::SimUnsupported,
        format!("`{}` was not resolved by the type checker", op.kind.name()),
        op.span,
        "here",
    )
}

/// Lower a verified kernel for one launch.
pub fn lower(checked: &Checked, plan: &LaunchPlan) -> Result<Program, Vec<Diagnostic>> {
    let mut l = Lower {
        checked,
        env: checked.consts.clone(),
        scopes: vec![HashMap::new()],
        code: Vec::new(),
        nslots: 0,
        descs: Vec::new(),
        next_warp: checked.num_warps,
        allocs: Vec::new(),
        iters: Vec::new(),
        cluster: plan.cluster,
        assert_messages: Vec::new(),
    };
    let mut init = Vec::new();
    let mut diags = Vec::new();
    for p in &checked.params {
        let arg = plan
            .args
            .iter()
            .find(|(n, _)| n == &p.name)
            .map(|(_, a)| a.clone());
        let Some(arg) = arg else {
            diags.push(Diagnostic::error(
                Code::Launch,
                format!("parameter `{}` gets no argument", p.name),
                p.span,
                "here",
            ));
            continue;
        };
        match (&p.ty, arg) {
            (Ty::Desc(d), ArgValue::Tensor(t)) => {
                let shape = plan.tensors.get(t).map(|s| s.shape.clone()).unwrap_or_default();
                let idx = l.descs.len() as u32;
                l.descs.push(DescInfo {
                    name: p.name.clone(),
                    dtype: d.dtype,
                    block: d.block.clone(),
                    layout: Layout::from(&d.layout),
                    oob: d.oob,
                    tensor: t as u32,
                    shape,
                    elem_strides: d.elem_strides.clone(),
                    base: 0,
                    strides: Vec::new(),
                    device: false,
                });
                l.bind(&p.name, Binding::Desc(idx));
            }
            (Ty::Ptr(_), ArgValue::Tensor(t)) => {
                let s = l.slot();
                init.push((s, Value::Ptr(t as u32)));
                l.bind(&p.name, Binding::Slot(s));
            }
            (Ty::Scalar(st), a) => {
                let v = match (st, a) {
                    (ScalarTy::F32, ArgValue::Float(f)) => Value::F32(f as f32),
                    (ScalarTy::F32, ArgValue::Int(i)) => Value::F32(i as f32),
                    (ScalarTy::I1, ArgValue::Int(i)) => Value::Bool(i != 0),
                    (_, ArgValue::Int(i)) => Value::Int(i),
                    (_, ArgValue::Float(f)) => Value::Int(f as i64),
                    (_, ArgValue::Tensor(_)) => {
                        diags.push(Diagnostic::error(
                            Code::Launch,
                            format!("scalar `{}` bound to a tensor", p.name),
                            p.span,
                            "here",
                        ));
                        continue;
                    }
                };
                let s = l.slot();
                init.push((s, v));
                l.bind(&p.name, Binding::Slot(s));
            }
            _ => diags.push(Diagnostic::error(
                Code::Launch,
                format!("parameter `{}` has an argument of the wrong kind", p.name),
                p.span,
                "here",
            )),
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let k = checked.kernel;
    if let Err(d) = l.stmts(&k.body) {
        return Err(vec![d]);
    }
    l.emit(IKind::Exit, k.span);
    let tmem = checked
        .allocs
        .iter()
        .filter_map(|a| match &a.kind {
            AllocKind::Tmem(_) => Some(TmemPlan {
                col: a.offset,
                cols: a.size,
                manual: a.manual,
                span: a.span,
            }),
            _ => None,
        })
        .collect();
    Ok(Program {
        code: l.code,
        nslots: l.nslots,
        init,
        descs: l.descs,
        num_warps: checked.num_warps,
        smem_bytes: checked.smem_bytes,
        tmem,
        allocs: l.allocs,
        cluster: plan.cluster,
        assert_messages: l.assert_messages,
    })
}

impl<'a, 'k> Lower<'a, 'k> {
    /// Remember where `let name = <allocation>` lives (for diagnostics).
    fn name_alloc(&mut self, name: &str, op: &LOp) {
        let place = match op {
            LOp::SmemAlloc { view } => {
                let root = view.root.as_slice();
                let bytes = crate::views::buffer_bytes(view.dtype, root, view.layout);
                let slot = (root.len() >= 3 && root[0] > 0)
                    .then(|| u32::try_from(bytes / root[0] as u64).ok())
                    .flatten();
                AllocPlace::Smem {
                    start: view.base,
                    bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
                    slot,
                }
            }
            LOp::MbarAlloc { addr, count } => AllocPlace::Mbar {
                addr: *addr,
                count: *count,
            },
            LOp::TmemAlloc { view, manual, cols } => AllocPlace::Tmem {
                col: view.col,
                cols: *cols,
                manual: *manual,
            },
            _ => return,
        };
        self.allocs.push(AllocName {
            name: name.to_string(),
            place,
        });
    }
    fn slot(&mut self) -> Slot {
        let s = self.nslots;
        self.nslots += 1;
        s
    }
    fn bind(&mut self, name: &str, b: Binding) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), b);
        }
    }
    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }
    fn emit(&mut self, kind: IKind, span: Span) -> u32 {
        self.code.push(Instr { kind, span });
        (self.code.len() - 1) as u32
    }
    fn here(&self) -> u32 {
        self.code.len() as u32
    }
    fn patch(&mut self, at: u32, target: u32) {
        if let Some(i) = self.code.get_mut(at as usize) {
            match &mut i.kind {
                IKind::Jump(t) => *t = target,
                IKind::BranchIfNot { target: t, .. } => *t = target,
                IKind::LoopTest { exit, .. } => *exit = target,
                _ => {}
            }
        }
    }

    // ----- constants -----

    /// Whether every name in `e` is a compile-time constant here (scopes first, as typeck).
    fn names_const(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Bool(_) => true,
            ExprKind::Name(n) => match self.lookup(n) {
                Some(Binding::Const(_)) => true,
                Some(_) => false,
                None => self.env.get(n).is_some() || DType::from_name(n).is_some(),
            },
            ExprKind::Unary(_, a) => self.names_const(a),
            ExprKind::Binary(_, a, b) => self.names_const(a) && self.names_const(b),
            ExprKind::Call(f, args) => is_const_call(f, args, |a| self.names_const(a)),
            _ => false,
        }
    }

    fn const_of(&self, e: &Expr) -> Option<ConstValue> {
        if self.names_const(e) {
            self.env.eval(e).ok()
        } else {
            None
        }
    }

    fn const_int(&self, e: &Expr) -> Result<i64, Diagnostic> {
        match self.const_of(e) {
            Some(ConstValue::Int(v)) => Ok(v),
            Some(ConstValue::Bool(b)) => Ok(b as i64),
            _ => self.env.int(e),
        }
    }

    fn const_list(&self, e: &Expr) -> Result<Vec<u32>, Diagnostic> {
        match &e.kind {
            ExprKind::List(items) => items
                .iter()
                .map(|i| {
                    let v = self.const_int(i)?;
                    u32::try_from(v).map_err(|_| {
                        Diagnostic::error(
                            Code::ConstEval,
                            format!("expected a size, found {v}"),
                            i.span,
                            "here",
                        )
                    })
                })
                .collect(),
            _ => Err(Diagnostic::error(
                Code::EType,
                "expected a list of constants",
                e.span,
                "here",
            )),
        }
    }

    // ----- statements -----

    fn stmts(&mut self, b: &'k Block) -> Result<(), Diagnostic> {
        for s in &b.stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn scoped(&mut self, b: &'k Block) -> Result<(), Diagnostic> {
        self.scopes.push(HashMap::new());
        let r = self.stmts(b);
        self.scopes.pop();
        r
    }

    fn stmt(&mut self, s: &'k Stmt) -> Result<(), Diagnostic> {
        match &s.kind {
            StmtKind::Let {
                names,
                value:
                    Rhs::Op(
                        op @ Op {
                            kind: OpKind::TmaMakeDesc { .. },
                            ..
                        },
                    ),
            } if names.len() == 1 => {
                // A descriptor is bound by name, not held in a slot.
                let m = self.make_desc(op, &names[0].name)?;
                let desc = m.desc;
                let (op_name, span) = (op.kind.name(), op.span);
                self.emit(
                    IKind::Op {
                        op: LOp::MakeDesc(Box::new(m)),
                        name: op_name,
                        dsts: Vec::new(),
                    },
                    span,
                );
                self.bind(&names[0].name, Binding::Desc(desc));
            }
            StmtKind::Let { names, value } | StmtKind::Assign { names, value } => {
                let is_let = matches!(s.kind, StmtKind::Let { .. });
                let kind = self.rhs(value)?;
                let mut dsts = Vec::with_capacity(names.len());
                for n in names {
                    if is_let {
                        let sl = self.slot();
                        dsts.push(sl);
                    } else {
                        match self.lookup(&n.name) {
                            Some(Binding::Slot(sl)) => dsts.push(*sl),
                            _ => {
                                return Err(Diagnostic::error(
                                    Code::UndefinedName,
                                    format!("cannot assign to `{}`", n.name),
                                    n.span,
                                    "not a variable",
                                ))
                            }
                        }
                    }
                }
                let kind = match kind {
                    IKind::Eval { expr, .. } => IKind::Eval {
                        dsts: dsts.clone(),
                        expr,
                    },
                    IKind::Op { op, name, .. } => IKind::Op {
                        op,
                        name,
                        dsts: dsts.clone(),
                    },
                    other => other,
                };
                // An operation's instruction carries the operation's span (what traps quote).
                let span = match value {
                    Rhs::Op(op) => op.span,
                    Rhs::Expr(_) => s.span,
                };
                if let (true, [n], IKind::Op { op, .. }) = (is_let, names.as_slice(), &kind) {
                    self.name_alloc(&n.name, op);
                }
                self.emit(kind, span);
                if is_let {
                    for (n, sl) in names.iter().zip(dsts) {
                        self.bind(&n.name, Binding::Slot(sl));
                    }
                }
            }
            StmtKind::Op(
                op @ Op {
                    kind: OpKind::InlineAsm { args, .. },
                    ..
                },
            ) => {
                // Results nobody reads: still run (an undefined value is still an error).
                let expr = self.inline_asm(op, args)?;
                self.emit(
                    IKind::Eval {
                        dsts: Vec::new(),
                        expr,
                    },
                    op.span,
                );
            }
            StmtKind::Op(op) => {
                let (lop, name) = self.op(op)?;
                self.emit(
                    IKind::Op {
                        op: lop,
                        name,
                        dsts: Vec::new(),
                    },
                    op.span,
                );
            }
            StmtKind::For(lp) if lp.unrolled => {
                let a = self.const_int(&lp.start)?;
                let b = self.const_int(&lp.end)?;
                let st = match &lp.step {
                    Some(e) => self.const_int(e)?,
                    None => 1,
                };
                if st <= 0 {
                    return Err(Diagnostic::error(
                        Code::StaticFor,
                        "static_for step must be positive",
                        s.span,
                        "here",
                    ));
                }
                let prev = self.env.get(&lp.var.name);
                let mut i = a;
                while i < b {
                    self.env.bind(&lp.var.name, ConstValue::Int(i));
                    self.scopes.push(HashMap::new());
                    self.bind(&lp.var.name, Binding::Const(ConstValue::Int(i)));
                    self.iters.push(i);
                    let r = self.scoped(&lp.body);
                    self.iters.pop();
                    self.scopes.pop();
                    r?;
                    i = i.saturating_add(st);
                }
                match prev {
                    Some(v) => self.env.bind(&lp.var.name, v),
                    None => self.env.unbind(&lp.var.name),
                }
            }
            StmtKind::For(lp) => {
                let start_e = self.expr(&lp.start)?;
                let end_e = self.expr(&lp.end)?;
                let step_e = match &lp.step {
                    Some(e) => self.expr(e)?,
                    None => CExpr::Const(Value::Int(1)),
                };
                let (ctr, endsl, stepsl, varsl) = (self.slot(), self.slot(), self.slot(), self.slot());
                self.emit(
                    IKind::LoopInit {
                        ctr,
                        end: endsl,
                        step: stepsl,
                        start_e,
                        end_e,
                        step_e,
                    },
                    s.span,
                );
                let head = self.emit(
                    IKind::LoopTest {
                        ctr,
                        end: endsl,
                        step: stepsl,
                        var: varsl,
                        exit: 0,
                    },
                    s.span,
                );
                self.scopes.push(HashMap::new());
                self.bind(&lp.var.name, Binding::Slot(varsl));
                let r = self.scoped(&lp.body);
                self.scopes.pop();
                r?;
                self.emit(
                    IKind::LoopNext {
                        ctr,
                        step: stepsl,
                        head,
                    },
                    s.span,
                );
                let exit = self.here();
                self.patch(head, exit);
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                if self.names_const(cond) {
                    let c = self.env.bool(cond)?;
                    if c {
                        self.stmts(then_body)?;
                    } else if let Some(e) = else_body {
                        self.stmts(e)?;
                    }
                } else {
                    let c = self.expr(cond)?;
                    let br = self.emit(IKind::BranchIfNot { cond: c, target: 0 }, s.span);
                    self.scoped(then_body)?;
                    if let Some(e) = else_body {
                        let j = self.emit(IKind::Jump(0), s.span);
                        let else_at = self.here();
                        self.patch(br, else_at);
                        self.scoped(e)?;
                        let end = self.here();
                        self.patch(j, end);
                    } else {
                        let end = self.here();
                        self.patch(br, end);
                    }
                }
            }
            StmtKind::While { cond, body } => {
                // head: if !cond goto exit; body; goto head
                let head = self.here();
                let c = self.expr(cond)?;
                let br = self.emit(IKind::BranchIfNot { cond: c, target: 0 }, s.span);
                self.scoped(body)?;
                self.emit(IKind::Jump(head), s.span);
                let exit = self.here();
                self.patch(br, exit);
            }
            StmtKind::WarpSpecialize { default, workers } => {
                let mut specs = Vec::new();
                for w in workers {
                    let warps = u32::try_from(self.const_int(&w.warps)?).unwrap_or(1);
                    specs.push(WorkerSpec {
                        name: w.name.name.clone(),
                        warps,
                        first_warp: self.next_warp,
                        entry: 0,
                    });
                    self.next_warp += warps;
                }
                let fork = self.emit(IKind::Fork { workers: specs }, s.span);
                self.scoped(&default.body)?;
                self.emit(IKind::Join, default.span);
                let jump = self.emit(IKind::Jump(0), s.span);
                for (i, w) in workers.iter().enumerate() {
                    let entry = self.here();
                    if let Some(Instr {
                        kind: IKind::Fork { workers },
                        ..
                    }) = self.code.get_mut(fork as usize)
                    {
                        workers[i].entry = entry;
                    }
                    self.scoped(&w.body)?;
                    self.emit(IKind::EndPartition, w.span);
                }
                let after = self.here();
                self.patch(jump, after);
            }
            StmtKind::StaticAssert { .. } => {}
        }
        Ok(())
    }

    fn rhs(&mut self, r: &'k Rhs) -> Result<IKind, Diagnostic> {
        match r {
            Rhs::Expr(e) => Ok(IKind::Eval {
                dsts: Vec::new(),
                expr: self.expr(e)?,
            }),
            Rhs::Op(op) => {
                if let OpKind::InlineAsm { args, .. } = &op.kind {
                    return Ok(IKind::Eval {
                        dsts: Vec::new(),
                        expr: self.inline_asm(op, args)?,
                    });
                }
                let (lop, name) = self.op(op)?;
                Ok(IKind::Op {
                    op: lop,
                    name,
                    dsts: Vec::new(),
                })
            }
        }
    }

    /// `inline_asm` is pure elementwise math: an expression over its arguments.
    fn inline_asm(&mut self, op: &'k Op, args: &'k Expr) -> Result<CExpr, Diagnostic> {
        let prog = self.checked.inline_asm(op).cloned().ok_or_else(|| {
            Diagnostic::error(
                Code::SimUnsupported,
                "inline_asm was not type-checked",
                op.span,
                "here",
            )
        })?;
        let ExprKind::List(items) = &args.kind else {
            return Err(Diagnostic::error(
                Code::SimUnsupported,
                "inline_asm arguments are a list",
                args.span,
                "here",
            ));
        };
        let mut v = Vec::with_capacity(items.len());
        for a in items {
            v.push(self.expr(a)?);
        }
        Ok(CExpr::InlineAsm(prog, v))
    }

    fn op(&mut self, op: &'k Op) -> Result<(LOp, &'static str), Diagnostic> {
        use OpKind as K;
        let name = op.kind.name();
        let missing_alloc = || {
            Diagnostic::error(
                Code::SimUnsupported,
                "allocation missing from the static plan",
                op.span,
                "here",
            )
        };
        let lop = match &op.kind {
            K::InlineAsm { .. } => {
                return Err(Diagnostic::error(
                    Code::SimUnsupported,
                    "inline_asm is lowered as an expression",
                    op.span,
                    "here",
                ))
            }
            K::SmemAlloc { .. } => {
                let a = self.checked.alloc_of(op).ok_or_else(missing_alloc)?;
                let idx = self.checked.alloc_index(op).unwrap_or(0) as u32;
                let AllocKind::Smem { dtype, shape, layout } = &a.kind else {
                    return Err(missing_alloc());
                };
                let dims =
                    Dims::from_slice(shape).ok_or_else(|| unsupported(op.span, "buffer rank above 6"))?;
                LOp::SmemAlloc {
                    view: SmemView::whole(a.offset, *dtype, Layout::from(layout), dims, idx),
                }
            }
            K::SmemReinterpret { src, .. } => {
                let Some(Ty::Smem(t)) = self.checked.op_type(op, &self.iters) else {
                    return Err(unchecked(op));
                };
                LOp::SmemReinterpret {
                    src: self.expr(src)?,
                    dtype: t.dtype,
                    shape: self.dims(&t.shape, op.span)?,
                    layout: Layout::from(&t.layout),
                }
            }
            K::TmemReinterpret { src, .. } => {
                let Some(Ty::Tmem(t)) = self.checked.op_type(op, &self.iters) else {
                    return Err(unchecked(op));
                };
                LOp::TmemReinterpret {
                    src: self.expr(src)?,
                    dtype: t.dtype,
                    shape: self.dims(&t.shape, op.span)?,
                    block: t.block,
                    col_stride: t.col_stride,
                }
            }
            K::MbarAlloc { .. } => {
                let a = self.checked.alloc_of(op).ok_or_else(missing_alloc)?;
                let AllocKind::Mbar { count, .. } = a.kind else {
                    return Err(missing_alloc());
                };
                LOp::MbarAlloc {
                    addr: a.offset,
                    count,
                }
            }
            K::TmemAlloc { .. } => {
                let a = self.checked.alloc_of(op).ok_or_else(missing_alloc)?;
                let idx = self.checked.alloc_index(op).unwrap_or(0) as u32;
                let AllocKind::Tmem(t) = &a.kind else {
                    return Err(missing_alloc());
                };
                let dims =
                    Dims::from_slice(&t.shape).ok_or_else(|| unsupported(op.span, "buffer rank above 6"))?;
                LOp::TmemAlloc {
                    view: TmemView {
                        col: a.offset,
                        dtype: t.dtype,
                        block: t.block,
                        col_stride: t.col_stride,
                        scales: t.scales,
                        root: dims,
                        origin: Dims::zeros(dims.len()),
                        dropped: 0,
                        shape: dims,
                        alloc: idx,
                    },
                    manual: a.manual,
                    cols: a.size,
                }
            }
            K::TmaLoad {
                src, dst, bar, pred, ..
            }
            | K::TmaGather { src, dst, bar, pred } => {
                let (desc, coords) = self.desc_coords(src)?;
                // A gather reaches one CTA: neither multicast nor another CTA's barrier.
                let (multicast, bar_cta) = match &op.kind {
                    K::TmaLoad {
                        multicast, bar_cta, ..
                    } => (multicast, bar_cta),
                    _ => (&None, &None),
                };
                LOp::TmaLoad {
                    desc,
                    coords,
                    smem: self.expr(dst)?,
                    bar: self.expr(bar)?,
                    pred: self.opt(pred)?,
                    gather: matches!(op.kind, K::TmaGather { .. }),
                    multicast: self.opt(multicast)?,
                    bar_cta: self.opt(bar_cta)?,
                }
            }
            K::TmaStore { dst, src, pred, .. } | K::TmaScatter { dst, src, pred } => {
                let (desc, coords) = self.desc_coords(dst)?;
                let reduce = match &op.kind {
                    K::TmaStore { reduce: Some(r), .. } => {
                        let ExprKind::Name(n) = &r.kind else {
                            return Err(unsupported(r.span, "a TMA reduction is a name"));
                        };
                        Some(
                            TmaReduceOp::from_name(n)
                                .ok_or_else(|| unsupported(r.span, format!("unknown TMA reduction `{n}`")))?,
                        )
                    }
                    _ => None,
                };
                LOp::TmaStore {
                    desc,
                    coords,
                    smem: self.expr(src)?,
                    pred: self.opt(pred)?,
                    scatter: matches!(op.kind, K::TmaScatter { .. }),
                    reduce,
                }
            }
            K::TmaStoreWait { pendings, full } => {
                let n = u32::try_from(self.const_int(pendings)?).unwrap_or(0);
                let full = match full {
                    Some(f) => self.env.bool(f)?,
                    None => false,
                };
                LOp::TmaStoreWait { pendings: n, full }
            }
            K::ClcTryCancel {
                result,
                bar,
                multicast,
            } => LOp::ClcTryCancel {
                result: self.expr(result)?,
                bar: self.expr(bar)?,
                multicast: match multicast {
                    Some(m) => self.env.bool(m)?,
                    None => false,
                },
            },
            K::Tcgen05Mma { .. } | K::Tcgen05MmaScaled { .. } => {
                let m = op.kind.tcgen05_mma().expect("an MMA has MMA operands");
                let scales = match m.scales {
                    Some((sa, sb)) => Some(Box::new((self.expr(sa)?, self.expr(sb)?))),
                    None => None,
                };
                LOp::Mma {
                    a: self.expr(m.a)?,
                    b: self.expr(m.b)?,
                    acc: self.expr(m.acc)?,
                    scales,
                    use_acc: self.opt(m.use_acc)?,
                    pred: self.opt(m.pred)?,
                    cta_group: self.cta_group(m.cta_group)?,
                }
            }
            K::Tcgen05Commit {
                bar,
                pred,
                cta_group,
                multicast,
            } => LOp::Commit {
                bar: self.expr(bar)?,
                pred: self.opt(pred)?,
                cta_group: self.cta_group(cta_group)?,
                multicast: self.opt(multicast)?,
            },
            K::WgmmaWait { pendings } => LOp::WgmmaWait {
                pendings: u32::try_from(self.const_int(pendings)?).unwrap_or(0),
            },
            K::CpAsyncWait { pendings } => LOp::CpAsyncWait {
                pendings: u32::try_from(self.const_int(pendings)?).unwrap_or(0),
            },
            K::TmaMakeDesc { .. } => LOp::MakeDesc(Box::new(self.make_desc(op, "_")?)),
            K::TmaDescAcquire { desc } => LOp::DescAcquire {
                desc: self.desc_of(desc)?,
            },
            K::CpAsyncArrive { bar, noinc } => LOp::CpAsyncArrive {
                bar: self.expr(bar)?,
                noinc: match noinc {
                    Some(f) => self.env.bool(f)?,
                    None => false,
                },
            },
            K::GlobalAtomic {
                ptr,
                offsets,
                value,
                mask,
                compare,
                ..
            } => {
                let (op, sem, scope) = atomic_kinds(&op.kind)?;
                LOp::GlobalAtomic(Box::new(AtomicAccess {
                    op,
                    ptr: self.expr(ptr)?,
                    offsets: self.expr(offsets)?,
                    value: self.expr(value)?,
                    mask: self.opt(mask)?,
                    compare: self.opt(compare)?,
                    sem,
                    scope,
                }))
            }
            // These operations' operands are values, lowered one for one. A layout operand is
            // the checker's business and has no run-time value. The others are
            // `lowered_apart!()`; each is named above.
            kind @ (mbar_signals!()
            | mbar_quiet!()
            | fences!()
            | data_moves!()
            | cluster_barrier!()
            | kept_rest!()) => {
                let mut messages = std::mem::take(&mut self.assert_messages);
                let lowered = kind.try_map(|operand, e| match operand {
                    "layout" => Ok(None),
                    // `device.assert`'s message: its index in `Program::assert_messages`.
                    "msg" => {
                        let ExprKind::Str(m) = &e.kind else {
                            return Err(unsupported(e.span, "an assertion's message is a string"));
                        };
                        messages.push(m.clone());
                        Ok(Some(Box::new(CExpr::Const(Value::Int(
                            messages.len() as i64 - 1,
                        )))))
                    }
                    // `smem.atomic`'s operation: its index in `AtomicOp::ALL`.
                    "op" => {
                        let i = match &e.kind {
                            ExprKind::Name(n) => AtomicOp::ALL.iter().position(|o| o.name() == n),
                            _ => None,
                        };
                        let i = i.ok_or_else(|| unsupported(e.span, "an unknown atomic operation"))?;
                        Ok(Some(Box::new(CExpr::Const(Value::Int(i as i64)))))
                    }
                    _ => self.expr(e).map(|e| Some(Box::new(e))),
                });
                self.assert_messages = messages;
                let lowered = lowered?;
                LOp::Op(lowered.ok_or_else(|| unsupported(op.span, "an operand that is not a value"))?)
            }
        };
        Ok((lop, name))
    }

    /// A shape the checker resolved, as [`Dims`].
    fn dims(&self, shape: &[u32], span: Span) -> Result<Dims, Diagnostic> {
        Dims::from_slice(shape).ok_or_else(|| unsupported(span, "rank above 6"))
    }
}

/// The operation, memory ordering and scope a `global.atomic` names (`acq_rel` and `gpu`
/// unless `sem=` and `scope=` say otherwise).
fn atomic_kinds(k: &OpKind) -> Result<(AtomicOp, AtomicSem, AtomicScope), Diagnostic> {
    let OpKind::GlobalAtomic {
        op: kind, sem, scope, ..
    } = k
    else {
        return Err(unsupported(Span::DUMMY, "not a global atomic"));
    };
    let ExprKind::Name(n) = &kind.kind else {
        return Err(unsupported(kind.span, "an atomic operation is a name"));
    };
    let op = AtomicOp::from_name(n)
        .ok_or_else(|| unsupported(kind.span, format!("unknown atomic operation `{n}`")))?;
    fn word(e: &Option<Expr>) -> Result<Option<&str>, Diagnostic> {
        match e.as_ref().map(|e| (&e.kind, e.span)) {
            Some((ExprKind::Name(n), _)) => Ok(Some(n.as_str())),
            Some((_, sp)) => Err(unsupported(sp, "an atomic's `sem=` and `scope=` are names")),
            None => Ok(None),
        }
    }
    let sem = match word(sem)? {
        Some(n) => AtomicSem::from_name(n)
            .ok_or_else(|| unsupported(kind.span, format!("unknown atomic ordering `{n}`")))?,
        None => AtomicSem::AcqRel,
    };
    let scope = match word(scope)? {
        Some(n) => AtomicScope::from_name(n)
            .ok_or_else(|| unsupported(kind.span, format!("unknown atomic scope `{n}`")))?,
        None => AtomicScope::Gpu,
    };
    Ok((op, sem, scope))
}

#[cfg(test)]
mod tests {
    use super::{loop_continues, loop_next};

    #[test]
    fn loop_stepping_stops_at_the_end_of_the_range() {
        // for i in 0..3 step 2: 0, 2, then 4 is past 3.
        assert!(loop_continues(0, 3, 2) && loop_continues(2, 3, 2));
        assert!(!loop_continues(loop_next(2, 2), 3, 2));
        // Counting down, and a zero step that never runs.
        assert!(loop_continues(3, 0, -1) && !loop_continues(0, 0, -1));
        assert!(!loop_continues(0, 10, 0));
        // Near i64::MAX the counter saturates instead of wrapping to a negative value that
        // would run the loop again.
        let c = loop_next(i64::MAX - 1, 5);
        assert_eq!(c, i64::MAX);
        assert!(!loop_continues(c, i64::MAX, 5));
    }
}
