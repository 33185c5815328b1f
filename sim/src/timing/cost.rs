//! Cost rules: how many cycles one operation takes, as pure functions of the chip table and
//! the operation's shape. The engine ([`super::engine`]) decides *when* an operation starts
//! (queues, dependencies); this module only says *how long* it occupies a unit.
//!
//! Each rule is unit-tested with a hand-computed value.

use crate::chips::Chip;
use bwsim_isa::DType;

/// MMA input kinds, by their throughput relative to f16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaKind {
    /// f16 / bf16 (`kind::f16`).
    F16,
    /// tf32 (f32 inputs).
    Tf32,
    /// 8-bit floats and integers (`kind::f8f6f4`, `kind::i8`, wgmma e4m3/e5m2/s8/u8): the
    /// datasheets give INT8 the FP8 rate (H100 SXM 1979 dense TOPS, B200 4.5 dense POPS).
    Fp8,
    /// 4-bit floats (`kind::mxf4` / `mxf4nvf4`).
    Fp4,
}

impl MmaKind {
    /// The kind an A operand of element type `dt` selects. The accumulator type does not
    /// change the rate: an f16 accumulator runs at the f32 accumulator's (H100 SXM: dense
    /// FP16 989.4 TFLOP/s either way [datasheet]).
    pub fn of(dt: DType) -> MmaKind {
        match dt.bits() {
            32 => MmaKind::Tf32,
            16 => MmaKind::F16,
            8 => MmaKind::Fp8,
            _ => MmaKind::Fp4,
        }
    }
    /// Throughput relative to f16. [datasheet] H100: TF32 494.7, FP16 989.4, FP8 1979 dense
    /// TFLOP/s; B200: TF32 1.1, FP16 2.25, FP8 4.5, FP4 9 dense PFLOP/s.
    pub fn rate(self) -> f64 {
        match self {
            MmaKind::Tf32 => 0.5,
            MmaKind::F16 => 1.0,
            MmaKind::Fp8 => 2.0,
            MmaKind::Fp4 => 4.0,
        }
    }
    /// K of one instruction: 32 bytes of A (docs/semantics.md#mma-shapes-and-kinds,
    /// docs/semantics.md#wgmma).
    pub fn k_per_instr(self) -> u32 {
        match self {
            MmaKind::Tf32 => 8,
            MmaKind::F16 => 16,
            MmaKind::Fp8 => 32,
            MmaKind::Fp4 => 64,
        }
    }
}

/// FLOPs of an M x N x K product (2 per multiply-add).
pub fn flops(m: u32, n: u32, k: u32) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64
}

/// Instructions an M x N x K tile-level MMA lowers to: one per `k_per_instr` step of K, and
/// for wgmma one per 64 rows of M.
pub fn mma_instrs(m: u32, k: u32, kind: MmaKind, wgmma: bool) -> u32 {
    let ks = k.div_ceil(kind.k_per_instr()).max(1);
    if wgmma {
        ks * m.div_ceil(64).max(1)
    } else {
        ks
    }
}

/// Cycles a tcgen05.mma of M x N x K occupies the SM's tensor pipe: 2·M·N·K at the chip's
/// per-SM rate for the kind. M = 64 uses half of the 128-lane datapath and so takes as long as
/// M = 128 ([estimate], documented in docs/timing.md).
pub fn tcgen05_mma_cycles(chip: &Chip, m: u32, n: u32, k: u32, kind: MmaKind) -> f64 {
    flops(m.max(128), n, k) / (chip.tensor_flops_per_cycle_sm * kind.rate())
}

/// [S17] Bytes per cycle the tensor pipe reads its shared-memory operands at: SemiAnalysis's
/// B200 microbenchmarks find a tcgen05.mma with both operands in shared memory bound at about
/// 128 B/cycle below N = 128 (M = 128, f16: at N = 128 one K = 16 instruction reads 4 KiB of A
/// and 4 KiB of B in its 64 cycles, exactly 128 B/cycle; at N = 64, 6 KiB in 32 would need
/// 192).
pub const SMEM_MMA_BYTES_PER_CYCLE: f64 = 128.0;

