//! Bounded exhaustive checking: every schedule of each cluster within a delay bound.
//!
//! The schedules are those of delay-bounded scheduling (Emmi, Qadeer and Rakamarić,
//! "Delay-bounded scheduling", POPL 2011): a deterministic scheduler, and a budget of *delays*
//! that each skip its choice at one decision point. The deterministic scheduler
//! (`delayed`) runs one cluster at a time (below); within it, the agent that ran last goes on
//! while it can; when it cannot (it blocked or ended) the next runnable agent in (CTA, agent)
//! order after it runs; an agent that has run as many steps in a row as the kernel's whole
//! reference run while others could run hands over to the next (an agent polling a flag in
//! global memory never blocks). Every asynchronous operation takes its kind's shortest
//! latency, lands in one piece, and simultaneous completions fire in issue order. The decision
//! points of a run are:
//! - a pick where two or more agents of the cluster can run and either the last agent cannot
//!   go on, or its next step is visible to other agents (an operation or a completing wait: a
//!   step that only evaluates into its own registers commutes with every other agent's step,
//!   so switching before it gives no new behaviour); a delay there runs the next agent in order
//!   instead of the default one (two delays, the one after, ...);
//! - a pick where one agent of the cluster can run, its next step is visible, something is in
//!   flight and the cluster has other agents: a delay there *holds* the agent back until no
//!   other agent of its cluster can run and nothing is in flight (a slow warp: the
//!   completions land and the others run to their next block before it takes its step);
//! - every asynchronous latency; a delay there takes the kind's longest latency instead.
//!
//! **Clusters one at a time.** Without global atomics, the CTAs of different clusters cannot
//! hand each other values (their plain global accesses are ordered by happens-before or
//! reported as races on any schedule that runs both), so how the clusters interleave changes
//! nothing any cluster can observe. The scheduler runs the cluster with the lowest id while
//! it can, lets time pass while it waits for its own work in flight, and moves on only once it
//! has finished or is stuck with nothing in flight. Everything in flight is then the running
//! cluster's, every decision is that cluster's, and a cluster's run depends on its own
//! delays only: each cluster numbers its decision points on its own and has its own plans.
//! A run carries one plan per cluster, so the `k`-th run of a level runs the `k`-th plan of
//! every cluster at once: a grid of 32 independent CTAs that each have 128 decision points
//! needs 1 + 128 runs for one delay instead of 1 + 4,096, and covers the same cluster
//! schedules (the bound is per cluster: at most `d` delays in each). With global atomics or
//! `clc.try_cancel` (a CTA cancelling one that has not started) the grid is one cluster and
//! the search is the plain delay-bounded one.
//!
//! With a bound of `d` delays, every schedule of each cluster that differs from its
//! deterministic one in at most `d` decisions is run exactly once: a plan's delays are kept in
//! decision order and its children add one at or after its last, on the decision points of its
//! own run (stateless search: each run is a fresh run replaying its decisions). A clean result
//! is a proof within that bound; a search that reaches its run limit, or a run that stops (a
//! trap, a limit) before a cluster whose plan it carried ran, says so and proves nothing.
//!
//! The hazard checker runs on every schedule, so races and missing fences, which come from
//! happens-before rather than from an unlucky order, are found on whichever schedule first
//! executes both accesses; the delays are for deadlocks, phase aliasing and value-dependent
//! findings.

mod delayed;

use super::Prepared;
use crate::explore::key;
use crate::lower::IKind;
use bwsim_isa::Diagnostic;
use delayed::Delayed;
pub use delayed::Local;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// A schedule: the delays of each cluster at its own decision points, as (cluster, decision
/// index, delays there), by cluster then index.
pub type Plan = Vec<(u32, usize, u32)>;

