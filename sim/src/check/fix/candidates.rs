//! The candidate edits for one finding, chosen by its code and the operations at its labels.
//!
//! Every candidate is only a guess: [`super::suggest`] applies it to a copy of the kernel and
//! checks that copy again; nothing here needs to be right, only short (each candidate costs a
//! check).

use super::edit::{at, set_operand, sites, Edit, Pos, Site};
use super::spell;
use bwsim_isa::ir::{BinOp, Expr, ExprKind, Kernel, OpKind, StmtKind, UnOp};
use bwsim_isa::printer::print_expr;
use bwsim_isa::{Code, Diagnostic, Span};

/// A candidate edit before it is verified.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The same edit at the statement's copies (see [`with_copies`]).
    pub also: Vec<Edit>,
    /// Alternatives of one edit (wait depths, parities, places) share a group: they are tried
    /// in order until one verifies that leaves none of the other findings behind; the group
    /// keeps its best.
    pub group: u32,
    pub edit: Edit,
    /// The statement the fix is shown at, and for a move the statement it goes after.
    pub anchor: Span,
    pub target: Option<Span>,
    /// What the edit does, in `.tile` terms and in Gluon's.
    pub tile: String,
    pub gluon: String,
    /// For an operand edit: the operation as it reads after it, in `.tile`.
    pub replacement: Option<String>,
}

/// The wait depths tried, deepest first: the deepest wait that works leaves the most copies or
/// stores in flight.
const DEPTHS: [i64; 3] = [2, 1, 0];

/// Statements a released buffer's reads may run past the `mbar.arrive` that releases it: the
/// places a moved arrive is tried at.
const MOVE_REACH: usize = 5;

/// The kernel's statements with the lookups the candidates need.
struct Ctx<'k> {
    sites: Vec<Site<'k>>,
}

/// The barrier operand of the operations that name one.
fn bar_of(k: &OpKind) -> Option<&Expr> {
    use OpKind as K;
    match k {
        K::MbarInit { bar, .. }
        | K::MbarExpect { bar, .. }
        | K::MbarExpectTx { bar, .. }
        | K::MbarArrive { bar, .. }
        | K::CpAsyncArrive { bar, .. }
        | K::MbarWait { bar, .. }
        | K::MbarInvalidate { bar }
        | K::TmaLoad { bar, .. }
        | K::TmaGather { bar, .. }
        | K::Tcgen05Commit { bar, .. }
        | K::ClcTryCancel { bar, .. } => Some(bar),
        _ => None,
    }
}

/// The text of a barrier array's root (`bars` of `bars[i]`): barriers indexed by computed
/// values in different partitions match by it.
fn root(b: &Expr) -> String {
    match &b.kind {
        ExprKind::Index(r, _) => text(r),
        _ => text(b),
    }
}

/// An expression's text, by which barriers are matched.
fn text(e: &Expr) -> String {
    print_expr(e)
}

/// `p ^ 1`, or `p` where it is `p ^ 1` already, or the other literal.
fn flipped(p: &Expr) -> Expr {
    match &p.kind {
        ExprKind::Int(v @ (0 | 1)) => Expr::int(1 - v),
        ExprKind::Binary(BinOp::BitXor, a, b) if matches!(b.kind, ExprKind::Int(1)) => (**a).clone(),
        _ => Expr::binary(BinOp::BitXor, p.clone(), Expr::int(1)),
    }
}