/// Cycles a tcgen05.mma occupies the tensor pipe, its shared-memory operands counted: the
/// pipe's time ([`tcgen05_mma_cycles`]) or the time to read B (K x N) and, when `a_smem` (SS;
/// TS reads A from tensor memory), A (M x K) at [`SMEM_MMA_BYTES_PER_CYCLE`], whichever is
/// longer. An element of A or B is 32 / `k_per_instr` bytes.
pub fn tcgen05_mma_cycles_operands(chip: &Chip, m: u32, n: u32, k: u32, kind: MmaKind, a_smem: bool) -> f64 {
    let elem = 32.0 / kind.k_per_instr() as f64;
    let a = if a_smem { m as f64 * k as f64 } else { 0.0 };
    let bytes = (a + k as f64 * n as f64) * elem;
    tcgen05_mma_cycles(chip, m, n, k, kind).max(bytes / SMEM_MMA_BYTES_PER_CYCLE)
}

/// Cycles a tile-level wgmma of M x N x K occupies the SM's tensor cores: one m64nNk
/// instruction per 64 rows and per K step, each 2·64·N·k / rate plus the chip's fixed
/// per-instruction overhead (which is what makes small N inefficient).
pub fn wgmma_cycles(chip: &Chip, m: u32, n: u32, k: u32, kind: MmaKind) -> f64 {
    let per = flops(64, n, kind.k_per_instr()) / (chip.tensor_flops_per_cycle_sm * kind.rate())
        + chip.wgmma_overhead_cycles;
    mma_instrs(m, k, kind, true) as f64 * per
}

/// Cycles to move `bytes` through a port of `bytes_per_cycle` (0 when the port is absent).
pub fn transfer_cycles(bytes: f64, bytes_per_cycle: f64) -> f64 {
    if bytes_per_cycle > 0.0 {
        bytes / bytes_per_cycle
    } else {
        0.0
    }
}

/// Elementwise tile math over `numel` elements of `bits` each, `ops` operations deep, by a
/// partition of `warps` warps: (cycles the partition is busy, cycles of the SM's ALUs it uses).
/// A partition issues at most one warp instruction per scheduler per cycle, so it reaches the
/// SM's 4 x 32 lanes only with 4 or more warps; 64-bit elements take two lanes.
pub fn tile_alu_cycles(chip: &Chip, numel: u64, bits: u32, ops: u32, warps: u32) -> (f64, f64) {
    let work = numel as f64 * ops as f64 * if bits > 32 { 2.0 } else { 1.0 };
    let sms = chip.alu_lanes_per_cycle;
    let own = 32.0 * warps.clamp(1, 4) as f64;
    (work / own.min(sms), work / sms)
}

/// A generic shared-memory access of `bytes` (smem.load / smem.store): (latency, cycles of the
/// SM's shared-memory bandwidth it uses).
pub fn smem_access(chip: &Chip, bytes: u64) -> (f64, f64) {
    (
        chip.smem_latency,
        transfer_cycles(bytes as f64, chip.smem_bytes_per_cycle),
    )
}

/// [estimate] Cycles a distributed-shared-memory access (`smem.load`/`smem.store ..., cta=R`:
/// `ld/st.shared::cluster` to a peer CTA) adds to a local shared-memory access: the round trip
/// over the SM-to-SM network of a GPC. An estimate of the order that published H100
/// microbenchmarks report (a few hundred cycles against a few tens for local shared memory);
/// nothing here has measured it. The engine also takes it as the time an operation on another
/// CTA's barrier (a remote arrive or expect, a multicast or pair commit's arrival there) takes
/// to reach it: a one-way trip would be shorter, so this errs late.
pub const DSMEM_EXTRA_LATENCY: f64 = 180.0;

/// [estimate] Cycles of a cluster barrier (`cluster.arrive` + `cluster.wait`, or
/// `cluster.sync`) beyond a CTA barrier: the arrivals travel between the cluster's SMs. A
/// `cluster.wait` ends this much (plus a CTA barrier) after the later of its own time and the
/// cluster's last arrival. Same provenance as [`DSMEM_EXTRA_LATENCY`].
pub const CLUSTER_BARRIER_EXTRA_CYCLES: f64 = 180.0;

/// A distributed-shared-memory access of `bytes`: (latency, cycles of the shared-memory
/// bandwidth it uses), as a local access plus [`DSMEM_EXTRA_LATENCY`].
pub fn dsmem_access(chip: &Chip, bytes: u64) -> (f64, f64) {
    let (lat, bw) = smem_access(chip, bytes);
    (lat + DSMEM_EXTRA_LATENCY, bw)
}

