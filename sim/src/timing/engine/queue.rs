//! The engine's event queue: events ordered by time, then by the order they were pushed (so
//! events at one time run in the order they were scheduled), with each event's kind kept in
//! a slab beside the heap, which then moves 32-byte keys instead of whole events.

use crate::timing::memsys::Landing;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens when an event comes due.
#[derive(Clone, Copy, Debug)]
pub(super) enum EvKind {
    Run {
        cta: u32,
        agent: u32,
    },
    /// A TMA load lands: complete `bytes` of transaction on `bar`, once the L2 has served
    /// the load's share (`landing`; re-checked when due, as later requests slow it down).
    Tx {
        cta: u32,
        bar: u32,
        bytes: i64,
        landing: Option<Landing>,
    },
    Arrive {
        cta: u32,
        bar: u32,
        count: u32,
    },
    /// A tcgen05.commit of CTA `cta` (on SM `sm`) comes due: once the CTA's tensor-pipe stream
    /// has been served `target` (see [`super::pipe`]), and for a `cta_group::2` commit its
    /// stream on the pair peer's SM `pair.0` has been served `pair.1`, not before `floor`
    /// (cycles), arrive on `bar` in every CTA of the cluster whose rank is in `dests`.
    Commit {
        cta: u32,
        sm: u32,
        bar: u32,
        target: f64,
        floor: f64,
        pair: Option<(u32, f64)>,
        dests: u32,
    },
    Launch {
        sm: u32,
    },
    /// Start the clusters that fit the free slots (launches with clusters).
    LaunchClusters,
    /// A `clc.try_cancel` response lands at shared address `addr`: cancel the next launch
    /// not started, then complete 16 bytes on `bar` (in every CTA of the cluster with
    /// `multicast`).
    Clc {
        cta: u32,
        bar: u32,
        addr: u32,
        multicast: bool,
    },
    /// An operation of CTA `from` reaches the barrier `bar` of CTA `cta` of its cluster.
    Remote {
        cta: u32,
        from: u32,
        bar: u32,
        act: RemoteAct,
    },
}

/// What a remote barrier operation does to the peer's barrier.
#[derive(Clone, Copy, Debug)]
pub(super) enum RemoteAct {
    /// `mbar.arrive ..., cta=R`: `count` arrivals.
    Arrive(u32),
    /// `mbar.expect ..., cta=R`: expect `bytes` of transaction, then one arrival.
    Expect(i64),
}

/// A queued event: its ordering key and where its kind waits in the slab.
#[derive(Clone, Copy, Debug)]
struct Ev {
    /// Time (its IEEE bits, which order like the value for times >= 0) then sequence number.
    key: u128,
    slot: u32,
}

impl Ev {
    /// The event's time.
    fn t(&self) -> f64 {
        f64::from_bits((self.key >> 64) as u64)
    }
}

impl PartialEq for Ev {
    fn eq(&self, o: &Ev) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Ev) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    // Reversed: BinaryHeap is a max-heap and the engine wants the earliest event.
    fn cmp(&self, o: &Ev) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// The event queue (see the module doc).
#[derive(Default)]
pub(super) struct Queue {
    heap: BinaryHeap<Ev>,
    kinds: Vec<EvKind>,
    free: Vec<u32>,
    seq: u64,
}

impl Queue {
    /// Schedule `kind` at `t` (negative times count as 0).
    pub(super) fn push(&mut self, t: f64, kind: EvKind) {
        self.seq += 1;
        let t = t.max(0.0);
        let slot = match self.free.pop() {
            Some(i) => {
                self.kinds[i as usize] = kind;
                i
            }
            None => {
                self.kinds.push(kind);
                (self.kinds.len() - 1) as u32
            }
        };
        self.heap.push(Ev {
            key: (t.to_bits() as u128) << 64 | self.seq as u128,
            slot,
        });
    }

    /// The earliest event and its time.
    pub(super) fn pop(&mut self) -> Option<(f64, EvKind)> {
        let ev = self.heap.pop()?;
        self.free.push(ev.slot);
        Some((ev.t(), self.kinds[ev.slot as usize]))
    }

    /// The earliest event's time.
    pub(super) fn peek_time(&self) -> Option<f64> {
        self.heap.peek().map(Ev::t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_time_then_push_order() {
        let mut q = Queue::default();
        q.push(5.0, EvKind::Launch { sm: 1 });
        q.push(2.0, EvKind::Launch { sm: 2 });
        q.push(5.0, EvKind::Launch { sm: 3 });
        q.push(-1.0, EvKind::Launch { sm: 4 });
        assert_eq!(q.peek_time(), Some(0.0));
        let mut order = Vec::new();
        while let Some((t, k)) = q.pop() {
            let EvKind::Launch { sm } = k else { unreachable!() };
            order.push((t, sm));
            // A slot freed by a pop is reused by the next push.
            if sm == 2 {
                q.push(3.0, EvKind::Launch { sm: 5 });
            }
        }
        assert_eq!(order, vec![(0.0, 4), (2.0, 2), (3.0, 5), (5.0, 1), (5.0, 3)]);
        assert_eq!(q.kinds.len(), 4);
    }
}
