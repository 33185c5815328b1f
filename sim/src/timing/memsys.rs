//! The GPU-wide memory system of the timing model: an L2 that sees reuse between CTAs, the L2's
//! bandwidth, and HBM bandwidth shared by all SMs; plus [`Server`], the bandwidth queue every
//! unit of the model (TMA ports, tensor pipe, shared memory) is built from.
//!
//! **Servers.** A server is a FIFO queue with a fixed service rate: a request of `d` cycles of
//! service arriving at `t` starts at `max(t, free)` and ends `d` later. Requests reach a server
//! in non-decreasing time (the engine processes events in time order), so one number (`free`)
//! is its whole state. Saturated servers therefore deliver exactly their bandwidth; idle ones
//! add no delay.
//!
//! **L2.** An LRU over *boxes*: a TMA box is identified by its tensor, coordinates and box
//! shape, which is the granularity at which tile kernels share data between CTAs (the A tile
//! at (off_m, k) is the same key for every CTA of that tile row). Capacity is the chip's L2
//! times its effective fraction. A line being filled from HBM is present with a `ready` time,
//! so a second CTA asking for it while the fill is in flight waits for that fill (one HBM
//! transfer, not two). Accesses without a key (generic loads, gathers) always miss.
//!
//! **L2 bandwidth** is one server at the chip's `l2_bytes_per_cycle`, which every byte the L2
//! delivers to an SM uses, hit or miss, and every byte stored. Unlike the other servers it is
//! shared equally between the requests in flight ([`super::share`], measured on the H100): a
//! load's landing is therefore only predicted when it is issued ([`Landing`]) and re-checked by
//! the engine when due. A miss is filled from HBM and
//! then delivered through the same slices and crossbar as a hit, so it costs the L2 at least
//! what a hit costs; counting only hits would make a hit dearer than the miss it replaces
//! whenever the L2 is the bound. As it is, turning a miss into a hit never delays anything
//! (the property test below): a hit takes the same L2 and port service as the miss and drops
//! the HBM transfer and the extra latency. What a higher hit rate buys therefore depends on
//! the bound: HBM-bound kernels speed up by the HBM bytes saved; L2-bound ones do not (their
//! L2 bytes are the same), which is what the measured figures in the chip table predict for
//! 128 x 256 single-CTA matmul tiles (docs/timing.md).
//!
//! **HBM.** One server at the chip's HBM bandwidth. Reads (L2 misses) queue on it in order.
//! Writes are write-back: a store lands in L2 as dirty bytes, which drain to HBM in the time
//! the reads leave idle; only when more than [`MemSys::dirty_limit`] bytes are waiting do
//! writes queue ahead of later reads. So a burst of epilogue stores does not delay the next
//! tile's loads, while a streaming kernel still shares HBM bandwidth between its reads and
//! its writes. Dirty bytes left at the end do not delay the kernel (L2 is the point of
//! coherence) but count as HBM traffic.
//!
//! This module knows bytes, keys and times; it knows nothing of operations or agents.

use super::share::{Job, SharedServer};
use crate::chips::Chip;
use std::collections::{HashMap, VecDeque};

/// A FIFO bandwidth queue (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct Server {
    /// When the server is free again.
    pub free: f64,
    /// Total service time handed out (for utilisation).
    pub busy: f64,
}

impl Server {
    /// Serve `dur` cycles for a request arriving at `t`; returns when the service ends.
    pub fn reserve(&mut self, t: f64, dur: f64) -> f64 {
        let start = t.max(self.free);
        self.free = start + dur;
        self.busy += dur;
        self.free
    }
}

/// A server that moves bytes at a fixed rate (an SM's TMA port, its shared memory, ...).
#[derive(Clone, Copy, Debug, Default)]
pub struct Port {
    pub server: Server,
    pub bytes_per_cycle: f64,
}

