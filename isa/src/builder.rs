//! Building kernels from Rust: a small fluent API over the IR of [`crate::ir`].
//!
//! This module owns [`KernelBuilder`] (the header, the body and the launch section),
//! [`BlockBuilder`] (statements, nested blocks through closures), [`WarpSpecializeBuilder`],
//! [`LaunchBuilder`] and the short expression helpers ([`n`], [`int`], [`call`], [`idx`],
//! [`ty`], ...) plus the arithmetic operators on [`Expr`] (`a + b`, `a % b`, `-a`, ...).
//! Operations are written as [`OpKind`] values. Everything built here has dummy spans, and
//! printing it with [`crate::printer::print`] gives the canonical text.
//!
//! Comments given to [`KernelBuilder::comment`] and [`BlockBuilder::comment`] get a `// `
//! prefix unless they already start with `//`; they attach to the next declaration or
//! statement (or to the end of the block), as in the text format.
//!
//! ```
//! use bwsim_isa::builder::*;
//! use bwsim_isa::ir::OpKind;
//! use bwsim_isa::{parser, printer, DType, Target};
//!
//! let k = KernelBuilder::new("tma_load")
//!     .comment("Load one tile with TMA.")
//!     .target(Target::Sm100a)
//!     .num_warps(4)
//!     .const_int("BLOCK", 128)
//!     .param("src", call("tensor_desc", [ty(DType::F16, [n("BLOCK"), int(64)]), call("nvmma", [int(128)])]))
//!     .body(|b| {
//!         b.let_("buf", OpKind::SmemAlloc {
//!             ty: ty(DType::F16, [n("BLOCK"), int(64)]),
//!             layout: call("nvmma", [int(128)]),
//!             align: None,
//!         });
//!         b.let_("bar", OpKind::MbarAlloc { count: int(1), offset: None });
//!         b.op(OpKind::MbarInit { bar: idx(n("bar"), [int(0)]), count: int(1) });
//!         b.comment("Expect the bytes of one tile, then issue the copy.");
//!         let bytes = field(n("src"), "nbytes");
//!         b.op(OpKind::MbarExpect { bar: idx(n("bar"), [int(0)]), bytes, pred: None, cta: None });
//!         b.op(OpKind::TmaLoad {
//!             src: idx(n("src"), [call("program_id", [int(0)]) * n("BLOCK"), int(0)]),
//!             dst: n("buf"),
//!             bar: idx(n("bar"), [int(0)]),
//!             pred: None,
//!             multicast: None,
//!             bar_cta: None,
//!         });
//!         b.op(OpKind::MbarWait { bar: idx(n("bar"), [int(0)]), phase: int(0) });
//!     })
//!     .launch(|l| {
//!         l.grid([int(2)]);
//!         l.tensor("a", ty(DType::F16, [int(256), int(64)]), call("randn", []));
//!         l.set("src", n("a"));
//!     })
//!     .build();
//!
//! let text = printer::print(&k);
//! assert_eq!(text, "\
//! // Load one tile with TMA.
//! kernel tma_load {
//!   target sm_100a
//!   num_warps 4
//!   const BLOCK: int = 128
//!   param src: tensor_desc(f16[BLOCK, 64], nvmma(128))
//!   let buf = smem.alloc f16[BLOCK, 64], nvmma(128)
//!   let bar = mbar.alloc 1
//!   mbar.init bar[0], 1
//!   // Expect the bytes of one tile, then issue the copy.
//!   mbar.expect bar[0], src.nbytes
//!   tma.load src[program_id(0) * BLOCK, 0], buf, bar[0]
//!   mbar.wait bar[0], 0
//!   launch {
//!     grid = [2]
//!     tensor a: f16[256, 64] = randn()
//!     src = a
//!   }
//! }
//! ");
//! assert_eq!(parser::parse(&text).ok(), Some(k));
//! ```

use crate::ir::*;
use crate::span::Span;
use crate::types::{DType, Target};

fn comment_text(text: &str) -> String {
    let t = text.trim_end();
    if t.is_empty() || t.starts_with("//") {
        t.to_string()
    } else {
        format!("// {t}")
    }
}

fn push_comment(v: &mut Vec<String>, c: String) {
    if c.is_empty() && v.last().is_some_and(|l| l.is_empty()) {
        return;
    }
    v.push(c);
}

// ---- expressions ---------------------------------------------------------------------------

/// A name: a value, constant, parameter, layout or element type.
pub fn n(name: &str) -> Expr {
    Expr::name(name)
}

/// An integer (negative values become `-v`).
pub fn int(v: i64) -> Expr {
    Expr::int(v)
}

