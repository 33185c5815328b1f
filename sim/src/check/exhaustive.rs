//! Bounded exhaustive checking: every schedule within a delay bound, each run once.
//!
//! The schedules are those of delay-bounded scheduling (Emmi, Qadeer and Rakamarić,
//! "Delay-bounded scheduling", POPL 2011): a deterministic scheduler, and a budget of *delays*
//! that each skip its choice at one decision point. The deterministic scheduler lets the agent
//! that ran last go on while it can; when it cannot (it blocked or ended) the next runnable
//! agent in (CTA, agent) order after it runs; an agent that has run as many steps in a row as
//! the kernel's whole reference run while others could run hands over to the next (an agent
//! polling a flag in global memory never blocks). Every asynchronous operation takes its kind's
//! shortest latency, lands in one piece, and simultaneous completions fire in issue order.
//! The decision points of a run are:
//! - a pick where two or more agents can run and either the last agent cannot go on, or its
//!   next step is visible to other agents (an operation or a completing wait: a step that only
//!   evaluates into its own registers commutes with every other agent's step, so switching
//!   before it gives no new behaviour); a delay there runs the next agent in order instead of
//!   the default one (two delays, the one after, ...);
//! - every asynchronous latency; a delay there takes the kind's longest latency instead.
//!
//! Without global atomics, the CTAs of different clusters cannot hand each other values (their
//! plain global accesses are ordered by happens-before or reported as races on any schedule
//! that runs both), so a delay at a pick chooses among the agents of the default agent's
//! cluster only.
//!
//! With a bound of `d` delays, every schedule that differs from the deterministic one in at
//! most `d` decisions is run exactly once: a schedule's delays are kept in decision order and
//! its children add one at or after its last, on the decision points of its own run (stateless
//! search: each schedule is a fresh run replaying its decisions). A clean result is a proof
//! within that bound; a search that reaches its run limit says so and proves nothing.
//!
//! The hazard checker runs on every schedule, so races and missing fences, which come from
//! happens-before rather than from an unlucky order, are found on whichever schedule first
//! executes both accesses; the delays are for deadlocks, phase aliasing and value-dependent
//! findings.

use super::Prepared;
use crate::explore::key;
use crate::lower::IKind;
use crate::sched::{AgentRef, AsyncKind, Latencies, Scheduler};
use bwsim_isa::Diagnostic;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// A schedule: the delays at decision points, as (decision index, delays there), in increasing
/// index order.
pub type Plan = Vec<(usize, u32)>;

/// Options of [`search`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Delays a schedule may make.
    pub delays: u32,
    /// Schedules run at the most; past it the search is incomplete.
    pub max_schedules: u64,
    pub jobs: usize,
}

/// One distinct finding of the search.
#[derive(Clone, Debug)]
pub struct Found {
    pub diagnostic: Diagnostic,
    /// The first schedule (fewest delays, then earliest) that shows it.
    pub plan: Plan,
    /// How many of the schedules run showed it.
    pub count: u64,
}

/// The result of [`search`].
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// Schedules run.
    pub schedules: u64,
    /// Schedules run with each number of delays (index = delays).
    pub by_delays: Vec<u64>,
    /// Findings ordered by (severity, delays, plan).
    pub findings: Vec<Found>,
    /// Whether every schedule within the bound ran (no run limit, no cancellation).
    pub complete: bool,
}

/// The deterministic scheduler with delays at the points a [`Plan`] names; it records the
/// decision points of its run.
struct Delayed<'a> {
    plan: &'a [(usize, u32)],
    at: usize,
    decision: usize,
    current: Option<AgentRef>,
    ranges: Latencies,
    ties: u64,
    /// Steps the current agent has taken in a row, and how many it may take while others
    /// could run before the next one is made to run (fairness: an agent polling a flag never
    /// blocks).
    run_length: u64,
    fair_after: u64,
    /// The decision points of this run: (index, alternatives to the default).
    points: Vec<(usize, u32)>,
    /// The CTAs of a slot group of this size can interact only with each other (a cluster):
    /// a delay chooses among the default agent's group. `None`: every agent may interact
    /// with every other (the kernel uses global atomics, which CTAs hand values through).
    group: Option<u32>,
}

impl<'a> Delayed<'a> {
    fn new(plan: &'a [(usize, u32)], fair_after: u64, group: Option<u32>) -> Self {
        Delayed {
            plan,
            at: 0,
            decision: 0,
            current: None,
            ranges: Latencies::default(),
            ties: 0,
            run_length: 0,
            fair_after: fair_after.max(1),
            group: group.map(|g| g.max(1)),
            points: Vec::new(),
        }
    }