impl<'k> Ctx<'k> {
    /// The statement of the operation at `span`; where several share it (a Gluon call
    /// imported as several operations: `clc.try_cancel` as an expect and the cancel), the one
    /// the diagnostic's message names.
    fn site_at(&self, span: Span, message: &str) -> Option<&Site<'k>> {
        let ops: Vec<&Site<'k>> = self
            .sites
            .iter()
            .filter(|s| s.op.is_some_and(|o| at(o.span, span)))
            .collect();
        ops.iter()
            .find(|s| message.contains(&format!("`{}`", s.name())))
            .or(ops.first())
            .copied()
            .or_else(|| self.sites.iter().find(|s| s.is_at(span)))
    }

    fn order(&self, s: &Site) -> usize {
        self.sites.iter().position(|x| x.pos == s.pos).unwrap_or(0)
    }

    /// The statements of the block `s` is in, from `s` on.
    fn rest_of_block<'a>(&'a self, s: &'a Site<'k>) -> impl Iterator<Item = &'a Site<'k>> + 'a {
        self.sites
            .iter()
            .filter(move |x| x.pos.block == s.pos.block && x.pos.index >= s.pos.index)
    }

    /// The last statement of the block `s` is in.
    fn last_of_block<'a>(&'a self, s: &'a Site<'k>) -> Option<&'a Site<'k>> {
        self.rest_of_block(s).last()
    }

    /// The parities the kernel waits on barrier `bar` (by text) with, then 0 and 1.
    fn parities(&self, bar: &str) -> Vec<Expr> {
        let mut out: Vec<Expr> = Vec::new();
        let mut seen: Vec<String> = Vec::new();
        let found = self.sites.iter().filter_map(|s| match s.op.map(|o| &o.kind) {
            Some(OpKind::MbarWait { bar: b, phase }) if text(b) == bar => Some(phase.clone()),
            _ => None,
        });
        for p in found.chain([Expr::int(0), Expr::int(1)]) {
            let t = text(&p);
            if !seen.contains(&t) {
                seen.push(t);
                out.push(p);
            }
        }
        out
    }

    /// The barrier whose phase completion says the asynchronous operation at `s` is done (a
    /// TMA load's own, or that of the `tcgen05.commit` issued after a tensor-core operation),
    /// and whether it is signalled before `before` (a commit after it is not).
    fn completion_bar(&self, s: &Site<'k>, before: &Site<'k>) -> Option<(Expr, bool)> {
        let op = s.op?;
        match &op.kind {
            OpKind::TmaLoad { bar, .. }
            | OpKind::TmaGather { bar, .. }
            | OpKind::ClcTryCancel { bar, .. } => Some((bar.clone(), true)),
            k if k.name().starts_with("tcgen05.") || k.name().starts_with("tmem.") => {
                let from = self.order(s);
                let until = self.order(before);
                self.sites[from..]
                    .iter()
                    .enumerate()
                    .find_map(|(i, x)| match x.op.map(|o| &o.kind) {
                        Some(OpKind::Tcgen05Commit { bar, .. }) => Some((bar.clone(), from + i < until)),
                        _ => None,
                    })
            }
            _ => None,
        }
    }

    /// The releases of the block `s` is in: its `mbar.arrive`s, `cp.async.arrive`s (arrivals
    /// once the block's earlier copies land) and `global.atomic`s (a flag set with release
    /// semantics).
    fn releases(&self, s: &Site<'k>) -> Vec<&Site<'k>> {
        self.sites
            .iter()
            .filter(|x| {
                x.pos.block == s.pos.block
                    && matches!(x.name(), "mbar.arrive" | "cp.async.arrive" | "global.atomic")
            })
            .collect()
    }

    /// Whether any statement arrives on barrier `bar` (by text): an arrive, an expect, a
    /// commit, a TMA load.
    fn arrived_on(&self, bar: &str) -> bool {
        self.sites.iter().any(|s| {
            s.op.is_some_and(|o| {
                !matches!(
                    o.kind,
                    OpKind::MbarWait { .. } | OpKind::MbarInit { .. } | OpKind::MbarInvalidate { .. }
                ) && bar_of(&o.kind).is_some_and(|b| text(b) == bar)
            })
        })
    }

    /// The barriers the kernel initialises (`mbar.init`) whose array no other statement names
    /// (no arrive, wait, expect, copy or commit on any element of it, by text: an element
    /// indexed by a computed value counts for every element).
    fn unused_barriers(&self) -> Vec<Expr> {
        let used: Vec<String> = self
            .sites
            .iter()
            .filter_map(|s| {
                let o = s.op?;
                if matches!(o.kind, OpKind::MbarInit { .. } | OpKind::MbarInvalidate { .. }) {
                    return None;
                }
                bar_of(&o.kind).map(root)
            })
            .collect();
        self.sites
            .iter()
            .filter_map(|s| match s.op.map(|o| &o.kind) {
                Some(OpKind::MbarInit { bar, .. }) if !used.contains(&root(bar)) => Some(bar.clone()),
                _ => None,
            })
            .collect()
    }

    /// The induction variable of the innermost loop around `s`, if it is in one.
    fn loop_var(&self, s: &Site<'k>) -> Option<String> {
        let (&(i, _), outer) = s.pos.block.split_last()?;
        let head = self
            .sites
            .iter()
            .find(|x| x.pos.block == outer && x.pos.index == i)?;
        match &head.stmt.kind {
            StmtKind::For(f) => Some(f.var.name.clone()),
            _ => None,
        }
    }

    /// `mbar.wait BAR, P` before `before`, for every parity the kernel waits on BAR with, then
    /// 0 and 1, the parities the block waits other barriers with, and those of a loop's
    /// iteration and of the one before it (`i & 1`, `(i - 1) & 1`).
    fn waits_before(&self, group: u32, before: &Site<'k>, bar: &Expr, out: &mut Vec<Candidate>) {
        let mut parities = self.parities(&text(bar));
        // The phases the same block waits other barriers with (one phase variable for
        // barriers that complete once per iteration).
        for x in self.sites.iter().filter(|x| x.pos.block == before.pos.block) {
            if let Some(OpKind::MbarWait { phase, .. }) = x.op.map(|o| &o.kind) {
                if !parities.iter().any(|q| text(q) == text(phase)) {
                    parities.push(phase.clone());
                }
            }
        }
        if let Some(v) = self.loop_var(before) {
            let i = Expr::name(&v);
            let prev = Expr::binary(BinOp::Sub, i.clone(), Expr::int(1));
            for p in [i, prev] {
                let p = Expr::binary(BinOp::BitAnd, p, Expr::int(1));
                if !parities.iter().any(|q| text(q) == text(&p)) {
                    parities.push(p);
                }
            }
        }
        for p in parities {
            let op = OpKind::MbarWait {
                bar: bar.clone(),
                phase: p,
            };
            out.push(insert(group, before, false, vec![op]));
        }
    }

    /// The bytes the TMA loads of the run starting at `from` (same block, until a wait on
    /// `bar`) deliver to `bar`: `d.nbytes` per load of descriptor `d`.
    fn delivered(&self, from: &Site<'k>, bar: &str) -> Option<Expr> {
        let mut sum: Option<Expr> = None;
        for s in self.rest_of_block(from) {
            match s.op.map(|o| &o.kind) {
                Some(OpKind::MbarWait { bar: b, .. }) if text(b) == bar => break,
                Some(OpKind::TmaLoad { src, bar: b, .. }) if text(b) == bar => {
                    let ExprKind::Index(desc, _) = &src.kind else {
                        return None;
                    };
                    let n = Expr::new(ExprKind::Field(desc.clone(), "nbytes".into()), Span::DUMMY);
                    sum = Some(match sum {
                        None => n,
                        Some(s) => Expr::binary(BinOp::Add, s, n),
                    });
                }
                _ => {}
            }
        }
        sum
    }
}