/// A float (negative values become `-v`).
pub fn float(v: f64) -> Expr {
    if v.is_sign_negative() && v != 0.0 {
        neg(Expr::new(ExprKind::Float(-v), Span::DUMMY))
    } else {
        Expr::new(ExprKind::Float(v.abs()), Span::DUMMY)
    }
}

/// `true` / `false`.
pub fn boolean(b: bool) -> Expr {
    Expr::bool(b)
}

/// A string literal.
pub fn string(s: &str) -> Expr {
    Expr::new(ExprKind::Str(s.to_string()), Span::DUMMY)
}

/// `-a`.
pub fn neg(a: Expr) -> Expr {
    Expr::new(ExprKind::Unary(UnOp::Neg, Box::new(a)), Span::DUMMY)
}

/// `!a`.
pub fn not(a: Expr) -> Expr {
    Expr::new(ExprKind::Unary(UnOp::Not, Box::new(a)), Span::DUMMY)
}

/// `a OP b` for any operator (comparisons and `&&`/`||` have no Rust operator to overload).
pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}

/// `f(args)` with positional arguments.
pub fn call<const N: usize>(f: &str, args: [Expr; N]) -> Expr {
    Expr::call(f, args.into())
}

/// `f(args, key=value, ...)`.
pub fn call_kw(f: &str, args: Vec<Expr>, kwargs: Vec<(&str, Expr)>) -> Expr {
    let mut v: Vec<Arg> = args.into_iter().map(|value| Arg { key: None, value }).collect();
    v.extend(kwargs.into_iter().map(|(k, value)| Arg {
        key: Some(Ident::new(k)),
        value,
    }));
    Expr::new(ExprKind::Call(f.to_string(), v), Span::DUMMY)
}

/// `base[i, j, ...]`.
pub fn idx<const N: usize>(base: Expr, items: [Expr; N]) -> Expr {
    Expr::index(base, items.into())
}

/// `base[items]` with slices and new axes.
pub fn idx_items(base: Expr, items: Vec<IndexItem>) -> Expr {
    Expr::new(ExprKind::Index(Box::new(base), items), Span::DUMMY)
}

/// The index item `a:b` (either end optional).
pub fn slice(a: Option<Expr>, b: Option<Expr>) -> IndexItem {
    IndexItem::Slice(a, b)
}

/// `base.name`.
pub fn field(base: Expr, name: &str) -> Expr {
    Expr::new(ExprKind::Field(Box::new(base), name.to_string()), Span::DUMMY)
}

/// `[a, b, ...]`.
pub fn list<const N: usize>(items: [Expr; N]) -> Expr {
    Expr::list(items.into())
}

/// A shaped type `DTYPE[d0, d1, ...]`.
pub fn ty<const N: usize>(d: DType, dims: [Expr; N]) -> Expr {
    Expr::index(Expr::name(d.name()), dims.into())
}

macro_rules! overload {
    ($($tr:ident $f:ident $op:ident),*) => {$(
        impl std::ops::$tr for Expr {
            type Output = Expr;
            fn $f(self, rhs: Expr) -> Expr {
                Expr::binary(BinOp::$op, self, rhs)
            }
        }
        impl std::ops::$tr<i64> for Expr {
            type Output = Expr;
            fn $f(self, rhs: i64) -> Expr {
                Expr::binary(BinOp::$op, self, Expr::int(rhs))
            }
        }
    )*};
}
overload!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Rem, BitAnd bitand BitAnd,
    BitOr bitor BitOr, BitXor bitxor BitXor, Shl shl Shl, Shr shr Shr);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        neg(self)
    }
}

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        not(self)
    }
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::int(v)
    }
}

impl From<bool> for Expr {
    fn from(b: bool) -> Expr {
        Expr::bool(b)
    }
}

impl From<&str> for Expr {
    /// A name.
    fn from(s: &str) -> Expr {
        Expr::name(s)
    }
}

impl From<Expr> for Rhs {
    fn from(e: Expr) -> Rhs {
        Rhs::Expr(e)
    }
}

impl From<OpKind> for Rhs {
    fn from(kind: OpKind) -> Rhs {
        Rhs::Op(Op::from(kind))
    }
}

impl From<OpKind> for Op {
    fn from(kind: OpKind) -> Op {
        Op::new(kind, Span::DUMMY)
    }
}

// ---- kernels -------------------------------------------------------------------------------

/// Builds a [`Kernel`]; see the module documentation for an example.
#[derive(Clone, Debug)]
pub struct KernelBuilder {
    k: Kernel,
    /// Comments waiting for the next declaration.
    pending: Vec<String>,
    header_started: bool,
}

