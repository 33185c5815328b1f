//! Snapshots of the PTX of four representative kernels (reviewed like code; after an intended
//! change: `INSTA_UPDATE=always cargo test -p bwsim-backends --test ptx_snapshots`, then read
//! the diff). Small configurations keep the text reviewable; `tests/ptxas.rs` assembles the
//! full sweep.
//!
//! - `async_gather` (sm_100a): TMA gather4 issued by one lane per warp, offsets through a
//!   layout conversion, mbarrier expect/wait, swizzled generic loads, masked-free stores.
//! - `tcgen05_copy` (sm_100a): TMEM allocation, swizzled smem.store, fence, `tcgen05.cp`
//!   with shared-memory descriptors, commit, `tcgen05.ld`.
//! - `matmul_warp_specialized` (sm_100a): warp-index partitions, per-warpgroup `setmaxnreg`,
//!   tcgen05.mma with instruction and matrix descriptors, double-buffered accumulator.
//! - `matmul_pipelined` (sm_90a): the Hopper pipeline, TMA ring and in-place wgmma with
//!   register accumulators.

mod common;

use bwsim_isa::Target;

fn snapshot(name: &str, kernel: &str, target: Target, consts: &[&str]) {
    let m = common::lower(kernel, target, consts).unwrap_or_else(|e| panic!("{e}"));
    insta::with_settings!({
        snapshot_path => "../../traces/ptx",
        prepend_module_to_snapshot => false,
        omit_expression => true,
        description => format!("bwsim ptx {kernel} --target {target}{}", consts.iter().map(|c| format!(" --const {c}")).collect::<String>()),
    }, {
        insta::assert_snapshot!(name, m.text);
    });
}

#[test]
fn gather() {
    snapshot(
        "async_gather",
        "async_gather",
        Target::Sm100a,
        &["BLOCK_X=8", "BLOCK_Y=16"],
    );
}

#[test]
fn tcgen05_copy() {
    snapshot(
        "tcgen05_copy",
        "tcgen05_copy",
        Target::Sm100a,
        &["N=16", "SWIZZLE=32", "TMEM_BLOCK_N=16"],
    );
}

#[test]
fn warp_specialized_matmul() {
    snapshot(
        "matmul_warp_specialized",
        "matmul_warp_specialized",
        Target::Sm100a,
        &["NUM_BUFFERS=2"],
    );
}

#[test]
fn hopper_pipelined_matmul() {
    snapshot(
        "matmul_pipelined_sm_90a",
        "matmul_pipelined",
        Target::Sm90a,
        &["BLOCK_M=64", "BLOCK_N=64", "NUM_WARPS=4"],
    );
}

/// `global.atomic` without `sem=`/`scope=` lowers with Triton's ordering, `atom.acq_rel.gpu`.
#[test]
fn atomics_carry_their_ordering_and_scope() {
    let m = common::lower("atomics", Target::Sm100a, &[]).unwrap_or_else(|e| panic!("{e}"));
    for ins in [
        "atom.acq_rel.gpu.global.add.u32",
        "atom.acq_rel.gpu.global.add.f32",
        "atom.acq_rel.gpu.global.max.s32",
    ] {
        assert!(m.text.contains(ins), "no `{ins}` in\n{}", m.text);
    }
}
