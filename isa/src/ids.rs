//! Node ids: typed handles of the IR nodes the type checker records facts about.
//!
//! Every [`Op`], [`Expr`], [`Ident`] and [`Stmt`] of a kernel carries an [`Id`] of its own
//! kind, and [`Kernel::number_nodes`] numbers each kind densely from 0 in one walk order (the
//! kernel's name, `num_warps`, constants, parameters, layouts, the body depth first in source
//! order, then the launch section; a node before its children). The checker's side tables
//! ([`crate::typeck::Checked`]) are vectors indexed by these ids, so later stages look a fact
//! up by the node they hold, and a clone of a kernel (which keeps its ids) checks to the
//! same facts.
//!
//! Every producer of kernels numbers them: the parser, [`crate::builder`], the TTGIR importer,
//! and any code that edits a kernel after it was built. [`Kernel::check_ids`] tells whether a
//! kernel's ids are exactly that numbering; [`crate::typeck::check`] refuses a kernel whose
//! ids are not (a node built by hand and never numbered, two nodes sharing an id), so that no
//! node is ever given another node's facts.
//!
//! Like spans, ids never take part in equality, hashing or serialisation: two kernels that
//! differ only in their numbering are the same kernel. This module knows the shape of the IR;
//! it does not know what the checker records.

use crate::ir::*;
use crate::span::Span;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

/// A typed handle of an IR node of type `T`: its index in the kernel's numbering of the
/// `T`s. A node not yet numbered holds [`Id::UNSET`].
///
/// Compares equal to every other id (as [`Span`] does), so that ids stay out of IR
/// equality; compare [`Id::index`] to tell ids apart.
pub struct Id<T> {
    index: u32,
    node: PhantomData<fn() -> T>,
}

/// The id of an operation.
pub type OpId = Id<Op>;
/// The id of an expression.
pub type ExprId = Id<Expr>;
/// The id of a name as written (a binding, a parameter, a loop variable, a keyword).
pub type IdentId = Id<Ident>;
/// The id of a statement.
pub type StmtId = Id<Stmt>;

impl<T> Id<T> {
    /// The id of a node that has not been numbered.
    pub const UNSET: Id<T> = Id {
        index: u32::MAX,
        node: PhantomData,
    };

    /// The id with index `index`.
    pub fn new(index: u32) -> Id<T> {
        Id {
            index,
            node: PhantomData,
        }
    }

    /// The index in the kernel's numbering, `None` for [`Id::UNSET`].
    pub fn index(self) -> Option<usize> {
        (self.index != u32::MAX).then_some(self.index as usize)
    }
}

impl<T> Clone for Id<T> {
    fn clone(&self) -> Id<T> {
        *self
    }
}
impl<T> Copy for Id<T> {}
impl<T> Default for Id<T> {
    fn default() -> Id<T> {
        Id::UNSET
    }
}
impl<T> PartialEq for Id<T> {
    fn eq(&self, _: &Id<T>) -> bool {
        true
    }
}
impl<T> Eq for Id<T> {}
impl<T> Hash for Id<T> {
    fn hash<H: Hasher>(&self, _: &mut H) {}
}
impl<T> fmt::Debug for Id<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index() {
            Some(i) => write!(f, "#{i}"),
            None => f.write_str("#?"),
        }
    }
}

/// How many nodes of each kind a numbered kernel has (the length of a table indexed by ids).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCounts {
    pub ops: usize,
    pub exprs: usize,
    pub idents: usize,
    pub stmts: usize,
}

/// The kinds of numbered nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Op,
    Expr,
    Ident,
    Stmt,
}

/// Why a kernel's ids are not its numbering ([`Kernel::check_ids`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdError {
    /// The kind of the first node whose id is wrong.
    pub kind: NodeKind,
    /// The id the numbering gives it.
    pub expected: usize,
    /// The id it holds (`None`: never numbered).
    pub found: Option<usize>,
    /// Where the node was written.
    pub span: Span,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let found = match self.found {
            Some(i) => format!("holds id {i}"),
            None => "was never numbered".to_string(),
        };
        write!(
            f,
            "{:?} node {} (bytes {}..{}) {found}: the kernel was built or edited without \
             Kernel::number_nodes",
            self.kind, self.expected, self.span.start, self.span.end
        )
    }
}

