//! Chip tables: every number the timing model ([`crate::timing`]) uses, once, with its source.
//!
//! Each field's comment names its source. The tags, in order of trust:
//! - **[measured here]**: read on the project's own device machine; the date, the device and
//!   the command are in `docs/hardware/device-baselines.md`.
//! - **[S1]**..**[S18]**: a public source (datasheet, NVIDIA guide, microbenchmark paper or
//!   data file, device query) listed with what it gives in `docs/hardware/public-figures.md`,
//!   which also shows the arithmetic of every derived figure.
//! - **[fitted]**: chosen so that the model reproduces published measurements of this chip
//!   (Blackwell: Gluon tutorial kernels and cuBLAS on a GB200, `scripts/timing-blackwell`,
//!   `docs/hardware/blackwell-calibration.md`); the comment names the measurements.
//! - **[derived]**: arithmetic on the above, shown in the comment.
//! - **[estimate]**: no public figure was found; the comment says what the value is derived
//!   from. The calibration microbenchmarks (`kernels/bench/`, `scripts/timing-h100`,
//!   docs/timing.md) replace the sm_90 ones with fitted values. Estimates are written so that
//!   the quantity they stand for is clear, never tuned to a hoped-for result.
//!
//! All latencies and throughputs are in SM cycles at [`Chip::clock_mhz`]. [`Chip::trust`] says,
//! per chip, which fields are calibrated and which are estimates (`bwsim time` prints it).

use bwsim_isa::Target;
use serde::Serialize;

