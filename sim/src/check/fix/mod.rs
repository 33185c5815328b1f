//! Verified fix suggestions (`bwsim check --fix`): for one finding, the small edits of the
//! kernel that remove it, each applied to a copy of the kernel and checked again.
//!
//! The edits ([`candidates`]) are chosen by the finding's code and the operations at its
//! labels:
//! - `missing-fence`: `fence.async_shared` right after the generic access, or right before the
//!   asynchronous one;
//! - an access that overlaps asynchronous work still in flight (`write-while-in-flight`,
//!   `read-before-complete`, `race`, `global-race`): after a TMA store (or scatter), a
//!   `tma.store_wait N` before the second access (`full=true` for a conflict in global
//!   memory); after a `cp.async`, a `cp.async.wait N` (with a `cp.async.commit` first when the
//!   copies' group is still open); after a TMA load or a tensor-core operation, an `mbar.wait`
//!   on the barrier that signals its completion (the load's own, or that of the next
//!   `tcgen05.commit`) before the second access, or the second access moved past the kernel's
//!   own wait on it; between partitions with no handshake, an arrive after the first access
//!   and a wait before the second on a barrier the kernel initialises and never uses; an `mbar.wait` on a barrier the first
//!   access's block arrives on (the barrier that hands its buffer back); an `mbar.arrive`
//!   that hands the buffer back before the first access, moved after it (and up to a few
//!   statements further, with a `fence.async_shared` ahead of it when the next write is
//!   asynchronous); a relaxed `cluster.arrive` made a release;
//! - `deadlock`: the parity of one of the blocked waits flipped (`p` to `p ^ 1`); an
//!   `mbar.expect` inserted before a load or cancel on a waited barrier that has none; an
//!   `mbar.expect` on a waited barrier set to the bytes its loads deliver;
//! - `tx-mismatch`: the `mbar.expect` before the load set to the bytes the loads of its run
//!   deliver (`d.nbytes` per load of descriptor `d`), or such an expect inserted;
//! - `over-arrival`: the arrive's count dropped (one arrival);
//! - `phase-aliasing`: the wait's parity flipped; an `mbar.arrive` that completed a phase the
//!   waiter missed made on another element of its barrier array (one the kernel indexes that
//!   array with elsewhere: a release of the wrong stage);
//! - `device-assert`: the assertion restricted to the mask of a masked `global.load` before
//!   it (`cond | !mask`, Gluon's `mask=`);
//! - `barrier-reinit`: an `mbar.invalidate` at the end of the block that initialises the
//!   barrier again, or before the second initialisation;
//! - `barrier-misuse`: an `mbar.wait` before an `mbar.invalidate` that an arrival still in
//!   flight lands after; an `mbar.init` after the allocation of a barrier never initialised;
//! - `tmem-leak`: `tmem.dealloc` at the end of the block that allocates;
//! - `cluster-exit`: `cluster.arrive` and `cluster.wait` at the end of the kernel.
//!
//! Waits are tried with every parity the kernel waits on the same barrier with (by its text),
//! then 0 and 1; wait depths deepest first (N = 2, 1, 0): the deepest that verifies leaves the
//! most copies or stores in flight.
//!
//! A candidate survives when, over the schedule that showed the finding and a batch of fresh
//! ones, the finding (its code at its place) is gone and no error of a code the original
//! exploration did not report appears. Alternatives of one edit (a group) are tried in order
//! until one leaves none of the exploration's other error findings; the group keeps the one
//! that leaves the fewest. The verified fixes are ranked by how many of those findings remain
//! (fewest first), then in the order above. What survives is described in the source's terms:
//! the statement to edit, and the edit in `.tile` and in Gluon.

mod candidates;
mod diff;
pub mod edit;
mod spell;

pub use edit::Edit;

use crate::check::Prepared;
use crate::explore::{ExploreOptions, Finding};
use bwsim_isa::ir::Kernel;
use bwsim_isa::{Code, Diagnostic, Span};

/// One verified edit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub edit: Edit,
    /// The same edit at the other copies of the statement (a Gluon statement the compiler
    /// copied: a pipelined loop's prologue and body).
    pub also: Vec<Edit>,
    /// The statement the fix is shown at (the statement edited, or the one an insertion goes
    /// next to).
    pub anchor: Span,
    /// For a move: the statement the moved one goes after.
    pub target: Option<Span>,
    /// The edit in words, in `.tile` terms and in Gluon's; `{target}` stands for the place of
    /// [`Fix::target`].
    pub tile: String,
    pub gluon: String,
    /// For an operand edit: the operation as it reads after it, in `.tile`.
    pub replacement: Option<String>,
    /// How many schedules the edited kernel was checked over.
    pub schedules: u64,
    /// How many of the exploration's other error findings the edited kernel still showed.
    pub remaining: usize,
}

