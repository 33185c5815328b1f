//! The exploration scheduler: PCT-style priorities (Burckhardt et al., "A randomized scheduler
//! with probabilistic guarantees of finding bugs", ASPLOS 2010) plus randomised asynchronous
//! latencies, TMA piece counts, completion orders and stalls, all drawn from one seed.
//!
//! Each seed picks a *profile*: a uniform random walk or PCT of depth 1 to 3 (every agent gets
//! a random priority when first seen, the highest-priority runnable agent steps, and at d - 1
//! random steps the running agent drops below all others); async latencies from the default
//! ranges, all short, all long, or mixed per kind; and how often the warps stall (let time pass
//! to the next completion although an agent could run, which is how a slow warp lets several
//! asynchronous completions land before it looks). The same seed replays the same run. Past
//! four times the expected run, the running agent is demoted every expected-run's worth of
//! steps: a partition spinning on an atomic never blocks, and would otherwise starve the one it
//! waits for.
//!
//! This module knows nothing of what the agents execute.

use crate::sched::{AgentRef, AsyncKind, Latencies, Scheduler};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;

/// How a seed drives latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LatencyProfile {
    /// The default ranges.
    Default,
    /// Every async operation completes within a few time units.
    Fast,
    /// Every async operation takes long.
    Slow,
    /// Fast or slow, drawn per operation.
    Mixed,
}

/// The PCT-style scheduler of `bwsim check`.
#[derive(Clone, Debug)]
pub struct PctScheduler {
    rng: ChaCha8Rng,
    /// `None`: a uniform random walk.
    depth: Option<u32>,
    prio: HashMap<AgentRef, u64>,
    /// Steps at which the running agent is demoted, descending (the next one last).
    change_points: Vec<u64>,
    next_low: u64,
    step: u64,
    /// The steps a run is expected to take: past four times that, the running agent is demoted
    /// every `horizon` steps, so that a partition spinning on global memory (an atomic polled
    /// in a loop) cannot starve the one it waits for.
    horizon: u64,
    latencies: Latencies,
    profile: LatencyProfile,
    /// Chance per step (out of 1024) to stall instead of stepping.
    stall: u32,
    max_pieces: u32,
}

impl PctScheduler {
    /// The scheduler of seed `seed`, for a kernel that runs about `expected_steps` steps.
    pub fn new(seed: u64, expected_steps: u64) -> PctScheduler {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x6263_6865_636b);
        let depth = match rng.gen_range(0..4u32) {
            0 => None,
            d => Some(d),
        };
        let horizon = expected_steps.max(1);
        let mut change_points: Vec<u64> = match depth {
            Some(d) => (1..d).map(|_| rng.gen_range(0..horizon)).collect(),
            None => Vec::new(),
        };
        change_points.sort_unstable_by(|a, b| b.cmp(a));
        let profile = match rng.gen_range(0..4u32) {
            0 => LatencyProfile::Default,
            1 => LatencyProfile::Fast,
            2 => LatencyProfile::Slow,
            _ => LatencyProfile::Mixed,
        };
        let stall = [0, 0, 16, 128][rng.gen_range(0..4usize)];
        PctScheduler {
            rng,
            depth,
            prio: HashMap::new(),
            change_points,
            next_low: 1_000,
            step: 0,
            horizon,
            latencies: Latencies::default(),
            profile,
            stall,
            max_pieces: 4,
        }
    }

    fn priority(&mut self, a: AgentRef) -> u64 {
        if let Some(&p) = self.prio.get(&a) {
            return p;
        }
        // Initial priorities lie above every demoted one.
        let p = (1u64 << 32) + self.rng.gen::<u32>() as u64;
        self.prio.insert(a, p);
        p
    }
}