impl Port {
    pub fn new(bytes_per_cycle: f64) -> Port {
        Port {
            server: Server::default(),
            bytes_per_cycle,
        }
    }
    /// Cycles `bytes` take to cross the port (0 when the port has no rate).
    pub fn duration(&self, bytes: f64) -> f64 {
        if self.bytes_per_cycle > 0.0 {
            bytes / self.bytes_per_cycle
        } else {
            0.0
        }
    }
    /// Move `bytes` arriving at `t`; returns when the last byte has passed.
    pub fn send(&mut self, t: f64, bytes: f64) -> f64 {
        let dur = self.duration(bytes);
        self.server.reserve(t, dur)
    }
}

#[derive(Clone, Copy, Debug)]
struct Line {
    bytes: u64,
    /// When the data is (or will be) in L2.
    ready: f64,
    /// LRU stamp of the last touch.
    stamp: u64,
}

/// The L2 as an LRU of boxes.
#[derive(Clone, Debug, Default)]
pub struct L2 {
    capacity: u64,
    used: u64,
    lines: HashMap<u64, Line>,
    /// Touches in order; entries whose stamp no longer matches the line are stale.
    order: VecDeque<(u64, u64)>,
    stamp: u64,
}

/// What an L2 lookup found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Lookup {
    /// Present (or being filled): the data is in L2 from `ready` on.
    Hit {
        ready: f64,
    },
    Miss,
}

impl L2 {
    pub fn new(capacity: u64) -> L2 {
        L2 {
            capacity,
            ..L2::default()
        }
    }

    /// Look `key` up and touch it.
    pub fn lookup(&mut self, key: u64) -> Lookup {
        self.stamp += 1;
        let s = self.stamp;
        let ready = match self.lines.get_mut(&key) {
            Some(l) => {
                l.stamp = s;
                l.ready
            }
            None => return Lookup::Miss,
        };
        self.order.push_back((s, key));
        self.compact();
        Lookup::Hit { ready }
    }

    /// Put `key` (of `bytes`, present from `ready`) in, evicting least recently used lines.
    pub fn insert(&mut self, key: u64, bytes: u64, ready: f64) {
        if bytes > self.capacity {
            return;
        }
        self.stamp += 1;
        let s = self.stamp;
        if let Some(old) = self.lines.insert(
            key,
            Line {
                bytes,
                ready,
                stamp: s,
            },
        ) {
            self.used -= old.bytes;
        }
        self.used += bytes;
        self.order.push_back((s, key));
        while self.used > self.capacity {
            let Some((st, k)) = self.order.pop_front() else {
                break;
            };
            if self.lines.get(&k).is_some_and(|l| l.stamp == st) {
                if let Some(l) = self.lines.remove(&k) {
                    self.used -= l.bytes;
                }
            }
        }
        self.compact();
    }

    /// Drop stale entries from the front so the order queue stays proportional to the lines.
    fn compact(&mut self) {
        if self.order.len() > 4 * self.lines.len() + 64 {
            let lines = &self.lines;
            self.order
                .retain(|(st, k)| lines.get(k).is_some_and(|l| l.stamp == *st));
        }
    }

    /// Bytes held.
    pub fn used(&self) -> u64 {
        self.used
    }
}

/// Traffic counters of the memory system.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemStats {
    /// Bytes requested by loads (TMA and generic), hits and misses.
    pub load_bytes: f64,
    /// Of which found in L2.
    pub hit_bytes: f64,
    /// Load requests and hits (counted per request).
    pub loads: u64,
    pub hits: u64,
    /// Bytes written by stores.
    pub store_bytes: f64,
    /// Bytes moved to or from HBM.
    pub hbm_bytes: f64,
}

/// HBM traffic per time bin, for the trace's bandwidth counter.
#[derive(Clone, Debug)]
pub struct HbmTimeline {
    pub bin_cycles: f64,
    pub bytes: Vec<f64>,
}

