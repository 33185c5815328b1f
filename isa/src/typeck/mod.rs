//! Type checking: the type of every value, resolved layouts and shapes, and the static
//! shared-memory and tensor-memory plans.
//!
//! [`check`] walks a kernel with its constants bound ([`ConstEnv`]) and returns a
//! [`Checked`] kernel plus diagnostics. Constant `if`s are decided here (only the taken branch
//! is checked, so `if SM == 90 { wgmma } else { tcgen05 }` is legal on both targets) and
//! `static_for` bodies are checked once per iteration. The simulator and the backends read the
//! resolved parameter types and the allocation plans from [`Checked`]; the hardware rules of
//! docs/semantics.md#static-rules that go beyond types live in [`crate::rules`] (per operation,
//! called from here) and [`crate::verify`] (kernel-wide).
//!
//! This module holds the walk over statements and the plans (the types themselves are
//! [`crate::value_types`], re-exported here); `expr` types expressions (built-in functions included)
//! and `ops` types operations.
//!
//! Every table of [`Checked`] is a vector indexed by node id ([`crate::ids`]): [`check`]
//! refuses a kernel whose ids are not its numbering, so a fact is only ever found from the
//! node it was recorded for (or that node in a clone of the kernel).

use crate::consts::{ConstEnv, ConstValue};
use crate::diag::{Code, Diagnostic};
use crate::ir::*;
use crate::span::Span;
use crate::types::*;
use std::collections::HashMap;

mod asm;
mod expr;
mod ops;

pub use crate::value_types::*;

/// What kind of allocation a plan entry is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocKind {
    Smem {
        dtype: DType,
        shape: Vec<u32>,
        layout: SmemLayout,
    },
    Mbar {
        count: u32,
        misalign: u32,
    },
    Tmem(TmemTy),
}

/// One allocation of the static plan.
#[derive(Clone, Debug)]
pub struct Alloc {
    pub kind: AllocKind,
    /// Byte offset in shared memory (smem, mbar) or first column (tmem; 0 for manual).
    pub offset: u32,
    /// Bytes (smem, mbar) or columns (tmem).
    pub size: u32,
    pub align: u32,
    /// `tmem.alloc ..., manual=true`: allocated when the op runs, freed by `tmem.dealloc`.
    pub manual: bool,
    pub span: Span,
    /// Live range in statement preorder numbers (inclusive), for reuse of shared memory.
    pub live: (usize, usize),
}

/// Resolved kernel parameter.
#[derive(Clone, Debug)]
pub struct ParamInfo {
    pub name: String,
    pub ty: Ty,
    pub span: Span,
}

/// A kernel with its constants bound and every static fact resolved.
#[derive(Debug)]
pub struct Checked<'k> {
    pub kernel: &'k Kernel,
    pub target: Target,
    pub consts: ConstEnv,
    pub num_warps: u32,
    pub params: Vec<ParamInfo>,
    pub layouts: HashMap<String, TileLayout>,
    /// Shared-memory, mbarrier and tensor-memory allocations, in order of appearance.
    pub allocs: Vec<Alloc>,
    /// Which allocation each allocating op makes, indexed by op id.
    alloc_of: Vec<Option<usize>>,
    /// Bytes of shared memory the plan uses.
    pub smem_bytes: u32,
    /// TMEM columns the non-manual allocations use (before rounding to a power of two).
    pub tmem_cols: u32,
    /// Types of `let`-bound names, indexed by the id of the binding `Ident`.
    binding_types: Vec<Option<Ty>>,
    /// Worker partitions: (name, warps, regs).
    pub workers: Vec<(String, u32, u32)>,
    /// The checked snippet of each `inline_asm` op (indexed by op id), parsed once.
    inline_asm: Vec<Option<std::sync::Arc<crate::inline_ptx::Program>>>,
    /// The type each value-producing op resolved to (its written type and layout as values),
    /// indexed by op id, then keyed by the iteration of every `static_for` around it.
    op_types: Vec<Option<HashMap<Vec<i64>, Ty>>>,
    /// The register layout each layout operand (`arange`'s, `layout=`, ...) resolved to,
    /// indexed by the operand expression's id, then keyed like `op_types`.
    tile_layouts: Vec<Option<HashMap<Vec<i64>, TileLayout>>>,
}

impl<'k> Checked<'k> {
    /// The allocation an allocating op (`smem.alloc`, `mbar.alloc`, `tmem.alloc`) makes.
    pub fn alloc_of(&self, op: &Op) -> Option<&Alloc> {
        self.alloc_index(op).and_then(|i| self.allocs.get(i))
    }
    /// Index of the allocation an allocating op makes.
    pub fn alloc_index(&self, op: &Op) -> Option<usize> {
        *at(&self.alloc_of, op.id)?
    }
    /// The checked snippet of an `inline_asm` op.
    pub fn inline_asm(&self, op: &Op) -> Option<&std::sync::Arc<crate::inline_ptx::Program>> {
        at(&self.inline_asm, op.id)?.as_ref()
    }
    /// The type an op produces, its written type and layout resolved: `iters` holds the
    /// iteration value of every `static_for` around the op, outermost first (a `static_for`
    /// body is checked once per iteration, and its types may depend on the iteration).
    pub fn op_type(&self, op: &Op, iters: &[i64]) -> Option<&Ty> {
        at(&self.op_types, op.id)?.as_ref()?.get(iters)
    }
    /// The register layout a layout operand resolved to (`iters` as for [`Checked::op_type`]).
    pub fn layout_of(&self, e: &Expr, iters: &[i64]) -> Option<&TileLayout> {
        at(&self.tile_layouts, e.id)?.as_ref()?.get(iters)
    }
    /// The type of a name bound by `let` (pass the `Ident` inside the kernel).
    pub fn binding_type(&self, ident: &Ident) -> Option<&Ty> {
        at(&self.binding_types, ident.id)?.as_ref()
    }
    pub fn param(&self, name: &str) -> Option<&ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }
    /// Total warps of the CTA (default partition plus workers).
    pub fn total_warps(&self) -> u32 {
        (self.workers.iter()).fold(self.num_warps, |a, w| a.saturating_add(w.1))
    }
}

/// The entry of a table indexed by node id (`None` for an id out of the table).
fn at<T, N>(table: &[T], id: Id<N>) -> Option<&T> {
    table.get(id.index()?)
}

/// The entry of a table indexed by node id, for writing.
fn at_mut<T, N>(table: &mut [T], id: Id<N>) -> Option<&mut T> {
    table.get_mut(id.index()?)
}

/// Shared memory a CTA may use on sm_90/sm_100 (227 KiB; CUDA programming guide,
/// compute capability 9.0 and 10.0 tables).
pub const SMEM_CAPACITY: u32 = 232_448;
/// Tensor-memory columns per CTA (docs/semantics.md#tensor-memory).
pub const TMEM_COLUMNS: u32 = 512;

