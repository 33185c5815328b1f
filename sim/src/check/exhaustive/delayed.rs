//! The deterministic scheduler of the exhaustive search, with delays where a plan names them.
//!
//! Clusters run one after the other (see the parent module): the *focus* cluster's agents
//! run while any of them can; while none can but something is in flight, time passes (its own
//! asynchronous work lands); only when the focus cluster has finished or is stuck with nothing
//! in flight does the runnable cluster with the lowest id take the focus. So everything in
//! flight belongs to the focus cluster, every decision of a run is the focus cluster's, and a
//! cluster's run is the same whatever the other clusters' delays: its decision points are
//! numbered on their own.

use crate::sched::{AgentRef, AsyncKind, Latencies, Scheduler};
use std::collections::{BTreeMap, BTreeSet};

/// One cluster's delays at its own decision points: (index, delays there), increasing index.
pub type Local = Vec<(usize, u32)>;

/// The deterministic scheduler with delays at the points a composite plan names; it records
/// each cluster's decision points.
pub(super) struct Delayed<'a> {
    /// The delays of each cluster (a cluster not named makes none).
    plans: &'a BTreeMap<u32, Local>,
    /// Per cluster: the next entry of its plan, and its decisions so far.
    at: BTreeMap<u32, usize>,
    decision: BTreeMap<u32, usize>,
    current: Option<AgentRef>,
    ranges: Latencies,
    ties: u64,
    /// Steps the current agent has taken in a row, and how many it may take while others of
    /// its cluster could run before the next one is made to run (fairness: an agent polling a
    /// flag never blocks).
    run_length: u64,
    fair_after: u64,
    /// Slots per cluster: a slot group holds one cluster. `None`: the whole grid is one
    /// group (the kernel uses global atomics, which CTAs hand values through).
    group: Option<u32>,
    /// The CTA in each slot (from the machine's admissions).
    slot_cta: Vec<u32>,
    /// The agents of each slot seen runnable since its CTA was admitted.
    seen: Vec<BTreeSet<u32>>,
    /// The slot group whose cluster runs now, and that cluster (a slot group holds one
    /// cluster after another).
    focus: Option<(u32, u32)>,
    /// An agent held back by a delay until no other agent of its cluster can run and nothing
    /// is in flight.
    hold: Option<AgentRef>,
    /// Each cluster's decision points: (index, alternatives to the default).
    pub points: BTreeMap<u32, Vec<(usize, u32)>>,
    /// The clusters that ran (took the focus) in this run.
    pub ran: BTreeSet<u32>,
}

impl<'a> Delayed<'a> {
    pub fn new(plans: &'a BTreeMap<u32, Local>, fair_after: u64, group: Option<u32>) -> Self {
        Delayed {
            plans,
            at: BTreeMap::new(),
            decision: BTreeMap::new(),
            current: None,
            ranges: Latencies::default(),
            ties: 0,
            run_length: 0,
            fair_after: fair_after.max(1),
            group: group.map(|g| g.max(1)),
            slot_cta: Vec::new(),
            seen: Vec::new(),
            focus: None,
            hold: None,
            points: BTreeMap::new(),
            ran: BTreeSet::new(),
        }
    }

    /// The slot group of an agent.
    fn grp(&self, r: AgentRef) -> u32 {
        self.group.map_or(0, |g| r.cta / g)
    }

    /// The cluster (its id in the grid) a slot group holds now; with one group, 0.
    fn cluster_of(&self, grp: u32) -> u32 {
        match self.group {
            Some(g) => {
                let slot = (grp * g) as usize;
                // Before the admission hook spoke (another machine), slots stand for CTAs.
                self.slot_cta.get(slot).copied().unwrap_or(grp * g) / g
            }
            None => 0,
        }
    }

    /// A decision point of `cluster` with `alternatives` choices besides the default: the
    /// delays the plan makes there.
    fn decide(&mut self, cluster: u32, alternatives: u32) -> u32 {
        let n = self.decision.entry(cluster).or_default();
        let i = *n;
        *n += 1;
        self.points.entry(cluster).or_default().push((i, alternatives));
        let Some(plan) = self.plans.get(&cluster) else {
            return 0;
        };
        let at = self.at.entry(cluster).or_default();
        match plan.get(*at) {
            Some(&(j, k)) if j == i => {
                *at += 1;
                k
            }
            _ => 0,
        }
    }

    /// The positions in `runnable` of the focus cluster's agents.
    fn focused(&self, runnable: &[AgentRef]) -> Vec<usize> {
        let Some((f, c)) = self.focus else {
            return Vec::new();
        };
        if self.cluster_of(f) != c {
            // Its slots hold the next cluster: the focus cluster has left.
            return Vec::new();
        }
        (0..runnable.len())
            .filter(|&j| self.grp(runnable[j]) == f)
            .collect()
    }

