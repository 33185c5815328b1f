//! Chip tables: every number the timing model uses, once, with its source.
//!
//! Sources are named in each field's comment: NVIDIA datasheets (H100 SXM5: "NVIDIA H100
//! Tensor Core GPU" datasheet; H200: "NVIDIA H200 Tensor Core GPU" datasheet; B200/GB200:
//! "NVIDIA Blackwell" / DGX B200 and GB200 NVL72 datasheets), the CUDA C++ Programming Guide
//! (compute capability tables: 9.0 and 10.0), PTX.md (TMEM geometry), and measurements made on
//! the project's device machine (KINDS.md rows, and docs/hardware/ files with their commands).
//! Latencies marked "estimate" are starting points for calibration, not measurements.

use serde::Serialize;

/// A GPU as the timing model sees it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Chip {
    pub name: &'static str,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// SM clock used for cycle ↔ second conversion, in MHz.
    pub clock_mhz: f64,
    /// Shared memory a CTA may use (bytes).
    pub smem_per_cta: u32,
    /// Shared memory per SM (bytes).
    pub smem_per_sm: u32,
    /// TMEM columns per SM (0: no tensor memory).
    pub tmem_cols: u32,
    /// Registers per SM (32-bit).
    pub regs_per_sm: u32,
    /// Maximum resident threads per SM.
    pub threads_per_sm: u32,
    /// Dense f16/bf16 tensor-core FLOP per cycle per SM (2 per multiply-add).
    pub tensor_flops_per_cycle_sm: f64,
    /// L2 capacity (bytes).
    pub l2_bytes: u64,
    /// L2 bandwidth, bytes per cycle for the whole chip.
    pub l2_bytes_per_cycle: f64,
    /// HBM bandwidth, bytes per second.
    pub hbm_bytes_per_s: f64,
    /// Bytes a TMA unit moves per cycle per SM.
    pub tma_bytes_per_cycle_sm: f64,
    /// Latency of a TMA load that hits L2 / misses to HBM (cycles).
    pub tma_l2_latency: u32,
    pub tma_hbm_latency: u32,
    /// mbarrier arrive→wait round trip (cycles).
    pub mbarrier_latency: u32,
    /// Shared-memory bytes per cycle per SM (32 banks x 4 bytes).
    pub smem_bytes_per_cycle: f64,
    /// Issue cost of one warp instruction (cycles).
    pub issue_cycles: u32,
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
    /// Peak dense tensor throughput in TFLOP/s.
    pub fn peak_tflops(&self) -> f64 {
        self.tensor_flops_per_cycle_sm * self.sms as f64 * self.clock_mhz * 1e6 / 1e12
    }
}

/// H100 SXM5 (sm_90).
pub const H100: Chip = Chip {
    name: "h100",
    // Datasheet: 132 SMs (SXM5); PyTorch on the device machine reported 132 (KINDS.md, 2026-11-13).
    sms: 132,
    // Datasheet boost clock 1980 MHz; the tensor-core peak below is quoted at 1830 MHz.
    clock_mhz: 1830.0,
    // CUDA guide, compute capability 9.0: 227 KB per block, 228 KB per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    tmem_cols: 0,
    // CUDA guide, cc 9.0: 64K 32-bit registers and 2048 threads per SM.
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    // Datasheet: 989.4 dense BF16 TFLOP/s = 132 SMs x 1830 MHz x 4096 FLOP/cycle.
    tensor_flops_per_cycle_sm: 4096.0,
    // Datasheet 50 MB; PyTorch reported 50 MB on the device machine (KINDS.md).
    l2_bytes: 50 * 1024 * 1024,
    // Estimate: ~5.5 TB/s L2 read bandwidth (public microbenchmarks) / 1.83 GHz.
    l2_bytes_per_cycle: 3000.0,
    // Datasheet 3.35 TB/s; measured here: device-to-device copy ~3.0 TB/s (KINDS.md, 2026-11-13).
    hbm_bytes_per_s: 3.0e12,
    // Estimate: one TMA unit sustains ~128 B/cycle per SM.
    tma_bytes_per_cycle_sm: 128.0,
    // Estimates for calibration (docs/timing.md records the fitted values).
    tma_l2_latency: 500,
    tma_hbm_latency: 900,
    mbarrier_latency: 40,
    smem_bytes_per_cycle: 128.0,
    issue_cycles: 1,
};

