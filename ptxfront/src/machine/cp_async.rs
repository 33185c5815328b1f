//! The machine's non-bulk `cp.async`: copies of 4, 8 or 16 bytes from global to shared memory
//! issued by each thread, their commit groups and waits, and `cp.async.mbarrier.arrive`, run
//! as the tile machine runs `async_copy.*` (docs/semantics.md, "The PTX front end" and
//! "cp.async arrivals"), with the checker's hooks for them
//! ([`bwsim_sim::check::hazards::CtaHb::cp_async_land`], `cp_async_wait`, and
//! [`Actor::CpArrive`]).
//!
//! - A copy reads global memory when it is issued (its `src-size` bytes, none with
//!   `ignore-src`; the rest of its bytes are zeros) and lands in shared memory after a latency
//!   the scheduler draws ([`AsyncKind::CpAsync`]): the landing is a generic-proxy write by the
//!   warp's `cp.async` component, at the component time of the copy's group, with what the
//!   warp knew at the issue. The lanes of a warp that issue one instruction together land
//!   together, as one operation.
//! - Groups are kept per warp (Triton's threads commit and wait together):
//!   `cp.async.commit_group` closes the open group, `cp.async.wait_group N` waits until the
//!   groups but the N most recent are complete and then knows their writes; `cp.async.wait_all`
//!   is a commit and `wait_group 0` (PTX ISA).
//! - `cp.async.mbarrier.arrive` makes one arrival per executing thread once every copy the warp
//!   issued before it has landed, releasing the writes of those copies and nothing else of the
//!   warp; without `.noinc` the barrier's pending count is first raised by the same number,
//!   at once.

use super::{Machine, Work};
use crate::parse::Space;
use crate::program::{CpOp, Val};
use crate::Error;
use bwsim_sim::check::hazards::{Actor, SMEM_GRANULE};
use bwsim_sim::sched::AsyncKind;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One warp's `cp.async` state (the tile machine keeps the same per partition).
#[derive(Default)]
pub(super) struct CpWarp {
    /// Committed groups so far; the open group is `committed + 1`.
    committed: u64,
    /// The checker's time for the warp's copies: raised by each commit and arrival, so that an
    /// arrival releases the copies issued before it and no later one.
    splits: u32,
    /// The checker time of each committed group's last copies.
    group_end: Vec<u32>,
    /// Copies in flight by group.
    pending: BTreeMap<u64, u32>,
    /// Copy sequence numbers: the next one, and those in flight.
    seq: u64,
    inflight: BTreeSet<u64>,
    /// Arrivals waiting for the copies issued before them, in issue order.
    arrives: VecDeque<Arrive>,
}

/// A `cp.async.mbarrier.arrive` waiting for the copies issued before it.
struct Arrive {
    /// The copies with a smaller sequence number are the ones it waits for.
    before: u64,
    bar: u32,
    /// Arrivals (one per executing thread).
    count: u32,
    /// The checker's async op of the arrival, and the component time it releases.
    op: u32,
    upto: u32,
    pc: usize,
}

/// A warp's copies of one instruction, landing.
pub(super) struct Landing {
    op: u32,
    warp: usize,
    group: u64,
    time: u32,
    seq: u64,
    /// The bytes of each copy, at its shared address.
    writes: Vec<(u32, Vec<u8>)>,
    bytes: u32,
}

impl CpWarp {
    /// Whether `wait_group n` (`Some`) or `wait_all` (`None`) can pass: the groups it waits
    /// for have no copy in flight.
    fn done(&self, n: Option<u64>) -> bool {
        match n {
            Some(n) => self
                .pending
                .range(..=self.committed.saturating_sub(n))
                .next()
                .is_none(),
            None => self.pending.is_empty(),
        }
    }

    /// The first waiting arrival, taken out, if every copy issued before it has landed (a
    /// later arrival waits for at least the copies an earlier one does).
    fn ready_arrival(&mut self) -> Option<Arrive> {
        let before = self.arrives.front()?.before;
        if self.inflight.range(..before).next().is_some() {
            return None;
        }
        self.arrives.pop_front()
    }

    /// Closes the open group.
    fn commit(&mut self) {
        self.committed += 1;
        self.splits += 1;
        self.group_end.push(self.splits);
    }
}

impl Machine<'_, '_> {
    /// Whether warp `w` can run `op` now (a wait whose groups are in flight cannot).
    pub(super) fn cp_ready(&self, w: usize, op: &CpOp) -> bool {
        match op {
            CpOp::Wait(n) => self.cp[w].done(*n),
            _ => true,
        }
    }