/// Check a kernel. Returns the resolved kernel (even when there are errors, as far as it got)
/// and every diagnostic found.
///
/// # Panics
/// When the kernel's node ids are not its numbering ([`Kernel::check_ids`]): a kernel built or
/// edited in code without [`Kernel::number_nodes`], which would otherwise be given facts
/// recorded for other nodes. Every producer of kernels (the parser, the builder, the TTGIR
/// importer) numbers them, so no text input reaches this.
pub fn check<'k>(kernel: &'k Kernel, consts: ConstEnv) -> (Checked<'k>, Vec<Diagnostic>) {
    let counts = match kernel.check_ids() {
        Ok(c) => c,
        Err(e) => panic!("typeck::check: {e}"),
    };
    let mut cx = Cx::new(kernel, consts, counts);
    cx.run();
    let Cx { checked, diags, .. } = cx;
    (checked, diags)
}

// ---------------------------------------------------------------------------------------

struct Scope {
    names: HashMap<String, (Ty, Span)>,
    /// Entering a worker partition: names from outside may not be tiles.
    worker_boundary: bool,
    /// Names bound by a statement that failed to check (declared with a placeholder type):
    /// errors in a statement that uses one are consequences of the first error, not reported.
    poisoned: std::collections::HashSet<String>,
}

impl Scope {
    /// An empty scope; `worker_boundary` when it opens a worker partition.
    fn new(worker_boundary: bool) -> Scope {
        Scope {
            names: HashMap::new(),
            worker_boundary,
            poisoned: Default::default(),
        }
    }
}

struct Cx<'k> {
    checked: Checked<'k>,
    diags: Vec<Diagnostic>,
    scopes: Vec<Scope>,
    /// (preorder, end) of every statement, indexed by statement id.
    pre: Vec<(usize, usize)>,
    /// Stack of (block depth → containing statement) for liveness.
    stmt_stack: Vec<StmtId>,
    /// For each alloc: depth of its defining block.
    alloc_depth: Vec<usize>,
    /// Which partition we are in (None: outside warp_specialize).
    in_worker: bool,
    /// Statement-stack depths of the constant `if`s whose taken branch is being checked.
    transparent: Vec<usize>,
    seen: std::collections::HashSet<Diagnostic>,
    /// The statement being checked used a poisoned name: its errors are not reported.
    poison_hit: bool,
    /// Product of the trip counts of the `static_for`s being unrolled around the current
    /// statement (1 outside any).
    unroll: u64,
    /// The iteration value of every `static_for` being unrolled, outermost first: with an
    /// op's id, what keys the facts recorded for later stages.
    iters: Vec<i64>,
}

/// Most iterations one `static_for` unrolls.
pub const MAX_STATIC_FOR_TRIPS: u64 = 1024;
/// Most copies of a statement nested `static_for`s unroll in all (a bound on the work of
/// checking, simulating and lowering the kernel).
pub const MAX_UNROLLED: u64 = 1 << 16;

fn e_type(span: Span, msg: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::error(Code::EType, msg, span, label)
}

/// The type error at `e` that it is not `what` (`"expected {what}"`).
fn expected(e: &Expr, what: &str) -> Diagnostic {
    e_type(e.span, format!("expected {what}"), "here")
}

/// The most elements a register tile may have: Triton's and Gluon's `TRITON_MAX_TENSOR_NUMEL`
/// (2^20), which `validate_block_shape` (python/triton/language/_utils.py) enforces on every
/// block shape and `arange` on its range.
pub const MAX_TILE_NUMEL: u64 = 1 << 20;

/// A `tile-size` error when `shape` holds more than [`MAX_TILE_NUMEL`] elements.
fn check_tile_size(shape: &[u32], span: Span) -> Result<(), Diagnostic> {
    let n = shape.iter().fold(1u64, |a, &d| a.saturating_mul(d as u64));
    if n <= MAX_TILE_NUMEL {
        return Ok(());
    }
    Err(Diagnostic::error(
        Code::TileSize,
        format!("register tile {shape:?} has {n} elements, more than {MAX_TILE_NUMEL}"),
        span,
        "too large for a register tile",
    )
    .with_note("Triton and Gluon cap every tensor at 2^20 elements (TRITON_MAX_TENSOR_NUMEL)")
    .with_help("split the work into smaller tiles"))
}

