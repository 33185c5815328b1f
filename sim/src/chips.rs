//! Chip tables: every number the timing model ([`crate::timing`]) uses, once, with its source.
//!
//! Each field's comment names its source. The tags, in order of trust:
//! - **[measured here]**: read on the project's own device machine; the date, the device and
//!   the command are in `docs/hardware/device-baselines.md`.
//! - **[S1]**..**[S14]**: a public source (datasheet, NVIDIA guide, microbenchmark paper or
//!   data file, device query) listed with what it gives in `docs/hardware/public-figures.md`,
//!   which also shows the arithmetic of every derived figure.
//! - **[derived]**: arithmetic on the above, shown in the comment.
//! - **[estimate]**: no public figure was found; the comment says what the value is derived
//!   from. The calibration microbenchmarks (`kernels/bench/`, `scripts/timing-h100`,
//!   docs/timing.md) replace the sm_90 ones with fitted values. Estimates are written so that
//!   the quantity they stand for is clear, never tuned to a hoped-for result.
//!
//! All latencies and throughputs are in SM cycles at [`Chip::clock_mhz`].

use bwsim_isa::Target;
use serde::Serialize;

/// A GPU as the timing model sees it.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Chip {
    /// The `--chip` name.
    pub name: &'static str,
    /// The target its kernels are built for.
    pub target: Target,
    // ----- GPU -----
    /// Streaming multiprocessors.
    pub sms: u32,
    /// SM clock for cycle ↔ second conversion (MHz): the clock the datasheet's tensor peak is
    /// quoted at.
    pub clock_mhz: f64,
    // ----- occupancy -----
    /// Shared memory a CTA may use (bytes).
    pub smem_per_cta: u32,
    /// Shared memory per SM (bytes).
    pub smem_per_sm: u32,
    /// Shared memory the system reserves per resident CTA (bytes).
    pub smem_reserved_per_cta: u32,
    /// TMEM columns per SM (0: no tensor memory).
    pub tmem_cols: u32,
    /// Registers per SM (32-bit).
    pub regs_per_sm: u32,
    /// Resident threads per SM.
    pub threads_per_sm: u32,
    /// Resident CTAs per SM.
    pub ctas_per_sm: u32,
    /// Cycles between a CTA retiring and the next CTA starting on that SM.
    pub cta_launch_cycles: f64,
    // ----- tensor pipe -----
    /// Dense f16/bf16 tensor FLOP per cycle per SM (2 per multiply-add). Other kinds scale it
    /// ([`crate::timing::cost::kind_rate`]).
    pub tensor_flops_per_cycle_sm: f64,
    /// Cycles a thread (or warpgroup) spends issuing one tcgen05.mma / wgmma operation.
    pub mma_issue_cycles: f64,
    /// Cycles from an MMA's start on the tensor pipe to its result being complete, beyond its
    /// throughput time (pipeline depth).
    pub mma_latency: f64,
    /// Fixed cycles per wgmma instruction (m64nNk16) on top of 2·64·N·K / rate: what makes
    /// small N inefficient. 0 on Blackwell (no wgmma).
    pub wgmma_overhead_cycles: f64,
    /// Extra cycles per wgmma statement and 64-row block of a warpgroup's accumulator when the
    /// kernel's register tiles do not fit in 255 registers per thread (Gluon tutorial 07: "on
    /// Hopper we need 8 warps to fit the accumulator in registers"). ptxas then keeps part of
    /// the accumulator in local memory: around the instructions of each 64-row block it stores
    /// one block and reloads the other (`STL.64`/`LDL.LU.64` runs in the SASS of a 4-warp
    /// 128x256 matmul) and waits for each instruction (`WARPGROUP.DEPBAR` after every
    /// `HGMMA`), so the warpgroup issues them one at a time. 0 on Blackwell (no wgmma).
    pub wgmma_spill_cycles: f64,
    /// tcgen05.commit: cycles from the last covered operation completing to the arrival.
    pub commit_latency: f64,
    /// tcgen05.ld / tcgen05.st bandwidth per SM (bytes per cycle).
    pub tmem_bytes_per_cycle: f64,
    /// tcgen05.ld / st latency (cycles).
    pub tmem_latency: f64,
    /// tcgen05.cp bandwidth (bytes per cycle, shared memory to TMEM).
    pub tcgen05_cp_bytes_per_cycle: f64,
    // ----- memory system -----
    /// L2 capacity (bytes).
    pub l2_bytes: u64,
    /// Fraction of the L2 the model treats as holding distinct data: the L2 is two partitions
    /// and a line read by SMs on both sides can be held by both.
    pub l2_effective_fraction: f64,
    /// L2 bandwidth, bytes per cycle for the whole chip: every byte the L2 delivers to an SM
    /// (a hit, or a miss once filled) and every byte written into it.
    pub l2_bytes_per_cycle: f64,
    /// HBM bandwidth, bytes per second (reads and writes together).
    pub hbm_bytes_per_s: f64,
    /// Bytes per cycle one SM's TMA unit moves between L2 and shared memory (each direction).
    pub tma_bytes_per_cycle_sm: f64,
    /// Cycles a thread spends issuing one TMA instruction (or one gather4/scatter4 message).
    pub tma_issue_cycles: f64,
    /// Unloaded latency of a TMA load, issue to complete_tx, on an L2 hit / an L2 miss.
    pub tma_l2_latency: f64,
    pub tma_hbm_latency: f64,
    /// Unloaded latency of a TMA store until its shared-memory reads are done, and until its
    /// global writes are done.
    pub tma_store_read_latency: f64,
    pub tma_store_write_latency: f64,
    /// Latency of a generic global load (global.load) that misses in L1.
    pub global_latency: f64,
    // ----- SM -----
    /// Shared-memory bytes per cycle per SM for generic accesses (smem.load / smem.store).
    pub smem_bytes_per_cycle: f64,
    /// Shared-memory access latency (cycles).
    pub smem_latency: f64,
    /// An mbarrier phase completing → a waiting warp running again (cycles).
    pub mbarrier_latency: f64,
    /// Issue cost of one mbarrier operation (init, arrive, expect, a satisfied try_wait).
    pub mbarrier_op_cycles: f64,
    /// fence.proxy.async.shared::cta.
    pub fence_async_cycles: f64,
    /// tcgen05.fence::before/after_thread_sync.
    pub tcgen05_fence_cycles: f64,
    /// bar.sync of a CTA.
    pub bar_sync_cycles: f64,
    /// One scalar operation of a dependent chain (an expression node of the IR).
    pub scalar_op_cycles: f64,
    /// A loop test, loop step or branch.
    pub branch_cycles: f64,
    /// Elementwise lanes per cycle per SM for tile math (4 schedulers x 32 lanes).
    pub alu_lanes_per_cycle: f64,
}

