//! Type checking: the type of every value, resolved layouts and shapes, and the static
//! shared-memory and tensor-memory plans.
//!
//! [`check`] walks a kernel with its constants bound ([`ConstEnv`]) and returns a
//! [`Checked`] kernel plus diagnostics. Constant `if`s are decided here (only the taken branch
//! is checked, so `if SM == 90 { wgmma } else { tcgen05 }` is legal on both targets) and
//! `static_for` bodies are checked once per iteration. The simulator and the backends read the
//! resolved parameter types and the allocation plans from [`Checked`]; the hardware rules of
//! DESIGN.md section 3 that go beyond types live in [`crate::verify`].

use crate::consts::{ConstEnv, ConstValue};
use crate::diag::Diagnostic;
use crate::ir::*;
use crate::span::Span;
use crate::types::*;
use std::collections::HashMap;

/// Shared-memory layout of a buffer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SmemLayout {
    /// Row-major, unswizzled.
    Plain,
    /// Gluon's `NVMMASharedLayout`: rows of the innermost dimension padded to the swizzle span
    /// and swizzled by absolute address. `transposed` marks an MN-major MMA operand.
    Nvmma { swizzle: Swizzle, transposed: bool },
    /// Gluon's `SwizzledSharedLayout(vec, per_phase, max_phase)` (generic ld/st only).
    Swizzled {
        vec: u32,
        per_phase: u32,
        max_phase: u32,
    },
}

impl SmemLayout {
    pub fn swizzle(&self) -> Swizzle {
        match self {
            SmemLayout::Nvmma { swizzle, .. } => *swizzle,
            _ => Swizzle::None,
        }
    }
    /// Alignment the allocator gives a buffer of this layout: the swizzle period for
    /// swizzled NVMMA layouts (PTX.md section 2), else 128 bytes (the TMA requirement).
    pub fn alignment(&self) -> u32 {
        match self {
            SmemLayout::Nvmma { swizzle, .. } => swizzle.period().max(128),
            _ => 128,
        }
    }
    pub fn describe(&self) -> String {
        match self {
            SmemLayout::Plain => "plain".into(),
            SmemLayout::Nvmma { swizzle, transposed } => {
                format!(
                    "nvmma({}{})",
                    swizzle.bytes(),
                    if *transposed { ", transposed=true" } else { "" }
                )
            }
            SmemLayout::Swizzled {
                vec,
                per_phase,
                max_phase,
            } => format!("swizzled({vec}, {per_phase}, {max_phase})"),
        }
    }
}

/// Register-tile layout (how a partition's threads hold a tile). Used by lowering; the
/// functional simulator ignores it except where a rule depends on it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TileLayout {
    Blocked {
        spt: Vec<u32>,
        tpw: Vec<u32>,
        wpc: Vec<u32>,
        order: Vec<u32>,
    },
    Slice {
        dim: u32,
        parent: Box<TileLayout>,
    },
    /// One TMEM lane (accumulator row) per thread: `tcgen05.ld 32x32b`.
    Tmem32x32b,
    /// The wgmma accumulator fragment (PTX.md section 9).
    Wgmma {
        warps: [u32; 2],
        n: u32,
    },
}

impl TileLayout {
    /// Rank of tiles this layout can describe (None: any).
    pub fn rank(&self) -> Option<usize> {
        match self {
            TileLayout::Blocked { spt, .. } => Some(spt.len()),
            TileLayout::Slice { parent, .. } => parent.rank().map(|r| r.saturating_sub(1)),
            TileLayout::Tmem32x32b | TileLayout::Wgmma { .. } => Some(2),
        }
    }
}

/// A TMA descriptor parameter's static part (global shape and strides come at launch).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DescTy {
    pub dtype: DType,
    pub block: Vec<u32>,
    pub layout: SmemLayout,
    pub oob: OobFill,
    /// `elementStrides` of the tensor map, one per dimension (outermost first, all 1 unless
    /// `elem_strides=[...]` is given).
    pub elem_strides: Vec<u32>,
}

impl DescTy {
    /// The box a copy moves: `ceil(block / stride)` elements in every dimension but the
    /// innermost, where a stride has no effect (`INTERLEAVE_NONE`) [PTX.md section 3, H100].
    pub fn box_shape(&self) -> Vec<u32> {
        traversed_box(&self.block, &self.elem_strides)
    }
    /// Bytes one copy moves and completes on its barrier (Gluon's `block_type.nbytes` when
    /// every stride is 1).
    pub fn nbytes(&self) -> u64 {
        (self.box_shape().iter())
            .fold(1u64, |a, &d| a.saturating_mul(d as u64))
            .saturating_mul(self.dtype.bits() as u64)
            / 8
    }
}

/// `ceil(block[k] / strides[k])` for every dimension but the innermost (see
/// [`DescTy::box_shape`]); a missing stride counts as 1.
pub fn traversed_box(block: &[u32], strides: &[u32]) -> Vec<u32> {
    let r = block.len();
    block
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            let s = strides.get(k).copied().unwrap_or(1).max(1);
            if k + 1 == r {
                b
            } else {
                b.div_ceil(s)
            }
        })
        .collect()
}

/// A shared-memory buffer or view of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SmemTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub layout: SmemLayout,
    /// The allocation this view lies in.
    pub alloc: usize,
}

/// A tensor-memory buffer or view.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TmemTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub block: [u32; 2],
    pub col_stride: u32,
    pub scales: bool,
    pub alloc: usize,
}

impl TmemTy {
    /// TMEM columns one `[M, N]` matrix of this type occupies.
    pub fn matrix_cols(&self) -> u32 {
        let n = self.shape.last().copied().unwrap_or(1);
        let m = if self.shape.len() >= 2 {
            self.shape[self.shape.len() - 2]
        } else {
            1
        };
        if self.scales {
            return scale_matrix_cols(m, n, self.dtype.bits());
        }
        let mblocks = m.div_ceil(self.block[0].max(1)).max(1);
        let bits = self.dtype.bits().saturating_mul(self.col_stride);
        mblocks.saturating_mul(n.saturating_mul(bits).div_ceil(32))
    }
    /// TMEM columns of the whole buffer.
    pub fn cols(&self) -> u32 {
        let outer: u32 = if self.shape.len() > 2 {
            self.shape[..self.shape.len() - 2]
                .iter()
                .fold(1u32, |a, &b| a.saturating_mul(b))
        } else {
            1
        };
        outer.saturating_mul(self.matrix_cols())
    }
}

/// Lanes of one TMEM lane quarter (a warp reaches one quarter, PTX.md section 8).
pub const TMEM_QUARTER_LANES: u32 = 32;

/// TMEM columns of one `[rows, nk]` matrix of block-scaled MMA scale factors of `bits` bits
/// each, in the hardware's placement (see [`scale_cell`]): `ceil(rows / 32)` columns per 32
/// bits of a row's factors. A 128-row matrix of up to four 8-bit factors per row takes 4
/// columns (docs/hardware/tmem-scales.md).
pub fn scale_matrix_cols(rows: u32, nk: u32, bits: u32) -> u32 {
    let per_row = nk.saturating_mul(bits).div_ceil(32).max(1);
    rows.div_ceil(TMEM_QUARTER_LANES).max(1).saturating_mul(per_row)
}

/// Where factor `(m, kb)` (row `m`, K block `kb`) of a `[rows, nk]` scale-factor matrix of
/// `bits`-bit factors lives, relative to the matrix's first column: `(lane within a lane
/// quarter, column, bit shift inside the 32-bit cell)`. Row `m` sits in lane `m % 32` of EVERY
/// lane quarter (the four copies are what the four datapaths of the MMA read), column
/// `m / 32` of its group of 4 K blocks, the K blocks of a group as consecutive bytes of the
/// cell, which the MMA selects with the scale-factor id of its instruction descriptor; the
/// next group of K blocks follows after `ceil(rows / 32)` columns.
///
/// Provenance: docs/hardware/tmem-scales.md (CUTLASS `UMMA::tmem_sf_frg`, Triton 3.6's
/// `TensorMemoryScalesLayout` stores and instruction descriptors).
pub fn scale_cell(rows: u32, m: u32, kb: u32, bits: u32) -> (u32, u32, u32) {
    let bits = bits.clamp(1, 32);
    let per_cell = 32 / bits;
    let chunks = rows.div_ceil(TMEM_QUARTER_LANES).max(1);
    (
        m % TMEM_QUARTER_LANES,
        (kb / per_cell)
            .saturating_mul(chunks)
            .saturating_add(m / TMEM_QUARTER_LANES),
        (kb % per_cell) * bits,
    )
}

