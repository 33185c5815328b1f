//! The machine's `wgmma` (Hopper's warpgroup MMA), run as the tile machine runs `wgmma`
//! (docs/semantics.md, "wgmma" and "The PTX front end"), with the checker's hooks for it
//! ([`bwsim_sim::check::hazards::CtaHb::wgmma`], `wgmma_wait`).
//!
//! - `wgmma.mma_async.sync.aligned.m64nNkK` is executed by the four warps of a warpgroup; each
//!   warp's part is its 16 rows of the M = 64 accumulator (warp `w` rows `16 (w % 4)` up), which
//!   need only its own 16 rows of A (its fragment registers, or the rows of the A descriptor),
//!   all of B, and its own accumulator registers. So each warp runs its part when it issues the
//!   instruction, with every lane there (`.aligned`): the operands' shared-memory matrix
//!   descriptors decoded as `tcgen05`'s ([`Desc`]; the layout in bits 62-63: 1 128-byte, 2
//!   64-byte, 3 32-byte swizzle; docs/hardware/mma-descriptors.md), the product computed by the
//!   simulator's MMA arithmetic ([`bwsim_sim::mma::mma_bits`], the wgmma numerics), and the
//!   result written to the accumulator registers in the PTX ISA's fragment layout (for a 32-bit
//!   accumulator, lane `l` holds of each 8-column block `j` registers `4j`, `4j+1` at row
//!   `l / 4`, columns `8j + 2 (l % 4)` and the next, and `4j+2`, `4j+3` eight rows lower; an
//!   f16 accumulator packs the same pairs into registers `2j`, `2j+1`).
//! - The checker sees the operand reads as the warp's wgmma unit's async-proxy reads at the
//!   issue; each MMA completes after a drawn latency, in issue order. `wgmma.commit_group`
//!   closes the warp's open group; `wgmma.wait_group N` waits until all but the N most recent
//!   groups have completed and then knows their reads. `wgmma.fence` orders register accesses,
//!   which the checker does not track: no effect.

use super::tcgen05::Desc;
use super::{Machine, Work};
use crate::program::{Val, WgA, WgMma, WgOp};
use crate::Error;
use bwsim_isa::types::DType;
use bwsim_sim::sched::AsyncKind;

/// One warp's wgmma groups.
#[derive(Default)]
pub(super) struct WgWarp {
    /// MMAs issued, and completed (they complete in issue order).
    issued: u32,
    done: u32,
    /// When the last issued MMA completes.
    last_due: u64,
    /// The MMAs issued by each commit.
    group_end: Vec<u32>,
}

impl WgWarp {
    /// Whether `wait_group n` can pass.
    fn done(&self, n: u64) -> bool {
        let c = self.group_end.len() as u64;
        c <= n || self.done >= self.group_end[(c - n - 1) as usize]
    }
}

/// Decodes a wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format" of
/// wgmma): start address, LBO and SBO (each >> 4), the base offset (bits 49-51, refused unless
/// 0) and the layout (bits 62-63).
pub fn wgmma_desc(d: u64) -> Result<Desc, String> {
    let f = |lo: u32, bits: u32| ((d >> lo) & ((1 << bits) - 1)) as u32;
    let swizzle = [0, 128, 64, 32][f(62, 2) as usize];
    if f(49, 3) != 0 {
        return Err("matrix descriptors with a base offset are not modelled".into());
    }
    Ok(Desc {
        start: f(0, 14) << 4,
        lbo: f(16, 14) << 4,
        sbo: f(32, 14) << 4,
        base_offset: 0,
        swizzle,
    })
}

impl Machine<'_, '_> {
    /// Whether warp `w` can run `op` now (a wait whose groups are in flight cannot).
    pub(super) fn wg_ready(&self, w: usize, op: &WgOp) -> bool {
        match op {
            WgOp::Wait(n) => self.wg[w].done(*n),
            _ => true,
        }
    }

