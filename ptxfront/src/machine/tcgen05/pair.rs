//! CTA pairs (`.cta_group::2`) on the machine's tensor core, as the tile machine runs
//! `cta_group=2` (docs/semantics.md, "Clusters and CTA pairs" and "The PTX front end"):
//!
//! - The pair of the CTA of cluster rank `r` is ranks `r & !1` and `r | 1`; a `.cta_group::2`
//!   instruction in a cluster of an odd size stops the run.
//! - `tcgen05.alloc.cta_group::2`: one warp of each CTA of the pair allocates, and the pair
//!   gets the same columns in both tensor memories: the first of the two takes the lowest run
//!   free in both, the second the run the first took. `dealloc` and `relinquish_alloc_permit`
//!   act on each CTA's own tensor memory, as their `.cta_group::1` forms do.
//! - `tcgen05.mma.cta_group::2` of M = 256, issued by the pair's even CTA (the leader): each
//!   CTA holds A's rows `[128, K]` and its half of B `[N / 2, K]` at the descriptors' shared
//!   addresses, and its accumulator rows `[128, N]` at the same tensor-memory address;
//!   `D_r = A_r · [B_0 | B_1] (+ D_r)` (PTX ISA, tcgen05 "Issue Granularity"). The MMA runs on
//!   the leader's pipe, in issue order; the odd CTA's halves are read and written there by the
//!   leader's pipe as its agent in the odd CTA's checker ([`CtaHb::peer_pipe_smem`],
//!   [`CtaHb::peer_pipe_tmem`]), ordered after what the issuing warp knew of the odd CTA.
//! - A commit of the leader's pipe publishes what the pipe ran in the odd CTA too
//!   ([`Machine::commit_multicast`]); `tcgen05.commit.cta_group::2` without a multicast mask
//!   arrives on the barrier its `.shared::cluster` address names, in either CTA of the pair.
//! - `cp.async.bulk.tensor.cta_group::2`: the barrier operand's peer bit (bit 24 of the
//!   cluster address) picks the pair's even or odd CTA, whose barrier receives the bytes; with
//!   `.multicast::cluster` applied in each destination's own pair.
//!
//! [`CtaHb::peer_pipe_smem`]: bwsim_sim::check::hazards::CtaHb::peer_pipe_smem
//! [`CtaHb::peer_pipe_tmem`]: bwsim_sim::check::hazards::CtaHb::peer_pipe_tmem

use super::{AIn, InstrDesc, MmaOperands, PipeWork, Tmem, COLUMNS};
use crate::machine::Machine;
use crate::program::{MemRef, MmaA, MmaKind};
use crate::Error;
use bwsim_sim::check::hb::{Hazard, Kind};
use std::collections::BTreeMap;

impl InstrDesc {
    /// Decodes `i` for a `.cta_group::2` MMA of `kind`: the front end runs M = 256 (128 rows
    /// in each CTA) with N a multiple of 16 up to 256.
    pub(super) fn decode_pair(i: u32, kind: MmaKind) -> Result<InstrDesc, String> {
        let desc = InstrDesc::fields(i, kind)?;
        if desc.m != 256 || desc.n == 0 || !desc.n.is_multiple_of(16) || desc.n > 256 {
            return Err(format!(
                "the pair shape M = {}, N = {} (the front end runs `cta_group::2` MMAs of M = 256 \
                 with N a multiple of 16 up to 256)",
                desc.m, desc.n
            ));
        }
        Ok(desc)
    }
}

/// A pair MMA on the leader's pipe: the leader's operands (A's first 128 rows and B's first
/// `N / 2`, the shared bytes and bit offsets of each element, the same in the odd CTA), the
/// accumulator's first lane and column in both CTAs, the odd CTA's rank and the leader's op in
/// the odd CTA's checker.
pub(in crate::machine) struct PairMma {
    desc: InstrDesc,
    k: u32,
    a: Vec<(u32, u32)>,
    b: Vec<(u32, u32)>,
    lane: u32,
    col: u32,
    use_acc: bool,
    peer: usize,
    peer_op: u32,
}

/// Who runs a pair MMA in the CTA the machine holds: the leader's pipe (its op), or, in the
/// odd CTA, the leader's pipe as its agent there (the leader's CTA id).
#[derive(Clone, Copy)]
enum Runner {
    Pipe(u32),
    Peer(u32),
}

/// Whether columns `col..col + n` overlap none of `allocs` (first column, count).
fn free_in(allocs: &BTreeMap<u32, u32>, col: u32, n: u32) -> bool {
    allocs.iter().all(|(&a, &k)| col + n <= a || a + k <= col)
}