impl HbmTimeline {
    fn add(&mut self, start: f64, end: f64, bytes: f64) {
        // Spread the transfer over the bins it spans.
        let w = self.bin_cycles;
        let dur = (end - start).max(1e-9);
        let mut t = start;
        while t < end {
            let bin = (t / w) as usize;
            let bin_end = ((bin + 1) as f64 * w).min(end);
            if self.bytes.len() <= bin {
                self.bytes.resize(bin + 1, 0.0);
            }
            self.bytes[bin] += bytes * (bin_end - t) / dur;
            t = bin_end;
        }
    }
}

/// The L2, its bandwidth, and HBM.
#[derive(Clone, Debug)]
pub struct MemSys {
    pub l2: L2,
    /// The L2's bandwidth, shared between the requests in flight ([`super::share`]).
    pub l2_port: SharedServer,
    pub hbm: Server,
    l2_bpc: f64,
    hbm_bpc: f64,
    l2_latency: f64,
    hbm_latency: f64,
    store_read_latency: f64,
    store_write_latency: f64,
    pub stats: MemStats,
    pub timeline: Option<HbmTimeline>,
    /// Written bytes not yet drained to HBM.
    pub dirty: f64,
    /// Dirty bytes the L2 holds before writes queue ahead of reads: half of its effective
    /// capacity ([estimate]).
    pub dirty_limit: f64,
}

/// When a load lands in the SM: at `at` as predicted when it was issued, which is final once
/// the L2 has served `job` (a later request sharing the L2 may delay that; see
/// [`MemSys::landing`]); `rest` is the part of `at` that does not depend on the L2's share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Landing {
    pub at: f64,
    pub job: Job,
    pub rest: f64,
}

/// When a store is done reading shared memory and when its writes are done.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StoreDone {
    pub read: f64,
    pub write: f64,
}

impl MemSys {
    pub fn new(chip: &Chip) -> MemSys {
        MemSys {
            l2: L2::new(chip.l2_effective_bytes()),
            l2_port: SharedServer::default(),
            hbm: Server::default(),
            l2_bpc: chip.l2_bytes_per_cycle,
            hbm_bpc: chip.hbm_bytes_per_cycle(),
            l2_latency: chip.tma_l2_latency,
            hbm_latency: chip.tma_hbm_latency,
            store_read_latency: chip.tma_store_read_latency,
            store_write_latency: chip.tma_store_write_latency,
            stats: MemStats::default(),
            timeline: None,
            dirty: 0.0,
            dirty_limit: chip.l2_effective_bytes() as f64 / 2.0,
        }
    }

    /// Record HBM traffic in bins of `bin_cycles`.
    pub fn with_timeline(mut self, bin_cycles: f64) -> MemSys {
        self.timeline = Some(HbmTimeline {
            bin_cycles: bin_cycles.max(1.0),
            bytes: Vec::new(),
        });
        self
    }

    /// Drain dirty bytes into the HBM time left idle before `t`.
    fn drain(&mut self, t: f64) {
        if self.dirty <= 0.0 || self.hbm.free >= t {
            return;
        }
        let bytes = self.dirty.min((t - self.hbm.free) * self.hbm_bpc);
        let start = self.hbm.free;
        let dur = bytes / self.hbm_bpc;
        self.hbm.free = start + dur;
        self.hbm.busy += dur;
        self.dirty -= bytes;
        if let Some(tl) = &mut self.timeline {
            tl.add(start, start + dur, bytes);
        }
    }

    /// An HBM read of `bytes` at `t`; returns when it is done.
    fn hbm_read(&mut self, t: f64, bytes: f64) -> f64 {
        self.drain(t);
        let dur = bytes / self.hbm_bpc;
        let end = self.hbm.reserve(t, dur);
        self.stats.hbm_bytes += bytes;
        if let Some(tl) = &mut self.timeline {
            tl.add(end - dur, end, bytes);
        }
        end
    }