/// A register tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TileTy {
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub layout: Option<TileLayout>,
}

/// The type of a value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Scalar(ScalarTy),
    Tile(TileTy),
    Smem(SmemTy),
    /// `count: Some(n)` an array of n barriers; `None` one barrier.
    Mbar {
        count: Option<u32>,
        alloc: usize,
    },
    Tmem(TmemTy),
    Desc(DescTy),
    Ptr(DType),
    Tuple(Vec<Ty>),
    /// A layout or element-type name used as an argument.
    Layout(TileLayout),
    DType(DType),
}

impl Ty {
    pub fn describe(&self) -> String {
        match self {
            Ty::Scalar(s) => s.name().to_string(),
            Ty::Tile(t) => format!("tile<{}{:?}>", t.dtype, t.shape),
            Ty::Smem(s) => format!("smem<{}{:?}, {}>", s.dtype, s.shape, s.layout.describe()),
            Ty::Mbar { count: Some(n), .. } => format!("mbar<{n}>"),
            Ty::Mbar { count: None, .. } => "mbar".into(),
            Ty::Tmem(t) => format!("tmem<{}{:?}>", t.dtype, t.shape),
            Ty::Desc(d) => format!("tensor_desc<{}{:?}>", d.dtype, d.block),
            Ty::Ptr(d) => format!("ptr({d})"),
            Ty::Tuple(ts) => format!(
                "({})",
                ts.iter().map(|t| t.describe()).collect::<Vec<_>>().join(", ")
            ),
            Ty::Layout(_) => "layout".into(),
            Ty::DType(d) => format!("dtype {d}"),
        }
    }
    pub fn is_scalar(&self) -> bool {
        matches!(self, Ty::Scalar(_))
    }
    pub fn is_int_scalar(&self) -> bool {
        matches!(self, Ty::Scalar(ScalarTy::I32 | ScalarTy::I64 | ScalarTy::I1))
    }
}

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
    /// Which allocation each allocating op makes (keyed by the op's address in `kernel`).
    alloc_of: HashMap<usize, usize>,
    /// Bytes of shared memory the plan uses.
    pub smem_bytes: u32,
    /// TMEM columns the non-manual allocations use (before rounding to a power of two).
    pub tmem_cols: u32,
    /// Types of `let`-bound names, keyed by the address of the binding `Ident` in `kernel`.
    binding_types: HashMap<usize, Ty>,
    /// Worker partitions: (name, warps, regs).
    pub workers: Vec<(String, u32, u32)>,
}

impl<'k> Checked<'k> {
    /// The allocation an allocating op (`smem.alloc`, `mbar.alloc`, `tmem.alloc`) makes.
    pub fn alloc_of(&self, op: &Op) -> Option<&Alloc> {
        self.alloc_of
            .get(&(op as *const Op as usize))
            .map(|&i| &self.allocs[i])
    }
    /// Index of the allocation an allocating op makes.
    pub fn alloc_index(&self, op: &Op) -> Option<usize> {
        self.alloc_of.get(&(op as *const Op as usize)).copied()
    }
    /// The type of a name bound by `let` (pass the `Ident` inside the kernel).
    pub fn binding_type(&self, ident: &Ident) -> Option<&Ty> {
        self.binding_types.get(&(ident as *const Ident as usize))
    }
    pub fn param(&self, name: &str) -> Option<&ParamInfo> {
        self.params.iter().find(|p| p.name == name)
    }
    /// Total warps of the CTA (default partition plus workers).
    pub fn total_warps(&self) -> u32 {
        (self.workers.iter()).fold(self.num_warps, |a, w| a.saturating_add(w.1))
    }
}

/// Shared memory a CTA may use on sm_90/sm_100 (227 KiB; CUDA programming guide,
/// compute capability 9.0 and 10.0 tables).
pub const SMEM_CAPACITY: u32 = 232_448;
/// Tensor-memory columns per CTA (PTX.md section 8).
pub const TMEM_COLUMNS: u32 = 512;

/// Check a kernel. Returns the resolved kernel (even when there are errors, as far as it got)
/// and every diagnostic found.
pub fn check<'k>(kernel: &'k Kernel, consts: ConstEnv) -> (Checked<'k>, Vec<Diagnostic>) {
    let mut cx = Cx::new(kernel, consts);
    cx.run();
    let Cx { checked, diags, .. } = cx;
    (checked, diags)
}

// ---------------------------------------------------------------------------------------

struct Scope {
    names: HashMap<String, (Ty, Span)>,
    /// Entering a worker partition: names from outside may not be tiles.
    worker_boundary: bool,
}

struct Cx<'k> {
    checked: Checked<'k>,
    diags: Vec<Diagnostic>,
    scopes: Vec<Scope>,
    /// (preorder, end) of every statement, keyed by address.
    pre: HashMap<usize, (usize, usize)>,
    /// Stack of (block depth → containing statement address) for liveness.
    stmt_stack: Vec<usize>,
    /// For each alloc: depth of its defining block.
    alloc_depth: Vec<usize>,
    /// Which partition we are in (None: outside warp_specialize).
    in_worker: bool,
    /// Statement-stack depths of the constant `if`s whose taken branch is being checked.
    transparent: Vec<usize>,
    seen: std::collections::HashSet<Diagnostic>,
    /// Product of the trip counts of the `static_for`s being unrolled around the current
    /// statement (1 outside any).
    unroll: u64,
}

/// Most iterations one `static_for` unrolls.
pub const MAX_STATIC_FOR_TRIPS: u64 = 1024;
/// Most copies of a statement nested `static_for`s unroll in all (a bound on the work of
/// checking, simulating and lowering the kernel).
pub const MAX_UNROLLED: u64 = 1 << 16;

fn e_type(span: Span, msg: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E-type", msg, span, label)
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
        "tile-size",
        format!("register tile {shape:?} has {n} elements, more than {MAX_TILE_NUMEL}"),
        span,
        "too large for a register tile",
    )
    .with_note("Triton and Gluon cap every tensor at 2^20 elements (TRITON_MAX_TENSOR_NUMEL)")
    .with_help("split the work into smaller tiles"))
}

