//! TTGIR operations to bwsim's IR, one to one.
//!
//! Every SSA value becomes either a `let`-bound name (arithmetic, loads, allocations), an
//! expression substituted where it is used (constants, `program_id`, views such as
//! `bufs[i]`, a descriptor's shape), or one of a few symbolic forms that bwsim writes
//! differently from TTGIR: a splat scalar (used as a scalar operand of tile math, or
//! `full(...)` where a tile is needed), a tensor of pointers (a `ptr` parameter and a tile of
//! element offsets, which is what `global.load`/`global.store` take), an mbarrier array, an
//! async token (no value in bwsim). `scf.for` iteration arguments become variables declared
//! before the loop and assigned at its end; `scf.if` results likewise; `ttg.warp_specialize`
//! becomes a `warp_specialize` statement whose workers see the partition's captured operands
//! by the names they have outside.
//!
//! Every statement and expression gets the span of its operation's Python line (see
//! [`crate::source`]). An operation outside the supported set is an [`ImportError`] naming it
//! at its Python location; the import goes on to report the others and fails at the end.
//!
//! This module holds the import's state (`Cx`: scopes, names, layouts) and its helpers;
//! `dispatch` matches each operation, `values` imports arithmetic, loads, stores and
//! reductions, `memory` the shared/tensor-memory, TMA and MMA operations, `control` the
//! loops, conditionals and warp specialization.

use crate::error::ImportError;
use crate::lexer::{Tok, Token};
use crate::loc::Locs;
use crate::source::SourceMap;
use crate::syntax::{Cursor, Module, Op, Region};
use crate::types::{attr_val, parse_type, AttrVal, Attrs, Elem, Layout, Type};
use crate::version::Version;
use bwsim_isa::ir::Op as IrOp;
use bwsim_isa::ir::*;
use bwsim_isa::parser::KEYWORDS;
use bwsim_isa::{DType, Span, Target};
use std::collections::{HashMap, HashSet};

mod cluster;
mod combiner;
mod control;
mod dispatch;
mod general_reduce;
mod inline_asm;
mod memory;
mod proxy_fences;
mod values;

/// What an SSA value is in bwsim's IR.
#[derive(Clone, Debug)]
enum Val {
    /// An expression to use as is.
    E(Expr, Type),
    /// A scalar splat to a tensor of type `Type`.
    Splat(Expr, Type),
    /// A (tensor of) pointer(s): a `ptr` parameter plus element offsets.
    Ptr {
        base: String,
        offs: Option<Expr>,
        ty: Type,
    },
    /// An array of mbarriers (`mbar.alloc N`).
    Mbars(Expr),
    /// An async token: ordering that bwsim's IR expresses by program order.
    Token,
    /// A cluster-launch-control response read into registers (`ttng.clc_load_result`, an
    /// `i128`): `clc.query`'s canceled flag and program id x, y, z.
    Clc(Vec<Expr>),
    /// A value bwsim cannot represent; using it is an error with this message.
    Unusable(String),
    /// The result of an operation that failed to import (uses report nothing more).
    Poison,
}

/// Import the module's kernel.
pub fn import(m: &Module, src: &SourceMap, version: Version) -> Result<Kernel, Vec<ImportError>> {
    let mut cx = Cx {
        version,
        attrs: Attrs::new(&m.attr_aliases),
        locs: Locs::new(&m.loc_aliases),
        src,
        scopes: vec![HashMap::new()],
        names: KEYWORDS.iter().map(|s| s.to_string()).collect(),
        layouts: Vec::new(),
        layout_names: HashMap::new(),
        blocks: Vec::new(),
        errors: Vec::new(),
        workers_named: HashSet::new(),
        params_seen: HashSet::new(),
        elementwise: None,
        tmem_layouts: HashSet::new(),
        used: HashSet::new(),
        warps: 4,
        num_ctas: 1,
        init_sync_pending: false,
        two_cta_module: false,
        i64_data: HashSet::new(),
        compiler_fences: HashSet::new(),
    };
    // Names with a meaning in `.tile` expressions: layouts, built-in constants and functions.
    for reserved in [
        "tmem32x32b",
        "plain",
        "SM",
        "nvmma",
        "swizzled",
        "blocked",
        "slice",
        "wgmma",
        "program_id",
        "num_programs",
        "cluster_rank",
        "cluster_size",
        "min",
        "max",
        "cdiv",
        "select",
        "abs",
        "bitwidth",
        "log2",
        "arange",
        "full",
        "cast",
        "convert_layout",
        "expand_dims",
        "broadcast",
        "reshape",
        "permute",
        "split",
        "join",
        "where",
        "fma",
        "sum",
        "cumsum",
        "cumprod",
        "cummax",
        "cummin",
        "inf",
        "nan",
        "prod",
        "reduce_max",
        "reduce_min",
        "reduce_and",
        "reduce_or",
        "reduce_xor",
        "argmax",
        "argmin",
        "exp",
        "exp2",
        "log",
        "sqrt",
        "rsqrt",
        "erf",
        "floor",
        "ceil",
        "sin",
        "cos",
        "ptr",
        "tensor_desc",
        "randn",
        "zeros",
    ] {
        cx.names.insert(reserved.to_string());
    }
    for d in DType::ALL {
        cx.names.insert(d.name().to_string());
    }
    cx.collect_tmem_layouts(&m.ops);
    cx.i64_data = control::i64_data_allocs(&m.ops);
    let k = cx.module(m);
    match k {
        Ok(k) if cx.errors.is_empty() => Ok(k),
        Ok(_) => Err(cx.errors),
        Err(e) => {
            cx.errors.push(e);
            Err(cx.errors)
        }
    }
}

