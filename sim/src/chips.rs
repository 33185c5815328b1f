//! Chip tables: every number the timing model ([`crate::timing`]) uses, once, with its source.
//!
//! Each field's comment names its source. The tags, in order of trust:
//! - **[measured here]**: read on the project's own device machine; the date, the device and
//!   the command are in `docs/hardware/device-baselines.md`.
//! - **[datasheet]**: NVIDIA's product datasheets (H100 SXM5: "NVIDIA H100 Tensor Core GPU";
//!   H200: "NVIDIA H200 Tensor Core GPU"; B200: "NVIDIA DGX B200" / HGX B200; GB200: "NVIDIA
//!   GB200 NVL72"), and the CUDA C++ Programming Guide's compute-capability tables (9.0, 10.0).
//! - **[derived]**: arithmetic on the above, shown in the comment.
//! - **[paper]**: a public microbenchmark study, named in the comment.
//! - **[estimate]**: a starting value, to be replaced by a fitted one from the calibration
//!   microbenchmarks (`kernels/bench/`, `scripts/calibrate-h100`, docs/timing.md). Estimates are
//!   written so that the quantity they stand for is clear, never tuned to a hoped-for result.
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
    /// L2 bandwidth, bytes per cycle for the whole chip (reads and writes).
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
    // [datasheet] 132 SMs (SXM5); [measured here] PyTorch reported 132.
    sms: 132,
    // [derived] datasheet 989.4 dense BF16 TFLOP/s = 132 SMs x 4096 FLOP/cycle x 1830 MHz.
    clock_mhz: 1830.0,
    // [datasheet] CUDA guide, compute capability 9.0: 227 KB per block, 228 KB per SM, 1 KB
    // reserved per block, 64K registers, 2048 threads and 32 blocks per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    smem_reserved_per_cta: 1024,
    tmem_cols: 0,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    ctas_per_sm: 32,
    // [estimate] block launch and shared-memory/barrier set-up on a freed SM.
    cta_launch_cycles: 500.0,
    // [derived] see clock_mhz: 4096 dense f16 FLOP/cycle/SM (1024 per tensor core x 4).
    tensor_flops_per_cycle_sm: 4096.0,
    // [estimate] issue of one wgmma by its warpgroup.
    mma_issue_cycles: 4.0,
    // [estimate] pipeline depth beyond throughput time.
    mma_latency: 32.0,
    // [estimate] per m64nNk16 instruction; the wgmma-by-N microbenchmark fits it.
    wgmma_overhead_cycles: 8.0,
    commit_latency: 0.0,
    tmem_bytes_per_cycle: 0.0,
    tmem_latency: 0.0,
    tcgen05_cp_bytes_per_cycle: 0.0,
    // [datasheet] 50 MB; [measured here] PyTorch reported 50 MB.
    l2_bytes: 50 * 1024 * 1024,
    // [estimate] two partitions (H100 whitepaper) that may both hold a shared line.
    l2_effective_fraction: 0.5,
    // [estimate] ~10 TB/s at 1.83 GHz; the L2-bandwidth microbenchmark fits it.
    l2_bytes_per_cycle: 5500.0,
    // [measured here] device-to-device copy ~3.0 TB/s counting reads and writes (datasheet
    // 3.35 TB/s).
    hbm_bytes_per_s: 3.0e12,
    // [estimate] 64 B/cycle L2 → SM port (the A100 figure); the TMA-bandwidth benchmark fits it.
    tma_bytes_per_cycle_sm: 64.0,
    // [estimate]
    tma_issue_cycles: 8.0,
    // [estimate] TMA round trip incl. complete_tx; the TMA-latency benchmark fits both.
    tma_l2_latency: 500.0,
    tma_hbm_latency: 900.0,
    // [estimate]
    tma_store_read_latency: 100.0,
    tma_store_write_latency: 500.0,
    // [estimate]
    global_latency: 600.0,
    // [datasheet] CUDA guide: 32 banks of 4 bytes per cycle.
    smem_bytes_per_cycle: 128.0,
    // [paper] Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture"
    // (arXiv 2402.13499): shared-memory latency of about 30 cycles.
    smem_latency: 30.0,
    // [estimate] the mbarrier round-trip microbenchmark fits it.
    mbarrier_latency: 40.0,
    mbarrier_op_cycles: 8.0,
    // [estimate]
    fence_async_cycles: 16.0,
    tcgen05_fence_cycles: 0.0,
    bar_sync_cycles: 20.0,
    scalar_op_cycles: 2.0,
    branch_cycles: 2.0,
    // [datasheet] 4 warp schedulers x 32 lanes per SM (CUDA guide, cc 9.0 / 10.0).
    alu_lanes_per_cycle: 128.0,
};