impl Chip {
    /// Seconds per cycle.
    pub fn cycle_s(&self) -> f64 {
        1.0 / (self.clock_mhz * 1e6)
    }
    /// HBM bytes per cycle for the whole chip.
    pub fn hbm_bytes_per_cycle(&self) -> f64 {
        self.hbm_bytes_per_s * self.cycle_s()
    }
    /// Peak dense f16 tensor throughput in TFLOP/s.
    pub fn peak_tflops(&self) -> f64 {
        self.tensor_flops_per_cycle_sm * self.sms as f64 * self.clock_mhz * 1e6 / 1e12
    }
    /// L2 bytes the model's LRU holds.
    pub fn l2_effective_bytes(&self) -> u64 {
        (self.l2_bytes as f64 * self.l2_effective_fraction) as u64
    }
}

/// H100 SXM5 (sm_90a).
pub const H100: Chip = Chip {
    name: "h100",
    target: Target::Sm90a,
    // [S2] 132 SMs on the SXM5 part; [measured here] PyTorch reported 132.
    sms: 132,
    // [derived] [S1] dense BF16 989.4 TFLOP/s = 132 SMs x 4096 FLOP/cycle x 1830 MHz.
    clock_mhz: 1830.0,
    // [S6] compute capability 9.0: 227 KB per block, 228 KB per SM, 1 KB reserved per block,
    // 64K registers, 2048 threads and 32 blocks per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    smem_reserved_per_cta: 1024,
    tmem_cols: 0,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    ctas_per_sm: 32,
    // [estimate] block launch and shared-memory/barrier set-up on a freed SM.
    cta_launch_cycles: 500.0,
    // [measured here] wgmma_rate on all 132 SMs (docs/hardware/h100-calibration.md): a line
    // through the per-instruction times for N = 32..256 gives 3840 FLOP per 1830-MHz cycle
    // (94 % of the datasheet's 4096 [S1, S2]: the part runs below 1830 MHz under tensor load).
    tensor_flops_per_cycle_sm: 3840.0,
    // [estimate] issue of one wgmma by its warpgroup.
    mma_issue_cycles: 4.0,
    // [estimate] pipeline depth beyond throughput time.
    mma_latency: 32.0,
    // [measured here] the same fit's intercept: 5 cycles per m64nNk16 instruction.
    wgmma_overhead_cycles: 5.0,
    // [measured here] fitted to the six 4-warp rows of docs/timing.md (128x256 f32 accumulator:
    // 256 registers per thread), one value for all: mean error 6 %. The same kernels with
    // BLOCK_N = 128 (128 registers) run 2.6x faster on the H100 than with 256 and 4 warps.
    wgmma_spill_cycles: 3000.0,
    commit_latency: 0.0,
    tmem_bytes_per_cycle: 0.0,
    tmem_latency: 0.0,
    tcgen05_cp_bytes_per_cycle: 0.0,
    // [S2] 50 MB; [measured here] PyTorch reported 50 MB.
    l2_bytes: 50 * 1024 * 1024,
    // [derived] [S11] the L2 read-bandwidth plateau of an H100 PCIe (same 50 MB L2) ends
    // between 36 and 39 MB, of an H200 between 43 and 47 of 60 MB: three quarters of the L2
    // holds distinct data (lines read from both partitions can be held twice, [S2]).
    l2_effective_fraction: 0.75,
    // [derived] [S11] an H200 reads ~10.0 TB/s of L2-resident data shared by all SMs: 5050
    // B/cycle at its 1980 MHz boost clock; scaled by L2 size (slices sit at the memory
    // controllers) to the H100's 50 MB: 5050 x 50/60 = 4210. Cross-check: an H100 PCIe reads
    // 6.9 TB/s, 3930-4950 B/cycle over the clocks it ran at ([S14]). The L2-bandwidth
    // microbenchmark fits it.
    l2_bytes_per_cycle: 4210.0,
    // [measured here] device-to-device copy ~3.0 TB/s counting reads and writes ([S1]: 3.35).
    hbm_bytes_per_s: 3.0e12,
    // [measured here] tma_stream with one CTA streaming 16 KB boxes from L2: 95 B/cycle
    // (docs/hardware/h100-calibration.md). Not binding on a full GPU (4210 / 132 = 32 B/cycle
    // per SM of L2).
    tma_bytes_per_cycle_sm: 95.0,
    // [estimate]
    tma_issue_cycles: 8.0,
    // [measured here] tma_latency (one box in flight, L2-resident): 391 cycles per 1 KB box from
    // issue to the waiter's wake-up; less the model's issue, mbarrier and transfer time: 320
    // (docs/hardware/h100-calibration.md; [S11]'s pointer-chase mean of 390 is the same order).
    // Miss: [derived] [S11] DRAM pointer chase 677 + 110 for the TMA unit = 790 (the
    // first-touch variant of the benchmark stayed L2-resident across launches: not usable).
    tma_l2_latency: 320.0,
    tma_hbm_latency: 790.0,
    // [estimate]
    tma_store_read_latency: 100.0,
    tma_store_write_latency: 500.0,
    // [derived] [S11] DRAM pointer-chase latency (generic loads are timed as L2 misses).
    global_latency: 680.0,
    // [S6] 32 banks of 4 bytes per cycle.
    smem_bytes_per_cycle: 128.0,
    // [S12] shared-memory latency of about 30 cycles (and [S11]: L1 hit 34 cycles).
    smem_latency: 30.0,
    // [measured here] mbarrier_pingpong: 148 cycles per round trip between two warps
    // (docs/hardware/h100-calibration.md) = 2 x (latency + 2 x op) + loop.
    mbarrier_latency: 64.0,
    mbarrier_op_cycles: 8.0,
    // [estimate]
    fence_async_cycles: 16.0,
    tcgen05_fence_cycles: 0.0,
    bar_sync_cycles: 20.0,
    scalar_op_cycles: 2.0,
    branch_cycles: 2.0,
    // [S6] 4 warp schedulers x 32 lanes per SM (cc 9.0 / 10.0).
    alu_lanes_per_cycle: 128.0,
};

