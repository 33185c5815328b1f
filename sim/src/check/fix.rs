//! Verified fix suggestions (`bwsim check --fix`): for one finding, the small edits of the
//! kernel that remove it, each applied to a copy of the kernel and checked again.
//!
//! The edits are statements inserted next to one of the finding's two accesses, chosen by the
//! finding's code and the operation that made the first access:
//! - `missing-fence`: `fence.async_shared` right after the generic access, or right before the
//!   asynchronous one;
//! - `write-while-in-flight` / `read-before-complete` / `race` after a TMA store (or scatter):
//!   `tma.store_wait N` before the second access;
//! - the same after a `cp.async`: `cp.async.wait N` before the second access (with a
//!   `cp.async.commit` first when the copies' group is still open);
//!
//! the waits tried deepest first (N = 2, 1, 0), the first that verifies kept: it leaves the
//! most copies or stores in flight.
//!
//! A candidate survives when, over the schedule that showed the finding and a batch of fresh
//! ones, the finding (its code at its place) is gone and no error of a code the original
//! exploration did not report appears. What survives is described in the source's terms: the
//! line to insert at, and the statement in `.tile` and in Gluon.

use crate::check::Prepared;
use crate::explore::{ExploreOptions, Finding};
use bwsim_isa::ir::{Block, Expr, ExprKind, Kernel, Op, OpKind, Rhs, Stmt, StmtKind};
use bwsim_isa::{Code, Diagnostic, Span};

/// One verified edit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// Where the statements go: before or after the statement of the operation at this span.
    pub anchor: Span,
    pub after: bool,
    /// The statements inserted, as `.tile` text (one per line).
    pub tile: Vec<&'static str>,
    /// The same in Gluon's Python API.
    pub gluon: Vec<&'static str>,
    /// How many schedules the edited kernel was checked over.
    pub schedules: u64,
}

impl Fix {
    /// The fix in words: `insert `fence.async_shared` after this statement`.
    pub fn describe(&self, gluon: bool) -> String {
        let what = if gluon { &self.gluon } else { &self.tile };
        let list = what
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", then ");
        format!(
            "insert {list} {} this statement (verified: over {} schedules the finding is gone and nothing new is reported)",
            if self.after { "after" } else { "before" },
            self.schedules
        )
    }
}

/// A candidate edit before it is verified.
#[derive(Clone, Debug)]
struct Candidate {
    /// Alternatives of one edit (wait depths, deepest first) share a group: the first of a
    /// group that verifies is kept, the shallower ones are not tried.
    group: u8,
    anchor: Span,
    after: bool,
    ops: Vec<OpKind>,
    tile: Vec<&'static str>,
    gluon: Vec<&'static str>,
}

/// Span equality by position (`Span`'s `==` ignores positions, so that trees compare by
/// structure).
fn at(a: Span, b: Span) -> bool {
    a.start == b.start && a.end == b.end
}

impl Candidate {
    /// Inserting `edits` (an operation with its `.tile` and Gluon spellings) before or after
    /// `anchor`.
    fn insert(
        group: u8,
        anchor: Span,
        after: bool,
        edits: Vec<(OpKind, &'static str, &'static str)>,
    ) -> Self {
        let tile = edits.iter().map(|e| e.1).collect();
        let gluon = edits.iter().map(|e| e.2).collect();
        Candidate {
            group,
            anchor,
            after,
            ops: edits.into_iter().map(|e| e.0).collect(),
            tile,
            gluon,
        }
    }
}

fn int(v: i64) -> Expr {
    Expr::new(ExprKind::Int(v), Span::DUMMY)
}

/// `tma.store_wait N` in `.tile` and Gluon, by N.
const STORE_WAIT: [(&str, &str); 3] = [
    ("tma.store_wait 0", "tma.store_wait(0)"),
    ("tma.store_wait 1", "tma.store_wait(1)"),
    ("tma.store_wait 2", "tma.store_wait(2)"),
];

/// `cp.async.wait N` in `.tile` and Gluon, by N.
const CP_WAIT: [(&str, &str); 3] = [
    ("cp.async.wait 0", "async_copy.wait_group(0)"),
    ("cp.async.wait 1", "async_copy.wait_group(1)"),
    ("cp.async.wait 2", "async_copy.wait_group(2)"),
];

