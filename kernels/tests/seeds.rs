//! Every seed kernel over its tutorial's test grid, checked against the CPU references.
//!
//! The default suite runs each tutorial's grid at the tutorial's shapes where the simulator
//! takes seconds, and at smaller shapes (named in each kernel's header) where the tutorial's
//! shape would take minutes; `BWSIM_FULL_GRID=1` adds the tutorials' full shapes (README,
//! "Tests"). A failure prints the `bwsim run` arguments that reproduce it.

mod common;
use bwsim_sim::CudaError;
use common::*;

/// `bwsim run KERNEL` with no other argument: every bundled kernel's default configuration
/// has a CPU reference and passes it, on each of its targets.
#[test]
fn every_bundled_kernel_passes_its_default_configuration() {
    let mut cases = Vec::new();
    for k in bwsim_kernels::all() {
        for t in k.targets.split(", ") {
            cases.push(Case::new(k.name).target(t));
        }
    }
    assert_eq!(bwsim_kernels::all().len(), 24);
    sweep("defaults", cases);
}

/// Tutorial 09's blocks of `test_async_gather` and `test_async_scatter`: dtype x BLOCK_X x
/// BLOCK_Y.
const GATHER_BLOCKS: Axes = &[
    ("DTYPE", &["bf16", "f32"]),
    ("BLOCK_X", &["8", "128"]),
    ("BLOCK_Y", &["16", "128"]),
];

/// Tutorial 09 `test_async_gather`: dtype x BLOCK_X x BLOCK_Y x y_offset at X_MAX = Y_MAX =
/// 1024, row offsets linspace(-X_MAX, 2 X_MAX) shuffled; bit-exact with OOB zeros.
#[test]
fn async_gather_grid() {
    let offsets: Axes = &[("Y_OFFSET", &["-16", "0", "48", "1000"])];
    let cases = grid_of(grid(Case::new("async_gather"), GATHER_BLOCKS), offsets);
    assert_eq!(cases.len(), 32);
    sweep("async_gather", cases);
}

/// Tutorial 09 `test_illegal_gather`: y_offset = 2 is not 16-byte aligned for bf16, an
/// illegal instruction at the gather, with the reason.
#[test]
fn async_gather_misaligned_y_offset_is_an_illegal_instruction() {
    let c = Case::new("async_gather")
        .c("DTYPE", "bf16")
        .c("BLOCK_X", 128)
        .c("BLOCK_Y", 128)
        .c("Y_OFFSET", 2);
    c.check_trap(CudaError::IllegalInstruction, "tma.gather")
        .unwrap_or_else(|e| panic!("{e}"));
    let r = c.run().expect("runs");
    let t = r.result.trap.expect("trapped");
    assert!(t.reason.contains("16-byte aligned"), "{}", t.reason);
    let src = bwsim_kernels::find("async_gather").expect("bundled").source;
    assert!(
        src[t.span.start as usize..t.span.end as usize].starts_with("tma.gather"),
        "the trap points at the gather"
    );
    assert!(
        r.rendered.contains("an illegal instruction was encountered"),
        "{}",
        r.rendered
    );
}

/// Tutorial 09 `test_async_scatter`: y_offset 0, 48, 1000; rows 0..2 X_MAX shuffled; rows and
/// columns past the end dropped, everything else of `input` untouched.
#[test]
fn async_scatter_grid() {
    let offsets: Axes = &[("Y_OFFSET", &["0", "48", "1000"])];
    let cases = grid_of(grid(Case::new("async_scatter"), GATHER_BLOCKS), offsets);
    assert_eq!(cases.len(), 24);
    sweep("async_scatter", cases);
}

/// `kernel` with tutorial 09's and 10's (BLOCK_M, BLOCK_N): (128, 128) and (128, 64).
fn mn_blocks(kernel: &'static str) -> Vec<Case> {
    let blocks = [(128, 128), (128, 64)];
    paired(vec![Case::new(kernel)], ("BLOCK_M", "BLOCK_N"), &blocks)
}

