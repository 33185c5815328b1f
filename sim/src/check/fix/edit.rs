//! The kernel edits `check --fix` tries, and where in the statement tree they apply.
//!
//! A place in the tree is a [`Pos`]: the path of blocks from the kernel's body (a statement's
//! index and which of its blocks: a loop body, a branch, a partition) and an index in the
//! last one. Places are taken from the kernel the edit is for ([`sites`]) and the edit is
//! applied to a copy of it, so paths stay valid.

use bwsim_isa::ir::{Block, Expr, Kernel, Op, OpKind, Rhs, Stmt, StmtKind};
use bwsim_isa::Span;

/// A statement's place: the blocks leading to it, then its index in the last one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pos {
    /// (statement index, block of that statement) from the kernel's body inwards.
    pub block: Vec<(usize, usize)>,
    pub index: usize,
}

/// One edit of the statement tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Edit {
    /// Insert operations (each its own statement) before the statement at `at`, or after it.
    Insert { at: Pos, after: bool, ops: Vec<OpKind> },
    /// Set operand `operand` (by its `.tile` name: `phase`, `bytes`, `count`, `relaxed`) of the
    /// operation at `at`; `None` drops a keyword operand.
    Operand {
        at: Pos,
        operand: &'static str,
        value: Option<Expr>,
    },
    /// Replace the statement at `at` with `let NAME = OP`.
    Replace { at: Pos, name: String, op: OpKind },
    /// Move the statement at `from` to just after the statement at index `after` of the same
    /// block, with `before` inserted right before it there.
    Move {
        from: Pos,
        after: usize,
        before: Vec<OpKind>,
    },
}

/// `stmt_op!(name)` / `stmt_op!(name, mut)`: the operation of a statement, if it is one (`op`,
/// `let x = op`, `x = op`), shared or mutable.
macro_rules! stmt_op {
    ($(#[$doc:meta])* $vis:vis $name:ident $(, $m:tt)?) => {
        $(#[$doc])*
        $vis fn $name(s: &$($m)? Stmt) -> Option<&$($m)? Op> {
            match &$($m)? s.kind {
                StmtKind::Op(op) => Some(op),
                StmtKind::Let {
                    value: Rhs::Op(op), ..
                }
                | StmtKind::Assign {
                    value: Rhs::Op(op), ..
                } => Some(op),
                _ => None,
            }
        }
    };
}
stmt_op!(
    /// The operation of a statement, if it is one (`op`, `let x = op`, `x = op`).
    pub stmt_op
);
stmt_op!(stmt_op_mut, mut);

/// One statement of the kernel, in source order.
#[derive(Clone, Debug)]
pub struct Site<'k> {
    pub pos: Pos,
    pub stmt: &'k Stmt,
    /// Its operation, if it is one.
    pub op: Option<&'k Op>,
}

impl Site<'_> {
    /// The operation's `.tile` name, or "".
    pub fn name(&self) -> &'static str {
        self.op.map_or("", |o| o.kind.name())
    }
    /// Whether this statement is the one of the operation at `span` (by position).
    pub fn is_at(&self, span: Span) -> bool {
        self.op.is_some_and(|o| at(o.span, span)) || at(self.stmt.span, span)
    }
    /// The span to point at: the operation's, else the statement's.
    pub fn span(&self) -> Span {
        self.op.map_or(self.stmt.span, |o| o.span)
    }
}

/// Span equality by position (`Span`'s `==` ignores positions, so that trees compare by
/// structure).
pub fn at(a: Span, b: Span) -> bool {
    a.start == b.start && a.end == b.end
}

/// Every statement of `k`, depth first, in source order.
pub fn sites(k: &Kernel) -> Vec<Site<'_>> {
    fn walk<'k>(b: &'k Block, path: &mut Vec<(usize, usize)>, out: &mut Vec<Site<'k>>) {
        for (i, s) in b.stmts.iter().enumerate() {
            out.push(Site {
                pos: Pos {
                    block: path.clone(),
                    index: i,
                },
                stmt: s,
                op: stmt_op(s),
            });
            for (j, inner) in s.blocks().into_iter().enumerate() {
                path.push((i, j));
                walk(inner, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    walk(&k.body, &mut Vec::new(), &mut out);
    out
}

fn block_mut<'b>(b: &'b mut Block, path: &[(usize, usize)]) -> Option<&'b mut Block> {
    match path.split_first() {
        None => Some(b),
        Some((&(i, j), rest)) => {
            let s = b.stmts.get_mut(i)?;
            let inner = s.blocks_mut().into_iter().nth(j)?;
            block_mut(inner, rest)
        }
    }
}