impl<'k> Cx<'k> {
    fn new(kernel: &'k Kernel, consts: ConstEnv, counts: crate::ids::NodeCounts) -> Cx<'k> {
        let target = consts.target;
        Cx {
            checked: Checked {
                kernel,
                target,
                consts,
                num_warps: 4,
                params: Vec::new(),
                layouts: HashMap::new(),
                allocs: Vec::new(),
                alloc_of: vec![None; counts.ops],
                smem_bytes: 0,
                tmem_cols: 0,
                binding_types: vec![None; counts.idents],
                workers: Vec::new(),
                inline_asm: vec![None; counts.ops],
                op_types: vec![None; counts.ops],
                tile_layouts: vec![None; counts.exprs],
            },
            diags: Vec::new(),
            scopes: vec![Scope {
                names: HashMap::new(),
                worker_boundary: false,
                poisoned: Default::default(),
            }],
            pre: vec![(0, 0); counts.stmts],
            stmt_stack: Vec::new(),
            alloc_depth: Vec::new(),
            in_worker: false,
            transparent: Vec::new(),
            seen: Default::default(),
            poison_hit: false,
            unroll: 1,
            iters: Vec::new(),
        }
    }

    fn emit(&mut self, d: Diagnostic) {
        if self.poison_hit && d.is_error() {
            return;
        }
        if self.seen.insert(d.clone()) {
            self.diags.push(d);
        }
    }

    fn run(&mut self) {
        let k = self.checked.kernel;
        if !k.targets.contains(&self.checked.target) {
            let supported: Vec<&str> = k.targets.iter().map(|t| t.name()).collect();
            self.emit(
                Diagnostic::error(
                    Code::ArchTarget,
                    format!(
                        "kernel `{}` does not support target {}",
                        k.name.name, self.checked.target
                    ),
                    k.name.span,
                    "declared here",
                )
                .with_help(format!("its `target` line lists: {}", supported.join(", "))),
            );
        }
        match self.checked.consts.int(&k.num_warps) {
            Ok(w) if (1..=32).contains(&w) => self.checked.num_warps = w as u32,
            Ok(w) => self.emit(
                Diagnostic::error(
                    Code::NumWarps,
                    format!("num_warps must be in 1..=32, found {w}"),
                    k.num_warps.span,
                    "here",
                )
                .with_help("Gluon kernels use 1, 2, 4 or 8 warps in the default partition"),
            ),
            Err(d) => self.emit(d),
        }
        for l in &k.layouts {
            match self.tile_layout(&l.value) {
                Ok(t) => {
                    self.checked.layouts.insert(l.name.name.clone(), t);
                }
                Err(d) => self.emit(d),
            }
        }
        for p in &k.params {
            match self.param_ty(&p.ty) {
                Ok(ty) => {
                    self.declare(&p.name, ty.clone());
                    self.checked.params.push(ParamInfo {
                        name: p.name.name.clone(),
                        ty,
                        span: p.span,
                    });
                }
                Err(d) => self.emit(d),
            }
        }
        let mut counter = 0;
        number_block(&k.body, &mut counter, &mut self.pre);
        self.block(&k.body);
        self.plan();
    }

    // ----- scopes -----

    fn declare(&mut self, id: &Ident, ty: Ty) {
        // Cannot fail: the kernel's scope is pushed first and never popped.
        let scope = self.scopes.last_mut().expect("scope stack is never empty");
        if let Some((_, prev)) = scope.names.get(&id.name) {
            let prev = *prev;
            self.emit(
                Diagnostic::error(
                    Code::DuplicateName,
                    format!("`{}` is already defined in this block", id.name),
                    id.span,
                    "redefined here",
                )
                .with_label(prev, "first defined here")
                .with_help("use `NAME = ...` to assign a new value, or pick another name"),
            );
        }
        if let Some(slot) = at_mut(&mut self.checked.binding_types, id.id) {
            *slot = Some(ty.clone());
        }
        // Cannot fail: the kernel's scope is pushed first and never popped.
        let scope = self.scopes.last_mut().expect("scope stack is never empty");
        scope.poisoned.remove(&id.name);
        scope.names.insert(id.name.clone(), (ty, id.span));
    }

    fn lookup(&mut self, name: &str, span: Span) -> Option<Ty> {
        let mut crossed_worker = false;
        for s in self.scopes.iter().rev() {
            if let Some((ty, def)) = s.names.get(name) {
                if s.poisoned.contains(name) {
                    self.poison_hit = true;
                }
                if crossed_worker && matches!(ty, Ty::Tile(_)) {
                    let d = Diagnostic::error(
                        Code::WsTileCapture,
                        format!("worker partition uses register tile `{name}` defined outside it"),
                        span,
                        "tile captured by a worker partition",
                    )
                    .with_label(*def, "defined here, in another partition's registers")
                    .with_help("only the default partition may take tensors; pass data to workers through shared memory");
                    let ty = ty.clone();
                    self.emit(d);
                    return Some(ty);
                }
                return Some(ty.clone());
            }
            if s.worker_boundary {
                crossed_worker = true;
            }
        }
        None
    }

    fn use_allocs(&mut self, ty: &Ty) {
        let alloc = match ty {
            Ty::Smem(s) => Some(s.alloc),
            Ty::Mbar { alloc, .. } => Some(*alloc),
            Ty::Tuple(ts) => {
                for t in ts.clone() {
                    self.use_allocs(&t);
                }
                None
            }
            _ => None,
        };
        if let Some(a) = alloc {
            let depth = self.alloc_depth.get(a).copied().unwrap_or(0);
            if let Some(&stmt) = self.stmt_stack.get(depth) {
                if let Some(&(_, end)) = at(&self.pre, stmt) {
                    let live = &mut self.checked.allocs[a].live;
                    live.1 = live.1.max(end);
                }
            }
        }
    }

    // ----- statements -----

    fn block(&mut self, b: &'k Block) {
        self.scopes.push(Scope::new(false));
        for s in &b.stmts {
            self.stmt(s);
        }
        self.scopes.pop();
    }

    /// Type `e`, a loop bound or a condition: an integer scalar, else the error `rule` (which
    /// says so) with the type found.
    fn int_scalar(&mut self, e: &'k Expr, rule: &str) {
        if let Some(t) = self.expr(e) {
            if !t.is_int_scalar() {
                self.emit(e_type(e.span, format!("{rule}, found {}", t.describe()), "here"));
            }
        }
    }

    fn transparent_block(&mut self, b: &'k Block) {
        self.transparent.push(self.stmt_stack.len().saturating_sub(1));
        for s in &b.stmts {
            self.stmt(s);
        }
        self.transparent.pop();
    }

    fn stmt(&mut self, s: &'k Stmt) {
        self.poison_hit = false;
        self.stmt_stack.push(s.id);
        match &s.kind {
            StmtKind::Let { names, value } => {
                let ty = self.rhs(value, s.span);
                if let Some(ty) = ty {
                    self.bind_names(names, ty, s.span, true);
                } else {
                    for n in names {
                        // Declare with a placeholder, poisoned so that later uses do not cascade.
                        self.declare(n, Ty::Scalar(ScalarTy::I32));
                        if let Some(scope) = self.scopes.last_mut() {
                            scope.poisoned.insert(n.name.clone());
                        }
                    }
                }
            }
            StmtKind::Assign { names, value } => {
                if let Some(ty) = self.rhs(value, s.span) {
                    self.bind_names(names, ty, s.span, false);
                }
            }
            StmtKind::Op(op) => {
                if let Some(ty) = self.op(op) {
                    if !matches!(op.kind, OpKind::MbarTestWait { .. }) {
                        let _ = ty;
                    }
                }
            }
            StmtKind::For(lp) => {
                if lp.unrolled {
                    let bounds = (|| -> Result<(i64, i64, i64), Diagnostic> {
                        let a = self.checked.consts.int(&lp.start)?;
                        let b = self.checked.consts.int(&lp.end)?;
                        let st = match &lp.step {
                            Some(e) => self.checked.consts.int(e)?,
                            None => 1,
                        };
                        Ok((a, b, st))
                    })();
                    match bounds {
                        Ok((_, _, st)) if st <= 0 => self.emit(Diagnostic::error(
                            Code::StaticFor,
                            "static_for step must be positive",
                            lp.step.as_ref().map(|e| e.span).unwrap_or(s.span),
                            "here",
                        )),
                        Ok((a, b, st)) => {
                            let trips = if b > a {
                                (b as i128 - a as i128 + st as i128 - 1) / st as i128
                            } else {
                                0
                            };
                            let trips = u64::try_from(trips).unwrap_or(u64::MAX);
                            let total = self.unroll.saturating_mul(trips);
                            if trips > MAX_STATIC_FOR_TRIPS {
                                self.emit(
                                    Diagnostic::error(
                                        Code::StaticFor,
                                        format!(
                                            "static_for unrolls {trips} iterations (limit {MAX_STATIC_FOR_TRIPS})"
                                        ),
                                        s.span,
                                        "here",
                                    )
                                    .with_help("use `for` for long loops"),
                                );
                            } else if total > MAX_UNROLLED {
                                self.emit(
                                    Diagnostic::error(
                                        Code::StaticFor,
                                        format!(
                                            "nested static_for loops unroll {total} copies of their body (limit {MAX_UNROLLED})"
                                        ),
                                        s.span,
                                        "the innermost that passes the limit",
                                    )
                                    .with_help("use `for` for one of the loops"),
                                );
                            } else {
                                let outer_unroll = std::mem::replace(&mut self.unroll, total.max(1));
                                let prev = self.checked.consts.get(&lp.var.name);
                                let mut i = a;
                                while i < b {
                                    self.checked.consts.bind(&lp.var.name, ConstValue::Int(i));
                                    self.scopes.push(Scope::new(false));
                                    self.declare(&lp.var, Ty::Scalar(ScalarTy::I32));
                                    self.iters.push(i);
                                    self.block(&lp.body);
                                    self.iters.pop();
                                    self.scopes.pop();
                                    match i.checked_add(st) {
                                        Some(n) => i = n,
                                        None => break,
                                    }
                                }
                                self.unroll = outer_unroll;
                                match prev {
                                    Some(v) => self.checked.consts.bind(&lp.var.name, v),
                                    None => self.checked.consts.unbind(&lp.var.name),
                                }
                            }
                        }
                        Err(d) => self.emit(
                            Diagnostic::error(
                                Code::StaticFor,
                                "static_for bounds must be compile-time constants",
                                d.primary.span,
                                d.primary.message,
                            )
                            .with_note(d.message)
                            .with_help("use `for` for a loop with a dynamic trip count"),
                        ),
                    }
                } else {
                    for e in [Some(&lp.start), Some(&lp.end), lp.step.as_ref()]
                        .into_iter()
                        .flatten()
                    {
                        self.int_scalar(e, "loop bound must be an integer scalar");
                    }
                    self.scopes.push(Scope::new(false));
                    self.declare(&lp.var, Ty::Scalar(ScalarTy::I32));
                    self.block(&lp.body);
                    self.scopes.pop();
                }
            }
            StmtKind::If {
                cond,
                then_body,
                else_body,
            } => {
                if self.checked.consts.is_const(cond) {
                    // A constant `if` is decided now and opens no scope: names bound in the taken
                    // branch stay visible after it (Python semantics, as in Gluon).
                    match self.checked.consts.bool(cond) {
                        Ok(true) => self.transparent_block(then_body),
                        Ok(false) => {
                            if let Some(e) = else_body {
                                self.transparent_block(e)
                            }
                        }
                        Err(d) => self.emit(d),
                    }
                } else {
                    self.int_scalar(cond, "`if` condition must be a scalar");
                    self.block(then_body);
                    if let Some(e) = else_body {
                        self.block(e);
                    }
                }
            }
            StmtKind::While { cond, body } => {
                self.int_scalar(cond, "`while` condition must be a scalar");
                self.block(body);
            }
            StmtKind::WarpSpecialize { default, workers } => {
                if self.in_worker || !self.checked.workers.is_empty() {
                    self.emit(Diagnostic::error(
                        Code::WsNested,
                        "only one warp_specialize region per kernel, at the top level",
                        s.span,
                        "second region",
                    ));
                }
                if let Some(r) = &default.regs {
                    self.check_regs(r);
                }
                self.block(&default.body);
                for w in workers {
                    let warps = match self.checked.consts.int(&w.warps) {
                        Ok(n) if (1..=32).contains(&n) => n as u32,
                        Ok(n) => {
                            self.emit(Diagnostic::error(
                                Code::WsWarps,
                                format!("a worker partition needs 1..=32 warps, found {n}"),
                                w.warps.span,
                                "here",
                            ));
                            1
                        }
                        Err(d) => {
                            self.emit(d);
                            1
                        }
                    };
                    let regs = self.check_regs(&w.regs);
                    self.checked.workers.push((w.name.name.clone(), warps, regs));
                    self.scopes.push(Scope::new(true));
                    let was = self.in_worker;
                    self.in_worker = true;
                    self.block(&w.body);
                    self.in_worker = was;
                    self.scopes.pop();
                }
                let total = self.checked.total_warps();
                if total > 32 {
                    self.emit(Diagnostic::error(
                        Code::WsWarps,
                        format!(
                            "{total} warps in all partitions exceed the 32 warps (1024 threads) of a CTA"
                        ),
                        s.span,
                        "here",
                    ));
                }
            }
            StmtKind::StaticAssert { cond, message } => match self.checked.consts.bool(cond) {
                Ok(true) => {}
                Ok(false) => self.emit(Diagnostic::error(
                    Code::StaticAssert,
                    format!("static assertion failed: {message}"),
                    cond.span,
                    "this is false",
                )),
                Err(d) => self.emit(d),
            },
        }
        self.stmt_stack.pop();
    }

    fn check_regs(&mut self, e: &Expr) -> u32 {
        match self.checked.consts.int(e) {
            Ok(r) if (24..=256).contains(&r) && r % 8 == 0 => r as u32,
            Ok(r) => {
                self.emit(
                    Diagnostic::error(
                        Code::WsRegs,
                        format!("register budget {r} is not a multiple of 8 in [24, 256]"),
                        e.span,
                        "invalid budget",
                    )
                    .with_note("setmaxnreg takes multiples of 8 between 24 and 256 (Gluon tutorial 08)")
                    .with_help(format!("use {}", ((r.clamp(24, 256) + 7) / 8) * 8)),
                );
                24
            }
            Err(d) => {
                self.emit(d);
                24
            }
        }
    }

    fn bind_names(&mut self, names: &'k [Ident], ty: Ty, span: Span, is_let: bool) {
        let tys = if names.len() == 1 {
            vec![ty]
        } else {
            match ty {
                Ty::Tuple(ts) if ts.len() == names.len() => ts,
                other => {
                    self.emit(e_type(
                        span,
                        format!("{} names bound to {}", names.len(), other.describe()),
                        "tuple arity mismatch",
                    ));
                    return;
                }
            }
        };
        for (n, t) in names.iter().zip(tys) {
            if is_let {
                self.declare(n, t);
            } else {
                match self.lookup(&n.name, n.span) {
                    None => self.emit(
                        Diagnostic::error(
                            Code::UndefinedName,
                            format!("cannot assign to undefined name `{}`", n.name),
                            n.span,
                            "not defined",
                        )
                        .with_help(format!("declare it first with `let {} = ...`", n.name)),
                    ),
                    Some(old) if !assign_compatible(&old, &t) => self.emit(e_type(
                        n.span,
                        format!(
                            "`{}` has type {} but is assigned {}",
                            n.name,
                            old.describe(),
                            t.describe()
                        ),
                        "type changes here",
                    )),
                    Some(_) => {
                        if let Some(slot) = at_mut(&mut self.checked.binding_types, n.id) {
                            *slot = Some(t);
                        }
                    }
                }
            }
        }
    }

    fn rhs(&mut self, r: &'k Rhs, span: Span) -> Option<Ty> {
        match r {
            Rhs::Expr(e) => self.expr(e),
            Rhs::Op(op) => {
                let t = self.op(op);
                if t.is_none() && !self.diags.iter().any(|d| d.is_error()) {
                    self.emit(e_type(
                        span,
                        format!("`{}` produces no value", op.kind.name()),
                        "nothing to bind",
                    ));
                }
                t
            }
        }
    }

    // ----- parameter types, layouts, shaped types -----

    fn param_ty(&mut self, e: &Expr) -> Result<Ty, Diagnostic> {
        if let Some(n) = e.as_name() {
            if let Some(s) = ScalarTy::from_name(n) {
                return Ok(Ty::Scalar(s));
            }
        }
        match &e.kind {
            ExprKind::Call(f, args) if f == "ptr" && args.len() == 1 => {
                Ok(Ty::Ptr(self.checked.consts.dtype(&args[0].value)?))
            }
            ExprKind::Call(f, args) if f == "tensor_desc" => {
                let pos: Vec<&Expr> = args
                    .iter()
                    .filter(|a| a.key.is_none())
                    .map(|a| &a.value)
                    .collect();
                if pos.len() != 2 {
                    return Err(e_type(
                        e.span,
                        "tensor_desc takes a block type and a shared layout",
                        "here",
                    )
                    .with_help("e.g. `tensor_desc(f16[128, 64], nvmma(128))`"));
                }
                let (dtype, block) = self.shaped(pos[0])?;
                let layout = self.smem_layout(pos[1])?;
                let mut oob = OobFill::Zero;
                let mut elem_strides = vec![1; block.len()];
                for a in args.iter().filter(|a| a.key.is_some()) {
                    let key = a.key.as_ref().map(|k| k.name.as_str()).unwrap_or("");
                    match (key, a.value.as_name()) {
                        ("oob", Some("zero")) => oob = OobFill::Zero,
                        ("oob", Some("nan")) => oob = OobFill::Nan,
                        ("elem_strides", _) => {
                            let ExprKind::List(items) = &a.value.kind else {
                                return Err(e_type(
                                    a.value.span,
                                    "elem_strides is a list: `elem_strides=[1, 2]`",
                                    "here",
                                ));
                            };
                            if items.len() != block.len() {
                                return Err(e_type(
                                    a.value.span,
                                    format!(
                                        "{} element strides for a block of rank {}",
                                        items.len(),
                                        block.len()
                                    ),
                                    "one stride per dimension",
                                ));
                            }
                            elem_strides = items
                                .iter()
                                .map(|i| {
                                    self.checked
                                        .consts
                                        .int(i)
                                        .map(|v| v.clamp(0, u32::MAX as i64) as u32)
                                })
                                .collect::<Result<_, _>>()?;
                        }
                        _ => {
                            return Err(e_type(
                                a.value.span,
                                format!("unknown tensor_desc option `{key}`"),
                                "here",
                            )
                            .with_help("the options are `oob=zero`, `oob=nan` and `elem_strides=[...]`"))
                        }
                    }
                }
                Ok(Ty::Desc(DescTy {
                    dtype,
                    block,
                    layout,
                    oob,
                    elem_strides,
                }))
            }
            _ => Err(e_type(e.span, "unknown parameter type", "here")
                .with_help("parameter types: i32, i64, f32, ptr(DTYPE), tensor_desc(DTYPE[dims], LAYOUT)")),
        }
    }

    /// `DTYPE[d0, d1, ...]`.
    fn shaped(&mut self, e: &Expr) -> Result<(DType, Vec<u32>), Diagnostic> {
        match &e.kind {
            ExprKind::Index(base, items) => {
                let dtype = self.checked.consts.dtype(base)?;
                let mut dims = Vec::new();
                for it in items {
                    match it {
                        IndexItem::Expr(d) => {
                            let v = self.checked.consts.dim(d)?;
                            if v == 0 {
                                return Err(e_type(d.span, "dimensions must be positive", "zero extent"));
                            }
                            dims.push(v)
                        }
                        _ => {
                            return Err(e_type(
                                e.span,
                                "a shaped type lists its dimensions: `f16[128, 64]`",
                                "here",
                            ))
                        }
                    }
                }
                // Six: a ring of 5-D TMA blocks (tutorial 11's packed-block scale factors).
                if dims.is_empty() || dims.len() > 6 {
                    return Err(e_type(
                        e.span,
                        format!("expected 1 to 6 dimensions, found {}", dims.len()),
                        "here",
                    ));
                }
                Ok((dtype, dims))
            }
            _ => Err(expected(e, "a shaped type like `f16[128, 64]`")),
        }
    }

    fn smem_layout(&mut self, e: &Expr) -> Result<SmemLayout, Diagnostic> {
        match &e.kind {
            ExprKind::Name(n) if n == "plain" => Ok(SmemLayout::Plain),
            ExprKind::Call(f, args) if f == "nvmma" => {
                let mut swizzle = None;
                let mut transposed = false;
                let mut fp4_padded = false;
                for a in args {
                    match a.key.as_ref().map(|k| k.name.as_str()) {
                        None => {
                            let b = self.checked.consts.int(&a.value)?;
                            swizzle = Some(Swizzle::from_bytes(b).ok_or_else(|| {
                                Diagnostic::error(Code::SmemLayout, format!("swizzle must be 0, 32, 64 or 128 bytes, found {b}"), a.value.span, "here")
                            })?);
                        }
                        Some("transposed") => transposed = self.checked.consts.bool(&a.value)?,
                        Some("fp4_padded") => fp4_padded = self.checked.consts.bool(&a.value)?,
                        Some(k) => return Err(e_type(a.value.span, format!("unknown nvmma option `{k}`"), "here")),
                    }
                }
                let swizzle = swizzle.ok_or_else(|| e_type(e.span, "nvmma needs a swizzle width", "here").with_help("e.g. `nvmma(128)`"))?;
                if fp4_padded && swizzle != Swizzle::B128 {
                    return Err(Diagnostic::error(Code::SmemLayout, "fp4_padded layouts are 128-byte swizzled", e.span, "here")
                        .with_help("write `nvmma(128, fp4_padded=true)`, as Gluon's NVMMASharedLayout requires"));
                }
                Ok(SmemLayout::Nvmma {
                    swizzle,
                    transposed,
                    fp4_padded,
                })
            }
            ExprKind::Call(f, args) if f == "swizzled" && args.len() == 3 => Ok(SmemLayout::Swizzled {
                vec: self.checked.consts.dim(&args[0].value)?,
                per_phase: self.checked.consts.dim(&args[1].value)?,
                max_phase: self.checked.consts.dim(&args[2].value)?,
            }),
            ExprKind::Call(f, args) if f == "linear" => {
                let l = SmemLayout::linear_from_args(args).ok_or_else(|| {
                    Diagnostic::error(Code::SmemLayout, "linear(...) takes one list of offset bases", e.span, "here")
                        .with_help("e.g. `linear([[0, 1], [1, 0]])`: offset bit i holds the coordinates of entry i")
                })?;
                if let SmemLayout::Linear { bases } = &l {
                    LinearSmem::new(bases).map_err(|m| Diagnostic::error(Code::SmemLayout, m.to_string(), e.span, "this linear layout"))?;
                }
                Ok(l)
            }
            _ => Err(Diagnostic::error(Code::SmemLayout, "unknown shared-memory layout", e.span, "here")
                .with_help("shared layouts: nvmma(SWIZZLE[, transposed=true][, fp4_padded=true]), plain, swizzled(VEC, PER_PHASE, MAX_PHASE), linear([[..], ..])")),
        }
    }

    fn int_list(&mut self, e: &Expr) -> Result<Vec<u32>, Diagnostic> {
        match &e.kind {
            ExprKind::List(items) => items.iter().map(|i| self.checked.consts.dim(i)).collect(),
            _ => Err(expected(e, "a list of constants like `[1, 32]`")),
        }
    }

    fn tile_layout(&mut self, e: &Expr) -> Result<TileLayout, Diagnostic> {
        match &e.kind {
            ExprKind::Name(n) if n == "tmem32x32b" => Ok(TileLayout::Tmem32x32b),
            ExprKind::Name(n) => self.checked.layouts.get(n).cloned().ok_or_else(|| {
                Diagnostic::error(Code::UndefinedName, format!("unknown layout `{n}`"), e.span, "not a layout")
                    .with_help("declare it in the header: `layout NAME = blocked(...)`")
            }),
            ExprKind::Call(f, args) if f == "blocked" && args.len() == 4 => {
                let spt = self.int_list(&args[0].value)?;
                let tpw = self.int_list(&args[1].value)?;
                let wpc = self.int_list(&args[2].value)?;
                let order = self.int_list(&args[3].value)?;
                let r = spt.len();
                if tpw.len() != r || wpc.len() != r || order.len() != r {
                    return Err(Diagnostic::error(Code::Layout, "blocked layout lists must all have the tile's rank", e.span, "rank mismatch"));
                }
                let lanes: u32 = tpw.iter().fold(1u32, |a, &b| a.saturating_mul(b));
                if lanes != 32 {
                    return Err(Diagnostic::error(Code::Layout, format!("threads_per_warp must multiply to 32, found {lanes}"), args[1].value.span, "here"));
                }
                Ok(TileLayout::Blocked { spt, tpw, wpc, order })
            }
            ExprKind::Call(f, args) if f == "slice" && args.len() == 2 => {
                let dim = self.checked.consts.dim(&args[0].value)?;
                let parent = self.tile_layout(&args[1].value)?;
                if parent.rank().is_some_and(|r| dim as usize >= r) {
                    return Err(Diagnostic::error(Code::Layout, "slice dimension out of range of its parent", args[0].value.span, "here"));
                }
                Ok(TileLayout::Slice { dim, parent: Box::new(parent) })
            }
            ExprKind::Call(f, args) if f == "wgmma" => {
                let mut warps = [4, 1];
                let mut n = 0;
                for a in args {
                    match a.key.as_ref().map(|k| k.name.as_str()) {
                        Some("warps") => {
                            let l = self.int_list(&a.value)?;
                            if l.len() != 2 {
                                return Err(Diagnostic::error(Code::Layout, "wgmma warps is [W0, W1]", a.value.span, "here"));
                            }
                            warps = [l[0], l[1]];
                        }
                        Some("n") => n = self.checked.consts.dim(&a.value)?,
                        _ => return Err(Diagnostic::error(Code::Layout, "wgmma layout takes warps=[W0, W1], n=N", a.value.span, "here")),
                    }
                }
                Ok(TileLayout::Wgmma { warps, n })
            }
            _ => Err(Diagnostic::error(Code::Layout, "unknown register layout", e.span, "here")
                .with_help("layouts: blocked(spt, tpw, wpc, order), slice(DIM, PARENT), tmem32x32b, wgmma(warps=[4, 1], n=N), or a declared name")),
        }
    }

    // ----- planning -----

    fn plan(&mut self) {
        // Shared memory: first fit among allocations whose live ranges intersect.
        let mut placed: Vec<usize> = Vec::new();
        let mut top = 0u32;
        let n = self.checked.allocs.len();
        for i in 0..n {
            let a = &self.checked.allocs[i];
            if matches!(a.kind, AllocKind::Tmem(_)) {
                continue;
            }
            let (size, align, live) = (a.size, a.align, a.live);
            let mut busy: Vec<(u32, u32)> = placed
                .iter()
                .map(|&j| &self.checked.allocs[j])
                .filter(|b| b.live.0 <= live.1 && live.0 <= b.live.1)
                .map(|b| (b.offset, b.offset.saturating_add(b.size)))
                .collect();
            busy.sort();
            let mut off = 0u32;
            for (s, e) in busy {
                if off.saturating_add(size) <= s {
                    break;
                }
                off = off.max(e.div_ceil(align).saturating_mul(align));
            }
            off = off.div_ceil(align).saturating_mul(align);
            let misalign = if let AllocKind::Mbar { misalign, .. } = a.kind {
                misalign
            } else {
                0
            };
            self.checked.allocs[i].offset = off.saturating_add(misalign);
            top = top.max(off.saturating_add(size));
            placed.push(i);
        }
        self.checked.smem_bytes = top;
        if top > SMEM_CAPACITY {
            let message =
                format!("kernel needs {top} bytes of shared memory; a CTA may use at most {SMEM_CAPACITY}");
            let d = self.capacity_error(
                Code::SmemCapacity,
                message,
                "too much shared memory",
                false,
                |a| format!("{} bytes at offset {}", a.size, a.offset),
            );
            self.emit(d.with_help(
                "use fewer pipeline buffers, smaller blocks, or scope buffers so their lifetimes do not overlap",
            ));
        }
        // Tensor memory: non-manual allocations laid out one after another.
        let mut col = 0u32;
        for a in self.checked.allocs.iter_mut() {
            if let AllocKind::Tmem(_) = a.kind {
                if !a.manual {
                    a.offset = col;
                    col = col.saturating_add(a.size);
                }
            }
        }
        self.checked.tmem_cols = col;
        if col > TMEM_COLUMNS {
            let message = format!("kernel needs {col} TMEM columns; a CTA has {TMEM_COLUMNS}");
            let d = self.capacity_error(Code::TmemCapacity, message, "too much tensor memory", true, |a| {
                format!("{} columns", a.size)
            });
            self.emit(d.with_note(
                "TMEM is 128 lanes x 512 columns of 32 bits per CTA (docs/semantics.md#tensor-memory-and-tcgen05)",
            ));
        }
    }

    /// The error `code` at the kernel's name that its allocations exceed a capacity, with a
    /// label at each allocation of tensor memory (`tmem`) or of shared memory (not `tmem`),
    /// worded by `label`.
    fn capacity_error(
        &self,
        code: Code,
        message: String,
        what: &str,
        tmem: bool,
        label: impl Fn(&Alloc) -> String,
    ) -> Diagnostic {
        let mut d = Diagnostic::error(code, message, self.checked.kernel.name.span, what);
        for a in self.checked.allocs.iter() {
            if matches!(a.kind, AllocKind::Tmem(_)) == tmem {
                d = d.with_label(a.span, label(a));
            }
        }
        d
    }
}

/// Bytes a shared buffer occupies ([`crate::placement::buffer_bytes`]), saturated to `u32`.
pub fn smem_bytes(dtype: DType, shape: &[u32], layout: &SmemLayout) -> u32 {
    let layout = crate::placement::Layout::from(layout);
    u32::try_from(crate::placement::buffer_bytes(dtype, shape, layout)).unwrap_or(u32::MAX)
}

/// The type of a value that is one of two scalars (`select`, `min`, `max`, and the operand
/// type of a binary operation): `f32` over `i64` over `i32` over `i1`. The one rule; the PTX
/// backend computes in this type (holding an `i1` in a 32-bit register where it does
/// arithmetic on it).
pub fn promote(a: ScalarTy, b: ScalarTy) -> ScalarTy {
    use ScalarTy::*;
    match (a, b) {
        (F32, _) | (_, F32) => F32,
        (I64, _) | (_, I64) => I64,
        (I32, _) | (_, I32) => I32,
        _ => I1,
    }
}

/// The type of the scalar binary operation `a op b`: `i1` for a comparison, `&&` and `||`;
/// otherwise the operands' [`promote`]d type, except that arithmetic (`+ - * / % << >>`) on two
/// `i1` is `i32`: booleans count as 0 and 1, so `true + true` is 2 (as the simulator and the PTX
/// backend compute it), which an `i1` cannot hold. The bitwise operators keep `i1`.
pub fn scalar_binary(op: crate::ir::BinOp, a: ScalarTy, b: ScalarTy) -> ScalarTy {
    use crate::ir::BinOp::*;
    match op {
        _ if op.is_comparison() => ScalarTy::I1,
        And | Or => ScalarTy::I1,
        BitAnd | BitOr | BitXor => promote(a, b),
        _ => match promote(a, b) {
            ScalarTy::I1 => ScalarTy::I32,
            t => t,
        },
    }
}

/// Numpy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let y = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return None;
        };
    }
    Some(out)
}

