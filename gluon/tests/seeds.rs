//! Every seed kernel imported from its TTGIR fixture (tests/gluon/) runs in the simulator with
//! the same outputs as its hand-written `.tile` twin (kernels/tiles/), element for element,
//! from the same inputs; and runs clean over many schedules.
//!
//! The fixtures' launch sidecars equal their twins' launch sections; the runs use the twins'
//! launch with smaller problem shapes where the twin's are slow in a debug build (the TTGIR is
//! compiled for block sizes only: shapes are runtime values). The default suite runs
//! `BWSIM_GLUON_SCHEDULES` schedules per kernel (default 3 for the adds, gathers and copies, 1
//! for the matmuls); `BWSIM_GLUON_SCHEDULES=200 cargo test --release -p bwsim-gluon --test seeds`
//! is the full sweep.

use bwsim_isa::consts::Override;
use bwsim_isa::launch::{self, HostTensor, LaunchPlan};
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Kernel, SourceFile, Target};
use bwsim_sim::{Outcome, RunOptions};
use std::path::PathBuf;

/// (fixture stem, twin kernel name, target, heavy)
const FIXTURES: &[(&str, &str, Target, bool)] = &[
    (
        "elementwise_add_tma",
        "elementwise_add_tma",
        Target::Sm100a,
        false,
    ),
    ("elementwise_add_tma", "elementwise_add_tma", Target::Sm90a, false),
    ("elementwise_add_ws", "elementwise_add_ws", Target::Sm100a, false),
    ("elementwise_add_ws", "elementwise_add_ws", Target::Sm90a, false),
    ("async_gather", "async_gather", Target::Sm100a, false),
    ("async_scatter", "async_scatter", Target::Sm100a, false),
    ("tcgen05_copy", "tcgen05_copy", Target::Sm100a, false),
    ("matmul_pipelined", "matmul_pipelined", Target::Sm100a, true),
    ("matmul_pipelined", "matmul_pipelined", Target::Sm90a, true),
    ("persistent_matmul", "persistent_matmul", Target::Sm100a, true),
    ("persistent_matmul", "persistent_matmul", Target::Sm90a, true),
    (
        "persistent_matmul_pipelined",
        "persistent_matmul_pipelined",
        Target::Sm100a,
        true,
    ),
    (
        "persistent_matmul_pipelined",
        "persistent_matmul_pipelined",
        Target::Sm90a,
        true,
    ),
    (
        "matmul_warp_specialized",
        "matmul_warp_specialized",
        Target::Sm100a,
        true,
    ),
    ("matmul_accumulate", "matmul_accumulate", Target::Sm100a, true),
    (
        "matmul_fused_gather_scatter",
        "matmul_fused_gather_scatter",
        Target::Sm100a,
        true,
    ),
];

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/gluon")
}

fn import(stem: &str, target: Target) -> (Kernel, SourceFile) {
    let path = fixture_dir().join(format!("{stem}.{}.ttgir", target.name()));
    let l = bwsim_gluon::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match l.kernel {
        Ok(k) => (k, l.source),
        Err(d) => panic!(
            "{} does not import:\n{}",
            path.display(),
            diag::render(&d, &l.source)
        ),
    }
}

fn check<'k>(k: &'k Kernel, target: Target, file: &SourceFile, overrides: &[(&str, &str)]) -> Checked<'k> {
    let (c, d) = verify(
        k,
        &VerifyOptions {
            target: Some(target),
            overrides: overrides
                .iter()
                .map(|(n, v)| Override {
                    name: n.to_string(),
                    value: v.to_string(),
                })
                .collect(),
        },
    );
    c.unwrap_or_else(|| panic!("{} does not verify:\n{}", k.name.name, diag::render(&d, file)))
}

fn plan(c: &Checked, file: &SourceFile) -> LaunchPlan {
    let l = c.kernel.launch.as_ref().expect("a launch section");
    launch::resolve(c, l).unwrap_or_else(|d| panic!("launch:\n{}", diag::render(&d, file)))
}

fn schedules(heavy: bool) -> u64 {
    match std::env::var("BWSIM_GLUON_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(n) => n,
        None if heavy => 1,
        None => 3,
    }
}

/// Smaller launch shapes for the runs (twin constants that only size the launch).
fn shapes(stem: &str) -> &'static [(&'static str, &'static str)] {
    match stem {
        // Two CTAs, six full column blocks and a partial one.
        "elementwise_add_tma" | "elementwise_add_ws" => &[("XNUMEL", "64"), ("YNUMEL", "400")],
        _ => &[],
    }
}

fn outputs(r: &bwsim_sim::RunResult, plan: &LaunchPlan) -> Vec<HostTensor> {
    plan.outputs.iter().map(|&i| r.tensors[i].clone()).collect()
}