/// Tutorial 09 `test_matmul_fused_gather_scatter`: (BLOCK_M, BLOCK_N) x (BLOCK_K, buffers).
/// Default: M = N = K = 256, with the tutorial's grid size and with 3 programs (so programs
/// own several tiles); full grid: the tutorial's M = N = 1024, K = 2048.
#[test]
fn matmul_fused_gather_scatter_grid() {
    let blocks = mn_blocks("matmul_fused_gather_scatter");
    let configs = paired(blocks, ("BLOCK_K", "NUM_BUFFERS"), &[(128, 2), (64, 3)]);
    sweep(
        "matmul_fused_gather_scatter",
        configs.into_iter().flat_map(grid_sizes).collect(),
    );
}

/// Tutorial 10 `test_tcgen05_copy_nvmma_shared`: every (M, N, TMEM_BLOCK_N) the tutorial
/// generates, swizzle 32/64/128, f32. The cases the tutorial skips are exactly those the
/// verifier rejects (no copy atom; block narrower than the swizzle).
#[test]
fn tcgen05_copy_grid() {
    let mut run = Vec::new();
    let mut skipped = Vec::new();
    for tmem_block_n in [1, 2, 4, 8, 16, 32, 64, 128, 256] {
        for m in [128, 256] {
            for n in [16, 32, 64, 128, 256] {
                if m < 128 || n < tmem_block_n || m * n * 4 > 228 * 1024 {
                    continue;
                }
                for swizzle in [32, 64, 128] {
                    let c = Case::new("tcgen05_copy")
                        .c("M", m)
                        .c("N", n)
                        .c("TMEM_BLOCK_N", tmem_block_n)
                        .c("SWIZZLE", swizzle);
                    if m == 256 && swizzle / tmem_block_n >= 8 {
                        skipped.push((c, "tcgen05-cp-layout"));
                    } else if n < swizzle / 4 {
                        skipped.push((c, "nvmma-inner"));
                    } else {
                        run.push(c);
                    }
                }
            }
        }
    }
    for (c, code) in &skipped {
        let errs = c.static_errors();
        assert!(
            errs.iter().any(|e| e == code),
            "`bwsim run {}` is skipped by the tutorial ({code}) but the verifier says {errs:?}",
            c.label()
        );
    }
    sweep("tcgen05_copy", run);
}

/// Tutorial 10 `test_matmul_accumulate`: blocks (128, 128) and (128, 64), BLOCK_K 64, 3
/// buffers, f16 A/B, f32 C. Default (256, 256, 256) with the tutorial's grid size and with 3
/// programs; full grid: (1024, 1024, 2048).
#[test]
fn matmul_accumulate_grid() {
    let blocks = mn_blocks("matmul_accumulate");
    sweep(
        "matmul_accumulate",
        blocks.into_iter().flat_map(grid_sizes).collect(),
    );
}

/// `base` with the tutorial's grid size and with 3 programs (so programs own several tiles),
/// and in the full grid at the tutorial's (1024, 1024, 2048).
fn grid_sizes(base: Case) -> Vec<Case> {
    let mut v = vec![base.clone(), base.clone().c("NUM_SMS", 3)];
    if full_grid() {
        v.push(base.c("M", 1024).c("N", 1024).c("K", 2048));
    }
    v
}

/// `kernel` at tutorial 08's add shapes, 1000x2000 and 4000x120.
fn add_cases(kernel: &'static str) -> Vec<Case> {
    let shapes = [(1000, 2000), (4000, 120)];
    paired(vec![Case::new(kernel)], ("XNUMEL", "YNUMEL"), &shapes)
}

/// Tutorial 08 `test_elementwise_add_warp_specialized`: 1000x2000 and 4000x120, buffers
/// (1, 1) and (2, 2), 4 and 8 warps, on both targets; bit-exact.
#[test]
fn elementwise_add_ws_grid() {
    let cases = each(add_cases("elementwise_add_ws"), &[1, 2], |c, nb| {
        c.c("NUM_LOAD_BUFFERS", nb).c("NUM_STORE_BUFFERS", nb)
    });
    let cases = grid_of(cases, &[("NUM_WARPS", &["4", "8"])]);
    sweep("elementwise_add_ws", on_both_targets(cases));
}