impl Fix {
    /// The fix in words: `insert `fence.async_shared` after this statement (verified: ...)`;
    /// `place` names a span (`file:line`) for a move's destination.
    pub fn describe(&self, gluon: bool, place: &dyn Fn(Span) -> String) -> String {
        let what = if gluon { &self.gluon } else { &self.tile };
        let what = match self.target {
            Some(t) => what.replace("{target}", &place(t)),
            None => what.clone(),
        };
        format!(
            "{what} (verified: over {} schedules the finding is gone and nothing new is reported)",
            self.schedules
        )
    }

    /// The statements an insertion adds, in `.tile` and in Gluon (empty for other edits).
    pub fn inserted(&self) -> (Vec<String>, Vec<String>) {
        match &self.edit {
            Edit::Insert { ops, .. } => (
                ops.iter().map(spell::tile).collect(),
                ops.iter().map(spell::gluon).collect(),
            ),
            _ => (Vec::new(), Vec::new()),
        }
    }

    /// Whether an insertion goes after its anchor (else before; other edits: false).
    pub fn after(&self) -> bool {
        matches!(self.edit, Edit::Insert { after: true, .. })
    }

    /// The kind of edit: `insert`, `change` (an operand) or `move`.
    pub fn kind(&self) -> &'static str {
        match self.edit {
            Edit::Insert { .. } => "insert",
            Edit::Operand { .. } | Edit::Replace { .. } => "change",
            Edit::Move { .. } => "move",
        }
    }

    /// The fix as a unified diff of the `.tile` source `file` it was found in, or `None`
    /// where it does not map onto whole lines.
    pub fn diff(&self, file: &bwsim_isa::SourceFile) -> Option<String> {
        diff::unified(self, file)
    }

    /// `kernel` with this fix applied (`kernel` must be the one the fix was found for).
    pub fn apply(&self, kernel: &Kernel) -> Option<Kernel> {
        edit::apply_all(&self.edits(), kernel)
    }

    fn edits(&self) -> Vec<Edit> {
        std::iter::once(self.edit.clone())
            .chain(self.also.iter().cloned())
            .collect()
    }
}

/// Span equality by position.
fn at(a: Span, b: Span) -> bool {
    edit::at(a, b)
}

/// Whether `x` is the finding `y`: the same code at the same place; a deadlock is one
/// whichever wait it is reported at (a fix that moves it to another wait fixes nothing).
pub fn same_finding(x: &Diagnostic, y: &Diagnostic) -> bool {
    x.code == y.code && (x.code == Code::Deadlock || at(x.primary.span, y.primary.span))
}

/// The verified fixes of `finding`, best first. `prepare` prepares an edited kernel as the
/// original was (constants, target, inputs, limits); `known` are the findings the original
/// exploration reported; the edited kernel is checked over the finding's seed and
/// `schedules` fresh ones on `jobs` threads.
pub fn suggest(
    kernel: &Kernel,
    finding: &Finding,
    known: &[Finding],
    schedules: u64,
    jobs: usize,
    prepare: &dyn Fn(&Kernel) -> Option<Prepared>,
) -> Vec<Fix> {
    let d = &finding.diagnostic;
    let codes: Vec<Code> = known.iter().map(|f| f.diagnostic.code).collect();
    let same = |x: &Diagnostic, y: &Diagnostic| same_finding(x, y);
    let others: Vec<&Diagnostic> = known
        .iter()
        .map(|f| &f.diagnostic)
        .filter(|x| x.is_error() && !same(x, d))
        .collect();
    // The best fix of each group so far, in the order the groups first appear.
    let mut best: Vec<(u32, Fix)> = Vec::new();
    for c in candidates::candidates(kernel, d) {
        let slot = best.iter().position(|(g, _)| *g == c.group);
        if slot.is_some_and(|i| best[i].1.remaining == 0) {
            continue;
        }
        let edits: Vec<Edit> = std::iter::once(c.edit.clone())
            .chain(c.also.iter().cloned())
            .collect();
        let Some(k) = edit::apply_all(&edits, kernel) else {
            continue;
        };
        let Some(p) = prepare(&k) else { continue };
        let news = |x: &Diagnostic| x.is_error() && !codes.contains(&x.code);
        let replay = p.run(finding.seed, false);
        if replay.diagnostics.iter().any(|x| same(x, d) || news(x)) {
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
            .any(|f| same(&f.diagnostic, d) || news(&f.diagnostic))
        {
            continue;
        }
        let seen = |o: &Diagnostic| {
            replay.diagnostics.iter().any(|x| same(x, o)) || e.findings.iter().any(|f| same(&f.diagnostic, o))
        };
        let fix = Fix {
            edit: c.edit,
            also: c.also,
            anchor: c.anchor,
            target: c.target,
            tile: c.tile,
            gluon: c.gluon,
            replacement: c.replacement,
            schedules: e.schedules + 1,
            remaining: others.iter().filter(|o| seen(o)).count(),
        };
        match slot {
            None => best.push((c.group, fix)),
            Some(i) if fix.remaining < best[i].1.remaining => best[i].1 = fix,
            Some(_) => {}
        }
    }
    let mut fixes: Vec<Fix> = best.into_iter().map(|(_, f)| f).collect();
    fixes.sort_by_key(|f| f.remaining);
    fixes
}