/// A `bwsim time --set FIELD=VALUE` that [`Chip::set`] refuses.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ChipSetError {
    #[error("`{field}` must be a finite non-negative number, not {value}")]
    Value { field: String, value: f64 },
    #[error("`{field}` is not a numeric field of the chip table (one of: {})", Chip::SETTABLE.join(", "))]
    Field { field: String },
}

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
    /// SMs of each GPC (graphics processing cluster), in SM order: the CTAs of a thread-block
    /// cluster run on SMs of one GPC ([`Chip::gpcs`]). Floorsweeping leaves GPCs of a part with
    /// different SM counts; the split below is the model's, per chip.
    pub gpc_sms: &'static [u32],
    /// SM clock for cycle ↔ second conversion (MHz): the clock the part sustains under tensor
    /// load, which every cycle count of the model is in. On Hopper the datasheet clock (the
    /// measured shortfall is in [`Chip::tensor_flops_per_cycle_sm`]); on Blackwell the fitted
    /// sustained clock (docs/hardware/blackwell-calibration.md).
    pub clock_mhz: f64,
    /// The clock the datasheet's dense tensor peak is quoted at (MHz): datasheet peak =
    /// SMs x [`Chip::tensor_flops_per_cycle_sm`] x this (Hopper: x 4096 / 3840, the measured rate).
    pub datasheet_clock_mhz: f64,
    // ----- occupancy -----
    /// Shared memory a CTA may use (bytes).
    pub smem_per_cta: u32,
    /// Shared memory per SM (bytes).
    pub smem_per_sm: u32,
    /// Shared memory the system reserves per resident CTA (bytes).
    pub smem_reserved_per_cta: u32,
    /// The SM's L1 data cache and shared memory together (bytes): one SRAM, split by the
    /// driver into shared memory (one of [`Chip::smem_carveouts_kib`]) and the L1 beside it.
    pub l1_smem_bytes: u32,
    /// The shared-memory capacities (KiB) the SRAM may be configured with, ascending; the
    /// driver takes the smallest that holds the resident CTAs' shared memory.
    pub smem_carveouts_kib: &'static [u32],
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
    /// Fixed time every launch adds to the whole grid's (microseconds): the launch itself, the
    /// first wave's start and the last wave's drain as a host-side benchmark times them.
    pub kernel_overhead_us: f64,
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
    /// Further cycles per spilling wgmma statement and 64-row block when the L1 that the
    /// shared-memory carve-out leaves ([`Chip::l1_left`]) cannot hold the swapped block of
    /// every resident CTA: the swap's reloads then miss to the L2. 0 on Blackwell (no wgmma).
    pub wgmma_spill_l1_miss_cycles: f64,
    /// How many wgmma instructions (m64nNk16) a warpgroup may have queued ahead of the tensor
    /// pipe: issuing the next one stalls the warps until the pipe has started all but this
    /// many. So a partition that issues a wgmma statement continues only when that statement
    /// is this many instructions from its end, and a TMA load it issues next starts that late.
    /// 0: no limit (Blackwell, no wgmma).
    pub wgmma_queue_instrs: f64,
    /// How many tcgen05.mma instructions (K = 32 bytes of A each) a CTA may have queued ahead of
    /// the tensor pipe: the issuing thread stalls until the pipe has started all but this many
    /// of the CTA's instructions, as a warpgroup stalls on wgmma ([`Chip::wgmma_queue_instrs`]).
    /// So a thread that issues a 128 x 256 x 128 MMA (8 instructions) and then a TMA load
    /// issues the load only when the MMA is this many instructions from its end. 0: no limit.
    pub tcgen05_queue_instrs: f64,
    /// tcgen05.commit: cycles from the last covered operation completing to the arrival.
    pub commit_latency: f64,
    /// tcgen05.ld / tcgen05.st bandwidth per SM (bytes per cycle).
    pub tmem_bytes_per_cycle: f64,
    /// tcgen05.ld latency (cycles) of a warp reading up to 64 columns of its 32 lanes; wider
    /// loads and tcgen05.st follow `cost::tmem_access_shaped`.
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
    /// CTA barriers (`bar_sync_cycles` each) that the compiled code puts before each operation
    /// one thread issues for a partition of several warps: a TMA copy, an mbarrier expect, a
    /// tcgen05.commit. Triton's barrier insertion puts one before each (1); a compiler that
    /// synchronises only where other threads wrote what the issue reads puts none in a
    /// steady-state loop (0). A property of how the calibration kernels were compiled, kept
    /// with the chip whose measurements it describes.
    pub issue_barriers: f64,
    /// One scalar operation of a dependent chain (an expression node of the IR).
    pub scalar_op_cycles: f64,
    /// A loop test, loop step or branch.
    pub branch_cycles: f64,
    /// What each further warp on a scheduler adds to the issue of an instruction of a partition
    /// of more than 4 warps, as a fraction of one issue slot (`cost::issue_slots`): 1 when the
    /// scheduler spends a whole slot on each of the partition's warps on it in turn, less when
    /// the second warp is not always ready to issue in the elected warp's slots.
    pub issue_pass_fraction: f64,
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
    /// The SMs of each GPC, as ranges of SM indices: [`Chip::gpc_sms`] in order, cut at
    /// [`Chip::sms`]; SMs beyond the table's (a `sms` raised for an experiment) form further GPCs
    /// of the table's last size.
    pub fn gpcs(&self) -> Vec<std::ops::Range<u32>> {
        let mut out = Vec::new();
        let mut next = 0u32;
        let last = self.gpc_sms.last().copied().unwrap_or(self.sms).max(1);
        let sizes = self.gpc_sms.iter().copied().chain(std::iter::repeat(last));
        for n in sizes {
            if next >= self.sms {
                break;
            }
            let end = next.saturating_add(n.max(1)).min(self.sms);
            out.push(next..end);
            next = end;
        }
        out
    }
    /// The L1 (bytes) left beside shared memory when `ctas` CTAs of `smem` bytes each are
    /// resident: the SRAM less the smallest carve-out that holds them with their reserved
    /// shared memory (none left when no carve-out does).
    pub fn l1_left(&self, smem: u32, ctas: u32) -> u32 {
        let need = ctas.max(1) as u64 * (smem + self.smem_reserved_per_cta) as u64;
        self.smem_carveouts_kib
            .iter()
            .map(|&k| k as u64 * 1024)
            .find(|&c| c >= need)
            .map_or(0, |c| (self.l1_smem_bytes as u64).saturating_sub(c) as u32)
    }
    /// Peak dense f16 tensor throughput in TFLOP/s.
    pub fn peak_tflops(&self) -> f64 {
        self.tensor_flops_per_cycle_sm * self.sms as f64 * self.clock_mhz * 1e6 / 1e12
    }
    /// Sets one of the table's numeric fields by name (`bwsim time --set FIELD=VALUE`): what
    /// a calibration fit varies. Integer fields (SMs, capacities) are not settable.
    pub fn set(&mut self, field: &str, value: f64) -> Result<(), ChipSetError> {
        if !value.is_finite() || value < 0.0 {
            return Err(ChipSetError::Value {
                field: field.to_string(),
                value,
            });
        }
        let slot = match field {
            "clock_mhz" => &mut self.clock_mhz,
            "cta_launch_cycles" => &mut self.cta_launch_cycles,
            "kernel_overhead_us" => &mut self.kernel_overhead_us,
            "tensor_flops_per_cycle_sm" => &mut self.tensor_flops_per_cycle_sm,
            "mma_issue_cycles" => &mut self.mma_issue_cycles,
            "mma_latency" => &mut self.mma_latency,
            "wgmma_overhead_cycles" => &mut self.wgmma_overhead_cycles,
            "wgmma_spill_cycles" => &mut self.wgmma_spill_cycles,
            "wgmma_spill_l1_miss_cycles" => &mut self.wgmma_spill_l1_miss_cycles,
            "wgmma_queue_instrs" => &mut self.wgmma_queue_instrs,
            "tcgen05_queue_instrs" => &mut self.tcgen05_queue_instrs,
            "commit_latency" => &mut self.commit_latency,
            "tmem_bytes_per_cycle" => &mut self.tmem_bytes_per_cycle,
            "tmem_latency" => &mut self.tmem_latency,
            "tcgen05_cp_bytes_per_cycle" => &mut self.tcgen05_cp_bytes_per_cycle,
            "l2_effective_fraction" => &mut self.l2_effective_fraction,
            "l2_bytes_per_cycle" => &mut self.l2_bytes_per_cycle,
            "hbm_bytes_per_s" => &mut self.hbm_bytes_per_s,
            "tma_bytes_per_cycle_sm" => &mut self.tma_bytes_per_cycle_sm,
            "tma_issue_cycles" => &mut self.tma_issue_cycles,
            "tma_l2_latency" => &mut self.tma_l2_latency,
            "tma_hbm_latency" => &mut self.tma_hbm_latency,
            "tma_store_read_latency" => &mut self.tma_store_read_latency,
            "tma_store_write_latency" => &mut self.tma_store_write_latency,
            "global_latency" => &mut self.global_latency,
            "smem_bytes_per_cycle" => &mut self.smem_bytes_per_cycle,
            "smem_latency" => &mut self.smem_latency,
            "mbarrier_latency" => &mut self.mbarrier_latency,
            "mbarrier_op_cycles" => &mut self.mbarrier_op_cycles,
            "fence_async_cycles" => &mut self.fence_async_cycles,
            "tcgen05_fence_cycles" => &mut self.tcgen05_fence_cycles,
            "bar_sync_cycles" => &mut self.bar_sync_cycles,
            "issue_barriers" => &mut self.issue_barriers,
            "scalar_op_cycles" => &mut self.scalar_op_cycles,
            "branch_cycles" => &mut self.branch_cycles,
            "issue_pass_fraction" => &mut self.issue_pass_fraction,
            "alu_lanes_per_cycle" => &mut self.alu_lanes_per_cycle,
            _ => {
                return Err(ChipSetError::Field {
                    field: field.to_string(),
                })
            }
        };
        *slot = value;
        Ok(())
    }

    /// The fields [`Chip::set`] accepts.
    pub const SETTABLE: &'static [&'static str] = &[
        "clock_mhz",
        "cta_launch_cycles",
        "kernel_overhead_us",
        "tensor_flops_per_cycle_sm",
        "mma_issue_cycles",
        "mma_latency",
        "wgmma_overhead_cycles",
        "wgmma_spill_cycles",
        "wgmma_spill_l1_miss_cycles",
        "wgmma_queue_instrs",
        "tcgen05_queue_instrs",
        "commit_latency",
        "tmem_bytes_per_cycle",
        "tmem_latency",
        "tcgen05_cp_bytes_per_cycle",
        "l2_effective_fraction",
        "l2_bytes_per_cycle",
        "hbm_bytes_per_s",
        "tma_bytes_per_cycle_sm",
        "tma_issue_cycles",
        "tma_l2_latency",
        "tma_hbm_latency",
        "tma_store_read_latency",
        "tma_store_write_latency",
        "global_latency",
        "smem_bytes_per_cycle",
        "smem_latency",
        "mbarrier_latency",
        "mbarrier_op_cycles",
        "fence_async_cycles",
        "tcgen05_fence_cycles",
        "bar_sync_cycles",
        "issue_barriers",
        "scalar_op_cycles",
        "branch_cycles",
        "issue_pass_fraction",
        "alu_lanes_per_cycle",
    ];

    /// L2 bytes the model's LRU holds.
    pub fn l2_effective_bytes(&self) -> u64 {
        (self.l2_bytes as f64 * self.l2_effective_fraction) as u64
    }
}