    /// The positions in `runnable` of the focus cluster's agents, taking the focus first if
    /// the focus cluster has none (the runnable cluster with the lowest id).
    fn focus_agents(&mut self, runnable: &[AgentRef]) -> Vec<usize> {
        let mine = self.focused(runnable);
        if !mine.is_empty() {
            return mine;
        }
        let Some(g) = runnable
            .iter()
            .map(|&r| self.grp(r))
            .min_by_key(|&g| (self.cluster_of(g), g))
        else {
            return Vec::new();
        };
        self.focus = Some((g, self.cluster_of(g)));
        self.ran.insert(self.cluster_of(g));
        self.current = None;
        self.hold = None;
        (0..runnable.len())
            .filter(|&j| self.grp(runnable[j]) == g)
            .collect()
    }

    /// The default among the focus agents `mine` (positions in `runnable`): the last agent
    /// while it can go on (and has not run too long while others could), else the next in
    /// (CTA, agent) order after it. Returns (default, whether the last agent goes on).
    fn default_of(&self, runnable: &[AgentRef], mine: &[usize]) -> (usize, Option<usize>) {
        let mut cur = self
            .current
            .and_then(|c| mine.iter().copied().find(|&j| runnable[j] == c));
        if cur.is_some() && mine.len() > 1 && self.run_length >= self.fair_after {
            // Fairness: the agent has run long enough while others could; the next one runs
            // (not a decision: every schedule does it).
            cur = None;
        }
        let default = cur.unwrap_or_else(|| match self.current {
            Some(c) => mine
                .iter()
                .copied()
                .find(|&j| (runnable[j].cta, runnable[j].agent) > (c.cta, c.agent))
                .unwrap_or(mine[0]),
            None => mine[0],
        });
        (default, cur)
    }
}

impl Scheduler for Delayed<'_> {
    fn wants_visibility(&self) -> bool {
        true
    }
    fn admitted(&mut self, slot: u32, cta: u32) {
        let s = slot as usize;
        if self.slot_cta.len() <= s {
            self.slot_cta.resize(s + 1, 0);
            self.seen.resize(s + 1, BTreeSet::new());
        }
        self.slot_cta[s] = cta;
        self.seen[s].clear();
    }
    fn pick(&mut self, runnable: &[AgentRef]) -> usize {
        let all = vec![true; runnable.len()];
        self.pick_among(runnable, &all)
    }
    fn stall_among(&mut self, runnable: &[AgentRef], visible: &[bool]) -> bool {
        if let Some(h) = self.hold {
            // Held: time passes while no other agent of its cluster can run.
            let g = self.grp(h);
            return !runnable.iter().any(|&r| r != h && self.grp(r) == g);
        }
        let Some((f, _)) = self.focus else { return false };
        let mine = self.focused(runnable);
        if mine.is_empty() {
            // The focus cluster waits for its own work in flight: time passes.
            return true;
        }
        if mine.len() > 1 {
            return false;
        }
        // One agent of the cluster can run and something is in flight: a delay holds it back
        // (before a step others can observe) until the rest of its cluster is quiescent.
        let (d, _) = self.default_of(runnable, &mine);
        let r = runnable[d];
        let slots = match self.group {
            Some(g) => (f * g) as usize..((f + 1) * g) as usize,
            None => 0..self.seen.len(),
        };
        let others = slots.into_iter().any(|slot| {
            self.seen
                .get(slot)
                .is_some_and(|s| s.iter().any(|&a| (slot as u32, a) != (r.cta, r.agent)))
        });
        if !others || !visible.get(d).copied().unwrap_or(true) {
            return false;
        }
        let cluster = self.focus.map_or(0, |(_, c)| c);
        if self.decide(cluster, 1) > 0 {
            self.hold = Some(r);
            return true;
        }
        false
    }
    fn pick_among(&mut self, runnable: &[AgentRef], visible: &[bool]) -> usize {
        for &r in runnable {
            let s = r.cta as usize;
            if self.seen.len() <= s {
                self.seen.resize(s + 1, BTreeSet::new());
                self.slot_cta.resize(s + 1, s as u32);
            }
            self.seen[s].insert(r.agent);
        }
        let mut mine = self.focus_agents(runnable);
        if mine.is_empty() {
            return 0;
        }
        if let Some(h) = self.hold {
            if mine.iter().any(|&j| runnable[j] != h) {
                // The others of its cluster run while it is held.
                mine.retain(|&j| runnable[j] != h);
            } else {
                // It alone can run and nothing is in flight: the hold ends.
                self.hold = None;
            }
        }
        let (default, cur) = self.default_of(runnable, &mine);
        // The agents a delay may choose: the focus cluster's, the default first, in order.
        let start = mine.iter().position(|&j| j == default).unwrap_or(0);
        let order: Vec<usize> = (0..mine.len()).map(|k| mine[(start + k) % mine.len()]).collect();
        let n = order.len();
        let is_point = n > 1 && cur.is_none_or(|c| visible.get(c).copied().unwrap_or(true));
        let i = if is_point {
            let cluster = self.focus.map_or(0, |(_, c)| c);
            let k = self.decide(cluster, n as u32 - 1) as usize;
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
        // Everything in flight is the focus cluster's.
        let cluster = self.focus.map_or(0, |(_, c)| c);
        if self.decide(cluster, 1) > 0 {
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
