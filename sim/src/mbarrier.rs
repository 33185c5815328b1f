//! The mbarrier state machine of docs/semantics.md#mbarrier, exactly: phase number, expected
//! arrival count, pending arrivals and a signed transaction count.
//!
//! A phase completes when pending arrivals reach 0 **and** the tx-count is 0; the phase number
//! then increments, pending resets to the expected count and tx stays 0. `test_wait.parity p`
//! is true iff `(phase & 1) != p`. An arrive whose count exceeds the pending arrivals, or a
//! tx-count outside ±(2^20 − 1), is a fault (`unspecified launch failure` on hardware).
//!
//! This module only knows one barrier; where barriers live (shared-memory addresses), who
//! waits on them and what a fault does to the run belong to the machine.

/// Largest magnitude of the tx-count (docs/semantics.md#mbarrier, H100).
pub const TX_LIMIT: i64 = (1 << 20) - 1;

/// Why an mbarrier operation faults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MbarFault {
    /// `arrive` with `count` greater than the `pending` arrivals of the current phase.
    Underflow { count: u32, pending: u32 },
    /// The tx-count left ±(2^20 − 1).
    TxRange { tx: i64 },
    /// An increment of the pending arrivals (`cp.async.mbarrier.arrive` without `.noinc`)
    /// past 2^20 − 1, the largest count a barrier holds.
    PendingRange { pending: u64 },
}

impl MbarFault {
    pub fn reason(&self) -> String {
        match self {
            MbarFault::Underflow { count, pending } => {
                format!("mbarrier arrive with count {count} while only {pending} arrivals are pending (arrival underflow)")
            }
            MbarFault::TxRange { tx } => {
                format!("mbarrier tx-count would become {tx}, outside ±(2^20 - 1)")
            }
            MbarFault::PendingRange { pending } => {
                format!("mbarrier pending arrival count would become {pending}, above 2^20 - 1")
            }
        }
    }
}

/// The expected arrival count of `mbarrier.init [bar], n`, which must be in 1..2^20; otherwise
/// the reason it is refused.
pub fn init_count(n: i64) -> Result<u32, String> {
    if (1..(1 << 20)).contains(&n) {
        Ok(n as u32)
    } else {
        Err(format!("mbarrier expected count must be in 1..2^20, found {n}"))
    }
}

/// The count of `mbarrier.arrive [bar], n`, which must fit a `u32`; otherwise the reason of the
/// fault (the launch fails).
pub fn arrive_count(n: i64) -> Result<u32, String> {
    u32::try_from(n).map_err(|_| format!("mbarrier arrive with count {n}"))
}

/// One mbarrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mbar {
    /// Phase number (its parity is what waits see); counts completed phases.
    pub phase: u64,
    pub pending: u32,
    pub expected: u32,
    pub tx: i64,
}

impl Mbar {
    /// `mbarrier.init [bar], count`.
    pub fn init(count: u32) -> Mbar {
        Mbar {
            phase: 0,
            pending: count,
            expected: count,
            tx: 0,
        }
    }