impl KernelBuilder {
    /// A kernel with no targets, `num_warps 4` and an empty body.
    pub fn new(name: &str) -> KernelBuilder {
        KernelBuilder {
            k: Kernel {
                comments: Vec::new(),
                name: Ident::new(name),
                targets: Vec::new(),
                num_warps: Expr::int(4),
                consts: Vec::new(),
                params: Vec::new(),
                layouts: Vec::new(),
                body: Block::default(),
                launch: None,
                trailing_comments: Vec::new(),
                span: Span::DUMMY,
            },
            pending: Vec::new(),
            header_started: false,
        }
    }

    /// A comment line: above `kernel` before any target or declaration is given, else above
    /// the next declaration (or the first statement). `""` is a blank line.
    pub fn comment(mut self, text: &str) -> KernelBuilder {
        let c = comment_text(text);
        if self.header_started {
            push_comment(&mut self.pending, c);
        } else {
            push_comment(&mut self.k.comments, c);
        }
        self
    }

    /// Starts a header item: the comments written since the last item are its own.
    fn header_item(&mut self) -> Vec<String> {
        self.header_started = true;
        std::mem::take(&mut self.pending)
    }

    /// Add a supported target (the first is the default).
    pub fn target(mut self, t: Target) -> KernelBuilder {
        self.header_started = true;
        self.k.targets.push(t);
        self
    }

    /// `num_warps EXPR`.
    pub fn num_warps(mut self, e: impl Into<Expr>) -> KernelBuilder {
        self.header_started = true;
        self.k.num_warps = e.into();
        self
    }

    /// `const NAME: KIND = VALUE`.
    pub fn const_decl(mut self, name: &str, kind: ConstKind, value: impl Into<Expr>) -> KernelBuilder {
        let comments = self.header_item();
        self.k.consts.push(ConstDecl {
            comments,
            name: Ident::new(name),
            kind,
            value: value.into(),
            span: Span::DUMMY,
        });
        self
    }

    /// `const NAME: int = V`.
    pub fn const_int(self, name: &str, v: i64) -> KernelBuilder {
        self.const_decl(name, ConstKind::Int, Expr::int(v))
    }

    /// `const NAME: bool = V`.
    pub fn const_bool(self, name: &str, v: bool) -> KernelBuilder {
        self.const_decl(name, ConstKind::Bool, Expr::bool(v))
    }

    /// `const NAME: dtype = D`.
    pub fn const_dtype(self, name: &str, d: DType) -> KernelBuilder {
        self.const_decl(name, ConstKind::DType, Expr::name(d.name()))
    }

    /// `param NAME: TYPE`.
    pub fn param(mut self, name: &str, ty: impl Into<Expr>) -> KernelBuilder {
        let comments = self.header_item();
        self.k.params.push(Param {
            comments,
            name: Ident::new(name),
            ty: ty.into(),
            span: Span::DUMMY,
        });
        self
    }

    /// `layout NAME = LAYOUT`.
    pub fn layout(mut self, name: &str, value: impl Into<Expr>) -> KernelBuilder {
        let comments = self.header_item();
        self.k.layouts.push(LayoutDecl {
            comments,
            name: Ident::new(name),
            value: value.into(),
            span: Span::DUMMY,
        });
        self
    }

    /// Append statements to the kernel body.
    pub fn body(mut self, f: impl FnOnce(&mut BlockBuilder)) -> KernelBuilder {
        self.header_started = true;
        let mut b = BlockBuilder {
            block: std::mem::take(&mut self.k.body),
            pending: std::mem::take(&mut self.pending),
        };
        f(&mut b);
        self.k.body = b.block;
        self.pending = b.pending;
        self
    }

    /// The `launch { }` section.
    pub fn launch(mut self, f: impl FnOnce(&mut LaunchBuilder)) -> KernelBuilder {
        let mut l = LaunchBuilder {
            launch: Launch {
                comments: Vec::new(),
                items: Vec::new(),
                end_comments: Vec::new(),
                span: Span::DUMMY,
            },
            pending: Vec::new(),
        };
        f(&mut l);
        l.launch.comments = std::mem::take(&mut self.pending);
        l.launch.end_comments = l.pending;
        self.k.launch = Some(l.launch);
        self
    }

    /// The kernel. Comments given after the last statement end the body (or, with a launch
    /// section, precede it).
    pub fn build(mut self) -> Kernel {
        let pending = std::mem::take(&mut self.pending);
        match &mut self.k.launch {
            Some(l) if !pending.is_empty() => {
                let mut c = pending;
                c.append(&mut l.comments);
                l.comments = c;
            }
            _ => self.k.body.end_comments.extend(pending),
        }
        self.k.number_nodes();
        self.k
    }
}