/// Options of [`search`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Delays each cluster's schedule may make.
    pub delays: u32,
    /// Runs at the most; past it the search is incomplete.
    pub max_schedules: u64,
    pub jobs: usize,
    /// The default bound: a level past the first (one delay) runs only while its runs times
    /// the reference run's agent steps ([`Prepared::expected_steps`]) are at most this many;
    /// the search then stops, complete, at the level below. `None`: every level up to
    /// `delays` runs.
    pub step_budget: Option<u64>,
}

/// A level the step budget left out: its delays, its runs and their estimated agent steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeftOut {
    pub delays: u32,
    pub runs: u64,
    pub steps: u64,
}

/// One distinct finding of the search.
#[derive(Clone, Debug)]
pub struct Found {
    pub diagnostic: Diagnostic,
    /// The first run (fewest delays in one cluster, then fewest delays, then earliest) that
    /// shows it.
    pub plan: Plan,
    /// How many of the runs showed it.
    pub count: u64,
}

/// The result of [`search`].
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// Runs.
    pub schedules: u64,
    /// Runs at each level (index = the delays of each cluster's schedule).
    pub by_delays: Vec<u64>,
    /// Cluster schedules covered at each level: the schedules of one cluster, each a class of
    /// the kernel's schedules that the bound tells apart (a run covers one per cluster).
    pub cluster_schedules: Vec<u64>,
    /// Findings ordered by (severity, delays, plan).
    pub findings: Vec<Found>,
    /// Whether every schedule within the bound ran (no run limit, no cancellation, no run
    /// that stopped before every cluster whose schedule it carried had run).
    pub complete: bool,
    /// The bound the search covered: `Options::delays`, or less where the step budget left
    /// the next level out.
    pub bound: u32,
    /// The level the step budget left out, if any.
    pub left_out: Option<LeftOut>,
}

/// What one run shows: its diagnostics, each cluster's decision points, the clusters that ran.
struct Ran {
    diagnostics: Vec<Diagnostic>,
    points: BTreeMap<u32, Vec<(usize, u32)>>,
    ran: BTreeSet<u32>,
}

/// Runs the composite schedule `plans`.
fn run_plan(p: &Prepared, plans: &BTreeMap<u32, Local>, group: Option<u32>) -> Ran {
    let mut s = Delayed::new(plans, p.expected_steps, group);
    let diagnostics = p.diagnostics_with(&mut s);
    Ran {
        diagnostics,
        points: s.points,
        ran: s.ran,
    }
}

/// The schedules one delay beyond `plan` on the decision points of its run: one more delay at
/// its last delayed point (while that point has alternatives left) or at any later point.
fn children(plan: &[(usize, u32)], points: &[(usize, u32)]) -> Vec<Local> {
    let last = plan.last().copied();
    let mut out = Vec::new();
    for &(i, alts) in points {
        match last {
            Some((j, k)) if i == j => {
                if k < alts {
                    let mut c = plan.to_vec();
                    if let Some(x) = c.last_mut() {
                        x.1 += 1;
                    }
                    out.push(c);
                }
            }
            Some((j, _)) if i < j => {}
            _ => {
                let mut c = plan.to_vec();
                c.push((i, 1));
                out.push(c);
            }
        }
    }
    out
}

/// How many schedules [`children`] makes, without making them.
fn children_count(plan: &[(usize, u32)], points: &[(usize, u32)]) -> u64 {
    match plan.last() {
        None => points.len() as u64,
        Some(&(j, k)) => points
            .iter()
            .map(|&(i, alts)| u64::from(if i == j { k < alts } else { i > j }))
            .sum(),
    }
}

/// The next level as a level's runs make it: each cluster's schedules, and how many there
/// are. Once one cluster has more than the step budget allows, the schedules are dropped
/// (`over`) and only counted: the level is left out, and the count says how big it was.
#[derive(Default)]
struct Next {
    plans: BTreeMap<u32, Vec<Local>>,
    counts: BTreeMap<u32, u64>,
    over: bool,
}