impl Scheduler for PctScheduler {
    fn pick(&mut self, runnable: &[AgentRef]) -> usize {
        self.step += 1;
        if runnable.len() <= 1 {
            return 0;
        }
        if self.depth.is_none() {
            return self.rng.gen_range(0..runnable.len());
        }
        let mut best = 0;
        let mut best_p = 0;
        for (i, &a) in runnable.iter().enumerate() {
            let p = self.priority(a);
            if p > best_p {
                best = i;
                best_p = p;
            }
        }
        let starving = self.step > 4 * self.horizon && self.step.is_multiple_of(self.horizon);
        if starving || self.change_points.last().is_some_and(|&c| c <= self.step) {
            if !starving {
                self.change_points.pop();
            }
            self.next_low = self.next_low.saturating_sub(1);
            self.prio.insert(runnable[best], self.next_low);
        }
        best
    }

    fn latency(&mut self, kind: AsyncKind) -> u64 {
        let (lo, hi) = self.latencies.range(kind);
        let (lo, hi) = (lo.max(1), hi.max(lo.max(1)));
        let fast = (1, lo.clamp(1, 4));
        let slow = (hi / 2).max(lo)..=hi * 2;
        match self.profile {
            LatencyProfile::Default => self.rng.gen_range(lo..=hi),
            LatencyProfile::Fast => self.rng.gen_range(fast.0..=fast.1),
            LatencyProfile::Slow => self.rng.gen_range(slow),
            LatencyProfile::Mixed => {
                if self.rng.gen_bool(0.5) {
                    self.rng.gen_range(fast.0..=fast.1)
                } else {
                    self.rng.gen_range(slow)
                }
            }
        }
    }

    fn pieces(&mut self, max: u32) -> u32 {
        let m = max.min(self.max_pieces).max(1);
        self.rng.gen_range(1..=m)
    }

    fn tiebreak(&mut self) -> u64 {
        self.rng.gen()
    }

    fn stall(&mut self) -> bool {
        self.stall > 0 && self.rng.gen_range(0..1024) < self.stall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(n: u32) -> Vec<AgentRef> {
        (0..n).map(|agent| AgentRef { cta: 0, agent }).collect()
    }

    #[test]
    fn a_seed_replays_exactly() {
        for seed in 0..20 {
            let mut a = PctScheduler::new(seed, 100);
            let mut b = PctScheduler::new(seed, 100);
            let r = refs(3);
            for _ in 0..200 {
                assert_eq!(a.pick(&r), b.pick(&r));
                assert_eq!(a.latency(AsyncKind::TmaLoad), b.latency(AsyncKind::TmaLoad));
                assert_eq!(a.stall(), b.stall());
            }
        }
    }

    #[test]
    fn pct_runs_the_highest_priority_agent_until_a_change_point() {
        // Find a depth-1 PCT seed: it never changes priorities, so one agent always wins.
        let seed = (0..200)
            .find(|&s| PctScheduler::new(s, 100).depth == Some(1))
            .expect("some seed picks depth 1");
        let mut s = PctScheduler::new(seed, 100);
        let r = refs(4);
        let first = s.pick(&r);
        assert!((0..399).all(|_| s.pick(&r) == first));
        // Past four times the expected run the running agent is demoted (a spinner cannot
        // starve the others): another agent runs.
        let mut later: Vec<usize> = (0..200).map(|_| s.pick(&r)).collect();
        later.dedup();
        assert!(later.len() >= 2 && later[0] == first, "{later:?}");
        // Depth 3 changes priorities twice within the horizon: at least two agents get to run.
        let seed = (0..200)
            .find(|&s| PctScheduler::new(s, 100).depth == Some(3))
            .expect("some seed picks depth 3");
        let mut s = PctScheduler::new(seed, 100);
        let mut ran: Vec<usize> = (0..200).map(|_| s.pick(&r)).collect();
        ran.dedup();
        assert!(ran.len() >= 2, "{ran:?}");
    }

    #[test]
    fn seeds_cover_every_profile_and_latencies_stay_positive() {
        let mut profiles = Vec::new();
        for seed in 0..64 {
            let mut s = PctScheduler::new(seed, 100);
            if !profiles.contains(&s.profile) {
                profiles.push(s.profile);
            }
            for k in [AsyncKind::TmaLoad, AsyncKind::Mma, AsyncKind::Commit] {
                assert!(s.latency(k) >= 1);
            }
        }
        assert_eq!(profiles.len(), 4);
    }
}