fn new_stmt(op: OpKind, span: Span) -> Stmt {
    Stmt::new(Vec::new(), StmtKind::Op(Op::new(op, span)), span)
}

impl Edit {
    /// `k` with this edit, or `None` where the edit does not fit it (a place that is not
    /// there, an operand the operation does not have).
    pub fn apply(&self, k: &Kernel) -> Option<Kernel> {
        apply_all(std::slice::from_ref(self), k)
    }

    /// Where the edit applies, as a key that orders places in source order.
    fn key(&self) -> Vec<usize> {
        let p = match self {
            Edit::Insert { at, .. } | Edit::Operand { at, .. } | Edit::Replace { at, .. } => at,
            Edit::Move { from, .. } => from,
        };
        p.block
            .iter()
            .flat_map(|&(i, j)| [i, j])
            .chain([p.index])
            .collect()
    }

    fn apply_in(&self, k: &mut Kernel) -> Option<()> {
        match self {
            Edit::Insert { at, after, ops } => {
                let b = block_mut(&mut k.body, &at.block)?;
                if ops.is_empty() {
                    return None;
                }
                let span = b.stmts.get(at.index)?.span;
                let i = at.index + usize::from(*after);
                for (n, op) in ops.iter().enumerate() {
                    b.stmts.insert(i + n, new_stmt(op.clone(), span));
                }
            }
            Edit::Operand { at, operand, value } => {
                let b = block_mut(&mut k.body, &at.block)?;
                let op = stmt_op_mut(b.stmts.get_mut(at.index)?)?;
                set_operand(&mut op.kind, operand, value.clone())?;
            }
            Edit::Replace { at, name, op } => {
                let b = block_mut(&mut k.body, &at.block)?;
                let s = b.stmts.get_mut(at.index)?;
                let span = s.span;
                s.kind = StmtKind::Let {
                    names: vec![bwsim_isa::ir::Ident::spanned(name.clone(), span)],
                    value: Rhs::Op(Op::new(op.clone(), span)),
                };
            }
            Edit::Move { from, after, before } => {
                let b = block_mut(&mut k.body, &from.block)?;
                if from.index >= b.stmts.len() || *after >= b.stmts.len() || *after == from.index {
                    return None;
                }
                let s = b.stmts.remove(from.index);
                let span = s.span;
                // The index of `after` once the statement is out.
                let dest = if *after > from.index { *after } else { *after + 1 };
                b.stmts.insert(dest, s);
                for (n, op) in before.iter().enumerate() {
                    b.stmts.insert(dest + n, new_stmt(op.clone(), span));
                }
            }
        }
        Some(())
    }
}

/// `k` with every edit of `edits` made, the last place in source order first (so that an
/// insertion does not move the places of the edits before it), or `None` where one does not
/// fit.
pub fn apply_all(edits: &[Edit], k: &Kernel) -> Option<Kernel> {
    let mut k = k.clone();
    let mut order: Vec<&Edit> = edits.iter().collect();
    order.sort_by_key(|e| std::cmp::Reverse(e.key()));
    for e in order {
        e.apply_in(&mut k)?;
    }
    k.number_nodes();
    Some(k)
}