impl Next {
    /// The children of cluster `c`'s schedule `plan` on the decision points of its run;
    /// `cap`: the most schedules a cluster may have.
    fn add(&mut self, c: u32, plan: &[(usize, u32)], points: &[(usize, u32)], cap: Option<u64>) {
        let count = self.counts.entry(c).or_default();
        *count += children_count(plan, points);
        if cap.is_some_and(|cap| *count > cap) {
            self.over = true;
            self.plans.clear();
        }
        if !self.over {
            self.plans.entry(c).or_default().extend(children(plan, points));
        }
    }
}

/// Delays of a plan: (the most in one cluster, in all).
fn delays_of(plan: &[(u32, usize, u32)]) -> (u32, u32) {
    let mut per: BTreeMap<u32, u32> = BTreeMap::new();
    for &(c, _, k) in plan {
        *per.entry(c).or_default() += k;
    }
    (per.values().copied().max().unwrap_or(0), per.values().sum())
}

fn flatten(plans: &BTreeMap<u32, Local>) -> Plan {
    plans
        .iter()
        .flat_map(|(&c, l)| l.iter().map(move |&(i, k)| (c, i, k)))
        .collect()
}

/// The runs of one level: run `k` gives each cluster its `k`-th schedule of the level (a
/// cluster with fewer makes no delay).
fn pack(level: &BTreeMap<u32, Vec<Local>>) -> Vec<BTreeMap<u32, Local>> {
    let n = level.values().map(Vec::len).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            level
                .iter()
                .filter_map(|(&c, v)| v.get(k).map(|l| (c, l.clone())))
                .collect()
        })
        .collect()
}