/// H100 SXM5 (sm_90a).
/// The shared-memory carve-outs of compute capabilities 9.0 and 10.0 (KiB), of 256 KiB of L1
/// and shared memory per SM (the CUDA C++ Programming Guide's per-capability tables, [S6] of
/// docs/hardware/public-figures.md; measured on the H100: docs/hardware/h100-calibration.md).
pub const SMEM_CARVEOUTS_KIB: [u32; 10] = [0, 8, 16, 32, 64, 100, 132, 164, 196, 228];

pub const H100: Chip = Chip {
    name: "h100",
    target: Target::Sm90a,
    // [S2] 132 SMs on the SXM5 part; [measured here] PyTorch reported 132.
    sms: 132,
    // [S2] 8 GPCs and 66 TPCs (2 SMs each) on the SXM5 part, of 9 TPCs per GPC on a full GH100,
    // so a GPC holds at most 18 SMs; [S18] a GPC of 16 SMs on an H100 SXM. [estimate] how the 66
    // TPCs spread over the 8 GPCs is not published (it varies from part to part): 2 GPCs of 9
    // TPCs and 6 of 8 make 132, and every GPC holds the 16 CTAs of a non-portable cluster.
    gpc_sms: &[18, 18, 16, 16, 16, 16, 16, 16],
    // [derived] [S1] dense BF16 989.4 TFLOP/s = 132 SMs x 4096 FLOP/cycle x 1830 MHz.
    clock_mhz: 1830.0,
    datasheet_clock_mhz: 1830.0,
    // [S6] compute capability 9.0: 227 KB per block, 228 KB per SM, 1 KB reserved per block,
    // 64K registers, 2048 threads and 32 blocks per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    smem_reserved_per_cta: 1024,
    l1_smem_bytes: 256 * 1024,
    smem_carveouts_kib: &SMEM_CARVEOUTS_KIB,
    tmem_cols: 0,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    ctas_per_sm: 32,
    // [estimate] block launch and shared-memory/barrier set-up on a freed SM.
    cta_launch_cycles: 500.0,
    // [estimate] none: the H100 validation was fitted without it (its K = 512 rows, 12-26 %
    // optimistic, suggest one of the GB200's order).
    kernel_overhead_us: 0.0,
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
    // Least squares over the six spilling rows of the H100 validation (docs/hardware/
    // h100-calibration.md, "The spill by the L1 the carve-out leaves"): 2680 when the L1 holds
    // the swap, 270 more per block when it does not (the carve-out probe: about 250 per
    // block for one wave).
    wgmma_spill_cycles: 2680.0,
    wgmma_spill_l1_miss_cycles: 270.0,
    // [measured here] matmul_pipelined with 2 buffers (each K step's load issued right after
    // the previous step's wgmma statement and waited for before the next) in one CTA alone,
    // 8 warps, with A and B larger than the L2 so that every launch reads HBM (K = 131072):
    // 2037 cycles per K step at BLOCK_K = 64 and 3736 at 128, against 1157 with 3 buffers
    // (docs/hardware/data/2026-11-25/nb2-l2.jsonl). Each step costs the wgmma plus the load's
    // HBM-miss latency and transfer less what the load overlaps: the load leaves about 3.5
    // m64n256k16 instructions (141.5 cycles each) before the statement ends. Fitted to those
    // two rows (the model: within 1.2 % of both). An earlier fit (6.5) used K = 16384 with one
    // CTA, whose 12 MB stay in the L2 between the timed launches: L2 hits, not misses.
    wgmma_queue_instrs: 3.5,
    tcgen05_queue_instrs: 0.0,
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
    // [fitted] what the TMA elementwise adds sustain, 2 reads and 1 write of 32768 x 32768 f32
    // in 4519 and 4525 µs: 2.85 TB/s (rows 1-2 of the validation, docs/timing.md), as the
    // GB200's is fitted to 04-tma's add (the TMA path the matmuls use). A device-to-device
    // copy moved ~3.0 TB/s counting reads and writes, a TMA read stream 3.21 ([S1]: 3.35).
    hbm_bytes_per_s: 2.85e12,
    // [measured here] tma_stream with one CTA streaming 16 KB boxes from L2: 95 B/cycle
    // (docs/hardware/h100-calibration.md). Not binding on a full GPU (4210 / 132 = 32 B/cycle
    // per SM of L2).
    tma_bytes_per_cycle_sm: 95.0,
    // [estimate] per issue slot (cost::issue_slots): an 8-warp partition, which every
    // validated H100 matmul is, pays twice this (8 per TMA copy, the value before issue slots
    // were modelled).
    tma_issue_cycles: 4.0,
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
    // [estimate] per issue slot, as tma_issue_cycles (an 8-warp partition pays 16, 20, 2 and 2,
    // the values before issue slots were modelled).
    fence_async_cycles: 8.0,
    tcgen05_fence_cycles: 0.0,
    bar_sync_cycles: 10.0,
    // [derived] the H100 rows were measured on bwsim's own PTX (backends/src/ptx), which meets
    // at a barrier before a single-thread issue only when the partition's threads wrote what
    // it reads (lower/mod.rs `before_issue`): none in the matmul and add loops.
    issue_barriers: 0.0,
    scalar_op_cycles: 1.0,
    branch_cycles: 1.0,
    // [estimate] a whole slot: the per-slot issue costs above were set so that an 8-warp
    // partition, which every validated H100 matmul is, pays twice them (the values before issue
    // slots were modelled).
    issue_pass_fraction: 1.0,
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

/// B200 (sm_100a), HGX B200 / DGX B200 part. Its cycle-level figures are the GB200's: the same
/// silicon; the published Blackwell measurements this project calibrates on were taken on a
/// GB200 (docs/hardware/blackwell-calibration.md), so [`GB200`] is the calibrated table and the
/// B200 differs in clock and HBM only.
pub const B200: Chip = Chip {
    name: "b200",
    target: Target::Sm100a,
    // [S9] 74 of 80 SMs per die enabled, 148 in all; [S10] a device query reports 148.
    sms: 148,
    // [estimate] the GB100 die's GPC layout is not published: taken as 4 GPCs of 10 TPCs (20
    // SMs) per die of 80 SMs [S9], with the 6 disabled TPCs of the part spread over 6 of its 8
    // GPCs (2 of 20 SMs, 6 of 18). [S17] the number of SMs per GPC varies with floorsweeping.
    // Every GPC holds the 16 CTAs of a non-portable cluster (8 portable, [S6]).
    gpc_sms: &[20, 20, 18, 18, 18, 18, 18, 18],
    // [derived] the GB200's fitted sustained clock scaled by the datasheet clocks
    // (1277 x 1856 / 2062): no Blackwell measurement of a B200's clock under load was found.
    clock_mhz: 1149.0,
    // [derived] [S4] 2.25 PFLOP/s dense FP16/BF16 = 148 SMs x 8192 x 1856 MHz.
    datasheet_clock_mhz: 1856.0,
    // [S6] compute capability 10.0: as 9.0 for shared memory, registers, threads and
    // blocks; [S10] a device query reports 228 KB per SM.
    smem_per_cta: 232_448,
    smem_per_sm: 233_472,
    smem_reserved_per_cta: 1024,
    l1_smem_bytes: 256 * 1024,
    smem_carveouts_kib: &SMEM_CARVEOUTS_KIB,
    // [S13] 128 lanes x 512 columns of 32 bits.
    tmem_cols: 512,
    regs_per_sm: 65_536,
    threads_per_sm: 2048,
    ctas_per_sm: 32,
    // [estimate] as H100.
    cta_launch_cycles: 500.0,
    // [fitted] cuBLAS on a GB200 (docs/hardware/blackwell-calibration.md): the time of
    // 8192 x 8192 x K fp16 against its FLOPs, through K = 512 (60.7 us) and 16384 (1421 us), is
    // a line of slope 1/1566 TFLOP/s and intercept 16.8 us: what a launch costs beyond its
    // work, small-K tail and start-up included.
    kernel_overhead_us: 16.8,
    // [derived] twice Hopper's per-SM rate: 2.25 PF / (148 x 1856 MHz) = 8192 per cycle of the
    // datasheet clock. The shortfall under load is in the sustained clock.
    tensor_flops_per_cycle_sm: 8192.0,
    // [fitted] one tcgen05.mma instruction (K = 32 bytes of A) as a compiled Triton loop issues
    // it: the elected thread builds its shared-memory descriptors (about 6 uniform-datapath
    // instructions per UTCHMMA in the SASS of tutorials 06 and 07 compiled for sm_100a,
    // docs/hardware/blackwell-calibration.md) between the wait that releases it and the MMA.
    // Fitted with bar_sync_cycles to the per-step cost of the single-partition loops
    // (06-tcgen05's one-CTA rows against 07's released pipelined rows); [S17]'s bare issue
    // costs 12 cycles of its 1965-MHz clock.
    mma_issue_cycles: 8.0,
    // [estimate] pipeline fill and drain beyond the N/2-cycle throughput time ([S17] quotes
    // about 11 from earlier microbenchmarks); only its sum with commit_latency is constrained.
    mma_latency: 32.0,
    wgmma_overhead_cycles: 0.0,
    wgmma_spill_cycles: 0.0,
    wgmma_spill_l1_miss_cycles: 0.0,
    wgmma_queue_instrs: 0.0,
    // [estimate] the H100's measured wgmma issue queue (3.5 instructions, H100 table) by
    // analogy: no Blackwell measurement of the tcgen05 issue path was found.
    tcgen05_queue_instrs: 3.5,
    // [derived] [S17] one tcgen05.mma (SS, M = 128) issued, committed and waited for by the
    // issuing CTA takes N/2 + 136 cycles: its throughput time plus 136 of issue, pipeline
    // drain, commit and mbarrier wake-up. Less the model's one-instruction issue (8),
    // mma_latency (32), mbarrier_latency (40) and the satisfied wait (8): 48.
    commit_latency: 48.0,
    // [estimate] 4 sub-partitions x 32 lanes x 4 bytes per cycle.
    tmem_bytes_per_cycle: 512.0,
    // [S19] a warp's tcgen05.ld of up to 64 columns of its 32 lanes: a 4-warp load of a
    // 128 x 64 f32 accumulator takes about 179 cycles; wider loads pay
    // cost::TMEM_LD_CYCLES_PER_COL per further column (128 columns: 532).
    tmem_latency: 179.0,
    // [estimate]
    tcgen05_cp_bytes_per_cycle: 256.0,
    // [S10] a device query reports 126.50 MB (MiB); [S7, S9] 126 MB over the two dies.
    l2_bytes: 132_644_864,
    // [estimate] as measured on Hopper ([S11], see H100).
    l2_effective_fraction: 0.75,
    // [fitted] the L2-to-SM bandwidth that bounds 06-tcgen05's blocked matmul at three CTAs
    // per SM (128 x 128 tiles read 64 FLOP per byte): bytes per cycle of the sustained clock.
    // Consistent with [S8]: half of the L2 traffic crosses the 10 TB/s die-to-die link.
    l2_bytes_per_cycle: 16_100.0,
    // [derived] the GB200's fitted HBM rate (0.79 of its 8 TB/s datasheet figure) times the
    // B200's bus arithmetic [S10] 7680-bit x 3996 MHz x 2 = 7.67 TB/s.
    hbm_bytes_per_s: 6.05e12,
    // [fitted] what one SM's TMA unit moves per cycle once a load's first byte has arrived:
    // the loads a single-partition loop waits for whole (07's two-buffer rows, 06's
    // single-buffered BLOCK_K = 256 rows). At least the 124 B/cycle one CTA alone sustains
    // with a 128 x 128 x 64 CUTLASS mainloop at full MMA rate ([S17]).
    tma_bytes_per_cycle_sm: 256.0,
    // [estimate]
    tma_issue_cycles: 8.0,
    // [fitted] an L2-hit TMA load's latency to its first byte (06-tcgen05's rows). A miss:
    // [fitted] the first byte of a box that comes from HBM while every SM loads (in the
    // one-tile-per-CTA matmuls every K step waits for an A box that its wave reads for the
    // first time): 07's released three- and two-buffer rows. [S17] measures one 16 KB box
    // per SM from HBM on all 148 SMs at 715 ns (913 cycles of this clock) including its
    // transfer.
    tma_l2_latency: 245.0,
    tma_hbm_latency: 950.0,
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
    // [fitted] a CTA barrier of the warps of a single-partition loop: Triton puts one next to
    // each TMA copy, expect and commit (four or five BAR.SYNC per K step in the SASS of
    // tutorials 06 and 07); fitted with mma_issue_cycles (see there).
    bar_sync_cycles: 40.0,
    // [derived] the calibration kernels are Triton's: one BAR.SYNC before each TMA copy,
    // expect and commit of a partition of several warps (the SASS of tutorials 06 and 07).
    issue_barriers: 1.0,
    scalar_op_cycles: 2.0,
    branch_cycles: 2.0,
    // [fitted] an estimate fitted to the public table: the 8-warp rows of the published GB200
    // figures against their 4-warp twins (07's released pipelined rows, 06's one-CTA two-tile
    // row at BLOCK_K = 128; scripts/timing-blackwell, docs/hardware/blackwell-calibration.md)
    // cost less per K step than two whole issue slots per instruction give: the second warp on
    // a scheduler takes about half a slot.
    issue_pass_fraction: 0.5,
    // [S6]
    alu_lanes_per_cycle: 128.0,
};

/// GB200: one Blackwell GPU of a Grace-Blackwell superchip (sm_100a). The calibrated Blackwell
/// table (docs/hardware/blackwell-calibration.md): [`B200`] holds the fitted cycle-level values
/// it shares.
pub const GB200: Chip = Chip {
    name: "gb200",
    // [fitted] the clock sustained under tensor load: cuBLAS on 8192 x 8192 x 16384 fp16
    // sustains 1548 TFLOP/s on a GB200 (docs/hardware/blackwell-calibration.md), taken as the
    // tensor pipe at its full 8192 FLOP per cycle: 1548e12 / (148 x 8192) = 1277 MHz, 62 % of the
    // datasheet clock (an H100 PCIe drops to 79 % under L2 load, [S14]). A lower bound: a
    // library kernel that reached 90 % of the pipe would put it at 1419.
    clock_mhz: 1277.0,
    // [derived] [S5] 180 PFLOP/s dense FP16 over 72 GPUs = 2.5 PFLOP/s per GPU = 148 SMs x
    // 8192 x 2062 MHz.
    datasheet_clock_mhz: 2062.0,
    // [fitted] 04-tma's elementwise add (64 x 128 blocks, 3 buffers) moves 12.9 GB in 2.04 ms:
    // 6.3 TB/s of reads and writes, 0.79 of the [S5] 8 TB/s.
    hbm_bytes_per_s: 6.3e12,
    // Everything else: as B200 (the same silicon; B200 holds the fitted values).
    ..B200
};

/// How far a chip table is backed by measurements: what `bwsim time` prints beside every
/// prediction. The lists name [`Chip`] fields; every field's comment above gives its source.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Trust {
    /// One line: what the chip's predictions were checked against, and how close they came.
    pub summary: &'static str,
    /// Fields measured on a device of this kind or fitted to published measurements of it.
    pub calibrated: &'static [&'static str],
    /// Fields still estimates (no measurement or public figure settles them).
    pub estimates: &'static [&'static str],
}