struct Cx<'m> {
    /// The Triton release the file is read as (what its version-dependent forms mean:
    /// [`crate::version::FEATURES`]).
    version: Version,
    attrs: Attrs<'m>,
    locs: Locs<'m>,
    src: &'m SourceMap,
    scopes: Vec<HashMap<String, Val>>,
    /// Every name used so far (names are unique in the whole kernel).
    names: HashSet<String>,
    layouts: Vec<LayoutDecl>,
    /// Layout alias (`blocked1`) → declared layout name.
    layout_names: HashMap<String, String>,
    /// Statements of the blocks being built, innermost last.
    blocks: Vec<Vec<Stmt>>,
    errors: Vec<ImportError>,
    workers_named: HashSet<String>,
    params_seen: HashSet<String>,
    /// Inside a `tt.map_elementwise` body: the tensor type its scalar operations apply to
    /// elementwise (their printed scalar types are read as tensors of this shape and layout).
    elementwise: Option<Type>,
    /// Register layout aliases that tensor memory is loaded into or stored from
    /// ([`tmem_access_check`]): bwsim's `tmem32x32b`, whatever message shape Triton chose.
    tmem_layouts: HashSet<String>,
    /// Every SSA value some operation of the kernel reads (an atomic whose old values nobody
    /// reads is imported as a statement).
    used: HashSet<String>,
    /// Warps of the partition being imported (the module's, or a worker's).
    warps: i64,
    /// CTAs of a cluster (`ttg.num-ctas`); above 1 the TTGIR is read per CTA (`cluster`).
    num_ctas: i64,
    /// A cluster kernel's barrier initialisation still to be released to the cluster, before
    /// the next operation that uses a barrier (Triton 3.8 and later).
    init_sync_pending: bool,
    /// Whether the kernel issues two-CTA MMAs (`{two_ctas}`): then every `tcgen05_commit` is
    /// the pair's, issued by its first CTA ([`cluster::has_two_cta_mma`]).
    two_cta_module: bool,
    /// `ttg.local_alloc`s typed like an mbarrier that hold data ([`control::i64_data_allocs`]).
    i64_data: HashSet<String>,
    /// The operations (by the start of their TTGIR text) that Triton's proxy-fence pass puts a
    /// `fence.proxy.async` in front of when it lowers the TTGIR ([`proxy_fences`]).
    compiler_fences: HashSet<u32>,
}

type R<T> = Result<T, ImportError>;

fn ex(kind: ExprKind, span: Span) -> Expr {
    Expr::new(kind, span)
}

fn with_span(mut e: Expr, span: Span) -> Expr {
    if e.span.is_dummy() {
        e.span = span;
    }
    e
}

fn name_e(n: &str, span: Span) -> Expr {
    ex(ExprKind::Name(n.to_string()), span)
}

fn call(f: &str, args: Vec<Expr>, span: Span) -> Expr {
    ex(
        ExprKind::Call(
            f.to_string(),
            args.into_iter().map(|value| Arg { key: None, value }).collect(),
        ),
        span,
    )
}

fn call_kw(f: &str, args: Vec<Expr>, kw: Vec<(&str, Expr)>, span: Span) -> Expr {
    let mut v: Vec<Arg> = args.into_iter().map(|value| Arg { key: None, value }).collect();
    v.extend(kw.into_iter().map(|(k, value)| Arg {
        key: Some(Ident::spanned(k, span)),
        value,
    }));
    ex(ExprKind::Call(f.to_string(), v), span)
}

fn int_e(v: i64, span: Span) -> Expr {
    with_span(Expr::int(v), span)
}

fn list_e(v: &[i64], span: Span) -> Expr {
    ex(ExprKind::List(v.iter().map(|&x| int_e(x, span)).collect()), span)
}

fn bin(op: BinOp, a: Expr, b: Expr, span: Span) -> Expr {
    ex(ExprKind::Binary(op, Box::new(a), Box::new(b)), span)
}

fn index(base: Expr, items: Vec<IndexItem>, span: Span) -> Expr {
    ex(ExprKind::Index(Box::new(base), items), span)
}

fn is_true(e: &Expr) -> bool {
    matches!(e.kind, ExprKind::Bool(true))
}

fn dtype_of(e: Elem, span: Span) -> R<DType> {
    e.dtype().ok_or_else(|| ImportError::UnsupportedType {
        message: format!("element type {e:?} has no bwsim equivalent"),
        span,
    })
}

/// Whether `e` mentions the name `n`.
fn mentions(e: &Expr, n: &str) -> bool {
    match &e.kind {
        ExprKind::Name(m) => m == n,
        ExprKind::Unary(_, a) | ExprKind::Field(a, _) => mentions(a, n),
        ExprKind::Binary(_, a, b) => mentions(a, n) || mentions(b, n),
        ExprKind::Call(_, args) => args.iter().any(|a| mentions(&a.value, n)),
        ExprKind::Index(b, items) => {
            mentions(b, n)
                || items.iter().any(|i| match i {
                    IndexItem::Expr(e) => mentions(e, n),
                    IndexItem::Slice(a, b) => {
                        a.as_ref().is_some_and(|e| mentions(e, n))
                            || b.as_ref().is_some_and(|e| mentions(e, n))
                    }
                    IndexItem::NewAxis => false,
                })
        }
        ExprKind::List(v) => v.iter().any(|e| mentions(e, n)),
        _ => false,
    }
}

/// Parsed `: signature` of an operation.
struct Sig {
    /// The operand types it prints (before `->`), one CTA's pieces in a cluster kernel.
    inputs: Vec<Type>,
    outputs: Vec<Type>,
}

/// An operand item: `%v` with the values inside a following `[...]` (coordinates, tokens,
/// predicates).
struct Item {
    name: String,
    span: Span,
    bracket: Vec<(String, Span)>,
}

impl<'m> Cx<'m> {
    // ---- scopes and names ---------------------------------------------------------------