/// Whether an operation accesses shared memory through the async proxy.
fn is_async(name: &str) -> bool {
    matches!(
        name,
        "tma.load" | "tma.gather" | "tma.store" | "tma.scatter" | "tcgen05.mma" | "tcgen05.cp" | "wgmma"
    )
}

/// A plain `global.store` made an atomic exchange (`let NAME = global.atomic xchg, ...`).
fn atomic_store(s: &Site) -> Option<Candidate> {
    let Some(OpKind::GlobalStore {
        ptr,
        offsets,
        value,
        mask,
    }) = s.op.map(|o| &o.kind)
    else {
        return None;
    };
    let op = OpKind::GlobalAtomic {
        op: Expr::name("xchg"),
        ptr: ptr.clone(),
        offsets: offsets.clone(),
        value: value.clone(),
        mask: mask.clone(),
        compare: None,
        sem: None,
        scope: None,
    };
    let name = "was_stored";
    let tile = format!("let {name} = {}", spell::tile(&op));
    Some(Candidate {
        also: Vec::new(),
        group: 7,
        tile: format!("make the store atomic: `{tile}`"),
        gluon: "make the store atomic: `gl.atomic_xchg(ptr, value, mask=mask)`".into(),
        replacement: Some(tile),
        edit: Edit::Replace {
            at: s.pos.clone(),
            name: name.into(),
            op,
        },
        anchor: s.span(),
        target: None,
    })
}

fn insert(group: u32, s: &Site, after: bool, ops: Vec<OpKind>) -> Candidate {
    let tile = ops
        .iter()
        .map(|o| format!("`{}`", spell::tile(o)))
        .collect::<Vec<_>>()
        .join(", then ");
    let gluon = ops
        .iter()
        .map(|o| format!("`{}`", spell::gluon(o)))
        .collect::<Vec<_>>()
        .join(", then ");
    let place = if after { "after" } else { "before" };
    Candidate {
        also: Vec::new(),
        group,
        edit: Edit::Insert {
            at: s.pos.clone(),
            after,
            ops,
        },
        anchor: s.span(),
        target: None,
        tile: format!("insert {tile} {place} this statement"),
        gluon: format!("insert {gluon} {place} this statement"),
        replacement: None,
    }
}

/// Set operand `operand` of the operation at `s` to `value` (`None`: drop it).
fn operand(group: u32, s: &Site, name: &'static str, value: Option<Expr>, why: &str) -> Option<Candidate> {
    let edit = Edit::Operand {
        at: s.pos.clone(),
        operand: name,
        value,
    };
    let op = s.op?;
    // The operation as it reads after the edit.
    let mut kind = op.kind.clone();
    if let Edit::Operand { value, .. } = &edit {
        set_operand(&mut kind, name, value.clone())?;
    }
    Some(Candidate {
        also: Vec::new(),
        group,
        edit,
        anchor: op.span,
        target: None,
        tile: format!("{why}: `{}`", spell::tile(&kind)),
        gluon: format!("{why}: `{}`", spell::gluon(&kind)),
        replacement: Some(spell::tile(&kind)),
    })
}

/// The candidate edits for `d` in `k`, each made also at the copies of its statement.
pub fn candidates(k: &Kernel, d: &Diagnostic) -> Vec<Candidate> {
    let cx = Ctx { sites: sites(k) };
    with_copies(&cx, own(&cx, d))
}

