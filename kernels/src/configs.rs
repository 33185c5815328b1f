//! Representative constant configurations of the bundled kernels: the test grids their
//! tutorials run (swizzle modes, buffer counts, warps, block shapes, schedulers, dtypes),
//! reduced to one or two representatives per axis so that a sweep stays fast. The PTX backend
//! assembles every one of them with ptxas, and the differential harness draws its GPU cases
//! from them.
//!
//! Each configuration is a list of `--const` overrides on top of the kernel's defaults; the
//! default configuration (no overrides) is always tested on its own and is not repeated here.

/// One configuration of one bundled kernel.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The bundled kernel's name.
    pub kernel: &'static str,
    /// `NAME=VALUE` overrides.
    pub consts: &'static [&'static str],
}

macro_rules! configs {
    ($( $kernel:literal : [ $( [ $($c:literal),* ] ),* $(,)? ] ),* $(,)?) => {
        static CONFIGS: &[Config] = &[
            $( $( Config { kernel: $kernel, consts: &[$($c),*] }, )* )*
        ];
    };
}

configs! {
    // Tutorial 09: DTYPE bf16/f32, BLOCK_X 8/128, BLOCK_Y 16/128.
    "async_gather": [
        ["DTYPE=f32"],
        ["BLOCK_X=8", "BLOCK_Y=16"],
        ["DTYPE=f32", "BLOCK_X=8", "BLOCK_Y=16"],
        ["DTYPE=f32", "BLOCK_X=128", "BLOCK_Y=16"],
        ["BLOCK_X=8", "BLOCK_Y=128"],
    ],
    "async_scatter": [
        ["DTYPE=f32"],
        ["BLOCK_X=8", "BLOCK_Y=16"],
        ["DTYPE=f32", "BLOCK_X=8", "BLOCK_Y=16"],
        ["BLOCK_X=8", "BLOCK_Y=128"],
    ],
    // Tutorial 10: M 128/256, N 16..256, TMEM block N 1..256, swizzle 32/64/128.
    "tcgen05_copy": [
        ["SWIZZLE=32", "N=16", "TMEM_BLOCK_N=16"],
        ["SWIZZLE=64", "N=32", "TMEM_BLOCK_N=1"],
        ["SWIZZLE=128", "N=128", "TMEM_BLOCK_N=32"],
        ["M=256", "N=64", "TMEM_BLOCK_N=64", "SWIZZLE=64"],
        ["M=256", "N=32", "TMEM_BLOCK_N=8", "SWIZZLE=32"],
        ["M=128", "N=256", "TMEM_BLOCK_N=256", "SWIZZLE=128"],
    ],
    "matmul_accumulate": [
        ["BLOCK_N=64"],
        ["SCHEDULER=0"],
    ],
    "elementwise_add_tma": [
        ["NUM_BUFFERS=3"],
        ["NUM_WARPS=8"],
    ],
    // Tutorial 08: buffers (1, 1) and (2, 2), 4 and 8 warps.
    "elementwise_add_ws": [
        ["NUM_LOAD_BUFFERS=1", "NUM_STORE_BUFFERS=1"],
        ["NUM_WARPS=8"],
        ["XNUMEL=4000", "YNUMEL=120"],
    ],
    // Tutorial 08: NUM_BUFFERS 2/3/4, both schedulers.
    "matmul_warp_specialized": [
        ["NUM_BUFFERS=2"],
        ["NUM_BUFFERS=3", "SCHEDULER=1"],
    ],
    // Tutorial 07: NUM_BUFFERS 2/3/4, 4/8 warps.
    "matmul_pipelined": [
        ["NUM_BUFFERS=2"],
        ["NUM_BUFFERS=4", "NUM_WARPS=4"],
        ["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
    ],
    "persistent_matmul": [
        ["SCHEDULER=1", "NUM_SMS=4"],
        ["NUM_BUFFERS=2", "NUM_WARPS=4"],
        ["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
    ],
    // Tutorial 07: blocks (64, 64, 64) and (128, 256, 64), 3/4 buffers, 4/8 warps, STEALB.
    "persistent_matmul_pipelined": [
        ["NUM_BUFFERS=4", "STEALB=true"],
        ["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
        ["SCHEDULER=1", "NUM_SMS=4"],
    ],
    // TIRx gemm_async: f16, block-scaled fp8 and fp4, a CTA pair (cta_group::2) on a cluster
    // of two.
    "gemm_async": [
        ["DTYPE=f8e4m3", "SCALED=true"],
        ["DTYPE=f4e2m1", "SCALED=true"],
        ["N=64"],
        ["CTA_GROUP=2"],
    ],
    // Tutorial 11: BLOCK_N 32 to 256, BLOCK_K 32 to 512 (mxfp8).
    "mma_scaled": [
        ["BLOCK_N=32", "BLOCK_K=32"],
        ["BLOCK_N=256", "BLOCK_K=64"],
    ],
    // wgmma's dtype matrix (PTX ISA `wgmma.mma_async`): every operand type into every
    // accumulator it takes, A from shared memory and from registers, one and two warpgroups.
    "wgmma_dtypes": [
        ["A_REGS=true"],
        ["ACC=f16"],
        ["ACC=f16", "A_REGS=true"],
        ["ACC=f16", "A_REGS=true", "NUM_WARPS=8", "BLOCK_M=128"],
        ["A_TYPE=bf16", "B_TYPE=bf16", "A_REGS=true"],
        ["A_TYPE=bf16", "B_TYPE=bf16", "NUM_WARPS=8", "BLOCK_M=128"],
        ["A_TYPE=tf32", "B_TYPE=tf32", "BLOCK_K=32"],
        ["A_TYPE=tf32", "B_TYPE=tf32", "BLOCK_K=32", "A_REGS=true"],
        ["A_TYPE=f8e4m3", "B_TYPE=f8e4m3", "ACC=f16", "BLOCK_K=128"],
        ["A_TYPE=f8e5m2", "B_TYPE=f8e5m2", "ACC=f16", "BLOCK_K=128", "A_REGS=true"],
        ["A_TYPE=f8e4m3", "B_TYPE=f8e5m2", "BLOCK_K=128"],
        ["A_TYPE=f8e4m3", "B_TYPE=f8e4m3", "BLOCK_K=128", "A_REGS=true"],
        ["A_TYPE=i8", "B_TYPE=i8", "ACC=i32", "BLOCK_K=128", "LO=-128", "HI=128"],
        ["A_TYPE=u8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128", "LO=0", "HI=256", "A_REGS=true"],
        ["A_TYPE=i8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128", "LO=0", "HI=128"],
    ],
    // tcgen05.mma's kinds over their dtypes (PTX ISA `tcgen05.mma`): kind::f16 into f32 and f16,
    // kind::tf32, kind::f8f6f4 into f32 and f16 (mixed operands too), kind::i8 into s32.
    "tcgen05_dtypes": [
        ["ACC=f16"],
        ["A_TYPE=bf16", "B_TYPE=bf16", "BLOCK_N=128"],
        ["A_TYPE=tf32", "B_TYPE=tf32", "BLOCK_K=32"],
        ["A_TYPE=f8e4m3", "B_TYPE=f8e4m3", "ACC=f16", "BLOCK_K=128"],
        ["A_TYPE=f8e5m2", "B_TYPE=f8e5m2", "BLOCK_K=128"],
        ["A_TYPE=f8e4m3", "B_TYPE=f8e5m2", "BLOCK_K=128", "BLOCK_N=32"],
        ["A_TYPE=i8", "B_TYPE=i8", "ACC=i32", "BLOCK_K=128", "LO=-128", "HI=128"],
        ["A_TYPE=u8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128", "LO=0", "HI=256"],
        ["A_TYPE=i8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128", "LO=0", "HI=128"],
    ],
    // Tutorial 09: (BLOCK_M, BLOCK_N) in {(128, 128), (128, 64)}, (BLOCK_K, buffers) in
    // {(128, 2), (64, 3)}.
    "matmul_fused_gather_scatter": [
        ["BLOCK_N=64"],
        ["BLOCK_K=128", "NUM_BUFFERS=2"],
    ],
}

/// Every configuration, grouped by kernel in registry order.
pub fn all() -> &'static [Config] {
    CONFIGS
}

/// The configurations of one kernel.
pub fn of(kernel: &str) -> impl Iterator<Item = &'static Config> + '_ {
    CONFIGS.iter().filter(move |c| c.kernel == kernel)
}
