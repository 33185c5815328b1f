//! A bandwidth server shared by processor sharing between its requests: the L2's bandwidth as
//! all SMs see it.
//!
//! A FIFO queue ([`super::memsys::Server`]) serves a burst of equal requests one after
//! another: the first is done after one service time, the last after all of them, and the
//! requesters come out of the burst spread apart. The H100's L2 does not behave that way under
//! a grid of identical CTAs. When every SM of a wave asks for its next K step's tiles at once
//! (a two-buffer pipeline, whose load of step k + 1 can only start once the wgmma of step k
//! is nearly issued), each SM's load takes the whole burst's time and the SMs come out of it
//! together, so the next burst is as large: measured on the project's H100
//! (docs/hardware/h100-calibration.md, `nb2-l2.jsonl`), a 128 x 256 x 128 two-buffer step
//! takes 3736 cycles for one CTA alone and 4701 for each of 132 CTAs in one wave, with data
//! from HBM in both. Under FIFO the model's SMs spread apart after the first burst, their
//! loads interleave with the others' wgmmas and the L2 stays busy: the model then predicted
//! those rows 31-37 % fast.
//!
//! Every request in flight gets an equal share of the bandwidth. With equal shares all
//! requests in flight have been served the same amount since the later one arrived, so one
//! number, the *virtual service* `v` (cycles of full-rate service each request in flight has
//! received), advances at `1 / n` per cycle while `n` requests are in flight, and a request of
//! `d` cycles arriving when it is `v0` is done when `v` reaches `v0 + d` (its *finish*). A
//! request's completion is predicted assuming nothing else arrives (the processor-sharing
//! identity: a request needing `x` more is done after the sum over requests in flight of
//! `min(left, x)`); later arrivals only delay it, so a prediction is a lower bound that the
//! engine re-checks when it comes due ([`SharedServer::done`]), as it does for the tensor pipe
//! ([`super::pipe`]).

use std::collections::BTreeMap;

/// Work below this (cycles) counts as done.
const EPS: f64 = 1e-6;

/// A request in a [`SharedServer`]: its finish in virtual service, and a sequence number that
/// tells equal finishes apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    pub finish: f64,
    seq: u64,
}

/// The ordering key of a job: finishes are non-negative, so their IEEE bits order like the
/// values.
fn key(j: Job) -> (u64, u64) {
    (j.finish.to_bits(), j.seq)
}

/// A processor-sharing bandwidth server (see the module doc). Times and service are in cycles.
#[derive(Clone, Debug, Default)]
pub struct SharedServer {
    /// The time `v` is up to.
    last: f64,
    /// Virtual service: what every request in flight since `last`'s busy period has received.
    v: f64,
    /// Requests in flight, by finish.
    jobs: BTreeMap<(u64, u64), ()>,
    /// The sum of their finishes (so the work left in flight is `sum - n v` without a walk).
    sum: f64,
    seq: u64,
    /// Total service handed out (cycles), for utilisation.
    pub busy: f64,
}

impl SharedServer {
    /// Serve the requests in flight up to time `t` (a `t` already passed is a no-op: the
    /// engine's look-ahead may present a request slightly out of time order, which then counts
    /// as arriving at `last`).
    pub fn advance(&mut self, t: f64) {
        while t > self.last {
            let n = self.jobs.len();
            let Some((&(bits, _), _)) = self.jobs.first_key_value() else {
                self.last = t;
                break;
            };
            let next = f64::from_bits(bits);
            // Reaching the next finish takes (next - v) of service for each of n requests.
            let need = (next - self.v).max(0.0) * n as f64;
            if self.last + need <= t {
                self.last += need;
                self.v = next;
                while let Some((&(b, _), _)) = self.jobs.first_key_value() {
                    if f64::from_bits(b) <= self.v + EPS {
                        self.jobs.pop_first();
                        self.sum -= f64::from_bits(b);
                    } else {
                        break;
                    }
                }
                if self.jobs.is_empty() {
                    self.sum = 0.0;
                }
            } else {
                self.v += (t - self.last) / n as f64;
                self.last = t;
            }
        }
    }

    /// A request of `dur` cycles of full-rate service arriving at `t`.
    pub fn request(&mut self, t: f64, dur: f64) -> Job {
        self.advance(t);
        self.busy += dur;
        self.seq += 1;
        let job = Job {
            finish: self.v + dur.max(0.0),
            seq: self.seq,
        };
        if dur > EPS {
            self.jobs.insert(key(job), ());
            self.sum += job.finish;
        }
        job
    }