    /// `bytes` written back at `t` (see the module doc).
    fn hbm_write(&mut self, t: f64, bytes: f64) {
        self.drain(t);
        self.stats.hbm_bytes += bytes;
        self.dirty += bytes;
        let excess = self.dirty - self.dirty_limit;
        if excess > 0.0 {
            let dur = excess / self.hbm_bpc;
            let end = self.hbm.reserve(t, dur);
            self.dirty = self.dirty_limit;
            if let Some(tl) = &mut self.timeline {
                tl.add(end - dur, end, excess);
            }
        }
    }

    /// A load of `bytes` issued at `t` by an SM whose ingress port is `port`, found in L2 by
    /// `key` (None: always a miss). Unloaded, it completes after the hit or miss latency (to
    /// the first byte) plus its own transfer through the port; loaded, after the backlog of
    /// the port or the HBM queue it waits in, or after its share of the L2's bandwidth.
    /// `latency` overrides the (hit, miss) latencies of TMA (generic loads have their own).
    /// Returns when the data lands in the SM, as far as known now ([`Landing`]).
    pub fn load(
        &mut self,
        t: f64,
        key: Option<u64>,
        bytes: u64,
        port: &mut Port,
        latency: Option<(f64, f64)>,
    ) -> Landing {
        let b = bytes as f64;
        let (lat_hit, lat_miss) = latency.unwrap_or((self.l2_latency, self.hbm_latency));
        self.stats.loads += 1;
        self.stats.load_bytes += b;
        // The port's queue is kept in request order; a box crosses it after its first byte
        // arrives (latency + its own transfer), and a busy port delays it by its backlog.
        let port_free = port.send(t, b);
        let transfer = port.duration(b);
        let job = self.l2_port.request(t, b / self.l2_bpc);
        let l2_done = self.l2_port.when_done(job);
        let found = key.map(|k| self.l2.lookup(k)).unwrap_or(Lookup::Miss);
        let rest = match found {
            Lookup::Hit { ready } => {
                self.stats.hits += 1;
                self.stats.hit_bytes += b;
                let first = (t + lat_hit).max(ready);
                (first + transfer).max(port_free + lat_hit)
            }
            Lookup::Miss => {
                let hbm_done = self.hbm_read(t, b);
                let first = (t + lat_miss).max(hbm_done);
                if let Some(k) = key {
                    self.l2.insert(k, bytes, first);
                }
                (first + transfer).max(port_free + lat_miss)
            }
        };
        Landing {
            at: rest.max(l2_done),
            job,
            rest,
        }
    }

    /// Where a load stands at `t`: `None` once it has landed (its L2 share is served and
    /// `rest` has passed), else the next time to ask again (a lower bound).
    pub fn landing(&mut self, t: f64, l: &Landing) -> Option<f64> {
        self.l2_port.advance(t);
        if self.l2_port.done(l.job) {
            (l.rest > t + 1e-9).then_some(l.rest)
        } else {
            Some(self.l2_port.when_done(l.job).max(l.rest))
        }
    }