/// Builds the statements of a block.
#[derive(Clone, Debug, Default)]
pub struct BlockBuilder {
    block: Block,
    pending: Vec<String>,
}

impl BlockBuilder {
    /// An empty block builder (for nested use outside a kernel).
    pub fn new() -> BlockBuilder {
        BlockBuilder::default()
    }

    /// The block built so far; comments not followed by a statement become end comments.
    pub fn finish(mut self) -> Block {
        let mut end = std::mem::take(&mut self.pending);
        while end.last().is_some_and(|c| c.is_empty()) {
            end.pop();
        }
        self.block.end_comments.extend(end);
        self.block
    }

    fn nested(f: impl FnOnce(&mut BlockBuilder)) -> Block {
        let mut b = BlockBuilder::new();
        f(&mut b);
        b.finish()
    }

    /// A comment line above the next statement (`""`: a blank line).
    pub fn comment(&mut self, text: &str) -> &mut BlockBuilder {
        push_comment(&mut self.pending, comment_text(text));
        self
    }

    /// Any statement.
    pub fn stmt(&mut self, kind: StmtKind) -> &mut BlockBuilder {
        let comments = std::mem::take(&mut self.pending);
        self.block.stmts.push(Stmt::new(comments, kind, Span::DUMMY));
        self
    }

    /// `let NAME = RHS` (an expression or an [`OpKind`]).
    pub fn let_(&mut self, name: &str, rhs: impl Into<Rhs>) -> &mut BlockBuilder {
        self.stmt(StmtKind::Let {
            names: vec![Ident::new(name)],
            value: rhs.into(),
        })
    }

    /// `let (A, B, ...) = RHS`.
    pub fn let_tuple(&mut self, names: &[&str], rhs: impl Into<Rhs>) -> &mut BlockBuilder {
        self.stmt(StmtKind::Let {
            names: names.iter().map(|s| Ident::new(*s)).collect(),
            value: rhs.into(),
        })
    }

    /// `NAME = RHS`.
    pub fn assign(&mut self, name: &str, rhs: impl Into<Rhs>) -> &mut BlockBuilder {
        self.stmt(StmtKind::Assign {
            names: vec![Ident::new(name)],
            value: rhs.into(),
        })
    }

    /// An operation statement.
    pub fn op(&mut self, kind: OpKind) -> &mut BlockBuilder {
        self.stmt(StmtKind::Op(kind.into()))
    }

    fn for_impl(
        &mut self,
        var: &str,
        start: Expr,
        end: Expr,
        step: Option<Expr>,
        unrolled: bool,
        f: impl FnOnce(&mut BlockBuilder),
    ) -> &mut BlockBuilder {
        let body = BlockBuilder::nested(f);
        self.stmt(StmtKind::For(ForLoop {
            var: Ident::new(var),
            start,
            end,
            step,
            body,
            unrolled,
        }))
    }

    /// `for VAR in START..END { ... }`.
    pub fn for_(
        &mut self,
        var: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        f: impl FnOnce(&mut BlockBuilder),
    ) -> &mut BlockBuilder {
        self.for_impl(var, start.into(), end.into(), None, false, f)
    }

    /// `for VAR in START..END step STEP { ... }`.
    pub fn for_step(
        &mut self,
        var: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        step: impl Into<Expr>,
        f: impl FnOnce(&mut BlockBuilder),
    ) -> &mut BlockBuilder {
        self.for_impl(var, start.into(), end.into(), Some(step.into()), false, f)
    }

    /// `static_for VAR in START..END { ... }`.
    pub fn static_for(
        &mut self,
        var: &str,
        start: impl Into<Expr>,
        end: impl Into<Expr>,
        f: impl FnOnce(&mut BlockBuilder),
    ) -> &mut BlockBuilder {
        self.for_impl(var, start.into(), end.into(), None, true, f)
    }

    /// `if COND { ... }`.
    pub fn if_(&mut self, cond: Expr, then: impl FnOnce(&mut BlockBuilder)) -> &mut BlockBuilder {
        let then_body = BlockBuilder::nested(then);
        self.stmt(StmtKind::If {
            cond,
            then_body,
            else_body: None,
        })
    }