/// The software-pipelined TMA add over the same grid (buffers 1 and 2, 4 and 8 warps).
#[test]
fn elementwise_add_tma_grid() {
    let axes: Axes = &[("NUM_BUFFERS", &["1", "2"]), ("NUM_WARPS", &["4", "8"])];
    let cases = grid_of(add_cases("elementwise_add_tma"), axes);
    sweep("elementwise_add_tma", on_both_targets(cases));
}

/// Tutorial 08's subtiled epilogue: [BLOCK_M, SPLIT_N] stores through a descriptor whose block
/// is the whole [BLOCK_M, BLOCK_N] tile (the box is the block clipped to the swizzle span), at
/// SUBTILE_FACTOR 1, 2 and 4, on a matrix whose last tiles hang off it and on one they tile
/// exactly, both targets; bit-exact (y = x).
#[test]
fn subtiled_epilogue_grid() {
    let shapes = paired(
        vec![Case::new("subtiled_epilogue")],
        ("M", "N"),
        &[(300, 712), (256, 512)],
    );
    let cases = grid_of(shapes, &[("SUBTILE_FACTOR", &["1", "2", "4"])]);
    sweep("subtiled_epilogue", on_both_targets(cases));
}

/// The schedulers of tutorial 07 (`t7.schedulers`): PersistentTileScheduler,
/// GroupedPersistentTileScheduler(1) and (8), as (SCHEDULER, GROUP_SIZE_M).
const SCHEDULERS: [(u32, u32); 3] = [(0, 8), (1, 1), (1, 8)];

/// Programs of a persistent launch: 3 at the small shape, so that each walks several tiles;
/// the tutorial's `min(SMs, tiles)` (the kernel's default NUM_SMS) at the tutorial's shape.
fn programs(c: Case) -> Case {
    if at_small_shape(&c) {
        c.c("NUM_SMS", 3)
    } else {
        c
    }
}

/// Whether `c` is at the small matmul shape (M 208).
fn at_small_shape(c: &Case) -> bool {
    c.consts.iter().any(|(n, v)| n == "M" && v == "208")
}

/// `kernel` at the matmul shapes: (208, 416, 304), and the tutorial's (2000, 1000, 2000) in the
/// full grid.
fn matmul_cases(kernel: &'static str) -> Vec<Case> {
    let mut shapes = vec![(208, 416, 304)];
    if full_grid() {
        shapes.push((2000, 1000, 2000));
    }
    each(vec![Case::new(kernel)], &shapes, |c, (m, n, k)| {
        c.c("M", m).c("N", n).c("K", k)
    })
}

/// A scheduler of [`SCHEDULERS`].
fn scheduler(c: Case, (s, g): (u32, u32)) -> Case {
    c.c("SCHEDULER", s).c("GROUP_SIZE_M", g)
}

/// Tutorial 07's buffers and warps of the (128, 256, 64) blocks: 2/3/4, 4/8.
const BUFFERS_AND_WARPS: Axes = &[("NUM_BUFFERS", &["2", "3", "4"]), ("NUM_WARPS", &["4", "8"])];

/// Tutorial 08 `test_matmul_warp_specialized`: (128, 256, 64) blocks, buffers 2/3/4,
/// SUBTILE_FACTOR 4, both schedulers; (208, 416, 304) by default with the tutorial's grid size
/// and with 3 programs, (2000, 1000, 2000) with the tutorial's grid in the full grid.
#[test]
fn matmul_warp_specialized_grid() {
    let buffers = grid_of(
        matmul_cases("matmul_warp_specialized"),
        &[("NUM_BUFFERS", &["2", "3", "4"])],
    );
    let mut cases = Vec::new();
    for base in each(buffers, &SCHEDULERS, scheduler) {
        // At the small shape with 3 buffers, with the tutorial's grid size as well.
        let both = at_small_shape(&base) && base.consts.iter().any(|(n, v)| n == "NUM_BUFFERS" && v == "3");
        cases.push(programs(base.clone()));
        if both {
            cases.push(base);
        }
    }
    // SUBTILE_FACTOR is a parameter of the kernel as of the tutorial: 1 (fits with 2 buffers),
    // 2 and 8 besides the tested 4.
    for (sf, nb) in [(1, 2), (2, 4), (8, 4)] {
        cases.push(
            Case::new("matmul_warp_specialized")
                .c("SUBTILE_FACTOR", sf)
                .c("NUM_BUFFERS", nb)
                .c("NUM_SMS", 3),
        );
    }
    sweep("matmul_warp_specialized", cases);
}