fn fence() -> (OpKind, &'static str, &'static str) {
    (
        OpKind::FenceAsyncShared {},
        "fence.async_shared",
        "fence_async_shared()",
    )
}

/// The candidate edits for `d`, given the kernel's operations (`op_at` names the operation at
/// a span).
fn candidates(d: &Diagnostic, op_at: &dyn Fn(Span) -> Option<&'static str>) -> Vec<Candidate> {
    let second = d.primary.span;
    let Some(first) = d.labels.first().map(|l| l.span) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    match d.code {
        Code::MissingFence => {
            let (op, t, g) = fence();
            out.push(Candidate::insert(0, first, true, vec![(op.clone(), t, g)]));
            out.push(Candidate::insert(1, second, false, vec![(op, t, g)]));
        }
        Code::WriteWhileInFlight | Code::ReadBeforeComplete | Code::Race => {
            // The deepest wait that still retires the first access's group comes first: it
            // keeps the most copies or stores in flight.
            let first_op = op_at(first);
            for depth in [2i64, 1, 0] {
                match first_op {
                    Some(n) if n.starts_with("tma.store") || n.starts_with("tma.scatter") => {
                        out.push(Candidate::insert(
                            2,
                            second,
                            false,
                            vec![(
                                OpKind::TmaStoreWait {
                                    pendings: int(depth),
                                    full: None,
                                },
                                STORE_WAIT[depth as usize].0,
                                STORE_WAIT[depth as usize].1,
                            )],
                        ))
                    }
                    Some("cp.async") => {
                        // The wait alone when the copies' group is already committed, else a
                        // commit first.
                        let wait = OpKind::CpAsyncWait { pendings: int(depth) };
                        let (t, g) = CP_WAIT[depth as usize];
                        out.push(Candidate::insert(2, second, false, vec![(wait.clone(), t, g)]));
                        out.push(Candidate::insert(
                            2,
                            second,
                            false,
                            vec![
                                (
                                    OpKind::CpAsyncCommit {},
                                    "cp.async.commit",
                                    "async_copy.commit_group()",
                                ),
                                (wait, t, g),
                            ],
                        ));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// The operation of a statement, if it is one (`op`, `let x = op`, `x = op`).
fn stmt_op(s: &Stmt) -> Option<&Op> {
    match &s.kind {
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

/// `child_blocks!(name)` / `child_blocks!(name, mut)`: the blocks a statement holds (loop and
/// branch bodies, every partition of a `warp_specialize`), shared or mutable.
macro_rules! child_blocks {
    ($name:ident $(, $m:tt)?) => {
        fn $name(s: &$($m)? Stmt) -> Vec<&$($m)? Block> {
            match &$($m)? s.kind {
                StmtKind::For(f) => vec![&$($m)? f.body],
                StmtKind::While { body, .. } => vec![body],
                StmtKind::If {
                    then_body, else_body, ..
                } => {
                    let mut v = vec![then_body];
                    v.extend(else_body);
                    v
                }
                StmtKind::WarpSpecialize { default, workers } => {
                    let mut v = vec![&$($m)? default.body];
                    v.extend(workers.into_iter().map(|w| &$($m)? w.body));
                    v
                }
                _ => Vec::new(),
            }
        }
    };
}
child_blocks!(blocks);
child_blocks!(blocks_mut, mut);

/// The name of the first operation at `span` in `b`.
fn op_name_at(b: &Block, span: Span) -> Option<&'static str> {
    for s in &b.stmts {
        if let Some(op) = stmt_op(s).filter(|op| at(op.span, span)) {
            return Some(op.kind.name());
        }
        for inner in blocks(s) {
            if let Some(n) = op_name_at(inner, span) {
                return Some(n);
            }
        }
    }
    None
}

/// Insert `ops` before (or after) the first statement whose operation is at `span`; whether one
/// was found.
fn insert(b: &mut Block, span: Span, after: bool, ops: &[OpKind]) -> bool {
    let at = b
        .stmts
        .iter()
        .position(|s| stmt_op(s).is_some_and(|op| at(op.span, span)));
    if let Some(i) = at {
        let i = if after { i + 1 } else { i };
        for (k, op) in ops.iter().enumerate() {
            b.stmts.insert(
                i + k,
                Stmt::new(Vec::new(), StmtKind::Op(Op::new(op.clone(), span)), span),
            );
        }
        return true;
    }
    b.stmts.iter_mut().any(|s| {
        blocks_mut(s)
            .into_iter()
            .any(|inner| insert(inner, span, after, ops))
    })
}

/// The verified fixes of `finding`. `prepare` prepares an edited kernel as the original was
/// (constants, target, inputs, limits); `known` are the codes the original exploration
/// reported; the edited kernel is checked over the finding's seed and `schedules` fresh ones
/// on `jobs` threads.
pub fn suggest(
    kernel: &Kernel,
    finding: &Finding,
    known: &[Code],
    schedules: u64,
    jobs: usize,
    prepare: &dyn Fn(&Kernel) -> Option<Prepared>,
) -> Vec<Fix> {
    let d = &finding.diagnostic;
    let op_at = |s: Span| op_name_at(&kernel.body, s);
    let mut fixes = Vec::new();
    let mut done: Vec<u8> = Vec::new();
    for c in candidates(d, &op_at) {
        if done.contains(&c.group) {
            continue;
        }
        let mut k = kernel.clone();
        if !insert(&mut k.body, c.anchor, c.after, &c.ops) {
            continue;
        }
        k.number_nodes();
        let Some(p) = prepare(&k) else { continue };
        let same = |x: &Diagnostic| x.code == d.code && at(x.primary.span, d.primary.span);
        let news = |x: &Diagnostic| x.is_error() && !known.contains(&x.code);
        let replay = p.run(finding.seed, false);
        if replay.diagnostics.iter().any(|x| same(x) || news(x)) {
            continue;
        }
        let e = p.explore(
            &ExploreOptions {
                first_seed: 0,
                schedules,
                jobs,
                stop_on_first_error: false,
            },
            |_, _| {},
        );
        if e.findings
            .iter()
            .any(|f| same(&f.diagnostic) || news(&f.diagnostic))
        {
            continue;
        }
        done.push(c.group);
        fixes.push(Fix {
            anchor: c.anchor,
            after: c.after,
            tile: c.tile,
            gluon: c.gluon,
            schedules: e.schedules + 1,
        });
    }
    fixes
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
  let v = global.load x, arange(0, 128, l)
  smem.store buf, v
  tma.store_wait 0
  launch {
    grid = [1]
    tensor t: f32[128] = zeros()
    x = t
  }
}
";

    #[test]
    fn inserts_before_and_after_the_statement_of_an_operation() {
        let k = crate::session::parse(SRC).expect("parses");
        let span = k
            .body
            .stmts
            .iter()
            .find_map(|s| {
                stmt_op(s)
                    .filter(|op| op.kind.name() == "smem.store")
                    .map(|op| op.span)
            })
            .expect("a smem.store");
        let fenced = |after: bool| {
            let mut k = k.clone();
            assert!(insert(&mut k.body, span, after, &[OpKind::FenceAsyncShared {}]));
            k
        };
        let (before, after) = (fenced(false), fenced(true));
        let names = |k: &Kernel| -> Vec<&'static str> {
            k.body
                .stmts
                .iter()
                .filter_map(stmt_op)
                .map(|op| op.kind.name())
                .collect()
        };
        assert_eq!(
            names(&k),
            ["smem.alloc", "global.load", "smem.store", "tma.store_wait"]
        );
        assert_eq!(
            names(&before),
            [
                "smem.alloc",
                "global.load",
                "fence.async_shared",
                "smem.store",
                "tma.store_wait"
            ]
        );
        assert_eq!(
            names(&after),
            [
                "smem.alloc",
                "global.load",
                "smem.store",
                "fence.async_shared",
                "tma.store_wait"
            ]
        );
        assert!(!insert(&mut k.clone().body, Span::new(9999, 10000), false, &[]));
    }
}
