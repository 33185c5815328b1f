//! Gluon fixtures without a bundled `.tile` twin (tests/gluon/layouts.py in the shape of
//! tutorials 01-intro and 02-layouts, tests/gluon/wgmma_matmul.py in the shape of 05-wgmma,
//! wgmma_regs.py in the shape of 05-wgmma's small MMA: A in registers, f16/f32/s32
//! accumulators,
//! cp_async_overlap.py (the concurrency sanitizer's cp.async test, its correct variant),
//! attention_pingpong.py in the structure of 01-attention-forward, attention.py at 64-row
//! tiles, per_thread.py (14-per-thread-ops), reductions.py, claims.py):
//! each imports from its checked-in TTGIR as it is, runs its sidecar launch to the CPU
//! reference's result (`bwsim_kernels::reference` by the kernel's name: the copies exactly, the
//! matmul within the matmul tolerance), and checks clean as `bwsim check` runs it.
//!
//! The checker runs 4 schedules by default, `BWSIM_GLUON_SCHEDULES` otherwise.

use bwsim_isa::launch;
use bwsim_isa::limits::Limits;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Target};
use bwsim_sim::check;
use bwsim_sim::explore::ExploreOptions;
use bwsim_sim::{Outcome, RunOptions};

fn imports_runs_and_checks_clean(stem: &str, target: Target, default_schedules: u64) {
    let path = std::path::PathBuf::from(format!(
        "{}/../tests/gluon/{stem}.{}.ttgir",
        env!("CARGO_MANIFEST_DIR"),
        target.name()
    ));
    let l = bwsim_gluon::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = l.source;
    let k = l
        .kernel
        .unwrap_or_else(|d| panic!("{stem} does not import:\n{}", diag::render(&d, &file)));
    let (c, d) = verify(
        &k,
        &VerifyOptions {
            target: Some(target),
            overrides: Vec::new(),
        },
    );
    let c = c.unwrap_or_else(|| panic!("{stem} does not verify:\n{}", diag::render(&d, &file)));
    let plan = launch::resolve(&c, k.launch.as_ref().expect("launch sidecar"))
        .unwrap_or_else(|d| panic!("launch:\n{}", diag::render(&d, &file)));
    let inputs = launch::materialize(&plan, 7).expect("within the memory limit");
    let expected = bwsim_kernels::reference::reference(&k.name.name, &plan, &inputs)
        .unwrap_or_else(|| panic!("no reference for `{}`", k.name.name))
        .expect("reference inputs");
    let r = bwsim_sim::run(
        &c,
        &plan,
        inputs,
        &RunOptions {
            seed: 7,
            trace: false,
            ..RunOptions::default()
        },
    );
    assert_eq!(
        r.outcome,
        Outcome::Completed,
        "{stem}:\n{}",
        diag::render(&r.diagnostics, &file)
    );
    for e in &expected {
        let cmp = bwsim_kernels::reference::compare(r.tensor(&e.tensor).expect("output"), e);
        assert!(
            cmp.passed(),
            "{stem} ({}) against the CPU reference: {cmp:?}",
            target.name()
        );
    }
    let schedules = std::env::var("BWSIM_GLUON_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_schedules);
    let p = check::prepare_kernel(&k, &[], Some(target), Limits::default())
        .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &file)));
    let e = p.explore(
        &ExploreOptions {
            first_seed: 0,
            schedules,
            jobs: 2,
            stop_on_first_error: false,
        },
        |_, _| {},
    );
    let found: Vec<_> = e.findings.iter().map(|f| f.diagnostic.clone()).collect();
    assert!(found.is_empty(), "{stem}:\n{}", diag::render(&found, &file));
}

macro_rules! corpus_tests {
    ($($name:ident: $stem:literal, $target:expr $(, $schedules:literal)?;)*) => {
        $( #[test] fn $name() { imports_runs_and_checks_clean($stem, $target, 4 $(- 4 + $schedules)?); } )*
    };
}

// An entry's third value is its default checker schedules (heavy kernels: 2).
corpus_tests! {
    copy_1d_scalar_sm100: "copy_1d_scalar", Target::Sm100a;
    copy_1d_scalar_sm90: "copy_1d_scalar", Target::Sm90a;
    copy_1d_vector_sm100: "copy_1d_vector", Target::Sm100a;
    copy_1d_vector_sm90: "copy_1d_vector", Target::Sm90a;
    copy_2d_rows_sm100: "copy_2d_rows", Target::Sm100a;
    copy_2d_rows_sm90: "copy_2d_rows", Target::Sm90a;
    copy_2d_cols_sm100: "copy_2d_cols", Target::Sm100a;
    copy_2d_cols_sm90: "copy_2d_cols", Target::Sm90a;
    wgmma_matmul_sm90: "wgmma_matmul", Target::Sm90a;
    attention_pingpong_sm100: "attention_pingpong", Target::Sm100a, 2;
    attention_m64_sm100: "attention_m64", Target::Sm100a, 2;
    per_thread_sm100: "per_thread", Target::Sm100a;
    per_thread_sm90: "per_thread", Target::Sm90a;
    reductions_sm100: "reductions", Target::Sm100a;
    reductions_sm90: "reductions", Target::Sm90a;
    claims_sm100: "claims", Target::Sm100a;
    claims_sm90: "claims", Target::Sm90a;
    conv2d_sm100: "conv2d", Target::Sm100a, 2;
    conv2d_sm90: "conv2d", Target::Sm90a, 2;
    cp_async_overlap_sm100: "cp_async_overlap", Target::Sm100a;
    cp_async_overlap_sm90: "cp_async_overlap", Target::Sm90a;
    wgmma_regs_sm90: "wgmma_regs", Target::Sm90a;
    wgmma_regs_f16acc_sm90: "wgmma_regs_f16acc", Target::Sm90a;
    wgmma_regs_bf16_sm90: "wgmma_regs_bf16", Target::Sm90a;
    wgmma_smem_f16acc_sm90: "wgmma_smem_f16acc", Target::Sm90a;
    wgmma_regs_fp8_sm90: "wgmma_regs_fp8", Target::Sm90a;
    wgmma_i8_sm90: "wgmma_i8", Target::Sm90a;
    wgmma_regs_i8_sm90: "wgmma_regs_i8", Target::Sm90a;
}