/// Tutorial 07 `test_pipelined_matmul`: (128, 256, 64) blocks, buffers 2/3/4, 4/8 warps, on
/// sm_100a (tcgen05) and sm_90a (wgmma); (208, 416, 304) by default, the tutorial's
/// (2000, 1000, 2000) in the full grid.
#[test]
fn matmul_pipelined_grid() {
    let cases = grid_of(matmul_cases("matmul_pipelined"), BUFFERS_AND_WARPS);
    sweep("matmul_pipelined", on_both_targets(cases));
}

/// Tutorial 07 `test_persistent_matmul`: (128, 256, 64) blocks, buffers 2/3/4, 4/8 warps,
/// every scheduler, both targets; with 3 programs at the small shape so that each walks several
/// tiles, with the tutorial's grid at (2000, 1000, 2000).
#[test]
fn persistent_matmul_grid() {
    let configs = each(
        grid_of(matmul_cases("persistent_matmul"), BUFFERS_AND_WARPS),
        &SCHEDULERS,
        scheduler,
    );
    let cases = on_both_targets(configs).into_iter().map(programs).collect();
    sweep("persistent_matmul", cases);
}

/// Tutorial 07 `test_persistent_matmul_pipelined`: blocks (64, 64, 64) and (128, 256, 64),
/// buffers 3/4 with STEALB exactly when there are 4 (as the tutorial's wrapper sets it), 4/8
/// warps, every scheduler, both targets; with 3 programs at the small shape and the tutorial's
/// grid at (2000, 1000, 2000) (with 3 programs there, STEALB overruns: see the last test).
#[test]
fn persistent_matmul_pipelined_grid() {
    let blocks = [(64, 64, 64), (128, 256, 64)];
    let blocks = each(
        matmul_cases("persistent_matmul_pipelined"),
        &blocks,
        |c, (bm, bn, bk)| c.c("BLOCK_M", bm).c("BLOCK_N", bn).c("BLOCK_K", bk),
    );
    let buffers = each(blocks, &[3, 4], |c, nb| {
        c.c("NUM_BUFFERS", nb).c("STEALB", nb == 4)
    });
    let configs = each(
        grid_of(buffers, &[("NUM_WARPS", &["4", "8"])]),
        &SCHEDULERS,
        scheduler,
    );
    let cases = on_both_targets(configs).into_iter().map(programs).collect();
    sweep("persistent_matmul_pipelined", cases);
}

/// The TIRx gemm_async page: the 128x64 x 64x128 f16 tile into TMEM columns 256:384, the
/// unscaled fp8 and block-scaled fp8 and fp4 variants, the cta_group 2 variant, and the other M/N the dispatch
/// accepts.
#[test]
fn gemm_async_variants() {
    let mut cases = vec![
        Case::new("gemm_async"),
        Case::new("gemm_async").c("DTYPE", "f8e4m3").c("SCALED", true),
        // kind::f8f6f4 without factors.
        Case::new("gemm_async").c("DTYPE", "f8e4m3"),
        Case::new("gemm_async").c("DTYPE", "f8e5m2"),
        Case::new("gemm_async")
            .c("DTYPE", "f4e2m1")
            .c("SCALED", true)
            .c("K", 128),
        Case::new("gemm_async").c("M", 64),
        Case::new("gemm_async").c("N", 256),
        Case::new("gemm_async").c("K", 128),
        Case::new("gemm_async").c("DTYPE", "bf16"),
        // cta_group::2 on a cluster of two CTAs: M = 256.
        Case::new("gemm_async").c("CTA_GROUP", 2),
        Case::new("gemm_async").c("CTA_GROUP", 2).c("N", 256),
        Case::new("gemm_async")
            .c("CTA_GROUP", 2)
            .c("K", 128)
            .c("DTYPE", "bf16"),
    ];
    for seed in 1..3 {
        cases.push(Case::new("gemm_async").seed(seed));
    }
    sweep("gemm_async", cases);
}