/// H200 (sm_90a): an H100 with HBM3e and a larger L2.
pub const H200: Chip = Chip {
    name: "h200",
    // [measured here] PyTorch reported 60 MB of L2.
    l2_bytes: 60 * 1024 * 1024,
    // [measured here] device-to-device copy ~4.3 TB/s (datasheet 4.8 TB/s).
    hbm_bytes_per_s: 4.3e12,
    // Everything else: [datasheet] the same GH100 SM (132 SMs, 989.4 dense BF16 TFLOP/s).
    ..H100
};

/// B200 (sm_100a), HGX B200 / DGX B200 part.
pub const B200: Chip = Chip {
    name: "b200",
    target: Target::Sm100a,
    // [paper] Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling": 74 of
    // 80 SMs per die enabled, 148 in all.
    sms: 148,
    // [derived] datasheet 2.25 PFLOP/s dense FP16/BF16 = 148 SMs x 8192 x 1856 MHz.
    clock_mhz: 1856.0,
    // [datasheet] CUDA guide, compute capability 10.0: as 9.0 for shared memory, registers,
    // threads and blocks.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    smem_reserved_per_cta: 1024,
    // PTX.md section 8: 128 lanes x 512 columns of 32 bits.
    tmem_cols: 512,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    ctas_per_sm: 32,
    cta_launch_cycles: 500.0,
    // [derived] twice Hopper's per-SM rate: 2.25 PF / (148 x 1856 MHz) = 8192.
    tensor_flops_per_cycle_sm: 8192.0,
    // [estimate] one thread issues tcgen05.mma.
    mma_issue_cycles: 4.0,
    mma_latency: 64.0,
    wgmma_overhead_cycles: 0.0,
    // [estimate]
    commit_latency: 16.0,
    // [estimate] 4 sub-partitions x 32 lanes x 4 bytes per cycle.
    tmem_bytes_per_cycle: 512.0,
    tmem_latency: 64.0,
    // [estimate]
    tcgen05_cp_bytes_per_cycle: 256.0,
    // [paper] Chips and Cheese (B200 article above): 126 MB of L2 over two dies.
    l2_bytes: 126 * 1024 * 1024,
    l2_effective_fraction: 0.5,
    // [estimate] ~18.5 TB/s; a 128x256 tcgen05 tile needs ~96 B/cycle/SM of operands at peak.
    l2_bytes_per_cycle: 10_000.0,
    // [derived] datasheet 8 TB/s x 0.9, the measured/datasheet ratio of this project's H100
    // (3.0/3.35) and H200 (4.3/4.8).
    hbm_bytes_per_s: 7.2e12,
    // [estimate] twice the Hopper port, to feed twice the tensor rate.
    tma_bytes_per_cycle_sm: 128.0,
    tma_issue_cycles: 8.0,
    tma_l2_latency: 550.0,
    tma_hbm_latency: 950.0,
    tma_store_read_latency: 100.0,
    tma_store_write_latency: 550.0,
    global_latency: 650.0,
    smem_bytes_per_cycle: 128.0,
    smem_latency: 30.0,
    mbarrier_latency: 40.0,
    mbarrier_op_cycles: 8.0,
    fence_async_cycles: 16.0,
    // [estimate]
    tcgen05_fence_cycles: 2.0,
    bar_sync_cycles: 20.0,
    scalar_op_cycles: 2.0,
    branch_cycles: 2.0,
    alu_lanes_per_cycle: 128.0,
};

/// GB200: one Blackwell GPU of a Grace-Blackwell superchip (sm_100a); a B200 at a higher clock.
pub const GB200: Chip = Chip {
    name: "gb200",
    // [derived] datasheet GB200 NVL72: 180 PFLOP/s dense FP16 over 72 GPUs = 2.5 PFLOP/s per
    // GPU = 148 SMs x 8192 x 2062 MHz.
    clock_mhz: 2062.0,
    // [datasheet] 8 TB/s HBM3e per GPU; x 0.9 as for B200.
    ..B200
};

/// Every chip, for `--chip` lookup.
pub const CHIPS: [&Chip; 4] = [&B200, &GB200, &H100, &H200];

/// A chip by its `--chip` name.
pub fn chip(name: &str) -> Option<&'static Chip> {
    CHIPS.iter().copied().find(|c| c.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() / b < rel
    }

    #[test]
    fn peaks_match_the_datasheets() {
        // H100/H200 SXM: 989.4 dense BF16 TFLOP/s; B200: 2.25 PFLOP/s; GB200: 2.5 PFLOP/s.
        assert!(close(H100.peak_tflops(), 989.4, 0.001), "{}", H100.peak_tflops());
        assert!(close(H200.peak_tflops(), 989.4, 0.001), "{}", H200.peak_tflops());
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
    fn hbm_per_cycle() {
        // 3.0e12 B/s / 1.83e9 cycles/s = 1639.3 B/cycle.
        assert!(close(H100.hbm_bytes_per_cycle(), 1639.34, 1e-4));
    }
}