    fn bind(&mut self, name: &str, v: Val) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), v);
        }
    }

    fn get(&self, name: &str, span: Span) -> R<Val> {
        for s in self.scopes.iter().rev() {
            if let Some(v) = s.get(name) {
                return Ok(v.clone());
            }
        }
        Err(ImportError::Undefined {
            name: name.to_string(),
            span,
        })
    }

    /// A new unique name from an SSA name or hint.
    fn fresh(&mut self, hint: &str) -> String {
        let mut base: String = hint.split('#').next().unwrap_or("v").to_string();
        // Drop MLIR's uniquing suffix `_12`.
        if let Some(i) = base.rfind('_') {
            let (head, tail) = base.split_at(i);
            if !head.is_empty() && tail.len() > 1 && tail[1..].chars().all(|c| c.is_ascii_digit()) {
                base = head.to_string();
            }
        }
        let mut s: String = base
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
            s = format!("v{s}");
        }
        let mut name = s.clone();
        let mut k = 2;
        while self.names.contains(&name) || OpKind::NAMES.contains(&name.as_str()) {
            name = format!("{s}_{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }

    /// A parameter keeps its Python name (launch sections bind parameters by name), unless
    /// the name is a keyword or an operation of the `.tile` grammar.
    fn param_name(&mut self, ssa: &str) -> String {
        let clash =
            |n: &str| KEYWORDS.contains(&n) || OpKind::NAMES.contains(&n) || DType::from_name(n).is_some();
        let mut name = ssa.to_string();
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            || name.starts_with(|c: char| c.is_ascii_digit())
            || clash(&name)
        {
            return self.fresh(ssa);
        }
        while self.params_seen.contains(&name) {
            name.push('_');
        }
        self.params_seen.insert(name.clone());
        self.names.insert(name.clone());
        name
    }

    fn push(&mut self, kind: StmtKind, span: Span) {
        if let Some(b) = self.blocks.last_mut() {
            b.push(Stmt::new(Vec::new(), kind, span));
        }
    }

    fn let_(&mut self, hint: &str, rhs: Rhs, span: Span) -> String {
        let n = self.fresh(hint);
        self.push(
            StmtKind::Let {
                names: vec![Ident::spanned(n.clone(), span)],
                value: rhs,
            },
            span,
        );
        n
    }

    /// `let r = e`, with `r` bound to the new name: as a splat (every element the same scalar,
    /// see [`Val::Splat`]) when `splat`, else as a plain value of type `ty`.
    fn let_val(&mut self, r: &str, e: Expr, ty: Type, splat: bool, span: Span) {
        let n = name_e(&self.let_(r, Rhs::Expr(e), span), span);
        self.bind(r, if splat { Val::Splat(n, ty) } else { Val::E(n, ty) });
    }

    fn let_op(&mut self, hint: &str, kind: OpKind, span: Span) -> String {
        self.let_(hint, Rhs::Op(IrOp::new(kind, span)), span)
    }

    fn op_stmt(&mut self, kind: OpKind, span: Span) {
        self.push(StmtKind::Op(IrOp::new(kind, span)), span);
    }

    /// Opens a block of statements that [`Cx::close_if`] then guards.
    fn open_block(&mut self) {
        self.blocks.push(Vec::new());
    }

    /// Closes the block opened last as the body of `if cond { ... }`.
    fn close_if(&mut self, cond: Expr, span: Span) {
        let stmts = self.blocks.pop().unwrap_or_default();
        self.push(
            StmtKind::If {
                cond,
                then_body: Block {
                    stmts,
                    end_comments: Vec::new(),
                },
                else_body: None,
            },
            span,
        );
    }

    /// `op`, guarded by `if pred { }` unless the predicate is `true`.
    fn op_pred(&mut self, kind: OpKind, pred: Option<Expr>, span: Span) {
        match pred {
            Some(p) if !is_true(&p) => {
                let body = Block {
                    stmts: vec![Stmt::new(Vec::new(), StmtKind::Op(IrOp::new(kind, span)), span)],
                    end_comments: Vec::new(),
                };
                self.push(
                    StmtKind::If {
                        cond: p,
                        then_body: body,
                        else_body: None,
                    },
                    span,
                );
            }
            _ => self.op_stmt(kind, span),
        }
    }

    // ---- spans --------------------------------------------------------------------------

    /// The span of an operation: its Python line, else its TTGIR line.
    fn span_of(&self, op: &Op) -> Span {
        self.loc_span(op.loc.as_deref()).unwrap_or(op.span)
    }

    fn loc_span(&self, loc: Option<&[Token]>) -> Option<Span> {
        let f = self.locs.user_frame(loc?)?;
        self.src.span(&f)
    }

    // ---- layouts and types --------------------------------------------------------------

    /// A register layout as a bwsim layout expression (declaring named layouts for aliases).
    /// Every register layout alias a `ttng.tmem_load` produces or a `ttng.tmem_store` stores
    /// from, when it is a layout tensor memory can be accessed with (checked again, with its
    /// error, at the operation).
    fn collect_tmem_layouts(&mut self, ops: &[Op]) {
        for op in ops {
            let found = match op.name.as_str() {
                "ttng.tmem_load" => self.sig(op).ok().and_then(|s| s.outputs.last().cloned()),
                "ttng.tmem_store" => {
                    let c = Cursor::new(&op.toks, op.span);
                    c.find_top(":").and_then(|at| {
                        let mut tc = Cursor::new(&op.toks[at + 1..], op.span);
                        parse_type(&mut tc).ok()
                    })
                }
                _ => None,
            };
            if let Some(Type::Tensor {
                enc: Some(AttrVal::Alias(a)),
                ..
            }) = found
            {
                if let Ok(l) = self.attrs.layout(&AttrVal::Alias(a.clone()), op.span) {
                    // The block is checked at the operation; any block will do to recognise one.
                    if [128, 64].iter().any(|&bm| tmem_access_check(&l, bm).is_ok()) {
                        self.tmem_layouts.insert(a);
                    }
                }
            }
            for r in &op.regions {
                self.collect_tmem_layouts(&r.ops);
            }
        }
    }

    /// The block rows of the tensor-memory buffer `%name` (128 when not known); None for a
    /// scale-factor buffer, whose every row has a copy in each lane quarter
    /// (docs/hardware/tmem-scales.md), so any warp reaches it.
    fn tmem_block_m(&self, name: &str, span: Span) -> Option<i64> {
        match self.val_type(name, span) {
            Ok(Type::MemDesc { enc, .. }) => match self.attrs.layout(&enc, span) {
                Ok(Layout::TmemEncoding { block_m, .. }) => Some(block_m),
                Ok(Layout::TmemScales) => None,
                _ => Some(128),
            },
            _ => Some(128),
        }
    }

    fn layout_expr(&mut self, v: &AttrVal, span: Span) -> R<Option<Expr>> {
        if let AttrVal::Alias(a) = v {
            if self.tmem_layouts.contains(a) {
                return Ok(Some(name_e("tmem32x32b", span)));
            }
            if !a.contains('.') {
                if let Some(n) = self.layout_names.get(a) {
                    return Ok(Some(name_e(n, span)));
                }
                let l = self.attrs.layout(v, span)?;
                let Some(e) = self.layout_value(&l, span)? else {
                    return Ok(None);
                };
                let n = self.fresh(&format!("{a}_layout"));
                self.layout_names.insert(a.clone(), n.clone());
                self.layouts.push(LayoutDecl {
                    comments: Vec::new(),
                    name: Ident::spanned(n.clone(), span),
                    value: e,
                    span,
                });
                return Ok(Some(name_e(&n, span)));
            }
        }
        match v {
            AttrVal::Dialect(n, d) if n == "ttg.slice" => {
                let dim =
                    d.get("dim")
                        .and_then(|x| x.as_int())
                        .ok_or_else(|| ImportError::UnsupportedType {
                            message: "slice layout without `dim`".into(),
                            span,
                        })?;
                let parent = d.get("parent").ok_or_else(|| ImportError::UnsupportedType {
                    message: "slice layout without `parent`".into(),
                    span,
                })?;
                Ok(self
                    .layout_expr(parent, span)?
                    .map(|p| call("slice", vec![int_e(dim, span), p], span)))
            }
            _ => {
                let l = self.attrs.layout(v, span)?;
                self.layout_value(&l, span)
            }
        }
    }

    fn layout_value(&mut self, l: &Layout, span: Span) -> R<Option<Expr>> {
        Ok(match l {
            Layout::Blocked { spt, tpw, wpc, order } => Some(call(
                "blocked",
                vec![
                    list_e(spt, span),
                    list_e(tpw, span),
                    list_e(wpc, span),
                    list_e(order, span),
                ],
                span,
            )),
            Layout::Slice { dim, parent } => self
                .layout_value(parent, span)?
                .map(|p| call("slice", vec![int_e(*dim, span), p], span)),
            Layout::NvidiaMma {
                major: 3,
                warps,
                instr,
            } if warps.len() == 2 && instr.len() == 3 => Some(call_kw(
                "wgmma",
                vec![],
                vec![("warps", list_e(warps, span)), ("n", int_e(instr[1], span))],
                span,
            )),
            // The 32x32b TMEM message layout (one row per thread), as `get_tmem_reg_layout`
            // gives it for 128-row tiles; slices of it are the row vectors of an online softmax.
            l if is_tmem_32x32b(l) => Some(name_e("tmem32x32b", span)),
            _ => None,
        })
    }

    /// A layout that must be expressible (arange, full).
    fn required_layout(&mut self, ty: &Type, span: Span) -> R<Expr> {
        let enc = ty.encoding().ok_or_else(|| ImportError::UnsupportedType {
            message: "a tensor without a layout".into(),
            span,
        })?;
        match self.layout_expr(enc, span)? {
            Some(e) => Ok(e),
            None => Err(ImportError::UnsupportedType {
                message: format!(
                    "layout {} has no bwsim equivalent here",
                    self.layout_name(enc, span)
                ),
                span,
            }),
        }
    }

    fn layout_name(&self, v: &AttrVal, span: Span) -> String {
        match self.attrs.layout(v, span) {
            Ok(Layout::Linear { .. }) => "#ttg.linear".into(),
            Ok(Layout::NvidiaMma { major, .. }) => format!("#ttg.nvidia_mma (version {major})"),
            Ok(Layout::Other(n)) => format!("#{n}"),
            Ok(l) => format!("{l:?}"),
            Err(_) => format!("{v:?}"),
        }
    }

    fn smem_layout(&mut self, enc: &AttrVal, span: Span) -> R<Expr> {
        match self.attrs.layout(enc, span)? {
            Layout::NvmmaShared {
                swizzle,
                transposed,
                fp4_padded,
            } => {
                let mut kw = Vec::new();
                if transposed {
                    kw.push(("transposed", with_span(Expr::bool(true), span)));
                }
                if fp4_padded {
                    kw.push(("fp4_padded", with_span(Expr::bool(true), span)));
                }
                Ok(call_kw("nvmma", vec![int_e(swizzle, span)], kw, span))
            }
            Layout::SwizzledShared {
                vec: 1,
                per_phase: 1,
                max_phase: 1,
                ..
            } => Ok(name_e("plain", span)),
            Layout::SwizzledShared {
                vec,
                per_phase,
                max_phase,
                order,
            } if order.windows(2).all(|w| w[0] > w[1]) => Ok(call(
                "swizzled",
                vec![int_e(vec, span), int_e(per_phase, span), int_e(max_phase, span)],
                span,
            )),
            Layout::SharedLinear { offset } => Ok(call(
                "linear",
                vec![ex(
                    ExprKind::List(offset.iter().map(|b| list_e(b, span)).collect()),
                    span,
                )],
                span,
            )),
            other => Err(ImportError::UnsupportedType {
                message: format!("shared-memory layout {other:?} has no bwsim equivalent"),
                span,
            }),
        }
    }

    fn shaped(&self, elem: Elem, shape: &[i64], span: Span) -> R<Expr> {
        Ok(self.shaped_as(dtype_of(elem, span)?, shape, span))
    }

    /// `DTYPE[dims]` as a type expression.
    fn shaped_as(&self, d: DType, shape: &[i64], span: Span) -> Expr {
        index(
            name_e(d.name(), span),
            shape.iter().map(|&x| IndexItem::Expr(int_e(x, span))).collect(),
            span,
        )
    }

    /// A tile of `ty` filled with `v`.
    fn full(&mut self, ty: &Type, v: Expr, span: Span) -> R<Expr> {
        let (Some(shape), Some(elem)) = (ty.shape(), ty.elem()) else {
            return Err(ImportError::UnsupportedType {
                message: "expected a tensor type".into(),
                span,
            });
        };
        let d = dtype_of(elem, span)?;
        let layout = self.required_layout(ty, span)?;
        Ok(call(
            "full",
            vec![list_e(shape, span), v, name_e(d.name(), span), layout],
            span,
        ))
    }

    // ---- values -------------------------------------------------------------------------

    /// A value as an expression usable anywhere a value of its type is.
    fn expr(&mut self, name: &str, span: Span) -> R<Expr> {
        match self.get(name, span)? {
            Val::E(e, _) => Ok(e),
            Val::Splat(s, ty) => self.full(&ty, s, span),
            Val::Mbars(e) => Ok(e),
            Val::Ptr { .. } => Err(ImportError::Unsupported {
                op: "pointer".into(),
                message: format!("`%{name}` (a pointer) is used where bwsim needs a value"),
                span,
                ttgir: span,
            }),
            Val::Clc(_) => Err(ImportError::Unsupported {
                op: "clc result".into(),
                message: format!(
                    "`%{name}` is a cluster-launch-control response: bwsim reads it through \
                     `clc_is_canceled` and `clc_get_program_id`"
                ),
                span,
                ttgir: span,
            }),
            Val::Token => Err(ImportError::Unsupported {
                op: "async token".into(),
                message: format!("`%{name}` is an async token; bwsim orders by program order"),
                span,
                ttgir: span,
            }),
            Val::Unusable(m) => Err(ImportError::Unsupported {
                op: format!("%{name}"),
                message: m,
                span,
                ttgir: span,
            }),
            Val::Poison => Err(ImportError::Cascade { span }),
        }
    }

    /// An operand of elementwise math: splats as their scalar.
    fn math_operand(&mut self, name: &str, span: Span) -> R<Expr> {
        match self.get(name, span)? {
            Val::Splat(s, _) => Ok(s),
            _ => self.expr(name, span),
        }
    }

    fn val_type(&self, name: &str, span: Span) -> R<Type> {
        Ok(match self.get(name, span)? {
            Val::E(_, t) | Val::Splat(_, t) => t,
            Val::Ptr { ty, .. } => ty,
            _ => Type::Other("value".into()),
        })
    }

    fn is_poison(&self, name: &str) -> bool {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .is_some_and(|v| matches!(v, Val::Poison))
    }

    // ---- module and function ------------------------------------------------------------

    fn module(&mut self, m: &Module) -> R<Kernel> {
        let module = m
            .ops
            .iter()
            .find(|o| o.name == "module")
            .ok_or_else(|| ImportError::Module {
                message: "no `module` in the file".into(),
                span: self.src.ttgir_span(),
            })?;
        let mut c = Cursor::new(&module.toks, module.span);
        let mut mattrs = AttrVal::Dict(Vec::new());
        if c.eat_ident("attributes") {
            mattrs = attr_val(&mut c)?;
        }
        let target = match mattrs.get("ttg.target") {
            Some(AttrVal::Str(s)) if s == "cuda:100" => Target::Sm100a,
            Some(AttrVal::Str(s)) if s == "cuda:90" => Target::Sm90a,
            other => {
                return Err(ImportError::Module {
                    message: format!(
                        "target {} is not supported (bwsim runs cuda:100 as sm_100a and cuda:90 as sm_90a)",
                        match other {
                            Some(AttrVal::Str(s)) => format!("`{s}`"),
                            _ => "(none)".into(),
                        }
                    ),
                    span: module.span,
                })
            }
        };
        let num_warps = mattrs.get("ttg.num-warps").and_then(|v| v.as_int()).unwrap_or(4);
        self.warps = num_warps;
        if let Some(n) = mattrs.get("ttg.num-ctas").and_then(|v| v.as_int()) {
            if !matches!(n, 1 | 2 | 4 | 8 | 16) {
                return Err(ImportError::Module {
                    message: format!(
                        "a cluster kernel of {n} CTAs (`ttg.num-ctas = {n}`): clusters have 1, 2, 4, 8 or 16 CTAs"
                    ),
                    span: module.span,
                });
            }
            self.num_ctas = n;
        }
        if let Some(n) = mattrs.get("ttg.threads-per-warp").and_then(|v| v.as_int()) {
            if n != 32 {
                return Err(ImportError::Module {
                    message: format!("{n} threads per warp: NVIDIA warps have 32"),
                    span: module.span,
                });
            }
        }
        let body = module.regions.first().ok_or_else(|| ImportError::Module {
            message: "the module has no body".into(),
            span: module.span,
        })?;
        let funcs: Vec<&Op> = body.ops.iter().filter(|o| o.name == "tt.func").collect();
        let func =
            match funcs.as_slice() {
                [f] => *f,
                [] => {
                    return Err(ImportError::Module {
                        message: "no `tt.func` kernel in the module".into(),
                        span: module.span,
                    })
                }
                [_, second, ..] => return Err(ImportError::UnsupportedOp {
                    op: "tt.func".into(),
                    span: self.span_of(second),
                    ttgir: second.span,
                    detail: Some(
                        "the module has several functions (a `noinline` helper?); bwsim imports one kernel"
                            .into(),
                    ),
                }),
            };
        collect_uses(&func.regions, &mut self.used);
        self.func(func, target, num_warps)
    }

    fn func(&mut self, f: &Op, target: Target, num_warps: i64) -> R<Kernel> {
        let fspan = self.span_of(f);
        let mut c = Cursor::new(&f.toks, f.span);
        while !matches!(c.peek(), Tok::Symbol(_) | Tok::Eof) {
            c.bump();
        }
        let name = match c.peek().clone() {
            Tok::Symbol(s) => {
                c.bump();
                s
            }
            _ => return Err(c.err("expected the kernel's `@name`")),
        };
        let args = c.group()?;
        // Split the arguments at top-level commas.
        let mut parts: Vec<&[Token]> = Vec::new();
        let mut depth = 0i64;
        let mut start = 0;
        for (i, t) in args.iter().enumerate() {
            match t.tok {
                Tok::Punct("(") | Tok::Punct("[") | Tok::Punct("{") | Tok::Punct("<") => depth += 1,
                Tok::Punct(")") | Tok::Punct("]") | Tok::Punct("}") | Tok::Punct(">") => depth -= 1,
                Tok::Punct(",") if depth == 0 => {
                    parts.push(&args[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        if start < args.len() {
            parts.push(&args[start..]);
        }
        struct FArg {
            ssa: String,
            ty: Type,
            loc_name: Option<String>,
            span: Span,
        }
        let mut fargs = Vec::new();
        for p in parts {
            let mut pc = Cursor::new(p, f.span);
            let (ssa, sp) = pc.value()?;
            pc.expect(":")?;
            let ty = self.localize(parse_type(&mut pc)?, f.span)?;
            let mut loc_name = None;
            let mut span = sp;
            if pc.eat_ident("loc") {
                let inner = pc.group()?;
                loc_name = self.locs.name(inner);
                span = self.loc_span(Some(inner)).unwrap_or(sp);
            }
            fargs.push(FArg {
                ssa,
                ty,
                loc_name,
                span,
            });
        }
        let mut params = Vec::new();
        let mut i = 0;
        while i < fargs.len() {
            let a = &fargs[i];
            let pname = self.param_name(&a.ssa);
            let span = a.span;
            let ty_expr = match &a.ty {
                Type::TensorDesc { block, elem, enc } => {
                    let enc = enc.clone().ok_or_else(|| ImportError::UnsupportedType {
                        message: "a tensor descriptor without a shared layout".into(),
                        span,
                    })?;
                    let layout = self.smem_layout(&enc, span)?;
                    let shaped = self.shaped(*elem, block, span)?;
                    self.bind(&a.ssa, Val::E(name_e(&pname, span), a.ty.clone()));
                    // Triton passes the global shape (i32 each) and strides (i64 each) after it,
                    // located at the descriptor's name (3.6, 3.7) or at `NAME.shape.K` /
                    // `NAME.stride.K` (3.8 and later, which name the values so too).
                    let rank = block.len();
                    let part_of = |x: &FArg, k: usize| -> bool {
                        let (Some(d), Some(n)) = (&a.loc_name, &x.loc_name) else { return false };
                        let dotted = if k < rank {
                            format!("{d}.shape.{k}")
                        } else {
                            format!("{d}.stride.{}", k - rank)
                        };
                        n == d || *n == dotted
                    };
                    for k in 0..2 * rank {
                        let Some(x) = fargs.get(i + 1 + k) else { break };
                        if !part_of(x, k) {
                            break;
                        }
                        let v = if k < rank {
                            Val::E(
                                index(
                                    ex(ExprKind::Field(Box::new(name_e(&pname, span)), "shape".into()), span),
                                    vec![IndexItem::Expr(int_e(k as i64, span))],
                                    span,
                                ),
                                Type::Scalar(Elem::I32),
                            )
                        } else {
                            Val::Unusable(format!(
                                "the stride of `{pname}` (dimension {}) is not available in bwsim's IR",
                                k - rank
                            ))
                        };
                        self.bind(&x.ssa, v);
                        self.names.insert(x.ssa.clone());
                    }
                    let mut skip = 0;
                    while skip < 2 * rank && fargs.get(i + 1 + skip).is_some_and(|x| part_of(x, skip)) {
                        skip += 1;
                    }
                    i += skip;
                    call("tensor_desc", vec![shaped, layout], span)
                }
                Type::Ptr(inner) => {
                    let elem = inner.elem().ok_or_else(|| ImportError::UnsupportedType {
                        message: "a pointer to pointers".into(),
                        span,
                    })?;
                    let d = dtype_of(elem, span)?;
                    self.bind(
                        &a.ssa,
                        Val::Ptr {
                            base: pname.clone(),
                            offs: None,
                            ty: a.ty.clone(),
                        },
                    );
                    call("ptr", vec![name_e(d.name(), span)], span)
                }
                Type::Scalar(e @ (Elem::I32 | Elem::I64 | Elem::F32)) => {
                    self.bind(&a.ssa, Val::E(name_e(&pname, span), a.ty.clone()));
                    let n = match e {
                        Elem::I32 => "i32",
                        Elem::I64 => "i64",
                        _ => "f32",
                    };
                    name_e(n, span)
                }
                other => {
                    return Err(ImportError::UnsupportedType {
                        message: format!("kernel parameter `{}` of type {other:?}: bwsim takes i32, i64, f32, pointers and tensor descriptors", a.ssa),
                        span,
                    })
                }
            };
            params.push(Param {
                comments: Vec::new(),
                name: Ident::spanned(pname, span),
                ty: ty_expr,
                span,
            });
            i += 1;
        }
        let Some(Tok::Region(r)) = f
            .toks
            .iter()
            .rev()
            .map(|t| &t.tok)
            .find(|t| matches!(t, Tok::Region(_)))
        else {
            return Err(ImportError::Module {
                message: "the kernel has no body".into(),
                span: f.span,
            });
        };
        self.compiler_fences = self.plan_proxy_fences(&f.regions[*r])?;
        let body = self.region_block(&f.regions[*r], &[])?;
        let mut k = Kernel {
            comments: Vec::new(),
            name: Ident::spanned(name, fspan),
            targets: vec![target],
            num_warps: int_e(num_warps, fspan),
            consts: Vec::new(),
            params,
            layouts: std::mem::take(&mut self.layouts),
            body,
            launch: None,
            trailing_comments: Vec::new(),
            span: fspan,
        };
        k.number_nodes();
        Ok(k)
    }

    /// Import a region's operations into a new block, with `bindings` visible in it. The
    /// terminators (`tt.return`, `ttg.warp_yield`, `ttg.warp_return`) end the block.
    fn region_block(&mut self, r: &Region, bindings: &[(String, Val)]) -> R<Block> {
        // The kernel's own body of a cluster kernel gets what Triton's compiler adds to it
        // (crate::import::cluster).
        let cluster_body = self.blocks.is_empty() && self.num_ctas > 1;
        let last_init = r
            .ops
            .iter()
            .rposition(|o| o.name == "ttng.init_barrier")
            .filter(|_| cluster_body && self.version >= Version::V3_8);
        if cluster_body {
            self.two_cta_module = self.has_two_cta_mma(&r.ops)?;
        }
        let last_init = match last_init {
            Some(i) if self.needs_init_sync(&r.ops)? => Some(i),
            _ => None,
        };
        self.scopes.push(HashMap::new());
        for (n, v) in bindings {
            self.bind(n, v.clone());
        }
        self.blocks.push(Vec::new());
        for (i, op) in r.ops.iter().enumerate() {
            if cluster_body && op.name == "tt.return" {
                let span = self.span_of(op);
                self.cluster_exit_sync(span);
            }
            if matches!(
                op.name.as_str(),
                "tt.return" | "ttg.warp_return" | "ttg.warp_yield" | "scf.yield"
            ) {
                if matches!(op.name.as_str(), "tt.return" | "ttg.warp_yield")
                    && self.operand_items(op)?.iter().any(|_| true)
                {
                    self.errors.push(ImportError::UnsupportedOp {
                        op: op.name.clone(),
                        span: self.span_of(op),
                        ttgir: op.span,
                        detail: Some(
                            "returning values from a kernel or from the default partition is not supported"
                                .into(),
                        ),
                    });
                }
                continue;
            }
            self.op_or_report(op);
            if last_init == Some(i) {
                // Released before the barriers' first use (crate::import::cluster).
                self.init_sync_pending = true;
            }
        }
        let stmts = self.blocks.pop().unwrap_or_default();
        self.scopes.pop();
        Ok(Block {
            stmts,
            end_comments: Vec::new(),
        })
    }

    fn op_or_report(&mut self, op: &Op) {
        if self.compiler_fences.contains(&op.span.start) {
            // What the compiler adds after TTGIR ([`proxy_fences`]), at the operation's line,
            // where the compiler locates it; the comment says so in `bwsim import`'s output.
            let span = self.span_of(op);
            let stmt = Stmt::new(
                vec!["// added by Triton's proxy-fence pass when it lowers the TTGIR".to_string()],
                StmtKind::Op(IrOp::new(OpKind::FenceAsyncShared {}, span)),
                span,
            );
            if let Some(b) = self.blocks.last_mut() {
                b.push(stmt);
            }
        }
        // An operation using a value that failed to import fails silently (it was reported).
        let uses_poison = op
            .toks
            .iter()
            .any(|t| matches!(&t.tok, Tok::Value(v) if self.is_poison(v)));
        let r = if uses_poison {
            Err(ImportError::Cascade { span: op.span })
        } else {
            self.op(op)
        };
        if let Err(e) = r {
            let silent = matches!(e, ImportError::Cascade { .. });
            if !silent {
                self.errors.push(e);
            }
            for res in &op.results {
                self.bind(res, Val::Poison);
            }
        }
    }

    // ---- operand helpers ----------------------------------------------------------------

    /// The operand tokens: up to the top-level `:` of the signature (or a region).
    fn operand_toks<'a>(&self, op: &'a Op) -> &'a [Token] {
        let c = Cursor::new(&op.toks, op.span);
        let colon = c.find_top(":").unwrap_or(op.toks.len());
        let region = op
            .toks
            .iter()
            .position(|t| matches!(t.tok, Tok::Region(_)))
            .unwrap_or(op.toks.len());
        &op.toks[..colon.min(region)]
    }

    /// Operands as items (`%v` with the values of a following `[...]`), stopping at `deps`.
    fn operand_items(&self, op: &Op) -> R<Vec<Item>> {
        let toks = self.operand_toks(op);
        let mut c = Cursor::new(toks, op.span);
        let mut v: Vec<Item> = Vec::new();
        while !c.at_end() {
            match c.peek().clone() {
                Tok::Value(n) => {
                    let span = c.span();
                    c.bump();
                    let mut bracket = Vec::new();
                    if matches!(c.peek(), Tok::Punct("[")) {
                        for t in c.group()? {
                            if let Tok::Value(b) = &t.tok {
                                bracket.push((b.clone(), t.span));
                            }
                        }
                    }
                    v.push(Item {
                        name: n,
                        span,
                        bracket,
                    });
                }
                Tok::Ident(w) if w == "deps" => break,
                Tok::Punct("{") => c.skip_item(),
                _ => {
                    c.bump();
                }
            }
        }
        Ok(v)
    }

    /// Plain operand names (bracket contents flattened after their item).
    fn operands(&self, op: &Op) -> R<Vec<(String, Span)>> {
        let mut v = Vec::new();
        for it in self.operand_items(op)? {
            v.push((it.name, it.span));
            v.extend(it.bracket);
        }
        Ok(v)
    }

    /// The attribute dictionary `{...}` of an operation (also `<{...}>` properties).
    fn attr_dict(&self, op: &Op) -> R<AttrVal> {
        let mut c = Cursor::new(&op.toks, op.span);
        let mut out = Vec::new();
        let mut depth = 0i64;
        while !c.at_end() {
            match c.peek() {
                Tok::Punct("{") if depth == 0 => {
                    if let AttrVal::Dict(d) = attr_val(&mut c)? {
                        out.extend(d);
                    }
                }
                Tok::Punct("<") if matches!(c.peek_at(1), Tok::Punct("{")) => {
                    c.bump();
                    if let AttrVal::Dict(d) = attr_val(&mut c)? {
                        out.extend(d);
                    }
                    c.eat(">");
                }
                Tok::Punct("(") | Tok::Punct("[") => {
                    depth += 1;
                    c.bump();
                }
                Tok::Punct(")") | Tok::Punct("]") => {
                    depth -= 1;
                    c.bump();
                }
                Tok::Punct(":") if depth == 0 => break,
                _ => {
                    c.bump();
                }
            }
        }
        Ok(AttrVal::Dict(out))
    }

    fn sig(&self, op: &Op) -> R<Sig> {
        let c0 = Cursor::new(&op.toks, op.span);
        // `: (inputs) -> outputs`, or for `scf.if` with results, `-> (outputs)` before the body.
        let first_region = op.toks.iter().position(|t| matches!(t.tok, Tok::Region(_)));
        let arrow_first = |c: usize| first_region.is_some_and(|r| r < c);
        let colon = match (c0.find_top(":"), c0.find_top("->")) {
            (Some(c), _) if !arrow_first(c) => c,
            (_, Some(a)) if first_region.is_none_or(|r| a < r) => a.saturating_sub(1),
            (Some(c), _) => c,
            _ => {
                return Ok(Sig {
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                })
            }
        };
        let end = op.toks[colon..]
            .iter()
            .position(|t| matches!(t.tok, Tok::Region(_)))
            .map_or(op.toks.len(), |p| colon + p);
        let mut c = Cursor::new(&op.toks[colon + 1..end], op.span);
        let list = |c: &mut Cursor| -> R<Vec<Type>> {
            let mut v = Vec::new();
            if matches!(c.peek(), Tok::Punct("(")) {
                let inner = c.group()?;
                let mut ic = Cursor::new(inner, op.span);
                while !ic.at_end() {
                    v.push(parse_type(&mut ic)?);
                    ic.eat(",");
                }
                return Ok(v);
            }
            loop {
                if c.at_end()
                    || matches!(c.peek(), Tok::Punct("->"))
                    || matches!(c.peek(), Tok::Ident(w) if w == "to")
                {
                    break;
                }
                v.push(parse_type(c)?);
                if !(c.eat(",") || c.eat("*")) {
                    break;
                }
            }
            Ok(v)
        };
        let local =
            |v: Vec<Type>| -> R<Vec<Type>> { v.into_iter().map(|t| self.localize(t, op.span)).collect() };
        let inputs = local(list(&mut c)?)?;
        let mut outputs = if c.eat("->") || c.eat_ident("to") {
            local(list(&mut c)?)?
        } else {
            inputs.clone()
        };
        if let Some(Type::Tensor { shape, enc, .. }) = &self.elementwise {
            for t in &mut outputs {
                if let Type::Scalar(e) = t {
                    *t = Type::Tensor {
                        shape: shape.clone(),
                        elem: Box::new(Type::Scalar(*e)),
                        enc: enc.clone(),
                    };
                }
            }
        }
        Ok(Sig { inputs, outputs })
    }

    /// The type of result `i` (from the signature's outputs, last ones first).
    fn result_type(&self, op: &Op, i: usize) -> R<Type> {
        let s = self.sig(op)?;
        let n = op.results.len();
        if s.outputs.len() >= n && n > 0 {
            return Ok(s.outputs[s.outputs.len() - n + i].clone());
        }
        s.outputs.last().cloned().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` has no type signature", op.name),
        })
    }

    fn unsupported(&self, op: &Op, detail: &str) -> ImportError {
        ImportError::UnsupportedOp {
            op: op.name.clone(),
            span: self.span_of(op),
            ttgir: op.span,
            detail: if detail.is_empty() {
                None
            } else {
                Some(detail.to_string())
            },
        }
    }

    /// The integer attribute `key` of `op`, which the operation must carry.
    fn int_attr(&self, op: &Op, key: &str) -> R<i64> {
        let v = self.attr_dict(op)?.get(key).and_then(|x| x.as_int());
        v.ok_or_else(|| self.misuse(op, format!("needs `{key}`")))
    }

    /// The integer-list attribute `key` of `op`, which the operation must carry.
    fn ints_attr(&self, op: &Op, key: &str) -> R<Vec<i64>> {
        let v = self.attr_dict(op)?.get(key).and_then(|x| x.ints());
        v.ok_or_else(|| self.misuse(op, format!("needs `{key}`")))
    }

    fn misuse(&self, op: &Op, message: impl Into<String>) -> ImportError {
        ImportError::Unsupported {
            op: op.name.clone(),
            message: message.into(),
            span: self.span_of(op),
            ttgir: op.span,
        }
    }

    fn n_operands(&self, op: &Op, n: usize) -> R<Vec<(String, Span)>> {
        let v = self.operands(op)?;
        if v.len() < n {
            return Err(ImportError::Syntax {
                span: op.span,
                message: format!("`{}` expects {n} operands, found {}", op.name, v.len()),
            });
        }
        Ok(v)
    }

    /// An optional predicate operand: None when it is the constant `true`.
    fn pred(&mut self, v: Option<&(String, Span)>) -> R<Option<Expr>> {
        match v {
            None => Ok(None),
            Some((n, s)) => {
                let e = self.expr(n, *s)?;
                Ok(if is_true(&e) { None } else { Some(e) })
            }
        }
    }

    fn result(&self, op: &Op, i: usize) -> R<String> {
        op.results.get(i).cloned().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` should have a result", op.name),
        })
    }
}

/// An integer tensor with the shape and layout of a pointer tensor.
/// The SSA values read by the operations of `regions`, nested ones included.
fn collect_uses(regions: &[Region], used: &mut HashSet<String>) {
    for r in regions {
        for op in &r.ops {
            for t in &op.toks {
                if let Tok::Value(v) = &t.tok {
                    used.insert(v.clone());
                }
            }
            collect_uses(&op.regions, used);
        }
    }
}

pub(super) fn int_tensor(pty: &Type) -> Type {
    match pty {
        Type::Tensor { shape, enc, .. } => Type::Tensor {
            shape: shape.clone(),
            elem: Box::new(Type::Scalar(Elem::I32)),
            enc: enc.clone(),
        },
        other => other.clone(),
    }
}

pub(super) fn float_e(f: f64, span: Span) -> Option<Expr> {
    let lit = if f.is_nan() {
        return Some(name_e("nan", span));
    } else if f.is_infinite() {
        name_e("inf", span)
    } else {
        ex(ExprKind::Float(f.abs()), span)
    };
    Some(if f.is_sign_negative() && f != 0.0 {
        ex(ExprKind::Unary(UnOp::Neg, Box::new(lit)), span)
    } else {
        lit
    })
}

/// Whether a TMEM load's register layout is the 32x32b message: thread t of warp w holds row
/// 32 * (w % 4) + t (lanes walk rows 1, 2, 4, 8, 16; the first two warp bases rows 32, 64), or,
/// for a TMEM block of 64 rows, its 16x32bx2 form (what `get_tmem_reg_layout` gives there).
/// The tensor-memory lane that holds row `m` of a buffer whose blocks are `block_m` rows
/// (Triton's `TensorMemoryLayout`; bwsim_sim::views places elements the same way): row
/// `m % 128` for 128-row blocks; for 64-row blocks, rows 16 at a time in the first 16 lanes of
/// each 32-lane quarter.
pub(super) fn tmem_lane(block_m: i64, m: i64) -> i64 {
    if block_m == 64 {
        let r = m.rem_euclid(64);
        (r / 16) * 32 + r % 16
    } else {
        m.rem_euclid(block_m.max(1))
    }
}

/// Whether a register layout is one a warp can load from or store to tensor memory with
/// `tcgen05.ld`/`tcgen05.st` (any message shape: 32x32b, 16x64b, 16x128b, 16x256b,
/// 16x32bx2, repeated): every element a warp holds lies in the tensor-memory lanes of its
/// quarter (PTX: warp `w` of a warpgroup accesses lanes `32 (w % 4)` to `32 (w % 4) + 31`).
/// A `#ttg.linear` layout is read as the map it denotes (register, lane and warp bits to
/// coordinates, combined by XOR); the error says which warp would reach which lane.
pub(super) fn tmem_access_check(l: &Layout, block_m: i64) -> Result<(), String> {
    match l {
        Layout::Linear { register, lane, warp } => {
            let coord = |bases: &[Vec<i64>], bits: usize| -> i64 {
                bases
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| bits >> i & 1 == 1)
                    .fold(0, |acc, (_, b)| acc ^ b.first().copied().unwrap_or(0))
            };
            if register.len() > 16 || lane.len() > 5 || warp.len() > 5 {
                return Err("a layout larger than a CTA".into());
            }
            for w in 0..1usize << warp.len() {
                let quarter = (w % 4) as i64;
                for t in 0..1usize << lane.len() {
                    for r in 0..1usize << register.len() {
                        let row = coord(warp, w) ^ coord(lane, t) ^ coord(register, r);
                        let tl = tmem_lane(block_m, row);
                        if tl / 32 != quarter {
                            return Err(format!(
                                "warp {w} would hold row {row}, which lives in tensor-memory lane {tl}, outside the \
                                 lanes {}..{} its position in the warpgroup reaches",
                                32 * quarter,
                                32 * quarter + 31
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        other if is_tmem_32x32b(other) => Ok(()),
        _ => {
            Err("it is not a tensor-memory message layout (a `#ttg.linear` from get_tmem_reg_layout)".into())
        }
    }
}

pub(super) fn is_tmem_32x32b(l: &Layout) -> bool {
    match l {
        Layout::Linear { lane, warp, .. } => {
            let rows_ok = lane.len() == 5
                && lane
                    .iter()
                    .enumerate()
                    .all(|(i, b)| b.first() == Some(&(1 << i)) && b.iter().skip(1).all(|&x| x == 0));
            let warps_ok = warp.len() >= 2
                && warp[0].first() == Some(&32)
                && warp[1].first() == Some(&64)
                && warp[..2].iter().all(|b| b.iter().skip(1).all(|&x| x == 0));
            // TMEM block M = 64 (`tcgen05.ld.16x32bx2`): lanes 0..15 walk rows 1, 2, 4, 8, the
            // upper 16 lanes take a column half, warps walk rows 16 and 32 (docs/hardware/tmem-scales.md).
            let row_only = |b: &Vec<i64>, r: i64| b.first() == Some(&r) && b.iter().skip(1).all(|&x| x == 0);
            let m64 = lane.len() == 5
                && (0..4).all(|i| row_only(&lane[i], 1 << i))
                && lane[4].first() == Some(&0)
                && lane[4].iter().skip(1).any(|&x| x != 0)
                && warp.len() >= 2
                && row_only(&warp[0], 16)
                && row_only(&warp[1], 32);
            (rows_ok && warps_ok) || m64
        }
        Layout::Blocked { spt, tpw, wpc, .. } => {
            // One row per thread, the whole row in its registers.
            spt.len() == 2
                && spt[0] == 1
                && tpw.as_slice() == [32, 1]
                && wpc.first().is_some_and(|&w| w == 4 || w == 8)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::control::enclosing_def;
    use super::*;

    #[test]
    pub(super) fn enclosing_def_finds_the_function() {
        let py =
            "def outer(a):\n    x = 1\n    for i in range(3):\n        y = x\n\ndef other():\n    pass\n";
        let at = py.find("y = x").unwrap();
        assert_eq!(enclosing_def(py, at).as_deref(), Some("outer"));
        let at = py.find("pass").unwrap();
        assert_eq!(enclosing_def(py, at).as_deref(), Some("other"));
    }

    #[test]
    pub(super) fn tmem_layout_recognition() {
        let lane: Vec<Vec<i64>> = (0..5).map(|i| vec![1 << i, 0]).collect();
        let l = Layout::Linear {
            register: vec![vec![0, 1]],
            lane: lane.clone(),
            warp: vec![vec![32, 0], vec![64, 0], vec![0, 128]],
        };
        assert!(is_tmem_32x32b(&l));
        // Triton 3.6's layout for a [64, 64] tile of a TMEM block M = 64, 4 warps.
        let l = Layout::Linear {
            register: (0..5).map(|i| vec![0, 1 << i]).collect(),
            lane: vec![vec![1, 0], vec![2, 0], vec![4, 0], vec![8, 0], vec![0, 32]],
            warp: vec![vec![16, 0], vec![32, 0]],
        };
        assert!(is_tmem_32x32b(&l));
        let l = Layout::Linear {
            register: vec![],
            lane: vec![vec![0, 1]; 5],
            warp: vec![vec![32, 0], vec![64, 0]],
        };
        assert!(!is_tmem_32x32b(&l));
    }
}