    /// `if COND { ... } else { ... }`.
    pub fn if_else(
        &mut self,
        cond: Expr,
        then: impl FnOnce(&mut BlockBuilder),
        otherwise: impl FnOnce(&mut BlockBuilder),
    ) -> &mut BlockBuilder {
        let then_body = BlockBuilder::nested(then);
        let else_body = Some(BlockBuilder::nested(otherwise));
        self.stmt(StmtKind::If {
            cond,
            then_body,
            else_body,
        })
    }

    /// `warp_specialize { default { ... } worker ... }`.
    pub fn warp_specialize(&mut self, f: impl FnOnce(&mut WarpSpecializeBuilder)) -> &mut BlockBuilder {
        let mut w = WarpSpecializeBuilder {
            default: DefaultPartition {
                comments: Vec::new(),
                regs: None,
                body: Block::default(),
                span: Span::DUMMY,
            },
            workers: Vec::new(),
        };
        f(&mut w);
        self.stmt(StmtKind::WarpSpecialize {
            default: w.default,
            workers: w.workers,
        })
    }

    /// `static_assert COND, "message"`.
    pub fn static_assert(&mut self, cond: Expr, message: &str) -> &mut BlockBuilder {
        self.stmt(StmtKind::StaticAssert {
            cond,
            message: message.to_string(),
        })
    }
}

/// Builds the partitions of a `warp_specialize`.
#[derive(Clone, Debug)]
pub struct WarpSpecializeBuilder {
    default: DefaultPartition,
    workers: Vec<Worker>,
}

impl WarpSpecializeBuilder {
    /// The default partition's body.
    pub fn default(&mut self, f: impl FnOnce(&mut BlockBuilder)) -> &mut WarpSpecializeBuilder {
        self.default.body = BlockBuilder::nested(f);
        self
    }

    /// The default partition with a register budget: `default(regs=R) { ... }`.
    pub fn default_regs(
        &mut self,
        regs: impl Into<Expr>,
        f: impl FnOnce(&mut BlockBuilder),
    ) -> &mut WarpSpecializeBuilder {
        self.default.regs = Some(regs.into());
        self.default(f)
    }

    /// `worker NAME(warps=W, regs=R) { ... }`.
    pub fn worker(
        &mut self,
        name: &str,
        warps: impl Into<Expr>,
        regs: impl Into<Expr>,
        f: impl FnOnce(&mut BlockBuilder),
    ) -> &mut WarpSpecializeBuilder {
        self.workers.push(Worker {
            comments: Vec::new(),
            name: Ident::new(name),
            warps: warps.into(),
            regs: regs.into(),
            body: BlockBuilder::nested(f),
            span: Span::DUMMY,
        });
        self
    }
}

/// Builds a `launch { }` section.
#[derive(Clone, Debug)]
pub struct LaunchBuilder {
    launch: Launch,
    pending: Vec<String>,
}

impl LaunchBuilder {
    /// A comment line above the next item.
    pub fn comment(&mut self, text: &str) -> &mut LaunchBuilder {
        push_comment(&mut self.pending, comment_text(text));
        self
    }

    fn item(&mut self, kind: LaunchItemKind) -> &mut LaunchBuilder {
        let comments = std::mem::take(&mut self.pending);
        self.launch.items.push(LaunchItem {
            comments,
            kind,
            span: Span::DUMMY,
        });
        self
    }

    /// `NAME = VALUE` (`grid`, `cluster`, `outputs` or a parameter).
    pub fn set(&mut self, name: &str, value: impl Into<Expr>) -> &mut LaunchBuilder {
        self.item(LaunchItemKind::Set {
            name: Ident::new(name),
            value: value.into(),
        })
    }

    /// `grid = [X, Y, Z]`.
    pub fn grid<const N: usize>(&mut self, dims: [Expr; N]) -> &mut LaunchBuilder {
        self.set("grid", list(dims))
    }

    /// `tensor NAME: TYPE = INIT`.
    pub fn tensor(&mut self, name: &str, ty: Expr, init: Expr) -> &mut LaunchBuilder {
        self.item(LaunchItemKind::Tensor {
            name: Ident::new(name),
            ty,
            init,
        })
    }

    /// `limit NAME = VALUE`: a resource limit (`steps`, `wall_time`, `memory`, `trace_events`).
    pub fn limit(&mut self, name: &str, value: impl Into<Expr>) -> &mut LaunchBuilder {
        self.item(LaunchItemKind::Limit {
            name: Ident::new(name),
            value: value.into(),
        })
    }

    /// `outputs = [NAMES]`.
    pub fn outputs(&mut self, names: &[&str]) -> &mut LaunchBuilder {
        let v = names.iter().map(|s| Expr::name(s)).collect();
        self.set("outputs", Expr::list(v))
    }
}
