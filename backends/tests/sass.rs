//! SASS checks on the assembled cubins: the instructions the PTX asks for survive ptxas as the
//! hardware instructions that do the work. Each check names the SASS instruction it looks
//! for (as `cuobjdump -sass` of CUDA 13 prints it).
//!
//! Needs ptxas and cuobjdump (or nvdisasm); `bash scripts/test` installs both. Missing tools
//! fail the test with the reason.

mod common;

use bwsim_backends::ptxas;
use bwsim_isa::Target;

fn sass(kernel: &str, target: Target, consts: &[&str]) -> String {
    let m = common::lower(kernel, target, consts).unwrap_or_else(|e| panic!("{e}"));
    let a = ptxas::assemble(&m, true).unwrap_or_else(|e| panic!("{kernel} {target}: {e}"));
    ptxas::disassemble(&a.cubin)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| {
            panic!("neither cuobjdump nor nvdisasm found: set BWSIM_CUDA_BIN or run `bash scripts/test`")
        })
}

/// Opcodes (the first token of each instruction, predicate stripped) of a SASS listing.
fn opcodes(sass: &str) -> Vec<String> {
    sass.lines()
        .filter_map(|l| {
            let body = l.split("*/").nth(1)?.trim();
            let body = body
                .strip_prefix('@')
                .map(|b| b.split_once(' ').map(|x| x.1).unwrap_or(b))
                .unwrap_or(body);
            let op = body.split(|c: char| c.is_whitespace() || c == ';').next()?;
            (!op.is_empty()).then(|| op.to_string())
        })
        .collect()
}

fn count(ops: &[String], exact: &str) -> usize {
    ops.iter().filter(|o| o.as_str() == exact).count()
}

fn count_prefix(ops: &[String], prefix: &str) -> usize {
    ops.iter().filter(|o| o.starts_with(prefix)).count()
}

/// Asserts that some opcode of `ops` starts with `prefix`; `what` names it in the failure.
fn assert_has_prefix(ops: &[String], prefix: &str, what: &str) {
    assert!(count_prefix(ops, prefix) >= 1, "{what} in {ops:?}");
}

/// [`assert_has_prefix`] on the opcodes of `kernel`'s SASS for `target` (default constants).
fn assert_sass_has_prefix(kernel: &str, target: Target, prefix: &str, what: &str) {
    assert_has_prefix(&opcodes(&sass(kernel, target, &[])), prefix, what);
}

/// Asserts that `ops` holds the opcode `exact`; `what` names it in the failure.
fn assert_has(ops: &[String], exact: &str, what: &str) {
    assert!(count(ops, exact) >= 1, "{what} in {ops:?}");
}

#[test]
fn tma_tile_loads_and_stores_are_utmaldg_and_utmastg() {
    for t in [Target::Sm100a, Target::Sm90a] {
        let ops = opcodes(&sass("elementwise_add_tma", t, &[]));
        // f32 [32, 64] boxes with 128-byte swizzle: two span-wide messages per copy.
        assert!(count(&ops, "UTMALDG.2D") >= 4, "{t}: UTMALDG.2D in {ops:?}");
        assert!(count(&ops, "UTMASTG.2D") >= 2, "{t}: UTMASTG.2D in {ops:?}");
        assert!(
            count_prefix(&ops, "SYNCS.PHASECHK") >= 1,
            "{t}: mbarrier try_wait as SYNCS.PHASECHK"
        );
    }
}

#[test]
fn gather4_and_scatter4_are_their_utma_forms() {
    let ops = opcodes(&sass("async_gather", Target::Sm100a, &[]));
    assert_has(&ops, "UTMALDG.2D.GATHER4", "UTMALDG.2D.GATHER4");
    assert_eq!(
        count(&ops, "UTMALDG.2D"),
        0,
        "a gather must not become a tile load"
    );
    let ops = opcodes(&sass("async_scatter", Target::Sm100a, &[]));
    assert_has(&ops, "UTMASTG.2D.SCATTER4", "UTMASTG.2D.SCATTER4");
}