    /// Runs `op` at `pc` for the lanes `group` of warp `w`; returns whether they move past it.
    pub(super) fn wgmma(&mut self, w: usize, pc: usize, op: &WgOp, group: &[usize]) -> Result<bool, Error> {
        match op {
            WgOp::Fence => {}
            WgOp::Commit => {
                let g = &mut self.wg[w];
                g.group_end.push(g.issued);
            }
            WgOp::Wait(n) => {
                if !self.wg[w].done(*n) {
                    return Ok(false);
                }
                let retired = self.wg[w].done;
                if let Some(hb) = &mut self.hb {
                    hb.wgmma_wait(w, retired);
                }
            }
            WgOp::Mma(mma) => {
                if group.len() != 32 {
                    return Err(self.rt(pc, "`wgmma.mma_async` needs every lane of the warp".into()));
                }
                self.wg_mma(w, pc, mma, group)?;
                let due =
                    (self.now + self.sched.latency(AsyncKind::Wgmma).max(1)).max(self.wg[w].last_due + 1);
                let tie = self.sched.tiebreak();
                let g = &mut self.wg[w];
                g.issued += 1;
                g.last_due = due;
                self.flights.push(super::Flight {
                    due,
                    tie,
                    work: Work::Wg { warp: w },
                });
            }
        }
        Ok(true)
    }

    /// An MMA of warp `w` completes.
    pub(super) fn land_wg(&mut self, w: usize) {
        self.wg[w].done += 1;
    }

    /// The shared bytes of rows `rows` (along M or N) of operand `x` (0 A, 1 B) of `mma`,
    /// which the descriptor `desc` (its bits) names, row by row.
    fn wg_operand(
        &self,
        mma: &WgMma,
        x: usize,
        desc: u64,
        rows: std::ops::Range<u32>,
        pc: usize,
    ) -> Result<Vec<u32>, Error> {
        let i = &self.cta.p.ins[pc];
        let d = wgmma_desc(desc).map_err(|why| Error::Unsupported {
            opcode: "wgmma.mma_async".into(),
            line: i.ptx_line,
            span: i.span,
            why,
        })?;
        let eb = mma.ab_type.bits() / 8;
        d.addresses(rows, mma.k, eb, mma.trans[x], self.cta.shared.len() as u32)
            .map_err(|e| self.operand_error(e, pc, "wgmma.mma_async", "a wgmma operand"))
    }

