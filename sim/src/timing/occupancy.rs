//! Occupancy: what one CTA of a kernel needs (shared memory, TMEM columns, threads,
//! registers) and how many fit on one SM of a chip.
//!
//! Registers are not in the IR, so they are estimated the way the compiler's allocation goes:
//! - a `warp_specialize` kernel allocates `maxnreg` registers for every thread of the CTA, its
//!   warps rounded up to whole warpgroups (Gluon tutorial 08: "register usage will be
//!   maxnreg * (num_warps+4) * 32"); `maxnreg` is the kernel constant `MAXNREG` when it
//!   declares one, else 256 (the default the tutorial names);
//! - otherwise each thread holds its share of the largest register tile the kernel binds
//!   (an f32 128 x 256 accumulator over 256 threads is 128 registers) plus 32 for addresses
//!   and scalars, at most 255.
//!
//! A kernel whose estimate exceeds 255 registers per thread spills: [`Needs::spills`] says so,
//! and the engine then times every wgmma of it with the chip's `wgmma_spill_cycles` (the
//! accumulator round trip through local memory that ptxas inserts around each instruction).

use crate::chips::Chip;
use crate::lower::Program;
use bwsim_isa::consts::ConstValue;
use bwsim_isa::ir::{Block, ForLoop, StmtKind};
use bwsim_isa::typeck::{Checked, Ty};
use serde::Serialize;

/// What one CTA needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Needs {
    /// Shared memory of the static plan (bytes), without the system's reservation.
    pub smem: u32,
    /// TMEM columns (a power of two, 0 when none).
    pub tmem_cols: u32,
    /// Threads (warps rounded up to warpgroups for warp-specialized kernels).
    pub threads: u32,
    /// Registers of the whole CTA.
    pub regs: u32,
    /// Registers per thread of the default partition (the estimate above).
    pub regs_per_thread: u32,
    /// Whether the register estimate exceeds 255 per thread.
    pub spills: bool,
}

/// What limits residency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Limiter {
    SharedMemory,
    TensorMemory,
    Threads,
    Registers,
    CtaSlots,
}

/// CTAs per SM and the resource that bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Occupancy {
    pub ctas_per_sm: u32,
    pub limiter: Limiter,
}

fn largest_tile_words(b: &Block, checked: &Checked, threads: u32) -> u64 {
    let mut best = 0u64;
    for s in &b.stmts {
        match &s.kind {
            StmtKind::Let { names, .. } => {
                for n in names {
                    if let Some(Ty::Tile(t)) = checked.binding_type(n) {
                        let numel: u64 = t.shape.iter().map(|&d| d as u64).product();
                        let words = (numel * t.dtype.bits() as u64).div_ceil(32);
                        best = best.max(words.div_ceil(threads.max(1) as u64));
                    }
                }
            }
            StmtKind::For(ForLoop { body, .. }) | StmtKind::While { body, .. } => {
                best = best.max(largest_tile_words(body, checked, threads))
            }
            StmtKind::If {
                then_body, else_body, ..
            } => {
                best = best.max(largest_tile_words(then_body, checked, threads));
                if let Some(e) = else_body {
                    best = best.max(largest_tile_words(e, checked, threads));
                }
            }
            StmtKind::WarpSpecialize { default, .. } => {
                best = best.max(largest_tile_words(&default.body, checked, threads))
            }
            _ => {}
        }
    }
    best
}