/// H200 (sm_90a): an H100 with HBM3e and a larger L2.
pub const H200: Chip = Chip {
    name: "h200",
    // [measured here] PyTorch reported 60 MB of L2 (a full GH100's, [S14]).
    l2_bytes: 60 * 1024 * 1024,
    // [derived] [S11] ~10.0 TB/s of L2-resident data measured on an H200, at 1980 MHz.
    l2_bytes_per_cycle: 5050.0,
    // [measured here] device-to-device copy ~4.3 TB/s ([S3]: 4.8 TB/s).
    hbm_bytes_per_s: 4.3e12,
    // Everything else: [S3] the same GH100 SM and tensor rates as the H100 SXM.
    ..H100
};

/// B200 (sm_100a), HGX B200 / DGX B200 part.
pub const B200: Chip = Chip {
    name: "b200",
    target: Target::Sm100a,
    // [S9] 74 of 80 SMs per die enabled, 148 in all; [S10] a device query reports 148.
    sms: 148,
    // [derived] [S4] 2.25 PFLOP/s dense FP16/BF16 = 148 SMs x 8192 x 1856 MHz.
    clock_mhz: 1856.0,
    // [S6] compute capability 10.0: as 9.0 for shared memory, registers, threads and
    // blocks; [S10] a device query reports 228 KB per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    smem_reserved_per_cta: 1024,
    // [S13] 128 lanes x 512 columns of 32 bits.
    tmem_cols: 512,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    ctas_per_sm: 32,
    // [estimate] as H100.
    cta_launch_cycles: 500.0,
    // [derived] twice Hopper's per-SM rate: 2.25 PF / (148 x 1856 MHz) = 8192.
    tensor_flops_per_cycle_sm: 8192.0,
    // [estimate] one thread issues tcgen05.mma.
    mma_issue_cycles: 4.0,
    // [estimate]
    mma_latency: 64.0,
    wgmma_overhead_cycles: 0.0,
    wgmma_spill_cycles: 0.0,
    // [estimate]
    commit_latency: 16.0,
    // [estimate] 4 sub-partitions x 32 lanes x 4 bytes per cycle.
    tmem_bytes_per_cycle: 512.0,
    tmem_latency: 64.0,
    // [estimate]
    tcgen05_cp_bytes_per_cycle: 256.0,
    // [S10] a device query reports 126.50 MB (MiB); [S7, S9] 126 MB over the two dies.
    l2_bytes: 132_644_864,
    // [estimate] as measured on Hopper ([S11], see H100).
    l2_effective_fraction: 0.75,
    // [estimate] no public Blackwell figure: GH100's measured L2 bandwidth per MB ([S11],
    // 5050 B/cycle for 60 MB) times 126.5 MB = 10650, i.e. two dies of about an H200's L2
    // each; consistent with [S8]'s 10 TB/s die-to-die link carrying the half of the traffic
    // homed on the other die. The first figure to calibrate on Blackwell (docs/timing.md).
    l2_bytes_per_cycle: 10_650.0,
    // [derived] [S10] 7680-bit bus x 3996 MHz x 2 = 7.67 TB/s ([S4]: 8 TB/s) x 0.90, the
    // measured/datasheet ratio of this project's H100 (3.0/3.35) and H200 (4.3/4.8).
    hbm_bytes_per_s: 6.9e12,
    // [estimate] twice the Hopper port, to feed twice the tensor rate.
    tma_bytes_per_cycle_sm: 128.0,
    tma_issue_cycles: 8.0,
    // [estimate] Hopper's derived latencies ([S11], see H100) plus 50 cycles for the lines
    // homed on the other die ([S9]: bimodal L2 latency).
    tma_l2_latency: 550.0,
    tma_hbm_latency: 840.0,
    tma_store_read_latency: 100.0,
    tma_store_write_latency: 550.0,
    global_latency: 730.0,
    // [S6]
    smem_bytes_per_cycle: 128.0,
    // [estimate] as Hopper ([S12]).
    smem_latency: 30.0,
    // [estimate] as H100.
    mbarrier_latency: 40.0,
    mbarrier_op_cycles: 8.0,
    fence_async_cycles: 16.0,
    // [estimate]
    tcgen05_fence_cycles: 2.0,
    bar_sync_cycles: 20.0,
    scalar_op_cycles: 2.0,
    branch_cycles: 2.0,
    // [S6]
    alu_lanes_per_cycle: 128.0,
};