    /// Warp `w`'s part of `mma`: its 16 rows, computed and written to its lanes' registers.
    fn wg_mma(&mut self, w: usize, pc: usize, mma: &WgMma, group: &[usize]) -> Result<(), Error> {
        let (n, k) = (mma.n, mma.k);
        let eb = mma.ab_type.bits() / 8;
        let t0 = group[0];
        let row0 = 16 * (w as u32 % 4);
        let b_addrs = self.wg_operand(mma, 1, self.value(t0, mma.b, pc)?, 0..n, pc)?;
        let read = |m: &Self, v: &[u32]| -> Vec<u64> {
            v.iter()
                .map(|&x| {
                    let x = x as usize;
                    let mut b = [0u8; 8];
                    b[..eb as usize].copy_from_slice(&m.cta.shared[x..x + eb as usize]);
                    u64::from_le_bytes(b)
                })
                .collect()
        };
        // A: 16 rows of k elements, row-major.
        let (a_bits, a_addrs) = match &mma.a {
            WgA::Desc(d) => {
                let desc = self.value(t0, *d, pc)?;
                let addrs = self.wg_operand(mma, 0, desc, row0..row0 + 16, pc)?;
                (read(self, &addrs), Some(addrs))
            }
            WgA::Regs(regs) => {
                let mut a = vec![0u64; (16 * k) as usize];
                let per = 4 / eb; // elements per register
                let mask = (1u64 << (8 * eb)) - 1;
                for (l, &t) in group.iter().enumerate() {
                    let (g, c) = (l as u32 / 4, l as u32 % 4);
                    for (i, &r) in regs.iter().enumerate() {
                        let v = self.value(t, Val::Reg(r), pc)?;
                        let i = i as u32;
                        let row = g + 8 * (i % 2);
                        for e in 0..per {
                            let col = per * c + e + 4 * per * (i / 2);
                            a[(row * k + col) as usize] = (v >> (8 * eb * e)) & mask;
                        }
                    }
                }
                (a, None)
            }
        };
        if let Some(hb) = &mut self.hb {
            let bits = eb * 8;
            let list = |v: &[u32]| v.iter().map(|&x| (x, 0)).collect::<Vec<_>>();
            let b_list = list(&b_addrs);
            let a_list = a_addrs.as_deref().map(list);
            let mut reads: Vec<(&[(u32, u32)], u32)> = Vec::new();
            if let Some(a) = &a_list {
                reads.push((a, bits));
            }
            reads.push((&b_list, bits));
            if let Some(h) = hb.wgmma(w, pc as u32, &reads) {
                self.report(&h);
            }
        }
        // B as N columns of k elements.
        let b_bits = read(self, &b_addrs);
        let use_acc = self.value(t0, mma.scale_d, pc)? & 1 != 0;
        let f16 = mma.d_type == DType::F16;
        // The accumulator, 16 x n row-major, from (and back to) the lanes' fragments.
        let place = |l: u32, i: u32| -> [(u32, u32, u32); 2] {
            let (g, c) = (l / 4, l % 4);
            if f16 {
                let (j, h) = (i / 2, i % 2);
                [(g + 8 * h, 8 * j + 2 * c, 0), (g + 8 * h, 8 * j + 2 * c + 1, 16)]
            } else {
                let (j, q) = (i / 4, i % 4);
                [(g + 8 * (q / 2), 8 * j + 2 * c + q % 2, 0), (u32::MAX, 0, 0)]
            }
        };
        let mut olds = vec![0u64; (16 * n) as usize];
        if use_acc {
            for (l, &t) in group.iter().enumerate() {
                for (i, &r) in mma.d.iter().enumerate() {
                    let v = self.value(t, Val::Reg(r), pc)?;
                    for (row, col, sh) in place(l as u32, i as u32) {
                        if row != u32::MAX {
                            let bits = if f16 { (v >> sh) & 0xffff } else { v & 0xffff_ffff };
                            olds[(row * n + col) as usize] = bits;
                        }
                    }
                }
            }
        }
        let out = bwsim_sim::mma::mma_bits(
            &a_bits,
            &b_bits,
            [16, n as usize, k as usize],
            mma.ab_type,
            mma.d_type,
            &olds,
            use_acc,
            mma.negate,
            &self.wg_arith,
        );
        for (l, &t) in group.iter().enumerate() {
            for (i, &r) in mma.d.iter().enumerate() {
                let mut v = 0u64;
                for (row, col, sh) in place(l as u32, i as u32) {
                    if row != u32::MAX {
                        v |= out[(row * n + col) as usize] << sh;
                    }
                }
                self.cta.write(&mut self.th[t], r, v);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_decode_as_triton_writes_them() {
        // docs/hardware/mma-descriptors.md, sm_90a: A K-major at 0x4000, LBO 0, SBO 1024,
        // layout 1 (128-byte swizzle); B MN-major, LBO 8192.
        let a = (0x4000u64 >> 4) | (1024 >> 4) << 32 | 1 << 62;
        let d = wgmma_desc(a).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((d.start, d.lbo, d.sbo, d.swizzle), (0x4000, 0, 1024, 128));
        let b = (8192u64 >> 4) << 16 | (1024 >> 4) << 32 | 3 << 62;
        let d = wgmma_desc(b).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((d.lbo, d.sbo, d.swizzle), (8192, 1024, 32));
        assert_eq!(wgmma_desc(2 << 62).map(|d| d.swizzle), Ok(64));
        // A base offset is refused.
        assert!(wgmma_desc(1 << 49 | 1 << 62).is_err());
    }
}
