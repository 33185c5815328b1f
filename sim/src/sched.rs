//! Scheduling decisions: which runnable agent steps next, how long every asynchronous
//! operation takes, in how many pieces a TMA copy lands, and the order of completions that
//! fall on the same logical time.
//!
//! [`Scheduler`] is the trait the machine asks; [`RandomScheduler`] is the default, seeded
//! with ChaCha8 so that the same seed gives the same run and the same trace on every machine.
//! The checker's PCT-style scheduler is [`crate::pct::PctScheduler`]. This
//! module knows nothing of what the agents execute.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// The kinds of asynchronous work whose latency the scheduler draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum AsyncKind {
    /// One piece of a TMA tile load (or one gather4 message) landing in shared memory.
    TmaLoad,
    /// A TMA store (or scatter) finishing its shared-memory reads.
    TmaStoreRead,
    /// A TMA store's global writes landing after its reads.
    TmaStoreWrite,
    /// A tcgen05.mma on the tensor pipe.
    Mma,
    /// A tcgen05.cp on the tensor pipe.
    Cp,
    /// A tcgen05.commit reaching the head of the tensor pipe.
    Commit,
    /// A wgmma group.
    Wgmma,
    /// One `cp.async` (a tile of element copies) landing in shared memory.
    CpAsync,
}

/// Who may step: a CTA slot and an agent within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct AgentRef {
    pub cta: u32,
    pub agent: u32,
}

/// The source of every nondeterministic choice of a run.
pub trait Scheduler {
    /// Index into `runnable` (never empty) of the agent that steps next.
    fn pick(&mut self, runnable: &[AgentRef]) -> usize;
    /// Latency in logical time units (>= 1) of an asynchronous operation.
    fn latency(&mut self, kind: AsyncKind) -> u64;
    /// Number of pieces (1..=max) in which a TMA copy delivers its bytes.
    fn pieces(&mut self, max: u32) -> u32;
    /// A tie-breaker ordering completions that land at the same time.
    fn tiebreak(&mut self) -> u64;
    /// Whether [`Scheduler::pick_among`] should be told which runnable agents are about to
    /// do something another agent can observe (the machine works it out only then).
    fn wants_visibility(&self) -> bool {
        false
    }
    /// [`Scheduler::pick`], knowing for each runnable agent whether its next step is visible
    /// to the others (an operation or a completing wait, not register-only work). Asked
    /// instead of `pick` when [`Scheduler::wants_visibility`].
    fn pick_among(&mut self, runnable: &[AgentRef], _visible: &[bool]) -> usize {
        self.pick(runnable)
    }
    /// The logical time of the pick that follows (a hook for schedulers that keep a record;
    /// most ignore it).
    fn at_time(&mut self, _now: u64) {}
    /// Whether to let time pass to the next asynchronous completion instead of stepping an
    /// agent now (a slow warp). Asked only when something is in flight.
    fn stall(&mut self) -> bool {
        false
    }
    /// [`Scheduler::stall`], knowing the runnable agents and (when
    /// [`Scheduler::wants_visibility`], else empty) whether each one's next step is visible.
    /// A scheduler that holds an agent back until another can run answers from them.
    fn stall_among(&mut self, _runnable: &[AgentRef], _visible: &[bool]) -> bool {
        self.stall()
    }
    /// CTA `cta` (its linear id in the grid) was admitted to slot `slot`: the slot's agents
    /// are that CTA's from now on (a hook for schedulers that treat CTAs apart).
    fn admitted(&mut self, _slot: u32, _cta: u32) {}
}

/// Latency ranges (inclusive, logical time units) of the default scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Latencies {
    pub tma_load: (u64, u64),
    pub tma_store_read: (u64, u64),
    pub tma_store_write: (u64, u64),
    pub mma: (u64, u64),
    pub cp: (u64, u64),
    pub commit: (u64, u64),
    pub wgmma: (u64, u64),
    pub cp_async: (u64, u64),
}

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies {
            tma_load: (20, 400),
            tma_store_read: (10, 200),
            tma_store_write: (10, 300),
            mma: (20, 300),
            cp: (10, 100),
            commit: (1, 20),
            wgmma: (20, 300),
            cp_async: (10, 300),
        }
    }
}

impl Latencies {
    pub fn range(&self, k: AsyncKind) -> (u64, u64) {
        match k {
            AsyncKind::TmaLoad => self.tma_load,
            AsyncKind::TmaStoreRead => self.tma_store_read,
            AsyncKind::TmaStoreWrite => self.tma_store_write,
            AsyncKind::Mma => self.mma,
            AsyncKind::Cp => self.cp,
            AsyncKind::Commit => self.commit,
            AsyncKind::Wgmma => self.wgmma,
            AsyncKind::CpAsync => self.cp_async,
        }
    }
}

/// The default scheduler: uniform random choices from a ChaCha8 stream seeded by the run's
/// seed.
#[derive(Clone, Debug)]
pub struct RandomScheduler {
    rng: ChaCha8Rng,
    pub latencies: Latencies,
    /// Most pieces a TMA load may land in.
    pub max_pieces: u32,
}

impl RandomScheduler {
    pub fn new(seed: u64) -> RandomScheduler {
        RandomScheduler {
            rng: ChaCha8Rng::seed_from_u64(seed),
            latencies: Latencies::default(),
            max_pieces: 2,
        }
    }
}

impl Scheduler for RandomScheduler {
    fn pick(&mut self, runnable: &[AgentRef]) -> usize {
        if runnable.len() <= 1 {
            0
        } else {
            self.rng.gen_range(0..runnable.len())
        }
    }
    fn latency(&mut self, kind: AsyncKind) -> u64 {
        let (lo, hi) = self.latencies.range(kind);
        let lo = lo.max(1);
        self.rng.gen_range(lo..=hi.max(lo))
    }
    fn pieces(&mut self, max: u32) -> u32 {
        let m = max.min(self.max_pieces).max(1);
        self.rng.gen_range(1..=m)
    }
    fn tiebreak(&mut self) -> u64 {
        self.rng.gen()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_choices() {
        let mut a = RandomScheduler::new(7);
        let mut b = RandomScheduler::new(7);
        let r = [
            AgentRef { cta: 0, agent: 0 },
            AgentRef { cta: 0, agent: 1 },
            AgentRef { cta: 1, agent: 0 },
        ];
        for _ in 0..100 {
            assert_eq!(a.pick(&r), b.pick(&r));
            assert_eq!(a.latency(AsyncKind::TmaLoad), b.latency(AsyncKind::TmaLoad));
            assert_eq!(a.pieces(4), b.pieces(4));
        }
        let l = a.latency(AsyncKind::Mma);
        assert!((20..=300).contains(&l));
    }
}