#[test]
fn tcgen05_mma_is_utc_mma() {
    // kind::f16 is UTCHMMA.
    let ops = opcodes(&sass("matmul_pipelined", Target::Sm100a, &[]));
    assert_has(&ops, "UTCHMMA", "UTCHMMA");
    assert_has_prefix(&ops, "LDTM", "tcgen05.ld as LDTM");
    // Block-scaled kinds are UTC*MMA too.
    for consts in [
        &["DTYPE=f8e4m3", "SCALED=true"][..],
        &["DTYPE=f4e2m1", "SCALED=true"][..],
    ] {
        let ops = opcodes(&sass("gemm_async", Target::Sm100a, consts));
        assert!(
            ops.iter().any(|o| o.starts_with("UTC") && o.contains("MMA")),
            "{consts:?}: a UTC*MMA in {ops:?}"
        );
        assert!(
            count_prefix(&ops, "STTM") >= 1,
            "{consts:?}: scale factors stored with STTM"
        );
    }
}

/// A CTA pair (gemm_async CTA_GROUP=2): the pair's MMA and its multicast commit are the 2CTA
/// forms, cluster.sync is the CGA barrier, TMEM is allocated for the pair, and the entry
/// demands a cluster launch.
#[test]
fn cta_pair_mma_commit_and_cluster_barrier() {
    let m = common::lower("gemm_async", Target::Sm100a, &["CTA_GROUP=2"]).unwrap_or_else(|e| panic!("{e}"));
    assert!(m.explicit_cluster, "the pair kernel needs a cluster launch");
    assert!(m.text.contains("\n.explicitcluster\n"));
    assert!(
        !m.text.contains("cta_group::1"),
        "ptxas rejects a mix of cta_group 1 and 2"
    );
    let ops = opcodes(&sass("gemm_async", Target::Sm100a, &["CTA_GROUP=2"]));
    assert!(
        count(&ops, "UTCHMMA.2CTA") == 4,
        "4 pair MMAs (K 64 / 16) as UTCHMMA.2CTA in {ops:?}"
    );
    assert_has(&ops, "UTCBAR.2CTA.MULTICAST", "the multicast commit");
    assert!(
        count(&ops, "UCGABAR_ARV") >= 1 && count(&ops, "UCGABAR_WAIT") >= 1,
        "cluster.sync in {ops:?}"
    );
    assert_has_prefix(&ops, "UTCATOMSWS.2CTA", "the pair's TMEM allocation");
    // The single-CTA variant keeps the 1-CTA forms and a plain launch.
    let one = common::lower("gemm_async", Target::Sm100a, &[]).unwrap_or_else(|e| panic!("{e}"));
    assert!(!one.explicit_cluster && !one.text.contains("cta_group::2"));
    let ops = opcodes(&sass("gemm_async", Target::Sm100a, &[]));
    assert_eq!(count(&ops, "UTCHMMA.2CTA"), 0);
    assert!(count(&ops, "UTCHMMA") == 4, "UTCHMMA in {ops:?}");
}

#[test]
fn tcgen05_cp_is_utccp() {
    assert_sass_has_prefix("tcgen05_copy", Target::Sm100a, "UTCCP", "UTCCP");
}

#[test]
fn wgmma_is_hgmma() {
    let ops = opcodes(&sass("matmul_pipelined", Target::Sm90a, &[]));
    assert_has_prefix(&ops, "HGMMA.64x256x16", "HGMMA.64x256x16");
    assert_has_prefix(&ops, "WARPGROUP", "wgmma.fence/wait as WARPGROUP.*");
}