/// The other statements of the operation at `s`: those with its name at its span (an imported
/// Gluon statement the compiler copied, as a pipelined loop's prologue and body).
fn copies<'a, 'k>(cx: &'a Ctx<'k>, s: &Site<'k>) -> Vec<&'a Site<'k>> {
    let Some(op) = s.op else { return Vec::new() };
    cx.sites
        .iter()
        .filter(|x| x.pos != s.pos && x.name() == op.kind.name() && x.op.is_some_and(|o| at(o.span, op.span)))
        .collect()
}

/// Each candidate whose statement has copies (see [`copies`]) made at every copy too (an
/// operand set from the copy's own operands: its parity flipped, the bytes its loads deliver),
/// then as it is, in case the copies' scopes do not fit it.
fn with_copies(cx: &Ctx, cands: Vec<Candidate>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for c in cands {
        let pos = match &c.edit {
            Edit::Insert { at, .. } | Edit::Operand { at, .. } | Edit::Replace { at, .. } => at.clone(),
            Edit::Move { .. } => {
                out.push(c);
                continue;
            }
        };
        let Some(site) = cx.sites.iter().find(|s| s.pos == pos) else {
            out.push(c);
            continue;
        };
        let also: Vec<Edit> = copies(cx, site)
            .into_iter()
            .filter_map(|t| match &c.edit {
                Edit::Insert { after, ops, .. } => Some(Edit::Insert {
                    at: t.pos.clone(),
                    after: *after,
                    ops: ops.clone(),
                }),
                Edit::Operand { operand, value, .. } => {
                    let kind = &t.op?.kind;
                    let value = match (*operand, kind) {
                        ("phase", OpKind::MbarWait { phase, .. }) => Some(flipped(phase)),
                        ("bytes", OpKind::MbarExpect { bar, .. }) => Some(cx.delivered(t, &text(bar))?),
                        _ => value.clone(),
                    };
                    Some(Edit::Operand {
                        at: t.pos.clone(),
                        operand,
                        value,
                    })
                }
                Edit::Replace { name, op, .. } => Some(Edit::Replace {
                    at: t.pos.clone(),
                    name: name.clone(),
                    op: op.clone(),
                }),
                Edit::Move { .. } => None,
            })
            .collect();
        if !also.is_empty() {
            let also = c.also.iter().cloned().chain(also).collect();
            out.push(Candidate { also, ..c.clone() });
        }
        out.push(c);
    }
    out
}