fn same_outputs(stem: &str, target: Target) {
    let heavy = FIXTURES.iter().any(|f| f.0 == stem && f.2 == target && f.3);
    let (imported, isrc) = import(stem, target);
    let twin_src = bwsim_kernels::find(stem).expect("bundled twin").source;
    let twin = bwsim_isa::parser::parse(twin_src).expect("twin parses");
    let tfile = SourceFile::new(format!("{stem}.tile"), twin_src);
    let ct = check(&twin, target, &tfile, &[]);
    let ci = check(&imported, target, &isrc, &[]);
    let tplan = plan(&ct, &tfile);
    // The sidecar launch of the fixture is the twin's launch, value for value.
    let iplan = plan(&ci, &isrc);
    assert_eq!(iplan.grid, tplan.grid, "{stem}: grid");
    assert_eq!(iplan.args, tplan.args, "{stem}: arguments");
    assert_eq!(iplan.outputs, tplan.outputs, "{stem}: outputs");
    assert_eq!(iplan.tensors.len(), tplan.tensors.len());
    for (a, b) in iplan.tensors.iter().zip(&tplan.tensors) {
        assert_eq!(
            (&a.name, a.dtype, &a.shape, &a.init),
            (&b.name, b.dtype, &b.shape, &b.init),
            "{stem}: tensor"
        );
    }
    // Run with the twin's launch (at the test shapes): both kernels take the same arguments.
    let ct = check(&twin, target, &tfile, shapes(stem));
    let tplan = plan(&ct, &tfile);
    for seed in 0..schedules(heavy) {
        let inputs = launch::materialize(&tplan, 1000 + seed).expect("within the memory limit");
        let opts = RunOptions {
            seed,
            trace: false,
            ..RunOptions::default()
        };
        let rt = bwsim_sim::run(&ct, &tplan, inputs.clone(), &opts);
        let ri = bwsim_sim::run(&ci, &tplan, inputs, &opts);
        assert_eq!(
            rt.outcome,
            Outcome::Completed,
            "{stem} twin, seed {seed}:\n{}",
            diag::render(&rt.diagnostics, &tfile)
        );
        assert_eq!(
            ri.outcome,
            Outcome::Completed,
            "{stem} imported, seed {seed}:\n{}",
            diag::render(&ri.diagnostics, &isrc)
        );
        assert!(
            ri.diagnostics.is_empty(),
            "{stem} imported, seed {seed}:\n{}",
            diag::render(&ri.diagnostics, &isrc)
        );
        // Both equal the CPU reference (written from the tutorials, not from the simulator).
        if seed == 0 {
            let expected = bwsim_kernels::reference::reference(
                stem,
                &tplan,
                &launch::materialize(&tplan, 1000).expect("within the memory limit"),
            )
            .expect("a reference")
            .expect("reference inputs");
            for e in &expected {
                let cmp = bwsim_kernels::reference::compare(ri.tensor(&e.tensor).expect("output"), e);
                assert!(
                    cmp.passed(),
                    "{stem} ({}) against the CPU reference: {cmp:?}",
                    target.name()
                );
            }
        }
        let (ot, oi) = (outputs(&rt, &tplan), outputs(&ri, &tplan));
        for (t, i) in ot.iter().zip(&oi) {
            assert_eq!((t.dtype, &t.shape), (i.dtype, &i.shape));
            let n = t.numel();
            let differ = (0..n).filter(|&k| t.get_bits(k) != i.get_bits(k)).count();
            assert_eq!(
                differ,
                0,
                "{stem} ({}), seed {seed}: {differ} of {n} elements of `{}` differ",
                target.name(),
                t.name
            );
        }
    }
}

macro_rules! seed_tests {
    ($($name:ident: $stem:literal, $target:expr;)*) => {$(
        #[test]
        fn $name() {
            same_outputs($stem, $target);
        }
    )*};
}

seed_tests! {
    elementwise_add_tma_sm100: "elementwise_add_tma", Target::Sm100a;
    elementwise_add_tma_sm90: "elementwise_add_tma", Target::Sm90a;
    elementwise_add_ws_sm100: "elementwise_add_ws", Target::Sm100a;
    elementwise_add_ws_sm90: "elementwise_add_ws", Target::Sm90a;
    async_gather_sm100: "async_gather", Target::Sm100a;
    async_scatter_sm100: "async_scatter", Target::Sm100a;
    tcgen05_copy_sm100: "tcgen05_copy", Target::Sm100a;
    matmul_pipelined_sm100: "matmul_pipelined", Target::Sm100a;
    matmul_pipelined_sm90: "matmul_pipelined", Target::Sm90a;
    persistent_matmul_sm100: "persistent_matmul", Target::Sm100a;
    persistent_matmul_sm90: "persistent_matmul", Target::Sm90a;
    persistent_matmul_pipelined_sm100: "persistent_matmul_pipelined", Target::Sm100a;
    persistent_matmul_pipelined_sm90: "persistent_matmul_pipelined", Target::Sm90a;
    matmul_warp_specialized_sm100: "matmul_warp_specialized", Target::Sm100a;
    matmul_accumulate_sm100: "matmul_accumulate", Target::Sm100a;
    matmul_fused_gather_scatter_sm100: "matmul_fused_gather_scatter", Target::Sm100a;
}

#[test]
fn every_fixture_has_a_test() {
    for entry in std::fs::read_dir(fixture_dir()).expect("tests/gluon") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".ttgir") else {
            continue;
        };
        let Some((stem, target)) = stem.rsplit_once('.') else {
            continue;
        };
        if stem.contains("bug") {
            continue;
        }
        assert!(
            FIXTURES.iter().any(|f| f.0 == stem && f.2.name() == target),
            "{name} is not compared with its twin"
        );
    }
}