/// What one CTA of `prog` needs.
pub fn needs(checked: &Checked, prog: &Program) -> Needs {
    let default_threads = checked.num_warps * 32;
    let tmem: u32 = prog.tmem.iter().map(|t| t.cols).sum();
    let tmem_cols = if tmem == 0 {
        0
    } else {
        tmem.next_power_of_two().max(32)
    };
    if !checked.workers.is_empty() {
        let warps: u32 = checked.num_warps + checked.workers.iter().map(|w| w.1).sum::<u32>();
        let warps = warps.div_ceil(4) * 4;
        let maxnreg = match checked.consts.get("MAXNREG") {
            Some(ConstValue::Int(v)) => v.clamp(24, 256) as u32,
            _ => 256,
        };
        return Needs {
            smem: prog.smem_bytes,
            tmem_cols,
            threads: warps * 32,
            regs: warps * 32 * maxnreg,
            regs_per_thread: maxnreg,
            spills: false,
        };
    }
    let words = largest_tile_words(&checked.kernel.body, checked, default_threads);
    let want = 32 + words;
    let per_thread = want.min(255) as u32;
    Needs {
        smem: prog.smem_bytes,
        tmem_cols,
        threads: default_threads,
        regs: default_threads * per_thread,
        regs_per_thread: per_thread,
        spills: want > 255,
    }
}

/// How many CTAs with `n` fit on one SM of `chip` (0 when one does not fit).
pub fn occupancy(chip: &Chip, n: &Needs) -> Occupancy {
    let mut best = Occupancy {
        ctas_per_sm: chip.ctas_per_sm,
        limiter: Limiter::CtaSlots,
    };
    let mut limit = |count: u32, limiter: Limiter| {
        if count < best.ctas_per_sm {
            best = Occupancy {
                ctas_per_sm: count,
                limiter,
            };
        }
    };
    if n.smem > chip.smem_per_cta {
        limit(0, Limiter::SharedMemory);
    }
    limit(
        chip.smem_per_sm / (n.smem + chip.smem_reserved_per_cta).max(1),
        Limiter::SharedMemory,
    );
    if let Some(c) = chip.tmem_cols.checked_div(n.tmem_cols) {
        limit(c, Limiter::TensorMemory);
    }
    limit(chip.threads_per_sm / n.threads.max(1), Limiter::Threads);
    limit(chip.regs_per_sm / n.regs.max(1), Limiter::Registers);
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chips::{B200, H100};

    fn n(smem: u32, tmem_cols: u32, threads: u32, regs_per_thread: u32) -> Needs {
        Needs {
            smem,
            tmem_cols,
            threads,
            regs: threads * regs_per_thread,
            regs_per_thread,
            spills: false,
        }
    }

    #[test]
    fn limits() {
        // The seed's Hopper matmul: 3 x (16 + 32) KiB operands + 64 KiB C = 208 KiB: one CTA.
        let o = occupancy(&H100, &n(212_992, 0, 256, 160));
        assert_eq!((o.ctas_per_sm, o.limiter), (1, Limiter::SharedMemory));
        // 40 KiB + 1 KiB reserved: 233472 / 41984 = 5 by shared memory; 128 threads x 96
        // registers = 12288: 5 by registers; smem comes first.
        let o = occupancy(&H100, &n(40_960, 0, 128, 96));
        assert_eq!(o.ctas_per_sm, 5);
        // 256 threads x 160 registers = 40960 > 65536 / 2: one by registers.
        let o = occupancy(&H100, &n(8192, 0, 256, 160));
        assert_eq!((o.ctas_per_sm, o.limiter), (1, Limiter::Registers));
        // TMEM: 256 columns per CTA, 512 per SM: two.
        let o = occupancy(&B200, &n(1024, 256, 128, 32));
        assert_eq!((o.ctas_per_sm, o.limiter), (2, Limiter::TensorMemory));
        // Tiny CTAs: 32 slots.
        let o = occupancy(&B200, &n(0, 0, 32, 32));
        assert_eq!((o.ctas_per_sm, o.limiter), (32, Limiter::CtaSlots));
        // Threads: 1024-thread CTAs, two per SM.
        let o = occupancy(&H100, &n(0, 0, 1024, 32));
        assert_eq!((o.ctas_per_sm, o.limiter), (2, Limiter::Threads));
        // Too much shared memory for one CTA.
        assert_eq!(occupancy(&H100, &n(240_000, 0, 128, 32)).ctas_per_sm, 0);
    }
}