/// The candidate edits for `d` at the statements its labels point at.
fn own(cx: &Ctx, d: &Diagnostic) -> Vec<Candidate> {
    let second = cx.site_at(d.primary.span, &d.message);
    let labels: Vec<&Site> = d
        .labels
        .iter()
        .filter_map(|l| cx.site_at(l.span, &d.message))
        .collect();
    let first = labels.first().copied();
    let mut out = Vec::new();
    match d.code {
        Code::MissingFence => {
            let fence = || vec![OpKind::FenceAsyncShared {}];
            // Right after the generic access, or after the accesses that follow it in its
            // block (one fence for several).
            if let Some(f) = first {
                for s in cx.rest_of_block(f).take(MOVE_REACH) {
                    out.push(insert(0, s, true, fence()));
                }
            }
            if let Some(s) = second {
                out.push(insert(1, s, false, fence()));
            }
        }
        Code::WriteWhileInFlight | Code::ReadBeforeComplete | Code::Race | Code::GlobalRace => {
            let (Some(first), Some(second)) = (first, second) else {
                return out;
            };
            let first_name = first.name();
            if first_name.starts_with("tma.store") || first_name.starts_with("tma.scatter") {
                // A global conflict needs the stores' writes done, not only their reads.
                let full = d.code == Code::GlobalRace;
                for depth in DEPTHS {
                    let op = OpKind::TmaStoreWait {
                        pendings: Expr::int(depth),
                        full: full.then(|| Expr::bool(true)),
                    };
                    out.push(insert(2, second, false, vec![op]));
                }
            }
            let async_second = is_async(second.name());
            if first_name == "cp.async" {
                // The copies' writes are generic-proxy ones: an asynchronous access after them
                // also needs a proxy fence.
                let fences: &[bool] = if async_second { &[false, true] } else { &[false] };
                for depth in DEPTHS {
                    let wait = OpKind::CpAsyncWait {
                        pendings: Expr::int(depth),
                    };
                    for commit in [false, true] {
                        for &fence in fences {
                            let mut ops = Vec::new();
                            if commit {
                                ops.push(OpKind::CpAsyncCommit {});
                            }
                            ops.push(wait.clone());
                            if fence {
                                ops.push(OpKind::FenceAsyncShared {});
                            }
                            out.push(insert(2, second, false, ops));
                        }
                    }
                }
            }
            // Wait for the first access's completion before the second: on the barrier that
            // signals it, committing the tensor-core work first where its commit comes later.
            if let Some((bar, committed)) = cx.completion_bar(first, second) {
                if committed {
                    cx.waits_before(3, second, &bar, &mut out);
                    // Or a barrier initialised for fewer arrivals than its phases get (the
                    // commits of a cluster's MMAs): one more arrival, then twice as many.
                    let b = text(&bar);
                    for init in cx.sites.iter().filter(|s| {
                        matches!(s.op.map(|o| &o.kind), Some(OpKind::MbarInit { bar, .. }) if text(bar) == b)
                    }) {
                        if let Some(OpKind::MbarInit { count, .. }) = init.op.map(|o| &o.kind) {
                            if let ExprKind::Int(n) = count.kind {
                                for m in [n + 1, 2 * n] {
                                    let why = "initialise the barrier for the arrivals each phase gets";
                                    out.extend(operand(9, init, "count", Some(Expr::int(m)), why));
                                }
                            }
                        }
                    }
                } else {
                    for p in cx.parities(&text(&bar)) {
                        let ops = vec![
                            OpKind::Tcgen05Commit {
                                bar: bar.clone(),
                                pred: None,
                                cta_group: None,
                                multicast: None,
                            },
                            OpKind::MbarWait {
                                bar: bar.clone(),
                                phase: p,
                            },
                        ];
                        out.push(insert(3, second, false, ops));
                    }
                    // Or the second access moved to after the kernel's own wait on that
                    // barrier, which follows the later commit in its block.
                    let b = text(&bar);
                    let wait = cx.rest_of_block(second).find(
                        |x| matches!(x.op.map(|o| &o.kind), Some(OpKind::MbarWait { bar, .. }) if text(bar) == b),
                    );
                    if let Some(w) = wait {
                        out.push(moved(3, second, w, Vec::new()));
                    }
                }
            }
            // Or on a barrier the other access's block arrives on (the barrier that hands its
            // buffer back, or a remote arrival), before either access.
            for (a, b) in [(first, second), (second, first)] {
                for r in cx.releases(a) {
                    if let Some(bar) = r.op.and_then(|o| bar_of(&o.kind)) {
                        cx.waits_before(4, b, bar, &mut out);
                    }
                }
            }
            // Two partitions with no handshake at all: one over a barrier the kernel
            // initialises and never uses: an arrive after the first access (behind a proxy
            // fence, then without one) and a wait for it before the second.
            if first.pos.block != second.pos.block {
                for b in cx.unused_barriers() {
                    for fence in [true, false] {
                        let mut ops = Vec::new();
                        if fence {
                            ops.push(OpKind::FenceAsyncShared {});
                        }
                        ops.push(OpKind::MbarArrive {
                            bar: b.clone(),
                            count: None,
                            pred: None,
                            cta: None,
                        });
                        let mut c = insert(20, first, true, ops);
                        let wait = insert(
                            20,
                            second,
                            false,
                            vec![OpKind::MbarWait {
                                bar: b.clone(),
                                phase: Expr::int(0),
                            }],
                        );
                        c.tile = format!(
                            "{}, and {}",
                            c.tile,
                            wait.tile.replace("this statement", "the other access")
                        );
                        c.gluon = format!(
                            "{}, and {}",
                            c.gluon,
                            wait.gluon.replace("this statement", "the other access")
                        );
                        c.also.push(wait.edit);
                        out.push(c);
                    }
                }
            }
            // A release (an arrive, a flag's atomic) that hands the buffer over before the
            // first access: move it after the access, or a few statements further (with a
            // proxy fence where the next write is asynchronous).
            let releases = cx.releases(first);
            for r in releases.iter().filter(|r| r.pos.index < first.pos.index) {
                let rest: Vec<&Site> = cx.rest_of_block(first).take(MOVE_REACH).collect();
                for dest in rest {
                    let before = if async_second {
                        vec![OpKind::FenceAsyncShared {}]
                    } else {
                        Vec::new()
                    };
                    out.push(moved(5, r, dest, before));
                }
            }
            // A plain store that another CTA's atomic of the same elements races with: make it
            // atomic too (two plain stores to one element are a wrong index, not this).
            if d.code == Code::GlobalRace {
                for (s, other) in [(first, second), (second, first)] {
                    if other.name() == "global.atomic" {
                        out.extend(atomic_store(s));
                    }
                }
            }
            // A relaxed atomic (a flag) orders nothing: an acquiring load, a releasing (and
            // acquiring) read-modify-write; each, then all of them.
            let relaxed: Vec<(&Site, Expr)> = cx
                .sites
                .iter()
                .filter_map(|s| match s.op.map(|o| &o.kind) {
                    Some(OpKind::GlobalAtomic {
                        op, sem: Some(sem), ..
                    }) if text(sem) == "relaxed" => {
                        let strong = if text(op) == "load" { "acquire" } else { "acq_rel" };
                        Some((s, Expr::name(strong)))
                    }
                    _ => None,
                })
                .collect();
            for (s, strong) in &relaxed {
                out.extend(operand(
                    8,
                    s,
                    "sem",
                    Some(strong.clone()),
                    "make the atomic order memory",
                ));
            }
            if relaxed.len() > 1 {
                let mut all: Vec<Candidate> = relaxed
                    .iter()
                    .filter_map(|(s, strong)| {
                        operand(8, s, "sem", Some(strong.clone()), "make the atomic order memory")
                    })
                    .collect();
                if !all.is_empty() {
                    let mut first = all.remove(0);
                    first.tile = format!("{}, and the other relaxed atomics likewise", first.tile);
                    first.gluon = format!("{}, and the other relaxed atomics likewise", first.gluon);
                    first.also.extend(all.into_iter().map(|c| c.edit));
                    out.push(first);
                }
            }
            // A relaxed cluster barrier arrive orders nothing: make it a release.
            for s in cx.sites.iter().filter(|s| {
                matches!(
                    s.op.map(|o| &o.kind),
                    Some(OpKind::ClusterArrive { relaxed: Some(_) })
                )
            }) {
                out.extend(operand(6, s, "relaxed", None, "arrive with release semantics"));
            }
        }
        Code::Deadlock => {
            // Flip the parity of one of the blocked waits.
            let waits = second.into_iter().chain(labels.iter().copied());
            let mut seen: Vec<Pos> = Vec::new();
            for (i, w) in waits.enumerate() {
                if seen.contains(&w.pos) {
                    continue;
                }
                seen.push(w.pos.clone());
                if let Some(OpKind::MbarWait { phase, bar }) = w.op.map(|o| &o.kind) {
                    out.extend(operand(
                        10 + i as u32,
                        w,
                        "phase",
                        Some(flipped(phase)),
                        "wait on the other parity",
                    ));
                    // A barrier no statement arrives on: arrive on it from another blocked
                    // partition, after its wait (when the resource it waited for is used).
                    if !cx.arrived_on(&text(bar)) {
                        for other in labels
                            .iter()
                            .copied()
                            .chain(second)
                            .filter(|o| o.pos.block != w.pos.block)
                        {
                            for s in cx.rest_of_block(other).skip(1).take(MOVE_REACH) {
                                let op = OpKind::MbarArrive {
                                    bar: bar.clone(),
                                    count: None,
                                    pred: None,
                                    cta: None,
                                };
                                out.push(insert(30 + i as u32, s, true, vec![op]));
                            }
                        }
                    }
                    // A copy or a cancel that completes bytes on the barrier with no expect
                    // before it in its block: the phase's arrival never comes. Expect the
                    // bytes it delivers (a `clc.try_cancel` response is 16 bytes).
                    let b = text(bar);
                    for s in cx.sites.iter().filter(|s| {
                        matches!(s.op.map(|o| &o.kind),
                            Some(OpKind::TmaLoad { bar, .. } | OpKind::ClcTryCancel { bar, .. }) if text(bar) == b)
                    }) {
                        let expected = cx.sites.iter().any(|x| {
                            x.pos.block == s.pos.block
                                && x.pos.index < s.pos.index
                                && matches!(x.op.map(|o| &o.kind), Some(OpKind::MbarExpect { bar, .. }) if text(bar) == b)
                        });
                        let bytes = match s.name() {
                            "clc.try_cancel" => Some(Expr::int(16)),
                            _ => cx.delivered(s, &b),
                        };
                        if let (false, Some(bytes)) = (expected, bytes) {
                            let op = OpKind::MbarExpect {
                                bar: bar.clone(),
                                bytes,
                                pred: None,
                                cta: None,
                            };
                            out.push(insert(39, s, false, vec![op]));
                        }
                    }
                    // `cp.async` arrivals that first raise the pending count by as many
                    // (no `noinc`) make no net arrival: the phase waits for arrivals that
                    // never come. Count them towards the phase instead.
                    for c in cx.sites.iter().filter(|s| {
                        matches!(s.op.map(|o| &o.kind),
                            Some(OpKind::CpAsyncArrive { bar: c, noinc: None }) if root(c) == root(bar))
                    }) {
                        out.extend(operand(
                            41,
                            c,
                            "noinc",
                            Some(Expr::bool(true)),
                            "let the copies' arrivals count towards the phase",
                        ));
                    }
                    // An expect that does not match what its loads deliver.
                    for e in cx.sites.iter().filter(|s| {
                        matches!(s.op.map(|o| &o.kind), Some(OpKind::MbarExpect { bar, .. }) if text(bar) == b)
                    }) {
                        if let Some(n) = cx.delivered(e, &b) {
                            out.extend(operand(40, e, "bytes", Some(n), "expect the bytes the copies deliver"));
                        }
                    }
                }
            }
            // A commit of pair MMAs that arrives in one CTA only: commit for the pair.
            let pair = cx.sites.iter().find_map(|s| match s.op.map(|o| &o.kind) {
                Some(OpKind::Tcgen05Mma {
                    cta_group: Some(g), ..
                }) => Some(g.clone()),
                _ => None,
            });
            if let Some(g) = pair {
                for c in cx.sites.iter().filter(|s| {
                    matches!(
                        s.op.map(|o| &o.kind),
                        Some(OpKind::Tcgen05Commit { cta_group: None, .. })
                    )
                }) {
                    out.extend(operand(
                        45,
                        c,
                        "cta_group",
                        Some(g.clone()),
                        "commit the pair's MMAs",
                    ));
                }
            }
        }
        Code::TxMismatch => {
            let Some(load) = second.filter(|s| s.name() == "tma.load") else {
                return out;
            };
            let Some(bar) = load.op.and_then(|o| bar_of(&o.kind)) else {
                return out;
            };
            let b = text(bar);
            // The expect of this block on the barrier before the load, if any.
            let expect = cx.sites.iter().rev().find(|s| {
                s.pos.block == load.pos.block
                    && s.pos.index < load.pos.index
                    && matches!(s.op.map(|o| &o.kind), Some(OpKind::MbarExpect { bar, .. }) if text(bar) == b)
            });
            match expect {
                Some(e) => {
                    if let Some(n) = cx.delivered(e, &b) {
                        out.extend(operand(
                            41,
                            e,
                            "bytes",
                            Some(n),
                            "expect the bytes the copies deliver",
                        ));
                    }
                }
                None => {
                    // The first load of the run this one is in.
                    let start = cx
                        .sites
                        .iter()
                        .filter(|s| s.pos.block == load.pos.block && s.pos.index <= load.pos.index)
                        .rev()
                        .take_while(|s| {
                            matches!(s.op.map(|o| &o.kind), Some(OpKind::TmaLoad { bar, .. }) if text(bar) == b)
                        })
                        .last()
                        .unwrap_or(load);
                    if let Some(n) = cx.delivered(start, &b) {
                        let op = OpKind::MbarExpect {
                            bar: bar.clone(),
                            bytes: n,
                            pred: None,
                            cta: None,
                        };
                        out.push(insert(42, start, false, vec![op]));
                    }
                }
            }
        }
        Code::OverArrival => {
            if let Some(s) = second.filter(|s| s.name() == "mbar.arrive") {
                out.extend(operand(50, s, "count", None, "arrive once"));
            }
        }
        Code::BarrierReinit => {
            if let Some(init) = second.filter(|s| s.name() == "mbar.init") {
                if let Some(bar) = init.op.and_then(|o| bar_of(&o.kind)) {
                    let inv = || vec![OpKind::MbarInvalidate { bar: bar.clone() }];
                    // At the end of the block that initialises it (a loop's body), else right
                    // before the second initialisation.
                    if let Some(last) = cx.last_of_block(init) {
                        out.push(insert(60, last, true, inv()));
                    }
                    out.push(insert(60, init, false, inv()));
                }
            }
        }
        Code::BarrierMisuse => {
            // A barrier invalidated while an arrival is still on its way: wait for it first.
            for inv in labels.iter().filter(|s| s.name() == "mbar.invalidate") {
                if let Some(bar) = inv.op.and_then(|o| bar_of(&o.kind)) {
                    cx.waits_before(70, inv, bar, &mut out);
                }
            }
            // A barrier used before any `mbar.init`: initialise it after its allocation.
            if let Some(bar) = second.and_then(|s| s.op).and_then(|o| bar_of(&o.kind)) {
                let b = text(bar);
                let inited = cx.sites.iter().any(
                    |s| matches!(s.op.map(|o| &o.kind), Some(OpKind::MbarInit { bar, .. }) if text(bar) == b),
                );
                let root = match &bar.kind {
                    ExprKind::Index(base, _) => text(base),
                    _ => b.clone(),
                };
                let alloc = cx.sites.iter().find(|s| {
                    s.name() == "mbar.alloc"
                        && matches!(&s.stmt.kind, StmtKind::Let { names, .. } if names.first().is_some_and(|n| n.name == root))
                });
                if let (false, Some(alloc)) = (inited, alloc) {
                    let op = OpKind::MbarInit {
                        bar: bar.clone(),
                        count: Expr::int(1),
                    };
                    out.push(insert(71, alloc, true, vec![op]));
                }
            }
        }
        Code::TmemLeak => {
            if let Some(alloc) = second.filter(|s| s.name() == "tmem.alloc") {
                if let (StmtKind::Let { names, .. }, Some(last)) = (&alloc.stmt.kind, cx.last_of_block(alloc))
                {
                    if let Some(n) = names.first() {
                        let op = OpKind::TmemDealloc {
                            buf: Expr::name(&n.name),
                        };
                        out.push(insert(80, last, true, vec![op]));
                    }
                }
            }
        }
        Code::PhaseAliasing => {
            // A wait that means the phase after the one it should (the barrier moves past it
            // while it looks): the other parity.
            if let Some(w) = second {
                if let Some(OpKind::MbarWait { phase, .. }) = w.op.map(|o| &o.kind) {
                    out.extend(operand(
                        54,
                        w,
                        "phase",
                        Some(flipped(phase)),
                        "wait on the other parity",
                    ));
                }
            }
            // A release on the wrong barrier of an array (another stage's, so that one
            // barrier completes twice before its waiter looks): arrive on the element the
            // kernel indexes that array with elsewhere.
            for r in labels.iter().filter(|s| s.name() == "mbar.arrive") {
                let Some(ExprKind::Index(root, items)) = r.op.and_then(|o| bar_of(&o.kind)).map(|b| &b.kind)
                else {
                    continue;
                };
                let (root, now) = (
                    text(root),
                    text(&Expr::new(
                        ExprKind::Index(root.clone(), items.clone()),
                        Span::DUMMY,
                    )),
                );
                let mut seen = vec![now];
                for s in &cx.sites {
                    let Some(b) = s.op.and_then(|o| bar_of(&o.kind)) else {
                        continue;
                    };
                    if !matches!(&b.kind, ExprKind::Index(x, _) if text(x) == root) || seen.contains(&text(b))
                    {
                        continue;
                    }
                    seen.push(text(b));
                    let why = "arrive on the barrier of the stage this partition uses";
                    out.extend(operand(55, r, "bar", Some(b.clone()), why));
                }
            }
        }
        Code::DeviceAssert => {
            // An assertion over a masked load's padding: assert only where the mask holds
            // (`cond | !mask`), for the mask of each masked `global.load` before it.
            let Some(a) = second.filter(|s| s.name() == "device.assert") else {
                return out;
            };
            let Some(OpKind::DeviceAssert { cond, .. }) = a.op.map(|o| &o.kind) else {
                return out;
            };
            let mut seen: Vec<String> = Vec::new();
            for s in cx.sites[..cx.order(a)].iter().rev() {
                if let Some(OpKind::GlobalLoad { mask: Some(m), .. }) = s.op.map(|o| &o.kind) {
                    if seen.contains(&text(m)) {
                        continue;
                    }
                    seen.push(text(m));
                    let masked = Expr::binary(
                        BinOp::BitOr,
                        cond.clone(),
                        Expr::new(ExprKind::Unary(UnOp::Not, Box::new(m.clone())), Span::DUMMY),
                    );
                    let why = "assert only where the load's mask holds";
                    out.extend(operand(85, a, "cond", Some(masked), why));
                }
            }
        }
        Code::StaleTensormap => {
            // The acquire right after the `tma.make_desc` that wrote the map (its label).
            if let Some(make) = first.filter(|s| s.name() == "tma.make_desc") {
                if let StmtKind::Let { names, .. } = &make.stmt.kind {
                    if let [n] = names.as_slice() {
                        let desc = Expr::new(ExprKind::Name(n.name.clone()), Span::DUMMY);
                        out.push(insert(95, make, true, vec![OpKind::TmaDescAcquire { desc }]));
                    }
                }
            }
        }
        Code::ClusterExit => {
            if let Some(last) = cx.sites.iter().rev().find(|s| s.pos.block.is_empty()) {
                let ops = vec![OpKind::ClusterArrive { relaxed: None }, OpKind::ClusterWait {}];
                out.push(insert(90, last, true, ops));
            }
        }
        _ => {}
    }
    out
}

/// Move the statement at `from` to after `dest` (same block), with `before` ahead of it.
fn moved(group: u32, from: &Site, dest: &Site, before: Vec<OpKind>) -> Candidate {
    let stmt = from.op.map(|o| spell::tile(&o.kind)).unwrap_or_default();
    let gstmt = from.op.map(|o| spell::gluon(&o.kind)).unwrap_or_default();
    let pre = |g: bool| {
        before
            .iter()
            .map(|o| format!("`{}`, then ", if g { spell::gluon(o) } else { spell::tile(o) }))
            .collect::<String>()
    };
    Candidate {
        also: Vec::new(),
        group,
        tile: format!(
            "move `{stmt}` (this statement) to after the statement at {{target}}, as {}`{stmt}`",
            pre(false)
        ),
        gluon: format!(
            "move `{gstmt}` (this statement) to after the statement at {{target}}, as {}`{gstmt}`",
            pre(true)
        ),
        edit: Edit::Move {
            from: from.pos.clone(),
            after: dest.pos.index,
            before,
        },
        anchor: from.span(),
        target: Some(dest.span()),
        replacement: None,
    }
}