    /// A decision point with `alternatives` choices besides the default: the delays the plan
    /// makes there.
    fn decide(&mut self, alternatives: u32) -> u32 {
        let i = self.decision;
        self.decision += 1;
        self.points.push((i, alternatives));
        match self.plan.get(self.at) {
            Some(&(j, k)) if j == i => {
                self.at += 1;
                k
            }
            _ => 0,
        }
    }
}

impl Scheduler for Delayed<'_> {
    fn wants_visibility(&self) -> bool {
        true
    }
    fn pick(&mut self, runnable: &[AgentRef]) -> usize {
        let all = vec![true; runnable.len()];
        self.pick_among(runnable, &all)
    }
    fn pick_among(&mut self, runnable: &[AgentRef], visible: &[bool]) -> usize {
        let mut cur = self.current.and_then(|c| runnable.iter().position(|&r| r == c));
        if cur.is_some() && runnable.len() > 1 && self.run_length >= self.fair_after {
            // Fairness: the agent has run long enough while others could; the next one runs
            // (not a decision: every schedule does it).
            cur = None;
        }
        // The default: the last agent while it can run, else the next in order after it.
        let default = cur.unwrap_or_else(|| match self.current {
            Some(c) => runnable
                .iter()
                .position(|&r| (r.cta, r.agent) > (c.cta, c.agent))
                .unwrap_or(0),
            None => 0,
        });
        // The agents a delay may choose: the default's group (itself first), in order.
        let same = |r: &AgentRef| self.group.is_none_or(|g| r.cta / g == runnable[default].cta / g);
        let order: Vec<usize> = (0..runnable.len())
            .map(|k| (default + k) % runnable.len())
            .filter(|&j| same(&runnable[j]))
            .collect();
        let n = order.len();
        let is_point = n > 1 && cur.is_none_or(|c| visible.get(c).copied().unwrap_or(true));
        let i = if is_point {
            let k = self.decide(n as u32 - 1) as usize;
            order[k % n]
        } else {
            default
        };
        if self.current == Some(runnable[i]) {
            self.run_length += 1;
        } else {
            self.run_length = 0;
        }
        self.current = Some(runnable[i]);
        i
    }
    fn latency(&mut self, kind: AsyncKind) -> u64 {
        let (lo, hi) = self.ranges.range(kind);
        if self.decide(1) > 0 {
            hi.max(lo).max(1)
        } else {
            lo.max(1)
        }
    }
    fn pieces(&mut self, _max: u32) -> u32 {
        1
    }
    fn tiebreak(&mut self) -> u64 {
        self.ties += 1;
        self.ties
    }
}

/// Runs `plan`: its diagnostics and the decision points of its run.
fn run_plan(p: &Prepared, plan: &[(usize, u32)], group: Option<u32>) -> (Vec<Diagnostic>, Vec<(usize, u32)>) {
    let mut s = Delayed::new(plan, p.expected_steps, group);
    let r = p.run_with(&mut s, false);
    (r.diagnostics, s.points)
}