impl<'k> Cx<'k> {
    fn new(kernel: &'k Kernel, consts: ConstEnv) -> Cx<'k> {
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
                alloc_of: HashMap::new(),
                smem_bytes: 0,
                tmem_cols: 0,
                binding_types: HashMap::new(),
                workers: Vec::new(),
            },
            diags: Vec::new(),
            scopes: vec![Scope {
                names: HashMap::new(),
                worker_boundary: false,
            }],
            pre: HashMap::new(),
            stmt_stack: Vec::new(),
            alloc_depth: Vec::new(),
            in_worker: false,
            transparent: Vec::new(),
            seen: Default::default(),
            unroll: 1,
        }
    }

    fn emit(&mut self, d: Diagnostic) {
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
                    "arch-target",
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
                    "num-warps",
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
                    "duplicate-name",
                    format!("`{}` is already defined in this block", id.name),
                    id.span,
                    "redefined here",
                )
                .with_label(prev, "first defined here")
                .with_help("use `NAME = ...` to assign a new value, or pick another name"),
            );
        }
        self.checked
            .binding_types
            .insert(id as *const Ident as usize, ty.clone());
        // Cannot fail: the kernel's scope is pushed first and never popped.
        let scope = self.scopes.last_mut().expect("scope stack is never empty");
        scope.names.insert(id.name.clone(), (ty, id.span));
    }

    fn lookup(&mut self, name: &str, span: Span) -> Option<Ty> {
        let mut crossed_worker = false;
        for s in self.scopes.iter().rev() {
            if let Some((ty, def)) = s.names.get(name) {
                if crossed_worker && matches!(ty, Ty::Tile(_)) {
                    let d = Diagnostic::error(
                        "ws-tile-capture",
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
                if let Some(&(_, end)) = self.pre.get(&stmt) {
                    let live = &mut self.checked.allocs[a].live;
                    live.1 = live.1.max(end);
                }
            }
        }
    }

    // ----- statements -----

    fn block(&mut self, b: &'k Block) {
        self.scopes.push(Scope {
            names: HashMap::new(),
            worker_boundary: false,
        });
        for s in &b.stmts {
            self.stmt(s);
        }
        self.scopes.pop();
    }

    fn transparent_block(&mut self, b: &'k Block) {
        self.transparent.push(self.stmt_stack.len().saturating_sub(1));
        for s in &b.stmts {
            self.stmt(s);
        }
        self.transparent.pop();
    }

    fn stmt(&mut self, s: &'k Stmt) {
        self.stmt_stack.push(s as *const Stmt as usize);
        match &s.kind {
            StmtKind::Let { names, value } => {
                let ty = self.rhs(value, s.span);
                if let Some(ty) = ty {
                    self.bind_names(names, ty, s.span, true);
                } else {
                    for n in names {
                        // Declare with a placeholder so later uses do not cascade.
                        self.declare(n, Ty::Scalar(ScalarTy::I32));
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
            StmtKind::For {
                var,
                start,
                end,
                step,
                body,
                unrolled,
            } => {
                if *unrolled {
                    let bounds = (|| -> Result<(i64, i64, i64), Diagnostic> {
                        let a = self.checked.consts.int(start)?;
                        let b = self.checked.consts.int(end)?;
                        let st = match step {
                            Some(e) => self.checked.consts.int(e)?,
                            None => 1,
                        };
                        Ok((a, b, st))
                    })();
                    match bounds {
                        Ok((_, _, st)) if st <= 0 => self.emit(Diagnostic::error(
                            "static-for",
                            "static_for step must be positive",
                            step.as_ref().map(|e| e.span).unwrap_or(s.span),
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
                                        "static-for",
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
                                        "static-for",
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
                                let prev = self.checked.consts.get(&var.name);
                                let mut i = a;
                                while i < b {
                                    self.checked.consts.bind(&var.name, ConstValue::Int(i));
                                    self.scopes.push(Scope {
                                        names: HashMap::new(),
                                        worker_boundary: false,
                                    });
                                    self.declare(var, Ty::Scalar(ScalarTy::I32));
                                    self.block(body);
                                    self.scopes.pop();
                                    match i.checked_add(st) {
                                        Some(n) => i = n,
                                        None => break,
                                    }
                                }
                                self.unroll = outer_unroll;
                                match prev {
                                    Some(v) => self.checked.consts.bind(&var.name, v),
                                    None => self.checked.consts.unbind(&var.name),
                                }
                            }
                        }
                        Err(d) => self.emit(
                            Diagnostic::error(
                                "static-for",
                                "static_for bounds must be compile-time constants",
                                d.primary.span,
                                d.primary.message,
                            )
                            .with_note(d.message)
                            .with_help("use `for` for a loop with a dynamic trip count"),
                        ),
                    }
                } else {
                    for e in [Some(start), Some(end), step.as_ref()].into_iter().flatten() {
                        if let Some(t) = self.expr(e) {
                            if !t.is_int_scalar() {
                                self.emit(e_type(
                                    e.span,
                                    format!("loop bound must be an integer scalar, found {}", t.describe()),
                                    "here",
                                ));
                            }
                        }
                    }
                    self.scopes.push(Scope {
                        names: HashMap::new(),
                        worker_boundary: false,
                    });
                    self.declare(var, Ty::Scalar(ScalarTy::I32));
                    self.block(body);
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
                    if let Some(t) = self.expr(cond) {
                        if !t.is_int_scalar() {
                            self.emit(e_type(
                                cond.span,
                                format!("`if` condition must be a scalar, found {}", t.describe()),
                                "here",
                            ));
                        }
                    }
                    self.block(then_body);
                    if let Some(e) = else_body {
                        self.block(e);
                    }
                }
            }
            StmtKind::WarpSpecialize { default, workers } => {
                if self.in_worker || !self.checked.workers.is_empty() {
                    self.emit(Diagnostic::error(
                        "ws-nested",
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
                                "ws-warps",
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
                    self.scopes.push(Scope {
                        names: HashMap::new(),
                        worker_boundary: true,
                    });
                    let was = self.in_worker;
                    self.in_worker = true;
                    self.block(&w.body);
                    self.in_worker = was;
                    self.scopes.pop();
                }
                let total = self.checked.total_warps();
                if total > 32 {
                    self.emit(Diagnostic::error(
                        "ws-warps",
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
                    "static-assert",
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
                        "ws-regs",
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
                            "undefined-name",
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
                        self.checked.binding_types.insert(n as *const Ident as usize, t);
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
                if dims.is_empty() || dims.len() > 5 {
                    return Err(e_type(
                        e.span,
                        format!("expected 1 to 5 dimensions, found {}", dims.len()),
                        "here",
                    ));
                }
                Ok((dtype, dims))
            }
            _ => Err(e_type(
                e.span,
                "expected a shaped type like `f16[128, 64]`",
                "here",
            )),
        }
    }

    fn smem_layout(&mut self, e: &Expr) -> Result<SmemLayout, Diagnostic> {
        match &e.kind {
            ExprKind::Name(n) if n == "plain" => Ok(SmemLayout::Plain),
            ExprKind::Call(f, args) if f == "nvmma" => {
                let mut swizzle = None;
                let mut transposed = false;
                for a in args {
                    match a.key.as_ref().map(|k| k.name.as_str()) {
                        None => {
                            let b = self.checked.consts.int(&a.value)?;
                            swizzle = Some(Swizzle::from_bytes(b).ok_or_else(|| {
                                Diagnostic::error("smem-layout", format!("swizzle must be 0, 32, 64 or 128 bytes, found {b}"), a.value.span, "here")
                            })?);
                        }
                        Some("transposed") => transposed = self.checked.consts.bool(&a.value)?,
                        Some(k) => return Err(e_type(a.value.span, format!("unknown nvmma option `{k}`"), "here")),
                    }
                }
                let swizzle = swizzle.ok_or_else(|| e_type(e.span, "nvmma needs a swizzle width", "here").with_help("e.g. `nvmma(128)`"))?;
                Ok(SmemLayout::Nvmma { swizzle, transposed })
            }
            ExprKind::Call(f, args) if f == "swizzled" && args.len() == 3 => Ok(SmemLayout::Swizzled {
                vec: self.checked.consts.dim(&args[0].value)?,
                per_phase: self.checked.consts.dim(&args[1].value)?,
                max_phase: self.checked.consts.dim(&args[2].value)?,
            }),
            _ => Err(Diagnostic::error("smem-layout", "unknown shared-memory layout", e.span, "here")
                .with_help("shared layouts: nvmma(SWIZZLE[, transposed=true]), plain, swizzled(VEC, PER_PHASE, MAX_PHASE)")),
        }
    }

    fn int_list(&mut self, e: &Expr) -> Result<Vec<u32>, Diagnostic> {
        match &e.kind {
            ExprKind::List(items) => items.iter().map(|i| self.checked.consts.dim(i)).collect(),
            _ => Err(e_type(
                e.span,
                "expected a list of constants like `[1, 32]`",
                "here",
            )),
        }
    }

    fn tile_layout(&mut self, e: &Expr) -> Result<TileLayout, Diagnostic> {
        match &e.kind {
            ExprKind::Name(n) if n == "tmem32x32b" => Ok(TileLayout::Tmem32x32b),
            ExprKind::Name(n) => self.checked.layouts.get(n).cloned().ok_or_else(|| {
                Diagnostic::error("undefined-name", format!("unknown layout `{n}`"), e.span, "not a layout")
                    .with_help("declare it in the header: `layout NAME = blocked(...)`")
            }),
            ExprKind::Call(f, args) if f == "blocked" && args.len() == 4 => {
                let spt = self.int_list(&args[0].value)?;
                let tpw = self.int_list(&args[1].value)?;
                let wpc = self.int_list(&args[2].value)?;
                let order = self.int_list(&args[3].value)?;
                let r = spt.len();
                if tpw.len() != r || wpc.len() != r || order.len() != r {
                    return Err(Diagnostic::error("layout", "blocked layout lists must all have the tile's rank", e.span, "rank mismatch"));
                }
                let lanes: u32 = tpw.iter().fold(1u32, |a, &b| a.saturating_mul(b));
                if lanes != 32 {
                    return Err(Diagnostic::error("layout", format!("threads_per_warp must multiply to 32, found {lanes}"), args[1].value.span, "here"));
                }
                Ok(TileLayout::Blocked { spt, tpw, wpc, order })
            }
            ExprKind::Call(f, args) if f == "slice" && args.len() == 2 => {
                let dim = self.checked.consts.dim(&args[0].value)?;
                let parent = self.tile_layout(&args[1].value)?;
                if parent.rank().is_some_and(|r| dim as usize >= r) {
                    return Err(Diagnostic::error("layout", "slice dimension out of range of its parent", args[0].value.span, "here"));
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
                                return Err(Diagnostic::error("layout", "wgmma warps is [W0, W1]", a.value.span, "here"));
                            }
                            warps = [l[0], l[1]];
                        }
                        Some("n") => n = self.checked.consts.dim(&a.value)?,
                        _ => return Err(Diagnostic::error("layout", "wgmma layout takes warps=[W0, W1], n=N", a.value.span, "here")),
                    }
                }
                Ok(TileLayout::Wgmma { warps, n })
            }
            _ => Err(Diagnostic::error("layout", "unknown register layout", e.span, "here")
                .with_help("layouts: blocked(spt, tpw, wpc, order), slice(DIM, PARENT), tmem32x32b, wgmma(warps=[4, 1], n=N), or a declared name")),
        }
    }

    // ----- expressions -----

    fn expr(&mut self, e: &'k Expr) -> Option<Ty> {
        match self.expr_inner(e) {
            Ok(t) => Some(t),
            Err(d) => {
                self.emit(d);
                None
            }
        }
    }

    /// The type of `e`; register tiles larger than [`MAX_TILE_NUMEL`] are an error wherever
    /// they arise (a call, a broadcast, a load).
    fn expr_inner(&mut self, e: &'k Expr) -> Result<Ty, Diagnostic> {
        let t = self.expr_ty(e)?;
        if let Ty::Tile(tt) = &t {
            check_tile_size(&tt.shape, e.span)?;
        }
        Ok(t)
    }

    fn expr_ty(&mut self, e: &'k Expr) -> Result<Ty, Diagnostic> {
        match &e.kind {
            ExprKind::Int(v) => Ok(Ty::Scalar(if i32::try_from(*v).is_ok() {
                ScalarTy::I32
            } else {
                ScalarTy::I64
            })),
            ExprKind::Float(_) => Ok(Ty::Scalar(ScalarTy::F32)),
            ExprKind::Bool(_) => Ok(Ty::Scalar(ScalarTy::I1)),
            ExprKind::Str(_) => Err(e_type(e.span, "strings only appear in static_assert", "here")),
            ExprKind::Name(n) => {
                if let Some(t) = self.lookup(n, e.span) {
                    self.use_allocs(&t);
                    return Ok(t);
                }
                if let Some(v) = self.checked.consts.get(n) {
                    return Ok(match v {
                        ConstValue::Int(i) => Ty::Scalar(if i32::try_from(i).is_ok() {
                            ScalarTy::I32
                        } else {
                            ScalarTy::I64
                        }),
                        ConstValue::Bool(_) => Ty::Scalar(ScalarTy::I1),
                        ConstValue::DType(d) => Ty::DType(d),
                    });
                }
                if let Some(d) = DType::from_name(n) {
                    return Ok(Ty::DType(d));
                }
                if let Some(l) = self.checked.layouts.get(n) {
                    return Ok(Ty::Layout(l.clone()));
                }
                if n == "tmem32x32b" {
                    return Ok(Ty::Layout(TileLayout::Tmem32x32b));
                }
                Err(Diagnostic::error(
                    "undefined-name",
                    format!("cannot find `{n}` in this scope"),
                    e.span,
                    "not found",
                )
                .with_help(
                    "names come from `let`, loop variables, `param`, `const` and `layout` declarations",
                ))
            }
            ExprKind::Unary(op, a) => {
                let t = self.expr_inner(a)?;
                match (&t, op) {
                    (Ty::Scalar(_), _) | (Ty::Tile(_), _) => {
                        Ok(if *op == UnOp::Not && matches!(t, Ty::Scalar(ScalarTy::I1)) {
                            t
                        } else {
                            t.clone()
                        })
                    }
                    _ => Err(e_type(
                        e.span,
                        format!("operator does not apply to {}", t.describe()),
                        "here",
                    )),
                }
            }
            ExprKind::Binary(op, a, b) => {
                let (ta, tb) = (self.expr_inner(a)?, self.expr_inner(b)?);
                self.binary(*op, &ta, &tb, e.span)
            }
            ExprKind::Call(f, args) => self.call(f, args, e),
            ExprKind::Index(base, items) => self.index(base, items, e),
            ExprKind::Field(base, f) => {
                let t = self.expr_inner(base)?;
                match (&t, f.as_str()) {
                    (Ty::Desc(d), "nbytes") => {
                        let _ = d;
                        Ok(Ty::Scalar(ScalarTy::I32))
                    }
                    (Ty::Desc(_), "shape")
                    | (Ty::Desc(_), "block")
                    | (Ty::Smem(_), "shape")
                    | (Ty::Tmem(_), "shape")
                    | (Ty::Tile(_), "shape") => Err(e_type(
                        e.span,
                        format!("`.{f}` must be indexed: `.{f}[i]`"),
                        "here",
                    )),
                    _ => Err(e_type(
                        e.span,
                        format!("{} has no field `{f}`", t.describe()),
                        "unknown field",
                    )
                    .with_help("fields: desc.nbytes, desc.shape[i], desc.block[i], buf.shape[i]")),
                }
            }
            ExprKind::List(_) => Err(e_type(e.span, "a list is not a value here", "here")),
        }
    }

    fn binary(&mut self, op: BinOp, ta: &Ty, tb: &Ty, span: Span) -> Result<Ty, Diagnostic> {
        let cmp = op.is_comparison() || matches!(op, BinOp::And | BinOp::Or);
        match (ta, tb) {
            (Ty::Scalar(x), Ty::Scalar(y)) => {
                if cmp {
                    return Ok(Ty::Scalar(ScalarTy::I1));
                }
                Ok(Ty::Scalar(promote(*x, *y)))
            }
            (Ty::Tile(t), Ty::Scalar(_)) | (Ty::Scalar(_), Ty::Tile(t)) => {
                let mut t = t.clone();
                if cmp {
                    t.dtype = DType::I1;
                }
                Ok(Ty::Tile(t))
            }
            (Ty::Tile(x), Ty::Tile(y)) => {
                let shape = broadcast_shapes(&x.shape, &y.shape).ok_or_else(|| {
                    e_type(
                        span,
                        format!("tile shapes {:?} and {:?} do not broadcast", x.shape, y.shape),
                        "incompatible shapes",
                    )
                })?;
                if x.dtype != y.dtype && !cmp {
                    return Err(e_type(
                        span,
                        format!("tiles of {} and {} need an explicit cast", x.dtype, y.dtype),
                        "mixed element types",
                    )
                    .with_help("convert one side with `cast(x, DTYPE)`"));
                }
                let layout = if x.shape == shape {
                    x.layout.clone()
                } else {
                    y.layout.clone()
                };
                Ok(Ty::Tile(TileTy {
                    dtype: if cmp { DType::I1 } else { x.dtype },
                    shape,
                    layout,
                }))
            }
            _ => Err(e_type(
                span,
                format!(
                    "`{}` does not apply to {} and {}",
                    op.symbol(),
                    ta.describe(),
                    tb.describe()
                ),
                "here",
            )),
        }
    }

    fn layout_arg(&mut self, e: &'k Expr) -> Result<TileLayout, Diagnostic> {
        self.tile_layout(e)
    }

    fn tile_arg(&mut self, e: &'k Expr, what: &str) -> Result<TileTy, Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Tile(t) => Ok(t),
            other => Err(e_type(
                e.span,
                format!("{what} must be a register tile, found {}", other.describe()),
                "not a tile",
            )),
        }
    }

    fn call(&mut self, f: &str, args: &'k [Arg], e: &'k Expr) -> Result<Ty, Diagnostic> {
        let pos: Vec<&'k Expr> = args
            .iter()
            .filter(|a| a.key.is_none())
            .map(|a| &a.value)
            .collect();
        let arity = |n: usize| -> Result<(), Diagnostic> {
            if pos.len() != n {
                Err(e_type(
                    e.span,
                    format!("`{f}` takes {n} arguments, found {}", pos.len()),
                    "wrong number of arguments",
                ))
            } else {
                Ok(())
            }
        };
        match f {
            "program_id" | "num_programs" => {
                arity(1)?;
                let axis = self.checked.consts.int(pos[0])?;
                if !(0..3).contains(&axis) {
                    return Err(e_type(pos[0].span, "axis must be 0, 1 or 2", "here"));
                }
                Ok(Ty::Scalar(ScalarTy::I32))
            }
            "min" | "max" => {
                arity(2)?;
                let (a, b) = (self.expr_inner(pos[0])?, self.expr_inner(pos[1])?);
                self.binary(BinOp::Add, &a, &b, e.span)
            }
            "cdiv" => {
                arity(2)?;
                let (a, b) = (self.expr_inner(pos[0])?, self.expr_inner(pos[1])?);
                self.binary(BinOp::Div, &a, &b, e.span)
            }
            "abs" => {
                arity(1)?;
                self.expr_inner(pos[0])
            }
            "select" | "where" => {
                arity(3)?;
                let c = self.expr_inner(pos[0])?;
                let (a, b) = (self.expr_inner(pos[1])?, self.expr_inner(pos[2])?);
                let v = self.binary(BinOp::Add, &a, &b, e.span)?;
                match (&c, v) {
                    (Ty::Tile(ct), Ty::Tile(mut vt)) => {
                        vt.shape = broadcast_shapes(&ct.shape, &vt.shape)
                            .ok_or_else(|| e_type(e.span, "condition and values do not broadcast", "here"))?;
                        Ok(Ty::Tile(vt))
                    }
                    (Ty::Tile(ct), Ty::Scalar(s)) => Ok(Ty::Tile(TileTy {
                        dtype: s.dtype(),
                        shape: ct.shape.clone(),
                        layout: ct.layout.clone(),
                    })),
                    (_, v) => Ok(v),
                }
            }
            "bitwidth" | "log2" => Ok(Ty::Scalar(ScalarTy::I32)),
            "arange" => {
                arity(3)?;
                let a = self.checked.consts.int(pos[0])?;
                let b = self.checked.consts.int(pos[1])?;
                if b <= a {
                    return Err(e_type(e.span, "arange needs start < end", "empty range"));
                }
                let len = b
                    .checked_sub(a)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(u32::MAX);
                check_tile_size(&[len], e.span)?;
                let layout = self.layout_arg(pos[2])?;
                Ok(Ty::Tile(TileTy {
                    dtype: DType::I32,
                    shape: vec![len],
                    layout: Some(layout),
                }))
            }
            "full" => {
                arity(4)?;
                let shape = self.int_list(pos[0])?;
                self.expr_inner(pos[1])?;
                let dtype = self.checked.consts.dtype(pos[2])?;
                let layout = self.layout_arg(pos[3])?;
                Ok(Ty::Tile(TileTy {
                    dtype,
                    shape,
                    layout: Some(layout),
                }))
            }
            "cast" => {
                arity(2)?;
                let dtype = self.checked.consts.dtype(pos[1])?;
                match self.expr_inner(pos[0])? {
                    Ty::Tile(mut t) => {
                        t.dtype = dtype;
                        Ok(Ty::Tile(t))
                    }
                    Ty::Scalar(_) => ScalarTy::from_name(dtype.name())
                        .map(Ty::Scalar)
                        .ok_or_else(|| e_type(e.span, format!("scalars cannot be {dtype}"), "here")),
                    other => Err(e_type(
                        e.span,
                        format!("cannot cast {}", other.describe()),
                        "here",
                    )),
                }
            }
            "convert_layout" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "convert_layout's operand")?;
                t.layout = Some(self.layout_arg(pos[1])?);
                Ok(Ty::Tile(t))
            }
            "expand_dims" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "expand_dims's operand")?;
                let axis = self.checked.consts.dim(pos[1])? as usize;
                if axis > t.shape.len() {
                    return Err(e_type(pos[1].span, "axis out of range", "here"));
                }
                t.shape.insert(axis, 1);
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "broadcast" | "reshape" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "the operand")?;
                let shape = self.int_list(pos[1])?;
                if f == "reshape" {
                    let (a, b): (u64, u64) = (
                        t.shape.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64)),
                        shape.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64)),
                    );
                    if a != b {
                        return Err(e_type(
                            e.span,
                            format!(
                                "reshape from {:?} to {shape:?} changes the element count",
                                t.shape
                            ),
                            "here",
                        ));
                    }
                } else if broadcast_shapes(&t.shape, &shape).as_deref() != Some(shape.as_slice()) {
                    return Err(e_type(
                        e.span,
                        format!("cannot broadcast {:?} to {shape:?}", t.shape),
                        "here",
                    ));
                }
                t.shape = shape;
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "permute" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "permute's operand")?;
                let order = self.int_list(pos[1])?;
                let mut sorted = order.clone();
                sorted.sort();
                if sorted != (0..t.shape.len() as u32).collect::<Vec<_>>() {
                    return Err(e_type(
                        pos[1].span,
                        "permute order must be a permutation of the dimensions",
                        "here",
                    ));
                }
                t.shape = order.iter().map(|&i| t.shape[i as usize]).collect();
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "split" => {
                arity(1)?;
                let mut t = self.tile_arg(pos[0], "split's operand")?;
                if t.shape.last() != Some(&2) {
                    return Err(e_type(
                        e.span,
                        format!("split needs a last dimension of 2, found {:?}", t.shape),
                        "here",
                    )
                    .with_help("reshape to [..., 2] (and permute) first, as Gluon's `_split_n` does"));
                }
                t.shape.pop();
                t.layout = None;
                Ok(Ty::Tuple(vec![Ty::Tile(t.clone()), Ty::Tile(t)]))
            }
            "join" => {
                arity(2)?;
                let a = self.tile_arg(pos[0], "join's operand")?;
                let b = self.tile_arg(pos[1], "join's operand")?;
                if a.shape != b.shape || a.dtype != b.dtype {
                    return Err(e_type(
                        e.span,
                        "join needs two tiles of the same shape and type",
                        "here",
                    ));
                }
                let mut t = a;
                t.shape.push(2);
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            "fma" => {
                arity(3)?;
                let a = self.expr_inner(pos[0])?;
                let b = self.expr_inner(pos[1])?;
                let c = self.expr_inner(pos[2])?;
                let ab = self.binary(BinOp::Mul, &a, &b, e.span)?;
                self.binary(BinOp::Add, &ab, &c, e.span)
            }
            "sum" => {
                arity(2)?;
                let mut t = self.tile_arg(pos[0], "sum's operand")?;
                let axis = self.checked.consts.dim(pos[1])? as usize;
                if axis >= t.shape.len() {
                    return Err(e_type(pos[1].span, "axis out of range", "here"));
                }
                t.shape.remove(axis);
                t.layout = None;
                if t.shape.is_empty() {
                    return Ok(Ty::Scalar(if t.dtype.is_float() {
                        ScalarTy::F32
                    } else {
                        ScalarTy::I32
                    }));
                }
                Ok(Ty::Tile(t))
            }
            _ => Err(Diagnostic::error(
                "undefined-name",
                format!("unknown function `{f}`"),
                e.span,
                "not a built-in",
            )
            .with_help("see docs/tile-format.md for the built-in functions")),
        }
    }

    fn index(&mut self, base: &'k Expr, items: &'k [IndexItem], e: &'k Expr) -> Result<Ty, Diagnostic> {
        // `desc.shape[i]`, `desc.block[i]`, `buf.shape[i]`
        if let ExprKind::Field(inner, field) = &base.kind {
            let t = self.expr_inner(inner)?;
            let [IndexItem::Expr(i)] = items else {
                return Err(e_type(e.span, format!("`.{field}` takes one index"), "here"));
            };
            let idx = self.checked.consts.int(i)?;
            let rank = match (&t, field.as_str()) {
                (Ty::Desc(d), "shape" | "block") => d.block.len(),
                (Ty::Smem(s), "shape") => s.shape.len(),
                (Ty::Tmem(s), "shape") => s.shape.len(),
                (Ty::Tile(s), "shape") => s.shape.len(),
                _ => {
                    return Err(e_type(
                        base.span,
                        format!("{} has no field `{field}`", t.describe()),
                        "here",
                    ))
                }
            };
            if idx < 0 || idx as usize >= rank {
                return Err(e_type(
                    i.span,
                    format!("index {idx} out of range for rank {rank}"),
                    "here",
                ));
            }
            return Ok(Ty::Scalar(ScalarTy::I32));
        }
        let bt = self.expr_inner(base)?;
        match bt {
            Ty::Smem(s) => {
                let (shape, _) = self.view_shape(&s.shape, items, e)?;
                Ok(Ty::Smem(SmemTy { shape, ..s }))
            }
            Ty::Tmem(t) => {
                let (shape, _) = self.view_shape(&t.shape, items, e)?;
                Ok(Ty::Tmem(TmemTy { shape, ..t }))
            }
            Ty::Mbar {
                count: Some(_),
                alloc,
            } => match items {
                [IndexItem::Expr(i)] => {
                    let ti = self.expr_inner(i)?;
                    if !ti.is_int_scalar() {
                        return Err(e_type(i.span, "barrier index must be an integer scalar", "here"));
                    }
                    Ok(Ty::Mbar { count: None, alloc })
                }
                _ => Err(e_type(
                    e.span,
                    "index a barrier array with one integer: `bars[i]`",
                    "here",
                )),
            },
            Ty::Tile(mut t) => {
                // `x[:, None]`-style new axes and constant slices `x[:, a:b]` (a sub-tile, as
                // Gluon's reshape/permute/split tree of `_split_n` produces).
                let mut shape = Vec::new();
                let mut src = t.shape.iter();
                for it in items {
                    match it {
                        IndexItem::NewAxis => shape.push(1),
                        IndexItem::Slice(a, b) => {
                            let dim = *src
                                .next()
                                .ok_or_else(|| e_type(e.span, "too many `:` for this tile", "here"))?;
                            let lo = match a {
                                Some(a) => self.checked.consts.int(a)?,
                                None => 0,
                            };
                            let hi = match b {
                                Some(b) => self.checked.consts.int(b)?,
                                None => dim as i64,
                            };
                            if lo < 0 || hi > dim as i64 || lo >= hi {
                                return Err(Diagnostic::error(
                                    "view-bounds",
                                    format!("slice {lo}:{hi} out of range 0..{dim}"),
                                    e.span,
                                    "out of bounds",
                                ));
                            }
                            shape.push((hi - lo) as u32);
                        }
                        IndexItem::Expr(_) => return Err(e_type(
                            e.span,
                            "register tiles can only be indexed with `:`, constant slices `a:b` and `None`",
                            "here",
                        )
                        .with_help("use shared memory views to address parts of a buffer")),
                    }
                }
                shape.extend(src);
                t.shape = shape;
                t.layout = None;
                Ok(Ty::Tile(t))
            }
            other => Err(e_type(
                base.span,
                format!("{} cannot be indexed here", other.describe()),
                "here",
            )),
        }
    }

    /// Shape of a view `buf[items]`: leading integer indices drop dimensions; slices keep them.
    fn view_shape(
        &mut self,
        shape: &[u32],
        items: &'k [IndexItem],
        e: &Expr,
    ) -> Result<(Vec<u32>, usize), Diagnostic> {
        if items.len() > shape.len() {
            return Err(e_type(
                e.span,
                format!("{} indices for a view of rank {}", items.len(), shape.len()),
                "too many indices",
            ));
        }
        let mut out = Vec::new();
        let mut dropped = 0;
        for (k, it) in items.iter().enumerate() {
            match it {
                IndexItem::Expr(i) => {
                    if k != dropped {
                        return Err(e_type(i.span, "integer indices must come before slices", "here"));
                    }
                    let ti = self.expr_inner(i)?;
                    if !ti.is_int_scalar() {
                        return Err(e_type(
                            i.span,
                            format!("index must be an integer scalar, found {}", ti.describe()),
                            "here",
                        ));
                    }
                    if self.checked.consts.is_const(i) {
                        let v = self.checked.consts.int(i)?;
                        if v < 0 || v >= shape[k] as i64 {
                            return Err(Diagnostic::error(
                                "view-bounds",
                                format!("index {v} out of range 0..{}", shape[k]),
                                i.span,
                                "out of bounds",
                            ));
                        }
                    }
                    dropped += 1;
                }
                IndexItem::Slice(a, b) => {
                    let lo = match a {
                        Some(a) => self.checked.consts.int(a)?,
                        None => 0,
                    };
                    let hi = match b {
                        Some(b) => self.checked.consts.int(b)?,
                        None => shape[k] as i64,
                    };
                    if lo < 0 || hi > shape[k] as i64 || lo >= hi {
                        return Err(Diagnostic::error(
                            "view-bounds",
                            format!("slice {lo}:{hi} out of range 0..{}", shape[k]),
                            e.span,
                            "out of bounds",
                        ));
                    }
                    out.push((hi - lo) as u32);
                }
                IndexItem::NewAxis => return Err(e_type(e.span, "`None` is for register tiles", "here")),
            }
        }
        out.extend_from_slice(&shape[items.len()..]);
        if out.is_empty() {
            out.push(1);
        }
        Ok((out, dropped))
    }

    // ----- operations -----

    fn expect_smem(&mut self, e: &'k Expr, what: &str) -> Result<SmemTy, Diagnostic> {
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
    fn expect_tmem(&mut self, e: &'k Expr, what: &str) -> Result<TmemTy, Diagnostic> {
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
    fn expect_bar(&mut self, e: &'k Expr) -> Result<(), Diagnostic> {
        match self.expr_inner(e)? {
            Ty::Mbar { count: None, .. } => Ok(()),
            Ty::Mbar { count: Some(_), .. } => Err(e_type(
                e.span,
                "expected one barrier, found a barrier array",
                "index it: `bars[i]`",
            )),
            other => Err(Diagnostic::error(
                "mbar-type",
                format!("expected an mbarrier, found {}", other.describe()),
                e.span,
                "not a barrier",
            )
            .with_help("barriers come from `mbar.alloc N`, indexed as `bars[i]`")),
        }
    }
    fn expect_scalar(&mut self, e: &'k Expr, what: &str) -> Result<(), Diagnostic> {
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
    fn opt_scalar(&mut self, e: &'k Option<Expr>, what: &str) -> Result<(), Diagnostic> {
        match e {
            Some(e) => self.expect_scalar(e, what),
            None => Ok(()),
        }
    }
    /// `desc[coords]`: the descriptor and its coordinate expressions.
    fn desc_coords(&mut self, e: &'k Expr) -> Result<(DescTy, &'k [IndexItem]), Diagnostic> {
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

    fn new_alloc(&mut self, kind: AllocKind, size: u32, align: u32, manual: bool, op: &'k Op) -> usize {
        let key = op as *const Op as usize;
        if let Some(&i) = self.checked.alloc_of.get(&key) {
            return i;
        }
        let here = self
            .stmt_stack
            .last()
            .and_then(|s| self.pre.get(s))
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
        self.checked.alloc_of.insert(key, i);
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

    fn arch(&mut self, op: &Op, needs: Target, code: &str) {
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
                    "ptxas rejects this instruction for .target {} (PTX.md section 7)",
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

    fn op(&mut self, op: &'k Op) -> Option<Ty> {
        match self.op_inner(op) {
            Ok(t) => t,
            Err(d) => {
                self.emit(d);
                None
            }
        }
    }

    fn op_inner(&mut self, op: &'k Op) -> Result<Option<Ty>, Diagnostic> {
        use OpKind::*;
        match &op.kind {
            SmemAlloc { ty, layout, align } => {
                let (dtype, shape) = self.shaped(ty)?;
                let layout = self.smem_layout(layout)?;
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
                // A reinterpret may reach past its view (Gluon's STEALB epilogue spans two B
                // buffers) but never past the allocation; the simulator checks the exact bounds.
                let have = self.checked.allocs[s.alloc].size;
                let want = smem_bytes(dtype, &shape, &layout);
                if want > have {
                    return Err(Diagnostic::error(
                        "smem-reinterpret",
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
            TmemAlloc {
                ty,
                block,
                col_stride,
                scales,
                manual,
            } => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                let (dtype, shape) = self.shaped(ty)?;
                let block = match block {
                    Some(b) => {
                        let l = self.int_list(b)?;
                        if l.len() != 2 {
                            return Err(e_type(b.span, "block is [M, N]", "here"));
                        }
                        [l[0], l[1]]
                    }
                    None => {
                        let m = if shape.len() >= 2 {
                            shape[shape.len() - 2]
                        } else {
                            128
                        };
                        [m.min(128), *shape.last().unwrap_or(&1)]
                    }
                };
                if block[0] != 64 && block[0] != 128 {
                    return Err(Diagnostic::error(
                        "tmem-layout",
                        format!("TMEM block M must be 64 or 128, found {}", block[0]),
                        op.span,
                        "here",
                    ));
                }
                let cs = match col_stride {
                    Some(c) => self.checked.consts.dim(c)?,
                    None => 1,
                };
                let scales = match scales {
                    Some(s) => self.checked.consts.bool(s)?,
                    None => false,
                };
                let manual = match manual {
                    Some(m) => self.checked.consts.bool(m)?,
                    None => false,
                };
                if scales && dtype.bits() != 8 {
                    return Err(Diagnostic::error(
                        "tmem-layout",
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
                        "tmem-alloc-cols",
                        format!("tcgen05.alloc needs a power-of-two column count in 32..=512, this buffer has {cols}"),
                        op.span,
                        "invalid allocation",
                    )
                    .with_note("PTX.md section 8: `ncols` is a power of two, 32..512"));
                }
                let id = self.new_alloc(AllocKind::Tmem(tt.clone()), cols, 1, manual, op);
                Ok(Some(Ty::Tmem(TmemTy { alloc: id, ..tt })))
            }
            TmemDealloc { buf } => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                let t = self.expect_tmem(buf, "tmem.dealloc's operand")?;
                if !self.checked.allocs[t.alloc].manual {
                    return Err(Diagnostic::error(
                        "tmem-dealloc",
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
            TmaLoad { src, dst, bar, pred } | TmaGather { src, dst, bar, pred } => {
                let gather = matches!(op.kind, TmaGather { .. });
                if gather {
                    self.arch(op, Target::Sm100a, "arch-gather");
                }
                let (d, coords) = self.desc_coords(src)?;
                self.coords(&d, coords, gather, src)?;
                let s = self.expect_smem(dst, "the TMA destination")?;
                self.expect_bar(bar)?;
                self.opt_scalar(pred, "pred")?;
                self.tma_smem_match(&d, &s, gather, coords, dst)?;
                if gather {
                    self.gather_rules(op, &d, coords)?;
                }
                Ok(None)
            }
            TmaStore { dst, src, pred } | TmaScatter { dst, src, pred } => {
                let scatter = matches!(op.kind, TmaScatter { .. });
                if scatter {
                    self.arch(op, Target::Sm100a, "arch-gather");
                }
                let (d, coords) = self.desc_coords(dst)?;
                self.coords(&d, coords, scatter, dst)?;
                let s = self.expect_smem(src, "the TMA source")?;
                self.opt_scalar(pred, "pred")?;
                self.tma_smem_match(&d, &s, scatter, coords, src)?;
                if scatter {
                    self.gather_rules(op, &d, coords)?;
                }
                Ok(None)
            }
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
                        "mbar-count",
                        format!("mbarrier expected count must be in 1..2^20, found {c}"),
                        count.span,
                        "here",
                    )
                    .with_note("PTX.md section 5: expected arrival count 1 .. 2^20 - 1"));
                }
                Ok(None)
            }
            MbarExpect { bar, bytes, pred }
            | MbarExpectTx { bar, bytes, pred }
            | MbarCompleteTx { bar, bytes, pred } => {
                self.expect_bar(bar)?;
                self.expect_scalar(bytes, "the byte count")?;
                self.opt_scalar(pred, "pred")?;
                Ok(None)
            }
            MbarArrive { bar, count, pred } => {
                self.expect_bar(bar)?;
                self.opt_scalar(count, "count")?;
                self.opt_scalar(pred, "pred")?;
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
            FenceAsyncShared {} | FenceMbarrierInit {} | BarSync {} | ClusterSync {} => Ok(None),
            Tcgen05FenceBefore {} | Tcgen05FenceAfter {} => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
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
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                self.opt_scalar(use_acc, "use_acc")?;
                self.opt_scalar(pred, "pred")?;
                let cg = self.cta_group(cta_group)?;
                self.mma(op, a, b, acc, None, cg)?;
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
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                self.opt_scalar(use_acc, "use_acc")?;
                self.opt_scalar(pred, "pred")?;
                let cg = self.cta_group(cta_group)?;
                self.mma(op, a, b, acc, Some((a_scale, b_scale)), cg)?;
                Ok(None)
            }
            Tcgen05Cp { src, dst } => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                let s = self.expect_smem(src, "tcgen05.cp's source")?;
                let t = self.expect_tmem(dst, "tcgen05.cp's destination")?;
                crate::verify::check_tcgen05_cp(op, &s, &t)?;
                Ok(None)
            }
            Tcgen05Commit { bar, pred, cta_group } => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                self.expect_bar(bar)?;
                self.opt_scalar(pred, "pred")?;
                self.cta_group(cta_group)?;
                Ok(None)
            }
            TmemLoad { src, layout } => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                let t = self.expect_tmem(src, "tmem.load's source")?;
                let layout = match layout {
                    Some(l) => self.layout_arg(l)?,
                    None => TileLayout::Tmem32x32b,
                };
                crate::verify::check_tmem_access(op, &t, self.in_worker_warps())?;
                Ok(Some(Ty::Tile(TileTy {
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    layout: Some(layout),
                })))
            }
            TmemStore { dst, value } => {
                self.arch(op, Target::Sm100a, "arch-tcgen05");
                let t = self.expect_tmem(dst, "tmem.store's destination")?;
                let v = self.tile_arg(value, "the stored value")?;
                if v.shape != t.shape || v.dtype != t.dtype {
                    return Err(e_type(
                        op.span,
                        format!(
                            "storing tile<{}{:?}> into tmem<{}{:?}>",
                            v.dtype, v.shape, t.dtype, t.shape
                        ),
                        "shape or type mismatch",
                    ));
                }
                crate::verify::check_tmem_access(op, &t, self.in_worker_warps())?;
                Ok(None)
            }
            Wgmma { a, b, acc, use_acc } => {
                self.arch(op, Target::Sm90a, "arch-wgmma");
                self.opt_scalar(use_acc, "use_acc")?;
                let at = self.expr_inner(a)?;
                let bt = self.expect_smem(b, "wgmma's B operand")?;
                let acct = self.tile_arg(acc, "wgmma's accumulator")?;
                crate::verify::check_wgmma(op, &at, &bt, &acct, self.checked.num_warps)?;
                Ok(Some(Ty::Tile(acct)))
            }
            WgmmaWait { pendings } => {
                self.arch(op, Target::Sm90a, "arch-wgmma");
                self.checked.consts.int(pendings)?;
                Ok(None)
            }
            SmemLoad { src, layout } => {
                let s = self.expect_smem(src, "smem.load's source")?;
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
            SmemStore { dst, value } => {
                let s = self.expect_smem(dst, "smem.store's destination")?;
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
        }
    }

    fn gather_rules(&mut self, op: &Op, d: &DescTy, coords: &'k [IndexItem]) -> Result<(), Diagnostic> {
        if let Some(IndexItem::Expr(x)) = coords.first() {
            if let Ty::Tile(t) = self.expr_inner(x)? {
                crate::verify::check_gather(op, d, &t)?;
            }
        }
        Ok(())
    }

    fn in_worker_warps(&self) -> u32 {
        if self.in_worker {
            self.checked.workers.last().map(|w| w.1).unwrap_or(1)
        } else {
            self.checked.num_warps
        }
    }

    fn cta_group(&mut self, e: &Option<Expr>) -> Result<u32, Diagnostic> {
        match e {
            None => Ok(1),
            Some(e) => match self.checked.consts.int(e)? {
                1 => Ok(1),
                2 => Ok(2),
                v => Err(Diagnostic::error(
                    "mma-shape",
                    format!("cta_group must be 1 or 2, found {v}"),
                    e.span,
                    "here",
                )),
            },
        }
    }

    fn coords(
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
                "tma-rank",
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

    fn tma_smem_match(
        &mut self,
        d: &DescTy,
        s: &SmemTy,
        gather: bool,
        coords: &'k [IndexItem],
        e: &Expr,
    ) -> Result<(), Diagnostic> {
        if s.dtype != d.dtype {
            return Err(Diagnostic::error(
                "tma-smem",
                format!(
                    "shared buffer holds {} but the descriptor moves {}",
                    s.dtype, d.dtype
                ),
                e.span,
                "element type mismatch",
            ));
        }
        if gather {
            let rows = match coords.first() {
                Some(IndexItem::Expr(x)) => match self.expr_inner(x)? {
                    Ty::Tile(t) => t.shape[0],
                    _ => 0,
                },
                _ => 0,
            };
            let want = vec![rows, d.block.last().copied().unwrap_or(0)];
            if s.shape != want {
                return Err(Diagnostic::error("tma-smem", format!("gather/scatter of {rows} rows of {} needs a shared buffer of shape {want:?}, found {:?}", want[1], s.shape), e.span, "shape mismatch"));
            }
        } else {
            // A transposed (MN-major) buffer is stored with its last two dimensions swapped.
            let mut phys = s.shape.clone();
            if matches!(s.layout, SmemLayout::Nvmma { transposed: true, .. }) && phys.len() >= 2 {
                let n = phys.len();
                phys.swap(n - 1, n - 2);
            }
            let bx = d.box_shape();
            let a: u64 = phys.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64));
            let b: u64 = bx.iter().fold(1u64, |a, &x| a.saturating_mul(x as u64));
            if a != b || phys.last() != bx.last() {
                return Err(Diagnostic::error(
                    "tma-smem",
                    format!(
                        "shared buffer of shape {:?} does not hold one box {:?} of the descriptor",
                        s.shape, bx
                    ),
                    e.span,
                    "shape mismatch",
                ));
            }
        }
        if s.layout.swizzle() != d.layout.swizzle() {
            return Err(Diagnostic::error(
                "tma-smem",
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
        Ok(())
    }

    fn mma(
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
        crate::verify::check_tcgen05_mma(op, &at, &bt, &acct, st.as_ref(), cta_group)
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
            let mut d = Diagnostic::error(
                "smem-capacity",
                format!("kernel needs {top} bytes of shared memory; a CTA may use at most {SMEM_CAPACITY}"),
                self.checked.kernel.name.span,
                "too much shared memory",
            )
            .with_help("use fewer pipeline buffers, smaller blocks, or scope buffers so their lifetimes do not overlap");
            for a in self
                .checked
                .allocs
                .iter()
                .filter(|a| !matches!(a.kind, AllocKind::Tmem(_)))
            {
                d = d.with_label(a.span, format!("{} bytes at offset {}", a.size, a.offset));
            }
            self.emit(d);
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
            let mut d = Diagnostic::error(
                "tmem-capacity",
                format!("kernel needs {col} TMEM columns; a CTA has {TMEM_COLUMNS}"),
                self.checked.kernel.name.span,
                "too much tensor memory",
            )
            .with_note("TMEM is 128 lanes x 512 columns of 32 bits per CTA (PTX.md section 8)");
            for a in self
                .checked
                .allocs
                .iter()
                .filter(|a| matches!(a.kind, AllocKind::Tmem(_)))
            {
                d = d.with_label(a.span, format!("{} columns", a.size));
            }
            self.emit(d);
        }
    }
}

/// Bytes a shared buffer occupies: rows of an NVMMA-swizzled layout are padded to the span.
/// A row runs along the contiguous dimension: the last one, the second to last of a
/// transposed (MN-major) NVMMA buffer (stored with its last two dimensions swapped).
pub fn smem_bytes(dtype: DType, shape: &[u32], layout: &SmemLayout) -> u32 {
    let r = shape.len();
    let contiguous = if matches!(layout, SmemLayout::Nvmma { transposed: true, .. }) && r >= 2 {
        r - 2
    } else {
        r.saturating_sub(1)
    };
    let inner = shape.get(contiguous).copied().unwrap_or(1) as u64;
    let outer: u64 = shape
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != contiguous)
        .fold(1u64, |a, (_, &x)| a.saturating_mul(x as u64));
    let mut row = (inner * dtype.bits() as u64).div_ceil(8);
    let span = layout.swizzle().bytes() as u64;
    if span > 0 && row < span {
        row = span;
    }
    u32::try_from(outer.saturating_mul(row)).unwrap_or(u32::MAX)
}

fn promote(a: ScalarTy, b: ScalarTy) -> ScalarTy {
    use ScalarTy::*;
    match (a, b) {
        (F32, _) | (_, F32) => F32,
        (I64, _) | (_, I64) => I64,
        (I32, _) | (_, I32) => I32,
        _ => I1,
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

fn number_block(b: &Block, counter: &mut usize, pre: &mut HashMap<usize, (usize, usize)>) {
    for s in &b.stmts {
        let me = *counter;
        *counter += 1;
        match &s.kind {
            StmtKind::For { body, .. } => number_block(body, counter, pre),
            StmtKind::If {
                then_body, else_body, ..
            } => {
                number_block(then_body, counter, pre);
                if let Some(e) = else_body {
                    number_block(e, counter, pre);
                }
            }
            StmtKind::WarpSpecialize { default, workers } => {
                number_block(&default.body, counter, pre);
                for w in workers {
                    number_block(&w.body, counter, pre);
                }
            }
            _ => {}
        }
        pre.insert(s as *const Stmt as usize, (me, *counter - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nvmma(transposed: bool) -> SmemLayout {
        SmemLayout::Nvmma {
            swizzle: Swizzle::B128,
            transposed,
        }
    }

    #[test]
    fn smem_bytes_pads_rows_along_the_contiguous_dimension() {
        // [16, 32] f32: 16 rows of 128 bytes; seen transposed as [32, 16], the same rows.
        assert_eq!(smem_bytes(DType::F32, &[16, 32], &nvmma(false)), 2048);
        assert_eq!(smem_bytes(DType::F32, &[32, 16], &nvmma(true)), 2048);
        // [2, 64, 16] f16 transposed: 2 x 16 rows of 64 elements (128 bytes).
        assert_eq!(smem_bytes(DType::F16, &[2, 64, 16], &nvmma(true)), 4096);
        // Not transposed: 2 x 64 rows of 32 bytes, each padded to the 128-byte span.
        assert_eq!(smem_bytes(DType::F16, &[2, 64, 16], &nvmma(false)), 16384);
        assert_eq!(smem_bytes(DType::F32, &[16], &nvmma(true)), 128);
        assert_eq!(smem_bytes(DType::F32, &[16, 32], &SmemLayout::Plain), 2048);
    }

    #[test]
    fn a_transposed_reinterpret_of_a_buffer_fits_its_bytes() {
        let src = "kernel k {\n  target sm_100a\n  num_warps 4\n  let buf = smem.alloc f32[2, 16, 32], nvmma(128)\n  let t = smem.reinterpret buf[1], f32[32, 16], nvmma(128, transposed=true)\n  let u = smem.reinterpret buf, f32[2, 32, 16], nvmma(128, transposed=true)\n  let w = smem.reinterpret buf, f32[3, 32, 16], nvmma(128, transposed=true)\n}\n";
        let k = crate::parser::parse(src).expect("parses");
        let (c, d) = crate::verify::verify(&k, &crate::verify::VerifyOptions::default());
        assert!(c.is_none());
        // Only the reinterpret of three matrices (6144 bytes) exceeds the 4096-byte buffer.
        let codes: Vec<_> = d
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code.as_str())
            .collect();
        assert_eq!(codes, ["smem-reinterpret"], "{d:?}");
        assert!(d[0].message.contains("6144"), "{}", d[0].message);
    }
}