impl std::error::Error for IdError {}

impl Kernel {
    /// Number every node: each kind densely from 0, in the walk order of this module's doc.
    /// Call it after building or editing a kernel; cloning keeps the ids.
    pub fn number_nodes(&mut self) -> NodeCounts {
        let mut n = Numbering::default();
        walk_mut::kernel(self, &mut n);
        n.counts
    }

    /// The node counts, when every node holds the id [`Kernel::number_nodes`] gives it.
    pub fn check_ids(&self) -> Result<NodeCounts, IdError> {
        let mut c = Checking::default();
        walk_ref::kernel(self, &mut c);
        match c.error {
            Some(e) => Err(e),
            None => Ok(c.counts),
        }
    }
}

/// What the walk hands a visitor: each node's id slot, in walk order.
trait Visit<R> {
    fn visit(&mut self, kind: NodeKind, id: R, span: Span);
}

fn next(counts: &mut NodeCounts, kind: NodeKind) -> usize {
    let c = match kind {
        NodeKind::Op => &mut counts.ops,
        NodeKind::Expr => &mut counts.exprs,
        NodeKind::Ident => &mut counts.idents,
        NodeKind::Stmt => &mut counts.stmts,
    };
    *c += 1;
    *c - 1
}

#[derive(Default)]
struct Numbering {
    counts: NodeCounts,
}

impl<'a> Visit<&'a mut u32> for Numbering {
    fn visit(&mut self, kind: NodeKind, id: &'a mut u32, _: Span) {
        *id = u32::try_from(next(&mut self.counts, kind)).unwrap_or(u32::MAX);
    }
}

#[derive(Default)]
struct Checking {
    counts: NodeCounts,
    error: Option<IdError>,
}

impl<'a> Visit<&'a u32> for Checking {
    fn visit(&mut self, kind: NodeKind, id: &'a u32, span: Span) {
        let expected = next(&mut self.counts, kind);
        if self.error.is_none() && (*id as usize != expected || *id == u32::MAX) {
            self.error = Some(IdError {
                kind,
                expected,
                found: (*id != u32::MAX).then_some(*id as usize),
                span,
            });
        }
    }
}