/// The schedules one delay beyond `plan` on the decision points of its run: one more delay at
/// its last delayed point (while that point has alternatives left) or at any later point.
fn children(plan: &[(usize, u32)], points: &[(usize, u32)]) -> Vec<Plan> {
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

fn delays_of(plan: &[(usize, u32)]) -> u32 {
    plan.iter().map(|x| x.1).sum()
}

/// Runs every schedule within `opts.delays` delays (level by level: 0 delays, then 1, ...),
/// on `opts.jobs` threads; `progress(done)` after each schedule. Stops at
/// `opts.max_schedules` or when `cancel` is set (the result is then incomplete). The result
/// does not depend on the number of threads.
pub fn search<P: Fn(u64) + Sync>(p: &Prepared, opts: &Options, cancel: &AtomicBool, progress: P) -> Search {
    type Key = (&'static str, Vec<(u32, u32)>, String);
    let found: Mutex<BTreeMap<Key, Found>> = Mutex::new(BTreeMap::new());
    let done = AtomicU64::new(0);
    let group = independent_clusters(p);
    let mut level: Vec<Plan> = vec![Vec::new()];
    let mut by_delays = Vec::new();
    let mut complete = true;
    for d in 0..=opts.delays {
        if level.is_empty() {
            break;
        }
        let next: Mutex<Vec<Plan>> = Mutex::new(Vec::new());
        let taken = AtomicU64::new(0);
        let ran = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        crossbeam::scope(|s| {
            for _ in 0..opts.jobs.max(1) {
                s.spawn(|_| loop {
                    if cancel.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = taken.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some(plan) = level.get(i) else { break };
                    if done.fetch_add(1, Ordering::Relaxed) >= opts.max_schedules {
                        done.fetch_sub(1, Ordering::Relaxed);
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    let (diags, points) = run_plan(p, plan, group);
                    ran.fetch_add(1, Ordering::Relaxed);
                    if d < opts.delays {
                        let c = children(plan, &points);
                        if let Ok(mut n) = next.lock() {
                            n.extend(c);
                        }
                    }
                    if !diags.is_empty() {
                        if let Ok(mut f) = found.lock() {
                            let mut seen = std::collections::HashSet::new();
                            for dg in diags {
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
                                if (delays_of(plan), plan) < (delays_of(&e.plan), &e.plan) {
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
        if stop.load(Ordering::Relaxed) || cancel.load(Ordering::Relaxed) {
            complete = false;
            break;
        }
        let mut n = next.into_inner().unwrap_or_default();
        // Children of different parents are different schedules; the order makes the run
        // deterministic.
        n.sort();
        n.dedup();
        level = n;
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
        findings,
        complete,
    }
}

/// The cluster size, when the CTAs of different clusters cannot hand each other values: the
/// kernel has no global atomic (plain global accesses of two CTAs are ordered by
/// happens-before or reported as a race on any schedule that runs both). `None` otherwise.
fn independent_clusters(p: &Prepared) -> Option<u32> {
    let atomics = p
        .prog
        .code
        .iter()
        .any(|i| matches!(&i.kind, IKind::Op { name, .. } if name.starts_with("global.atomic")));
    (!atomics).then(|| p.prog.cluster.iter().product::<u32>().max(1))
}

/// `delays at decision points 12, 40 (x2)`, or `no delays`.
pub fn describe(plan: &[(usize, u32)]) -> String {
    if plan.is_empty() {
        return "no delays".into();
    }
    let at: Vec<String> = plan
        .iter()
        .map(|&(i, k)| {
            if k == 1 {
                i.to_string()
            } else {
                format!("{i} (x{k})")
            }
        })
        .collect();
    format!("delays at decision points {}", at.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(agent: u32) -> AgentRef {
        AgentRef { cta: 0, agent }
    }

    #[test]
    fn the_default_goes_on_with_the_last_agent_and_a_delay_takes_the_next() {
        let all = [a(0), a(1), a(2)];
        let vis = [true, true, true];
        let mut s = Delayed::new(&[], 1000, None);
        assert_eq!(s.pick_among(&all, &vis), 0);
        assert_eq!(s.pick_among(&all, &vis), 0);
        // Agent 0 blocked: the next after it.
        assert_eq!(s.pick_among(&[a(1), a(2)], &[true, true]), 0);
        let plan = vec![(1, 2)];
        let mut s = Delayed::new(&plan, 1000, None);
        assert_eq!(s.pick_among(&all, &vis), 0);
        // Two delays at decision 1: two past the default.
        assert_eq!(s.pick_among(&all, &vis), 2);
        assert_eq!(s.points, vec![(0, 2), (1, 2)]);
    }

    #[test]
    fn with_independent_clusters_a_delay_chooses_within_the_default_cluster() {
        let b = |cta, agent| AgentRef { cta, agent };
        // Clusters of one CTA: agents of CTA 0 and CTA 1; the default is CTA 0's agent 0.
        let run = [b(0, 0), b(0, 1), b(1, 0)];
        let plan = vec![(0, 1)];
        let mut s = Delayed::new(&plan, 1000, Some(1));
        assert_eq!(s.pick_among(&run, &[true, true, true]), 1);
        assert_eq!(s.points, vec![(0, 1)], "one alternative: CTA 0's other agent");
        let mut s = Delayed::new(&plan, 1000, None);
        assert_eq!(s.pick_among(&run, &[true, true, true]), 1);
        assert_eq!(s.points, vec![(0, 2)]);
    }

    #[test]
    fn an_invisible_step_is_no_decision_point() {
        let mut s = Delayed::new(&[], 1000, None);
        assert_eq!(s.pick_among(&[a(0), a(1)], &[true, true]), 0);
        assert_eq!(s.pick_among(&[a(0), a(1)], &[false, true]), 0);
        assert_eq!(s.points.len(), 1);
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
    }

    #[test]
    fn every_plan_within_the_bound_is_generated_once() {
        // A fixed run shape: 4 decision points with 1, 2, 1, 1 alternatives; the plans with
        // at most 2 delays, counted by brute force below.
        let points = [(0, 1), (1, 2), (2, 1), (3, 1)];
        let mut all = vec![Vec::new()];
        let mut level: Vec<Plan> = vec![Vec::new()];
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