impl Machine<'_, '_> {
    /// The rank of the pair peer of the CTA the machine holds (the instruction `op` at `pc`):
    /// the cluster holds whole pairs.
    fn pair_peer(&self, pc: usize, op: &str) -> Result<usize, Error> {
        let n = self.away.len();
        if !n.is_multiple_of(2) {
            return Err(self.rt(
                pc,
                format!(
                    "`{op}` with `.cta_group::2` in a cluster of {n} CTA(s): a CTA pair is ranks 2k \
                     and 2k + 1 of a cluster of an even size"
                ),
            ));
        }
        Ok(self.rank ^ 1)
    }

    /// The first column of a `tcgen05.alloc.cta_group::2` of `n` columns at `pc` by this CTA
    /// (`None`: no run is free): the run the pair peer allocated and this CTA has not yet,
    /// else the lowest run free in both CTAs (left for the peer to take).
    pub(super) fn pair_alloc(&mut self, n: u32, pc: usize) -> Result<Option<u32>, Error> {
        let (me, peer) = (self.rank, self.pair_peer(pc, "tcgen05.alloc")?);
        self.switch(peer);
        let open = &mut self.tmem.pair_open;
        let theirs = open.iter().position(|&(_, k)| k == n).map(|i| open.remove(i).0);
        let allocs = self.tmem.allocs.clone();
        self.switch(me);
        if let Some(col) = theirs {
            if !free_in(&self.tmem.allocs, col, n) {
                return Err(self.rt(
                    pc,
                    format!(
                        "the pair's `tcgen05.alloc` of columns {col}..{} (made by CTA rank {peer}) \
                         overlaps an allocation of this CTA",
                        col + n
                    ),
                ));
            }
            return Ok(Some(col));
        }
        let run = (0..COLUMNS / n)
            .map(|i| i * n)
            .find(|&c| free_in(&self.tmem.allocs, c, n) && free_in(&allocs, c, n));
        if let Some(c) = run {
            self.tmem.pair_open.push((c, n));
        }
        Ok(run)
    }

    /// Decodes thread `t`'s (warp `w`'s) `tcgen05.mma.cta_group::2` at `pc` and issues its
    /// part in the odd CTA: the leader's peer agent there steps with what the warp knew of it.
    pub(super) fn pair_mma_work(
        &mut self,
        w: usize,
        t: usize,
        pc: usize,
        kind: MmaKind,
        o: &MmaOperands<'_>,
    ) -> Result<PipeWork, Error> {
        let i = &self.cta.p.ins[pc];
        let refuse = |why: &str| Error::Unsupported {
            opcode: i.opcode.clone(),
            line: i.ptx_line,
            span: i.span,
            why: why.into(),
        };
        if o.scales.is_some() || matches!(o.a, MmaA::Tmem(_)) {
            return Err(refuse("pair MMAs with block scaling or A in tensor memory"));
        }
        if !self.rank.is_multiple_of(2) {
            return Err(refuse(
                "a pair MMA issued by the odd CTA of its pair (the front end runs the pair leader's, \
                 the even CTA's, as Triton and CUTLASS issue them)",
            ));
        }
        let peer = self.pair_peer(pc, "tcgen05.mma")?;
        let PipeWork::Mma {
            desc,
            k,
            a: AIn::Smem(a),
            b,
            lane,
            col,
            use_acc,
            ..
        } = self.mma_work(t, pc, (kind, true), o)?
        else {
            return Err(self.rt(pc, "internal: a pair MMA's A is not in shared memory".into()));
        };
        let sid = self.ids[self.rank];
        let (peer_op, allocated) = self.in_peer(w, peer, pc, |m| {
            let op = m.hb.as_mut().map_or(0, |hb| hb.peer_issue(sid, pc as u32));
            (op, m.tmem.allocated(col, desc.n))
        });
        if !allocated {
            return Err(self.rt(
                pc,
                format!(
                    "the pair's accumulator (columns {col}..{}) is not allocated tensor memory in \
                     the odd CTA, rank {peer}",
                    col + desc.n
                ),
            ));
        }
        Ok(PipeWork::Pair(PairMma {
            desc,
            k,
            a,
            b,
            lane,
            col,
            use_acc,
            peer,
            peer_op,
        }))
    }

    /// The barrier offset and CTA of a `tcgen05.commit.cta_group::2` of thread `t` at `pc`
    /// without a multicast mask: the `.shared::cluster` address `bar` names a barrier of
    /// either CTA of the pair.
    pub(super) fn pair_commit_target(
        &self,
        t: usize,
        bar: &MemRef,
        pc: usize,
    ) -> Result<(u32, Option<Vec<usize>>), Error> {
        let (r, off) = self.pair_barrier(t, bar, pc)?;
        Ok((off, Some(vec![r])))
    }