/// H200 (sm_90): an H100 with HBM3e.
pub const H200: Chip = Chip {
    name: "h200",
    sms: 132,
    clock_mhz: 1830.0,
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    tmem_cols: 0,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    tensor_flops_per_cycle_sm: 4096.0,
    // PyTorch on the device machine reported 60 MB of L2 for the H200 (KINDS.md, 2026-10-28).
    l2_bytes: 60 * 1024 * 1024,
    l2_bytes_per_cycle: 3000.0,
    // Datasheet 4.8 TB/s; measured here: device-to-device copy ~4.3 TB/s (KINDS.md).
    hbm_bytes_per_s: 4.3e12,
    tma_bytes_per_cycle_sm: 128.0,
    tma_l2_latency: 500,
    tma_hbm_latency: 900,
    mbarrier_latency: 40,
    smem_bytes_per_cycle: 128.0,
    issue_cycles: 1,
};

/// B200 (sm_100).
pub const B200: Chip = Chip {
    name: "b200",
    // Blackwell datacenter GPU: 148 SMs (CUDA device query of B200 systems, tutorial grids use
    // the SM count; seed 08 sizes persistent grids with it).
    sms: 148,
    // Estimate of the sustained tensor clock (boost ~1965 MHz).
    clock_mhz: 1850.0,
    // CUDA guide, compute capability 10.0: 227 KB per block, 228 KB per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    // PTX.md section 8: 128 lanes x 512 columns of 32 bits.
    tmem_cols: 512,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    // Datasheet (HGX B200): 2.25 PFLOP/s dense FP16/BF16 ≈ 148 x 1.85 GHz x 8192.
    tensor_flops_per_cycle_sm: 8192.0,
    // Public specifications: 126 MB L2 (two dies).
    l2_bytes: 126 * 1024 * 1024,
    l2_bytes_per_cycle: 5000.0,
    // Datasheet: 8 TB/s HBM3e.
    hbm_bytes_per_s: 8.0e12,
    tma_bytes_per_cycle_sm: 128.0,
    tma_l2_latency: 550,
    tma_hbm_latency: 950,
    mbarrier_latency: 40,
    smem_bytes_per_cycle: 128.0,
    issue_cycles: 1,
};

/// GB200 (one Blackwell GPU of a Grace-Blackwell superchip, sm_100).
pub const GB200: Chip = Chip {
    name: "gb200",
    sms: 148,
    clock_mhz: 2000.0,
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    tmem_cols: 512,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    // Datasheet (GB200 NVL72: 180 PFLOP/s dense FP16 over 72 GPUs = 2.5 PFLOP/s per GPU)
    // ≈ 148 x 2.0 GHz x 8448; the model keeps 8192 per cycle and the higher clock.
    tensor_flops_per_cycle_sm: 8192.0,
    l2_bytes: 126 * 1024 * 1024,
    l2_bytes_per_cycle: 5000.0,
    // Datasheet: 8 TB/s HBM3e per GPU.
    hbm_bytes_per_s: 8.0e12,
    tma_bytes_per_cycle_sm: 128.0,
    tma_l2_latency: 550,
    tma_hbm_latency: 950,
    mbarrier_latency: 40,
    smem_bytes_per_cycle: 128.0,
    issue_cycles: 1,
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

    #[test]
    fn peaks_match_the_datasheets() {
        // H100 SXM: 989.4 dense BF16 TFLOP/s; B200: 2.25 PFLOP/s (within 2%).
        assert!(
            (H100.peak_tflops() - 989.4).abs() / 989.4 < 0.01,
            "{}",
            H100.peak_tflops()
        );
        assert!(
            (B200.peak_tflops() - 2250.0).abs() / 2250.0 < 0.02,
            "{}",
            B200.peak_tflops()
        );
        assert_eq!(chip("h200").map(|c| c.sms), Some(132));
    }
}
