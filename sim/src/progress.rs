//! Live progress of a run, readable from another thread while the simulator works (for the
//! CLI's progress display on long runs). The machine stores into it every few thousand steps;
//! nothing in a run depends on it, so results stay deterministic for a seed.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters published by a running simulation.
#[derive(Debug, Default)]
pub struct Progress {
    /// Agent steps so far.
    pub steps: AtomicU64,
    /// CTAs run to completion so far.
    pub ctas_done: AtomicU64,
    /// CTAs of the grid.
    pub ctas_total: AtomicU64,
}

impl Progress {
    /// `(steps, ctas_done, ctas_total)` as last published.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.steps.load(Ordering::Relaxed),
            self.ctas_done.load(Ordering::Relaxed),
            self.ctas_total.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn publish(&self, steps: u64, ctas_done: u64, ctas_total: u64) {
        self.steps.store(steps, Ordering::Relaxed);
        self.ctas_done.store(ctas_done, Ordering::Relaxed);
        self.ctas_total.store(ctas_total, Ordering::Relaxed);
    }
}
