//! Every seed kernel imported from its TTGIR fixture (tests/gluon/) runs in the simulator with
//! the same outputs as its hand-written `.tile` twin (kernels/tiles/), element for element,
//! from the same inputs; and checks clean: the hazard checker, run as `bwsim check` runs it
//! (`bwsim_sim::check::prepare_kernel`, then `Prepared::explore`), finds no error over its
//! schedules.
//!
//! The fixtures' launch sidecars equal their twins' launch sections (by name: a sidecar leaves
//! out the tensors and parameters its kernel does not have, the scale factors of gemm_async's
//! block-scaled variants); the runs use the twins' launch with smaller problem shapes where the
//! twin's are slow in a debug build (the TTGIR is compiled for block sizes only: shapes are
//! runtime values), and the checker runs the sidecar's launch, shrunk the same way.
//!
//! `BWSIM_GLUON_SCHEDULES=N` sets the schedules per kernel, for the comparison and for the
//! checker (default: 3 and 4 for the adds, gathers and copies, 1 and 2 for the matmuls); with
//! it set, the checker runs the sidecars' full launches. The full sweep:
//! `BWSIM_GLUON_SCHEDULES=200 cargo test --release -p bwsim-gluon --test seeds`.

use bwsim_isa::consts::Override;
use bwsim_isa::launch::{self, ArgValue, HostTensor, LaunchPlan};
use bwsim_isa::typeck::Checked;
use bwsim_isa::verify::{verify, VerifyOptions};
use bwsim_isa::{diag, Kernel, SourceFile, Target};
use bwsim_sim::check;
use bwsim_sim::explore::ExploreOptions;
use bwsim_sim::{Outcome, RunOptions};
use std::path::PathBuf;

/// (fixture stem, target, heavy)
const FIXTURES: &[(&str, Target, bool)] = &[
    ("elementwise_add_tma", Target::Sm100a, false),
    ("elementwise_add_tma", Target::Sm90a, false),
    ("elementwise_add_ws", Target::Sm100a, false),
    ("elementwise_add_ws", Target::Sm90a, false),
    ("async_gather", Target::Sm100a, false),
    ("async_scatter", Target::Sm100a, false),
    ("tcgen05_copy", Target::Sm100a, false),
    ("gemm_async", Target::Sm100a, false),
    ("mma_scaled", Target::Sm100a, false),
    ("softmax", Target::Sm100a, false),
    ("softmax", Target::Sm90a, false),
    ("attention", Target::Sm100a, false),
    ("int_ops", Target::Sm100a, false),
    ("int_ops", Target::Sm90a, false),
    ("while_loop", Target::Sm100a, false),
    ("while_loop", Target::Sm90a, false),
    ("atomics", Target::Sm100a, false),
    ("atomics", Target::Sm90a, false),
    ("scan", Target::Sm100a, false),
    ("scan", Target::Sm90a, false),
    ("cp_async", Target::Sm100a, false),
    ("cp_async", Target::Sm90a, false),
    ("subtiled_epilogue", Target::Sm100a, false),
    ("subtiled_epilogue", Target::Sm90a, false),
    ("matmul_pipelined", Target::Sm100a, true),
    ("matmul_pipelined", Target::Sm90a, true),
    ("persistent_matmul", Target::Sm100a, true),
    ("persistent_matmul", Target::Sm90a, true),
    ("persistent_matmul_pipelined", Target::Sm100a, true),
    ("persistent_matmul_pipelined", Target::Sm90a, true),
    ("matmul_warp_specialized", Target::Sm100a, true),
    ("matmul_accumulate", Target::Sm100a, true),
    ("matmul_fused_gather_scatter", Target::Sm100a, true),
];

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/gluon")
}

fn ttgir_path(stem: &str, target: Target) -> PathBuf {
    fixture_dir().join(format!("{stem}.{}.ttgir", target.name()))
}

fn import(stem: &str, target: Target) -> (Kernel, SourceFile) {
    let path = ttgir_path(stem, target);
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

fn env_schedules() -> Option<u64> {
    std::env::var("BWSIM_GLUON_SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
}

fn heavy(stem: &str, target: Target) -> bool {
    FIXTURES.iter().any(|f| f.0 == stem && f.1 == target && f.2)
}

/// Smaller launch shapes for the runs (twin constants that only size the launch).
fn shapes(stem: &str) -> &'static [(&'static str, &'static str)] {
    match stem {
        // Two CTAs, six full column blocks and a partial one.
        "elementwise_add_tma" | "elementwise_add_ws" => &[("XNUMEL", "64"), ("YNUMEL", "400")],
        _ => &[],
    }
}

/// The same shrinking as [`shapes`], as text replacements in the sidecar launch section.
fn sidecar_shapes(stem: &str) -> &'static [(&'static str, &'static str)] {
    match stem {
        "elementwise_add_tma" | "elementwise_add_ws" => &[
            ("grid = [32]", "grid = [2]"),
            ("[1000, 2000]", "[64, 400]"),
            ("xnumel = 1000", "xnumel = 64"),
            ("ynumel = 2000", "ynumel = 400"),
        ],
        _ => &[],
    }
}

