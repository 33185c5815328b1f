//! The tcgen05 tensor pipe of one SM, shared between the SM's CTAs by processor sharing.
//!
//! A `tcgen05.mma` of M x N x K is a sequence of K/16 (f16) hardware instructions, and the
//! tensor core arbitrates between the CTAs that have MMAs in flight instruction by
//! instruction. So when two CTAs each have an MMA in the pipe, both progress at half the rate
//! and both finish late; an MMA does not wait whole behind another CTA's and then run alone
//! (the FIFO a [`super::memsys::Server`] models). The difference matters for kernels whose
//! single issuing thread waits for every MMA (Gluon tutorial 06-tcgen05): under FIFO the CTAs
//! settle into taking turns and a second CTA fills the first's round trips with its own MMAs;
//! under sharing, MMAs issued together finish together, the CTAs' round trips coincide, and a
//! second CTA per SM gains little. The published GB200 figures show the latter (a second CTA at
//! BLOCK_K = 64 gives the throughput of one CTA at BLOCK_K = 128: 757 against 773-801 TFLOP/s;
//! docs/hardware/blackwell-calibration.md).
//!
//! Each CTA is a *stream*: its MMAs run in issue order (the pipe is in order within a CTA), so
//! a stream is described by the work it has been given and the work done, both in cycles of
//! full-rate service. While `n` streams have work left, each is served at `1/n`. A commit
//! completes when its stream has been served all the work issued before it:
//! [`SharedPipe::when_served`] predicts that time assuming nothing else arrives, and since
//! arrivals only ever delay the others, a prediction is a lower bound the engine re-checks when
//! it comes due.
//!
//! Hopper's wgmma keeps the FIFO server (measured on the H100 as it is; its warpgroups wait
//! for their own instructions).

/// Work below this (cycles) counts as done.
const EPS: f64 = 1e-6;

#[derive(Clone, Debug)]
struct Stream {
    cta: u32,
    /// Cycles of full-rate service issued, and served, since the stream began.
    issued: f64,
    served: f64,
    /// The CTA is still resident (a retired CTA's stream is dropped once drained).
    live: bool,
}

impl Stream {
    fn left(&self) -> f64 {
        (self.issued - self.served).max(0.0)
    }
}

/// One SM's tcgen05 pipe (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct SharedPipe {
    /// The time the streams' `served` counters are up to.
    last: f64,
    streams: Vec<Stream>,
    /// Total service handed out (cycles), for utilisation.
    pub busy: f64,
}

impl SharedPipe {
    fn stream(&mut self, cta: u32) -> &mut Stream {
        let i = match self.streams.iter().position(|s| s.cta == cta) {
            Some(i) => i,
            None => {
                self.streams.push(Stream {
                    cta,
                    issued: 0.0,
                    served: 0.0,
                    live: true,
                });
                self.streams.len() - 1
            }
        };
        &mut self.streams[i]
    }

    /// Serve the streams up to time `t` (no-op for a `t` already passed: the engine's
    /// look-ahead may present an issue slightly out of time order, which is then counted as
    /// arriving at `last`).
    pub fn advance(&mut self, t: f64) {
        while t > self.last {
            let n = self.streams.iter().filter(|s| s.left() > EPS).count();
            if n == 0 {
                self.last = t;
                break;
            }
            let min = self
                .streams
                .iter()
                .map(Stream::left)
                .filter(|&l| l > EPS)
                .fold(f64::INFINITY, f64::min);
            // Each of the n streams gets (t - last) / n of service, or until the smallest
            // runs dry.
            let step = min.min((t - self.last) / n as f64);
            for s in self.streams.iter_mut().filter(|s| s.left() > EPS) {
                s.served = (s.served + step).min(s.issued);
            }
            self.last += step * n as f64;
            if step < min {
                self.last = t;
            }
        }
        self.streams.retain(|s| s.live || s.left() > EPS);
    }

    /// CTA `cta` issues `dur` cycles of full-rate work at `t`; returns the stream's issued
    /// total, the target a commit issued now waits for.
    pub fn issue(&mut self, t: f64, cta: u32, dur: f64) -> f64 {
        self.advance(t);
        self.busy += dur;
        let s = self.stream(cta);
        s.issued += dur;
        s.issued
    }