    /// Whether `job` has been served (as of the last [`SharedServer::advance`]).
    pub fn done(&self, job: Job) -> bool {
        job.finish <= self.v + EPS || !self.jobs.contains_key(&key(job))
    }

    /// When `job` will be done if nothing else arrives.
    pub fn when_done(&self, job: Job) -> f64 {
        if self.done(job) {
            return self.last;
        }
        let x = job.finish - self.v;
        let n = self.jobs.len();
        let top = self
            .jobs
            .last_key_value()
            .map_or(job.finish, |(&(b, _), _)| f64::from_bits(b));
        if job.finish >= (self.v + top) / 2.0 {
            // Near the top (a new request usually is): all the work in flight, less what the
            // requests finishing after this one still need beyond x.
            let all = (self.sum - n as f64 * self.v).max(0.0);
            let above: f64 = self
                .jobs
                .range(key(job)..)
                .skip(1)
                .map(|(&(b, _), _)| f64::from_bits(b) - job.finish)
                .sum();
            self.last + (all - above).max(x)
        } else {
            let mut t = self.last;
            let mut below = 0usize;
            for (&(bits, _), _) in self.jobs.range(..key(job)) {
                t += f64::from_bits(bits) - self.v;
                below += 1;
            }
            t + (n - below) as f64 * x
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.jobs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_request_runs_at_full_rate() {
        let mut s = SharedServer::default();
        let a = s.request(10.0, 100.0);
        assert_eq!(s.when_done(a), 110.0);
        s.advance(109.0);
        assert!(!s.done(a));
        s.advance(110.0);
        assert!(s.done(a));
        // After an idle gap the next request starts at once.
        let b = s.request(500.0, 50.0);
        assert_eq!(s.when_done(b), 550.0);
    }

    #[test]
    fn a_burst_finishes_together() {
        // Four requests of 100 cycles at t = 0: each is served at a quarter of the rate and
        // all four are done at 400 (a FIFO queue: 100, 200, 300, 400).
        let mut s = SharedServer::default();
        let jobs: Vec<Job> = (0..4).map(|_| s.request(0.0, 100.0)).collect();
        for &j in &jobs {
            assert_eq!(s.when_done(j), 400.0);
        }
        s.advance(399.0);
        assert!(jobs.iter().all(|&j| !s.done(j)));
        s.advance(400.0);
        assert!(jobs.iter().all(|&j| s.done(j)));
        assert_eq!(s.busy, 400.0);
        assert_eq!(s.in_flight(), 0);
    }

    #[test]
    fn a_later_arrival_delays_an_earlier_one() {
        // A: 100 at t = 0. B: 100 at t = 50, when A has 50 left: both at half rate, A done at
        // 150, then B's last 50 alone: 200. A's first prediction (100) was a lower bound.
        let mut s = SharedServer::default();
        let a = s.request(0.0, 100.0);
        assert_eq!(s.when_done(a), 100.0);
        let b = s.request(50.0, 100.0);
        assert_eq!(s.when_done(a), 150.0);
        assert_eq!(s.when_done(b), 200.0);
        s.advance(150.0);
        assert!(s.done(a) && !s.done(b));
        s.advance(200.0);
        assert!(s.done(b));
    }

    #[test]
    fn a_small_request_passes_a_large_one() {
        // A: 300 at 0; B: 20 at 0. B is done at 40 (two in flight), A at 320.
        let mut s = SharedServer::default();
        let a = s.request(0.0, 300.0);
        let b = s.request(0.0, 20.0);
        assert_eq!(s.when_done(b), 40.0);
        assert_eq!(s.when_done(a), 320.0);
        // Three in flight: 100, 250 and 300 at t = 0. The 250 is done when each has had 250 or
        // finished: 100 + 250 + 250 = 600 (the same sum, walked from either end).
        let mut m = SharedServer::default();
        let small = m.request(0.0, 100.0);
        let mid = m.request(0.0, 250.0);
        let big = m.request(0.0, 300.0);
        assert_eq!(m.when_done(small), 300.0);
        assert_eq!(m.when_done(mid), 600.0);
        assert_eq!(m.when_done(big), 650.0);
        // Out-of-order arrival (look-ahead) counts as arriving at the time reached.
        s.advance(40.0);
        let c = s.request(30.0, 10.0);
        assert_eq!(s.when_done(c), 60.0);
    }
}