/// Set (or drop) operand `name` of `kind`: positional operands are replaced, keyword ones
/// set or dropped. `None` when the operation has no such operand.
pub fn set_operand(kind: &mut OpKind, name: &str, value: Option<Expr>) -> Option<()> {
    use OpKind as K;
    let slot: &mut Option<Expr> = match (kind, name) {
        (K::MbarWait { phase, .. }, "phase") => {
            *phase = value?;
            return Some(());
        }
        (K::MbarExpect { bytes, .. }, "bytes") | (K::MbarExpectTx { bytes, .. }, "bytes") => {
            *bytes = value?;
            return Some(());
        }
        (K::MbarInit { count, .. }, "count") => {
            *count = value?;
            return Some(());
        }
        (K::MbarArrive { bar, .. }, "bar") => {
            *bar = value?;
            return Some(());
        }
        (K::DeviceAssert { cond, .. }, "cond") => {
            *cond = value?;
            return Some(());
        }
        (K::MbarArrive { count, .. }, "count") => count,
        (K::Tcgen05Commit { cta_group, .. }, "cta_group") => cta_group,
        (K::GlobalAtomic { sem, .. }, "sem") => sem,
        (K::ClusterArrive { relaxed }, "relaxed") => relaxed,
        (K::CpAsyncArrive { noinc, .. }, "noinc") => noinc,
        (K::TmaStoreWait { full, .. }, "full") => full,
        (K::TmaStoreWait { pendings, .. }, "pendings") | (K::CpAsyncWait { pendings }, "pendings") => {
            *pendings = value?;
            return Some(());
        }
        _ => return None,
    };
    *slot = value;
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "kernel k {
  target sm_90a
  num_warps 4
  param x: ptr(f32)
  layout l = blocked([1], [32], [4], [0])
  let buf = smem.alloc f32[128], plain
  let bar = mbar.alloc 1
  mbar.init bar[0], 1
  for i in 0..2 {
    let v = global.load x, arange(0, 128, l)
    mbar.arrive bar[0]
    smem.store buf, v
    mbar.wait bar[0], i & 1
  }
  launch {
    grid = [1]
    tensor t: f32[128] = zeros()
    x = t
  }
}
";

    fn names(b: &Block) -> Vec<&'static str> {
        b.stmts
            .iter()
            .map(|s| stmt_op(s).map_or("for", |op| op.kind.name()))
            .collect()
    }

    fn body(k: &Kernel) -> &Block {
        match &k.body.stmts[3].kind {
            StmtKind::For(f) => &f.body,
            _ => panic!("the loop"),
        }
    }

    #[test]
    fn sites_walk_every_statement_with_its_place() {
        let k = crate::session::parse(SRC).expect("parses");
        let s = sites(&k);
        type Listed<'a> = (&'a str, Vec<(usize, usize)>, usize);
        let listed: Vec<Listed> = s
            .iter()
            .map(|x| (x.name(), x.pos.block.clone(), x.pos.index))
            .collect();
        assert_eq!(
            listed,
            [
                ("smem.alloc", vec![], 0),
                ("mbar.alloc", vec![], 1),
                ("mbar.init", vec![], 2),
                ("", vec![], 3),
                ("global.load", vec![(3, 0)], 0),
                ("mbar.arrive", vec![(3, 0)], 1),
                ("smem.store", vec![(3, 0)], 2),
                ("mbar.wait", vec![(3, 0)], 3),
            ]
        );
    }

    #[test]
    fn inserts_moves_and_sets_operands_in_nested_blocks() {
        let k = crate::session::parse(SRC).expect("parses");
        let pos = |index| Pos {
            block: vec![(3, 0)],
            index,
        };
        // Each edit, and the loop body's op names once it is applied.
        let cases = [
            (
                Edit::Insert {
                    at: pos(2),
                    after: true,
                    ops: vec![OpKind::FenceAsyncShared {}],
                },
                "global.load mbar.arrive smem.store fence.async_shared mbar.wait",
            ),
            (
                Edit::Move {
                    from: pos(1),
                    after: 2,
                    before: vec![OpKind::FenceAsyncShared {}],
                },
                "global.load smem.store fence.async_shared mbar.arrive mbar.wait",
            ),
        ];
        for (edit, want) in cases {
            let edited = edit.apply(&k).expect("applies");
            assert_eq!(names(body(&edited)).join(" "), want, "{edit:?}");
        }
        let flipped = Edit::Operand {
            at: pos(3),
            operand: "phase",
            value: Some(Expr::int(1)),
        }
        .apply(&k)
        .expect("applies");
        let wait = stmt_op(&body(&flipped).stmts[3]).expect("an op");
        assert_eq!(bwsim_isa::printer::print_op(wait), "mbar.wait bar[0], 1");
        // A place or operand that is not there.
        assert!(Edit::Operand {
            at: pos(2),
            operand: "phase",
            value: Some(Expr::int(1))
        }
        .apply(&k)
        .is_none());
        assert!(Edit::Insert {
            at: Pos {
                block: vec![(9, 0)],
                index: 0
            },
            after: false,
            ops: vec![]
        }
        .apply(&k)
        .is_none());
    }
}
