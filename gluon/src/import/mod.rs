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
//! This module holds the import's state (`Cx`: scopes, names) and the module/function walk;
//! `layouts` turns encodings into layout expressions, `operands` reads operand tokens,
//! attributes and signatures;
//! `dispatch` matches each operation, `values` imports arithmetic, loads, stores and
//! reductions, `memory` the shared/tensor-memory, TMA and MMA operations, `control` the
//! loops, conditionals and warp specialization; `scratch` the shared scratch of layout
//! conversions where the file carries Triton's allocation; `cat` (`tt.cat`) and `thread_asm`
//! (`ttg.inline_asm`) regroup tensors thread by thread, in the registers the layout gives
//! each thread.

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

mod addresses;
mod calls;
mod cat;
mod cluster;
mod combiner;
mod control;
mod conversions;
mod dispatch;
mod general_reduce;
mod inline_asm;
mod layouts;
mod memory;
mod operands;
mod proxy_fences;
mod scratch;
mod tensormaps;
mod thread_asm;
mod values;

use layouts::tmem_access_check;
use operands::Item;

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
        bool_ptrs: HashSet::new(),
        ptr_params: HashMap::new(),
        address_params: HashMap::new(),
        compiler_fences: HashSet::new(),
        funcs: HashMap::new(),
        inlining: Vec::new(),
        placed: Vec::new(),
        scratch: HashMap::new(),
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
        "add4",
        "sub4",
        "mul4",
        "fma4",
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
    cx.address_params = addresses::address_params(&m.ops);
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
    /// Pointers to a bool parameter cast to `i8` pointers (`tt.bitcast`, Triton's store of a
    /// bool): the bytes stored through them are converted to the parameter's `i1`.
    bool_ptrs: HashSet<String>,
    /// The kernel's pointer parameters (by their `.tile` names) and their element types.
    ptr_params: HashMap<String, DType>,
    /// `i64` parameters the kernel casts to pointers, with that pointer type
    /// ([`addresses::address_params`]): declared as pointer parameters.
    address_params: HashMap<String, Type>,
    /// The operations (by the start of their TTGIR text) that Triton's proxy-fence pass puts a
    /// `fence.proxy.async` in front of when it lowers the TTGIR ([`proxy_fences`]).
    compiler_fences: HashSet<u32>,
    /// The module's other functions (`noinline` helpers, `tt.func private`), by symbol: a
    /// `tt.call` imports the callee's body in place ([`calls`]).
    funcs: HashMap<String, &'m Op>,
    /// The callees being imported, innermost last (a call of one of them is recursion).
    inlining: Vec<String>,
    /// Shared buffers at the offsets Triton's allocator gave them, where the file carries
    /// them ([`scratch`]).
    placed: Vec<scratch::Placed>,
    /// The global scratch buffers holding tensor maps, by SSA name ([`tensormaps`]).
    scratch: HashMap<String, tensormaps::Scratch>,
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

/// The SSA values an operation's tokens name, in order (its operands, before any type).
fn operand_values(toks: &[Token]) -> Vec<String> {
    toks.iter()
        .filter_map(|t| match &t.tok {
            Tok::Value(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
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

    /// `name = rhs`: a new value for an existing variable.
    fn assign(&mut self, name: &str, rhs: Rhs, span: Span) {
        self.push(
            StmtKind::Assign {
                names: vec![Ident::spanned(name.to_string(), span)],
                value: rhs,
            },
            span,
        );
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

    /// Emits `kind` as the definition of `op`'s result, which takes its name and type.
    fn define_result(&mut self, op: &Op, kind: OpKind, span: Span) -> R<()> {
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let n = self.let_op(&r, kind, span);
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
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

    // ---- values -------------------------------------------------------------------------

    /// A value as an expression usable anywhere a value of its type is.
    fn expr(&mut self, name: &str, span: Span) -> R<Expr> {
        match self.get(name, span)? {
            Val::E(e, _) => Ok(e),
            Val::Splat(s, ty) => self.full(&ty, s, span),
            Val::Mbars(e) => Ok(e),
            Val::Ptr { ty, .. } => Err(ImportError::Unsupported {
                op: "pointer".into(),
                message: if ty.is_ptr_like() {
                    format!("`%{name}` (a pointer) is used where bwsim needs a value")
                } else {
                    format!(
                        "`%{name}` (an address: a pointer as an integer) is used where bwsim needs a value: \
                         bwsim gives tensors no fixed addresses (crate::import::addresses says what it reads)"
                    )
                },
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

    fn module(&mut self, m: &'m Module) -> R<Kernel> {
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
        // The kernel is the public function; the private ones are `noinline` helpers that
        // `tt.call`s import in place (calls::func_symbol).
        let all: Vec<&'m Op> = body.ops.iter().filter(|o| o.name == "tt.func").collect();
        let public = |o: &Op| {
            o.toks
                .iter()
                .any(|t| matches!(&t.tok, Tok::Ident(w) if w == "public"))
        };
        let funcs: Vec<&'m Op> = match all.iter().filter(|o| public(o)).count() {
            1 => all.iter().copied().filter(|o| public(o)).collect(),
            _ => all.clone(),
        };
        let func = match funcs.as_slice() {
            [f] => *f,
            [] => {
                return Err(ImportError::Module {
                    message: "no `tt.func` kernel in the module".into(),
                    span: module.span,
                })
            }
            [_, second, ..] => {
                return Err(ImportError::UnsupportedOp {
                    op: "tt.func".into(),
                    span: self.span_of(second),
                    ttgir: second.span,
                    detail: Some("the module has several public functions; bwsim imports one kernel".into()),
                })
            }
        };
        for f in all {
            if !std::ptr::eq(f, func) {
                if let Some(sym) = calls::func_symbol(f) {
                    self.funcs.insert(sym, f);
                }
            }
            collect_uses(&f.regions, &mut self.used);
        }
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
                    let (shaped, layout) = self.desc_parts(block, *elem, enc, span)?;
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
                // A pointer parameter; or a pointer passed as an integer (`x.data_ptr()`) and
                // cast back, a pointer parameter whose value is its address
                // (crate::import::addresses).
                Type::Ptr(_) | Type::Scalar(Elem::I64)
                    if a.ty.is_ptr_like() || self.address_params.contains_key(&a.ssa) =>
                {
                    let pty = self.address_params.get(&a.ssa).unwrap_or(&a.ty);
                    let elem = addresses::pointee(pty).ok_or_else(|| ImportError::UnsupportedType {
                        message: "a pointer to pointers".into(),
                        span,
                    })?;
                    let d = dtype_of(elem, span)?;
                    self.ptr_params.insert(pname.clone(), d);
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
}

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

/// An integer tensor with the shape and layout of a pointer tensor.
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

#[cfg(test)]
mod tests {
    use super::control::enclosing_def;
    use super::layouts::is_tmem_32x32b;
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
