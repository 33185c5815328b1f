//! The seed kernels as `.tile` sources, with what `bwsim list` says of each.
//!
//! Each kernel lives in `kernels/tiles/NAME.tile`, parametrised by compile-time constants
//! exactly as its tutorial parametrises it, with a `launch { }` section for its default
//! configuration. CPU references (plain Rust, independent of the simulator) live in
//! [`reference`]; [`compare`] is the one comparison of an output with its expected values
//! (the references' and the differential harness's).

pub mod compare;
pub mod configs;
pub mod reference;

/// A bundled kernel.
#[derive(Clone, Copy, Debug)]
pub struct KernelEntry {
    pub name: &'static str,
    pub description: &'static str,
    /// The seed document it comes from.
    pub seed: &'static str,
    /// Targets it supports, as text.
    pub targets: &'static str,
    pub source: &'static str,
}

macro_rules! kernels {
    ($( $name:literal, $targets:literal, $seed:literal, $desc:literal; )*) => {
        static KERNELS: &[KernelEntry] = &[
            $( KernelEntry { name: $name, description: $desc, seed: $seed, targets: $targets,
                source: include_str!(concat!("../tiles/", $name, ".tile")) }, )*
        ];
    };
}

kernels! {
    "async_gather", "sm_100a", "09 tma-gather-scatter", "TMA gather4: out = input[x_offsets, y_offset:y_offset+BLOCK_Y], OOB rows/cols zero";
    "async_scatter", "sm_100a", "09 tma-gather-scatter", "TMA scatter4: input[x_offsets, y_offset:...] = src, OOB rows/cols dropped";
    "matmul_fused_gather_scatter", "sm_100a", "09 tma-gather-scatter", "persistent grouped tcgen05 matmul with gather4 of X rows and scatter4 of out rows";
    "tcgen05_copy", "sm_100a", "10 tcgen05-copy", "global -> smem -> tcgen05.cp -> tmem -> global round trip";
    "matmul_accumulate", "sm_100a", "10 tcgen05-copy", "warp-specialized D = A@B + C, C brought into TMEM by TMA + tcgen05.cp";
    "elementwise_add_tma", "sm_100a, sm_90a", "08 warp-specialization (04 baseline)", "software-pipelined TMA add c = a + b";
    "elementwise_add_ws", "sm_100a, sm_90a", "08 warp-specialization", "warp-specialized add: load, compute and store partitions";
    "subtiled_epilogue", "sm_100a, sm_90a", "08 warp-specialization", "tutorial 08's subtiled TMA epilogue: [128, 64] stores through a descriptor whose block is [128, 256]";
    "matmul_warp_specialized", "sm_100a", "08 warp-specialization", "persistent tcgen05 matmul, load/MMA/epilogue partitions, double-buffered TMEM accumulator";
    "matmul_pipelined", "sm_100a, sm_90a", "07 persistence", "pipelined matmul with the MMA abstraction (wgmma / tcgen05)";
    "persistent_matmul", "sm_100a, sm_90a", "07 persistence", "persistent matmul, row-major or grouped tile scheduler";
    "persistent_matmul_pipelined", "sm_100a, sm_90a", "07 persistence", "persistent matmul pipelined across tiles, optional STEALB epilogue";
    "softmax", "sm_100a, sm_90a", "attention's row softmax (beyond the seeds)", "row softmax: reduce_max, exp2, sum across the lanes of a warp; masked rows";
    "tile_math", "sm_100a, sm_90a", "tile math (beyond the seeds)", "every math function and row reduction of tile expressions once, against textbook values";
    "attention", "sm_100a", "FA4-style attention (beyond the seeds)", "attention forward: load/MMA/softmax partitions, S and P double-buffered in TMEM, P @ V with P from TMEM, O corrected in TMEM";
    "int_ops", "sm_100a, sm_90a", "unsigned integer ops (beyond the seeds)", "uint32 division, remainder, logical shift, compare, min and zero extension of an i32 tile";
    "while_loop", "sm_100a, sm_90a", "data-dependent while loop (beyond the seeds)", "per-program sum of a geometric sequence below a runtime limit, added to a slice";
    "atomics", "sm_100a, sm_90a", "global atomics (beyond the seeds)", "histogram, per-bin sum and maximum with atomic add and max from every program";
    "scan", "sm_100a, sm_90a", "prefix scans (beyond the seeds)", "per-row running sum and maximum across registers and lanes";
    "cp_async", "sm_100a, sm_90a", "03 async-copy (beyond the seeds)", "c = a + b and row maxima through a 3-stage cp.async ring of shared buffers (commit and wait groups)";
    "mma_scaled", "sm_100a", "11 tcgen05-mma-scaled", "block-scaled mxfp8 matmul: ue8m0 factors global -> registers -> tensor memory, tcgen05.mma_scaled, f16 TMA store";
    "wgmma_dtypes", "sm_90a", "05 wgmma (beyond the seeds)", "D = A @ B^T + C over wgmma's dtype matrix (f16/bf16/tf32/e4m3/e5m2/s8/u8 into f16/f32/s32), A from shared memory or registers";
    "tcgen05_dtypes", "sm_100a", "tcgen05 kinds (beyond the seeds)", "D = A @ B^T + C over tcgen05.mma's kinds: f16, tf32, f8f6f4 (into f32 or f16) and i8 (into s32), C through tensor memory";
    "gemm_async", "sm_100a", "TIRx gemm_async", "128x64 @ 64x128 tcgen05.mma into TMEM columns 256:384; f16, block-scaled fp8 and fp4, cta_group 2";
}

/// Every bundled kernel.
pub fn all() -> &'static [KernelEntry] {
    KERNELS
}

/// A bundled kernel by name.
pub fn find(name: &str) -> Option<&'static KernelEntry> {
    KERNELS.iter().find(|k| k.name == name)
}