/// GB200: one Blackwell GPU of a Grace-Blackwell superchip (sm_100a); a B200 at a higher clock.
pub const GB200: Chip = Chip {
    name: "gb200",
    // [derived] [S5] 180 PFLOP/s dense FP16 over 72 GPUs = 2.5 PFLOP/s per GPU = 148 SMs x
    // 8192 x 2062 MHz.
    clock_mhz: 2062.0,
    // [derived] [S5] 8 TB/s HBM3e per GPU x 0.90 as for B200 (no device query of a GB200 was
    // found, so the datasheet figure stands in for the bus arithmetic).
    hbm_bytes_per_s: 7.2e12,
    // Everything else, the L2 bandwidth per cycle included (the L2 is assumed to be clocked
    // with the SMs): as B200.
    ..B200
};

/// Every chip, for `--chip` lookup.
pub const CHIPS: [&Chip; 4] = [&B200, &GB200, &H100, &H200];

/// A chip by its `--chip` name.
pub fn chip(name: &str) -> Option<&'static Chip> {
    CHIPS.iter().copied().find(|c| c.name == name)
}

/// The H100 figures the timing model's hand-computed unit tests were written against (the
/// table's values before the H100 calibration of docs/hardware/h100-calibration.md): those
/// tests check the cost rules, not the table, so the arithmetic in their comments stays round.
#[cfg(test)]
pub(crate) const H100_HAND: Chip = Chip {
    tensor_flops_per_cycle_sm: 4096.0,
    wgmma_overhead_cycles: 8.0,
    tma_bytes_per_cycle_sm: 64.0,
    tma_l2_latency: 500.0,
    mbarrier_latency: 40.0,
    ..H100
};

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() / b < rel
    }

    #[test]
    fn peaks_match_the_datasheets() {
        // H100/H200 SXM: 989.4 dense BF16 TFLOP/s; B200: 2.25 PFLOP/s; GB200: 2.5 PFLOP/s.
        // The Hopper rate is the one measured on an H100 (3840 FLOP per 1830-MHz cycle,
        // docs/hardware/h100-calibration.md): 94 % of the datasheet, 927.6 TFLOP/s.
        assert!(
            close(H100.peak_tflops(), 989.4 * 3840.0 / 4096.0, 0.001),
            "{}",
            H100.peak_tflops()
        );
        assert!(
            close(H200.peak_tflops(), H100.peak_tflops(), 0.001),
            "{}",
            H200.peak_tflops()
        );
        assert!(close(B200.peak_tflops(), 2250.0, 0.001), "{}", B200.peak_tflops());
        assert!(
            close(GB200.peak_tflops(), 2500.0, 0.001),
            "{}",
            GB200.peak_tflops()
        );
        assert_eq!(chip("h200").map(|c| c.sms), Some(132));
        assert_eq!(chip("gb200").map(|c| c.target), Some(Target::Sm100a));
        assert_eq!(chip("h100").map(|c| c.target), Some(Target::Sm90a));
        assert!(chip("a100").is_none());
    }

    #[test]
    fn derived_figures_follow_their_arithmetic() {
        // docs/hardware/public-figures.md: the H200 reads 10.0 TB/s of L2 at 1980 MHz; the
        // H100 and Blackwell figures scale it by L2 size (50 and 126.5 MB against 60).
        let h200 = 10.0e12 / 1.98e9;
        assert!(close(H200.l2_bytes_per_cycle, h200, 0.005));
        assert!(close(H100.l2_bytes_per_cycle, h200 * 50.0 / 60.0, 0.005));
        assert!(close(B200.l2_bytes_per_cycle, h200 * 126.5 / 60.0, 0.005));
        assert_eq!(GB200.l2_bytes_per_cycle, B200.l2_bytes_per_cycle);
        // The B200's bus: 7680 bits x 3996 MHz x 2, at 0.90 of it; the GB200's 8 TB/s x 0.90.
        assert!(close(
            B200.hbm_bytes_per_s,
            0.9 * 7680.0 / 8.0 * 3996e6 * 2.0,
            0.005
        ));
        assert!(close(GB200.hbm_bytes_per_s, 0.9 * 8e12, 1e-9));
        // 126.5 MiB of L2 on Blackwell; three quarters of every L2 is modelled.
        assert_eq!(B200.l2_bytes, 126 * 1024 * 1024 + 512 * 1024);
        for c in CHIPS {
            assert_eq!(c.l2_effective_fraction, 0.75, "{}", c.name);
        }
    }

    #[test]
    fn hbm_per_cycle() {
        // 3.0e12 B/s / 1.83e9 cycles/s = 1639.3 B/cycle.
        assert!(close(H100.hbm_bytes_per_cycle(), 1639.34, 1e-4));
    }
}