    /// The stream's issued total (what a commit issued now covers).
    pub fn issued(&mut self, cta: u32) -> f64 {
        self.stream(cta).issued
    }

    /// Whether `cta` has been served up to `target`.
    pub fn done(&self, cta: u32, target: f64) -> bool {
        match self.streams.iter().find(|s| s.cta == cta) {
            Some(s) => s.served >= target - EPS,
            None => true,
        }
    }

    /// When `cta` will have been served up to `target` if no more work arrives: each stream
    /// with work left gets an equal share until it runs dry, so the stream needing `x` more
    /// is done after `sum over streams of min(left, x)` (the processor-sharing identity).
    pub fn when_served(&self, cta: u32, target: f64) -> f64 {
        let Some(me) = self.streams.iter().find(|s| s.cta == cta) else {
            return self.last;
        };
        let x = target - me.served;
        if x <= EPS {
            return self.last;
        }
        self.last + self.streams.iter().map(|s| s.left().min(x)).sum::<f64>()
    }

    /// The CTA has retired: its stream goes once drained.
    pub fn retire(&mut self, cta: u32) {
        if let Some(s) = self.streams.iter_mut().find(|s| s.cta == cta) {
            s.live = false;
        }
        self.streams.retain(|s| s.live || s.left() > EPS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issues `dur` cycles of CTA `cta` at `t` and checks that they are predicted served at
    /// `served`: their target.
    fn issue_served(p: &mut SharedPipe, t: f64, cta: u32, dur: f64, served: f64) -> f64 {
        let target = p.issue(t, cta, dur);
        assert_eq!(
            p.when_served(cta, target),
            served,
            "{dur} of CTA {cta} issued at {t}"
        );
        target
    }

    #[test]
    fn one_stream_runs_at_full_rate() {
        let mut p = SharedPipe::default();
        let target = issue_served(&mut p, 10.0, 0, 256.0, 266.0);
        // In order within the CTA: a second MMA issued at 20 ends 256 after the first.
        issue_served(&mut p, 20.0, 0, 256.0, 522.0);
        assert_eq!(p.when_served(0, target), 266.0);
    }

    #[test]
    fn two_streams_issued_together_finish_together() {
        // Two CTAs issue 256 cycles each at t = 0: both are served at half rate and both
        // finish at 512 (FIFO would give 256 and 512).
        let mut p = SharedPipe::default();
        let a = p.issue(0.0, 0, 256.0);
        let b = p.issue(0.0, 1, 256.0);
        assert_eq!(p.when_served(0, a), 512.0);
        assert_eq!(p.when_served(1, b), 512.0);
        p.advance(512.0);
        assert!(p.done(0, a) && p.done(1, b));
    }

    #[test]
    fn a_later_arrival_delays_the_first() {
        // CTA 0: 256 at t = 0. CTA 1: 256 at t = 128, when CTA 0 has 128 left. From then on
        // both run at half rate: CTA 0's 128 take 256 (done at 384), then CTA 1 has 128 left
        // alone (done at 512).
        let mut p = SharedPipe::default();
        let a = issue_served(&mut p, 0.0, 0, 256.0, 256.0);
        let b = p.issue(128.0, 1, 256.0);
        assert_eq!(p.when_served(0, a), 384.0);
        assert_eq!(p.when_served(1, b), 512.0);
        p.advance(384.0);
        assert!(p.done(0, a));
        assert!(!p.done(1, b));
        p.advance(512.0);
        assert!(p.done(1, b));
        assert_eq!(p.busy, 512.0);
    }

    #[test]
    fn a_commit_covers_only_earlier_work() {
        // CTA 0 commits after its first MMA (target 100) and issues a second: the commit is
        // due at 100, while CTA 1 shares the pipe from t = 0: 200 (both at half rate).
        let mut p = SharedPipe::default();
        p.issue(0.0, 1, 1000.0);
        let first = p.issue(0.0, 0, 100.0);
        p.issue(0.0, 0, 100.0);
        assert_eq!(p.when_served(0, first), 200.0);
    }

    #[test]
    fn retired_streams_are_dropped_when_drained() {
        let mut p = SharedPipe::default();
        p.issue(0.0, 3, 10.0);
        p.retire(3);
        assert_eq!(p.streams.len(), 1);
        p.advance(20.0);
        assert!(p.streams.is_empty());
    }
}