/// The walk over every numbered node, written once for shared and once for mutable access.
macro_rules! define_walk {
    ($module:ident, $($mut:ident)?; $operands:path) => {
        mod $module {
            use super::*;

            pub(super) fn kernel<'a>(k: &'a $($mut)? Kernel, v: &mut impl Visit<&'a $($mut)? u32>) {
                ident(& $($mut)? k.name, v);
                expr(& $($mut)? k.num_warps, v);
                for c in & $($mut)? k.consts {
                    ident(& $($mut)? c.name, v);
                    expr(& $($mut)? c.value, v);
                }
                for p in & $($mut)? k.params {
                    ident(& $($mut)? p.name, v);
                    expr(& $($mut)? p.ty, v);
                }
                for l in & $($mut)? k.layouts {
                    ident(& $($mut)? l.name, v);
                    expr(& $($mut)? l.value, v);
                }
                block(& $($mut)? k.body, v);
                for item in (& $($mut)? k.launch).into_iter().flat_map(|l| & $($mut)? l.items) {
                    match & $($mut)? item.kind {
                        LaunchItemKind::Tensor { name, ty, init } => {
                            ident(name, v);
                            expr(ty, v);
                            expr(init, v);
                        }
                        LaunchItemKind::Set { name, value } | LaunchItemKind::Limit { name, value } => {
                            ident(name, v);
                            expr(value, v);
                        }
                    }
                }
            }

            fn ident<'a>(i: &'a $($mut)? Ident, v: &mut impl Visit<&'a $($mut)? u32>) {
                v.visit(NodeKind::Ident, & $($mut)? i.id.index, i.span);
            }

            fn block<'a>(b: &'a $($mut)? Block, v: &mut impl Visit<&'a $($mut)? u32>) {
                for s in & $($mut)? b.stmts {
                    v.visit(NodeKind::Stmt, & $($mut)? s.id.index, s.span);
                    match & $($mut)? s.kind {
                        StmtKind::Let { names, value } | StmtKind::Assign { names, value } => {
                            for n in names {
                                ident(n, v);
                            }
                            match value {
                                Rhs::Expr(e) => expr(e, v),
                                Rhs::Op(o) => op(o, v),
                            }
                        }
                        StmtKind::Op(o) => op(o, v),
                        StmtKind::For(ForLoop { var, start, end, step, body, .. }) => {
                            ident(var, v);
                            expr(start, v);
                            expr(end, v);
                            if let Some(e) = step {
                                expr(e, v);
                            }
                            block(body, v);
                        }
                        StmtKind::While { cond, body } => {
                            expr(cond, v);
                            block(body, v);
                        }
                        StmtKind::If { cond, then_body, else_body } => {
                            expr(cond, v);
                            block(then_body, v);
                            if let Some(b) = else_body {
                                block(b, v);
                            }
                        }
                        StmtKind::WarpSpecialize { default, workers } => {
                            if let Some(e) = & $($mut)? default.regs {
                                expr(e, v);
                            }
                            block(& $($mut)? default.body, v);
                            for w in workers {
                                ident(& $($mut)? w.name, v);
                                expr(& $($mut)? w.warps, v);
                                expr(& $($mut)? w.regs, v);
                                block(& $($mut)? w.body, v);
                            }
                        }
                        StmtKind::StaticAssert { cond, .. } => expr(cond, v),
                    }
                }
            }

            fn op<'a>(o: &'a $($mut)? Op, v: &mut impl Visit<&'a $($mut)? u32>) {
                v.visit(NodeKind::Op, & $($mut)? o.id.index, o.span);
                for e in $operands(& $($mut)? o.kind) {
                    expr(e, v);
                }
            }

            fn expr<'a>(e: &'a $($mut)? Expr, v: &mut impl Visit<&'a $($mut)? u32>) {
                v.visit(NodeKind::Expr, & $($mut)? e.id.index, e.span);
                match & $($mut)? e.kind {
                    ExprKind::Int(_)
                    | ExprKind::Float(_)
                    | ExprKind::Bool(_)
                    | ExprKind::Str(_)
                    | ExprKind::Name(_) => {}
                    ExprKind::Unary(_, a) | ExprKind::Field(a, _) => expr(a, v),
                    ExprKind::Binary(_, a, b) => [a, b].into_iter().for_each(|e| expr(e, v)),
                    ExprKind::Call(_, args) => {
                        for a in args {
                            if let Some(k) = & $($mut)? a.key {
                                ident(k, v);
                            }
                            expr(& $($mut)? a.value, v);
                        }
                    }
                    ExprKind::Index(base, items) => {
                        expr(base, v);
                        items.into_iter().for_each(|it| index_item(it, v));
                    }
                    ExprKind::List(items) => items.into_iter().for_each(|e| expr(e, v)),
                }
            }

            fn index_item<'a>(it: &'a $($mut)? IndexItem, v: &mut impl Visit<&'a $($mut)? u32>) {
                let (a, b) = match it {
                    IndexItem::Expr(e) => (Some(e), None),
                    IndexItem::Slice(a, b) => (Option::from(a), Option::from(b)),
                    IndexItem::NewAxis => (None, None),
                };
                a.into_iter().chain(b).for_each(|e| expr(e, v));
            }
        }
    };
}

/// An operation's operands in the order of [`OpKind::operands_mut`].
fn operands(k: &OpKind) -> Vec<&Expr> {
    let (mut pos, kw) = k.to_parts();
    pos.extend(kw.into_iter().map(|(_, e)| e));
    pos
}

define_walk!(walk_ref, ; operands);
define_walk!(walk_mut, mut; OpKind::operands_mut);