    /// A store of `bytes` issued at `t` through the SM's egress `port`: its shared-memory reads
    /// are done when the port has sent the bytes, its writes when L2 has taken them.
    /// The stored box becomes an L2 line under `key`; its bytes go to HBM by write-back.
    pub fn store(
        &mut self,
        t: f64,
        key: Option<u64>,
        bytes: u64,
        port: &mut Port,
        write_latency: Option<f64>,
    ) -> StoreDone {
        let b = bytes as f64;
        self.stats.store_bytes += b;
        let sent = port.send(t, b);
        let read = (t + self.store_read_latency).max(sent);
        // Stores take their share of the L2 as predicted now (their completion is not
        // re-checked: a later request may still slow them down on the hardware).
        let job = self.l2_port.request(t, b / self.l2_bpc);
        let l2_done = self.l2_port.when_done(job);
        self.hbm_write(t, b);
        let write = (t + write_latency.unwrap_or(self.store_write_latency))
            .max(read)
            .max(l2_done);
        if let Some(k) = key {
            self.l2.insert(k, bytes, write);
        }
        StoreDone { read, write }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chips::H100_HAND as H100;

    use proptest::prelude::*;

    #[test]
    fn server_is_a_fifo_queue() {
        let mut s = Server::default();
        assert_eq!(s.reserve(0.0, 10.0), 10.0);
        // Arrives while busy: waits for the first to finish.
        assert_eq!(s.reserve(5.0, 10.0), 20.0);
        // Arrives after an idle gap: starts at once.
        assert_eq!(s.reserve(30.0, 10.0), 40.0);
        assert_eq!(s.busy, 30.0);
        // A port moves bytes at its rate: 16 KiB at 64 B per cycle is 256 cycles.
        let mut p = Port::new(64.0);
        assert_eq!(p.send(100.0, 16384.0), 356.0);
        assert_eq!(Port::new(0.0).send(7.0, 1e9), 7.0);
    }

    #[test]
    fn l2_evicts_the_least_recently_used_box() {
        let mut l2 = L2::new(100);
        l2.insert(1, 40, 5.0);
        l2.insert(2, 40, 6.0);
        assert_eq!(l2.lookup(1), Lookup::Hit { ready: 5.0 });
        // 120 > 100: the LRU box (2, not touched since its insert) goes.
        l2.insert(3, 40, 7.0);
        assert_eq!(l2.lookup(2), Lookup::Miss);
        assert_eq!(l2.lookup(1), Lookup::Hit { ready: 5.0 });
        assert_eq!(l2.lookup(3), Lookup::Hit { ready: 7.0 });
        assert_eq!(l2.used(), 80);
        // A box larger than the cache is not kept.
        l2.insert(4, 101, 0.0);
        assert_eq!(l2.lookup(4), Lookup::Miss);
        // Many touches do not grow the bookkeeping without bound.
        for _ in 0..10_000 {
            l2.lookup(1);
        }
        assert!(l2.order.len() < 200, "{}", l2.order.len());
    }

    #[test]
    fn loads_miss_then_hit_under_the_fill() {
        // H100: L2 hit latency 500, miss 790, HBM 3.0e12 / 1.83e9 = 1639.3 B per cycle,
        // port 64 B per cycle, L2 4210 B per cycle.
        let mut m = MemSys::new(&H100);
        let mut port = Port::new(H100.tma_bytes_per_cycle_sm);
        // 16 KiB miss at 0: HBM takes 10 cycles, so the first byte comes after the 790-cycle
        // latency, and the box crosses the port in 256 more: 1046.
        assert_eq!(m.load(0.0, Some(7), 16384, &mut port, None).at, 1046.0);
        // Same box from another SM at 10 while the fill is in flight: its first byte comes
        // with the fill's (790), then 256 on its own port.
        let mut port2 = Port::new(H100.tma_bytes_per_cycle_sm);
        assert_eq!(m.load(10.0, Some(7), 16384, &mut port2, None).at, 1046.0);
        // At 1000 it is a plain hit: 1000 + 500 + 256.
        assert_eq!(m.load(1000.0, Some(7), 16384, &mut port2, None).at, 1756.0);
        assert_eq!((m.stats.loads, m.stats.hits), (3, 2));
        assert_eq!(m.stats.hbm_bytes, 16384.0);
        // A 64 KiB miss at 1000: 790 + 1024 of transfer.
        assert_eq!(m.load(1000.0, Some(8), 65536, &mut port, None).at, 2814.0);
        // Right behind it on the same port, a 16 KiB miss waits for the port's backlog:
        // the port is busy until 2024 in request time, + 256 + 790 latency.
        assert_eq!(
            m.load(1000.0, Some(9), 16384, &mut port, None).at,
            2024.0 + 256.0 + 790.0
        );
        // No key: always a miss.
        let _ = m.load(2000.0, None, 64, &mut port2, None);
        assert_eq!(m.stats.hits, 2);
    }

    #[test]
    fn hbm_bandwidth_bounds_a_stream_of_misses() {
        let mut m = MemSys::new(&H100);
        let bpc = H100.hbm_bytes_per_cycle();
        let mut ports: Vec<Port> = (0..100).map(|_| Port::new(64.0)).collect();
        let mut last: f64 = 0.0;
        for (i, p) in ports.iter_mut().enumerate() {
            last = last.max(m.load(0.0, Some(i as u64), 1 << 20, p, None).at);
        }
        // 100 MiB through HBM at 1639.3 B per cycle; the last MiB then crosses its SM's port
        // (16384 cycles at 64 B per cycle).
        let expect = 100.0 * (1 << 20) as f64 / bpc + 16384.0;
        assert!((last - expect).abs() < 1e-6 * expect, "{last} vs {expect}");
    }

    #[test]
    fn writes_drain_in_idle_time_unless_the_dirty_limit_is_passed() {
        let mut m = MemSys::new(&H100);
        let mut port = Port::new(64.0);
        // 1 MiB stored at 0 is under the dirty limit (half of the modelled 37.5 MiB): a miss at
        // 0 right after is not delayed by it (790 + 256).
        m.store(0.0, Some(1), 1 << 20, &mut port, None);
        let mut p2 = Port::new(64.0);
        assert_eq!(m.load(0.0, Some(2), 16384, &mut p2, None).at, 1046.0);
        assert_eq!(m.dirty, (1 << 20) as f64);
        // Idle HBM time before a later read drains it: at 10000 cycles (16 MB of bandwidth)
        // all of it is gone.
        let _ = m.load(10_000.0, Some(3), 16384, &mut p2, None);
        assert_eq!(m.dirty, 0.0);
        // Past the limit, the excess queues ahead of later reads.
        let mut m = MemSys::new(&H100);
        let limit = m.dirty_limit;
        let excess = (10_000.0 * H100.hbm_bytes_per_cycle()).round();
        m.store(0.0, None, (limit + excess) as u64, &mut port, None);
        // The excess is 10,000 HBM cycles of bytes; a miss at 0 starts after it, then crosses
        // its port (256 cycles).
        let t = m.load(0.0, Some(9), 16384, &mut Port::new(64.0), None).at;
        assert!(
            (t - (10_000.0 + 16384.0 / H100.hbm_bytes_per_cycle() + 256.0)).abs() < 0.02,
            "{t}"
        );
    }

    /// Replays `loads` (issue-time step, key, KiB, SM) on a fresh memory system whose L2 holds
    /// the keys in `warm` from time 0; returns every load's completion time.
    fn replay(loads: &[(u8, u8, u8, u8)], warm: &[u8]) -> Vec<f64> {
        let mut m = MemSys::new(&H100);
        for &k in warm {
            m.l2.insert(k as u64, 1, 0.0);
        }
        let mut ports = [Port::new(H100.tma_bytes_per_cycle_sm); 4];
        let mut t = 0.0;
        loads
            .iter()
            .map(|&(dt, key, kib, sm)| {
                t += dt as f64;
                let bytes = 1024 * (1 + kib as u64 % 64);
                m.load(t, Some(key as u64 % 16), bytes, &mut ports[sm as usize % 4], None)
                    .at
            })
            .collect()
    }

    proptest! {
        /// An L2 hit is never dearer than the HBM traffic it saves: with any set of boxes
        /// already in L2, no load of any stream completes later than with a cold L2. (The L2
        /// and port queues see the same requests either way; a warm box drops its HBM transfer,
        /// which can only shorten the HBM queue the remaining misses wait in.)
        #[test]
        fn warming_the_l2_never_delays_a_load(
            loads in prop::collection::vec((0u8..40, 0u8..16, 0u8..64, 0u8..4), 1..60),
            warm in prop::collection::vec(0u8..16, 0..16),
        ) {
            let cold = replay(&loads, &[]);
            let warmed = replay(&loads, &warm);
            for (i, (c, w)) in cold.iter().zip(&warmed).enumerate() {
                prop_assert!(w <= c, "load {i}: {w} warm vs {c} cold");
            }
        }
    }
}