/// Estimates shared by every table (no kernel the project has measured depends on them much).
const COMMON_ESTIMATES: [&str; 7] = [
    "cta_launch_cycles",
    "tma_issue_cycles",
    "tma_store_read_latency",
    "tma_store_write_latency",
    "fence_async_cycles",
    "scalar_op_cycles",
    "branch_cycles",
];

const fn join<const A: usize, const B: usize, const N: usize>(
    a: [&'static str; A],
    b: [&'static str; B],
) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < N {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

const HOPPER_ESTIMATES: [&str; 13] = join(
    COMMON_ESTIMATES,
    [
        "mma_issue_cycles",
        "bar_sync_cycles",
        "mma_latency",
        "global_latency",
        "kernel_overhead_us",
        "issue_pass_fraction",
    ],
);
const BLACKWELL_ESTIMATES: [&str; 16] = join(
    COMMON_ESTIMATES,
    [
        "mma_latency",
        "tcgen05_queue_instrs",
        "tmem_bytes_per_cycle",
        "tmem_latency",
        "tcgen05_cp_bytes_per_cycle",
        "global_latency",
        "l2_effective_fraction",
        "mbarrier_latency",
        "tcgen05_fence_cycles",
    ],
);

impl Chip {
    /// How far this table is backed by measurements (docs/timing.md has the tables behind
    /// each summary).
    pub fn trust(&self) -> Trust {
        match self.target {
            Target::Sm90a if self.name == "h100" => Trust {
                summary: "calibrated on an H100 (docs/timing.md): 4.0 % mean error over 37 measured configurations of the seed kernels, none above 15 %",
                calibrated: &[
                    "tensor_flops_per_cycle_sm",
                    "wgmma_overhead_cycles",
                    "wgmma_spill_cycles",
                    "wgmma_spill_l1_miss_cycles",
                    "wgmma_queue_instrs",
                    "tma_bytes_per_cycle_sm",
                    "tma_l2_latency",
                    "mbarrier_latency",
                    "hbm_bytes_per_s",
                    "l2_bytes",
                ],
                estimates: &HOPPER_ESTIMATES,
            },
            Target::Sm90a => Trust {
                summary: "the H100's calibration with this part's L2 and HBM measured; no kernel was validated on it",
                calibrated: &["tensor_flops_per_cycle_sm", "wgmma_overhead_cycles", "tma_l2_latency", "hbm_bytes_per_s", "l2_bytes"],
                estimates: &HOPPER_ESTIMATES,
            },
            _ if self.name == "gb200" => Trust {
                summary: "fitted to published GB200 measurements of Gluon tutorial kernels (docs/timing.md, scripts/timing-blackwell): 8.0 % mean error over 27 configurations, 8.3 % leaving each source out; never run on the project's own device",
                calibrated: &BLACKWELL_CALIBRATED,
                estimates: &BLACKWELL_ESTIMATES,
            },
            _ => Trust {
                summary: "the GB200 calibration at this part's clock and HBM rate (derived, not measured); no B200 measurement was used",
                calibrated: &BLACKWELL_CALIBRATED,
                estimates: &BLACKWELL_ESTIMATES,
            },
        }
    }
}

/// The Blackwell fields fitted to the published measurements (docs/hardware/blackwell-calibration.md).
const BLACKWELL_CALIBRATED: [&str; 11] = [
    "clock_mhz",
    "kernel_overhead_us",
    "commit_latency",
    "mma_issue_cycles",
    "bar_sync_cycles",
    "tma_hbm_latency",
    "l2_bytes_per_cycle",
    "hbm_bytes_per_s",
    "tma_bytes_per_cycle_sm",
    "tma_l2_latency",
    "issue_pass_fraction",
];

/// Every chip, for `--chip` lookup.
pub const CHIPS: [&Chip; 4] = [&B200, &GB200, &H100, &H200];

/// A chip by its `--chip` name.
pub fn chip(name: &str) -> Option<&'static Chip> {
    CHIPS.iter().copied().find(|c| c.name == name)
}

/// The H100 figures the timing model's hand-computed unit tests were written against (the
/// table's values before the H100 calibration of docs/hardware/h100-calibration.md): those
/// tests check the cost rules, not the table, so the arithmetic in their comments stays round.
/// The end-to-end timing tests (tests/timing.rs) use the same figures.
pub const H100_HAND: Chip = Chip {
    tensor_flops_per_cycle_sm: 4096.0,
    wgmma_overhead_cycles: 8.0,
    tma_bytes_per_cycle_sm: 64.0,
    tma_l2_latency: 500.0,
    mbarrier_latency: 40.0,
    // No issue back-pressure unless a test sets it.
    wgmma_queue_instrs: 0.0,
    hbm_bytes_per_s: 3.0e12,
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
        // H100/H200 SXM: 989.4 dense BF16 TFLOP/s; B200: 2.25 PFLOP/s; GB200: 2.5 PFLOP/s, each
        // SMs x FLOP per cycle x the datasheet clock (Hopper's measured rate is 3840 of 4096).
        let datasheet =
            |c: &Chip, per_cycle: f64| c.sms as f64 * per_cycle * c.datasheet_clock_mhz * 1e6 / 1e12;
        assert!(close(datasheet(&H100, 4096.0), 989.4, 0.001));
        assert!(close(datasheet(&H200, 4096.0), 989.4, 0.001));
        assert!(close(
            datasheet(&B200, B200.tensor_flops_per_cycle_sm),
            2250.0,
            0.001
        ));
        assert!(close(
            datasheet(&GB200, GB200.tensor_flops_per_cycle_sm),
            2500.0,
            0.001
        ));
        // What the model runs at: the H100's measured rate (94 % of the datasheet, 927.6
        // TFLOP/s, docs/hardware/h100-calibration.md); the GB200's sustained clock puts its
        // pipe at what cuBLAS sustains on 8192 x 8192 x 16384 (1548.42 TFLOP/s,
        // docs/hardware/blackwell-calibration.md); the B200 at the same fraction of its clock.
        assert!(
            close(H100.peak_tflops(), 989.4 * 3840.0 / 4096.0, 0.001),
            "{}",
            H100.peak_tflops()
        );
        assert!(close(H200.peak_tflops(), H100.peak_tflops(), 0.001));
        assert!(
            close(GB200.peak_tflops(), 1548.42, 0.001),
            "{}",
            GB200.peak_tflops()
        );
        assert!(close(B200.clock_mhz, GB200.clock_mhz * 1856.0 / 2062.0, 0.001));
        assert_eq!(chip("h200").map(|c| c.sms), Some(132));
        assert_eq!(chip("gb200").map(|c| c.target), Some(Target::Sm100a));
        assert_eq!(chip("h100").map(|c| c.target), Some(Target::Sm90a));
        assert!(chip("a100").is_none());
    }

    #[test]
    fn derived_figures_follow_their_arithmetic() {
        // docs/hardware/public-figures.md: the H200 reads 10.0 TB/s of L2 at 1980 MHz; the
        // H100 figure scales it by L2 size (50 MB against 60).
        let h200 = 10.0e12 / 1.98e9;
        assert!(close(H200.l2_bytes_per_cycle, h200, 0.005));
        assert!(close(H100.l2_bytes_per_cycle, h200 * 50.0 / 60.0, 0.005));
        assert_eq!(GB200.l2_bytes_per_cycle, B200.l2_bytes_per_cycle);
        // The B200's HBM: the GB200's fitted fraction of its 8 TB/s applied to the B200's bus
        // (7680 bits x 3996 MHz x 2).
        assert!(close(
            B200.hbm_bytes_per_s,
            GB200.hbm_bytes_per_s / 8e12 * 7680.0 / 8.0 * 3996e6 * 2.0,
            0.005
        ));
        // 126.5 MiB of L2 on Blackwell; three quarters of every L2 is modelled.
        assert_eq!(B200.l2_bytes, 126 * 1024 * 1024 + 512 * 1024);
        for c in CHIPS {
            assert_eq!(c.l2_effective_fraction, 0.75, "{}", c.name);
        }
    }

    #[test]
    fn set_replaces_one_field_and_refuses_the_rest() {
        let mut c = GB200;
        c.set("commit_latency", 123.0).unwrap();
        assert_eq!(c.commit_latency, 123.0);
        assert_eq!(
            Chip {
                commit_latency: GB200.commit_latency,
                ..c
            },
            GB200
        );
        let e = c.set("sms", 100.0).unwrap_err();
        assert_eq!(
            e,
            ChipSetError::Field {
                field: "sms".to_string()
            }
        );
        assert!(e.to_string().contains("not a numeric field"), "{e}");
        assert!(c.set("clock_mhz", f64::NAN).is_err());
        assert_eq!(
            c.set("clock_mhz", -1.0),
            Err(ChipSetError::Value {
                field: "clock_mhz".to_string(),
                value: -1.0
            })
        );
        // Every settable name is accepted.
        for f in Chip::SETTABLE {
            assert!(c.clone().set(f, 1.0).is_ok(), "{f}");
        }
    }

    #[test]
    fn trust_lists_are_disjoint_fields_of_the_table() {
        for c in CHIPS {
            let t = c.trust();
            assert!(!t.summary.is_empty());
            for f in t.calibrated.iter().chain(t.estimates) {
                assert!(Chip::SETTABLE.contains(f) || *f == "l2_bytes", "{}: {f}", c.name);
            }
            for f in t.calibrated {
                assert!(!t.estimates.contains(f), "{}: {f} is both", c.name);
            }
        }
    }

    #[test]
    fn the_l1_left_is_the_sram_less_the_smallest_carveout_that_holds_the_ctas() {
        // The shared memory the H100's spilling matmuls asked for (ptxas, cuda launch) and
        // the L1 the driver left beside it, read off by the carve-out probe
        // (docs/hardware/h100-calibration.md): 92 KiB beside 164 KiB, 60 beside 196.
        assert_eq!(H100.l1_left(147_584, 1), 92 * 1024);
        assert_eq!(H100.l1_left(148_480, 1), 92 * 1024);
        assert_eq!(H100.l1_left(196_736, 1), 60 * 1024);
        // Two CTAs of 60 KiB with their reserved KiB each: 122 KiB, the 132 KiB carve-out.
        assert_eq!(H100.l1_left(60 * 1024, 2), 124 * 1024);
        // Nothing resident needs no carve-out; more than the largest leaves no L1.
        assert_eq!(H100.l1_left(0, 0), 248 * 1024);
        assert_eq!(H100.l1_left(240 * 1024, 1), 0);
    }

    #[test]
    fn gpcs_cover_the_sms() {
        for c in CHIPS {
            assert_eq!(c.gpc_sms.iter().sum::<u32>(), c.sms, "{}", c.name);
            let g = c.gpcs();
            assert_eq!(g.len(), c.gpc_sms.len(), "{}", c.name);
            // A non-portable cluster of 16 fits every GPC.
            assert!(g.iter().all(|r| r.len() >= 16), "{}", c.name);
        }
        // Fewer SMs cut the table; more add GPCs of its last size.
        let small = Chip { sms: 20, ..H100 };
        assert_eq!(small.gpcs(), vec![0..18, 18..20]);
        let big = Chip { sms: 140, ..H100 };
        assert_eq!(big.gpcs().last(), Some(&(132..140)));
    }

    #[test]
    fn hbm_per_cycle() {
        // 3.0e12 B/s / 1.83e9 cycles/s = 1639.3 B/cycle; the calibrated 2.85e12 = 1557.4.
        assert!(close(H100_HAND.hbm_bytes_per_cycle(), 1639.34, 1e-4));
        assert!(close(H100.hbm_bytes_per_cycle(), 1557.38, 1e-4));
    }
}