/// Runs every schedule of each cluster within `opts.delays` delays (level by level: 0
/// delays, then 1, ...), on `opts.jobs` threads; `progress(done)` after each run. Stops at
/// `opts.max_schedules` runs or when `cancel` is set (the result is then incomplete). The
/// result does not depend on the number of threads.
pub fn search<P: Fn(u64) + Sync>(p: &Prepared, opts: &Options, cancel: &AtomicBool, progress: P) -> Search {
    type Key = (&'static str, Vec<(u32, u32)>, String);
    let found: Mutex<BTreeMap<Key, Found>> = Mutex::new(BTreeMap::new());
    let done = AtomicU64::new(0);
    let group = independent_clusters(p);
    // Level 0: one run without delays, whose decision points seed every cluster's children.
    let mut runs: Vec<BTreeMap<u32, Local>> = vec![BTreeMap::new()];
    let mut by_delays = Vec::new();
    let mut cluster_schedules = Vec::new();
    let mut complete = true;
    let mut left_out = None;
    for d in 0..=opts.delays {
        if runs.is_empty() {
            break;
        }
        // Runs are numbered across levels; the run limit cuts at a number, so which runs
        // ran does not depend on the threads' timing.
        let base = done.load(Ordering::Relaxed);
        let next: Mutex<Next> = Mutex::new(Next::default());
        // The most runs the next level may have under the step budget (level 1 always runs).
        let cap = opts
            .step_budget
            .filter(|_| d >= 1)
            .map(|b| b / p.expected_steps.max(1));
        let taken = AtomicU64::new(0);
        let ran = AtomicU64::new(0);
        let covered = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let short = AtomicBool::new(false);
        crossbeam::scope(|s| {
            for _ in 0..opts.jobs.max(1) {
                s.spawn(|_| loop {
                    if cancel.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = taken.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(plans) = runs.get(i) else { break };
                    if base + i as u64 >= opts.max_schedules {
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                    let r = run_plan(p, plans, group);
                    ran.fetch_add(1, Ordering::Relaxed);
                    // The clusters whose schedules this run covers: at level 0 every one
                    // that ran, later those it carried.
                    let owners: Vec<u32> = if d == 0 {
                        r.ran.iter().copied().collect()
                    } else {
                        plans.keys().copied().collect()
                    };
                    if owners.iter().any(|c| !r.ran.contains(c)) {
                        // The run stopped (a trap, a limit) before a cluster it carried ran.
                        short.store(true, Ordering::Relaxed);
                    }
                    covered.fetch_add(
                        owners.iter().filter(|c| r.ran.contains(c)).count() as u64,
                        Ordering::Relaxed,
                    );
                    if d < opts.delays {
                        let empty = Vec::new();
                        if let Ok(mut n) = next.lock() {
                            for c in owners {
                                let plan = plans.get(&c).unwrap_or(&empty);
                                let pts = r.points.get(&c).unwrap_or(&empty);
                                n.add(c, plan, pts, cap);
                            }
                        }
                    }
                    if !r.diagnostics.is_empty() {
                        let plan = flatten(plans);
                        if let Ok(mut f) = found.lock() {
                            let mut seen = std::collections::HashSet::new();
                            for dg in r.diagnostics {
                                let k = key(&dg);
                                if !seen.insert(k.clone()) {
                                    continue;
                                }
                                let e = f.entry(k).or_insert_with(|| Found {
                                    diagnostic: dg.clone(),
                                    plan: plan.clone(),
                                    count: 0,
                                });
                                e.count += 1;
                                if (delays_of(&plan), &plan) < (delays_of(&e.plan), &e.plan) {
                                    e.plan = plan.clone();
                                    e.diagnostic = dg;
                                }
                            }
                        }
                    }
                    progress(done.load(Ordering::Relaxed));
                });
            }
        })
        .unwrap_or_else(|e| std::panic::resume_unwind(e));
        by_delays.push(ran.load(Ordering::Relaxed));
        cluster_schedules.push(covered.load(Ordering::Relaxed));
        if short.load(Ordering::Relaxed) {
            complete = false;
        }
        if stop.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
            complete = false;
            break;
        }
        let mut n = next.into_inner().unwrap_or_default();
        let width = n.counts.values().copied().max().unwrap_or(0);
        if n.over {
            left_out = Some(LeftOut {
                delays: d + 1,
                runs: width,
                steps: width.saturating_mul(p.expected_steps),
            });
            break;
        }
        // Children of different parents are different schedules; the order makes the run
        // deterministic.
        for v in n.plans.values_mut() {
            v.sort();
            v.dedup();
        }
        runs = pack(&n.plans);
    }
    let mut findings: Vec<Found> = found.into_inner().unwrap_or_default().into_values().collect();
    findings.sort_by(|a, b| {
        (a.diagnostic.severity, delays_of(&a.plan), &a.plan).cmp(&(
            b.diagnostic.severity,
            delays_of(&b.plan),
            &b.plan,
        ))
    });
    Search {
        schedules: done.load(Ordering::Relaxed),
        by_delays,
        cluster_schedules,
        findings,
        complete,
        bound: match left_out {
            Some(l) => l.delays - 1,
            None => opts.delays,
        },
        left_out,
    }
}

/// The cluster size, when the CTAs of different clusters cannot hand each other values or
/// change each other's work: the kernel has no global atomic (plain global accesses of two
/// CTAs are ordered by happens-before or reported as a race on any schedule that runs both)
/// and no `clc.try_cancel` (which takes a CTA that has not started away from the launch, so
/// what one cluster does decides whether another runs). `None` otherwise.
fn independent_clusters(p: &Prepared) -> Option<u32> {
    let shared = p.prog.code.iter().any(|i| match &i.kind {
        IKind::Op { name, op, .. } => {
            name.starts_with("global.atomic") || matches!(op, crate::lower::LOp::ClcTryCancel { .. })
        }
        _ => false,
    });
    (!shared).then(|| p.prog.cluster.iter().product::<u32>().max(1))
}

/// `delays at decision points 12, 40 (x2) of cluster 0`, or `no delays`.
pub fn describe(plan: &[(u32, usize, u32)]) -> String {
    if plan.is_empty() {
        return "no delays".into();
    }
    let mut per: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for &(c, i, k) in plan {
        per.entry(c).or_default().push(if k == 1 {
            i.to_string()
        } else {
            format!("{i} (x{k})")
        });
    }
    let parts: Vec<String> = per
        .iter()
        .map(|(c, at)| format!("{} of cluster {c}", at.join(", ")))
        .collect();
    format!("delays at decision points {}", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::{AgentRef, Scheduler};

    fn a(agent: u32) -> AgentRef {
        AgentRef { cta: 0, agent }
    }

    fn one(plan: Local) -> BTreeMap<u32, Local> {
        BTreeMap::from([(0, plan)])
    }

    #[test]
    fn the_default_goes_on_with_the_last_agent_and_a_delay_takes_the_next() {
        let all = [a(0), a(1), a(2)];
        let vis = [true, true, true];
        let none = BTreeMap::new();
        let mut s = Delayed::new(&none, 1000, None);
        assert_eq!(s.pick_among(&all, &vis), 0);
        assert_eq!(s.pick_among(&all, &vis), 0);
        // Agent 0 blocked: the next after it.
        assert_eq!(s.pick_among(&[a(1), a(2)], &[true, true]), 0);
        let plan = one(vec![(1, 2)]);
        let mut s = Delayed::new(&plan, 1000, None);
        assert_eq!(s.pick_among(&all, &vis), 0);
        // Two delays at decision 1: two past the default.
        assert_eq!(s.pick_among(&all, &vis), 2);
        assert_eq!(s.points[&0], vec![(0, 2), (1, 2)]);
    }

    #[test]
    fn with_independent_clusters_a_delay_chooses_within_the_default_cluster() {
        let b = |cta, agent| AgentRef { cta, agent };
        // Clusters of one CTA: agents of CTA 0 and CTA 1; the default is CTA 0's agent 0.
        let run = [b(0, 0), b(0, 1), b(1, 0)];
        let plan = one(vec![(0, 1)]);
        let mut s = Delayed::new(&plan, 1000, Some(1));
        assert_eq!(s.pick_among(&run, &[true, true, true]), 1);
        assert_eq!(s.points[&0], vec![(0, 1)], "one alternative: CTA 0's other agent");
        let mut s = Delayed::new(&plan, 1000, None);
        assert_eq!(s.pick_among(&run, &[true, true, true]), 1);
        assert_eq!(s.points[&0], vec![(0, 2)]);
    }

    #[test]
    fn clusters_run_one_after_the_other_and_number_their_decisions_apart() {
        let b = |cta, agent| AgentRef { cta, agent };
        let none = BTreeMap::new();
        let mut s = Delayed::new(&none, 1000, Some(1));
        s.admitted(0, 4);
        s.admitted(1, 3);
        // CTA 3 (slot 1) has the lower id: its cluster runs first.
        let run = [b(0, 0), b(1, 0), b(1, 1)];
        assert_eq!(s.pick_among(&run, &[true, true, true]), 1);
        // While it has nothing to run but work in flight, time passes.
        assert!(s.stall_among(&[b(0, 0)], &[true]));
        // Its two agents: a decision of cluster 3 only.
        assert_eq!(s.pick_among(&run, &[true, true, true]), 1);
        assert_eq!(s.points.keys().copied().collect::<Vec<_>>(), vec![3]);
        // Finished (nothing runnable, nothing in flight): cluster 4 takes over.
        assert_eq!(s.pick_among(&[b(0, 0)], &[true]), 0);
        assert_eq!(s.ran, BTreeSet::from([3, 4]));
    }

    #[test]
    fn a_held_agent_waits_until_the_rest_of_its_cluster_is_quiescent() {
        let plan = one(vec![(1, 1)]);
        let mut s = Delayed::new(&plan, 1000, None);
        assert_eq!(s.pick_among(&[a(0), a(1), a(2)], &[true, true, true]), 0);
        // Agent 0 alone, something in flight: decision 1, delayed: it is held.
        assert!(s.stall_among(&[a(0)], &[true]));
        assert!(s.stall_among(&[a(0)], &[true]), "still alone");
        // Others can run: they run, agent 0 is not chosen even by a delay.
        assert!(!s.stall_among(&[a(0), a(1)], &[true, true]));
        assert_eq!(s.pick_among(&[a(0), a(1)], &[true, true]), 1);
        assert_eq!(s.pick_among(&[a(0), a(2)], &[true, true]), 1);
        assert!(s.stall_among(&[a(0)], &[true]), "held while work is in flight");
        // Nothing in flight (no stall asked) and it alone can run: it runs.
        assert_eq!(s.pick_among(&[a(0)], &[true]), 0);
        assert_eq!(s.points[&0], vec![(0, 2), (1, 1)]);
        // Without the delay the lone agent is not held back.
        let none = BTreeMap::new();
        let mut s = Delayed::new(&none, 1000, None);
        assert_eq!(s.pick_among(&[a(0), a(1)], &[true, true]), 0);
        assert!(!s.stall_among(&[a(0)], &[true]));
    }

    #[test]
    fn an_invisible_step_is_no_decision_point() {
        let none = BTreeMap::new();
        let mut s = Delayed::new(&none, 1000, None);
        assert_eq!(s.pick_among(&[a(0), a(1)], &[true, true]), 0);
        assert_eq!(s.pick_among(&[a(0), a(1)], &[false, true]), 0);
        assert!(
            !s.stall_among(&[a(0)], &[false]),
            "a lone register-only step is not held"
        );
        assert_eq!(s.points[&0].len(), 1);
    }

    #[test]
    fn a_level_packs_one_plan_of_every_cluster_into_each_run() {
        let level = BTreeMap::from([
            (0, vec![vec![(0, 1)], vec![(1, 1)], vec![(2, 1)]]),
            (3, vec![vec![(5, 1)]]),
        ]);
        let runs = pack(&level);
        assert_eq!(runs.len(), 3, "as many runs as the cluster with the most plans");
        assert_eq!(runs[0], BTreeMap::from([(0, vec![(0, 1)]), (3, vec![(5, 1)])]));
        assert_eq!(runs[2], BTreeMap::from([(0, vec![(2, 1)])]));
        assert_eq!(flatten(&runs[0]), vec![(0, 0, 1), (3, 5, 1)]);
        assert_eq!(delays_of(&[(0, 0, 1), (0, 4, 2), (3, 5, 1)]), (3, 4));
        assert_eq!(
            describe(&flatten(&runs[0])),
            "delays at decision points 0 of cluster 0; 5 of cluster 3"
        );
    }

    /// The search's outcome in comparable form: runs per level, classes per level,
    /// completeness, bound, and each finding's code, plan and count in report order.
    type Outcome = (Vec<u64>, Vec<u64>, bool, u32, Vec<(&'static str, Plan, u64)>);

    fn outcome(s: &Search) -> Outcome {
        let f = s
            .findings
            .iter()
            .map(|f| (f.diagnostic.code.name(), f.plan.clone(), f.count))
            .collect();
        (
            s.by_delays.clone(),
            s.cluster_schedules.clone(),
            s.complete,
            s.bound,
            f,
        )
    }

    /// The search of `p` with these options.
    fn searched(
        p: &Prepared,
        delays: u32,
        max_schedules: u64,
        jobs: usize,
        step_budget: Option<u64>,
    ) -> Search {
        let o = Options {
            delays,
            max_schedules,
            jobs,
            step_budget,
        };
        search(p, &o, &AtomicBool::new(false), |_| {})
    }

    #[test]
    fn a_step_budget_stops_the_default_bound_one_level_lower_and_says_so() {
        let p = crate::check::prepare(
            include_str!("../../../kernels/tiles/async_scatter.tile"),
            &[],
            None,
        )
        .expect("async_scatter prepares");
        let full = searched(&p, 2, 1000, 1, None);
        assert_eq!((full.complete, full.bound, full.left_out), (true, 2, None));
        assert_eq!(full.by_delays.len(), 3, "{:?}", full.by_delays);
        // Level 2's estimate: its runs times the reference run's steps.
        let runs = full.by_delays[2];
        let steps = runs * p.expected_steps;
        assert!(runs > 0);
        let cut = searched(&p, 2, 1000, 1, Some(steps - 1));
        assert_eq!((cut.complete, cut.bound), (true, 1));
        assert_eq!(
            cut.left_out,
            Some(LeftOut {
                delays: 2,
                runs,
                steps
            })
        );
        assert_eq!(cut.by_delays, full.by_delays[..2]);
        assert_eq!(cut.schedules, full.by_delays[0] + full.by_delays[1]);
        // A budget the level fits in runs it; level 1 runs whatever the budget.
        let fits = searched(&p, 2, 1000, 1, Some(steps));
        assert_eq!((fits.bound, fits.left_out), (2, None));
        let tiny = searched(&p, 2, 1000, 1, Some(0));
        assert_eq!((tiny.bound, tiny.by_delays.len()), (1, 2));
    }

    #[test]
    fn the_result_does_not_depend_on_the_threads_nor_on_where_the_run_limit_cuts() {
        // Ten runs within one delay: a race on every one, two more on one delayed run each.
        let p = crate::check::prepare(include_str!("../../../tests/fail/ws_store_race.tile"), &[], None)
            .expect("ws_store_race prepares");
        let one = searched(&p, 1, 1000, 1, None);
        assert!(one.complete);
        assert!(one.findings.len() >= 2, "{:?}", outcome(&one));
        for jobs in [2, 3] {
            let s = searched(&p, 1, 1000, jobs, None);
            assert_eq!(outcome(&s), outcome(&one), "{jobs} threads");
        }
        // A run limit cuts at a run number: the same runs ran, whatever the threads.
        for limit in 1..one.schedules {
            let a = searched(&p, 1, limit, 1, None);
            let b = searched(&p, 1, limit, 2, None);
            assert_eq!((a.schedules, a.complete), (limit, false));
            assert_eq!(outcome(&a), outcome(&b), "limit {limit}");
        }
    }

    #[test]
    fn children_add_one_delay_at_or_after_the_last() {
        let points = [(0, 1), (1, 2), (2, 1)];
        assert_eq!(
            children(&[], &points),
            vec![vec![(0, 1)], vec![(1, 1)], vec![(2, 1)]]
        );
        assert_eq!(
            children(&[(1, 1)], &points),
            vec![vec![(1, 2)], vec![(1, 1), (2, 1)]]
        );
        assert!(children(&[(1, 2), (2, 1)], &points).is_empty());
        for plan in [&[][..], &[(1, 1)], &[(1, 2), (2, 1)], &[(0, 1)], &[(3, 1)]] {
            assert_eq!(
                children_count(plan, &points),
                children(plan, &points).len() as u64
            );
        }
    }

    #[test]
    fn every_plan_within_the_bound_is_generated_once() {
        // A fixed run shape: 4 decision points with 1, 2, 1, 1 alternatives; the plans with
        // at most 2 delays, counted by brute force below.
        let points = [(0, 1), (1, 2), (2, 1), (3, 1)];
        let mut all = vec![Vec::new()];
        let mut level: Vec<Local> = vec![Vec::new()];
        for _ in 0..2 {
            let mut next = Vec::new();
            for p in &level {
                next.extend(children(p, &points));
            }
            all.extend(next.iter().cloned());
            level = next;
        }
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len(), "no plan twice");
        // Brute force: choices per point 0..=alts, total delays <= 2.
        let mut count = 0;
        for c0 in 0..=1u32 {
            for c1 in 0..=2u32 {
                for c2 in 0..=1u32 {
                    for c3 in 0..=1u32 {
                        if c0 + c1 + c2 + c3 <= 2 {
                            count += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(all.len(), count);
    }
}