    /// Runs `op` at `pc` for the lanes `group` of warp `w`; returns whether they move past it.
    pub(super) fn cp_async(
        &mut self,
        w: usize,
        pc: usize,
        op: &CpOp,
        group: &[usize],
    ) -> Result<bool, Error> {
        match op {
            CpOp::Copy {
                dst,
                src,
                bytes,
                src_size,
                ignore,
            } => {
                let mut writes = Vec::with_capacity(group.len());
                for &t in group {
                    let d = self.shared_addr(t, dst, pc)?;
                    if d % bytes != 0 || (d + bytes) as usize > self.cta.shared.len() {
                        return Err(self.rt(
                            pc,
                            format!(
                                "a {bytes}-byte `cp.async` to shared byte {d}, misaligned or past the CTA's {}",
                                self.cta.shared.len()
                            ),
                        ));
                    }
                    let n = self.cp_src_bytes(t, *bytes, *src_size, *ignore, pc)?;
                    let mut data = vec![0u8; *bytes as usize];
                    if n > 0 {
                        let (sp, a) = self.cta.address(&self.th[t], Some(Space::Global), src, pc)?;
                        if !a.is_multiple_of(*bytes as u64) {
                            return Err(self.rt(
                                pc,
                                format!("a {bytes}-byte `cp.async` from the misaligned address {a:#x}"),
                            ));
                        }
                        if n == *bytes {
                            data.copy_from_slice(self.cta.bytes_at(sp, a, n, pc)?);
                        } else {
                            for (k, x) in data.iter_mut().take(n as usize).enumerate() {
                                *x = self.cta.bytes_at(sp, a + k as u64, 1, pc)?[0];
                            }
                        }
                    }
                    writes.push((d, data));
                }
                if writes.is_empty() {
                    return Ok(true);
                }
                let op = self.hb.as_mut().map_or(0, |hb| hb.issue(w, pc as u32));
                let cw = &mut self.cp[w];
                let g = cw.committed + 1;
                *cw.pending.entry(g).or_default() += 1;
                let (time, seq) = (cw.splits + 1, cw.seq);
                cw.seq += 1;
                cw.inflight.insert(seq);
                let landing = Landing {
                    op,
                    warp: w,
                    group: g,
                    time,
                    seq,
                    writes,
                    bytes: *bytes,
                };
                self.launch(AsyncKind::CpAsync, Work::Cp(landing));
            }
            CpOp::Commit => self.cp[w].commit(),
            CpOp::Wait(n) => {
                if !self.cp[w].done(*n) {
                    return Ok(false);
                }
                let cw = &mut self.cp[w];
                if n.is_none() {
                    cw.commit();
                }
                let upto = cw.committed.saturating_sub(n.unwrap_or(0));
                let time = upto.checked_sub(1).map_or(0, |g| cw.group_end[g as usize]);
                if let Some(hb) = &mut self.hb {
                    hb.cp_async_wait(w, time);
                }
            }
            CpOp::Arrive { bar, noinc } => {
                let Some(&t0) = group.first() else { return Ok(true) };
                let a = self.shared_addr(t0, bar, pc)?;
                for &t in group {
                    if self.shared_addr(t, bar, pc)? != a {
                        return Err(self.rt(
                            pc,
                            "the lanes of a warp name different mbarriers in `cp.async.mbarrier.arrive`"
                                .into(),
                        ));
                    }
                }
                let count = group.len() as u32;
                if !noinc {
                    let r = self.bar_mut(a, pc)?.increment(count);
                    r.map_err(|f| self.fault(pc, f))?;
                }
                let op = self.hb.as_mut().map_or(0, |hb| hb.issue(w, pc as u32));
                let cw = &mut self.cp[w];
                // The copies issued so far have the time `splits + 1`; later ones get a time of
                // their own, which this arrival does not release.
                cw.splits += 1;
                let arrive = Arrive {
                    before: cw.seq,
                    bar: a,
                    count,
                    op,
                    upto: cw.splits,
                    pc,
                };
                cw.arrives.push_back(arrive);
                self.cp_arrivals(w)?;
            }
        }
        Ok(true)
    }

    /// The bytes thread `t`'s copy reads from global memory: `src-size` (at most `bytes`), none
    /// with a true `ignore-src`, else `bytes`.
    fn cp_src_bytes(
        &self,
        t: usize,
        bytes: u32,
        src_size: Option<Val>,
        ignore: Option<(u16, bool)>,
        pc: usize,
    ) -> Result<u32, Error> {
        if let Some((p, neg)) = ignore {
            let on = self.value(t, Val::Reg(p), pc)? != 0;
            return Ok(if on != neg { 0 } else { bytes });
        }
        let Some(v) = src_size else { return Ok(bytes) };
        let n = self.value(t, v, pc)? as u32;
        if n > bytes {
            // PTX ISA: src-size larger than cp-size is undefined.
            return Err(self.rt(
                pc,
                format!("`cp.async` with src-size {n}, more than its cp-size {bytes}"),
            ));
        }
        Ok(n)
    }

    /// A warp's copies of one instruction land: the checker sees their writes, shared memory
    /// takes their bytes, and the arrivals that waited for them arrive.
    pub(super) fn land_cp(&mut self, l: Landing) -> Result<(), Error> {
        if let Some(hb) = &mut self.hb {
            let addrs: Vec<(u32, u32)> = l.writes.iter().map(|(a, _)| (*a, 0)).collect();
            if let Some(h) = hb.cp_async_land(l.op, l.warp as u32, l.time, &addrs, l.bytes * 8) {
                self.report(&h);
            }
        }
        for (a, data) in &l.writes {
            let a = *a as usize;
            self.cta.shared[a..a + data.len()].copy_from_slice(data);
            for g in a as u32 / SMEM_GRANULE..(a as u32 + l.bytes).div_ceil(SMEM_GRANULE) {
                self.last_store.remove(&g);
                self.tmem.slots.remove(&g);
            }
        }
        let cw = &mut self.cp[l.warp];
        if let Some(n) = cw.pending.get_mut(&l.group) {
            *n -= 1;
            if *n == 0 {
                cw.pending.remove(&l.group);
            }
        }
        cw.inflight.remove(&l.seq);
        self.cp_arrivals(l.warp)
    }

    /// The arrivals of warp `w` whose earlier copies have all landed, in issue order.
    fn cp_arrivals(&mut self, w: usize) -> Result<(), Error> {
        while let Some(arr) = self.cp[w].ready_arrival() {
            let r = self.bar_mut(arr.bar, arr.pc)?.arrive(arr.count);
            let flipped = r.map_err(|f| self.fault(arr.pc, f))?;
            if let Some(hb) = &mut self.hb {
                let who = Actor::CpArrive {
                    op: arr.op,
                    upto: arr.upto,
                };
                hb.bar_update(arr.bar, who, true, 0, flipped);
            }
        }
        Ok(())
    }
}