/// The configurations of `kernel` that bwsim_kernels::configs lists.
fn config_cases(kernel: &'static str) -> impl Iterator<Item = Case> {
    bwsim_kernels::configs::of(kernel).map(move |cfg| {
        cfg.consts.iter().fold(Case::new(kernel), |c, kv| {
            let (k, v) = kv.split_once('=').expect("NAME=VALUE");
            c.c(k, v)
        })
    })
}

/// wgmma's dtype matrix (bwsim_kernels::configs): every operand type into every accumulator
/// type the PTX ISA gives it, A from shared memory and from registers, against D = A @ B^T + C
/// computed in f64.
#[test]
fn wgmma_dtypes_grid() {
    let mut cases: Vec<Case> = config_cases("wgmma_dtypes").collect();
    cases.push(Case::new("wgmma_dtypes").seed(1));
    sweep("wgmma_dtypes", cases);
}

/// tcgen05.mma's kinds over their dtypes (bwsim_kernels::configs), against D = A @ B^T + C in
/// f64: the Blackwell arithmetic is assumed (docs/hardware/wgmma-numerics.md), the semantics
/// are the PTX ISA's.
#[test]
fn tcgen05_dtypes_grid() {
    let cases: Vec<Case> = std::iter::once(Case::new("tcgen05_dtypes"))
        .chain(config_cases("tcgen05_dtypes"))
        .collect();
    sweep("tcgen05_dtypes", cases);
}

/// Tutorial 11 `test_simple_mma_scaled` (mxfp8 x mxfp8): BLOCK_N in {32, 64, 128, 256} and
/// BLOCK_K in {32, 64, 128, 256}, at M = N = K = 256 (the tutorial: 2048 x 2048 x 4096 and
/// BLOCK_K up to 512).
#[test]
fn mma_scaled_grid() {
    let mut cases = Vec::new();
    for (bn, bk) in [(32, 32), (64, 64), (256, 64), (128, 256)] {
        cases.push(Case::new("mma_scaled").c("BLOCK_N", bn).c("BLOCK_K", bk));
    }
    for seed in 1..3 {
        cases.push(Case::new("mma_scaled").seed(seed));
    }
    sweep("mma_scaled", cases);
}

/// A bug of the tutorial's STEALB epilogue that its test shapes never reach: it reinterprets
/// B buffer `producer % (num_buffers + 1)` as a C tile two B buffers long, so when that index
/// is the last buffer the C tile runs past the end of `b_bufs` (on a GPU, over whatever shared
/// memory follows, the mbarriers here). A program needs three tiles with K / BLOCK_K not a
/// multiple of 5 to get there; the simulator stops at the reinterpret with its span.
#[test]
fn persistent_matmul_pipelined_stealb_overruns_b_bufs_past_two_tiles() {
    let c = Case::new("persistent_matmul_pipelined")
        .c("M", 384)
        .c("N", 256)
        .c("K", 2000)
        .c("NUM_BUFFERS", 4)
        .c("STEALB", true)
        .c("NUM_WARPS", 4)
        .c("NUM_SMS", 1);
    let r = c.run().expect("runs");
    let d = r
        .result
        .diagnostics
        .iter()
        .find(|d| d.code == "smem-reinterpret")
        .unwrap_or_else(|| panic!("expected smem-reinterpret, got:\n{}", r.rendered));
    assert!(d.message.contains("runs past the end"), "{}", d.message);
    // Two tiles per program stay inside the buffers.
    c.c("M", 256).check().unwrap_or_else(|e| panic!("{e}"));
}