fn assign_compatible(old: &Ty, new: &Ty) -> bool {
    match (old, new) {
        (Ty::Scalar(a), Ty::Scalar(b)) => a == b || (a.dtype().is_int() && b.dtype().is_int()),
        (Ty::Tile(a), Ty::Tile(b)) => a.dtype == b.dtype && a.shape == b.shape,
        (Ty::Smem(a), Ty::Smem(b)) => a.dtype == b.dtype && a.shape == b.shape,
        (Ty::Tmem(a), Ty::Tmem(b)) => a.dtype == b.dtype && a.shape == b.shape,
        (Ty::Mbar { count: a, .. }, Ty::Mbar { count: b, .. }) => a == b,
        _ => old == new,
    }
}

fn number_block(b: &Block, counter: &mut usize, pre: &mut [(usize, usize)]) {
    for s in &b.stmts {
        let me = *counter;
        *counter += 1;
        for inner in s.blocks() {
            number_block(inner, counter, pre);
        }
        if let Some(slot) = at_mut(pre, s.id) {
            *slot = (me, *counter - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transposed_reinterpret_of_a_buffer_fits_its_bytes() {
        let src = "kernel k {\n  target sm_100a\n  num_warps 4\n  let buf = smem.alloc f32[2, 16, 32], nvmma(128)\n  let t = smem.reinterpret buf[1], f32[32, 16], nvmma(128, transposed=true)\n  let u = smem.reinterpret buf, f32[2, 32, 16], nvmma(128, transposed=true)\n  let w = smem.reinterpret buf, f32[3, 32, 16], nvmma(128, transposed=true)\n}\n";
        let k = crate::parser::parse(src).expect("parses");
        let consts = ConstEnv::new(&k, crate::Target::Sm100a, &[]).expect("constants");
        let (_, d) = check(&k, consts);
        // Only the reinterpret of three matrices (6144 bytes) exceeds the 4096-byte buffer.
        let codes: Vec<_> = d
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code.as_str())
            .collect();
        assert_eq!(codes, ["smem-reinterpret"], "{d:?}");
        assert!(d[0].message.contains("6144"), "{}", d[0].message);
    }

    fn errors(src: &str) -> Vec<Diagnostic> {
        let k = crate::parser::parse(src).expect("parses");
        let consts = ConstEnv::new(&k, crate::Target::Sm100a, &[]).expect("constants");
        let (_, d) = check(&k, consts);
        d.into_iter().filter(|d| d.is_error()).collect()
    }

    #[test]
    fn linear_layouts_cover_their_shape_one_to_one() {
        let head =
            "kernel k {\n  target sm_100a\n  num_warps 4\n  let buf = smem.alloc i8[1, 2, 256], plain\n";
        // Tutorial 11's packed-block view: 512 bytes as [128, 4].
        let ok = format!("{head}  let v = smem.reinterpret buf[0], i8[128, 4], linear([[0, 1], [0, 2], [32, 0], [64, 0], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0]])\n}}\n");
        assert!(errors(&ok).is_empty(), "{:?}", errors(&ok));
        // Bases for [128, 4] on a [64, 8] view.
        let shape = ok.replace("i8[128, 4]", "i8[64, 8]");
        let d = errors(&shape);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("[128, 4]"), "{}", d[0].message);
        // Two offset bits onto one coordinate bit.
        let dup = ok.replace("[0, 2], [32, 0]", "[0, 1], [32, 0]");
        let d = errors(&dup);
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].message.contains("not one to one"), "{}", d[0].message);
    }

    /// A kernel with allocations, a `static_for` whose op types depend on the iteration, a
    /// layout operand and `let`-bound names.
    const NUMBERED: &str = "kernel k {\n  target sm_100a\n  num_warps 4\n  layout row = blocked([1, 1], [1, 32], [1, 4], [1, 0])\n  let bufs = smem.alloc f32[2, 32, 64], nvmma(128)\n  let bars = mbar.alloc 2\n  static_for i in 0..2 {\n    let v = smem.reinterpret bufs[i], f32[32 * (i + 1), 32 / (i + 1)], plain\n    let x = smem.load bufs[i], layout=row\n  }\n}\n";

    /// Every operation of a kernel, in source order.
    fn ops(k: &Kernel) -> Vec<&Op> {
        let mut out = Vec::new();
        k.walk_stmts(&mut |s| match &s.kind {
            StmtKind::Let {
                value: Rhs::Op(op), ..
            }
            | StmtKind::Assign {
                value: Rhs::Op(op), ..
            }
            | StmtKind::Op(op) => out.push(op),
            _ => {}
        });
        out
    }

    fn checked(k: &Kernel) -> (Checked<'_>, Vec<Diagnostic>) {
        let consts = ConstEnv::new(k, crate::Target::Sm100a, &[]).expect("constants");
        check(k, consts)
    }

    /// Arithmetic on two booleans counts them as 0 and 1 (the simulator's `true + true` is 2,
    /// the PTX backend's an `s32` add), so its type is `i32`; the bitwise operators, `select`,
    /// `min` and `max` keep `i1`, and comparisons are `i1`.
    #[test]
    fn scalar_binary_types() {
        let text = "kernel k {\n  target sm_100a\n  num_warps 4\n  let p = program_id(0) < 1\n  let a = p + p\n  let b = p << p\n  let c = p ^ p\n  let d = select(p, p, p)\n  let e = max(p, p)\n  let f = p < p\n  let g = a + 1.5\n}\n";
        let k = crate::parser::parse(text).expect("parses");
        let (c, d) = checked(&k);
        assert!(d.is_empty(), "{d:?}");
        let mut types = Vec::new();
        for s in &k.body.stmts {
            if let StmtKind::Let { names, .. } = &s.kind {
                types.push(c.binding_type(&names[0]).map(Ty::describe));
            }
        }
        let want = ["i1", "i32", "i32", "i1", "i1", "i1", "i1", "f32"];
        assert_eq!(
            types,
            want.map(|t| Some(Ty::Scalar(ScalarTy::from_name(t).expect("a type")).describe()))
        );
        use crate::ir::BinOp;
        use ScalarTy::*;
        for (op, a, b, want) in [
            (BinOp::Add, I1, I1, I32),
            (BinOp::Sub, I1, I32, I32),
            (BinOp::Mul, I1, I64, I64),
            (BinOp::Div, I32, F32, F32),
            (BinOp::BitAnd, I1, I1, I1),
            (BinOp::BitOr, I1, I32, I32),
            (BinOp::Lt, F32, F32, I1),
            (BinOp::And, I32, I32, I1),
        ] {
            assert_eq!(scalar_binary(op, a, b), want, "{op:?} {a:?} {b:?}");
        }
    }

    #[test]
    fn a_cloned_kernel_checks_to_the_same_facts() {
        let k = crate::parser::parse(NUMBERED).expect("parses");
        let copy = k.clone();
        let (a, da) = checked(&k);
        let (b, db) = checked(&copy);
        assert!(da.is_empty() && db.is_empty(), "{da:?} {db:?}");
        let (ka, kb) = (ops(&k), ops(&copy));
        assert_eq!(ka.len(), 4);
        for iters in [&[][..], &[0], &[1]] {
            for (x, y) in ka.iter().zip(&kb) {
                // The clone's nodes find the facts the original's found, in both checks.
                assert_eq!(a.op_type(x, iters), b.op_type(y, iters));
                assert_eq!(a.op_type(y, iters), a.op_type(x, iters));
                assert_eq!(a.alloc_index(x), b.alloc_index(y));
            }
        }
        // The reinterpret's type depends on the iteration; the allocations have one each.
        let t0 = a.op_type(ka[2], &[0]).map(Ty::describe);
        let t1 = a.op_type(ka[2], &[1]).map(Ty::describe);
        assert!(t0.is_some() && t1.is_some() && t0 != t1, "{t0:?} {t1:?}");
        assert_eq!((a.alloc_index(ka[0]), a.alloc_index(ka[1])), (Some(0), Some(1)));
        let StmtKind::Let { names, .. } = &copy.body.stmts[0].kind else {
            panic!("the first statement is a let")
        };
        assert!(matches!(a.binding_type(&names[0]), Some(Ty::Smem(_))));
        let OpKind::SmemLoad { layout: Some(l), .. } = &kb[3].kind else {
            panic!("the last op is smem.load with a layout")
        };
        assert!(a.layout_of(l, &[1]).is_some());
        assert_eq!(a.layout_of(l, &[1]), b.layout_of(l, &[1]));
    }

    #[test]
    fn node_ids_are_the_numbering_or_refused() {
        let k = crate::parser::parse(NUMBERED).expect("parses");
        let counts = k.check_ids().expect("the parser numbers the kernel");
        assert_eq!((counts.ops, counts.stmts), (4, 5));
        // Two statements sharing ids (a statement copied without renumbering).
        let mut dup = k.clone();
        dup.body.stmts[1] = dup.body.stmts[0].clone();
        let e = dup.check_ids().expect_err("a duplicated id is found");
        assert_eq!(
            (e.kind, e.expected, e.found),
            (crate::ids::NodeKind::Stmt, 1, Some(0))
        );
        // Numbering again makes it a valid kernel (of its own, longer, statement 1).
        let renumbered = dup.number_nodes();
        assert_eq!(dup.check_ids(), Ok(renumbered));
        assert_eq!((renumbered.ops, renumbered.stmts), (4, 5));
        // A node built by hand and never numbered.
        let mut fresh = k.clone();
        fresh.body.stmts.push(Stmt::new(
            Vec::new(),
            StmtKind::Op(Op::new(OpKind::BarSync {}, Span::DUMMY)),
            Span::DUMMY,
        ));
        let e = fresh.check_ids().expect_err("an unnumbered node is found");
        assert_eq!((e.kind, e.found), (crate::ids::NodeKind::Stmt, None));
    }

    #[test]
    #[should_panic(expected = "holds id 0")]
    fn the_checker_refuses_a_kernel_with_a_duplicated_id() {
        let mut k = crate::parser::parse(NUMBERED).expect("parses");
        k.body.stmts[1] = k.body.stmts[0].clone();
        let _ = checked(&k);
    }

    #[test]
    fn errors_do_not_cascade_through_a_failed_binding() {
        // The 7-D buffer is refused; the statements that use it report nothing more, and a
        // later independent error is still reported.
        let src = "kernel k {\n  target sm_100a\n  num_warps 4\n  let buf = smem.alloc i8[1, 1, 1, 1, 1, 2, 256], plain\n  let v = smem.reinterpret buf[0], i8[1, 1, 1, 1, 2, 256], plain\n  let w = smem.reinterpret v, i8[512], plain\n  let z = smem.alloc f32[32, 64], nvmma(48)\n}\n";
        let d = errors(src);
        let msgs: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(
            msgs[0].contains("expected 1 to 6 dimensions, found 7"),
            "{msgs:?}"
        );
        assert!(msgs[1].contains("swizzle"), "{msgs:?}");
    }
}