/// [S19] Cycles a warp's tcgen05.ld takes per 32-bit column it reads beyond the first 64
/// (`chip.tmem_latency` covers up to 64). Meta's B200 latency model (facebookexperimental/triton,
/// `NVLatencyModel`, refit May 2026 at about 1.83 GHz) puts a 4-warp load of a 128 x 64 f32
/// accumulator at about 179 cycles and of 128 x 128 at about 532: in both a warp reads its 32
/// lanes, 64 and 128 columns, so the second 64 columns cost (532 - 179) / 64 = 5.5 each.
pub const TMEM_LD_CYCLES_PER_COL: f64 = 5.5;

/// [S19] A warp's tcgen05.st: about 64 cycles for 64 columns and 96 for 128 (the same model),
/// so a 64-cycle floor and 0.5 per column past 64.
pub const TMEM_ST_LATENCY: f64 = 64.0;
/// See [`TMEM_ST_LATENCY`].
pub const TMEM_ST_CYCLES_PER_COL: f64 = 0.5;

/// 32-bit TMEM columns each warp of a partition of `warps` warps reads or writes when the
/// partition moves a `rows` x `cols_words` (32-bit words per row) tile: a warp reaches only
/// its sub-partition's 32 lanes (PTX ISA, tensor memory access restrictions), so a tile of 128
/// lanes needs 4 warps, and with more warps (8: two per sub-partition, as Triton's
/// `get_tmem_32x32b_reg_layout` spreads them) the columns are split between them.
pub fn tmem_cols_per_warp(rows: u64, cols_words: u64, warps: u32) -> f64 {
    let groups = rows.div_ceil(32).clamp(1, 4);
    let per_group = (warps as u64 / groups).max(1);
    cols_words as f64 / per_group as f64
}

/// tcgen05.ld (`store` false) or tcgen05.st of a `rows` x `cols_words` tile (32-bit words per
/// row) by a partition of `warps` warps: (latency until the registers are ready or the store
/// is done, cycles of the SM's TMEM port it uses). The latency is one warp's, by how many
/// columns it moves ([`tmem_cols_per_warp`]): the warps of a partition load their parts at
/// once, so splitting 128 columns over 8 warps (64 each) takes 179 cycles instead of the 532
/// of 4 warps at 128. The port (`tmem_bytes_per_cycle`) bounds what the SM's sub-partitions
/// move together.
pub fn tmem_access_shaped(chip: &Chip, rows: u64, cols_words: u64, warps: u32, store: bool) -> (f64, f64) {
    let c = tmem_cols_per_warp(rows, cols_words, warps);
    let past = (c - 64.0).max(0.0);
    let lat = if store {
        TMEM_ST_LATENCY + past * TMEM_ST_CYCLES_PER_COL
    } else {
        chip.tmem_latency + past * TMEM_LD_CYCLES_PER_COL
    };
    (
        lat,
        transfer_cycles((rows * cols_words * 4) as f64, chip.tmem_bytes_per_cycle),
    )
}

/// tcgen05.cp of `bytes` on the tensor pipe.
pub fn tcgen05_cp_cycles(chip: &Chip, bytes: u64) -> f64 {
    transfer_cycles(bytes as f64, chip.tcgen05_cp_bytes_per_cycle)
}

/// Cycles of a scalar expression with `nodes` operations (a dependent chain, the worst case of
/// what the compiler emits), at least one.
pub fn scalar_cycles(chip: &Chip, nodes: u32) -> f64 {
    chip.scalar_op_cycles * nodes.max(1) as f64
}

/// Issue slots an instruction takes when `warps` warps of the SM are issuing: warps are spread
/// over the SM's 4 schedulers, each issuing one instruction per cycle, so with more than 4
/// warps issuing the scheduler of a partition's first warp (whose elected thread issues the
/// partition's TMA copies and MMAs) also issues other warps' instructions between its own:
/// each further pass over the schedulers (`ceil(warps / 4) - 1` of them) adds the chip's
/// `issue_pass_fraction` of a slot, `1 + (ceil(warps / 4) - 1) x f` slots per instruction, 1 up
/// to 4 warps. A partition that is not warp-specialized runs its whole instruction stream in
/// every warp (8 warps: 1 + f slots; f = 1 on Hopper, a fitted fraction on Blackwell).
pub fn issue_slots(chip: &Chip, warps: u32) -> f64 {
    1.0 + (issue_passes(warps) - 1) as f64 * chip.issue_pass_fraction
}