fn outputs(r: &bwsim_sim::RunResult, plan: &LaunchPlan) -> Vec<HostTensor> {
    plan.outputs.iter().map(|&i| r.tensors[i].clone()).collect()
}

/// A plan's arguments with tensors named, so plans with different tensor lists compare.
fn named_args(plan: &LaunchPlan) -> Vec<(String, String)> {
    plan.args
        .iter()
        .map(|(n, a)| {
            let v = match a {
                ArgValue::Tensor(i) => format!("tensor {}", plan.tensors[*i].name),
                other => format!("{other:?}"),
            };
            (n.clone(), v)
        })
        .collect()
}

fn same_outputs(stem: &str, target: Target) {
    let (imported, isrc) = import(stem, target);
    let twin_src = bwsim_kernels::find(stem).expect("bundled twin").source;
    let twin = bwsim_isa::parser::parse(twin_src).expect("twin parses");
    let tfile = SourceFile::new(format!("{stem}.tile"), twin_src);
    let ct = check(&twin, target, &tfile, &[]);
    let ci = check(&imported, target, &isrc, &[]);
    let tplan = plan(&ct, &tfile);
    // The sidecar launch of the fixture is the twin's launch, value for value, by name.
    let iplan = plan(&ci, &isrc);
    assert_eq!(iplan.grid, tplan.grid, "{stem}: grid");
    assert_eq!(iplan.cluster, tplan.cluster, "{stem}: cluster");
    let twin_args = named_args(&tplan);
    for a in named_args(&iplan) {
        assert!(twin_args.contains(&a), "{stem}: argument {a:?} is not the twin's");
    }
    for t in &iplan.tensors {
        let b = tplan
            .tensor(&t.name)
            .map(|i| &tplan.tensors[i])
            .unwrap_or_else(|| panic!("{stem}: the twin has no tensor `{}`", t.name));
        assert_eq!(
            (t.dtype, &t.shape, &t.init),
            (b.dtype, &b.shape, &b.init),
            "{stem}: tensor `{}`",
            t.name
        );
    }
    let names =
        |p: &LaunchPlan| -> Vec<String> { p.outputs.iter().map(|&i| p.tensors[i].name.clone()).collect() };
    assert_eq!(names(&iplan), names(&tplan), "{stem}: outputs");
    // Run with the twin's launch (at the test shapes), the imported kernel's parameters bound
    // to the twin's values of the same names.
    let ct = check(&twin, target, &tfile, shapes(stem));
    let tplan = plan(&ct, &tfile);
    let rplan = LaunchPlan {
        args: iplan
            .args
            .iter()
            .map(|(n, _)| {
                tplan
                    .args
                    .iter()
                    .find(|(m, _)| m == n)
                    .cloned()
                    .unwrap_or_else(|| panic!("{stem}: the twin has no parameter `{n}`"))
            })
            .collect(),
        ..tplan.clone()
    };
    let runs = env_schedules().unwrap_or(if heavy(stem, target) { 1 } else { 3 });
    for seed in 0..runs {
        let inputs = launch::materialize(&tplan, 1000 + seed).expect("within the memory limit");
        let opts = RunOptions {
            seed,
            trace: false,
            ..RunOptions::default()
        };
        let rt = bwsim_sim::run(&ct, &tplan, inputs.clone(), &opts);
        let ri = bwsim_sim::run(&ci, &rplan, inputs, &opts);
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
        let (ot, oi) = (outputs(&rt, &tplan), outputs(&ri, &rplan));
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

/// The hazard checker over the imported kernel, as `bwsim check FILE.ttgir` runs it: no error
/// in any schedule.
fn checks_clean(stem: &str, target: Target) {
    let path = ttgir_path(stem, target);
    let text = std::fs::read_to_string(&path).expect("fixture");
    let lpath = bwsim_gluon::launch_path_for(&path).expect("a launch sidecar");
    let mut ltext = std::fs::read_to_string(&lpath).expect("sidecar");
    let schedules = env_schedules();
    if schedules.is_none() {
        for (from, to) in sidecar_shapes(stem) {
            assert!(ltext.contains(from), "{}: no `{from}`", lpath.display());
            ltext = ltext.replace(from, to);
        }
    }
    let l = bwsim_gluon::import_text(
        &path.display().to_string(),
        &text,
        path.parent(),
        Some((lpath.display().to_string(), ltext)),
    );
    let file = l.source;
    let k = l
        .kernel
        .unwrap_or_else(|d| panic!("{stem} does not import:\n{}", diag::render(&d, &file)));
    let p = check::prepare_kernel(&k, &[], Some(target), bwsim_isa::limits::Limits::default())
        .unwrap_or_else(|d| panic!("{stem}:\n{}", diag::render(&d, &file)));
    let opts = ExploreOptions {
        first_seed: 0,
        schedules: schedules.unwrap_or(if heavy(stem, target) { 2 } else { 4 }),
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()).min(4),
        stop_on_first_error: false,
    };
    let e = p.explore(&opts, |_, _| {});
    assert_eq!(e.schedules, opts.schedules);
    let errors: Vec<_> = e
        .findings
        .iter()
        .filter(|f| f.diagnostic.is_error())
        .map(|f| check::annotate(f, &file.name, Some(e.schedules)))
        .collect();
    assert!(
        errors.is_empty(),
        "{stem} ({}) over {} schedules:\n{}",
        target.name(),
        e.schedules,
        diag::render(&errors, &file)
    );
}

macro_rules! seed_tests {
    ($($name:ident: $stem:literal, $target:expr;)*) => {$(
        mod $name {
            use super::*;

            #[test]
            fn same_outputs_as_the_twin() {
                same_outputs($stem, $target);
            }

            #[test]
            fn checks_clean() {
                super::checks_clean($stem, $target);
            }
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
    gemm_async_sm100: "gemm_async", Target::Sm100a;
    mma_scaled_sm100: "mma_scaled", Target::Sm100a;
    softmax_sm100: "softmax", Target::Sm100a;
    softmax_sm90: "softmax", Target::Sm90a;
    attention_sm100: "attention", Target::Sm100a;
    int_ops_sm100: "int_ops", Target::Sm100a;
    int_ops_sm90: "int_ops", Target::Sm90a;
    while_loop_sm100: "while_loop", Target::Sm100a;
    while_loop_sm90: "while_loop", Target::Sm90a;
    atomics_sm100: "atomics", Target::Sm100a;
    atomics_sm90: "atomics", Target::Sm90a;
    scan_sm100: "scan", Target::Sm100a;
    scan_sm90: "scan", Target::Sm90a;
    cp_async_sm100: "cp_async", Target::Sm100a;
    cp_async_sm90: "cp_async", Target::Sm90a;
    subtiled_epilogue_sm100: "subtiled_epilogue", Target::Sm100a;
    subtiled_epilogue_sm90: "subtiled_epilogue", Target::Sm90a;
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

/// Fixtures compared with another imported fixture or the CPU reference instead of a twin.
const COMPARED_WITH_A_FIXTURE: &[&str] = &[
    "mma_scaled_contig",
    "mma_scaled_fp4",
    "mma_scaled_nvfp4",
    "mma_scaled_mixed",
    "mma_scaled_packed",
    "mma_scaled_copy",
    "mma_scaled_ws",
    "mma_scaled_pipelined",
];

/// Tutorial 11's kernel on mxfp4 operands (uint8 descriptors, two e2m1 values a byte, viewed as
/// f4e2m1 by the import): the CPU reference's result, from bytes unpacked low nibble first; and
/// it checks clean.
#[test]
fn mma_scaled_fp4_matches_the_reference() {
    fp4_matches_the_reference("mma_scaled_fp4");
}

/// The same on nvfp4: ue4m3 factors (float8e4nv in Gluon) per 16 elements of K.
#[test]
fn mma_scaled_nvfp4_matches_the_reference() {
    fp4_matches_the_reference("mma_scaled_nvfp4");
}

/// Mixed mxfp8 x mxfp4 (A in e4m3, B as packed fp4 bytes): B's tile lands in the
/// `fp4_padded` layout (8 bytes of padding after every 8 of data, the TMA's 16-byte-aligned fp4
/// format) and the MMA reads it there; the CPU reference's result, and it checks clean.
#[test]
fn mma_scaled_mixed_matches_the_reference() {
    let (k, _) = import("mma_scaled_mixed", Target::Sm100a);
    let text = bwsim_isa::print(&k);
    assert!(
        text.contains("smem.alloc i8[128, 64], nvmma(128, fp4_padded=true)"),
        "{text}"
    );
    fp4_matches_the_reference("mma_scaled_mixed");
}

fn fp4_matches_the_reference(stem: &str) {
    let target = Target::Sm100a;
    let (k, file) = import(stem, target);
    let text = bwsim_isa::print(&k);
    assert!(text.contains("f4e2m1[128, 128]"), "{text}");
    let c = check(&k, target, &file, &[]);
    let p = plan(&c, &file);
    for seed in 0..env_schedules().unwrap_or(2) {
        let inputs = launch::materialize(&p, 3000 + seed).expect("within the memory limit");
        let r = bwsim_sim::run(
            &c,
            &p,
            inputs.clone(),
            &RunOptions {
                seed,
                trace: false,
                ..RunOptions::default()
            },
        );
        assert!(
            r.ok() && r.diagnostics.is_empty(),
            "{}",
            diag::render(&r.diagnostics, &file)
        );
        let expected = bwsim_kernels::reference::reference("mma_scaled", &p, &inputs)
            .expect("a reference")
            .expect("reference inputs");
        for e in &expected {
            let cmp = bwsim_kernels::reference::compare(r.tensor(&e.tensor).expect("output"), e);
            assert!(cmp.passed(), "seed {seed}: {cmp:?}");
        }
    }
    checks_clean(stem, target);
}

/// Tutorial 11's contiguous-factors kernel (one 1-D load per block of factors, reshaped to
/// 2-D) at K = BLOCK_K, where that layout is the row-major one: outputs equal to
/// `mma_scaled_kernel`'s (itself equal to its twin and the CPU reference) from the same inputs,
/// bit for bit; and it checks clean.
#[test]
fn mma_scaled_contig_equals_the_row_major_kernel() {
    let target = Target::Sm100a;
    let (contig, cfile) = import("mma_scaled_contig", target);
    let (simple, sfile) = import("mma_scaled", target);
    let cc = check(&contig, target, &cfile, &[]);
    let cs = check(&simple, target, &sfile, &[]);
    let cplan = plan(&cc, &cfile);
    // The row-major kernel on the contiguous kernel's launch, with its factor strides.
    let splan = LaunchPlan {
        args: plan(&cs, &sfile)
            .args
            .iter()
            .map(|(n, _)| match n.as_str() {
                "scale_stride_m" => (n.clone(), ArgValue::Int(4)),
                "scale_stride_k" => (n.clone(), ArgValue::Int(1)),
                _ => cplan
                    .args
                    .iter()
                    .find(|(m, _)| m == n)
                    .cloned()
                    .unwrap_or_else(|| panic!("no `{n}` in the contiguous kernel's launch")),
            })
            .collect(),
        ..cplan.clone()
    };
    for seed in 0..env_schedules().unwrap_or(2) {
        let inputs = launch::materialize(&cplan, 2000 + seed).expect("within the memory limit");
        let opts = RunOptions {
            seed,
            trace: false,
            ..RunOptions::default()
        };
        let rc = bwsim_sim::run(&cc, &cplan, inputs.clone(), &opts);
        let rs = bwsim_sim::run(&cs, &splan, inputs, &opts);
        assert!(
            rc.ok() && rc.diagnostics.is_empty(),
            "{}",
            diag::render(&rc.diagnostics, &cfile)
        );
        assert!(
            rs.ok() && rs.diagnostics.is_empty(),
            "{}",
            diag::render(&rs.diagnostics, &sfile)
        );
        let (c, s) = (rc.tensor("c").expect("c"), rs.tensor("c").expect("c"));
        let differ = (0..c.numel()).filter(|&i| c.get_bits(i) != s.get_bits(i)).count();
        assert_eq!(differ, 0, "seed {seed}: {differ} elements differ");
        // Not a vacuous comparison: the factors reach the result.
        assert!((0..c.numel()).any(|i| c.get(i) != 0.0));
    }
    checks_clean("mma_scaled_contig", target);
}

/// Tutorial 11's packed-block forms: the factors in global memory as
/// `[1, M / 128, SCALE_K / 4, 2, 256]`, each 512-byte block holding 128 rows x 4 K blocks with
/// row `32 j + i`, K block `c` at byte `16 i + 4 j + c` (the tutorial's relayout). Each form's
/// output equals, bit for bit, `mma_scaled_kernel`'s on the same operands with the factors
/// unpacked to row-major `[M, SCALE_K]` here; and it checks clean. A misplaced factor would
/// change the output: the factors vary over the whole block.
#[test]
fn packed_block_forms_equal_the_row_major_kernel() {
    let target = Target::Sm100a;
    for stem in [
        "mma_scaled_packed",
        "mma_scaled_copy",
        "mma_scaled_ws",
        "mma_scaled_pipelined",
    ] {
        let (packed, pfile) = import(stem, target);
        let cp = check(&packed, target, &pfile, &[]);
        let pplan = plan(&cp, &pfile);
        let shape = |n: &str| pplan.tensors[pplan.tensor(n).expect("tensor")].shape.clone();
        let k = shape("a")[1];
        let (m, n, sk) = (shape("a")[0], shape("b")[0], k / 32);
        assert_eq!(shape("a_scale"), vec![1, m / 128, sk / 4, 2, 256], "{stem}");
        // The row-major kernel at the same shapes.
        let (mut simple, sfile) = import("mma_scaled", target);
        let ltext = format!(
            "launch {{\n  grid = [{}, {}]\n  tensor a: f8e4m3[{m}, {k}] = zeros()\n  tensor b: f8e4m3[{n}, {k}] = zeros()\n  \
             tensor c: f16[{m}, {n}] = zeros()\n  tensor a_scale: i8[{m}, {sk}] = zeros()\n  tensor b_scale: i8[{n}, {sk}] = zeros()\n  \
             a_desc = a\n  b_desc = b\n  c_desc = c\n  a_scale_ptr = a_scale\n  b_scale_ptr = b_scale\n  scale_stride_m = {sk}\n  \
             scale_stride_k = 1\n  outputs = [c]\n}}\n",
            m / 128,
            n / 128
        );
        simple.launch = Some(bwsim_isa::parser::parse_launch(&ltext).expect("launch parses"));
        let cs = check(&simple, target, &sfile, &[]);
        let splan = plan(&cs, &sfile);
        for seed in 0..env_schedules().unwrap_or(2) {
            let pin = launch::materialize(&pplan, 4000 + seed).expect("within the memory limit");
            let mut sin = launch::materialize(&splan, 0).expect("within the memory limit");
            for t in &mut sin {
                let src = &pin
                    .iter()
                    .find(|p| p.name == t.name)
                    .expect("same tensor names")
                    .data;
                if t.name.ends_with("_scale") {
                    let rows = t.shape[0] as usize;
                    let rep_k = sk as usize / 4;
                    for (f, &byte) in src.iter().enumerate() {
                        let (block, within) = (f / 512, f % 512);
                        let (rm, rk) = (block / rep_k, block % rep_k);
                        let (i, j, c) = (within / 16, within / 4 % 4, within % 4);
                        let row = rm * 128 + 32 * j + i;
                        assert!(row < rows);
                        t.data[row * sk as usize + rk * 4 + c] = byte;
                    }
                } else {
                    t.data.clone_from(src);
                }
            }
            let opts = RunOptions {
                seed,
                trace: false,
                ..RunOptions::default()
            };
            let rp = bwsim_sim::run(&cp, &pplan, pin, &opts);
            let rs = bwsim_sim::run(&cs, &splan, sin, &opts);
            assert!(
                rp.ok() && rp.diagnostics.is_empty(),
                "{stem}:\n{}",
                diag::render(&rp.diagnostics, &pfile)
            );
            assert!(rs.ok(), "{}", diag::render(&rs.diagnostics, &sfile));
            let (c, s) = (rp.tensor("c").expect("c"), rs.tensor("c").expect("c"));
            let differ = (0..c.numel()).filter(|&i| c.get_bits(i) != s.get_bits(i)).count();
            assert_eq!(differ, 0, "{stem} seed {seed}: {differ} elements differ");
            assert!((0..c.numel()).any(|i| c.get(i) != 0.0));
        }
        checks_clean(stem, target);
    }
}

/// Every fixture is compared with its twin here, or (a fixture without a bundled twin) run
/// against its CPU reference by gluon/tests/corpus.rs.
#[test]
fn every_fixture_has_a_test() {
    let corpus = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/corpus.rs"))
        .expect("tests/corpus.rs");
    for entry in std::fs::read_dir(fixture_dir()).expect("tests/gluon") {
        let name = entry.expect("entry").file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".ttgir") else {
            continue;
        };
        let Some((stem, target)) = stem.rsplit_once('.') else {
            continue;
        };
        if stem.contains("bug") || stem.starts_with("refused_") || COMPARED_WITH_A_FIXTURE.contains(&stem) {
            continue;
        }
        let variant = match target {
            "sm_100a" => "Sm100a",
            _ => "Sm90a",
        };
        assert!(
            FIXTURES.iter().any(|f| f.0 == stem && f.1.name() == target)
                || corpus.contains(&format!("\"{stem}\", Target::{variant}")),
            "{name} is not compared with its twin nor run against its reference"
        );
    }
}