/// wgmma's dtype matrix reaches the tensor core as the instruction of each form: f16
/// accumulators as `HGMMA...F16`, fp8 as `QGMMA` (mixed e4m3 x e5m2 too), 8-bit integers as
/// `IGMMA`, tf32 as `HGMMA...TF32`; A from registers is a register operand (`R..`) where a
/// descriptor would be `gdesc[..]`.
#[test]
fn wgmma_dtype_forms_are_their_gmma_instructions() {
    let sass_of = |consts: &[&str]| sass("wgmma_dtypes", Target::Sm90a, consts);
    let gmma = |s: &str| -> Vec<String> {
        s.lines()
            .filter_map(|l| l.split("*/").nth(1))
            .map(|b| b.trim().to_string())
            .filter(|b| b.contains("GMMA."))
            .collect()
    };
    for (consts, want) in [
        (&["ACC=f16"][..], "HGMMA.64x64x16.F16 "),
        (&["ACC=f16", "A_REGS=true"], "HGMMA.64x64x16.F16 "),
        (
            &["A_TYPE=bf16", "B_TYPE=bf16", "A_REGS=true"],
            "HGMMA.64x64x16.F32.BF16 ",
        ),
        (
            &["A_TYPE=tf32", "B_TYPE=tf32", "BLOCK_K=32", "A_REGS=true"],
            "HGMMA.64x64x8.F32.TF32 ",
        ),
        (
            &["A_TYPE=f8e4m3", "B_TYPE=f8e5m2", "BLOCK_K=128"],
            "QGMMA.64x64x32.F32.E4M3.E5M2 ",
        ),
        (
            &[
                "A_TYPE=f8e5m2",
                "B_TYPE=f8e5m2",
                "ACC=f16",
                "BLOCK_K=128",
                "A_REGS=true",
            ],
            "QGMMA.64x64x32.F16.E5M2.E5M2 ",
        ),
        (
            &["A_TYPE=i8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128"],
            "IGMMA.64x64x32.S8.U8 ",
        ),
        (
            &["A_TYPE=u8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128", "A_REGS=true"],
            "IGMMA.64x64x32.U8.U8 ",
        ),
    ] {
        let lines = gmma(&sass_of(consts));
        let regs = consts.contains(&"A_REGS=true");
        assert!(!lines.is_empty(), "{consts:?}: no GMMA");
        for l in &lines {
            assert!(l.starts_with(want), "{consts:?}: {l}, want {want}");
            // `GMMA D, A, B, C`: A is the second operand.
            let a = l.split(',').nth(1).map(str::trim).unwrap_or_default();
            assert_eq!(a.starts_with('R'), regs, "{consts:?}: A operand `{a}` in {l}");
        }
    }
}

/// tcgen05.mma's kinds over their dtypes become their UTC*MMA: kind::f16 and kind::tf32 (f16
/// accumulators too) `UTCHMMA`, kind::f8f6f4 `UTCQMMA`, kind::i8 `UTCIMMA`.
#[test]
fn tcgen05_kinds_are_their_utc_mma() {
    for (consts, want) in [
        (&["ACC=f16"][..], "UTCHMMA"),
        (&["A_TYPE=tf32", "B_TYPE=tf32", "BLOCK_K=32"], "UTCHMMA"),
        (
            &["A_TYPE=f8e4m3", "B_TYPE=f8e5m2", "BLOCK_K=128", "BLOCK_N=32"],
            "UTCQMMA",
        ),
        (
            &["A_TYPE=f8e4m3", "B_TYPE=f8e4m3", "ACC=f16", "BLOCK_K=128"],
            "UTCQMMA",
        ),
        (&["A_TYPE=i8", "B_TYPE=u8", "ACC=i32", "BLOCK_K=128"], "UTCIMMA"),
    ] {
        let ops = opcodes(&sass("tcgen05_dtypes", Target::Sm100a, consts));
        assert!(count_prefix(&ops, want) >= 1, "{consts:?}: {want} in {ops:?}");
    }
}

#[test]
fn register_budgets_become_usetmaxreg() {
    assert_sass_has_prefix(
        "matmul_warp_specialized",
        Target::Sm100a,
        "USETMAXREG",
        "setmaxnreg as USETMAXREG",
    );
}

#[test]
fn wgmma_loops_keep_their_accumulator_in_place() {
    // A loop whose accumulator is copied between register sets (a phi copy at the loop head
    // while a wgmma is in flight) makes ptxas serialize every wgmma of the loop (C7511:
    // "insufficient register resources for the wgmma pipeline"): each HGMMA is then followed
    // by its own WARPGROUP.DEPBAR. Measured on an H100 (docs/hardware/h100-calibration.md):
    // persistent_matmul_pipelined ran 16-28 % slower than persistent_matmul that way. With
    // the accumulator as its own phi, only the kernel's own `wgmma.wait`s remain.
    for kernel in [
        "matmul_pipelined",
        "persistent_matmul",
        "persistent_matmul_pipelined",
    ] {
        let ops = opcodes(&sass(kernel, Target::Sm90a, &["NUM_WARPS=8"]));
        let hgmma = count_prefix(&ops, "HGMMA");
        let depbar = count_prefix(&ops, "WARPGROUP.DEPBAR");
        assert!(hgmma >= 8, "{kernel}: {hgmma} HGMMA");
        assert!(
            2 * depbar < hgmma,
            "{kernel}: {depbar} WARPGROUP.DEPBAR for {hgmma} HGMMA: the wgmmas are serialized"
        );
    }
}