/// Passes over the SM's 4 schedulers that issuing one instruction in each of `warps` warps
/// takes: `ceil(warps / 4)`, at least 1.
pub fn issue_passes(warps: u32) -> u32 {
    warps.div_ceil(4).max(1)
}

/// The chip table as a partition of `slots` issue slots per instruction ([`issue_slots`]) sees
/// it: the costs of issuing (scalar operations, branches, mbarrier operations, fences, CTA
/// barriers, TMA and tcgen05 instructions) multiplied by `slots`; latencies and bandwidths
/// unchanged.
pub fn issue_scaled(chip: &Chip, slots: f64) -> Chip {
    Chip {
        scalar_op_cycles: chip.scalar_op_cycles * slots,
        branch_cycles: chip.branch_cycles * slots,
        mbarrier_op_cycles: chip.mbarrier_op_cycles * slots,
        fence_async_cycles: chip.fence_async_cycles * slots,
        tcgen05_fence_cycles: chip.tcgen05_fence_cycles * slots,
        bar_sync_cycles: chip.bar_sync_cycles * slots,
        tma_issue_cycles: chip.tma_issue_cycles * slots,
        mma_issue_cycles: chip.mma_issue_cycles * slots,
        ..*chip
    }
}

/// Extra cycles a spilling kernel's wgmma holds its warpgroup: the chip's
/// `wgmma_spill_cycles` for each 64-row block of the warpgroup's accumulator (ptxas swaps the
/// blocks through local memory once per wgmma statement), and `wgmma_spill_l1_miss_cycles`
/// more per block when the L1 left beside shared memory (`l1_left` bytes) cannot hold the
/// swapped block of every resident CTA (`swap` bytes in all).
pub fn wgmma_spill(chip: &Chip, blocks: u32, swap: u64, l1_left: u64) -> f64 {
    let miss = if swap > l1_left {
        chip.wgmma_spill_l1_miss_cycles
    } else {
        0.0
    };
    (chip.wgmma_spill_cycles + miss) * blocks as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chips::{B200, GB200, H100_HAND as H100};

    #[test]
    fn a_spill_pays_more_per_block_when_the_l1_cannot_hold_the_swap() {
        let chip = Chip {
            wgmma_spill_cycles: 1000.0,
            wgmma_spill_l1_miss_cycles: 300.0,
            ..H100
        };
        // A 128 x 256 f32 accumulator of one CTA: two 64-row blocks, 64 KiB swapped.
        let swap = 64 * 256 * 4;
        assert_eq!(wgmma_spill(&chip, 2, swap, 92 * 1024), 2000.0);
        assert_eq!(wgmma_spill(&chip, 2, swap, 60 * 1024), 2600.0);
        assert_eq!(wgmma_spill(&chip, 1, swap, swap), 1000.0);
    }

    #[test]
    fn issue_slots_add_a_fraction_per_further_pass_over_the_schedulers() {
        // 1 + (ceil(warps / 4) - 1) x f: up to 4 warps one slot whatever f; 5-8 warps 1 + f,
        // 9-12 warps 1 + 2f, 16 warps 1 + 3f.
        let half = Chip {
            issue_pass_fraction: 0.5,
            ..B200
        };
        let cases = [
            (0, 1.0, 1.0),
            (1, 1.0, 1.0),
            (4, 1.0, 1.0),
            (5, 2.0, 1.5),
            (8, 2.0, 1.5),
        ];
        let more = [(9, 3.0, 2.0), (12, 3.0, 2.0), (16, 4.0, 2.5)];
        for (warps, whole, halves) in cases.into_iter().chain(more) {
            assert_eq!(issue_slots(&H100, warps), whole, "{warps} warps, f = 1");
            assert_eq!(issue_slots(&half, warps), halves, "{warps} warps, f = 0.5");
        }
        // The scaled table: issue costs times the slots, latencies untouched.
        let s = issue_scaled(&half, issue_slots(&half, 8));
        assert_eq!(s.mma_issue_cycles, 1.5 * B200.mma_issue_cycles);
        assert_eq!(s.bar_sync_cycles, 1.5 * B200.bar_sync_cycles);
        assert_eq!(s.tma_l2_latency, B200.tma_l2_latency);
    }

    #[test]
    fn tcgen05_mma_by_shape_and_kind() {
        // 128x256x16 f16: 2*128*256*16 = 1,048,576 FLOP / 8192 per cycle = 128 cycles.
        assert_eq!(tcgen05_mma_cycles(&B200, 128, 256, 16, MmaKind::F16), 128.0);
        // The seed tile 128x256x64 is four such instructions: 512 cycles.
        assert_eq!(tcgen05_mma_cycles(&B200, 128, 256, 64, MmaKind::F16), 512.0);
        assert_eq!(mma_instrs(128, 64, MmaKind::F16, false), 4);
        // fp8 at twice the rate: 2*128*256*128 / (8192*2) = 512 cycles for K = 128.
        assert_eq!(tcgen05_mma_cycles(&B200, 128, 256, 128, MmaKind::Fp8), 512.0);
        // tf32 at half: 128x128x32 = 1,048,576 FLOP / 4096 = 256 cycles.
        assert_eq!(tcgen05_mma_cycles(&B200, 128, 128, 32, MmaKind::Tf32), 256.0);
        // M = 64 costs the same pipe time as M = 128.
        assert_eq!(tcgen05_mma_cycles(&B200, 64, 256, 16, MmaKind::F16), 128.0);
        // The rate is per cycle, so GB200's higher clock does not change cycles.
        assert_eq!(tcgen05_mma_cycles(&GB200, 128, 256, 64, MmaKind::F16), 512.0);
    }

    #[test]
    fn tcgen05_mma_reads_shared_memory_at_128_bytes_per_cycle() {
        // (M, N, K, kind, A from shared memory, cycles).
        let cases = [
            // 128 x 64 x 16 f16, SS: A 4 KiB + B 2 KiB = 6144 B / 128 = 48 cycles, above the
            // pipe's 2 x 128 x 64 x 16 / 8192 = 32. TS reads only B: 2 KiB / 128 = 16, so the
            // pipe's 32.
            (128, 64, 16, MmaKind::F16, true, 48.0),
            (128, 64, 16, MmaKind::F16, false, 32.0),
            // N = 128: 8 KiB / 128 = 64 = the pipe's 64; N = 256: 12 KiB / 128 = 96 < 128.
            (128, 128, 16, MmaKind::F16, true, 64.0),
            (128, 256, 64, MmaKind::F16, true, 512.0),
            // M = 64, N = 64 (the 64 x 64 tiles of 06-tcgen05): 2 + 2 KiB per K = 16 is 32
            // cycles, as long as the pipe takes for M = 64 (the half datapath, as M = 128):
            // unchanged.
            (64, 64, 64, MmaKind::F16, true, 128.0),
            // FP8 (1 byte, K = 32 per instruction), 128 x 64 x 128, SS: (16 + 8) KiB / 128 = 192
            // against the pipe's 2 x 128 x 64 x 128 / 16384 = 128.
            (128, 64, 128, MmaKind::Fp8, true, 192.0),
        ];
        for (m, n, k, kind, a_smem, cycles) in cases {
            assert_eq!(
                tcgen05_mma_cycles_operands(&B200, m, n, k, kind, a_smem),
                cycles,
                "{m} x {n} x {k} {kind:?}, A in shared memory: {a_smem}"
            );
        }
    }

    #[test]
    fn wgmma_by_n() {
        // m64n256k16 f16: 2*64*256*16 = 524,288 / 4096 = 128 cycles + 8 overhead = 136.
        assert_eq!(wgmma_cycles(&H100, 64, 256, 16, MmaKind::F16), 136.0);
        // The seed tile 128x256x64: 2 row blocks x 4 K steps = 8 instructions = 1088 cycles.
        assert_eq!(mma_instrs(128, 64, MmaKind::F16, true), 8);
        assert_eq!(wgmma_cycles(&H100, 128, 256, 64, MmaKind::F16), 1088.0);
        // Small N: m64n8k16 = 16,384 / 4096 = 4 cycles + 8: the overhead dominates.
        assert_eq!(wgmma_cycles(&H100, 64, 8, 16, MmaKind::F16), 12.0);
        // fp8 K step is 32: m64n128k32 = 524,288 / 8192 = 64 + 8 = 72.
        assert_eq!(wgmma_cycles(&H100, 64, 128, 32, MmaKind::Fp8), 72.0);
    }

    #[test]
    fn kinds_from_dtypes() {
        assert_eq!(MmaKind::of(DType::BF16), MmaKind::F16);
        assert_eq!(MmaKind::of(DType::F32), MmaKind::Tf32);
        assert_eq!(MmaKind::of(DType::F8E4M3), MmaKind::Fp8);
        assert_eq!(MmaKind::of(DType::F4E2M1), MmaKind::Fp4);
        // 8-bit integers at the fp8 rate (wgmma .s32.s8.s8, kind::i8).
        assert_eq!(MmaKind::of(DType::I8), MmaKind::Fp8);
        assert_eq!(MmaKind::of(DType::U8), MmaKind::Fp8);
        assert_eq!(wgmma_cycles(&H100, 64, 128, 32, MmaKind::of(DType::I8)), 72.0);
    }

    #[test]
    fn tile_alu() {
        // A 64x128 f32 add by 4 warps: 8192 / 128 lanes = 64 cycles, all of the SM's ALUs.
        assert_eq!(tile_alu_cycles(&H100, 8192, 32, 1, 4), (64.0, 64.0));
        // One warp issues 32 lanes per cycle: 256 cycles, still 64 cycles of SM ALU time.
        assert_eq!(tile_alu_cycles(&H100, 8192, 32, 1, 1), (256.0, 64.0));
        // Two ops deep on 8 warps: 2 * 8192 / 128 = 128.
        assert_eq!(tile_alu_cycles(&H100, 8192, 32, 2, 8), (128.0, 128.0));
    }

    #[test]
    fn memories() {
        // smem: a 32x64 f32 tile is 8 KiB; 8192 / 128 B per cycle = 64 cycles after 30 latency.
        assert_eq!(smem_access(&H100, 8192), (30.0, 64.0));
        // TMEM: a 128x256 f32 accumulator, 128 KiB / 512 B per cycle = 256 cycles of the port;
        // 4 warps read 256 columns each: 179 + 192 x 5.5 = 1235 cycles.
        assert_eq!(tmem_access_shaped(&B200, 128, 256, 4, false), (1235.0, 256.0));
        // A tcgen05.ld of a 128 x 128 f32 accumulator by 4 warps: each warp reads its 32 lanes x
        // 128 columns, 64 past the 64 that tmem_latency (179) covers: 179 + 64 x 5.5 = 531,
        // Meta's 532; 8 warps read 64 columns each: 179. The port moves the 64 KiB in 128
        // cycles either way.
        assert_eq!(tmem_cols_per_warp(128, 128, 4), 128.0);
        assert_eq!(tmem_cols_per_warp(128, 128, 8), 64.0);
        assert_eq!(tmem_cols_per_warp(64, 64, 4), 32.0);
        assert_eq!(tmem_access_shaped(&B200, 128, 128, 4, false), (531.0, 128.0));
        assert_eq!(tmem_access_shaped(&B200, 128, 128, 8, false), (179.0, 128.0));
        // Stores: 64 cycles at 64 columns, 96 at 128 (0.5 per column past 64).
        assert_eq!(tmem_access_shaped(&B200, 128, 128, 4, true), (96.0, 128.0));
        assert_eq!(tmem_access_shaped(&B200, 128, 64, 4, true), (64.0, 64.0));
        // tcgen05.cp of a 128x128 f16 tile (32 KiB) at 256 B per cycle: 128 cycles.
        assert_eq!(tcgen05_cp_cycles(&B200, 32_768), 128.0);
        // A missing port costs nothing rather than dividing by zero.
        assert_eq!(transfer_cycles(100.0, 0.0), 0.0);
        // scalar chains: 3 nodes x 1 cycle (H100's scalar_op_cycles); an empty expression
        // still costs one op.
        assert_eq!(scalar_cycles(&H100, 3), 3.0);
        assert_eq!(scalar_cycles(&H100, 0), 1.0);
    }
}