    /// Complete the phase if both counts are zero. Returns whether it completed.
    fn settle(&mut self) -> bool {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
            true
        } else {
            false
        }
    }

    /// `mbarrier.arrive` with `count`. Returns whether the phase completed.
    pub fn arrive(&mut self, count: u32) -> Result<bool, MbarFault> {
        if count > self.pending {
            return Err(MbarFault::Underflow {
                count,
                pending: self.pending,
            });
        }
        self.pending -= count;
        Ok(self.settle())
    }

    /// Add `count` to the pending arrivals of the current phase without completing anything
    /// (what `cp.async.mbarrier.arrive` without `.noinc` does before its asynchronous arrival;
    /// the PTX ISA, "cp.async.mbarrier.arrive").
    pub fn increment(&mut self, count: u32) -> Result<(), MbarFault> {
        let pending = u64::from(self.pending) + u64::from(count);
        if pending > TX_LIMIT as u64 {
            return Err(MbarFault::PendingRange { pending });
        }
        self.pending = pending as u32;
        Ok(())
    }

    fn add_tx(&mut self, delta: i64) -> Result<bool, MbarFault> {
        let tx = self
            .tx
            .checked_add(delta)
            .unwrap_or(if delta < 0 { i64::MIN } else { i64::MAX });
        if !(-TX_LIMIT..=TX_LIMIT).contains(&tx) {
            return Err(MbarFault::TxRange { tx });
        }
        self.tx = tx;
        Ok(self.settle())
    }

    /// `mbarrier.expect_tx`: add `bytes` to the tx-count (no arrival).
    pub fn expect_tx(&mut self, bytes: i64) -> Result<bool, MbarFault> {
        self.add_tx(bytes)
    }

    /// `mbarrier.complete_tx`: subtract `bytes` (what TMA does as bytes land).
    pub fn complete_tx(&mut self, bytes: i64) -> Result<bool, MbarFault> {
        self.add_tx(bytes.checked_neg().unwrap_or(i64::MAX))
    }

    /// `mbarrier.test_wait.parity p`: whether the most recent phase of parity `p` completed.
    pub fn test_wait(&self, parity: u32) -> bool {
        (self.phase & 1) != (parity & 1) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(b: &Mbar, step: u32, phase: u64, pending: u32, tx: i64, w0: bool, w1: bool) {
        assert_eq!(
            (b.phase, b.pending, b.tx),
            (phase, pending, tx),
            "state after step {step}"
        );
        assert_eq!(
            (b.test_wait(0), b.test_wait(1)),
            (w0, w1),
            "waits after step {step}"
        );
    }

    /// docs/semantics.md#the-measured-sequence, the 11-step table (H100), step by step.
    #[test]
    fn measured_eleven_step_table() {
        let mut b = Mbar::init(2);
        check(&b, 1, 0, 2, 0, false, true);
        b.arrive(1).expect("step 2");
        check(&b, 2, 0, 1, 0, false, true);
        b.expect_tx(1024).expect("step 3");
        check(&b, 3, 0, 1, 1024, false, true);
        b.arrive(1).expect("step 4");
        check(&b, 4, 0, 0, 1024, false, true);
        assert!(b.complete_tx(1024).expect("step 5"));
        check(&b, 5, 1, 2, 0, true, false);
        b.complete_tx(512).expect("step 6");
        check(&b, 6, 1, 2, -512, true, false);
        b.arrive(1).expect("step 7a");
        b.arrive(1).expect("step 7b");
        check(&b, 7, 1, 0, -512, true, false);
        assert!(b.expect_tx(512).expect("step 8"));
        check(&b, 8, 2, 2, 0, false, true);
        b.arrive(1).expect("step 9a");
        b.arrive(1).expect("step 9b");
        check(&b, 9, 3, 2, 0, true, false);
        b.arrive(1).expect("step 10a");
        b.arrive(1).expect("step 10b");
        check(&b, 10, 4, 2, 0, false, true);
        for _ in 0..3 {
            b.arrive(1).expect("step 11: single arrivals never underflow");
        }
        check(&b, 11, 5, 1, 0, true, false);
    }

    #[test]
    fn faults() {
        // count 3 while 2 pending, count 2 while 1 pending: underflow.
        let mut b = Mbar::init(2);
        assert_eq!(b.arrive(3), Err(MbarFault::Underflow { count: 3, pending: 2 }));
        b.arrive(1).expect("one of two");
        assert_eq!(b.arrive(2), Err(MbarFault::Underflow { count: 2, pending: 1 }));
        // count equal to pending completes normally.
        let mut b = Mbar::init(2);
        assert!(b.arrive(2).expect("count == pending"));
        // tx range.
        let mut b = Mbar::init(1);
        assert!(matches!(b.expect_tx(1 << 20), Err(MbarFault::TxRange { .. })));
        let mut b = Mbar::init(1);
        assert!(matches!(b.complete_tx(1 << 20), Err(MbarFault::TxRange { .. })));
        let mut b = Mbar::init(1);
        b.expect_tx(TX_LIMIT).expect("2^20 - 1 is fine");
        b.complete_tx(TX_LIMIT).expect("and back");
        assert_eq!(b.tx, 0);
    }

    #[test]
    fn fresh_barrier_parity() {
        let b = Mbar::init(1);
        assert!(b.test_wait(1), "fresh barrier passes wait(1)");
        assert!(!b.test_wait(0), "fresh barrier blocks wait(0)");
    }

    #[test]
    fn operand_counts() {
        assert_eq!(init_count(1), Ok(1));
        assert_eq!(init_count((1 << 20) - 1), Ok((1 << 20) - 1));
        for bad in [0, -1, 1 << 20] {
            assert_eq!(
                init_count(bad),
                Err(format!("mbarrier expected count must be in 1..2^20, found {bad}"))
            );
        }
        assert_eq!(arrive_count(u32::MAX as i64), Ok(u32::MAX));
        assert_eq!(arrive_count(-1), Err("mbarrier arrive with count -1".to_string()));
    }

    /// `cp.async.mbarrier.arrive` without `.noinc` (PTX ISA): the increment before the
    /// asynchronous arrival leaves the phase to the barrier's own arrivals, whatever the order
    /// of the one-thread arrive and the copies' arrivals; the expected count is untouched.
    #[test]
    fn increment_then_async_arrivals_make_no_net_change() {
        let mut b = Mbar::init(1);
        b.increment(128).expect("increment");
        check(&b, 1, 0, 129, 0, false, true);
        assert!(!b.arrive(1).expect("the thread's own arrival"));
        check(&b, 2, 0, 128, 0, false, true);
        assert!(b.arrive(128).expect("the copies' arrivals"));
        check(&b, 3, 1, 1, 0, true, false);
        // The other order: the copies land first.
        b.increment(128).expect("increment");
        assert!(!b.arrive(128).expect("the copies' arrivals"));
        check(&b, 4, 1, 1, 0, true, false);
        assert!(b.arrive(1).expect("the thread's own arrival"));
        check(&b, 5, 2, 1, 0, false, true);
    }

    #[test]
    fn increment_past_the_count_range_faults() {
        let mut b = Mbar::init((1 << 20) - 2);
        b.increment(1).expect("2^20 - 1 fits");
        assert_eq!(b.increment(1), Err(MbarFault::PendingRange { pending: 1 << 20 }));
        assert_eq!(b.pending, (1 << 20) - 1);
    }
}