    /// The rank and offset of the barrier a `.cta_group::2` operation of thread `t` at `pc`
    /// names with the `.shared::cluster` address `bar`: a barrier of this CTA's pair.
    pub(in crate::machine) fn pair_barrier(
        &self,
        t: usize,
        bar: &MemRef,
        pc: usize,
    ) -> Result<(usize, u32), Error> {
        let op = self.cta.p.ins[pc].opcode.clone();
        let peer = self.pair_peer(pc, &op)?;
        let (r, off) = self.cluster_target(t, bar, 8, pc)?;
        if r != self.rank && r != peer {
            return Err(self.rt(
                pc,
                format!(
                    "the `.cta_group::2` barrier operand names CTA rank {r}, which is not in the pair \
                     of ranks {} and {}",
                    self.rank.min(peer),
                    self.rank.max(peer)
                ),
            ));
        }
        Ok((r, off as u32))
    }

    /// The pair leader's pipe runs the pair MMA `p` (the checker's op `op` in this CTA): each CTA's accumulator rows from its A rows and both CTAs' halves of B.
    pub(in crate::machine) fn land_pair_mma(&mut self, op: u32, p: PairMma) {
        let (m, n, k) = (p.desc.m / 2, p.desc.n, p.k);
        let cells: Vec<(u32, u32)> = (0..m)
            .flat_map(|i| (0..n).map(move |j| (p.lane + i, p.col + j)))
            .collect();
        let me = self.rank;
        let sid = self.ids[me];
        let (a0, b0, olds0) = self.pair_half(Runner::Pipe(op), &p, &cells);
        self.switch(p.peer);
        if let Some(hb) = &mut self.hb {
            hb.peer_pipe_exec(sid, me as u32, p.peer_op);
        }
        let (a1, b1, olds1) = self.pair_half(Runner::Peer(sid), &p, &cells);
        let b: Vec<u64> = b0.into_iter().chain(b1).collect();
        let d = p.desc;
        let [out0, out1] = [(&a0, &olds0), (&a1, &olds1)].map(|(a, olds)| {
            bwsim_sim::mma::mma_bits(
                a,
                &b,
                [m as usize, n as usize, k as usize],
                d.a,
                d.d,
                olds,
                p.use_acc,
                d.negate,
                &self.arith,
            )
        });
        self.store_cells(&cells, &out1);
        self.switch(me);
        self.store_cells(&cells, &out0);
    }

    /// The checker's view of a pair MMA's accesses in the CTA the machine holds, made by
    /// `runner` (A's and B's halves read, the accumulator's `cells` read with `use_acc`, then
    /// written), and the values it reads there: A's elements, B's, the accumulator's bits.
    fn pair_half(
        &mut self,
        runner: Runner,
        p: &PairMma,
        cells: &[(u32, u32)],
    ) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let bits = p.desc.a.bits();
        if let Some(hb) = &mut self.hb {
            let mut found: Vec<Hazard> = Vec::new();
            let smem = |hb: &mut bwsim_sim::check::hazards::CtaHb, v: &[(u32, u32)]| match runner {
                Runner::Pipe(op) => hb.pipe_smem(op, Kind::Read, v, bits),
                Runner::Peer(cta) => hb.peer_pipe_smem(cta, Kind::Read, v, bits),
            };
            found.extend(smem(hb, &p.a));
            found.extend(smem(hb, &p.b));
            let kinds: &[Kind] = if p.use_acc {
                &[Kind::Read, Kind::Write]
            } else {
                &[Kind::Write]
            };
            for &kind in kinds {
                found.extend(match runner {
                    Runner::Pipe(op) => hb.pipe_tmem(op, kind, cells),
                    Runner::Peer(cta) => hb.peer_pipe_tmem(cta, kind, cells),
                });
            }
            for h in found {
                self.report(&h);
            }
        }
        let olds = cells
            .iter()
            .map(|&(l, c)| self.tmem.cells[Tmem::cell(l, c)] as u64)
            .collect();
        (self.smem_elems(&p.a, bits), self.smem_elems(&p.b, bits), olds)
    }

    /// Writes the low 32 bits of `vals` into the tensor-memory `cells` of the CTA the machine
    /// holds.
    pub(super) fn store_cells(&mut self, cells: &[(u32, u32)], vals: &[u64]) {
        for (&(l, c), &v) in cells.iter().zip(vals) {
            self.tmem.cells[Tmem::cell(l, c)] = v as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_pair_instruction_descriptors() {
        // Triton 3.9's two_cta_matmul descriptor, 270598160 = 0x10210010: f32 D, f16 A and B,
        // B MN-major, N 128 (bits 17-22: 16), M 256 (bits 24-28: 16).
        let i = InstrDesc::decode_pair(0x1021_0010, MmaKind::F16).expect("decodes");
        assert_eq!((i.m, i.n, i.mn_major), (256, 128, [false, true]));
        // The pair's M = 128 (bits 24-28: 8) is not run; nor N = 8.
        assert!(InstrDesc::decode_pair(0x0821_0010, MmaKind::F16).is_err());
        assert!(InstrDesc::decode_pair(0x1002_0010, MmaKind::F16).is_err());
    }
}
