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

use crate::error::ImportError;
use crate::lexer::{Tok, Token};
use crate::loc::Locs;
use crate::source::SourceMap;
use crate::syntax::{Cursor, Module, Op, Region};
use crate::types::{attr_val, parse_type, AttrVal, Attrs, Elem, Layout, Type};
use bwsim_isa::ir::Op as IrOp;
use bwsim_isa::ir::*;
use bwsim_isa::parser::KEYWORDS;
use bwsim_isa::{DType, Span, Target};
use std::collections::{HashMap, HashSet};

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
    /// A value bwsim cannot represent; using it is an error with this message.
    Unusable(String),
    /// The result of an operation that failed to import (uses report nothing more).
    Poison,
}

/// Import the module's kernel.
pub fn import(m: &Module, src: &SourceMap) -> Result<Kernel, Vec<ImportError>> {
    let mut cx = Cx {
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
            b.push(Stmt {
                comments: Vec::new(),
                kind,
                span,
            });
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

    fn let_op(&mut self, hint: &str, kind: OpKind, span: Span) -> String {
        self.let_(hint, Rhs::Op(IrOp { kind, span }), span)
    }

    fn op_stmt(&mut self, kind: OpKind, span: Span) {
        self.push(StmtKind::Op(IrOp { kind, span }), span);
    }

    /// `op`, guarded by `if pred { }` unless the predicate is `true`.
    fn op_pred(&mut self, kind: OpKind, pred: Option<Expr>, span: Span) {
        match pred {
            Some(p) if !is_true(&p) => {
                let body = Block {
                    stmts: vec![Stmt {
                        comments: Vec::new(),
                        kind: StmtKind::Op(IrOp { kind, span }),
                        span,
                    }],
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
    fn layout_expr(&mut self, v: &AttrVal, span: Span) -> R<Option<Expr>> {
        if let AttrVal::Alias(a) = v {
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
                fp4_padded: false,
            } => {
                let mut kw = Vec::new();
                if transposed {
                    kw.push(("transposed", with_span(Expr::bool(true), span)));
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
            other => Err(ImportError::UnsupportedType {
                message: format!("shared-memory layout {other:?} has no bwsim equivalent"),
                span,
            }),
        }
    }

    fn shaped(&self, elem: Elem, shape: &[i64], span: Span) -> R<Expr> {
        let d = dtype_of(elem, span)?;
        Ok(index(
            name_e(d.name(), span),
            shape.iter().map(|&x| IndexItem::Expr(int_e(x, span))).collect(),
            span,
        ))
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
                span: Span::DUMMY,
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
        if let Some(n) = mattrs.get("ttg.num-ctas").and_then(|v| v.as_int()) {
            if n != 1 {
                return Err(ImportError::Module {
                    message: format!("{n} CTAs per cluster (ttg.num-ctas) are not supported"),
                    span: module.span,
                });
            }
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
            let ty = parse_type(&mut pc)?;
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
                    // Triton passes the global shape (i32 each) and strides (i64 each) after it.
                    let rank = block.len();
                    for k in 0..2 * rank {
                        let Some(x) = fargs.get(i + 1 + k) else { break };
                        if x.loc_name != a.loc_name || a.loc_name.is_none() {
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
                    while skip < 2 * rank
                        && fargs
                            .get(i + 1 + skip)
                            .is_some_and(|x| x.loc_name == a.loc_name && a.loc_name.is_some())
                    {
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
        let body = self.region_block(&f.regions[*r], &[])?;
        Ok(Kernel {
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
        })
    }

    /// Import a region's operations into a new block, with `bindings` visible in it. The
    /// terminators (`tt.return`, `ttg.warp_yield`, `ttg.warp_return`) end the block.
    fn region_block(&mut self, r: &Region, bindings: &[(String, Val)]) -> R<Block> {
        self.scopes.push(HashMap::new());
        for (n, v) in bindings {
            self.bind(n, v.clone());
        }
        self.blocks.push(Vec::new());
        for op in &r.ops {
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
        }
        let stmts = self.blocks.pop().unwrap_or_default();
        self.scopes.pop();
        Ok(Block {
            stmts,
            end_comments: Vec::new(),
        })
    }

    fn op_or_report(&mut self, op: &Op) {
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
        let Some(colon) = c0.find_top(":") else {
            return Ok(Sig { outputs: Vec::new() });
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
        let inputs = list(&mut c)?;
        let outputs = if c.eat("->") || c.eat_ident("to") {
            list(&mut c)?
        } else {
            inputs
        };
        Ok(Sig { outputs })
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

    // ---- operations ---------------------------------------------------------------------

    fn op(&mut self, op: &Op) -> R<()> {
        let span = self.span_of(op);
        let name = op.name.as_str();
        match name {
            "arith.constant" => self.constant(op, span),
            "arith.addi" | "arith.subi" | "arith.muli" | "arith.divsi" | "arith.remsi" | "arith.andi"
            | "arith.ori" | "arith.xori" | "arith.shli" | "arith.shrsi" | "arith.addf" | "arith.subf"
            | "arith.mulf" | "arith.divf" | "arith.remf" | "arith.minsi" | "arith.maxsi" | "arith.minimumf"
            | "arith.maximumf" | "arith.minnumf" | "arith.maxnumf" | "arith.cmpi" | "arith.cmpf" => {
                self.binary(op, span)
            }
            "arith.select" => {
                let v = self.n_operands(op, 3)?;
                let c = self.math_operand(&v[0].0, v[0].1)?;
                let a = self.math_operand(&v[1].0, v[1].1)?;
                let b = self.math_operand(&v[2].0, v[2].1)?;
                let ty = self.result_type(op, 0)?;
                let f = if ty.is_tensor() { "where" } else { "select" };
                let r = self.result(op, 0)?;
                let scalar_like = |cx: &Self, n: &str| match cx.get(n, span) {
                    Ok(Val::Splat(..)) => true,
                    Ok(Val::E(_, t)) => !t.is_tensor(),
                    _ => false,
                };
                if ty.is_tensor() && v[..3].iter().all(|(n, _)| scalar_like(self, n)) {
                    // Every operand a splat: the result is one too.
                    let n = self.let_(&r, Rhs::Expr(call("select", vec![c, a, b], span)), span);
                    self.bind(&r, Val::Splat(name_e(&n, span), ty));
                    return Ok(());
                }
                let n = self.let_(&r, Rhs::Expr(call(f, vec![c, a, b], span)), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "arith.extsi" | "arith.extui" | "arith.trunci" | "arith.sitofp" | "arith.fptosi" | "arith.extf"
            | "arith.truncf" | "arith.index_cast" | "arith.uitofp" => self.cast(op, span),
            "arith.negf" => {
                let v = self.n_operands(op, 1)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                self.unary_result(op, ex(ExprKind::Unary(UnOp::Neg, Box::new(a)), span), &v[0].0, span)
            }
            "math.absf" | "math.absi" => {
                let v = self.n_operands(op, 1)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                self.unary_result(op, call("abs", vec![a], span), &v[0].0, span)
            }
            "math.fma" => {
                let v = self.n_operands(op, 3)?;
                let a = self.math_operand(&v[0].0, v[0].1)?;
                let b = self.math_operand(&v[1].0, v[1].1)?;
                let c = self.math_operand(&v[2].0, v[2].1)?;
                self.unary_result(op, call("fma", vec![a, b, c], span), &v[0].0, span)
            }
            "tt.get_program_id" | "tt.get_num_programs" => {
                let mut c = Cursor::new(&op.toks, op.span);
                let axis = match c.ident()?.as_str() {
                    "x" => 0,
                    "y" => 1,
                    "z" => 2,
                    other => return Err(c.err(format!("unknown axis `{other}`"))),
                };
                let f = if name == "tt.get_program_id" { "program_id" } else { "num_programs" };
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(call(f, vec![int_e(axis, span)], span), Type::Scalar(Elem::I32)));
                Ok(())
            }
            "tt.make_range" => {
                let a = self.attr_dict(op)?;
                let (Some(s), Some(e)) = (a.get("start").and_then(|x| x.as_int()), a.get("end").and_then(|x| x.as_int())) else {
                    return Err(self.misuse(op, "needs `start` and `end`"));
                };
                let ty = self.result_type(op, 0)?;
                let layout = self.required_layout(&ty, span)?;
                let r = self.result(op, 0)?;
                let n = self.let_(&r, Rhs::Expr(call("arange", vec![int_e(s, span), int_e(e, span), layout], span)), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "tt.splat" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                let val = match self.get(&v[0].0, v[0].1)? {
                    Val::Ptr { base, offs, .. } => Val::Ptr { base, offs, ty },
                    _ => Val::Splat(self.expr(&v[0].0, v[0].1)?, ty),
                };
                self.bind(&r, val);
                Ok(())
            }
            "tt.addptr" => {
                let v = self.n_operands(op, 2)?;
                let ty = self.result_type(op, 0)?;
                let Val::Ptr { base, offs, .. } = self.get(&v[0].0, v[0].1)? else {
                    return Err(self.misuse(op, "the pointer operand is not derived from a pointer parameter"));
                };
                let off = self.math_operand(&v[1].0, v[1].1)?;
                let offs = Some(match offs {
                    Some(o) => bin(BinOp::Add, o, off, span),
                    None => off,
                });
                let r = self.result(op, 0)?;
                self.bind(&r, Val::Ptr { base, offs, ty });
                Ok(())
            }
            "tt.expand_dims" | "tt.broadcast" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                let axis = self.attr_dict(op)?.get("axis").and_then(|x| x.as_int()).unwrap_or(0);
                let r = self.result(op, 0)?;
                let wrap = |e: Expr| {
                    if name == "tt.expand_dims" {
                        call("expand_dims", vec![e, int_e(axis, span)], span)
                    } else {
                        call("broadcast", vec![e, list_e(&shape, span)], span)
                    }
                };
                let val = match self.get(&v[0].0, v[0].1)? {
                    Val::Ptr { base, offs, .. } => Val::Ptr {
                        base,
                        offs: offs.map(wrap),
                        ty,
                    },
                    Val::Splat(s, _) => Val::Splat(s, ty),
                    _ => Val::E(wrap(self.expr(&v[0].0, v[0].1)?), ty),
                };
                self.bind(&r, val);
                Ok(())
            }
            "tt.reshape" | "tt.trans" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                if let Val::Splat(s, _) = self.get(&v[0].0, v[0].1)? {
                    self.bind(&r, Val::Splat(s, ty));
                    return Ok(());
                }
                let x = self.expr(&v[0].0, v[0].1)?;
                let e = if name == "tt.reshape" {
                    let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                    call("reshape", vec![x, list_e(&shape, span)], span)
                } else {
                    let order = self
                        .attr_dict(op)?
                        .get("order")
                        .and_then(|o| o.ints())
                        .ok_or_else(|| self.misuse(op, "needs `order`"))?;
                    call("permute", vec![x, list_e(&order, span)], span)
                };
                let n = self.let_(&r, Rhs::Expr(e), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "tt.split" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let x = self.expr(&v[0].0, v[0].1)?;
                let a = self.result(op, 0)?;
                let b = self.result(op, 1)?;
                let (na, nb) = (self.fresh(&a), self.fresh(&b));
                self.push(
                    StmtKind::Let {
                        names: vec![Ident::spanned(na.clone(), span), Ident::spanned(nb.clone(), span)],
                        value: Rhs::Expr(call("split", vec![x], span)),
                    },
                    span,
                );
                self.bind(&a, Val::E(name_e(&na, span), ty.clone()));
                self.bind(&b, Val::E(name_e(&nb, span), ty));
                Ok(())
            }
            "tt.join" => {
                let v = self.n_operands(op, 2)?;
                let ty = self.result_type(op, 0)?;
                let a = self.expr(&v[0].0, v[0].1)?;
                let b = self.expr(&v[1].0, v[1].1)?;
                let r = self.result(op, 0)?;
                let n = self.let_(&r, Rhs::Expr(call("join", vec![a, b], span)), span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttg.convert_layout" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                match self.get(&v[0].0, v[0].1)? {
                    Val::Splat(s, _) => {
                        self.bind(&r, Val::Splat(s, ty));
                        return Ok(());
                    }
                    Val::Ptr { base, offs, .. } => {
                        self.bind(&r, Val::Ptr { base, offs, ty });
                        return Ok(());
                    }
                    _ => {}
                }
                let x = self.expr(&v[0].0, v[0].1)?;
                let layout = match ty.encoding() {
                    Some(enc) => self.layout_expr(&enc.clone(), span)?,
                    None => None,
                };
                match layout {
                    Some(l) => {
                        let n = self.let_(&r, Rhs::Expr(call("convert_layout", vec![x, l], span)), span);
                        self.bind(&r, Val::E(name_e(&n, span), ty));
                    }
                    // A layout bwsim cannot name (a linear layout for tcgen05.st): the values
                    // are the same, so the tile passes through unchanged.
                    None => self.bind(&r, Val::E(x, ty)),
                }
                Ok(())
            }
            "tt.load" => self.global_load(op, span),
            "tt.store" => self.global_store(op, span),
            "tt.reduce" => self.reduce(op, span),
            "ttg.local_alloc" => self.local_alloc(op, span),
            "ttg.local_dealloc" => Ok(()),
            "ttg.local_load" => {
                let v = self.n_operands(op, 1)?;
                let src = self.expr(&v[0].0, v[0].1)?;
                let ty = self.result_type(op, 0)?;
                let layout = match ty.encoding() {
                    Some(enc) => self.layout_expr(&enc.clone(), span)?,
                    None => None,
                };
                let r = self.result(op, 0)?;
                let n = self.let_op(&r, OpKind::SmemLoad { src, layout }, span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttg.local_store" => {
                let v = self.n_operands(op, 2)?;
                let value = self.expr(&v[0].0, v[0].1)?;
                let dst = self.expr(&v[1].0, v[1].1)?;
                self.op_stmt(OpKind::SmemStore { dst, value }, span);
                Ok(())
            }
            "ttg.memdesc_index" => {
                let v = self.n_operands(op, 2)?;
                let ty = self.result_type(op, 0)?;
                let i = self.expr(&v[1].0, v[1].1)?;
                let base = match self.get(&v[0].0, v[0].1)? {
                    Val::Mbars(e) => e,
                    _ => self.expr(&v[0].0, v[0].1)?,
                };
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(index(base, vec![IndexItem::Expr(i)], span), ty));
                Ok(())
            }
            "ttg.memdesc_subslice" => {
                let toks = self.operand_toks(op);
                let mut c = Cursor::new(toks, op.span);
                let (src, ssp) = c.value()?;
                let offs: Vec<i64> = match c.peek() {
                    Tok::Punct("[") => c
                        .group()?
                        .iter()
                        .filter_map(|t| if let Tok::Int(v) = t.tok { Some(v) } else { None })
                        .collect(),
                    _ => Vec::new(),
                };
                let ty = self.result_type(op, 0)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                if offs.len() != shape.len() {
                    return Err(self.misuse(op, "offsets and result rank differ"));
                }
                let base = self.expr(&src, ssp)?;
                let items = offs
                    .iter()
                    .zip(&shape)
                    .map(|(&o, &s)| IndexItem::Slice(Some(int_e(o, span)), Some(int_e(o + s, span))))
                    .collect();
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(index(base, items, span), ty));
                Ok(())
            }
            "ttng.tmem_subslice" => {
                let v = self.n_operands(op, 1)?;
                let n0 = self
                    .attr_dict(op)?
                    .get("N")
                    .and_then(|x| x.as_int())
                    .ok_or_else(|| self.misuse(op, "needs `N`"))?;
                let ty = self.result_type(op, 0)?;
                let shape = ty.shape().map(|s| s.to_vec()).unwrap_or_default();
                if shape.len() != 2 {
                    return Err(self.misuse(op, "only 2-D tensor-memory views are supported"));
                }
                let base = self.expr(&v[0].0, v[0].1)?;
                let items = vec![
                    IndexItem::Slice(None, None),
                    IndexItem::Slice(Some(int_e(n0, span)), Some(int_e(n0 + shape[1], span))),
                ];
                let r = self.result(op, 0)?;
                self.bind(&r, Val::E(index(base, items, span), ty));
                Ok(())
            }
            "ttg.memdesc_reinterpret" => {
                let v = self.n_operands(op, 1)?;
                let ty = self.result_type(op, 0)?;
                let Type::MemDesc {
                    shape,
                    elem,
                    enc,
                    tmem: false,
                    ..
                } = &ty
                else {
                    return Err(self.misuse(op, "only shared-memory views can be reinterpreted"));
                };
                let src = self.expr(&v[0].0, v[0].1)?;
                let t = self.shaped(*elem, shape, span)?;
                let layout = self.smem_layout(enc, span)?;
                let r = self.result(op, 0)?;
                let n = self.let_op(&r, OpKind::SmemReinterpret { src, ty: t, layout }, span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttng.tmem_alloc" => self.tmem_alloc(op, span),
            "ttng.tmem_load" => {
                let v = self.n_operands(op, 1)?;
                let src = self.expr(&v[0].0, v[0].1)?;
                let ty = self.result_type(op, 0)?;
                if let Some(enc) = ty.encoding() {
                    let l = self.attrs.layout(enc, span)?;
                    if !is_tmem_32x32b(&l) {
                        return Err(self.misuse(
                            op,
                            format!(
                                "register layout {} is not the 32x32b TMEM message (get_tmem_reg_layout's default), the one bwsim models",
                                self.layout_name(enc, span)
                            ),
                        ));
                    }
                }
                let r = self.result(op, 0)?;
                let n = self.let_op(&r, OpKind::TmemLoad { src, layout: None }, span);
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttng.tmem_store" => {
                let v = self.n_operands(op, 2)?;
                let value = self.expr(&v[0].0, v[0].1)?;
                let dst = self.expr(&v[1].0, v[1].1)?;
                let p = self.pred(v.get(2))?;
                self.op_pred(OpKind::TmemStore { dst, value }, p, span);
                Ok(())
            }
            "ttng.tmem_copy" => {
                let v = self.n_operands(op, 2)?;
                let src = self.expr(&v[0].0, v[0].1)?;
                let dst = self.expr(&v[1].0, v[1].1)?;
                self.op_stmt(OpKind::Tcgen05Cp { src, dst }, span);
                if let Some((b, bs)) = v.get(2) {
                    let bar = self.expr(b, *bs)?;
                    self.op_stmt(
                        OpKind::Tcgen05Commit {
                            bar,
                            pred: None,
                            cta_group: None,
                        },
                        span,
                    );
                }
                Ok(())
            }
            "ttng.tc_gen5_mma" => self.tc_gen5_mma(op, span),
            "ttng.tc_gen5_commit" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let pred = self.pred(v.get(1))?;
                if self.attr_dict(op)?.has("two_ctas") {
                    return Err(self.misuse(op, "two-CTA commits are not supported"));
                }
                self.op_stmt(
                    OpKind::Tcgen05Commit {
                        bar,
                        pred,
                        cta_group: None,
                    },
                    span,
                );
                Ok(())
            }
            "ttng.warp_group_dot" => {
                let v = self.n_operands(op, 3)?;
                let a = self.expr(&v[0].0, v[0].1)?;
                let b = self.expr(&v[1].0, v[1].1)?;
                let acc = self.expr(&v[2].0, v[2].1)?;
                let use_acc = match v.get(3) {
                    Some((n, s)) => {
                        let e = self.expr(n, *s)?;
                        if is_true(&e) {
                            None
                        } else {
                            Some(e)
                        }
                    }
                    None => None,
                };
                let attrs = self.attr_dict(op)?;
                let ty = self.result_type(op, 0)?;
                let r = self.result(op, 0)?;
                let n = self.let_op(&r, OpKind::Wgmma { a, b, acc, use_acc }, span);
                if !attrs.has("isAsync") {
                    self.op_stmt(OpKind::WgmmaWait { pendings: int_e(0, span) }, span);
                }
                self.bind(&r, Val::E(name_e(&n, span), ty));
                Ok(())
            }
            "ttng.warp_group_dot_wait" => {
                let v = self.operands(op)?;
                let p = self
                    .attr_dict(op)?
                    .get("pendings")
                    .and_then(|x| x.as_int())
                    .ok_or_else(|| self.misuse(op, "needs `pendings`"))?;
                self.op_stmt(OpKind::WgmmaWait { pendings: int_e(p, span) }, span);
                for (i, r) in op.results.iter().enumerate() {
                    let (n, s) = v.get(i).ok_or_else(|| self.misuse(op, "more results than operands"))?;
                    let val = self.get(n, *s)?;
                    self.bind(r, val);
                }
                Ok(())
            }
            "ttng.init_barrier" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let count = self.int_after_operands(op)?;
                self.op_stmt(OpKind::MbarInit { bar, count: int_e(count, span) }, span);
                Ok(())
            }
            "ttng.inval_barrier" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                self.op_stmt(OpKind::MbarInvalidate { bar }, span);
                Ok(())
            }
            "ttng.barrier_expect" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let bytes = self.int_after_operands(op)?;
                let pred = self.pred(v.get(1))?;
                self.op_stmt(
                    OpKind::MbarExpect {
                        bar,
                        bytes: int_e(bytes, span),
                        pred,
                    },
                    span,
                );
                Ok(())
            }
            "ttng.wait_barrier" => {
                let v = self.n_operands(op, 2)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let phase = self.math_operand(&v[1].0, v[1].1)?;
                let pred = self.pred(v.get(2))?;
                self.op_pred(OpKind::MbarWait { bar, phase }, pred, span);
                Ok(())
            }
            "ttng.arrive_barrier" => {
                let v = self.n_operands(op, 1)?;
                let bar = self.expr(&v[0].0, v[0].1)?;
                let count = self.int_after_operands(op)?;
                let pred = self.pred(v.get(1))?;
                self.op_stmt(
                    OpKind::MbarArrive {
                        bar,
                        count: Some(int_e(count, span)),
                        pred,
                    },
                    span,
                );
                Ok(())
            }
            "ttng.fence_async_shared" => {
                self.op_stmt(OpKind::FenceAsyncShared {}, span);
                Ok(())
            }
            "ttng.fence_mbarrier_init" | "ttng.fence_mbarrier_init_release_cluster" => {
                self.op_stmt(OpKind::FenceMbarrierInit {}, span);
                Ok(())
            }
            "gpu.barrier" => {
                self.op_stmt(OpKind::BarSync {}, span);
                Ok(())
            }
            "ttng.async_tma_copy_global_to_local" | "ttng.async_tma_gather" => self.tma_load(op, span),
            "ttng.async_tma_copy_local_to_global" | "ttng.async_tma_scatter" => self.tma_store(op, span),
            "ttng.async_tma_store_wait" => {
                let p = self
                    .attr_dict(op)?
                    .get("pendings")
                    .and_then(|x| x.as_int())
                    .ok_or_else(|| self.misuse(op, "needs `pendings`"))?;
                self.op_stmt(
                    OpKind::TmaStoreWait {
                        pendings: int_e(p, span),
                        full: None,
                    },
                    span,
                );
                Ok(())
            }
            "scf.for" => self.scf_for(op, span),
            "scf.if" => self.scf_if(op, span),
            "ttg.warp_specialize" => self.warp_specialize(op, span),
            "math.exp" | "math.exp2" | "math.log" | "math.log2" | "math.sqrt" | "math.rsqrt" | "math.sin"
            | "math.cos" | "math.tanh" | "math.erf" | "math.floor" | "math.ceil" => Err(self.unsupported(
                op,
                "bwsim's IR has add, sub, mul, div, fma, min, max, abs and casts for tile math; no transcendental functions",
            )),
            "arith.divui" | "arith.remui" | "arith.shrui" | "arith.minui" | "arith.maxui" | "arith.ceildivsi"
            | "arith.floordivsi" | "arith.ceildivui" => Err(self.unsupported(
                op,
                "bwsim's integers are signed: unsigned and rounding-mode divisions have no equivalent",
            )),
            "ttg.memdesc_trans" => self.memdesc_trans(op, span),
            "tt.call" => Err(self.unsupported(op, "calls to `noinline` functions are not supported")),
            "ttng.tc_gen5_mma_scaled" => Err(self.unsupported(op, "block-scaled MMA import is not supported yet")),
            _ => Err(self.unsupported(op, "")),
        }
    }

    /// The first integer literal after the operands (`init_barrier %b, 1`).
    fn int_after_operands(&self, op: &Op) -> R<i64> {
        self.operand_toks(op)
            .iter()
            .find_map(|t| if let Tok::Int(v) = t.tok { Some(v) } else { None })
            .ok_or_else(|| ImportError::Syntax {
                span: op.span,
                message: format!("`{}` needs an integer operand", op.name),
            })
    }

    fn constant(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let v = attr_val(&mut c)?;
        let r = self.result(op, 0)?;
        let ty = match self.sig(op)?.outputs.last() {
            Some(t) => t.clone(),
            None => Type::Scalar(Elem::I1),
        };
        let scalar = |v: &AttrVal, elem: Option<Elem>| -> Option<Expr> {
            Some(match v {
                AttrVal::Int(i) if elem.is_some_and(|e| e.is_float()) => float_e(*i as f64, span)?,
                AttrVal::Int(i) if elem == Some(Elem::I1) => with_span(Expr::bool(*i != 0), span),
                AttrVal::Int(i) => int_e(*i, span),
                AttrVal::Bool(b) => with_span(Expr::bool(*b), span),
                AttrVal::Float(f) => float_e(*f, span)?,
                AttrVal::Hex(bits) => {
                    let f = match elem {
                        Some(Elem::F32) => f32::from_bits(*bits as u32) as f64,
                        Some(Elem::F64) => f64::from_bits(*bits),
                        Some(Elem::F16) => half::f16::from_bits(*bits as u16).to_f64(),
                        Some(Elem::BF16) => half::bf16::from_bits(*bits as u16).to_f64(),
                        _ => return None,
                    };
                    float_e(f, span)?
                }
                _ => return None,
            })
        };
        let val = match (&v, &ty) {
            (AttrVal::Dense(inner), Type::Tensor { .. }) => match scalar(inner, ty.elem()) {
                Some(e) => Val::Splat(e, ty.clone()),
                None => Val::Unusable(format!(
                    "the constant {inner:?} has no bwsim equivalent (non-finite, or not a splat)"
                )),
            },
            (_, Type::Scalar(e)) => match scalar(&v, Some(*e)) {
                Some(x) => Val::E(x, ty.clone()),
                None => Val::Unusable(format!(
                    "the constant {v:?} has no bwsim equivalent (non-finite?)"
                )),
            },
            _ => Val::Unusable(format!("the constant {v:?} has no bwsim equivalent")),
        };
        self.bind(&r, val);
        Ok(())
    }

    fn binary(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let pred = if matches!(op.name.as_str(), "arith.cmpi" | "arith.cmpf") {
            let p = c.ident()?;
            c.eat(",");
            Some(p)
        } else {
            None
        };
        let v = self.n_operands(op, 2)?;
        let a_ty = self.val_type(&v[0].0, v[0].1)?;
        let b_ty = self.val_type(&v[1].0, v[1].1)?;
        let both_splat = matches!(self.get(&v[0].0, v[0].1)?, Val::Splat(..))
            && matches!(self.get(&v[1].0, v[1].1)?, Val::Splat(..));
        let a = self.math_operand(&v[0].0, v[0].1)?;
        let b = self.math_operand(&v[1].0, v[1].1)?;
        let op_kind = match op.name.as_str() {
            "arith.addi" | "arith.addf" => Some(BinOp::Add),
            "arith.subi" | "arith.subf" => Some(BinOp::Sub),
            "arith.muli" | "arith.mulf" => Some(BinOp::Mul),
            "arith.divsi" | "arith.divf" => Some(BinOp::Div),
            "arith.remsi" | "arith.remf" => Some(BinOp::Rem),
            "arith.andi" => Some(BinOp::BitAnd),
            "arith.ori" => Some(BinOp::BitOr),
            "arith.xori" => Some(BinOp::BitXor),
            "arith.shli" => Some(BinOp::Shl),
            "arith.shrsi" => Some(BinOp::Shr),
            _ => None,
        };
        let e = if let Some(k) = op_kind {
            bin(k, a, b, span)
        } else if let Some(p) = &pred {
            let k = match p.as_str() {
                "eq" | "oeq" | "ueq" => BinOp::Eq,
                "ne" | "one" | "une" => BinOp::Ne,
                "slt" | "olt" | "ult" if op.name == "arith.cmpf" || p != "ult" => BinOp::Lt,
                "sle" | "ole" | "ule" if op.name == "arith.cmpf" || p != "ule" => BinOp::Le,
                "sgt" | "ogt" | "ugt" if op.name == "arith.cmpf" || p != "ugt" => BinOp::Gt,
                "sge" | "oge" | "uge" if op.name == "arith.cmpf" || p != "uge" => BinOp::Ge,
                other => {
                    return Err(self.misuse(
                        op,
                        format!("comparison `{other}` has no bwsim equivalent (integers are signed)"),
                    ))
                }
            };
            bin(k, a, b, span)
        } else {
            let f = match op.name.as_str() {
                "arith.minsi" | "arith.minimumf" | "arith.minnumf" => "min",
                _ => "max",
            };
            call(f, vec![a, b], span)
        };
        let r = self.result(op, 0)?;
        let mut ty = if a_ty.is_tensor() { a_ty } else { b_ty };
        if pred.is_some() {
            ty = match ty {
                Type::Tensor { shape, enc, .. } => Type::Tensor {
                    shape,
                    elem: Box::new(Type::Scalar(Elem::I1)),
                    enc,
                },
                _ => Type::Scalar(Elem::I1),
            };
        }
        let n = self.let_(&r, Rhs::Expr(e), span);
        let val = if both_splat {
            Val::Splat(name_e(&n, span), ty)
        } else {
            Val::E(name_e(&n, span), ty)
        };
        self.bind(&r, val);
        Ok(())
    }

    /// Bind the result of a one-operand elementwise operation (`e` already built).
    fn unary_result(&mut self, op: &Op, e: Expr, operand: &str, span: Span) -> R<()> {
        let r = self.result(op, 0)?;
        let ty = self.result_type(op, 0)?;
        let splat = matches!(self.get(operand, span)?, Val::Splat(..));
        let n = self.let_(&r, Rhs::Expr(e), span);
        self.bind(
            &r,
            if splat {
                Val::Splat(name_e(&n, span), ty)
            } else {
                Val::E(name_e(&n, span), ty)
            },
        );
        Ok(())
    }

    fn cast(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let ty = self.result_type(op, 0)?;
        let elem = ty
            .elem()
            .ok_or_else(|| self.misuse(op, "cast to a non-scalar type"))?;
        if op.name == "arith.extui" {
            let from = self.val_type(&v[0].0, v[0].1)?.elem();
            if from != Some(Elem::I1) {
                return Err(self.unsupported(
                    op,
                    "zero extension of integers wider than i1: bwsim's integers are signed",
                ));
            }
        }
        if op.name == "arith.uitofp" {
            return Err(self.unsupported(op, "unsigned conversion: bwsim's integers are signed"));
        }
        let d = dtype_of(if elem == Elem::Index { Elem::I64 } else { elem }, span)?;
        let a = self.math_operand(&v[0].0, v[0].1)?;
        if !ty.is_tensor() && !matches!(d, DType::I1 | DType::I32 | DType::I64 | DType::F32) {
            return Err(self.misuse(
                op,
                format!("bwsim scalars are i1, i32, i64 or f32, not {}", d.name()),
            ));
        }
        self.unary_result(
            op,
            call("cast", vec![a, name_e(d.name(), span)], span),
            &v[0].0,
            span,
        )
    }

    fn global_load(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let Val::Ptr { base, offs, ty: pty } = self.get(&v[0].0, v[0].1)? else {
            return Err(self.misuse(op, "the pointers are not derived from a pointer parameter"));
        };
        if !pty.is_tensor() {
            return Err(self.misuse(op, "scalar loads are not supported (load a tensor)"));
        }
        let offsets = match offs {
            Some(o) => self.offsets_tile(o, &pty, span)?,
            None => self.full(&int_tensor(&pty), int_e(0, span), span)?,
        };
        let mask = match v.get(1) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        let other = match v.get(2) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let n = self.let_op(
            &r,
            OpKind::GlobalLoad {
                ptr: name_e(&base, span),
                offsets,
                mask,
                other,
            },
            span,
        );
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// An offset expression as a tile of the pointer tensor's shape.
    fn offsets_tile(&mut self, o: Expr, pty: &Type, span: Span) -> R<Expr> {
        // A scalar offset (e.g. `ptr + k` splat to a tensor) needs the tensor's shape.
        let scalar = !matches!(
            o.kind,
            ExprKind::Name(_) | ExprKind::Call(..) | ExprKind::Binary(..)
        );
        if scalar {
            let z = self.full(&int_tensor(pty), int_e(0, span), span)?;
            return Ok(bin(BinOp::Add, z, o, span));
        }
        Ok(o)
    }

    fn global_store(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 2)?;
        let Val::Ptr { base, offs, ty: pty } = self.get(&v[0].0, v[0].1)? else {
            return Err(self.misuse(op, "the pointers are not derived from a pointer parameter"));
        };
        if !pty.is_tensor() {
            return Err(self.misuse(op, "scalar stores are not supported (store a tensor)"));
        }
        let offsets = match offs {
            Some(o) => self.offsets_tile(o, &pty, span)?,
            None => self.full(&int_tensor(&pty), int_e(0, span), span)?,
        };
        let value = self.expr(&v[1].0, v[1].1)?;
        let mask = match v.get(2) {
            Some((n, s)) => Some(self.math_operand(n, *s)?),
            None => None,
        };
        self.op_stmt(
            OpKind::GlobalStore {
                ptr: name_e(&base, span),
                offsets,
                value,
                mask,
            },
            span,
        );
        Ok(())
    }

    fn reduce(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let axis = self
            .attr_dict(op)?
            .get("axis")
            .and_then(|x| x.as_int())
            .ok_or_else(|| self.misuse(op, "needs `axis`"))?;
        let body = op.regions.first().map(|r| &r.ops[..]).unwrap_or(&[]);
        let is_sum = body.len() == 2 && matches!(body[0].name.as_str(), "arith.addf" | "arith.addi");
        if !is_sum || v.len() != 1 || op.results.len() != 1 {
            return Err(self.unsupported(op, "bwsim reduces with `sum` only (one operand, an add combiner)"));
        }
        let x = self.expr(&v[0].0, v[0].1)?;
        let ty = self.result_type(op, 0)?;
        let r = self.result(op, 0)?;
        let n = self.let_(&r, Rhs::Expr(call("sum", vec![x, int_e(axis, span)], span)), span);
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    /// `ttg.memdesc_trans` (Gluon's `permute((1, 0))` of a shared buffer): an NVMMA matrix
    /// `[R, C]` stored with C contiguous is, byte for byte, the `[C, R]` matrix of the same
    /// swizzle with `transposed` flipped (how an `[N, K]` K-major B tile becomes the `[K, N]`
    /// operand of an MMA), so the view is `smem.reinterpret` of the same bytes. Only whole
    /// matrices (a buffer or an index of one): a subslice's bytes are not one run of memory,
    /// and a transposed view of another shared layout has no bwsim layout.
    fn memdesc_trans(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let order = self
            .attr_dict(op)?
            .get("order")
            .and_then(|o| o.ints())
            .ok_or_else(|| self.misuse(op, "needs `order`"))?;
        let src_ty = match self.get(&v[0].0, v[0].1)? {
            Val::E(_, t) => t,
            _ => return Err(self.misuse(op, "only shared-memory views can be transposed")),
        };
        let ty = self.result_type(op, 0)?;
        let (
            Type::MemDesc {
                shape: src_shape,
                enc: src_enc,
                tmem: false,
                alloc,
                ..
            },
            Type::MemDesc {
                shape,
                elem,
                enc,
                tmem: false,
                ..
            },
        ) = (&src_ty, &ty)
        else {
            return Err(self.misuse(op, "only shared-memory views can be transposed"));
        };
        let r = order.len();
        let swaps_last_two = r >= 2
            && r == src_shape.len()
            && order.iter().enumerate().all(|(i, &o)| {
                o == if i + 2 == r {
                    r as i64 - 1
                } else if i + 1 == r {
                    r as i64 - 2
                } else {
                    i as i64
                }
            });
        if !swaps_last_two {
            return Err(self.misuse(
                op,
                format!("order {order:?}: only a swap of the last two dimensions (`permute((1, 0))` of a matrix) is imported"),
            ));
        }
        let mut want = src_shape.clone();
        want.swap(r - 2, r - 1);
        if *shape != want {
            return Err(self.misuse(
                op,
                "the result shape is not the operand's with its last two dimensions swapped",
            ));
        }
        match (self.attrs.layout(src_enc, span)?, self.attrs.layout(enc, span)?) {
            (
                Layout::NvmmaShared {
                    swizzle: a,
                    transposed: ta,
                    fp4_padded: false,
                },
                Layout::NvmmaShared {
                    swizzle: b,
                    transposed: tb,
                    fp4_padded: false,
                },
            ) if a == b && ta != tb => {}
            _ => {
                return Err(self.misuse(
                    op,
                    format!(
                        "a transposed view of layout {} has no bwsim layout: only NVMMA-swizzled buffers transpose in place",
                        self.layout_name(src_enc, span)
                    ),
                ))
            }
        }
        if let Some(a) = alloc {
            if a.len() < 2 || a[a.len() - 2..] != src_shape[r - 2..] {
                return Err(self.misuse(
                    op,
                    "a transposed view of a subslice: transpose the whole buffer, then slice the transposed view",
                ));
            }
        }
        let src = self.expr(&v[0].0, v[0].1)?;
        let t = self.shaped(*elem, shape, span)?;
        let layout = self.smem_layout(enc, span)?;
        let res = self.result(op, 0)?;
        let n = self.let_op(&res, OpKind::SmemReinterpret { src, ty: t, layout }, span);
        self.bind(&res, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    fn local_alloc(&mut self, op: &Op, span: Span) -> R<()> {
        let ty = self.result_type(op, 0)?;
        let Type::MemDesc {
            shape,
            elem,
            enc,
            tmem: false,
            ..
        } = &ty
        else {
            return Err(self.misuse(op, "expected a shared-memory descriptor"));
        };
        let r = self.result(op, 0)?;
        let init = self.operands(op)?;
        // mbarriers: i64 buffers of shape [N, 1] (an array) or [1] (one barrier).
        let barrier = *elem == Elem::I64 && (shape.as_slice() == [1] || (shape.len() == 2 && shape[1] == 1));
        if barrier {
            if !init.is_empty() {
                return Err(self.misuse(op, "a barrier allocation with an initial value"));
            }
            let count = shape[0];
            let n = self.let_op(
                &r,
                OpKind::MbarAlloc {
                    count: int_e(count, span),
                    offset: None,
                },
                span,
            );
            if shape.len() == 1 {
                self.bind(
                    &r,
                    Val::E(
                        index(name_e(&n, span), vec![IndexItem::Expr(int_e(0, span))], span),
                        ty,
                    ),
                );
            } else {
                self.bind(&r, Val::Mbars(name_e(&n, span)));
            }
            return Ok(());
        }
        let t = self.shaped(*elem, shape, span)?;
        let layout = self.smem_layout(enc, span)?;
        let n = self.let_op(
            &r,
            OpKind::SmemAlloc {
                ty: t,
                layout,
                align: None,
            },
            span,
        );
        if let Some((iv, is)) = init.first() {
            let value = self.expr(iv, *is)?;
            self.op_stmt(
                OpKind::SmemStore {
                    dst: name_e(&n, span),
                    value,
                },
                span,
            );
        }
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    fn tmem_alloc(&mut self, op: &Op, span: Span) -> R<()> {
        let ty = self.result_type(op, 0)?;
        let Type::MemDesc {
            shape,
            elem,
            enc,
            tmem: true,
            ..
        } = &ty
        else {
            return Err(self.misuse(op, "expected a tensor-memory descriptor"));
        };
        let r = self.result(op, 0)?;
        let t = self.shaped(*elem, shape, span)?;
        let (block, col_stride, scales) = match self.attrs.layout(enc, span)? {
            Layout::TmemEncoding {
                block_m,
                block_n,
                col_stride,
            } => (
                Some(list_e(&[block_m, block_n], span)),
                Some(int_e(col_stride, span)),
                None,
            ),
            Layout::TmemScales => (None, None, Some(with_span(Expr::bool(true), span))),
            other => {
                return Err(self.misuse(op, format!("tensor-memory encoding {other:?} is not supported")))
            }
        };
        let n = self.let_op(
            &r,
            OpKind::TmemAlloc {
                ty: t,
                block,
                col_stride,
                scales,
                manual: None,
            },
            span,
        );
        let init = self.operands(op)?;
        if let Some((iv, is)) = init.first() {
            let value = self.expr(iv, *is)?;
            self.op_stmt(
                OpKind::TmemStore {
                    dst: name_e(&n, span),
                    value,
                },
                span,
            );
        }
        self.bind(&r, Val::E(name_e(&n, span), ty));
        Ok(())
    }

    fn tc_gen5_mma(&mut self, op: &Op, span: Span) -> R<()> {
        let items = self.operand_items(op)?;
        if items.len() < 5 {
            return Err(ImportError::Syntax {
                span: op.span,
                message: format!(
                    "`ttng.tc_gen5_mma` expects at least 5 operands, found {}",
                    items.len()
                ),
            });
        }
        let attrs = self.attr_dict(op)?;
        if attrs.has("two_ctas") {
            return Err(self.misuse(op, "two-CTA MMA is not supported"));
        }
        let a = self.expr(&items[0].name, items[0].span)?;
        let b = self.expr(&items[1].name, items[1].span)?;
        let acc = self.expr(&items[2].name, items[2].span)?;
        let use_acc = self.expr(&items[3].name, items[3].span)?;
        let pred = self.pred(Some(&(items[4].name.clone(), items[4].span)))?;
        let use_acc = if is_true(&use_acc) { None } else { Some(use_acc) };
        self.op_stmt(
            OpKind::Tcgen05Mma {
                a,
                b,
                acc,
                use_acc,
                pred: pred.clone(),
                cta_group: None,
            },
            span,
        );
        // Completion barriers of the MMA: an arrive when it (and all earlier tcgen05 work) is done.
        for it in &items[5..] {
            let bar = self.expr(&it.name, it.span)?;
            let bp = match it.bracket.first() {
                Some(p) => self.pred(Some(p))?,
                None => None,
            };
            let p = match (pred.clone(), bp) {
                (None, x) | (x, None) => x,
                (Some(x), Some(y)) => Some(bin(BinOp::And, x, y, span)),
            };
            self.op_stmt(
                OpKind::Tcgen05Commit {
                    bar,
                    pred: p,
                    cta_group: None,
                },
                span,
            );
        }
        for r in &op.results {
            self.bind(r, Val::Token);
        }
        Ok(())
    }

    /// `desc[coords...] ...`: the descriptor, its coordinates and the operands after them.
    fn desc_operands(&mut self, op: &Op, span: Span) -> R<(Expr, Vec<(String, Span)>)> {
        let items = self.operand_items(op)?;
        let first = items.first().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` needs a descriptor", op.name),
        })?;
        let desc = self.expr(&first.name, first.span)?;
        let mut coords = Vec::new();
        for (n, s) in &first.bracket {
            coords.push(IndexItem::Expr(self.math_operand(n, *s)?));
        }
        let rest = items[1..].iter().map(|i| (i.name.clone(), i.span)).collect();
        Ok((index(desc, coords, span), rest))
    }

    fn tma_load(&mut self, op: &Op, span: Span) -> R<()> {
        let (src, rest) = self.desc_operands(op, span)?;
        if rest.len() < 2 {
            return Err(ImportError::Syntax {
                span: op.span,
                message: format!("`{}` expects a destination and a barrier", op.name),
            });
        }
        let dst = self.expr(&rest[0].0, rest[0].1)?;
        let bar = self.expr(&rest[1].0, rest[1].1)?;
        let pred = self.pred(rest.get(2))?;
        let kind = if op.name == "ttng.async_tma_gather" {
            OpKind::TmaGather { src, dst, bar, pred }
        } else {
            OpKind::TmaLoad { src, dst, bar, pred }
        };
        self.op_stmt(kind, span);
        Ok(())
    }

    fn tma_store(&mut self, op: &Op, span: Span) -> R<()> {
        let (dst, rest) = self.desc_operands(op, span)?;
        let (n, s) = rest.first().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` expects a source buffer", op.name),
        })?;
        let src = self.expr(n, *s)?;
        let kind = if op.name == "ttng.async_tma_scatter" {
            OpKind::TmaScatter { dst, src, pred: None }
        } else {
            OpKind::TmaStore { dst, src, pred: None }
        };
        self.op_stmt(kind, span);
        Ok(())
    }

    // ---- structured control flow --------------------------------------------------------

    /// A variable holding a loop-carried or `if`-produced value, initialised to `init`.
    fn carried(&mut self, hint: &str, init: Val, span: Span) -> R<(Option<String>, Val)> {
        Ok(match init {
            Val::Token => (None, Val::Token),
            Val::E(e, ty) => {
                let n = self.let_(hint, Rhs::Expr(e), span);
                (Some(n.clone()), Val::E(name_e(&n, span), ty))
            }
            Val::Splat(s, ty) => {
                let f = self.full(&ty, s, span)?;
                let n = self.let_(hint, Rhs::Expr(f), span);
                (Some(n.clone()), Val::E(name_e(&n, span), ty))
            }
            Val::Mbars(e) => {
                let n = self.let_(hint, Rhs::Expr(e), span);
                (Some(n.clone()), Val::Mbars(name_e(&n, span)))
            }
            Val::Ptr { .. } => {
                return Err(ImportError::Unsupported {
                    op: "scf.for".into(),
                    message: "pointers carried through a loop are not supported".into(),
                    span,
                    ttgir: span,
                })
            }
            Val::Unusable(m) => (None, Val::Unusable(m)),
            Val::Poison => (None, Val::Poison),
        })
    }

    /// Assign yielded values to their variables (through temporaries when one reads a
    /// variable assigned before it).
    fn assign_yields(&mut self, vars: &[Option<String>], yields: &[(String, Span)], span: Span) -> R<()> {
        let mut pairs = Vec::new();
        for (var, (y, ys)) in vars.iter().zip(yields) {
            let Some(var) = var else { continue };
            if matches!(self.get(y, *ys)?, Val::Token) {
                continue;
            }
            let e = self.expr(y, *ys)?;
            if matches!(&e.kind, ExprKind::Name(n) if n == var) {
                continue;
            }
            pairs.push((var.clone(), e));
        }
        let conflict = pairs
            .iter()
            .enumerate()
            .any(|(i, (_, e))| pairs[..i].iter().any(|(v, _)| mentions(e, v)));
        if conflict {
            let mut temps = Vec::new();
            for (v, e) in &pairs {
                let t = self.let_(&format!("{v}_next"), Rhs::Expr(e.clone()), span);
                temps.push((v.clone(), name_e(&t, span)));
            }
            pairs = temps;
        }
        for (v, e) in pairs {
            self.push(
                StmtKind::Assign {
                    names: vec![Ident::spanned(v, span)],
                    value: Rhs::Expr(e),
                },
                span,
            );
        }
        Ok(())
    }

    fn scf_for(&mut self, op: &Op, span: Span) -> R<()> {
        let toks = &op.toks;
        let mut c = Cursor::new(toks, op.span);
        let (iv, _) = c.value()?;
        c.expect("=")?;
        let (lb, lbs) = c.value()?;
        if !c.eat_ident("to") {
            return Err(c.err("expected `to`"));
        }
        let (ub, ubs) = c.value()?;
        if !c.eat_ident("step") {
            return Err(c.err("expected `step`"));
        }
        let (st, sts) = c.value()?;
        let mut iters: Vec<(String, String, Span)> = Vec::new();
        if c.eat_ident("iter_args") {
            let g = c.group()?;
            let mut gc = Cursor::new(g, op.span);
            while !gc.at_end() {
                let (a, _) = gc.value()?;
                gc.expect("=")?;
                let (init, is) = gc.value()?;
                iters.push((a, init, is));
                gc.eat(",");
            }
        }
        if self.attr_dict(op)?.has("unsignedCmp") {
            return Err(self.misuse(op, "unsigned loop bounds are not supported"));
        }
        let Some(Tok::Region(ri)) = toks.iter().map(|t| &t.tok).find(|t| matches!(t, Tok::Region(_))) else {
            return Err(self.misuse(op, "a loop without a body"));
        };
        let region = &op.regions[*ri];
        let start = self.math_operand(&lb, lbs)?;
        let end = self.math_operand(&ub, ubs)?;
        let step = self.math_operand(&st, sts)?;
        let step = if matches!(step.kind, ExprKind::Int(1)) {
            None
        } else {
            Some(step)
        };
        let yields = match region.ops.last() {
            Some(y) if y.name == "scf.yield" => self.operands(y)?,
            _ => Vec::new(),
        };
        let mut vars = Vec::new();
        let mut bindings = Vec::new();
        for (i, (a, init, is)) in iters.iter().enumerate() {
            // The iteration argument's name, unless it is MLIR's `argN`: then the name of the
            // value the body yields for it (the Python variable's), else the result's.
            let yielded = yields.get(i).map(|(y, _)| y.split('#').next().unwrap_or(y));
            let hint = if !generic_name(a) {
                a.as_str()
            } else if let Some(y) = yielded.filter(|y| !generic_name(y)) {
                y
            } else {
                op.results.get(i).and_then(|r| r.split('#').next()).unwrap_or(a)
            };
            let v = self.get(init, *is)?;
            let (var, val) = self.carried(hint, v, span)?;
            vars.push(var);
            bindings.push((a.clone(), val));
        }
        let ivn = self.fresh(&iv);
        bindings.push((iv.clone(), Val::E(name_e(&ivn, span), Type::Scalar(Elem::I32))));
        // The body, with the yield turned into assignments.
        self.scopes.push(HashMap::new());
        for (n, v) in &bindings {
            self.bind(n, v.clone());
        }
        self.blocks.push(Vec::new());
        for o in &region.ops {
            if o.name == "scf.yield" {
                let y = self.operands(o)?;
                let yspan = self.span_of(o);
                if let Err(e) = self.assign_yields(&vars, &y, yspan) {
                    self.errors.push(e);
                }
                continue;
            }
            self.op_or_report(o);
        }
        let stmts = self.blocks.pop().unwrap_or_default();
        self.scopes.pop();
        self.push(
            StmtKind::For {
                var: Ident::spanned(ivn, span),
                start,
                end,
                step,
                body: Block {
                    stmts,
                    end_comments: Vec::new(),
                },
                unrolled: false,
            },
            span,
        );
        for (i, r) in op.results.iter().enumerate() {
            let v = bindings.get(i).map(|b| b.1.clone()).unwrap_or(Val::Poison);
            self.bind(r, v);
        }
        Ok(())
    }

    fn scf_if(&mut self, op: &Op, span: Span) -> R<()> {
        let mut c = Cursor::new(&op.toks, op.span);
        let (cond, cs) = c.value()?;
        let cond = self.math_operand(&cond, cs)?;
        let regions: Vec<&Region> = op
            .toks
            .iter()
            .filter_map(|t| {
                if let Tok::Region(i) = t.tok {
                    op.regions.get(i)
                } else {
                    None
                }
            })
            .collect();
        let then_r = regions
            .first()
            .ok_or_else(|| self.misuse(op, "an `if` without a body"))?;
        // Results: variables declared before the `if`, zero until a branch assigns them.
        let mut vars = Vec::new();
        for (i, r) in op.results.iter().enumerate() {
            let ty = self.result_type(op, i)?;
            let zero = match &ty {
                Type::Scalar(Elem::I1) => Val::E(with_span(Expr::bool(false), span), ty.clone()),
                Type::Scalar(e) if e.is_float() => {
                    Val::E(float_e(0.0, span).unwrap_or_else(|| int_e(0, span)), ty.clone())
                }
                Type::Scalar(_) => Val::E(int_e(0, span), ty.clone()),
                Type::Tensor { elem, .. } if !matches!(**elem, Type::Ptr(_)) => {
                    let z = if ty.elem().is_some_and(|e| e.is_float()) {
                        float_e(0.0, span).unwrap_or_else(|| int_e(0, span))
                    } else {
                        int_e(0, span)
                    };
                    Val::Splat(z, ty.clone())
                }
                _ => return Err(self.misuse(op, "an `if` producing buffers or pointers is not supported")),
            };
            let (var, val) = self.carried(r, zero, span)?;
            vars.push((var, val));
        }
        let var_names: Vec<Option<String>> = vars.iter().map(|v| v.0.clone()).collect();
        let branch = |cx: &mut Cx, r: &Region| -> R<Block> {
            cx.scopes.push(HashMap::new());
            cx.blocks.push(Vec::new());
            for o in &r.ops {
                if o.name == "scf.yield" {
                    let y = cx.operands(o)?;
                    let ys = cx.span_of(o);
                    if let Err(e) = cx.assign_yields(&var_names, &y, ys) {
                        cx.errors.push(e);
                    }
                    continue;
                }
                cx.op_or_report(o);
            }
            let stmts = cx.blocks.pop().unwrap_or_default();
            cx.scopes.pop();
            Ok(Block {
                stmts,
                end_comments: Vec::new(),
            })
        };
        let then_body = branch(self, then_r)?;
        let else_body = match regions.get(1) {
            Some(r) if !r.ops.is_empty() => Some(branch(self, r)?),
            _ => None,
        };
        self.push(
            StmtKind::If {
                cond,
                then_body,
                else_body,
            },
            span,
        );
        for (r, (_, v)) in op.results.iter().zip(vars) {
            self.bind(r, v);
        }
        Ok(())
    }

    fn warp_specialize(&mut self, op: &Op, span: Span) -> R<()> {
        if !op.results.is_empty() {
            return Err(self.misuse(op, "a default partition that returns values is not supported"));
        }
        let mut c = Cursor::new(&op.toks, op.span);
        let mut captured = Vec::new();
        if matches!(c.peek(), Tok::Punct("(")) {
            for t in c.group()? {
                if let Tok::Value(v) = &t.tok {
                    captured.push((v.clone(), t.span));
                }
            }
        }
        let attrs = self.attr_dict(op)?;
        let regs = attrs
            .get("requestedRegisters")
            .and_then(|x| x.ints())
            .unwrap_or_default();
        let mut default = None;
        let mut workers = Vec::new();
        while !c.at_end() {
            match c.peek().clone() {
                Tok::Ident(w) if w == "default" => {
                    c.bump();
                    let Tok::Region(ri) = *c.peek() else {
                        return Err(c.err("expected the default partition's body"));
                    };
                    c.bump();
                    let r = &op.regions[ri];
                    let body = self.region_block(r, &[])?;
                    default = Some(DefaultPartition {
                        comments: Vec::new(),
                        regs: None,
                        body,
                        span,
                    });
                }
                Tok::Ident(w) if w.starts_with("partition") => {
                    c.bump();
                    let args = if matches!(c.peek(), Tok::Punct("(")) {
                        c.group()?
                    } else {
                        &[]
                    };
                    let mut params = Vec::new();
                    let mut depth = 0i64;
                    for (i, t) in args.iter().enumerate() {
                        match t.tok {
                            Tok::Punct("(") | Tok::Punct("<") | Tok::Punct("[") | Tok::Punct("{") => {
                                depth += 1
                            }
                            Tok::Punct(")") | Tok::Punct(">") | Tok::Punct("]") | Tok::Punct("}") => {
                                depth -= 1
                            }
                            Tok::Value(ref v)
                                if depth == 0
                                    && matches!(args.get(i + 1).map(|t| &t.tok), Some(Tok::Punct(":"))) =>
                            {
                                params.push(v.clone())
                            }
                            _ => {}
                        }
                    }
                    let mut warps = 1;
                    if c.eat_ident("num_warps") {
                        let g = c.group()?;
                        if let Some(Tok::Int(n)) = g.first().map(|t| &t.tok) {
                            warps = *n;
                        }
                    }
                    let Tok::Region(ri) = *c.peek() else {
                        return Err(c.err("expected the partition's body"));
                    };
                    c.bump();
                    let k = workers.len();
                    let mut bindings = Vec::new();
                    for (i, p) in params.iter().enumerate() {
                        let (n, s) = captured.get(i).ok_or_else(|| {
                            self.misuse(op, "more partition arguments than captured values")
                        })?;
                        bindings.push((p.clone(), self.get(n, *s)?));
                    }
                    let r = &op.regions[ri];
                    let wname = self.worker_name(r, k);
                    let body = self.region_block(r, &bindings)?;
                    let reg = *regs.get(k).ok_or_else(|| {
                        self.misuse(
                            op,
                            format!("no register budget for partition {k} (requestedRegisters)"),
                        )
                    })?;
                    workers.push(Worker {
                        comments: Vec::new(),
                        name: Ident::spanned(wname, span),
                        warps: int_e(warps, span),
                        regs: int_e(reg, span),
                        body,
                        span,
                    });
                }
                _ => {
                    c.bump();
                }
            }
        }
        let default = default.ok_or_else(|| self.misuse(op, "no default partition"))?;
        self.push(StmtKind::WarpSpecialize { default, workers }, span);
        Ok(())
    }

    /// A worker's name: the Python function its code comes from, when the file is readable.
    fn worker_name(&mut self, r: &Region, k: usize) -> String {
        let from_python = r.ops.iter().find_map(|o| {
            let f = self.locs.user_frame(o.loc.as_deref()?)?;
            if !self.src.is_real(&f.file) {
                return None;
            }
            let sp = self.src.span(&f)?;
            enclosing_def(&self.src.file.text, sp.start as usize)
        });
        let base = match from_python {
            Some(n) => n.trim_end_matches("_partition").to_string(),
            None => format!("partition{k}"),
        };
        let mut name = base.clone();
        let mut i = 2;
        while self.workers_named.contains(&name) || self.names.contains(&name) {
            name = format!("{base}_{i}");
            i += 1;
        }
        self.workers_named.insert(name.clone());
        name
    }
}

/// The name of the Python `def` enclosing byte `at` of `text` (the nearest `def` above it
/// that is less indented).
fn enclosing_def(text: &str, at: usize) -> Option<String> {
    let before = text.get(..at)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let here = &text[line_start..];
    let indent = here.len() - here.trim_start().len();
    for line in before[..line_start].lines().rev() {
        let t = line.trim_start();
        let ind = line.len() - t.len();
        if ind < indent {
            if let Some(rest) = t.strip_prefix("def ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                return (!name.is_empty()).then_some(name);
            }
            if !t.is_empty() && !t.starts_with('#') && !t.starts_with('@') && !t.starts_with(')') {
                // A less indented statement that is not a `def`: keep looking outwards.
                continue;
            }
        }
    }
    None
}

/// Whether an SSA name says nothing of the Python variable (`%arg16`, `%0`, `%c1_i32`, `%true`).
fn generic_name(n: &str) -> bool {
    n.strip_prefix("arg")
        .is_some_and(|d| d.chars().all(|c| c.is_ascii_digit()))
        || n.starts_with(|c: char| c.is_ascii_digit())
        || n.starts_with("cst")
        || n.starts_with("true")
        || n.starts_with("false")
        || (n.starts_with('c') && n[1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// An integer tensor with the shape and layout of a pointer tensor.
fn int_tensor(pty: &Type) -> Type {
    match pty {
        Type::Tensor { shape, enc, .. } => Type::Tensor {
            shape: shape.clone(),
            elem: Box::new(Type::Scalar(Elem::I32)),
            enc: enc.clone(),
        },
        other => other.clone(),
    }
}

fn float_e(f: f64, span: Span) -> Option<Expr> {
    if !f.is_finite() {
        return None;
    }
    let lit = ex(ExprKind::Float(f.abs()), span);
    Some(if f.is_sign_negative() && f != 0.0 {
        ex(ExprKind::Unary(UnOp::Neg, Box::new(lit)), span)
    } else {
        lit
    })
}

/// Whether a TMEM load's register layout is the 32x32b message: thread t of warp w holds row
/// 32 * (w % 4) + t (lanes walk rows 1, 2, 4, 8, 16; the first two warp bases rows 32, 64).
fn is_tmem_32x32b(l: &Layout) -> bool {
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
            rows_ok && warps_ok
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
    use super::*;

    #[test]
    fn enclosing_def_finds_the_function() {
        let py =
            "def outer(a):\n    x = 1\n    for i in range(3):\n        y = x\n\ndef other():\n    pass\n";
        let at = py.find("y = x").unwrap();
        assert_eq!(enclosing_def(py, at).as_deref(), Some("outer"));
        let at = py.find("pass").unwrap();
        assert_eq!(enclosing_def(py, at).as_deref(), Some("other"));
    }

    #[test]
    fn tmem_layout_recognition() {
        let lane: Vec<Vec<i64>> = (0..5).map(|i| vec![1 << i, 0]).collect();
        let l = Layout::Linear {
            register: vec![vec![0, 1]],
            lane: lane.clone(),
            warp: vec![vec![32, 0], vec![64, 0], vec![0, 128]],
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
